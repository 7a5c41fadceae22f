/*
 * percpu_producer.c - producers that exercise the per-CPU sub-rings and
 * the daemon's time-ordered merge, with exact counts.
 *
 *   percpu_producer NAME MODE SPANS [PAUSE_US]
 *
 * Modes (each span is begin + end of point 1, seq = span number):
 *   cross    two threads, pinned to CPUs 0 and 1, hand each span over: the
 *            one on CPU s & 1 stamps the begin of span s, the other its
 *            end, so each CPU's sub-ring holds begins and ends alike and
 *            only the time-ordered merge puts every end after its begin;
 *            PAUSE_US (default 0) between spans
 *   migrate  one thread stamps begin on CPU 0, moves itself to CPU 1 with
 *            sched_setaffinity, stamps a step and the end there; every other
 *            span the other way round
 *   crowd    8 threads (more than CPUs), each SPANS/8 spans of its own seqs,
 *            point 2
 *   spread   one thread spreads every span over three sub-rings, whatever
 *            CPU it runs on: the begin of span s into sub-ring s, its step
 *            into s + 1 and its end into s + 2 (modulo the ring's
 *            sub-rings), 64 spans in flight, so every sub-ring holds all
 *            three kinds, interleaved with its neighbours'; point 4.  Each
 *            stamp reserves first and reads the clock after, as every stamp
 *            does, so the merge must still be exact
 *   stop     reserve a slot in this CPU's sub-ring and read the clock, as
 *            a begin of point 3 does, then raise SIGSTOP before publishing
 *            it (a producer stopped mid-stamp); once continued, publish the
 *            begin, stamp its end and exit: a span whose begin arrives
 *            after younger spans went out (misordered) and still pairs
 *
 * Exits 77 when the machine has fewer than 2 CPUs for cross and migrate.
 * Prints "spans N" when done.
 */
#include "build-config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfmon.h>

static unsigned long spans, pause_us;
static unsigned long turn;   /* cross: 2s to begin span s, 2s + 1 to end it */

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* cross: the thread on CPU `arg`; turn 2s + e (e = 0 begin, 1 end) is
 * taken by the CPU (s & 1) ^ e. */
