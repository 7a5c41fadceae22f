/*
 * ctl_csv.h - reading the CSV time series perfmond writes (docs/csv.md).
 *
 * Flow: CSV file -> [ctl_csv: libcsv in strict mode, header check, typed
 * rows with cleaned labels] -> report, plot, compare, top.  The reader is
 * incremental so `top` can feed it a file as it grows; whole files go
 * through ctl_csv_read_file().  Labels are cleaned (ctl_text_clean) before
 * a row is handed out: nothing downstream sees raw bytes from the file.
 */
#ifndef PERFMOND_CTL_CSV_H
#define PERFMOND_CTL_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_CSV_MAX_PCT 16

/* The layout of a file, from its header line. */
struct ctl_csv_header {
	char unit[8];                            /* "ns", "us" or "cycles" */
	unsigned npct;
	char pct_label[CTL_CSV_MAX_PCT][24];     /* "p50", "p99_9" */
	double pct[CTL_CSV_MAX_PCT];             /* 50, 99.9 */
	bool has_overhead;
	unsigned ncols;
};

/* One interval row.  Pointers are valid during the callback only. */
struct ctl_csv_row {
	int64_t time_ms;             /* interval end, ms since the epoch (UTC) */
	const char *timestamp;       /* as written */
	const char *point;           /* cleaned */
	const char *stage;           /* cleaned */
	bool value;                  /* kind "value" (else "latency") */
	uint64_t count, dropped, invalid, stalled, abandoned, orphan, out_of_range;
	double min, mean, stddev, max;
	/* min and max exactly, when written as whole numbers (value rows can
	 * hold any uint64, which a double cannot); else false. */
	bool min_max_exact;
	uint64_t min_exact, max_exact;
	double pct[CTL_CSV_MAX_PCT];
	/* Each percentile exactly, when written as a whole number (value
	 * rows); pct_exact[i] is meaningful only where pct_is_int[i]. */
	bool pct_is_int[CTL_CSV_MAX_PCT];
	uint64_t pct_exact[CTL_CSV_MAX_PCT];
	/* The mean as written: above 2^53 its digits are more than `mean`
	 * holds. */
	const char *mean_text;
	double tsc_hz;
	double overhead;             /* 0 without the overhead column */
	unsigned long record;        /* 1-based record number; the header is 1 */
};

/* Metric identifiers for ctl_csv_metric(): the fixed figures, then the
 * percentile columns as CTL_METRIC_PCT + index. */
enum {
	CTL_METRIC_MIN = 0,
	CTL_METRIC_MEAN,
	CTL_METRIC_STDDEV,
	CTL_METRIC_MAX,
	CTL_METRIC_PCT,
};

/* Called once per row; a negative return stops the reader with that error. */
typedef int (*ctl_csv_row_fn)(void *ctx, const struct ctl_csv_header *h,
			      const struct ctl_csv_row *row);

struct ctl_csv_reader;

/*
 * A reader for a stream called `name` (used in messages), delivering rows
 * to `fn`.  0 or -ENOMEM.
 */
int ctl_csv_reader_new(struct ctl_csv_reader **ret, const char *name, ctl_csv_row_fn fn,
		       void *ctx);

/*
 * Parse `len` more bytes.  Rows are delivered as their line ends.  The
 * first record must be a perfmond header; an identical header repeated
 * later (files concatenated) is skipped.  Returns 0, -EBADMSG (malformed:
 * see ctl_csv_reader_error()), -ENOMEM, or the callback's error.
 */
int ctl_csv_reader_feed(struct ctl_csv_reader *r, const void *buf, size_t len);

/* End of input: deliver a last row without a line break.  Same returns;
 * -ENODATA when not even a header was seen. */
int ctl_csv_reader_finish(struct ctl_csv_reader *r);

/* Rows delivered so far. */
unsigned long ctl_csv_reader_rows(const struct ctl_csv_reader *r);

/* The last error as "NAME:RECORD: what" (empty when none). */
const char *ctl_csv_reader_error(const struct ctl_csv_reader *r);

/* NULL is accepted. */
void ctl_csv_reader_free(struct ctl_csv_reader *r);

/* The longest field a reader of perfmond's CSV files buffers. */
#define CTL_CSV_FIELD_MAX 65536

struct csv_parser;

/* Give a libcsv parser (after csv_init) this reader's limits: spaces kept
 * as they are, and a field longer than CTL_CSV_FIELD_MAX refused before it
 * is buffered whole (csv_parse stops, csv_error() says CSV_ENOMEM). */
void ctl_csv_parser_limits(struct csv_parser *p);

/* Open `path` for reading if it is a regular file (never blocking on a
 * FIFO; a device, directory or FIFO is refused).  The descriptor, or a
 * negative errno with a message in `err`. */
int ctl_csv_open_regular(const char *path, char *err, size_t errlen);

/*
 * Read a whole file, delivering each row to `fn`; the header goes to
 * `ret_header` (may be NULL).  Returns 0 or a negative errno with a message
 * in `err` naming the file and the record.
 */
int ctl_csv_read_file(const char *path, ctl_csv_row_fn fn, void *ctx,
		      struct ctl_csv_header *ret_header, char *err, size_t errlen);

/*
 * The metric called `name` in `h`: min, mean, stddev, max, median (p50), or
 * a percentile column written as p99, p99_9 or p99.9.  Returns its
 * identifier or -ENOENT.
 */
int ctl_csv_metric_lookup(const struct ctl_csv_header *h, const char *name);

/* The column name of metric `id` in `h` ("p99_9", "mean"). */
const char *ctl_csv_metric_name(const struct ctl_csv_header *h, int id);

/* The figure of metric `id` in `row`. */
double ctl_csv_metric(const struct ctl_csv_row *row, int id);

/* The figure of metric `id` exactly, when the file wrote it as a whole
 * number (min, max and percentiles of value rows: any uint64): true with
 * it in *ret, else false. */
bool ctl_csv_metric_exact(const struct ctl_csv_row *row, int id, uint64_t *ret);

/* "YYYY-MM-DD HH:MM:SS.mmm" (UTC) to ms since the epoch.  0 or -EINVAL. */
int ctl_csv_parse_time(const char *s, int64_t *ret_ms);

/* ---- Stage index: (point, stage, kind) -> dense id, first seen first -- */

struct ctl_stage {
	char *point;
	char *stage;
	bool value;
};

struct ctl_stages {
	struct ctl_stage *items;
	unsigned n, cap;
	unsigned *slots;       /* open addressing: id + 1, 0 = free */
	unsigned mask;
};

/* An empty index, and its release. */
void ctl_stages_init(struct ctl_stages *s);
void ctl_stages_free(struct ctl_stages *s);

/* The id of (point, stage, value), added if new.  Returns it or -ENOMEM. */
int ctl_stages_id(struct ctl_stages *s, const char *point, const char *stage, bool value);

/* The id if known, else -ENOENT. */
int ctl_stages_find(const struct ctl_stages *s, const char *point, const char *stage,
		    bool value);

#endif
