/*
 * check_producer_waits.c - no forged state in shared memory holds a
 * producer up: attaching to a control block whose magic a member zeroed,
 * and publishing a label whose key someone left claimed, fail at once with
 * an error.  Each call is repeated many times under the case's timeout, so
 * a wait of the old length (0.7 s per call) would not finish in it, while
 * bounded waits (microseconds) finish in milliseconds.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfmon.h>

#include "testutil.h"

#define ROUNDS 200

START_TEST(test_attach_to_zeroed_magic_fails_fast)
{
	const char *name = test_shm_name("waits-magic");
	struct shm_instance inst;

	test_create(name, 1024, 16, &inst);
	__atomic_store_n(&inst.meta->magic, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < ROUNDS; i++)
		ck_assert_int_eq(perfmon_attach(name), -EPROTO);
	__atomic_store_n(&inst.meta->magic, PERFMON_META_MAGIC, __ATOMIC_RELEASE);
	__atomic_store_n(&inst.ring->magic, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < ROUNDS; i++)
		ck_assert_int_eq(perfmon_attach(name), -EPROTO);
	__atomic_store_n(&inst.ring->magic, PERFMON_RING_MAGIC, __ATOMIC_RELEASE);
	ck_assert_int_eq(perfmon_attach(name), 0);
	perfmon_detach();
	test_destroy(&inst);
}
END_TEST

START_TEST(test_name_on_claimed_key_fails_fast)
{
	const char *name = test_shm_name("waits-claim");
	struct shm_instance inst;

	test_create(name, 1024, 16, &inst);
	/* Every entry claimed for the keys we will ask for, never finished. */
	for (uint32_t i = 0; i < inst.max_names; i++)
		__atomic_store_n(&inst.names[i].key, PERFMON_NAME_KEY(i, 0) | PERFMON_NAME_CLAIMED,
				 __ATOMIC_RELEASE);
	ck_assert_int_eq(perfmon_attach(name), 0);
	for (int i = 0; i < ROUNDS; i++)
		ck_assert_int_eq(perfmon_name((uint32_t)(i % 16), 0, "stuck"), -EEXIST);
	ck_assert_uint_ge(inst.meta->name_conflicts, ROUNDS);
	perfmon_detach();
	test_destroy(&inst);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("producer_waits");
	TCase *tc = tcase_create("waits");
	SRunner *sr;
	int failed;

	/* 200 calls of the old 0.7 s wait: 140 s.  Bounded: milliseconds. */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_attach_to_zeroed_magic_fails_fast);
	tcase_add_test(tc, test_name_on_claimed_key_fails_fast);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
