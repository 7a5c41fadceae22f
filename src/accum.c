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
	hist_init(&a->hist);
}

static void merge_below(struct accum *dst, const struct accum *src)
{
	for (unsigned s = 1; s <= src->below_n; s++)
		dst->below1[s] += src->below1[s];
	if (src->below_n > dst->below_n)
		dst->below_n = src->below_n;
}

/*
 * Chan, Golub and LeVeque's pairwise update: with delta the difference of
 * the two means, the combined mean moves by delta * nb / n and m2 gains
 * delta^2 * na * nb / n on top of both parts.  Written with the weights as
 * fractions (nb / n) so that nothing is formed as a product of two counts,
 * which could lose precision for lifetimes of 10^10 samples and more.
 */
void accum_merge(struct accum *dst, const struct accum *src)
{
	double na, nb, n, delta;

	if (src->count == 0)
		return;
	if (dst->count == 0) {
		dst->count = src->count;
		dst->min = src->min;
		dst->max = src->max;
		dst->sum_lo = src->sum_lo;
		dst->sum_hi = src->sum_hi;
		dst->ref = src->ref;
		dst->mean = src->mean;
		dst->m2 = src->m2;
		hist_merge(&dst->hist, &src->hist);
		merge_below(dst, src);
		return;
	}
	na = (double)dst->count;
	nb = (double)src->count;
	n = na + nb;
	/* Both means are relative to their own first sample: bring src's to
	 * dst's origin before taking the difference. */
	delta = (accum_shifted(src->ref, dst->ref) - dst->mean) + src->mean;
	dst->mean += delta * (nb / n);
	dst->m2 += src->m2 + delta * delta * na * (nb / n);
	dst->count += src->count;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->sum_lo += src->sum_lo;
	dst->sum_hi += src->sum_hi + (dst->sum_lo < src->sum_lo);
	hist_merge(&dst->hist, &src->hist);
	merge_below(dst, src);
}

void accum_clear(struct accum *a)
{
	/* Every field is zero whenever count is (the gate too: its owner
	 * sets it after adding a sample): nothing to write. */
	if (a->count == 0)
		return;
	a->count = 0;
	a->min = 0;
	a->max = 0;
	a->sum_lo = 0;
	a->sum_hi = 0;
	a->ref = 0;
	a->mean = 0.0;
	a->m2 = 0.0;
	a->gate = 0;
	hist_clear(&a->hist);
	/* below1[0] is never read and may keep whatever it holds. */
	if (a->below_n) {
		memset(&a->below1[1], 0, a->below_n * sizeof(a->below1[0]));
		a->below_n = 0;
	}
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

double accum_stddev(const struct accum *a)
{
	if (a->count < 2 || !(a->m2 > 0.0))
		return 0.0;
	return sqrt(a->m2 / (double)(a->count - 1));
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
	uint64_t v;

	if (a->count == 0)
		return 0;
	v = hist_percentile(&a->hist, p);
	if (v < a->min)
		v = a->min;
	if (v > a->max)
		v = a->max;
	return v;
}
