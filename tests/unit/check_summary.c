/*
 * check_summary.c - tests for the summary writer (src/summary.c): the
 * header line (instance, TSC rate, invariance warning, run time,
 * overhead, collector counts), the table's alignment with long and UTF-8
 * labels, p50/p99 always shown, human durations, value rows, the C locale
 * under a comma-decimal one, and the atomic write (no temporary left, no
 * partial file, symlinks replaced rather than followed).
 */
#include "build-config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "summary.h"
#include "scratch.h"

static void setup_scratch(void)
{
	scratch_create("check_summary");
}

static struct report_row *add_row(struct report *r, const char *point, const char *stage,
				  enum report_kind kind, uint64_t count)
{
	struct report_row *row;

	ck_assert_uint_lt(r->nrows, r->cap);
	row = &r->rows[r->nrows++];
	memset(row, 0, sizeof(*row));
	snprintf(row->point, sizeof(row->point), "%s", point);
	snprintf(row->stage, sizeof(row->stage), "%s", stage);
	row->kind = kind;
	row->f.count = count;
	return row;
}

/* A lifetime report: two latency rows, a value row, an anomaly-only row. */
static void sample_report(struct report *r)
{
	struct report_row *row;

	memset(r, 0, sizeof(*r));
	r->cap = 8;
	r->rows = calloc(r->cap, sizeof(*r->rows));
	ck_assert_ptr_nonnull(r->rows);
	r->tsc_hz = 2445405173.0;

	row = add_row(r, "tick_to_trade", "decode", REPORT_LATENCY, 1121500);
	row->f.min = 29.9;
	row->f.mean = 294.1;
	row->f.max = 115130.0;
	row->f.p50 = 281.3;
	row->f.p99 = 562.7;
	row->f.pct[0] = 777.0;          /* a configured p90, never shown */
	row->anomalies.invalid = 2;

	row = add_row(r, "a_point_with_a_rather_long_name_indeed", "total", REPORT_LATENCY, 7);
	row->f.min = 1500;
	row->f.mean = 3.25e6;
	row->f.max = 4.5e9;
	row->f.p50 = 2500;
	row->f.p99 = 1e9;
	row->anomalies.abandoned = 3;
	row->anomalies.orphan = 4;
	row->anomalies.out_of_range = 5;

	row = add_row(r, "queue_depth", "value", REPORT_VALUE, 40);
	row->f.min = 1;
	row->f.mean = 12.3456;
	row->f.max = 250;
	row->f.p50 = 10;
	row->f.p99 = 240;
	/* value rows print the exact integers */
	row->f.min_raw = 1;
	row->f.mean_int = 12;
	row->f.mean_frac = 0.3456;
	row->f.max_raw = 250;
	row->f.p50_raw = 10;
	row->f.p99_raw = 240;

	add_row(r, "m\xc3\xa9tier \xe2\x86\x92 \xe6\xb8\xac", "total", REPORT_LATENCY, 0)
		->anomalies.orphan = 5;
}

static struct summary_info sample_info(void)
{
	struct summary_info i = {
		.instance = "trading",
		.tsc_hz = 2445405173.0,
		.tsc_invariant = true,
		.tsc_clock = true,
		.run_ns = 5 * UINT64_C(1000000000) + 400000000,
		.overhead_ticks = 73.4,
		.subtracting = false,
		.unit = REPORT_UNIT_NS,
		.drained = 2243000,
		.dropped = 11,
		.stalled = 8,
		.misordered = 2,
	};
	return i;
}

static char *format_to_string(const struct report *r, const struct summary_info *info)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	summary_format(f, r, info);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

/* Characters on screen in [s, s + n), a UTF-8 sequence counting as one. */
static unsigned width_of(const char *s, size_t n)
{
	unsigned w = 0;

	for (size_t i = 0; i < n; i++)
		w += ((unsigned char)s[i] & 0xC0) != 0x80;
	return w;
}

