/*
 * ctl_producers.h - the producers attached to an instance, as perfmonctl
 * shows them.
 *
 * Flow: each producer writes its own entry into the registry of the
 * control block when it attaches (include/perfmon.h) -> [ctl_producers:
 * copy, check every pid against the kernel] -> status, list.  An entry is
 * untrusted: its command name is cleaned, and it is shown only while its
 * process exists and maps this instance's ring.
 */
#ifndef PERFMOND_CTL_PRODUCERS_H
#define PERFMOND_CTL_PRODUCERS_H

#include <stdint.h>

#include "shm.h"

struct ctl_producer {
	uint32_t pid;
	uint64_t attach_s;                 /* CLOCK_REALTIME seconds */
	char comm[4 * PERFMON_COMM_SIZE];  /* cleaned for printing */
};

/*
 * The live producers of `inst`, at most PERFMON_MAX_PRODUCERS, ordered by
 * attach time.  Entries of processes that are gone, or that no longer map
 * the ring, are left out.  Returns how many were stored in `ret`.
 */
unsigned ctl_producers_read(const struct shm_instance *inst,
			    struct ctl_producer ret[PERFMON_MAX_PRODUCERS]);

/*
 * Whether process `pid` is alive and attached to the ring of `name`: it
 * exists and /proc/PID/maps names /dev/shm/NAME (not a removed ring of that
 * name).  When the maps are not readable (another user's process), its
 * existence is all there is to go on.
 */
bool ctl_producer_alive(uint32_t pid, const char *name);

#endif
