/*
 * ctl_json.c - perfmonctl's JSON writer (see ctl_json.h).
 *
 * Strings are escaped per RFC 8259: quote, backslash and control
 * characters (C0, DEL and C1) get escapes; U+2028 and U+2029 too, so a
 * document can be pasted into JavaScript.  Bytes that do not form UTF-8 (a stray
 * continuation byte, an overlong or surrogate encoding, a truncated
 * sequence) become U+FFFD: labels come from shared memory and CSV files
 * and may hold anything.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_json.h"

void ctl_json_init(struct ctl_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

/* Before any value or key: the comma that separates it from the last. */
static void separate(struct ctl_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth == 0 || j->depth > CTL_JSON_MAX_DEPTH)
		return;
	if (j->has_items[j->depth - 1])
		fputc(',', j->f);
	j->has_items[j->depth - 1] = true;
}

static void open_container(struct ctl_json *j, char c)
{
	separate(j);
	fputc(c, j->f);
	if (j->depth >= CTL_JSON_MAX_DEPTH)
		j->overflow = true;
	else
		j->has_items[j->depth] = false;
	j->depth++;
}

static void close_container(struct ctl_json *j, char c)
{
	fputc(c, j->f);
	if (j->depth > 0)
		j->depth--;
}

void ctl_json_object_begin(struct ctl_json *j) { open_container(j, '{'); }
void ctl_json_object_end(struct ctl_json *j) { close_container(j, '}'); }
void ctl_json_array_begin(struct ctl_json *j) { open_container(j, '['); }
void ctl_json_array_end(struct ctl_json *j) { close_container(j, ']'); }

/* Length of the UTF-8 sequence at s (1-4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	uint32_t cp;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, cp = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* Overlong forms, surrogates and values past U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

static void write_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		size_t n = utf8_len(s);

		if (n == 0) {
			fputs("\\ufffd", f);
			s++;
		} else if (n == 1) {
			unsigned c = *s++;

			if (c == '"' || c == '\\')
				fprintf(f, "\\%c", c);
			else if (c == '\n')
				fputs("\\n", f);
			else if (c == '\t')
				fputs("\\t", f);
			else if (c < 0x20 || c == 0x7F)
				fprintf(f, "\\u%04x", c);
			else
				fputc((int)c, f);
		} else if (n == 2 && s[0] == 0xC2 && s[1] <= 0x9F) {
			/* C1 controls: legal in JSON, but a terminal acts on them. */
			fprintf(f, "\\u%04x", (unsigned)s[1]);
			s += 2;
		} else if (n == 3 && s[0] == 0xE2 && s[1] == 0x80 && (s[2] == 0xA8 || s[2] == 0xA9)) {
			fputs(s[2] == 0xA8 ? "\\u2028" : "\\u2029", f);
			s += 3;
		} else {
			fwrite(s, 1, n, f);
			s += n;
		}
	}
	fputc('"', f);
}

void ctl_json_key(struct ctl_json *j, const char *key)
{
	separate(j);
	write_string(j->f, key ? key : "");
	fputc(':', j->f);
	j->after_key = true;
}

void ctl_json_string(struct ctl_json *j, const char *s)
{
	separate(j);
	if (s)
		write_string(j->f, s);
	else
		fputs("null", j->f);
}

void ctl_json_u64(struct ctl_json *j, uint64_t v)
{
	separate(j);
	fprintf(j->f, "%" PRIu64, v);
}

void ctl_json_i64(struct ctl_json *j, int64_t v)
{
	separate(j);
	fprintf(j->f, "%" PRId64, v);
}

void ctl_json_double(struct ctl_json *j, double v)
{
	char buf[40];

	separate(j);
	if (!isfinite(v)) {
		fputs("null", j->f);
		return;
	}
	/* A whole number below 2^64 with all its digits, as a JSON integer
	 * (18158513697557839872, not 1.815851369755784e+19); else the
	 * shortest of %.15g..%.17g that reads back to the same double. */
	if (v == floor(v) && fabs(v) < 18446744073709551616.0) {
		fprintf(j->f, "%.0f", v);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, j->f);
}

void ctl_json_bool(struct ctl_json *j, bool v)
{
	separate(j);
	fputs(v ? "true" : "false", j->f);
}

void ctl_json_null(struct ctl_json *j)
{
	separate(j);
	fputs("null", j->f);
}

bool ctl_json_is_number(const char *t)
{
	const char *p = t;

	if (!t)
		return false;
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return false;
	if (*p == '.') {
		p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

void ctl_json_number_text(struct ctl_json *j, const char *text)
{
	if (!ctl_json_is_number(text)) {
		ctl_json_string(j, text);
		return;
	}
	separate(j);
	fputs(text, j->f);
}

void ctl_json_kv_string(struct ctl_json *j, const char *key, const char *s)
{
	ctl_json_key(j, key);
	ctl_json_string(j, s);
}

void ctl_json_kv_u64(struct ctl_json *j, const char *key, uint64_t v)
{
	ctl_json_key(j, key);
	ctl_json_u64(j, v);
}

void ctl_json_kv_i64(struct ctl_json *j, const char *key, int64_t v)
{
	ctl_json_key(j, key);
	ctl_json_i64(j, v);
}

void ctl_json_kv_double(struct ctl_json *j, const char *key, double v)
{
	ctl_json_key(j, key);
	ctl_json_double(j, v);
}

void ctl_json_kv_bool(struct ctl_json *j, const char *key, bool v)
{
	ctl_json_key(j, key);
	ctl_json_bool(j, v);
}

int ctl_json_finish(struct ctl_json *j)
{
	fputc('\n', j->f);
	if (j->depth != 0 || j->overflow || j->after_key)
		return -EINVAL;
	return ferror(j->f) ? -EIO : 0;
}
