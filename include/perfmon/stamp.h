/*
 * perfmon/stamp.h - the stamp's publish path, apart from any process
 * state.
 *
 * What a stamp does once it knows its ring: pick the sub-ring of the CPU it
 * runs on, reserve a slot, read the clock and publish the event (the
 * producer protocol of docs/shm-layout.md).  <perfmon.h> runs it for every
 * stamp through the attached ring; the daemon runs the very same code into
 * a private ring to measure what a stamp costs, and tests and tools run it
 * to fill rings of their own.  Nothing here attaches, allocates or refers
 * to a global: the ring and its geometry are arguments.
 *
 * A ring's geometry travels as `bits`: log2(capacity per sub-ring) in bits
 * 0-5 and log2(sub-rings) in bits 6-11 (perfmon__hot_bits).  With the
 * ring's page-aligned address in the bits above, that is the word a stamp
 * loads (perfmon__publish_hot).
 *
 * Names beginning with perfmon__ or PERFMON__ are internal.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_STAMP_H
#define PERFMON_STAMP_H

#include <stdint.h>
#include <stddef.h>

#include "layout.h"
#include "clock.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PERFMON__HOT_LOG2_BITS ((uintptr_t)63)
#define PERFMON__HOT_SUB_SHIFT 6

/*
 * The CPU this thread runs on, as a hint for choosing a sub-ring: the
 * `cpu_id_start` word of the rseq area glibc (2.35 and later) registers for
 * every thread.  One load from thread-local memory, no syscall, nothing for
 * us to register; the kernel keeps it current and it is always a valid CPU
 * number (0 where rseq is unavailable).  A thread that migrates right after
 * the load only shares a sub-ring for one stamp: the reservation is atomic,
 * so that is slower, never wrong.  Elsewhere every thread uses sub-ring 0.
 *
 * The area lies at the same offset from the thread pointer in every
 * thread, but glibc publishes that offset in a variable (__rseq_offset),
 * and loading it first puts two loads before the locked add.  On x86-64,
 * where it equals PERFMON_RSEQ_OFFSET_HINT (glibc 2.36's offset, Debian
 * 12's), a predicted branch lets the CPU number be loaded at that constant
 * offset at once, one load deep: bench_percpu measured a fenced pair 1.5
 * ticks cheaper, and a value sample 0.2.  Where it differs, the branch
 * goes the other way, predicted as well, and the stamp loads the offset
 * first.  `perfmonctl doctor` says which a process here gets.
 */
#ifndef PERFMON_RSEQ_OFFSET_HINT
#define PERFMON_RSEQ_OFFSET_HINT 2336
#endif
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)) && \
	(defined(__x86_64__) || defined(__aarch64__)) && !defined(PERFMON_NO_RSEQ)
#define PERFMON__HAVE_RSEQ 1     /* perfmon__cpu reads the rseq area */
extern const ptrdiff_t __rseq_offset;
PERFMON__INLINE uint32_t perfmon__cpu(void)
{
	uint32_t cpu;
#if defined(__x86_64__)
	if (__builtin_expect(__rseq_offset == PERFMON_RSEQ_OFFSET_HINT, 1))
		__asm__ __volatile__("movl %%fs:%c1, %0" : "=r"(cpu)
				     : "i"(PERFMON_RSEQ_OFFSET_HINT));
	else
		__asm__ __volatile__("movl %%fs:(%1), %0" : "=r"(cpu) : "r"(__rseq_offset));
#else
	cpu = *(volatile const uint32_t *)((const char *)__builtin_thread_pointer() +
					   __rseq_offset);
#endif
	return cpu;
}
#else
PERFMON__INLINE uint32_t perfmon__cpu(void)
{
	return 0;
}
#endif

/* What a stamp stores in the slot's timestamp word. */
#define PERFMON__TS_VALUE 0   /* the caller's value, no clock read */
#define PERFMON__TS_BEGIN 1
#define PERFMON__TS_END   2

/*
 * Write event `idx` into its slot `s`: the busy marker first, so a reader
 * that sees any of the new payload also sees the slot as changed; the
 * final marker is a release store.  On x86 every store here is a plain
 * mov: the fences only constrain the compiler.
 */
