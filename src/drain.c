/*
 * drain.c - the drain thread.
 *
 * One loop: drain the per-CPU sub-rings (ring_drain merges their spans
 * into timestamp order before pairing sees them), feed the pairing engine,
 * and at each flush time sweep aged spans and flip the interval to the
 * reporter.  When the ring is empty it spins briefly (a burst usually
 * follows) and then sleeps poll_interval: an idle daemon costs one short
 * wake-up per poll interval (bench/idle_cpu.sh measures it on the machine
 * at hand).  Time is the producers' own clock (TSC), read once per batch,
 * fenced, before the sub-rings' heads: that reading is also the
 * merge's watermark.  About every millisecond the thread publishes its
 * counters (a snapshot) and its read positions (the resume store); the
 * collector copies them into the control block for display.
 */
#include "build-config.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/clock.h>

#include "clocks.h"
#include "cpus.h"
#include "drain.h"
#include "shm_guard.h"

#define SPIN_ROUNDS 16

static int pin(pthread_t t, int cpu, char *err, size_t errlen)
{
	cpu_set_t set;
	int e;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	e = pthread_setaffinity_np(t, sizeof(set), &set);
	if (e) {
		snprintf(err, errlen, "cannot pin the drain thread to cpu %d: %s", cpu,
			 strerror(e));
		return -e;
	}
	return 0;
}

int drain_repin(struct drain *d, int cpu, char *err, size_t errlen)
{
	int e = cpus_check_allowed(cpu, err, errlen);
	if (e < 0)
		return e;
	if (cpu < 0) {
		cpu_set_t set;
		if (sched_getaffinity(0, sizeof(set), &set) < 0)
			return -errno;
		e = pthread_setaffinity_np(d->thread, sizeof(set), &set);
		d->s.cpu = -1;
		return -e;
	}
	e = pin(d->thread, cpu, err, errlen);
	if (e == 0)
		d->s.cpu = cpu;
	return e;
}

/* Write counters into a snapshot (seqlock: odd while rewriting; every
 * field an atomic, so a reader racing with it is never undefined). */
static void snap_write(struct drain_snapshot *s, const struct drain_counters *c)
{
	uint64_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->c.read, c->read, __ATOMIC_RELAXED);
	__atomic_store_n(&s->c.dropped, c->dropped, __ATOMIC_RELAXED);
	__atomic_store_n(&s->c.stalled, c->stalled, __ATOMIC_RELAXED);
	__atomic_store_n(&s->c.head_resets, c->head_resets, __ATOMIC_RELAXED);
	__atomic_store_n(&s->c.misordered, c->misordered, __ATOMIC_RELAXED);
	__atomic_store_n(&s->c.open_spans, c->open_spans, __ATOMIC_RELAXED);
	__atomic_store_n(&s->c.tail_sum, c->tail_sum, __ATOMIC_RELAXED);
	__atomic_store_n(&s->c.heartbeat_ns, c->heartbeat_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&s->c.unfinished, c->unfinished, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, q + 2, __ATOMIC_RELEASE);
}

static struct drain_counters snap_read(const struct drain_snapshot *s)
{
	struct drain_counters c;
	uint64_t q;

