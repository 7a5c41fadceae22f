/*
 * check_ctl_csv.c - perfmonctl's CSV reader: RFC 4180 labels with commas
 * and quotes, strict refusal of malformed files with the record named,
 * header validation, incremental feeding (as top does), label cleaning,
 * timestamps, metric names and the stage index.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "csv_schema.h"
#include "ctl_csv.h"

static char data_path[4096];

static const char *data(const char *name)
{
	const char *top = getenv("top_srcdir");
	snprintf(data_path, sizeof(data_path), "%s/tests/data/ctl/%s", top ? top : "..", name);
	return data_path;
}

#define MAX_ROWS 16

struct got {
	unsigned n;
	char point[MAX_ROWS][128];
	char stage[MAX_ROWS][128];
	bool value[MAX_ROWS];
	uint64_t count[MAX_ROWS], invalid[MAX_ROWS], orphan[MAX_ROWS];
	double p50[MAX_ROWS], max[MAX_ROWS], overhead[MAX_ROWS];
	int64_t t[MAX_ROWS];
	unsigned long record[MAX_ROWS];
};

static int collect(void *ctx, const struct ctl_csv_header *h, const struct ctl_csv_row *r)
{
	struct got *g = ctx;
	int p50 = ctl_csv_metric_lookup(h, "p50");

	if (g->n == MAX_ROWS)
		return -ENOSPC;
	snprintf(g->point[g->n], 128, "%s", r->point);
	snprintf(g->stage[g->n], 128, "%s", r->stage);
	g->value[g->n] = r->value;
	g->count[g->n] = r->count;
	g->invalid[g->n] = r->invalid;
	g->orphan[g->n] = r->orphan;
	g->p50[g->n] = p50 >= 0 ? ctl_csv_metric(r, p50) : -1;
	g->max[g->n] = r->max;
	g->overhead[g->n] = r->overhead;
	g->t[g->n] = r->time_ms;
	g->record[g->n] = r->record;
	g->n++;
	return 0;
}

START_TEST(test_quoted_labels)
{
	struct ctl_csv_header h;
	struct got g;
	char err[512];

	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(ctl_csv_read_file(data("quoted.csv"), collect, &g, &h, err, sizeof(err)), 0);
	ck_assert_str_eq(h.unit, "ns");
	ck_assert_uint_eq(h.npct, 4);
	ck_assert_str_eq(h.pct_label[3], "p99_9");
	ck_assert(h.pct[3] == 99.9);
	ck_assert(!h.has_overhead);
	ck_assert_uint_eq(g.n, 4);
	ck_assert_str_eq(g.point[0], "gw, primary");
	ck_assert_str_eq(g.stage[0], "say \"hi\"");
	ck_assert_str_eq(g.point[1], " padded ");          /* spaces are data */
	ck_assert(g.value[1]);
	ck_assert_str_eq(g.point[3], "caf\xc3\xa9 \xc3\xbc" "ber");
	ck_assert_uint_eq(g.count[2], 20);
	ck_assert(g.p50[2] == 150.0);
	ck_assert(g.max[2] == 240.0);
	ck_assert_uint_eq(g.invalid[3], 1);
	ck_assert_uint_eq(g.orphan[3], 2);
	ck_assert_uint_eq(g.record[0], 2);                 /* the header is record 1 */
	ck_assert(g.t[2] - g.t[0] == 1000);
}
END_TEST

START_TEST(test_overhead_column)
{
	struct ctl_csv_header h;
	struct got g;
	char err[512];

	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(ctl_csv_read_file(data("overhead.csv"), collect, &g, &h, err, sizeof(err)), 0);
	ck_assert(h.has_overhead);
	ck_assert_uint_eq(h.npct, 2);
	ck_assert_uint_eq(g.n, 2);
	ck_assert(g.overhead[0] == 7.5);
	ck_assert(g.p50[1] == 141.0);
	ck_assert_int_eq(ctl_csv_metric_lookup(&h, "p90"), -ENOENT);
}
END_TEST

