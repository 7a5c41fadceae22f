/*
 * conf_keys.c - the table of perfmond.conf(5) keys and what a key's text
 * means: its range, its field in struct pm_config, its canonical text, and
 * the words for a value that is not allowed.
 *
 * Flow: beside the data path.  The INI reader (conf_file.c) and the
 * loader, printer and reload logic (conf.c) find every key here; the
 * values themselves are parsed by conf_value.c.  A value that fails
 * leaves the caller's struct as it is: conf_load() parses into a staging
 * copy and commits only a configuration without problems.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "conf_keys.h"
#include "conf_value.h"
#include "outliers.h"

#define FIELD_SIZE(f) sizeof(((struct pm_config *)0)->f)
#define KEY(sec, nm, ty, f, mn, mx, z, lv) \
	{ sec, nm, ty, offsetof(struct pm_config, f), FIELD_SIZE(f), mn, mx, z, lv }

/*
 * Every key, its range and whether a reload may change it.  The ranges
 * stop typos rather than second-guess tuning: 2^30 ring slots is already
 * 16 GiB of shared memory, a poll interval under 1us is a busy loop, and a
 * rotation more often than every 100ms would rotate on every interval.
 * Live keys are those the daemon can re-apply in place (re-pin, reopen,
 * retime); the rest fix the segment geometry, preallocated tables or the
 * CSV header.
 */
const struct conf_keydef conf_keys[CONF_KEY_COUNT] = {
	[CONF_SHM_NAME] = KEY("shm", "name", CONF_T_NAME, shm_name, 0, 0, NULL, false),
	[CONF_SHM_CAPACITY] = KEY("shm", "capacity", CONF_T_POW2, capacity,
				  64, UINT64_C(1) << 30, NULL, false),
	[CONF_SHM_MAX_NAMES] = KEY("shm", "max_names", CONF_T_COUNT, max_names,
				   1, 65536, NULL, false),
	[CONF_SHM_MODE] = KEY("shm", "mode", CONF_T_MODE, mode, 0, 0, NULL, false),
	[CONF_SHM_GROUP] = KEY("shm", "group", CONF_T_GROUP, group, 0, 0, NULL, false),
	[CONF_COLLECTOR_CPU] = KEY("collector", "cpu", CONF_T_CPU, cpu,
				   0, CPU_SETSIZE - 1, NULL, true),
	[CONF_COLLECTOR_POLL_INTERVAL] = KEY("collector", "poll_interval",
		CONF_T_DURATION, poll_interval_ns, CONF_NS_PER_US, CONF_NS_PER_S, NULL, true),
	[CONF_COLLECTOR_FLUSH_INTERVAL] = KEY("collector", "flush_interval",
		CONF_T_DURATION, flush_interval_ns, CONF_NS_PER_MS, CONF_NS_PER_DAY, NULL, true),
	[CONF_COLLECTOR_STALLED_SAMPLE_TIMEOUT] = KEY("collector",
		"stalled_sample_timeout", CONF_T_DURATION, stalled_sample_timeout_ns,
		CONF_NS_PER_MS, CONF_NS_PER_H, NULL, true),
	[CONF_COLLECTOR_MAX_OPEN_SPANS] = KEY("collector", "max_open_spans",
		CONF_T_COUNT, max_open_spans, 1, UINT64_C(1) << 24, NULL, false),
	[CONF_COLLECTOR_MAX_STAGES] = KEY("collector", "max_stages", CONF_T_COUNT,
		max_stages, 1, UINT64_C(1) << 20, NULL, false),
	[CONF_COLLECTOR_LOCK_MEMORY] = KEY("collector", "lock_memory", CONF_T_BOOL,
		lock_memory, 0, 0, NULL, false),
	[CONF_OUTPUT_CSV] = KEY("output", "csv", CONF_T_PATH, csv, 0, 0, NULL, true),
	[CONF_OUTPUT_SUMMARY] = KEY("output", "summary", CONF_T_PATH, summary,
				    0, 0, NULL, true),
	[CONF_OUTPUT_UNIT] = KEY("output", "unit", CONF_T_UNIT, unit, 0, 0, NULL, false),
	[CONF_OUTPUT_PERCENTILES] = KEY("output", "percentiles", CONF_T_PERCENTILES,
		percentiles, 0, 100, NULL, false),
	[CONF_OUTPUT_SUBTRACT_OVERHEAD] = KEY("output", "subtract_overhead",
		CONF_T_BOOL, subtract_overhead, 0, 0, NULL, false),
	[CONF_OUTPUT_CSV_FLUSH_INTERVAL] = KEY("output", "csv_flush_interval",
		CONF_T_DURATION, csv_flush_interval_ns, CONF_NS_PER_MS, CONF_NS_PER_DAY,
		"push every interval", true),
	[CONF_OUTPUT_ROTATE_SIZE] = KEY("output", "rotate_size", CONF_T_SIZE,
		rotate_size, CONF_KIB, CONF_TIB, "never", true),
	[CONF_OUTPUT_ROTATE_INTERVAL] = KEY("output", "rotate_interval",
		CONF_T_DURATION, rotate_interval_ns, 100 * CONF_NS_PER_MS, 366 * CONF_NS_PER_DAY,
		"never", true),
	[CONF_OUTPUT_ROTATE_KEEP] = KEY("output", "rotate_keep", CONF_T_COUNT,
		rotate_keep, 0, 10000, NULL, true),
	[CONF_OUTPUT_OUTLIERS] = KEY("output", "outliers", CONF_T_COUNT,
		outliers, 0, OUTLIERS_MAX, NULL, false),
	[CONF_PROMETHEUS_TEXTFILE] = KEY("prometheus", "textfile", CONF_T_PATH,
		prom_textfile, 0, 0, NULL, true),
	[CONF_PROMETHEUS_BUCKETS] = KEY("prometheus", "buckets", CONF_T_BUCKETS,
		buckets, 1, CONF_NS_PER_DAY, NULL, false),
};

