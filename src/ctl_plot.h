/*
 * ctl_plot.h - `perfmonctl plot FILE.csv -o OUT.svg`: each stage's
 * percentiles over time as a self-contained SVG.
 *
 * Flow: CSV file -> ctl_csv rows -> [ctl_plot: per-stage series, axes,
 * legend, anomaly marks] -> SVG file.  One panel per stage, stacked: every
 * percentile column of the file and the max as lines over time on a
 * logarithmic latency axis (value stages get a linear axis from zero),
 * intervals with anomalies marked along the top of the panel.  No
 * scripts, no external fonts or images: the file renders the same in a
 * browser, an image viewer or rsvg-convert.
 */
#ifndef PERFMOND_CTL_PLOT_H
#define PERFMOND_CTL_PLOT_H

#include <stdio.h>

#include "ctl_report.h"

struct ctl_plot_opts {
	unsigned width;                  /* pixels, default 960 */
	const char *title;               /* default: the file name */
	const struct ctl_filter *filter; /* may be NULL */
};

/*
 * Read `path` and write its SVG to `out`.  Returns 0, or a negative errno
 * with `err` filled: an unreadable or malformed file, or -ENODATA when no
 * row passes the filter.  On success `err` is empty, or holds a warning
 * (a heading too long for the width, cut short with an ellipsis).
 */
int ctl_plot_file(const char *path, const struct ctl_plot_opts *o, FILE *out, char *err,
		  size_t errlen);

/* The command: exit 0, 1 bad usage or unwritable output, 4 unreadable or
 * malformed file (or nothing to plot). */
int ctl_plot_cmd(int argc, char **argv, FILE *out, FILE *err);

#endif
