/*
 * check_recorder.c - the daemon's recorder (src/recorder.c): what is fed
 * comes out of the file event for event with the name table and clock;
 * the deadline ends a recording; the drops it counts are those of the
 * reads whose events it took; a feed larger than the hand-over buffer
 * counts exactly what did not fit as lost; the size cap stops it and
 * counts the rest; a second recording is refused while one runs; the fd
 * must be a writable regular file; shutdown ends a running recording.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "check_main.h"
#include "names.h"
#include "recorder.h"
#include "scratch.h"

static struct recorder *R;
static struct capture_header H = {
	.tsc_hz_milli = 3000000000000ull,
	.start_tsc = 5000,
	.start_realtime_ns = 1800000000000000000ull,
	.flags = CAPTURE_FLAG_INVARIANT,
	.ring_count = 1,
	.max_open_spans = 77,
	.max_stages = 88,
	.stall_ticks = 15000000000ull,
	.flush_ticks = 3000000000ull,
	.overhead_ticks = 42,
};

static void setup(void)
{
	scratch_create("check_recorder");
	R = recorder_new();
	ck_assert_ptr_nonnull(R);
}

static void teardown(void)
{
	recorder_free(R);
	scratch_remove();
}

static int open_out(const char *name)
{
	char *p = scratch_path(name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	return fd;
}

static void wait_done_names(struct recorder_result *res, const struct name_cache *names)
{
	for (int i = 0; i < 10000; i++) {
		if (recorder_poll(R, names, res))
			return;
		usleep(1000);
	}
	ck_abort_msg("recording did not finish");
}

static void wait_done(struct recorder_result *res)
{
	wait_done_names(res, NULL);
}

static void load(const char *name, struct capture *c)
{
	char *p = scratch_path(name);
	char err[512];

	ck_assert_msg(capture_load(p, UINT64_MAX, c, err, sizeof(err)) == 0, "%s", err);
}

static struct perfmon_event *events(size_t n)
{
	struct perfmon_event *ev = calloc(n, sizeof(*ev));

	ck_assert_ptr_nonnull(ev);
	for (size_t i = 0; i < n; i++) {
		ev[i].tsc = 10000 + i * 3;
		ev[i].point = (uint32_t)(i % 5);
		ev[i].event = PERFMON_EVENT((uint8_t)(i % 4 == 3 ? PERFMON_END_STEP : i % 4),
					    (uint32_t)(i / 4));
	}
	return ev;
}

/* One read as the drain thread makes it: a tick, then what it read. */
static void pass(uint64_t now, uint64_t dropped, const struct perfmon_event *ev, size_t n)
{
	recorder_tick(R, now, dropped);
	recorder_feed(R, 0, ev, n, NULL, 0);
}

