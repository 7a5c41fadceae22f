/*
 * msgs.h - a bounded list of human-readable lines: the configuration's
 * errors and warnings, the sizing checks, what a reload changed.  Each is
 * reported at once, after everything has been looked at.
 */
#ifndef PERFMOND_MSGS_H
#define PERFMOND_MSGS_H

#include <stddef.h>
#include <stdio.h>

#define MSGS_SIZE 16384         /* room for a reload line quoting two long lists */

struct msgs {
	unsigned count;         /* lines added, including any that did not fit */
	unsigned dropped;       /* lines that did not fit into text */
	size_t len;
	char text[MSGS_SIZE];   /* '\n'-terminated lines */
};

/* Empty the list; add a line (printf-style, no newline), counted in
 * `dropped` unless it fits whole; print each after `prefix` (or NULL). */
void msgs_init(struct msgs *m);
void msgs_add(struct msgs *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void msgs_print(FILE *f, const struct msgs *m, const char *prefix);

#endif
