/*
 * ctl_cli.h - what every perfmonctl command shares: exit codes (EXIT
 * STATUS in perfmonctl(1)), the default instance name, option value
 * parsing, and the signature each command's entry point has.
 *
 * Flow: perfmonctl.c picks the command -> ctl_<command>_cmd(argc, argv,
 * out, err), which parses its own options with the helpers here and writes
 * its results to `out` and its complaints to `err`.
 */
#ifndef PERFMOND_CTL_CLI_H
#define PERFMOND_CTL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl_table.h"

enum {
	CTL_EXIT_OK = 0,
	CTL_EXIT_FAILURE = 1,      /* also bad usage and "no such segments" */
	CTL_EXIT_NOT_RUNNING = 3,  /* no collector alive on the segments */
	CTL_EXIT_BAD_FILE = 4,     /* unreadable or mismatched input file */
	CTL_EXIT_REGRESSION = 5,   /* compare --fail-on-regression found one */
};

/* A command: argv[0] is the command's name; returns the exit code. */
typedef int (*ctl_cmd_fn)(int argc, char **argv, FILE *out, FILE *err);

/* The instance named on the command line, else $SLICK_PERFMON_SHM, else
 * "perfmon". */
const char *ctl_instance_name(const char *arg);

/* A finite number, entirely.  0 or -EINVAL. */
int ctl_parse_number(const char *s, double *ret);

/* An unsigned integer, entirely.  0 or -EINVAL. */
int ctl_parse_u64(const char *s, uint64_t *ret);

/* A duration: a number with us, ms, s, m, h or d (plain seconds without a
 * suffix).  0 or -EINVAL. */
int ctl_parse_duration(const char *s, double *ret_seconds);

/*
 * Settle the output format of a command from its --format value (may be
 * NULL) and $PERFMON_FORMAT; complains on `err`.  0 or -EINVAL.
 * ctl_cli_format() is for commands that print tables only: it refuses
 * `--format json` and reads $PERFMON_FORMAT=json as live.
 * ctl_cli_format_json() is for commands that also write JSON (ctl_json.h).
 */
int ctl_cli_format(const char *opt, enum ctl_format *ret, FILE *err, const char *cmd);
int ctl_cli_format_json(const char *opt, enum ctl_format *ret, FILE *err, const char *cmd);

/* Print "perfmonctl CMD: message" to err and return CTL_EXIT_FAILURE (bad
 * usage). */
int ctl_usage_error(FILE *err, const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
