/*
 * check_ctl_report.c - `perfmonctl report`: whole-file aggregation per
 * point and stage (counts, count-weighted mean, pooled stddev, min, max,
 * spread of per-interval percentiles, anomalies, collector losses counted
 * once per interval), the --point/--stage filters, the three formats and
 * labels that try to break out of their cell.
 */
#include "build-config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ctl_cli.h"
#include "ctl_report.h"

static const char *data(const char *name)
{
	static char p[4][4096];
	static unsigned slot;
	const char *top = getenv("top_srcdir");
	slot = (slot + 1) % 4;
	snprintf(p[slot], sizeof(p[slot]), "%s/tests/data/ctl/%s", top ? top : "..", name);
	return p[slot];
}

static int run(char **out, char **err, int argc, char **argv)
{
	size_t ol = 0, el = 0;
	FILE *fo = open_memstream(out, &ol), *fe = open_memstream(err, &el);
	int rc = ctl_report_cmd(argc, argv, fo, fe);
	fclose(fo);
	fclose(fe);
	return rc;
}

static unsigned lines(const char *s)
{
	unsigned n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/*
 * report.csv, gw/total: intervals (n, mean, sd) = (2, 150, 70.71),
 * (3, 100, 50), (1, 400, 0): 6 samples, mean 1000/6 = 166.667, pooled
 * M2 = 5000 + 5000 + 68333.3 -> sd = sqrt(78333.3 / 5) = 125.167;
 * per-interval p50 = 100, 100, 400 -> median 100, range 100..400.
 */
START_TEST(test_aggregation_csv)
{
	char *argv[] = { "report", "--format", "csv", (char *)data("report.csv") };
	char *out, *err;

	ck_assert_int_eq(run(&out, &err, 4, argv), 0);
	ck_assert_msg(strstr(out, "\ngw,total,latency,3,6,166.66666666666666,125.16655570345725,50,400,"
			     "100,100,400,200,150,400,200,150,400,200,150,400,0,2,0,0,,\n"), "%s", out);
	/* an anomaly-only row: listed with its counter, no figures */
	ck_assert_ptr_nonnull(strstr(out, "\ngw,parse,latency,0,0,,,,,,,,,,,,,,,,,1,0,0,0,,\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nother,step_1->2,latency,1,5,10,0,10,10,"));
	ck_assert_ptr_nonnull(strstr(out, "point,stage,kind,intervals,count,mean_ns,stddev_ns,"
				     "min_ns,max_ns,p50_median_ns,p50_min_ns,p50_max_ns,"));
	ck_assert_uint_eq(lines(out), 6);
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
}
END_TEST

/*
 * values-big.csv, seq/value: intervals of {2^63 - 1000, 2^63 + 1000} and
 * {2^63 + 1, 2^63 + 4}, figures no double holds.  Pooled mean 2^63 + 1.25,
 * stddev sqrt(2000010.75 / 3) = 816.4988; the p50 median is the midpoint
 * of 2^63 - 1000 and 2^63 + 1 (2^63 - 499.5).  Every digit survives.
 */
START_TEST(test_value_rows_exact)
{
	char *argv[] = { "report", "--format", "csv", (char *)data("values-big.csv") };
	char *out, *err, *row;
	double sd;

	ck_assert_int_eq(run(&out, &err, 4, argv), 0);
	row = strstr(out, "\nseq,value,value,2,4,");
	ck_assert_msg(row, "%s", out);
	{
		static const char head[] = "\nseq,value,value,2,4,9223372036854775809.250,";
		ck_assert_msg(!strncmp(row, head, sizeof(head) - 1), "%s", out);
		sd = strtod(row + sizeof(head) - 1, NULL);
	}
	ck_assert_msg(fabs(sd - 816.4987752593387) < 1e-9 * 816.5, "stddev %.17g", sd);
	ck_assert_msg(strstr(row, ",9223372036854774808,9223372036854776808,"
			     "9223372036854775308.5,9223372036854774808,9223372036854775809,"
			     "9223372036854776310,9223372036854775812,9223372036854776808,"), "%s", out);
	ck_assert_msg(strstr(out, "\ntop,value,value,1,1,18446744073709551615.000,0,"
			     "18446744073709551615,18446744073709551615,18446744073709551615,"), "%s",
		      out);
	ck_assert_ptr_null(strstr(out, "e+"));
	/* latency rows as before */
	ck_assert_ptr_nonnull(strstr(out, "\ngw,total,latency,2,5,120,"));
	free(out);
	free(err);

	argv[2] = "json";
	ck_assert_int_eq(run(&out, &err, 4, argv), 0);
	ck_assert_msg(strstr(out, "\"mean\":9223372036854775809.250,"), "%s", out);
	ck_assert_msg(strstr(out, "\"min\":9223372036854774808,\"max\":9223372036854776808,"
			     "\"percentiles\""), "%s", out);
	ck_assert_msg(strstr(out, "\"p50\":{\"median\":9223372036854775308.5,"
			     "\"min\":9223372036854774808,\"max\":9223372036854775809}"), "%s", out);
	ck_assert_msg(strstr(out, "\"p99_9\":{\"median\":18446744073709551615,"
			     "\"min\":18446744073709551615,\"max\":18446744073709551615}"), "%s", out);
	ck_assert_ptr_null(strstr(out, "e+"));
	free(out);
	free(err);

	/* the human formats: SI prefixes past P */
	argv[2] = "md";
	ck_assert_int_eq(run(&out, &err, 4, argv), 0);
	ck_assert_msg(strstr(out, " 9.22E "), "%s", out);
	ck_assert_msg(strstr(out, " 18.4E "), "%s", out);
	ck_assert_ptr_null(strstr(out, "e+"));
	free(out);
	free(err);
}
END_TEST

/* The collector's losses, once per interval, on the last CSV row. */
START_TEST(test_csv_collector_totals)
{
	char *argv[] = { "report", "--format", "csv", (char *)data("values-big.csv") };
	char *out, *err;
	size_t len;

	ck_assert_int_eq(run(&out, &err, 4, argv), 0);
	ck_assert_msg(strstr(out, ",out_of_range,dropped,stalled\n"), "%s", out);
	len = strlen(out);
	/* dropped 3 and 2 (on every row of their interval), stalled 1 */
	ck_assert_msg(len > 50 && !strcmp(out + len - strlen("\ncollector,total,collector,2,"
							    ",,,,,,,,,,,,,,,,,,,,,5,1\n"),
					   "\ncollector,total,collector,2,,,,,,,,,,,,,,,,,,,,,,5,1\n"),
		      "%s", out);
	/* stage rows leave them empty: summing the column is right */
	ck_assert_ptr_nonnull(strstr(out, "\ngw,total,latency,2,5,120,"));
	ck_assert_ptr_nonnull(strstr(out, ",0,0,0,0,,\n"));
	free(out);
	free(err);

	/* whatever the filters: the losses are the file's */
	{
		char *argv2[] = { "report", "--format", "csv", "--point", "none",
				  (char *)data("report.csv") };
		ck_assert_int_eq(run(&out, &err, 6, argv2), 0);
		ck_assert_uint_eq(lines(out), 2);
		ck_assert_ptr_nonnull(strstr(out, "\ncollector,total,collector,3,"));
		ck_assert_ptr_nonnull(strstr(out, ",7,0\n"));
		free(out);
		free(err);
	}
}
END_TEST

START_TEST(test_live_and_md)
{
	char *argv[] = { "report", "--format", "live", (char *)data("report.csv") };
	char *out, *err;

	setenv("COLUMNS", "300", 1);
	ck_assert_int_eq(run(&out, &err, 4, argv), 0);
	ck_assert_ptr_nonnull(strstr(out, "6 rows in 3 intervals"));
	ck_assert_ptr_nonnull(strstr(out, "167ns"));
	ck_assert_ptr_nonnull(strstr(out, "100ns (100ns..400ns)"));
	/* dropped repeats on each row of an interval: 3 + 0 + 4, not 3+3+4+4+4 */
	ck_assert_ptr_nonnull(strstr(out, "collector: 7 events dropped, 0 stalled"));
	free(out);
	free(err);

	argv[2] = "md";
	ck_assert_int_eq(run(&out, &err, 4, argv), 0);
	ck_assert_ptr_nonnull(strstr(out, "| point     | stage     |"));
	ck_assert_ptr_nonnull(strstr(out, "| --------- | --------- | --------: |"));
	free(out);
	free(err);
	unsetenv("COLUMNS");
}
END_TEST

START_TEST(test_filters)
{
	char *out, *err;

	{
		char *argv[] = { "report", "--format", "csv", "--point", "g*", "--stage", "total",
				 (char *)data("report.csv") };
		ck_assert_int_eq(run(&out, &err, 8, argv), 0);
		ck_assert_uint_eq(lines(out), 3);
		ck_assert_ptr_nonnull(strstr(out, "\ngw,total,"));
		free(out);
		free(err);
	}
	{
		/* repeated patterns: any of them */
		char *argv[] = { "report", "--format", "csv", "--point", "other", "--point",
				 "collector", (char *)data("report.csv") };
		ck_assert_int_eq(run(&out, &err, 8, argv), 0);
		ck_assert_uint_eq(lines(out), 4);
		ck_assert_ptr_null(strstr(out, "\ngw,"));
		free(out);
		free(err);
	}
	{
		char *argv[] = { "report", "--stage", "nothing*", (char *)data("report.csv") };
		ck_assert_int_eq(run(&out, &err, 4, argv), 0);
		ck_assert_ptr_nonnull(strstr(out, "no stage matches"));
		free(out);
		free(err);
	}
}
END_TEST

START_TEST(test_quoted_labels_survive)
{
	char *argv[] = { "report", "--format", "csv", (char *)data("quoted.csv") };
	char *out, *err;

	ck_assert_int_eq(run(&out, &err, 4, argv), 0);
	ck_assert_ptr_nonnull(strstr(out, "\n\"gw, primary\",\"say \"\"hi\"\"\",latency,2,30,"));
	ck_assert_ptr_nonnull(strstr(out, "\n\" padded \",value,value,1,3,"));
	free(out);
	free(err);
}
END_TEST

/* A label cannot add a row, clear the screen or set the window title. */
START_TEST(test_injection)
{
	const char *fmts[] = { "live", "md", "csv" };
	for (unsigned i = 0; i < 3; i++) {
		char *argv[] = { "report", "--format", (char *)fmts[i],
				 (char *)data("injection.csv") };
		char *out, *err;

		ck_assert_int_eq(run(&out, &err, 4, argv), 0);
		for (const unsigned char *p = (const unsigned char *)out; *p; p++)
			ck_assert_msg(*p == '\n' || (*p >= 0x20 && *p != 0x7f),
				      "control byte 0x%02x in %s output", *p, fmts[i]);
		ck_assert_ptr_null(strstr(out, "\xc2\x9b"));
		ck_assert_ptr_null(strstr(out, "\xe2\x80\xae"));
		/* exactly two stage rows, whatever the format adds around them */
		ck_assert_uint_eq(lines(out), i == 0 ? 4 : i == 1 ? 6 : 4);
		ck_assert_ptr_null(strstr(out, "\n2024-05-01 12:00:09.000,forged"));
		free(out);
		free(err);
	}
}
END_TEST

START_TEST(test_errors)
{
	char *out, *err;
	{
		char *argv[] = { "report", (char *)data("bad-fields.csv") };
		ck_assert_int_eq(run(&out, &err, 2, argv), CTL_EXIT_BAD_FILE);
		ck_assert_ptr_nonnull(strstr(err, "bad-fields.csv:3:"));
		free(out);
		free(err);
	}
	{
		char *argv[] = { "report" };
		ck_assert_int_eq(run(&out, &err, 1, argv), CTL_EXIT_FAILURE);
		free(out);
		free(err);
	}
	{
		char *argv[] = { "report", "--format", "yaml", (char *)data("report.csv") };
		ck_assert_int_eq(run(&out, &err, 4, argv), CTL_EXIT_FAILURE);
		ck_assert_ptr_nonnull(strstr(err, "live, md, csv or json"));
		free(out);
		free(err);
	}
}
END_TEST

START_TEST(test_filter_match)
{
	struct ctl_filter f = { 0 };

	ck_assert(ctl_filter_match(&f, "any", "thing"));
	ck_assert_int_eq(ctl_filter_add(&f, false, "order_*"), 0);
	ck_assert(ctl_filter_match(&f, "order_gw", "total"));
	ck_assert(!ctl_filter_match(&f, "risk", "total"));
	ck_assert_int_eq(ctl_filter_add(&f, true, "step_?->*"), 0);
	ck_assert(ctl_filter_match(&f, "order_gw", "step_1->255"));
	ck_assert(!ctl_filter_match(&f, "order_gw", "total"));
	ctl_filter_free(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl_report");
	TCase *tc = tcase_create("report");

	tcase_add_test(tc, test_aggregation_csv);
	tcase_add_test(tc, test_value_rows_exact);
	tcase_add_test(tc, test_csv_collector_totals);
	tcase_add_test(tc, test_live_and_md);
	tcase_add_test(tc, test_filters);
	tcase_add_test(tc, test_quoted_labels_survive);
	tcase_add_test(tc, test_injection);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_filter_match);
	suite_add_tcase(s, tc);
	return check_run(s);
}
