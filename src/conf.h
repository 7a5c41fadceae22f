/*
 * conf.h - the daemon's settings: built-in defaults, the INI file
 * (perfmond.conf(5)) and the command line (perfmond(8)) merged into one
 * validated struct pm_config, in canonical units (nanoseconds, bytes,
 * counts), each value with where it came from.  main() loads it before
 * creating anything, and again on SIGHUP.
 *
 * In layers, each calling only those below it: conf_keys.c (the key
 * table: each key's value parsed, written and reported), cmdline.c (argv),
 * conf.c (the INI file; load, check, print, reload).  conf_keys.h is their
 * internal header.  Numbers with units are units.h's, message lists msgs.h's.
 */
#ifndef PERFMOND_CONF_H
#define PERFMOND_CONF_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "msgs.h"
#include "report_unit.h"
#include "units.h"

#define CONF_NAME_MAX        200   /* shm and instance names, as <perfmon.h> */
#define CONF_GROUP_MAX       64
#define CONF_PATH_MAX        PATH_MAX
#define CONF_MAX_PERCENTILES 16
#define CONF_MAX_BUCKETS     256
#define CONF_EXIT_CONFIG     78    /* a configuration refused (sysexits EX_CONFIG) */
#define CMDLINE_EXIT_USAGE   64    /* a bad command line (sysexits EX_USAGE) */

/*
 * Every INI key, in the order of perfmond.conf(5) and of conf_print():
 *   X(ID, section, key, type, field, min, max, what 0 means when allowed
 *     below min, built-in default (NULL: derived), live on SIGHUP)
 * The ranges stop typos rather than second-guess tuning: 2^30 ring slots is
 * already 16 GiB of shared memory, a poll interval under 1us is a busy loop.
 * Live keys can be re-applied in place (re-pin, reopen, retime); the rest
 * fix the segment geometry, preallocated tables, the CSV header or the
 * buckets the drain thread counts into.
 */
