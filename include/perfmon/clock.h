/*
 * perfmon/clock.h - the clock of perfmond's timestamps, read the same way
 * by producers and by the daemon.
 *
 * A stamp reads it after reserving its slot; the daemon reads it, fenced
 * like a begin stamp, for the watermark of every drain pass, and the
 * time-ordered merge of the sub-rings relies on the two reads being the
 * same (docs/shm-layout.md, Producer protocol and Reader protocol).
 * PERFMON_CLOCK is the clock this build reads, as the ring header records
 * it.  Also here: the pause hint that every bounded wait on shared memory
 * spins with, on either side.
 *
 * Compile-time switch (as for <perfmon.h>):
 *   PERFMON_SERIALIZE=0  plain rdtsc, no fences around the timestamp: the
 *                        read may then run before the reservation, and the
 *                        merge can meet the event late (it counts it as
 *                        misordered).
 *
 * Names beginning with perfmon__ or PERFMON__ are internal.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_CLOCK_H
#define PERFMON_CLOCK_H

#include <stdint.h>

#include "layout.h"

#ifndef PERFMON_SERIALIZE
#define PERFMON_SERIALIZE 1
#endif

#if !defined(__x86_64__) && !defined(__i386__)
#include <time.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define PERFMON__INLINE static inline __attribute__((always_inline))

/* Timestamps.  begin: nothing later starts before the read (and nothing
 * earlier is still running).  step/end: wait for prior work to retire.
 * Both are read after the slot is reserved (see perfmon__publish_sub in
 * perfmon/stamp.h); the leading lfence also keeps the read after the
 * reservation's locked add. */
#if defined(__x86_64__) || defined(__i386__)
#define PERFMON_CLOCK PERFMON_CLOCK_TSC
PERFMON__INLINE uint64_t perfmon__now_begin(void)
{
	uint32_t lo, hi;
#if PERFMON_SERIALIZE
	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
#else
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
#endif
	return ((uint64_t)hi << 32) | lo;
}
PERFMON__INLINE uint64_t perfmon__now_end(void)
{
	uint32_t lo, hi;
#if PERFMON_SERIALIZE
	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
#else
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
#endif
	return ((uint64_t)hi << 32) | lo;
}
#else
#warning "perfmon/clock.h: no TSC on this architecture; timestamps use CLOCK_MONOTONIC"
#define PERFMON_CLOCK PERFMON_CLOCK_MONOTONIC
PERFMON__INLINE uint64_t perfmon__now_begin(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define perfmon__now_end perfmon__now_begin
#endif

/* Waits on shared memory spin with a pause hint instead of sleeping, so
 * the headers need no feature-test macros (they must compile under strict
 * -std=c99). */
static inline void perfmon__relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#ifdef __cplusplus
}
#endif

#endif /* PERFMON_CLOCK_H */
