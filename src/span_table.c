/*
 * span_table.c - fixed-capacity open-span table: hash index, touch order
 * (a queue and a heap) and free list over one preallocated entry array.
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
	return (size_t)capacity * (sizeof(struct span) + sizeof(*t->num) + sizeof(*t->opened) +
				   sizeof(*t->gen) + 2 * sizeof(*t->heap)) +
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
	t->opened = malloc((size_t)capacity * sizeof(*t->opened));
	t->gen = malloc((size_t)capacity * sizeof(*t->gen));
	t->queue = malloc((size_t)nqueue * sizeof(*t->queue));
	t->heap = malloc(2 * (size_t)capacity * sizeof(*t->heap));
	if (!t->entries || !t->slots || !t->num || !t->opened || !t->gen || !t->queue ||
	    !t->heap) {
		span_table_free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->mask = nslots - 1;
	t->qmask = nqueue - 1;
	t->heap_cap = 2 * capacity;
	t->capacity = capacity;
	span_table_clear(t);
	return t;
}

void span_table_free(struct span_table *t)
{
	if (!t)
		return;
	free(t->heap);
	free(t->queue);
	free(t->gen);
	free(t->opened);
	free(t->num);
	free(t->slots);
	free(t->entries);
	free(t);
}

void span_table_clear(struct span_table *t)
{
	memset(t->slots, 0xFF, ((size_t)t->mask + 1) * sizeof(*t->slots));
	memset(t->gen, 0, (size_t)t->capacity * sizeof(*t->gen));
	t->qhead = 0;
	t->qtail = 0;
	t->nheap = 0;
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

/* The span whose record this is is still open. */
static inline bool mark_live(const struct span_table *t, struct span_mark m)
{
	return t->gen[m.idx] == m.gen;
}

static inline bool item_live(const struct span_table *t, const struct span_heap_item *h)
{
	return t->gen[h->idx] == h->gen;
}

void span_table_compact_queue(struct span_table *t)
{
	uint32_t r, w = t->qhead;

	/* Forward and in place: the write position never passes the read
	 * position.  At most `count` marks are live and the queue holds at
	 * least twice the capacity, so at least half of it comes free.  (A
	 * branchless squeeze, every mark stored and the write position
	 * advanced by its liveness, measured no faster: bench_engine drain.
	 * Nor did a queue of four times the live marks, kept in the first
	 * level cache and squeezed that much more often.)  A dead mark is
	 * gone within two capacities of openings, long before its entry's
	 * generation (32 bits) could come round again. */
	for (r = t->qhead; r != t->qtail; r++) {
		struct span_mark m = t->queue[r & t->qmask];

		if (mark_live(t, m))
			t->queue[w++ & t->qmask] = m;
	}
	t->qtail = w;
}

/* ---- the heap: items on key, smallest at 0 ---- */

static void heap_down(struct span_table *t, uint32_t i)
{
	struct span_heap_item *h = t->heap, x = h[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= t->nheap)
			break;
		if (c + 1 < t->nheap && h[c + 1].key < h[c].key)
			c++;
		if (x.key <= h[c].key)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

static void heap_pop(struct span_table *t)
{
	t->heap[0] = t->heap[--t->nheap];
	heap_down(t, 0);
}

/* Every live item under its span's latest touch, the dead ones dropped,
 * and the rest in heap order again. */
static void heap_refresh(struct span_table *t)
{
	uint32_t r, w = 0;

	for (r = 0; r < t->nheap; r++) {
		struct span_heap_item x = t->heap[r];

		if (item_live(t, &x)) {
			x.key = t->num[x.idx];
			t->heap[w++] = x;
		}
	}
	t->nheap = w;
	for (r = w / 2; r-- > 0;)
		heap_down(t, r);
}

static void heap_push(struct span_table *t, struct span_heap_item x)
{
	uint32_t i;

	/* Live items are at most `count`, and the heap holds twice the
	 * capacity: a refresh frees at least half of it.  (In random
	 * trials of opening, touching, closing and looking for the oldest,
	 * the heap never held more than the capacity, dead items included;
	 * this bounds it whatever the sequence.)  A dead item whose entry's
	 * generation came round again would only stand for that entry's
	 * span a second time, under its true last touch. */
	if (t->nheap == t->heap_cap)
		heap_refresh(t);
	for (i = t->nheap++; i > 0; i = (i - 1) / 2) {
		uint32_t up = (i - 1) / 2;

		if (t->heap[up].key <= x.key)
			break;
		t->heap[i] = t->heap[up];
	}
	t->heap[i] = x;
}

/* The heap's top made live and filed under its latest touch; false when
 * the heap is empty. */
static bool heap_settle(struct span_table *t)
{
	while (t->nheap) {
		struct span_heap_item *top = &t->heap[0];

		if (!item_live(t, top)) {
			heap_pop(t);
		} else if (top->key != t->num[top->idx]) {
			top->key = t->num[top->idx];
			heap_down(t, 0);
		} else {
			return true;
		}
	}
	return false;
}

/*
 * Index of the least recently touched open span; SPAN_NONE when there is
 * none.  The queue is in order of opening and a span's latest touch is
 * never before its opening, so a first live mark whose span was not
 * touched since is older than every span behind it; and it is the oldest
 * if the heap's top is younger.  A first mark whose span was touched
 * since goes to the heap, and the search goes on.
 */
static uint32_t oldest_index(struct span_table *t)
{
	for (;;) {
		bool top = heap_settle(t);
		struct span_mark m;

		while (t->qhead != t->qtail && !mark_live(t, t->queue[t->qhead & t->qmask]))
			t->qhead++;
		if (t->qhead == t->qtail)
			return top ? t->heap[0].idx : SPAN_NONE;
		m = t->queue[t->qhead & t->qmask];
		if (top && t->heap[0].key < t->opened[m.idx])
			return t->heap[0].idx;
		if (t->num[m.idx] == t->opened[m.idx])
			return m.idx;
		t->qhead++;
		heap_push(t, (struct span_heap_item){ t->num[m.idx], m.idx, m.gen });
	}
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
	t->gen[idx]++;               /* its record is dead from now on */
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

static int item_cmp(const void *a, const void *b)
{
	const struct span_heap_item *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

void span_table_for_each(struct span_table *t,
			 void (*fn)(struct span *s, void *arg), void *arg)
{
	uint32_t r;

	/* Every record to the heap, under its span's latest touch; sorted,
	 * the heap is in heap order as well as in touch order. */
	for (r = t->qhead; r != t->qtail; r++) {
		struct span_mark m = t->queue[r & t->qmask];

		if (mark_live(t, m))
			heap_push(t, (struct span_heap_item){ t->num[m.idx], m.idx, m.gen });
	}
	t->qhead = t->qtail;
	heap_refresh(t);
	qsort(t->heap, t->nheap, sizeof(*t->heap), item_cmp);
	for (r = 0; r < t->nheap; r++)
		fn(&t->entries[t->heap[r].idx], arg);
}
