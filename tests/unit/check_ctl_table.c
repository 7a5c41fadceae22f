/*
 * check_ctl_table.c - perfmonctl's tables and text: the three output
 * formats, fitting a live table to a terminal width (wrapping cells, then
 * rows), Markdown and CSV escaping, label cleaning, and the figure
 * formatting used in every cell.
 */
#include "build-config.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>

#include "check_main.h"
#include "ctl_table.h"
#include "ctl_text.h"

/* Render `t` in `fmt` at `width` into a heap string. */
static char *render(const struct ctl_table *t, enum ctl_format fmt, unsigned width)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(ctl_table_print(t, f, fmt, width), 0);
	fclose(f);
	return buf;
}

static unsigned count_lines(const char *s)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Widest line, in terminal columns. */
static unsigned widest_line(const char *s)
{
	unsigned w = 0;
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		char *line = strndup(s, len);
		unsigned lw = ctl_text_width(line);
		free(line);
		if (lw > w)
			w = lw;
		s += len + (nl != NULL);
	}
	return w;
}

static struct ctl_table *stage_table(void)
{
	struct ctl_table *t = ctl_table_new();
	static const char *const labels[][2] = {
		{ "order_gateway_primary", "step_1->step_2_parse_and_validate" },
		{ "risk", "total" },
		{ "market_data_feed_handler", "decode/normalise/publish" },
	};

	ck_assert_ptr_nonnull(t);
	ctl_table_add_column(t, "point", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "stage", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "count", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "p50", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "p99", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "max", CTL_ALIGN_RIGHT, false);
	for (unsigned i = 0; i < 3; i++) {
		ctl_table_add_row(t);
		ctl_table_set(t, 0, labels[i][0]);
		ctl_table_set(t, 1, labels[i][1]);
		ctl_table_setf(t, 2, "%u", 1000 + i);
		ctl_table_set(t, 3, "1.23us");
		ctl_table_set(t, 4, "45.6us");
		ctl_table_set(t, 5, "789us");
	}
	return t;
}

START_TEST(test_format_choice)
{
	enum ctl_format f;
	char err[160];

	ck_assert_int_eq(ctl_format_parse("live", &f), 0);
	ck_assert_int_eq(f, CTL_FORMAT_LIVE);
	ck_assert_int_eq(ctl_format_parse("md", &f), 0);
	ck_assert_int_eq(f, CTL_FORMAT_MD);
	ck_assert_int_eq(ctl_format_parse("csv", &f), 0);
	ck_assert_int_eq(f, CTL_FORMAT_CSV);
	ck_assert_int_eq(ctl_format_parse("json", &f), 0);
	ck_assert_int_eq(f, CTL_FORMAT_JSON);
	ck_assert_int_lt(ctl_format_parse("yaml", &f), 0);

	unsetenv("PERFMON_FORMAT");
	ck_assert_int_eq(ctl_format_choose(NULL, &f, err, sizeof(err)), 0);
	ck_assert_int_eq(f, CTL_FORMAT_LIVE);
	setenv("PERFMON_FORMAT", "md", 1);
	ck_assert_int_eq(ctl_format_choose(NULL, &f, err, sizeof(err)), 0);
	ck_assert_int_eq(f, CTL_FORMAT_MD);
	/* --format wins over the environment */
	ck_assert_int_eq(ctl_format_choose("csv", &f, err, sizeof(err)), 0);
	ck_assert_int_eq(f, CTL_FORMAT_CSV);
	setenv("PERFMON_FORMAT", "xml", 1);
	ck_assert_int_lt(ctl_format_choose(NULL, &f, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "PERFMON_FORMAT"));
	unsetenv("PERFMON_FORMAT");
}
END_TEST

START_TEST(test_live_unlimited)
{
	struct ctl_table *t = ctl_table_new();
	char *s;

	ctl_table_add_column(t, "name", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "n", CTL_ALIGN_RIGHT, false);
	ctl_table_add_row(t);
	ctl_table_set(t, 0, "alpha");
	ctl_table_set(t, 1, "5");
	ctl_table_add_row(t);
	ctl_table_set(t, 0, "be");
	ctl_table_set(t, 1, "1234");
	s = render(t, CTL_FORMAT_LIVE, 0);
	ck_assert_str_eq(s, "name      n\n"
			    "alpha     5\n"
			    "be     1234\n");
	free(s);
	ctl_table_free(t);
}
END_TEST