/* The line of `text` that contains `needle`, as a fresh string. */
static char *line_with(const char *text, const char *needle)
{
	const char *p = strstr(text, needle), *b, *e;

	ck_assert_msg(p != NULL, "no line with '%s' in:\n%s", needle, text);
	for (b = p; b > text && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	return strndup(b, e ? (size_t)(e - b) : strlen(b));
}

START_TEST(test_header_line)
{
	struct report r;
	struct summary_info info = sample_info();
	char *text, *first;

	sample_report(&r);
	text = format_to_string(&r, &info);
	first = line_with(text, "perfmond summary");
	ck_assert_str_eq(first, "perfmond summary   instance trading   tsc 2.4454 GHz "
			 "(invariant)   run 0:00:05   overhead 73 cyc/stamp   drained 2243000   "
			 "dropped 11   stalled 8   misordered 2");
	ck_assert_ptr_eq(strstr(text, "perfmond summary"), text);
	ck_assert_ptr_null(strstr(text, "WARNING"));
	free(first);
	free(text);

	info.run_ns = UINT64_C(1000000000) * (26 * 3600 + 61);
	info.subtracting = true;
	text = format_to_string(&r, &info);
	ck_assert_msg(strstr(text, "   run 26:01:01   "), "%s", text);
	ck_assert_msg(strstr(text, "overhead 73 cyc/stamp (subtracted)"), "%s", text);
	free(text);
	free(r.rows);
}
END_TEST

START_TEST(test_not_invariant)
{
	struct report r;
	struct summary_info info = sample_info();
	char *text, *p;
	unsigned warnings = 0;

	sample_report(&r);
	info.tsc_invariant = false;
	text = format_to_string(&r, &info);
	ck_assert_msg(strstr(text, "tsc 2.4454 GHz (NOT INVARIANT)"), "%s", text);
	/* Three WARNING lines right under the header line, before the table. */
	for (p = strchr(text, '\n') + 1; !strncmp(p, "WARNING: ", 9); p = strchr(p, '\n') + 1)
		warnings++;
	ck_assert_uint_eq(warnings, 3);
	ck_assert(!strncmp(p, "point", 5));
	ck_assert_msg(strstr(text, "NOT INVARIANT: its rate"), "%s", text);
	free(text);

	/* Without a TSC at all the clock is named instead. */
	info.tsc_clock = false;
	info.tsc_hz = 1e9;
	text = format_to_string(&r, &info);
	ck_assert_msg(strstr(text, "CLOCK_MONOTONIC"), "%s", text);
	ck_assert_ptr_null(strstr(text, "GHz"));
	ck_assert_ptr_null(strstr(text, "WARNING"));
	ck_assert_msg(strstr(text, "overhead 73 ns/stamp"), "%s", text);
	free(text);
	free(r.rows);
}
END_TEST

START_TEST(test_table)
{
	struct report r;
	struct summary_info info = sample_info();
	char *text, *hdr, *rule, *row;
	const char *lines;
	size_t w;

	sample_report(&r);
	text = format_to_string(&r, &info);
	hdr = line_with(text, "point  ");
	w = width_of(hdr, strlen(hdr));
	ck_assert_msg(strstr(hdr, "count") && strstr(hdr, "invalid") && strstr(hdr, "abandoned") &&
		      strstr(hdr, "orphan") && strstr(hdr, "out_of_range") && strstr(hdr, "min") &&
		      strstr(hdr, "mean") && strstr(hdr, "p50") && strstr(hdr, "p99") &&
		      strstr(hdr, "max"), "%s", hdr);
	ck_assert_ptr_null(strstr(hdr, "p90"));
	rule = line_with(text, "-----");
	ck_assert_uint_eq(strlen(rule), w);
	ck_assert_uint_eq(strspn(rule, "-"), w);

	/* Every table line has the header's width: long labels widened the column. */
	lines = strstr(text, rule) + strlen(rule) + 1;
	for (unsigned i = 0; i < r.nrows; i++) {
		const char *e = strchr(lines, '\n');
		ck_assert_ptr_nonnull(e);
		ck_assert_msg(width_of(lines, (size_t)(e - lines)) == w, "'%.*s' is not %zu wide",
			      (int)(e - lines), lines, w);
		lines = e + 1;
	}
	ck_assert_str_eq(lines, "");
	/* The stage column starts at the same place on every line. */
	ck_assert_int_eq(strstr(hdr, "stage") - hdr,
			 (long)strlen("a_point_with_a_rather_long_name_indeed") + 2);

	row = line_with(text, "tick_to_trade");
	ck_assert_msg(strstr(row, " decode ") && strstr(row, " latency ") &&
		      strstr(row, " 1121500 ") && strstr(row, " 29.9ns ") &&
		      strstr(row, " 294.1ns ") && strstr(row, " 281.3ns ") &&
		      strstr(row, " 562.7ns ") && strstr(row, " 115.13us"), "%s", row);
	ck_assert_ptr_null(strstr(row, "777"));
	free(row);
	row = line_with(text, "a_point_with_a_rather_long_name_indeed");
	ck_assert_msg(strstr(row, " 1.50us ") && strstr(row, " 3.25ms ") &&
		      strstr(row, " 2.50us ") && strstr(row, " 1.00s ") &&
		      strstr(row, " 4.50s") && strstr(row, " 3  ") && strstr(row, " 4  ") &&
		      strstr(row, " 5  "), "%s", row);
	free(row);
	row = line_with(text, "queue_depth");
	ck_assert_msg(strstr(row, " value ") && strstr(row, " 40 ") && strstr(row, " 1 ") &&
		      strstr(row, " 12.35 ") && strstr(row, " 10 ") && strstr(row, " 240 ") &&
		      strstr(row, " 250"), "%s", row);
	ck_assert_ptr_null(strstr(row, "ns"));
	free(row);
	/* An anomaly-only row shows its counters and no figures. */
	row = line_with(text, "m\xc3\xa9tier");
	ck_assert_msg(strstr(row, " 0 ") && strstr(row, " 5 ") && strstr(row, " -"), "%s", row);
	ck_assert_ptr_null(strstr(row, "ns"));
	free(row);
	free(hdr);
	free(rule);
	free(text);

	/* Cycles. */
	info.unit = REPORT_UNIT_CYCLES;
	text = format_to_string(&r, &info);
	row = line_with(text, "tick_to_trade");
	ck_assert_msg(strstr(row, " 30cyc ") && strstr(row, " 115130cyc"), "%s", row);
	free(row);
	free(text);

	/* Nothing yet. */
	r.nrows = 0;
	text = format_to_string(&r, &info);
	ck_assert_msg(strstr(text, "no samples"), "%s", text);
	free(text);
	free(r.rows);
}
END_TEST

START_TEST(test_durations)
{
	char buf[64];

	summary_format_duration(1.5, REPORT_UNIT_NS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1.5ns");
	summary_format_duration(999.94, REPORT_UNIT_NS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "999.9ns");
	summary_format_duration(2500, REPORT_UNIT_NS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2.50us");
	summary_format_duration(3.25e6, REPORT_UNIT_NS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "3.25ms");
	summary_format_duration(4.5e9, REPORT_UNIT_NS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "4.50s");
	summary_format_duration(0, REPORT_UNIT_NS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0.0ns");
	summary_format_duration(1234, REPORT_UNIT_CYCLES, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1234cyc");
	/* Microsecond figures are scaled to the same human units. */
	summary_format_duration(0.0015, REPORT_UNIT_US, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1.5ns");
	summary_format_duration(2.5, REPORT_UNIT_US, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2.50us");
	summary_format_duration(3250, REPORT_UNIT_US, buf, sizeof(buf));
	ck_assert_str_eq(buf, "3.25ms");
	summary_format_duration(4.5e6, REPORT_UNIT_US, buf, sizeof(buf));
	ck_assert_str_eq(buf, "4.50s");
}
END_TEST

START_TEST(test_comma_locale)
{
	struct report r;
	struct summary_info info = sample_info();
	char *text, *first, buf[64];

	if (!scratch_comma_locale()) {
		fprintf(stderr, "# no comma-decimal locale could be set up (no installed one, "
			"localedef failed); the locale-independence assertion is skipped\n");
		return;
	}
	snprintf(buf, sizeof(buf), "%.2f", 2.5);
	ck_assert_str_eq(buf, "2,50");
	sample_report(&r);
	text = format_to_string(&r, &info);
	first = line_with(text, "perfmond summary");
	ck_assert_msg(!strchr(first, ','), "%s", first);
	ck_assert_msg(strstr(first, "2.4454 GHz"), "%s", first);
	ck_assert_msg(strstr(text, " 294.1ns ") && strstr(text, " 12.35 "), "%s", text);
	summary_format_duration(2500, REPORT_UNIT_NS, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2.50us");
	/* The caller's locale is back afterwards. */
	snprintf(buf, sizeof(buf), "%.1f", 0.5);
	ck_assert_str_eq(buf, "0,5");
	free(first);
	free(text);
	free(r.rows);
	setlocale(LC_NUMERIC, "C");
}
END_TEST

START_TEST(test_write_atomic)
{
	struct report r;
	struct summary_info info = sample_info();
	char err[1024], *text, *expect;
	struct stat st;

	sample_report(&r);
	expect = format_to_string(&r, &info);
	ck_assert_int_eq(summary_write(scratch_path("s.txt"), &r, &info, err, sizeof(err)), 0);
	text = scratch_slurp(scratch_path("s.txt"), NULL);
	ck_assert_str_eq(text, expect);
	free(text);
	ck_assert_int_eq(stat(scratch_path("s.txt"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0640);
	ck_assert_uint_eq(scratch_count(".s.txt."), 0);

	/* Replacing an existing summary: a new inode, the old content gone. */
	{
		ino_t before = st.st_ino;
		info.dropped = 99;
		free(expect);
		expect = format_to_string(&r, &info);
		ck_assert_int_eq(summary_write(scratch_path("s.txt"), &r, &info, err,
					       sizeof(err)), 0);
		ck_assert_int_eq(stat(scratch_path("s.txt"), &st), 0);
		ck_assert_uint_ne(st.st_ino, before);
		text = scratch_slurp(scratch_path("s.txt"), NULL);
		ck_assert_str_eq(text, expect);
		ck_assert(strstr(text, "dropped 99"));
		free(text);
	}
	ck_assert_uint_eq(scratch_count(".s.txt."), 0);

	/* A relative path: the temporary goes to the current directory. */
	ck_assert_int_eq(chdir(scratch_dir()), 0);
	ck_assert_int_eq(summary_write("rel.txt", &r, &info, err, sizeof(err)), 0);
	ck_assert_int_eq(access(scratch_path("rel.txt"), F_OK), 0);
	ck_assert_uint_eq(scratch_count(".rel.txt."), 0);
	free(expect);
	free(r.rows);
}
END_TEST

START_TEST(test_write_symlink_and_failures)
{
	struct report r;
	struct summary_info info = sample_info();
	char err[1024], *text;
	struct stat st;

	sample_report(&r);
	/* A symlink at the path is replaced, never written through. */
	{
		FILE *f = fopen(scratch_path("victim"), "w");
		fputs("precious\n", f);
		fclose(f);
	}
	ck_assert_int_eq(symlink(scratch_path("victim"), scratch_path("sum.txt")), 0);
	ck_assert_int_eq(summary_write(scratch_path("sum.txt"), &r, &info, err, sizeof(err)), 0);
	ck_assert_int_eq(lstat(scratch_path("sum.txt"), &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	text = scratch_slurp(scratch_path("victim"), NULL);
	ck_assert_str_eq(text, "precious\n");
	free(text);

	/* A missing directory: a clear error naming the path, nothing created. */
	ck_assert_int_eq(summary_write(scratch_path("nodir/sum.txt"), &r, &info, err, sizeof(err)),
			 -ENOENT);
	ck_assert_msg(strstr(err, "nodir/sum.txt") && strstr(err, "temporary"), "%s", err);

	/* The path is a directory: the rename fails and the temporary goes. */
	ck_assert_int_eq(mkdir(scratch_path("adir"), 0700), 0);
	ck_assert_int_lt(summary_write(scratch_path("adir"), &r, &info, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "adir"), "%s", err);
	ck_assert_uint_eq(scratch_count(".adir."), 0);

	/* A path ending in '/' names no file. */
	ck_assert_int_eq(summary_write(scratch_path("adir/"), &r, &info, err, sizeof(err)),
			 -EISDIR);
	free(r.rows);
}
END_TEST

/*
 * The file system fills up while the summary is written (RLIMIT_FSIZE with
 * SIGXFSZ ignored): the previous summary stays whole and no temporary is
 * left.  The limit covers Check's own message file too, so nothing is
 * asserted while it is in force.
 */
START_TEST(test_write_full_disk)
{
	struct report r;
	struct summary_info info = sample_info();
	char err[1024], *before, *after;
	struct rlimit rl, low;
	int rc, limited, lifted;

	sample_report(&r);
	ck_assert_int_eq(summary_write(scratch_path("full.txt"), &r, &info, err, sizeof(err)), 0);
	before = scratch_slurp(scratch_path("full.txt"), NULL);
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
	low = rl;
	low.rlim_cur = 100;
	info.dropped = 12345;
	limited = setrlimit(RLIMIT_FSIZE, &low);
	rc = summary_write(scratch_path("full.txt"), &r, &info, err, sizeof(err));
	lifted = setrlimit(RLIMIT_FSIZE, &rl);

	ck_assert_int_eq(limited, 0);
	ck_assert_int_eq(lifted, 0);
	ck_assert_int_eq(rc, -EFBIG);
	ck_assert_msg(strstr(err, "full.txt") && strstr(err, "cannot write"), "%s", err);
	after = scratch_slurp(scratch_path("full.txt"), NULL);
	ck_assert_str_eq(after, before);
	ck_assert_uint_eq(scratch_count(".full.txt."), 0);
	free(before);
	free(after);
	free(r.rows);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("summary");
	TCase *tc = tcase_create("summary");

	tcase_add_unchecked_fixture(tc, setup_scratch, scratch_remove);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_header_line);
	tcase_add_test(tc, test_not_invariant);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_durations);
	tcase_add_test(tc, test_comma_locale);
	tcase_add_test(tc, test_write_atomic);
	tcase_add_test(tc, test_write_symlink_and_failures);
	tcase_add_test(tc, test_write_full_disk);
	suite_add_tcase(s, tc);
	return check_run(s);
}