	for (;;) {
		q = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		c.read = __atomic_load_n(&s->c.read, __ATOMIC_RELAXED);
		c.dropped = __atomic_load_n(&s->c.dropped, __ATOMIC_RELAXED);
		c.stalled = __atomic_load_n(&s->c.stalled, __ATOMIC_RELAXED);
		c.head_resets = __atomic_load_n(&s->c.head_resets, __ATOMIC_RELAXED);
		c.misordered = __atomic_load_n(&s->c.misordered, __ATOMIC_RELAXED);
		c.open_spans = __atomic_load_n(&s->c.open_spans, __ATOMIC_RELAXED);
		c.tail_sum = __atomic_load_n(&s->c.tail_sum, __ATOMIC_RELAXED);
		c.heartbeat_ns = __atomic_load_n(&s->c.heartbeat_ns, __ATOMIC_RELAXED);
		c.unfinished = __atomic_load_n(&s->c.unfinished, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (!(q & 1) && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == q)
			return c;
		sched_yield();   /* the writer was preempted mid-update: rare */
	}
}

/* The reader's counters now, with the rest of what is published (`tails`:
 * the sum of the read positions). */
static struct drain_counters counters(const struct drain *d, uint64_t now_ns,
				      uint64_t unfinished, uint64_t tails)
{
	struct ring_counters rc = ring_reader_counters(&d->reader);
	struct drain_counters c = {
		.read = rc.read,
		.dropped = rc.dropped,
		.stalled = rc.stalled,
		.head_resets = rc.head_resets,
		.misordered = rc.misordered,
		.open_spans = pairing_open_spans(d->s.pairing),
		.heartbeat_ns = now_ns,
		.unfinished = unfinished,
		.tail_sum = tails,
	};
	return c;
}

/* *p = v, unless it holds v already: an idle sub-ring costs a load, not a
 * store to a line others may hold. */
static void store_changed(uint64_t *p, uint64_t v)
{
	if (__atomic_load_n(p, __ATOMIC_RELAXED) != v)
		__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* Write the read positions out if a pass may have moved them since they
 * were last (idle, they stay, and none is read); their sum. */
static uint64_t show_tails(struct drain *d)
{
	uint64_t progress = ring_reader_progress(&d->reader);
	uint64_t *store = d->s.resume_store, sum = 0;

	if (d->tails_shown && progress == d->shown_progress)
		return d->shown_tail_sum;
	for (uint32_t k = 0; k < d->s.inst->subrings; k++) {
		uint64_t t = ring_reader_tail(&d->reader, k);

		sum += t;
		if (store)
			store_changed(&store[k], t);
		store_changed(&PERFMON_SUBRING(d->s.inst->ring, k)->reader_tail, t);
	}
	d->shown_tail_sum = sum;
	d->shown_progress = progress;
	d->tails_shown = true;
	return sum;
}

/*
 * Publish progress: the counters for others (status, the watchdog, the
 * control block's copy), and each sub-ring's read position, where a
 * restart resumes and, for display, in its header in the ring.  The ring's
 * headers are written by this thread, which also maps the ring again after
 * a shrink (check_ring), never while it does.
 */
static void publish(struct drain *d, uint64_t unfinished)
{
	struct drain_counters c = counters(d, mono_ns(), unfinished, show_tails(d));

	snap_write(&d->now_snap, &c);
}

/*
 * End the interval with the counters it covers.  They are written only
 * when the flip will succeed: while the reporter holds the previous
 * interval it may still be reading that interval's counters, and a flip
 * that fails leaves them as they were.
 */
static bool flip_with(struct drain *d, uint64_t now, const struct drain_counters *c)
{
	if (!pairing_flip_ready(d->s.pairing))
		return false;
	d->at_flip = *c;
	/* Cannot fail now: only this thread takes the hand-over back. */
	return pairing_flip(d->s.pairing, now);
}

/* Flip the interval to the reporter and wake it. */
static bool try_flip(struct drain *d, uint64_t now)
{
	struct drain_counters c = counters(d, mono_ns(), 0, show_tails(d));

	if (!flip_with(d, now, &c))
		return false;
	if (d->s.wake_fd >= 0) {
		uint64_t one = 1;
		ssize_t w = write(d->s.wake_fd, &one, sizeof(one));
		(void)w;   /* a full eventfd counter still wakes the reader */
	}
	return true;
}

struct drain_counters drain_counters_now(const struct drain *d)
{
	return snap_read(&d->now_snap);
}

bool drain_collect(struct drain *d, struct pairing_interval *ret_iv,
		   struct drain_counters *ret_c)
{
	/* pairing_collect's acquire pairs with the flip's release: at_flip,
	 * written before it, is whole. */
	if (!pairing_collect(d->s.pairing, ret_iv))
		return false;
	*ret_c = d->at_flip;
	return true;
}

uint64_t drain_heartbeat(const struct drain *d)
{
	return __atomic_load_n(&d->heartbeat, __ATOMIC_RELAXED);
}

void drain_set_live(struct drain *d, const struct drain_live *live)
{
	__atomic_store_n(&d->live.poll_ns, live->poll_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&d->live.flush_ticks, live->flush_ticks, __ATOMIC_RELAXED);
}

/* The recorder sees every event as read, with its sub-ring, in one call
 * per sub-ring and read (none once a tick has stopped the recording): one
 * load per call while nobody records, and the copy never blocks. */
static void record(void *ctx, uint32_t sub, const struct perfmon_event *values, size_t nvalues,
		   const struct perfmon_event *spans, size_t nspans)
{
	struct drain *d = ctx;
	struct recorder *r = d->s.recorder;

	if (recorder_active(r))
		recorder_feed(r, (uint16_t)sub, spans, nspans, values, nvalues);
}

/* Before every read, events or not: the recorder takes its baseline of
 * drops here, ahead of the read that counts more of them, and ends a
 * recording by the clock. */
static void record_tick(struct drain *d, uint64_t now)
{
	struct recorder *r = d->s.recorder;

	if (r && recorder_active(r))
		recorder_tick(r, now, ring_reader_counters(&d->reader).dropped);
}

static void feed(struct drain *d, const struct ring_batch *b)
{
	if (b->nvalues)
		pairing_feed(d->s.pairing, b->values, b->nvalues);
	if (b->nspans)
		pairing_feed(d->s.pairing, b->spans, b->nspans);
}

/* One drain step.  `now` must be a fenced clock reading taken before the
 * call: it is the merge's watermark (see ring_reader.h). */
static size_t drain_once(struct drain *d, uint64_t now)
{
	struct ring_batch b;
	size_t n;

	record_tick(d, now);
	n = ring_drain(&d->reader, now, now, &b);
	if (n)
		feed(d, &b);
	return n;
}

/*
 * Someone may have shrunk the ring (any member of its group can): told by
 * the reporter, or because a read of ours faulted (shm_guard).  Give it its
 * size back and, if heads were wiped, rebase the reader before it reads
 * them, so the events stamped from now on are all read.  A rare event: the
 * system calls it takes are fine on this thread.
 */
static void check_ring(struct drain *d)
{
	struct shm_restore_report rep;
	uint64_t faults = shm_guard_total(), lost = 0;
	int e;

	/* A load first: the exchange, a locked instruction, only when set. */
	if ((!__atomic_load_n(&d->ring_check, __ATOMIC_RELAXED) ||
	     !__atomic_exchange_n(&d->ring_check, 0, __ATOMIC_ACQUIRE)) && faults == d->guard_seen)
		return;
	if ((e = shm_restore(d->s.inst, SHM_PART_RING, &rep)) < 0) {
		/* Tried again next time round; passes wait (ring_reader_guard). */
		__atomic_store_n(&d->shrinks.error, e, __ATOMIC_RELAXED);
		return;
	}
	__atomic_store_n(&d->shrinks.error, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&d->guard_seen, faults, __ATOMIC_RELAXED);
	if (!rep.ring_restored)
		return;
	/* Heads before the header: producers cannot attach (the magic is
	 * written last) until the numbering goes on where it was. */
	if (rep.ring_cut_at < d->s.inst->ring_len)
		lost = ring_reader_rebase(&d->reader, rep.ring_cut_at);
	d->tails_shown = false;   /* the headers were restored: write them again */
	shm_repair_ring(d->s.inst);
	__atomic_fetch_add(&d->shrinks.lost_bytes, rep.ring_lost_bytes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&d->shrinks.dropped, lost, __ATOMIC_RELAXED);
	__atomic_fetch_add(&d->shrinks.restores, 1, __ATOMIC_RELEASE);
}

void drain_ring_changed(struct drain *d)
{
	__atomic_store_n(&d->ring_check, 1, __ATOMIC_RELEASE);
}

struct drain_shrinks drain_shrinks(const struct drain *d)
{
	struct drain_shrinks s;
	s.restores = __atomic_load_n(&d->shrinks.restores, __ATOMIC_ACQUIRE);
	s.lost_bytes = __atomic_load_n(&d->shrinks.lost_bytes, __ATOMIC_RELAXED);
	s.dropped = __atomic_load_n(&d->shrinks.dropped, __ATOMIC_RELAXED);
	s.error = __atomic_load_n(&d->shrinks.error, __ATOMIC_RELAXED);
	return s;
}

static void idle_sleep(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	nanosleep(&ts, NULL);
}

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	uint64_t now = tsc_now();
	uint64_t flush = __atomic_load_n(&d->live.flush_ticks, __ATOMIC_RELAXED);
	uint64_t next_flush = now + flush, next_status = now;
	uint64_t status_ticks = flush / 1000 ? flush / 1000 : 1;
	unsigned idle = 0;
	uint64_t shown = 0;   /* the reader's progress at the last publish */

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		size_t n;

		if (__atomic_load_n(&d->reconf_pending, __ATOMIC_ACQUIRE)) {
			pairing_reconfigure(d->s.pairing, &d->reconf);
			ring_reader_set_stall_timeout(&d->reader, d->reconf.stall_ticks);
			__atomic_store_n(&d->reconf_pending, 0, __ATOMIC_RELEASE);
		}
		check_ring(d);
		now = perfmon__now_begin();
		n = drain_once(d, now);
		__atomic_store_n(&d->heartbeat, d->heartbeat + 1, __ATOMIC_RELAXED);
		if (now >= next_flush) {
			pairing_sweep(d->s.pairing, now);
			if (try_flip(d, now)) {
				flush = __atomic_load_n(&d->live.flush_ticks, __ATOMIC_RELAXED);
				status_ticks = flush / 1000 ? flush / 1000 : 1;
				next_flush += flush;
				if (next_flush <= now)   /* fell behind: do not burst */
					next_flush = now + flush;
			}
		}
		if (now >= next_status) {
			shown = ring_reader_progress(&d->reader);
			publish(d, 0);
			next_status = now + status_ticks;
		}
		if (n) {
			idle = 0;
			continue;
		}
		if (++idle < SPIN_ROUNDS) {
			perfmon__relax();
			continue;
		}
		/* A pass waiting out the hole grace (200 us at most) holds
		 * every sub-ring's spans: a whole poll interval of sleep would
		 * hold them that much longer. */
		if (ring_reader_waiting(&d->reader, now)) {
			sched_yield();
			continue;
		}
		/* What passes did since the last publish would stay unshown
		 * for a whole sleep: publish it now.  (A quiet pass changes
		 * nothing, and a quiet wake-up has published at its status
		 * time already.) */
		if (ring_reader_progress(&d->reader) != shown) {
			shown = ring_reader_progress(&d->reader);
			publish(d, 0);
			next_status = now + status_ticks;
		}
		idle_sleep(__atomic_load_n(&d->live.poll_ns, __ATOMIC_RELAXED));
	}
	return NULL;
}

