/*
 * conf_keys.c - the table of perfmond.conf(5) keys, built from CONF_KEYS,
 * and by each key's type what its text means, how its value is written
 * and what it allows.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf_keys.h"
#include "outliers.h"

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
	[CONF_T_DURATION] = "a duration from %s to %s with a unit " CONF_DURATION_UNITS,
	[CONF_T_SIZE] = "a size from %s to %s, in bytes or with K, M, G, T (powers of 1024)",
	[CONF_T_BOOL] = "yes or no (also true/false, on/off, 1/0)",
	[CONF_T_PATH] = "a file path; empty: no file",
	[CONF_T_UNIT] = "ns, us or cycles",
	[CONF_T_PERCENTILES] = "up to " STR(CONF_MAX_PERCENTILES) " distinct numbers from 0 to "
		"100 with at most " STR(CONF_PERCENTILE_DECIMALS) " decimal places, "
		"comma-separated, for example 50, 90, 99, 99.9",
	[CONF_T_BUCKETS] = "1 to " STR(CONF_MAX_BUCKETS) " durations from %s to %s, strictly "
		"increasing, comma-separated, for example 100ns, 1us, 10us, 1ms",
};

/* A count, duration or size (or a bucket bound) as key `k`'s type writes it. */
static void format_number(const struct conf_keydef *k, uint64_t x, char *buf, size_t n)
{
	if (k->type == CONF_T_DURATION || k->type == CONF_T_BUCKETS)
		conf_format_duration(x, buf, n);
	else if (k->type == CONF_T_SIZE)
		conf_value_format_size(x, buf, n);
	else
		snprintf(buf, n, "%llu", (unsigned long long)x);
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
		return conf_value_why(why, whylen, -EINVAL, "not 'none' or a CPU number");
	if (k->type == CONF_T_MODE) {
		x = strtoul(v, &end, 8);
		if (!isdigit((unsigned char)*v) || *end)
			return conf_value_why(why, whylen, -EINVAL, "not an octal number");
		if (x <= 0777 && (x & 0600) != 0600)
			return conf_value_why(why, whylen, -ERANGE, "the owner must keep read and "
					      "write permission, or perfmond cannot reopen its own "
					      "segments");
	} else {
		rc = k->type == CONF_T_DURATION ? conf_parse_duration(v, &x, why, whylen) :
		     k->type == CONF_T_SIZE ? conf_value_parse_size(v, &x, why, whylen) :
		     conf_value_parse_count(v, &x, why, whylen);
	}
	if (rc)
		return rc;
	if (k->type == CONF_T_CPU && x > k->max)
		return conf_value_why(why, whylen, -ERANGE, "CPU numbers go up to %llu",
				      (unsigned long long)k->max);
	if ((x < k->min && !(x == 0 && k->zero)) || x > k->max)
		return conf_value_why(why, whylen, -ERANGE, "%s", !wide ? "out of range" :
				      x > k->max ? "too large" : "too small");
	if (k->type == CONF_T_POW2 && (x & (x - 1))) {
		/* In range, so x > 0 and the next power fits. */
		unsigned long long below = UINT64_C(1) << (63 - __builtin_clzll(x));

		return conf_value_why(why, whylen, -EINVAL, "must be a power of two (the "
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
			return conf_value_why(why, whylen, -EINVAL, "element %u of the list is empty",
					      n + 1);
		if (n == max)
			return conf_value_why(why, whylen, -ERANGE, "more than %u %s", max,
					      pct ? "percentiles" : "bounds");
		if (len >= sizeof(tok))
			return conf_value_why(why, whylen, -EINVAL, "'%s...' is too long", tok);
		if (pct && (rc = conf_value_parse_percentile(tok, &pl.p[n], why, whylen)))
			return rc;
		for (unsigned i = 0; pct && i < n; i++) {
			if (pl.p[i] == pl.p[n])
				return conf_value_why(why, whylen, -EINVAL, "%s is listed twice", tok);
		}
		if (pct)
			continue;
		if (conf_parse_duration(tok, &bl.le_ns[n], sub, sizeof(sub)))
			return conf_value_why(why, whylen, -EINVAL, "'%s': %s", tok, sub);
		if (bl.le_ns[n] < k->min || bl.le_ns[n] > k->max)
			return conf_value_why(why, whylen, -ERANGE, "'%s' is out of range", tok);
		if (n && bl.le_ns[n] <= bl.le_ns[n - 1])
			return conf_value_why(why, whylen, -EINVAL,
					      "'%s' is not larger than the bound before it", tok);
	}
	if (!pct && !n)
		return conf_value_why(why, whylen, -EINVAL, "at least one bound is needed");
	pl.n = bl.n = n;
	memcpy(field, pct ? (const void *)&pl : (const void *)&bl, k->size);
	return 0;
}

int conf_keys_parse(int ki, const char *v, struct pm_config *c, char *why, size_t whylen)
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
			rc = conf_value_why(why, whylen, -ENAMETOOLONG, "path is too long");
		else if (strchr(v, '\n'))
			rc = conf_value_why(why, whylen, -EINVAL, "a path cannot contain a newline");
		break;
	case CONF_T_BOOL:
		for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
			if (!strcasecmp(v, bools[i])) {
				*(bool *)field = i & 1;
				return 0;
			}
		}
		return conf_value_why(why, whylen, -EINVAL, "not a yes/no value");
	case CONF_T_UNIT:
		for (int u = REPORT_UNIT_NS; u <= REPORT_UNIT_CYCLES; u++) {
			if (!strcasecmp(v, report_unit_name(u))) {
				*(enum report_unit *)field = u;
				return 0;
			}
		}
		return conf_value_why(why, whylen, -EINVAL, "unknown unit");
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
			if (pct)
				conf_value_format_percentile(pl->p[i], buf + len, n - len);
			else
				conf_format_duration(bl->le_ns[i], buf + len, n - len);
			len += strlen(buf + len);
		}
		return;
	default:
		format_number(k, k->size == sizeof(uint64_t) ? *(const uint64_t *)field :
			      *(const uint32_t *)field, buf, n);
	}
}

