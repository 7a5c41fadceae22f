/*
 * check_accum.c - accumulators (src/accum.c): mean and deviation from
 * exact sums against a two-pass reference, exact count/min/max/sum, merging
 * as the daemon uses it (interval into lifetime, every flush), percentiles
 * clamped to what was seen, and idle accumulators never being written.
 */
#include "build-config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "accum.h"
#include "check_main.h"
#include "testrand.h"

static const double check_ps[] = { 0, 1, 50, 90, 99, 99.9, 100 };
#define N_PS (sizeof(check_ps) / sizeof(check_ps[0]))

static uint64_t rng_lognormal(double mu, double sigma)
{
	double z = sqrt(-2.0 * log(rng_unit())) * cos(2.0 * M_PI * rng_unit());

	return (uint64_t)llround(exp(mu + sigma * z));
}

static struct accum *accum_new(void)
{
	struct accum *a = malloc(sizeof(*a));

	ck_assert_ptr_nonnull(a);
	accum_init(a);
	return a;
}

static void assert_rel(double got, double want, double tol)
{
	ck_assert_msg(fabs(got - want) <= tol * fabs(want),
		      "got %.17g, want %.17g (relative tolerance %g)", got, want, tol);
}

/* Two-pass mean and sample standard deviation in long double. */
static void two_pass(const uint64_t *v, size_t n, double *ret_mean, double *ret_sd)
{
	long double sum = 0, ss = 0, mean;
	size_t i;

	for (i = 0; i < n; i++)
		sum += (long double)v[i];
	mean = sum / (long double)n;
	for (i = 0; i < n; i++) {
		long double d = (long double)v[i] - mean;

		ss += d * d;
	}
	*ret_mean = (double)mean;
	*ret_sd = n > 1 ? (double)sqrtl(ss / (long double)(n - 1)) : 0.0;
}

static void assert_empty(const struct accum *a)
{
	size_t i;

	ck_assert_uint_eq(a->count, 0);
	ck_assert_uint_eq(accum_min(a), 0);
	ck_assert_uint_eq(accum_max(a), 0);
	ck_assert_double_eq(accum_mean(a), 0.0);
	ck_assert_double_eq(accum_stddev(a), 0.0);
	ck_assert_double_eq(accum_sum(a), 0.0);
	for (i = 0; i < N_PS; i++)
		ck_assert_uint_eq(accum_percentile(a, check_ps[i]), 0);
	for (i = 0; i < HIST_BUCKETS; i++)
		ck_assert_uint_eq(a->buckets[i], 0);
	for (i = 1; i <= HIST_MAX_BOUNDS; i++)
		ck_assert_uint_eq(a->below1[i], 0);
}

/* Every exactly-kept figure equal, the floating ones to `tol`. */
static void assert_same_stats(const struct accum *got, const struct accum *want, double tol)
{
	size_t i;

	ck_assert_uint_eq(got->count, want->count);
	ck_assert_uint_eq(accum_min(got), accum_min(want));
	ck_assert_uint_eq(accum_max(got), accum_max(want));
	ck_assert_uint_eq(got->sum_lo, want->sum_lo);
	ck_assert_uint_eq(got->sum_hi, want->sum_hi);
	assert_rel(accum_mean(got), accum_mean(want), tol);
	assert_rel(accum_stddev(got), accum_stddev(want), tol);
	ck_assert_int_eq(memcmp(got->sq, want->sq, sizeof(got->sq)), 0);
	ck_assert_int_eq(memcmp(got->buckets, want->buckets, sizeof(got->buckets)), 0);
	ck_assert_int_eq(memcmp(&got->below1[1], &want->below1[1],
				HIST_MAX_BOUNDS * sizeof(got->below1[0])), 0);
	for (i = 0; i < N_PS; i++)
		ck_assert_uint_eq(accum_percentile(got, check_ps[i]),
				  accum_percentile(want, check_ps[i]));
}

START_TEST(test_empty)
{
	struct accum *a = accum_new(), *z = calloc(1, sizeof(*z));

	ck_assert_ptr_nonnull(z);
	assert_empty(a);
	assert_empty(z);
	free(a);
	free(z);
}
END_TEST

