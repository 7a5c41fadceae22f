/*
 * percpu_producer.c - producers that exercise the per-CPU sub-rings and
 * the daemon's time-ordered merge, with exact counts.
 *
 *   percpu_producer NAME MODE SPANS
 *
 * Modes (each span is begin + end of point 1, seq = span number):
 *   cross    a thread pinned to CPU 0 stamps the begin, a thread pinned to
 *            CPU 1 the end, handed over one span at a time
 *   migrate  one thread stamps begin on CPU 0, moves itself to CPU 1 with
 *            sched_setaffinity, stamps a step and the end there; every other
 *            span the other way round
 *   crowd    8 threads (more than CPUs), each SPANS/8 spans of its own seqs,
 *            point 2
 *   stop     reserve a slot in this CPU's sub-ring, raise SIGSTOP before
 *            publishing it (a producer stopped mid-stamp); once continued,
 *            publish it as a value sample of point 3 and exit
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

static unsigned long spans;
static unsigned long begun, ended;   /* cross: spans begun, spans ended */

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void *cross_begin(void *arg)
{
	(void)arg;
	if (pin(0) < 0)
		exit(77);
	for (unsigned long s = 0; s < spans; s++) {
		while (__atomic_load_n(&ended, __ATOMIC_ACQUIRE) != s)
			sched_yield();
		perfmon_begin(1, (uint32_t)s);
		__atomic_store_n(&begun, s + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *cross_end(void *arg)
{
	(void)arg;
	if (pin(1) < 0)
		exit(77);
	for (unsigned long s = 0; s < spans; s++) {
		while (__atomic_load_n(&begun, __ATOMIC_ACQUIRE) != s + 1)
			sched_yield();
		perfmon_end(1, (uint32_t)s);
		__atomic_store_n(&ended, s + 1, __ATOMIC_RELEASE);
	}
	return NULL;
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

	if (argc != 4) {
		fprintf(stderr, "usage: percpu_producer NAME cross|migrate|crowd|stop SPANS\n");
		return 64;
	}
	mode = argv[2];
	spans = strtoul(argv[3], NULL, 0);
	if ((e = perfmon_attach(argv[1])) < 0) {
		fprintf(stderr, "percpu_producer: attach %s: %s\n", argv[1], strerror(-e));
		return 1;
	}
	perfmon_name(1, 0, "xcpu");
	perfmon_name(2, 0, "crowd");
	perfmon_name(3, 0, "stopped");
	if ((!strcmp(mode, "cross") || !strcmp(mode, "migrate")) &&
	    sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("SKIP: needs 2 CPUs\n");
		return 77;
	}
	if (!strcmp(mode, "cross")) {
		pthread_t a, b;
		pthread_create(&a, NULL, cross_begin, NULL);
		pthread_create(&b, NULL, cross_end, NULL);
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
	} else if (!strcmp(mode, "stop")) {
		struct perfmon_ring_header *r = perfmon__g.ring;
		uint32_t sub = perfmon__cpu() & (r->subrings - 1);
		struct perfmon_subring *sr = PERFMON_SUBRING(r, sub);
		uint64_t idx = __atomic_fetch_add(&sr->head, 1, __ATOMIC_RELAXED);
		struct perfmon_slot *s = PERFMON_SUBRING_SLOTS(r, r->subrings, r->capacity, sub) +
					 (idx & (r->capacity - 1));
		__atomic_store_n(&s->marker, (idx + 1) | PERFMON_SLOT_BUSY, __ATOMIC_RELAXED);
		printf("reserved %u %llu\n", sub, (unsigned long long)idx);
		fflush(stdout);
		raise(SIGSTOP);
		__atomic_store_n(&s->tsc, 5, __ATOMIC_RELAXED);
		__atomic_store_n(&s->point_event,
				 3 | (uint64_t)PERFMON_EVENT(PERFMON_VALUE_STEP, 0) << 32,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&s->marker, idx + 1, __ATOMIC_RELEASE);
		spans = 1;
	} else {
		fprintf(stderr, "percpu_producer: unknown mode %s\n", mode);
		return 64;
	}
	printf("spans %lu\n", spans);
	return 0;
}
