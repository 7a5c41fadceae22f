/*
 * report.h - interval and lifetime reports: pairing rows turned into
 * labelled, unit-converted figures, ready for the CSV, summary and
 * Prometheus writers.
 *
 * Flow: drain -> pairing (flip) -> [report, on the reporter thread] ->
 * csv_out / summary / prometheus.  Nothing here touches shared memory
 * except through the name cache, and nothing here runs on the drain thread.
 */
#ifndef PERFMOND_REPORT_H
#define PERFMOND_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "names.h"
#include "pairing.h"
#include "report_unit.h"

#define REPORT_MAX_PCT 16
#define REPORT_LABEL_SIZE 96       /* generated labels are short; names fit */

/* How figures are reported; fixed for the life of a CSV file. */
struct report_settings {
	enum report_unit unit;
	unsigned npct;
	double pct[REPORT_MAX_PCT];
	char pct_label[REPORT_MAX_PCT][24];   /* "p50", "p99_9" */
	bool subtract_overhead;
};

enum report_kind {
	REPORT_LATENCY = 0,
	REPORT_VALUE,
};

/* Figures of one row, latency in the report unit, values as recorded. */
struct report_figures {
	uint64_t count;
	double min, mean, stddev, max;
	double sum;
	double pct[REPORT_MAX_PCT];      /* the configured percentiles */
	double p50, p99;                 /* always the real p50 and p99 */
	/* The same order statistics as recorded (ticks or values), exact
	 * integers: value rows are printed from these, since a double cannot
	 * hold every uint64. */
	uint64_t min_raw, max_raw, p50_raw, p99_raw;
	uint64_t mean_int;               /* the raw mean: mean_int + mean_frac, exact */
	double mean_frac;
	uint64_t pct_raw[REPORT_MAX_PCT];
};

struct report_row {
	char point[REPORT_LABEL_SIZE];
	char stage[REPORT_LABEL_SIZE];
	enum report_kind kind;
	uint32_t point_id;
	bool synthetic;                  /* collector or overflow row */
	struct pairing_anomalies anomalies;  /* interval deltas, or lifetime */
	uint64_t dropped, stalled;       /* collector-wide, same on every row */
	struct report_figures f;
	/* Latency rows with outliers on: the slowest samples (interval or
	 * lifetime, as the figures), in ticks; NULL otherwise. */
	const struct outlier_set *outliers;
	/* The engine row the figures came from (its kind, transition and
	 * accumulators), for writers that need more than the figures, such as
	 * the Prometheus histogram; valid until the report is built again.
	 * NULL for the collector row. */
	const struct pairing_row *source;
};

struct report {
	struct report_row *rows;
	uint32_t nrows, cap;
	struct pairing_row *scratch;     /* pairing rows, reused */
	uint32_t scratch_cap;
	uint64_t end_realtime_ns;        /* interval end (CLOCK_REALTIME) */
	double tsc_hz;                   /* ticks per second used to convert */
	double overhead;                 /* subtracted per stamp, report unit */
	/* One instant on both clocks, to place a tick count in UTC: the
	 * interval's end, or what report_set_clock() gave. */
	uint64_t ref_tsc;
	uint64_t ref_realtime_ns;
};

/* Collector-wide counts for one report. */
struct report_collector {
	uint64_t dropped;
	uint64_t stalled;
};

/* Allocate room for every row `p` can produce.  0 or -ENOMEM. */
int report_init(struct report *r, const struct pairing *p);
void report_free(struct report *r);

/*
 * Build the rows of the interval just collected from `p` (docs/csv.md,
 * "Which rows an interval has"): rows with samples; a point's total row
 * when only its anomaly counters moved; an overflow row when its counters
 * moved; and, when nothing else is written but the collector lost or
 * stepped over events, one `collector,total` row.
 * `coll` holds this interval's deltas.  Labels come from `names` (may be
 * NULL): `point_<id>` and `step_<from>-><to>` when unnamed.
 */
void report_build_interval(struct report *r, struct pairing *p,
			   const struct pairing_interval *iv, const struct name_cache *names,
			   const struct report_settings *s, double tsc_hz,
			   const struct report_collector *coll, uint64_t end_realtime_ns);

/*
 * Build lifetime rows (for the summary): every row with samples or any
 * anomaly over the whole run; `coll` holds lifetime totals.
 */
void report_build_lifetime(struct report *r, struct pairing *p,
			   const struct pairing_interval *iv, const struct name_cache *names,
			   const struct report_settings *s, double tsc_hz,
			   const struct report_collector *coll);

/* Tie the report's timestamps to the wall clock: `tsc` happened at
 * `realtime_ns` (CLOCK_REALTIME).  Lifetime reports need it for
 * report_realtime_of(); interval reports get their interval's end. */
void report_set_clock(struct report *r, uint64_t tsc, uint64_t realtime_ns);

/* The UTC time (ns since the epoch) of timestamp `tsc`, by the report's
 * reference instant and rate. */
uint64_t report_realtime_of(const struct report *r, uint64_t tsc);

/* `YYYY-MM-DD HH:MM:SS.nnnnnnnnn`, UTC, of a CLOCK_REALTIME instant. */
void report_format_utc_ns(uint64_t realtime_ns, char *buf, size_t n);

/* Convert `ticks` to the report unit. */
double report_convert(enum report_unit u, double ticks, double tsc_hz);

#endif
