/*
 * shm_guard.h - survive a shared-memory segment shrunk under our mapping.
 *
 * POSIX shared memory cannot be sealed: anyone who may write a segment
 * may ftruncate() it, and touching a mapped page past the new end raises
 * SIGBUS.  Every mapping shm.c makes is registered here; a SIGBUS inside
 * one maps anonymous zero pages over the rest of it and returns, so the
 * faulting read sees zeros instead of killing the process (compositors do
 * the same for client buffers).  The owner of the segment then restores
 * its size and maps the file again (shm_restore() in shm.h); others just
 * read zeros until they map it anew.  A SIGBUS anywhere else keeps its
 * default action.
 */
#ifndef PERFMOND_SHM_GUARD_H
#define PERFMOND_SHM_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHM_GUARD_MAX 16

/* Install the SIGBUS handler (once per process; later calls do nothing).
 * 0 or a negative errno. */
int shm_guard_install(void);

/* Watch [addr, addr + len); -ENOSPC when SHM_GUARD_MAX are watched. */
int shm_guard_add(void *addr, size_t len);

/* Stop watching the mapping that starts at `addr`. */
void shm_guard_remove(void *addr);

/* Faults absorbed in the mapping at `addr` since the last call (and
 * reset them).  0 when none, or when `addr` is not watched. */
uint64_t shm_guard_take(void *addr);

/* Faults absorbed in all mappings since the process started. */
uint64_t shm_guard_total(void);

/* The counter shm_guard_total() reads, for a relaxed load on a hot path. */
const uint64_t *shm_guard_counter(void);

#endif
