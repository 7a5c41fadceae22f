/*
 * conf_value.c - exact parsing and canonical formatting of configuration
 * values: durations, sizes, counts, booleans, percentile lists and labels,
 * histogram bounds, shm names and group-name syntax.
 *
 * Flow: beside the data path.  conf_keys.c calls these for every value of
 * the INI file and the command line, conf_keys_format() and conf_print()
 * use the formatters to write values back.  Pure functions: no key
 * table, no file, no global state.
 *
 * Values are parsed exactly, in integers: "1.5ms" is 1500000 ns, "1.3K"
 * bytes is an error rather than a rounded guess, and nothing wraps.
 * Floating-point text (percentiles) is read and written in the C locale
 * whatever LC_NUMERIC says.
 */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf_value.h"

/* ================================================== */
/* Exact number parsing */

struct conf_suffix {
	const char *name;
	uint64_t mult;
};

static const struct conf_suffix duration_units[] = {
	{ "ns", 1 }, { "us", CONF_NS_PER_US }, { "\xc2\xb5s", CONF_NS_PER_US },
	{ "ms", CONF_NS_PER_MS }, { "s", CONF_NS_PER_S }, { "m", CONF_NS_PER_MIN },
	{ "h", CONF_NS_PER_H }, { "d", CONF_NS_PER_DAY }, { NULL, 0 },
};

/* Sizes are binary; matched case-insensitively. */
static const struct conf_suffix size_units[] = {
	{ "B", 1 }, { "K", CONF_KIB }, { "KiB", CONF_KIB }, { "M", CONF_MIB },
	{ "MiB", CONF_MIB }, { "G", CONF_GIB }, { "GiB", CONF_GIB },
	{ "T", CONF_TIB }, { "TiB", CONF_TIB },
	{ NULL, 0 },
};

/* Counts may be written 64K: a multiplier, not a byte unit. */
static const struct conf_suffix count_units[] = {
	{ "K", CONF_KIB }, { "M", CONF_MIB }, { "G", CONF_GIB }, { NULL, 0 },
};

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
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

/*
 * Parse "<digits>[.<digits>][ ]<suffix>" into an integer count of the base
 * unit.  A fraction is fine as long as the result is whole: 1.5ms is
 * 1500000 ns, 0.5K is 512, but 1.5ns has no exact value and is refused.
 * `what` names the base unit in messages ("nanoseconds").
 */
