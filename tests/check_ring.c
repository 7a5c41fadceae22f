/*
 * check_ring.c - the ring reader: ordering, exact loss accounting, torn
 * records, holes, corrupt heads.  Single-threaded cases drive a ring in
 * private memory with explicit clock values; the concurrent cases stamp
 * through the real producer code path from several threads.
 */
#include "build-config.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ring_reader.h"
#include "testutil.h"

static struct perfmon_ring_header *ring_new(uint64_t cap)
{
	struct perfmon_ring_header *r = aligned_alloc(64, PERFMON_RING_BYTES(cap));
	ck_assert_ptr_nonnull(r);
	memset(r, 0, PERFMON_RING_BYTES(cap));
	r->capacity = cap;
	return r;
}

/* Publish an event the way perfmon.h does. */
static void put(struct perfmon_ring_header *r, uint64_t v, uint32_t point, uint32_t ev)
{
	perfmon__publish(r, r->capacity - 1, v, point, ev);
}

static struct perfmon_slot *slot(struct perfmon_ring_header *r, uint64_t idx)
{
	return (struct perfmon_slot *)((char *)r + PERFMON_RING_SLOTS_OFFSET) +
	       (idx & (r->capacity - 1));
}

START_TEST(test_in_order_batches)
{
	struct perfmon_ring_header *r = ring_new(64);
	struct ring_reader rd;
	struct perfmon_event out[16];
	size_t n, total = 0;

	ring_reader_init(&rd, r, 64, 0, 10, 100);
	for (uint32_t i = 0; i < 40; i++)
		put(r, 1000 + i, i, PERFMON_EVENT(PERFMON_BEGIN_STEP, i));
	while ((n = ring_drain_batch(&rd, out, 16, 0)) > 0) {
		for (size_t k = 0; k < n; k++) {
			ck_assert_uint_eq(out[k].point, total + k);
			ck_assert_uint_eq(out[k].tsc, 1000 + total + k);
			ck_assert_uint_eq(PERFMON_EVENT_SEQ(out[k].event), total + k);
		}
		total += n;
	}
	ck_assert_uint_eq(total, 40);
	ck_assert_uint_eq(rd.read, 40);
	ck_assert_uint_eq(rd.dropped, 0);
	ck_assert(ring_reader_done_below(&rd, 40));
	free(r);
}
END_TEST

START_TEST(test_lapped_counts_exactly)
{
	struct perfmon_ring_header *r = ring_new(16);
	struct ring_reader rd;
	struct perfmon_event out[64];
	size_t n;

	ring_reader_init(&rd, r, 16, 0, 10, 100);
	for (uint32_t i = 0; i < 100; i++)
		put(r, i, i, 0);
	n = ring_drain_batch(&rd, out, 64, 0);
	/* Only the newest 16 survive; exactly 84 were overwritten unread. */
	ck_assert_uint_eq(n, 16);
	ck_assert_uint_eq(rd.dropped, 84);
	ck_assert_uint_eq(out[0].point, 84);
	ck_assert_uint_eq(out[15].point, 99);
	ck_assert_uint_eq(rd.read + rd.dropped, 100);
	free(r);
}
END_TEST

START_TEST(test_claimed_by_newer_lap_is_dropped)
{
	struct perfmon_ring_header *r = ring_new(16);
	struct ring_reader rd;
	struct perfmon_event out[64];

	ring_reader_init(&rd, r, 16, 0, 10, 100);
	for (uint32_t i = 0; i < 16; i++)
		put(r, i, i, 0);
	/* A producer a lap ahead has claimed slot 0 (busy, index 16). */
	__atomic_store_n(&r->head, 17, __ATOMIC_RELAXED);
	slot(r, 16)->marker = 17 | PERFMON_SLOT_BUSY;
	ck_assert_uint_eq(ring_drain_batch(&rd, out, 64, 0), 15);
	ck_assert_uint_eq(rd.dropped, 1);
	ck_assert_uint_eq(out[0].point, 1);
	free(r);
}
END_TEST

