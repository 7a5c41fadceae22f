/*
 * pipeline.c - a multi-stage pipeline with names.
 *
 * Each "message" goes through decode -> risk -> send; the span is keyed by
 * a sequence number so several can be in flight.  Run it under perfmond:
 *
 *     SLICK_PERFMON_SHM=perfmon ./pipeline 3      # run for 3 seconds
 *
 * The daemon reports the stages decode, risk and send of point
 * tick_to_trade, and their end-to-end total.
 */
#include <perfmon.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { TICK_TO_TRADE = 1, STEP_DECODED = 1, STEP_CHECKED = 2 };

static const char *name_of(uint32_t point, uint8_t step)
{
	if (point != TICK_TO_TRADE)
		return NULL;
	switch (step) {
	case 0:
		return "tick_to_trade";
	case STEP_DECODED:
		return "decode";
	case STEP_CHECKED:
		return "risk";
	case PERFMON_END_STEP:
		return "send";
	default:
		return NULL;
	}
}

/* Some work whose cost varies a little, like real work does. */
static unsigned burn(unsigned n)
{
	volatile unsigned x = 0;
	for (unsigned i = 0; i < n; i++)
		x += i * 2654435761u;
	return x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	struct timespec t0, t;
	uint32_t seq = 0;

	/* Attached at load time from SLICK_PERFMON_SHM; when its collector is
	 * not running yet, the stamps reach the ring once it is. */
	if (!perfmon_enabled()) {
		const char *shm = getenv("SLICK_PERFMON_SHM");
		if (shm && shm[0])
			fprintf(stderr, "pipeline: no collector on '%s' yet; measured from when "
				"perfmond creates its segments\n", shm);
		else
			fprintf(stderr, "pipeline: not attached (set SLICK_PERFMON_SHM); running "
				"unmeasured\n");
	}
	perfmon_publish_names(TICK_TO_TRADE + 1, name_of);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++, seq++) {
			perfmon_begin(TICK_TO_TRADE, seq);
			burn(200 + seq % 50);                   /* decode */
			perfmon_step(TICK_TO_TRADE, STEP_DECODED, seq);
			burn(100 + seq % 7);                    /* risk check */
			perfmon_step(TICK_TO_TRADE, STEP_CHECKED, seq);
			burn(300);                              /* send */
			perfmon_end(TICK_TO_TRADE, seq);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("pipeline: %u messages\n", seq);
	return 0;
}
