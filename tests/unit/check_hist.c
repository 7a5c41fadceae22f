/*
 * check_hist.c - the log-linear histogram (src/hist.c) against its
 * contract: bucket geometry over all of uint64_t, the 1/2^(P+1) error
 * bound, exact nearest ranks, percentiles equal to an exact sort-based
 * reference up to the bucket of the exact element, merging and the used
 * band.  The histogram is taken as the daemon keeps it: the buckets of an
 * accumulator (accum.h), whose band runs from its minimum's bucket to its
 * maximum's, read through hist.c's band functions without the
 * accumulator's clamping to [min, max].
 *
 * Built twice: at the default precision (tests/unit/check_hist) and with
 * -DHIST_PRECISION=6 (tests/check_hist_p6); every bound below is written
 * in terms of HIST_PRECISION.
 */
#include "build-config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accum.h"
#include "check_main.h"
#include "hist.h"
#include "testrand.h"

#define P HIST_PRECISION
#define EXACT_LIMIT (UINT64_C(1) << (P + 1))   /* values below have their own bucket */

static const double check_ps[] = { 0, 1, 50, 90, 99, 99.9, 99.99, 100 };
#define N_PS (sizeof(check_ps) / sizeof(check_ps[0]))

/* A value whose bit length is itself uniform in 0..64, so every exponent
 * of the histogram gets visited. */
static uint64_t rng_any_magnitude(void)
{
	unsigned bits = (unsigned)(rng_next() % 65);

	if (bits == 0)
		return 0;
	return (rng_next() >> (64 - bits)) | (UINT64_C(1) << (bits - 1));
}

/*
 * For loops over millions of values: Check's own assertions record their
 * location through a pipe on every call, which would dominate the run.
 */
