/*
 * check_csv_out.c - tests for the CSV writer (src/csv_out.c): the header
 * for every unit/percentile/overhead setting, row formatting, RFC 4180
 * labels read back by libcsv's strict parser, the C locale under a
 * comma-decimal one, append rules, repair of a torn last line, refusal of
 * symlinks and odd files, a full file system (simulated with
 * RLIMIT_FSIZE), reopen after an external rename, and rotation with
 * pruning.
 *
 * Every file lives in one scratch directory per test case, made and
 * removed by the parent process, so a failed test leaves nothing behind.
 */
#include "build-config.h"

#include <check.h>
#include <csv.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "csv_out.h"
#include "scratch.h"

#define DEFAULT_HEADER \
	"timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan," \
	"out_of_range,min_ns,mean_ns,stddev_ns,p50_ns,p90_ns,p99_ns,p99_9_ns,max_ns,tsc_hz"

/* 2023-11-14 22:13:20.123 UTC */
#define T0 UINT64_C(1700000000123456789)
#define SEC UINT64_C(1000000000)

/* ------------------------------------------------------------------ */
/* Scratch directory */

static void setup_scratch(void)
{
	scratch_create("check_csv_out");
}

static void spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* ------------------------------------------------------------------ */
/* Settings and reports */

static struct report_settings settings(enum report_unit u, const char *const *labels,
				       const double *pct, unsigned n, bool overhead)
{
	struct report_settings s;

	memset(&s, 0, sizeof(s));
	s.unit = u;
	s.npct = n;
	for (unsigned i = 0; i < n; i++) {
		s.pct[i] = pct[i];
		snprintf(s.pct_label[i], sizeof(s.pct_label[i]), "%s", labels[i]);
	}
	s.subtract_overhead = overhead;
	return s;
}

static const char *const default_labels[] = { "p50", "p90", "p99", "p99_9" };
static const double default_pct[] = { 50, 90, 99, 99.9 };

static struct report_settings default_settings(void)
{
	return settings(REPORT_UNIT_NS, default_labels, default_pct, 4, false);
}

static void report_alloc(struct report *r, uint32_t cap)
{
	memset(r, 0, sizeof(*r));
	r->rows = calloc(cap, sizeof(*r->rows));
	ck_assert_ptr_nonnull(r->rows);
	r->cap = cap;
	r->tsc_hz = 2445405173.4;
}

/* A writer with settings `s` on scratch file `name`, which must open. */
static struct csv_out *open_as(const char *name, const struct report_settings *s)
{
	struct csv_out *c = NULL;
	char err[1024];

	ck_assert_msg(csv_out_open(&c, scratch_path(name), s, err, sizeof(err)) == 0, "%s", err);
	return c;
}

/* A writer with the default settings on scratch file `name`, and a report
 * with room for `rows` rows: what most cases start from. */
static struct csv_out *open_default(const char *name, struct report *r, uint32_t rows)
{
	struct report_settings s = default_settings();

	report_alloc(r, rows);
	return open_as(name, &s);
}

/* A latency row whose count is `tag`, so tests can tell rows apart. */
static struct report_row *add_row(struct report *r, const char *point, const char *stage,
				  uint64_t tag)
{
	struct report_row *row;

	/* No ck_assert here: this runs while a file-size limit is in force. */
	if (r->nrows >= r->cap)
		abort();
	row = &r->rows[r->nrows++];
	memset(row, 0, sizeof(*row));
	snprintf(row->point, sizeof(row->point), "%s", point);
	snprintf(row->stage, sizeof(row->stage), "%s", stage);
	row->kind = REPORT_LATENCY;
	row->f.count = tag;
	row->f.min = 29.94;
	row->f.mean = 290.625;
	row->f.stddev = 546.55;
	for (unsigned i = 0; i < REPORT_MAX_PCT; i++)
		row->f.pct[i] = 281.25 + i;
	row->f.max = 110116.3;
	row->f.p50 = 281.25;
	row->f.p99 = 536.5;
	return row;
}

/* `n` rows tagged first, first + 1, ... */
static void fill_tagged(struct report *r, uint64_t first, uint32_t n, uint64_t when)
{
	r->nrows = 0;
	r->end_realtime_ns = when;
	for (uint32_t i = 0; i < n; i++)
		add_row(r, "tick_to_trade", "decode", first + i);
}

/* ------------------------------------------------------------------ */
/* The outliers file */

