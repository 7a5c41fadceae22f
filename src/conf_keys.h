/*
 * conf_keys.h - inside the configuration (conf.h lists its layers): the
 * key table built from CONF_KEYS and what conf.c and cmdline.c need of
 * conf_keys.c.  Included by conf*.c and cmdline.c alone.
 */
#ifndef PERFMOND_CONF_KEYS_H
#define PERFMOND_CONF_KEYS_H

#include "conf.h"

/* `v`, or "" in quotes when empty, for messages. */
#define CONF_SHOWN(v) ((v)[0] ? (v) : "\"\"")

enum conf_type {
	CONF_T_NAME, CONF_T_COUNT, CONF_T_POW2, CONF_T_MODE, CONF_T_GROUP, CONF_T_CPU,
	CONF_T_DURATION, CONF_T_SIZE, CONF_T_BOOL, CONF_T_PATH, CONF_T_UNIT,
	CONF_T_PERCENTILES, CONF_T_BUCKETS,
};

/* One key, indexed by enum conf_key: CONF_KEYS' columns, the field as its
 * offset and size. */
struct conf_keydef {
	const char *section, *name;
	enum conf_type type;
	size_t off, size;
	uint64_t min, max;
	const char *zero, *def;
	bool live;
};
extern const struct conf_keydef conf_keys[CONF_KEY_COUNT];

/* The canonical text of a key's value, as conf_print() writes it (a list's
 * elements joined with ", "); equal texts mean equal values.  Any value's
 * text fits CONF_VALUE_MAX: 256 bounds of up to 16 characters and ", ". */
#define CONF_VALUE_MAX 8192
void conf_keys_format(int ki, const struct pm_config *c, char *buf, size_t n);

/*
 * Parse `v` into key `ki` of `c` and record `o` as where it came from: 0;
 * or a negative errno, both left as they were, and a line in `m` worded for
 * `o` (a CONF_SRC_FILE origin is a line of c->config_path) that ends with
 * what the key allows:
 *   FILE:LINE: [section] key = value: why; allowed: ...
 *   command line: --option value: why; allowed: ...
 *   built-in default: [section] key = value: why; allowed: ...
 */
int conf_keys_set(struct pm_config *c, int ki, const char *v, const struct conf_origin *o,
		  struct msgs *m);

/* The same line about key `ki` of a loaded configuration, its value and
 * origin as `c` has them; "; allowed: ..." only for a `problem` (not a
 * warning). */
void conf_keys_report(struct msgs *m, const struct pm_config *c, int ki, const char *why,
		      bool problem);

/* Check a command-line value for `k` as conf_load() would: 0, or a negative
 * errno with a whole message ("command line: --capacity 1000: ...") in
 * `err`; `opt` is the option. */
int conf_check_option(enum conf_key k, const char *opt, const char *value,
		      char *err, size_t errlen);

#endif
