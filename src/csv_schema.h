/*
 * csv_schema.h - the one definition of the columns of perfmond's CSV files
 * (docs/csv.md): the interval series `STEM.csv` and the slowest spans
 * `STEM_outliers.csv`.  csv_out.c writes headers from it, perfmonctl
 * (ctl_csv.c, ctl_outliers.c) checks them against it.
 *
 * Series:   timestamp,point,stage,kind,count,dropped,invalid,stalled,
 *           abandoned,orphan,out_of_range,min_U,mean_U,stddev_U,
 *           pN_U...,max_U,tsc_hz[,overhead_U]       (U: ns, us or cycles)
 * Outliers: timestamp,point,stage,rank,seq,start,duration_U
 */
#ifndef PERFMOND_CSV_SCHEMA_H
#define PERFMOND_CSV_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include "report_unit.h"

/* The series' leading columns, before the figures. */
#define CSV_FIXED_COLS 11
extern const char *const csv_fixed_columns[CSV_FIXED_COLS];
#define CSV_COL_COUNT 4          /* index of `count`; the counters follow it */
#define CSV_COL_PCT (CSV_FIXED_COLS + 3)   /* the first percentile column
					    * (max_U when there is none) */

/* The outliers file's columns before `duration_U`. */
#define CSV_OUTLIERS_FIXED 6
extern const char *const csv_outliers_columns[CSV_OUTLIERS_FIXED];

/* What differs from one series file to another: the figures' unit, the
 * percentile columns, whether an overhead column ends the row. */
struct csv_series_shape {
	enum report_unit unit;
	unsigned npct;
	const char (*pct_label)[24];   /* "p50", "p99_9" (npct of them) */
	bool overhead;
};

/* How many columns a series file of shape `s` has. */
unsigned csv_series_ncols(const struct csv_series_shape *s);

/*
 * The name of column `i` (from 0) of a series file of shape `s`, into buf
 * (n bytes).  Returns its length, or -1 past the last column or when it
 * does not fit.
 */
int csv_series_column(const struct csv_series_shape *s, unsigned i, char *buf, size_t n);

/* The series header of shape `s`, columns joined by commas, without a
 * newline.  Returns its length, or -1 when it does not fit. */
int csv_series_header(char *buf, size_t n, const struct csv_series_shape *s);

/* The outliers header for `unit`; as csv_series_header. */
int csv_outliers_header(char *buf, size_t n, enum report_unit unit);

/* The unit a figure column's suffix names ("ns", "us", "cycles"). */
bool csv_unit_parse(const char *name, enum report_unit *ret);

/*
 * Whether `col` is a percentile column of `unit` ("p99_9_ns"): true with
 * its percentile (0 to 100) in *ret_pct and the length of its label
 * ("p99_9") in *ret_label_len.
 */
bool csv_pct_column(const char *col, enum report_unit unit, double *ret_pct,
		    size_t *ret_label_len);

#endif /* PERFMOND_CSV_SCHEMA_H */
