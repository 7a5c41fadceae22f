/*
 * ctl_text.c - safe labels, terminal widths and human-readable figures for
 * perfmonctl.
 *
 * The first line of defence is name_sanitize() from names.c (the same rule
 * the daemon applies to the name table): no control characters, valid
 * UTF-8 only.  On top of it perfmonctl blanks the invisible format
 * characters that reorder or hide text on a terminal, because a label that
 * renders differently from what it is can mislead as well as an escape can.
 */
#include "build-config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_text.h"
#include "names.h"

/* Decode the (already validated) UTF-8 character at s; its length in *len. */
static uint32_t decode(const unsigned char *s, size_t *len)
{
	if (s[0] < 0x80) {
		*len = 1;
		return s[0];
	}
	if (s[0] < 0xE0) {
		*len = 2;
		return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
	}
	if (s[0] < 0xF0) {
		*len = 3;
		return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) |
		       (s[2] & 0x3F);
	}
	*len = 4;
	return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
	       ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

/* Invisible characters that change how the text around them is shown:
 * Unicode's format characters (general category Cf) and the line and
 * paragraph separators. */
static bool is_format_char(uint32_t c)
{
	return c == 0x00AD || (c >= 0x0600 && c <= 0x0605) || c == 0x061C || c == 0x06DD ||
	       c == 0x070F || (c >= 0x0890 && c <= 0x0891) || c == 0x08E2 || c == 0x180E ||
	       (c >= 0x200B && c <= 0x200F) || (c >= 0x2028 && c <= 0x202E) ||
	       (c >= 0x2060 && c <= 0x206F) || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB) ||
	       c == 0x110BD || c == 0x110CD || (c >= 0x13430 && c <= 0x1343F) ||
	       (c >= 0x1BCA0 && c <= 0x1BCA3) || (c >= 0x1D173 && c <= 0x1D17A) ||
	       c == 0xE0001 || (c >= 0xE0020 && c <= 0xE007F);
}

