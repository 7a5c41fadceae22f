/*
 * testutil.h - helpers shared by the Check suites: unique segment names,
 * segment set-up and tear-down, and a drain-everything loop.
 */
#ifndef PERFMOND_TESTUTIL_H
#define PERFMOND_TESTUTIL_H

#include <stdint.h>
#include <stddef.h>

#include "ring_reader.h"
#include "shm.h"

/* A shm name unique to this process and call: "pmt-<tag>-<pid>-<n>". */
const char *test_shm_name(const char *tag);

/* Create segments (mode 0660, own group) or fail the test. */
void test_create(const char *name, uint64_t capacity, uint32_t max_names,
		 struct shm_instance *ret);
/* The same with `subrings` sub-rings of `capacity` slots (test_create: one). */
void test_create_sub(const char *name, uint32_t subrings, uint64_t capacity,
		     uint32_t max_names, struct shm_instance *ret);

/* Unmap and unlink. */
void test_destroy(struct shm_instance *inst);

/* CLOCK_MONOTONIC in ns: the clock the tests hand to the ring reader. */
uint64_t test_now_ns(void);

/* Does /dev/shm/<name> (suffix included) exist? */
int test_segment_exists(const char *name, const char *suffix);

#endif
