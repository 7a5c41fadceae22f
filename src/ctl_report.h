/*
 * ctl_report.h - `perfmonctl report FILE.csv`: the whole file summarised
 * per point and stage.
 *
 * Flow: CSV file -> ctl_csv rows -> [ctl_report: per-stage aggregation]
 * -> ctl_table.  Per stage: intervals with samples, total count, the
 * count-weighted mean, the pooled standard deviation, min and max over all
 * intervals, and for each percentile column the median of its per-interval
 * values with their range (a percentile of a whole run cannot be rebuilt
 * from interval percentiles; their spread is what the file can tell).
 * The collector's losses (dropped, stalled) are the file's, counted once
 * per interval: below the live/md table, on a last row of kind
 * `collector` in CSV, top-level members in JSON.
 */
#ifndef PERFMOND_CTL_REPORT_H
#define PERFMOND_CTL_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "ctl_table.h"

/* Row filters: shell patterns (fnmatch); a row passes when it matches one
 * of the point patterns (or there are none) and one of the stage patterns
 * (or there are none). */
struct ctl_filter {
	const char **points;
	unsigned npoints;
	const char **stages;
	unsigned nstages;
};

/* Does (point, stage) pass the filter? */
bool ctl_filter_match(const struct ctl_filter *f, const char *point, const char *stage);

/*
 * Add a pattern from `--point`/`--stage` (kept by pointer).  0 or -ENOMEM.
 */
int ctl_filter_add(struct ctl_filter *f, bool stage, const char *pattern);

/* Release the pattern lists (not the patterns). */
void ctl_filter_free(struct ctl_filter *f);

/*
 * Report on `path` to `out` in `fmt` (live tables fitted to `width`).
 * Returns 0, or a negative errno with `err` filled (unreadable or
 * malformed file).
 */
int ctl_report_file(const char *path, const struct ctl_filter *filter, FILE *out,
		    enum ctl_format fmt, unsigned width, char *err, size_t errlen);

/* The command: exit 0, 1 bad usage, 4 unreadable or malformed file. */
int ctl_report_cmd(int argc, char **argv, FILE *out, FILE *err);

#endif
