/*
 * collector.c - the collector's lock, control channel and control block
 * (see collector.h).
 */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/clock.h>

#include "capture.h"
#include "clocks.h"
#include "collector.h"
#include "log.h"
#include "status_msg.h"

/* ---- the control block ------------------------------------------------ */

/* Copy a path into a status field; longer paths are cut (display only). */
static void copy_path(char *dst, size_t n, const char *src)
{
	size_t l = strnlen(src, n - 1);
	memcpy(dst, src, l);
	dst[l] = '\0';
}

void collector_publish_paths(struct collector *co)
{
	struct perfmon_meta_header *m = co->inst->meta;

	/* seqlock: odd while rewriting */
	__atomic_fetch_add(&m->paths_seq, 1, __ATOMIC_ACQ_REL);
	copy_path(m->csv_path, sizeof(m->csv_path), co->cfg->csv);
	copy_path(m->summary_path, sizeof(m->summary_path), co->cfg->summary);
	__atomic_fetch_add(&m->paths_seq, 1, __ATOMIC_RELEASE);
}

/* Rewrite one of our status fields if a producer changed it; 1 if so. */
static unsigned keep32(uint32_t *f, uint32_t v)
{
	if (__atomic_load_n(f, __ATOMIC_RELAXED) == v)
		return 0;
	__atomic_store_n(f, v, __ATOMIC_RELEASE);
	return 1;
}

static unsigned keep64(uint64_t *f, uint64_t v)
{
	if (__atomic_load_n(f, __ATOMIC_RELAXED) == v)
		return 0;
	__atomic_store_n(f, v, __ATOMIC_RELAXED);
	return 1;
}

/* Keep the control block's fixed header and our status fields as we wrote
 * them: producers need the header to attach, perfmonctl shows the rest. */
static void repair_meta(struct collector *co)
{
	struct perfmon_meta_header *m = co->inst->meta;
	unsigned n = shm_repair_meta(co->inst);

	n += keep32(&m->collector_pid, (uint32_t)getpid());
	n += keep64(&m->start_ns, co->start_real_ns);
	if (!co->stopping)
		n += keep32(&m->collector_state, PERFMON_COLLECTOR_RUNNING);
	if (n) {
		collector_publish_paths(co);
		if (!co->meta_repaired_logged)   /* once: a scribbler may keep at it */
			log_warning("/dev/shm/%s.meta was overwritten by a producer; restored %u "
				    "field(s) (logged once)", co->inst->name, n);
		co->meta_repaired_logged = true;
	}
}

/* What perfmonctl shows beside the counters: how often intervals end and
 * reach the CSV (so `top` can tell a quiet collector from a stuck one; a
 * reload may change both). */
static void publish_settings(struct collector *co)
{
	struct perfmon_meta_header *m = co->inst->meta;

	__atomic_store_n(&m->flush_interval_ns, co->cfg->flush_interval_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&m->csv_flush_interval_ns, co->cfg->csv_flush_interval_ns,
			 __ATOMIC_RELAXED);
}

void collector_repair(struct collector *co, double tsc_hz)
{
	repair_meta(co);
	__atomic_store_n(&co->inst->meta->tsc_hz_milli, (uint64_t)(tsc_hz * 1000.0),
			 __ATOMIC_RELAXED);
	publish_settings(co);
}

/*
 * Someone shrank a segment (any member of its group can ftruncate it): a
 * fault in our mapping was absorbed by shm_guard, or inotify saw the size
 * change.  The control block is given its size back here and mapped again;
 * the ring by the drain thread (drain.h), whose restores are logged here.
 * What was cut off is lost, and said so.  Producers touching the cut pages
 * meanwhile get SIGBUS: this runs within one poll of the change to keep
 * that short.
 */
