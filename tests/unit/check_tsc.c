/*
 * check_tsc.c - the time module (src/tsc.c): the counter is the producers'
 * clock, the rate estimate is sane and refines consistently, conversions
 * round-trip, invariance matches what the kernel reports, and the stamp
 * overhead is measurable.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/clock.h>

#include "check_main.h"
#include "tsc.h"

#if defined(__x86_64__) || defined(__i386__)
#define ON_X86 1
#else
#define ON_X86 0
#endif

static uint64_t raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

START_TEST(test_counter_monotonic)
{
	uint64_t first = tsc_now(), prev = first, t = 0;
	int i;

	ck_assert_uint_ne(first, 0);
	for (i = 0; i < 100000; i++) {
		t = tsc_now();
		ck_assert_uint_ge(t, prev);
		prev = t;
	}
	ck_assert_uint_gt(t, first);
}
END_TEST

/* tsc_now reads the clock the producer header stamps with. */
START_TEST(test_counter_is_producer_clock)
{
	int i;

	ck_assert_uint_eq(PERFMON_CLOCK, ON_X86 ? PERFMON_CLOCK_TSC : PERFMON_CLOCK_MONOTONIC);
	for (i = 0; i < 1000; i++) {
		uint64_t a = perfmon__now_begin();
		uint64_t t = tsc_now();
		uint64_t b = perfmon__now_end();

		ck_assert_uint_le(a, t);
		ck_assert_uint_le(t, b);
	}
}
END_TEST

START_TEST(test_calibration_range)
{
	struct tsc_clock c;

	tsc_clock_start(&c, 10);
	if (ON_X86) {
		ck_assert_double_ge(tsc_clock_hz(&c), 0.5e9);
		ck_assert_double_le(tsc_clock_hz(&c), 10e9);
		ck_assert_uint_ge(c.span_ns, 10000000);
	} else {
		ck_assert_double_eq(tsc_clock_hz(&c), 1e9);
	}
	ck_assert_uint_ne(c.base_tsc, 0);
	ck_assert_uint_ne(c.base_ns, 0);
	/* A zero calibration time still yields a usable estimate. */
	tsc_clock_start(&c, 0);
	ck_assert_double_gt(tsc_clock_hz(&c), 0.0);
}
END_TEST

/* Refining over a longer span moves the estimate only a little, never
 * backwards in span, and a never-started clock stays unstarted. */
START_TEST(test_refine)
{
	struct tsc_clock c, z;
	uint64_t until;
	double hz0, hz1;

	tsc_clock_start(&c, 10);
	hz0 = tsc_clock_hz(&c);
	until = raw_ns() + 40000000u;
	while (raw_ns() < until)
		;
	tsc_clock_refine(&c);
	hz1 = tsc_clock_hz(&c);
	ck_assert_double_gt(hz1, 0.0);
	ck_assert_double_le(fabs(hz1 - hz0), 0.05 * hz0);
	if (ON_X86)
		ck_assert_uint_ge(c.span_ns, 40000000u);
	tsc_clock_refine(&c);
	ck_assert_double_le(fabs(tsc_clock_hz(&c) - hz0), 0.05 * hz0);

	/* An estimate from a longer span than now available is kept, and so
	 * is one when the clock seems to have gone backwards. */
	z = c;
	z.span_ns = UINT64_MAX / 2;
	z.hz = 1234.0;
	tsc_clock_refine(&z);
	ck_assert_double_eq(tsc_clock_hz(&z), 1234.0);
	z = c;
	z.base_ns = UINT64_MAX / 2;
	z.hz = 1234.0;
	tsc_clock_refine(&z);
	ck_assert_double_eq(tsc_clock_hz(&z), 1234.0);

	memset(&z, 0, sizeof(z));
	tsc_clock_refine(&z);
	ck_assert_double_eq(tsc_clock_hz(&z), 0.0);
}
END_TEST

