/*
 * conf.h - the daemon's settings: built-in defaults, the INI file
 * (perfmond.conf(5)) and the command line merged into one validated
 * struct pm_config.
 *
 * Flow: beside the data path.  main() parses argv (cmdline.h), calls
 * conf_load() and only then creates the segments, starts the drain thread
 * and opens the writers with the values found here; on SIGHUP it loads
 * again and asks conf_diff_live() what can change while running.  Values
 * are held in canonical units (nanoseconds, bytes, counts), each with
 * where it came from, for `perfmond --check-config`.
 *
 * In layers, each calling only those below: conf_value.c (values),
 * conf_keys.c (the key table, message lists), conf_file.c (the INI file)
 * and cmdline.c (argv), conf.c (load, check, print, reload).
 */
#ifndef PERFMOND_CONF_H
#define PERFMOND_CONF_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "conf_value.h"
#include "report_unit.h"

struct pm_cmdline;

#define CONF_PATH_MAX        PATH_MAX
#define CONF_MSGS_SIZE       16384  /* room for a reload line quoting two long lists */

/* Exit status for a configuration the daemon refuses (sysexits EX_CONFIG). */
#define CONF_EXIT_CONFIG     78

/* Every INI key, by section, in the order of perfmond.conf(5) and of conf_print(). */
enum conf_key {
	CONF_SHM_NAME, CONF_SHM_CAPACITY, CONF_SHM_MAX_NAMES, CONF_SHM_MODE, CONF_SHM_GROUP,
	CONF_COLLECTOR_CPU, CONF_COLLECTOR_POLL_INTERVAL, CONF_COLLECTOR_FLUSH_INTERVAL,
	CONF_COLLECTOR_STALLED_SAMPLE_TIMEOUT, CONF_COLLECTOR_MAX_OPEN_SPANS,
	CONF_COLLECTOR_MAX_STAGES, CONF_COLLECTOR_LOCK_MEMORY,
	CONF_OUTPUT_CSV, CONF_OUTPUT_SUMMARY, CONF_OUTPUT_UNIT, CONF_OUTPUT_PERCENTILES,
	CONF_OUTPUT_SUBTRACT_OVERHEAD, CONF_OUTPUT_CSV_FLUSH_INTERVAL, CONF_OUTPUT_ROTATE_SIZE,
	CONF_OUTPUT_ROTATE_INTERVAL, CONF_OUTPUT_ROTATE_KEEP, CONF_OUTPUT_OUTLIERS,
	CONF_PROMETHEUS_TEXTFILE, CONF_PROMETHEUS_BUCKETS,
	CONF_KEY_COUNT
};

#define CONF_KEY_BIT(k) (UINT64_C(1) << (k))

enum conf_source { CONF_SRC_DEFAULT, CONF_SRC_FILE, CONF_SRC_CMDLINE };

/* Where a value came from. */
struct conf_origin {
	enum conf_source source;
	unsigned line;          /* CONF_SRC_FILE: line in pm_config.config_path */
	const char *detail;     /* static text or NULL: which option, or why
				 * this default ("instance name") */
};

struct pm_config {
	/* Not INI keys: from the command line only. */
	char instance[CONF_NAME_MAX + 1];  /* "" when not given */
	uint64_t run_duration_ns;          /* --duration; 0: until signalled */
	struct conf_origin instance_origin, duration_origin;
	char config_path[CONF_PATH_MAX];   /* "" when no file was read */

	/* [shm] */
	char shm_name[CONF_NAME_MAX + 1];
	uint32_t capacity;                 /* ring slots, power of two */
	uint32_t max_names;
	mode_t mode;                       /* segment permission bits */
	char group[CONF_GROUP_MAX + 1];    /* "" : the daemon's own group */

	/* [collector] */
	int cpu;                           /* -1: not pinned */
	uint64_t poll_interval_ns;
	uint64_t flush_interval_ns;
	uint64_t stalled_sample_timeout_ns;
	uint32_t max_open_spans;
	uint32_t max_stages;
	bool lock_memory;

