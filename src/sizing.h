/*
 * sizing.h - what a configuration costs before anything is created: the
 * ring's geometry on this host, the memory the collector's tables, the
 * ring and the merge buffers need, and the room in /dev/shm.
 *
 * Flow: configuration -> [sizing] -> segments (shm.c) and the engine
 * (pairing.c, ring_reader.c), which allocate exactly this at start.
 */
#ifndef PERFMOND_SIZING_H
#define PERFMOND_SIZING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf.h"

/* The CPU count the ring is sized for: PERFMOND_CPUS (1-4096, to size it
 * as for another host; docs/shm-layout.md) or this host's possible CPUs. */
unsigned sizing_cpus(void);

/* Slots per sub-ring and sub-rings for `c` on this host (shm.h). */
void sizing_ring(const struct pm_config *c, uint64_t *ret_capacity, uint32_t *ret_subrings);

/* What `c` costs on this host. */
struct sizing_cost {
	unsigned cpus;           /* the CPU count the ring is sized for */
	bool cpus_forced;        /* from PERFMOND_CPUS */
	uint64_t slots;          /* per sub-ring */
	uint32_t subrings;
	size_t ring_bytes, meta_bytes;   /* the two segments, in /dev/shm */
	size_t merge_bytes;      /* the reader's merge buffers (ring_reader_memory) */
	size_t table_bytes;      /* the collector's tables and reports */
};

void sizing_cost(const struct pm_config *c, struct sizing_cost *ret);

/* The ring's geometry on this host and what it costs, as INI comments
 * (the end of --check-config's printout). */
void sizing_print(FILE *f, const struct pm_config *c);

/*
 * The memory the cgroup of this process may use, in bytes, or 0 when it
 * is not limited or cannot be told: the smallest memory.max (cgroup v2) or
 * memory.limit_in_bytes (v1 memory controller) from its cgroup up to the
 * root.  `self_cgroup` is /proc/self/cgroup and `root` the cgroup file
 * system's mount point, /sys/fs/cgroup (other paths for tests).
 */
double sizing_memory_limit(const char *self_cgroup, const char *root);

/*
 * Can this machine give `c` the memory it asks for?  The collector's
 * tables (max_stages, max_open_spans) and the ring with its merge buffers
 * (capacity) are allocated whole at start; a size that cannot be had is a
 * configuration error, found here and not by a start that fails and is
 * retried for ever; the cgroup's limit counts when it is lower than the
 * machine's memory and swap.  With `trial` (--check-config) the tables are
 * also allocated for real and freed, and new segments must fit in what
 * /dev/shm has free.  0, -ENOMEM or -ENOSPC with the message in `errs`.
 */
int sizing_check(const struct pm_config *c, bool trial, struct msgs *errs);

#endif /* PERFMOND_SIZING_H */
