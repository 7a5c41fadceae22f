/*
 * check_ring.c - the ring reader: the time-ordered merge of the per-CPU
 * sub-rings, exact loss accounting per sub-ring, torn records, holes (one
 * grace per pass), absurd heads.  Single-threaded cases drive a ring in
 * private memory with explicit clock values and timestamps; the concurrent
 * cases stamp through the real producer code path from several threads.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <perfmon/stamp.h>

#include "check_main.h"
#include "ring_reader.h"
#include "testrand.h"
#include "testutil.h"

/* Far above every explicit timestamp used below: releases everything. */
#define ALL (UINT64_C(1) << 62)

struct ring {
	struct perfmon_ring_header *hdr;
	uint32_t nsub;
	uint64_t cap;
};

static struct ring ring_new(uint32_t nsub, uint64_t cap)
{
	/* aligned_alloc wants a multiple of the alignment */
	size_t bytes = (PERFMON_RING_BYTES(nsub, cap) + 4095) & ~(size_t)4095;
	struct ring r = { aligned_alloc(4096, bytes), nsub, cap };
	ck_assert_ptr_nonnull(r.hdr);
	memset(r.hdr, 0, PERFMON_RING_BYTES(nsub, cap));
	r.hdr->capacity = cap;
	r.hdr->subrings = nsub;
	return r;
}

static void reader_new(struct ring_reader *rd, struct ring r, uint64_t grace, uint64_t stall)
{
	uint64_t zeros[64] = { 0 };
	ck_assert_int_eq(ring_reader_init(rd, r.hdr, r.nsub, r.cap, zeros, grace, stall), 0);
}

/* Publish an event the way perfmon.h does, with an explicit timestamp. */
static void put(struct ring r, uint32_t sub, uint64_t ts, uint32_t point, uint32_t ev)
{
	perfmon__publish_to(r.hdr, r.cap, r.nsub, sub, ts, point, ev);
}

/* A span event (begin step) at time `ts`. */
static void span(struct ring r, uint32_t sub, uint64_t ts, uint32_t point)
{
	put(r, sub, ts, point, PERFMON_EVENT(PERFMON_BEGIN_STEP, point));
}

static uint64_t *head(struct ring r, uint32_t sub)
{
	return &PERFMON_SUBRING(r.hdr, sub)->head;
}

static struct perfmon_slot *slot(struct ring r, uint32_t sub, uint64_t idx)
{
	return PERFMON_SUBRING_SLOTS(r.hdr, r.nsub, r.cap, sub) + (idx & (r.cap - 1));
}

/* A producer stopped after reserving index `idx` of sub-ring `sub` publishes
 * at last: timestamp `ts`, the raw point/event word `pe`. */
static void publish_late(struct ring r, uint32_t sub, uint64_t idx, uint64_t ts, uint64_t pe)
{
	struct perfmon_slot *s = slot(r, sub, idx);

	s->tsc = ts;
	s->point_event = pe;
	__atomic_store_n(&s->marker, idx + 1, __ATOMIC_RELEASE);
}

static size_t drain(struct ring_reader *rd, struct perfmon_event *out, size_t max,
		    uint64_t now, uint64_t wm)
{
	return ring_drain_batch(rd, out, max, now, wm);
}

static uint64_t accounted(const struct ring_reader *rd)
{
	return rd->read + rd->dropped + rd->stalled;
}