PERFMON__INLINE void perfmon__write_slot(struct perfmon_slot *s, uint64_t idx, uint64_t v,
					 uint32_t point, uint32_t event)
{
	__atomic_store_n(&s->marker, (idx + 1) | PERFMON_SLOT_BUSY, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->tsc, v, __ATOMIC_RELAXED);
	__atomic_store_n(&s->point_event, (uint64_t)point | ((uint64_t)event << 32),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&s->marker, idx + 1, __ATOMIC_RELEASE);
}

/*
 * Publish one event into sub-ring `sub` of the ring at `base` (geometry in
 * `bits`).  Reserve first, then read the clock: an event the
 * daemon cannot see yet was reserved after the daemon read the heads, so
 * its timestamp is later than any clock value the daemon read before that;
 * this is what makes the daemon's time-ordered merge exact (see
 * docs/shm-layout.md, which also says when it is not: with
 * PERFMON_SERIALIZE=0 an unfenced rdtsc may run before the locked add
 * completes, and such an event can arrive late, counted as misordered).
 */
PERFMON__INLINE void perfmon__publish_sub(char *base, uintptr_t bits, uint32_t sub, int ts,
					  uint64_t v, uint32_t point, uint32_t event)
{
	unsigned cap_log2 = (unsigned)(bits & PERFMON__HOT_LOG2_BITS);
	unsigned sub_log2 = (unsigned)((bits >> PERFMON__HOT_SUB_SHIFT) & PERFMON__HOT_LOG2_BITS);
	struct perfmon_subring *sr;
	struct perfmon_slot *s;
	uint64_t idx;

	/* A branch, not the mask alone: predicted, it leaves the locked add
	 * waiting on the CPU number's load only, not on the geometry too. */
	if (__builtin_expect((sub >> sub_log2) != 0, 0))
		sub &= (UINT32_C(1) << sub_log2) - 1;
	sr = (struct perfmon_subring *)(void *)
		(base + PERFMON_RING_HEADER_SIZE + (size_t)sub * PERFMON_SUBRING_SIZE);
	idx = __atomic_fetch_add(&sr->head, 1, __ATOMIC_RELAXED);
#if !defined(__x86_64__) && !defined(__i386__)
	/* On x86 the locked add is complete before the fenced rdtsc runs.
	 * Elsewhere the clock read is no memory access and a relaxed add does
	 * not hold it back: this fence keeps the timestamp after the
	 * reservation, which the daemon's merge relies on.  Value samples read
	 * no clock. */
	if (ts != PERFMON__TS_VALUE)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	if (ts == PERFMON__TS_BEGIN)
		v = perfmon__now_begin();
	else if (ts == PERFMON__TS_END)
		v = perfmon__now_end();
	s = (struct perfmon_slot *)(void *)(base + PERFMON_RING_HEADER_SIZE +
		((size_t)PERFMON_SUBRING_SIZE << sub_log2)) +
		(((uint64_t)sub << cap_log2) | (idx & ((UINT64_C(1) << cap_log2) - 1)));
	perfmon__write_slot(s, idx, v, point, event);
}

/* Publish through a stamp's word `h` (non-zero: the ring's address and its
 * geometry bits), into the sub-ring of the CPU we are running on. */
PERFMON__INLINE void perfmon__publish_hot(uintptr_t h, int ts, uint64_t v, uint32_t point,
					  uint32_t event)
{
	perfmon__publish_sub((char *)(h & ~(uintptr_t)4095), h & 4095, perfmon__cpu(), ts, v,
			     point, event);
}

/* The geometry bits for a ring with these (trusted) values. */
static inline uintptr_t perfmon__hot_bits(uint64_t capacity, uint32_t subrings)
{
	uintptr_t c = 0, k = 0;
	while ((UINT64_C(1) << c) < capacity)
		c++;
	while ((UINT32_C(1) << k) < subrings)
		k++;
	return c | (k << PERFMON__HOT_SUB_SHIFT);
}

/* Publish `v` as is into sub-ring `sub` of a ring (tools and tests). */
static inline void perfmon__publish_to(struct perfmon_ring_header *r, uint64_t capacity,
				       uint32_t subrings, uint32_t sub, uint64_t v,
				       uint32_t point, uint32_t event)
{
	perfmon__publish_sub((char *)r, perfmon__hot_bits(capacity, subrings), sub,
			     PERFMON__TS_VALUE, v, point, event);
}

#ifdef __cplusplus
}
#endif

#endif /* PERFMON_STAMP_H */
