/*
 * check_producer.c - the producer API of <perfmon.h> against real
 * segments: attach errors, event encoding, enable/disable, detach, scope
 * guards, load-time attach in a child process, several threads and
 * processes with exact counts, and a hole left by a dying producer.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <perfmon.h>

#include "check_main.h"
#include "ring_reader.h"
#include "testutil.h"

/* True when every sub-ring has been read up to its current head. */
static bool caught_up(const struct ring_reader *rd)
{
	if (rd->in_pass)
		return false;
	for (uint32_t k = 0; k < rd->nsub; k++)
		if (rd->sub[k].nholes ||
		    rd->sub[k].tail != __atomic_load_n(&PERFMON_SUBRING(rd->hdr, k)->head, __ATOMIC_ACQUIRE))
			return false;
	return true;
}

static size_t drain_step(struct ring_reader *rd, struct perfmon_event *out, size_t max)
{
	uint64_t wm = perfmon__now_begin();
	return ring_drain_batch(rd, out, max, test_now_ns(), wm);
}

/* Drain everything reserved so far, including spans the merge would still
 * hold back; returns the number of events written to `out`. */
static size_t drain_all(struct shm_instance *inst, struct ring_reader *rd,
			struct perfmon_event *out, size_t max)
{
	uint64_t deadline = test_now_ns() + 5000000000u;
	struct ring_batch b;
	bool released = false;
	size_t n = 0, k;

	while (n < max && test_now_ns() < deadline) {
		k = drain_step(rd, out + n, max - n);
		n += k;
		if (k == 0 && caught_up(rd)) {
			if (released)
				break;
			/* hand out what the merge holds back; the next steps
			 * copy it out */
			ring_reader_release_all(rd, &b);
			released = true;
		}
	}
	(void)inst;
	return n;
}

/* A reader from index 0 of every sub-ring of `inst`. */
static void reader_start(struct ring_reader *rd, struct shm_instance *inst, uint64_t stall)
{
	uint64_t *zeros = calloc(inst->subrings, sizeof(*zeros));
	ck_assert_ptr_nonnull(zeros);
	ck_assert_int_eq(ring_reader_init(rd, inst->ring, inst->subrings, inst->capacity, zeros,
					  1000000, stall), 0);
	ring_reader_clock(rd, test_now_ns);
	free(zeros);
}

static const char *segtool(void)
{
	static char path[1024];
	const char *b = getenv("top_builddir");
	snprintf(path, sizeof(path), "%s/tests/tools/segtool", b ? b : ".");
	return path;
}

/* Run segtool with extra environment; returns its exit status. */
static int run_segtool(const char *env1, const char *env2, char *const args[])
{
	pid_t pid = fork();
	int status;
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		unsetenv("SLICK_PERFMON_SHM");
		unsetenv("SLICK_PERFMON_DISABLE");
		if (env1)
			putenv((char *)env1);
		if (env2)
			putenv((char *)env2);
		freopen("/dev/null", "w", stdout);
		execv(segtool(), args);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_attach_missing_creates_nothing)
{
	const char *name = test_shm_name("missing");
	ck_assert_int_eq(perfmon_attach(name), -ENOENT);
	ck_assert(!test_segment_exists(name, ""));
	ck_assert(!test_segment_exists(name, ".meta"));
	ck_assert(!perfmon_enabled());
	perfmon_begin(1, 1);   /* harmless */
	perfmon_end(1, 1);
}
END_TEST

START_TEST(test_attach_bad_names)
{
	char longname[256];
	ck_assert_int_eq(perfmon_attach(""), -EINVAL);
	ck_assert_int_eq(perfmon_attach(".dot"), -EINVAL);
	ck_assert_int_eq(perfmon_attach("a/b"), -EINVAL);
	ck_assert_int_eq(perfmon_attach("tab\tname"), -EINVAL);
	ck_assert_int_eq(perfmon_attach("x.meta"), -EINVAL);
	ck_assert_int_eq(perfmon_attach("x.metal"), -ENOENT);   /* valid, absent */
	unsetenv("SLICK_PERFMON_SHM");
	ck_assert_int_eq(perfmon_attach(NULL), -EINVAL);
	memset(longname, 'a', 201);
	longname[201] = '\0';
	ck_assert_int_eq(perfmon_attach(longname), -ENAMETOOLONG);
	longname[200] = '\0';
	ck_assert_int_eq(perfmon_attach(longname), -ENOENT);   /* 200 is allowed */
}
END_TEST

