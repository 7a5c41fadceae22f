/*
 * check_names.c - the shared name table: publish, republish, conflicts,
 * full table, over-long labels, generation counter, bulk publishing, a
 * cross-process race for one key, and the daemon's sanitising cache.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <perfmon.h>

#include "check_main.h"
#include "names.h"
#include "testutil.h"

static struct shm_instance inst;

static void setup(void)
{
	test_create(test_shm_name("names"), 64, 8, &inst);
	ck_assert_int_eq(perfmon_attach(inst.name), 0);
}

static void teardown(void)
{
	perfmon_detach();
	test_destroy(&inst);
}

START_TEST(test_publish_and_lookup)
{
	struct name_cache c;
	ck_assert_int_eq(name_cache_init(&c, inst.max_names), 0);
	ck_assert_int_eq(perfmon_name(7, 0, "tick_to_trade"), 0);
	ck_assert_int_eq(perfmon_name(7, 2, "decode"), 0);
	ck_assert_uint_eq(inst.meta->name_generation, 2);
	ck_assert(name_cache_refresh(&c, inst.meta, inst.names, inst.max_names));
	ck_assert_str_eq(name_cache_lookup(&c, 7, 0), "tick_to_trade");
	ck_assert_str_eq(name_cache_lookup(&c, 7, 2), "decode");
	ck_assert_ptr_null(name_cache_lookup(&c, 7, 1));
	ck_assert_ptr_null(name_cache_lookup(&c, 8, 0));
	/* Unchanged generation: no reload. */
	ck_assert(!name_cache_refresh(&c, inst.meta, inst.names, inst.max_names));
	ck_assert_int_eq(perfmon_name(9, 0, "late"), 0);
	ck_assert(name_cache_refresh(&c, inst.meta, inst.names, inst.max_names));
	ck_assert_str_eq(name_cache_lookup(&c, 9, 0), "late");
	name_cache_free(&c);
}
END_TEST

START_TEST(test_republish_and_conflict)
{
	ck_assert_int_eq(perfmon_name(1, 0, "alpha"), 0);
	ck_assert_int_eq(perfmon_name(1, 0, "alpha"), 0);      /* same label: fine */
	ck_assert_uint_eq(inst.meta->name_generation, 1);     /* no new slot */
	ck_assert_uint_eq(inst.meta->name_conflicts, 0);
	ck_assert_int_eq(perfmon_name(1, 0, "beta"), -EEXIST); /* first wins */
	ck_assert_int_eq(perfmon_name(1, 0, "alph"), -EEXIST); /* prefix is not equal */
	ck_assert_uint_eq(inst.meta->name_conflicts, 2);
	ck_assert_str_eq(inst.names[0].label, "alpha");
	ck_assert_uint_eq(inst.names[1].key, 0);
}
END_TEST

START_TEST(test_full_and_too_long)
{
	char label[PERFMON_LABEL_SIZE + 1];
	for (uint32_t p = 0; p < 8; p++)
		ck_assert_int_eq(perfmon_name(p, 1, "x"), 0);
	ck_assert_int_eq(perfmon_name(100, 0, "y"), -ENOSPC);
	ck_assert_int_eq(perfmon_name(3, 1, "x"), 0);          /* existing still found */
	memset(label, 'l', PERFMON_LABEL_SIZE);
	label[PERFMON_LABEL_SIZE] = '\0';
	ck_assert_int_eq(perfmon_name(3, 1, label), -ENAMETOOLONG);
	ck_assert_int_eq(perfmon_name(1, 0, ""), -EINVAL);
	ck_assert_uint_eq(inst.meta->name_conflicts, 2);
}
END_TEST

START_TEST(test_longest_label_fits)
{
	char label[PERFMON_LABEL_SIZE];
	struct name_cache c;
	memset(label, 'm', sizeof(label) - 1);
	label[sizeof(label) - 1] = '\0';
	ck_assert_int_eq(perfmon_name(2, 0, label), 0);        /* 63 bytes: never truncated */
	ck_assert_int_eq(name_cache_init(&c, inst.max_names), 0);
	name_cache_refresh(&c, inst.meta, inst.names, inst.max_names);
	ck_assert_str_eq(name_cache_lookup(&c, 2, 0), label);
	name_cache_free(&c);
}
END_TEST

static const char *name_of(uint32_t point, uint8_t step)
{
	static const char *tab[3][4] = {
		{ "p0", NULL, "p0.two", NULL },
		{ NULL, "", NULL, "p1.three" },
		{ "p2", NULL, NULL, NULL },
	};
	return step < 4 ? tab[point][step] : NULL;
}

static const char *name_of_conflicting(uint32_t point, uint8_t step)
{
	return point == 0 && step == 0 ? "other" : NULL;
}

