/*
 * check_seq.c - spans keyed by (point, seq) in the pairing engine
 * (src/pairing.c): interleaved sequences, seq kept out of the stage key,
 * the no-seq bucket, reuse and 24-bit aliasing, eviction order at a full
 * open-span table, the age sweep and the peak of open spans.
 */
#include "build-config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_main.h"
#include "pairing.h"

static struct pairing *P;
static struct pairing_interval IV;
static uint64_t flip_clock;

static void use_engine(uint32_t max_open, uint64_t stall)
{
	struct pairing_config cfg = {
		.max_open_spans = max_open,
		.max_stages = 256,
		.stall_ticks = stall,
	};

	pairing_free(P);
	P = pairing_new(&cfg);
	ck_assert_ptr_nonnull(P);
	flip_clock = 0;
}

static void setup(void)
{
	use_engine(4096, 0);
}

static void teardown(void)
{
	pairing_free(P);
	P = NULL;
}

static void ev(uint32_t point, uint8_t step, uint64_t ts, uint32_t seq)
{
	struct perfmon_event e = { .tsc = ts, .point = point, .event = PERFMON_EVENT(step, seq) };

	pairing_feed(P, &e, 1);
}

static void begin(uint32_t point, uint32_t seq, uint64_t ts)
{
	ev(point, PERFMON_BEGIN_STEP, ts, seq);
}

static void end(uint32_t point, uint32_t seq, uint64_t ts)
{
	ev(point, PERFMON_END_STEP, ts, seq);
}

static void snap(void)
{
	ck_assert(pairing_flip(P, ++flip_clock));
	ck_assert(pairing_collect(P, &IV));
}

static void unsnap(void)
{
	pairing_release(P);
}

static const struct accum *total(uint32_t point)
{
	struct pairing_row r;

	ck_assert(pairing_find_row(P, PAIRING_TOTAL, point, 0, 0, &r));
	return r.interval;
}

static struct pairing_anomalies anomalies(uint32_t point)
{
	struct pairing_anomalies none = { 0, 0, 0, 0 };
	struct pairing_row r;

	if (!pairing_find_row(P, PAIRING_TOTAL, point, 0, 0, &r))
		return none;
	return *r.anomalies;
}

START_TEST(test_interleaved_seqs)
{
	struct pairing_anomalies a;

	begin(1, 10, 1000);
	begin(1, 11, 1100);
	begin(1, 12, 1200);
	end(1, 11, 1500);    /* 400 */
	end(1, 10, 1900);    /* 900 */
	end(1, 12, 1800);    /* 600 */
	snap();
	ck_assert_uint_eq(total(1)->count, 3);
	ck_assert_uint_eq(accum_min(total(1)), 400);
	ck_assert_uint_eq(accum_max(total(1)), 900);
	a = anomalies(1);
	ck_assert(!pairing_anomalies_any(&a));
	unsnap();
}
END_TEST

START_TEST(test_seq_not_in_stage_key)
{
	uint32_t seq;
	struct pairing_row r;

	for (seq = 1; seq <= 50; seq++)
		begin(2, seq, seq * 10);
	for (seq = 1; seq <= 50; seq++)
		ev(2, 1, 1000 + seq * 10, seq);
	for (seq = 1; seq <= 50; seq++)
		end(2, seq, 2000 + seq * 10);
	snap();
	ck_assert_uint_eq(IV.nstages, 3);
	ck_assert(pairing_find_row(P, PAIRING_STAGE, 2, 0, 1, &r));
	ck_assert_uint_eq(r.interval->count, 50);
	ck_assert(pairing_find_row(P, PAIRING_STAGE, 2, 1, 0xFF, &r));
	ck_assert_uint_eq(r.interval->count, 50);
	ck_assert_uint_eq(total(2)->count, 50);
	unsnap();
}
END_TEST

START_TEST(test_no_seq_one_bucket)
{
	begin(3, PERFMON_NO_SEQ, 100);
	begin(3, PERFMON_NO_SEQ, 200);
	end(3, PERFMON_NO_SEQ, 300);
	end(3, PERFMON_NO_SEQ, 400);
	snap();
	ck_assert_uint_eq(anomalies(3).abandoned, 1);
	ck_assert_uint_eq(anomalies(3).orphan, 1);
	ck_assert_uint_eq(total(3)->count, 1);
	ck_assert_uint_eq(accum_min(total(3)), 100);
	unsnap();
}
END_TEST

