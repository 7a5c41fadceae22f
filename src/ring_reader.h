/*
 * ring_reader.h - the daemon's side of the ring: drain every per-CPU
 * sub-ring, restore timestamp order across them, count exactly what was
 * lost.
 *
 * Flow: producers publish into the sub-ring of the CPU they run on
 * (include/perfmon/stamp.h); the drain thread calls ring_drain() to copy
 * events out and hands them to pairing.  Spans come out in timestamp order across
 * all sub-rings (a span may begin on one CPU and end on another); value
 * samples come out as they are found.  Every index the producers reserved
 * in every sub-ring ends up in exactly one of: read, dropped (overwritten
 * before it was read, or torn while being read), stalled (reserved but never
 * published, given up after the stall timeout).
 *
 * The merge is exact, not windowed: a pass reads a clock value W (the
 * caller's `watermark`), then every sub-ring's head, and drains each
 * sub-ring up to that head.  Producers reserve before they read the clock,
 * so every event stamped before W was reserved before the heads were read
 * and is in hand once the pass is complete; spans older than W are then
 * released in order, younger ones wait for a later pass.  That holds when
 * the producers' clock read cannot run ahead of their reservation (x86 with
 * the fenced read, or the full fence of the other architectures' path) and
 * every CPU shares one clock (an invariant TSC the kernel keeps as its
 * clock source).  With PERFMON_SERIALIZE=0 a plain rdtsc may run before the
 * locked add completes, so an event can miss its pass: such late events,
 * like slots published after the hole grace, are counted in `misordered`.
 * docs/shm-layout.md gives the argument in full.
 */
#ifndef PERFMOND_RING_READER_H
#define PERFMOND_RING_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfmon/layout.h>

/* Holes watched at once per sub-ring; a new one beyond this retires the
 * oldest as stalled, so a burst of holes never halts collection. */
#define RING_MAX_HOLES 64

/* A head that moved further than (clock units elapsed between two head
 * reads) + one capacity since we last looked is absurd: a locked add cannot
 * reserve faster than one index per clock tick (a stamp takes ten or
 * more), and the capacity allows for a lap's worth of slots already
 * reserved when we looked.  Callers with coarser clocks must pass `now`
 * in units no longer than the fastest reservation (ring_reader_clock). */

struct ring_hole {
	uint64_t index;
	uint64_t since;          /* clock reading when stepped over */
};

/* One sub-ring's read state.  Indices compare modulo 2^64. */
/* Sees every event as it is read from sub-ring `sub`: value samples and
 * spans, each in the order that sub-ring held them (ring_reader_tap). */
typedef void (*ring_tap_fn)(void *ctx, uint32_t sub, const struct perfmon_event *values,
			    size_t nvalues, const struct perfmon_event *spans, size_t nspans);

struct ring_sub {
	/* Read by every pass that finds events, on one cache line.  A quiet
	 * pass reads none of this: only the heads, in the mapping. */
	uint64_t tail;           /* next index to examine */
	uint64_t target;         /* the head read at the start of this pass */
	uint64_t last_head;      /* last head value taken as genuine */
	/* This sub-ring's spans, as read: those held back by the last pass
	 * first (sorted), then this pass's.  Sorted before the merge. */
	struct perfmon_event *spans;
	size_t nspans;
	size_t out;              /* a prefix handed out by the last call */
	unsigned nholes;
	bool forged;             /* an absurd head was seen: finish the old
				  * index space, then resume at forged_at */
	bool replay;             /* indices before replay_end may hold events
				  * read in the old numbering: dropped */
	bool unsorted;           /* not ascending: sort before merging */

	struct perfmon_slot *slots;
	uint64_t forged_at;
	uint64_t forged_now;
	uint64_t replay_end;
	struct ring_hole holes[RING_MAX_HOLES];
} __attribute__((aligned(64)));

/* One input of the merge: a sorted run of spans. */
struct ring_merge_in {
	const struct perfmon_event *p, *end;
};

struct ring_reader {
	struct perfmon_ring_header *hdr;
	uint32_t nsub;           /* trusted: from creation, never from shm */
	uint64_t capacity;       /* slots per sub-ring, trusted */
	uint64_t mask;
	struct ring_sub *sub;
	uint64_t *heads;         /* one pass's head readings, per sub-ring */

	uint64_t hole_grace;     /* clock units one pass waits for unpublished slots */
	uint64_t stall_timeout;  /* clock units before a hole counts as stalled */

