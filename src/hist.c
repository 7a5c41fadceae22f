/*
 * hist.c - log-linear histogram: bucket geometry, percentiles and the
 * exact counts at fixed bounds.
 *
 * Place in the data flow: statistics.  The per-sample path (hist_index,
 * hist_bounds_count) is inline in hist.h; this file holds what runs once
 * per report: turning a percentile into a nearest rank and then into a
 * bucket value, and counting the samples at or below a bound.
 */
#include "build-config.h"

#include "hist.h"

#include <math.h>
#include <string.h>

#define HIST_SUB (UINT64_C(1) << HIST_PRECISION)

/*
 * Bucket idx >= 2^P lies in block b = idx >> P >= 1 and holds the values
 * whose top P+1 bits are (2^P + sub) at shift b - 1.  Block 0 is the exact
 * range below 2^P (block 1 is exact too: its shift is 0).
 */
uint64_t hist_lower(unsigned idx)
{
	unsigned block, sub;

	if (idx >= HIST_BUCKETS)
		idx = HIST_BUCKETS - 1;
	block = idx >> HIST_PRECISION;
	sub = idx & (unsigned)(HIST_SUB - 1);
	if (block == 0)
		return sub;
	return (HIST_SUB + sub) << (block - 1);
}

uint64_t hist_width(unsigned idx)
{
	unsigned block;

	if (idx >= HIST_BUCKETS)
		idx = HIST_BUCKETS - 1;
	block = idx >> HIST_PRECISION;
	return block == 0 ? 1 : UINT64_C(1) << (block - 1);
}

uint64_t hist_value(unsigned idx)
{
	return hist_lower(idx) + (hist_width(idx) >> 1);
}

/*
 * p / 100 becomes s / 1e9 with s = round(p * 1e7), so that decimal
 * percentiles such as 99.9 are taken at their written value rather than at
 * the binary double just above or below it (99.9 of 1000 samples is rank
 * 999, not 1000).  With n = q * 1e9 + r the rank is
 *   ceil(n * s / 1e9) = q * s + ceil(r * s / 1e9),
 * where q * s <= n and r * s < 1e18: no product overflows 64 bits.
 */
uint64_t hist_nearest_rank(uint64_t n, double p)
{
	const uint64_t scale = UINT64_C(1000000000);
	uint64_t s, q, r, rank;

	if (n == 0)
		return 0;
	if (isnan(p) || p <= 0.0)
		return 1;
	if (p >= 100.0)
		return n;
	s = (uint64_t)(p * 1e7 + 0.5);
	if (s > scale)
		s = scale;
	q = n / scale;
	r = n % scale;
	rank = q * s + (r * s + scale - 1) / scale;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return rank;
}

uint64_t hist_band_percentile(const uint64_t *buckets, uint64_t n, unsigned lo, unsigned hi,
			      double p)
{
	uint64_t rank = hist_nearest_rank(n, p), seen = 0;

	for (unsigned i = lo; i <= hi; i++) {
		seen += buckets[i];
		if (seen >= rank)
			return hist_value(i);
	}
	return hist_value(hi);
}

void hist_bounds_init(struct hist_bounds *b, const uint64_t *bounds, unsigned n)
{
	unsigned i, k = 0;

	memset(b, 0, sizeof(*b));
	for (i = 0; i < n && k < HIST_MAX_BOUNDS; i++) {
		if (k && bounds[i] < b->bound1[k])
			break;
		b->bound1[++k] = bounds[i];
	}
	b->n = k;
	for (i = 0; i < k; i++) {
		struct hist_bounds_cell *c = &b->cell[hist_index(b->bound1[i + 1])];

		if (c->slot1 == 0)
			c->slot1 = (uint16_t)(i + 1);
		else
			c->extra++;
	}
	for (i = 0; i < HIST_BUCKETS; i++) {
		const struct hist_bounds_cell *c = &b->cell[i];

		b->top1[i] = c->slot1 ? (uint16_t)(c->slot1 + c->extra) : i ? b->top1[i - 1] : 0;
	}
}

uint64_t hist_band_at_or_below(const uint64_t *buckets, unsigned lo, unsigned hi,
			       const struct hist_bounds *b, const uint64_t *below1, unsigned s)
{
	unsigned i, idx;
	uint64_t n = 0;

	if (s >= b->n)
		return 0;
	idx = hist_index(b->bound1[s + 1]);
	for (i = lo; i <= hi && i < idx; i++)
		n += buckets[i];
	return idx >= lo && idx <= hi ? n + below1[s + 1] : n;
}