START_TEST(test_outliers_file)
{
	struct report_settings s = default_settings(), us = s;
	struct outlier_set *set = calloc(1, outliers_set_size(3));
	struct report r;
	struct report_row *row;
	struct csv_out *c = NULL;
	char err[4096], path[4200], *text;

	ck_assert_ptr_nonnull(set);
	ck_assert_int_eq(csv_out_outliers_path("/x/run.csv", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/x/run_outliers.csv");
	ck_assert_int_eq(csv_out_outliers_path("/x/run.log", path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/x/run.log_outliers.csv");

	report_alloc(&r, 4);
	r.nrows = 0;
	r.end_realtime_ns = T0;
	r.tsc_hz = 2e9;
	/* ticks 2000 before the reference instant: 1 us earlier */
	report_set_clock(&r, 1000000, T0);
	row = add_row(&r, "tick, \"to\"", "decode", 5);
	outliers_offer(set, 3, 4000, 998000, 11);   /* 2 us, started 1 us before T0 */
	outliers_offer(set, 3, 9000, 990000, 12);   /* 4.5 us, started 5 us before */
	row->outliers = set;
	add_row(&r, "other", "total", 1);           /* no outliers: no line */
	ck_assert_int_eq(csv_out_open_outliers(&c, scratch_path("o.csv"), &s, err, sizeof(err)),
			 0);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	text = scratch_slurp(scratch_path("o.csv"), NULL);
	ck_assert_str_eq(text,
		"timestamp,point,stage,rank,seq,start,duration_ns\n"
		"2023-11-14 22:13:20.123,\"tick, \"\"to\"\"\",decode,1,12,"
		"2023-11-14 22:13:20.123451789,4500.0\n"
		"2023-11-14 22:13:20.123,\"tick, \"\"to\"\"\",decode,2,11,"
		"2023-11-14 22:13:20.123455789,2000.0\n");
	free(text);

	/* appended to under the same header, refused under another */
	ck_assert_int_eq(csv_out_open_outliers(&c, scratch_path("o.csv"), &s, err, sizeof(err)),
			 0);
	csv_out_close(c);
	us.unit = REPORT_UNIT_US;
	ck_assert_int_eq(csv_out_open_outliers(&c, scratch_path("o.csv"), &us, err, sizeof(err)),
			 -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "duration_us"));
	/* and the series' header is not an outliers header */
	ck_assert_int_eq(csv_out_open(&c, scratch_path("o.csv"), &s, err, sizeof(err)), -EEXIST);
	free(r.rows);
	free(set);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Reading CSV back with libcsv's strict parser */

#define MAX_FIELDS 40

struct parsed {
	unsigned nrows;
	unsigned cap;
	unsigned *nfields;                 /* per row */
	char *(*fields)[MAX_FIELDS];       /* per row */
	unsigned cur;                      /* fields in the row being read */
	char *cur_fields[MAX_FIELDS];
	bool too_wide;
};

static void on_field(void *s, size_t len, void *data)
{
	struct parsed *p = data;
	char *copy = malloc(len + 1);

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, s, len);
	copy[len] = '\0';
	if (p->cur < MAX_FIELDS)
		p->cur_fields[p->cur] = copy;
	else {
		p->too_wide = true;
		free(copy);
	}
	p->cur++;
}

static void on_row(int c, void *data)
{
	struct parsed *p = data;

	(void)c;
	if (p->nrows == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->nfields = realloc(p->nfields, p->cap * sizeof(*p->nfields));
		p->fields = realloc(p->fields, p->cap * sizeof(*p->fields));
		ck_assert(p->nfields && p->fields);
	}
	p->nfields[p->nrows] = p->cur;
	memcpy(p->fields[p->nrows], p->cur_fields, sizeof(p->cur_fields));
	memset(p->cur_fields, 0, sizeof(p->cur_fields));
	p->nrows++;
	p->cur = 0;
}

/* Parse a whole file strictly; fails the test on any CSV error. */
static void parse_file(const char *path, struct parsed *p)
{
	struct csv_parser cp;
	size_t len;
	char *text = scratch_slurp(path, &len);

	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(csv_init(&cp, CSV_STRICT | CSV_STRICT_FINI), 0);
	ck_assert_msg(csv_parse(&cp, text, len, on_field, on_row, p) == len,
		      "%s: %s", path, csv_strerror(csv_error(&cp)));
	ck_assert_msg(csv_fini(&cp, on_field, on_row, p) == 0, "%s: %s", path,
		      csv_strerror(csv_error(&cp)));
	csv_free(&cp);
	free(text);
	ck_assert(!p->too_wide);
}

static void parsed_free(struct parsed *p)
{
	for (unsigned i = 0; i < p->nrows; i++)
		for (unsigned k = 0; k < p->nfields[i] && k < MAX_FIELDS; k++)
			free(p->fields[i][k]);
	free(p->nfields);
	free(p->fields);
}

static unsigned header_width(const char *header)
{
	unsigned n = 1;

	for (; *header; header++)
		n += *header == ',';
	return n;
}

/*
 * The file is one header and rows of its width; the rows' count column
 * (the tag) must be exactly first, first + 1, ... first + n - 1.
 */
static void assert_tagged_file(const char *path, const char *header, uint64_t first,
			       uint64_t n)
{
	struct parsed p;
	unsigned w = header_width(header);

	parse_file(path, &p);
	ck_assert_uint_eq(p.nrows, n + 1);
	for (unsigned i = 0; i < p.nrows; i++)
		ck_assert_uint_eq(p.nfields[i], w);
	ck_assert_str_eq(p.fields[0][0], "timestamp");
	for (uint64_t i = 0; i < n; i++) {
		const char *count = p.fields[i + 1][4];
		ck_assert_msg(strtoull(count, NULL, 10) == first + i,
			      "%s: row %llu has tag %s, expected %llu", path,
			      (unsigned long long)i, count, (unsigned long long)(first + i));
	}
	parsed_free(&p);
}

/* ------------------------------------------------------------------ */
/* Header and formatting */

START_TEST(test_header_default)
{
	struct report_settings s = default_settings();
	struct csv_out *c = NULL;
	char *text;
	struct stat st;
	mode_t mask = umask(0);

	umask(mask);
	c = open_as("a.csv", &s);
	ck_assert_str_eq(csv_out_header(c), DEFAULT_HEADER);
	ck_assert_uint_eq(csv_out_size(c), strlen(DEFAULT_HEADER) + 1);
	csv_out_close(c);
	text = scratch_slurp(scratch_path("a.csv"), NULL);
	ck_assert_str_eq(text, DEFAULT_HEADER "\n");
	free(text);
	ck_assert_int_eq(stat(scratch_path("a.csv"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0640 & ~mask);
}
END_TEST

START_TEST(test_header_custom)
{
	static const char *const labels[] = { "p90", "p99_99", "p99_9999999" };
	static const double pct[] = { 90, 99.99, 99.9999999 };
	struct report_settings s = settings(REPORT_UNIT_US, labels, pct, 3, true);
	struct csv_out *c = NULL;

	c = open_as("us.csv", &s);
	ck_assert_str_eq(csv_out_header(c),
			 "timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,"
			 "orphan,out_of_range,min_us,mean_us,stddev_us,p90_us,p99_99_us,"
			 "p99_9999999_us,max_us,tsc_hz,overhead_us");
	csv_out_close(c);

	s = settings(REPORT_UNIT_CYCLES, labels, pct, 1, false);
	c = open_as("cyc.csv", &s);
	ck_assert_str_eq(csv_out_header(c),
			 "timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,"
			 "orphan,out_of_range,min_cycles,mean_cycles,stddev_cycles,p90_cycles,"
			 "max_cycles,tsc_hz");
	csv_out_close(c);

	/* No percentile at all is a valid configuration too. */
	s = settings(REPORT_UNIT_NS, labels, pct, 0, true);
	c = open_as("none.csv", &s);
	ck_assert(strstr(csv_out_header(c), ",stddev_ns,max_ns,tsc_hz,overhead_ns"));
	csv_out_close(c);
}
END_TEST

START_TEST(test_timestamp)
{
	char buf[64];

	csv_format_timestamp(0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1970-01-01 00:00:00.000");
	csv_format_timestamp(T0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2023-11-14 22:13:20.123");
	csv_format_timestamp(UINT64_C(951782399999999999), buf, sizeof(buf));
	ck_assert_str_eq(buf, "2000-02-28 23:59:59.999");
}
END_TEST

START_TEST(test_row_format)
{
	struct report r;
	struct report_row *row;
	struct csv_out *c = NULL;
	struct parsed p;
	char *text;

	c = open_default("f.csv", &r, 8);
	r.end_realtime_ns = T0;
	row = add_row(&r, "tick_to_trade", "decode", 376000);
	row->dropped = 3;
	row->stalled = 4;
	row->anomalies.invalid = 5;
	row->anomalies.abandoned = 6;
	row->anomalies.orphan = 7;
	row->anomalies.out_of_range = 8;
	row = add_row(&r, "queue", "value", 12);
	row->kind = REPORT_VALUE;
	row->f.min = 1;
	row->f.mean = 17.5;
	row->f.stddev = 2.25;
	row->f.pct[0] = 17;
	row->f.pct[1] = 30;
	row->f.pct[2] = 41;
	row->f.pct[3] = 42;
	row->f.max = 18446744073709551615.0;
	/* value rows print the exact integers, not the doubles */
	row->f.min_raw = 1;
	row->f.mean_int = 17;
	row->f.mean_frac = 0.5;
	row->f.pct_raw[0] = 17;
	row->f.pct_raw[1] = 30;
	row->f.pct_raw[2] = 41;
	row->f.pct_raw[3] = 42;
	row->f.max_raw = UINT64_MAX;
	row = &r.rows[r.nrows++];
	memset(row, 0, sizeof(*row));
	strcpy(row->point, "collector");
	strcpy(row->stage, "total");
	row->synthetic = true;
	row->dropped = 9;

	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);

	text = scratch_slurp(scratch_path("f.csv"), NULL);
	ck_assert_str_eq(text, DEFAULT_HEADER "\n"
			 "2023-11-14 22:13:20.123,tick_to_trade,decode,latency,376000,3,5,4,6,7,8,"
			 "29.9,290.6,546.5,281.2,282.2,283.2,284.2,110116.3,2445405173\n"
			 "2023-11-14 22:13:20.123,queue,value,value,12,0,0,0,0,0,0,"
			 "1,17.500,2.250,17,30,41,42,18446744073709551615,2445405173\n"
			 "2023-11-14 22:13:20.123,collector,total,latency,0,9,0,0,0,0,0,"
			 "0.0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,2445405173\n");
	free(text);

	parse_file(scratch_path("f.csv"), &p);
	ck_assert_uint_eq(p.nrows, 4);
	for (unsigned i = 0; i < p.nrows; i++)
		ck_assert_uint_eq(p.nfields[i], header_width(DEFAULT_HEADER));
	parsed_free(&p);
	free(r.rows);
}
END_TEST

START_TEST(test_row_format_us_overhead)
{
	static const char *const labels[] = { "p99" };
	static const double pct[] = { 99 };
	struct report_settings s = settings(REPORT_UNIT_US, labels, pct, 1, true);
	struct report r;
	struct report_row *row;
	struct csv_out *c = NULL;
	char *text, *nl;

	report_alloc(&r, 4);
	r.end_realtime_ns = T0;
	r.overhead = 0.01234;
	row = add_row(&r, "p", "s", 1);
	row->f.min = 0.12345;
	row->f.mean = 1.5;
	row->f.stddev = 0;
	row->f.pct[0] = 2;
	row->f.max = 1234.56789;
	c = open_as("usrow.csv", &s);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	text = scratch_slurp(scratch_path("usrow.csv"), NULL);
	nl = strchr(text, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_str_eq(nl + 1, "2023-11-14 22:13:20.123,p,s,latency,1,0,0,0,0,0,0,"
			 "0.1235,1.5000,0.0000,2.0000,1234.5679,2445405173,0.0123\n");
	free(text);
	free(r.rows);
}
END_TEST

START_TEST(test_labels_roundtrip)
{
	static const char *const labels[][2] = {
		{ "say \"hello\"", "decode, verify" },
		{ " leading", "trailing " },
		{ "na\xc3\xafve \xe2\x86\x92 \xe6\xb8\xac\xe5\xae\x9a", "a;b\tc" },
		{ "\"", "," },
		{ "plain", "step_1->2" },
	};
	unsigned n = sizeof(labels) / sizeof(labels[0]);
	struct report r;
	struct csv_out *c = NULL;
	struct parsed p;
	char *text;

	c = open_default("l.csv", &r, 8);
	r.end_realtime_ns = T0;
	for (unsigned i = 0; i < n; i++)
		add_row(&r, labels[i][0], labels[i][1], i + 1);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);

	parse_file(scratch_path("l.csv"), &p);
	ck_assert_uint_eq(p.nrows, n + 1);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_uint_eq(p.nfields[i + 1], header_width(DEFAULT_HEADER));
		ck_assert_str_eq(p.fields[i + 1][1], labels[i][0]);
		ck_assert_str_eq(p.fields[i + 1][2], labels[i][1]);
	}
	parsed_free(&p);

	/* Quoted only when needed, quotes doubled. */
	text = scratch_slurp(scratch_path("l.csv"), NULL);
	ck_assert(strstr(text, ",\"say \"\"hello\"\"\",\"decode, verify\",latency,"));
	ck_assert(strstr(text, ",\" leading\",\"trailing \",latency,"));
	ck_assert(strstr(text, ",plain,step_1->2,latency,"));
	ck_assert(strstr(text, ",na\xc3\xafve \xe2\x86\x92 \xe6\xb8\xac\xe5\xae\x9a,a;b\tc,"));
	free(text);
	free(r.rows);
}
END_TEST

START_TEST(test_comma_locale)
{
	static const char *const labels[] = { "p50", "p99_9" };
	static const double pct[] = { 50, 99.9 };
	struct report_settings s = settings(REPORT_UNIT_US, labels, pct, 2, true);
	struct report r;
	struct report_row *row;
	struct csv_out *c = NULL;
	struct parsed p;
	char buf[64];
	locale_t cl = newlocale(LC_ALL_MASK, "C", (locale_t)0);

	if (!scratch_comma_locale()) {
		fprintf(stderr, "# no comma-decimal locale could be set up (no installed one, "
			"localedef failed); the locale-independence assertion is skipped\n");
		return;
	}
	snprintf(buf, sizeof(buf), "%.1f", 0.5);
	ck_assert_str_eq(buf, "0,5");
	report_alloc(&r, 4);
	r.end_realtime_ns = T0;
	r.overhead = 0.025;
	add_row(&r, "p", "s", 1234567);
	row = add_row(&r, "v", "value", 7);
	row->kind = REPORT_VALUE;
	c = open_as("loc.csv", &s);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);

	parse_file(scratch_path("loc.csv"), &p);
	ck_assert_uint_eq(p.nrows, 3);
	for (unsigned i = 1; i < p.nrows; i++) {
		ck_assert_uint_eq(p.nfields[i], 19);
		for (unsigned k = 4; k < p.nfields[i]; k++) {
			char *end;
			strtod_l(p.fields[i][k], &end, cl);
			ck_assert_msg(*p.fields[i][k] && !*end, "field %u '%s' does not parse "
				      "in the C locale", k, p.fields[i][k]);
		}
		ck_assert_str_eq(p.fields[i][17], "2445405173");
	}
	ck_assert_str_eq(p.fields[1][4], "1234567");
	ck_assert_str_eq(p.fields[1][11], "29.9400");
	ck_assert_str_eq(p.fields[1][18], "0.0250");
	parsed_free(&p);
	free(r.rows);
	freelocale(cl);
	setlocale(LC_NUMERIC, "C");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Appending */

START_TEST(test_append_same_header)
{
	struct report_settings s = default_settings();
	struct report r;
	struct csv_out *c = NULL;
	char err[1024], *text;

	c = open_default("ap.csv", &r, 8);
	fill_tagged(&r, 1, 3, T0);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	c = open_as("ap.csv", &s);
	ck_assert(!csv_out_take_notice(c, err, sizeof(err)));
	fill_tagged(&r, 4, 2, T0 + SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	assert_tagged_file(scratch_path("ap.csv"), DEFAULT_HEADER, 1, 5);
	text = scratch_slurp(scratch_path("ap.csv"), NULL);
	ck_assert_ptr_null(strstr(text + 1, "timestamp"));
	free(text);

	/* A header with CRLF (edited on another system) is still ours. */
	spit(scratch_path("crlf.csv"), DEFAULT_HEADER "\r\n");
	c = open_as("crlf.csv", &s);
	csv_out_close(c);
	free(r.rows);
}
END_TEST

static void assert_refused(const char *path, const struct report_settings *s)
{
	struct csv_out *c = NULL;
	char err[4096], *before, *after;
	size_t nb, na;
	struct stat st0, st1;

	before = scratch_slurp(path, &nb);
	ck_assert_int_eq(stat(path, &st0), 0);
	ck_assert_int_eq(csv_out_open(&c, path, s, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err, "existing header differs from this configuration's; "
			     "refusing to append (file left untouched)"), "%s", err);
	ck_assert_msg(strstr(err, "\n  file:    " DEFAULT_HEADER "\n  current: "), "%s", err);
	ck_assert_msg(strstr(err, path), "%s", err);
	ck_assert_msg(strstr(err, "move the file away or restore the previous "
			     "unit/percentiles/subtract_overhead"), "%s", err);
	after = scratch_slurp(path, &na);
	ck_assert_uint_eq(na, nb);
	ck_assert_int_eq(memcmp(before, after, nb), 0);
	ck_assert_int_eq(stat(path, &st1), 0);
	ck_assert_int_eq(st1.st_mtim.tv_sec, st0.st_mtim.tv_sec);
	ck_assert_int_eq(st1.st_mtim.tv_nsec, st0.st_mtim.tv_nsec);
	free(before);
	free(after);
}

START_TEST(test_append_different_header)
{
	static const char *const other_labels[] = { "p50", "p99" };
	static const double other_pct[] = { 50, 99 };
	struct report_settings s = default_settings(), t;
	struct report r;
	struct csv_out *c = NULL;
	char err[4096];

	c = open_default("d.csv", &r, 4);
	fill_tagged(&r, 1, 2, T0);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);

	t = s;
	t.unit = REPORT_UNIT_US;
	assert_refused(scratch_path("d.csv"), &t);
	t.unit = REPORT_UNIT_CYCLES;
	assert_refused(scratch_path("d.csv"), &t);
	t = settings(REPORT_UNIT_NS, other_labels, other_pct, 2, false);
	assert_refused(scratch_path("d.csv"), &t);
	t = s;
	t.subtract_overhead = true;
	assert_refused(scratch_path("d.csv"), &t);

	/* Something that is not a CSV of ours at all, without a newline. */
	spit(scratch_path("foreign.csv"), "hello world");
	ck_assert_int_eq(csv_out_open(&c, scratch_path("foreign.csv"), &s, err, sizeof(err)),
			 -EEXIST);
	ck_assert_int_eq(access(scratch_path("foreign.csv"), F_OK), 0);
	{
		char *text = scratch_slurp(scratch_path("foreign.csv"), NULL);
		ck_assert_str_eq(text, "hello world");
		free(text);
	}
	assert_tagged_file(scratch_path("d.csv"), DEFAULT_HEADER, 1, 2);
	free(r.rows);
}
END_TEST

START_TEST(test_repair_torn_last_line)
{
	struct report_settings s = default_settings();
	struct report r;
	struct csv_out *c = NULL;
	char notice[1024], *text, *whole;
	size_t n;

	c = open_default("t.csv", &r, 8);
	fill_tagged(&r, 1, 3, T0);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	whole = scratch_slurp(scratch_path("t.csv"), &n);

	/* The machine died in the middle of row 4. */
	{
		FILE *f = fopen(scratch_path("t.csv"), "ab");
		fputs("2023-11-14 22:13:21.123,tick_to_trade,\"dec", f);
		fclose(f);
	}
	c = open_as("t.csv", &s);
	ck_assert(csv_out_take_notice(c, notice, sizeof(notice)));
	ck_assert_msg(strstr(notice, "last line was incomplete") && strstr(notice, "t.csv"),
		      "%s", notice);
	ck_assert(!csv_out_take_notice(c, notice, sizeof(notice)));
	ck_assert_uint_eq(csv_out_size(c), n);
	text = scratch_slurp(scratch_path("t.csv"), NULL);
	ck_assert_str_eq(text, whole);           /* only the partial line went */
	free(text);
	fill_tagged(&r, 4, 2, T0 + SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	assert_tagged_file(scratch_path("t.csv"), DEFAULT_HEADER, 1, 5);
	free(whole);

	/* Died while writing the header: the fragment becomes the header. */
	spit(scratch_path("h.csv"), "timestamp,point,sta");
	c = open_as("h.csv", &s);
	ck_assert(csv_out_take_notice(c, notice, sizeof(notice)));
	csv_out_close(c);
	text = scratch_slurp(scratch_path("h.csv"), NULL);
	ck_assert_str_eq(text, DEFAULT_HEADER "\n");
	free(text);
	free(r.rows);
}
END_TEST

START_TEST(test_refuse_symlink_and_odd_files)
{
	struct report_settings s = default_settings();
	struct csv_out *c = NULL;
	char err[1024], *text;

	spit(scratch_path("target.csv"), "precious\n");
	ck_assert_int_eq(symlink(scratch_path("target.csv"), scratch_path("link.csv")), 0);
	ck_assert_int_eq(csv_out_open(&c, scratch_path("link.csv"), &s, err, sizeof(err)), -ELOOP);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err, "symbolic link") && strstr(err, "link.csv"), "%s", err);
	text = scratch_slurp(scratch_path("target.csv"), NULL);
	ck_assert_str_eq(text, "precious\n");
	free(text);

	/* A dangling symlink is not followed into creating its target either. */
	ck_assert_int_eq(symlink(scratch_path("nowhere.csv"), scratch_path("dangling.csv")), 0);
	ck_assert_int_eq(csv_out_open(&c, scratch_path("dangling.csv"), &s, err, sizeof(err)),
			 -ELOOP);
	ck_assert(!exists(scratch_path("nowhere.csv")));

	/* A FIFO must neither hang the open nor be written to. */
	ck_assert_int_eq(mkfifo(scratch_path("fifo.csv"), 0600), 0);
	ck_assert_int_eq(csv_out_open(&c, scratch_path("fifo.csv"), &s, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
	ck_assert_int_eq(csv_out_open(&c, "/dev/null", &s, err, sizeof(err)), -EINVAL);

	ck_assert_int_eq(mkdir(scratch_path("dir.csv"), 0700), 0);
	ck_assert_int_lt(csv_out_open(&c, scratch_path("dir.csv"), &s, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "dir.csv"), "%s", err);

	ck_assert_int_eq(csv_out_open(&c, scratch_path("missing/x.csv"), &s, err, sizeof(err)),
			 -ENOENT);
	ck_assert_msg(strstr(err, "missing/x.csv") && strstr(err, "directory"), "%s", err);
	ck_assert_ptr_null(c);
}
END_TEST

/* ------------------------------------------------------------------ */
/*
 * A full file system, simulated with RLIMIT_FSIZE: with SIGXFSZ ignored a
 * write past the limit fails with EFBIG, and one that crosses it is cut
 * short, as on a disk that fills up.  The limit applies to every file the
 * test process writes, Check's own message file included, so nothing is
 * asserted while it is in force: results are kept and checked after.
 */

static int set_fsize_limit(rlim_t bytes)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl) < 0)
		return -errno;
	rl.rlim_cur = bytes < rl.rlim_max ? bytes : rl.rlim_max;
	return setrlimit(RLIMIT_FSIZE, &rl) < 0 ? -errno : 0;
}

static int lift_fsize_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl) < 0)
		return -errno;
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_FSIZE, &rl) < 0 ? -errno : 0;
}

