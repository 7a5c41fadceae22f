/*
 * cmdline.c - parse perfmond's command line (SPEC section 5).
 *
 * Flow: first step of main(), before the configuration is loaded.  Values
 * are checked here with the same rules conf_load() applies, so a bad option
 * is a usage error (exit 64) naming the option, not a configuration error;
 * they are kept as typed and applied by conf_load() over the config file,
 * at start and on every reload.
 */
#include "build-config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "cmdline.h"
#include "conf_keys.h"

#define HELP_HINT "Try 'perfmond --help' for more information."

enum {
	OPT_CPU = 256,
	OPT_INTERVAL,
	OPT_CAPACITY,
	OPT_UNIT,
	OPT_DURATION,
	OPT_CHECK_CONFIG,
};

static const struct option long_options[] = {
	{ "config",       required_argument, NULL, 'c' },
	{ "instance",     required_argument, NULL, 'i' },
	{ "shm",          required_argument, NULL, 'n' },
	{ "csv",          required_argument, NULL, 'o' },
	{ "summary",      required_argument, NULL, 's' },
	{ "cpu",          required_argument, NULL, OPT_CPU },
	{ "interval",     required_argument, NULL, OPT_INTERVAL },
	{ "capacity",     required_argument, NULL, OPT_CAPACITY },
	{ "unit",         required_argument, NULL, OPT_UNIT },
	{ "duration",     required_argument, NULL, OPT_DURATION },
	{ "check-config", no_argument,       NULL, OPT_CHECK_CONFIG },
	{ "version",      no_argument,       NULL, 'V' },
	{ "help",         no_argument,       NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Options that set a config key, and the name messages use for them. */
static const struct {
	int val;
	enum conf_key key;
	const char *opt;
} key_options[] = {
	{ 'n', CONF_SHM_NAME, "--shm" },
	{ 'o', CONF_OUTPUT_CSV, "--csv" },
	{ 's', CONF_OUTPUT_SUMMARY, "--summary" },
	{ OPT_CPU, CONF_COLLECTOR_CPU, "--cpu" },
	{ OPT_INTERVAL, CONF_COLLECTOR_FLUSH_INTERVAL, "--interval" },
	{ OPT_CAPACITY, CONF_SHM_CAPACITY, "--capacity" },
	{ OPT_UNIT, CONF_OUTPUT_UNIT, "--unit" },
};

static int usage_error(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int append_hint(char *err, size_t errlen)
{
	size_t n = strlen(err);

	if (n < errlen)
		snprintf(err + n, errlen - n, "\n%s", HELP_HINT);
	return -EINVAL;
}

static int usage_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return append_hint(err, errlen);
}

/*
 * Whether getopt's complaint is about the long option `arg`.  An unknown
 * short option inside a cluster ("-xV") leaves optind on that cluster, so
 * argv[optind - 1] can be an earlier, valid long option: only blame it when
 * optopt is unset (unknown long name) or is that option's own value.
 */
static bool blames_long_option(const char *arg, int optopt_val)
{
	const struct option *o;
	size_t len;

	if (!arg || strncmp(arg, "--", 2))
		return false;
	if (optopt_val == 0)
		return true;
	len = strcspn(arg + 2, "=");
	for (o = long_options; o->name; o++) {
		if (!strncmp(o->name, arg + 2, len) && o->val == optopt_val)
			return true;
	}
	return false;
}

/*
 * Say why getopt refused `arg`: an unknown name, an abbreviation that fits
 * several options, or a value given to a flag that takes none.
 */
static int bad_option(const char *arg, int optopt_val, char *err, size_t errlen)
{
	const struct option *o;
	size_t len;
	unsigned matches = 0;

	if (!blames_long_option(arg, optopt_val)) {
		if (optopt_val > 0 && optopt_val < 256)
			return usage_error(err, errlen, "command line: unknown option '-%c'",
					   optopt_val);
		return usage_error(err, errlen, "command line: unknown option '%s'",
				   arg ? arg : "?");
	}
	len = strcspn(arg + 2, "=");
	for (o = long_options; o->name; o++) {
		if (!strncmp(o->name, arg + 2, len)) {
			matches++;
			if (strlen(o->name) == len && arg[2 + len] == '=' &&
			    o->has_arg == no_argument)
				return usage_error(err, errlen, "command line: option "
						   "'--%s' takes no value", o->name);
		}
	}
	if (matches > 1)
		return usage_error(err, errlen, "command line: option '%.*s' is "
				   "ambiguous; write it out in full", (int)(len + 2), arg);
	if (matches == 1 && arg[2 + len] == '=')
		return usage_error(err, errlen, "command line: option '%.*s' takes "
				   "no value", (int)(len + 2), arg);
	return usage_error(err, errlen, "command line: unknown option '%.*s'",
			   (int)(len + 2), arg);
}

int cmdline_parse(int argc, char **argv, struct pm_cmdline *ret,
		  char *err, size_t errlen)
{
	struct pm_cmdline cl;
	char why[512];
	size_t i;
	int c;

	memset(&cl, 0, sizeof(cl));
	optind = 0;             /* full re-initialisation (glibc) */
	opterr = 0;             /* every message comes from here */
	while ((c = getopt_long(argc, argv, ":c:i:n:o:s:Vh", long_options, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!optarg[0])
				return usage_error(err, errlen, "command line: --config: "
						   "the file name is empty");
			cl.config_path = optarg;
			break;
		case 'i':
			if (conf_check_name(optarg, why, sizeof(why)))
				return usage_error(err, errlen, "command line: --instance "
						   "%s: %s; allowed: " CONF_NAME_RULE,
						   optarg[0] ? optarg : "\"\"", why);
			cl.instance = optarg;
			break;
		case OPT_DURATION:
			if (conf_parse_duration(optarg, &cl.duration_ns, why, sizeof(why)))
				return usage_error(err, errlen, "command line: --duration "
						   "%s: %s; allowed: 0 (until signalled) or a "
						   "duration with a unit (ns, us, ms, s, m, h, d)",
						   optarg[0] ? optarg : "\"\"", why);
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
			if (optopt > 0 && optopt < 256 && strncmp(argv[optind - 1], "--", 2))
				return usage_error(err, errlen, "command line: option '-%c' "
						   "needs a value", optopt);
			return usage_error(err, errlen, "command line: option '%s' needs "
					   "a value", argv[optind - 1]);
		case '?':
			return bad_option(argv[optind - 1], optopt, err, errlen);
		default:
			for (i = 0; i < sizeof(key_options) / sizeof(key_options[0]); i++) {
				if (key_options[i].val == c)
					break;
			}
			if (i == sizeof(key_options) / sizeof(key_options[0]))
				return usage_error(err, errlen, "command line: unexpected "
						   "option '%s'", argv[optind - 1]);
			if (conf_check_option(key_options[i].key, key_options[i].opt,
					      optarg, err, errlen))
				return append_hint(err, errlen);
			cl.value[key_options[i].key] = optarg;
			cl.opt[key_options[i].key] = key_options[i].opt;
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