void drain_reconfigure(struct drain *d, const struct pairing_config *cfg)
{
	/* One pending change at a time: wait (briefly) for the last one. */
	while (__atomic_load_n(&d->reconf_pending, __ATOMIC_ACQUIRE) && d->running)
		idle_sleep(100000);
	d->reconf = *cfg;
	__atomic_store_n(&d->reconf_pending, 1, __ATOMIC_RELEASE);
}

/* The clock every pass's `now` comes from (the fenced producer clock). */
static uint64_t pass_clock(void)
{
	return perfmon__now_begin();
}

int drain_start(struct drain *d, const struct drain_setup *setup, char *err, size_t errlen)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int e;

	if ((e = cpus_check_allowed(setup->cpu, err, errlen)) < 0)
		return e;
	memset(d, 0, sizeof(*d));
	d->s = *setup;
	d->s.tails = NULL;   /* the caller's: used here only */
	d->live = setup->live;
	d->guard_seen = shm_guard_total();
	e = ring_reader_init(&d->reader, setup->inst->ring, setup->inst->subrings,
			     setup->inst->capacity, setup->tails, setup->hole_grace_ticks,
			     setup->stall_ticks);
	if (e < 0) {
		snprintf(err, errlen, "cannot allocate the merge buffers for %u sub-rings of "
			 "%llu slots: %s", setup->inst->subrings,
			 (unsigned long long)setup->inst->capacity, strerror(-e));
		return e;
	}
	ring_reader_guard(&d->reader, shm_guard_counter(), &d->guard_seen);
	ring_reader_clock(&d->reader, pass_clock);
	if (setup->recorder)
		ring_reader_tap(&d->reader, record, d);
	/* Pin through the attribute so the thread never runs elsewhere. */
	pthread_attr_init(&attr);
	if (setup->cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(setup->cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	e = pthread_create(&d->thread, &attr, drain_main, d);
	pthread_attr_destroy(&attr);
	if (e) {
		if (setup->cpu >= 0)
			snprintf(err, errlen, "cannot start the drain thread on cpu %d: %s",
				 setup->cpu, strerror(e));
		else
			snprintf(err, errlen, "cannot start the drain thread: %s", strerror(e));
		ring_reader_free(&d->reader);
		return -e;
	}
	pthread_setname_np(d->thread, "perfmond-drain");
	d->running = true;
	return 0;
}

void drain_stop(struct drain *d, uint64_t hole_budget_ticks)
{
	uint64_t deadline, unfinished = 0;

	if (!d->running)
		return;
	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	pthread_join(d->thread, NULL);
	d->running = false;

	/* Final drain on this thread: everything reserved up to now.  The
	 * heads are sampled once (the frozen reader's last pass), so producers
	 * that keep stamping cannot hold shutdown open; all holes share one
	 * grace budget. */
	ring_reader_freeze(&d->reader);
	deadline = tsc_now() + hole_budget_ticks;
	while (!ring_reader_settled(&d->reader)) {
		uint64_t now;
		check_ring(d);
		now = perfmon__now_begin();
		if (now >= deadline) {
			uint64_t before = ring_reader_counters(&d->reader).stalled;
			ring_reader_abandon_holes(&d->reader);
			while (!ring_reader_settled(&d->reader)) {
				check_ring(d);
				drain_once(d, perfmon__now_begin());
				ring_reader_abandon_holes(&d->reader);
			}
			unfinished = ring_reader_counters(&d->reader).stalled - before;
			break;
		}
		if (drain_once(d, now) == 0)
			perfmon__relax();
	}
	{
		struct ring_batch b;
		if (ring_reader_release_all(&d->reader, &b))
			feed(d, &b);
	}
	publish(d, unfinished);
}

bool drain_flip_final(struct drain *d, uint64_t now_ticks)
{
	struct drain_counters c = drain_counters_now(d);

	c.unfinished = 0;
	return flip_with(d, now_ticks, &c);
}

void drain_free(struct drain *d)
{
	ring_reader_free(&d->reader);
}