static int parse_scaled(const char *s, const struct conf_suffix *units,
			bool case_insensitive, bool unit_required,
			const char *what, uint64_t *ret,
			char *why, size_t whylen)
{
	uint64_t ip = 0, frac = 0, mult = 1, total;
	const char *p = s, *fstart = NULL, *unit;
	size_t ndig = 0, nfrac = 0, k;
	const struct conf_suffix *u;
	char unitbuf[16];
	size_t ulen;

	while (isspace((unsigned char)*p))
		p++;
	if (*p == '-')
		return conf_value_why(why, whylen, -ERANGE, "must not be negative");
	for (; isdigit((unsigned char)*p); p++, ndig++) {
		if (__builtin_mul_overflow(ip, 10, &ip) ||
		    __builtin_add_overflow(ip, (uint64_t)(*p - '0'), &ip))
			return conf_value_why(why, whylen, -ERANGE, "number is too large");
	}
	if (*p == '.') {
		fstart = ++p;
		for (; isdigit((unsigned char)*p); p++)
			nfrac++;
	}
	if (ndig + nfrac == 0)
		return conf_value_why(why, whylen, -EINVAL, "not a number");

	/* Trailing zeros of the fraction carry nothing. */
	while (nfrac && fstart[nfrac - 1] == '0')
		nfrac--;
	if (nfrac > 18)
		return conf_value_why(why, whylen, -EINVAL, "too many decimal places");
	for (k = 0; k < nfrac; k++)
		frac = frac * 10 + (uint64_t)(fstart[k] - '0');

	while (isspace((unsigned char)*p))
		p++;
	unit = p;
	ulen = strlen(unit);
	while (ulen && isspace((unsigned char)unit[ulen - 1]))
		ulen--;
	if (ulen) {
		if (ulen >= sizeof(unitbuf))
			return conf_value_why(why, whylen, -EINVAL, "unknown unit '%.*s'",
					      (int)ulen, unit);
		memcpy(unitbuf, unit, ulen);
		unitbuf[ulen] = '\0';
		for (u = units; u->name; u++) {
			if (case_insensitive ? !strcasecmp(u->name, unitbuf)
					     : !strcmp(u->name, unitbuf))
				break;
		}
		if (!u->name)
			return conf_value_why(why, whylen, -EINVAL, "unknown unit '%s'",
					      unitbuf);
		mult = u->mult;
	} else if (unit_required && (ip || frac)) {
		return conf_value_why(why, whylen, -EINVAL,
				      "a unit is required (for example 5ms)");
	}

	if (__builtin_mul_overflow(ip, mult, &total))
		return conf_value_why(why, whylen, -ERANGE, "value is too large");
	if (nfrac) {
		/* frac / 10^nfrac * mult must be whole: divide out the
		 * common factor first so nothing can overflow. */
		uint64_t p10 = 1, g, m;

		for (k = 0; k < nfrac; k++)
			p10 *= 10;
		g = gcd_u64(mult, p10);
		m = p10 / g;
		if (frac % m)
			return conf_value_why(why, whylen, -EINVAL, "not a whole number%s%s",
					      *what ? " of " : "", what);
		if (__builtin_add_overflow(total, (frac / m) * (mult / g), &total))
			return conf_value_why(why, whylen, -ERANGE, "value is too large");
	}
	*ret = total;
	return 0;
}

int conf_parse_duration(const char *s, uint64_t *ret_ns, char *why, size_t whylen)
{
	return parse_scaled(s, duration_units, false, true, "nanoseconds",
			    ret_ns, why, whylen);
}

int conf_value_parse_count(const char *s, uint64_t *ret, char *why, size_t whylen)
{
	return parse_scaled(s, count_units, true, false, "", ret, why, whylen);
}

int conf_value_parse_size(const char *s, uint64_t *ret, char *why, size_t whylen)
{
	return parse_scaled(s, size_units, true, false, "bytes", ret, why, whylen);
}

int conf_format_duration(uint64_t ns, char *buf, size_t n)
{
	static const struct conf_suffix big_first[] = {
		{ "d", CONF_NS_PER_DAY }, { "h", CONF_NS_PER_H }, { "m", CONF_NS_PER_MIN },
		{ "s", CONF_NS_PER_S }, { "ms", CONF_NS_PER_MS }, { "us", CONF_NS_PER_US },
		{ "ns", 1 },
	};
	size_t i;
	int w;

	if (ns == 0) {
		w = snprintf(buf, n, "0");
	} else {
		for (i = 0; ns % big_first[i].mult; i++)
			;
		w = snprintf(buf, n, "%llu%s",
			     (unsigned long long)(ns / big_first[i].mult),
			     big_first[i].name);
	}
	return w < 0 || (size_t)w >= n ? -ENOSPC : 0;
}

int conf_value_format_size(uint64_t bytes, char *buf, size_t n)
{
	static const struct conf_suffix big_first[] = {
		{ "T", CONF_TIB }, { "G", CONF_GIB },
		{ "M", CONF_MIB }, { "K", CONF_KIB },
	};
	size_t i;
	int w;

	for (i = 0; i < sizeof(big_first) / sizeof(big_first[0]); i++) {
		if (bytes && bytes % big_first[i].mult == 0)
			break;
	}
	if (i < sizeof(big_first) / sizeof(big_first[0]))
		w = snprintf(buf, n, "%llu%s",
			     (unsigned long long)(bytes / big_first[i].mult),
			     big_first[i].name);
	else
		w = snprintf(buf, n, "%llu", (unsigned long long)bytes);
	return w < 0 || (size_t)w >= n ? -ENOSPC : 0;
}