START_TEST(test_conversions)
{
	struct tsc_clock c, z;
	double hz;
	uint64_t ticks;

	tsc_clock_start(&c, 10);
	hz = tsc_clock_hz(&c);
	ck_assert_double_le(fabs(tsc_to_ns(&c, hz) - 1e9), 1e6);
	ck_assert_double_eq(tsc_to_ns(&c, 0), 0.0);
	ticks = tsc_ns_to_ticks(&c, 1000000000u);
	ck_assert_double_le(fabs((double)ticks - hz), 1.0);
	ck_assert_double_le(fabs(tsc_to_ns(&c, (double)tsc_ns_to_ticks(&c, 5000000u)) - 5e6), 1.0);
	ck_assert_uint_eq(tsc_ns_to_ticks(&c, 0), 0);
	if (hz > 1e9)
		ck_assert_uint_eq(tsc_ns_to_ticks(&c, UINT64_MAX), UINT64_MAX);

	/* Before tsc_clock_start nothing converts. */
	memset(&z, 0, sizeof(z));
	ck_assert_double_eq(tsc_clock_hz(&z), 0.0);
	ck_assert_double_eq(tsc_to_ns(&z, 12345), 0.0);
	ck_assert_uint_eq(tsc_ns_to_ticks(&z, 12345), 0);
}
END_TEST

/* A 50 ms sleep measured in ticks comes out as 50 ms (sleeps only overrun). */
START_TEST(test_sleep_span)
{
	struct timespec req = { 0, 50000000 }, rem;
	struct tsc_clock c;
	uint64_t t0, t1;
	double ns;

	tsc_clock_start(&c, 10);
	t0 = tsc_now();
	while (nanosleep(&req, &rem) < 0 && errno == EINTR)
		req = rem;
	t1 = tsc_now();
	ns = tsc_to_ns(&c, (double)(t1 - t0));
	ck_assert_double_ge(ns, 0.95 * 50e6);
	ck_assert_double_le(ns, 5.0 * 50e6);
}
END_TEST

/* The kernel sets constant_tsc and nonstop_tsc from the same CPUID bit. */
START_TEST(test_invariant_matches_cpuinfo)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	bool constant = false, nonstop = false, seen = false;

	if (!ON_X86) {
		ck_assert(!tsc_invariant());
		if (f)
			fclose(f);
		return;
	}
	ck_assert_ptr_nonnull(f);
	while (!seen && fgets(line, sizeof(line), f)) {
		char *tok, *save;

		if (strncmp(line, "flags", 5) != 0)
			continue;
		seen = true;
		for (tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
			constant |= strcmp(tok, "constant_tsc") == 0;
			nonstop |= strcmp(tok, "nonstop_tsc") == 0;
		}
	}
	fclose(f);
	ck_assert(seen);
	ck_assert_int_eq(tsc_invariant(), constant && nonstop);
}
END_TEST

/* The kernel's verdict on the TSCs, as the daemon reads it at start. */
START_TEST(test_clocksource)
{
	char path[] = "/tmp/check_tsc_cs.XXXXXX", name[64];
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs("tsc\n", f);
	fclose(f);
	ck_assert_int_eq(tsc_clocksource(path, name, sizeof(name)), 1);
	ck_assert_str_eq(name, "tsc");
	f = fopen(path, "w");
	fputs("hpet\n", f);
	fclose(f);
	ck_assert_int_eq(tsc_clocksource(path, name, sizeof(name)), 0);
	ck_assert_str_eq(name, "hpet");
	f = fopen(path, "w");   /* empty: unreadable, not a verdict */
	fclose(f);
	ck_assert_int_lt(tsc_clocksource(path, name, sizeof(name)), 0);
	unlink(path);
	ck_assert_int_eq(tsc_clocksource(path, name, sizeof(name)), -ENOENT);
	ck_assert_str_eq(name, "");
}
END_TEST

START_TEST(test_overhead)
{
	uint64_t o = tsc_measure_overhead(1000);

	ck_assert_uint_gt(o, 0);
	ck_assert_uint_lt(o, 100000);
	/* Fewer pairs than the minimum are raised to it. */
	o = tsc_measure_overhead(1);
	ck_assert_uint_gt(o, 0);
	ck_assert_uint_lt(o, 100000);
}
END_TEST

static Suite *tsc_suite(void)
{
	Suite *s = suite_create("tsc");
	TCase *tc = tcase_create("tsc");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_counter_monotonic);
	tcase_add_test(tc, test_counter_is_producer_clock);
	tcase_add_test(tc, test_calibration_range);
	tcase_add_test(tc, test_refine);
	tcase_add_test(tc, test_conversions);
	tcase_add_test(tc, test_sleep_span);
	tcase_add_test(tc, test_invariant_matches_cpuinfo);
	tcase_add_test(tc, test_overhead);
	tcase_add_test(tc, test_clocksource);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(tsc_suite());
}
