/*
 * check_units.c - tests for the pieces every program shares: numbers with
 * units (src/units.c), the message lists (src/msgs.c) and the CPUs a
 * thread may run on (src/cpus.c).
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "cpus.h"
#include "msgs.h"
#include "units.h"

#define MS UINT64_C(1000000)
#define SEC UINT64_C(1000000000)

START_TEST(test_duration_units)
{
	static const struct { const char *s; uint64_t ns; } ok[] = {
		{ "0", 0 }, { "0s", 0 }, { "7ns", 7 }, { "3us", 3000 },
		{ "2ms", 2 * MS }, { "4s", 4 * SEC }, { "2m", 120 * SEC },
		{ "3h", 3 * 3600 * SEC }, { "1d", 86400 * SEC }, { "1.5ms", 1500000 },
		{ " 5 ms ", 5 * MS }, { "0.25s", 250 * MS }, { ".5us", 500 },
		{ "2.000s", 2 * SEC }, { "18446744073709551615ns", UINT64_MAX },
		{ "213503d", UINT64_C(213503) * 86400 * SEC },
	};
	static const struct { const char *s; const char *why; } bad[] = {
		{ "5", "unit is required" }, { "1.5", "unit is required" },
		{ "1.5ns", "whole number of nanoseconds" }, { "5 parsecs", "unknown unit" },
		{ "-1s", "negative" }, { "ms", "not a number" }, { "", "not a number" },
		{ "18446744073709551616ns", "too large" }, { "213504d", "too large" },
		{ "5S", "unknown unit" }, { "1.2.3s", "unknown unit" },
	};
	char why[256], buf[64];
	uint64_t ns;
	unsigned i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(units_parse(ok[i].s, &units_duration, &ns, why, sizeof(why)) == 0,
			      "'%s': %s", ok[i].s, why);
		ck_assert_msg(ns == ok[i].ns, "'%s' gave %llu", ok[i].s,
			      (unsigned long long)ns);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ns = 42;
		ck_assert_msg(units_parse(bad[i].s, &units_duration, &ns, why, sizeof(why)) < 0,
			      "'%s' was accepted", bad[i].s);
		ck_assert_msg(strstr(why, bad[i].why), "'%s': %s", bad[i].s, why);
		ck_assert_uint_eq(ns, 42);
	}
	ck_assert_int_eq(units_format(0, &units_duration, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "0");
	units_format(1500000, &units_duration, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1500us");
	units_format(90 * SEC, &units_duration, buf, sizeof(buf));
	ck_assert_str_eq(buf, "90s");
	units_format(7200 * SEC, &units_duration, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2h");
	units_format(UINT64_C(1073741824), &units_duration, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1073741824ns");
	ck_assert_int_eq(units_format(7200 * SEC, &units_duration, buf, 2), -ENOSPC);
}
END_TEST

START_TEST(test_percentile_labels)
{
	static const struct { double p; const char *label; } cases[] = {
		{ 50, "p50" }, { 90, "p90" }, { 99, "p99" }, { 99.9, "p99_9" },
		{ 99.99, "p99_99" }, { 99.999, "p99_999" }, { 0, "p0" },
		{ 100, "p100" }, { 0.1, "p0_1" }, { 12.5, "p12_5" },
		{ 99.9999999, "p99_9999999" }, { 99.99999991, "p99_99999991" },
		{ 1e-5, "p0_00001" }, { 33.333333333333336, "p33_333333333333336" },
	};
	char buf[64];
	unsigned i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(units_percentile_label(cases[i].p, buf, sizeof(buf)), 0);
		ck_assert_str_eq(buf, cases[i].label);
	}
	ck_assert_int_eq(units_percentile_label(NAN, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(units_percentile_label(-1, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(units_percentile_label(INFINITY, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(units_percentile_label(99.9, buf, 5), -ENOSPC);
	ck_assert_int_eq(units_percentile_label(99.9, buf, 6), 0);
	ck_assert_str_eq(buf, "p99_9");
}
END_TEST

START_TEST(test_msgs_overflow)
{
	struct msgs m;
	char *buf = NULL;
	size_t len = 0;
	unsigned i;
	FILE *f;

	msgs_init(&m);
	for (i = 0; i < 1000; i++)
		msgs_add(&m, "problem %u with a reasonably long explanation", i);
	ck_assert_uint_eq(m.count, 1000);
	ck_assert_uint_gt(m.dropped, 0);
	ck_assert_uint_lt(m.len, sizeof(m.text));
	ck_assert_int_eq(m.text[m.len - 1], '\n');
	f = open_memstream(&buf, &len);
	msgs_print(f, &m, "<3>");
	fclose(f);
	ck_assert(!strncmp(buf, "<3>problem 0 with", 17));
	ck_assert_ptr_nonnull(strstr(buf, "more not shown)\n"));
	free(buf);
}
END_TEST

START_TEST(test_sizes_and_counts)
{
	static const struct { const char *s; const struct units_scale *sc; uint64_t v; } ok[] = {
		{ "4096", &units_size, 4096 }, { "1.5K", &units_size, 1536 },
		{ "64 MiB", &units_size, UINT64_C(64) << 20 }, { "3m", &units_size, UINT64_C(3) << 20 },
		{ "2G", &units_size, UINT64_C(2) << 30 }, { "1tib", &units_size, UINT64_C(1) << 40 },
		{ "7B", &units_size, 7 }, { "64K", &units_count, 65536 }, { "12", &units_count, 12 },
	};
	static const struct { const char *s; const struct units_scale *sc; const char *why; } bad[] = {
		{ "1.3K", &units_size, "not a whole number of bytes" },
		{ "5 KB", &units_size, "unknown unit 'KB'" },
		{ "0.5", &units_count, "not a whole number" },
		{ "16777216T", &units_size, "value is too large" },
		{ "64B", &units_count, "unknown unit 'B'" },
		{ "-1", &units_count, "must not be negative" },
	};
	char why[256], buf[64];
	uint64_t v;

	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(units_parse(ok[i].s, ok[i].sc, &v, why, sizeof(why)) == 0,
			      "'%s': %s", ok[i].s, why);
		ck_assert_msg(v == ok[i].v, "'%s' gave %llu", ok[i].s, (unsigned long long)v);
	}
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		ck_assert_msg(units_parse(bad[i].s, bad[i].sc, &v, why, sizeof(why)) < 0,
			      "'%s' was accepted", bad[i].s);
		ck_assert_msg(strstr(why, bad[i].why), "'%s': %s", bad[i].s, why);
		ck_assert_uint_eq(v, 42);
	}
	/* A reason is optional. */
	ck_assert_int_eq(units_parse("x", &units_size, &v, NULL, 0), -EINVAL);
	/* Sizes are written in the largest unit that divides them, else bare. */
	units_format(UINT64_C(64) << 20, &units_size, buf, sizeof(buf));
	ck_assert_str_eq(buf, "64M");
	units_format(1536, &units_size, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1536");
	units_format(0, &units_size, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0");
}
END_TEST

START_TEST(test_percentiles)
{
	char why[256], buf[64];
	double p = -1;

	ck_assert_int_eq(units_parse_percentile("99.9", &p, why, sizeof(why)), 0);
	ck_assert(p == 99.9);
	ck_assert_int_eq(units_format_percentile(p, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "99.9");
	ck_assert_int_eq(units_parse_percentile("100.5", &p, why, sizeof(why)), -ERANGE);
	ck_assert_str_eq(why, "100.5 is outside [0, 100]");
	ck_assert_int_eq(units_parse_percentile("nan", &p, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(units_parse_percentile("5%", &p, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(units_parse_percentile("0.0000000000000001", &p, why, sizeof(why)),
			 -ERANGE);
	ck_assert_msg(strstr(why, "more than 15 decimal places"), "%s", why);
	ck_assert(p == 99.9);   /* untouched by every refusal */
}
END_TEST

START_TEST(test_cpus_allowed)
{
	char why[512] = "", want[64];
	cpu_set_t set;
	int cpu, bad;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	for (cpu = 0; !CPU_ISSET(cpu, &set); cpu++)
		;
	for (bad = CPU_SETSIZE - 1; bad >= 0 && CPU_ISSET(bad, &set); bad--)
		;
	ck_assert_int_eq(cpus_check_allowed(-1, why, sizeof(why)), 0);
	ck_assert_int_eq(cpus_check_allowed(cpu, why, sizeof(why)), 0);
	ck_assert_int_eq(cpus_check_allowed(bad, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "is not available to this process"), "%s", why);

	/* Narrowed to one CPU, the list names exactly that one. */
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
	ck_assert_int_eq(cpus_check_allowed(cpu + 1, why, sizeof(why)), -EINVAL);
	snprintf(want, sizeof(want), "may run on CPUs %d (", cpu);
	ck_assert_msg(strstr(why, want), "%s", why);
}
END_TEST

static Suite *units_suite(void)
{
	Suite *s = suite_create("units");
	TCase *tc = tcase_create("units");

	tcase_add_test(tc, test_duration_units);
	tcase_add_test(tc, test_sizes_and_counts);
	tcase_add_test(tc, test_percentiles);
	tcase_add_test(tc, test_percentile_labels);
	tcase_add_test(tc, test_msgs_overflow);
	tcase_add_test(tc, test_cpus_allowed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(units_suite());
}