#define EXPECT(cond)                                                           \
	do {                                                                   \
		if (!(cond))                                                   \
			ck_abort_msg("%s:%d: expected %s", __FILE__, __LINE__, \
				     #cond);                                   \
	} while (0)
#define EXPECT_EQ(a, b)                                                        \
	do {                                                                   \
		unsigned long long a_ = (a), b_ = (b);                         \
		if (a_ != b_)                                                  \
			ck_abort_msg("%s:%d: %s == %s: %llu != %llu", __FILE__,\
				     __LINE__, #a, #b, a_, b_);                \
	} while (0)

static struct accum *hist_new(void)
{
	struct accum *a = calloc(1, sizeof(*a));

	ck_assert_ptr_nonnull(a);
	return a;
}

static unsigned band_lo(const struct accum *a)
{
	unsigned lo, hi;

	accum_band(a, &lo, &hi);
	return lo;
}

static unsigned band_hi(const struct accum *a)
{
	unsigned lo, hi;

	accum_band(a, &lo, &hi);
	return hi;
}

/* Percentile p of the buckets alone: the value of the bucket of rank p. */
static uint64_t pct(const struct accum *a, double p)
{
	return a->count ? hist_band_percentile(a->buckets, a->count, band_lo(a), band_hi(a), p)
			: 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* |reported - exact| <= exact / 2^(P+1), in integers (both sides exact). */
static void assert_within_bound(uint64_t reported, uint64_t exact)
{
	uint64_t diff = reported > exact ? reported - exact : exact - reported;

	if (diff > exact >> (P + 1))
		ck_abort_msg("reported %llu for exact %llu: error %llu over bound %llu",
			     (unsigned long long)reported, (unsigned long long)exact,
			     (unsigned long long)diff, (unsigned long long)(exact >> (P + 1)));
}

/*
 * Feed `v` into a calloc'd (never initialised) histogram and compare every
 * checked percentile with the nearest-rank element of the sorted samples.
 * The histogram must answer with exactly the bucket of that element, and
 * so within the bucket's error bound of it.
 */
static void check_against_exact(uint64_t *v, size_t n)
{
	struct accum *h = calloc(1, sizeof(*h));
	uint64_t prev = 0;
	size_t i;

	ck_assert_ptr_nonnull(h);
	for (i = 0; i < n; i++)
		accum_add(h, v[i]);
	ck_assert_uint_eq(h->count, n);
	qsort(v, n, sizeof(v[0]), cmp_u64);
	ck_assert_uint_eq(band_lo(h), hist_index(v[0]));
	ck_assert_uint_eq(band_hi(h), hist_index(v[n - 1]));
	for (i = 0; i < N_PS; i++) {
		uint64_t rank = hist_nearest_rank(n, check_ps[i]);
		uint64_t exact = v[rank - 1];
		uint64_t got = pct(h, check_ps[i]);

		ck_assert_msg(got == hist_value(hist_index(exact)),
			      "p%g: got %llu, exact %llu lies in the bucket of %llu",
			      check_ps[i], (unsigned long long)got, (unsigned long long)exact,
			      (unsigned long long)hist_value(hist_index(exact)));
		assert_within_bound(got, exact);
		ck_assert_uint_ge(got, prev);
		prev = got;
	}
	free(h);
}

/* ---- geometry ----------------------------------------------------------- */

START_TEST(test_exact_region)
{
	uint64_t v;

	for (v = 0; v < EXACT_LIMIT; v++) {
		ck_assert_uint_eq(hist_index(v), v);
		ck_assert_uint_eq(hist_lower((unsigned)v), v);
		ck_assert_uint_eq(hist_width((unsigned)v), 1);
		ck_assert_uint_eq(hist_value((unsigned)v), v);
	}
	/* Linear to logarithmic handover is continuous. */
	ck_assert_uint_eq(hist_index(EXACT_LIMIT), hist_index(EXACT_LIMIT - 1) + 1);
	ck_assert_uint_eq(hist_lower(hist_index(EXACT_LIMIT)), EXACT_LIMIT);
	ck_assert_uint_eq(hist_width(hist_index(EXACT_LIMIT)), 2);
	/* The values the reference calls exact (below 2^P) are, of course. */
	ck_assert_uint_eq(hist_index((UINT64_C(1) << P) - 1) + 1, hist_index(UINT64_C(1) << P));
}
END_TEST

START_TEST(test_bucket_count)
{
	ck_assert_uint_eq(HIST_BUCKETS, (65u - P) << P);
	if (P == 4)
		ck_assert_uint_eq(HIST_BUCKETS, 976);
	ck_assert_uint_eq(hist_index(UINT64_MAX), HIST_BUCKETS - 1);
	ck_assert_uint_eq(hist_index(0), 0);
}
END_TEST

/*
 * Every bucket, exhaustively: contiguous with its neighbours, its bounds
 * map back to it, its width a power of two, and its reported value within
 * 1/2^(P+1) of both its smallest and its largest member (the error is
 * monotonic in between).
 */
START_TEST(test_every_bucket_bound)
{
	uint64_t expect_lower = 0;
	unsigned idx;

	for (idx = 0; idx < HIST_BUCKETS; idx++) {
		uint64_t lower = hist_lower(idx), width = hist_width(idx);
		uint64_t upper = lower + (width - 1), mid = hist_value(idx);

		EXPECT_EQ(lower, expect_lower);
		EXPECT(width != 0);
		EXPECT_EQ(width & (width - 1), 0);
		EXPECT(upper >= lower);
		EXPECT_EQ(hist_index(lower), idx);
		EXPECT_EQ(hist_index(upper), idx);
		EXPECT(mid >= lower);
		EXPECT(mid <= upper);
		EXPECT(mid - lower <= lower >> (P + 1));
		EXPECT(upper - mid <= upper >> (P + 1));
		if (idx + 1 < HIST_BUCKETS) {
			EXPECT_EQ(hist_index(upper + 1), idx + 1);
			expect_lower = upper + 1;
		} else {
			EXPECT_EQ(upper, UINT64_MAX);
		}
		/* Worst relative error as a real number, too. */
		if (lower > 0)
			EXPECT((double)(mid - lower) / (double)lower <=
			       1.0 / (double)(1u << (P + 1)));
	}
	/* Out-of-range indexes are clamped, never shifted by 64. */
	ck_assert_uint_eq(hist_lower(HIST_BUCKETS + 5), hist_lower(HIST_BUCKETS - 1));
	ck_assert_uint_eq(hist_width(UINT32_MAX), hist_width(HIST_BUCKETS - 1));
}
END_TEST

START_TEST(test_index_monotonic)
{
	unsigned prev = 0;
	uint64_t v;
	int i;

	for (v = 0; v < (UINT64_C(1) << 20); v++) {
		unsigned idx = hist_index(v);

		EXPECT(idx >= prev);
		EXPECT(idx <= prev + 1);
		EXPECT(v >= hist_lower(idx));
		EXPECT(v - hist_lower(idx) <= hist_width(idx) - 1);
		prev = idx;
	}
	rng_seed(11);
	for (i = 0; i < 200000; i++) {
		uint64_t a = rng_any_magnitude(), b = rng_any_magnitude();
		unsigned ia = hist_index(a), ib = hist_index(b);

		EXPECT(a < b ? ia <= ib : ia >= ib);
		EXPECT(ia < HIST_BUCKETS);
		EXPECT(a >= hist_lower(ia));
		EXPECT(a - hist_lower(ia) <= hist_width(ia) - 1);
		assert_within_bound(hist_value(ia), a);
	}
}
END_TEST

START_TEST(test_extreme_values)
{
	static const uint64_t ext[] = { 0, 1, UINT32_MAX, (uint64_t)UINT32_MAX + 1,
					UINT64_MAX / 2, UINT64_MAX - 1, UINT64_MAX };
	struct accum *h = hist_new();
	size_t i;

	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		ck_assert_uint_lt(hist_index(ext[i]), HIST_BUCKETS);
		assert_within_bound(hist_value(hist_index(ext[i])), ext[i]);
		accum_add(h, ext[i]);
	}
	ck_assert_uint_eq(pct(h, 0), 0);
	ck_assert_uint_gt(pct(h, 100), UINT64_C(1000000000000000000));
	ck_assert_uint_eq(pct(h, 100), hist_value(HIST_BUCKETS - 1));
	ck_assert_uint_eq(band_hi(h), HIST_BUCKETS - 1);
	free(h);
}
END_TEST

/* ---- nearest rank ------------------------------------------------------- */

START_TEST(test_nearest_rank_exact)
{
	ck_assert_uint_eq(hist_nearest_rank(1000, 99.9), 999);
	ck_assert_uint_eq(hist_nearest_rank(41000, 99.9), 40959);
	ck_assert_uint_eq(hist_nearest_rank(2, 51), 2);
	ck_assert_uint_eq(hist_nearest_rank(2, 50), 1);
	ck_assert_uint_eq(hist_nearest_rank(5, 1e-7), 1);
	ck_assert_uint_eq(hist_nearest_rank(UINT64_C(9903509185699), 99),
			  UINT64_C(9804474093843));
	ck_assert_uint_eq(hist_nearest_rank(UINT64_C(123456789012), 99.99),
			  UINT64_C(123444443334));
	ck_assert_uint_eq(hist_nearest_rank(UINT64_MAX, 50), UINT64_C(1) << 63);
	/* Ends and the rank floor of 1. */
	ck_assert_uint_eq(hist_nearest_rank(0, 50), 0);
	ck_assert_uint_eq(hist_nearest_rank(7, 0), 1);
	ck_assert_uint_eq(hist_nearest_rank(7, -3), 1);
	ck_assert_uint_eq(hist_nearest_rank(7, NAN), 1);
	ck_assert_uint_eq(hist_nearest_rank(7, 1e-12), 1);
	ck_assert_uint_eq(hist_nearest_rank(7, 100), 7);
	ck_assert_uint_eq(hist_nearest_rank(7, 250), 7);
	ck_assert_uint_eq(hist_nearest_rank(7, INFINITY), 7);
	ck_assert_uint_eq(hist_nearest_rank(UINT64_MAX, 100), UINT64_MAX);
	ck_assert_uint_eq(hist_nearest_rank(UINT64_MAX, 99.9999999), UINT64_MAX - 18446744073u);
	ck_assert_uint_eq(hist_nearest_rank(1, 1e-7), 1);
}
END_TEST

/* Percentiles given in thousandths have an exact integer answer:
 * ceil(k * n / 100000). */
START_TEST(test_nearest_rank_integer_reference)
{
	int i;

	rng_seed(3);
	for (i = 0; i < 200000; i++) {
		unsigned bits = 1 + (unsigned)(rng_next() % 40);
		uint64_t n = 1 + rng_next() % (UINT64_C(1) << bits);
		uint64_t k = rng_next() % 100001;
		uint64_t want = (k * n + 99999) / 100000;

		if (want < 1)
			want = 1;
		EXPECT_EQ(hist_nearest_rank(n, (double)k / 1000.0), want);
	}
}
END_TEST

/* Values below 2^(P+1) are their own bucket (all of 0..9 from P = 3 up);
 * at lower precisions compare with the bucket's value. */
#define V(x) hist_value(hist_index(x))

START_TEST(test_nearest_rank_small_sets)
{
	struct accum *h = hist_new();
	uint64_t v;

	if (P >= 3)
		for (v = 0; v < 10; v++)
			ck_assert_uint_eq(V(v), v);
	accum_add(h, 1);
	accum_add(h, 10000);
	ck_assert_uint_eq(pct(h, 50), V(1));
	ck_assert_uint_eq(pct(h, 51), V(10000));
	ck_assert_uint_eq(pct(h, 50.0001), V(10000));
	assert_within_bound(pct(h, 51), 10000);

	accum_clear(h, NULL);
	for (v = 0; v < 10; v++)
		accum_add(h, v);
	ck_assert_uint_eq(pct(h, 10), V(0));
	ck_assert_uint_eq(pct(h, 10.1), V(1));
	ck_assert_uint_eq(pct(h, 50.1), V(5));
	ck_assert_uint_eq(pct(h, 90), V(8));
	ck_assert_uint_eq(pct(h, 90.0000001), V(9));
	ck_assert_uint_eq(pct(h, 0.0000001), V(0));
	ck_assert_uint_eq(pct(h, 100), V(9));
	free(h);
}
END_TEST
#undef V

START_TEST(test_special_percentiles)
{
	struct accum *h = hist_new();
	uint64_t prev = 0;
	double p;
	int i;

	rng_seed(5);
	for (i = 0; i < 5000; i++)
		accum_add(h, 1000 + rng_next() % 1000000);
	EXPECT_EQ(pct(h, NAN), pct(h, 0));
	EXPECT_EQ(pct(h, -INFINITY), pct(h, 0));
	EXPECT_EQ(pct(h, -1), pct(h, 0));
	EXPECT_EQ(pct(h, INFINITY), pct(h, 100));
	EXPECT_EQ(pct(h, 100.5), pct(h, 100));
	EXPECT_EQ(pct(h, 0), hist_value(band_lo(h)));
	EXPECT_EQ(pct(h, 100), hist_value(band_hi(h)));
	for (p = 0; p <= 100.0; p += 0.25) {
		uint64_t v = pct(h, p);

		EXPECT(v >= prev);
		prev = v;
	}
	free(h);
}
END_TEST

START_TEST(test_empty)
{
	struct accum *h = hist_new();
	struct accum *z = calloc(1, sizeof(*z));
	size_t i;

	ck_assert_ptr_nonnull(z);
	for (i = 0; i < N_PS; i++) {
		ck_assert_uint_eq(pct(h, check_ps[i]), 0);
		ck_assert_uint_eq(pct(z, check_ps[i]), 0);
	}
	ck_assert_uint_eq(pct(h, NAN), 0);
	ck_assert_uint_eq(pct(z, INFINITY), 0);
	free(h);
	free(z);
}
END_TEST

/* ---- against an exact reference ---------------------------------------- */

START_TEST(test_uniform_vs_exact)
{
	const size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));
	size_t i;

	ck_assert_ptr_nonnull(v);
	rng_seed(42);
	for (i = 0; i < n; i++)
		v[i] = 100 + rng_next() % (100000 - 100 + 1);
	check_against_exact(v, n);
	/* Full 64-bit range, every magnitude. */
	for (i = 0; i < n; i++)
		v[i] = rng_any_magnitude();
	check_against_exact(v, n);
	for (i = 0; i < n; i++)
		v[i] = rng_next();
	check_against_exact(v, n);
	free(v);
}
END_TEST

