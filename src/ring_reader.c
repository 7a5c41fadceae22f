/*
 * ring_reader.c - drain the shared ring in batches, exactly accounted.
 *
 * Each slot carries a marker: index + 1 once event `index` is published,
 * (index + 1) | BUSY while it is being written, older values before.  For
 * the index at our tail a marker
 *   == tail + 1          the event is there: copy it, re-check the marker;
 *   newer than tail + 1  a producer a lap ahead claimed the slot: dropped;
 *   otherwise            not published yet: a stamp in flight, or a hole
 *                        left by a producer that died mid-stamp.
 * An unpublished slot holds up the events behind it only for `hole_grace`;
 * then it is set aside and watched, and the reader moves on.  A watched
 * hole that gets published later is delivered before any event published
 * after it, so each producer's own order is kept.  After `stall_timeout`
 * it is counted as stalled.  Nothing here blocks, allocates or writes to
 * shared memory; a corrupt head or marker only changes the counts.
 */
#include "build-config.h"

#include "ring_reader.h"

void ring_reader_init(struct ring_reader *r, struct perfmon_ring_header *hdr,
		      uint64_t capacity, uint64_t tail, uint64_t hole_grace,
		      uint64_t stall_timeout)
{
	*r = (struct ring_reader){
		.hdr = hdr,
		.slots = (struct perfmon_slot *)((char *)hdr + PERFMON_RING_SLOTS_OFFSET),
		.mask = capacity - 1,
		.capacity = capacity,
		.tail = tail,
		.hole_grace = hole_grace,
		.stall_timeout = stall_timeout,
	};
}

uint64_t ring_reader_head(const struct ring_reader *r)
{
	return __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE);
}

uint64_t ring_reader_backlog(const struct ring_reader *r)
{
	uint64_t h = ring_reader_head(r);
	return (h > r->tail ? h - r->tail : 0) + r->nholes;
}

bool ring_reader_done_below(const struct ring_reader *r, uint64_t target)
{
	return r->tail >= target && r->nholes == 0;
}

/*
 * Try to copy event `idx` out of its slot.  Returns 1 if `out` holds a
 * valid event, 0 if the slot is not published yet, -1 if the event is lost
 * (overwritten before or while we read it).
 */
static inline int take(const struct ring_reader *r, uint64_t idx, struct perfmon_event *out)
{
	struct perfmon_slot *s = &r->slots[idx & r->mask];
	uint64_t want = idx + 1;
	uint64_t m = __atomic_load_n(&s->marker, __ATOMIC_ACQUIRE);
	uint64_t pe;

	if (m != want)
		return (m & ~PERFMON_SLOT_BUSY) > want ? -1 : 0;
	out->tsc = __atomic_load_n(&s->tsc, __ATOMIC_RELAXED);
	pe = __atomic_load_n(&s->point_event, __ATOMIC_RELAXED);
	/* Seqlock check: a writer stores BUSY before touching the payload,
	 * so an unchanged marker proves the copy is whole. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&s->marker, __ATOMIC_RELAXED) != want)
		return -1;
	out->point = (uint32_t)pe;
	out->event = (uint32_t)(pe >> 32);
	return 1;
}

/* Holes stay sorted by index (they are added in index order), so they are
 * delivered in the order they were reserved. */
static void forget_hole(struct ring_reader *r, unsigned i)
{
	for (r->nholes--; i < r->nholes; i++)
		r->holes[i] = r->holes[i + 1];
}

/* Deliver the watched holes that got published meanwhile, in index order,
 * and retire those lost or timed out.  Returns events written. */
static size_t check_holes(struct ring_reader *r, struct perfmon_event *out, size_t room,
			  uint64_t now)
{
	size_t n = 0;
	unsigned i = 0;

	while (i < r->nholes) {
		struct ring_hole *h = &r->holes[i];
		int t;

		if (n == room)
			break;
		t = take(r, h->index, &out[n]);
		if (t > 0) {
			r->read++;
			n++;
		} else if (t < 0) {
			r->dropped++;
		} else if (now - h->since >= r->stall_timeout) {
			r->stalled++;
		} else {
			i++;
			continue;
		}
		forget_hole(r, i);
	}
	return n;
}

size_t ring_drain_batch(struct ring_reader *r, struct perfmon_event *out, size_t max,
			uint64_t now)
{
	uint64_t head = ring_reader_head(r);
	size_t n = 0;

	if (head < r->tail) {
		/* The shared head went backwards: only a corrupt or hostile
		 * writer does that.  Resynchronise rather than wait forever. */
		r->head_resets++;
		r->tail = head;
		r->waiting = false;
	}
	if (head - r->tail > r->capacity) {
		/* Lapped: every slot below head - capacity has been claimed by
		 * a newer event.  Count them without visiting each one. */
		r->dropped += head - r->capacity - r->tail;
		r->tail = head - r->capacity;
		r->waiting = false;
	}
	if (r->nholes)
		n += check_holes(r, out, max, now);

	while (n < max && r->tail < head) {
		int t = take(r, r->tail, &out[n]);
		if (t > 0) {
			/* An older hole published just now must come first. */
			if (r->nholes) {
				struct perfmon_event ev = out[n];
				n += check_holes(r, out + n, max - n, now);
				if (n == max)
					break;   /* re-read this slot next time */
				out[n] = ev;
			}
			r->read++;
			n++;
			r->tail++;
			r->waiting = false;
			continue;
		}
		if (t < 0) {
			r->dropped++;
			r->tail++;
			r->waiting = false;
			continue;
		}
		/* Not published yet. */
		if (!r->waiting) {
			r->waiting = true;
			r->wait_since = now;
		}
		if (now - r->wait_since < r->hole_grace)
			break;
		if (r->nholes == RING_MAX_HOLES) {
			/* A burst of holes (a producer that died in a loop, or
			 * scribbled on head) must not halt collection: the oldest
			 * watched hole is given up early and counted as stalled. */
			r->stalled++;
			forget_hole(r, 0);
		}
		r->holes[r->nholes++] = (struct ring_hole){ r->tail, r->wait_since };
		r->tail++;
		r->waiting = false;
	}
	return n;
}

void ring_reader_abandon_holes(struct ring_reader *r)
{
	r->stalled += r->nholes;
	r->nholes = 0;
	r->hole_grace = 0;
	r->stall_timeout = 0;
}
