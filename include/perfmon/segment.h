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

/* A character a segment name may hold: [A-Za-z0-9._-]. */
static inline int perfmon__name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/*
 * The one rule for segment names: 1 to PERFMON_NAME_MAX characters of
 * [A-Za-z0-9._-], not starting with '.' nor ending in ".meta" (NAME.meta
 * is the control block of NAME: such a ring would be another instance's).
 * 0, -ENAMETOOLONG, or -EINVAL with *ret_at (when given) the offending
 * character's index (0 for an empty name or a leading '.', that of the
 * ".meta").
 */
static inline int perfmon__shm_name_check(const char *name, size_t *ret_at)
{
	size_t n;

	if (ret_at)
		*ret_at = 0;
	if (!name || !name[0] || name[0] == '.')
		return -EINVAL;
	for (n = 0; name[n]; n++) {
		if (n >= PERFMON_NAME_MAX)
			return -ENAMETOOLONG;
		if (!perfmon__name_char(name[n])) {
			if (ret_at)
				*ret_at = n;
			return -EINVAL;
		}
	}
	if (n >= 5 && memcmp(name + n - 5, ".meta", 5) == 0) {
		if (ret_at)
			*ret_at = n - 5;
		return -EINVAL;
	}
	return 0;
}

/* Validate a segment name and build "/name" (or "/name.meta") into `out`. */
static inline int perfmon__shm_path(const char *name, const char *suffix,
				    char *out, size_t out_size)
{
	size_t n, s = strlen(suffix);
	int e = perfmon__shm_name_check(name, NULL);

	if (e < 0)
		return e;
	n = strlen(name);
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
