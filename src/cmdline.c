/*
 * cmdline.c - parse perfmond's command line (perfmond(8)).  Values are
 * checked with conf_load()'s rules, so a bad one is a usage error (exit 64)
 * naming the option; they are kept as typed and laid over the config file
 * at start and on every reload, so they survive one.
 */
#include "build-config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <string.h>

#include "conf_keys.h"

/* getopt values: OPT_KEY + k for an option that sets config key k. */
enum { OPT_KEY = 256, OPT_DURATION = OPT_KEY + CONF_KEY_COUNT, OPT_CHECK_CONFIG };

/* An option that sets a config key, its name kept after its dashes (name -
 * 2 is "--name") for messages, whichever abbreviation or short form was typed. */
#define KEY_OPTION(dashed, k) { &(dashed)[2], required_argument, NULL, OPT_KEY + (k) }

static const struct option long_options[] = {
	{ "config",       required_argument, NULL, 'c' },
	{ "instance",     required_argument, NULL, 'i' },
	KEY_OPTION("--shm", CONF_SHM_NAME),
	KEY_OPTION("--csv", CONF_OUTPUT_CSV),
	KEY_OPTION("--summary", CONF_OUTPUT_SUMMARY),
	KEY_OPTION("--cpu", CONF_COLLECTOR_CPU),
	KEY_OPTION("--interval", CONF_COLLECTOR_FLUSH_INTERVAL),
	KEY_OPTION("--capacity", CONF_SHM_CAPACITY),
	KEY_OPTION("--unit", CONF_OUTPUT_UNIT),
	{ "duration",     required_argument, NULL, OPT_DURATION },
	{ "check-config", no_argument,       NULL, OPT_CHECK_CONFIG },
	{ "version",      no_argument,       NULL, 'V' },
	{ "help",         no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A usage error: the message, then where to look for help. */
__attribute__((format(printf, 3, 4)))
static int usage_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - (size_t)n, "\nTry 'perfmond --help' for more information.");
	return -EINVAL;
}

/* Why getopt refused an option, from its optopt (`opt`): a flag's own value
 * when a long flag was given a value, 0 for a long option unknown or
 * ambiguous, else the unknown short option, whose cluster ("-xV") leaves
 * optind in place, so that `arg` may be an earlier option. */
static int bad_option(const char *arg, int opt, char *err, size_t errlen)
{
	int len = (int)strcspn(arg, "=");
	const struct option *o;

	if (opt == 'V' || opt == 'h' || opt == OPT_CHECK_CONFIG)
		return usage_error(err, errlen, "command line: option '%.*s' takes no value", len,
				   arg);
	if (opt)
		return usage_error(err, errlen, "command line: unknown option '-%c'", opt);
	/* getopt takes a unique prefix: one that matches is ambiguous. */
	for (o = long_options; o->name && strncmp(o->name, arg + 2, (size_t)len - 2); o++)
		;
	return usage_error(err, errlen, o->name ? "command line: option '%.*s' is ambiguous; "
			   "write it out in full" : "command line: unknown option '%.*s'", len, arg);
}