/*
 * Read one decimal number in the C locale.  A daemon started under a
 * comma-decimal LC_NUMERIC must read "99.9" the same as anywhere else.
 */
static int parse_double_c(const char *s, size_t len, double *ret)
{
	char buf[64], *end;
	locale_t c;
	double v;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (!c)
		return -ENOMEM;
	errno = 0;
	v = strtod_l(buf, &end, c);
	freelocale(c);
	if (end == buf || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

/*
 * The shortest fixed-point decimal that reads back as exactly `v`, in the C
 * locale: 99.9 -> "99.9", 50 -> "50".  Used for labels and for printing, so
 * a printed config reads back bit for bit.
 */
int conf_value_format_shortest(double v, char *buf, size_t n)
{
	char tmp[512];
	locale_t c, old;
	int d, rc = -ERANGE, w = 0;

	if (!isfinite(v))
		return -EINVAL;
	if (v == 0)
		v = 0;          /* -0 prints as 0 */
	c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (!c)
		return -ENOMEM;
	old = uselocale(c);
	for (d = 0; d <= 400; d++) {
		w = snprintf(tmp, sizeof(tmp), "%.*f", d, v);
		if (w < 0 || (size_t)w >= sizeof(tmp))
			break;
		if (strtod_l(tmp, NULL, c) == v) {
			rc = 0;
			break;
		}
	}
	uselocale(old);
	freelocale(c);
	if (rc)
		return rc;
	if ((size_t)w >= n)
		return -ENOSPC;
	memcpy(buf, tmp, (size_t)w + 1);
	return 0;
}

int conf_percentile_label(double p, char *buf, size_t n)
{
	char num[512], *s;
	int rc;

	if (!isfinite(p) || p < 0)
		return -EINVAL;
	rc = conf_value_format_shortest(p, num, sizeof(num));
	if (rc)
		return rc;
	for (s = num; *s; s++) {
		if (*s == '.')
			*s = '_';
	}
	if (strlen(num) + 2 > n)
		return -ENOSPC;
	buf[0] = 'p';
	memcpy(buf + 1, num, strlen(num) + 1);
	return 0;
}

/* ================================================== */
/* Names */

int conf_check_name(const char *name, char *why, size_t whylen)
{
	size_t i, n = strlen(name);

	if (n == 0)
		return conf_value_why(why, whylen, -EINVAL, "name is empty");
	if (n > CONF_NAME_MAX)
		return conf_value_why(why, whylen, -ENAMETOOLONG,
				      "name is %zu characters long", n);
	if (name[0] == '.')
		return conf_value_why(why, whylen, -EINVAL, "name starts with '.'");
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (!isascii(ch) || !(isalnum(ch) || ch == '.' || ch == '_' || ch == '-'))
			return conf_value_why(why, whylen, -EINVAL,
					      "character %zu is not allowed in a name", i + 1);
	}
	return 0;
}

int conf_value_check_group_syntax(const char *g, char *why, size_t whylen)
{
	size_t n = strlen(g);
	const char *s;

	if (n > CONF_GROUP_MAX)
		return conf_value_why(why, whylen, -ENAMETOOLONG,
				      "group name is %zu characters long", n);
	for (s = g; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isspace(ch) || iscntrl(ch) || ch == ':' || ch == ',' || ch == '/')
			return conf_value_why(why, whylen, -EINVAL,
					      "a group name cannot contain '%c'",
					      isprint(ch) ? ch : '?');
	}
	return 0;
}

/* ================================================== */
/* Lists and booleans */

/* Split a comma-separated list; the callback sees each trimmed element. */
static int for_each_element(const char *v, char *why, size_t whylen,
			    int (*fn)(const char *el, size_t len, unsigned idx,
				      void *arg, char *why, size_t whylen),
			    void *arg)
{
	const char *s = v;
	unsigned idx = 0;
	int rc;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s)
		return 0;
	for (;;) {
		const char *end = strchr(s, ',');
		const char *e = end ? end : s + strlen(s);
		const char *b = s;

		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (b == e)
			return conf_value_why(why, whylen, -EINVAL,
					      "element %u of the list is empty", idx + 1);
		rc = fn(b, (size_t)(e - b), idx, arg, why, whylen);
		if (rc)
			return rc;
		idx++;
		if (!end)
			return 0;
		s = end + 1;
	}
}