static const char *const sections[] = { "shm", "collector", "output", "prometheus" };

int conf_keys_find_section(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (!strcmp(sections[i], name))
			return (int)i;
	}
	return -1;
}

int conf_keys_find(const char *section, const char *name)
{
	int i;

	for (i = 0; i < CONF_KEY_COUNT; i++) {
		if (!strcmp(conf_keys[i].section, section) &&
		    !strcmp(conf_keys[i].name, name))
			return i;
	}
	return -1;
}

bool conf_key_is_live(enum conf_key k)
{
	return (unsigned)k < CONF_KEY_COUNT && conf_keys[k].live;
}

const char *conf_key_name(enum conf_key k, const char **ret_section)
{
	if ((unsigned)k >= CONF_KEY_COUNT)
		return NULL;
	if (ret_section)
		*ret_section = conf_keys[k].section;
	return conf_keys[k].name;
}

const char *conf_unit_name(enum conf_unit u)
{
	switch (u) {
	case CONF_UNIT_NS:
		return "ns";
	case CONF_UNIT_US:
		return "us";
	case CONF_UNIT_CYCLES:
		return "cycles";
	}
	return "ns";
}

/* ================================================== */
/* Values: text -> field, field -> text */

static const char *allowed_text(const struct conf_keydef *k, char *buf, size_t n)
{
	char lo[32], hi[32], zero[96] = "";

	switch (k->type) {
	case CONF_T_NAME:
		return CONF_NAME_RULE;
	case CONF_T_COUNT:
		snprintf(buf, n, "a whole number from %llu to %llu "
			 "(K, M, G multiply by 1024)",
			 (unsigned long long)k->min, (unsigned long long)k->max);
		return buf;
	case CONF_T_POW2:
		snprintf(buf, n, "a power of two from %llu to %llu, "
			 "for example 65536 or 64K",
			 (unsigned long long)k->min, (unsigned long long)k->max);
		return buf;
	case CONF_T_MODE:
		return "octal permission bits from 0600 to 0777 that keep the "
		       "owner's read and write, for example 0660";
	case CONF_T_GROUP:
		return "the name or number of an existing group; "
		       "empty: the daemon's own group";
	case CONF_T_CPU:
		return "'none' or the number of a CPU this process may run on";
	case CONF_T_DURATION:
		conf_format_duration(k->min, lo, sizeof(lo));
		conf_format_duration(k->max, hi, sizeof(hi));
		if (k->zero)
			snprintf(zero, sizeof(zero), "0 (%s) or ", k->zero);
		snprintf(buf, n, "%sa duration from %s to %s with a unit "
			 "(ns, us, ms, s, m, h, d)", zero, lo, hi);
		return buf;
	case CONF_T_SIZE:
		conf_value_format_size(k->min, lo, sizeof(lo));
		conf_value_format_size(k->max, hi, sizeof(hi));
		if (k->zero)
			snprintf(zero, sizeof(zero), "0 (%s) or ", k->zero);
		snprintf(buf, n, "%sa size from %s to %s, in bytes or with "
			 "K, M, G, T (powers of 1024)", zero, lo, hi);
		return buf;
	case CONF_T_BOOL:
		return "yes or no (also true/false, on/off, 1/0)";
	case CONF_T_PATH:
		return "a file path; empty: no file";
	case CONF_T_UNIT:
		return "ns, us or cycles";
	case CONF_T_PERCENTILES:
		return "up to 16 distinct numbers from 0 to 100, comma-separated, "
		       "for example 50, 90, 99, 99.9";
	case CONF_T_BUCKETS:
		return "1 to 64 durations from 1ns to 1d, strictly increasing, "
		       "comma-separated, for example 100ns, 1us, 10us, 1ms";
	}
	return "";
}