static void keep_segments(struct collector *co)
{
	struct shm_restore_report rep;
	struct drain_shrinks sh = drain_shrinks(co->drain);
	int e;

	if (sh.restores != co->ring_restores) {
		co->restores += sh.restores - co->ring_restores;
		co->ring_restores = sh.restores;
		log_warning("/dev/shm/%s was shrunk by someone (%llu bytes cut off in all; "
			    "%llu unread event(s) in them counted as dropped); size restored "
			    "(%llu time(s) in all)", co->inst->name,
			    (unsigned long long)sh.lost_bytes, (unsigned long long)sh.dropped,
			    (unsigned long long)co->restores);
	}
	if (sh.error && sh.error != co->ring_restore_error)
		log_error("/dev/shm/%s was shrunk and cannot be restored: %s", co->inst->name,
			  strerror(-sh.error));
	co->ring_restore_error = sh.error;
	e = shm_restore(co->inst, SHM_PART_META, &rep);
	if (e < 0) {
		log_error("/dev/shm/%s.meta was shrunk and cannot be restored: %s",
			  co->inst->name, strerror(-e));
		return;
	}
	if (!rep.meta_restored)
		return;
	co->restores++;
	log_warning("/dev/shm/%s.meta was shrunk by someone (%zu bytes cut off: labels in them "
		    "are lost); size and header restored (%llu time(s) in all)", co->inst->name,
		    rep.meta_lost_bytes, (unsigned long long)co->restores);
	repair_meta(co);
}

/*
 * Where to resume reading each sub-ring: a restarted daemon goes on from
 * where the last one stopped (what was overwritten meanwhile is counted as
 * dropped).  Those positions come from our private state file, which the
 * drain thread keeps current; the ring's reader_tail fields are display
 * copies, since a producer rewinding them would make us count events
 * twice.  State that belongs to other segments (or none) means: start at
 * the head.  A head behind a saved position was rewound while we were
 * down: the reader replays nothing there (ring_reader_init).
 */
static void resume_tails(struct collector *co, uint64_t *tails)
{
	const struct shm_instance *in = co->inst;

	for (uint32_t k = 0; k < in->subrings; k++)
		tails[k] = __atomic_load_n(&PERFMON_SUBRING(in->ring, k)->head, __ATOMIC_ACQUIRE);
	channel_state_begin(co->state, in->instance_id, in->subrings, !in->created, tails, tails);
}

/*
 * The drain thread's progress, copied into the control block for those
 * who read it there (perfmonctl status when the socket is closed to it):
 * the counters it last published.  Display only.  (Each sub-ring's read
 * position beside its head the drain thread writes itself: it is the one
 * that maps the ring again after a shrink.)  True when anything but the
 * heartbeat changed since the last call.
 */
_Static_assert(sizeof(struct drain_counters) == 9 * sizeof(uint64_t),
	       "publish_status compares drain_counters whole: no padding");
static bool publish_status(struct collector *co)
{
	struct perfmon_meta_header *m = co->inst->meta;
	struct drain_counters c = drain_counters_now(co->drain), was = co->shown;
	bool moved;

	co->shown = c;
	was.heartbeat_ns = c.heartbeat_ns;
	moved = memcmp(&was, &c, sizeof(c)) != 0;

	__atomic_store_n(&m->heartbeat_ns, c.heartbeat_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&m->events_drained, c.read, __ATOMIC_RELAXED);
	__atomic_store_n(&m->dropped, c.dropped, __ATOMIC_RELAXED);
	__atomic_store_n(&m->stalled, c.stalled, __ATOMIC_RELAXED);
	__atomic_store_n(&m->misordered, c.misordered, __ATOMIC_RELAXED);
	__atomic_store_n(&m->open_spans, c.open_spans, __ATOMIC_RELAXED);
	__atomic_store_n(&m->reader_tail, c.tail_sum, __ATOMIC_RELAXED);
	return moved;
}

/* ---- requests ----------------------------------------------------------- */

/*
 * `status`: the collector's own view (status_msg.h).  Everything comes
 * from this process's memory, none of it from the control block, but for
 * the heads, which are the producers' and shown as they are: read live, so
 * a ring filling behind a stuck drain thread shows.  (The drain thread
 * may be mapping the ring again meanwhile; tests/tsan.supp says why that
 * is safe.)
 */
static enum channel_disposition cmd_status(void *ctx, struct channel_request *req)
{
	struct collector *co = ctx;
	struct drain_counters c = drain_counters_now(co->drain);
	uint64_t now = mono_ns(), most = 0;
	static struct status_msg st;   /* paths make it large; one thread */
	static char buf[sizeof(st) + 512];

