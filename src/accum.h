/*
 * accum.h - running statistics of one stage row: count, min, max, exact
 * sum, Welford mean and variance, and a log-linear histogram for
 * percentiles.
 *
 * Place in the data flow: pairing -> statistics (here) -> interval report.
 * The pairing code keeps two accumulators per row: one for the current
 * interval, fed sample by sample on the drain path, and one for the
 * lifetime, into which the interval is merged (Chan's parallel formula) and
 * then cleared at every flush.
 *
 * Like struct hist, all-zero memory is a valid empty accumulator and an
 * idle one is never written by accum_clear or accum_merge, so preallocated
 * rows that never see a sample stay non-resident.
 */
#ifndef PERFMOND_ACCUM_H
#define PERFMOND_ACCUM_H

#include <stdint.h>

#include "hist.h"

struct accum {
	uint64_t count, min, max;      /* min and max are 0 while count == 0 */
	uint64_t sum_lo, sum_hi;       /* exact 128-bit sum of the samples */
	double mean, m2;               /* Welford: running mean, sum of squared deviations */
	struct hist hist;
};

/* Make `a` empty, writing the whole structure.  Zeroed memory is already
 * an empty accumulator. */
void accum_init(struct accum *a);

/*
 * Add one sample.  Drain path: the only conditionals are the min/max and
 * histogram band updates, which compile to conditional moves; the sum
 * carries into its high word without a branch.
 */
static inline void accum_add(struct accum *a, uint64_t v)
{
	uint64_t n = a->count + 1;
	uint64_t min = a->count ? a->min : v;
	double x = (double)v;
	double delta = x - a->mean;

	a->min = v < min ? v : min;
	a->max = v > a->max ? v : a->max;
	a->count = n;
	a->sum_lo += v;
	a->sum_hi += a->sum_lo < v;
	a->mean += delta / (double)n;
	a->m2 += delta * (x - a->mean);
	hist_add(&a->hist, v);
}

/* dst += src.  Count, min, max, sum and histogram are exact; mean and m2
 * combine by Chan's formula.  An empty src changes nothing and writes
 * nothing; an empty dst becomes a copy of src. */
void accum_merge(struct accum *dst, const struct accum *src);

/* Empty `a`; writes nothing when it is already empty. */
void accum_clear(struct accum *a);

/* Arithmetic mean, 0 when empty. */
double accum_mean(const struct accum *a);

/* Sample standard deviation sqrt(m2 / (n - 1)); 0 when n < 2. */
double accum_stddev(const struct accum *a);

/* Smallest sample, 0 when empty (never UINT64_MAX). */
uint64_t accum_min(const struct accum *a);

/* Largest sample, 0 when empty. */
uint64_t accum_max(const struct accum *a);

/* Sum of the samples as a double: exact up to 2^53, beyond that within
 * an ulp or so of the exact 128-bit sum kept in sum_lo/sum_hi. */
double accum_sum(const struct accum *a);

/* Percentile p by nearest rank from the histogram, clamped to [min, max]
 * so a bucket midpoint never lies outside what was really seen.  0 when
 * empty. */
uint64_t accum_percentile(const struct accum *a, double p);

#endif /* PERFMOND_ACCUM_H */
