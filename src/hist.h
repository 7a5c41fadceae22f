/*
 * hist.h - log-linear latency histogram over the whole uint64_t range.
 *
 * Place in the data flow: drain -> pairing -> statistics (here) -> interval
 * report.  Every row owns three bucket arrays inside its accumulators
 * (accum.h): two interval buffers, which the drain thread and the reporter
 * take turns with, and the lifetime; the drain thread adds one sample per
 * transition, finished span or value, the report reads percentiles once
 * per flush.  An accumulator keeps the bare buckets and knows their used
 * band from its minimum and maximum; the functions here that read buckets
 * take that band.
 *
 * Layout: with P = HIST_PRECISION, every value below 2^(P+1) has a bucket
 * of its own; above that each power of two [2^e, 2^(e+1)) is cut into 2^P
 * equal sub-buckets.  A bucket reports its midpoint, which is within
 * 1/2^(P+1) of any value in it (1/32 at the default P = 4).  The index is
 * computed without branches from the position of the top bit.
 *
 * Memory: the daemon maps thousands of bucket arrays up front as anonymous
 * memory (pairing.c) and counts on the pages of idle ones never becoming
 * resident: all-zero buckets are an empty histogram, and whatever reads,
 * merges or clears them walks the used band alone.
 */
#ifndef PERFMOND_HIST_H
#define PERFMOND_HIST_H

#include <stdint.h>

#ifndef HIST_PRECISION
#define HIST_PRECISION 4
#endif
#if HIST_PRECISION < 1 || HIST_PRECISION > 7
#error "HIST_PRECISION must be between 1 and 7"
#endif

/* Exact buckets 0 .. 2^(P+1)-1, then 2^P buckets for each of the
 * exponents P+1 .. 63: (2 + 63 - P) << P in all. */
#define HIST_BUCKETS ((65u - HIST_PRECISION) << HIST_PRECISION)

/*
 * Bucket of value `v`: the top bit of v | 2^P gives the exponent e (at
 * least P), and the P bits below the top bit of v >> (e - P) select the
 * sub-bucket.  Below 2^(P+1) the shift is 0 and the index is v itself.
 */
static inline unsigned hist_index(uint64_t v)
{
	unsigned e = 63u - (unsigned)__builtin_clzll(v | (UINT64_C(1) << HIST_PRECISION));
	unsigned shift = e - HIST_PRECISION;

	return (shift << HIST_PRECISION) + (unsigned)(v >> shift);
}

/*
 * Exact counts at fixed bounds.  A bucket reports every sample in it as
 * one value, so a count of the samples at or below a bound that falls
 * inside a bucket cannot come from the buckets alone.  A hist_bounds table
 * lists, for every bucket, the bounds that fall inside it; the drain path
 * then keeps, per bound, how many samples of that one bucket were at or
 * below it.  The samples at or below bound s are then exactly all the
 * samples of the buckets before the bound's bucket plus that count
 * (hist_band_at_or_below).
 */
#define HIST_MAX_BOUNDS 256

/* Per bucket: its first bound's slot + 1 (0: no bound in it), and how many
 * more bounds lie in it (0 unless bounds are closer than a bucket width). */
struct hist_bounds_cell {
	uint16_t slot1;
	uint16_t extra;
};

struct hist_bounds {
	unsigned n;
	/* bound1[0] is 0 (the "no bound" slot), bound1[s + 1] is bound s;
	 * nondecreasing, and slot s counts bound s. */
	uint64_t bound1[HIST_MAX_BOUNDS + 1];
	struct hist_bounds_cell cell[HIST_BUCKETS];
	/* top1[i]: the highest slot + 1 of the bounds in buckets 0..i, 0 if none. */
	uint16_t top1[HIST_BUCKETS];
};

/* Build the table for `n` (at most HIST_MAX_BOUNDS) nondecreasing bounds;
 * bound i gets slot i.  The table stops before a bound smaller than the
 * one before it, or past HIST_MAX_BOUNDS.  n == 0: none. */
void hist_bounds_init(struct hist_bounds *b, const uint64_t *bounds, unsigned n);

/* The slots + 1 that samples in buckets [lo, hi] can have counted:
 * [*first1, *end1), empty when no bound lies in those buckets. */
static inline void hist_bounds_slots(const struct hist_bounds *b, unsigned lo, unsigned hi,
				     unsigned *first1, unsigned *end1)
{
	*first1 = (lo ? b->top1[lo - 1] : 0u) + 1u;
	*end1 = b->top1[hi] + 1u;
}

/*
 * The drain path's part, for sample v in bucket idx.  No branch on the
 * common path: one table load and one increment of below1[slot1], where
 * slot 0 is a counter nobody reads that takes the samples of buckets
 * without a bound (a select between two addresses compiles to a branch,
 * which half the samples would mispredict).  A loop runs only for buckets
 * holding several bounds.  below1[s + 1] counts bound s.
 */
static inline void hist_bounds_count(const struct hist_bounds *b, unsigned idx, uint64_t v,
				     uint64_t *below1)
{
	struct hist_bounds_cell c = b->cell[idx];

	below1[c.slot1] += v <= b->bound1[c.slot1];
	if (__builtin_expect(c.extra != 0, 0)) {
		for (unsigned s = c.slot1 + 1u; s <= (unsigned)c.slot1 + c.extra; s++)
			below1[s] += v <= b->bound1[s];
	}
}

/* Samples at or below bound s of `b`, exactly, in the bucket array
 * `buckets` whose samples all lie in buckets [lo, hi], given the counts
 * `below1` kept by hist_bounds_count for the same samples. */
uint64_t hist_band_at_or_below(const uint64_t *buckets, unsigned lo, unsigned hi,
			       const struct hist_bounds *b, const uint64_t *below1, unsigned s);

/* Smallest value in bucket `idx` (idx >= HIST_BUCKETS is treated as the
 * last bucket). */
uint64_t hist_lower(unsigned idx);

/* Number of distinct values in bucket `idx`: 1 in the exact range, a power
 * of two above it. */
uint64_t hist_width(unsigned idx);

/* Value reported for bucket `idx`: its midpoint, lower + width / 2 (the
 * value itself in the exact range).  Never overflows, even for the last
 * bucket, which ends at UINT64_MAX. */
uint64_t hist_value(unsigned idx);

/*
 * Nearest rank of percentile p among n samples: ceil(p / 100 * n), at least
 * 1 and at most n (0 when n == 0).  p is taken at a resolution of 1e-7
 * (1e-9 as a fraction) and the product is formed exactly in integers, so
 * the answer is exact for every n up to UINT64_MAX.  NaN and p <= 0 give 1,
 * p >= 100 gives n.
 */
uint64_t hist_nearest_rank(uint64_t n, double p);

/*
 * Percentile p (0..100) by nearest rank of the `n` samples in `buckets`,
 * all of them in buckets [lo, hi] (lo <= hi < HIST_BUCKETS): the value of
 * the bucket holding the sample of that rank.  NaN or p <= 0 give the
 * lowest used bucket, p >= 100 (and +inf) the highest.
 */
uint64_t hist_band_percentile(const uint64_t *buckets, uint64_t n, unsigned lo, unsigned hi,
			      double p);

#endif /* PERFMOND_HIST_H */
