/*
 * conf_keys.c - perfmond.conf(5)'s keys, the bottom of the configuration:
 * each key's value parsed into its field (numbers through units.h), written
 * back as canonical text, and reported with where it came from and what
 * the key allows.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <sched.h>  /* CPU_SETSIZE, in CONF_KEYS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <perfmon/segment.h>

#include "conf_keys.h"
#include "outliers.h"

static int conf_check_name(const char *name, char *why, size_t whylen)
{
	size_t n = strlen(name), at;
	int e = perfmon__shm_name_check(name, &at);   /* the one rule */

	if (e == 0)
		return 0;
	if (n == 0)
		return units_why(why, whylen, -EINVAL, "name is empty");
	if (e == -ENAMETOOLONG)
		return units_why(why, whylen, e, "name is %zu characters long", n);
	if (name[0] == '.')
		return units_why(why, whylen, -EINVAL, "name starts with '.'");
	if (at + 5 == n && !strcmp(name + at, ".meta"))
		return units_why(why, whylen, -EINVAL, "name ends in '.meta' (the control "
				 "block of '%.*s')", (int)at, name);
	return units_why(why, whylen, -EINVAL, "character %zu is not allowed in a name",
			 at + 1);
}

static int conf_value_check_group_syntax(const char *g, char *why, size_t whylen)
{
	size_t n = strlen(g);

	if (n > CONF_GROUP_MAX)
		return units_why(why, whylen, -ENAMETOOLONG,
				 "group name is %zu characters long", n);
	for (; *g; g++) {
		unsigned char ch = (unsigned char)*g;

		if (isspace(ch) || iscntrl(ch) || strchr(":,/", ch))
			return units_why(why, whylen, -EINVAL, "a group name cannot contain '%c'",
					 isprint(ch) ? ch : '?');
	}
	return 0;
}

int conf_resolve_group(const char *group, gid_t *ret_gid)
{
	struct group *gr;
	uint64_t v;

	if (!group[0]) {
		*ret_gid = (gid_t)-1;
		return 0;
	}
	if (conf_value_check_group_syntax(group, NULL, 0))
		return -EINVAL;
	/* Only the main thread looks groups up by name: getgrnam()'s static
	 * result is safe here. */
	errno = 0;
	if ((gr = getgrnam(group))) {
		*ret_gid = gr->gr_gid;
		return 0;
	}
	/* getgrnam(3) allows these for "not found". */
	if (errno && errno != ENOENT && errno != ESRCH && errno != EBADF && errno != EPERM)
		return -errno;
	/* A number is a gid, whether or not the database names it. */
	if (group[strspn(group, "0123456789")])
		return -ENOENT;
	if (units_parse(group, &units_count, &v, NULL, 0) || v >= (gid_t)-1)
		return -EINVAL;
	*ret_gid = (gid_t)v;
	return 0;
}

#define KEYDEF_(id, sec, nm, ty, f, mn, mx, z, def, lv) [CONF_##id] = { #sec, #nm, \
	CONF_T_##ty, offsetof(struct pm_config, f), sizeof(((struct pm_config *)0)->f), \
	mn, mx, z, def, lv },
const struct conf_keydef conf_keys[CONF_KEY_COUNT] = { CONF_KEYS(KEYDEF_) };

#define STR_(x) #x
#define STR(x) STR_(x)

/* What each type allows, for the end of a problem message: "%s to %s" is
 * the key's range as the type writes it; the list limits are the parsers'. */
