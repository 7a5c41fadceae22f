/*
 * span_table.c - fixed-capacity open-span table: hash index, touch queue
 * and free list over one preallocated entry array.
 *
 * Data flow: drain -> pairing -> [span table].  See span_table.h for the
 * shape; lookups, touches and prefetches are inline there.
 */
#include "build-config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "span_table.h"

_Static_assert(sizeof(struct span) == 128, "a span should be two cache lines");

static uint32_t pow2_at_least(uint64_t n)
{
	uint64_t v = 2;

	while (v < n)
		v <<= 1;
	return (uint32_t)v;
}

size_t span_table_memory_bytes(uint32_t capacity)
{
	uint64_t nslots = pow2_at_least(2 * (uint64_t)capacity);
	struct span_table *t = NULL;
	return (size_t)capacity * (sizeof(struct span) + sizeof(*t->num)) +
	       (size_t)nslots * (sizeof(*t->slots) + sizeof(*t->queue));
}

struct span_table *span_table_new(uint32_t capacity)
{
	struct span_table *t;
	uint32_t nslots, nqueue;

	if (capacity == 0 || capacity > SPAN_TABLE_MAX_CAPACITY) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	nslots = pow2_at_least(2 * (uint64_t)capacity);
	nqueue = pow2_at_least(2 * (uint64_t)capacity);
	t->entries = aligned_alloc(64, (size_t)capacity * sizeof(struct span));
	t->slots = malloc((size_t)nslots * sizeof(*t->slots));
	t->num = malloc((size_t)capacity * sizeof(*t->num));
	t->queue = malloc((size_t)nqueue * sizeof(*t->queue));
	if (!t->entries || !t->slots || !t->num || !t->queue) {
		span_table_free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->mask = nslots - 1;
	t->qmask = nqueue - 1;
	t->capacity = capacity;
	span_table_clear(t);
	return t;
}

void span_table_free(struct span_table *t)
{
	if (!t)
		return;
	free(t->queue);
	free(t->num);
	free(t->slots);
	free(t->entries);
	free(t);
}

void span_table_clear(struct span_table *t)
{
	memset(t->slots, 0xFF, ((size_t)t->mask + 1) * sizeof(*t->slots));
	memset(t->num, 0, (size_t)t->capacity * sizeof(*t->num));
	t->qhead = 0;
	t->qtail = 0;
	t->clock = 0;
	t->count = 0;
	t->peak = 0;
	t->free_head = SPAN_NONE;
	t->next_unused = 0;
}

static inline uint32_t entry_index(const struct span_table *t, const struct span *s)
{
	return (uint32_t)(s - t->entries);
}

static inline bool mark_live(const struct span_table *t, struct span_mark m)
{
	return t->num[m.idx] == m.num;
}

void span_table_compact_queue(struct span_table *t)
{
	uint32_t r, w = t->qhead;

	/* Forward and in place: the write position never passes the read
	 * position.  At most `count` marks are live and the queue holds at
	 * least twice the capacity, so at least half of it comes free.  (A
	 * branchless squeeze, every mark stored and the write position
	 * advanced by its liveness, measured no faster: bench_engine drain.) */
	for (r = t->qhead; r != t->qtail; r++) {
		struct span_mark m = t->queue[r & t->qmask];

		if (mark_live(t, m))
			t->queue[w++ & t->qmask] = m;
	}
	t->qtail = w;
}

/* Index of the least recently touched open span, dropping stale marks in
 * front of it; SPAN_NONE when there is none. */
static uint32_t oldest_index(struct span_table *t)
{
	while (t->qhead != t->qtail) {
		struct span_mark m = t->queue[t->qhead & t->qmask];

		if (mark_live(t, m))
			return m.idx;
		t->qhead++;
	}
	return SPAN_NONE;
}

/* Slot holding entry `idx`, whose key hashes to `h`; it must be there. */
static inline uint32_t slot_of(const struct span_table *t, uint64_t h, uint32_t idx)
{
	uint64_t want = (h & ~UINT64_C(0xFFFFFFFF)) | idx;
	uint32_t i = (uint32_t)(h >> 32) & t->mask;

	while (t->slots[i] != want)
		i = (i + 1) & t->mask;
	return i;
}

struct span *span_table_insert(struct span_table *t, uint64_t key, uint64_t now,
			       bool *ret_created)
{
	return span_table_insert_hashed(t, key, span_hash(key), now, ret_created);
}

/* Backward-shift deletion: pull later members of the probe run into the
 * gap whenever their home slot allows it, so no tombstones are needed and
 * lookups never slow down with churn. */
static void slot_delete(struct span_table *t, uint32_t gap)
{
	uint32_t j = gap;

	for (;;) {
		uint64_t v;
		uint32_t home;

		j = (j + 1) & t->mask;
		v = t->slots[j];
		if (v == SPAN_SLOT_EMPTY)
			break;
		home = (uint32_t)(v >> 32) & t->mask;
		/* The entry may move back to the gap unless its home lies
		 * cyclically in (gap, j]. */
		if (((j - home) & t->mask) >= ((j - gap) & t->mask)) {
			t->slots[gap] = v;
			gap = j;
		}
	}
	t->slots[gap] = SPAN_SLOT_EMPTY;
}

void span_table_erase_at(struct span_table *t, struct span *s, uint32_t slot)
{
	uint32_t idx = entry_index(t, s);

	slot_delete(t, slot);
	t->num[idx] = 0;             /* its marks are stale from now on */
	s->free_next = t->free_head;
	t->free_head = idx;
	t->count--;
}

void span_table_erase(struct span_table *t, struct span *s)
{
	span_table_erase_at(t, s, slot_of(t, span_hash(s->key), entry_index(t, s)));
}

struct span *span_table_oldest(struct span_table *t)
{
	uint32_t idx = oldest_index(t);

	return idx == SPAN_NONE ? NULL : &t->entries[idx];
}

bool span_table_evict_oldest(struct span_table *t, uint64_t *ret_key)
{
	struct span *s = span_table_oldest(t);

	if (!s)
		return false;
	*ret_key = s->key;
	span_table_erase(t, s);
	return true;
}

struct span *span_table_expired(struct span_table *t, uint64_t now, uint64_t max_age)
{
	struct span *s;

	if (max_age == 0)
		return NULL;
	s = span_table_oldest(t);
	if (s && (s->touch <= now ? now - s->touch > max_age : s->touch - now > max_age))
		return s;
	return NULL;
}

uint32_t span_table_count(const struct span_table *t)
{
	return t->count;
}

uint32_t span_table_capacity(const struct span_table *t)
{
	return t->capacity;
}

uint32_t span_table_peak(const struct span_table *t)
{
	return t->peak;
}

void span_table_for_each(struct span_table *t,
			 void (*fn)(struct span *s, void *arg), void *arg)
{
	uint32_t r;

	for (r = t->qhead; r != t->qtail; r++) {
		struct span_mark m = t->queue[r & t->qmask];

		if (mark_live(t, m))
			fn(&t->entries[m.idx], arg);
	}
}