START_TEST(test_attach_incompatible)
{
	struct shm_instance inst;
	const char *name = test_shm_name("eproto");
	test_create(name, 64, 8, &inst);
	inst.ring->magic ^= 0xff;
	ck_assert_int_eq(perfmon_attach(name), -EPROTO);
	inst.ring->magic ^= 0xff;
	inst.ring->version = PERFMON_LAYOUT_VERSION + 1;
	ck_assert_int_eq(perfmon_attach(name), -EPROTO);
	/* the shared-ring layouts: 1, and 2 with the producer registry */
	inst.ring->version = 1;
	ck_assert_int_eq(perfmon_attach(name), -EPROTO);
	inst.ring->version = inst.meta->version = 2;
	ck_assert_int_eq(perfmon_attach(name), -EPROTO);
	inst.meta->version = PERFMON_LAYOUT_VERSION;
	inst.ring->version = PERFMON_LAYOUT_VERSION;
	inst.meta->version = 2;
	ck_assert_int_eq(perfmon_attach(name), -EPROTO);
	inst.meta->version = PERFMON_LAYOUT_VERSION;
	inst.ring->version = PERFMON_LAYOUT_VERSION;
	inst.meta->magic = 0x1234;
	ck_assert_int_eq(perfmon_attach(name), -EPROTO);
	inst.meta->magic = PERFMON_META_MAGIC;
	inst.meta->instance_id++;
	ck_assert_int_eq(perfmon_attach(name), -EPROTO);
	inst.meta->instance_id--;
	ck_assert(!perfmon_enabled());
	ck_assert_int_eq(perfmon_attach(name), 0);
	ck_assert(perfmon_enabled());
	perfmon_detach();
	test_destroy(&inst);
}
END_TEST

START_TEST(test_disable_env_refuses)
{
	struct shm_instance inst;
	const char *name = test_shm_name("disenv");
	test_create(name, 64, 8, &inst);
	setenv("SLICK_PERFMON_DISABLE", "1", 1);
	ck_assert_int_eq(perfmon_attach(name), -ECANCELED);
	setenv("SLICK_PERFMON_DISABLE", "0", 1);
	ck_assert_int_eq(perfmon_attach(name), 0);
	perfmon_detach();
	unsetenv("SLICK_PERFMON_DISABLE");
	test_destroy(&inst);
}
END_TEST

START_TEST(test_event_encoding)
{
	struct shm_instance inst;
	struct ring_reader rd;
	struct perfmon_event ev[16];
	const char *name = test_shm_name("enc");

	test_create(name, 1024, 8, &inst);
	ck_assert_int_eq(perfmon_attach(name), 0);
	reader_start(&rd, &inst, 1000000000);
	perfmon_begin(7, 0x1ABCDEF);                 /* seq keeps its low 24 bits */
	perfmon_step(7, 3, 0x1ABCDEF);
	perfmon_step(7, PERFMON_MAX_SPAN_STEP, 5);
	perfmon_end(7, 0xFFFFFFFF);
	perfmon_value(9, UINT64_MAX);
	perfmon_value(9, 0);
	ck_assert_uint_eq(drain_all(&inst, &rd, ev + 2, 14), 6);
	/* Value samples come out as found, spans after the time-ordered
	 * merge: move the two values to the end to check all in one order. */
	memcpy(ev + 8, ev + 2, 2 * sizeof(ev[0]));
	memmove(ev, ev + 4, 4 * sizeof(ev[0]));
	memcpy(ev + 4, ev + 8, 2 * sizeof(ev[0]));
	ck_assert_uint_eq(ev[0].point, 7);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(ev[0].event), PERFMON_BEGIN_STEP);
	ck_assert_uint_eq(PERFMON_EVENT_SEQ(ev[0].event), 0xABCDEF);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(ev[1].event), 3);
	ck_assert_uint_eq(PERFMON_EVENT_SEQ(ev[1].event), 0xABCDEF);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(ev[2].event), PERFMON_MAX_SPAN_STEP);
	ck_assert_uint_eq(PERFMON_EVENT_SEQ(ev[2].event), 5);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(ev[3].event), PERFMON_END_STEP);
	ck_assert_uint_eq(PERFMON_EVENT_SEQ(ev[3].event), PERFMON_MAX_SEQ);
	ck_assert_uint_le(ev[0].tsc, ev[1].tsc);     /* timestamps in program order */
	ck_assert_uint_le(ev[1].tsc, ev[2].tsc);
	ck_assert_uint_le(ev[2].tsc, ev[3].tsc);
	ck_assert_uint_gt(ev[0].tsc, 0);
	ck_assert_uint_eq(ev[4].point, 9);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(ev[4].event), PERFMON_VALUE_STEP);
	ck_assert_uint_eq(ev[4].tsc, UINT64_MAX);
	ck_assert_uint_eq(ev[5].tsc, 0);
	ck_assert_uint_eq(PERFMON_EVENT(0x7F, PERFMON_MAX_SEQ + 1), 0x7F);
	ck_assert_uint_eq(PERFMON_EVENT(0xFF, 0xFFFFFFFFu), 0xFFFFFFFFu);
	perfmon_detach();
	ring_reader_free(&rd);
	test_destroy(&inst);
}
END_TEST