START_TEST(test_record_what_is_fed)
{
	struct perfmon_name_entry tab[4];
	struct perfmon_meta_header meta;
	struct name_cache names;
	struct recorder_result res;
	struct perfmon_event *ev = events(1000);
	struct capture c;
	char err[256];

	memset(tab, 0, sizeof(tab));
	memset(&meta, 0, sizeof(meta));
	tab[0].key = PERFMON_NAME_KEY(1, 0);
	strcpy(tab[0].label, "orders");
	tab[1].key = PERFMON_NAME_KEY(1, 2);
	strcpy(tab[1].label, "risk");
	meta.name_generation = 1;
	ck_assert_int_eq(name_cache_init(&names, 4), 0);
	name_cache_refresh(&names, &meta, tab, 4);

	ck_assert(!recorder_active(R));
	ck_assert_int_eq(recorder_start(R, open_out("a.pmcap"), 5000, 1000000, 0, &H, &names,
					err, sizeof(err)), 0);
	ck_assert(recorder_active(R));
	/* in batches, as the drain thread does, the dropped count moving */
	for (size_t i = 0; i < 1000; i += 100)
		pass(6000 + i, 40 + i / 100, ev + i, 100);
	ck_assert(!recorder_poll(R, NULL, &res));
	recorder_tick(R, 5000 + 1000000, 77);   /* the deadline */
	ck_assert(!recorder_active(R));
	/* a label published during the recording reaches the file too */
	tab[2].key = PERFMON_NAME_KEY(3, 0);
	strcpy(tab[2].label, "late");
	meta.name_generation = 2;
	name_cache_refresh(&names, &meta, tab, 4);
	wait_done_names(&res, &names);
	ck_assert_uint_eq(res.t.events, 1000);
	ck_assert_uint_eq(res.t.lost_buffer + res.t.lost_cap, 0);
	ck_assert_uint_eq(res.t.dropped, 77 - 40);
	ck_assert_int_eq(res.error, 0);

	load("a.pmcap", &c);
	ck_assert(c.has_trailer);
	ck_assert_uint_eq(c.nevents, 1000);
	ck_assert_uint_eq(c.t.events, 1000);
	ck_assert_uint_eq(c.t.dropped, 37);
	ck_assert_uint_eq(c.t.end_tsc, 1005000);
	ck_assert_uint_eq(c.h.tsc_hz_milli, H.tsc_hz_milli);
	ck_assert_uint_eq(c.h.start_realtime_ns, H.start_realtime_ns);
	ck_assert_uint_eq(c.h.max_open_spans, 77);
	ck_assert_uint_eq(c.h.max_stages, 88);
	ck_assert_uint_eq(c.h.stall_ticks, H.stall_ticks);
	ck_assert_uint_eq(c.h.flush_ticks, H.flush_ticks);
	ck_assert_uint_eq(c.h.overhead_ticks, 42);
	ck_assert_str_eq(capture_label(&c, 1, 0), "orders");
	ck_assert_str_eq(capture_label(&c, 1, 2), "risk");
	ck_assert_str_eq(capture_label(&c, 3, 0), "late");
	ck_assert_uint_eq(c.h.name_count, 3);
	for (size_t i = 0; i < 1000; i++) {
		ck_assert_uint_eq(c.events[i].tsc, ev[i].tsc);
		ck_assert_uint_eq(c.events[i].point, ev[i].point);
		ck_assert_uint_eq(c.events[i].event, ev[i].event);
		ck_assert_uint_eq(c.events[i].ring, 0);
	}
	capture_free(&c);
	name_cache_free(&names);
	free(ev);

	/* idle again: a new recording may start */
	ck_assert_int_eq(recorder_start(R, open_out("b.pmcap"), 0, 10, 0, &H, NULL, err,
					sizeof(err)), 0);
	recorder_tick(R, 100, 0);
	wait_done(&res);
	ck_assert_uint_eq(res.t.events, 0);
}
END_TEST

START_TEST(test_buffer_full_counts_lost)
{
	size_t n = RECORDER_BUFFER_EVENTS + 5000;
	struct perfmon_event *ev = events(n);
	struct recorder_result res;
	struct capture c;
	char err[256];

	ck_assert_int_eq(recorder_start(R, open_out("c.pmcap"), 0, UINT64_MAX / 2, 0, &H, NULL,
					err, sizeof(err)), 0);
	/* One feed larger than the buffer: whatever the writer did meanwhile,
	 * at least 5000 cannot fit, and captured + lost is what was fed. */
	pass(1, 0, ev, n);
	recorder_tick(R, UINT64_MAX / 2 + 1, 0);
	wait_done(&res);
	ck_assert_uint_ge(res.t.lost_buffer, 5000);
	ck_assert_uint_eq(res.t.events + res.t.lost_buffer, n);
	load("c.pmcap", &c);
	ck_assert_uint_eq(c.nevents, res.t.events);
	ck_assert_uint_eq(c.t.lost_buffer, res.t.lost_buffer);
	/* what was kept is the first events, in order */
	for (size_t i = 0; i < c.nevents; i += 997)
		ck_assert_uint_eq(c.events[i].tsc, ev[i].tsc);
	capture_free(&c);
	free(ev);
}
END_TEST

