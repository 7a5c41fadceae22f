/*
 * check_stamp_cpu.c - the CPU number a stamp picks its sub-ring by
 * (perfmon__cpu in <perfmon/stamp.h>) is the CPU the thread runs on, on
 * every CPU this process may use, or 0 for all of them where glibc did not
 * register rseq.  Built twice: with the headers' PERFMON_RSEQ_OFFSET_HINT,
 * and with a hint no glibc can match (check_stamp_cpu_unhinted), so that
 * both ways of reading it are tried.  stamp_cpu_no_rseq.sh runs both with
 * rseq turned off.
 */
#include "build-config.h"

#include <check.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <perfmon/stamp.h>

#include "check_main.h"

#ifdef PERFMON__HAVE_RSEQ
#include <sys/rseq.h>
#define RSEQ_REGISTERED (__rseq_size > 0)
#else
#define RSEQ_REGISTERED 0
#endif

START_TEST(test_cpu_is_the_one_we_run_on)
{
	cpu_set_t allowed, one;
	unsigned tried = 0;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
		sched_yield();
		for (int i = 0; i < 1000; i++) {
			uint32_t seen = perfmon__cpu();

			ck_assert_int_eq(sched_getcpu(), cpu);
			ck_assert_uint_eq(seen, RSEQ_REGISTERED ? (uint32_t)cpu : 0);
		}
		tried++;
	}
	ck_assert_uint_gt(tried, 0);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(allowed), &allowed), 0);
}
END_TEST

#if defined(PERFMON_UNHINTED) && defined(PERFMON__HAVE_RSEQ)
/* The hint of this build is one no glibc has (the area is 32-byte
 * aligned): every read above went the way that loads the offset first. */
START_TEST(test_hint_not_taken)
{
	ck_assert_int_ne(__rseq_offset, PERFMON_RSEQ_OFFSET_HINT);
}
END_TEST
#endif

int main(void)
{
	Suite *s = suite_create("stamp_cpu");
	TCase *tc = tcase_create("cpu");

	tcase_add_test(tc, test_cpu_is_the_one_we_run_on);
#if defined(PERFMON_UNHINTED) && defined(PERFMON__HAVE_RSEQ)
	tcase_add_test(tc, test_hint_not_taken);
#endif
	suite_add_tcase(s, tc);
	return check_run(s);
}
