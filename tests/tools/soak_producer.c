/*
 * soak_producer.c - the load of the soak test (tests/integration/soak.sh): several
 * threads of one process stamping spans and values at a steady pace for a
 * given time, counting exactly what they stamped.
 *
 * Flow: [these threads] -> ring -> perfmond; soak.sh compares the counts
 * printed here with what the daemon reports.
 *
 *   soak_producer NAME SECONDS THREADS FIRST_POINT SPANS_PER_SECOND
 *
 * Thread t stamps spans begin -> step 1 -> step 2 -> end on point
 * FIRST_POINT + t, with seqs of its own (no two threads share a span key),
 * and after every 16th span a value sample (the span's seq) on point
 * FIRST_POINT + 100 + t.  Each thread paces itself to SPANS_PER_SECOND in
 * batches of 64.  At the end it prints one line per thread and a total:
 *   thread T point P spans S values V stamps N
 *   total spans S values V stamps N
 */
#include "build-config.h"

#include <perfmon.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 16
#define BATCH 64

struct worker {
	pthread_t th;
	unsigned index;
	uint32_t point;
	double seconds;
	double rate;
	unsigned long long spans, values;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
	double d = t - now_s();
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)d;
	ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	double t0 = now_s(), end = t0 + w->seconds;
	uint32_t seq = 1;

	while (now_s() < end) {
		for (int i = 0; i < BATCH; i++) {
			perfmon_begin(w->point, seq);
			perfmon_step(w->point, 1, seq);
			perfmon_step(w->point, 2, seq);
			perfmon_end(w->point, seq);
			if (++w->spans % 16 == 0) {
				perfmon_value(w->point + 100, seq);
				w->values++;
			}
			/* Stay clear of 0 (no seq) when the 24 bits wrap. */
			seq = (seq + 1) & PERFMON_MAX_SEQ;
			if (!seq)
				seq = 1;
		}
		sleep_until(t0 + (double)w->spans / w->rate);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	unsigned long long spans = 0, values = 0;
	unsigned n;
	char label[64];
	int e;

	if (argc != 6) {
		fprintf(stderr, "usage: soak_producer NAME SECONDS THREADS FIRST_POINT SPANS_PER_SECOND\n");
		return 64;
	}
	n = (unsigned)strtoul(argv[3], NULL, 0);
	if (n < 1 || n > MAX_THREADS) {
		fprintf(stderr, "soak_producer: 1 to %d threads\n", MAX_THREADS);
		return 64;
	}
	if ((e = perfmon_attach(argv[1])) < 0) {
		fprintf(stderr, "soak_producer: attach %s: %s\n", argv[1], strerror(-e));
		return 1;
	}
	for (unsigned t = 0; t < n; t++) {
		w[t].index = t;
		w[t].point = (uint32_t)strtoul(argv[4], NULL, 0) + t;
		w[t].seconds = atof(argv[2]);
		w[t].rate = atof(argv[5]);
		snprintf(label, sizeof(label), "soak%u", w[t].point);
		perfmon_name(w[t].point, 0, label);
		snprintf(label, sizeof(label), "soak%u.depth", w[t].point);
		perfmon_name(w[t].point + 100, 0, label);
		if (pthread_create(&w[t].th, NULL, work, &w[t]) != 0) {
			fprintf(stderr, "soak_producer: cannot start thread %u\n", t);
			return 1;
		}
	}
	for (unsigned t = 0; t < n; t++) {
		pthread_join(w[t].th, NULL);
		printf("thread %u point %u spans %llu values %llu stamps %llu\n", t, w[t].point,
		       w[t].spans, w[t].values, 4 * w[t].spans + w[t].values);
		spans += w[t].spans;
		values += w[t].values;
	}
	printf("total spans %llu values %llu stamps %llu\n", spans, values, 4 * spans + values);
	return 0;
}
