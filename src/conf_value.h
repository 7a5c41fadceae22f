/*
 * conf_value.h - the pure value parsers and formatters behind the
 * configuration: exact durations, sizes and counts, booleans, percentile
 * lists and labels, histogram bounds, names.
 *
 * Flow: beside the data path.  conf_keys.c turns INI text into struct
 * pm_config fields with these; nothing here knows about keys, files or
 * where a value came from, and nothing depends on the process locale.
 * The public entry points (conf_parse_duration(), conf_format_duration(),
 * conf_percentile_label(), conf_check_name()) are declared in conf.h.
 */
#ifndef PERFMOND_CONF_VALUE_H
#define PERFMOND_CONF_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

#define CONF_NS_PER_US  UINT64_C(1000)
#define CONF_NS_PER_MS  UINT64_C(1000000)
#define CONF_NS_PER_S   UINT64_C(1000000000)
#define CONF_NS_PER_MIN (60 * CONF_NS_PER_S)
#define CONF_NS_PER_H   (3600 * CONF_NS_PER_S)
#define CONF_NS_PER_DAY (86400 * CONF_NS_PER_S)
#define CONF_KIB        UINT64_C(1024)
#define CONF_MIB        (CONF_KIB * CONF_KIB)
#define CONF_GIB        (CONF_MIB * CONF_KIB)
#define CONF_TIB        (CONF_GIB * CONF_KIB)

/*
 * Write the reason for a refusal to `why` (may be NULL) and return `rc`,
 * so a parser can say `return conf_value_why(why, n, -EINVAL, "...")`.
 */
int conf_value_why(char *why, size_t n, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * A whole count, optionally multiplied by K, M or G (powers of 1024, any
 * case): "64K" is 65536.  0 or -EINVAL / -ERANGE with the reason in `why`.
 */
int conf_value_parse_count(const char *s, uint64_t *ret, char *why, size_t whylen);

/*
 * A size in bytes, with an optional B, K, KiB, M, MiB, G, GiB, T or TiB
 * (powers of 1024, any case); a fraction is accepted only when the result
 * is a whole number of bytes.  0 or -EINVAL / -ERANGE with `why`.
 */
int conf_value_parse_size(const char *s, uint64_t *ret, char *why, size_t whylen);

/* A size in the largest unit that keeps it exact ("64M"); 0 or -ENOSPC. */
int conf_value_format_size(uint64_t bytes, char *buf, size_t n);

/*
 * The shortest fixed-point decimal that reads back as exactly `v`, in the
 * C locale.  0, -EINVAL (not finite), -ENOMEM, -ERANGE or -ENOSPC.
 */
int conf_value_format_shortest(double v, char *buf, size_t n);

/* yes/no, true/false, on/off, 1/0 in any case.  0 or -EINVAL. */
int conf_value_parse_bool(const char *v, bool *ret);

/*
 * A comma-separated list of up to CONF_MAX_PERCENTILES distinct numbers in
 * [0, 100], read in the C locale; an empty list is valid.  `*ret` is
 * written only on success.  0 or negative errno with `why`.
 */
int conf_value_parse_percentiles(const char *v, struct conf_percentiles *ret,
				 char *why, size_t whylen);

/*
 * A comma-separated list of 1 to CONF_MAX_BUCKETS strictly increasing
 * durations, each within [min_ns, max_ns].  `*ret` is written only on
 * success.  0 or negative errno with `why`.
 */
int conf_value_parse_buckets(const char *v, uint64_t min_ns, uint64_t max_ns,
			     struct conf_buckets *ret, char *why, size_t whylen);

/*
 * Whether `g` could be a group name or number at all (length, no blanks,
 * ':', ',' or '/'); whether it exists is conf_resolve_group()'s question.
 */
int conf_value_check_group_syntax(const char *g, char *why, size_t whylen);

#endif