static const char *const allowed_text[] = {
	[CONF_T_NAME] = "1 to 200 characters of A-Z a-z 0-9 . _ -, not starting with '.' nor "
		"ending in '.meta'",
	[CONF_T_COUNT] = "a whole number from %s to %s (K, M, G multiply by 1024)",
	[CONF_T_POW2] = "a power of two from %s to %s, for example 65536 or 64K",
	[CONF_T_MODE] = "octal permission bits from 0600 to 0777 that keep the owner's read "
		"and write, for example 0660",
	[CONF_T_GROUP] = "the name or number of an existing group; empty: the daemon's own group",
	[CONF_T_CPU] = "'none' or the number of a CPU this process may run on",
	[CONF_T_DURATION] = "a duration from %s to %s with a unit " UNITS_DURATION_NAMES,
	[CONF_T_SIZE] = "a size from %s to %s, in bytes or with K, M, G, T (powers of 1024)",
	[CONF_T_BOOL] = "yes or no (also true/false, on/off, 1/0)",
	[CONF_T_PATH] = "a file path; empty: no file",
	[CONF_T_UNIT] = "ns, us or cycles",
	[CONF_T_PERCENTILES] = "up to " STR(CONF_MAX_PERCENTILES) " distinct numbers from 0 to "
		"100 with at most " STR(UNITS_PERCENTILE_DECIMALS) " decimal places, "
		"comma-separated, for example 50, 90, 99, 99.9",
	[CONF_T_BUCKETS] = "1 to " STR(CONF_MAX_BUCKETS) " durations from %s to %s, strictly "
		"increasing, comma-separated, for example 100ns, 1us, 10us, 1ms",
};

/* How key `k`'s type writes a number (a bucket bound is a duration). */
static const struct units_scale *scale_of(const struct conf_keydef *k)
{
	return k->type == CONF_T_DURATION || k->type == CONF_T_BUCKETS ? &units_duration :
	       k->type == CONF_T_SIZE ? &units_size : &units_count;
}

/* Counts, powers of two, modes, CPUs, durations and sizes: a number in
 * range, stored in a field of 32 or 64 bits. */
static int parse_number(const struct conf_keydef *k, const char *v, void *field,
			char *why, size_t whylen)
{
	bool wide = k->size == sizeof(uint64_t);   /* durations and sizes */
	char *end;
	uint64_t x;
	int rc = 0;

	if (k->type == CONF_T_CPU && !strcasecmp(v, "none")) {
		*(int *)field = -1;
		return 0;
	}
	if (k->type == CONF_T_CPU && (!isdigit((unsigned char)*v) || v[strspn(v, "0123456789")]))
		return units_why(why, whylen, -EINVAL, "not 'none' or a CPU number");
	if (k->type == CONF_T_MODE) {
		x = strtoul(v, &end, 8);
		if (!isdigit((unsigned char)*v) || *end)
			return units_why(why, whylen, -EINVAL, "not an octal number");
		if (x <= 0777 && (x & 0600) != 0600)
			return units_why(why, whylen, -ERANGE, "the owner must keep read and "
					 "write permission, or perfmond cannot reopen its own "
					 "segments");
	} else {
		rc = units_parse(v, scale_of(k), &x, why, whylen);
	}
	if (rc)
		return rc;
	if (k->type == CONF_T_CPU && x > k->max)
		return units_why(why, whylen, -ERANGE, "CPU numbers go up to %llu",
				 (unsigned long long)k->max);
	if ((x < k->min && !(x == 0 && k->zero)) || x > k->max)
		return units_why(why, whylen, -ERANGE, "%s", !wide ? "out of range" :
				 x > k->max ? "too large" : "too small");
	if (k->type == CONF_T_POW2 && (x & (x - 1))) {
		/* In range, so x > 0 and the next power fits. */
		unsigned long long below = UINT64_C(1) << (63 - __builtin_clzll(x));

		return units_why(why, whylen, -EINVAL, "must be a power of two (the "
				 "nearest are %llu and %llu)", below, below * 2);
	}
	if (wide)
		*(uint64_t *)field = x;
	else                    /* unsigned, int or mode_t: all 32 bits */
		*(uint32_t *)field = (uint32_t)x;
	return 0;
}

/* percentiles or buckets: comma-separated, each element checked against
 * those before it; a blank list has none. */
