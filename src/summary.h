/*
 * summary.h - the summary file: lifetime figures per row in a fixed-width
 * table (docs/summary.md), written atomically (temporary file + rename).
 *
 * Flow: report (lifetime rows) -> [summary] -> file, at shutdown, on
 * SIGUSR2 / `perfmonctl summary`, and at each rotation.
 */
#ifndef PERFMOND_SUMMARY_H
#define PERFMOND_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

struct summary_info {
	const char *instance;     /* shm name */
	double tsc_hz;
	bool tsc_invariant;
	bool tsc_clock;           /* false: CLOCK_MONOTONIC timestamps (non-x86) */
	uint64_t run_ns;          /* since the daemon started */
	double overhead_ticks;    /* measured per-stamp overhead */
	bool subtracting;         /* subtract_overhead on */
	enum report_unit unit;
	uint64_t drained, dropped, stalled;
	uint64_t misordered;      /* span events paired out of time order */
};

/* Write the summary table to `f`. */
void summary_format(FILE *f, const struct report *lifetime, const struct summary_info *info);

/*
 * Write the summary to `path` atomically: a temporary file in the same
 * directory, fsync, rename.  Never follows a symlink at `path`'s temporary.
 * 0 or negative errno with `err` filled.
 */
int summary_write(const char *path, const struct report *lifetime,
		  const struct summary_info *info, char *err, size_t errlen);

/* A duration for humans: 1.5ns, 2.50us, 3.25ms, 4.50s; `cyc` in cycles. */
void summary_format_duration(double v, enum report_unit unit, char *buf, size_t n);

#endif
