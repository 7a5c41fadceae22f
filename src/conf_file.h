/*
 * conf_file.h - the perfmond.conf(5) reader: INI text, line by line, into
 * the fields of a struct pm_config, every problem reported with FILE:LINE.
 *
 * Flow: beside the data path; conf_load() (conf.c) calls it between the
 * built-in defaults and the command-line values.
 */
#ifndef PERFMOND_CONF_FILE_H
#define PERFMOND_CONF_FILE_H

#include "conf.h"

/*
 * Read `path` into `c`, key by key, and record where each value came from
 * in c->origin.  Every problem of the file goes to `errs` as one line; the
 * keys that parsed are set in `c` even then, so the caller parses into a
 * staging copy.  Returns 0, or a negative errno (-EINVAL when the file had
 * problems, the open or read error otherwise).
 */
int conf_file_read(struct pm_config *c, const char *path, struct conf_msgs *errs);

#endif