/* Whether page `addr` is mapped in this process's page table, from
 * /proc/self/pagemap (bit 63; readable without privileges). */
static bool page_present(int fd, const void *addr)
{
	uint64_t e = 0;
	off_t off = (off_t)((uintptr_t)addr / 4096 * sizeof(e));

	ck_assert_int_eq(pread(fd, &e, sizeof(e), off), (ssize_t)sizeof(e));
	return e >> 63;
}

START_TEST(test_first_lap_takes_no_page_faults)
{
	/* 2 sub-rings of 32Ki slots: 2 MiB, 512 pages of slots. */
	const uint32_t nsub = 2;
	const uint64_t cap = UINT64_C(1) << 15;
	const size_t bytes = PERFMON_RING_BYTES(nsub, cap), pages = bytes / 4096;
	const char *name = test_shm_name("lap");
	struct shm_instance inst;
	size_t absent = 0;
	int fd;

	test_create_sub(name, nsub, cap, 8, &inst);
	ck_assert_int_eq(perfmon_attach(name), 0);
	/* Attach maps every page of the ring into this process... */
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < pages; i++)
		absent += !page_present(fd, (const char *)perfmon__g.ring + i * 4096);
	close(fd);
	ck_assert_msg(absent == 0, "%zu of %zu pages of the ring not mapped after attach",
		      absent, pages);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	{
		/* ...writable, so that a full lap of both sub-rings, whichever
		 * CPU each stamp runs on, takes no page fault: without it each
		 * page faults on its first stamp.  (A sanitizer's shadow memory
		 * faults on its own, hence not in those builds.) */
		struct rusage a, b;
		long faults;

		ck_assert_int_eq(getrusage(RUSAGE_THREAD, &a), 0);
		for (uint64_t i = 0; i < 2 * nsub * cap; i++)
			perfmon_value(3, i);
		ck_assert_int_eq(getrusage(RUSAGE_THREAD, &b), 0);
		faults = b.ru_minflt - a.ru_minflt + b.ru_majflt - a.ru_majflt;
		ck_assert_msg(faults < (long)pages / 8, "%ld page faults stamping the first lap "
			      "of a %zu-page ring", faults, pages);
	}
#endif
	perfmon_detach();
	test_destroy(&inst);
}
END_TEST

