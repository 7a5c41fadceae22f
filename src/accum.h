/*
 * accum.h - running statistics of one stage row: count, min, max, and
 * the exact sums of the samples and of their squares (from which the mean
 * and the variance follow exactly), and a log-linear histogram for
 * percentiles.
 *
 * Place in the data flow: pairing -> statistics (here) -> interval report.
 * The pairing code keeps three accumulators per row: two interval buffers
 * (the drain thread feeds one sample by sample while the reporter reads
 * the other) and one for the lifetime, into which each finished interval
 * is merged (sums add) before it is cleared.
 *
 * All-zero memory is a valid empty accumulator and an idle one is never
 * written by accum_clear or accum_merge, so preallocated rows that never
 * see a sample stay non-resident.
 */
#ifndef PERFMOND_ACCUM_H
#define PERFMOND_ACCUM_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

struct accum {
	uint64_t count, min, max;      /* min and max are 0 while count == 0 */
	uint64_t sum_lo, sum_hi;       /* exact 128-bit sum of the samples */
	uint64_t sq[3];                /* exact 192-bit sum of their squares, low word first */
	/* Not a statistic: a filter its owner may keep here, zeroed with the
	 * rest by accum_clear (the pairing keeps the row's outlier gate), on
	 * the line of below1[0]. */
	uint64_t gate;
	/* Exact counts at fixed bounds (hist.h): below1[s + 1] holds the
	 * samples of the bucket bound s falls in that are at or below it;
	 * below1[0] takes the samples of buckets without a bound and is never
	 * read. */
	uint64_t below1[HIST_MAX_BOUNDS + 1];
	/* The histogram's buckets (hist.h's geometry).  No band or count is
	 * kept beside them: the samples lie in buckets [hist_index(min),
	 * hist_index(max)], so a sample writes one bucket and nothing else. */
	uint64_t buckets[HIST_BUCKETS];
};
_Static_assert(offsetof(struct accum, gate) % 64 == 0, "the header is one cache line");

/* Make `a` empty, writing the whole structure.  Zeroed memory is already
 * an empty accumulator. */
void accum_init(struct accum *a);

/*
 * Add one sample.  Drain path, written for the fewest stores: a new
 * extreme and a carry out of a word are rare, so they are branches
 * (predicted not taken) rather than conditional moves that would store
 * every field each time.  A sample below 2^32 (1.6 s in ticks of a
 * 2.6 GHz clock) squares within 64 bits; only larger ones take the
 * 128-bit path.
 *
 * The variance comes from the sums of the samples and of their squares,
 * kept exactly in integers (a square fits 128 bits, 2^64 of them 192): no
 * division per sample, as Welford's method needs, and no rounding at all,
 * so two samples near 2^63 that differ by 2000 show exactly that spread.
 * The one rounding is in accum_stddev(), once per report.
 */
static inline void accum_add(struct accum *a, uint64_t v)
{
	uint64_t sum = a->sum_lo + v;

	if (__builtin_expect((v < a->min) | (a->count == 0), 0))
		a->min = v;
	if (__builtin_expect(v > a->max, 0))
		a->max = v;
	a->count++;
	a->sum_lo = sum;
	if (__builtin_expect(sum < v, 0))
		a->sum_hi++;
	if (__builtin_expect(v >> 32 == 0, 1)) {
		uint64_t sq = v * v, lo = a->sq[0] + sq;

		a->sq[0] = lo;
		if (__builtin_expect(lo < sq, 0) && ++a->sq[1] == 0)
			a->sq[2]++;
	} else {
		unsigned __int128 sq = (unsigned __int128)v * v;
		unsigned __int128 lo = (((unsigned __int128)a->sq[1] << 64) | a->sq[0]) + sq;

		a->sq[0] = (uint64_t)lo;
		a->sq[1] = (uint64_t)(lo >> 64);
		a->sq[2] += lo < sq;
	}
	a->buckets[hist_index(v)]++;
}

/* accum_add, and the exact counts at `b`'s bounds.  Drain path: beyond
 * accum_add, a table load and a loop that runs only for samples in a
 * bucket a bound falls inside. */
static inline __attribute__((always_inline)) void
accum_add_bounded(struct accum *a, uint64_t v, const struct hist_bounds *b)
{
	accum_add(a, v);
	hist_bounds_count(b, hist_index(v), v, a->below1);
}

/* The buckets holding `a`'s samples are [*lo, *hi]; `a` must not be empty. */
static inline void accum_band(const struct accum *a, unsigned *lo, unsigned *hi)
{
	*lo = hist_index(a->min);
	*hi = hist_index(a->max);
}

/* Samples at or below bound s of `b` (the table the samples were added
 * with), exactly. */
static inline uint64_t accum_at_or_below(const struct accum *a, const struct hist_bounds *b,
					 unsigned s)
{
	unsigned lo, hi;

	if (a->count == 0)
		return 0;
	accum_band(a, &lo, &hi);
	return hist_band_at_or_below(a->buckets, lo, hi, b, a->below1, s);
}

/* dst += src, exactly: every figure is a count, an extreme or a sum.  An
 * empty src changes nothing and writes nothing.  `b` is the table src's
 * samples were added with (accum_add_bounded), NULL for none. */
void accum_merge(struct accum *dst, const struct accum *src, const struct hist_bounds *b);

/* Empty `a` (`b` as for accum_merge); writes nothing when it is already
 * empty. */
void accum_clear(struct accum *a, const struct hist_bounds *b);

/* Arithmetic mean, 0 when empty: the exact 128-bit sum divided by the
 * count, rounded once to a double (relative error below 2^-52). */
double accum_mean(const struct accum *a);

/* The mean as an exact integer part and a fraction in [0, 1): for
 * printing means beyond 2^53, where a double no longer holds every
 * integer.  Both 0 when empty. */
void accum_mean_parts(const struct accum *a, uint64_t *ret_int, double *ret_frac);

/* Sample standard deviation, sqrt((n * sq - sum^2) / (n * (n - 1))); 0
 * when n < 2.  The difference is formed exactly in 256 bits, so the only
 * error is the final rounding (about 1e-16 relative) for samples of any
 * magnitude and any spread. */
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
