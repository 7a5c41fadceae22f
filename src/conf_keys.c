/*
 * conf_keys.c - perfmond.conf(5)'s values and keys, the bottom of the
 * configuration, and the message lists; perfmonctl uses the values too.
 * Values are parsed exactly, in integers: "1.3K" bytes is an error rather
 * than a rounded guess, and nothing wraps.  Percentiles are read and
 * written in the C locale, whatever the daemon's LC_NUMERIC.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <locale.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <perfmon/segment.h>

#include "conf_keys.h"
#include "outliers.h"

#define MIB (CONF_KIB * CONF_KIB)
#define GIB (MIB * CONF_KIB)

void conf_msgs_init(struct conf_msgs *m)
{
	m->len = m->count = m->dropped = 0;
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
	prefix = prefix ? prefix : "";
	for (const char *s = m->text, *nl; (nl = strchr(s, '\n')); s = nl + 1)
		fprintf(f, "%s%.*s\n", prefix, (int)(nl - s), s);
	if (m->dropped)
		fprintf(f, "%s(%u more not shown)\n", prefix, m->dropped);
}

__attribute__((format(printf, 4, 5)))
static int conf_value_why(char *why, size_t n, int rc, const char *fmt, ...)
{
	va_list ap;

	if (why && n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* A kind of scaled number: its units, largest first; values are written
 * with the first `nformat`, the rest are spellings only read. */
struct scale {
	const char *what;       /* the base unit, for messages */
	bool duration;          /* case-sensitive units, needed unless 0 */
	unsigned nformat, n;
	struct { const char *name; uint64_t mult; } u[9];
};

static const struct scale durations = { "nanoseconds", true, 7, 8, {
	{ "d", CONF_NS_PER_DAY }, { "h", CONF_NS_PER_H }, { "m", 60 * CONF_NS_PER_S },
	{ "s", CONF_NS_PER_S }, { "ms", CONF_NS_PER_MS }, { "us", CONF_NS_PER_US }, { "ns", 1 },
	{ "\xc2\xb5s", CONF_NS_PER_US } } };
/* Binary, in any case; a size that no K divides is written bare. */
static const struct scale sizes = { "bytes", false, 8, 9, {
	{ "T", CONF_TIB }, { "TiB", CONF_TIB }, { "G", GIB }, { "GiB", GIB }, { "M", MIB },
	{ "MiB", MIB }, { "K", CONF_KIB }, { "KiB", CONF_KIB }, { "B", 1 } } };
/* Counts may be written 64K: a multiplier, not a byte unit. */
static const struct scale counts = { "", false, 0, 3, {
	{ "G", GIB }, { "M", MIB }, { "K", CONF_KIB } } };

/*
 * Parse "<digits>[.<digits>][ ]<unit>" into a count of the base unit.  A
 * fraction is fine as long as the result is whole: 1.5ms is 1500000 ns,
 * 0.5K is 512, but 1.5ns has no exact value.
 */
static int parse_scaled(const char *p, const struct scale *sc, uint64_t *ret,
			char *why, size_t whylen)
{
	int (*cmp)(const char *, const char *, size_t) = sc->duration ? strncmp : strncasecmp;
	uint64_t ip = 0, frac = 0, mult = 1, p10 = 1, total;
	size_t ndig, nfrac, ulen, k;
	unsigned __int128 part;
	const char *f;

	p += strspn(p, " \t\n\v\f\r");
	if (*p == '-')
		return conf_value_why(why, whylen, -ERANGE, "must not be negative");
	for (ndig = 0; isdigit((unsigned char)*p); p++, ndig++) {
		if (__builtin_mul_overflow(ip, 10, &ip) ||
		    __builtin_add_overflow(ip, (uint64_t)(*p - '0'), &ip))
			return conf_value_why(why, whylen, -ERANGE, "number is too large");
	}
	f = p + (*p == '.');
	nfrac = f > p ? strspn(f, "0123456789") : 0;
	p = f + nfrac;
	if (ndig + nfrac == 0)
		return conf_value_why(why, whylen, -EINVAL, "not a number");
	while (nfrac && f[nfrac - 1] == '0')    /* they carry nothing */
		nfrac--;
	if (nfrac > 18)
		return conf_value_why(why, whylen, -EINVAL, "too many decimal places");
	for (k = 0; k < nfrac; k++, p10 *= 10)
		frac = frac * 10 + (uint64_t)(f[k] - '0');

	p += strspn(p, " \t\n\v\f\r");
	for (ulen = strlen(p); ulen && isspace((unsigned char)p[ulen - 1]); ulen--)
		;
	for (k = 0; ulen && k < sc->n; k++) {
		if (strlen(sc->u[k].name) == ulen && !cmp(sc->u[k].name, p, ulen))
			break;
	}
	if (ulen && k == sc->n)
		return conf_value_why(why, whylen, -EINVAL, "unknown unit '%.*s'", (int)ulen, p);
	if (ulen)
		mult = sc->u[k].mult;
	else if (sc->duration && (ip || frac))
		return conf_value_why(why, whylen, -EINVAL, "a unit is required (for example 5ms)");
	/* frac is below 10^18 and mult below 2^47: no overflow in 128 bits. */
	part = (unsigned __int128)frac * mult;
	if (part % p10)
		return conf_value_why(why, whylen, -EINVAL, "not a whole number%s%s",
				      *sc->what ? " of " : "", sc->what);
	if (__builtin_mul_overflow(ip, mult, &total) ||
	    __builtin_add_overflow(total, (uint64_t)(part / p10), &total))
		return conf_value_why(why, whylen, -ERANGE, "value is too large");
	*ret = total;
	return 0;
}

