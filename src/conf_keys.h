/*
 * conf_keys.h - the table of INI keys and what it drives, one path per
 * value type: a key's text to its field and back, equality, and the words
 * for a value that is not allowed.  Also home to conf.h's message lists.
 *
 * Flow: below the INI reader (conf_file.c), the command line (cmdline.c)
 * and the loader (conf.c), which all find every key here, so a key is
 * described once; the values themselves are parsed by conf_value.c.
 */
#ifndef PERFMOND_CONF_KEYS_H
#define PERFMOND_CONF_KEYS_H

#include "conf.h"

enum conf_type {
	CONF_T_NAME,            /* shm name, CONF_NAME_RULE */
	CONF_T_COUNT,           /* uint32_t in [min, max] */
	CONF_T_POW2,            /* uint32_t power of two in [min, max] */
	CONF_T_MODE,            /* mode_t, octal */
	CONF_T_GROUP,           /* group name or number */
	CONF_T_CPU,             /* int, -1 for none */
	CONF_T_DURATION,        /* uint64_t ns; 0 allowed when `zero` is set */
	CONF_T_SIZE,            /* uint64_t bytes; 0 allowed when `zero` is set */
	CONF_T_BOOL,
	CONF_T_PATH,            /* "" : no file */
	CONF_T_UNIT,            /* enum report_unit */
	CONF_T_PERCENTILES,     /* struct conf_percentiles */
	CONF_T_BUCKETS,         /* struct conf_buckets, bounds in [min, max] */
};

struct conf_keydef {
	const char *section;
	const char *name;
	enum conf_type type;
	size_t off, size;       /* the field in struct pm_config */
	uint64_t min, max;
	const char *zero;       /* what 0 means, when 0 is allowed */
	const char *def;        /* the built-in default; NULL: conf.c works it out */
	bool live;              /* can change on SIGHUP */
};

/* Every key, indexed by enum conf_key, in the order of conf_print(). */
extern const struct conf_keydef conf_keys[CONF_KEY_COUNT];

/* percentiles and buckets: values that may go on over indented lines. */
#define CONF_IS_LIST(k) ((k)->type == CONF_T_PERCENTILES || (k)->type == CONF_T_BUCKETS)

/* Room for the text of any value: 256 bounds of up to 16 characters and ", ". */
#define CONF_VALUE_MAX 8192

/* `v`, or "" in quotes when empty, for messages. */
#define CONF_SHOWN(v) ((v)[0] ? (v) : "\"\"")

/* Index (enum conf_key) of `name` in `section`, or -1. */
int conf_keys_find(const char *section, const char *name);

/* Parse `v` for key `ki` into its field of `c`: 0, or a negative errno with
 * the reason in `why` and the field untouched. */
int conf_keys_parse(int ki, const char *v, struct pm_config *c, char *why, size_t whylen);

/* Canonical text of a key's value, as conf_print() writes it; a list's
 * elements are joined with ", ". */
void conf_keys_format(int ki, const struct pm_config *c, char *buf, size_t n);

/* Whether key `ki` has the same value in `a` and `b`. */
bool conf_keys_same(int ki, const struct pm_config *a, const struct pm_config *b);

/*
 * Add a problem with key `ki` to `errs`, worded for where the value came
 * from, `o` (`file`: the config file of a CONF_SRC_FILE origin):
 *   FILE:LINE: [section] key = value: what is wrong; allowed: ...
 *   command line: --option value: what is wrong; allowed: ...
 *   built-in default: [section] key = value: what is wrong; allowed: ...
 */
void conf_keys_add_problem(struct conf_msgs *errs, const char *file,
			   const struct conf_origin *o, int ki, const char *value,
			   const char *why);

/* Check one command-line value for `k` as conf_load() would, so a bad
 * option is a usage error: 0, or a negative errno with a whole message
 * ("command line: --capacity 1000: ...") in `err`; `opt` is the option. */
int conf_check_option(enum conf_key k, const char *opt, const char *value,
		      char *err, size_t errlen);

#endif
