/*
 * units.h - numbers with units, read and written exactly, in integers:
 * durations in nanoseconds, sizes in bytes, counts that K, M and G
 * multiply, and percentiles in the C locale whatever LC_NUMERIC says.
 * "1.3K" bytes is an error rather than a rounded guess, and nothing wraps.
 * perfmond's configuration, perfmonctl's options and the CSV column names
 * share them.
 */
#ifndef PERFMOND_UNITS_H
#define PERFMOND_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UNITS_NS_PER_US  UINT64_C(1000)
#define UNITS_NS_PER_MS  UINT64_C(1000000)
#define UNITS_NS_PER_S   UINT64_C(1000000000)
#define UNITS_NS_PER_H   (3600 * UNITS_NS_PER_S)
#define UNITS_NS_PER_DAY (86400 * UNITS_NS_PER_S)
#define UNITS_KIB        UINT64_C(1024)
#define UNITS_MIB        (UNITS_KIB * UNITS_KIB)
#define UNITS_GIB        (UNITS_MIB * UNITS_KIB)
#define UNITS_TIB        (UNITS_GIB * UNITS_KIB)
#define UNITS_DURATION_NAMES "(ns, us, ms, s, m, h, d)"
/* 10^-15 percent is 10^-17 of the samples, finer than any count of them
 * resolves; a label ("p99_" and 15 digits) then fits a CSV column name. */
#define UNITS_PERCENTILE_DECIMALS 15

/* A kind of scaled number: its units, largest first; values are written
 * with the first `nformat`, the rest are spellings only read. */
struct units_scale {
	const char *what;       /* the base unit, for messages */
	bool duration;          /* case-sensitive units, needed unless 0 */
	unsigned nformat, n;
	struct { const char *name; uint64_t mult; } u[9];
};
/* "250us", "1.5s", "0"; sizes "64M", "1GiB" (binary, any case); counts "64K". */
extern const struct units_scale units_duration, units_size, units_count;

/*
 * Parse "<digits>[.<digits>][ ]<unit>" into a count of the scale's base
 * unit: 0, or a negative errno with the reason in `why` (may be NULL) and
 * `*ret` untouched.  A fraction is fine as long as the result is whole:
 * 1.5ms is 1500000 ns, 0.5K is 512, but 1.5ns has no exact value.
 */
int units_parse(const char *s, const struct units_scale *sc, uint64_t *ret,
		char *why, size_t whylen);

/* `v` in the largest unit that keeps it exact ("1500us"), bare when none
 * does: 0 or -ENOSPC. */
int units_format(uint64_t v, const struct units_scale *sc, char *buf, size_t n);

/* A percentile in [0, 100] with at most UNITS_PERCENTILE_DECIMALS places:
 * 0, or a negative errno with the reason in `why`. */
int units_parse_percentile(const char *s, double *ret, char *why, size_t whylen);

/* The shortest decimal that reads back as `p`: 0, -ERANGE or -ENOMEM. */
int units_format_percentile(double p, char *buf, size_t n);

/* The CSV column stem of percentile `p`: 50 -> "p50", 99.9 -> "p99_9";
 * distinct values get distinct labels.  0, -EINVAL (negative or not
 * finite), -ERANGE (too many decimals), -ENOMEM or -ENOSPC. */
int units_percentile_label(double p, char *buf, size_t n);

/* Write a reason into `why` (unless NULL) and return `rc`. */
int units_why(char *why, size_t n, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