START_TEST(test_lognormal_vs_exact)
{
	const size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));
	size_t i;

	ck_assert_ptr_nonnull(v);
	rng_seed(1234);
	for (i = 0; i < n; i++) {
		double z = sqrt(-2.0 * log(rng_unit())) * cos(2.0 * M_PI * rng_unit());

		v[i] = (uint64_t)llround(exp(6.0 + 1.2 * z));
	}
	check_against_exact(v, n);
	/* A heavier tail spanning many decades. */
	for (i = 0; i < n; i++) {
		double z = sqrt(-2.0 * log(rng_unit())) * cos(2.0 * M_PI * rng_unit());

		v[i] = (uint64_t)llround(exp(10.0 + 3.0 * z));
	}
	check_against_exact(v, n);
	free(v);
}
END_TEST

START_TEST(test_adversarial_vs_exact)
{
	uint64_t *v = malloc(100000 * sizeof(*v));
	size_t n, i;
	unsigned k;

	ck_assert_ptr_nonnull(v);
	rng_seed(77);

	/* All equal, inside a wide bucket. */
	for (n = 0; n < 1000; n++)
		v[n] = 123456789;
	check_against_exact(v, n);

	/* All zero. */
	for (n = 0; n < 1000; n++)
		v[n] = 0;
	check_against_exact(v, n);

	/* A single sample. */
	v[0] = 987654321;
	check_against_exact(v, 1);

	/* Two far-apart clusters, the high one the 1% tail. */
	for (n = 0; n < 9900; n++)
		v[n] = 40 + rng_next() % 20;
	for (; n < 10000; n++)
		v[n] = UINT64_C(1000000000000000) + rng_next() % 1000000;
	check_against_exact(v, n);

	/* Powers of two and their neighbours, every exponent. */
	n = 0;
	for (k = 0; k < 64; k++) {
		uint64_t p2 = UINT64_C(1) << k;

		v[n++] = p2 - 1;
		v[n++] = p2;
		v[n++] = p2 + 1;
	}
	v[n++] = UINT64_MAX;
	check_against_exact(v, n);

	/* Bucket edges: the first and last value of every bucket. */
	n = 0;
	for (k = 0; k < HIST_BUCKETS; k++) {
		v[n++] = hist_lower(k);
		v[n++] = hist_lower(k) + (hist_width(k) - 1);
	}
	check_against_exact(v, n);

	/* Crowded at the top of the range, with a few zeros. */
	for (n = 0; n < 5000; n++)
		v[n] = UINT64_MAX - rng_next() % 1000;
	for (i = 0; i < 10; i++)
		v[n++] = 0;
	check_against_exact(v, n);

	/* Only the two ends of the range. */
	for (n = 0; n < 1000; n++)
		v[n] = n & 1 ? UINT64_MAX : 0;
	check_against_exact(v, n);
	free(v);
}
END_TEST