START_TEST(test_one_sample)
{
	struct accum *a = calloc(1, sizeof(*a));

	ck_assert_ptr_nonnull(a);
	accum_add(a, 1000001);	/* inside a wide bucket: the midpoint is not the value */
	ck_assert_uint_eq(a->count, 1);
	ck_assert_uint_eq(accum_min(a), 1000001);
	ck_assert_uint_eq(accum_max(a), 1000001);
	ck_assert_double_eq(accum_mean(a), 1000001.0);
	ck_assert_double_eq(accum_stddev(a), 0.0);
	ck_assert_double_eq(accum_sum(a), 1000001.0);
	ck_assert_uint_eq(accum_percentile(a, 50), 1000001);
	ck_assert_uint_eq(accum_percentile(a, 99.9), 1000001);
	ck_assert_uint_eq(accum_percentile(a, 0), 1000001);
	ck_assert_uint_eq(accum_percentile(a, 100), 1000001);
	free(a);
}
END_TEST

START_TEST(test_uniform_vs_two_pass)
{
	const size_t n = 100000;
	uint64_t *v = malloc(n * sizeof(*v)), sum = 0;
	struct accum *a = accum_new();
	double mean, sd;
	size_t i;

	ck_assert_ptr_nonnull(v);
	rng_seed(1);
	for (i = 0; i < n; i++) {
		v[i] = 100 + rng_next() % 100000;
		sum += v[i];
		accum_add(a, v[i]);
	}
	two_pass(v, n, &mean, &sd);
	ck_assert_uint_eq(a->count, n);
	assert_rel(accum_mean(a), mean, 1e-9);
	assert_rel(accum_stddev(a), sd, 1e-6);
	ck_assert_uint_eq(a->sum_lo, sum);
	ck_assert_uint_eq(a->sum_hi, 0);
	ck_assert_double_eq(accum_sum(a), (double)sum);
	free(v);
	free(a);
}
END_TEST

/* A large common offset must not swamp a small spread (the naive
 * sum-of-squares formula loses it entirely at 3e9). */
START_TEST(test_offset_jitter)
{
	const size_t n = 100000;
	uint64_t *v = malloc(n * sizeof(*v)), lo = UINT64_MAX, hi = 0;
	struct accum *a = accum_new();
	double mean, sd;
	size_t i;

	ck_assert_ptr_nonnull(v);
	rng_seed(2);
	for (i = 0; i < n; i++) {
		v[i] = UINT64_C(3000000000) + rng_next() % 201;
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
		accum_add(a, v[i]);
	}
	two_pass(v, n, &mean, &sd);
	ck_assert_double_gt(accum_stddev(a), 1.0);
	assert_rel(accum_stddev(a), sd, 1e-6);
	assert_rel(accum_mean(a), mean, 1e-12);
	ck_assert_uint_eq(accum_min(a), lo);
	ck_assert_uint_eq(accum_max(a), hi);
	free(v);
	free(a);
}
END_TEST

/*
 * Ground truth by exact integer arithmetic: samples near 2^63 (where a
 * double's spacing is 2048) and near UINT64_MAX, each alone and split
 * over merged intervals whose first samples differ, keep their mean and
 * stddev to 1e-9 relative.
 */
static void exact_moments(const uint64_t *v, size_t n, uint64_t base, double *ret_mean,
			  double *ret_sd, uint64_t *ret_int)
{
	/* Deviations from `base` are small here: exact in long double. */
	long double s = 0, m, ss = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += (long double)(int64_t)(v[i] - base);
	m = s / n;
	for (i = 0; i < n; i++) {
		long double d = (long double)(int64_t)(v[i] - base) - m;
		ss += d * d;
	}
	*ret_mean = (double)((long double)base + m);
	*ret_int = base + (uint64_t)(int64_t)floorl(m);
	*ret_sd = n > 1 ? (double)sqrtl(ss / (n - 1)) : 0.0;
}

