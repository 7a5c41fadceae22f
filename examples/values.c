/*
 * values.c - value samples: numbers instead of times.
 *
 * perfmon_value() records a number (here a batch size and a queue depth)
 * with the same statistics as a latency, without reading the clock.
 *
 *     SLICK_PERFMON_SHM=perfmon ./values 2
 */
#include <perfmon.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BATCH_SIZE = 3, QUEUE_DEPTH = 4 };

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct timespec t0, t;
	unsigned long n = 0;
	uint64_t x = 88172645463325252ull;     /* xorshift state */

	perfmon_name(BATCH_SIZE, 0, "batch_size");
	perfmon_name(QUEUE_DEPTH, 0, "queue_depth");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++, n++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			perfmon_value(BATCH_SIZE, 1 + x % 64);
			perfmon_value(QUEUE_DEPTH, (x >> 8) % 1000);
			for (volatile int w = 0; w < 200; w++)   /* the real work between samples */
				;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("values: %lu samples of each\n", n);
	return 0;
}