START_TEST(test_publish_names_bulk)
{
	ck_assert_int_eq(perfmon_publish_names(3, name_of), 0);
	ck_assert_uint_eq(inst.meta->name_generation, 4);
	ck_assert_int_eq(perfmon_publish_names(3, name_of), 0);      /* idempotent */
	ck_assert_uint_eq(inst.meta->name_generation, 4);
	ck_assert_int_eq(perfmon_publish_names(1, name_of_conflicting), 1);
	ck_assert_int_eq(perfmon_publish_names(3, NULL), 0);
}
END_TEST

START_TEST(test_race_between_processes)
{
	enum { KEYS = 300 };
	pid_t pid[2];
	const char *label[2] = { "alpha", "beta" };
	uint32_t slots = 0;
	struct shm_instance big;

	perfmon_detach();
	test_create(test_shm_name("race"), 64, KEYS, &big);
	for (int c = 0; c < 2; c++) {
		pid[c] = fork();
		ck_assert_int_ge(pid[c], 0);
		if (pid[c] == 0) {
			if (perfmon_attach(big.name) < 0)
				_exit(2);
			for (uint32_t k = 0; k < KEYS; k++)
				perfmon_name(k, 0, label[c]);
			_exit(0);
		}
	}
	for (int c = 0; c < 2; c++) {
		int st;
		ck_assert_int_eq(waitpid(pid[c], &st, 0), pid[c]);
		ck_assert_int_eq(WEXITSTATUS(st), 0);
	}
	for (uint32_t i = 0; i < KEYS; i++)
		if (big.names[i].key)
			slots++;
	/* Exactly one slot and exactly one conflict per key. */
	ck_assert_uint_eq(slots, KEYS);
	ck_assert_uint_eq(big.meta->name_conflicts, KEYS);
	ck_assert_uint_eq(big.meta->name_generation, KEYS);
	test_destroy(&big);
}
END_TEST

START_TEST(test_cache_skips_claimed_and_malformed)
{
	struct name_cache c;
	ck_assert_int_eq(name_cache_init(&c, inst.max_names), 0);
	inst.names[0].key = PERFMON_NAME_KEY(1, 0) | PERFMON_NAME_CLAIMED;
	strcpy(inst.names[0].label, "half");
	inst.names[1].key = UINT64_C(1) << 50;                   /* point beyond 32 bits */
	strcpy(inst.names[1].label, "bogus");
	inst.names[2].key = PERFMON_NAME_KEY(2, 0);
	memset(inst.names[2].label, 'z', PERFMON_LABEL_SIZE);   /* no terminator */
	inst.names[3].key = PERFMON_NAME_KEY(2, 0);              /* duplicate: first wins */
	strcpy(inst.names[3].label, "dup");
	inst.meta->name_generation++;
	name_cache_refresh(&c, inst.meta, inst.names, inst.max_names);
	ck_assert_ptr_null(name_cache_lookup(&c, 1, 0));
	ck_assert_uint_eq(strlen(name_cache_lookup(&c, 2, 0)), PERFMON_LABEL_SIZE - 1);
	ck_assert_uint_eq(c.count, 1);
	name_cache_free(&c);
}
END_TEST

START_TEST(test_sanitize)
{
	char out[PERFMON_LABEL_SIZE];
	name_sanitize(out, "plain label, \"quoted\"", sizeof(out));
	ck_assert_str_eq(out, "plain label, \"quoted\"");
	name_sanitize(out, "esc\x1b[31mred\n\r\t\x7f", sizeof(out));
	ck_assert_str_eq(out, "esc?[31mred????");
	name_sanitize(out, "caf\xc3\xa9 \xe2\x82\xac", sizeof(out));    /* valid UTF-8 kept */
	ck_assert_str_eq(out, "caf\xc3\xa9 \xe2\x82\xac");
	name_sanitize(out, "bad\xc3(\xff\xc0\xaf\xed\xa0\x80", sizeof(out));
	ck_assert_str_eq(out, "bad?(??????");  /* one ? per bad byte */
	name_sanitize(out, "c1\xc2\x9b", sizeof(out));                 /* C1 CSI */
	ck_assert_str_eq(out, "c1??");
	name_sanitize(out, "abcdef", 4);
	ck_assert_str_eq(out, "abc");
	name_sanitize(out, "ab\xe2\x82", sizeof(out));                  /* cut sequence */
	ck_assert_str_eq(out, "ab??");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("table");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_publish_and_lookup);
	tcase_add_test(tc, test_republish_and_conflict);
	tcase_add_test(tc, test_full_and_too_long);
	tcase_add_test(tc, test_longest_label_fits);
	tcase_add_test(tc, test_publish_names_bulk);
	tcase_add_test(tc, test_race_between_processes);
	tcase_add_test(tc, test_cache_skips_claimed_and_malformed);
	tcase_add_test(tc, test_sanitize);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return check_run(s);
}
