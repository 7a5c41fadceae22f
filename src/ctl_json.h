/*
 * ctl_json.h - perfmonctl's JSON writer: one streaming document per
 * command run with `--format json`.
 *
 * Flow: a command (status, names, list, report, compare, dump, ...) calls
 * the writer in document order -> [ctl_json] -> stdout.  The writer places
 * the commas and colons, escapes every string (control characters, quotes,
 * bytes that are not UTF-8), and prints numbers with every digit they
 * have: integers exactly, doubles with the fewest digits that read back to
 * the same double.  A value that has no JSON number (NaN, infinity) is
 * written as null.  Output is one line per document, ended by a newline.
 */
#ifndef PERFMOND_CTL_JSON_H
#define PERFMOND_CTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Objects and arrays nest at most this deep. */
#define CTL_JSON_MAX_DEPTH 32

struct ctl_json {
	FILE *f;
	unsigned depth;
	bool after_key;                      /* a key was written, its value is next */
	bool has_items[CTL_JSON_MAX_DEPTH];  /* the container at each depth is non-empty */
	bool overflow;                       /* nesting went past CTL_JSON_MAX_DEPTH */
};

/* Start a document on `f`. */
void ctl_json_init(struct ctl_json *j, FILE *f);

void ctl_json_object_begin(struct ctl_json *j);
void ctl_json_object_end(struct ctl_json *j);
void ctl_json_array_begin(struct ctl_json *j);
void ctl_json_array_end(struct ctl_json *j);

/* The key of the next member of the current object. */
void ctl_json_key(struct ctl_json *j, const char *key);

/* Values.  A NULL string is written as null. */
void ctl_json_string(struct ctl_json *j, const char *s);
void ctl_json_u64(struct ctl_json *j, uint64_t v);
void ctl_json_i64(struct ctl_json *j, int64_t v);
void ctl_json_double(struct ctl_json *j, double v);
void ctl_json_bool(struct ctl_json *j, bool v);
void ctl_json_null(struct ctl_json *j);
/*
 * A number given as text, such as a CSV field, written with every digit
 * it has when it is a JSON number; otherwise (empty, "nan", "1e", ...) it
 * is written as a string, so the document stays valid.
 */
void ctl_json_number_text(struct ctl_json *j, const char *text);

/* Shorthands for one member of an object: key, then value. */
void ctl_json_kv_string(struct ctl_json *j, const char *key, const char *s);
void ctl_json_kv_u64(struct ctl_json *j, const char *key, uint64_t v);
void ctl_json_kv_i64(struct ctl_json *j, const char *key, int64_t v);
void ctl_json_kv_double(struct ctl_json *j, const char *key, double v);
void ctl_json_kv_bool(struct ctl_json *j, const char *key, bool v);

/*
 * End the document: a newline after the top-level value.  0, or -EINVAL
 * when containers were left open or nested too deep, or -EIO when the
 * stream had a write error.
 */
int ctl_json_finish(struct ctl_json *j);

/* True when `text` is a number in JSON's grammar. */
bool ctl_json_is_number(const char *text);

#endif