START_TEST(test_reused_seq)
{
	begin(4, 77, 1000);
	begin(4, 77, 1400);
	end(4, 77, 1500);
	snap();
	ck_assert_uint_eq(anomalies(4).abandoned, 1);
	ck_assert_uint_eq(total(4)->count, 1);
	ck_assert_uint_eq(accum_min(total(4)), 100);
	unsnap();
}
END_TEST

START_TEST(test_same_seq_other_points)
{
	struct pairing_anomalies a;

	begin(5, 9, 100);
	begin(6, 9, 150);
	end(5, 9, 300);
	end(6, 9, 950);
	snap();
	ck_assert_uint_eq(accum_min(total(5)), 200);
	ck_assert_uint_eq(accum_min(total(6)), 800);
	a = anomalies(5);
	ck_assert(!pairing_anomalies_any(&a));
	a = anomalies(6);
	ck_assert(!pairing_anomalies_any(&a));
	unsnap();
}
END_TEST

START_TEST(test_seq_aliasing)
{
	/* PERFMON_MAX_SEQ + 2 keeps its low 24 bits: it is seq 1. */
	begin(7, 1, 100);
	begin(7, PERFMON_MAX_SEQ + 2, 200);
	end(7, 1, 500);
	snap();
	ck_assert_uint_eq(anomalies(7).abandoned, 1);
	ck_assert_uint_eq(accum_min(total(7)), 300);
	unsnap();
	/* Top seq bits never leak into the step. */
	ck_assert_uint_eq(PERFMON_EVENT_STEP(PERFMON_EVENT(0x7F, PERFMON_MAX_SEQ + 1)), 0x7F);
	ck_assert_uint_eq(PERFMON_EVENT_SEQ(PERFMON_EVENT(0xFF, 0xFFFFFFFF)), PERFMON_MAX_SEQ);
}
END_TEST

START_TEST(test_eviction_small_table)
{
	uint32_t seq;

	use_engine(8, 0);
	for (seq = 1; seq <= 12; seq++)
		begin(8, seq, seq * 10);
	ck_assert_uint_eq(pairing_open_spans(P), 8);
	/* Oldest first: seqs 1..4 are gone, 5..12 still pair. */
	for (seq = 1; seq <= 12; seq++)
		end(8, seq, 1000);
	snap();
	ck_assert_uint_eq(anomalies(8).abandoned, 4);
	ck_assert_uint_eq(anomalies(8).orphan, 4);
	ck_assert_uint_eq(total(8)->count, 8);
	ck_assert_uint_eq(accum_min(total(8)), 1000 - 120);
	ck_assert_uint_eq(accum_max(total(8)), 1000 - 50);
	unsnap();
}
END_TEST

START_TEST(test_eviction_order_batch)
{
	uint32_t seq;

	use_engine(64, 0);
	for (seq = 1; seq <= 64 + 12; seq++)
		begin(9, seq, seq);
	for (seq = 1; seq <= 64 + 12; seq++)
		end(9, seq, 10000);
	snap();
	/* Exactly seqs 1..12 were evicted: 12 orphans, 64 spans. */
	ck_assert_uint_eq(anomalies(9).abandoned, 12);
	ck_assert_uint_eq(anomalies(9).orphan, 12);
	ck_assert_uint_eq(total(9)->count, 64);
	ck_assert_uint_eq(accum_max(total(9)), 10000 - 13);
	unsnap();
}
END_TEST