/* ---- merging and the used band ------------------------------------------ */

static void assert_hist_equal(const struct accum *a, const struct accum *b)
{
	ck_assert_uint_eq(a->count, b->count);
	if (a->count) {
		ck_assert_uint_eq(band_lo(a), band_lo(b));
		ck_assert_uint_eq(band_hi(a), band_hi(b));
	}
	ck_assert_int_eq(memcmp(a->buckets, b->buckets, sizeof(a->buckets)), 0);
}

START_TEST(test_merge_equals_all_at_once)
{
	enum { PARTS = 7 };
	struct accum *all = hist_new(), *merged = calloc(1, sizeof(*merged));
	struct accum *part[PARTS];
	size_t i;

	ck_assert_ptr_nonnull(merged);
	for (i = 0; i < PARTS; i++)
		part[i] = calloc(1, sizeof(*part[i]));
	rng_seed(9);
	for (i = 0; i < 100000; i++) {
		uint64_t v = rng_any_magnitude();

		accum_add(all, v);
		accum_add(part[rng_next() % (PARTS - 1)], v);	/* the last part stays empty */
	}
	for (i = 0; i < PARTS; i++)
		accum_merge(merged, part[i], NULL);
	assert_hist_equal(merged, all);
	for (i = 0; i < N_PS; i++)
		ck_assert_uint_eq(pct(merged, check_ps[i]),
				  pct(all, check_ps[i]));
	for (i = 0; i < PARTS; i++)
		free(part[i]);
	free(all);
	free(merged);
}
END_TEST

