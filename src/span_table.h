/*
 * span_table.h - the open-span table of the pairing engine.
 *
 * Data flow: producer -> ring -> drain -> [pairing: span table] -> statistics
 * -> report.  Every span between its begin and its end lives here, keyed by
 * (point, seq).  The table has a fixed capacity chosen at start-up and never
 * allocates afterwards.
 *
 * Three structures share one entry array:
 *   - an open-addressing hash index (linear probing, load factor <= 1/2,
 *     backward-shift deletion, no tombstones) from key to entry;
 *   - the exact order of last touch, worked out lazily.  A touch only
 *     stamps the entry with the next touch number.  The order is needed
 *     only when the least recently touched span is asked for (an eviction,
 *     the age sweep), far less often than the drain loop touches.  Each
 *     open span has one record: a mark in a queue, appended when the span
 *     opens (so the queue is in order of opening), or later an item in a
 *     min-heap on touch number.  The queue's first live mark is the oldest
 *     span if that span was not touched since it opened and the heap's top
 *     is younger.  A first mark whose span was touched since moves to the
 *     heap under its last touch; a heap top whose span was touched since
 *     it was filed is filed again under its last touch.  Each span moves to
 *     the heap at most once and is filed again at most once per touch, so
 *     finding the oldest costs O(log n) per touch at worst, amortised; the
 *     age sweep stops at the first young span.
 *     Marks and heap items name their entry and its generation, which an
 *     erase advances, so the record of a closed span is known as dead.
 *     When the queue fills, dead marks are squeezed out in one sequential
 *     pass; it holds twice the capacity, so that happens at most once per
 *     `capacity` openings.  The heap holds twice the capacity too, and
 *     drops its dead items in one pass when it fills.
 *     The drain loop pays a store per touch, and a mark and its share of
 *     a squeeze per span.  A mark per touch, as this table once kept,
 *     cost the pairing 3.3 ticks an event more at random (bench_engine
 *     drain), but 11 less with the table full and every begin evicting
 *     (85 against 96, the heap's work): a full table is an overload,
 *     counted as such, and the common case comes first.  An intrusive doubly-linked list
 *     writes both neighbours on every touch, which measurably slowed the
 *     drain loop too;
 *   - a free list of released entries (entries never used are handed out
 *     from a bump index, so their memory is not touched until needed).
 *
 * Only the drain thread uses a span table; nothing here is thread-safe.
 */
#ifndef PERFMOND_SPAN_TABLE_H
#define PERFMOND_SPAN_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Transitions whose stage samples are held back until the span ends, so
 * that a span's stages and its total land in the same report interval and a
 * discarded span leaves nothing behind.  Transitions past this many are
 * recorded as they happen (see pairing.c).  10 makes an entry exactly two
 * cache lines, and a span with at most two steps only touches the first.
 */
#define SPAN_DEFERRED_MAX 10

/* Index value meaning "no entry". */
#define SPAN_NONE UINT32_MAX

/* Largest capacity a table accepts. */
#define SPAN_TABLE_MAX_CAPACITY (UINT32_C(1) << 28)

struct span {
	uint64_t key;        /* span_key(point, seq) */
	uint64_t start_tsc;  /* timestamp of the begin */
	uint64_t touch;      /* timestamp of the latest accepted event: the
			      * pairing's "previous timestamp", and its age */
	uint32_t nsteps;     /* intermediate steps so far beyond the first
			      * SPAN_DEFERRED_MAX, which ndeferred counts
			      * (saturating: the sum fits 32 bits) */
	uint32_t free_next;  /* free-list link while the entry is unused */
	uint8_t  last_step;  /* step of the latest event (0 after the begin) */
	uint8_t  ndeferred;  /* transitions held in to[] / delta[] */
	/* Deferred transition i goes from to[i - 1] (the begin for i = 0) to to[i]. */
	uint8_t  to[SPAN_DEFERRED_MAX];
	uint64_t delta[SPAN_DEFERRED_MAX];
} __attribute__((aligned(64)));

/* The record of an open span in the queue: entry `idx`, in its
 * generation `gen`. */
struct span_mark {
	uint32_t idx;
	uint32_t gen;
};

/* The record of an open span in the heap: entry `idx` in its generation
 * `gen`, filed under touch number `key`. */
struct span_heap_item {
	uint64_t key;
	uint32_t idx;
	uint32_t gen;
};