START_TEST(test_size_cap)
{
	struct perfmon_event *ev = events(100000);
	struct recorder_result res;
	uint64_t cap = 64 * 1024;
	struct capture c;
	char err[256], *p;
	size_t len;

	ck_assert_int_eq(recorder_start(R, open_out("d.pmcap"), 0, UINT64_MAX / 2, cap, &H,
					NULL, err, sizeof(err)), 0);
	for (size_t i = 0; i < 100000 && recorder_active(R); i += 1000) {
		pass(1 + i, 0, ev + i, 1000);
		usleep(200);
	}
	/* the writer asked the drain side to stop: the next tick ends it */
	for (int i = 0; i < 5000 && recorder_active(R); i++) {
		recorder_tick(R, 200000, 0);
		usleep(1000);
	}
	wait_done(&res);
	ck_assert(res.t.flags & CAPTURE_END_CAPPED);
	ck_assert_uint_gt(res.t.lost_cap, 0);
	p = scratch_path("d.pmcap");
	free(scratch_slurp(p, &len));
	ck_assert_uint_le(len, cap);
	load("d.pmcap", &c);
	ck_assert_uint_eq(c.nevents, res.t.events);
	ck_assert(c.t.flags & CAPTURE_END_CAPPED);
	capture_free(&c);
	free(ev);
}
END_TEST