static int parse_list(const struct conf_keydef *k, const char *v, void *field,
		      char *why, size_t whylen)
{
	bool pct = k->type == CONF_T_PERCENTILES;
	unsigned n = 0, max = pct ? CONF_MAX_PERCENTILES : CONF_MAX_BUCKETS;
	struct conf_percentiles pl = { 0 };
	struct conf_buckets bl = { 0 };
	const char *el = v[strspn(v, " \t\n\v\f\r")] ? v : NULL, *end;
	char tok[64], sub[128];
	size_t len;
	int rc;

	for (; el; el = *end ? end + 1 : NULL, n++) {
		end = el + strcspn(el, ",");
		el += strspn(el, " \t\n\v\f\r");
		for (len = (size_t)(end - el); len && isspace((unsigned char)el[len - 1]); len--)
			;
		snprintf(tok, sizeof(tok), "%.*s", (int)len, el);
		if (!len)
			return units_why(why, whylen, -EINVAL, "element %u of the list is empty",
					 n + 1);
		if (n == max)
			return units_why(why, whylen, -ERANGE, "more than %u %s", max,
					 pct ? "percentiles" : "bounds");
		if (len >= sizeof(tok))
			return units_why(why, whylen, -EINVAL, "'%s...' is too long", tok);
		if (pct && (rc = units_parse_percentile(tok, &pl.p[n], why, whylen)))
			return rc;
		for (unsigned i = 0; pct && i < n; i++) {
			if (pl.p[i] == pl.p[n])
				return units_why(why, whylen, -EINVAL, "%s is listed twice", tok);
		}
		if (pct)
			continue;
		if (units_parse(tok, &units_duration, &bl.le_ns[n], sub, sizeof(sub)))
			return units_why(why, whylen, -EINVAL, "'%s': %s", tok, sub);
		if (bl.le_ns[n] < k->min || bl.le_ns[n] > k->max)
			return units_why(why, whylen, -ERANGE, "'%s' is out of range", tok);
		if (n && bl.le_ns[n] <= bl.le_ns[n - 1])
			return units_why(why, whylen, -EINVAL,
					 "'%s' is not larger than the bound before it", tok);
	}
	if (!pct && !n)
		return units_why(why, whylen, -EINVAL, "at least one bound is needed");
	pl.n = bl.n = n;
	memcpy(field, pct ? (const void *)&pl : (const void *)&bl, k->size);
	return 0;
}

/* Parse `v` for key `ki` into its field of `c`: 0, or a negative errno with
 * the reason in `why` and the field untouched. */
static int parse_key(int ki, const char *v, struct pm_config *c, char *why, size_t whylen)
{
	static const char *const bools[] = { "no", "yes", "false", "true", "off", "on", "0", "1" };
	const struct conf_keydef *k = &conf_keys[ki];
	void *field = (char *)c + k->off;
	int rc = 0;

	switch (k->type) {
	case CONF_T_NAME:
		rc = conf_check_name(v, why, whylen);
		break;
	case CONF_T_GROUP:
		rc = conf_value_check_group_syntax(v, why, whylen);
		break;
	case CONF_T_PATH:
		if (strlen(v) >= k->size)
			rc = units_why(why, whylen, -ENAMETOOLONG, "path is too long");
		else if (strchr(v, '\n'))
			rc = units_why(why, whylen, -EINVAL, "a path cannot contain a newline");
		break;
	case CONF_T_BOOL:
		for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
			if (!strcasecmp(v, bools[i])) {
				*(bool *)field = i & 1;
				return 0;
			}
		}
		return units_why(why, whylen, -EINVAL, "not a yes/no value");
	case CONF_T_UNIT:
		for (int u = REPORT_UNIT_NS; u <= REPORT_UNIT_CYCLES; u++) {
			if (!strcasecmp(v, report_unit_name(u))) {
				*(enum report_unit *)field = u;
				return 0;
			}
		}
		return units_why(why, whylen, -EINVAL, "unknown unit");
	case CONF_T_PERCENTILES:
	case CONF_T_BUCKETS:
		return parse_list(k, v, field, why, whylen);
	default:
		return parse_number(k, v, field, why, whylen);
	}
	if (!rc)
		snprintf(field, k->size, "%s", v);
	return rc;
}