	memset(&st, 0, sizeof(st));
	for (uint32_t k = 0; k < co->inst->subrings; k++) {
		uint64_t h = __atomic_load_n(&PERFMON_SUBRING(co->inst->ring, k)->head,
					     __ATOMIC_RELAXED);
		uint64_t t = __atomic_load_n(&co->state->tails[k], __ATOMIC_RELAXED);
		uint64_t used = h >= t ? h - t : 0;
		if (k == 0 || used > most) {
			most = used;
			st.fullest = k;
			st.head = h;
			st.tail = t;
		}
	}
	st.pid = (int)getpid();
	st.start_ns = co->start_real_ns;
	st.heartbeat_age_ns = c.heartbeat_ns && now > c.heartbeat_ns ? now - c.heartbeat_ns : 0;
	st.drained = c.read;
	st.dropped = c.dropped;
	st.stalled = c.stalled;
	st.misordered = c.misordered;
	st.open_spans = c.open_spans;
	st.capacity = co->inst->capacity;
	st.max_names = co->inst->max_names;
	st.tsc_hz = tsc_clock_hz(co->clock);
	st.tsc_invariant = co->invariant;
	st.overhead_ticks = co->overhead_ticks;
	st.flush_interval_ns = co->cfg->flush_interval_ns;
	st.csv_flush_interval_ns = co->cfg->csv_flush_interval_ns;
	copy_path(st.csv, sizeof(st.csv), co->cfg->csv);
	copy_path(st.summary, sizeof(st.summary), co->cfg->summary);
	copy_path(st.textfile, sizeof(st.textfile), co->cfg->prom_textfile);
	channel_reply_ok(req->conn, status_msg_format(buf, sizeof(buf), &st));
	return CHANNEL_REPLIED;
}

/* `summary`: write the summary at the next interval, then answer with its
 * path (the one this daemon was configured with). */
static enum channel_disposition cmd_summary(void *ctx, struct channel_request *req)
{
	struct collector *co = ctx;

	if (!co->cfg->summary[0]) {
		channel_reply_error(req->conn, "this collector writes no summary (its [output] "
				    "summary is empty)");
		return CHANNEL_REPLIED;
	}
	if (co->stopping || co->nsummary_waiters == sizeof(co->summary_waiters) /
	    sizeof(co->summary_waiters[0])) {
		channel_reply_error(req->conn, "busy; try again");
		return CHANNEL_REPLIED;
	}
	co->summary_waiters[co->nsummary_waiters++] = req->conn;
	co->summary_wanted = true;
	return CHANNEL_LATER;
}

void collector_want_summary(struct collector *co)
{
	co->summary_wanted = true;
}

bool collector_summary_wanted(const struct collector *co)
{
	return co->summary_wanted;
}

void collector_summary_done(struct collector *co, int e, const char *err)
{
	for (unsigned i = 0; i < co->nsummary_waiters; i++) {
		if (e < 0)
			channel_reply_error(co->summary_waiters[i], "cannot write the summary: %s",
					    err);
		else
			channel_reply_okf(co->summary_waiters[i], "%s\n", co->cfg->summary);
	}
	co->nsummary_waiters = 0;
	co->summary_wanted = false;
}

/* A recording that has ended: log it (and answer whoever asked). */
static void recording_done(struct collector *co, const struct recorder_result *res)
{
	if (res->error)
		log_error("recording stopped: writing the capture failed: %s",
			  strerror(-res->error));
	log_info("recording finished: %llu events captured, %llu lost (%llu buffer full, "
		 "%llu past the size cap), %llu dropped by the ring",
		 (unsigned long long)res->t.events,
		 (unsigned long long)(res->t.lost_buffer + res->t.lost_cap),
		 (unsigned long long)res->t.lost_buffer, (unsigned long long)res->t.lost_cap,
		 (unsigned long long)res->t.dropped);
	if (!co->rec_conn)
		return;
	/* Answered even when the client went away: the reply frees the
	 * connection. */
	if (res->error)
		channel_reply_error(co->rec_conn, "writing the capture failed after %llu events: %s",
				    (unsigned long long)res->t.events, strerror(-res->error));
	else
		channel_reply_okf(co->rec_conn,
				  "events %llu\nlost %llu\nlost_buffer %llu\nlost_cap %llu\n"
				  "dropped %llu\ncapped %d\nshutdown %d\n",
				  (unsigned long long)res->t.events,
				  (unsigned long long)(res->t.lost_buffer + res->t.lost_cap),
				  (unsigned long long)res->t.lost_buffer,
				  (unsigned long long)res->t.lost_cap,
				  (unsigned long long)res->t.dropped,
				  !!(res->t.flags & CAPTURE_END_CAPPED),
				  !!(res->t.flags & CAPTURE_END_SHUTDOWN));
	co->rec_conn = NULL;
}

