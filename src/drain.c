/*
 * drain.c - the drain thread.
 *
 * One loop: drain the per-CPU sub-rings (ring_drain merges their spans
 * into timestamp order before pairing sees them), feed the pairing engine,
 * and at each flush time sweep aged spans and flip the interval to the
 * reporter.  When the ring is empty it spins briefly (a burst usually
 * follows) and then sleeps poll_interval, so an idle daemon costs well
 * under 1% of a core.  Time is the producers' own clock (TSC), read once
 * per batch, fenced, before the sub-rings' heads: that reading is also the
 * merge's watermark.  The control block's status fields are written here
 * with relaxed stores about every millisecond; they are for humans and the
 * watchdog, not for synchronisation.
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

#include "drain.h"

#define SPIN_ROUNDS 16

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int drain_check_cpu(int cpu, char *err, size_t errlen)
{
	cpu_set_t set;
	char allowed[256] = "";
	size_t len = 0;

	if (cpu < 0)
		return 0;
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return -errno;
	if (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE && len + 8 < sizeof(allowed); c++)
		if (CPU_ISSET(c, &set))
			len += (size_t)snprintf(allowed + len, sizeof(allowed) - len, "%s%d",
						len ? "," : "", c);
	snprintf(err, errlen,
		 "cpu %d is not among the CPUs this process may run on (%s); choose one of "
		 "those, or widen the unit's CPUAffinity=/AllowedCPUs=", cpu, allowed);
	return -EINVAL;
}

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
	int e = drain_check_cpu(cpu, err, errlen);
	if (e < 0)
		return e;
	if (cpu < 0) {
		cpu_set_t set;
		if (sched_getaffinity(0, sizeof(set), &set) < 0)
			return -errno;
		e = pthread_setaffinity_np(d->thread, sizeof(set), &set);
		d->cpu = -1;
		return -e;
	}
	e = pin(d->thread, cpu, err, errlen);
	if (e == 0)
		d->cpu = cpu;
	return e;
}

/* Publish progress for perfmonctl status and the watchdog. */
static void publish_status(struct drain *d)
{
	struct perfmon_meta_header *m = d->inst->meta;
	uint64_t now = monotonic_ns(), open = pairing_open_spans(d->pairing), tails = 0;

	/* Each sub-ring's read position: in the daemon's private state (where
	 * a restart resumes), and next to its head for status (the fullest
	 * sub-ring's fill); the control block gets their sum, for display. */
	for (uint32_t k = 0; k < d->reader.nsub; k++) {
		uint64_t t = d->reader.sub[k].tail;
		if (d->resume_store)
			__atomic_store_n(&d->resume_store[k], t, __ATOMIC_RELAXED);
		__atomic_store_n(&d->reader.sub[k].ctl->reader_tail, t, __ATOMIC_RELAXED);
		tails += t;
	}
	__atomic_store_n(&d->pub.heartbeat_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&d->pub.read, d->reader.read, __ATOMIC_RELAXED);
	__atomic_store_n(&d->pub.dropped, d->reader.dropped, __ATOMIC_RELAXED);
	__atomic_store_n(&d->pub.stalled, d->reader.stalled, __ATOMIC_RELAXED);
	__atomic_store_n(&d->pub.open_spans, open, __ATOMIC_RELAXED);
	__atomic_store_n(&d->pub.tail, tails, __ATOMIC_RELAXED);
	__atomic_store_n(&m->heartbeat_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&m->events_drained, d->reader.read, __ATOMIC_RELAXED);
	__atomic_store_n(&m->dropped, d->reader.dropped, __ATOMIC_RELAXED);
	__atomic_store_n(&m->stalled, d->reader.stalled, __ATOMIC_RELAXED);
	__atomic_store_n(&m->open_spans, open, __ATOMIC_RELAXED);
	__atomic_store_n(&m->reader_tail, tails, __ATOMIC_RELAXED);
}

static bool try_flip(struct drain *d, uint64_t now)
{
	/* Counters first: the flip's release makes them visible with it. */
	__atomic_store_n(&d->flip_read, d->reader.read, __ATOMIC_RELAXED);
	__atomic_store_n(&d->flip_dropped, d->reader.dropped, __ATOMIC_RELAXED);
	__atomic_store_n(&d->flip_stalled, d->reader.stalled, __ATOMIC_RELAXED);
	__atomic_store_n(&d->flip_head_resets, d->reader.head_resets, __ATOMIC_RELAXED);
	__atomic_store_n(&d->flip_misordered, d->reader.misordered, __ATOMIC_RELAXED);
	if (!pairing_flip(d->pairing, now))
		return false;
	if (d->wake_fd >= 0) {
		uint64_t one = 1;
		ssize_t w = write(d->wake_fd, &one, sizeof(one));
		(void)w;   /* a full eventfd counter still wakes the reader */
	}
	return true;
}