void conf_keys_report(struct conf_msgs *m, const char *file, const struct conf_origin *o,
		      int ki, const char *value, const char *why, bool problem)
{
	const struct conf_keydef *k = &conf_keys[ki];
	char lo[32], hi[32], allowed[320] = "", where[CONF_PATH_MAX + 64];
	int z;

	if (problem) {
		format_number(k, k->min, lo, sizeof(lo));
		format_number(k, k->max, hi, sizeof(hi));
		z = snprintf(allowed, sizeof(allowed), "; allowed: %s%s%s", k->zero ? "0 (" : "",
			     k->zero ? k->zero : "", k->zero ? ") or " : "");
		snprintf(allowed + z, sizeof(allowed) - (size_t)z, allowed_text[k->type], lo, hi);
	}
	if (o->source == CONF_SRC_CMDLINE)
		snprintf(where, sizeof(where), "command line: %s", o->detail);
	else if (o->source == CONF_SRC_FILE)
		snprintf(where, sizeof(where), "%s:%u: [%s] %s =", file, o->line, k->section,
			 k->name);
	else
		snprintf(where, sizeof(where), "built-in default: [%s] %s =", k->section, k->name);
	conf_msgs_add(m, "%s %s: %s%s", where, CONF_SHOWN(value), why, allowed);
}

int conf_check_option(enum conf_key k, const char *opt, const char *value,
		      char *err, size_t errlen)
{
	struct conf_origin o = { CONF_SRC_CMDLINE, 0, opt };
	struct pm_config c;     /* scratch: only the key's own field is written */
	struct conf_msgs m;
	char why[512];
	int rc = conf_keys_parse(k, value, &c, why, sizeof(why));

	conf_msgs_init(&m);
	if (rc)
		conf_keys_report(&m, NULL, &o, k, value, why, true);
	snprintf(err, errlen, "%.*s", (int)strcspn(m.text, "\n"), m.text);
	return rc;
}
