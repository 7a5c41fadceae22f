/*
 * outliers.h - the N slowest samples of a stage row: a fixed-capacity
 * min-heap per row, filled on the drain thread without allocating.
 *
 * Flow: drain -> pairing (each stage or total sample is offered here beside
 * its accumulator) -> interval hand-over -> report -> outliers CSV and the
 * summary's "slowest spans" list.
 *
 * A set holds at most `cap` entries (cap is the configured
 * `[output] outliers`, the same for every set of an engine).  While it has
 * room every sample goes in; once full, a sample enters only when it is
 * slower than the fastest one held, which is the heap's root.  The pairing
 * keeps that bound (the gate, see outliers_offer) beside the row's
 * accumulator, so the common case costs one compare on a line the sample
 * touches anyway.  Ties keep the sample already held,
 * so the earliest of equal durations wins.
 */
#ifndef PERFMOND_OUTLIERS_H
#define PERFMOND_OUTLIERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest `[output] outliers` accepted. */
#define OUTLIERS_MAX 1000

/* One slow sample: its duration (ticks, as accumulated), the timestamp its
 * transition started at, that start in UTC (0 until the reporter dates it,
 * once, so every file that lists it gives the same time), and the span's
 * seq. */
struct outlier {
	uint64_t ticks;
	uint64_t start_tsc;
	uint64_t start_ns;
	uint32_t seq;
};

struct outlier_set {
	uint32_t n;               /* entries held, <= cap */
	uint32_t pad;
	struct outlier e[];       /* min-heap on ticks; e[0] is the fastest held */
};

/* Bytes one set of capacity `cap` takes (a multiple of 8). */
static inline size_t outliers_set_size(uint32_t cap)
{
	return sizeof(struct outlier_set) + (size_t)cap * sizeof(struct outlier);
}

/* Bytes from one set to the next in an array of sets of capacity `cap`:
 * the size rounded up to a cache line, so that sets written by different
 * threads (the drain thread's current interval, the reporter's finished
 * one) never share a line, as the accumulators beside them do not. */
static inline size_t outliers_set_stride(uint32_t cap)
{
	return (outliers_set_size(cap) + 63) & ~(size_t)63;
}

/* Insert into a set that has room or whose root is faster.  Internal. */
void outliers_insert(struct outlier_set *s, uint32_t cap, uint64_t ticks, uint64_t start_tsc,
		     uint32_t seq);

/*
 * Offer one sample to a set of capacity `cap` (>= 1).  Returns the set's
 * gate: the least duration that could still enter it (0 while it has
 * room).  A caller may keep the gate on a cache line it touches anyway and
 * not offer what falls below it: the set then stays out of the cache in
 * the common case.  Offering a sample below the gate is harmless.
 */
static inline uint64_t outliers_offer(struct outlier_set *s, uint32_t cap, uint64_t ticks,
				      uint64_t start_tsc, uint32_t seq)
{
	if (!(s->n == cap && ticks <= s->e[0].ticks))
		outliers_insert(s, cap, ticks, start_tsc, seq);
	if (s->n < cap)
		return 0;
	return s->e[0].ticks + (s->e[0].ticks != UINT64_MAX);
}

/* Offer every entry of `src` to `dst` (both of capacity `cap`). */
void outliers_merge(struct outlier_set *dst, const struct outlier_set *src, uint32_t cap);

/* Give every entry not dated yet its UTC start: `realtime_of(ctx, tsc)`. */
void outliers_date(struct outlier_set *s, uint64_t (*realtime_of)(const void *ctx, uint64_t tsc),
		   const void *ctx);

/* Empty a set. */
static inline void outliers_clear(struct outlier_set *s)
{
	s->n = 0;
}

/*
 * Copy the entries of `s` to `out` (room for s->n) slowest first; equal
 * durations by start time, then seq.  Returns s->n.
 */
uint32_t outliers_sorted(const struct outlier_set *s, struct outlier *out);

#endif /* PERFMOND_OUTLIERS_H */
