/*
 * prom_out.h - the Prometheus text-exposition file for node_exporter's
 * textfile collector (docs/fleet.md; set up by [prometheus] in
 * perfmond.conf(5)).
 *
 * Flow: drain -> pairing -> statistics -> report (lifetime rows) ->
 * [prom_out] -> textfile -> node_exporter -> Prometheus.  The reporter
 * thread calls prom_out_write() once per interval, between
 * pairing_collect() and pairing_release(), with the lifetime report it has
 * just built: histograms and counters in the exposition format are
 * cumulative over the life of the process, so everything exported is a
 * lifetime figure, never an interval delta.
 *
 * The exporter keeps a little state between writes (struct prom_out): the
 * TSC rate it converts with, fixed at the first write so that no bucket
 * count or _sum ever goes backwards when the daemon refines its estimate,
 * and scratch memory reused from one write to the next.
 */
#ifndef PERFMOND_PROM_OUT_H
#define PERFMOND_PROM_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"
#include "report.h"

/* Mode of the exposition file: node_exporter usually runs as another user. */
#define PROM_OUT_FILE_MODE 0644

/* Most histogram bounds a file has ([prometheus] buckets). */
#define PROM_MAX_BUCKETS 256

/*
 * The latency bounds the pairing engine counts at exactly (hist.h): the
 * configured bucket bounds in ns and in ticks at the TSC rate measured at
 * start.  The engine gets le_ticks; the exporter matches its buckets to
 * them by le_ns.
 */
struct prom_bounds {
	unsigned n;
	uint64_t le_ns[PROM_MAX_BUCKETS];
	uint64_t le_ticks[PROM_MAX_BUCKETS];
};

/* Fill `b` from the `n` configured bounds `le_ns` at `tsc_hz` ticks per
 * second. */
void prom_bounds_init(struct prom_bounds *b, const uint64_t *le_ns, unsigned n, double tsc_hz);

/* Everything one exposition file is made of; the daemon fills it. */
struct prom_snapshot {
	const char *instance;              /* shm name: the `perfmond_instance` label */
	const struct report *lifetime;     /* report_build_lifetime() after the last
					    * pairing_collect(), not yet released: its
					    * rows' sources are the engine's rows */
	const double *quantiles;           /* percentiles 0..100 for the summaries
					    * ([output] percentiles), lifetime figures */
	unsigned nquantiles;
	const uint64_t *le_ns;             /* histogram upper bounds, ns */
	unsigned nle;
	const struct prom_bounds *counted; /* the bounds the engine counts at (NULL: none) */
	const struct hist_bounds *slots;   /* its exact counts there (pairing_bounds()) */
	double tsc_hz;                     /* the daemon's current estimate */
	bool tsc_invariant;                /* invariant TSC (x86) */
	bool tsc_clock;                    /* false: CLOCK_MONOTONIC timestamps */
	uint64_t drained, dropped, stalled;  /* collector-wide, since start */
	uint64_t misordered;               /* span events paired out of time order */
	uint64_t flush_interval_ns;        /* so staleness alerts can scale */
	uint64_t flush_realtime_ns;        /* end of the interval, CLOCK_REALTIME */
};

struct prom_out;

/* A new exporter with no rate fixed yet.  NULL with errno ENOMEM. */
struct prom_out *prom_out_new(void);

/* Free an exporter.  NULL is accepted. */
void prom_out_free(struct prom_out *po);

/*
 * Write the exposition for `s` to `f`, in the C locale whatever the
 * thread's locale.  The first call with a positive s->tsc_hz fixes the rate
 * every later call converts ticks to seconds with.  Returns 0, -EINVAL
 * when no rate is known yet (or too many bounds or quantiles), -ENOMEM, or
 * -EIO when `f` reported an error.
 */
int prom_out_format(struct prom_out *po, FILE *f, const struct prom_snapshot *s);

/*
 * Rewrite `path` atomically with the exposition for `s`: a temporary file
 * beside it (a dot name node_exporter ignores), mode PROM_OUT_FILE_MODE,
 * renamed over `path`, so a scrape sees the previous file or the new one,
 * never a part.  Returns 0 or a negative errno with `err` saying what
 * failed and where.
 */
int prom_out_write(struct prom_out *po, const char *path, const struct prom_snapshot *s,
		   char *err, size_t errlen);

/*
 * The rate prom_out_format() converts with: 0 until the first write fixed
 * it.
 */
double prom_out_rate(const struct prom_out *po);

#endif /* PERFMOND_PROM_OUT_H */