START_TEST(test_hole_does_not_hold_up_later_events)
{
	struct perfmon_ring_header *r = ring_new(64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	size_t n;

	ring_reader_init(&rd, r, 64, 0, 10, 1000);
	put(r, 1, 1, 0);
	__atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);   /* reserved, never published */
	for (uint32_t i = 0; i < 5; i++)
		put(r, 10 + i, 10 + i, 0);

	n = ring_drain_batch(&rd, out, 64, 100);
	ck_assert_uint_eq(n, 1);              /* waits at the hole: within grace */
	n = ring_drain_batch(&rd, out, 64, 105);
	ck_assert_uint_eq(n, 0);
	n = ring_drain_batch(&rd, out, 64, 110);
	ck_assert_uint_eq(n, 5);              /* grace over: stepped past it */
	ck_assert_uint_eq(out[0].point, 10);
	ck_assert_uint_eq(rd.nholes, 1);
	ck_assert_uint_eq(rd.stalled, 0);
	ck_assert(!ring_reader_done_below(&rd, 7));
	ck_assert_uint_eq(ring_drain_batch(&rd, out, 64, 1099), 0);
	ck_assert_uint_eq(rd.stalled, 0);
	ck_assert_uint_eq(ring_drain_batch(&rd, out, 64, 1100), 0);
	ck_assert_uint_eq(rd.stalled, 1);     /* stall timeout counted from first sight */
	ck_assert(ring_reader_done_below(&rd, 7));
	ck_assert_uint_eq(rd.read + rd.dropped + rd.stalled, 7);
	free(r);
}
END_TEST

START_TEST(test_late_hole_delivered_before_newer_events)
{
	struct perfmon_ring_header *r = ring_new(64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	struct perfmon_slot *s;
	size_t n;

	ring_reader_init(&rd, r, 64, 0, 1, 1000);
	__atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);   /* index 0: in flight */
	put(r, 5, 5, 0);
	ck_assert_uint_eq(ring_drain_batch(&rd, out, 64, 1), 0);
	n = ring_drain_batch(&rd, out, 64, 2);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(out[0].point, 5);
	/* The slow producer finally publishes index 0, then stamps again. */
	s = slot(r, 0);
	s->tsc = 42;
	s->point_event = 7;
	__atomic_store_n(&s->marker, 1, __ATOMIC_RELEASE);
	put(r, 43, 7, 0);
	n = ring_drain_batch(&rd, out, 64, 3);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(out[0].tsc, 42);    /* its own order is kept */
	ck_assert_uint_eq(out[1].tsc, 43);
	ck_assert_uint_eq(rd.stalled, 0);
	ck_assert_uint_eq(rd.read, 3);
	free(r);
}
END_TEST

START_TEST(test_burst_of_holes_does_not_halt)
{
	struct perfmon_ring_header *r = ring_new(1024);
	struct ring_reader rd;
	struct perfmon_event out[64];
	uint64_t got = 0, now = 0;

	/* 100 reserved-but-never-published slots, then 10 real events; the
	 * stall timeout is far away. */
	ring_reader_init(&rd, r, 1024, 0, 1, 1000000);
	__atomic_fetch_add(&r->head, 100, __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < 10; i++)
		put(r, i, i, 0);
	while (got < 10 && now < 1000)
		got += ring_drain_batch(&rd, out, 64, now++);
	ck_assert_uint_eq(got, 10);
	ck_assert_uint_lt(now, 1000);                  /* long before the timeout */
	ck_assert_uint_eq(rd.nholes, RING_MAX_HOLES);
	ck_assert_uint_eq(rd.stalled, 100 - RING_MAX_HOLES);
	ck_assert_uint_eq(rd.read, 10);
	free(r);
}
END_TEST

START_TEST(test_torn_copy_never_returned)
{
	struct perfmon_ring_header *r = ring_new(16);
	struct ring_reader rd;
	struct perfmon_event out[4];

	ring_reader_init(&rd, r, 16, 0, 10, 100);
	put(r, 1, 1, 0);
	/* A writer a lap ahead has begun overwriting slot 0 (busy marker). */
	slot(r, 0)->marker = 17 | PERFMON_SLOT_BUSY;
	slot(r, 0)->tsc = 999;
	ck_assert_uint_eq(ring_drain_batch(&rd, out, 4, 0), 0);
	ck_assert_uint_eq(rd.dropped, 1);
	free(r);
}
END_TEST

