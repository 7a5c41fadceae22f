/*
 * drain.h - the drain thread: ring -> pairing, on its own (pinned) core.
 *
 * Flow: producers -> sub-rings -> [drain: ring_drain (merge) + pairing_feed] ->
 * pairing_flip at each flush -> reporter thread (perfmond.c).  The drain
 * thread never allocates, never does file I/O and never takes a lock; it
 * wakes the reporter through an eventfd once per flip and publishes its
 * progress: counters as a snapshot others read through a function, the
 * counters as of each flip handed over with its interval, read positions
 * into the private resume store (the collector copies what is shown into
 * the control block, collector.h).
 * The one exception to "no system calls but the sleep": when someone
 * shrinks the ring it gives the ring its size back itself (drain_ring_changed).
 */
#ifndef PERFMOND_DRAIN_H
#define PERFMOND_DRAIN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "pairing.h"
#include "recorder.h"
#include "ring_reader.h"
#include "shm.h"
#include "tsc.h"

/* Settings the reporter may change while the thread runs (relaxed atomics). */
struct drain_live {
	uint64_t poll_ns;        /* idle sleep */
	uint64_t flush_ticks;    /* interval length */
};

/*
 * The collector's counters at one moment, consistent with each other:
 * every index reserved in every sub-ring up to then is in exactly one of
 * read, dropped, stalled.  Only the drain thread writes them (and, once it
 * has been joined, drain_stop and drain_flip_final on the reporter); others
 * read a snapshot through drain_counters_now(), or those of an interval
 * with it through drain_collect().
 */
struct drain_counters {
	uint64_t read, dropped, stalled;
	uint64_t head_resets;    /* absurd head values seen (forged or corrupt) */
	uint64_t misordered;     /* spans released after younger ones */
	uint64_t open_spans;
	uint64_t tail_sum;       /* read positions summed over sub-rings (display) */
	uint64_t heartbeat_ns;   /* CLOCK_MONOTONIC when these were published */
	uint64_t unfinished;     /* holes given up at shutdown (also in stalled) */
};

/* A snapshot published by one writer and read by others: a sequence
 * count, odd while it is being rewritten; every field an atomic. */
struct drain_snapshot {
	uint64_t seq;
	struct drain_counters c;
};

/* What the thread does about shrinks of the ring (drain_ring_changed). */
struct drain_shrinks {
	uint64_t restores;       /* times the ring's size was given back */
	uint64_t lost_bytes;     /* bytes cut off, summed */
	uint64_t dropped;        /* unread events counted dropped with them */
	int error;               /* last failure to restore, negative errno */
};

/* What drain_start needs; read-only once the thread runs. */
struct drain_setup {
	struct shm_instance *inst;
	struct pairing *pairing;
	const uint64_t *tails;   /* where to start reading each sub-ring; NULL: heads */
	int cpu;                 /* -1: not pinned */
	uint64_t hole_grace_ticks, stall_ticks;
	struct drain_live live;
	int wake_fd;             /* eventfd written after each successful flip */
	struct recorder *recorder;  /* perfmonctl record; NULL: none */
	/* NULL, or where each sub-ring's read position is kept across
	 * restarts, out of producers' reach (one per sub-ring). */
	uint64_t *resume_store;
};

/* The drain thread's state: private to drain.c, whatever its visibility. */
struct drain {
	struct drain_setup s;
	struct ring_reader reader;
	struct drain_live live;

	/* reporter -> drain (atomics) */
	int stop;                /* final drain and exit */
	int reconf_pending;      /* apply `reconf` at the top of the next loop */
	struct pairing_config reconf;
	int ring_check;          /* look at the ring's size */

	/* drain -> others (atomics) */
	uint64_t heartbeat;      /* loop iterations; the watchdog's evidence */
	struct drain_snapshot now_snap;
	struct drain_shrinks shrinks;

	/* drain -> reporter, with the interval: written only while no interval
	 * is held (pairing_flip_ready), so the pairing hand-over orders it. */
	struct drain_counters at_flip;

	uint64_t guard_seen;     /* shm_guard_total() last handled */
	/* The read positions were last written out (resume store, ring
	 * headers) at this ring_reader_progress(), and summed to this; while
	 * it stays they have not moved, and publishing touches none of them. */
	uint64_t shown_progress;
	uint64_t shown_tail_sum;
	bool tails_shown;
	pthread_t thread;
	bool running;
};

/*
 * Start the drain thread described by `setup`.  The thread is pinned to
 * setup->cpu (>= 0) before it touches the ring; a CPU outside the
 * process's allowed set is refused with a message.  Returns 0 or a
 * negative errno with `err` filled.
 */
int drain_start(struct drain *d, const struct drain_setup *setup, char *err, size_t errlen);

/*
 * Ask the thread to drain everything reserved so far (holes get at most
 * `hole_budget_ticks` in total, then count as stalled), leave a last
 * interval for the reporter, and exit; then join it.
 */
void drain_stop(struct drain *d, uint64_t hole_budget_ticks);

/* Release the reader's buffers (after drain_stop, or a failed start). */
void drain_free(struct drain *d);

/*
 * After drain_stop: end the last interval on the calling thread (the drain
 * thread is gone, its side of the engine is the caller's), with the final
 * counters as those it covers.  False when the previous interval has not
 * been released yet.
 */
bool drain_flip_final(struct drain *d, uint64_t now_ticks);

/* The counters as last published (about every millisecond, and final
 * after drain_stop). */
struct drain_counters drain_counters_now(const struct drain *d);

/*
 * Reporter thread: pairing_collect() the finished interval into *ret_iv,
 * with the counters as of its flip in *ret_c: what the interval covers.
 * They stay those of that flip until pairing_release(), however long the
 * interval is held.  False when no interval is waiting.
 */
bool drain_collect(struct drain *d, struct pairing_interval *ret_iv,
		   struct drain_counters *ret_c);

/* Loop iterations so far: moves only while the thread runs its loop. */
uint64_t drain_heartbeat(const struct drain *d);

/* New idle sleep and interval length (reload), applied at the next loop. */
void drain_set_live(struct drain *d, const struct drain_live *live);

/* Hand the drain thread new pairing settings (stall timeout, overhead
 * subtraction) to apply between two batches.  Does not wait. */
void drain_reconfigure(struct drain *d, const struct pairing_config *cfg);

/*
 * The reporter saw the ring's file change (inotify): the drain thread looks
 * at its size before its next pass.  Shrinks it meets itself (a fault its
 * reads absorbed) it handles without being told.  The ring is restored on
 * the drain thread because only it can rebase the reader before reading
 * the wiped heads (ring_reader_rebase).
 */
void drain_ring_changed(struct drain *d);

/* What the drain thread did about shrinks of the ring so far. */
struct drain_shrinks drain_shrinks(const struct drain *d);

/* Re-pin the running thread (SIGHUP).  0 or negative errno. */
int drain_repin(struct drain *d, int cpu, char *err, size_t errlen);

#endif
