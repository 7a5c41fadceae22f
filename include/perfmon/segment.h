/*
 * perfmon/segment.h - the names of an instance's segments.
 *
 * Instance NAME is the ring /dev/shm/NAME and its control block
 * /dev/shm/NAME.meta (docs/shm-layout.md).  The daemon creates them,
 * producers attach to them and perfmonctl opens them under the one rule
 * for names that lives here.
 *
 * Names beginning with perfmon__ or PERFMON__ are internal.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_SEGMENT_H
#define PERFMON_SEGMENT_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Validate a segment name (1-200 of [A-Za-z0-9._-], not starting with '.')
 * and build "/name" (or "/name.meta") into `out`. */
static inline int perfmon__shm_path(const char *name, const char *suffix,
				    char *out, size_t out_size)
{
	size_t n = 0, s = strlen(suffix);
	if (!name || !name[0] || name[0] == '.')
		return -EINVAL;
	for (; name[n]; n++) {
		char c = name[n];
		if (n >= PERFMON_NAME_MAX)
			return -ENAMETOOLONG;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return -EINVAL;
	}
	if (n + s + 2 > out_size)
		return -ENAMETOOLONG;
	out[0] = '/';
	memcpy(out + 1, name, n);
	memcpy(out + 1 + n, suffix, s + 1);
	return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* PERFMON_SEGMENT_H */