/* Narrow enough that the labels must wrap, wide enough for the numbers. */
START_TEST(test_live_wraps_cells)
{
	struct ctl_table *t = stage_table();
	char *s = render(t, CTL_FORMAT_LIVE, 60);

	ck_assert_uint_le(widest_line(s), 60);
	ck_assert_uint_gt(count_lines(s), 4);      /* some cell took two lines */
	/* numbers are never broken */
	ck_assert_ptr_nonnull(strstr(s, "1.23us"));
	ck_assert_ptr_nonnull(strstr(s, "45.6us"));
	ck_assert_ptr_nonnull(strstr(s, "1002"));
	/* a wrapped label breaks after a separator and keeps every character */
	ck_assert_ptr_nonnull(strstr(s, "order_"));
	ck_assert_ptr_null(strstr(s, " \n"));      /* no trailing blanks */
	/* not row-wrapped: the header is one line with every title */
	ck_assert_ptr_nonnull(strstr(s, "max\n"));
	ck_assert_ptr_eq(strstr(s, "max\n"), strchr(s, '\n') - 3);
	free(s);
	ctl_table_free(t);
}
END_TEST

/* Too narrow even for the numbers: rows wrap, continuation lines indent. */
START_TEST(test_live_wraps_rows)
{
	struct ctl_table *t = stage_table();
	char *s = render(t, CTL_FORMAT_LIVE, 30);
	const char *p;
	unsigned cont = 0;

	ck_assert_uint_le(widest_line(s), 30);
	for (p = s; (p = strstr(p, "\n  ")); p++)
		cont++;
	ck_assert_uint_ge(cont, 3);
	ck_assert_ptr_nonnull(strstr(s, "45.6us"));
	ck_assert_ptr_nonnull(strstr(s, "789us"));
	free(s);

	/* absurdly narrow still terminates and respects the width */
	s = render(t, CTL_FORMAT_LIVE, 8);
	ck_assert_uint_le(widest_line(s), 8);
	free(s);
	ctl_table_free(t);
}
END_TEST

START_TEST(test_live_fits_80)
{
	struct ctl_table *t = stage_table();
	char *s = render(t, CTL_FORMAT_LIVE, 80);

	ck_assert_uint_le(widest_line(s), 80);
	free(s);
	ctl_table_free(t);
}
END_TEST

START_TEST(test_markdown)
{
	struct ctl_table *t = ctl_table_new();
	char *s;

	ctl_table_add_column(t, "stage", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "p50", CTL_ALIGN_RIGHT, false);
	ctl_table_add_row(t);
	ctl_table_set(t, 0, "a|b");
	ctl_table_set(t, 1, "12ns");
	ctl_table_add_row(t);
	ctl_table_set(t, 0, "x");
	ctl_table_set(t, 1, "1.5us");
	s = render(t, CTL_FORMAT_MD, 20);    /* md ignores the width */
	ck_assert_str_eq(s, "| stage |   p50 |\n"
			    "| ----- | ----: |\n"
			    "| a\\|b  |  12ns |\n"
			    "| x     | 1.5us |\n");
	free(s);
	ctl_table_free(t);
}
END_TEST

struct parsed {
	char fields[8][64];
	unsigned nf, rows;
	char row1[8][64];
};

static void cb_field(void *s, size_t len, void *data)
{
	struct parsed *p = data;
	if (p->nf < 8) {
		snprintf(p->fields[p->nf], 64, "%.*s", (int)len, (char *)s);
		p->nf++;
	}
}

static void cb_row(int c, void *data)
{
	struct parsed *p = data;
	(void)c;
	if (p->rows == 1)
		memcpy(p->row1, p->fields, sizeof(p->row1));
	p->rows++;
	p->nf = 0;
}

