/*
 * check_drain.c - the drain thread (src/drain.c) over a real segment and a
 * real pairing engine, producers stamping through <perfmon.h>: intervals
 * handed over with the counters they cover, counter snapshots read while
 * the thread writes them, live settings, the final drain at stop (holes
 * given up within the budget, counted), the last flip, a ring someone
 * shrank restored by the thread itself, and a recording that counts the
 * drops of the reads whose events it takes.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <perfmon.h>

#include "check_main.h"
#include "drain.h"
#include "recorder.h"
#include "scratch.h"
#include "shm_guard.h"
#include "testutil.h"

struct fx {
	struct shm_instance inst;
	struct pairing *p;
	struct drain d;
	struct tsc_clock clock;
	int wake;
	uint64_t spans;          /* total spans collected so far */
	struct drain_counters at_flip;   /* those of the last interval collected */
};

static struct fx F;

/* A one-sub-ring segment of `capacity` slots, a drain thread on it
 * feeding `rec` (NULL: none), and this process attached as a producer. */
static void fx_start_ring(const char *tag, uint64_t flush_ms, uint64_t capacity,
			  struct recorder *rec)
{
	struct pairing_config pc = { .max_open_spans = 4096, .max_stages = 64 };
	struct drain_setup s;
	char err[512];

	memset(&F, 0, sizeof(F));
	tsc_clock_start(&F.clock, 10);
	test_create(test_shm_name(tag), capacity, 16, &F.inst);
	pc.stall_ticks = tsc_ns_to_ticks(&F.clock, 60000000000ull);
	F.p = pairing_new(&pc);
	ck_assert_ptr_nonnull(F.p);
	F.wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_ge(F.wake, 0);
	s = (struct drain_setup){
		.inst = &F.inst,
		.pairing = F.p,
		.cpu = -1,
		.hole_grace_ticks = tsc_ns_to_ticks(&F.clock, 200000),
		.stall_ticks = pc.stall_ticks,
		.live = { 1000000, tsc_ns_to_ticks(&F.clock, flush_ms * 1000000) },
		.wake_fd = F.wake,
		.recorder = rec,
	};
	ck_assert_int_eq(shm_guard_install(), 0);
	ck_assert_msg(drain_start(&F.d, &s, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(perfmon_attach(F.inst.name), 0);
}

static void fx_start(const char *tag, uint64_t flush_ms)
{
	fx_start_ring(tag, flush_ms, 1u << 16, NULL);
}

/* Slow the thread's idle polls to `ms` and return once it has just woken:
 * it sleeps that long again before it next reads the ring. */
static void fx_asleep(uint64_t ms)
{
	uint64_t hb;

	drain_set_live(&F.d, &(struct drain_live){ ms * 1000000,
						   tsc_ns_to_ticks(&F.clock, 1000000000) });
	usleep(50000);
	hb = drain_heartbeat(&F.d);
	for (int i = 0; i < 3000 && drain_heartbeat(&F.d) == hb; i++)
		usleep(1000);
	ck_assert_uint_ne(drain_heartbeat(&F.d), hb);
	usleep(100000);
}

/* Stop the producer side and the thread (final drain, 100 ms for holes). */
static void fx_stop_drain(void)
{
	perfmon_detach();
	drain_stop(&F.d, tsc_ns_to_ticks(&F.clock, 100000000));
}

static void fx_free(void)
{
	drain_free(&F.d);
	pairing_free(F.p);
	close(F.wake);
	test_destroy(&F.inst);
}

static void fx_stop(void)
{
	fx_stop_drain();
	fx_free();
}

/* Spans of total rows in the interval collected, released after. */
static uint64_t collect_spans(void)
{
	static struct pairing_row rows[256];
	struct pairing_interval iv;
	uint64_t n = 0;
	uint32_t k;

	if (!drain_collect(&F.d, &iv, &F.at_flip))
		return 0;
	k = pairing_rows(F.p, rows, 256);
	for (uint32_t i = 0; i < k; i++)
		if (rows[i].kind == PAIRING_TOTAL)
			n += rows[i].interval->count;
	pairing_release(F.p);
	return n;
}

/* Wait (at most `ms`) for the next flip's wake-up; collect it. */
static bool next_interval(int ms)
{
	struct pollfd pfd = { F.wake, POLLIN, 0 };
	uint64_t v;

	if (poll(&pfd, 1, ms) != 1 || read(F.wake, &v, sizeof(v)) != sizeof(v))
		return false;
	F.spans += collect_spans();
	return true;
}

static void stamp(uint32_t point, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		perfmon_begin(point, i);
		perfmon_end(point, i);
	}
}

/* Poll until the published counters account for `n` events (10 s). */
static struct drain_counters wait_accounted(uint64_t n)
{
	struct drain_counters c;