START_TEST(test_bucket_over_2_32)
{
	struct accum *one = hist_new(), *big = hist_new();
	const uint64_t chunk = (UINT64_C(1) << 32) + 5;
	int i;

	/* 2^32 + 5 samples of 7, as if added one by one. */
	accum_add(one, 7);
	one->buckets[hist_index(7)] += chunk - 1;
	one->count += chunk - 1;
	accum_add(one, 1);
	accum_add(one, 100000);
	for (i = 0; i < 4; i++)
		accum_merge(big, one, NULL);
	ck_assert_uint_eq(big->count, 4 * (chunk + 2));
	ck_assert_uint_eq(big->buckets[hist_index(7)], 4 * chunk);
	ck_assert_uint_gt(big->buckets[hist_index(7)], UINT64_C(1) << 34);
	ck_assert_uint_eq(pct(big, 50), 7);
	ck_assert_uint_eq(pct(big, 0), 1);
	ck_assert_uint_eq(pct(big, 100), hist_value(hist_index(100000)));
	free(one);
	free(big);
}
END_TEST

START_TEST(test_used_band)
{
	struct accum *h = hist_new(), *fresh = hist_new(), *other = hist_new();
	struct accum *snap = malloc(sizeof(*snap));
	unsigned i;

	ck_assert_ptr_nonnull(snap);
	/* Reuse after clear equals a fresh histogram. */
	accum_add(h, 5);
	accum_add(h, UINT64_MAX);
	accum_add(h, 1000);
	accum_clear(h, NULL);
	ck_assert_uint_eq(h->count, 0);
	for (i = 0; i < HIST_BUCKETS; i++)
		EXPECT_EQ(h->buckets[i], 0);	/* no stale counts */
	ck_assert_uint_eq(pct(h, 50), 0);
	accum_add(h, 300);
	accum_add(fresh, 300);
	assert_hist_equal(h, fresh);
	ck_assert_uint_eq(band_lo(h), hist_index(300));
	ck_assert_uint_eq(band_hi(h), hist_index(300));

	/* Merging disjoint ranges keeps both ends. */
	accum_add(other, 3);
	accum_add(other, UINT64_C(1) << 50);
	accum_merge(h, other, NULL);
	ck_assert_uint_eq(band_lo(h), hist_index(3));
	ck_assert_uint_eq(band_hi(h), hist_index(UINT64_C(1) << 50));
	ck_assert_uint_eq(h->count, 3);
	ck_assert_uint_eq(pct(h, 0), 3);
	ck_assert_uint_eq(pct(h, 100), hist_value(hist_index(UINT64_C(1) << 50)));

	/* Merging an empty histogram is a no-op. */
	memcpy(snap, h, sizeof(*snap));
	accum_clear(fresh, NULL);
	accum_merge(h, fresh, NULL);
	ck_assert_int_eq(memcmp(snap, h, sizeof(*snap)), 0);

	/* Merge after clear starts from nothing. */
	accum_clear(h, NULL);
	accum_merge(h, other, NULL);
	assert_hist_equal(h, other);
	free(h);
	free(fresh);
	free(other);
	free(snap);
}
END_TEST

