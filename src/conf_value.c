/*
 * conf_value.c - configuration values on their own, and the message lists:
 * the bottom layer of the configuration, also used by perfmonctl for
 * sizes.  Values are parsed exactly, in integers: "1.5ms" is 1500000 ns,
 * "1.3K" bytes is an error rather than a rounded guess, and nothing wraps.
 * Percentiles are read and written in the C locale, so a daemon started
 * under a comma-decimal LC_NUMERIC reads "99.9" as anywhere else.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <perfmon/segment.h>

#include "conf_keys.h"

#define MIB (CONF_KIB * CONF_KIB)
#define GIB (MIB * CONF_KIB)

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
	prefix = prefix ? prefix : "";
	for (const char *s = m->text, *nl; (nl = strchr(s, '\n')); s = nl + 1)
		fprintf(f, "%s%.*s\n", prefix, (int)(nl - s), s);
	if (m->dropped)
		fprintf(f, "%s(%u more not shown)\n", prefix, m->dropped);
}

int conf_value_why(char *why, size_t n, int rc, const char *fmt, ...)
{
	va_list ap;

	if (why && n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* A kind of scaled number: its units, largest first, of which the first
 * `nformat` are those values are written with (the rest are spellings
 * only read). */
struct scale {
	const char *what;       /* the base unit, for messages */
	bool duration;          /* unit names are case-sensitive, and a
				 * value other than 0 needs one */
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

int conf_value_parse_count(const char *s, uint64_t *ret, char *why, size_t whylen)
{
	return parse_scaled(s, &counts, ret, why, whylen);
}

int conf_value_parse_size(const char *s, uint64_t *ret, char *why, size_t whylen)
{
	return parse_scaled(s, &sizes, ret, why, whylen);
}

int conf_format_duration(uint64_t ns, char *buf, size_t n)
{
	return format_scaled(ns, &durations, buf, n);
}

int conf_value_format_size(uint64_t bytes, char *buf, size_t n)
{
	return format_scaled(bytes, &sizes, buf, n);
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

int conf_value_parse_percentile(const char *s, double *ret, char *why, size_t whylen)
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

int conf_value_format_percentile(double v, char *buf, size_t n)
{
	return isfinite(v) ? c_decimal(NULL, &v, buf, n) : -EINVAL;
}

int conf_percentile_label(double p, char *buf, size_t n)
{
	char num[64], *dot;
	int rc = p < 0 ? -EINVAL : conf_value_format_percentile(p, num, sizeof(num));

	if (!rc && strlen(num) + 2 > n)
		rc = -ENOSPC;
	if (rc)
		return rc;
	snprintf(buf, n, "p%s", num);
	if ((dot = strchr(buf, '.')))
		*dot = '_';
	return 0;
}

int conf_check_name(const char *name, char *why, size_t whylen)
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

int conf_value_check_group_syntax(const char *g, char *why, size_t whylen)
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