static unsigned char_width(uint32_t c)
{
	if ((c >= 0x0300 && c <= 0x036F) || (c >= 0x20D0 && c <= 0x20FF) ||
	    (c >= 0xFE20 && c <= 0xFE2F))
		return 0;       /* combining marks sit on the previous character */
	if ((c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) ||
	    (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
	    (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
	    (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
	    (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD))
		return 2;
	return 1;
}

size_t ctl_text_clean(char *dst, const char *src, size_t n)
{
	size_t len, in = 0, out = 0;

	if (n == 0)
		return 0;
	len = name_sanitize(dst, src, n);
	/* name_sanitize left valid UTF-8; blank the format characters in place
	 * (each becomes one '?', so the text only shrinks). */
	while (in < len) {
		size_t l;
		uint32_t c = decode((const unsigned char *)dst + in, &l);
		if (is_format_char(c)) {
			dst[out++] = '?';
		} else {
			memmove(dst + out, dst + in, l);
			out += l;
		}
		in += l;
	}
	dst[out] = '\0';
	return out;
}

char *ctl_text_dup_clean(const char *src, size_t len)
{
	char *raw = malloc(len + 1), *out;
	size_t i;

	if (!raw)
		return NULL;
	for (i = 0; i < len; i++)
		raw[i] = src[i] ? src[i] : '\x01';   /* a NUL is not an end here */
	raw[len] = '\0';
	out = malloc(len + 1);
	if (out)
		ctl_text_clean(out, raw, len + 1);
	free(raw);
	return out;
}

unsigned ctl_text_width(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned w = 0;

	while (*p) {
		size_t l;
		w += char_width(decode(p, &l));
		p += l;
	}
	return w;
}

size_t ctl_text_fit(const char *s, unsigned cols, unsigned *ret_cols)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t used = 0;
	unsigned w = 0;

	while (p[used]) {
		size_t l;
		unsigned cw = char_width(decode(p + used, &l));
		if (w + cw > cols)
			break;
		w += cw;
		used += l;
	}
	if (ret_cols)
		*ret_cols = w;
	return used;
}

/* Three significant digits of v (0 <= v < 1000) followed by `suffix`. */
static void three_digits(double v, double sign, const char *suffix, char *buf, size_t n)
{
	int decimals = v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
	snprintf(buf, n, "%.*f%s", decimals, sign * v, suffix);
}

/*
 * Scale v by `step` through `suffixes` (smallest first) until below 1000;
 * past the largest suffix the figure takes an exponent (1.23e+05Z) rather
 * than a row of digits no column can hold.
 */
static void scaled(double v, const char *const *suffixes, unsigned nsuf, double step,
		   char *buf, size_t n)
{
	double sign = v < 0 ? -1 : 1, a = fabs(v);
	unsigned i = 0;

	if (!isfinite(v)) {
		snprintf(buf, n, "%s", isnan(v) ? "-" : v > 0 ? "inf" : "-inf");
		return;
	}
	while (i + 1 < nsuf && a >= 999.5) {
		a /= step;
		i++;
	}
	if (a >= 999.5) {
		snprintf(buf, n, "%.2e%s", sign * a, suffixes[i]);
		return;
	}
	if (i == 0 && a == floor(a)) {
		snprintf(buf, n, "%.0f%s", sign * a, suffixes[0]);
		return;
	}
	three_digits(a, sign, suffixes[i], buf, n);
}

/* Longer than any day count ctl_fmt_age prints: past it, seconds with an
 * exponent (about 31.7 years; no latency is that long but a file can say so). */
#define AGE_EXP_S 1e9

/* A non-negative, finite number of seconds, after the prefix `sign`. */
static void age(double s, const char *sign, char *buf, size_t n)
{
	unsigned long long t;

	if (s < 10) {
		snprintf(buf, n, "%s%.1fs", sign, s);
		return;
	}
	if (s >= AGE_EXP_S) {
		/* checked before the conversion: a double this large may not
		 * fit the integer at all */
		snprintf(buf, n, "%s%.2es", sign, s);
		return;
	}
	t = (unsigned long long)(s + 0.5);
	if (t < 60)
		snprintf(buf, n, "%s%llus", sign, t);
	else if (t < 3600)
		snprintf(buf, n, "%s%llum%02llus", sign, t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, n, "%s%lluh%02llum", sign, t / 3600, t % 3600 / 60);
	else
		snprintf(buf, n, "%s%llud%02lluh", sign, t / 86400, t % 86400 / 3600);
}

void ctl_fmt_duration(double v, const char *unit, char *buf, size_t n)
{
	static const char *const time_sfx[] = { "ns", "us", "ms", "s" };
	static const char *const cyc_sfx[] = { "cy", "kcy", "Mcy", "Gcy" };
	double f = ctl_unit_ns(unit), s;

	if (!isfinite(v)) {
		snprintf(buf, n, "-");
		return;
	}
	if (f == 0) {
		scaled(v, cyc_sfx, 4, 1000, buf, n);
		return;
	}
	/* In seconds first: v * f may overflow where v / 1e9 * f cannot. */
	s = fabs(v) / 1e9 * f;
	if (s >= 999.5) {       /* past 1000 s: minutes and hours read better */
		age(s, v < 0 ? "-" : "", buf, n);
		return;
	}
	scaled(v * f, time_sfx, 4, 1000, buf, n);
}

void ctl_fmt_si(double v, char *buf, size_t n)
{
	static const char *const sfx[] = { "", "k", "M", "G", "T", "P", "E", "Z" };
	double a = fabs(v);

	if (!isfinite(v)) {
		snprintf(buf, n, "%s", isnan(v) ? "-" : v > 0 ? "inf" : "-inf");
		return;
	}
	if (a < 10000) {
		if (a == floor(a))
			snprintf(buf, n, "%.0f", v);
		else
			snprintf(buf, n, "%.4g", v);
		return;
	}
	scaled(v, sfx, 8, 1000, buf, n);
}

void ctl_fmt_age(double s, char *buf, size_t n)
{
	if (!isfinite(s) || s < 0) {
		snprintf(buf, n, "-");   /* callers pass -1 for "unknown" */
		return;
	}
	age(s, "", buf, n);
}

void ctl_fmt_bytes(double b, char *buf, size_t n)
{
	static const char *const sfx[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	unsigned i = 0;

	if (!isfinite(b)) {
		snprintf(buf, n, "-");
		return;
	}
	while (i < 5 && fabs(b) >= 1024) {
		b /= 1024;
		i++;
	}
	if (fabs(b) >= 1024)
		snprintf(buf, n, "%.2e%s", b, sfx[i]);
	else if (i == 0)
		snprintf(buf, n, "%.0fB", b);
	else
		snprintf(buf, n, "%.*f%s", fabs(b) < 10 ? 2 : fabs(b) < 100 ? 1 : 0, b, sfx[i]);
}

double ctl_unit_ns(const char *unit)
{
	if (!strcmp(unit, "ns"))
		return 1;
	if (!strcmp(unit, "us"))
		return 1000;
	return 0;
}

void ctl_fmt_exact(double v, char *buf, size_t n)
{
	if (!isfinite(v)) {
		snprintf(buf, n, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
		return;
	}
	/* Whole numbers up to 2^64 - 1 (every uint64 a file can hold) with
	 * all their digits and no exponent: 18158513697557839872, never
	 * 1.815851369755784e+19. */
	if (v == floor(v) && fabs(v) < 18446744073709551616.0) {
		snprintf(buf, n, "%.0f", v);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}