START_TEST(test_touched_not_evicted)
{
	uint32_t seq;

	use_engine(4, 0);
	for (seq = 1; seq <= 4; seq++)
		begin(10, seq, seq);
	/* Seq 1 is oldest by begin but touched by a step since. */
	ev(10, 1, 50, 1);
	begin(10, 5, 60);        /* evicts seq 2 */
	begin(10, 6, 70);        /* evicts seq 3 */
	for (seq = 1; seq <= 6; seq++)
		end(10, seq, 100);
	snap();
	ck_assert_uint_eq(anomalies(10).abandoned, 2);
	ck_assert_uint_eq(anomalies(10).orphan, 2);
	ck_assert_uint_eq(total(10)->count, 4);
	ck_assert_uint_eq(accum_max(total(10)), 99);   /* seq 1 survived */
	unsnap();
}
END_TEST

START_TEST(test_sweep_ages)
{
	use_engine(64, 5000);
	begin(11, 1, 1000);
	begin(11, 2, 6000);
	begin(11, 3, 9000);
	/* Only the span last touched at 1000 is older than 5000 at 10000. */
	ck_assert_uint_eq(pairing_sweep(P, 10000), 1);
	ck_assert_uint_eq(pairing_open_spans(P), 2);
	/* A step refreshes a span's age. */
	ev(11, 1, 10500, 2);
	ck_assert_uint_eq(pairing_sweep(P, 14500), 1);    /* seq 3 (9000) */
	ck_assert_uint_eq(pairing_sweep(P, 15500), 0);    /* seq 2 at 10500: 5000, not more */
	ck_assert_uint_eq(pairing_sweep(P, 15501), 1);
	snap();
	ck_assert_uint_eq(anomalies(11).abandoned, 3);
	ck_assert_uint_eq(IV.abandoned_by_age, 3);
	unsnap();

	/* An age of 0 sweeps nothing, however old. */
	use_engine(64, 0);
	begin(12, 1, 1);
	ck_assert_uint_eq(pairing_sweep(P, UINT64_MAX), 0);
	ck_assert_uint_eq(pairing_open_spans(P), 1);
}
END_TEST

START_TEST(test_peak_and_reverse_close)
{
	uint32_t seq;
	struct pairing_anomalies a;

	for (seq = 1; seq <= 2000; seq++)
		begin(13, seq, seq);
	ck_assert_uint_eq(pairing_peak_open(P), 2000);
	for (seq = 2000; seq >= 1; seq--)
		end(13, seq, 5000);
	ck_assert_uint_eq(pairing_open_spans(P), 0);
	begin(13, 1, 6000);
	end(13, 1, 6001);
	ck_assert_uint_eq(pairing_peak_open(P), 2000);
	snap();
	ck_assert_uint_eq(total(13)->count, 2001);
	ck_assert_uint_eq(accum_max(total(13)), 4999);
	ck_assert_uint_eq(IV.peak_open, 2000);
	ck_assert_uint_eq(IV.open_spans, 0);
	a = anomalies(13);
	ck_assert(!pairing_anomalies_any(&a));
	unsnap();
}
END_TEST

START_TEST(test_values_ignore_seq)
{
	struct pairing_row r;

	/* A value event never touches the span with the same seq. */
	begin(14, 5, 100);
	ev(14, PERFMON_VALUE_STEP, 42, 5);
	end(14, 5, 200);
	snap();
	ck_assert_uint_eq(accum_min(total(14)), 100);
	ck_assert(pairing_find_row(P, PAIRING_VALUE, 14, 0, 0, &r));
	ck_assert_uint_eq(r.interval->count, 1);
	ck_assert_uint_eq(accum_min(r.interval), 42);
	unsnap();
}
END_TEST

static Suite *seq_suite(void)
{
	Suite *s = suite_create("seq");
	TCase *tc = tcase_create("seq");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_interleaved_seqs);
	tcase_add_test(tc, test_seq_not_in_stage_key);
	tcase_add_test(tc, test_no_seq_one_bucket);
	tcase_add_test(tc, test_reused_seq);
	tcase_add_test(tc, test_same_seq_other_points);
	tcase_add_test(tc, test_seq_aliasing);
	tcase_add_test(tc, test_eviction_small_table);
	tcase_add_test(tc, test_eviction_order_batch);
	tcase_add_test(tc, test_touched_not_evicted);
	tcase_add_test(tc, test_sweep_ages);
	tcase_add_test(tc, test_peak_and_reverse_close);
	tcase_add_test(tc, test_values_ignore_seq);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(seq_suite());
}