START_TEST(test_enable_disable_detach)
{
	struct shm_instance inst;
	struct ring_reader rd;
	struct perfmon_event ev[512];
	const char *name = test_shm_name("onoff");

	test_create(name, 1024, 8, &inst);
	ck_assert_int_eq(perfmon_attach(name), 0);
	reader_start(&rd, &inst, 1000000000);
	for (int i = 0; i < 100; i++)
		perfmon_value(1, 1);
	perfmon_set_enabled(false);
	ck_assert(!perfmon_enabled());
	for (int i = 0; i < 100; i++)
		perfmon_value(1, 1);
	ck_assert_uint_eq(drain_all(&inst, &rd, ev, 512), 100);
	perfmon_set_enabled(true);
	ck_assert(perfmon_enabled());
	for (int i = 0; i < 50; i++)
		perfmon_value(1, 1);
	ck_assert_uint_eq(drain_all(&inst, &rd, ev, 512), 50);
	perfmon_detach();
	ck_assert(!perfmon_enabled());
	perfmon_value(1, 1);    /* a no-op, and no crash on the retired mapping */
	ck_assert_uint_eq(drain_all(&inst, &rd, ev, 512), 0);
	ck_assert_int_eq(perfmon_name(1, 0, "x"), -ENOTCONN);
	/* Disabled before attaching: attach keeps it off until re-enabled. */
	perfmon_set_enabled(false);
	ck_assert_int_eq(perfmon_attach(name), 0);
	ck_assert(!perfmon_enabled());
	perfmon_set_enabled(true);
	ck_assert(perfmon_enabled());
	perfmon_detach();
	ring_reader_free(&rd);
	test_destroy(&inst);
}
END_TEST

static int scope_body(int early)
{
	PERFMON_SCOPE_SEQ(4, 77);
	if (early)
		return 1;
	{
		PERFMON_SCOPE(5);
		PERFMON_SCOPE(6);       /* two guards in one block */
	}
	return 0;
}

START_TEST(test_scope_guard)
{
	struct shm_instance inst;
	struct ring_reader rd;
	struct perfmon_event ev[16];
	const char *name = test_shm_name("scope");

	test_create(name, 1024, 8, &inst);
	ck_assert_int_eq(perfmon_attach(name), 0);
	reader_start(&rd, &inst, 1000000000);
	scope_body(1);
	ck_assert_uint_eq(drain_all(&inst, &rd, ev, 16), 2);
	ck_assert_uint_eq(ev[0].point, 4);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(ev[0].event), PERFMON_BEGIN_STEP);
	ck_assert_uint_eq(PERFMON_EVENT_SEQ(ev[0].event), 77);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(ev[1].event), PERFMON_END_STEP);
	ck_assert_uint_eq(PERFMON_EVENT_SEQ(ev[1].event), 77);
	scope_body(0);
	ck_assert_uint_eq(drain_all(&inst, &rd, ev, 16), 6);
	/* begin 4, begin 5, begin 6, end 6, end 5, end 4: true nesting */
	ck_assert_uint_eq(ev[1].point, 5);
	ck_assert_uint_eq(ev[2].point, 6);
	ck_assert_uint_eq(ev[3].point, 6);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(ev[3].event), PERFMON_END_STEP);
	ck_assert_uint_eq(ev[4].point, 5);
	ck_assert_uint_eq(ev[5].point, 4);
	perfmon_detach();
	ring_reader_free(&rd);
	test_destroy(&inst);
}
END_TEST

START_TEST(test_auto_attach_from_environment)
{
	struct shm_instance inst;
	const char *name = test_shm_name("auto");
	char env[256], *argv_[] = { "segtool", "autostamp", "3", "500", NULL };
	struct ring_reader rd;
	static struct perfmon_event ev[4096];
	size_t n;

	test_create(name, 4096, 8, &inst);
	snprintf(env, sizeof(env), "SLICK_PERFMON_SHM=%s", name);
	ck_assert_int_eq(run_segtool(env, NULL, argv_), 0);
	reader_start(&rd, &inst, 1000000000);
	n = drain_all(&inst, &rd, ev, 4096);
	ck_assert_uint_eq(n, 1000);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(ev[i].point, 3);
	/* SLICK_PERFMON_DISABLE wins over SLICK_PERFMON_SHM. */
	ck_assert_int_eq(run_segtool(env, "SLICK_PERFMON_DISABLE=1", argv_), 3);
	ck_assert_uint_eq(ring_reader_head(&rd), 1000);
	/* Unset: nothing attached, nothing created. */
	ck_assert_int_eq(run_segtool(NULL, NULL, argv_), 3);
	ring_reader_free(&rd);
	test_destroy(&inst);
}
END_TEST

struct thr_arg {
	uint32_t point;
	unsigned pairs;
};

