/*
 * accum.c - merging, clearing and reading accumulators.
 *
 * Place in the data flow: statistics.  accum_add (the drain path) is inline
 * in accum.h; this file holds the once-per-flush work: folding an
 * interval into the lifetime accumulator and reading figures for the
 * interval report.
 */
#include "build-config.h"

#include "accum.h"

#include <math.h>
#include <string.h>

void accum_init(struct accum *a)
{
	memset(a, 0, sizeof(*a));
}

void accum_merge(struct accum *dst, const struct accum *src, const struct hist_bounds *b)
{
	unsigned carry = 0, lo, hi, s, end;

	if (src->count == 0)
		return;
	accum_band(src, &lo, &hi);
	for (unsigned i = lo; i <= hi; i++)
		dst->buckets[i] += src->buckets[i];
	/* The bounds' counts that src's buckets can have written. */
	if (b)
		for (hist_bounds_slots(b, lo, hi, &s, &end); s < end; s++)
			dst->below1[s] += src->below1[s];
	if (dst->count == 0 || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum_lo += src->sum_lo;
	dst->sum_hi += src->sum_hi + (dst->sum_lo < src->sum_lo);
	for (int i = 0; i < 3; i++) {
		unsigned __int128 t = (unsigned __int128)dst->sq[i] + src->sq[i] + carry;

		dst->sq[i] = (uint64_t)t;
		carry = (unsigned)(t >> 64);
	}
}

void accum_clear(struct accum *a, const struct hist_bounds *b)
{
	unsigned lo, hi, first1, end1;

	/* Every field is zero whenever count is (the gate too: its owner
	 * sets it after adding a sample): nothing to write. */
	if (a->count == 0)
		return;
	accum_band(a, &lo, &hi);
	memset(&a->buckets[lo], 0, (hi - lo + 1) * sizeof(a->buckets[0]));
	if (b) {
		hist_bounds_slots(b, lo, hi, &first1, &end1);
		if (first1 < end1)
			memset(&a->below1[first1], 0, (end1 - first1) * sizeof(a->below1[0]));
	}
	/* below1[0] is never read and may keep whatever it holds. */
	memset(a, 0, offsetof(struct accum, below1));
}

double accum_mean(const struct accum *a)
{
	unsigned __int128 sum = ((unsigned __int128)a->sum_hi << 64) | a->sum_lo;
	unsigned __int128 q;

	if (a->count == 0)
		return 0.0;
	/* The quotient fits 64 bits (mean <= max); the remainder adds the
	 * fraction, so the one rounding is in the final addition. */
	q = sum / a->count;
	return (double)(uint64_t)q + (double)(uint64_t)(sum % a->count) / (double)a->count;
}

void accum_mean_parts(const struct accum *a, uint64_t *ret_int, double *ret_frac)
{
	unsigned __int128 sum = ((unsigned __int128)a->sum_hi << 64) | a->sum_lo;

	if (a->count == 0) {
		*ret_int = 0;
		*ret_frac = 0.0;
		return;
	}
	*ret_int = (uint64_t)(sum / a->count);
	*ret_frac = (double)(uint64_t)(sum % a->count) / (double)a->count;
}

/* r (na + nb words, zeroed by the caller) = a * b; words low first. */
static void mul_words(const uint64_t *a, int na, const uint64_t *b, int nb, uint64_t *r)
{
	for (int j = 0; j < nb; j++) {
		uint64_t carry = 0;

		/* At most (2^64 - 1)^2 + 2 (2^64 - 1) = 2^128 - 1: no overflow. */
		for (int i = 0; i < na; i++) {
			unsigned __int128 t = (unsigned __int128)a[i] * b[j] + r[i + j] + carry;

			r[i + j] = (uint64_t)t;
			carry = (uint64_t)(t >> 64);
		}
		r[j + na] = carry;
	}
}

double accum_stddev(const struct accum *a)
{
	uint64_t sum[2] = { a->sum_lo, a->sum_hi }, n = a->count;
	uint64_t nsq[4] = { 0 }, sum2[4] = { 0 };
	unsigned borrow = 0;
	long double d = 0;

	if (n < 2)
		return 0.0;
	/* n * sq - sum^2 = n * (the sum of squared deviations from the mean):
	 * both terms are below n^2 2^128 < 2^256, and the first is never the
	 * smaller (Cauchy-Schwarz). */
	mul_words(a->sq, 3, &n, 1, nsq);
	mul_words(sum, 2, sum, 2, sum2);
	for (int i = 0; i < 4; i++) {
		unsigned __int128 t = (unsigned __int128)nsq[i] - sum2[i] - borrow;

		nsq[i] = (uint64_t)t;
		borrow = (unsigned)(t >> 64) & 1;
	}
	if (borrow)
		return 0.0;
	for (int i = 3; i >= 0; i--)
		d = d * 18446744073709551616.0L + (long double)nsq[i];
	return (double)sqrtl(d / (long double)n / (long double)(n - 1));
}

uint64_t accum_min(const struct accum *a)
{
	return a->count ? a->min : 0;
}

uint64_t accum_max(const struct accum *a)
{
	return a->count ? a->max : 0;
}

double accum_sum(const struct accum *a)
{
	return (double)a->sum_hi * 18446744073709551616.0 + (double)a->sum_lo;
}

uint64_t accum_percentile(const struct accum *a, double p)
{
	unsigned lo, hi;
	uint64_t v;

	if (a->count == 0)
		return 0;
	accum_band(a, &lo, &hi);
	v = hist_band_percentile(a->buckets, a->count, lo, hi, p);
	if (v < a->min)
		v = a->min;
	if (v > a->max)
		v = a->max;
	return v;
}
