/*
 * accum.h - running statistics of one stage row: count, min, max, exact
 * sum, Welford mean and variance, and a log-linear histogram for
 * percentiles.
 *
 * Place in the data flow: pairing -> statistics (here) -> interval report.
 * The pairing code keeps three accumulators per row: two interval buffers
 * (the drain thread feeds one sample by sample while the reporter reads
 * the other) and one for the lifetime, into which each finished interval
 * is merged (Chan's parallel formula) before it is cleared.
 *
 * Like struct hist, all-zero memory is a valid empty accumulator and an
 * idle one is never written by accum_clear or accum_merge, so preallocated
 * rows that never see a sample stay non-resident.
 */
#ifndef PERFMOND_ACCUM_H
#define PERFMOND_ACCUM_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

struct accum {
	uint64_t count, min, max;      /* min and max are 0 while count == 0 */
	uint64_t sum_lo, sum_hi;       /* exact 128-bit sum of the samples */
	uint64_t ref;                  /* the first sample; Welford runs on v - ref */
	double mean, m2;               /* Welford on v - ref: mean, sum of squared deviations */
	/* Exact counts at fixed bounds (hist.h): below1[s + 1] holds the
	 * samples of the bucket bound s falls in that are at or below it;
	 * below1[0] takes the samples of buckets without a bound and is never
	 * read.  Slots past below_n are zero. */
	uint32_t below_n;
	uint64_t below1[HIST_MAX_BOUNDS + 1];
	/* Not a statistic: a filter its owner may keep here, on the line of
	 * the histogram's header that every sample writes (the pairing keeps
	 * the row's outlier gate).  Zeroed with the rest by accum_clear. */
	uint64_t gate;
	struct hist hist;
};
_Static_assert(offsetof(struct accum, gate) / 64 == offsetof(struct accum, hist) / 64,
	       "the gate shares the histogram header's cache line");

/* Make `a` empty, writing the whole structure.  Zeroed memory is already
 * an empty accumulator. */
void accum_init(struct accum *a);

/* v - ref as a double, exact while |v - ref| < 2^53, whatever v and ref
 * are.  One signed conversion; the branch for samples 2^63 or more apart
 * (where the signed difference wraps) is never taken in practice. */
static inline double accum_shifted(uint64_t v, uint64_t ref)
{
	uint64_t d = v - ref;

	if (__builtin_expect((v >= ref) != ((int64_t)d >= 0), 0))
		return v >= ref ? (double)d : -(double)(ref - v);
	return (double)(int64_t)d;
}

/*
 * Add one sample.  Drain path: the only conditionals are the min/max,
 * shift and histogram band updates, which compile to conditional moves;
 * the sum carries into its high word without a branch.
 *
 * Welford runs on the sample minus the accumulator's first sample: a
 * double holds integers exactly only up to 2^53, so two samples near 2^63
 * that differ by 2000 would otherwise both round to the same double and
 * show no spread at all.  Shifted, the deviations are small exact numbers
 * whatever the magnitude of the samples.
 */
static inline void accum_add(struct accum *a, uint64_t v)
{
	uint64_t n = a->count + 1;
	uint64_t min = a->count ? a->min : v;
	uint64_t ref = a->count ? a->ref : v;
	double x = accum_shifted(v, ref);
	double delta = x - a->mean;

	a->ref = ref;
	a->min = v < min ? v : min;
	a->max = v > a->max ? v : a->max;
	a->count = n;
	a->sum_lo += v;
	a->sum_hi += a->sum_lo < v;
	a->mean += delta / (double)n;
	a->m2 += delta * (x - a->mean);
	hist_add(&a->hist, v);
}

/* accum_add, and the exact counts at `b`'s bounds.  Drain path: beyond
 * accum_add, a table load and a loop that runs only for samples in a
 * bucket a bound falls inside. */
static inline __attribute__((always_inline)) void
accum_add_bounded(struct accum *a, uint64_t v, const struct hist_bounds *b)
{
	accum_add(a, v);
	hist_bounds_count(b, hist_index(v), v, a->below1, &a->below_n);
}

/* Samples at or below bound s of `b` (the table the samples were added
 * with), exactly. */
static inline uint64_t accum_at_or_below(const struct accum *a, const struct hist_bounds *b,
					 unsigned s)
{
	return a->count ? hist_count_at_or_below(&a->hist, b, a->below1, s) : 0;
}

/* dst += src.  Count, min, max, sum and histogram are exact; mean and m2
 * combine by Chan's formula.  An empty src changes nothing and writes
 * nothing; an empty dst becomes a copy of src. */
void accum_merge(struct accum *dst, const struct accum *src);

/* Empty `a`; writes nothing when it is already empty. */
void accum_clear(struct accum *a);

/* Arithmetic mean, 0 when empty: the exact 128-bit sum divided by the
 * count, rounded once to a double (relative error below 2^-52). */
double accum_mean(const struct accum *a);

/* The mean as an exact integer part and a fraction in [0, 1): for
 * printing means beyond 2^53, where a double no longer holds every
 * integer.  Both 0 when empty. */
void accum_mean_parts(const struct accum *a, uint64_t *ret_int, double *ret_frac);

/* Sample standard deviation sqrt(m2 / (n - 1)); 0 when n < 2.  The
 * deviations were taken from a shifted origin, so the result is accurate
 * to about 1e-15 relative for samples of any magnitude. */
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
