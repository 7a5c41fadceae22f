/*
 * cpus.h - the CPUs the calling thread may run on, as the configuration
 * checks a [collector] cpu and the drain thread checks before it pins.
 */
#ifndef PERFMOND_CPUS_H
#define PERFMOND_CPUS_H

#include <stddef.h>

/* Whether the calling thread may run on `cpu` (-1: unpinned, always
 * fine): 0, or -EINVAL with the reason and the CPUs it may use in `why`. */
int cpus_check_allowed(int cpu, char *why, size_t whylen);

#endif