START_TEST(test_csv_round_trip)
{
	struct ctl_table *t = ctl_table_new();
	struct csv_parser parser;
	struct parsed p;
	char *s;

	ctl_table_add_column(t, "point", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "stage", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "count", CTL_ALIGN_RIGHT, false);
	ctl_table_add_row(t);
	ctl_table_set(t, 0, "gw, primary");
	ctl_table_set(t, 1, "say \"hi\"");
	ctl_table_set(t, 2, "10");
	s = render(t, CTL_FORMAT_CSV, 10);
	ck_assert_str_eq(s, "point,stage,count\n"
			    "\"gw, primary\",\"say \"\"hi\"\"\",10\n");

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI), 0);
	ck_assert_uint_eq(csv_parse(&parser, s, strlen(s), cb_field, cb_row, &p), strlen(s));
	csv_fini(&parser, cb_field, cb_row, &p);
	csv_free(&parser);
	ck_assert_uint_eq(p.rows, 2);
	ck_assert_str_eq(p.row1[0], "gw, primary");
	ck_assert_str_eq(p.row1[1], "say \"hi\"");
	ck_assert_str_eq(p.row1[2], "10");
	free(s);
	ctl_table_free(t);
}
END_TEST

/* Control codes, line breaks and bidi overrides never get through, in any
 * format: the cell is cleaned when stored. */
START_TEST(test_cells_are_cleaned)
{
	static const char evil[] = "\x1b[2J\x1b]0;title\x07x\ny\rz\xc2\x9b" "31m\xe2\x80\xae" "rtl";
	enum ctl_format fmts[] = { CTL_FORMAT_LIVE, CTL_FORMAT_MD, CTL_FORMAT_CSV };

	for (unsigned i = 0; i < 3; i++) {
		struct ctl_table *t = ctl_table_new();
		char *s;

		ctl_table_add_column(t, evil, CTL_ALIGN_LEFT, true);
		ctl_table_add_row(t);
		ctl_table_set(t, 0, evil);
		s = render(t, fmts[i], 0);
		ck_assert_ptr_null(strchr(s, '\x1b'));
		ck_assert_ptr_null(strchr(s, '\x07'));
		ck_assert_ptr_null(strchr(s, '\r'));
		ck_assert_ptr_null(strstr(s, "\xc2\x9b"));
		ck_assert_ptr_null(strstr(s, "\xe2\x80\xae"));
		/* header and one row: no forged line */
		ck_assert_uint_eq(count_lines(s), fmts[i] == CTL_FORMAT_MD ? 3 : 2);
		ck_assert_ptr_nonnull(strstr(s, "x?y?z"));
		free(s);
		ctl_table_free(t);
	}
}
END_TEST

/* Every Unicode format character (category Cf) is invisible and can
 * reorder or hide what follows: none reaches the output. */
START_TEST(test_format_characters_cleaned)
{
	static const char *const cf[] = {
		"\xc2\xad", "\xd8\x83", "\xdb\x9d", "\xe2\x80\x8b", "\xe2\x81\xa6",
		"\xef\xbb\xbf", "\xf0\x91\x82\xbd", "\xf3\xa0\x80\x81",
	};
	char in[64], out[64];

	for (unsigned i = 0; i < sizeof(cf) / sizeof(cf[0]); i++) {
		snprintf(in, sizeof(in), "a%sb", cf[i]);
		ctl_text_clean(out, in, sizeof(out));
		ck_assert_msg(strstr(out, cf[i]) == NULL, "format character %u kept", i);
		ck_assert(out[0] == 'a' && out[strlen(out) - 1] == 'b');
	}
	ctl_text_clean(out, "caf\xc3\xa9", sizeof(out));   /* ordinary letters stay */
	ck_assert_str_eq(out, "caf\xc3\xa9");
}
END_TEST

