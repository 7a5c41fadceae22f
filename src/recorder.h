/*
 * recorder.h - `perfmonctl record` on the daemon's side: every event the
 * drain thread reads, for a while, copied into a capture file
 * (docs/capture-format.md).
 *
 * Flow: ring -> drain thread -> [recorder_feed: hand-over buffer] ->
 * writer thread -> the capture file (an fd perfmonctl opened and passed).
 *
 * Threads: the main thread starts a recording (recorder_start) and later
 * collects its result (recorder_poll); the drain thread feeds; a writer
 * thread, alive only while a recording runs, empties the buffer into the
 * file.  The drain thread never blocks and never does I/O here: it copies
 * into a single-producer single-consumer buffer allocated at start, and an
 * event that finds the buffer full is counted as lost.  Not recording, the
 * drain thread pays one load per batch (recorder_active()).
 *
 * One recording at a time; a second is refused with -EBUSY.  A recording
 * ends at its deadline (the drain thread's next tick notices it), at
 * the size cap (the writer asks the drain thread to stop; what was still
 * buffered counts as lost_cap), or at shutdown (recorder_shutdown()).
 */
#ifndef PERFMOND_RECORDER_H
#define PERFMOND_RECORDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "names.h"

/* Size cap of a capture file unless a smaller one is asked for. */
#define RECORDER_MAX_BYTES (UINT64_C(256) << 20)
/* Longest recording, in seconds. */
#define RECORDER_MAX_SECONDS 3600
/* Hand-over buffer, in events (24 bytes each). */
#define RECORDER_BUFFER_EVENTS (UINT32_C(1) << 18)

enum {
	RECORDER_IDLE = 0,   /* main thread may start */
	RECORDER_ACTIVE,     /* drain thread feeds */
	RECORDER_DRAINED,    /* drain thread stopped feeding; writer finishing */
	RECORDER_DONE,       /* writer finished; main thread collects */
};

struct recorder_result {
	struct capture_trailer t;   /* what the trailer says */
	int error;                  /* 0, or the negative errno of a failed write */
};

struct recorder;

/* A recorder, idle.  NULL with errno on failure. */
struct recorder *recorder_new(void);

/* Free a recorder; a running recording is ended as at shutdown first. */
void recorder_free(struct recorder *r);

/*
 * Main thread: record into `fd` (a regular file open for writing; the
 * recorder owns it from here on, also on failure) for `duration_ticks` of
 * the drain clock from `now_tsc`, at most `max_bytes` (capped at
 * RECORDER_MAX_BYTES).  Writes the header with the clock described by
 * `h` (its name_count is filled in) and the labels of `names`, then starts
 * the writer thread.  Returns 0, -EBUSY while another recording runs,
 * -EINVAL for an fd that is not a writable regular file, or -errno of the
 * header write or thread creation, with `err` filled.
 */
int recorder_start(struct recorder *r, int fd, uint64_t now_tsc, uint64_t duration_ticks,
		   uint64_t max_bytes, const struct capture_header *h,
		   const struct name_cache *names, char *err, size_t errlen);

/* Drain thread: is a recording taking events?  One acquire load. */
static inline bool recorder_active(struct recorder *r);

/*
 * Drain thread, before every read of the ring (ring_drain()): `now_tsc` is
 * the clock that read will take as its `now`, `dropped` the reader's
 * lifetime count of overwritten events.  The first tick of a recording
 * takes `dropped` as its baseline, and only reads that follow a tick are
 * recorded: a read counts its drops (a lapped sub-ring) before it shows
 * its events, so a baseline taken at the first events would miss the
 * drops of that read.  A tick at or past the deadline, or after the
 * writer reached the size cap, ends the recording with the drops since
 * the baseline: the events fed and the slots dropped cover the same
 * reads, and with what was lost on the way add up to what was stamped in
 * them.  Does nothing unless a recording is ACTIVE.
 */
void recorder_tick(struct recorder *r, uint64_t now_tsc, uint64_t dropped);

/*
 * Drain thread: what a read just took from ring `ring`, its `nspans`
 * span events and `nvalues` value samples, each in the order read; they
 * are recorded in that order, spans first, so that a value sample follows
 * the span events read with it (it carries no time of its own: readers
 * place it after them).  Does nothing unless a recording is ACTIVE and
 * has had its first tick: only this thread ends one, so a recording a
 * tick stopped is never touched again, even after the main thread has
 * collected it.
 */
void recorder_feed(struct recorder *r, uint16_t ring, const struct perfmon_event *spans,
		   size_t nspans, const struct perfmon_event *values, size_t nvalues);

/* Main thread: has a recording finished, waiting for recorder_poll()? */
bool recorder_finished(struct recorder *r);

/* Main thread: is no recording running or waiting to be collected? */
bool recorder_idle(struct recorder *r);

/*
 * Main thread: when the recording has finished, join the writer, append
 * the labels of `names` as they are now (those published during the
 * recording included; may be NULL) and the trailer, close the file, fill
 * *ret and return true (the recorder is idle again).  False while it runs
 * or when none was started.
 */
bool recorder_poll(struct recorder *r, const struct name_cache *names,
		   struct recorder_result *ret);

/*
 * Main thread, once the drain thread has exited: end a running recording
 * now (flag CAPTURE_END_SHUTDOWN), wait for the writer, and collect as
 * recorder_poll().  False when no recording was running.
 */
bool recorder_shutdown(struct recorder *r, uint64_t now_tsc, uint64_t dropped,
		       const struct name_cache *names, struct recorder_result *ret);

/* ---- inline ---------------------------------------------------------- */

struct recorder_shared {
	_Atomic uint32_t state;      /* RECORDER_* */
};

static inline bool recorder_active(struct recorder *r)
{
	const struct recorder_shared *s = (const struct recorder_shared *)r;

	return atomic_load_explicit(&s->state, memory_order_acquire) == RECORDER_ACTIVE;
}

#endif /* PERFMOND_RECORDER_H */
