/*
 * check_outliers.c - the slowest-spans sets (src/outliers.c) and their use
 * by the pairing engine: slow spans planted among fast ones are exactly the
 * ones listed, with their seq, start and duration, per interval and for
 * the lifetime, for stage rows and total rows alike.
 */
#include "build-config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "outliers.h"
#include "pairing.h"
#include "testrand.h"

static int desc_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y) - (x > y);
}

START_TEST(test_set_keeps_the_slowest)
{
	enum { N = 5000, CAP = 8 };
	struct outlier_set *s = calloc(1, outliers_set_size(CAP));
	struct outlier out[CAP];
	uint64_t *all = calloc(N, sizeof(*all));

	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(all);
	rng_state = 5;
	for (uint32_t i = 0; i < N; i++) {
		all[i] = rng_next() % 100000;
		outliers_offer(s, CAP, all[i], 1000 + i, i);
	}
	qsort(all, N, sizeof(*all), desc_u64);
	ck_assert_uint_eq(outliers_sorted(s, out), CAP);
	for (unsigned k = 0; k < CAP; k++) {
		ck_assert_uint_eq(out[k].ticks, all[k]);
		/* the entry still says which sample it was */
		ck_assert_uint_eq(out[k].start_tsc, 1000 + out[k].seq);
	}
	outliers_clear(s);
	ck_assert_uint_eq(outliers_sorted(s, out), 0);
	free(all);
	free(s);
}
END_TEST

START_TEST(test_merge_and_ties)
{
	enum { CAP = 3 };
	struct outlier_set *a = calloc(1, outliers_set_size(CAP));
	struct outlier_set *b = calloc(1, outliers_set_size(CAP));
	struct outlier out[CAP];

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	outliers_offer(a, CAP, 50, 1, 1);
	outliers_offer(a, CAP, 10, 2, 2);
	outliers_offer(b, CAP, 40, 3, 3);
	outliers_offer(b, CAP, 60, 4, 4);
	outliers_offer(b, CAP, 50, 5, 5);   /* ties 50: the one held first stays */
	outliers_merge(a, b, CAP);
	ck_assert_uint_eq(outliers_sorted(a, out), CAP);
	ck_assert_uint_eq(out[0].seq, 4);
	ck_assert_uint_eq(out[1].seq, 1);
	ck_assert_uint_eq(out[2].seq, 5);
	free(a);
	free(b);
}
END_TEST

/* ---- the engine ------------------------------------------------------ */

static struct pairing *P;

static void ev(uint32_t point, uint8_t step, uint64_t ts, uint32_t seq)
{
	struct perfmon_event e = { .tsc = ts, .point = point, .event = PERFMON_EVENT(step, seq) };

	pairing_feed(P, &e, 1);
}

static bool row_of(enum pairing_kind kind, uint8_t from, uint8_t to, struct pairing_row *r)
{
	return pairing_find_row(P, kind, 7, from, to, r);
}

/* One span of point 7: begin at t, step 1 after d1, end d2 later. */
static void span(uint32_t seq, uint64_t t, uint64_t d1, uint64_t d2)
{
	ev(7, PERFMON_BEGIN_STEP, t, seq);
	ev(7, 1, t + d1, seq);
	ev(7, PERFMON_END_STEP, t + d1 + d2, seq);
}

/*
 * 2000 spans, interleaved four at a time so the open-span table works as
 * in real traffic; stage 0->1 takes 10..29 ticks and 1->end 5..14, except
 * for planted spans: slow first stages at seqs 3, 300, 1500, 1999 and slow
 * second stages at seqs 17, 256, 1024.  Returns the start of each span.
 */