START_TEST(test_head_backwards_resyncs)
{
	struct perfmon_ring_header *r = ring_new(16);
	struct ring_reader rd;
	struct perfmon_event out[32];

	ring_reader_init(&rd, r, 16, 0, 10, 100);
	for (int i = 0; i < 10; i++)
		put(r, i, i, 0);
	ck_assert_uint_eq(ring_drain_batch(&rd, out, 32, 0), 10);
	__atomic_store_n(&r->head, 3, __ATOMIC_RELAXED);     /* hostile reset */
	ck_assert_uint_eq(ring_drain_batch(&rd, out, 32, 0), 0);
	ck_assert_uint_eq(rd.head_resets, 1);
	ck_assert_uint_eq(rd.tail, 3);
	__atomic_store_n(&r->head, UINT64_C(1) << 62, __ATOMIC_RELAXED);  /* hostile jump */
	ring_drain_batch(&rd, out, 32, 0);
	ck_assert_uint_le(rd.tail, UINT64_C(1) << 62);
	free(r);
}
END_TEST

/* ---- concurrent: producers stamping flat out into a tiny ring ---------- */

struct lap_arg {
	struct perfmon_ring_header *r;
	uint32_t id;
	uint64_t count;
};

static void *lap_producer(void *p)
{
	struct lap_arg *a = p;
	for (uint64_t i = 0; i < a->count; i++)
		perfmon__publish(a->r, a->r->capacity - 1, ((uint64_t)a->id << 40) | i, a->id,
				 PERFMON_EVENT(PERFMON_VALUE_STEP, (uint32_t)i));
	return NULL;
}

START_TEST(test_tiny_ring_lapped_hard)
{
	enum { THREADS = 3, PER = 300000 };
	struct perfmon_ring_header *r = ring_new(16);
	struct ring_reader rd;
	struct perfmon_event out[8];
	struct lap_arg args[THREADS];
	pthread_t th[THREADS];
	int64_t last[THREADS];
	uint64_t produced = (uint64_t)THREADS * PER;
	size_t n;

	ring_reader_init(&rd, r, 16, 0, UINT64_MAX / 2, UINT64_MAX / 2);
	for (int t = 0; t < THREADS; t++) {
		args[t] = (struct lap_arg){ r, (uint32_t)t + 1, PER };
		last[t] = -1;
		pthread_create(&th[t], NULL, lap_producer, &args[t]);
	}
	for (;;) {
		int done = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) >= produced &&
			   ring_reader_done_below(&rd, produced);
		n = ring_drain_batch(&rd, out, 8, 0);
		for (size_t k = 0; k < n; k++) {
			uint32_t id = out[k].point;
			uint64_t seq = out[k].tsc & ((UINT64_C(1) << 40) - 1);
			/* never torn: value, point and seq all from one stamp */
			ck_assert(id >= 1 && id <= THREADS);
			ck_assert_uint_eq(out[k].tsc >> 40, id);
			ck_assert_uint_eq(PERFMON_EVENT_SEQ(out[k].event), seq & PERFMON_MAX_SEQ);
			ck_assert_uint_eq(PERFMON_EVENT_STEP(out[k].event), PERFMON_VALUE_STEP);
			/* each producer's own order kept */
			ck_assert_int_gt((int64_t)seq, last[id - 1]);
			last[id - 1] = (int64_t)seq;
		}
		if (done && n == 0)
			break;
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	ck_assert_uint_eq(rd.stalled, 0);
	ck_assert_uint_eq(rd.read + rd.dropped, produced);
	ck_assert_uint_gt(rd.dropped, 0);
	ck_assert_uint_gt(rd.read, 0);
	free(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("reader");
	TCase *tcc = tcase_create("concurrent");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_in_order_batches);
	tcase_add_test(tc, test_lapped_counts_exactly);
	tcase_add_test(tc, test_claimed_by_newer_lap_is_dropped);
	tcase_add_test(tc, test_hole_does_not_hold_up_later_events);
	tcase_add_test(tc, test_late_hole_delivered_before_newer_events);
	tcase_add_test(tc, test_torn_copy_never_returned);
	tcase_add_test(tc, test_burst_of_holes_does_not_halt);
	tcase_add_test(tc, test_head_backwards_resyncs);
	tcase_add_test(tcc, test_tiny_ring_lapped_hard);
	tcase_set_timeout(tcc, 120);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tcc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