static int add_percentile(const char *el, size_t len, unsigned idx, void *arg,
			  char *why, size_t whylen)
{
	struct conf_percentiles *pl = arg;
	double v;
	unsigned i;
	int rc;

	if (idx >= CONF_MAX_PERCENTILES)
		return conf_value_why(why, whylen, -ERANGE, "more than %d percentiles",
				      CONF_MAX_PERCENTILES);
	rc = parse_double_c(el, len, &v);
	if (rc == -ENOMEM)
		return conf_value_why(why, whylen, rc, "out of memory");
	if (rc)
		return conf_value_why(why, whylen, -EINVAL, "'%.*s' is not a number",
				      (int)len, el);
	if (isnan(v))
		return conf_value_why(why, whylen, -EINVAL, "NaN is not a percentile");
	if (!(v >= 0 && v <= 100))
		return conf_value_why(why, whylen, -ERANGE, "%.*s is outside [0, 100]",
				      (int)len, el);
	for (i = 0; i < pl->n; i++) {
		if (pl->p[i] == v)
			return conf_value_why(why, whylen, -EINVAL,
					      "%.*s is listed twice", (int)len, el);
	}
	pl->p[pl->n++] = v;
	return 0;
}

struct bucket_ctx {
	struct conf_buckets *bl;
	uint64_t min_ns, max_ns;
};

static int add_bucket(const char *el, size_t len, unsigned idx, void *arg,
		      char *why, size_t whylen)
{
	struct bucket_ctx *ctx = arg;
	struct conf_buckets *bl = ctx->bl;
	char tok[64], sub[128];
	uint64_t ns;

	if (idx >= CONF_MAX_BUCKETS)
		return conf_value_why(why, whylen, -ERANGE, "more than %d bounds",
				      CONF_MAX_BUCKETS);
	if (len >= sizeof(tok))
		return conf_value_why(why, whylen, -EINVAL, "element %u is too long", idx + 1);
	memcpy(tok, el, len);
	tok[len] = '\0';
	if (conf_parse_duration(tok, &ns, sub, sizeof(sub)))
		return conf_value_why(why, whylen, -EINVAL, "'%s': %s", tok, sub);
	if (ns < ctx->min_ns || ns > ctx->max_ns)
		return conf_value_why(why, whylen, -ERANGE, "'%s' is out of range", tok);
	if (bl->n && ns <= bl->le_ns[bl->n - 1])
		return conf_value_why(why, whylen, -EINVAL,
				      "'%s' is not larger than the bound before it", tok);
	bl->le_ns[bl->n++] = ns;
	return 0;
}

int conf_value_parse_bool(const char *v, bool *ret)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	size_t i;

	for (i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*ret = true;
			return 0;
		}
		if (!strcasecmp(v, no[i])) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

int conf_value_parse_percentiles(const char *v, struct conf_percentiles *ret,
				 char *why, size_t whylen)
{
	struct conf_percentiles pl = { 0 };
	int rc;

	rc = for_each_element(v, why, whylen, add_percentile, &pl);
	if (rc)
		return rc;
	*ret = pl;
	return 0;
}

int conf_value_parse_buckets(const char *v, uint64_t min_ns, uint64_t max_ns,
			     struct conf_buckets *ret, char *why, size_t whylen)
{
	struct conf_buckets bl = { 0 };
	struct bucket_ctx ctx = { &bl, min_ns, max_ns };
	int rc;

	rc = for_each_element(v, why, whylen, add_bucket, &ctx);
	if (rc)
		return rc;
	if (bl.n == 0)
		return conf_value_why(why, whylen, -EINVAL,
				      "at least one bound is needed");
	*ret = bl;
	return 0;
}