static void plant(uint64_t base, uint64_t *starts, uint32_t seq0)
{
	static const uint32_t slow1[] = { 3, 300, 1500, 1999 };
	static const uint32_t slow2[] = { 17, 256, 1024 };

	for (uint32_t i = 0; i < 2000; i++) {
		uint64_t d1 = 10 + rng_next() % 20, d2 = 5 + rng_next() % 10;

		for (unsigned k = 0; k < 4; k++)
			if (i == slow1[k])
				d1 = 5000 + 100 * k;
		for (unsigned k = 0; k < 3; k++)
			if (i == slow2[k])
				d2 = 7000 + 100 * k;
		starts[i] = base + (uint64_t)i * 20000;
		span(seq0 + i, starts[i], d1, d2);
	}
}

START_TEST(test_engine_lists_the_planted_spans)
{
	struct pairing_config cfg = { .max_open_spans = 64, .max_stages = 64, .outliers = 4 };
	struct pairing_interval iv;
	struct pairing_row r;
	struct outlier out[4];
	static uint64_t starts[2000];

	P = pairing_new(&cfg);
	ck_assert_ptr_nonnull(P);
	ck_assert_uint_eq(pairing_outliers_cap(P), 4);
	rng_state = 11;
	plant(1000, starts, 1);

	ck_assert(pairing_flip(P, 100000000));
	ck_assert(pairing_collect(P, &iv));

	/* begin -> step 1: the four planted, slowest first */
	ck_assert(row_of(PAIRING_STAGE, 0, 1, &r));
	ck_assert_ptr_nonnull(r.outliers);
	ck_assert_uint_eq(outliers_sorted(r.outliers, out), 4);
	ck_assert_uint_eq(out[0].seq, 2000);  /* i 1999: 5300 */
	ck_assert_uint_eq(out[0].ticks, 5300);
	ck_assert_uint_eq(out[0].start_tsc, starts[1999]);
	ck_assert_uint_eq(out[1].seq, 1501);
	ck_assert_uint_eq(out[2].seq, 301);
	ck_assert_uint_eq(out[3].seq, 4);
	ck_assert_uint_eq(out[3].ticks, 5000);
	ck_assert_uint_eq(out[3].start_tsc, starts[3]);

	/* step 1 -> end: three planted, then the slowest fast one (< 15);
	 * each starts where its first stage ended */
	ck_assert(row_of(PAIRING_STAGE, 1, PERFMON_END_STEP, &r));
	ck_assert_uint_eq(outliers_sorted(r.outliers, out), 4);
	ck_assert_uint_eq(out[0].seq, 1025);
	ck_assert_uint_eq(out[0].ticks, 7200);
	ck_assert_uint_eq(out[1].seq, 257);
	ck_assert_uint_eq(out[2].seq, 18);
	ck_assert_uint_eq(out[2].ticks, 7000);
	ck_assert_uint_gt(out[2].start_tsc, starts[17]);
	ck_assert_uint_lt(out[2].start_tsc, starts[17] + 30);
	ck_assert_uint_lt(out[3].ticks, 15);

	/* total: the slow second stages are the slowest spans */
	ck_assert(row_of(PAIRING_TOTAL, 0, 0, &r));
	ck_assert_uint_eq(outliers_sorted(r.outliers, out), 4);
	ck_assert_uint_eq(out[0].seq, 1025);
	ck_assert_uint_eq(out[0].start_tsc, starts[1024]);
	ck_assert_uint_eq(out[1].seq, 257);
	ck_assert_uint_eq(out[2].seq, 18);
	ck_assert_uint_eq(out[3].seq, 2000);
	ck_assert_uint_eq(out[3].ticks, r.outliers_lifetime->n ? out[3].ticks : 0);
	pairing_release(P);

	/* A second, quiet interval: its sets are empty, the lifetime keeps
	 * the first one's. */
	span(5000, 200000000, 20, 20);
	ck_assert(pairing_flip(P, 300000000));
	ck_assert(pairing_collect(P, &iv));
	ck_assert(row_of(PAIRING_TOTAL, 0, 0, &r));
	ck_assert_uint_eq(r.outliers->n, 1);
	ck_assert_uint_eq(outliers_sorted(r.outliers_lifetime, out), 4);
	ck_assert_uint_eq(out[0].seq, 1025);
	ck_assert_uint_eq(out[3].seq, 2000);
	pairing_release(P);
	pairing_free(P);
	P = NULL;
}
END_TEST