START_TEST(test_text_clean)
{
	char out[64];

	ck_assert_uint_eq(ctl_text_clean(out, "plain", sizeof(out)), 5);
	ck_assert_str_eq(out, "plain");
	ctl_text_clean(out, "caf\xc3\xa9", sizeof(out));
	ck_assert_str_eq(out, "caf\xc3\xa9");                    /* valid UTF-8 kept */
	ctl_text_clean(out, "a\xff" "b\xc0\xaf" "c", sizeof(out));
	ck_assert_str_eq(out, "a?b??c");                         /* invalid bytes */
	ctl_text_clean(out, "x\xe2\x80\x8by\xef\xbb\xbfz", sizeof(out));
	ck_assert_str_eq(out, "x?y?z");                          /* zero width, BOM */
	ctl_text_clean(out, "0123456789", 5);
	ck_assert_str_eq(out, "0123");                           /* bounded */
	{
		char *d = ctl_text_dup_clean("a\0b", 3);
		ck_assert_str_eq(d, "a?b");                      /* a NUL is no end */
		free(d);
	}
}
END_TEST

START_TEST(test_text_width)
{
	unsigned cols;

	ck_assert_uint_eq(ctl_text_width("abc"), 3);
	ck_assert_uint_eq(ctl_text_width("caf\xc3\xa9"), 4);
	ck_assert_uint_eq(ctl_text_width("\xe6\x97\xa5\xe6\x9c\xac"), 4);   /* two wide */
	ck_assert_uint_eq(ctl_text_fit("\xe6\x97\xa5\xe6\x9c\xac", 3, &cols), 3);
	ck_assert_uint_eq(cols, 2);
	ck_assert_uint_eq(ctl_text_fit("abcdef", 4, &cols), 4);
}
END_TEST

START_TEST(test_figures)
{
	char b[32];

	ctl_fmt_duration(812, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "812ns");
	ctl_fmt_duration(812.4, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "812ns");
	ctl_fmt_duration(1234.5, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "1.23us");
	ctl_fmt_duration(999.7, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "1.00us");
	ctl_fmt_duration(45.6e6, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "45.6ms");
	ctl_fmt_duration(2.1, "us", b, sizeof(b));
	ck_assert_str_eq(b, "2.10us");
	ctl_fmt_duration(1234, "cycles", b, sizeof(b));
	ck_assert_str_eq(b, "1.23kcy");
	ctl_fmt_duration(-15, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "-15ns");
	ctl_fmt_si(9999, b, sizeof(b));
	ck_assert_str_eq(b, "9999");
	ctl_fmt_si(12345, b, sizeof(b));
	ck_assert_str_eq(b, "12.3k");
	ctl_fmt_si(2.5e6, b, sizeof(b));
	ck_assert_str_eq(b, "2.50M");
	/* value samples reach 2^64 - 1: prefixes up to E (and Z past it) */
	ctl_fmt_si(9223372036854775808.0, b, sizeof(b));
	ck_assert_str_eq(b, "9.22E");
	ctl_fmt_si(18446744073709551615.0, b, sizeof(b));
	ck_assert_str_eq(b, "18.4E");
	ctl_fmt_si(999.4e15, b, sizeof(b));
	ck_assert_str_eq(b, "999P");
	ctl_fmt_si(2.5e21, b, sizeof(b));
	ck_assert_str_eq(b, "2.50Z");
	ctl_fmt_age(725, b, sizeof(b));
	ck_assert_str_eq(b, "12m05s");
	ctl_fmt_age(3 * 86400 + 7200, b, sizeof(b));
	ck_assert_str_eq(b, "3d02h");
	ctl_fmt_bytes(1536, b, sizeof(b));
	ck_assert_str_eq(b, "1.50KiB");
	ck_assert(ctl_unit_ns("us") == 1000);
	ck_assert(ctl_unit_ns("cycles") == 0);
}
END_TEST

/* Machine-readable figures: whole numbers below 2^64 with every digit and
 * no exponent, others in the fewest digits that read back. */