START_TEST(test_magnitude_near_2_63_and_2_64)
{
	static const uint64_t bases[] = { UINT64_C(9223372036854775808),
					  UINT64_MAX - 100000, UINT64_C(1) << 60 };
	enum { N = 5000 };
	uint64_t v[N];

	for (unsigned b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		struct accum *a = accum_new(), *life = accum_new(), *part = accum_new();
		double mean, sd;
		uint64_t mi, want;
		double mf;

		rng_seed(7 + b);
		for (unsigned i = 0; i < N; i++) {
			v[i] = bases[b] - 50000 + rng_next() % 100000;
			accum_add(a, v[i]);
			accum_add(part, v[i]);
			if (i % 777 == 776) {       /* intervals with different origins */
				accum_merge(life, part, NULL);
				accum_clear(part, NULL);
			}
		}
		accum_merge(life, part, NULL);
		exact_moments(v, N, bases[b], &mean, &sd, &want);
		assert_rel(accum_stddev(a), sd, 1e-12);
		assert_rel(accum_stddev(life), sd, 1e-12);
		assert_rel(accum_mean(a), mean, 1e-12);
		assert_rel(accum_mean(life), mean, 1e-12);
		accum_mean_parts(life, &mi, &mf);
		ck_assert_uint_eq(mi, want);
		free(a);
		free(life);
		free(part);
	}
}
END_TEST

/* The example: 2^63 -+ 1000 has stddev 1000 * sqrt(2), and one
 * UINT64_MAX has min == max == UINT64_MAX and mean parts exact. */
/*
 * The widest spread there is: 0 and UINT64_MAX alternating, 1000 of them,
 * whole and as 7 merged intervals.  The squares fill 128 bits each and
 * n * sq - sum^2 needs all 256: the deviation is (2^64 - 1) / 2 times
 * sqrt(n / (n - 1)), and a single pair gives (2^64 - 1) / sqrt(2).
 */
START_TEST(test_widest_spread)
{
	struct accum *a = accum_new(), *life = accum_new(), *part = accum_new();
	const long double half = 18446744073709551615.0L / 2;

	for (int i = 0; i < 1000; i++) {
		uint64_t v = i & 1 ? UINT64_MAX : 0;

		accum_add(a, v);
		accum_add(part, v);
		if (i % 150 == 149) {
			accum_merge(life, part, NULL);
			accum_clear(part, NULL);
		}
	}
	accum_merge(life, part, NULL);
	assert_rel(accum_stddev(a), (double)(half * sqrtl(1000.0L / 999.0L)), 1e-15);
	assert_same_stats(life, a, 0.0);
	accum_clear(a, NULL);
	accum_add(a, 0);
	accum_add(a, UINT64_MAX);
	assert_rel(accum_stddev(a), (double)(2 * half / sqrtl(2.0L)), 1e-15);
	free(a);
	free(life);
	free(part);
}
END_TEST

/*
 * Samples below 2^32 square in 64 bits and carry into the high words by
 * branch: 0 and 2^32 - 1 alternating, 1000 of them, carry out of sq[0]
 * about 500 times; the deviation is (2^32 - 1) / 2 times sqrt(n / (n - 1)).
 * The carry on into sq[2], which takes 2^64 such samples, is checked from
 * a sum of squares one short of 2^128.
 */
START_TEST(test_small_squares_carry)
{
	struct accum *a = accum_new();
	const long double half = 4294967295.0L / 2;

	for (int i = 0; i < 1000; i++)
		accum_add(a, i & 1 ? UINT32_MAX : 0);
	assert_rel(accum_stddev(a), (double)(half * sqrtl(1000.0L / 999.0L)), 1e-15);
	/* 500 (2^32 - 1)^2 = 499 2^64 + (2^64 - 500 2^33 + 500) */
	ck_assert_uint_eq(a->sq[1], 499);
	ck_assert_uint_eq(a->sq[0], UINT64_C(500) - UINT64_C(500) * (UINT64_C(1) << 33));
	accum_clear(a, NULL);
	accum_add(a, 1);
	a->sq[0] = a->sq[1] = UINT64_MAX;
	accum_add(a, 1);
	ck_assert_uint_eq(a->sq[0], 0);
	ck_assert_uint_eq(a->sq[1], 0);
	ck_assert_uint_eq(a->sq[2], 1);
	ck_assert_uint_eq(a->count, 2);
	ck_assert_uint_eq(a->min, 1);
	ck_assert_uint_eq(a->max, 1);
	free(a);
}
END_TEST