/*
 * Parse `v` for key `k` into the matching field of `c`.  On failure the
 * field may hold a partial value, which is why callers parse into a
 * staging copy.
 */
int conf_keys_parse(const struct conf_keydef *k, const char *v,
		    struct pm_config *c, char *why, size_t whylen)
{
	uint64_t x;
	int rc;

	switch (k->type) {
	case CONF_T_NAME:
		rc = conf_check_name(v, why, whylen);
		if (rc)
			return rc;
		snprintf(CONF_FIELD(c, k, char), k->size, "%s", v);
		return 0;

	case CONF_T_COUNT:
	case CONF_T_POW2:
		rc = conf_value_parse_count(v, &x, why, whylen);
		if (rc)
			return rc;
		if (x < k->min || x > k->max)
			return conf_value_why(why, whylen, -ERANGE, "out of range");
		if (k->type == CONF_T_POW2 && (x & (x - 1))) {
			/* In range, so x > 0 and the next power fits. */
			uint64_t below = UINT64_C(1) << (63 - __builtin_clzll(x));

			return conf_value_why(why, whylen, -EINVAL,
					      "must be a power of two (the nearest are "
					      "%llu and %llu)", (unsigned long long)below,
					      (unsigned long long)below * 2);
		}
		*CONF_FIELD(c, k, uint32_t) = (uint32_t)x;
		return 0;

	case CONF_T_MODE: {
		const char *s = v;

		x = 0;
		if (!*s)
			return conf_value_why(why, whylen, -EINVAL, "empty mode");
		for (; *s; s++) {
			if (*s < '0' || *s > '7')
				return conf_value_why(why, whylen, -EINVAL,
						      "not an octal number");
			x = x * 8 + (uint64_t)(*s - '0');
			if (x > 07777)
				break;
		}
		if (x > 0777)
			return conf_value_why(why, whylen, -ERANGE,
					      "only permission bits (0777 and below) are allowed");
		if ((x & 0600) != 0600)
			return conf_value_why(why, whylen, -ERANGE,
					      "the owner must keep read and write permission, "
					      "or perfmond cannot reopen its own segments");
		*CONF_FIELD(c, k, mode_t) = (mode_t)x;
		return 0;
	}

	case CONF_T_GROUP:
		rc = conf_value_check_group_syntax(v, why, whylen);
		if (rc)
			return rc;
		snprintf(CONF_FIELD(c, k, char), k->size, "%s", v);
		return 0;

	case CONF_T_CPU:
		if (!strcasecmp(v, "none")) {
			*CONF_FIELD(c, k, int) = -1;
			return 0;
		}
		if (!isdigit((unsigned char)*v) || v[strspn(v, "0123456789")])
			return conf_value_why(why, whylen, -EINVAL,
					      "not 'none' or a CPU number");
		rc = conf_value_parse_count(v, &x, why, whylen);
		if (rc)
			return rc;
		if (x > k->max)
			return conf_value_why(why, whylen, -ERANGE,
					      "CPU numbers go up to %llu",
					      (unsigned long long)k->max);
		*CONF_FIELD(c, k, int) = (int)x;
		return 0;

	case CONF_T_DURATION:
	case CONF_T_SIZE:
		if (k->type == CONF_T_DURATION)
			rc = conf_parse_duration(v, &x, why, whylen);
		else
			rc = conf_value_parse_size(v, &x, why, whylen);
		if (rc)
			return rc;
		if (x == 0 && k->zero) {
			*CONF_FIELD(c, k, uint64_t) = 0;
			return 0;
		}
		if (x < k->min)
			return conf_value_why(why, whylen, -ERANGE, "too small");
		if (x > k->max)
			return conf_value_why(why, whylen, -ERANGE, "too large");
		*CONF_FIELD(c, k, uint64_t) = x;
		return 0;

	case CONF_T_BOOL:
		if (conf_value_parse_bool(v, CONF_FIELD(c, k, bool)))
			return conf_value_why(why, whylen, -EINVAL, "not a yes/no value");
		return 0;

	case CONF_T_PATH:
		if (strlen(v) >= k->size)
			return conf_value_why(why, whylen, -ENAMETOOLONG, "path is too long");
		if (strchr(v, '\n'))
			return conf_value_why(why, whylen, -EINVAL,
					      "a path cannot contain a newline");
		snprintf(CONF_FIELD(c, k, char), k->size, "%s", v);
		return 0;

	case CONF_T_UNIT:
		if (!strcasecmp(v, "ns"))
			*CONF_FIELD(c, k, enum conf_unit) = CONF_UNIT_NS;
		else if (!strcasecmp(v, "us"))
			*CONF_FIELD(c, k, enum conf_unit) = CONF_UNIT_US;
		else if (!strcasecmp(v, "cycles"))
			*CONF_FIELD(c, k, enum conf_unit) = CONF_UNIT_CYCLES;
		else
			return conf_value_why(why, whylen, -EINVAL, "unknown unit");
		return 0;

	case CONF_T_PERCENTILES:
		return conf_value_parse_percentiles(v, CONF_FIELD(c, k, struct conf_percentiles),
						    why, whylen);

	case CONF_T_BUCKETS:
		return conf_value_parse_buckets(v, k->min, k->max,
						CONF_FIELD(c, k, struct conf_buckets),
						why, whylen);
	}
	return conf_value_why(why, whylen, -EINVAL, "unsupported key");
}

