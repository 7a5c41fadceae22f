/*
 * ctl_cli.c - option parsing shared by the perfmonctl commands.
 */
#include "build-config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cli.h"

const char *ctl_instance_name(const char *arg)
{
	const char *env = getenv("SLICK_PERFMON_SHM");

	if (arg && arg[0])
		return arg;
	if (env && env[0])
		return env;
	return "perfmon";
}

int ctl_parse_number(const char *s, double *ret)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || !isfinite(v))
		return -EINVAL;
	*ret = v;
	return 0;
}

int ctl_parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end || errno)
		return -EINVAL;
	*ret = v;
	return 0;
}

int ctl_parse_duration(const char *s, double *ret_seconds)
{
	static const struct {
		const char *sfx;
		double secs;
	} units[] = { { "us", 1e-6 }, { "ms", 1e-3 }, { "s", 1 }, { "m", 60 },
		      { "h", 3600 }, { "d", 86400 }, { "", 1 } };
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].sfx)) {
			*ret_seconds = v * units[i].secs;
			return 0;
		}
	return -EINVAL;
}

int ctl_cli_format_json(const char *opt, enum ctl_format *ret, FILE *err, const char *cmd)
{
	char msg[160];

	if (ctl_format_choose(opt, ret, msg, sizeof(msg)) < 0) {
		fprintf(err, "perfmonctl %s: %s\n", cmd, msg);
		return -EINVAL;
	}
	return 0;
}

int ctl_cli_format(const char *opt, enum ctl_format *ret, FILE *err, const char *cmd)
{
	enum ctl_format f;

	if (ctl_cli_format_json(opt, &f, err, cmd) < 0)
		return -EINVAL;
	if (f == CTL_FORMAT_JSON) {
		/* $PERFMON_FORMAT=json asks for JSON where there is some; a
		 * command without it keeps its table. */
		if (opt) {
			fprintf(err, "perfmonctl %s: --format json is not available here; "
				"use live, md or csv\n", cmd);
			return -EINVAL;
		}
		f = CTL_FORMAT_LIVE;
	}
	*ret = f;
	return 0;
}

int ctl_usage_error(FILE *err, const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(err, "perfmonctl %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fprintf(err, "\n(see 'perfmonctl --help')\n");
	return CTL_EXIT_FAILURE;
}
