/*
 * conf_keys.c - the table of perfmond.conf(5) keys, and by each key's type
 * what its text means; the message lists.  Flow: see conf_keys.h.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf_keys.h"
#include "outliers.h"

void conf_msgs_init(struct conf_msgs *m)
{
	m->count = m->dropped = 0;
	m->len = 0;
	m->text[0] = '\0';
}

void conf_msgs_add(struct conf_msgs *m, const char *fmt, ...)
{
	size_t room = sizeof(m->text) - m->len;
	va_list ap;
	int n;

	m->count++;
	va_start(ap, fmt);
	n = vsnprintf(m->text + m->len, room, fmt, ap);
	va_end(ap);
	/* Keep whole lines only: a cut-off message would mislead. */
	if (n < 0 || (size_t)n + 2 > room) {
		m->text[m->len] = '\0';
		m->dropped++;
		return;
	}
	m->len += (size_t)n;
	m->text[m->len++] = '\n';
	m->text[m->len] = '\0';
}

void conf_msgs_print(FILE *f, const struct conf_msgs *m, const char *prefix)
{
	const char *s, *nl;

	for (s = m->text; (nl = strchr(s, '\n')); s = nl + 1)
		fprintf(f, "%s%.*s\n", prefix ? prefix : "", (int)(nl - s), s);
	if (m->dropped)
		fprintf(f, "%s(%u more not shown)\n", prefix ? prefix : "", m->dropped);
}

#define KEY(sec, nm, ty, f, mn, mx, z, def, lv) { sec, nm, CONF_T_##ty, \
	offsetof(struct pm_config, f), sizeof(((struct pm_config *)0)->f), mn, mx, z, def, lv }

/*
 * The ranges stop typos rather than second-guess tuning: 2^30 ring slots
 * is already 16 GiB of shared memory, a poll interval under 1us is a busy
 * loop, and a rotation more often than every 100ms would rotate on every
 * interval.  Live keys are those the daemon can re-apply in place (re-pin,
 * reopen, retime); the rest fix the segment geometry, preallocated tables
 * or the CSV header, and the buckets are counted by the drain thread.
 */