/*
 * The table itself is visible only so that lookups and touches can be
 * inlined into the drain loop; use the functions below, never the fields.
 * Hash slots are 64-bit: the upper half holds the high 32 bits of the
 * key's hash, the lower half the entry index.  Keeping hash bits in the
 * slot lets a probe skip foreign keys without loading their entries and
 * gives backward-shift deletion each slot's home without rehashing.
 */
struct span_table {
	struct span *entries;     /* capacity entries, 64-byte aligned */
	uint64_t *slots;          /* mask + 1 hash slots */
	uint64_t *num;            /* per entry: its latest touch number */
	uint64_t *opened;         /* per entry: its touch number when it opened */
	uint32_t *gen;            /* per entry: its generation, advanced by an erase */
	struct span_mark *queue;  /* marks in order of opening, qmask + 1 of them */
	struct span_heap_item *heap;  /* min-heap on key, heap_cap items */
	uint32_t mask;
	uint32_t qmask;
	uint32_t qhead;           /* free-running; first mark not yet dropped */
	uint32_t qtail;           /* free-running; next mark goes here */
	uint32_t nheap;
	uint32_t heap_cap;
	uint64_t clock;           /* last touch number handed out */
	uint32_t capacity;
	uint32_t count;
	uint32_t peak;
	uint32_t free_head;       /* released entries, linked by free_next */
	uint32_t next_unused;     /* entries at and above this were never used */
};

#define SPAN_SLOT_EMPTY UINT64_MAX

/* splitmix64's finaliser: every key bit reaches every hash bit, so keys
 * that differ only in the point (low 32 bits equal) still spread. */
static inline uint64_t span_hash(uint64_t key)
{
	key ^= key >> 30;
	key *= UINT64_C(0xbf58476d1ce4e5b9);
	key ^= key >> 27;
	key *= UINT64_C(0x94d049bb133111eb);
	key ^= key >> 31;
	return key;
}

/* The key of span (point, seq); seq keeps its low 24 bits. */
static inline uint64_t span_key(uint32_t point, uint32_t seq)
{
	return ((uint64_t)point << 32) | (seq & 0xFFFFFFu);
}

/* The point a span key belongs to. */
static inline uint32_t span_key_point(uint64_t key)
{
	return (uint32_t)(key >> 32);
}

/*
 * Create a table for at most `capacity` open spans (1 ..
 * SPAN_TABLE_MAX_CAPACITY).  All memory is allocated here.  Returns NULL
 * with errno set (EINVAL, ENOMEM) on failure.
 */
struct span_table *span_table_new(uint32_t capacity);

/* The bytes span_table_new(capacity) allocates. */
size_t span_table_memory_bytes(uint32_t capacity);

/* Free a table and everything in it.  NULL is accepted. */
void span_table_free(struct span_table *t);

/*
 * The span whose key has hash `h` (span_hash(key)), or NULL.  Does not
 * count as a touch.  When found, *ret_slot receives its index slot, which
 * span_table_erase_at() accepts as long as the table has not changed in
 * between.
 */
static inline struct span *span_table_find_hashed(struct span_table *t, uint64_t key,
						  uint64_t h, uint32_t *ret_slot)
{
	uint32_t tag = (uint32_t)(h >> 32);
	uint32_t i = tag & t->mask;

	for (;;) {
		uint64_t v = t->slots[i];

		if (v == SPAN_SLOT_EMPTY)
			return NULL;
		if ((uint32_t)(v >> 32) == tag) {
			struct span *s = &t->entries[(uint32_t)v];

			if (s->key == key) {
				*ret_slot = i;
				return s;
			}
		}
		i = (i + 1) & t->mask;
	}
}

/* The span with this key, or NULL.  Does not count as a touch. */
static inline struct span *span_table_find(struct span_table *t, uint64_t key)
{
	uint32_t slot;

	return span_table_find_hashed(t, key, span_hash(key), &slot);
}

/* Prefetch the index slot of a key with hash `h`. */
static inline void span_table_prefetch_slot(const struct span_table *t, uint64_t h)
{
	__builtin_prefetch(&t->slots[(uint32_t)(h >> 32) & t->mask]);
}

/* Prefetch the entry a key with hash `h` most likely has, without a
 * branch: read its home slot (prefetched earlier) and, when the slot's
 * hash bits match, prefetch the entry it names. */
static inline void span_table_prefetch_entry(const struct span_table *t, uint64_t h)
{
	uint64_t v = t->slots[(uint32_t)(h >> 32) & t->mask];
	uint32_t idx = (uint32_t)(v >> 32) == (uint32_t)(h >> 32) ? (uint32_t)v : 0;

	__builtin_prefetch(&t->entries[idx]);
}