/* Each malformed file fails with the file and record in the message. */
START_TEST(test_malformed_files)
{
	static const struct {
		const char *file, *record, *what;
	} cases[] = {
		{ "bad-quote.csv", ":2:", "malformed" },
		{ "bad-fields.csv", ":3:", "19 fields, the header has 20" },
		{ "bad-header.csv", ":1:", "not a perfmond CSV header" },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct got g;
		char err[512];
		memset(&g, 0, sizeof(g));
		ck_assert_int_eq(ctl_csv_read_file(data(cases[i].file), collect, &g, NULL, err,
						   sizeof(err)), -EBADMSG);
		ck_assert_msg(strstr(err, cases[i].file) && strstr(err, cases[i].record) &&
			      strstr(err, cases[i].what), "%s: %s", cases[i].file, err);
	}
}
END_TEST

START_TEST(test_missing_file)
{
	char err[512];
	ck_assert_int_eq(ctl_csv_read_file("/nonexistent/x.csv", collect, NULL, NULL, err,
					   sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.csv"));
}
END_TEST

/* Feed text in slices to a reader; returns its error or 0. */
static int feed_text(const char *text, size_t slice, struct got *g, char *err, size_t errlen)
{
	struct ctl_csv_reader *r;
	size_t len = strlen(text);
	int e = 0;

	ck_assert_int_eq(ctl_csv_reader_new(&r, "mem", collect, g), 0);
	for (size_t off = 0; off < len && e == 0; off += slice)
		e = ctl_csv_reader_feed(r, text + off, off + slice > len ? len - off : slice);
	if (e == 0)
		e = ctl_csv_reader_finish(r);
	snprintf(err, errlen, "%s", ctl_csv_reader_error(r));
	ctl_csv_reader_free(r);
	return e;
}

static const char header[] =
	"timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
	"out_of_range,min_us,mean_us,stddev_us,p50_us,p99_us,max_us,tsc_hz\n";

START_TEST(test_incremental_feed)
{
	static char text[4096];
	struct got whole, bytes;
	char err[256];

	snprintf(text, sizeof(text), "%s"
		 "2024-05-01 12:00:01.000,\"a,\"\"b\"\"\",total,latency,1,0,0,0,0,0,0,1,1,0,1,1,1,3e9\n"
		 "2024-05-01 12:00:01.000,v,value,value,2,0,0,0,0,0,0,1,1,0,1,1,1,3e9\r\n"
		 "2024-05-01 12:00:02.000,\"multi\nline\",total,latency,3,0,0,0,0,0,0,1,1,0,1,1,1,3e9",
		 header);
	memset(&whole, 0, sizeof(whole));
	memset(&bytes, 0, sizeof(bytes));
	ck_assert_int_eq(feed_text(text, strlen(text), &whole, err, sizeof(err)), 0);
	ck_assert_int_eq(feed_text(text, 1, &bytes, err, sizeof(err)), 0);
	ck_assert_uint_eq(whole.n, 3);          /* the last row has no line break */
	ck_assert_uint_eq(bytes.n, 3);
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_str_eq(whole.point[i], bytes.point[i]);
		ck_assert_uint_eq(whole.count[i], bytes.count[i]);
	}
	ck_assert_str_eq(whole.point[0], "a,\"b\"");
	ck_assert_str_eq(whole.point[2], "multi?line");   /* cleaned, not a new row */
}
END_TEST

START_TEST(test_repeated_header)
{
	static char text[4096];
	struct got g;
	char err[256];
	static const char other[] =
		"timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
		"out_of_range,min_ns,mean_ns,stddev_ns,p50_ns,p99_ns,max_ns,tsc_hz\n";

	/* Two files of the same layout joined: the second header is skipped. */
	snprintf(text, sizeof(text), "%s2024-05-01 12:00:01.000,a,total,latency,1,0,0,0,0,0,0,"
		 "1,1,0,1,1,1,3e9\n%s2024-05-01 12:00:02.000,a,total,latency,2,0,0,0,0,0,0,"
		 "1,1,0,1,1,1,3e9\n", header, header);
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(feed_text(text, 7, &g, err, sizeof(err)), 0);
	ck_assert_uint_eq(g.n, 2);

	/* A different layout in the middle is an error. */
	snprintf(text, sizeof(text), "%s2024-05-01 12:00:01.000,a,total,latency,1,0,0,0,0,0,0,"
		 "1,1,0,1,1,1,3e9\n%s", header, other);
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(feed_text(text, 64, &g, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "mem:3:"));
}
END_TEST

START_TEST(test_bad_fields)
{
	static const char *const rows[] = {
		"2024-05-01 12:00:01.000,a,total,latency,-1,0,0,0,0,0,0,1,1,0,1,1,1,3e9\n",
		"2024-05-01 12:00:01.000,a,total,latency,1,0,0,0,0,0,0,1,1,0,1x,1,1,3e9\n",
		"2024-05-01 12:00:01.000,a,total,latency,1,0,0,0,0,0,0,1,1,0,nan,1,1,3e9\n",
		"2024-05-01 12:00:01.000,a,total,speed,1,0,0,0,0,0,0,1,1,0,1,1,1,3e9\n",
		"2024-13-01 12:00:01.000,a,total,latency,1,0,0,0,0,0,0,1,1,0,1,1,1,3e9\n",
		"2024-05-01T12:00:01.000,a,total,latency,1,0,0,0,0,0,0,1,1,0,1,1,1,3e9\n",
		"2024-05-01 12:00:01.000,a,total,latency,1,0,0,0,0,0,0,1,1,0,,1,1,3e9\n",
	};
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char text[1024], err[256];
		struct got g;
		memset(&g, 0, sizeof(g));
		snprintf(text, sizeof(text), "%s%s", header, rows[i]);
		ck_assert_msg(feed_text(text, sizeof(text), &g, err, sizeof(err)) == -EBADMSG,
			      "row %u accepted", i);
		ck_assert_ptr_nonnull(strstr(err, "mem:2:"));
		ck_assert_uint_eq(g.n, 0);
	}
}
END_TEST

