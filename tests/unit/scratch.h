/*
 * scratch.h - a per-test scratch directory for the Check suites that write
 * files (CSV, summary, Prometheus exposition, configuration): made before
 * the test runs, removed afterwards with everything in it, plus the small
 * file helpers those suites read their output back with and a switch to a
 * comma-decimal LC_NUMERIC for the locale-independence tests.
 */
#ifndef PERFMOND_TESTS_SCRATCH_H
#define PERFMOND_TESTS_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>

/* Make "$TMPDIR/<tag>-XXXXXX" (or under /tmp) or fail the test. */
void scratch_create(const char *tag);

/* Remove the scratch directory and everything below it, links not followed. */
void scratch_remove(void);

/* The scratch directory made by the last scratch_create(). */
const char *scratch_dir(void);

/*
 * `name` inside the scratch directory.  The result lives in one of eight
 * rotating buffers, so up to eight paths may be in use in one expression.
 */
char *scratch_path(const char *name);

/* How many names in the scratch directory start with `prefix`. */
unsigned scratch_count(const char *prefix);

/*
 * The whole of `path` as a NUL-terminated malloc'd string (caller frees),
 * its length in *ret_len unless that is NULL; fails the test if unreadable.
 */
char *scratch_slurp(const char *path, size_t *ret_len);

/*
 * Switch LC_NUMERIC to one whose decimal point is a comma and which groups
 * thousands: an installed one if there is any, else one built with
 * localedef into the scratch directory.  False if neither worked.
 */
bool scratch_comma_locale(void);

#endif
