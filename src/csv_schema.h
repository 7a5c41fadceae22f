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

/* The series' leading columns, before the figures. */
#define CSV_FIXED_COLS 11
extern const char *const csv_fixed_columns[CSV_FIXED_COLS];
#define CSV_COL_COUNT 4          /* index of `count`; the counters follow it */

/* The outliers file's columns before `duration_U`. */
#define CSV_OUTLIERS_FIXED 6
extern const char *const csv_outliers_columns[CSV_OUTLIERS_FIXED];

/* The units a figure column may be in. */
bool csv_unit_known(const char *unit);

/*
 * The series header for `unit`, the `npct` percentile labels ("p50",
 * "p99_9") and the overhead column when `overhead`: into buf (n bytes),
 * without a newline.  Returns its length, or -1 when it does not fit.
 */
int csv_series_header(char *buf, size_t n, const char *unit, const char (*pct_label)[24],
		      unsigned npct, bool overhead);

/* The outliers header for `unit`; as csv_series_header. */
int csv_outliers_header(char *buf, size_t n, const char *unit);

#endif /* PERFMOND_CSV_SCHEMA_H */