START_TEST(test_disk_full_keeps_rows)
{
	struct report r;
	struct csv_out *c = NULL;
	uint64_t tag = 1, size_seen;
	int limited, lifted, rc[5], rc_flush;
	struct stat st, st_full;

	signal(SIGXFSZ, SIG_IGN);
	c = open_default("full.csv", &r, 8);
	fill_tagged(&r, tag, 3, T0);
	tag += 3;
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	ck_assert_int_eq(stat(scratch_path("full.csv"), &st), 0);

	/* Room for one row and a half: the first failing write cuts a row. */
	limited = set_fsize_limit((rlim_t)st.st_size + 200);
	for (int i = 0; i < 5; i++) {
		fill_tagged(&r, tag, 3, T0 + (uint64_t)(i + 1) * SEC);
		tag += 3;
		rc[i] = csv_out_write(c, &r, 1);
	}
	rc_flush = csv_out_flush(c);
	stat(scratch_path("full.csv"), &st_full);
	size_seen = csv_out_size(c);
	lifted = lift_fsize_limit();

	ck_assert_int_eq(limited, 0);
	ck_assert_int_eq(lifted, 0);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(rc[i], -EFBIG);
	ck_assert_int_eq(rc_flush, -EFBIG);
	ck_assert_int_eq(st_full.st_size, st.st_size + 200);
	ck_assert_uint_eq(size_seen, (uint64_t)st_full.st_size);

	/* Space returns: everything follows, in order, once. */
	fill_tagged(&r, tag, 2, T0 + 10 * SEC);
	tag += 2;
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	ck_assert_uint_eq(csv_out_lost(c), 0);
	csv_out_close(c);
	assert_tagged_file(scratch_path("full.csv"), DEFAULT_HEADER, 1, tag - 1);
	free(r.rows);
}
END_TEST