	/* lifetime counters, summed over sub-rings */
	uint64_t read;
	uint64_t dropped;
	uint64_t stalled;
	uint64_t head_resets;    /* absurd head values seen (forged or corrupt) */
	uint64_t misordered;     /* spans released after younger ones: late holes,
				  * timestamps from the future */

	/* the current pass */
	bool in_pass;
	bool frozen;             /* final drain: no pass after the current one */
	uint64_t pass_wm;        /* spans older than this are released at its end */
	uint64_t pass_now;
	uint64_t last_pass_now;
	bool grace_on;           /* one grace per pass, whatever the number of holes */
	uint64_t grace_since;
	uint64_t released_wm;    /* every span released so far is older than this */
	/* The last pass was complete and left nothing behind: no span held,
	 * no hole watched, no absurd head, every tail at its head (which
	 * `heads` still holds).  A pass that then finds every head where it
	 * was has nothing to do but move the watermarks: it skips the
	 * per-sub-ring work, which is most of an idle wake-up with many
	 * sub-rings. */
	bool quiet;
	uint64_t progress;       /* calls that did the per-sub-ring work */

	/* merge buffers (allocated once at init): every sub-ring's spans in
	 * `sub_spans` (seg_cap each), the merged ones handed out in `merged`
	 * (also the scratch of a sub-ring's sort), value samples in `values`,
	 * whose free part is the other buffer of a merge in rounds or a radix
	 * sort: one call's values and the spans it holds come from one pass
	 * and what the pass before held back, at most two passes' worth,
	 * which is its size */
	struct perfmon_event *sub_spans, *merged, *values;
	size_t seg_cap, nvalues, max_values;
	struct ring_merge_in *in;       /* the merge's inputs */
	uint32_t *radix;         /* a radix sort's counts, with more than 8 sub-rings */
	uint32_t *live;          /* sub-rings whose spans the last call handed out */
	uint32_t nlive;

	bool final_pass;         /* the pass started after ring_reader_freeze */

	/* Faults absorbed in the ring's mapping (shm_guard), and how many the
	 * owner has handled: while they differ the mapping may read as zeros,
	 * so no pass starts on what it shows (ring_reader_guard). */
	const uint64_t *faults, *faults_handled;

	uint64_t (*clock)(void); /* the `now` clock, read after the heads; NULL: none */
	ring_tap_fn tap;         /* NULL: none */
	void *tap_ctx;

	/* what the last ring_drain handed out, and ring_drain_batch's cursor */
	struct ring_batch {
		const struct perfmon_event *values;
		size_t nvalues;
		const struct perfmon_event *spans;   /* in timestamp order */
		size_t nspans;
	} last;
	size_t last_pos;
};

/* struct ring_batch (above): what one ring_drain() call hands out, valid
 * until the next call. */

/*
 * Start reading the ring `hdr` of `nsub` sub-rings of `capacity` slots
 * (values the caller trusts), sub-ring k at index `tails[k]` (NULL: at the
 * current heads).  A head found behind its tail was rewound by someone:
 * reading starts there, the indices up to the tail are counted as dropped
 * (they may hold events read before) and the head counts as absurd.
 * `hole_grace`: how long one pass waits for reserved but
 * unpublished slots before it steps over all of them; `stall_timeout`: how
 * long a stepped-over slot is watched before it counts as stalled.  Both in
 * the caller's clock units (those passed as `now` below).  Allocates the
 * merge buffers and makes every page of them resident: 0 or -ENOMEM.
 */
int ring_reader_init(struct ring_reader *r, struct perfmon_ring_header *hdr, uint32_t nsub,
		     uint64_t capacity, const uint64_t *tails, uint64_t hole_grace,
		     uint64_t stall_timeout);
void ring_reader_free(struct ring_reader *r);

/* Bytes ring_reader_init() allocates for such a ring (the merge buffers:
 * about 100 per slot). */
size_t ring_reader_memory(uint32_t nsub, uint64_t capacity);

/*
 * One step of draining.  `now` is a clock reading for the grace and stall
 * timers; `watermark` is a timestamp-clock reading taken before this call
 * (the daemon passes the same TSC reading for both).  Fills `b` with the
 * value samples found and the spans released.  Returns the number of
 * events in `b`.
 */
size_t ring_drain(struct ring_reader *r, uint64_t now, uint64_t watermark,
		  struct ring_batch *b);

