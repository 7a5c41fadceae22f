/*
 * seq_threads.c - spans that start on one thread and end on another.
 *
 * A producer thread stamps `begin` when it enqueues a job; a consumer
 * thread stamps `end` when it dequeues it.  The job's sequence number ties
 * the two stamps into one span, so the daemon reports the queueing delay.
 *
 *     SLICK_PERFMON_SHM=perfmon ./seq_threads 2
 */
#include <perfmon.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { HANDOFF = 2 };
#define QSIZE 1024

static uint32_t queue[QSIZE];
static unsigned head, tail;          /* single producer, single consumer */
static int done;

static void *consumer(void *arg)
{
	unsigned long *count = arg;
	for (;;) {
		unsigned t = __atomic_load_n(&tail, __ATOMIC_RELAXED);
		if (t == __atomic_load_n(&head, __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&done, __ATOMIC_ACQUIRE) &&
			    t == __atomic_load_n(&head, __ATOMIC_ACQUIRE))
				return NULL;
			continue;
		}
		perfmon_end(HANDOFF, queue[t % QSIZE]);
		__atomic_store_n(&tail, t + 1, __ATOMIC_RELEASE);
		(*count)++;
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct timespec t0, t;
	unsigned long handed = 0;
	pthread_t th;
	uint32_t seq = 0;

	perfmon_name(HANDOFF, 0, "handoff");
	pthread_create(&th, NULL, consumer, &handed);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 256; i++) {
			unsigned h = __atomic_load_n(&head, __ATOMIC_RELAXED);
			while (h - __atomic_load_n(&tail, __ATOMIC_ACQUIRE) >= QSIZE)
				;   /* full: wait for the consumer */
			queue[h % QSIZE] = ++seq & PERFMON_MAX_SEQ;
			perfmon_begin(HANDOFF, queue[h % QSIZE]);
			__atomic_store_n(&head, h + 1, __ATOMIC_RELEASE);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	printf("seq_threads: %lu jobs handed over\n", handed);
	return 0;
}
