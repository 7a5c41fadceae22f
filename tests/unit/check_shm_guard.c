/*
 * check_shm_guard.c - a segment shrunk under our mapping: reading it gives
 * zeros instead of SIGBUS, the fault is counted, and the owner restores
 * the size and the mapping; a SIGBUS outside any segment still kills.
 */
#include "build-config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "shm.h"
#include "shm_guard.h"
#include "testutil.h"

static off_t size_of(const char *name, const char *suffix)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof(path), "/dev/shm/%s%s", name, suffix);
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void shrink(const char *name, const char *suffix, off_t len)
{
	char path[256];
	snprintf(path, sizeof(path), "/dev/shm/%s%s", name, suffix);
	ck_assert_int_eq(truncate(path, len), 0);
}

START_TEST(test_reader_survives_and_owner_restores)
{
	const char *name = test_shm_name("guard");
	struct shm_instance own, ro;
	struct shm_restore_report rep;
	char err[512];
	volatile uint64_t v;
	size_t last;

	ck_assert_int_eq(shm_guard_install(), 0);
	test_create(name, 4096, 16, &own);
	ck_assert_int_eq(shm_open_existing(name, false, &ro, err, sizeof(err)), 0);
	last = own.capacity - 1;
	((struct perfmon_slot *)((char *)own.ring + PERFMON_RING_SLOTS_OFFSET(1)))[last].tsc = 42;

	shrink(name, "", 4096);
	shrink(name, ".meta", 0);
	/* Both readers touch what is gone: zeros, counted, no signal. */
	v = ((struct perfmon_slot *)((char *)ro.ring + PERFMON_RING_SLOTS_OFFSET(1)))[last].tsc;
	ck_assert_uint_eq(v, 0);
	v = ro.meta->magic;
	ck_assert_uint_eq(v, 0);
	v = ((struct perfmon_slot *)((char *)own.ring + PERFMON_RING_SLOTS_OFFSET(1)))[last].tsc;
	ck_assert_uint_eq(v, 0);
	ck_assert_uint_ge(shm_guard_total(), 3);

	/* The owner restores the sizes and maps the files again. */
	ck_assert_int_eq(shm_restore(&own, SHM_PART_RING | SHM_PART_META, &rep), 0);
	ck_assert(rep.ring_restored && rep.meta_restored);
	ck_assert_uint_eq(rep.ring_lost_bytes, PERFMON_RING_BYTES(1, 4096) - 4096);
	ck_assert_uint_eq(rep.ring_cut_at, 4096);
	ck_assert_uint_eq(rep.meta_lost_bytes, PERFMON_META_BYTES(16));
	ck_assert_int_eq(size_of(name, ""), (off_t)PERFMON_RING_BYTES(1, 4096));
	ck_assert_int_eq(size_of(name, ".meta"), (off_t)PERFMON_META_BYTES(16));
	ck_assert_uint_gt(shm_repair_meta(&own), 0);
	ck_assert_uint_eq(shm_repair_ring(&own), 0);   /* its header survived the cut */
	/* Writes through the owner's mapping reach the file again. */
	((struct perfmon_slot *)((char *)own.ring + PERFMON_RING_SLOTS_OFFSET(1)))[last].tsc = 7;
	{
		struct shm_instance again;
		ck_assert_msg(shm_open_existing(name, false, &again, err, sizeof(err)) == 0, "%s",
			      err);
		ck_assert_uint_eq(((struct perfmon_slot *)((char *)again.ring +
				   PERFMON_RING_SLOTS_OFFSET(1)))[last].tsc, 7);
		shm_close(&again);
	}
	/* Nothing more to do the second time. */
	ck_assert_int_eq(shm_restore(&own, SHM_PART_RING | SHM_PART_META, &rep), 0);
	ck_assert(!rep.ring_restored && !rep.meta_restored);
	shm_close(&ro);
	test_destroy(&own);
}
END_TEST

/* The owner reopening shrunk segments gets them back at their size, the
 * lost headers written again. */
START_TEST(test_reopen_repairs)
{
	const char *name = test_shm_name("guard-reopen");
	struct shm_geometry g = { 4096, 1, 16, 0660, (gid_t)-1 };
	struct shm_instance inst;
	char err[512];

	test_create(name, 4096, 16, &inst);
	shm_close(&inst);
	shrink(name, "", 0);
	shrink(name, ".meta", 0);
	ck_assert_msg(shm_create_or_open(name, &g, &inst, err, sizeof(err)) == 0, "%s", err);
	ck_assert(inst.repaired & SHM_REPAIRED_SIZE);
	ck_assert(inst.repaired & SHM_REPAIRED_HEADER);
	ck_assert(inst.created);
	ck_assert_uint_eq(inst.capacity, 4096);
	ck_assert_uint_eq(inst.ring->magic, PERFMON_RING_MAGIC);
	ck_assert_int_eq(size_of(name, ""), (off_t)PERFMON_RING_BYTES(1, 4096));
	test_destroy(&inst);
}
END_TEST

/* A SIGBUS that is not in a watched segment keeps its default action. */
START_TEST(test_foreign_sigbus_still_kills)
{
	pid_t child;
	int status;

	ck_assert_int_eq(shm_guard_install(), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		char path[] = "/tmp/pmt-guard-XXXXXX";
		int fd = mkstemp(path);
		volatile char *p;
		unlink(path);
		if (fd < 0 || ftruncate(fd, 4096) < 0)
			_exit(2);
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
			_exit(2);
		(void)p[0];
		_exit(0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	/* Killed by it (a sanitizer's own handler turns it into an abort). */
	ck_assert(WIFSIGNALED(status));
	ck_assert(WTERMSIG(status) == SIGBUS || WTERMSIG(status) == SIGABRT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shm_guard");
	TCase *tc = tcase_create("guard");

	tcase_add_test(tc, test_reader_survives_and_owner_restores);
	tcase_add_test(tc, test_reopen_repairs);
	tcase_add_test(tc, test_foreign_sigbus_still_kills);
	suite_add_tcase(s, tc);
	return check_run(s);
}