/* Exact counts at bounds survive merging and are gone after a clear,
 * for bounds inside the used band and beside it. */
START_TEST(test_bounds_merge_and_clear)
{
	static const uint64_t le[] = { 5, 100, 101, 1000, 5000, 1u << 30 };
	enum { NB = sizeof(le) / sizeof(le[0]) };
	struct hist_bounds *b = calloc(1, sizeof(*b));
	struct accum *a = accum_new(), *life = accum_new(), *part = accum_new();
	uint64_t want[NB] = { 0 };

	ck_assert_ptr_nonnull(b);
	hist_bounds_init(b, le, NB);
	rng_seed(11);
	for (int i = 0; i < 3000; i++) {
		uint64_t v = 90 + rng_next() % 4000;

		accum_add_bounded(a, v, b);
		accum_add_bounded(part, v, b);
		for (unsigned k = 0; k < NB; k++)
			want[k] += v <= le[k];
		if (i % 400 == 399) {
			accum_merge(life, part, b);
			accum_clear(part, b);
			for (unsigned s = 1; s <= HIST_MAX_BOUNDS; s++)
				ck_assert_uint_eq(part->below1[s], 0);
		}
	}
	accum_merge(life, part, b);
	for (unsigned k = 0; k < NB; k++) {
		ck_assert_uint_eq(accum_at_or_below(a, b, k), want[k]);
		ck_assert_uint_eq(accum_at_or_below(life, b, k), want[k]);
	}
	accum_clear(life, b);
	assert_empty(life);
	free(a);
	free(life);
	free(part);
	free(b);
}
END_TEST

START_TEST(test_two_samples_near_2_63)
{
	struct accum *a = accum_new(), *b = accum_new(), *c = accum_new();
	uint64_t mi;
	double mf;

	accum_add(a, UINT64_C(9223372036854774808));
	accum_add(a, UINT64_C(9223372036854776808));
	assert_rel(accum_stddev(a), 1414.2135623730951, 1e-12);
	ck_assert_uint_eq(accum_min(a), UINT64_C(9223372036854774808));
	/* The same two in two intervals, merged. */
	accum_add(b, UINT64_C(9223372036854776808));
	accum_add(c, UINT64_C(9223372036854774808));
	accum_merge(b, c, NULL);
	assert_rel(accum_stddev(b), 1414.2135623730951, 1e-12);
	accum_clear(c, NULL);
	accum_add(c, UINT64_MAX);
	accum_mean_parts(c, &mi, &mf);
	ck_assert_uint_eq(mi, UINT64_MAX);
	ck_assert(mf == 0.0);
	ck_assert_uint_eq(accum_min(c), UINT64_MAX);
	ck_assert_uint_eq(accum_max(c), UINT64_MAX);
	ck_assert(accum_stddev(c) == 0.0);
	free(a);
	free(b);
	free(c);
}
END_TEST

/* The sum is exact past 2^64: 1000 values near UINT64_MAX. */
START_TEST(test_sum_past_64_bits)
{
	struct accum *a = accum_new(), *b = accum_new(), *c = accum_new();
	uint64_t i;

	for (i = 0; i < 1000; i++) {
		accum_add(a, UINT64_MAX - i);
		accum_add(i & 1 ? b : c, UINT64_MAX - i);
	}
	/* 1000 * 2^64 - 1000 - 499500 */
	ck_assert_uint_eq(a->sum_hi, 999);
	ck_assert_uint_eq(a->sum_lo, (uint64_t)0 - 500500);
	accum_merge(b, c, NULL);
	ck_assert_uint_eq(b->sum_hi, 999);
	ck_assert_uint_eq(b->sum_lo, (uint64_t)0 - 500500);
	assert_rel(accum_sum(a), 1000.0 * 18446744073709551616.0, 1e-12);
	ck_assert_uint_eq(accum_max(a), UINT64_MAX);
	/* The top bucket's midpoint is far below every sample: clamped up. */
	ck_assert_uint_lt(hist_value(hist_index(UINT64_MAX)), UINT64_MAX - 999);
	ck_assert_uint_eq(accum_percentile(a, 100), UINT64_MAX - 999);
	ck_assert_uint_eq(accum_percentile(a, 0), UINT64_MAX - 999);
	free(a);
	free(b);
	free(c);
}
END_TEST