static void refresh_names(struct collector *co)
{
	name_cache_refresh(co->names, co->inst->meta, co->inst->names, co->inst->max_names);
}

/*
 * `record SECONDS [MAX_BYTES]` with the capture file's fd: perfmonctl
 * opened the file with its own rights, so the daemon writes nothing where
 * it chose the path itself.  Answered when the recording ends.
 */
static enum channel_disposition cmd_record(void *ctx, struct channel_request *req)
{
	struct collector *co = ctx;
	struct capture_header h;
	uint64_t max_bytes = 0, now_tsc;
	char err[256], *end;
	double secs;
	int fd;

	if (req->fd < 0) {
		channel_reply_error(req->conn, "record: the capture file's descriptor must come "
				    "with the request");
		return CHANNEL_REPLIED;
	}
	if (req->argc < 1 || req->argc > 2) {
		channel_reply_error(req->conn, "record: usage: record SECONDS [MAX_BYTES]");
		return CHANNEL_REPLIED;
	}
	errno = 0;
	secs = strtod(req->argv[0], &end);
	if (errno || *end || !(secs > 0) || secs > RECORDER_MAX_SECONDS) {
		channel_reply_error(req->conn, "record: seconds must be more than 0 and at most %d",
				    RECORDER_MAX_SECONDS);
		return CHANNEL_REPLIED;
	}
	if (req->argc == 2) {
		errno = 0;
		max_bytes = strtoull(req->argv[1], &end, 10);
		if (errno || *end || max_bytes < CAPTURE_HEADER_SIZE + CAPTURE_TRAILER_SIZE) {
			channel_reply_error(req->conn, "record: bad size cap '%.40s'", req->argv[1]);
			return CHANNEL_REPLIED;
		}
	}
	refresh_names(co);
	memset(&h, 0, sizeof(h));
	now_tsc = tsc_now();
	h.start_tsc = now_tsc;
	h.start_realtime_ns = real_ns();
	h.tsc_hz_milli = (uint64_t)(tsc_clock_hz(co->clock) * 1000.0);
	h.flags = (co->invariant ? CAPTURE_FLAG_INVARIANT : 0) |
		  (PERFMON_CLOCK == PERFMON_CLOCK_TSC ? 0 : CAPTURE_FLAG_MONOTONIC);
	h.ring_count = co->inst->subrings;
	/* The pairing rules' settings, for the replay of perfmonctl dump. */
	h.max_open_spans = co->cfg->max_open_spans;
	h.max_stages = co->cfg->max_stages;
	h.stall_ticks = tsc_ns_to_ticks(co->clock, co->cfg->stalled_sample_timeout_ns);
	h.flush_ticks = tsc_ns_to_ticks(co->clock, co->cfg->flush_interval_ns);
	h.overhead_ticks = co->cfg->subtract_overhead ? co->overhead_ticks : 0;
	fd = req->fd;
	req->fd = -1;   /* the recorder owns it now, also on failure */
	if (recorder_start(co->rec, fd, now_tsc,
			   tsc_ns_to_ticks(co->clock, (uint64_t)(secs * 1e9)), max_bytes, &h,
			   co->names, err, sizeof(err)) < 0) {
		channel_reply_error(req->conn, "record: %s", err);
		return CHANNEL_REPLIED;
	}
	log_info("recording every event for %g s (asked by uid %u, pid %d)", secs,
		 (unsigned)req->peer_uid, (int)req->peer_pid);
	co->rec_conn = req->conn;
	return CHANNEL_LATER;
}

/* ---- life ------------------------------------------------------------------ */