/* The same, copied into `out` (at most `max`, the rest on the next call):
 * values first, then spans.  For tools and tests. */
size_t ring_drain_batch(struct ring_reader *r, struct perfmon_event *out, size_t max,
			uint64_t now, uint64_t watermark);

/* Sum of the sub-rings' shared heads (untrusted; for display). */
uint64_t ring_reader_head(const struct ring_reader *r);

/* True while the current pass waits out its grace for unpublished slots
 * (at `now`, in the caller's clock units): it completes, and hands out
 * the spans it holds, as soon as the grace is over, so a caller should
 * call again then rather than sleep for longer. */
bool ring_reader_waiting(const struct ring_reader *r, uint64_t now);

/* Events reserved but not yet accounted for, summed over sub-rings. */
uint64_t ring_reader_backlog(const struct ring_reader *r);

/* Final drain: the pass after the current one (whose heads are read then)
 * is the last.  ring_reader_settled() tells when it is complete. */
void ring_reader_freeze(struct ring_reader *r);

/* True once frozen and every index below the final heads has been read,
 * dropped or stalled, and every span handed out. */
bool ring_reader_settled(const struct ring_reader *r);

/* Give up on every watched or waited-for hole now (counted as stalled) and
 * step over unpublished slots without grace from now on: the last step of
 * a final drain once its time budget is spent. */
void ring_reader_abandon_holes(struct ring_reader *r);

/*
 * The clock the caller's `now` values come from, read once per pass right
 * after the heads: how far a head may have moved is bounded by the time
 * between two head reads, and a reader preempted between taking `now` and
 * reading the heads must not take the producers' progress meanwhile for a
 * forgery.  NULL (the default): `now` itself, for callers whose clock
 * stands still between calls.
 */
void ring_reader_clock(struct ring_reader *r, uint64_t (*clock)(void));

/* Show every event read to `fn` (NULL: nobody), before the merge: the one
 * place that still knows which sub-ring an event came from. */
void ring_reader_tap(struct ring_reader *r, ring_tap_fn fn, void *ctx);

/*
 * Have passes start only while `*faults` equals `*faults_handled` (both
 * read with relaxed loads, once per pass): a shrunk ring reads as zeros
 * until its owner has restored it, and wiped heads taken at face value
 * would look like a forgery.  NULL pointers: no such check.
 */
void ring_reader_guard(struct ring_reader *r, const uint64_t *faults,
		       const uint64_t *faults_handled);

/*
 * The ring was shrunk to `cut_at` bytes and its owner has just given it its
 * size back: every byte from `cut_at` on is zero now.  Call on the thread
 * that drains, before its next ring_drain().  A sub-ring whose head was
 * wiped lost every slot too: its unread events and watched holes are
 * counted as dropped, and its head is set to continue the old numbering
 * (with room for stamps in flight across the shrink), so no index is read
 * twice and none is left uncounted; what producers reserved between the
 * restored size and this call is counted as dropped as well.  Sub-rings
 * whose head survived are left to the usual accounting (their cut slots
 * read as unpublished).  The one write to shared memory this module makes.
 * Returns the number of events counted as dropped.
 */
uint64_t ring_reader_rebase(struct ring_reader *r, size_t cut_at);

/* Hand out every span still held back, in timestamp order, whatever its
 * age (the end of a final drain).  Returns the number in `b`. */
size_t ring_reader_release_all(struct ring_reader *r, struct ring_batch *b);

/* Counts the calls that may have moved a read position (ring_reader_tail):
 * while it stays, every position is as it was. */
uint64_t ring_reader_progress(const struct ring_reader *r);

/* The lifetime counters, summed over sub-rings (ring_reader's fields of
 * the same names). */
struct ring_counters {
	uint64_t read, dropped, stalled;
	uint64_t head_resets, misordered;
};

/* The counters as of now.  The draining thread's own view: others read
 * the snapshots it publishes (drain.h). */
struct ring_counters ring_reader_counters(const struct ring_reader *r);

/* Sub-ring k's read position: every index before it is accounted for. */
uint64_t ring_reader_tail(const struct ring_reader *r, uint32_t k);

/* A new stall timeout (clock units), for holes stepped over from now on
 * and those already watched alike. */
void ring_reader_set_stall_timeout(struct ring_reader *r, uint64_t stall_timeout);

#endif