START_TEST(test_in_order_batches)
{
	struct ring r = ring_new(1, 64);
	struct ring_reader rd;
	struct perfmon_event out[16];
	size_t n, total = 0;

	reader_new(&rd, r, 10, 100);
	for (uint32_t i = 0; i < 40; i++)
		span(r, 0, 1000 + i, i);
	while ((n = drain(&rd, out, 16, 0, ALL)) > 0) {
		for (size_t k = 0; k < n; k++) {
			ck_assert_uint_eq(out[k].point, total + k);
			ck_assert_uint_eq(out[k].tsc, 1000 + total + k);
		}
		total += n;
	}
	ck_assert_uint_eq(total, 40);
	ck_assert_uint_eq(rd.read, 40);
	ck_assert_uint_eq(rd.dropped, 0);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_merge_restores_time_order)
{
	struct ring r = ring_new(4, 64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	size_t n;

	reader_new(&rd, r, 10, 100);
	/* Interleaved in time across three sub-rings, each in its own order. */
	for (uint32_t i = 0; i < 30; i++)
		span(r, i % 3, 100 + i, i);
	/* A value sample needs no order and is never held back. */
	put(r, 3, 999999, 77, PERFMON_EVENT(PERFMON_VALUE_STEP, 0));
	/* Watermark 120: spans stamped at 120 and later wait for a later pass. */
	n = drain(&rd, out, 64, 0, 120);
	ck_assert_uint_eq(n, 21);
	ck_assert_uint_eq(out[0].point, 77);
	for (uint32_t k = 1; k < n; k++)
		ck_assert_uint_eq(out[k].tsc, 100 + k - 1);
	ck_assert_uint_eq(drain(&rd, out, 64, 0, 200), 10);
	for (uint32_t k = 0; k < 10; k++)
		ck_assert_uint_eq(out[k].point, 20 + k);
	ck_assert_uint_eq(rd.read, 31);
	ck_assert_uint_eq(rd.misordered, 0);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* A published span as the reference sees it. */
struct ref_ev {
	uint64_t tsc;
	uint32_t sub, seq;
};

/* Timestamp order; equal timestamps by sub-ring, then as published. */
static int ref_cmp(const void *a, const void *b)
{
	const struct ref_ev *x = a, *y = b;
	if (x->tsc != y->tsc)
		return x->tsc < y->tsc ? -1 : 1;
	if (x->sub != y->sub)
		return x->sub < y->sub ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Pass after pass, the spans released are exactly those stamped before the
 * watermark and not yet released, in timestamp order, equal timestamps in
 * a stable order: whether one sub-ring was busy (handed out as it lies),
 * two (merged), or more (in rounds of two), with sub-rings
 * whose own spans are out of order (sorted first) and spans held back
 * across passes at the front of their sub-ring.
 */
START_TEST(test_merge_matches_a_stable_sort)
{
	static const uint32_t nsubs[] = { 1, 2, 4, 8, 64 };
	enum { CAP = 256, PASSES = 40 };
	static struct ref_ev pend[PASSES * CAP];
	static struct perfmon_event out[PASSES * CAP];

	rng_seed(11);
	for (unsigned c = 0; c < sizeof(nsubs) / sizeof(nsubs[0]); c++) {
		uint32_t nsub = nsubs[c], seq = 0;
		struct ring r = ring_new(nsub, CAP);
		struct ring_reader rd;
		uint64_t wm = 1000, last[64], newest = 0;
		size_t npend = 0, n;

		ck_assert_int_eq(ring_reader_init(&rd, r.hdr, nsub, CAP, NULL, 10, 1000), 0);
		for (unsigned pass = 0; pass < PASSES; pass++) {
			/* a pass with one busy sub-ring, or two, or up to all of
			 * them (an odd number too: the tree's padding) */
			uint32_t busy = (uint32_t)(rng_next() % 3 == 0 ? 1 : rng_next() % 2 ? 2 :
						   1 + rng_next() % nsub);
			uint32_t first = (uint32_t)(rng_next() % nsub);
			unsigned m = (unsigned)(rng_next() % 200);
			size_t k = 0;

			/* The watermark is read before the heads: every span of
			 * the passes before is older than it, this pass's spans
			 * were stamped after the last one and are on either side. */
			uint64_t before = newest;

			for (uint32_t i = 0; i < nsub; i++)
				last[i] = wm;
			for (unsigned i = 0; i < m; i++) {
				uint32_t sub = (first + (uint32_t)(rng_next() % busy)) % nsub;
				/* mostly ascending within a sub-ring, ties included;
				 * now and then earlier than the one before */
				uint64_t ts = rng_next() % 16 == 0 ? wm + rng_next() % 400
								   : last[sub] + rng_next() % 4;
				last[sub] = ts;
				newest = ts > newest ? ts : newest;
				put(r, sub, ts, sub, PERFMON_EVENT(PERFMON_BEGIN_STEP, seq));
				pend[npend++] = (struct ref_ev){ ts, sub, seq++ };
			}
			wm += rng_next() % 400;
			if (wm <= before)
				wm = before + 1;
			qsort(pend, npend, sizeof(*pend), ref_cmp);
			n = drain(&rd, out, PASSES * CAP, 0, wm);
			while (k < npend && pend[k].tsc < wm)
				k++;
			ck_assert_msg(n == k, "nsub %u pass %u: %zu released, want %zu", nsub, pass,
				      n, k);
			for (size_t i = 0; i < n; i++) {
				ck_assert_uint_eq(out[i].tsc, pend[i].tsc);
				ck_assert_uint_eq(out[i].point, pend[i].sub);
				ck_assert_uint_eq(PERFMON_EVENT_SEQ(out[i].event), pend[i].seq);
			}
			memmove(pend, pend + k, (npend - k) * sizeof(*pend));
			npend -= k;
		}
		/* Spans stamped at the clock's last value (hostile) are held
		 * back by every pass, and come last when all are released. */
		for (uint32_t i = 0; i < 3; i++) {
			uint32_t sub = i == 1 ? nsub - 1 : 0;
			put(r, sub, UINT64_MAX, sub, PERFMON_EVENT(PERFMON_BEGIN_STEP, seq));
			pend[npend++] = (struct ref_ev){ UINT64_MAX, sub, seq++ };
		}
		qsort(pend, npend, sizeof(*pend), ref_cmp);
		wm = newest + 1;
		n = drain(&rd, out, PASSES * CAP, 0, wm);
		ck_assert_uint_eq(n, npend - 3);
		for (size_t i = 0; i < n; i++)
			ck_assert_uint_eq(PERFMON_EVENT_SEQ(out[i].event), pend[i].seq);
		memmove(pend, pend + n, (npend - n) * sizeof(*pend));
		npend -= n;
		{
			struct ring_batch b;
			ck_assert_uint_eq(ring_reader_release_all(&rd, &b), npend);
			for (size_t i = 0; i < npend; i++) {
				ck_assert_uint_eq(b.spans[i].tsc, pend[i].tsc);
				ck_assert_uint_eq(PERFMON_EVENT_SEQ(b.spans[i].event), pend[i].seq);
			}
		}
		ck_assert_uint_eq(rd.read, seq);
		ck_assert_uint_eq(rd.misordered, 0);
		ring_reader_free(&rd);
		free(r.hdr);
	}
}
END_TEST

/*
 * Large passes come out exactly as a stable sort has them: two busy
 * sub-rings (merged in halves, four chains at once), evenly filled or one
 * far fuller than the other, three (in rounds), and many (12 of 16, and
 * 32), which are sorted by timestamp digits rather than merged in rounds;
 * for timestamps that span one digit, two, three, more than the sort
 * takes (merged in rounds instead), and all equal; with ties across
 * sub-rings everywhere, a sub-ring out of order, and a watermark in the
 * middle that holds part of every sub-ring back.
 */
START_TEST(test_large_pass_matches_a_stable_sort)
{
	static const uint64_t spread[] = { 1u << 10, 1u << 20, UINT64_C(1) << 30,
					   UINT64_C(1) << 40, 0 };
	/* the second: one busy sub-ring gets a sixteenth of the spans */
	static const uint32_t nsubs[] = { 2, 2, 4, 16, 32 }, nbusy[] = { 2, 2, 3, 12, 32 };
	enum { NCONF = sizeof(nsubs) / sizeof(nsubs[0]), MAXSUB = 32, N = 20000 };
	static struct ref_ev ref[N];
	static struct perfmon_event out[N];

	rng_seed(29);
	for (unsigned c = 0; c < NCONF * sizeof(spread) / sizeof(spread[0]); c++) {
		const uint32_t nsub = nsubs[c % NCONF], busy = nbusy[c % NCONF];
		const uint64_t sp = spread[c / NCONF];
		/* room for a busy sub-ring's share twice over: nothing lapped */
		const uint64_t cap = UINT64_C(1) << (64 - __builtin_clzll(2 * N / busy));
		struct ring r = ring_new(nsub, cap);
		struct ring_reader rd;
		uint64_t base = UINT64_C(1) << 50, last[MAXSUB];
		size_t n, k = 0, total = 0;

		ck_assert_int_eq(ring_reader_init(&rd, r.hdr, nsub, cap, NULL, 10, 1000), 0);
		for (uint32_t i = 0; i < nsub; i++)
			last[i] = base;
		for (uint32_t seq = 0; seq < N; seq++) {
			uint32_t sub = c % NCONF == 1 ? rng_next() % 16 == 0 :
				       (uint32_t)(rng_next() % busy);
			/* steps of a few ticks, so equal timestamps abound; the
			 * last busy sub-ring now and then earlier than its last */
			uint64_t step = sp ? rng_next() % (2 * sp / (N / busy) + 2) : 0;
			uint64_t ts = sp && sub == busy - 1 && rng_next() % 8 == 0 ?
				      base + rng_next() % 64 : last[sub] + step;

			last[sub] = ts > last[sub] ? ts : last[sub];
			put(r, sub, ts, sub, PERFMON_EVENT(PERFMON_BEGIN_STEP, seq));
			ref[seq] = (struct ref_ev){ ts, sub, seq };
		}
		qsort(ref, N, sizeof(*ref), ref_cmp);
		/* The first pass releases what lies before the median, the
		 * second the rest. */
		for (unsigned pass = 0; pass < 2; pass++) {
			uint64_t wm = pass ? ref[N - 1].tsc + 1 : ref[N / 2].tsc;

			while (k < N && ref[k].tsc < wm)
				k++;
			n = drain(&rd, out, N, 0, wm);
			ck_assert_msg(total + n == k, "%u busy sub-rings, spread %u, pass %u: %zu "
				      "released, want %zu", busy, c / NCONF, pass, n, k - total);
			for (size_t i = 0; i < n; i++) {
				ck_assert_msg(out[i].tsc == ref[total + i].tsc &&
					      PERFMON_EVENT_SEQ(out[i].event) == ref[total + i].seq,
					      "%u busy sub-rings, spread %u, pass %u: span %zu is %u at "
					      "%llu, want %u at %llu", busy, c / NCONF, pass, i,
					      PERFMON_EVENT_SEQ(out[i].event),
					      (unsigned long long)out[i].tsc, ref[total + i].seq,
					      (unsigned long long)ref[total + i].tsc);
			}
			total += n;
		}
		ck_assert_uint_eq(total, N);
		ck_assert_uint_eq(rd.read, N);
		ck_assert_uint_eq(rd.misordered, 0);
		ring_reader_free(&rd);
		free(r.hdr);
	}
}
END_TEST

START_TEST(test_cross_cpu_span_keyed_by_seq)
{
	struct ring r = ring_new(2, 64);
	struct ring_reader rd;
	struct perfmon_event out[8];

	reader_new(&rd, r, 10, 100);
	/* The end (CPU 1) is reserved and published before the reader gets to
	 * CPU 0's sub-ring; the begin is older and must come out first. */
	put(r, 1, 200, 5, PERFMON_EVENT(PERFMON_END_STEP, 42));
	put(r, 0, 100, 5, PERFMON_EVENT(PERFMON_BEGIN_STEP, 42));
	ck_assert_uint_eq(drain(&rd, out, 8, 0, 1000), 2);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(out[0].event), PERFMON_BEGIN_STEP);
	ck_assert_uint_eq(PERFMON_EVENT_STEP(out[1].event), PERFMON_END_STEP);
	ck_assert_uint_eq(PERFMON_EVENT_SEQ(out[1].event), 42);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* A CPU number at or beyond the sub-ring count (a ring sized for fewer
 * CPUs than the host has) picks sub-ring cpu & (subrings - 1), every slot
 * readable there. */
START_TEST(test_cpu_beyond_the_subrings_wraps)
{
	static const uint32_t cpus[] = { 0, 1, 2, 3, 4, 5, 7, 8, 4095, 4097, UINT32_MAX };
	struct ring r = ring_new(4, 64);
	struct ring_reader rd;
	struct perfmon_event out[16];
	uint64_t want[4] = { 0 };
	size_t n;

	reader_new(&rd, r, 10, 100);
	for (unsigned i = 0; i < sizeof(cpus) / sizeof(*cpus); i++) {
		put(r, cpus[i], 100 + i, cpus[i] & 0xffff, PERFMON_EVENT(PERFMON_VALUE_STEP, 0));
		want[cpus[i] & 3]++;
	}
	for (uint32_t k = 0; k < 4; k++)
		ck_assert_uint_eq(*head(r, k), want[k]);
	n = drain(&rd, out, 16, 0, 1000);
	ck_assert_uint_eq(n, sizeof(cpus) / sizeof(*cpus));
	ck_assert_uint_eq(rd.read, n);
	ck_assert_uint_eq(rd.dropped + rd.stalled, 0);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_lapped_counts_exactly)
{
	struct ring r = ring_new(2, 16);
	struct ring_reader rd;
	struct perfmon_event out[64];
	size_t n;

	reader_new(&rd, r, 10, 100);
	for (uint32_t i = 0; i < 100; i++)
		span(r, 1, i, i);
	for (uint32_t i = 0; i < 5; i++)
		span(r, 0, 1000 + i, 1000 + i);
	/* 100 clock units later: time enough to reserve them all. */
	n = drain(&rd, out, 64, 100, ALL);
	/* Only the newest 16 of sub-ring 1 survive; exactly 84 were
	 * overwritten unread.  Sub-ring 0 lost nothing. */
	ck_assert_uint_eq(n, 21);
	ck_assert_uint_eq(rd.dropped, 84);
	ck_assert_uint_eq(out[0].point, 84);
	ck_assert_uint_eq(out[15].point, 99);
	ck_assert_uint_eq(out[16].point, 1000);
	ck_assert_uint_eq(accounted(&rd), 105);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_claimed_by_newer_lap_is_dropped)
{
	struct ring r = ring_new(1, 16);
	struct ring_reader rd;
	struct perfmon_event out[64];

	reader_new(&rd, r, 10, 100);
	for (uint32_t i = 0; i < 16; i++)
		span(r, 0, i, i);
	/* A producer a lap ahead has claimed slot 0 (busy, index 16). */
	__atomic_store_n(head(r, 0), 17, __ATOMIC_RELAXED);
	slot(r, 0, 16)->marker = 17 | PERFMON_SLOT_BUSY;
	/* Index 16 is in flight: it may be older than the rest, so the pass
	 * waits for it (one grace), then steps over it. */
	ck_assert_uint_eq(drain(&rd, out, 64, 20, ALL), 0);
	ck_assert_uint_eq(drain(&rd, out, 64, 30, ALL), 15);
	ck_assert_uint_eq(rd.dropped, 1);
	ck_assert_uint_eq(out[0].point, 1);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_hole_in_one_subring_while_others_flow)
{
	struct ring r = ring_new(2, 64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	size_t n;

	reader_new(&rd, r, 10, 1000);
	span(r, 0, 1, 1);
	__atomic_fetch_add(head(r, 0), 1, __ATOMIC_RELAXED);   /* reserved, never published */
	for (uint32_t i = 0; i < 5; i++)
		span(r, 1, 10 + i, 10 + i);

	/* Within the grace nothing is released: the hole might be older. */
	ck_assert_uint_eq(drain(&rd, out, 64, 100, ALL), 0);
	ck_assert_uint_eq(drain(&rd, out, 64, 105, ALL), 0);
	/* Grace over: stepped past it, the other sub-ring's events flow. */
	n = drain(&rd, out, 64, 110, ALL);
	ck_assert_uint_eq(n, 6);
	ck_assert_uint_eq(out[0].point, 1);
	ck_assert_uint_eq(out[1].point, 10);
	ck_assert_uint_eq(rd.sub[0].nholes, 1);
	ck_assert_uint_eq(rd.stalled, 0);
	/* Later events in both sub-rings are not held up by the hole. */
	span(r, 0, 20, 20);
	span(r, 1, 21, 21);
	ck_assert_uint_eq(drain(&rd, out, 64, 111, ALL), 2);
	ck_assert_uint_eq(drain(&rd, out, 64, 1109, ALL), 0);
	ck_assert_uint_eq(rd.stalled, 0);
	ck_assert_uint_eq(drain(&rd, out, 64, 1110, ALL), 0);
	ck_assert_uint_eq(rd.stalled, 1);     /* stall timeout counted from the step-over */
	ck_assert_uint_eq(accounted(&rd), 9);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_late_hole_counted_misordered)
{
	struct ring r = ring_new(2, 64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	size_t n;

	reader_new(&rd, r, 1, 1000);
	__atomic_fetch_add(head(r, 0), 1, __ATOMIC_RELAXED);   /* index 0: stopped mid-stamp */
	span(r, 1, 50, 5);
	ck_assert_uint_eq(drain(&rd, out, 64, 1, 100), 0);
	n = drain(&rd, out, 64, 2, 100);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(out[0].point, 5);
	/* The stopped producer finally publishes, with a timestamp older than
	 * what already went out: delivered, and counted, never silent. */
	publish_late(r, 0, 0, 42, 7);
	span(r, 0, 150, 8);
	n = drain(&rd, out, 64, 3, 200);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(out[0].tsc, 42);
	ck_assert_uint_eq(out[1].tsc, 150);
	ck_assert_uint_eq(rd.misordered, 1);
	ck_assert_uint_eq(rd.stalled, 0);
	ck_assert_uint_eq(rd.read, 3);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_one_grace_per_pass_whatever_the_holes)
{
	struct ring r = ring_new(2, 4096);
	struct ring_reader rd;
	struct perfmon_event out[64];
	uint64_t now = 1000, got = 0;

	/* A forged head 3000 ahead in sub-ring 0 and another 500 ahead in
	 * sub-ring 1: 3500 indices nobody will ever publish.  One grace (10)
	 * in all, not one per index, may hold collection up. */
	reader_new(&rd, r, 10, 1000000);
	__atomic_store_n(head(r, 0), 3000, __ATOMIC_RELAXED);
	__atomic_store_n(head(r, 1), 500, __ATOMIC_RELAXED);
	ck_assert_uint_eq(drain(&rd, out, 64, now, ALL), 0);
	now += 10;
	ck_assert_uint_eq(drain(&rd, out, 64, now, ALL), 0);
	ck_assert_uint_eq(rd.sub[0].tail, 3000);
	ck_assert_uint_eq(rd.sub[1].tail, 500);
	/* Real events behind them flow in the very next pass. */
	for (uint32_t i = 0; i < 10; i++)
		span(r, i & 1, 100 + i, i);
	got = drain(&rd, out, 64, now, ALL);
	ck_assert_uint_eq(got, 10);
	ck_assert_uint_eq(rd.sub[0].nholes + rd.sub[1].nholes, 2 * RING_MAX_HOLES);
	ck_assert_uint_eq(rd.stalled, 3500 - 2 * RING_MAX_HOLES);
	ck_assert_uint_eq(accounted(&rd) + 2 * RING_MAX_HOLES, 3510);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_torn_copy_never_returned)
{
	struct ring r = ring_new(1, 16);
	struct ring_reader rd;
	struct perfmon_event out[4];

	reader_new(&rd, r, 10, 100);
	span(r, 0, 1, 1);
	/* A writer a lap ahead has begun overwriting slot 0 (busy marker). */
	slot(r, 0, 0)->marker = 17 | PERFMON_SLOT_BUSY;
	slot(r, 0, 0)->tsc = 999;
	ck_assert_uint_eq(drain(&rd, out, 4, 0, ALL), 0);
	ck_assert_uint_eq(rd.dropped, 1);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* Reserve and publish through a head some forger set, like a producer. */
static void stamp_after_forgery(struct ring r, uint32_t sub, unsigned n, uint32_t point0)
{
	for (unsigned i = 0; i < n; i++)
		span(r, sub, 5000 + i, point0 + i);
}

START_TEST(test_absurd_head_reported_not_counted_as_loss)
{
	struct ring r = ring_new(2, 4096);
	struct ring_reader rd;
	struct perfmon_event out[4096];
	uint64_t now = 100;

	reader_new(&rd, r, 10, 1000);
	for (uint32_t i = 0; i < 10; i++)
		span(r, 0, i, i);
	ck_assert_uint_eq(drain(&rd, out, 4096, now++, ALL), 10);
	/* head = 2^64 - 1: not 1.8e19 lost events, an absurd head. */
	__atomic_store_n(head(r, 0), UINT64_MAX, __ATOMIC_RELAXED);
	while (drain(&rd, out, 4096, now++, ALL) > 0)
		;
	ck_assert_uint_eq(rd.head_resets, 1);
	ck_assert_uint_lt(rd.dropped, 1000);
	/* Producers go on from there and wrap: 2000 real events.  Every one
	 * of their indices lands in exactly one counter. */
	stamp_after_forgery(r, 0, 2000, 100);
	span(r, 1, 9000, 9000);
	for (int i = 0; i < 50; i++)
		drain(&rd, out, 4096, now++, ALL);
	ck_assert_uint_eq(*head(r, 0), 1999);
	ck_assert_uint_eq(accounted(&rd), 10 + 2000 + 1);
	/* Indices 2^64-1 and 0..9 may hold events read in the old numbering:
	 * dropped, never read twice; the rest were read. */
	ck_assert_uint_eq(rd.dropped, 11);
	ck_assert_uint_eq(rd.read, 10 + 1989 + 1);
	ck_assert_uint_eq(rd.head_resets, 1);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/*
 * A restarted daemon resumes every sub-ring at its own saved position:
 * what was read before is not read again, what was stamped meanwhile is,
 * in time order across sub-rings; a position ahead of its head (the head
 * was rewound while no reader ran) reads nothing twice either.
 */
START_TEST(test_resume_at_each_subrings_tail)
{
	struct ring r = ring_new(4, 64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	/* sub-ring 0 read up to 3 of 10, 1 not at all, 2 entirely, 3 saved at
	 * 8 but its head is at 5 */
	const uint64_t tails[4] = { 3, 0, 6, 8 };
	const unsigned stamped[4] = { 10, 4, 6, 5 };
	uint64_t prev = 0;
	size_t n;

	/* Sub-ring k's i-th span at time 10 * i + k: they interleave. */
	for (uint32_t k = 0; k < 4; k++)
		for (uint32_t i = 0; i < stamped[k]; i++)
			span(r, k, 10 * i + k, 100 * k + i);
	ck_assert_int_eq(ring_reader_init(&rd, r.hdr, 4, 64, tails, 10, 100), 0);
	ck_assert_uint_eq(rd.head_resets, 1);   /* sub-ring 3: head behind its tail */
	n = drain(&rd, out, 64, 0, 500);
	ck_assert_uint_eq(n, (10 - 3) + 4);
	for (size_t i = 0; i < n; i++) {
		uint32_t k = out[i].point / 100, idx = out[i].point % 100;
		ck_assert_msg(k == 0 || k == 1, "span %u of sub-ring %u read again", idx, k);
		ck_assert_uint_ge(idx, tails[k]);
		ck_assert_uint_ge(out[i].tsc, prev);
		prev = out[i].tsc;
	}
	/* Sub-ring 3 goes on from its head: indices 5..7 may hold what the
	 * last daemon read, counted as dropped; 8 and 9 are new. */
	for (uint32_t i = 5; i < 10; i++)
		span(r, 3, 1000 + i, 300 + i);
	n = drain(&rd, out, 64, 1, 2000);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(out[0].point, 308);
	ck_assert_uint_eq(out[1].point, 309);
	ck_assert_uint_eq(rd.read, (10 - 3) + 4 + 2);
	ck_assert_uint_eq(rd.dropped, 3);
	ck_assert_uint_eq(rd.misordered, 0);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_head_backwards_and_jump_resync)
{
	struct ring r = ring_new(1, 16);
	struct ring_reader rd;
	struct perfmon_event out[32];
	uint64_t now = 1;

	reader_new(&rd, r, 10, 100);
	for (int i = 0; i < 10; i++)
		span(r, 0, (uint64_t)i, (uint32_t)i);
	ck_assert_uint_eq(drain(&rd, out, 32, now++, ALL), 10);
	__atomic_store_n(head(r, 0), 3, __ATOMIC_RELAXED);     /* hostile reset */
	ck_assert_uint_eq(drain(&rd, out, 32, now++, ALL), 0);
	ck_assert_uint_eq(rd.head_resets, 1);
	for (int i = 0; i < 10; i++)
		span(r, 0, 100 + (uint64_t)i, 100 + (uint32_t)i);   /* indices 3..12 */
	while (drain(&rd, out, 32, now++, ALL) > 0)
		;
	/* 3..9 may be old events: dropped; 10..12 read. */
	ck_assert_uint_eq(rd.read, 13);
	ck_assert_uint_eq(rd.dropped, 7);
	__atomic_store_n(head(r, 0), UINT64_C(1) << 62, __ATOMIC_RELAXED);  /* hostile jump */
	drain(&rd, out, 32, now++, ALL);
	ck_assert_uint_eq(rd.head_resets, 2);
	ck_assert_uint_eq(rd.dropped, 7);
	ck_assert_uint_eq(accounted(&rd), 20);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_future_timestamp_not_held_for_ever)
{
	struct ring r = ring_new(2, 64);
	struct ring_reader rd;
	struct perfmon_event out[8];

	reader_new(&rd, r, 10, 100);
	span(r, 0, UINT64_C(1) << 60, 1);     /* hostile: far in the future */
	span(r, 1, 10, 2);
	ck_assert_uint_eq(drain(&rd, out, 8, 0, 100), 1);
	ck_assert_uint_eq(out[0].point, 2);
	ck_assert_uint_eq(drain(&rd, out, 8, 1, 200), 1);
	ck_assert_uint_eq(out[0].point, 1);
	ck_assert_uint_eq(rd.misordered, 1);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_final_drain_settles)
{
	struct ring r = ring_new(2, 64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	struct ring_batch b;
	size_t got = 0;

	reader_new(&rd, r, 10, 100);
	span(r, 0, 500, 1);
	span(r, 1, 400, 2);
	ring_reader_freeze(&rd);
	ck_assert(!ring_reader_settled(&rd));
	got += drain(&rd, out, 64, 0, 450);   /* releases 400, holds 500 */
	ck_assert(ring_reader_settled(&rd));
	span(r, 0, 600, 3);                   /* after the final heads: not read */
	got += drain(&rd, out, 64, 0, 1000);
	ck_assert_uint_eq(got, 1);
	ck_assert_uint_eq(ring_reader_release_all(&rd, &b), 1);
	ck_assert_uint_eq(b.spans[0].point, 1);
	ck_assert_uint_eq(rd.read, 2);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* An idle pass (no head moved since a pass that left nothing behind) skips
 * the per-sub-ring work, but is a pass all the same: the watermarks move
 * (a late span is still counted misordered, a head jump is still measured
 * from the last head read), held spans and watched holes still make a
 * pass do its work, and a final drain still settles. */
START_TEST(test_idle_pass_is_still_a_pass)
{
	struct ring r = ring_new(64, 64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	uint64_t p;

	reader_new(&rd, r, 2, 1000);
	span(r, 3, 10, 1);
	span(r, 60, 20, 2);
	ck_assert_uint_eq(drain(&rd, out, 64, 1, 100), 2);
	p = ring_reader_progress(&rd);
	ck_assert_uint_eq(drain(&rd, out, 64, 2, 200), 0);
	ck_assert_uint_eq(drain(&rd, out, 64, 3, 300), 0);
	ck_assert_uint_eq(ring_reader_progress(&rd), p);   /* nothing was walked */

	/* A span stamped before the last idle pass's watermark (hostile: the
	 * protocol stamps after reserving) goes out counted, as after any pass. */
	span(r, 10, 250, 3);
	span(r, 11, 400, 4);
	ck_assert_uint_eq(drain(&rd, out, 64, 4, 500), 2);
	ck_assert_uint_eq(out[0].tsc, 250);
	ck_assert_uint_eq(out[1].tsc, 400);
	ck_assert_uint_eq(rd.misordered, 1);
	ck_assert_uint_gt(ring_reader_progress(&rd), p);

	/* A span younger than the watermark is held: the next pass releases it
	 * though no head moved. */
	span(r, 5, 600, 5);
	ck_assert_uint_eq(drain(&rd, out, 64, 5, 550), 0);
	ck_assert_uint_eq(drain(&rd, out, 64, 6, 700), 1);
	ck_assert_uint_eq(out[0].point, 5);

	/* A hole keeps passes working: published after its grace, it is read. */
	__atomic_fetch_add(head(r, 7), 1, __ATOMIC_RELAXED);
	ck_assert_uint_eq(drain(&rd, out, 64, 7, 800), 0);   /* waits out the grace */
	ck_assert_uint_eq(drain(&rd, out, 64, 10, 800), 0);  /* steps over: a hole */
	ck_assert_uint_eq(drain(&rd, out, 64, 11, 900), 0);
	publish_late(r, 7, 0, 850, 6);
	ck_assert_uint_eq(drain(&rd, out, 64, 12, 1000), 1);
	ck_assert_uint_eq(out[0].point, 6);
	ck_assert_uint_eq(drain(&rd, out, 64, 13, 1100), 0);
	p = ring_reader_progress(&rd);

	/* Head jumps are measured from the idle pass's head read at 1000: 70
	 * slots in 5 units is more than a ring of 64 plus 5 reservations. */
	ck_assert_uint_eq(drain(&rd, out, 64, 1000, 1200), 0);
	ck_assert_uint_eq(ring_reader_progress(&rd), p);
	__atomic_fetch_add(head(r, 0), 70, __ATOMIC_RELAXED);
	ck_assert_uint_eq(drain(&rd, out, 64, 1005, 1300), 0);
	ck_assert_uint_eq(rd.head_resets, 1);
	ring_reader_free(&rd);

	/* A final drain of an idle ring settles at its first pass. */
	memset(r.hdr, 0, PERFMON_RING_BYTES(64, 64));
	r.hdr->capacity = 64;
	r.hdr->subrings = 64;
	reader_new(&rd, r, 2, 1000);
	span(r, 9, 10, 1);
	ck_assert_uint_eq(drain(&rd, out, 64, 1, 100), 1);
	ck_assert_uint_eq(drain(&rd, out, 64, 2, 200), 0);
	ring_reader_freeze(&rd);
	ck_assert(!ring_reader_settled(&rd));
	ck_assert_uint_eq(drain(&rd, out, 64, 3, 300), 0);
	ck_assert(ring_reader_settled(&rd));
	ck_assert_uint_eq(rd.read, 1);
	ck_assert_uint_eq(accounted(&rd), 1);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* ---- concurrent: producers stamping flat out ---------------------------- */

struct prod_arg {
	struct ring r;
	uint32_t id, sub;
	uint64_t count;
	bool spans;
};

static void *producer(void *p)
{
	struct prod_arg *a = p;
	uintptr_t bits = perfmon__hot_bits(a->r.cap, a->r.nsub);
	for (uint64_t i = 0; i < a->count; i++) {
		if (a->spans)
			perfmon__publish_sub((char *)a->r.hdr, bits, a->sub, PERFMON__TS_END, 0,
					     a->id, PERFMON_EVENT(PERFMON_END_STEP, (uint32_t)i));
		else
			perfmon__publish_sub((char *)a->r.hdr, bits, a->sub, PERFMON__TS_VALUE,
					     ((uint64_t)a->id << 40) | i, a->id,
					     PERFMON_EVENT(PERFMON_VALUE_STEP, (uint32_t)i));
	}
	return NULL;
}

static uint64_t heads_sum(struct ring r)
{
	uint64_t s = 0;
	for (uint32_t k = 0; k < r.nsub; k++)
		s += __atomic_load_n(head(r, k), __ATOMIC_ACQUIRE);
	return s;
}

START_TEST(test_tiny_ring_lapped_hard)
{
	enum { THREADS = 3, PER = 300000 };
	struct ring r = ring_new(2, 16);
	struct ring_reader rd;
	struct perfmon_event out[8];
	struct prod_arg args[THREADS];
	pthread_t th[THREADS];
	int64_t last[THREADS];
	uint64_t produced = (uint64_t)THREADS * PER;
	size_t n;

	/* Three threads on two sub-rings: two of them share one. */
	reader_new(&rd, r, UINT64_MAX / 2, UINT64_MAX / 2);
	ring_reader_clock(&rd, test_now_ns);
	for (int t = 0; t < THREADS; t++) {
		args[t] = (struct prod_arg){ r, (uint32_t)t + 1, (uint32_t)t % 2, PER, false };
		last[t] = -1;
		pthread_create(&th[t], NULL, producer, &args[t]);
	}
	for (;;) {
		int done = heads_sum(r) >= produced && accounted(&rd) >= produced;
		/* A real clock: heads cannot outrun it, so none looks forged. */
		n = drain(&rd, out, 8, test_now_ns(), ALL);
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
	ck_assert_uint_eq(rd.head_resets, 0);   /* real laps, never taken as forged */
	ck_assert_uint_gt(rd.dropped, 0);
	ck_assert_uint_gt(rd.read, 0);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

START_TEST(test_concurrent_merge_is_exact)
{
	/* More threads than sub-rings, stamping real TSC readings flat out;
	 * the reader's watermark is a real fenced reading.  Every span comes
	 * out in global timestamp order, none counted misordered, and with a
	 * ring large enough nothing is lost. */
	enum { THREADS = 3, PER = 100000 };
	struct ring r = ring_new(2, 1 << 18);   /* holds everything: no loss */
	struct ring_reader rd;
	struct prod_arg args[THREADS];
	pthread_t th[THREADS];
	uint64_t produced = (uint64_t)THREADS * PER, got = 0, prev = 0, per[THREADS] = { 0 };
	struct ring_batch b;

	reader_new(&rd, r, UINT64_MAX / 2, UINT64_MAX / 2);
	for (int t = 0; t < THREADS; t++) {
		args[t] = (struct prod_arg){ r, (uint32_t)t, (uint32_t)t % 2, PER, true };
		pthread_create(&th[t], NULL, producer, &args[t]);
	}
	while (got < produced) {
		uint64_t wm = perfmon__now_begin();
		size_t n = ring_drain(&rd, wm, wm, &b);
		ck_assert_uint_eq(b.nvalues, 0);
		for (size_t k = 0; k < b.nspans; k++) {
			ck_assert_uint_ge(b.spans[k].tsc, prev);
			prev = b.spans[k].tsc;
			ck_assert_uint_lt(b.spans[k].point, THREADS);
			/* each thread's own sequence, in order */
			ck_assert_uint_eq(PERFMON_EVENT_SEQ(b.spans[k].event),
					  per[b.spans[k].point]++ & PERFMON_MAX_SEQ);
		}
		got += n;
		if (rd.dropped)
			break;
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	ck_assert_uint_eq(rd.dropped, 0);
	ck_assert_uint_eq(rd.misordered, 0);
	ck_assert_uint_eq(rd.read, produced);
	ck_assert_uint_eq(got, produced);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* A shrink wiped the ring from `cut_at` on; its owner restored the size.
 * A sub-ring whose head went with it loses what was unread and its watched
 * holes, counted dropped once; the numbering goes on, so what is stamped
 * afterwards is read and nothing twice.  A sub-ring whose head survived
 * keeps its numbering and its usual accounting. */
START_TEST(test_rebase_after_shrink)
{
	struct ring r = ring_new(2, 64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	size_t cut = (size_t)((char *)head(r, 1) - (char *)r.hdr);

	reader_new(&rd, r, 10, 1000000);
	for (uint32_t i = 0; i < 10; i++)
		span(r, 0, 100 + i, 1);
	for (uint32_t i = 0; i < 5; i++)
		span(r, 1, 200 + i, 2);
	(*head(r, 1))++;             /* a producer died mid-stamp in sub-ring 1 */
	ck_assert_uint_eq(drain(&rd, out, 64, 0, ALL), 0);    /* in its grace */
	ck_assert_uint_eq(drain(&rd, out, 64, 20, ALL), 15);  /* stepped over */
	ck_assert_uint_eq(rd.sub[1].nholes, 1);

	/* Cut at sub-ring 1's head: sub-ring 0's head survives. */
	memset((char *)r.hdr + cut, 0, PERFMON_RING_BYTES(2, 64) - cut);
	span(r, 1, 300, 3);          /* reserved before the rebase: lost */
	ck_assert_uint_eq(ring_reader_rebase(&rd, cut), 2);
	ck_assert_uint_eq(rd.dropped, 2);
	ck_assert_uint_eq(rd.sub[1].nholes, 0);
	for (uint32_t i = 0; i < 4; i++)
		span(r, 1, 400 + i, 4);
	span(r, 0, 500, 5);
	ck_assert_uint_eq(drain(&rd, out, 64, 30, ALL), 5);
	for (size_t k = 0; k < 4; k++)
		ck_assert_uint_eq(out[k].point, 4);
	ck_assert_uint_eq(out[4].point, 5);

	/* A hole in sub-ring 0, then a cut at 0: every head goes, the hole
	 * with it. */
	(*head(r, 0))++;
	ck_assert_uint_eq(drain(&rd, out, 64, 40, ALL), 0);
	ck_assert_uint_eq(drain(&rd, out, 64, 60, ALL), 0);
	ck_assert_uint_eq(rd.sub[0].nholes, 1);
	memset(r.hdr, 0, PERFMON_RING_BYTES(2, 64));
	ck_assert_uint_eq(ring_reader_rebase(&rd, 0), 1);
	span(r, 0, 600, 6);
	span(r, 1, 601, 6);
	ck_assert_uint_eq(drain(&rd, out, 64, 70, ALL), 2);
	ck_assert_uint_eq(rd.read, 22);
	ck_assert_uint_eq(rd.dropped, 3);
	ck_assert_uint_eq(rd.stalled, 0);
	ck_assert_uint_eq(rd.head_resets, 0);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* While the mapping has faulted and its owner has not restored it yet, no
 * pass starts: wiped heads are never taken for a forgery. */
START_TEST(test_no_pass_on_an_unrestored_mapping)
{
	struct ring r = ring_new(1, 64);
	struct ring_reader rd;
	struct perfmon_event out[64];
	uint64_t faults = 0, handled = 0;

	reader_new(&rd, r, 10, 1000000);
	ring_reader_guard(&rd, &faults, &handled);
	for (uint32_t i = 0; i < 10; i++)
		span(r, 0, 100 + i, 1);
	ck_assert_uint_eq(drain(&rd, out, 64, 0, ALL), 10);
	faults = 1;                       /* the cut, seen as a fault */
	memset(r.hdr, 0, PERFMON_RING_BYTES(1, 64));
	ck_assert_uint_eq(drain(&rd, out, 64, 10, ALL), 0);
	ck_assert_uint_eq(rd.head_resets, 0);
	ck_assert_uint_eq(ring_reader_rebase(&rd, 0), 0);
	handled = 1;                      /* restored */
	span(r, 0, 200, 2);
	ck_assert_uint_eq(drain(&rd, out, 64, 20, ALL), 1);
	ck_assert_uint_eq(out[0].point, 2);
	ck_assert_uint_eq(rd.head_resets, 0);
	ck_assert_uint_eq(accounted(&rd), 11);

	/* A fault while the reader is idle, with events reserved meanwhile and
	 * a mapping that reads whole again: the heads read in the pass that
	 * did not start are no idle reading, and the next pass reads them. */
	ck_assert_uint_eq(drain(&rd, out, 64, 30, ALL), 0);   /* idle */
	span(r, 0, 300, 3);
	faults = 2;
	ck_assert_uint_eq(drain(&rd, out, 64, 40, ALL), 0);
	handled = 2;                      /* nothing was lost after all */
	ck_assert_uint_eq(drain(&rd, out, 64, 50, ALL), 1);
	ck_assert_uint_eq(out[0].point, 3);
	ck_assert_uint_eq(accounted(&rd), 12);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* A jump that producers could not have reserved in the time elapsed, even
 * one far below 2^64 (2^32 - 1 here), is absurd, not a loss of billions;
 * and a restart that finds a head rewound below where it stopped replays
 * nothing. */
START_TEST(test_jump_beyond_the_clock_is_absurd)
{
	struct ring r = ring_new(1, 4096);
	struct ring_reader rd;
	struct perfmon_event out[64];
	uint64_t tails[1];

	reader_new(&rd, r, 10, 1000);
	for (uint32_t i = 0; i < 10; i++)
		span(r, 0, i, i);
	ck_assert_uint_eq(drain(&rd, out, 64, 100, ALL), 10);
	__atomic_store_n(head(r, 0), 10 + (UINT64_C(1) << 32) - 1, __ATOMIC_RELAXED);
	for (uint64_t now = 200; now < 260; now++)
		drain(&rd, out, 64, now, ALL);
	ck_assert_uint_eq(rd.head_resets, 1);
	ck_assert_uint_lt(rd.dropped, 100);
	ring_reader_free(&rd);

	/* Restart at the saved tail 10 with the head rewound to 4: the
	 * indices up to 10 may hold events read before. */
	__atomic_store_n(head(r, 0), 4, __ATOMIC_RELAXED);
	tails[0] = 10;
	ck_assert_int_eq(ring_reader_init(&rd, r.hdr, 1, 4096, tails, 10, 1000), 0);
	ck_assert_uint_eq(rd.head_resets, 1);
	for (uint32_t i = 0; i < 8; i++)
		span(r, 0, 300 + i, 7);   /* indices 4..11 */
	ck_assert_uint_eq(drain(&rd, out, 64, 400, ALL), 2);
	ck_assert_uint_eq(out[0].tsc, 306);
	ck_assert_uint_eq(rd.dropped, 6);
	ck_assert_uint_eq(rd.read, 2);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* A reader preempted between taking `now` and reading the heads must not
 * take what producers reserved meanwhile for a forgery: the bound is the
 * time between two head reads, from the clock read after them. */
static uint64_t fake_clock;

static uint64_t read_fake_clock(void)
{
	return fake_clock;
}

START_TEST(test_preempted_before_the_heads_is_no_forgery)
{
	struct ring r = ring_new(1, 64);
	struct ring_reader rd;
	struct perfmon_event out[64];

	reader_new(&rd, r, 10, 1000000);
	ring_reader_clock(&rd, read_fake_clock);
	fake_clock = 100;
	span(r, 0, 1, 1);
	ck_assert_uint_eq(drain(&rd, out, 64, 100, ALL), 1);
	/* `now` is 101, then 5000 units pass before the heads are read, in
	 * which producers reserve 1000 slots (lapping the ring). */
	for (uint32_t i = 0; i < 1000; i++)
		span(r, 0, 10 + i, 2);
	fake_clock = 5101;
	ck_assert_uint_eq(drain(&rd, out, 64, 101, ALL), 64);
	ck_assert_uint_eq(rd.head_resets, 0);
	ck_assert_uint_eq(rd.dropped, 1000 - 64);
	ck_assert_uint_eq(accounted(&rd), 1001);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* Pages of `buf` (its whole pages) that are not resident. */
static size_t pages_not_resident(const void *buf, size_t bytes)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), missing = 0;
	uintptr_t lo = ((uintptr_t)buf + pg - 1) & ~(uintptr_t)(pg - 1);
	uintptr_t hi = ((uintptr_t)buf + bytes) & ~(uintptr_t)(pg - 1);
	unsigned char *vec;

	if (hi <= lo)
		return 0;
	vec = malloc((hi - lo) / pg);
	ck_assert_ptr_nonnull(vec);
	ck_assert_int_eq(mincore((void *)lo, hi - lo, vec), 0);
	for (size_t i = 0; i < (hi - lo) / pg; i++)
		missing += !(vec[i] & 1);
	free(vec);
	return missing;
}

/* The buffers a pass fills are resident from the start: a first large
 * backlog must not cost the drain thread a page fault per page. */
START_TEST(test_buffers_resident_before_the_first_pass)
{
	struct ring r = ring_new(2, 1u << 16);
	struct ring_reader rd;
	size_t bytes;

	reader_new(&rd, r, 10, 1000);
	/* Each buffer holds a pass of every sub-ring: megabytes here. */
	bytes = (size_t)rd.nsub * rd.seg_cap * sizeof(struct perfmon_event);
	ck_assert_uint_ge(bytes, 2 * ((size_t)1 << 16) * sizeof(struct perfmon_event));
	ck_assert_uint_eq(pages_not_resident(rd.sub_spans, bytes), 0);
	ck_assert_uint_eq(pages_not_resident(rd.merged, bytes), 0);
	ck_assert_uint_eq(pages_not_resident(rd.values, bytes), 0);
	ck_assert_ptr_null(rd.radix);   /* 2 sub-rings: merged, never radix-sorted */
	ring_reader_free(&rd);
	free(r.hdr);
	/* With more than 8 sub-rings, the radix sort's counts too. */
	r = ring_new(16, 1u << 10);
	reader_new(&rd, r, 10, 1000);
	ck_assert_ptr_nonnull(rd.radix);
	ck_assert_uint_eq(pages_not_resident(rd.radix, 3 * 4096 * sizeof(uint32_t)), 0);
	ring_reader_free(&rd);
	free(r.hdr);
}
END_TEST

/* No page of [buf, buf + bytes) is mapped any more. */
static bool all_unmapped(const void *buf, size_t bytes)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char v;

	for (uintptr_t p = (uintptr_t)buf & ~(uintptr_t)(pg - 1); p < (uintptr_t)buf + bytes; p += pg)
		if (mincore((void *)p, pg, &v) == 0 || errno != ENOMEM)
			return false;
	return true;
}

/* The pass buffers start on 2 MiB boundaries, where transparent huge pages
 * can back them, and freeing the reader returns every page of each. */
START_TEST(test_buffers_huge_page_aligned_and_returned)
{
	struct ring r = ring_new(64, 1u << 10);
	struct ring_reader rd;
	const size_t huge = (size_t)2 << 20;
	const void *bufs[3];
	size_t bytes;

	reader_new(&rd, r, 10, 1000);
	bytes = rd.max_values * sizeof(struct perfmon_event);
	ck_assert_uint_gt(bytes, huge);   /* more than one huge page, and a tail */
	bufs[0] = rd.sub_spans;
	bufs[1] = rd.merged;
	bufs[2] = rd.values;
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq((uintptr_t)bufs[i] % huge, 0);
		ck_assert_uint_eq(pages_not_resident(bufs[i], bytes), 0);
	}
	ring_reader_free(&rd);
	for (int i = 0; i < 3; i++)
		ck_assert(all_unmapped(bufs[i], bytes));
	free(r.hdr);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("reader");
	TCase *tcc = tcase_create("concurrent");

	tcase_add_test(tc, test_in_order_batches);
	tcase_add_test(tc, test_merge_restores_time_order);
	tcase_add_test(tc, test_merge_matches_a_stable_sort);
	tcase_add_test(tc, test_large_pass_matches_a_stable_sort);
	tcase_add_test(tc, test_cross_cpu_span_keyed_by_seq);
	tcase_add_test(tc, test_cpu_beyond_the_subrings_wraps);
	tcase_add_test(tc, test_lapped_counts_exactly);
	tcase_add_test(tc, test_claimed_by_newer_lap_is_dropped);
	tcase_add_test(tc, test_hole_in_one_subring_while_others_flow);
	tcase_add_test(tc, test_late_hole_counted_misordered);
	tcase_add_test(tc, test_one_grace_per_pass_whatever_the_holes);
	tcase_add_test(tc, test_torn_copy_never_returned);
	tcase_add_test(tc, test_absurd_head_reported_not_counted_as_loss);
	tcase_add_test(tc, test_head_backwards_and_jump_resync);
	tcase_add_test(tc, test_resume_at_each_subrings_tail);
	tcase_add_test(tc, test_future_timestamp_not_held_for_ever);
	tcase_add_test(tc, test_final_drain_settles);
	tcase_add_test(tc, test_idle_pass_is_still_a_pass);
	tcase_add_test(tc, test_rebase_after_shrink);
	tcase_add_test(tc, test_jump_beyond_the_clock_is_absurd);
	tcase_add_test(tc, test_preempted_before_the_heads_is_no_forgery);
	tcase_add_test(tc, test_no_pass_on_an_unrestored_mapping);
	tcase_add_test(tc, test_buffers_resident_before_the_first_pass);
	tcase_add_test(tc, test_buffers_huge_page_aligned_and_returned);
	tcase_add_test(tcc, test_tiny_ring_lapped_hard);
	tcase_add_test(tcc, test_concurrent_merge_is_exact);
	tcase_set_timeout(tcc, 120);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tcc);
	return check_run(s);
}