void conf_keys_format(int ki, const struct pm_config *c, char *buf, size_t n)
{
	const struct conf_keydef *k = &conf_keys[ki];
	const void *field = (const char *)c + k->off;
	const struct conf_percentiles *pl = field;
	const struct conf_buckets *bl = field;
	bool pct = k->type == CONF_T_PERCENTILES;
	size_t len = 0;

	buf[0] = '\0';
	switch (k->type) {
	case CONF_T_NAME:
	case CONF_T_GROUP:
	case CONF_T_PATH:
		snprintf(buf, n, "%s", (const char *)field);
		return;
	case CONF_T_MODE:
		snprintf(buf, n, "%04o", (unsigned)*(const mode_t *)field);
		return;
	case CONF_T_CPU:
		snprintf(buf, n, *(const int *)field < 0 ? "none" : "%d", *(const int *)field);
		return;
	case CONF_T_BOOL:
		snprintf(buf, n, "%s", *(const bool *)field ? "yes" : "no");
		return;
	case CONF_T_UNIT:
		snprintf(buf, n, "%s", report_unit_name(*(const enum report_unit *)field));
		return;
	case CONF_T_PERCENTILES:
	case CONF_T_BUCKETS:
		for (unsigned i = 0; i < (pct ? pl->n : bl->n) && len + 3 < n; i++) {
			len += (size_t)snprintf(buf + len, n - len, i ? ", " : "");
			if (pct)        /* loaded, so finite */
				units_format_percentile(pl->p[i], buf + len, n - len);
			else
				units_format(bl->le_ns[i], &units_duration, buf + len, n - len);
			len += strlen(buf + len);
		}
		return;
	default:
		units_format(k->size == sizeof(uint64_t) ? *(const uint64_t *)field :
			     *(const uint32_t *)field, scale_of(k), buf, n);
	}
}

/* A line about key `ki` worded for where its value came from, `o` (a
 * CONF_SRC_FILE origin is a line of c->config_path). */
static void report(struct msgs *m, const struct pm_config *c, const struct conf_origin *o,
		   int ki, const char *value, const char *why, bool problem)
{
	const struct conf_keydef *k = &conf_keys[ki];
	char lo[32], hi[32], allowed[320] = "", where[CONF_PATH_MAX + 64];
	int z;

	if (problem) {
		units_format(k->min, scale_of(k), lo, sizeof(lo));
		units_format(k->max, scale_of(k), hi, sizeof(hi));
		z = snprintf(allowed, sizeof(allowed), "; allowed: %s%s%s", k->zero ? "0 (" : "",
			     k->zero ? k->zero : "", k->zero ? ") or " : "");
		snprintf(allowed + z, sizeof(allowed) - (size_t)z, allowed_text[k->type], lo, hi);
	}
	if (o->source == CONF_SRC_CMDLINE)
		snprintf(where, sizeof(where), "command line: %s", o->detail);
	else if (o->source == CONF_SRC_FILE)
		snprintf(where, sizeof(where), "%s:%u: [%s] %s =", c->config_path, o->line,
			 k->section, k->name);
	else
		snprintf(where, sizeof(where), "built-in default: [%s] %s =", k->section, k->name);
	msgs_add(m, "%s %s: %s%s", where, CONF_SHOWN(value), why, allowed);
}

int conf_keys_set(struct pm_config *c, int ki, const char *v, const struct conf_origin *o,
		  struct msgs *m)
{
	char why[512];
	int rc = parse_key(ki, v, c, why, sizeof(why));

	if (rc)
		report(m, c, o, ki, v, why, true);
	else
		c->origin[ki] = *o;
	return rc;
}

void conf_keys_report(struct msgs *m, const struct pm_config *c, int ki, const char *why,
		      bool problem)
{
	char value[CONF_VALUE_MAX];

	conf_keys_format(ki, c, value, sizeof(value));
	report(m, c, &c->origin[ki], ki, value, why, problem);
}

int conf_check_option(enum conf_key k, const char *opt, const char *value,
		      char *err, size_t errlen)
{
	struct conf_origin o = { CONF_SRC_CMDLINE, 0, opt };
	struct pm_config c;     /* scratch: only the key's own field and origin are written */
	struct msgs m;
	int rc;

	msgs_init(&m);
	rc = conf_keys_set(&c, k, value, &o, &m);
	snprintf(err, errlen, "%.*s", (int)strcspn(m.text, "\n"), m.text);
	return rc;
}