#define CONF_KEYS(X) \
	X(SHM_NAME, shm, name, NAME, shm_name, 0, 0, NULL, NULL, false) \
	X(SHM_CAPACITY, shm, capacity, POW2, capacity, 64, 1u << 30, NULL, "65536", false) \
	X(SHM_MAX_NAMES, shm, max_names, COUNT, max_names, 1, 65536, NULL, "512", false) \
	X(SHM_MODE, shm, mode, MODE, mode, 0, 0777, NULL, "0660", false) \
	X(SHM_GROUP, shm, group, GROUP, group, 0, 0, NULL, "", false) \
	X(COLLECTOR_CPU, collector, cpu, CPU, cpu, 0, CPU_SETSIZE - 1, NULL, "none", true) \
	X(COLLECTOR_POLL_INTERVAL, collector, poll_interval, DURATION, poll_interval_ns, \
	  UNITS_NS_PER_US, UNITS_NS_PER_S, NULL, "1ms", true) \
	X(COLLECTOR_FLUSH_INTERVAL, collector, flush_interval, DURATION, flush_interval_ns, \
	  UNITS_NS_PER_MS, UNITS_NS_PER_DAY, NULL, "1s", true) \
	X(COLLECTOR_STALLED_SAMPLE_TIMEOUT, collector, stalled_sample_timeout, DURATION, \
	  stalled_sample_timeout_ns, UNITS_NS_PER_MS, UNITS_NS_PER_H, NULL, "5s", true) \
	X(COLLECTOR_MAX_OPEN_SPANS, collector, max_open_spans, COUNT, max_open_spans, \
	  1, 1u << 24, NULL, "4096", false) \
	X(COLLECTOR_MAX_STAGES, collector, max_stages, COUNT, max_stages, 1, 1u << 20, NULL, \
	  "1024", false) \
	X(COLLECTOR_LOCK_MEMORY, collector, lock_memory, BOOL, lock_memory, 0, 0, NULL, "no", \
	  false) \
	X(OUTPUT_CSV, output, csv, PATH, csv, 0, 0, NULL, NULL, true) \
	X(OUTPUT_SUMMARY, output, summary, PATH, summary, 0, 0, NULL, NULL, true) \
	X(OUTPUT_UNIT, output, unit, UNIT, unit, 0, 0, NULL, "ns", false) \
	X(OUTPUT_PERCENTILES, output, percentiles, PERCENTILES, percentiles, 0, 100, NULL, \
	  "50, 90, 99, 99.9", false) \
	X(OUTPUT_SUBTRACT_OVERHEAD, output, subtract_overhead, BOOL, subtract_overhead, 0, 0, \
	  NULL, "no", false) \
	X(OUTPUT_CSV_FLUSH_INTERVAL, output, csv_flush_interval, DURATION, \
	  csv_flush_interval_ns, UNITS_NS_PER_MS, UNITS_NS_PER_DAY, "push every interval", "0", \
	  true) \
	X(OUTPUT_ROTATE_SIZE, output, rotate_size, SIZE, rotate_size, UNITS_KIB, UNITS_TIB, \
	  "never", "0", true) \
	X(OUTPUT_ROTATE_INTERVAL, output, rotate_interval, DURATION, rotate_interval_ns, \
	  100 * UNITS_NS_PER_MS, 366 * UNITS_NS_PER_DAY, "never", "0", true) \
	X(OUTPUT_ROTATE_KEEP, output, rotate_keep, COUNT, rotate_keep, 0, 10000, NULL, "10", \
	  true) \
	X(OUTPUT_OUTLIERS, output, outliers, COUNT, outliers, 0, OUTLIERS_MAX, NULL, "0", false) \
	X(PROMETHEUS_TEXTFILE, prometheus, textfile, PATH, prom_textfile, 0, 0, NULL, "", true) \
	X(PROMETHEUS_BUCKETS, prometheus, buckets, BUCKETS, buckets, 1, UNITS_NS_PER_DAY, NULL, \
	  NULL, false)

#define CONF_KEY_ENUM_(id, ...) CONF_##id,
enum conf_key { CONF_KEYS(CONF_KEY_ENUM_) CONF_KEY_COUNT };
#define CONF_KEY_BIT(k) (UINT64_C(1) << (k))

enum conf_source { CONF_SRC_DEFAULT, CONF_SRC_FILE, CONF_SRC_CMDLINE };

/* Where a value came from. */
struct conf_origin {
	enum conf_source source;
	unsigned line;          /* CONF_SRC_FILE: line in pm_config.config_path */
	const char *detail;     /* static or NULL: the option, or why this default */
};

struct conf_percentiles {
	unsigned n;
	double p[CONF_MAX_PERCENTILES];   /* in [0, 100], distinct, as given */
};

struct conf_buckets {
	unsigned n;
	uint64_t le_ns[CONF_MAX_BUCKETS]; /* upper bounds, strictly increasing */
};

/* Each type's field in struct pm_config, in canonical units. */
#define CONF_FIELD_NAME(f)        char f[CONF_NAME_MAX + 1];
#define CONF_FIELD_POW2(f)        uint32_t f;
#define CONF_FIELD_COUNT(f)       uint32_t f;
#define CONF_FIELD_MODE(f)        mode_t f;
#define CONF_FIELD_GROUP(f)       char f[CONF_GROUP_MAX + 1];   /* "": the daemon's own */
#define CONF_FIELD_CPU(f)         int f;                        /* -1: not pinned */
#define CONF_FIELD_DURATION(f)    uint64_t f;                   /* nanoseconds */
#define CONF_FIELD_SIZE(f)        uint64_t f;                   /* bytes */
#define CONF_FIELD_BOOL(f)        bool f;
#define CONF_FIELD_PATH(f)        char f[CONF_PATH_MAX];        /* "": no such file */
#define CONF_FIELD_UNIT(f)        enum report_unit f;
#define CONF_FIELD_PERCENTILES(f) struct conf_percentiles f;
#define CONF_FIELD_BUCKETS(f)     struct conf_buckets f;
#define CONF_FIELD_(id, sec, key, type, field, ...) CONF_FIELD_##type(field)