static void *cross(void *arg)
{
	unsigned long cpu = (unsigned long)arg;

	if (pin((int)cpu) < 0)
		exit(77);
	for (unsigned long t = cpu; t < 2 * spans; t++) {
		unsigned long s = t / 2, e = t & 1;
		if (((s & 1) ^ e) != cpu)
			continue;
		while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != t)
			sched_yield();
		if (e) {
			perfmon_end(1, (uint32_t)s);
			if (pause_us)
				usleep((useconds_t)pause_us);
		} else {
			perfmon_begin(1, (uint32_t)s);
		}
		__atomic_store_n(&turn, t + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* spread: stamp kind `ev` of span s into sub-ring s + k, a stamp as
 * perfmon_begin() or perfmon_end() would make it but for the sub-ring. */
static void spread_stamp(unsigned long s, unsigned k, int ts, uint32_t ev)
{
	perfmon__publish_sub((char *)perfmon__g.ring, perfmon__g.hot_bits, (uint32_t)(s + k), ts,
			     0, 4, ev);
}

static void spread(void)
{
	enum { IN_FLIGHT = 64 };

	for (unsigned long t = 0; t < spans + IN_FLIGHT; t++) {
		unsigned long mid = t - IN_FLIGHT / 2, end = t - IN_FLIGHT;

		if (t < spans)
			spread_stamp(t, 0, PERFMON__TS_BEGIN,
				     PERFMON_EVENT(PERFMON_BEGIN_STEP, (uint32_t)t));
		if (t >= IN_FLIGHT / 2 && mid < spans)
			spread_stamp(mid, 1, PERFMON__TS_END, PERFMON_EVENT(1, (uint32_t)mid));
		if (t >= IN_FLIGHT)
			spread_stamp(end, 2, PERFMON__TS_END,
				     PERFMON_EVENT(PERFMON_END_STEP, (uint32_t)end));
	}
}

static void *crowd(void *arg)
{
	unsigned long id = (unsigned long)arg, n = spans / 8;
	for (unsigned long s = 0; s < n; s++) {
		uint32_t seq = (uint32_t)(id * n + s);
		perfmon_begin(2, seq);
		perfmon_end(2, seq);
		if (!(s & 63))
			sched_yield();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode;
	int e;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: percpu_producer NAME cross|migrate|crowd|spread|stop "
			"SPANS [PAUSE_US]\n");
		return 64;
	}
	mode = argv[2];
	spans = strtoul(argv[3], NULL, 0);
	pause_us = argc == 5 ? strtoul(argv[4], NULL, 0) : 0;
	if ((e = perfmon_attach(argv[1])) < 0) {
		fprintf(stderr, "percpu_producer: attach %s: %s\n", argv[1], strerror(-e));
		return 1;
	}
	perfmon_name(1, 0, "xcpu");
	perfmon_name(2, 0, "crowd");
	perfmon_name(3, 0, "stopped");
	perfmon_name(4, 0, "spread");
	if ((!strcmp(mode, "cross") || !strcmp(mode, "migrate")) &&
	    sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("SKIP: needs 2 CPUs\n");
		return 77;
	}
	if (!strcmp(mode, "cross")) {
		pthread_t a, b;
		pthread_create(&a, NULL, cross, (void *)0ul);
		pthread_create(&b, NULL, cross, (void *)1ul);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
	} else if (!strcmp(mode, "migrate")) {
		for (unsigned long s = 0; s < spans; s++) {
			int from = (int)(s & 1), to = !from;
			if (pin(from) < 0)
				return 77;
			perfmon_begin(1, (uint32_t)s);
			if (pin(to) < 0)
				return 77;
			perfmon_step(1, 1, (uint32_t)s);
			perfmon_end(1, (uint32_t)s);
		}
	} else if (!strcmp(mode, "crowd")) {
		pthread_t t[8];
		for (unsigned long i = 0; i < 8; i++)
			pthread_create(&t[i], NULL, crowd, (void *)i);
		for (int i = 0; i < 8; i++)
			pthread_join(t[i], NULL);
		spans = spans / 8 * 8;
	} else if (!strcmp(mode, "spread")) {
		spread();
	} else if (!strcmp(mode, "stop")) {
		struct perfmon_ring_header *r = perfmon__g.ring;
		uint32_t sub = perfmon__cpu() & (r->subrings - 1);
		struct perfmon_subring *sr = PERFMON_SUBRING(r, sub);
		uint64_t idx = __atomic_fetch_add(&sr->head, 1, __ATOMIC_RELAXED);
		struct perfmon_slot *s = PERFMON_SUBRING_SLOTS(r, r->subrings, r->capacity, sub) +
					 (idx & (r->capacity - 1));
		uint64_t t = perfmon__now_begin();   /* read before the stop */
		__atomic_store_n(&s->marker, (idx + 1) | PERFMON_SLOT_BUSY, __ATOMIC_RELAXED);
		printf("reserved %u %llu\n", sub, (unsigned long long)idx);
		fflush(stdout);
		raise(SIGSTOP);
		__atomic_store_n(&s->tsc, t, __ATOMIC_RELAXED);
		__atomic_store_n(&s->point_event,
				 3 | (uint64_t)PERFMON_EVENT(PERFMON_BEGIN_STEP, 1) << 32,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&s->marker, idx + 1, __ATOMIC_RELEASE);
		perfmon_end(3, 1);
		spans = 1;
	} else {
		fprintf(stderr, "percpu_producer: unknown mode %s\n", mode);
		return 64;
	}
	printf("spans %lu\n", spans);
	return 0;
}
