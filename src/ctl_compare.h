/*
 * ctl_compare.h - `perfmonctl compare BASE.csv CURRENT.csv`: the
 * regression check between two runs (perfmonctl(1), "compare").
 *
 * Flow: two CSV files -> ctl_csv rows -> per stage, one sample per interval
 * row with count > 0 (the chosen metric: p50 by default) -> [ctl_compare:
 * medians, thresholds, spread, bootstrap] -> verdict table.
 *
 * The rule, per stage present in both files (a latency or value growing
 * is the wrong way):
 *   delta = median(current) - median(base), relative = delta / |median(base)|
 *   - informational: relative <= threshold or delta <= min_delta (improved
 *     or unchanged);
 *   - otherwise critical when relative > 4 x threshold, else regression,
 *     and both are capped at warning when
 *       the coefficient of variation of either sample exceeds max_cv
 *       (too noisy to tell), or
 *       the bootstrap confidence interval of delta reaches 0 or below
 *       (the shift is not distinguishable from chance), or
 *       either side has fewer than min_samples intervals.
 * Stages found in only one file are listed, never judged.  Files in
 * different units are not compared (no silent conversion): that, an
 * unreadable file, or a metric missing from one file is an error.
 */
#ifndef PERFMOND_CTL_COMPARE_H
#define PERFMOND_CTL_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl_stats.h"
#include "ctl_table.h"

enum ctl_severity {
	CTL_SEV_INFO = 0,
	CTL_SEV_WARNING,
	CTL_SEV_REGRESSION,
	CTL_SEV_CRITICAL,
};

struct ctl_compare_opts {
	const char *metric;        /* default "p50" */
	double threshold;          /* relative, default 0.05 */
	double min_delta;          /* absolute, file unit, default 0 */
	double max_cv;             /* default 0.25 */
	unsigned resamples;        /* default 2000 */
	double confidence;         /* default 0.95 */
	uint64_t seed;             /* default 1 */
	unsigned min_samples;      /* default 5 */
};

struct ctl_compare_verdict {
	size_t nb, nc;             /* interval samples, all runs of a side */
	unsigned kb, kc;           /* runs per side */
	double base, cur;          /* medians */
	double delta, rel;
	/* base and cur exactly (delta is their difference), when every
	 * figure behind them was a whole number and each side's figure is
	 * one of them or the midpoint of two: value rows reach 2^64 - 1, more
	 * digits than base and cur hold */
	bool exact;
	struct ctl_exact base_x, cur_x;
	double ci_lo, ci_hi;       /* of delta; NaN when not computed */
	double cv_base, cv_cur;
	unsigned resamples;        /* actually used (bounded for huge files) */
	bool runs_test;            /* the interval comes from run-to-run variation */
	bool degenerate;           /* the interval had zero width: not shown */
	enum ctl_severity sev;
	char note[480];
};

enum ctl_presence {
	CTL_IN_BOTH = 0,
	CTL_ONLY_BASE,
	CTL_ONLY_CURRENT,
};

struct ctl_compare_stage {
	char *point;
	char *stage;
	bool value;
	enum ctl_presence presence;
	struct ctl_compare_verdict v;
};

struct ctl_compare_result {
	struct ctl_compare_stage *stages;
	unsigned n;
	char unit[8];
	char metric[24];
	unsigned long base_rows, cur_rows;
	unsigned base_runs, cur_runs;
	bool tail;                 /* the metric is a tail (see metric_is_tail) */
	char notes[4][640];        /* caveats about the pair of files */
	unsigned nnotes;
	unsigned regressions, criticals, warnings;
};

/* The defaults listed with the fields above. */
void ctl_compare_defaults(struct ctl_compare_opts *o);

/* "informational", "warning", "regression", "critical". */
const char *ctl_severity_name(enum ctl_severity s);

/*
 * Judge one stage from its samples (see the rule above); `seed` feeds the
 * bootstrap.  0, or -EINVAL / -ENOMEM.
 */
int ctl_compare_samples(const double *base, size_t nb, const double *cur, size_t nc,
			const struct ctl_compare_opts *o, uint64_t seed,
			struct ctl_compare_verdict *ret);

/*
 * Compare two files.  Returns 0, or a negative errno with `err` filled:
 * -EPROTO for different units, -ENOENT for a metric missing from a file
 * (also unknown metric names), other errors for unreadable or malformed
 * files.
 */
/* Most runs on one side of a comparison. */
#define CTL_COMPARE_MAX_RUNS 32

/*
 * Compare the runs of two sides.  `base` and `cur` are each one CSV path,
 * or several separated by commas (a path that exists as written is one
 * file even with a comma in it).  With two or more runs on a side, each
 * run contributes one figure per stage and the verdict rests on run-to-run
 * variation; with one run per side only centre metrics (mean, percentiles
 * below 90) can reach a regression.
 */
int ctl_compare_files(const char *base, const char *cur, const struct ctl_compare_opts *o,
		      struct ctl_compare_result *ret, char *err, size_t errlen);

/* Release what ctl_compare_files() allocated. */
void ctl_compare_result_free(struct ctl_compare_result *r);

/* Print the verdicts, the one-file stages and the caveats. */
int ctl_compare_print(FILE *out, const char *base, const char *cur,
		      const struct ctl_compare_result *r, const struct ctl_compare_opts *o,
		      enum ctl_format fmt, unsigned width);

/* The command: exit 0, 1 bad usage, 4 unreadable or mismatched file, 5 a
 * regression with --fail-on-regression. */
/* The comparison as one JSON document (schema in perfmonctl(1)). */
int ctl_compare_print_json(FILE *out, const char *base, const char *cur,
			   const struct ctl_compare_result *r, const struct ctl_compare_opts *o);

/* The comparison as a JUnit XML report: one testcase per stage compared,
 * a failure for each regression.  0 or -EIO. */
int ctl_compare_write_junit(FILE *f, const struct ctl_compare_result *r);

int ctl_compare_cmd(int argc, char **argv, FILE *out, FILE *err);

#endif