	/* [output]; an empty path means "do not write this file" */
	char csv[CONF_PATH_MAX];
	char summary[CONF_PATH_MAX];
	enum report_unit unit;
	struct conf_percentiles percentiles;
	bool subtract_overhead;
	uint64_t csv_flush_interval_ns;    /* 0: push every interval */
	uint64_t rotate_size;              /* bytes; 0: never */
	uint64_t rotate_interval_ns;       /* 0: never */
	uint32_t rotate_keep;
	uint32_t outliers;                 /* slowest spans per interval and stage; 0: off */

	/* [prometheus] */
	char prom_textfile[CONF_PATH_MAX]; /* "" : no exposition file */
	struct conf_buckets buckets;

	struct conf_origin origin[CONF_KEY_COUNT];
};

/* A bounded list of human-readable lines (errors or reload notes). */
struct conf_msgs {
	unsigned count;         /* lines added, including any that did not fit */
	unsigned dropped;       /* lines that did not fit into text */
	size_t len;
	char text[CONF_MSGS_SIZE];  /* '\n'-terminated lines */
};

/* What a reload changed. */
struct conf_reload {
	uint64_t applied;       /* CONF_KEY_BIT of live keys whose value changed */
	uint64_t kept;          /* CONF_KEY_BIT of keys that cannot change live */
	struct conf_msgs msgs;  /* one line per changed key */
};

/* Empty the list. */
void conf_msgs_init(struct conf_msgs *m);

/* Append one line (printf-style, no trailing newline needed); a line that
 * does not fit whole is counted in `dropped` instead. */
void conf_msgs_add(struct conf_msgs *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print every line to `f`, each after `prefix` (such as "<3>"; may be NULL). */
void conf_msgs_print(FILE *f, const struct conf_msgs *m, const char *prefix);

/*
 * The effective configuration: built-in defaults, then the file named by
 * `cl` (if any), then the command-line values in `cl` (NULL: defaults
 * alone); output paths set nowhere derive from the instance name and
 * $LOGS_DIRECTORY.  Every value is validated, but what depends on the
 * machine is left to conf_check_machine(), so a file can be checked
 * anywhere.  All or nothing: 0 with `*ret` filled, or a negative errno
 * with every problem, a line each, in `errs` (cleared first) and `*ret`
 * untouched; the daemon exits CONF_EXIT_CONFIG then.
 */
int conf_load(const struct pm_cmdline *cl, struct pm_config *ret,
	      struct conf_msgs *errs);

/*
 * Check what only this machine can tell: [shm] group names an existing
 * group, and [collector] cpu is one the calling thread may run on (the
 * unit's CPUAffinity=).  Problems are worded like conf_load()'s, with
 * FILE:LINE.  Returns 0 or a negative errno with the problems in `errs`
 * (cleared first).
 */
int conf_check_machine(const struct pm_config *c, struct conf_msgs *errs);

/*
 * Settings that are valid but probably not what was meant (a Prometheus
 * textfile not ending in ".prom", which node_exporter ignores); never
 * fatal.  Returns how many were put in `warns` (cleared first).
 */
int conf_warnings(const struct pm_config *c, struct conf_msgs *warns);

/*
 * Write the configuration as an INI file that conf_load() reads back to
 * the same values: every key, each with a "; from ..." comment saying
 * whether it is a default, came from FILE:LINE or from the command line.
 */
void conf_print(FILE *f, const struct pm_config *c);

/* The default [prometheus] buckets: 39ns to 1.1s, at most 10% apart. */
void conf_default_buckets(struct conf_buckets *ret);

/*
 * For SIGHUP: `new` was loaded successfully while `old` runs.  Fill
 * `*ret_run` with `new`'s value for every key that can change live and
 * `old`'s for the rest (shm geometry, table sizes, memory locking, the
 * buckets, and the unit/percentiles/overhead settings that make up the CSV
 * header); `*ret` says which changed keys were applied and which kept, a
 * line for each.  `ret_run` may be the same object as `old` or `new`.
 */
void conf_diff_live(const struct pm_config *old, const struct pm_config *new,
		    struct pm_config *ret_run, struct conf_reload *ret);

/*
 * Resolve a group name (or a decimal gid) to a gid.  An empty name means
 * the daemon's own group: *ret_gid = (gid_t)-1, which fchown() leaves as
 * is.  Returns 0, -ENOENT for an unknown group, -EINVAL for a malformed
 * name, or another negative errno from the group database.
 */
int conf_resolve_group(const char *group, gid_t *ret_gid);

#endif