/* `v` in the first unit that divides it; 0, or what none divides, bare. */
static int format_scaled(uint64_t v, const struct scale *sc, char *buf, size_t n)
{
	unsigned i = 0;
	int w;

	while (i < sc->nformat && (!v || v % sc->u[i].mult))
		i++;
	w = snprintf(buf, n, "%llu%s", (unsigned long long)(i < sc->nformat ? v / sc->u[i].mult : v),
		     i < sc->nformat ? sc->u[i].name : "");
	return w < 0 || (size_t)w >= n ? -ENOSPC : 0;
}

int conf_parse_duration(const char *s, uint64_t *ret_ns, char *why, size_t whylen)
{
	return parse_scaled(s, &durations, ret_ns, why, whylen);
}

int conf_value_parse_size(const char *s, uint64_t *ret, char *why, size_t whylen)
{
	return parse_scaled(s, &sizes, ret, why, whylen);
}

int conf_format_duration(uint64_t ns, char *buf, size_t n)
{
	return format_scaled(ns, &durations, buf, n);
}

/*
 * In the C locale, switched to for this thread alone: read `in` (unless
 * NULL) into `*v`, then write to `out` the shortest "%.*f" that reads back
 * as `*v`.  0, -EINVAL (`in` is not a number), -ERANGE (more places than
 * CONF_PERCENTILE_DECIMALS, or no room for them) or -ENOMEM.
 */
static int c_decimal(const char *in, double *v, char *out, size_t n)
{
	locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0), old;
	char *end;
	int rc = -ERANGE;

	if (!c)
		return -ENOMEM;
	old = uselocale(c);
	if (in) {
		*v = strtod(in, &end) + 0.0;    /* -0 is 0, as it prints */
		rc = end == in || *end ? -EINVAL : rc;
	}
	for (int d = 0; rc == -ERANGE && d <= CONF_PERCENTILE_DECIMALS; d++) {
		int w = snprintf(out, n, "%.*f", d, *v + 0.0);

		if (w > 0 && (size_t)w < n && strtod(out, NULL) == *v)
			rc = 0;
	}
	uselocale(old);
	freelocale(c);
	return rc;
}

static int parse_percentile(const char *s, double *ret, char *why, size_t whylen)
{
	char text[64];
	double p = 0;
	int rc = c_decimal(s, &p, text, sizeof(text));

	if (rc == -ENOMEM || rc == -EINVAL)
		return conf_value_why(why, whylen, rc, rc == -ENOMEM ? "out of memory" :
				      "'%s' is not a number", s);
	if (isnan(p))
		return conf_value_why(why, whylen, -EINVAL, "NaN is not a percentile");
	if (!(p >= 0 && p <= 100))
		return conf_value_why(why, whylen, -ERANGE, "%s is outside [0, 100]", s);
	if (rc)
		return conf_value_why(why, whylen, rc, "%s has more than %d decimal places", s,
				      CONF_PERCENTILE_DECIMALS);
	*ret = p;
	return 0;
}