static void *thr_stamp(void *p)
{
	struct thr_arg *a = p;
	for (unsigned i = 0; i < a->pairs; i++) {
		perfmon_begin(a->point, i);
		perfmon_step(a->point, 1, i);
		perfmon_end(a->point, i);
	}
	return NULL;
}

START_TEST(test_threads_exact_counts)
{
	/* 4 x 40000 x 3 = 480,000 events fit in one sub-ring of 2^19 slots:
	 * whatever the scheduler does (all four threads on one CPU while the
	 * other runs another test), no sub-ring can be lapped, so any drop
	 * is a bug. */
	enum { T = 4, PAIRS = 40000 };
	struct shm_instance inst;
	struct ring_reader rd;
	struct thr_arg args[T];
	pthread_t th[T];
	uint64_t count[T] = { 0 };
	static struct perfmon_event ev[4096];
	const char *name = test_shm_name("threads");
	uint64_t total = (uint64_t)T * PAIRS * 3;

	/* One sub-ring per CPU of this machine: four threads share them. */
	test_create_sub(name, 4, 1u << 19, 8, &inst);
	ck_assert_int_eq(perfmon_attach(name), 0);
	/* A producer preempted between reserving and publishing is not dead:
	 * on a loaded machine that can last longer than any sensible stall
	 * timeout, so this test allows minutes (~400 s of ticks). */
	reader_start(&rd, &inst, UINT64_C(1) << 40);
	for (int t = 0; t < T; t++) {
		args[t] = (struct thr_arg){ (uint32_t)t, PAIRS };
		pthread_create(&th[t], NULL, thr_stamp, &args[t]);
	}
	while (rd.read + rd.dropped + rd.stalled < total) {
		size_t n = drain_step(&rd, ev, 4096);
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_lt(ev[i].point, T);
			count[ev[i].point]++;
		}
	}
	/* Every stamp published, then the spans the merge still held back. */
	for (int t = 0; t < T; t++)
		pthread_join(th[t], NULL);
	for (size_t n; (n = drain_all(&inst, &rd, ev, 4096)) > 0;)
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_lt(ev[i].point, T);
			count[ev[i].point]++;
		}
	ck_assert_uint_eq(rd.dropped, 0);
	ck_assert_uint_eq(rd.stalled, 0);
	for (int t = 0; t < T; t++)
		ck_assert_uint_eq(count[t], (uint64_t)PAIRS * 3);
	perfmon_detach();
	ring_reader_free(&rd);
	test_destroy(&inst);
}
END_TEST

START_TEST(test_processes_exact_counts)
{
	struct shm_instance inst;
	struct ring_reader rd;
	static struct perfmon_event ev[4096];
	const char *name = test_shm_name("procs");
	uint64_t count[3] = { 0 };
	pid_t pid[2];

	test_create(name, 1u << 20, 8, &inst);
	reader_start(&rd, &inst, 1000000000);
	for (int p = 0; p < 2; p++) {
		char point[8];
		snprintf(point, sizeof(point), "%d", p + 1);
		pid[p] = fork();
		ck_assert_int_ge(pid[p], 0);
		if (pid[p] == 0) {
			execl(segtool(), "segtool", "stamp", name, point, "100000", (char *)NULL);
			_exit(127);
		}
	}
	for (int p = 0; p < 2; p++) {
		int st;
		ck_assert_int_eq(waitpid(pid[p], &st, 0), pid[p]);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	while (rd.read + rd.dropped + rd.stalled < 400000) {
		size_t n = drain_step(&rd, ev, 4096);
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_lt(ev[i].point, 3);
			count[ev[i].point]++;
		}
	}
	for (size_t n; (n = drain_all(&inst, &rd, ev, 4096)) > 0;)
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_lt(ev[i].point, 3);
			count[ev[i].point]++;
		}
	ck_assert_uint_eq(count[1], 200000);
	ck_assert_uint_eq(count[2], 200000);
	ck_assert_uint_eq(rd.dropped, 0);
	ring_reader_free(&rd);
	test_destroy(&inst);
}
END_TEST