START_TEST(test_merge_equals_all_at_once)
{
	enum { PARTS = 5 };
	struct accum *all = accum_new(), *merged = accum_new(), *part[PARTS];
	int i;

	for (i = 0; i < PARTS; i++)
		part[i] = calloc(1, sizeof(*part[i]));
	rng_seed(3);
	for (i = 0; i < 50000; i++) {
		uint64_t v = rng_lognormal(8.0, 1.5);

		accum_add(all, v);
		accum_add(part[rng_next() % (PARTS - 1)], v);	/* the last part stays empty */
	}
	for (i = 0; i < PARTS; i++)
		accum_merge(merged, part[i], NULL);
	assert_same_stats(merged, all, 1e-9);
	for (i = 0; i < PARTS; i++)
		free(part[i]);
	free(all);
	free(merged);
}
END_TEST

START_TEST(test_merge_with_empty)
{
	struct accum *a = accum_new(), *empty = calloc(1, sizeof(*empty));
	struct accum *snap = malloc(sizeof(*snap)), *copy = calloc(1, sizeof(*copy));
	int i;

	ck_assert_ptr_nonnull(empty);
	ck_assert_ptr_nonnull(snap);
	ck_assert_ptr_nonnull(copy);
	rng_seed(4);
	for (i = 0; i < 1000; i++)
		accum_add(a, 50 + rng_next() % 5000);
	memcpy(snap, a, sizeof(*snap));

	/* An empty source changes nothing. */
	accum_merge(a, empty, NULL);
	ck_assert_int_eq(memcmp(a, snap, sizeof(*a)), 0);

	/* An empty destination becomes a copy. */
	accum_merge(copy, a, NULL);
	ck_assert_uint_eq(copy->count, a->count);
	ck_assert_int_eq(memcmp(copy->sq, a->sq, sizeof(a->sq)), 0);
	assert_same_stats(copy, a, 0.0);

	/* Two empties stay empty. */
	accum_merge(empty, empty, NULL);
	assert_empty(empty);
	free(a);
	free(empty);
	free(snap);
	free(copy);
}
END_TEST

START_TEST(test_clear)
{
	struct accum *a = accum_new(), *fresh = accum_new();
	int i;

	for (i = 0; i < 100; i++)
		accum_add(a, (uint64_t)i * 1000 + 7);
	accum_clear(a, NULL);
	assert_empty(a);
	/* Reuse after clear equals a fresh accumulator. */
	for (i = 0; i < 10; i++) {
		accum_add(a, 300 + (uint64_t)i);
		accum_add(fresh, 300 + (uint64_t)i);
	}
	assert_same_stats(a, fresh, 0.0);
	ck_assert_uint_eq(accum_min(a), 300);
	free(a);
	free(fresh);
}
END_TEST

START_TEST(test_feeds_histogram)
{
	struct accum *a = accum_new();
	uint64_t v, p50;

	for (v = 100; v < 1100; v++)
		accum_add(a, v);
	for (v = 0, p50 = 0; v < HIST_BUCKETS; v++)
		p50 += a->buckets[v];
	ck_assert_uint_eq(p50, 1000);
	p50 = accum_percentile(a, 50);
	ck_assert_uint_ge(p50, 500);
	ck_assert_uint_le(p50, 700);
	/* The exact p50 is 599; the answer is its bucket's midpoint. */
	ck_assert_uint_eq(p50, hist_value(hist_index(599)));
	free(a);
}
END_TEST

/* Clamping to [min, max]: midpoints of the end buckets lie outside what
 * was seen whenever the extremes sit low in their buckets. */