/* One load per pass while nobody records; the copy never blocks.  Called
 * on empty passes too: the recorder ends a recording by the clock.  Spans
 * arrive merged across the sub-rings, so they carry ring 0. */
static void record(struct drain *d, const struct ring_batch *b, uint64_t now)
{
	if (d->recorder && recorder_active(d->recorder)) {
		recorder_feed(d->recorder, b->values, b->nvalues, 0, now, d->reader.dropped);
		recorder_feed(d->recorder, b->spans, b->nspans, 0, now, d->reader.dropped);
	}
}

static void feed(struct drain *d, const struct ring_batch *b, uint64_t now)
{
	if (b->nvalues)
		pairing_feed(d->pairing, b->values, b->nvalues);
	if (b->nspans)
		pairing_feed(d->pairing, b->spans, b->nspans);
	record(d, b, now);
}

/* One drain step.  `now` must be a fenced clock reading taken before the
 * call: it is the merge's watermark (see ring_reader.h). */
static size_t drain_once(struct drain *d, uint64_t now)
{
	struct ring_batch b;
	size_t n = ring_drain(&d->reader, now, now, &b);
	if (n)
		feed(d, &b, now);
	else
		record(d, &b, now);
	return n;
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

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		size_t n;

		if (__atomic_load_n(&d->reconf_pending, __ATOMIC_ACQUIRE)) {
			pairing_reconfigure(d->pairing, &d->reconf);
			d->reader.stall_timeout = d->reconf.stall_ticks;
			__atomic_store_n(&d->reconf_pending, 0, __ATOMIC_RELEASE);
		}
		now = perfmon__now_begin();
		n = drain_once(d, now);
		__atomic_store_n(&d->heartbeat, d->heartbeat + 1, __ATOMIC_RELAXED);
		if (now >= next_flush || __atomic_load_n(&d->flip_now, __ATOMIC_RELAXED)) {
			pairing_sweep(d->pairing, now);
			if (try_flip(d, now)) {
				flush = __atomic_load_n(&d->live.flush_ticks, __ATOMIC_RELAXED);
				status_ticks = flush / 1000 ? flush / 1000 : 1;
				next_flush += flush;
				if (next_flush <= now)   /* fell behind: do not burst */
					next_flush = now + flush;
				__atomic_store_n(&d->flip_now, 0, __ATOMIC_RELAXED);
			}
		}
		if (now >= next_status) {
			publish_status(d);
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

int drain_start(struct drain *d, struct shm_instance *inst, struct pairing *p,
		const uint64_t *tails, int cpu, uint64_t hole_grace_ticks, uint64_t stall_ticks,
		const struct drain_live *live, int wake_fd, char *err, size_t errlen)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int e;

	if ((e = drain_check_cpu(cpu, err, errlen)) < 0)
		return e;
	d->inst = inst;
	d->pairing = p;
	d->cpu = cpu;
	d->wake_fd = wake_fd;
	d->live = *live;
	d->stop = d->flip_now = 0;
	d->heartbeat = 0;
	e = ring_reader_init(&d->reader, inst->ring, inst->subrings, inst->capacity, tails,
			     hole_grace_ticks, stall_ticks);
	if (e < 0) {
		snprintf(err, errlen, "cannot allocate the merge buffers for %u sub-rings of "
			 "%llu slots: %s", inst->subrings, (unsigned long long)inst->capacity,
			 strerror(-e));
		return e;
	}
	/* Pin through the attribute so the thread never runs elsewhere. */
	pthread_attr_init(&attr);
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	e = pthread_create(&d->thread, &attr, drain_main, d);
	pthread_attr_destroy(&attr);
	if (e) {
		snprintf(err, errlen, "cannot start the drain thread%s%s: %s",
			 cpu >= 0 ? " on cpu " : "", cpu >= 0 ? "(pinned)" : "", strerror(e));
		ring_reader_free(&d->reader);
		return -e;
	}
	pthread_setname_np(d->thread, "perfmond-drain");
	d->running = true;
	return 0;
}

void drain_stop(struct drain *d, uint64_t hole_budget_ticks)
{
	uint64_t deadline;

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
		uint64_t now = perfmon__now_begin();
		if (now >= deadline) {
			uint64_t before = d->reader.stalled;
			ring_reader_abandon_holes(&d->reader);
			while (!ring_reader_settled(&d->reader)) {
				drain_once(d, perfmon__now_begin());
				ring_reader_abandon_holes(&d->reader);
			}
			d->final_unfinished = d->reader.stalled - before;
			break;
		}
		if (drain_once(d, now) == 0)
			perfmon__relax();
	}
	{
		struct ring_batch b;
		if (ring_reader_release_all(&d->reader, &b))
			feed(d, &b, perfmon__now_begin());
	}
	publish_status(d);
}

void drain_free(struct drain *d)
{
	ring_reader_free(&d->reader);
}
