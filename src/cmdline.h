/*
 * cmdline.h - perfmond's command line (perfmond(8)).
 *
 * Flow: the first thing main() does.  cmdline_parse() checks the options
 * and their values and keeps them as typed; conf_load() (conf.h) lays them
 * over the config file and the built-in defaults, at start and again on
 * every SIGHUP, so command-line settings survive a reload.
 */
#ifndef PERFMOND_CMDLINE_H
#define PERFMOND_CMDLINE_H

#include "conf.h"

/* Exit status for a bad command line (sysexits EX_USAGE). */
#define CMDLINE_EXIT_USAGE 64

struct pm_cmdline {
	const char *config_path;   /* -c or the positional argument; NULL: none */
	const char *instance;      /* -i, a valid name; NULL: none */
	/* The value given for a config key (--shm, --csv, --cpu, ...), NULL
	 * when absent; `opt` is its option's long name, for messages. */
	const char *value[CONF_KEY_COUNT];
	const char *opt[CONF_KEY_COUNT];
	uint64_t duration_ns;      /* --duration; 0: until signalled */
	bool duration_set;
	bool check_config;
	bool show_version;
	bool show_help;
};

/*
 * Parse argv; the strings kept in `*ret` point into argv.  0, or -EINVAL
 * with a message naming the offending option and pointing to --help in
 * `err` and `*ret` untouched (main() then exits CMDLINE_EXIT_USAGE).
 * --help and --version only set their flags.
 */
int cmdline_parse(int argc, char **argv, struct pm_cmdline *ret,
		  char *err, size_t errlen);

/* The --help text. */
void cmdline_usage(FILE *f);

/* The --version text. */
void cmdline_version(FILE *f);

#endif
