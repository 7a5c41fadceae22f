/*
 * conf_value.h - configuration values on their own: exact durations, sizes
 * and counts, percentiles and their labels, names.  Pure functions, none
 * affected by the process locale.
 *
 * Flow: the bottom of the configuration; the key table (conf_keys.c) reads
 * INI and command-line text with these, and perfmonctl reads sizes.
 * Parsers return 0 or a negative errno with the reason in `why` (or NULL).
 */
#ifndef PERFMOND_CONF_VALUE_H
#define PERFMOND_CONF_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONF_NAME_MAX        200   /* shm and instance names, as <perfmon.h> */
#define CONF_GROUP_MAX       64
#define CONF_MAX_PERCENTILES 16
#define CONF_MAX_BUCKETS     256
/* 10^-15 percent is 10^-17 of the samples, finer than any count of them
 * resolves; a label ("p99_" and 15 digits) then fits a CSV column name. */
#define CONF_PERCENTILE_DECIMALS 15

/* What conf_check_name() accepts, for messages. */
#define CONF_NAME_RULE "1 to 200 characters of A-Z a-z 0-9 . _ -, not starting with '.' nor ending in '.meta'"

#define CONF_NS_PER_US  UINT64_C(1000)
#define CONF_NS_PER_MS  UINT64_C(1000000)
#define CONF_NS_PER_S   UINT64_C(1000000000)
#define CONF_NS_PER_H   (3600 * CONF_NS_PER_S)
#define CONF_NS_PER_DAY (86400 * CONF_NS_PER_S)
#define CONF_KIB        UINT64_C(1024)
#define CONF_TIB        (CONF_KIB * CONF_KIB * CONF_KIB * CONF_KIB)

struct conf_percentiles {
	unsigned n;
	double p[CONF_MAX_PERCENTILES];   /* in [0, 100], distinct, as given */
};

struct conf_buckets {
	unsigned n;
	uint64_t le_ns[CONF_MAX_BUCKETS]; /* upper bounds, strictly increasing */
};

/* Write the reason to `why` (may be NULL) and return `rc`. */
int conf_value_why(char *why, size_t n, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A duration such as "250us", "1.5s" or "0" in nanoseconds: a non-zero
 * number needs a unit (ns, us, ms, s, m, h, d), and must come out whole. */
int conf_parse_duration(const char *s, uint64_t *ret_ns, char *why, size_t whylen);

/* A whole count, optionally times K, M or G (1024s, any case): "64K". */
int conf_value_parse_count(const char *s, uint64_t *ret, char *why, size_t whylen);

/* Bytes, optionally with B, K, KiB, M, MiB, G, GiB, T or TiB (any case). */
int conf_value_parse_size(const char *s, uint64_t *ret, char *why, size_t whylen);

/* In the largest unit that keeps the value exact ("1500us", "64M"); 0 or -ENOSPC. */
int conf_format_duration(uint64_t ns, char *buf, size_t n);
int conf_value_format_size(uint64_t bytes, char *buf, size_t n);

/* The `len` bytes at `s` as a percentile: a number from 0 to 100 with at
 * most CONF_PERCENTILE_DECIMALS decimal places. */
int conf_value_parse_percentile(const char *s, size_t len, double *ret,
				char *why, size_t whylen);

/* The shortest decimal that reads back as exactly `v`: 0, -EINVAL (not
 * finite), -ENOMEM, -ERANGE (more than CONF_PERCENTILE_DECIMALS places) or
 * -ENOSPC. */
int conf_value_format_percentile(double v, char *buf, size_t n);

/* The CSV column stem of percentile `p`: 50 -> "p50", 99.9 -> "p99_9";
 * distinct values get distinct labels.  0, -EINVAL for a negative or
 * non-finite p, or an error of conf_value_format_percentile(). */
int conf_percentile_label(double p, char *buf, size_t n);

/* A shm or instance name (CONF_NAME_RULE): 0, -EINVAL or -ENAMETOOLONG. */
int conf_check_name(const char *name, char *why, size_t whylen);

/* Whether `g` could name a group at all; whether one exists is
 * conf_resolve_group()'s question. */
int conf_value_check_group_syntax(const char *g, char *why, size_t whylen);

#endif
