/*
 * atomic_file.h - replace a file atomically: write a temporary beside it,
 * then rename it over the target, so a reader sees the old file or the new
 * one and never half of either.
 *
 * Used by the writers that regenerate a whole file (summary.c,
 * prom_out.c); the CSV appends and does not need it.
 */
#ifndef PERFMOND_ATOMIC_FILE_H
#define PERFMOND_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Write the content into `f`; 0 or a negative errno (the message says what
 * `what` could not be built). */
typedef int (*atomic_file_fill)(FILE *f, void *arg);

/*
 * Replace `path` with what `fill` writes.  The temporary is
 * `<dir>/.<name>.XXXXXX` (mkstemp: never follows a symlink, never clobbers;
 * a dot name that collectors such as node_exporter ignore), given `mode`
 * whatever the umask, synced first when `sync`.  A symlink at `path` is
 * replaced, not written through.  On failure the temporary is removed, the
 * old file is left as it was, and `err` names the path and the reason;
 * `what` ("summary", "exposition") words the message.
 */
int atomic_file_write(const char *path, mode_t mode, bool sync, const char *what,
		      atomic_file_fill fill, void *arg, char *err, size_t errlen);

#endif