START_TEST(test_disk_full_bounded_backlog)
{
	struct report r;
	struct csv_out *c = NULL;
	uint64_t tag = 1, lost;
	int limited, lifted, failures = 0;
	struct stat st;

	signal(SIGXFSZ, SIG_IGN);
	c = open_default("bl.csv", &r, 1000);
	ck_assert_int_eq(stat(scratch_path("bl.csv"), &st), 0);
	limited = set_fsize_limit((rlim_t)st.st_size + 50);
	/* About 6 MiB of rows, more than the backlog keeps. */
	for (int i = 0; i < 45; i++) {
		fill_tagged(&r, tag, 1000, T0 + (uint64_t)i * SEC);
		tag += 1000;
		failures += csv_out_write(c, &r, 1) == -EFBIG;
	}
	lost = csv_out_lost(c);
	lifted = lift_fsize_limit();

	ck_assert_int_eq(limited, 0);
	ck_assert_int_eq(lifted, 0);
	ck_assert_int_eq(failures, 45);
	ck_assert_uint_gt(lost, 0);
	ck_assert_uint_lt(lost, tag - 1);
	ck_assert_int_eq(csv_out_flush(c), 0);
	csv_out_close(c);
	/* The newest rows were the ones discarded; what was kept is whole. */
	assert_tagged_file(scratch_path("bl.csv"), DEFAULT_HEADER, 1, tag - 1 - lost);
	free(r.rows);
}
END_TEST

