/*
 * conf_keys.h - the table of INI keys: each key's section, type, field in
 * struct pm_config, range and whether a reload may change it; turning a
 * key's text into its field and back; and problem messages worded for
 * where a value came from (FILE:LINE, command line, default).
 *
 * Flow: beside the data path.  conf_file.c (the INI reader) and conf.c
 * (defaults, command line, printing, reload) both go through this table,
 * so a key is described once.
 */
#ifndef PERFMOND_CONF_KEYS_H
#define PERFMOND_CONF_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

enum conf_type {
	CONF_T_NAME,            /* shm name, SPEC section 3 */
	CONF_T_COUNT,           /* uint32_t in [min, max] */
	CONF_T_POW2,            /* uint32_t power of two in [min, max] */
	CONF_T_MODE,            /* mode_t, octal */
	CONF_T_GROUP,           /* group name or number */
	CONF_T_CPU,             /* int, -1 for none */
	CONF_T_DURATION,        /* uint64_t ns; 0 allowed when `zero` is set */
	CONF_T_SIZE,            /* uint64_t bytes; 0 allowed when `zero` is set */
	CONF_T_BOOL,
	CONF_T_PATH,            /* "" : no file */
	CONF_T_UNIT,
	CONF_T_PERCENTILES,
	CONF_T_BUCKETS,
};

struct conf_keydef {
	const char *section;
	const char *name;
	enum conf_type type;
	size_t off, size;       /* the field in struct pm_config */
	uint64_t min, max;
	const char *zero;       /* what 0 means, when 0 is allowed */
	bool live;              /* can change on SIGHUP */
};

/* Every key, indexed by enum conf_key, in the order of conf_print(). */
extern const struct conf_keydef conf_keys[CONF_KEY_COUNT];

/* The field of `c` that key `k` describes. */
#define CONF_FIELD(c, k, type) ((type *)((char *)(c) + (k)->off))
#define CONF_CFIELD(c, k, type) ((const type *)((const char *)(c) + (k)->off))

/* Index of a known section name, or -1. */
int conf_keys_find_section(const char *name);

/* Index (enum conf_key) of `name` in `section`, or -1. */
int conf_keys_find(const char *section, const char *name);

/*
 * Parse `v` for key `k` into the matching field of `c`.  On failure the
 * field may hold a partial value, which is why callers parse into a
 * staging copy.  0 or negative errno with the reason in `why`.
 */
int conf_keys_parse(const struct conf_keydef *k, const char *v, struct pm_config *c,
		    char *why, size_t whylen);

/* Canonical text of a key's value, as conf_print() writes it. */
void conf_keys_format(const struct conf_keydef *k, const struct pm_config *c,
		      char *buf, size_t n);

/* Number of elements of a list key (percentiles, buckets); 0 otherwise. */
unsigned conf_keys_list_length(const struct conf_keydef *k, const struct pm_config *c);

/* Element `i` of a list key, canonical text. */
void conf_keys_format_element(const struct conf_keydef *k, const struct pm_config *c,
			      unsigned i, char *buf, size_t n);

/* `v`, or "" in quotes when empty, for messages. */
const char *conf_keys_shown(const char *v);

/* "FILE:LINE", "command line (...)" or "default (...)" for origin `o`. */
void conf_keys_origin_text(const struct pm_config *c, const struct conf_origin *o,
			   char *buf, size_t n);

/*
 * One problem with key k, worded for where the value came from (`opt`
 * set: the command line; else `file` set: FILE:LINE; else a built-in
 * default), ending with what is allowed.
 */
void conf_keys_format_problem(char *buf, size_t n, const char *file, unsigned line,
			      const char *opt, const struct conf_keydef *k,
			      const char *value, const char *why);

/* The same, appended to `errs`. */
void conf_keys_add_problem(struct conf_msgs *errs, const char *file, unsigned line,
			   const char *opt, const struct conf_keydef *k,
			   const char *value, const char *why);

/* A problem found after merging, worded for the origin of `c`'s value. */
void conf_keys_add_merged_problem(struct conf_msgs *errs, const struct pm_config *c,
				  enum conf_key ki, const char *why);

#endif
