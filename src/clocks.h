/*
 * clocks.h - the system clocks in nanoseconds, for timers, ages and
 * timestamps people read.  (The producers' clock, the TSC, is tsc.h's.)
 */
#ifndef PERFMOND_CLOCKS_H
#define PERFMOND_CLOCKS_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC: intervals, deadlines, ages. */
static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME: what a timestamp in a file or a message shows. */
static inline uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* PERFMOND_CLOCKS_H */