static Suite *hist_suite(void)
{
	Suite *s = suite_create("hist");
	TCase *geo = tcase_create("geometry");
	TCase *rank = tcase_create("rank");
	TCase *ref = tcase_create("reference");
	TCase *merge = tcase_create("merge");

	tcase_add_test(geo, test_exact_region);
	tcase_add_test(geo, test_bucket_count);
	tcase_add_test(geo, test_every_bucket_bound);
	tcase_add_test(geo, test_index_monotonic);
	tcase_add_test(geo, test_extreme_values);
	suite_add_tcase(s, geo);

	tcase_add_test(rank, test_nearest_rank_exact);
	tcase_add_test(rank, test_nearest_rank_integer_reference);
	tcase_add_test(rank, test_nearest_rank_small_sets);
	tcase_add_test(rank, test_special_percentiles);
	tcase_add_test(rank, test_empty);
	suite_add_tcase(s, rank);

	tcase_set_timeout(ref, 60);
	tcase_add_test(ref, test_uniform_vs_exact);
	tcase_add_test(ref, test_lognormal_vs_exact);
	tcase_add_test(ref, test_adversarial_vs_exact);
	suite_add_tcase(s, ref);

	tcase_add_test(merge, test_merge_equals_all_at_once);
	tcase_add_test(merge, test_bucket_over_2_32);
	tcase_add_test(merge, test_used_band);
	suite_add_tcase(s, merge);
	return s;
}

int main(void)
{
	return check_run(hist_suite());
}