const struct conf_keydef conf_keys[CONF_KEY_COUNT] = {
	[CONF_SHM_NAME] = KEY("shm", "name", NAME, shm_name, 0, 0, NULL, NULL, false),
	[CONF_SHM_CAPACITY] = KEY("shm", "capacity", POW2, capacity, 64, 1u << 30, NULL,
		"65536", false),
	[CONF_SHM_MAX_NAMES] = KEY("shm", "max_names", COUNT, max_names, 1, 65536, NULL,
		"512", false),
	[CONF_SHM_MODE] = KEY("shm", "mode", MODE, mode, 0, 0, NULL, "0660", false),
	[CONF_SHM_GROUP] = KEY("shm", "group", GROUP, group, 0, 0, NULL, "", false),
	[CONF_COLLECTOR_CPU] = KEY("collector", "cpu", CPU, cpu, 0, CPU_SETSIZE - 1, NULL,
		"none", true),
	[CONF_COLLECTOR_POLL_INTERVAL] = KEY("collector", "poll_interval", DURATION,
		poll_interval_ns, CONF_NS_PER_US, CONF_NS_PER_S, NULL, "1ms", true),
	[CONF_COLLECTOR_FLUSH_INTERVAL] = KEY("collector", "flush_interval", DURATION,
		flush_interval_ns, CONF_NS_PER_MS, CONF_NS_PER_DAY, NULL, "1s", true),
	[CONF_COLLECTOR_STALLED_SAMPLE_TIMEOUT] = KEY("collector", "stalled_sample_timeout",
		DURATION, stalled_sample_timeout_ns, CONF_NS_PER_MS, CONF_NS_PER_H, NULL, "5s",
		true),
	[CONF_COLLECTOR_MAX_OPEN_SPANS] = KEY("collector", "max_open_spans", COUNT,
		max_open_spans, 1, 1u << 24, NULL, "4096", false),
	[CONF_COLLECTOR_MAX_STAGES] = KEY("collector", "max_stages", COUNT, max_stages,
		1, 1u << 20, NULL, "1024", false),
	[CONF_COLLECTOR_LOCK_MEMORY] = KEY("collector", "lock_memory", BOOL, lock_memory,
		0, 0, NULL, "no", false),
	[CONF_OUTPUT_CSV] = KEY("output", "csv", PATH, csv, 0, 0, NULL, NULL, true),
	[CONF_OUTPUT_SUMMARY] = KEY("output", "summary", PATH, summary, 0, 0, NULL, NULL, true),
	[CONF_OUTPUT_UNIT] = KEY("output", "unit", UNIT, unit, 0, 0, NULL, "ns", false),
	[CONF_OUTPUT_PERCENTILES] = KEY("output", "percentiles", PERCENTILES, percentiles,
		0, 100, NULL, "50, 90, 99, 99.9", false),
	[CONF_OUTPUT_SUBTRACT_OVERHEAD] = KEY("output", "subtract_overhead", BOOL,
		subtract_overhead, 0, 0, NULL, "no", false),
	[CONF_OUTPUT_CSV_FLUSH_INTERVAL] = KEY("output", "csv_flush_interval", DURATION,
		csv_flush_interval_ns, CONF_NS_PER_MS, CONF_NS_PER_DAY, "push every interval",
		"0", true),
	[CONF_OUTPUT_ROTATE_SIZE] = KEY("output", "rotate_size", SIZE, rotate_size,
		CONF_KIB, CONF_TIB, "never", "0", true),
	[CONF_OUTPUT_ROTATE_INTERVAL] = KEY("output", "rotate_interval", DURATION,
		rotate_interval_ns, 100 * CONF_NS_PER_MS, 366 * CONF_NS_PER_DAY, "never", "0",
		true),
	[CONF_OUTPUT_ROTATE_KEEP] = KEY("output", "rotate_keep", COUNT, rotate_keep,
		0, 10000, NULL, "10", true),
	[CONF_OUTPUT_OUTLIERS] = KEY("output", "outliers", COUNT, outliers, 0, OUTLIERS_MAX,
		NULL, "0", false),
	[CONF_PROMETHEUS_TEXTFILE] = KEY("prometheus", "textfile", PATH, prom_textfile,
		0, 0, NULL, "", true),
	[CONF_PROMETHEUS_BUCKETS] = KEY("prometheus", "buckets", BUCKETS, buckets,
		1, CONF_NS_PER_DAY, NULL, NULL, false),
};

int conf_keys_find(const char *section, const char *name)
{
	for (int i = 0; i < CONF_KEY_COUNT; i++) {
		if (!strcmp(conf_keys[i].section, section) && !strcmp(conf_keys[i].name, name))
			return i;
	}
	return -1;
}

#define STR_(x) #x
#define STR(x) STR_(x)

/* What each type allows, for the end of a problem message: "%s to %s" is
 * the key's range as the type writes it; the list limits are the parsers'. */