START_TEST(test_refusals)
{
	struct recorder_result res;
	char err[256];
	int pfd[2], fd;
	char *p;

	ck_assert_int_eq(recorder_start(R, open_out("e.pmcap"), 0, 1000, 0, &H, NULL, err,
					sizeof(err)), 0);
	ck_assert_int_eq(recorder_start(R, open_out("f.pmcap"), 0, 1000, 0, &H, NULL, err,
					sizeof(err)), -EBUSY);
	ck_assert(strstr(err, "already running") != NULL);
	/* shutdown ends the running one, flagged */
	ck_assert(recorder_shutdown(R, 50, 0, NULL, &res));
	ck_assert(res.t.flags & CAPTURE_END_SHUTDOWN);
	ck_assert(!recorder_shutdown(R, 50, 0, NULL, &res));

	ck_assert_int_eq(pipe(pfd), 0);
	close(pfd[0]);
	ck_assert_int_eq(recorder_start(R, pfd[1], 0, 1000, 0, &H, NULL, err, sizeof(err)),
			 -EINVAL);
	p = scratch_path("e.pmcap");
	fd = open(p, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(recorder_start(R, fd, 0, 1000, 0, &H, NULL, err, sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "regular file opened for writing") != NULL);
	ck_assert(!recorder_active(R));
}
END_TEST

/* The deadline ends a recording on one feed; a late feed of the same
 * pass, after the main thread has collected it, must leave the idle
 * recorder alone: the next recording starts. */
START_TEST(test_feed_after_collect)
{
	struct perfmon_event *ev = events(10);
	struct recorder_result res;
	char err[256];

	ck_assert_int_eq(recorder_start(R, open_out("g.pmcap"), 0, 1000, 0, &H, NULL, err,
					sizeof(err)), 0);
	pass(2000, 0, ev, 10);   /* past the deadline: stops, records nothing */
	ck_assert(!recorder_active(R));
	wait_done(&res);
	ck_assert_uint_eq(res.t.events, 0);
	recorder_feed(R, 0, ev, 10, NULL, 0);   /* the pass goes on */
	recorder_tick(R, 2500, 5);
	ck_assert(!recorder_active(R));
	ck_assert(!recorder_finished(R));
	ck_assert_int_eq(recorder_start(R, open_out("h.pmcap"), 3000, 1000, 0, &H, NULL, err,
					sizeof(err)), 0);
	pass(3500, 7, ev, 10);
	recorder_tick(R, 4000, 9);
	wait_done(&res);
	ck_assert_uint_eq(res.t.events, 10);
	ck_assert_uint_eq(res.t.dropped, 2);
	free(ev);
}
END_TEST

/* The drops a recording counts are those of the reads whose events it
 * takes: a read under way when it started (no tick of its own yet)
 * counted its drops before the baseline, and its events are left out;
 * from the first tick on, every read's drops and events are in. */
START_TEST(test_drops_and_events_of_the_same_reads)
{
	struct perfmon_event *ev = events(40);
	struct recorder_result res;
	char err[256];

	ck_assert_int_eq(recorder_start(R, open_out("j.pmcap"), 1000, 1000, 0, &H, NULL, err,
					sizeof(err)), 0);
	recorder_feed(R, 0, ev, 10, NULL, 0);   /* a read begun before the start */
	pass(1100, 500, ev + 10, 10);           /* the baseline: 500 */
	pass(1200, 530, ev + 20, 10);           /* this read lapped: 30 dropped */
	recorder_feed(R, 1, ev + 30, 10, NULL, 0);   /* another sub-ring, same read */
	recorder_tick(R, 2000, 530);
	recorder_feed(R, 0, ev, 10, NULL, 0);   /* after the deadline: nothing */
	wait_done(&res);
	ck_assert_uint_eq(res.t.events, 30);
	ck_assert_uint_eq(res.t.dropped, 30);
	ck_assert_uint_eq(res.t.lost_buffer + res.t.lost_cap, 0);
	free(ev);
}
END_TEST

/* One pass's batch: its spans, then its values, so that a reader places
 * each value after the spans read with it. */
START_TEST(test_batch_order)
{
	struct perfmon_event spans[2] = {
		{ 200, 4, PERFMON_EVENT(PERFMON_BEGIN_STEP, 1) },
		{ 300, 4, PERFMON_EVENT(PERFMON_END_STEP, 1) },
	};
	struct perfmon_event values[2] = {
		{ 11, 5, PERFMON_EVENT(PERFMON_VALUE_STEP, 0) },
		{ 12, 5, PERFMON_EVENT(PERFMON_VALUE_STEP, 0) },
	};
	static const uint64_t want[] = { 200, 300, 11, 12 };
	struct recorder_result res;
	struct capture c;
	char err[256];

	ck_assert_int_eq(recorder_start(R, open_out("i.pmcap"), 0, 1000, 0, &H, NULL, err,
					sizeof(err)), 0);
	recorder_tick(R, 10, 0);
	recorder_feed(R, 0, spans, 2, values, 2);
	recorder_tick(R, 2000, 0);
	wait_done(&res);
	ck_assert_uint_eq(res.t.events, 4);
	load("i.pmcap", &c);
	for (size_t i = 0; i < 4; i++)
		ck_assert_uint_eq(c.events[i].tsc, want[i]);
	capture_free(&c);
}
END_TEST

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
/* The drain thread copies into the hand-over buffer: its pages are
 * faulted in when the recording starts, not one by one by the drain. */
START_TEST(test_feeding_takes_no_page_faults)
{
	const size_t n = RECORDER_BUFFER_EVENTS / 2, batch = 4096;
	const long pages = (long)(n * sizeof(struct capture_event) / 4096);
	struct perfmon_event *ev = events(n);
	struct recorder_result res;
	struct rusage a, b;
	char err[256];
	long faults;

	ck_assert_int_eq(recorder_start(R, open_out("f.pmcap"), 5000, UINT64_MAX / 2, 0, &H,
					NULL, err, sizeof(err)), 0);
	recorder_tick(R, 6000, 0);
	ck_assert_int_eq(getrusage(RUSAGE_THREAD, &a), 0);
	for (size_t i = 0; i < n; i += batch)
		recorder_feed(R, 0, ev + i, batch, NULL, 0);
	ck_assert_int_eq(getrusage(RUSAGE_THREAD, &b), 0);
	faults = b.ru_minflt - a.ru_minflt + b.ru_majflt - a.ru_majflt;
	ck_assert_msg(faults < pages / 8, "%ld page faults feeding %zu events (%ld pages)",
		      faults, n, pages);
	ck_assert(recorder_shutdown(R, 7000 + n, 0, NULL, &res));
	ck_assert_uint_eq(res.t.events + res.t.lost_buffer + res.t.lost_cap, n);
	free(ev);
}
END_TEST
#endif

static Suite *recorder_suite(void)
{
	Suite *s = suite_create("recorder");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_record_what_is_fed);
	tcase_add_test(tc, test_buffer_full_counts_lost);
	tcase_add_test(tc, test_size_cap);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	/* Counts page faults: a sanitizer's shadow memory adds its own. */
	tcase_add_test(tc, test_feeding_takes_no_page_faults);
#endif
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_feed_after_collect);
	tcase_add_test(tc, test_batch_order);
	tcase_add_test(tc, test_drops_and_events_of_the_same_reads);
	suite_add_tcase(s, tc);
	return s;
}


int main(void)
{
	return check_run(recorder_suite());
}