int cmdline_parse(int argc, char **argv, struct pm_cmdline *ret,
		  char *err, size_t errlen)
{
	const struct option *o;
	struct pm_cmdline cl;
	char why[1024];
	int c, k;

	memset(&cl, 0, sizeof(cl));
	optind = 0;             /* full re-initialisation (glibc) */
	opterr = 0;             /* every message comes from here */
	while ((c = getopt_long(argc, argv, ":c:i:n:o:s:Vh", long_options, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!optarg[0])
				return usage_error(err, errlen, "command line: --config: the file "
						   "name is empty");
			cl.config_path = optarg;
			break;
		case 'i':       /* a name as [shm] name takes */
			if (conf_check_option(CONF_SHM_NAME, "--instance", optarg, why, sizeof(why)))
				return usage_error(err, errlen, "%s", why);
			cl.instance = optarg;
			break;
		case OPT_DURATION:
			if (units_parse(optarg, &units_duration, &cl.duration_ns, why, sizeof(why)))
				return usage_error(err, errlen, "command line: --duration %s: %s; "
						   "allowed: 0 (until signalled) or a duration with "
						   "a unit " UNITS_DURATION_NAMES, CONF_SHOWN(optarg), why);
			cl.duration_set = true;
			break;
		case OPT_CHECK_CONFIG:
			cl.check_config = true;
			break;
		case 'V':
			cl.show_version = true;
			break;
		case 'h':
			cl.show_help = true;
			break;
		case ':':
			if (optopt < OPT_KEY && argv[optind - 1][1] != '-')
				return usage_error(err, errlen, "command line: option '-%c' needs a "
						   "value", optopt);
			return usage_error(err, errlen, "command line: option '%s' needs a value",
					   argv[optind - 1]);
		case '?':
			return bad_option(argv[optind - 1], optopt, err, errlen);
		default:
			/* -n, -o and -s are short for --shm, --csv and --summary */
			k = c == 'n' ? CONF_SHM_NAME : c == 'o' ? CONF_OUTPUT_CSV :
			    c == 's' ? CONF_OUTPUT_SUMMARY : c - OPT_KEY;
			for (o = long_options; o->val != OPT_KEY + k; o++)
				;
			if (conf_check_option(k, o->name - 2, optarg, why, sizeof(why)))
				return usage_error(err, errlen, "%s", why);
			cl.value[k] = optarg;
			cl.opt[k] = o->name - 2;
			break;
		}
	}
	if (optind < argc) {
		if (argc - optind > 1)
			return usage_error(err, errlen, "command line: '%s': only one "
					   "CONFIG-FILE argument is allowed", argv[optind + 1]);
		if (cl.config_path)
			return usage_error(err, errlen, "command line: '%s': the config "
					   "file is already given with --config '%s'; give "
					   "it once", argv[optind], cl.config_path);
		if (!argv[optind][0])
			return usage_error(err, errlen, "command line: the CONFIG-FILE "
					   "argument is empty");
		cl.config_path = argv[optind];
	}
	*ret = cl;
	return 0;
}

void cmdline_usage(FILE *f)
{
	fputs("Usage: perfmond [OPTIONS] [CONFIG-FILE]\n"
	      "Collect latency spans and values that producers stamp into a\n"
	      "shared-memory ring; write CSV time series and a summary.\n"
	      "\n"
	      "  -c, --config FILE        read settings from this INI file\n"
	      "                           (also accepted as the one argument)\n"
	      "  -i, --instance NAME      instance name: default shm name and\n"
	      "                           output file stem\n"
	      "  -n, --shm NAME           shared-memory name (default: the instance\n"
	      "                           name, else \"perfmon\")\n"
	      "  -o, --csv PATH           CSV output; \"\" for none\n"
	      "  -s, --summary PATH       summary output; \"\" for none\n"
	      "      --cpu N              pin the drain thread to CPU N (\"none\": do not)\n"
	      "      --interval DURATION  flush interval, e.g. 1s or 100ms\n"
	      "      --capacity N         ring slots, a power of two\n"
	      "      --unit UNIT          output unit: ns, us or cycles\n"
	      "      --duration DURATION  run this long, then stop as on SIGTERM\n"
	      "                           (0: until signalled)\n"
	      "      --check-config       validate, print the effective\n"
	      "                           configuration and exit\n"
	      "  -V, --version            print the version and exit\n"
	      "  -h, --help               print this help and exit\n"
	      "\n"
	      "The command line wins over the config file, which wins over the\n"
	      "built-in defaults.  With no options perfmond runs on shm \"perfmon\"\n"
	      "and writes perfmon.csv and perfmon_summary.txt in $LOGS_DIRECTORY,\n"
	      "else in the current directory.\n"
	      "Durations take ns, us, ms, s, m, h, d; sizes take K, M, G.\n"
	      "\n"
	      "Signals: SIGHUP reloads the config, SIGUSR1 reopens the output files,\n"
	      "SIGUSR2 writes the summary, SIGTERM and SIGINT stop cleanly.\n"
	      "Exit status: 0 clean, 1 runtime failure, 64 bad command line,\n"
	      "78 bad configuration.\n"
	      "See perfmond(8) and perfmond.conf(5).\n", f);
}

void cmdline_version(FILE *f)
{
	fprintf(f, "perfmond %s\n", PACKAGE_VERSION);
}
