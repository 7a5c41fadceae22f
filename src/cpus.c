/*
 * cpus.c - the CPUs this thread may run on (cpus.h), from its affinity
 * mask, which systemd's CPUAffinity= and AllowedCPUs= narrow.
 */
#include "build-config.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>

#include "cpus.h"

int cpus_check_allowed(int cpu, char *why, size_t whylen)
{
	char list[256] = "";
	size_t len = 0;
	cpu_set_t set;

	/* Without the affinity mask there is nothing to check against. */
	if (cpu < 0 || sched_getaffinity(0, sizeof(set), &set) ||
	    (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set)))
		return 0;
	/* The CPUs it may run on, as "0-3,6". */
	for (int i = 0, first = -1; i <= CPU_SETSIZE; i++) {
		if (i < CPU_SETSIZE && CPU_ISSET(i, &set)) {
			first = first < 0 ? i : first;
		} else if (first >= 0 && len < sizeof(list)) {
			len += (size_t)snprintf(list + len, sizeof(list) - len, i - 1 == first ?
						"%s%d" : "%s%d-%d", len ? "," : "", first, i - 1);
			first = -1;
		}
	}
	snprintf(why, whylen, "CPU %d is not available to this process, which may run on "
		 "CPUs %s (the unit's CPUAffinity= and AllowedCPUs= decide)", cpu, list);
	return -EINVAL;
}
