/*
 * reporter.h - the reporter thread's work at each interval: collect what
 * the drain thread flipped, turn it into report rows, hand them to the
 * writers.
 *
 * Flow: drain (pairing_flip, eventfd) -> [reporter: drain_collect ->
 * report_build_interval / report_build_lifetime] -> outputs (CSV, outliers,
 * summary, Prometheus textfile) -> release the interval.  perfmond.c wakes
 * it when the drain thread flips, and twice at shutdown; the rows, the
 * counters of the previous interval and the clock anchors used to date
 * outliers live here.  Everything runs on the reporter (main) thread.
 */
#ifndef PERFMOND_REPORTER_H
#define PERFMOND_REPORTER_H

#include <stdbool.h>
#include <stdint.h>

#include "collector.h"
#include "conf.h"
#include "drain.h"
#include "names.h"
#include "outputs.h"
#include "pairing.h"
#include "prom_out.h"
#include "report.h"
#include "shm.h"
#include "tsc.h"

/* What the reporter works with: the daemon's, borrowed for its life. */
struct reporter_setup {
	const struct pm_config *cfg;      /* current (a reload rewrites it) */
	struct shm_instance *inst;        /* open by the first interval */
	struct pairing *pairing;
	struct drain *drain;
	struct collector *co;
	struct outputs *out;
	struct tsc_clock *clock;          /* refined at every interval */
	struct name_cache *names;
	const struct prom_bounds *pbounds;   /* the buckets in ticks, fixed */
	bool invariant;                   /* invariant TSC */
	uint64_t overhead_ticks;          /* measured cost of a stamp */
	uint64_t start_mono_ns;           /* when the daemon started */
};

struct reporter {
	struct reporter_setup s;
	struct report_settings rs;        /* fixed for the run (the CSV's columns) */
	struct report rep;                /* interval rows */
	struct report life;               /* lifetime rows */
	struct drain_counters last;       /* as of the previous interval */
	uint64_t last_mono_ns;            /* when it was reported; 0: none yet */
};

/*
 * Take `setup`, derive the report settings from its configuration and
 * allocate the rows for its pairing engine.  0 or -ENOMEM.
 */
int reporter_init(struct reporter *r, const struct reporter_setup *setup);

/* The settings the rows are built with (the outputs open the CSV with
 * them). */
const struct report_settings *reporter_settings(const struct reporter *r);

/*
 * One finished interval, when the drain thread (or drain_flip_final) left
 * one: build its rows and the lifetime ones, write the CSV and the
 * outliers file (pushed to disk now when `stopping`), the Prometheus
 * textfile, a summary beside a rotated CSV or when one was asked for (and
 * always when `last`), answer those who asked, release the interval and
 * tell systemd the rate.  False when no interval was waiting.
 */
bool reporter_interval(struct reporter *r, bool stopping, bool last);

/* Free the rows. */
void reporter_free(struct reporter *r);

#endif /* PERFMOND_REPORTER_H */