/* Number of elements of a list key (percentiles, buckets); 0 otherwise. */
unsigned conf_keys_list_length(const struct conf_keydef *k, const struct pm_config *c)
{
	if (k->type == CONF_T_PERCENTILES)
		return CONF_CFIELD(c, k, struct conf_percentiles)->n;
	if (k->type == CONF_T_BUCKETS)
		return CONF_CFIELD(c, k, struct conf_buckets)->n;
	return 0;
}

void conf_keys_format_element(const struct conf_keydef *k, const struct pm_config *c,
			      unsigned i, char *buf, size_t n)
{
	buf[0] = '\0';
	if (k->type == CONF_T_PERCENTILES)
		conf_value_format_shortest(CONF_CFIELD(c, k, struct conf_percentiles)->p[i],
					   buf, n);
	else if (k->type == CONF_T_BUCKETS)
		conf_format_duration(CONF_CFIELD(c, k, struct conf_buckets)->le_ns[i], buf, n);
}

/* Canonical text of a key's value, as conf_print() writes it. */
void conf_keys_format(const struct conf_keydef *k, const struct pm_config *c,
		      char *buf, size_t n)
{
	size_t len = 0;
	unsigned i;

	buf[0] = '\0';
	switch (k->type) {
	case CONF_T_NAME:
	case CONF_T_GROUP:
	case CONF_T_PATH:
		snprintf(buf, n, "%s", CONF_CFIELD(c, k, char));
		break;
	case CONF_T_COUNT:
	case CONF_T_POW2:
		snprintf(buf, n, "%u", *CONF_CFIELD(c, k, uint32_t));
		break;
	case CONF_T_MODE:
		snprintf(buf, n, "%04o", (unsigned)*CONF_CFIELD(c, k, mode_t));
		break;
	case CONF_T_CPU:
		if (*CONF_CFIELD(c, k, int) < 0)
			snprintf(buf, n, "none");
		else
			snprintf(buf, n, "%d", *CONF_CFIELD(c, k, int));
		break;
	case CONF_T_DURATION:
		conf_format_duration(*CONF_CFIELD(c, k, uint64_t), buf, n);
		break;
	case CONF_T_SIZE:
		conf_value_format_size(*CONF_CFIELD(c, k, uint64_t), buf, n);
		break;
	case CONF_T_BOOL:
		snprintf(buf, n, "%s", *CONF_CFIELD(c, k, bool) ? "yes" : "no");
		break;
	case CONF_T_UNIT:
		snprintf(buf, n, "%s", conf_unit_name(*CONF_CFIELD(c, k, enum conf_unit)));
		break;
	case CONF_T_PERCENTILES:
	case CONF_T_BUCKETS:
		for (i = 0; i < conf_keys_list_length(k, c) && len + 3 < n; i++) {
			if (i) {
				memcpy(buf + len, ", ", 3);
				len += 2;
			}
			conf_keys_format_element(k, c, i, buf + len, n - len);
			len += strlen(buf + len);
		}
		break;
	}
}