START_TEST(test_disk_full_at_open)
{
	struct report_settings s = default_settings();
	struct csv_out *c = NULL;
	char err[1024];
	int limited, lifted, rc;
	struct stat st;

	signal(SIGXFSZ, SIG_IGN);
	limited = set_fsize_limit(20);
	rc = csv_out_open(&c, scratch_path("nohdr.csv"), &s, err, sizeof(err));
	lifted = lift_fsize_limit();

	ck_assert_int_eq(limited, 0);
	ck_assert_int_eq(lifted, 0);
	ck_assert_int_eq(rc, -EFBIG);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err, "nohdr.csv") && strstr(err, "cannot write the CSV header"),
		      "%s", err);
	/* No torn header is left behind. */
	ck_assert_int_eq(stat(scratch_path("nohdr.csv"), &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	c = open_as("nohdr.csv", &s);
	csv_out_close(c);
	assert_tagged_file(scratch_path("nohdr.csv"), DEFAULT_HEADER, 0, 0);
}
END_TEST

START_TEST(test_no_push_until_flush)
{
	struct report r;
	struct csv_out *c = NULL;
	struct stat st;

	c = open_default("np.csv", &r, 8);
	fill_tagged(&r, 1, 3, T0);
	ck_assert_int_eq(csv_out_write(c, &r, 0), 0);
	ck_assert_int_eq(stat(scratch_path("np.csv"), &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)strlen(DEFAULT_HEADER) + 1);
	fill_tagged(&r, 4, 1, T0 + SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 0), 0);
	ck_assert_int_eq(csv_out_flush(c), 0);
	assert_tagged_file(scratch_path("np.csv"), DEFAULT_HEADER, 1, 4);
	fill_tagged(&r, 5, 2, T0 + 2 * SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 0), 0);
	csv_out_close(c);           /* close pushes */
	assert_tagged_file(scratch_path("np.csv"), DEFAULT_HEADER, 1, 6);
	free(r.rows);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Reopen (logrotate) and rotation */

