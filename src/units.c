/*
 * units.c - numbers with units (units.h): one parser and one printer for
 * every scale, and percentiles through the C locale, switched to for the
 * calling thread alone.
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

#include "units.h"

int units_why(char *why, size_t n, int rc, const char *fmt, ...)
{
	va_list ap;

	if (why && n) {
		va_start(ap, fmt);
		vsnprintf(why, n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

const struct units_scale units_duration = { "nanoseconds", true, 7, 8, {
	{ "d", UNITS_NS_PER_DAY }, { "h", UNITS_NS_PER_H }, { "m", 60 * UNITS_NS_PER_S },
	{ "s", UNITS_NS_PER_S }, { "ms", UNITS_NS_PER_MS }, { "us", UNITS_NS_PER_US },
	{ "ns", 1 }, { "\xc2\xb5s", UNITS_NS_PER_US } } };
/* Binary, in any case; a size that no K divides is written bare. */
const struct units_scale units_size = { "bytes", false, 8, 9, {
	{ "T", UNITS_TIB }, { "TiB", UNITS_TIB }, { "G", UNITS_GIB }, { "GiB", UNITS_GIB },
	{ "M", UNITS_MIB }, { "MiB", UNITS_MIB }, { "K", UNITS_KIB }, { "KiB", UNITS_KIB },
	{ "B", 1 } } };
/* Counts may be written 64K: a multiplier, not a byte unit. */
const struct units_scale units_count = { "", false, 0, 3, {
	{ "G", UNITS_GIB }, { "M", UNITS_MIB }, { "K", UNITS_KIB } } };

int units_parse(const char *p, const struct units_scale *sc, uint64_t *ret,
		char *why, size_t whylen)
{
	int (*cmp)(const char *, const char *, size_t) = sc->duration ? strncmp : strncasecmp;
	uint64_t ip = 0, frac = 0, mult = 1, p10 = 1, total;
	size_t ndig, nfrac, ulen, k;
	unsigned __int128 part;
	const char *f;

	p += strspn(p, " \t\n\v\f\r");
	if (*p == '-')
		return units_why(why, whylen, -ERANGE, "must not be negative");
	for (ndig = 0; isdigit((unsigned char)*p); p++, ndig++) {
		if (__builtin_mul_overflow(ip, 10, &ip) ||
		    __builtin_add_overflow(ip, (uint64_t)(*p - '0'), &ip))
			return units_why(why, whylen, -ERANGE, "number is too large");
	}
	f = p + (*p == '.');
	nfrac = f > p ? strspn(f, "0123456789") : 0;
	p = f + nfrac;
	if (ndig + nfrac == 0)
		return units_why(why, whylen, -EINVAL, "not a number");
	while (nfrac && f[nfrac - 1] == '0')    /* they carry nothing */
		nfrac--;
	if (nfrac > 18)
		return units_why(why, whylen, -EINVAL, "too many decimal places");
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
		return units_why(why, whylen, -EINVAL, "unknown unit '%.*s'", (int)ulen, p);
	if (ulen)
		mult = sc->u[k].mult;
	else if (sc->duration && (ip || frac))
		return units_why(why, whylen, -EINVAL, "a unit is required (for example 5ms)");
	/* frac is below 10^18 and mult below 2^47: no overflow in 128 bits. */
	part = (unsigned __int128)frac * mult;
	if (part % p10)
		return units_why(why, whylen, -EINVAL, "not a whole number%s%s",
				 *sc->what ? " of " : "", sc->what);
	if (__builtin_mul_overflow(ip, mult, &total) ||
	    __builtin_add_overflow(total, (uint64_t)(part / p10), &total))
		return units_why(why, whylen, -ERANGE, "value is too large");
	*ret = total;
	return 0;
}

int units_format(uint64_t v, const struct units_scale *sc, char *buf, size_t n)
{
	unsigned i = 0;
	int w;

	while (i < sc->nformat && (!v || v % sc->u[i].mult))
		i++;
	w = snprintf(buf, n, "%llu%s", (unsigned long long)(i < sc->nformat ? v / sc->u[i].mult : v),
		     i < sc->nformat ? sc->u[i].name : "");
	return w < 0 || (size_t)w >= n ? -ENOSPC : 0;
}

/*
 * In the C locale: read `in` (unless NULL) into `*v`, then write to `out`
 * the shortest "%.*f" that reads back as `*v`.  0, -EINVAL (`in` is not a
 * number), -ERANGE (more places than UNITS_PERCENTILE_DECIMALS, or no room
 * for them) or -ENOMEM.
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
	for (int d = 0; rc == -ERANGE && d <= UNITS_PERCENTILE_DECIMALS; d++) {
		int w = snprintf(out, n, "%.*f", d, *v + 0.0);

		if (w > 0 && (size_t)w < n && strtod(out, NULL) == *v)
			rc = 0;
	}
	uselocale(old);
	freelocale(c);
	return rc;
}

int units_parse_percentile(const char *s, double *ret, char *why, size_t whylen)
{
	char text[64];
	double p = 0;
	int rc = c_decimal(s, &p, text, sizeof(text));

	if (rc == -ENOMEM || rc == -EINVAL)
		return units_why(why, whylen, rc, rc == -ENOMEM ? "out of memory" :
				 "'%s' is not a number", s);
	if (isnan(p))
		return units_why(why, whylen, -EINVAL, "NaN is not a percentile");
	if (!(p >= 0 && p <= 100))
		return units_why(why, whylen, -ERANGE, "%s is outside [0, 100]", s);
	if (rc)
		return units_why(why, whylen, rc, "%s has more than %d decimal places", s,
				 UNITS_PERCENTILE_DECIMALS);
	*ret = p;
	return 0;
}

int units_format_percentile(double p, char *buf, size_t n)
{
	return c_decimal(NULL, &p, buf, n);
}

int units_percentile_label(double p, char *buf, size_t n)
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