START_TEST(test_fmt_exact)
{
	char b[64];

	ctl_fmt_exact(18158513697557839872.0, b, sizeof(b));
	ck_assert_str_eq(b, "18158513697557839872");
	ctl_fmt_exact(9223372036854774784.0, b, sizeof(b));
	ck_assert_str_eq(b, "9223372036854774784");
	ctl_fmt_exact(1e17, b, sizeof(b));
	ck_assert_str_eq(b, "100000000000000000");
	ctl_fmt_exact(-123456789012345678.0, b, sizeof(b));
	ck_assert_str_eq(b, "-123456789012345680");
	/* 2^64 is not a uint64: an exponent, read back exactly */
	ctl_fmt_exact(18446744073709551616.0, b, sizeof(b));
	ck_assert_str_eq(b, "1.8446744073709552e+19");
	ctl_fmt_exact(1067580369, b, sizeof(b));
	ck_assert_str_eq(b, "1067580369");
	ctl_fmt_exact(0.1, b, sizeof(b));
	ck_assert_str_eq(b, "0.1");
	ctl_fmt_exact(1414.213562373095, b, sizeof(b));
	ck_assert_str_eq(b, "1414.213562373095");
	ctl_fmt_exact(NAN, b, sizeof(b));
	ck_assert_str_eq(b, "nan");
}
END_TEST

/* Figures a file can hold but no clock can: every one a short cell. */
START_TEST(test_figures_extreme)
{
	char b[32];

	ctl_fmt_duration(1e40, "ns", b, sizeof(b));     /* once cast to an integer */
	ck_assert_str_eq(b, "1.00e+31s");
	ctl_fmt_duration(1.8e28, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "1.80e+19s");
	ctl_fmt_duration(1e308, "us", b, sizeof(b));    /* v * 1000 is not finite */
	ck_assert_str_eq(b, "1.00e+302s");
	ctl_fmt_duration(-2e12, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "-33m20s");
	ctl_fmt_duration(-1e13, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "-2h46m");
	ctl_fmt_duration(-1e40, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "-1.00e+31s");
	ctl_fmt_duration(999.7e9, "ns", b, sizeof(b));  /* rounds to 1000 s */
	ck_assert_str_eq(b, "16m40s");
	ctl_fmt_duration(100 * 86400e9, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "100d00h");
	ctl_fmt_duration(NAN, "ns", b, sizeof(b));
	ck_assert_str_eq(b, "-");
	ctl_fmt_duration(INFINITY, "us", b, sizeof(b));
	ck_assert_str_eq(b, "-");
	ctl_fmt_duration(-INFINITY, "cycles", b, sizeof(b));
	ck_assert_str_eq(b, "-");
	ctl_fmt_duration(1.5e15, "cycles", b, sizeof(b));
	ck_assert_str_eq(b, "1.50e+06Gcy");
	ctl_fmt_duration(-DBL_MAX, "cycles", b, sizeof(b));
	ck_assert_str_eq(b, "-1.80e+299Gcy");
	ctl_fmt_si(DBL_MAX, b, sizeof(b));
	ck_assert_str_eq(b, "1.80e+287Z");
	ctl_fmt_age(1e30, b, sizeof(b));
	ck_assert_str_eq(b, "1.00e+30s");
	ctl_fmt_age(DBL_MAX, b, sizeof(b));
	ck_assert_str_eq(b, "1.80e+308s");
	ctl_fmt_age(-1, b, sizeof(b));                  /* callers' "unknown" */
	ck_assert_str_eq(b, "-");
	ctl_fmt_age(NAN, b, sizeof(b));
	ck_assert_str_eq(b, "-");
	ctl_fmt_bytes(DBL_MAX, b, sizeof(b));
	ck_assert_str_eq(b, "1.60e+293PiB");
	ctl_fmt_bytes(NAN, b, sizeof(b));
	ck_assert_str_eq(b, "-");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl_table");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, test_format_choice);
	tcase_add_test(tc, test_live_unlimited);
	tcase_add_test(tc, test_live_wraps_cells);
	tcase_add_test(tc, test_live_wraps_rows);
	tcase_add_test(tc, test_live_fits_80);
	tcase_add_test(tc, test_markdown);
	tcase_add_test(tc, test_csv_round_trip);
	tcase_add_test(tc, test_cells_are_cleaned);
	tcase_add_test(tc, test_text_clean);
	tcase_add_test(tc, test_format_characters_cleaned);
	tcase_add_test(tc, test_text_width);
	tcase_add_test(tc, test_figures);
	tcase_add_test(tc, test_figures_extreme);
	tcase_add_test(tc, test_fmt_exact);
	suite_add_tcase(s, tc);
	return check_run(s);
}