START_TEST(test_reopen_after_rename)
{
	struct report_settings s = default_settings();
	struct report r;
	struct csv_out *c = NULL;
	char err[1024];

	c = open_default("lr.csv", &r, 8);
	fill_tagged(&r, 1, 3, T0);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	fill_tagged(&r, 4, 2, T0 + SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 0), 0);     /* still buffered */
	ck_assert_int_eq(rename(scratch_path("lr.csv"), scratch_path("lr.csv-20231114")), 0);
	ck_assert_int_eq(csv_out_reopen(c, err, sizeof(err)), 0);
	ck_assert_uint_eq(csv_out_size(c), strlen(DEFAULT_HEADER) + 1);
	fill_tagged(&r, 6, 2, T0 + 2 * SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	assert_tagged_file(scratch_path("lr.csv-20231114"), DEFAULT_HEADER, 1, 5);
	assert_tagged_file(scratch_path("lr.csv"), DEFAULT_HEADER, 6, 2);

	/* A reopen with nothing renamed appends, without a second header. */
	c = open_as("lr.csv", &s);
	ck_assert_int_eq(csv_out_reopen(c, err, sizeof(err)), 0);
	fill_tagged(&r, 8, 1, T0 + 3 * SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	assert_tagged_file(scratch_path("lr.csv"), DEFAULT_HEADER, 6, 3);
	free(r.rows);
}
END_TEST

START_TEST(test_reopen_with_cut_row)
{
	struct report r;
	struct csv_out *c = NULL;
	char err[1024];
	struct stat st, st_cut;
	struct parsed a, b;
	int limited, lifted, rc_write, renamed, rc_reopen, rc_flush;

	signal(SIGXFSZ, SIG_IGN);
	c = open_default("cut.csv", &r, 8);
	fill_tagged(&r, 1, 2, T0);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	ck_assert_int_eq(stat(scratch_path("cut.csv"), &st), 0);
	limited = set_fsize_limit((rlim_t)st.st_size + 60);
	fill_tagged(&r, 3, 2, T0 + SEC);
	rc_write = csv_out_write(c, &r, 1);                 /* row 3 cut */
	stat(scratch_path("cut.csv"), &st_cut);
	renamed = rename(scratch_path("cut.csv"), scratch_path("cut.old"));
	/*
	 * The old file stays full, so the cut row cannot be finished there;
	 * the new file has room for the header and both rows.
	 */
	rc_reopen = csv_out_reopen(c, err, sizeof(err));
	rc_flush = csv_out_flush(c);
	lifted = lift_fsize_limit();

	ck_assert_int_eq(limited, 0);
	ck_assert_int_eq(lifted, 0);
	ck_assert_int_eq(rc_write, -EFBIG);
	ck_assert_int_eq(st_cut.st_size, st.st_size + 60);
	ck_assert_int_eq(renamed, 0);
	ck_assert_msg(rc_reopen == 0, "%s", err);
	ck_assert_int_eq(rc_flush, 0);
	csv_out_close(c);
	/* The old file ends with a whole row; the cut one went whole to the new. */
	assert_tagged_file(scratch_path("cut.old"), DEFAULT_HEADER, 1, 2);
	assert_tagged_file(scratch_path("cut.csv"), DEFAULT_HEADER, 3, 2);
	parse_file(scratch_path("cut.old"), &a);
	parse_file(scratch_path("cut.csv"), &b);
	ck_assert_uint_eq(a.nrows + b.nrows, 2 + 4);
	parsed_free(&a);
	parsed_free(&b);
	free(r.rows);
}
END_TEST

START_TEST(test_reopen_failure_keeps_file)
{
	struct report r;
	struct csv_out *c = NULL;
	char err[1024];

	c = open_default("rf.csv", &r, 8);
	fill_tagged(&r, 1, 2, T0);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	/* Someone puts a symlink where the file was: refused, old file kept. */
	ck_assert_int_eq(rename(scratch_path("rf.csv"), scratch_path("rf.old")), 0);
	ck_assert_int_eq(symlink(scratch_path("elsewhere"), scratch_path("rf.csv")), 0);
	ck_assert_int_eq(csv_out_reopen(c, err, sizeof(err)), -ELOOP);
	ck_assert(!exists(scratch_path("elsewhere")));
	fill_tagged(&r, 3, 2, T0 + SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	assert_tagged_file(scratch_path("rf.old"), DEFAULT_HEADER, 1, 4);
	free(r.rows);
}
END_TEST

START_TEST(test_rotate)
{
	static const char *const unrelated[] = {
		"trading-notes.csv", "trading-2023.csv", "other-20231114T221320Z.csv",
		"trading-20231114T221320Z.csv.gz", "trading-20231114T221320Z-x.csv",
		"trading-20231114T2213Z.csv", "trading-20231114T221320Z-0.csv",
		"trading.csv.1",
	};
	struct report r;
	struct csv_out *c = NULL;
	char err[1024], rotated[4096], summary[4200], expect[4200];
	uint64_t tag = 1;

	for (unsigned i = 0; i < sizeof(unrelated) / sizeof(unrelated[0]); i++)
		spit(scratch_path(unrelated[i]), "not ours\n");
	c = open_default("trading.csv", &r, 8);

	/* First rotation: the name, the fresh file with its header. */
	fill_tagged(&r, tag, 3, T0);
	tag += 3;
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	fill_tagged(&r, tag, 1, T0);
	tag += 1;
	ck_assert_int_eq(csv_out_write(c, &r, 0), 0);    /* buffered at rotation */
	ck_assert_int_eq(csv_out_rotate(c, T0, 10, rotated, sizeof(rotated), err,
					sizeof(err)), 0);
	ck_assert_str_eq(rotated, scratch_path("trading-20231114T221320Z.csv"));
	assert_tagged_file(rotated, DEFAULT_HEADER, 1, 4);
	ck_assert_uint_eq(csv_out_size(c), strlen(DEFAULT_HEADER) + 1);
	{
		char *text = scratch_slurp(scratch_path("trading.csv"), NULL);
		ck_assert_str_eq(text, DEFAULT_HEADER "\n");
		free(text);
	}
	/* The daemon writes the companion summary beside it. */
	snprintf(summary, sizeof(summary), "%.*s_summary.txt", (int)strlen(rotated) - 4,
		 rotated);
	spit(summary, "summary 1\n");

	/* Same second again: -1, then -2; never a clobbered name. */
	fill_tagged(&r, tag, 2, T0 + 1);
	tag += 2;
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	ck_assert_int_eq(csv_out_rotate(c, T0 + 1, 10, rotated, sizeof(rotated), err,
					sizeof(err)), 0);
	ck_assert_str_eq(rotated, scratch_path("trading-20231114T221320Z-1.csv"));
	assert_tagged_file(rotated, DEFAULT_HEADER, 5, 2);
	snprintf(summary, sizeof(summary), "%.*s_summary.txt", (int)strlen(rotated) - 4,
		 rotated);
	spit(summary, "summary 2\n");
	fill_tagged(&r, tag, 2, T0 + 2);
	tag += 2;
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	ck_assert_int_eq(csv_out_rotate(c, T0 + 2, 10, rotated, sizeof(rotated), err,
					sizeof(err)), 0);
	ck_assert_str_eq(rotated, scratch_path("trading-20231114T221320Z-2.csv"));
	assert_tagged_file(rotated, DEFAULT_HEADER, 7, 2);

	/* keep = 2: the plain name is the oldest of the three and goes, summary too. */
	fill_tagged(&r, tag, 1, T0 + 3600 * SEC);
	tag += 1;
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	ck_assert_int_eq(csv_out_rotate(c, T0 + 3600 * SEC, 2, rotated, sizeof(rotated), err,
					sizeof(err)), 0);
	ck_assert_str_eq(rotated, scratch_path("trading-20231114T231320Z.csv"));
	assert_tagged_file(rotated, DEFAULT_HEADER, 9, 1);
	ck_assert(!exists(scratch_path("trading-20231114T221320Z.csv")));
	ck_assert(!exists(scratch_path("trading-20231114T221320Z_summary.txt")));
	ck_assert(!exists(scratch_path("trading-20231114T221320Z-1.csv")));
	ck_assert(!exists(scratch_path("trading-20231114T221320Z-1_summary.txt")));
	ck_assert(exists(scratch_path("trading-20231114T221320Z-2.csv")));
	ck_assert(exists(scratch_path("trading-20231114T231320Z.csv")));
	for (unsigned i = 0; i < sizeof(unrelated) / sizeof(unrelated[0]); i++) {
		char *text = scratch_slurp(scratch_path(unrelated[i]), NULL);
		ck_assert_str_eq(text, "not ours\n");
		free(text);
	}

	/* keep = 0: every rotated file goes, the live one stays. */
	fill_tagged(&r, tag, 1, T0 + 7200 * SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	ck_assert_int_eq(csv_out_rotate(c, T0 + 7200 * SEC, 0, rotated, sizeof(rotated), err,
					sizeof(err)), 0);
	ck_assert_uint_eq(scratch_count("trading-2023111"), 4);  /* the look-alikes */
	ck_assert(!exists(rotated));
	snprintf(expect, sizeof(expect), "%s", scratch_path("trading.csv"));
	assert_tagged_file(expect, DEFAULT_HEADER, 0, 0);
	csv_out_close(c);
	free(r.rows);
}
END_TEST

START_TEST(test_rotate_no_loss)
{
	struct report r;
	struct csv_out *c = NULL;
	char err[1024], rotated[8][4096];
	uint64_t tag = 1, seen = 0;
	unsigned nrot = 0;

	c = open_default("x", &r, 8);
	for (unsigned i = 0; i < 40; i++) {
		fill_tagged(&r, tag, 1 + i % 3, T0 + i * SEC);
		tag += 1 + i % 3;
		ck_assert_int_eq(csv_out_write(c, &r, i % 2), 0);
		if (i % 7 == 6) {
			ck_assert_int_eq(csv_out_rotate(c, T0 + i * SEC, 100, rotated[nrot],
							sizeof(rotated[0]), err, sizeof(err)),
					 0);
			nrot++;
		}
	}
	csv_out_close(c);
	ck_assert_uint_eq(nrot, 5);
	/* A path without .csv keeps its name as the stem. */
	ck_assert_msg(strstr(rotated[0], "/x-20231114T221326Z.csv"), "%s", rotated[0]);
	for (unsigned k = 0; k <= nrot; k++) {
		struct parsed p;
		const char *path = k < nrot ? rotated[k] : scratch_path("x");

		parse_file(path, &p);
		ck_assert_str_eq(p.fields[0][0], "timestamp");
		for (unsigned i = 1; i < p.nrows; i++)
			ck_assert_uint_eq(strtoull(p.fields[i][4], NULL, 10), ++seen);
		parsed_free(&p);
	}
	ck_assert_uint_eq(seen, tag - 1);
	free(r.rows);
}
END_TEST

START_TEST(test_rotate_while_full)
{
	struct report r;
	struct csv_out *c = NULL;
	char err[1024], rotated[4096] = "";
	struct stat st;
	int limited, lifted, rc_write, rc_rotate, rc_flush;

	signal(SIGXFSZ, SIG_IGN);
	c = open_default("rf_full.csv", &r, 8);
	fill_tagged(&r, 1, 2, T0);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	ck_assert_int_eq(stat(scratch_path("rf_full.csv"), &st), 0);
	limited = set_fsize_limit((rlim_t)st.st_size + 60);
	fill_tagged(&r, 3, 2, T0 + SEC);
	rc_write = csv_out_write(c, &r, 1);                 /* row 3 cut */
	rc_rotate = csv_out_rotate(c, T0 + SEC, 5, rotated, sizeof(rotated), err, sizeof(err));
	rc_flush = csv_out_flush(c);
	lifted = lift_fsize_limit();

	ck_assert_int_eq(limited, 0);
	ck_assert_int_eq(lifted, 0);
	ck_assert_int_eq(rc_write, -EFBIG);
	ck_assert_msg(rc_rotate == 0, "%s", err);
	ck_assert_int_eq(rc_flush, 0);
	csv_out_close(c);
	ck_assert_str_eq(rotated, scratch_path("rf_full-20231114T221321Z.csv"));
	assert_tagged_file(rotated, DEFAULT_HEADER, 1, 2);
	assert_tagged_file(scratch_path("rf_full.csv"), DEFAULT_HEADER, 3, 2);
	free(r.rows);
}
END_TEST

START_TEST(test_rotate_after_external_move)
{
	struct report r;
	struct csv_out *c = NULL;
	char err[1024], rotated[4096] = "";

	c = open_default("m.csv", &r, 8);
	fill_tagged(&r, 1, 2, T0);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	ck_assert_int_eq(rename(scratch_path("m.csv"), scratch_path("m.moved")), 0);
	ck_assert_int_eq(csv_out_rotate(c, T0, 5, rotated, sizeof(rotated), err, sizeof(err)),
			 -ESTALE);
	ck_assert_msg(strstr(err, "moved away"), "%s", err);
	fill_tagged(&r, 3, 1, T0 + SEC);
	ck_assert_int_eq(csv_out_write(c, &r, 1), 0);
	csv_out_close(c);
	assert_tagged_file(scratch_path("m.moved"), DEFAULT_HEADER, 1, 2);
	assert_tagged_file(scratch_path("m.csv"), DEFAULT_HEADER, 3, 1);
	free(r.rows);
}
END_TEST

/*
 * One interval's row, then a rotation at `when`, then the companion summary
 * the daemon writes beside the rotated CSV (none with keep = 0).
 */
static void rotate_step(struct csv_out *c, struct report *r, uint64_t *tag, uint64_t when,
			unsigned keep, char *rotated, size_t n)
{
	char err[1024], summary[4200];

	fill_tagged(r, *tag, 1, when);
	*tag += 1;
	ck_assert_int_eq(csv_out_write(c, r, 1), 0);
	ck_assert_msg(csv_out_rotate(c, when, keep, rotated, n, err, sizeof(err)) == 0, "%s",
		      err);
	if (!keep)
		return;
	snprintf(summary, sizeof(summary), "%.*s_summary.txt", (int)strlen(rotated) - 4,
		 rotated);
	spit(summary, "summary\n");
}

/* Every rotated summary in the scratch directory has its CSV beside it. */
static void assert_no_orphan_summary(const char *stem)
{
	DIR *d = opendir(scratch_dir());
	struct dirent *de;
	size_t sl = strlen(stem), tl = strlen("_summary.txt");

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char csv[256];

		if (strncmp(de->d_name, stem, sl) || de->d_name[sl] != '-' || n < sl + tl ||
		    strcmp(de->d_name + n - tl, "_summary.txt"))
			continue;
		snprintf(csv, sizeof(csv), "%.*s.csv", (int)(n - tl), de->d_name);
		ck_assert_msg(exists(scratch_path(csv)), "%s has no %s", de->d_name, csv);
	}
	closedir(d);
}

/*
 * Many rotations within one second: every rotation takes a suffix above
 * all earlier ones (even once pruning freed the bare name), the file just
 * rotated survives its own pruning and no summary is left orphaned.
 */
START_TEST(test_rotate_burst_same_second)
{
	static const unsigned keeps[] = { 1, 2, 3 };
	struct report_settings s = default_settings();
	struct report r;
	char rotated[4096], stem[32], expect[64];
	uint64_t tag = 1;

	report_alloc(&r, 8);
	for (unsigned k = 0; k < sizeof(keeps) / sizeof(keeps[0]); k++) {
		struct csv_out *c = NULL;
		unsigned keep = keeps[k];

		snprintf(stem, sizeof(stem), "burst%u", keep);
		snprintf(expect, sizeof(expect), "%s.csv", stem);
		c = open_as(expect, &s);
		for (unsigned i = 0; i < 8; i++) {
			char name[64], prefix[64];

			rotate_step(c, &r, &tag, T0 + i * (SEC / 10), keep, rotated,
				    sizeof(rotated));
			if (i)
				snprintf(name, sizeof(name), "%s-20231114T221320Z-%u.csv", stem, i);
			else
				snprintf(name, sizeof(name), "%s-20231114T221320Z.csv", stem);
			ck_assert_str_eq(rotated, scratch_path(name));
			assert_tagged_file(rotated, DEFAULT_HEADER, tag - 1, 1);
			/* The newest plus keep - 1 others, CSV and summary each. */
			snprintf(prefix, sizeof(prefix), "%s-", stem);
			ck_assert_uint_eq(scratch_count(prefix), 2 * (i + 1 < keep ? i + 1 : keep));
			assert_no_orphan_summary(stem);
		}
		/* The survivors are the latest suffixes. */
		for (unsigned i = 8 - keep; i < 8; i++) {
			char name[64];

			if (i)
				snprintf(name, sizeof(name), "%s-20231114T221320Z-%u.csv", stem, i);
			else
				snprintf(name, sizeof(name), "%s-20231114T221320Z.csv", stem);
			ck_assert_msg(exists(scratch_path(name)), "%s is gone", name);
		}
		csv_out_close(c);
	}
	free(r.rows);
}
END_TEST

/*
 * A later writer (a restarted daemon) in the same second starts above the
 * highest suffix on disk rather than in a gap below it.
 */
START_TEST(test_rotate_suffix_above_existing)
{
	struct report r;
	struct csv_out *c = NULL;
	char rotated[4096];
	uint64_t tag = 1;

	spit(scratch_path("gap-20231114T221320Z-4.csv"), "earlier run\n");
	spit(scratch_path("gap-20231114T221320Z-6_summary.txt"), "earlier run\n");
	c = open_default("gap.csv", &r, 8);
	rotate_step(c, &r, &tag, T0, 10, rotated, sizeof(rotated));
	ck_assert_str_eq(rotated, scratch_path("gap-20231114T221320Z-7.csv"));
	rotate_step(c, &r, &tag, T0 + SEC / 2, 10, rotated, sizeof(rotated));
	ck_assert_str_eq(rotated, scratch_path("gap-20231114T221320Z-8.csv"));
	/* A new second starts bare again. */
	rotate_step(c, &r, &tag, T0 + SEC, 10, rotated, sizeof(rotated));
	ck_assert_str_eq(rotated, scratch_path("gap-20231114T221321Z.csv"));
	ck_assert(!exists(scratch_path("gap-20231114T221320Z.csv")));
	csv_out_close(c);
	free(r.rows);
}
END_TEST

/*
 * The wall clock stepped back: pairs dated in the future sort newest and
 * are kept longest; each rotation after the step still keeps its own file
 * until the next one.
 */
START_TEST(test_rotate_clock_stepped_back)
{
	struct report r;
	struct csv_out *c = NULL;
	char rotated[4096];
	uint64_t tag = 1;

	c = open_default("back.csv", &r, 8);
	rotate_step(c, &r, &tag, T0 + 3600 * SEC, 2, rotated, sizeof(rotated));
	rotate_step(c, &r, &tag, T0 + 3601 * SEC, 2, rotated, sizeof(rotated));
	for (unsigned i = 0; i < 4; i++) {
		rotate_step(c, &r, &tag, T0 + i * SEC, 2, rotated, sizeof(rotated));
		ck_assert(exists(rotated));
		assert_tagged_file(rotated, DEFAULT_HEADER, tag - 1, 1);
		ck_assert(exists(scratch_path("back-20231114T231321Z.csv")));
		ck_assert(!exists(scratch_path("back-20231114T231320Z.csv")));
		ck_assert_uint_eq(scratch_count("back-"), 4);
		assert_no_orphan_summary("back");
	}
	ck_assert_str_eq(rotated, scratch_path("back-20231114T221323Z.csv"));
	csv_out_close(c);
	free(r.rows);
}
END_TEST

/*
 * Pruning leaves symlinks and other users' files alone even under exact
 * rotated names and never writes through a symlink.
 */
START_TEST(test_rotate_prune_only_ours)
{
	struct report r;
	struct csv_out *c = NULL;
	char rotated[4096], *text;
	uint64_t tag = 1;
	bool root = geteuid() == 0;
	uid_t other = 65534;
	struct stat st;

	spit(scratch_path("victim"), "precious\n");
	/* Symlinks under rotated names, older than anything rotated below. */
	ck_assert_int_eq(symlink(scratch_path("victim"),
				 scratch_path("own-20000101T000000Z.csv")), 0);
	ck_assert_int_eq(symlink(scratch_path("victim"),
				 scratch_path("own-20000101T000000Z_summary.txt")), 0);
	ck_assert_int_eq(symlink(scratch_path("victim"),
				 scratch_path("own-20000101T000001Z-3.csv")), 0);
	ck_assert_int_eq(symlink(scratch_path("nowhere"),
				 scratch_path("own-20000101T000002Z.csv")), 0);
	if (root) {
		/* Someone else's files, one of them beside a CSV of ours. */
		spit(scratch_path("own-20000101T000003Z.csv"), "foreign\n");
		spit(scratch_path("own-20000101T000004Z_summary.txt"), "foreign\n");
		spit(scratch_path("own-20000101T000004Z.csv"), "ours\n");
		ck_assert_int_eq(chown(scratch_path("own-20000101T000003Z.csv"), other, other), 0);
		ck_assert_int_eq(chown(scratch_path("own-20000101T000004Z_summary.txt"),
				       other, other), 0);
	}
	c = open_default("own.csv", &r, 8);
	for (unsigned i = 0; i < 4; i++)
		rotate_step(c, &r, &tag, T0 + i * SEC, 1, rotated, sizeof(rotated));
	ck_assert_str_eq(rotated, scratch_path("own-20231114T221323Z.csv"));
	assert_tagged_file(rotated, DEFAULT_HEADER, 4, 1);
	/* keep = 1: of ours only the latest pair is left. */
	ck_assert(!exists(scratch_path("own-20231114T221320Z.csv")));
	ck_assert(!exists(scratch_path("own-20231114T221322Z.csv")));
	ck_assert(!exists(scratch_path("own-20231114T221322Z_summary.txt")));
	ck_assert_int_eq(lstat(scratch_path("own-20000101T000000Z.csv"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(lstat(scratch_path("own-20000101T000000Z_summary.txt"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(lstat(scratch_path("own-20000101T000001Z-3.csv"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(lstat(scratch_path("own-20000101T000002Z.csv"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert(!exists(scratch_path("nowhere")));
	text = scratch_slurp(scratch_path("victim"), NULL);
	ck_assert_str_eq(text, "precious\n");
	free(text);
	if (root) {
		text = scratch_slurp(scratch_path("own-20000101T000003Z.csv"), NULL);
		ck_assert_str_eq(text, "foreign\n");
		free(text);
		text = scratch_slurp(scratch_path("own-20000101T000004Z_summary.txt"), NULL);
		ck_assert_str_eq(text, "foreign\n");
		free(text);
		/* Our half of that pair was an old rotated file: pruned. */
		ck_assert(!exists(scratch_path("own-20000101T000004Z.csv")));
	}
	/* keep = 0 spares them too, and takes the file just rotated. */
	rotate_step(c, &r, &tag, T0 + 4 * SEC, 0, rotated, sizeof(rotated));
	ck_assert(!exists(rotated));
	ck_assert(!exists(scratch_path("own-20231114T221323Z.csv")));
	ck_assert(exists(scratch_path("own-20000101T000000Z.csv")));
	ck_assert(exists(scratch_path("own-20000101T000002Z.csv")));
	if (root)
		ck_assert(exists(scratch_path("own-20000101T000003Z.csv")));
	csv_out_close(c);
	free(r.rows);
}
END_TEST

/*
 * A rotated name whose summary companion is taken (here by a symlink) is
 * skipped: the daemon would otherwise replace that file with its summary.
 */
START_TEST(test_rotate_skips_taken_summary)
{
	struct report r;
	struct csv_out *c = NULL;
	char rotated[4096], *text;
	uint64_t tag = 1;
	struct stat st;

	spit(scratch_path("victim2"), "precious\n");
	ck_assert_int_eq(symlink(scratch_path("victim2"),
				 scratch_path("ts-20231114T221320Z_summary.txt")), 0);
	c = open_default("ts.csv", &r, 8);
	rotate_step(c, &r, &tag, T0, 1, rotated, sizeof(rotated));
	ck_assert_str_eq(rotated, scratch_path("ts-20231114T221320Z-1.csv"));
	ck_assert(!exists(scratch_path("ts-20231114T221320Z.csv")));
	rotate_step(c, &r, &tag, T0 + SEC / 2, 1, rotated, sizeof(rotated));
	ck_assert_str_eq(rotated, scratch_path("ts-20231114T221320Z-2.csv"));
	ck_assert_int_eq(lstat(scratch_path("ts-20231114T221320Z_summary.txt"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	text = scratch_slurp(scratch_path("victim2"), NULL);
	ck_assert_str_eq(text, "precious\n");
	free(text);
	csv_out_close(c);
	free(r.rows);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("csv_out");
	TCase *tc = tcase_create("csv_out");

	tcase_add_unchecked_fixture(tc, setup_scratch, scratch_remove);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_header_default);
	tcase_add_test(tc, test_header_custom);
	tcase_add_test(tc, test_timestamp);
	tcase_add_test(tc, test_row_format);
	tcase_add_test(tc, test_row_format_us_overhead);
	tcase_add_test(tc, test_labels_roundtrip);
	tcase_add_test(tc, test_comma_locale);
	tcase_add_test(tc, test_append_same_header);
	tcase_add_test(tc, test_append_different_header);
	tcase_add_test(tc, test_outliers_file);
	tcase_add_test(tc, test_repair_torn_last_line);
	tcase_add_test(tc, test_refuse_symlink_and_odd_files);
	tcase_add_test(tc, test_disk_full_keeps_rows);
	tcase_add_test(tc, test_disk_full_bounded_backlog);
	tcase_add_test(tc, test_disk_full_at_open);
	tcase_add_test(tc, test_no_push_until_flush);
	tcase_add_test(tc, test_reopen_after_rename);
	tcase_add_test(tc, test_reopen_with_cut_row);
	tcase_add_test(tc, test_reopen_failure_keeps_file);
	tcase_add_test(tc, test_rotate);
	tcase_add_test(tc, test_rotate_no_loss);
	tcase_add_test(tc, test_rotate_while_full);
	tcase_add_test(tc, test_rotate_after_external_move);
	tcase_add_test(tc, test_rotate_burst_same_second);
	tcase_add_test(tc, test_rotate_suffix_above_existing);
	tcase_add_test(tc, test_rotate_clock_stepped_back);
	tcase_add_test(tc, test_rotate_prune_only_ours);
	tcase_add_test(tc, test_rotate_skips_taken_summary);
	suite_add_tcase(s, tc);
	return check_run(s);
}
