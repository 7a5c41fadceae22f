/*
 * fuzz_text.c - the text checks shared by the fuzz harnesses (see
 * fuzz_text.h): is this UTF-8 free of control characters, and does this
 * CSV parse strictly with every record the same width.
 */
#include "build-config.h"

#include <csv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"

void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	abort();
}

/* Length of the well-formed UTF-8 sequence at s, 0 if ill-formed; the code
 * point goes to *ret_cp. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *ret_cp)
{
	size_t len;
	uint32_t cp, min;

	if (s[0] < 0x80) {
		*ret_cp = s[0];
		return 1;
	}
	if ((s[0] & 0xE0) == 0xC0)
		len = 2, cp = s[0] & 0x1F, min = 0x80;
	else if ((s[0] & 0xF0) == 0xE0)
		len = 3, cp = s[0] & 0x0F, min = 0x800;
	else if ((s[0] & 0xF8) == 0xF0)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	*ret_cp = cp;
	return len;
}

bool fuzz_text_clean(const char *s, size_t n, const char *allowed)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		uint32_t cp = 0;
		size_t l = utf8_seq(u + i, n - i, &cp);

		if (l == 0)
			return false;
		if ((cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) &&
		    !(cp && allowed && strchr(allowed, (int)cp)))
			return false;
		i += l;
	}
	return true;
}

struct csv_count {
	size_t fields, width;
	long records;
	bool bad;
};

static void on_field(void *f, size_t len, void *data)
{
	(void)f;
	(void)len;
	((struct csv_count *)data)->fields++;
}

static void on_record(int c, void *data)
{
	struct csv_count *k = data;

	(void)c;
	if (k->records == 0)
		k->width = k->fields;
	else if (k->fields != k->width)
		k->bad = true;
	k->records++;
	k->fields = 0;
}

long fuzz_csv_records(const char *s, size_t n, size_t *ret_width)
{
	struct csv_parser p;
	struct csv_count k = { 0, 0, 0, false };
	long result;

	if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_REPALL_NL) != 0)
		return -1;
	if (csv_parse(&p, s, n, on_field, on_record, &k) != n ||
	    csv_fini(&p, on_field, on_record, &k) != 0)
		k.bad = true;
	csv_free(&p);
	result = k.bad ? -1 : k.records;
	if (ret_width)
		*ret_width = k.width;
	return result;
}