	for (int i = 0; i < 10000; i++) {
		c = drain_counters_now(&F.d);
		if (c.read + c.dropped + c.stalled >= n)
			return c;
		usleep(1000);
	}
	return c;
}

START_TEST(test_intervals_carry_their_counters)
{
	struct drain_counters c, f;

	fx_start("drain-iv", 20);
	stamp(1, 1000);
	c = wait_accounted(2000);
	ck_assert_uint_eq(c.read, 2000);
	ck_assert_uint_eq(c.dropped, 0);
	while (F.spans < 1000 && next_interval(5000))
		;
	ck_assert_uint_eq(F.spans, 1000);
	/* The counters handed over cover what the interval holds. */
	f = F.at_flip;
	ck_assert_uint_eq(f.read, 2000);
	ck_assert_uint_eq(f.dropped + f.stalled, 0);
	ck_assert_uint_ge(drain_heartbeat(&F.d), 1);
	fx_stop();
}
END_TEST

/* While the reporter holds an interval, the drain thread cannot flip:
 * the counters handed over with that interval must stay those of its
 * flip, whatever the thread reads meanwhile. */
START_TEST(test_held_interval_keeps_its_counters)
{
	struct pairing_interval iv, again;
	struct drain_counters c = { 0 };

	fx_start("drain-held", 20);
	stamp(7, 1000);
	wait_accounted(2000);
	/* Collect an interval flipped after all 2000 events were read, and
	 * keep it. */
	for (int i = 0; i < 5000; i++) {
		if (drain_collect(&F.d, &iv, &c) && c.read == 2000)
			break;
		pairing_release(F.p);
		usleep(1000);
	}
	ck_assert_uint_eq(c.read, 2000);
	/* Later events, and ten flush times in which no flip can happen. */
	stamp(7, 1000);
	wait_accounted(4000);
	usleep(200000);
	ck_assert(drain_collect(&F.d, &again, &c));
	ck_assert_uint_eq(again.end_tsc, iv.end_tsc);
	ck_assert_uint_eq(c.read, 2000);
	pairing_release(F.p);
	fx_stop();
}
END_TEST

/* Readers on another thread see whole snapshots: read + dropped never
 * exceeds what was stamped, and never goes back. */
static int hammering;

static void *hammer(void *arg)
{
	uint64_t last = 0, *bad = arg;

	while (__atomic_load_n(&hammering, __ATOMIC_ACQUIRE)) {
		struct drain_counters c = drain_counters_now(&F.d);
		uint64_t t = c.read + c.dropped + c.stalled;
		if (t < last || t > 200000)
			(*bad)++;
		last = t;
	}
	return NULL;
}

START_TEST(test_snapshots_under_load)
{
	pthread_t th;
	uint64_t bad = 0;

	fx_start("drain-snap", 10);
	__atomic_store_n(&hammering, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_create(&th, NULL, hammer, &bad), 0);
	stamp(2, 100000);
	wait_accounted(200000);
	__atomic_store_n(&hammering, 0, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	ck_assert_uint_eq(bad, 0);
	fx_stop();
}
END_TEST

/* A new interval length applies from the next interval on. */
START_TEST(test_live_settings)
{
	int flips = 0;

	fx_start("drain-live", 20);
	stamp(3, 10);
	ck_assert(next_interval(5000));   /* 20 ms intervals */
	drain_set_live(&F.d, &(struct drain_live){ 1000000,
						   tsc_ns_to_ticks(&F.clock, 3600000000000ull) });
	while (next_interval(200))       /* the one already due, at most */
		flips++;
	ck_assert_int_le(flips, 2);
	ck_assert(!next_interval(300));   /* then an hour-long one */
	fx_stop_drain();
	ck_assert(drain_flip_final(&F.d, tsc_now()));
	F.spans += collect_spans();
	ck_assert_uint_eq(F.spans, 10);
	fx_free();
}
END_TEST

/* What passes read is published before the thread sleeps, however far
 * off its next status time is (with hour-long intervals, 3.6 s): rounds
 * of stamps each show up in the counters within a poll or so. */
START_TEST(test_read_published_before_sleeping)
{
	struct drain_counters c;

	fx_start("drain-pub", 3600000);
	for (uint64_t round = 1; round <= 3; round++) {
		uint64_t t0 = test_now_ns();

		stamp(4, 500);
		c = wait_accounted(1000 * round);
		ck_assert_uint_eq(c.read, 1000 * round);
		ck_assert_uint_lt(test_now_ns() - t0, 1500000000u);
	}
	fx_stop();
}
END_TEST

START_TEST(test_stop_gives_up_holes_within_the_budget)
{
	struct drain_counters c;
	uint64_t t0;

	fx_start("drain-stop", 3600 * 1000);
	/* A producer that died between reserving and publishing. */
	__atomic_fetch_add(&PERFMON_SUBRING(F.inst.ring, 0)->head, 1, __ATOMIC_RELAXED);
	stamp(4, 10);
	perfmon_detach();
	t0 = tsc_now();
	drain_stop(&F.d, tsc_ns_to_ticks(&F.clock, 100000000));
	ck_assert_double_lt(tsc_to_ns(&F.clock, (double)(tsc_now() - t0)), 5e9);
	c = drain_counters_now(&F.d);
	ck_assert_uint_eq(c.read, 20);
	ck_assert_uint_eq(c.stalled, 1);
	ck_assert_uint_eq(c.unfinished, 1);
	/* The last interval, flipped on this thread with the final counters. */
	ck_assert(drain_flip_final(&F.d, tsc_now()));
	ck_assert_uint_eq(collect_spans(), 10);
	ck_assert_uint_eq(F.at_flip.stalled, 1);
	fx_free();
}
END_TEST

START_TEST(test_shrunk_ring_restored_by_the_thread)
{
	char path[256];
	struct drain_counters c;
	struct drain_shrinks sh;

	fx_start("drain-shrink", 20);
	stamp(5, 100);
	wait_accounted(200);
	perfmon_detach();
	snprintf(path, sizeof(path), "/dev/shm/%s", F.inst.name);
	ck_assert_int_eq(truncate(path, 0), 0);
	drain_ring_changed(&F.d);
	for (int i = 0; i < 5000 && drain_shrinks(&F.d).restores == 0; i++)
		usleep(1000);
	sh = drain_shrinks(&F.d);
	ck_assert_uint_eq(sh.restores, 1);
	ck_assert_uint_eq(sh.lost_bytes, F.inst.ring_len);
	ck_assert_int_eq(sh.error, 0);
	/* A producer attaching now stamps into the restored ring: all read. */
	ck_assert_int_eq(perfmon_attach(F.inst.name), 0);
	stamp(6, 100);
	c = wait_accounted(400);
	ck_assert_uint_eq(c.read, 400);
	ck_assert_uint_eq(c.dropped + c.stalled, 0);
	ck_assert_uint_eq(c.head_resets, 0);
	fx_stop();
}
END_TEST

/*
 * A hole holds the spans behind it for the hole grace, not for a poll
 * interval more: with poll_interval = 1 s, spans stamped behind a hole
 * while the thread sleeps are paired right after its next wake-up (about
 * 0.9 s later), not after the sleep that follows it (about 1.9 s).
 */
START_TEST(test_hole_holds_spans_for_the_grace_not_a_poll)
{
	uint64_t t0;
	double waited;

	fx_start("drain-hole", 1000);
	/* Right after a wake-up the thread sleeps a whole second again. */
	fx_asleep(1000);
	/* A producer that died mid-stamp, then 50 spans begun behind it. */
	__atomic_fetch_add(&PERFMON_SUBRING(F.inst.ring, 0)->head, 1, __ATOMIC_RELAXED);
	t0 = test_now_ns();
	for (uint32_t i = 0; i < 50; i++)
		perfmon_begin(7, i);
	while (drain_counters_now(&F.d).open_spans < 50 && test_now_ns() - t0 < 5000000000u)
		usleep(1000);
	waited = (double)(test_now_ns() - t0) / 1e9;
	ck_assert_uint_eq(drain_counters_now(&F.d).open_spans, 50);
	ck_assert_msg(waited < 1.5, "spans behind a hole waited %.3f s (poll 1 s, grace 200 us)",
		      waited);
	fx_stop();
}
END_TEST

/*
 * A recording started while the thread sleeps, and a producer that laps
 * the ring before it wakes: the thread's first read counts the drops and
 * then shows the events.  The recording takes both, so what it captured,
 * lost and saw dropped add up to what was stamped.
 */
START_TEST(test_recording_counts_the_drops_of_its_first_read)
{
	struct capture_header h = { .tsc_hz_milli = 1000000, .ring_count = 1 };
	struct recorder *rec = recorder_new();
	struct recorder_result res;
	char err[256];
	int fd;

	ck_assert_ptr_nonnull(rec);
	scratch_create("check_drain");
	fx_start_ring("drain-rec", 1000, 1024, rec);
	fx_asleep(1000);
	fd = open(scratch_path("rec.pmcap"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(recorder_start(rec, fd, tsc_now(), tsc_ns_to_ticks(&F.clock, 1500000000),
				     0, &h, NULL, err, sizeof(err)) == 0, "%s", err);
	stamp(4, 4096);   /* 8192 events into 1024 slots, in well under a second */
	for (int i = 0; i < 10000 && !recorder_poll(rec, NULL, &res); i++)
		usleep(1000);
	ck_assert_int_eq(res.error, 0);
	ck_assert_uint_gt(res.t.dropped, 0);
	ck_assert_uint_eq(res.t.lost_buffer + res.t.lost_cap, 0);
	ck_assert_uint_eq(res.t.events + res.t.dropped, 8192);
	fx_stop();
	recorder_free(rec);
	scratch_remove();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("drain");
	TCase *tc = tcase_create("thread");

	tcase_add_test(tc, test_intervals_carry_their_counters);
	tcase_add_test(tc, test_held_interval_keeps_its_counters);
	tcase_add_test(tc, test_snapshots_under_load);
	tcase_add_test(tc, test_live_settings);
	tcase_add_test(tc, test_read_published_before_sleeping);
	tcase_add_test(tc, test_stop_gives_up_holes_within_the_budget);
	tcase_add_test(tc, test_shrunk_ring_restored_by_the_thread);
	tcase_add_test(tc, test_hole_holds_spans_for_the_grace_not_a_poll);
	tcase_add_test(tc, test_recording_counts_the_drops_of_its_first_read);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return check_run(s);
}
