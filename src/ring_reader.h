/*
 * ring_reader.h - the daemon's side of the ring: drain published events in
 * batches, count exactly what was lost.
 *
 * Flow: producers publish into the ring (include/perfmon.h); the drain
 * thread calls ring_drain_batch() to copy events out in publication order
 * and hands them to pairing.  Every index the producers reserved ends up in
 * exactly one of: read, dropped (overwritten before it was read, or torn
 * while being read), stalled (reserved but never published, stepped over
 * after the stall timeout).
 */
#ifndef PERFMOND_RING_READER_H
#define PERFMOND_RING_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfmon.h>

/* Holes watched at once; a new one beyond this retires the oldest as
 * stalled, so a burst of holes never halts collection. */
#define RING_MAX_HOLES 64

struct ring_hole {
	uint64_t index;
	uint64_t since;          /* clock reading when first seen unpublished */
};

struct ring_reader {
	struct perfmon_ring_header *hdr;
	struct perfmon_slot *slots;
	uint64_t mask;           /* trusted: from creation, never from shm */
	uint64_t capacity;
	uint64_t tail;           /* next index to examine */

	uint64_t hole_grace;     /* clock units to wait before stepping over */
	uint64_t stall_timeout;  /* clock units before a hole counts as stalled */

	/* lifetime counters */
	uint64_t read;
	uint64_t dropped;
	uint64_t stalled;
	uint64_t head_resets;    /* the shared head went backwards (corruption) */

	/* the unpublished slot at `tail` we are waiting for */
	bool waiting;
	uint64_t wait_since;

	/* unpublished slots we stepped over, still watched */
	unsigned nholes;
	struct ring_hole holes[RING_MAX_HOLES];
};

/*
 * Start reading the ring `hdr` of `capacity` slots at index `tail` (the
 * current head for a fresh start, or the position a previous daemon saved).
 * `hole_grace`: how long an unpublished slot may hold up the events behind
 * it; `stall_timeout`: how long it is watched before it counts as stalled.
 * Both in the caller's clock units (those passed as `now` below).
 */
void ring_reader_init(struct ring_reader *r, struct perfmon_ring_header *hdr,
		      uint64_t capacity, uint64_t tail, uint64_t hole_grace,
		      uint64_t stall_timeout);

/*
 * Copy up to `max` published events into `out`, in an order that respects
 * every producer's own publication order.  `now` is a clock reading taken
 * once per batch.  Returns the number of events written.
 */
size_t ring_drain_batch(struct ring_reader *r, struct perfmon_event *out, size_t max,
			uint64_t now);

/* Current shared head (untrusted; for status and final-drain targets). */
uint64_t ring_reader_head(const struct ring_reader *r);

/* Events reserved but not yet accounted for: head - tail, plus holes. */
uint64_t ring_reader_backlog(const struct ring_reader *r);

/* True when every index below `target` has been read, dropped or stalled. */
bool ring_reader_done_below(const struct ring_reader *r, uint64_t target);

/* Give up on every watched or waited-for hole now (counted as stalled):
 * the last step of a final drain once the grace period is over. */
void ring_reader_abandon_holes(struct ring_reader *r);

#endif
