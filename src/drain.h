/*
 * drain.h - the drain thread: ring -> pairing, on its own (pinned) core.
 *
 * Flow: producers -> sub-rings -> [drain: ring_drain (merge) + pairing_feed] ->
 * pairing_flip at each flush -> reporter thread (daemon.c).  The drain
 * thread never allocates, never does file I/O and never takes a lock; it
 * wakes the reporter through an eventfd once per flip and publishes its
 * progress (heartbeat, counters, read position) into the control block.
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

struct drain {
	/* set up before drain_start, read-only afterwards */
	struct shm_instance *inst;
	struct pairing *pairing;
	struct ring_reader reader;
	int cpu;                 /* -1: not pinned */
	int wake_fd;             /* eventfd written after each successful flip */
	struct recorder *recorder;  /* perfmonctl record; NULL: none */

	struct drain_live live;

	/* state shared with the reporter (atomics) */
	int stop;                /* reporter -> drain: final drain and exit */
	int flip_now;            /* reporter -> drain: end the interval early */
	uint64_t heartbeat;      /* loop iterations; the watchdog's evidence */
	/* collector counters as of the last successful flip */
	uint64_t flip_read, flip_dropped, flip_stalled, flip_head_resets, flip_misordered;
	uint64_t final_unfinished;  /* holes given up at shutdown (also in stalled) */
	/* Progress as the drain thread last published it, in the daemon's own
	 * memory (the control block's copy is for show: producers can write
	 * it).  Relaxed atomics, each value on its own. */
	struct {
		uint64_t heartbeat_ns, read, dropped, stalled, open_spans, tail;
	} pub;
	/* Set before drain_start, or NULL: where each sub-ring's read
	 * position is kept across restarts, out of producers' reach (one per
	 * sub-ring). */
	uint64_t *resume_store;
	/* reporter -> drain: settings to apply at the top of the next loop */
	int reconf_pending;
	struct pairing_config reconf;

	/* The ring's size is kept by this thread (see drain_ring_changed). */
	int ring_check;          /* reporter -> drain: look at the ring's size */
	uint64_t guard_seen;     /* drain only: shm_guard_total() last checked */
	struct drain_shrinks {
		uint64_t restores;   /* times the ring's size was given back */
		uint64_t lost_bytes; /* bytes cut off, summed */
		uint64_t dropped;    /* unread events counted dropped with them */
		int error;           /* last failure to restore, negative errno */
	} shrinks;               /* drain -> reporter, relaxed atomics */

	pthread_t thread;
	bool running;
};

/*
 * Start the drain thread over `inst` and `p`, reading sub-ring k from
 * `tails[k]` (NULL: from the current heads).  The
 * thread is pinned to `cpu` (>= 0) before it touches the ring; a CPU
 * outside the process's allowed set is refused with a message.  Returns 0
 * or a negative errno with `err` filled.
 */
int drain_start(struct drain *d, struct shm_instance *inst, struct pairing *p,
		const uint64_t *tails, int cpu, uint64_t hole_grace_ticks, uint64_t stall_ticks,
		const struct drain_live *live, int wake_fd, char *err, size_t errlen);

/*
 * Ask the thread to drain everything reserved so far (holes get at most
 * `hole_budget_ticks` in total, then count as stalled), leave a last
 * interval for the reporter, and exit; then join it.
 */
void drain_stop(struct drain *d, uint64_t hole_budget_ticks);

/* Release the reader's buffers (after drain_stop, or a failed start). */
void drain_free(struct drain *d);

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

/* Check that `cpu` may be used by this process.  0 or -EINVAL with `err`. */
int drain_check_cpu(int cpu, char *err, size_t errlen);

/* Re-pin the running thread (SIGHUP).  0 or negative errno. */
int drain_repin(struct drain *d, int cpu, char *err, size_t errlen);

#endif