static const char *const allowed_text[] = {
	[CONF_T_NAME] = CONF_NAME_RULE,
	[CONF_T_COUNT] = "a whole number from %s to %s (K, M, G multiply by 1024)",
	[CONF_T_POW2] = "a power of two from %s to %s, for example 65536 or 64K",
	[CONF_T_MODE] = "octal permission bits from 0600 to 0777 that keep the owner's read "
		"and write, for example 0660",
	[CONF_T_GROUP] = "the name or number of an existing group; empty: the daemon's own group",
	[CONF_T_CPU] = "'none' or the number of a CPU this process may run on",
	[CONF_T_DURATION] = "a duration from %s to %s with a unit (ns, us, ms, s, m, h, d)",
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

static int parse_mode(const char *s, mode_t *ret, char *why, size_t whylen)
{
	unsigned x = 0;

	if (!*s)
		return conf_value_why(why, whylen, -EINVAL, "empty mode");
	for (; *s && x <= 07777; s++) {         /* past 07777 it is too large anyway */
		if (*s < '0' || *s > '7')
			return conf_value_why(why, whylen, -EINVAL, "not an octal number");
		x = x * 8 + (unsigned)(*s - '0');
	}
	if (x > 0777)
		return conf_value_why(why, whylen, -ERANGE,
				      "only permission bits (0777 and below) are allowed");
	if ((x & 0600) != 0600)
		return conf_value_why(why, whylen, -ERANGE, "the owner must keep read and write "
				      "permission, or perfmond cannot reopen its own segments");
	*ret = (mode_t)x;
	return 0;
}

/* Counts, powers of two, CPUs, durations and sizes: a number in range. */
static int parse_number(const struct conf_keydef *k, const char *v, void *field,
			char *why, size_t whylen)
{
	bool wide = k->type == CONF_T_DURATION || k->type == CONF_T_SIZE;
	uint64_t x;
	int rc;

	if (k->type == CONF_T_CPU && !strcasecmp(v, "none")) {
		*(int *)field = -1;
		return 0;
	}
	if (k->type == CONF_T_CPU && (!isdigit((unsigned char)*v) || v[strspn(v, "0123456789")]))
		return conf_value_why(why, whylen, -EINVAL, "not 'none' or a CPU number");
	rc = k->type == CONF_T_DURATION ? conf_parse_duration(v, &x, why, whylen) :
	     k->type == CONF_T_SIZE ? conf_value_parse_size(v, &x, why, whylen) :
	     conf_value_parse_count(v, &x, why, whylen);
	if (rc)
		return rc;
	if (k->type == CONF_T_CPU && x > k->max)
		return conf_value_why(why, whylen, -ERANGE, "CPU numbers go up to %llu",
				      (unsigned long long)k->max);
	if (wide && x < k->min && !(x == 0 && k->zero))
		return conf_value_why(why, whylen, -ERANGE, "too small");
	if (wide && x > k->max)
		return conf_value_why(why, whylen, -ERANGE, "too large");
	if (!wide && (x < k->min || x > k->max))
		return conf_value_why(why, whylen, -ERANGE, "out of range");
	if (k->type == CONF_T_POW2 && (x & (x - 1))) {
		/* In range, so x > 0 and the next power fits. */
		unsigned long long below = UINT64_C(1) << (63 - __builtin_clzll(x));

		return conf_value_why(why, whylen, -EINVAL, "must be a power of two (the "
				      "nearest are %llu and %llu)", below, below * 2);
	}
	if (wide)
		*(uint64_t *)field = x;
	else if (k->type == CONF_T_CPU)
		*(int *)field = (int)x;
	else
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
	uint64_t ns;
	size_t len;
	int rc;

	for (; el; el = *end ? end + 1 : NULL, n++) {
		end = el + strcspn(el, ",");
		while (el < end && isspace((unsigned char)*el))
			el++;
		for (len = (size_t)(end - el); len && isspace((unsigned char)el[len - 1]); len--)
			;
		if (!len)
			return conf_value_why(why, whylen, -EINVAL, "element %u of the list is empty",
					      n + 1);
		if (n == max)
			return conf_value_why(why, whylen, -ERANGE, "more than %u %s", max,
					      pct ? "percentiles" : "bounds");
		if (pct) {
			if ((rc = conf_value_parse_percentile(el, len, &pl.p[n], why, whylen)))
				return rc;
			for (unsigned i = 0; i < n; i++) {
				if (pl.p[i] == pl.p[n])
					return conf_value_why(why, whylen, -EINVAL, "%.*s is listed "
							      "twice", (int)len, el);
			}
			continue;
		}
		if (len >= sizeof(tok))
			return conf_value_why(why, whylen, -EINVAL, "element %u is too long", n + 1);
		snprintf(tok, sizeof(tok), "%.*s", (int)len, el);
		if (conf_parse_duration(tok, &ns, sub, sizeof(sub)))
			return conf_value_why(why, whylen, -EINVAL, "'%s': %s", tok, sub);
		if (ns < k->min || ns > k->max)
			return conf_value_why(why, whylen, -ERANGE, "'%s' is out of range", tok);
		if (n && ns <= bl.le_ns[n - 1])
			return conf_value_why(why, whylen, -EINVAL,
					      "'%s' is not larger than the bound before it", tok);
		bl.le_ns[n] = ns;
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
	case CONF_T_MODE:
		return parse_mode(v, field, why, whylen);
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
			if (i)
				len += (size_t)snprintf(buf + len, n - len, ", ");
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

bool conf_keys_same(int ki, const struct pm_config *a, const struct pm_config *b)
{
	const struct conf_keydef *k = &conf_keys[ki];
	const char *fa = (const char *)a + k->off, *fb = (const char *)b + k->off;
	const struct conf_percentiles *pa = (const void *)fa, *pb = (const void *)fb;
	const struct conf_buckets *ba = (const void *)fa, *bb = (const void *)fb;

	switch (k->type) {
	case CONF_T_NAME:
	case CONF_T_GROUP:
	case CONF_T_PATH:
		return !strcmp(fa, fb);         /* what lies past the end may differ */
	case CONF_T_PERCENTILES:
		return pa->n == pb->n && !memcmp(pa->p, pb->p, pa->n * sizeof(pa->p[0]));
	case CONF_T_BUCKETS:
		return ba->n == bb->n && !memcmp(ba->le_ns, bb->le_ns, ba->n * sizeof(ba->le_ns[0]));
	default:
		return !memcmp(fa, fb, k->size);
	}
}

static void problem(char *buf, size_t n, const char *file, const struct conf_origin *o,
		    int ki, const char *value, const char *why)
{
	const struct conf_keydef *k = &conf_keys[ki];
	char lo[32], hi[32], allowed[256];
	int z = k->zero ? snprintf(allowed, sizeof(allowed), "0 (%s) or ", k->zero) : 0;

	format_number(k, k->min, lo, sizeof(lo));
	format_number(k, k->max, hi, sizeof(hi));
	snprintf(allowed + z, sizeof(allowed) - (size_t)z, allowed_text[k->type], lo, hi);
	value = CONF_SHOWN(value);
	if (o->source == CONF_SRC_CMDLINE)
		snprintf(buf, n, "command line: %s %s: %s; allowed: %s", o->detail, value, why,
			 allowed);
	else if (o->source == CONF_SRC_FILE)
		snprintf(buf, n, "%s:%u: [%s] %s = %s: %s; allowed: %s", file, o->line,
			 k->section, k->name, value, why, allowed);
	else
		snprintf(buf, n, "built-in default: [%s] %s = %s: %s; allowed: %s", k->section,
			 k->name, value, why, allowed);
}

void conf_keys_add_problem(struct conf_msgs *errs, const char *file,
			   const struct conf_origin *o, int ki, const char *value,
			   const char *why)
{
	char buf[CONF_VALUE_MAX + 1024];

	problem(buf, sizeof(buf), file, o, ki, value, why);
	conf_msgs_add(errs, "%s", buf);
}

int conf_check_option(enum conf_key k, const char *opt, const char *value,
		      char *err, size_t errlen)
{
	struct conf_origin o = { CONF_SRC_CMDLINE, 0, opt };
	struct pm_config *c;
	char why[512];
	int rc;

	if (!(c = calloc(1, sizeof(*c)))) {
		snprintf(err, errlen, "command line: %s: out of memory", opt);
		return -ENOMEM;
	}
	if ((rc = conf_keys_parse(k, value, c, why, sizeof(why))))
		problem(err, errlen, NULL, &o, k, value, why);
	free(c);
	return rc;
}
