/*
 * scope.c - the scope guard: begin now, end whenever the block is left.
 *
 *     SLICK_PERFMON_SHM=perfmon ./scope 2
 */
#include <perfmon.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { LOOKUP = 5 };

static int table[4096];

/* Every return path closes the span: no end call to forget. */
static int lookup(int key)
{
	PERFMON_SCOPE(LOOKUP);
	if (key < 0)
		return -1;                        /* early exit: still measured */
	for (int i = 0; i < 4096; i++)
		if (table[i] == key)
			return i;
	return -1;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct timespec t0, t;
	unsigned long calls = 0;
	long found = 0;

	for (int i = 0; i < 4096; i++)
		table[i] = i * 7;
	perfmon_name(LOOKUP, 0, "lookup");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++, calls++)
			found += lookup((int)(calls % 5000) * 7 - (calls % 11 == 0 ? 100000 : 0));
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("scope: %lu lookups (%ld)\n", calls, found);
	return 0;
}