START_TEST(test_off_and_values)
{
	struct pairing_config cfg = { .max_open_spans = 64, .max_stages = 64, .outliers = 0 };
	struct pairing_interval iv;
	struct pairing_row r;

	P = pairing_new(&cfg);
	ck_assert_ptr_nonnull(P);
	span(1, 100, 10, 10);
	ev(7, PERFMON_VALUE_STEP, 99999, 0);
	ck_assert(pairing_flip(P, 1000));
	ck_assert(pairing_collect(P, &iv));
	ck_assert(row_of(PAIRING_TOTAL, 0, 0, &r));
	ck_assert_ptr_null(r.outliers);
	ck_assert_ptr_null(r.outliers_lifetime);
	pairing_release(P);
	pairing_free(P);

	/* on: value rows never get a set */
	cfg.outliers = 2;
	P = pairing_new(&cfg);
	ck_assert_ptr_nonnull(P);
	ev(7, PERFMON_VALUE_STEP, 99999, 0);
	ck_assert(pairing_flip(P, 1000));
	ck_assert(pairing_collect(P, &iv));
	ck_assert(row_of(PAIRING_VALUE, 0, 0, &r));
	ck_assert_ptr_null(r.outliers);
	pairing_release(P);
	pairing_free(P);
	P = NULL;

	/* too many is refused */
	cfg.outliers = OUTLIERS_MAX + 1;
	ck_assert_ptr_null(pairing_new(&cfg));
}
END_TEST

/* The memory an engine is estimated to need counts its outlier sets (3
 * per row, each on cache lines of its own); the sets it uses are that far
 * apart. */
START_TEST(test_memory_and_stride)
{
	struct pairing_config cfg = { .max_open_spans = 64, .max_stages = 100, .outliers = 0 };
	size_t off = pairing_memory_bytes(&cfg);
	struct pairing_interval iv;
	struct pairing_row r, q;

	for (uint32_t cap = 1; cap <= OUTLIERS_MAX; cap += 37) {
		size_t st = outliers_set_stride(cap);

		ck_assert_uint_eq(st % 64, 0);
		ck_assert_uint_ge(st, outliers_set_size(cap));
		ck_assert_uint_lt(st, outliers_set_size(cap) + 64);
	}
	cfg.outliers = 8;
	ck_assert_uint_eq(pairing_memory_bytes(&cfg), off + 100 * 3 * outliers_set_stride(8));
	P = pairing_new(&cfg);
	ck_assert_ptr_nonnull(P);
	span(1, 100, 10, 10);
	span(2, 200, 10, 10);
	ck_assert(pairing_flip(P, 1000));
	ck_assert(pairing_collect(P, &iv));
	ck_assert(row_of(PAIRING_TOTAL, 0, 0, &r));
	ck_assert_uint_eq((uintptr_t)r.outliers % 64, 0);
	ck_assert_uint_eq((uintptr_t)r.outliers_lifetime % 64, 0);
	ck_assert(row_of(PAIRING_STAGE, 0, 1, &q));
	ck_assert_uint_eq((uintptr_t)q.outliers % 64, 0);
	pairing_release(P);
	pairing_free(P);
	P = NULL;
}
END_TEST

static Suite *outliers_suite(void)
{
	Suite *s = suite_create("outliers");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_set_keeps_the_slowest);
	tcase_add_test(tc, test_merge_and_ties);
	tcase_add_test(tc, test_engine_lists_the_planted_spans);
	tcase_add_test(tc, test_off_and_values);
	tcase_add_test(tc, test_memory_and_stride);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(outliers_suite());
}
