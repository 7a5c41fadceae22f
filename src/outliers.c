/*
 * outliers.c - bounded "N slowest" sets (see outliers.h).
 *
 * A binary min-heap keyed on the duration: the root is the sample the next
 * slower one replaces, so an offer that does not enter costs a compare and
 * one that does costs O(log N) moves inside the set's own memory.
 */
#include "build-config.h"

#include <stdlib.h>

#include "outliers.h"

static void sift_down(struct outlier *e, uint32_t n, uint32_t i)
{
	struct outlier x = e[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && e[c + 1].ticks < e[c].ticks)
			c++;
		if (e[c].ticks >= x.ticks)
			break;
		e[i] = e[c];
		i = c;
	}
	e[i] = x;
}

static void sift_up(struct outlier *e, uint32_t i)
{
	struct outlier x = e[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (e[parent].ticks <= x.ticks)
			break;
		e[i] = e[parent];
		i = parent;
	}
	e[i] = x;
}

static void insert(struct outlier_set *s, uint32_t cap, const struct outlier x)
{
	uint64_t ticks = x.ticks;

	if (cap == 0)
		return;
	if (s->n < cap) {
		s->e[s->n] = x;
		sift_up(s->e, s->n++);
		return;
	}
	if (ticks <= s->e[0].ticks)
		return;
	s->e[0] = x;
	sift_down(s->e, s->n, 0);
}

void outliers_insert(struct outlier_set *s, uint32_t cap, uint64_t ticks, uint64_t start_tsc,
		     uint32_t seq)
{
	insert(s, cap, (struct outlier){ ticks, start_tsc, 0, seq });
}

void outliers_merge(struct outlier_set *dst, const struct outlier_set *src, uint32_t cap)
{
	for (uint32_t i = 0; i < src->n; i++)
		insert(dst, cap, src->e[i]);   /* keeps its date */
}

void outliers_date(struct outlier_set *s, uint64_t (*realtime_of)(const void *ctx, uint64_t tsc),
		   const void *ctx)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (!s->e[i].start_ns)
			s->e[i].start_ns = realtime_of(ctx, s->e[i].start_tsc);
}

static int slowest_first(const void *a, const void *b)
{
	const struct outlier *x = a, *y = b;

	if (x->ticks != y->ticks)
		return x->ticks < y->ticks ? 1 : -1;
	if (x->start_tsc != y->start_tsc)
		return x->start_tsc < y->start_tsc ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

uint32_t outliers_sorted(const struct outlier_set *s, struct outlier *out)
{
	for (uint32_t i = 0; i < s->n; i++)
		out[i] = s->e[i];
	qsort(out, s->n, sizeof(*out), slowest_first);
	return s->n;
}
