/*
 * check_producer_waits.c - no forged state in shared memory holds a
 * producer up: attaching to a control block (or ring) whose magic a member
 * zeroed, and publishing a label whose key someone left claimed, fail with
 * an error after a bounded wait (PERFMON__WAIT_SPINS pause instructions,
 * microseconds), also before main() when attaching from the environment.
 *
 * Each call is timed in the CPU time of the calling thread: a spin costs
 * CPU time for as long as it lasts, while time spent preempted by another
 * task does not count.  A virtual machine's own pauses do count (the guest
 * cannot tell them from work: here, gaps of up to several milliseconds),
 * and a sanitizer slows the spin loop, so two bounds are asserted: the
 * median call under MEDIAN_BOUND_NS, some five times what a call costs
 * here, and the worst under WORST_BOUND_NS.  The old unbounded waits (0.7 s
 * per call) exceed both many times over.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <perfmon.h>

#include "check_main.h"
#include "testutil.h"

#define ROUNDS 200
#define MEDIAN_BOUND_NS 1000000ull        /* the median call */
#define WORST_BOUND_NS 50000000ull        /* any call */
#define MAIN_BOUND_NS 50000000ull         /* exec, loading and attach */

static uint64_t ns_of(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Each call's cost in this thread's CPU time, and the worst in wall time
 * (printed for people; the CPU time is asserted). */
struct cost {
	uint64_t cpu[ROUNDS + 1], worst_wall;
	unsigned n;
	uint64_t cpu0, wall0;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void cost_start(struct cost *c)
{
	c->wall0 = ns_of(CLOCK_MONOTONIC);
	c->cpu0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
}

static void cost_stop(struct cost *c)
{
	uint64_t cpu = ns_of(CLOCK_THREAD_CPUTIME_ID) - c->cpu0;
	uint64_t wall = ns_of(CLOCK_MONOTONIC) - c->wall0;

	if (wall > c->worst_wall)
		c->worst_wall = wall;
	if (c->n < ROUNDS + 1)
		c->cpu[c->n++] = cpu;
}

static void cost_check(struct cost *c, const char *what)
{
	uint64_t median, worst;

	ck_assert_uint_gt(c->n, 0);
	qsort(c->cpu, c->n, sizeof(c->cpu[0]), cmp_u64);
	median = c->cpu[c->n / 2];
	worst = c->cpu[c->n - 1];
	printf("%s: %u calls, CPU time median %.0f us, worst %.0f us (wall worst %.0f us)\n",
	       what, c->n, (double)median / 1e3, (double)worst / 1e3,
	       (double)c->worst_wall / 1e3);
	ck_assert_msg(median < MEDIAN_BOUND_NS, "%s: the median call took %.0f us of CPU time "
		      "(bound %.0f us)", what, (double)median / 1e3, (double)MEDIAN_BOUND_NS / 1e3);
	ck_assert_msg(worst < WORST_BOUND_NS, "%s: a call took %.0f us of CPU time "
		      "(bound %.0f us)", what, (double)worst / 1e3, (double)WORST_BOUND_NS / 1e3);
}

START_TEST(test_attach_to_zeroed_magic_fails_fast)
{
	const char *name = test_shm_name("waits-magic");
	struct shm_instance inst;
	struct cost meta = { 0 }, ring = { 0 };

	test_create(name, 1024, 16, &inst);
	__atomic_store_n(&inst.meta->magic, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < ROUNDS; i++) {
		cost_start(&meta);
		ck_assert_int_eq(perfmon_attach(name), -EPROTO);
		cost_stop(&meta);
	}
	__atomic_store_n(&inst.meta->magic, PERFMON_META_MAGIC, __ATOMIC_RELEASE);
	__atomic_store_n(&inst.ring->magic, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < ROUNDS; i++) {
		cost_start(&ring);
		ck_assert_int_eq(perfmon_attach(name), -EPROTO);
		cost_stop(&ring);
	}
	cost_check(&meta, "attach, control block magic zeroed");
	cost_check(&ring, "attach, ring magic zeroed");
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
	struct cost c = { 0 };

	test_create(name, 1024, 16, &inst);
	/* Every entry claimed for the keys we will ask for, never finished. */
	for (uint32_t i = 0; i < inst.max_names; i++)
		__atomic_store_n(&inst.names[i].key, PERFMON_NAME_KEY(i, 0) | PERFMON_NAME_CLAIMED,
				 __ATOMIC_RELEASE);
	ck_assert_int_eq(perfmon_attach(name), 0);
	for (int i = 0; i < ROUNDS; i++) {
		cost_start(&c);
		ck_assert_int_eq(perfmon_name((uint32_t)(i % 16), 0, "stuck"), -EEXIST);
		cost_stop(&c);
	}
	cost_check(&c, "perfmon_name on a claimed entry");
	ck_assert_uint_ge(inst.meta->name_conflicts, ROUNDS);
	perfmon_detach();
	test_destroy(&inst);
}
END_TEST

/* A program attached from SLICK_PERFMON_SHM to segments whose magic was
 * zeroed reaches main() unattached, having spent at most MAIN_BOUND_NS of
 * CPU time in all before it (exec and loading included). */
START_TEST(test_env_attach_before_main_bounded)
{
	const char *name = test_shm_name("waits-env");
	const char *b = getenv("top_builddir");
	char tool[1024], env[256], line[128];
	unsigned long long cpu = 0;
	struct shm_instance inst;
	int p[2], status, enabled = -1;
	ssize_t n;
	pid_t pid;

	snprintf(tool, sizeof(tool), "%s/tests/tools/segtool", b ? b : ".");
	snprintf(env, sizeof(env), "SLICK_PERFMON_SHM=%s", name);
	test_create(name, 1024, 16, &inst);
	__atomic_store_n(&inst.meta->magic, 0, __ATOMIC_RELEASE);
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		unsetenv("SLICK_PERFMON_DISABLE");
		putenv(env);
		dup2(p[1], STDOUT_FILENO);
		execl(tool, "segtool", "at-main", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	n = read(p[0], line, sizeof(line) - 1);
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_gt(n, 0);
	line[n] = '\0';
	ck_assert_int_eq(sscanf(line, "cpu_ns %llu enabled %d", &cpu, &enabled), 2);
	printf("attach from the environment, magic zeroed: %.0f us of CPU time before main()\n",
	       (double)cpu / 1e3);
	ck_assert_int_eq(enabled, 0);
	ck_assert_msg(cpu < MAIN_BOUND_NS, "%.0f us of CPU time before main() (bound %.0f us)",
		      (double)cpu / 1e3, (double)MAIN_BOUND_NS / 1e3);
	test_destroy(&inst);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("producer_waits");
	TCase *tc = tcase_create("waits");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_attach_to_zeroed_magic_fails_fast);
	tcase_add_test(tc, test_name_on_claimed_key_fails_fast);
	tcase_add_test(tc, test_env_attach_before_main_bounded);
	suite_add_tcase(s, tc);
	return check_run(s);
}