START_TEST(test_hole_from_dead_producer)
{
	struct shm_instance inst;
	struct ring_reader rd;
	static struct perfmon_event ev[4096];
	const char *name = test_shm_name("hole");
	char *hole[] = { "segtool", "hole", (char *)name, NULL };
	char *stamp[] = { "segtool", "stamp", (char *)name, "2", "1000", NULL };
	const uint64_t stall = 300000000;   /* 300 ms */
	uint64_t got = 0, t0;

	test_create(name, 1u << 16, 8, &inst);
	reader_start(&rd, &inst, stall);
	ck_assert_int_eq(run_segtool(NULL, NULL, hole), 0);
	ck_assert_uint_eq(ring_reader_head(&rd), 1);
	ck_assert_int_eq(run_segtool(NULL, NULL, stamp), 0);
	t0 = test_now_ns();
	/* The 2000 events behind the hole arrive long before it times out. */
	while (got < 2000 && test_now_ns() - t0 < stall / 2)
		got += drain_step(&rd, ev, 4096);
	ck_assert_uint_eq(got, 2000);
	ck_assert_uint_eq(rd.stalled, 0);
	ck_assert_uint_eq(rd.sub[0].nholes, 1);
	while (rd.stalled == 0 && test_now_ns() - t0 < 10 * stall)
		got += drain_step(&rd, ev, 4096);
	ck_assert_uint_eq(rd.stalled, 1);
	ck_assert_uint_eq(rd.read, 2000);
	ring_reader_free(&rd);
	test_destroy(&inst);
}
END_TEST

static int stop_stamping;

static void *stamp_until_stopped(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_stamping, __ATOMIC_RELAXED))
		perfmon_value(1, 2);
	return NULL;
}

/* Re-attaching under a stamping thread: a stamp that loaded the old ring
 * must still index it with the old ring's size, never the new one's. */
START_TEST(test_reattach_while_stamping)
{
	struct shm_instance small, big;
	pthread_t th;

	test_create(test_shm_name("small"), 64, 8, &small);
	test_create(test_shm_name("big"), 1u << 16, 8, &big);
	ck_assert_int_eq(perfmon_attach(small.name), 0);
	stop_stamping = 0;
	pthread_create(&th, NULL, stamp_until_stopped, NULL);
	for (int i = 0; i < 300; i++) {
		ck_assert_int_eq(perfmon_attach(big.name), 0);
		ck_assert_int_eq(perfmon_attach(small.name), 0);
	}
	__atomic_store_n(&stop_stamping, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	ck_assert(perfmon_enabled());
	ck_assert_uint_gt(PERFMON_SUBRING(small.ring, 0)->head +
			  PERFMON_SUBRING(big.ring, 0)->head, 0);
	perfmon_detach();
	test_destroy(&small);
	test_destroy(&big);
}
END_TEST

START_TEST(test_no_permission)
{
	struct shm_instance inst;
	const char *name = test_shm_name("perm");
	pid_t pid;
	int st;

	test_create(name, 64, 8, &inst);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		gid_t none[1] = { 65534 };
		if (setgroups(1, none) || setgid(65534) || setuid(65534))
			_exit(2);
		_exit(perfmon_attach(name) == -EACCES ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	test_destroy(&inst);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("producer");
	TCase *tc = tcase_create("api");
	TCase *tx = tcase_create("cross");

	tcase_add_test(tc, test_attach_missing_creates_nothing);
	tcase_add_test(tc, test_attach_bad_names);
	tcase_add_test(tc, test_attach_incompatible);
	tcase_add_test(tc, test_disable_env_refuses);
	tcase_add_test(tc, test_event_encoding);
	tcase_add_test(tc, test_enable_disable_detach);
	tcase_add_test(tc, test_first_lap_takes_no_page_faults);
	tcase_add_test(tc, test_scope_guard);
	tcase_add_test(tx, test_auto_attach_from_environment);
	tcase_add_test(tx, test_threads_exact_counts);
	tcase_add_test(tx, test_processes_exact_counts);
	tcase_add_test(tx, test_hole_from_dead_producer);
	tcase_add_test(tx, test_reattach_while_stamping);
	if (geteuid() == 0)
		tcase_add_test(tx, test_no_permission);
	else
		printf("# test_no_permission not run: it needs root to switch to another user\n");
	tcase_set_timeout(tx, 120);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tx);
	return check_run(s);
}