/* Error messages quote the file: they are cleaned like labels. */
START_TEST(test_error_message_cleaned)
{
	char text[1024], err[256];
	struct got g;

	memset(&g, 0, sizeof(g));
	snprintf(text, sizeof(text), "%s2024-05-01 12:00:01.000,a,total,latency,1,0,0,0,0,0,0,"
		 "1,1,0,\x1b]0;x\x07,1,1,3e9\n", header);
	ck_assert_int_eq(feed_text(text, sizeof(text), &g, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'?]0;x?' is not a number"));
	ck_assert_ptr_null(strchr(err, '\x1b'));
}
END_TEST

/* No byte a terminal acts on: C0, DEL, C1 (UTF-8 C2 80..9F), bidi controls. */
static void assert_printable(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		ck_assert_msg(*p >= 0x20 && *p != 0x7f, "control byte 0x%02x in '%s'", *p, s);
		ck_assert_msg(!(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f), "C1 in '%s'", s);
		ck_assert_msg(!(p[0] == 0xe2 && p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae),
			      "bidi control in '%s'", s);
	}
}

/* Every fragment of the file a message quotes is cleaned and cut short,
 * whichever check quotes it (header columns, kind, counts, figures). */
START_TEST(test_error_fragments_cleaned)
{
	static const char evil[] = "\x1b]0;pwned\x07\xc2\x9b" "2J\xe2\x80\xae" "x";
	static const char row_fmt[] = "2024-05-01 12:00:01.000,a,total,%s,%s,0,0,0,0,0,0,"
				      "1,1,0,%s,1,1,3e9\n";
	char text[2048], row[1024], err[512], long_field[300];
	struct got g;

	/* a bad kind, a bad count, a bad figure */
	for (unsigned i = 0; i < 3; i++) {
		snprintf(row, sizeof(row), row_fmt, i == 0 ? evil : "latency",
			 i == 1 ? evil : "1", i == 2 ? evil : "1");
		snprintf(text, sizeof(text), "%s%s", header, row);
		memset(&g, 0, sizeof(g));
		ck_assert_int_eq(feed_text(text, 5, &g, err, sizeof(err)), -EBADMSG);
		ck_assert_ptr_nonnull(strstr(err, "mem:2:"));
		ck_assert_ptr_nonnull(strstr(err, "pwned"));
		assert_printable(err);
	}
	ck_assert_ptr_nonnull(strstr(err, "'?]0;pwned???2J?x' is not a number"));

	/* every header column the reader quotes */
	static const char *const headers[] = {
		"timestamp,point,stage,%s\n",
		"timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
		"out_of_range,%s\n",
		"timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
		"out_of_range,min_ns,%s\n",
		"timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
		"out_of_range,min_ns,mean_ns,stddev_ns,%s,max_ns,tsc_hz\n",
		"timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
		"out_of_range,min_ns,mean_ns,stddev_ns,max_ns,%s\n",
		"timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
		"out_of_range,min_ns,mean_ns,stddev_ns,max_ns,tsc_hz,%s\n",
	};
	for (unsigned i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		snprintf(text, sizeof(text), headers[i], evil);
		memset(&g, 0, sizeof(g));
		ck_assert_int_eq(feed_text(text, sizeof(text), &g, err, sizeof(err)), -EBADMSG);
		ck_assert_msg(strstr(err, "?]0;pwned???2J?x"), "header %u: %s", i, err);
		assert_printable(err);
	}

	/* a long field is quoted up to 40 columns and marked as cut */
	memset(long_field, 'z', sizeof(long_field) - 1);
	long_field[sizeof(long_field) - 1] = '\0';
	snprintf(row, sizeof(row), row_fmt, long_field, "1", "1");
	snprintf(text, sizeof(text), "%s%s", header, row);
	ck_assert_int_eq(feed_text(text, sizeof(text), &g, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz...' is"));

	/* a path (from a glob, say) can carry escapes too */
	ck_assert_int_eq(ctl_csv_read_file("/nonexistent/\x1b[2J\xc2\x9bx.csv", collect, NULL,
					   NULL, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/?[2J??x.csv"));
	assert_printable(err);
}
END_TEST

/* A byte-order mark is recognised however the first bytes are split. */
START_TEST(test_bom_any_split)
{
	static char text[2048];
	static const char *const odd[] = { "\xef\xbb", "\xef", "\xef\xbb\xbf", "\xef\xbb\xbe" };
	char err[256], first[256];
	struct got g;

	snprintf(text, sizeof(text), "\xef\xbb\xbf%s2024-05-01 12:00:01.000,a,total,latency,"
		 "7,0,0,0,0,0,0,1,1,0,1,1,1,3e9\n", header);
	for (size_t slice = 1; slice <= 4; slice++) {
		memset(&g, 0, sizeof(g));
		ck_assert_msg(feed_text(text, slice, &g, err, sizeof(err)) == 0, "slice %zu: %s",
			      slice, err);
		ck_assert_uint_eq(g.n, 1);
		ck_assert_uint_eq(g.count[0], 7);
	}
	/* Inputs that are, or start like, a mark without being a header: the
	 * same verdict and message whole or byte by byte. */
	for (unsigned i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		int whole, bytes;
		memset(&g, 0, sizeof(g));
		whole = feed_text(odd[i], 64, &g, first, sizeof(first));
		bytes = feed_text(odd[i], 1, &g, err, sizeof(err));
		ck_assert_int_ne(whole, 0);
		ck_assert_int_eq(whole, bytes);
		ck_assert_str_eq(first, err);
	}
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(feed_text("\xef\xbb\xbf", 1, &g, err, sizeof(err)), -ENODATA);
	ck_assert_int_eq(feed_text("\xef\xbb", 1, &g, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "not a perfmond CSV header"));
}
END_TEST

static const char pct_head[] =
	"timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
	"out_of_range,min_ns,mean_ns,stddev_ns,%s,max_ns,tsc_hz\n"
	"2024-05-01 12:00:01.000,a,total,latency,1,0,0,0,0,0,0,1,1,0,%s,9,3e9\n";

/* `percentiles = 0` is a valid daemon setting: its column is p0_ns. */
START_TEST(test_percentile_columns)
{
	struct ctl_csv_header h;
	char text[1024], err[256], path[64];
	struct got g;
	FILE *f;
	int id, fd;

	snprintf(text, sizeof(text), pct_head, "p0_ns,p0_001_ns,p50_ns,p99_999_ns,p100_ns",
		 "2,3,4,5,6");
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(feed_text(text, 3, &g, err, sizeof(err)), 0);
	ck_assert_uint_eq(g.n, 1);
	ck_assert(g.p50[0] == 4);

	/* the header as the reader saw it */
	snprintf(path, sizeof(path), "/tmp/check_ctl_csv.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, pct_head, "p0_ns,p0_001_ns,p50_ns,p99_999_ns,p100_ns", "2,3,4,5,6");
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(ctl_csv_read_file(path, NULL, NULL, &h, err, sizeof(err)), 0);
	unlink(path);
	ck_assert_uint_eq(h.npct, 5);
	ck_assert_str_eq(h.pct_label[0], "p0");
	ck_assert(h.pct[0] == 0);
	ck_assert(h.pct[1] == 0.001);
	ck_assert(h.pct[4] == 100);
	id = ctl_csv_metric_lookup(&h, "p0");
	ck_assert_int_eq(id, CTL_METRIC_PCT);
	ck_assert_str_eq(ctl_csv_metric_name(&h, id), "p0");
	ck_assert_int_eq(ctl_csv_metric_lookup(&h, "p99.999"), CTL_METRIC_PCT + 3);

	/* still refused: past 100, a dangling separator, not a number */
	static const char *const bad[] = { "p100_5_ns", "p50__ns", "p_5_ns", "pa_ns", "p-1_ns" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), pct_head, bad[i], "1");
		memset(&g, 0, sizeof(g));
		ck_assert_int_eq(feed_text(text, sizeof(text), &g, err, sizeof(err)), -EBADMSG);
		ck_assert_msg(strstr(err, "expected a percentile column"), "%s: %s", bad[i], err);
	}
}
END_TEST

static int keep_header(void *ctx, const struct ctl_csv_header *h, const struct ctl_csv_row *r)
{
	(void)r;
	*(struct ctl_csv_header *)ctx = *h;
	return 0;
}

/* A header made by csv_schema.h and one row under it: 0, with the header
 * the reader took it for in *h. */
static int read_shape(const struct csv_series_shape *s, const char *extra,
		      struct ctl_csv_header *h, char *err, size_t errlen)
{
	struct ctl_csv_reader *r;
	char text[2048];
	int k = csv_series_header(text, sizeof(text), s), e;

	ck_assert_int_gt(k, 0);
	k += snprintf(text + k, sizeof(text) - (size_t)k, "%s\n2024-01-01 00:00:00.000,a,b,latency,"
		      "1,0,0,0,0,0,0", extra);
	for (unsigned c = CSV_FIXED_COLS; c < csv_series_ncols(s); c++)
		k += snprintf(text + k, sizeof(text) - (size_t)k, ",1");
	snprintf(text + k, sizeof(text) - (size_t)k, "%s\n", extra[0] ? ",1" : "");
	ck_assert_int_eq(ctl_csv_reader_new(&r, "mem", keep_header, h), 0);
	e = ctl_csv_reader_feed(r, text, strlen(text));
	if (e == 0)
		e = ctl_csv_reader_finish(r);
	snprintf(err, errlen, "%s", ctl_csv_reader_error(r));
	ctl_csv_reader_free(r);
	return e;
}

/* Every header the writer can make reads back as what it was made from,
 * and a column past its last is refused. */
START_TEST(test_schema_round_trip)
{
	static const char labels[3][24] = { "p0", "p50", "p99_9" };
	static const double pcts[3] = { 0, 50, 99.9 };
	static const enum report_unit units[] = { REPORT_UNIT_NS, REPORT_UNIT_US,
						  REPORT_UNIT_CYCLES };
	struct ctl_csv_header h;
	char err[256];

	for (unsigned u = 0; u < 3; u++)
		for (unsigned npct = 0; npct <= 3; npct++)
			for (int over = 0; over < 2; over++) {
				struct csv_series_shape s = { units[u], npct, labels, over };

				memset(&h, 0, sizeof(h));
				ck_assert_msg(read_shape(&s, "", &h, err, sizeof(err)) == 0, "%s", err);
				ck_assert_str_eq(h.unit, report_unit_name(units[u]));
				ck_assert_uint_eq(h.npct, npct);
				for (unsigned i = 0; i < npct; i++) {
					ck_assert_str_eq(h.pct_label[i], labels[i]);
					ck_assert(h.pct[i] == pcts[i]);
				}
				ck_assert_int_eq(h.has_overhead, over);
				ck_assert_uint_eq(h.ncols, csv_series_ncols(&s));
				ck_assert_int_eq(read_shape(&s, ",extra", &h, err, sizeof(err)),
						 -EBADMSG);
				ck_assert_msg(strstr(err, "unexpected column") &&
					      strstr(err, "'extra'"), "%s", err);
			}
}
END_TEST

/* Two columns for the same percentile: refused, naming the repeat. */
START_TEST(test_percentile_repeated)
{
	static const struct {
		const char *cols, *what;
	} cases[] = {
		{ "p50_ns,p99_ns,p50_ns", "column 17 'p50_ns' repeats percentile column 'p50_ns'" },
		{ "p0_ns,p0_ns", "column 16 'p0_ns' repeats percentile column 'p0_ns'" },
		{ "p99_9_ns,p99_90_ns", "column 16 'p99_90_ns' repeats percentile column 'p99_9_ns'" },
	};
	char text[1024], err[256];
	struct got g;

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), pct_head, cases[i].cols, "1,1,1");
		memset(&g, 0, sizeof(g));
		ck_assert_int_eq(feed_text(text, sizeof(text), &g, err, sizeof(err)), -EBADMSG);
		ck_assert_msg(strstr(err, "mem:1:") && strstr(err, cases[i].what), "%s: %s",
			      cases[i].cols, err);
		ck_assert_uint_eq(g.n, 0);
	}
}
END_TEST

START_TEST(test_injection_cleaned)
{
	struct got g;
	char err[512];

	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(ctl_csv_read_file(data("injection.csv"), collect, &g, NULL, err,
					   sizeof(err)), 0);
	ck_assert_uint_eq(g.n, 2);                /* no forged row */
	for (unsigned i = 0; i < g.n; i++) {
		const char *s[2] = { g.point[i], g.stage[i] };
		for (unsigned k = 0; k < 2; k++)
			for (const unsigned char *p = (const unsigned char *)s[k]; *p; p++) {
				ck_assert_uint_ge(*p, 0x20);
				ck_assert_uint_ne(*p, 0x7f);
			}
		ck_assert_ptr_null(strstr(g.point[i], "\xc2\x9b"));
		ck_assert_ptr_null(strstr(g.stage[i], "\xe2\x80\xae"));
	}
	ck_assert_str_eq(g.point[0], "?[2J?]0;pwned?gw");
	ck_assert_str_eq(g.stage[0], "total?2024-05-01 12:00:09.000,forged,row");
}
END_TEST

START_TEST(test_timestamps)
{
	int64_t ms;

	ck_assert_int_eq(ctl_csv_parse_time("1970-01-01 00:00:00.000", &ms), 0);
	ck_assert(ms == 0);
	ck_assert_int_eq(ctl_csv_parse_time("2024-05-01 12:00:01.250", &ms), 0);
	ck_assert(ms == INT64_C(1714564801250));
	ck_assert_int_eq(ctl_csv_parse_time("2024-02-29 00:00:00.000", &ms), 0);
	ck_assert_int_lt(ctl_csv_parse_time("2023-02-29 00:00:00.000", &ms), 0);
	ck_assert_int_lt(ctl_csv_parse_time("2024-05-01 12:00:01", &ms), 0);
	ck_assert_int_lt(ctl_csv_parse_time("2024-05-01 12:00:01.000Z", &ms), 0);
	ck_assert_int_lt(ctl_csv_parse_time("2024-05-01 24:00:01.000", &ms), 0);
}
END_TEST

START_TEST(test_metric_names)
{
	struct ctl_csv_header h;
	char err[512];

	ck_assert_int_eq(ctl_csv_read_file(data("quoted.csv"), NULL, NULL, &h, err, sizeof(err)), 0);
	ck_assert_int_eq(ctl_csv_metric_lookup(&h, "p50"), CTL_METRIC_PCT);
	ck_assert_int_eq(ctl_csv_metric_lookup(&h, "median"), CTL_METRIC_PCT);
	ck_assert_int_eq(ctl_csv_metric_lookup(&h, "p99.9"), CTL_METRIC_PCT + 3);
	ck_assert_int_eq(ctl_csv_metric_lookup(&h, "p99_9"), CTL_METRIC_PCT + 3);
	ck_assert_int_eq(ctl_csv_metric_lookup(&h, "mean"), CTL_METRIC_MEAN);
	ck_assert_int_eq(ctl_csv_metric_lookup(&h, "max"), CTL_METRIC_MAX);
	ck_assert_int_eq(ctl_csv_metric_lookup(&h, "p75"), -ENOENT);
	ck_assert_str_eq(ctl_csv_metric_name(&h, CTL_METRIC_PCT + 3), "p99_9");
	ck_assert_str_eq(ctl_csv_metric_name(&h, CTL_METRIC_MIN), "min");
}
END_TEST

START_TEST(test_stage_index)
{
	struct ctl_stages s;
	char p[32];

	ctl_stages_init(&s);
	ck_assert_int_eq(ctl_stages_id(&s, "a", "total", false), 0);
	ck_assert_int_eq(ctl_stages_id(&s, "a", "total", true), 1);   /* kind is part of it */
	ck_assert_int_eq(ctl_stages_id(&s, "a,b", "x", false), 2);
	ck_assert_int_eq(ctl_stages_id(&s, "a", "total", false), 0);
	/* grows past its first table */
	for (unsigned i = 0; i < 500; i++) {
		snprintf(p, sizeof(p), "p%u", i);
		ck_assert_int_eq(ctl_stages_id(&s, p, "total", false), (int)i + 3);
	}
	ck_assert_int_eq(ctl_stages_find(&s, "p321", "total", false), 324);
	ck_assert_int_eq(ctl_stages_find(&s, "p321", "other", false), -ENOENT);
	ck_assert_str_eq(s.items[2].point, "a,b");
	ctl_stages_free(&s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl_csv");
	TCase *tc = tcase_create("csv");

	tcase_add_test(tc, test_quoted_labels);
	tcase_add_test(tc, test_overhead_column);
	tcase_add_test(tc, test_malformed_files);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_incremental_feed);
	tcase_add_test(tc, test_repeated_header);
	tcase_add_test(tc, test_bad_fields);
	tcase_add_test(tc, test_error_message_cleaned);
	tcase_add_test(tc, test_error_fragments_cleaned);
	tcase_add_test(tc, test_bom_any_split);
	tcase_add_test(tc, test_percentile_columns);
	tcase_add_test(tc, test_percentile_repeated);
	tcase_add_test(tc, test_schema_round_trip);
	tcase_add_test(tc, test_injection_cleaned);
	tcase_add_test(tc, test_timestamps);
	tcase_add_test(tc, test_metric_names);
	tcase_add_test(tc, test_stage_index);
	suite_add_tcase(s, tc);
	return check_run(s);
}
