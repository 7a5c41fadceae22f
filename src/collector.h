/*
 * collector.h - what a running perfmond tells the world about itself, and
 * what others may ask it: the collector lock and control channel
 * (liveness, `status`, `summary`, `record`), the control block's fixed
 * header and status fields kept whole (the drain thread's progress copied
 * there), where a restart resumes reading.
 *
 * Flow: beside the event path.  perfmonctl and producers look at the
 * control block (docs/shm-layout.md) and talk to the control socket
 * (docs/control-channel.md); nothing there decides anything the daemon
 * does, since producers can write the block: liveness is the lock the
 * kernel reports, figures and paths come over the socket from this
 * process's own memory, the resume positions from a private state file.
 * The reporter thread is the only user of this module.
 */
#ifndef PERFMOND_COLLECTOR_H
#define PERFMOND_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "channel.h"
#include "conf.h"
#include "drain.h"
#include "names.h"
#include "recorder.h"
#include "shm.h"
#include "tsc.h"

struct collector {
	/* borrowed from the daemon, set by collector_open */
	const struct pm_config *cfg;     /* current (a reload rewrites it) */
	struct shm_instance *inst;
	struct drain *drain;
	struct tsc_clock *clock;
	struct name_cache *names;

	struct channel *chan;
	struct channel_state *state;     /* private: where to resume reading */
	struct recorder *rec;
	struct channel_conn *rec_conn;   /* who asked for the running recording */
	struct channel_conn *summary_waiters[8];
	unsigned nsummary_waiters;
	bool summary_wanted;             /* a summary at the next interval */

	uint64_t start_real_ns;
	bool invariant;
	uint64_t overhead_ticks;
	bool stopping;

	bool meta_repaired_logged;
	uint64_t restores, ring_restores;   /* logged so far */
	int ring_restore_error;
	struct drain_counters shown;        /* last copied into the control block */
};

/*
 * Before anything is created or adopted: refuse to run beside another
 * live collector of the configured name (the collector of whoever owns
 * existing segments first, then our own lock, held from here until
 * collector_close), and open the control socket.  0 or a negative errno,
 * logged.
 */
int collector_open(struct collector *co, const struct pm_config *cfg, gid_t gid,
		   struct tsc_clock *clock, struct name_cache *names);

/*
 * With the segments open: map the private state, publish who collects into
 * the control block, and answer requests from now on.  `tails` (one per
 * sub-ring) receives where to resume reading.  0 or a negative errno,
 * logged.
 */
int collector_attach(struct collector *co, struct shm_instance *inst, struct drain *drain,
		     bool invariant, uint64_t overhead_ticks, uint64_t *tails);

/* The private resume store the drain thread keeps current. */
uint64_t *collector_resume_store(struct collector *co);

/* The recorder the drain thread feeds (perfmonctl record). */
struct recorder *collector_recorder(struct collector *co);

/* The drain thread runs: say so in the control block. */
void collector_running(struct collector *co);

/*
 * Each turn of the poll loop: give a shrunk control block its size back
 * and log what the drain thread did about a shrunk ring, copy the drain
 * thread's progress into the control block, collect a finished recording.
 * True when the next turn should come soon: the drain thread's counters
 * moved since the last turn, or a recording is under way.  False when the
 * collector is idle, and a turn now and then keeps the heartbeat fresh.
 */
bool collector_tick(struct collector *co);

/* Poll integration of the control socket: the descriptors to wait on (at
 * most `max`, CHANNEL_MAX_CONNS + 1 is enough), and, after poll(), the
 * requests to answer (channel_poll_fill, channel_dispatch). */
int collector_poll_fill(struct collector *co, struct pollfd *pfd, int max);
void collector_dispatch(struct collector *co, const struct pollfd *pfd, int n);

/* Each interval: rewrite what producers overwrote in the control block. */
void collector_repair(struct collector *co, double tsc_hz);

/* Paths changed (reload): publish them for display. */
void collector_publish_paths(struct collector *co);

/* A summary was asked for (SIGUSR2 or perfmonctl summary). */
void collector_want_summary(struct collector *co);
bool collector_summary_wanted(const struct collector *co);

/* The summary asked for was written (e = 0) or failed (`err`): answer. */
void collector_summary_done(struct collector *co, int e, const char *err);

/*
 * Stopping, once the drain thread has exited: end a recording with the
 * ring's final `dropped`; the control block is no longer forced to say
 * running.  The last intervals are written after this.
 */
void collector_begin_stop(struct collector *co, uint64_t dropped);

/* Then: refuse the summary requests still waiting, mark the control
 * block stopped. */
void collector_stop(struct collector *co);

/* Close the socket and release the lock. */
void collector_close(struct collector *co);

#endif /* PERFMOND_COLLECTOR_H */