/* Squeeze dead marks out of a full queue.  Internal. */
void span_table_compact_queue(struct span_table *t);

/* Mark a span as the most recently touched, at time `now`. */
static inline void span_table_touch(struct span_table *t, struct span *s, uint64_t now)
{
	s->touch = now;
	t->num[s - t->entries] = ++t->clock;
}

/*
 * Find the span with this key or add a new one.  *ret_created tells which.
 * A new span is the most recently touched, with `touch` = `now` and
 * start_tsc, nsteps, last_step and ndeferred zero.  Returns NULL when the
 * key is absent and the table is full (nothing is changed then).
 */
struct span *span_table_insert(struct span_table *t, uint64_t key, uint64_t now,
			       bool *ret_created);

/* span_table_insert() for a key whose hash `h` = span_hash(key) is known.
 * Inlined: the drain loop opens a span every few events. */
static inline struct span *span_table_insert_hashed(struct span_table *t, uint64_t key,
						    uint64_t h, uint64_t now, bool *ret_created)
{
	uint32_t tag = (uint32_t)(h >> 32);
	uint32_t i = tag & t->mask;
	uint32_t idx;
	struct span *s;

	for (;;) {
		uint64_t v = t->slots[i];

		if (v == SPAN_SLOT_EMPTY)
			break;
		if ((uint32_t)(v >> 32) == tag) {
			s = &t->entries[(uint32_t)v];
			if (s->key == key) {
				*ret_created = false;
				return s;
			}
		}
		i = (i + 1) & t->mask;
	}
	if (t->count == t->capacity)
		return NULL;

	if (t->free_head != SPAN_NONE) {
		idx = t->free_head;
		t->free_head = t->entries[idx].free_next;
	} else {
		idx = t->next_unused++;
	}
	s = &t->entries[idx];
	s->key = key;
	s->start_tsc = 0;
	s->touch = now;
	s->nsteps = 0;
	s->last_step = 0;
	s->ndeferred = 0;
	t->slots[i] = (h & ~UINT64_C(0xFFFFFFFF)) | idx;
	t->num[idx] = t->opened[idx] = ++t->clock;
	if (__builtin_expect(t->qtail - t->qhead > t->qmask, 0))
		span_table_compact_queue(t);
	t->queue[t->qtail++ & t->qmask] = (struct span_mark){ idx, t->gen[idx] };
	if (++t->count > t->peak)
		t->peak = t->count;
	*ret_created = true;
	return s;
}

/* Remove a span; the pointer is invalid afterwards. */
void span_table_erase(struct span_table *t, struct span *s);

/* Remove a span found by span_table_find_hashed() at `slot`, with no
 * change to the table since; cheaper than span_table_erase().  (Inlined
 * into the drain loop, it measured no faster: bench_engine drain.) */
void span_table_erase_at(struct span_table *t, struct span *s, uint32_t slot);

/* The least recently touched span, or NULL when the table is empty. */
struct span *span_table_oldest(struct span_table *t);

/*
 * Remove the least recently touched span and return its key in
 * *ret_key.  Returns false when the table is empty.
 */
bool span_table_evict_oldest(struct span_table *t, uint64_t *ret_key);

/*
 * The least recently touched span if it has gone untouched for more than
 * `max_age` at time `now`, else NULL.  max_age 0 disables ageing.  A touch
 * later than `now` by more than max_age cannot come from a sane clock and
 * counts as expired too, so a garbage timestamp cannot keep a span (and
 * every span behind it in touch order) alive forever.
 *
 * Touch order equals timestamp order when producers' timestamps arrive in
 * order; events from several cores may arrive a few hundred ticks out of
 * order, which can delay a span's expiry by that much.
 */
struct span *span_table_expired(struct span_table *t, uint64_t now, uint64_t max_age);

/* Open spans now. */
uint32_t span_table_count(const struct span_table *t);

/* Capacity given at creation. */
uint32_t span_table_capacity(const struct span_table *t);

/* Most spans ever open at once since creation or span_table_clear(). */
uint32_t span_table_peak(const struct span_table *t);

/* Remove every span and reset the peak; the capacity is kept. */
void span_table_clear(struct span_table *t);

/*
 * Call fn for each open span from the least to the most recently touched.
 * fn must not change the table.
 */
void span_table_for_each(struct span_table *t,
			 void (*fn)(struct span *s, void *arg), void *arg);

#endif /* PERFMOND_SPAN_TABLE_H */