struct pm_config {
	/* Not INI keys: from the command line only. */
	char instance[CONF_NAME_MAX + 1];  /* "" when not given */
	uint64_t run_duration_ns;          /* --duration; 0: until signalled */
	struct conf_origin instance_origin, duration_origin;
	char config_path[CONF_PATH_MAX];   /* "" when no file was read */

	CONF_KEYS(CONF_FIELD_)
	struct conf_origin origin[CONF_KEY_COUNT];
};

/* What a reload changed, a line for each changed key. */
struct conf_reload {
	uint64_t applied;       /* CONF_KEY_BIT of live keys whose value changed */
	uint64_t kept;          /* CONF_KEY_BIT of keys that cannot change live */
	struct msgs msgs;
};

/* The command line as typed, the strings pointing into argv. */
struct pm_cmdline {
	const char *config_path;   /* -c or the positional argument; NULL: none */
	const char *instance;      /* -i, a valid name; NULL: none */
	const char *value[CONF_KEY_COUNT];  /* --shm, --csv, --cpu, ...; NULL: absent */
	const char *opt[CONF_KEY_COUNT];    /* its option's long name, for messages */
	uint64_t duration_ns;      /* --duration; 0: until signalled */
	bool duration_set, check_config, show_version, show_help;
};

/* Parse argv into `*ret`: 0, or -EINVAL with `*ret` untouched and, in
 * `err`, what is wrong and a pointer to --help.  Values are checked as
 * conf_load() would, so a bad one is a usage error. */
int cmdline_parse(int argc, char **argv, struct pm_cmdline *ret, char *err, size_t errlen);
void cmdline_usage(FILE *f);
void cmdline_version(FILE *f);

/*
 * Built-in defaults, then the file named by `cl` (if any), then the values
 * in `cl` (NULL: defaults alone); output paths set nowhere derive from the
 * instance name and $LOGS_DIRECTORY.  All or nothing: 0 with `*ret`
 * filled, or a negative errno with every problem, a line each, in `errs`
 * (cleared first) and `*ret` untouched.  The machine is not consulted, so
 * a file can be checked anywhere.
 */
int conf_load(const struct pm_cmdline *cl, struct pm_config *ret, struct msgs *errs);

/* What only this machine can tell: [shm] group exists, and [collector] cpu
 * is one the calling thread may run on.  0, or a negative errno with the
 * problems, worded like conf_load()'s, in `errs` (cleared first). */
int conf_check_machine(const struct pm_config *c, struct msgs *errs);

/* Settings that are valid but likely not what was meant; never fatal.
 * How many were put in `warns` (cleared first). */
int conf_warnings(const struct pm_config *c, struct msgs *warns);

/* The configuration as an INI file that conf_load() reads back to the same
 * values, every key with a "; from ..." comment saying where it came from. */
void conf_print(FILE *f, const struct pm_config *c);

/* For SIGHUP: `new` was loaded while `old` runs.  `*ret_run` (which may be
 * `old` or `new`) gets `new`'s value for every live key and `old`'s for the
 * rest; `*ret` says which changed keys were applied and which kept. */
void conf_diff_live(const struct pm_config *old, const struct pm_config *new,
		    struct pm_config *ret_run, struct conf_reload *ret);

/* The default [prometheus] buckets: 39ns to 1.1s, at most 10% apart. */
void conf_default_buckets(struct conf_buckets *ret);

/* A group name or number as a gid; "" is the daemon's own, (gid_t)-1, which
 * fchown() leaves alone.  0, -ENOENT (no such group), -EINVAL or -errno. */
int conf_resolve_group(const char *group, gid_t *ret_gid);

#endif