int collector_open(struct collector *co, const struct pm_config *cfg, gid_t gid,
		   struct tsc_clock *clock, struct name_cache *names)
{
	char err[1024];
	pid_t holder = 0;
	uid_t owner;
	int e;

	memset(co, 0, sizeof(*co));
	co->cfg = cfg;
	co->clock = clock;
	co->names = names;
	if (!(co->rec = recorder_new())) {
		log_error("cannot allocate the recorder: %s", strerror(errno));
		return -ENOMEM;
	}
	/* The collector of whoever owns existing segments (the kernel reports
	 * the owner and the holder of its lock; nothing in the segments
	 * counts), then our own lock. */
	if (channel_segment_owner(cfg->shm_name, &owner) == 0 && owner != geteuid() &&
	    channel_alive(cfg->shm_name, owner, &holder) == 1) {
		log_error("another perfmond (pid %d, uid %u) is collecting from '%s'; stop it "
			  "first", (int)holder, (unsigned)owner, cfg->shm_name);
		return -EBUSY;
	}
	e = channel_open(&co->chan, cfg->shm_name, cfg->mode, gid, &holder, err, sizeof(err));
	if (e == -EBUSY)
		log_error("%s; stop it first", err);
	else if (e < 0)
		log_error("cannot open the control socket: %s", err);
	return e;
}

int collector_attach(struct collector *co, struct shm_instance *inst, struct drain *drain,
		     bool invariant, uint64_t overhead_ticks, uint64_t *tails)
{
	struct perfmon_meta_header *m = inst->meta;
	char err[1024];

	co->inst = inst;
	co->drain = drain;
	co->invariant = invariant;
	co->overhead_ticks = overhead_ticks;
	if (channel_state_map(co->chan, &co->state, err, sizeof(err)) < 0) {
		log_error("%s", err);
		return -EIO;
	}
	channel_register(co->chan, "status", cmd_status, co);
	channel_register(co->chan, "summary", cmd_summary, co);
	channel_register(co->chan, "record", cmd_record, co);
	co->start_real_ns = real_ns();
	m->collector_pid = (uint32_t)getpid();
	m->start_ns = co->start_real_ns;
	m->tsc_hz_milli = (uint64_t)(tsc_clock_hz(co->clock) * 1000.0);
	m->tsc_invariant = invariant;
	m->overhead_ticks = overhead_ticks;
	publish_settings(co);
	collector_publish_paths(co);
	resume_tails(co, tails);
	return 0;
}

uint64_t *collector_resume_store(struct collector *co)
{
	return co->state->tails;
}

struct recorder *collector_recorder(struct collector *co)
{
	return co->rec;
}

void collector_running(struct collector *co)
{
	__atomic_store_n(&co->inst->meta->collector_state, PERFMON_COLLECTOR_RUNNING,
			 __ATOMIC_RELEASE);
}

bool collector_tick(struct collector *co)
{
	struct recorder_result res;
	bool moved;

	keep_segments(co);
	moved = publish_status(co);
	if (!recorder_finished(co->rec))
		return moved || !recorder_idle(co->rec);
	refresh_names(co);
	if (recorder_poll(co->rec, co->names, &res))
		recording_done(co, &res);
	return true;
}

void collector_begin_stop(struct collector *co, uint64_t dropped)
{
	struct recorder_result res;

	co->stopping = true;
	refresh_names(co);
	if (recorder_shutdown(co->rec, tsc_now(), dropped, co->names, &res))
		recording_done(co, &res);
}

void collector_stop(struct collector *co)
{
	for (unsigned i = 0; i < co->nsummary_waiters; i++)
		channel_reply_error(co->summary_waiters[i], "the collector stopped first");
	co->nsummary_waiters = 0;
	__atomic_store_n(&co->inst->meta->collector_state, PERFMON_COLLECTOR_STOPPED,
			 __ATOMIC_RELEASE);
}

int collector_poll_fill(struct collector *co, struct pollfd *pfd, int max)
{
	return channel_poll_fill(co->chan, pfd, max);
}

void collector_dispatch(struct collector *co, const struct pollfd *pfd, int n)
{
	channel_dispatch(co->chan, pfd, n);
}

void collector_close(struct collector *co)
{
	channel_close(co->chan);
	co->chan = NULL;
}