int conf_percentile_label(double p, char *buf, size_t n)
{
	char num[64], *dot;
	int rc = p < 0 || !isfinite(p) ? -EINVAL : c_decimal(NULL, &p, num, sizeof(num));

	if (!rc && strlen(num) + 2 > n)
		rc = -ENOSPC;
	if (rc)
		return rc;
	snprintf(buf, n, "p%s", num);
	if ((dot = strchr(buf, '.')))
		*dot = '_';
	return 0;
}

static int conf_check_name(const char *name, char *why, size_t whylen)
{
	size_t n = strlen(name), at;
	int e = perfmon__shm_name_check(name, &at);   /* the one rule */

	if (e == 0)
		return 0;
	if (n == 0)
		return conf_value_why(why, whylen, -EINVAL, "name is empty");
	if (e == -ENAMETOOLONG)
		return conf_value_why(why, whylen, e, "name is %zu characters long", n);
	if (name[0] == '.')
		return conf_value_why(why, whylen, -EINVAL, "name starts with '.'");
	if (at + 5 == n && !strcmp(name + at, ".meta"))
		return conf_value_why(why, whylen, -EINVAL, "name ends in '.meta' (the control "
				      "block of '%.*s')", (int)at, name);
	return conf_value_why(why, whylen, -EINVAL, "character %zu is not allowed in a name",
			      at + 1);
}

static int conf_value_check_group_syntax(const char *g, char *why, size_t whylen)
{
	size_t n = strlen(g);

	if (n > CONF_GROUP_MAX)
		return conf_value_why(why, whylen, -ENAMETOOLONG,
				      "group name is %zu characters long", n);
	for (; *g; g++) {
		unsigned char ch = (unsigned char)*g;

		if (isspace(ch) || iscntrl(ch) || strchr(":,/", ch))
			return conf_value_why(why, whylen, -EINVAL, "a group name cannot contain '%c'",
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
	if (parse_scaled(group, &counts, &v, NULL, 0) || v >= (gid_t)-1)
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

/* How key `k`'s type writes a number (a bucket bound is a duration). */
static const struct scale *scale_of(const struct conf_keydef *k)
{
	return k->type == CONF_T_DURATION || k->type == CONF_T_BUCKETS ? &durations :
	       k->type == CONF_T_SIZE ? &sizes : &counts;
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
		rc = parse_scaled(v, scale_of(k), &x, why, whylen);
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
		if (pct && (rc = parse_percentile(tok, &pl.p[n], why, whylen)))
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
			if (pct)        /* loaded, so finite */
				c_decimal(NULL, (double[]){ pl->p[i] }, buf + len, n - len);
			else
				conf_format_duration(bl->le_ns[i], buf + len, n - len);
			len += strlen(buf + len);
		}
		return;
	default:
		format_scaled(k->size == sizeof(uint64_t) ? *(const uint64_t *)field :
			      *(const uint32_t *)field, scale_of(k), buf, n);
	}
}

/* A line about key `ki` worded for where its value came from, `o` (a
 * CONF_SRC_FILE origin is a line of c->config_path). */
static void report(struct conf_msgs *m, const struct pm_config *c, const struct conf_origin *o,
		   int ki, const char *value, const char *why, bool problem)
{
	const struct conf_keydef *k = &conf_keys[ki];
	char lo[32], hi[32], allowed[320] = "", where[CONF_PATH_MAX + 64];
	int z;

	if (problem) {
		format_scaled(k->min, scale_of(k), lo, sizeof(lo));
		format_scaled(k->max, scale_of(k), hi, sizeof(hi));
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
	conf_msgs_add(m, "%s %s: %s%s", where, CONF_SHOWN(value), why, allowed);
}

int conf_keys_set(struct pm_config *c, int ki, const char *v, const struct conf_origin *o,
		  struct conf_msgs *m)
{
	char why[512];
	int rc = parse_key(ki, v, c, why, sizeof(why));

	if (rc)
		report(m, c, o, ki, v, why, true);
	else
		c->origin[ki] = *o;
	return rc;
}

void conf_keys_report(struct conf_msgs *m, const struct pm_config *c, int ki, const char *why,
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
	struct conf_msgs m;
	int rc;

	conf_msgs_init(&m);
	rc = conf_keys_set(&c, k, value, &o, &m);
	snprintf(err, errlen, "%.*s", (int)strcspn(m.text, "\n"), m.text);
	return rc;
}