START_TEST(test_percentiles_within_min_max)
{
	struct accum *a = accum_new();
	int round, i;
	size_t k;

	rng_seed(6);
	for (round = 0; round < 50; round++) {
		int n = 1 + (int)(rng_next() % 500);

		accum_clear(a, NULL);
		for (i = 0; i < n; i++) {
			switch (round % 3) {
			case 0:
				accum_add(a, rng_lognormal(9.0, 2.0));
				break;
			case 1:
				accum_add(a, UINT64_C(1) << (10 + round % 40));
				break;
			default:
				accum_add(a, rng_next());
				break;
			}
		}
		for (k = 0; k < N_PS; k++) {
			uint64_t v = accum_percentile(a, check_ps[k]);

			ck_assert_uint_ge(v, accum_min(a));
			ck_assert_uint_le(v, accum_max(a));
			/* A power of two opens its bucket, whose midpoint lies
			 * above it: only the clamp gives the value back. */
			if (round % 3 == 1)
				ck_assert_uint_eq(v, UINT64_C(1) << (10 + round % 40));
		}
	}
	free(a);
}
END_TEST

/*
 * What the daemon does for every row: accumulate an interval, merge it into
 * the lifetime, clear the interval; some intervals are empty.  The lifetime
 * must equal one accumulator that saw every sample.
 */
START_TEST(test_lifetime_of_many_intervals)
{
	struct accum *interval = calloc(1, sizeof(*interval));
	struct accum *lifetime = calloc(1, sizeof(*lifetime));
	struct accum *once = calloc(1, sizeof(*once));
	int iv, i;

	ck_assert_ptr_nonnull(interval);
	ck_assert_ptr_nonnull(lifetime);
	ck_assert_ptr_nonnull(once);
	rng_seed(7);
	for (iv = 0; iv < 2000; iv++) {
		int n = iv % 10 == 0 ? 0 : (int)(rng_next() % 300);

		for (i = 0; i < n; i++) {
			uint64_t v = 1000000 + rng_lognormal(5.0, 1.0);

			accum_add(interval, v);
			accum_add(once, v);
		}
		accum_merge(lifetime, interval, NULL);
		accum_clear(interval, NULL);
		assert_empty(interval);
	}
	ck_assert_uint_gt(once->count, 100000);
	assert_same_stats(lifetime, once, 1e-9);
	free(interval);
	free(lifetime);
	free(once);
}
END_TEST

/* Idle accumulators on read-only zero pages: clearing, merging from and
 * reading them must not write (a write would crash the test). */
START_TEST(test_idle_accum_is_never_written)
{
	size_t len = sizeof(struct accum);
	struct accum *ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct accum *dst = accum_new(), *snap = malloc(sizeof(*snap));

	ck_assert_ptr_ne(ro, MAP_FAILED);
	ck_assert_ptr_nonnull(snap);
	accum_clear(ro, NULL);
	accum_merge(ro, ro, NULL);
	assert_empty(ro);
	accum_add(dst, 99);
	memcpy(snap, dst, sizeof(*snap));
	accum_merge(dst, ro, NULL);
	ck_assert_int_eq(memcmp(dst, snap, sizeof(*dst)), 0);
	munmap(ro, len);
	free(dst);
	free(snap);
}
END_TEST

static Suite *accum_suite(void)
{
	Suite *s = suite_create("accum");
	TCase *basic = tcase_create("basic");
	TCase *merge = tcase_create("merge");

	tcase_add_test(basic, test_empty);
	tcase_add_test(basic, test_one_sample);
	tcase_add_test(basic, test_uniform_vs_two_pass);
	tcase_add_test(basic, test_offset_jitter);
	tcase_add_test(basic, test_sum_past_64_bits);
	tcase_add_test(basic, test_magnitude_near_2_63_and_2_64);
	tcase_add_test(basic, test_two_samples_near_2_63);
	tcase_add_test(basic, test_widest_spread);
	tcase_add_test(basic, test_small_squares_carry);
	tcase_add_test(basic, test_bounds_merge_and_clear);
	tcase_add_test(basic, test_clear);
	tcase_add_test(basic, test_feeds_histogram);
	tcase_add_test(basic, test_percentiles_within_min_max);
	suite_add_tcase(s, basic);

	tcase_set_timeout(merge, 60);
	tcase_add_test(merge, test_merge_equals_all_at_once);
	tcase_add_test(merge, test_merge_with_empty);
	tcase_add_test(merge, test_lifetime_of_many_intervals);
	tcase_add_test(merge, test_idle_accum_is_never_written);
	suite_add_tcase(s, merge);
	return s;
}

int main(void)
{
	return check_run(accum_suite());
}