/* ================================================== */
/* Problem reports */

const char *conf_keys_shown(const char *v)
{
	return v[0] ? v : "\"\"";
}

/* "FILE:LINE", "command line" or "built-in default" for key k of c. */
void conf_keys_origin_text(const struct pm_config *c, const struct conf_origin *o,
			   char *buf, size_t n)
{
	switch (o->source) {
	case CONF_SRC_FILE:
		snprintf(buf, n, "%s:%u", c->config_path, o->line);
		break;
	case CONF_SRC_CMDLINE:
		snprintf(buf, n, "command line%s%s%s", o->detail ? " (" : "",
			 o->detail ? o->detail : "", o->detail ? ")" : "");
		break;
	default:
		snprintf(buf, n, "default%s%s%s", o->detail ? " (" : "",
			 o->detail ? o->detail : "", o->detail ? ")" : "");
		break;
	}
}

/*
 * One problem with key k, worded for where the value came from:
 *   FILE:LINE: [section] key = value: what is wrong; allowed: ...
 *   command line: --option value: what is wrong; allowed: ...
 */
void conf_keys_format_problem(char *buf, size_t n, const char *file, unsigned line,
			      const char *opt, const struct conf_keydef *k,
			      const char *value, const char *why)
{
	char abuf[256];
	const char *allowed = allowed_text(k, abuf, sizeof(abuf));

	if (opt)
		snprintf(buf, n, "command line: %s %s: %s; allowed: %s",
			 opt, conf_keys_shown(value), why, allowed);
	else if (file)
		snprintf(buf, n, "%s:%u: [%s] %s = %s: %s; allowed: %s", file, line,
			 k->section, k->name, conf_keys_shown(value), why, allowed);
	else
		snprintf(buf, n, "built-in default: [%s] %s = %s: %s; allowed: %s",
			 k->section, k->name, conf_keys_shown(value), why, allowed);
}

void conf_keys_add_problem(struct conf_msgs *errs, const char *file, unsigned line,
			   const char *opt, const struct conf_keydef *k,
			   const char *value, const char *why)
{
	char buf[1024];

	conf_keys_format_problem(buf, sizeof(buf), file, line, opt, k, value, why);
	conf_msgs_add(errs, "%s", buf);
}

/* A problem found after merging: word it for the value's origin. */
void conf_keys_add_merged_problem(struct conf_msgs *errs, const struct pm_config *c,
				  enum conf_key ki, const char *why)
{
	const struct conf_origin *o = &c->origin[ki];
	char value[CONF_PATH_MAX];

	conf_keys_format(&conf_keys[ki], c, value, sizeof(value));
	conf_keys_add_problem(errs, o->source == CONF_SRC_FILE ? c->config_path : NULL,
			      o->line, o->source == CONF_SRC_CMDLINE ? o->detail : NULL,
			      &conf_keys[ki], value, why);
}
