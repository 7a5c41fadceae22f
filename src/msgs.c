/*
 * msgs.c - a bounded list of lines (msgs.h).  Only whole lines are kept:
 * a message cut off in the middle would mislead.
 */
#include "build-config.h"

#include <stdarg.h>
#include <string.h>

#include "msgs.h"

void msgs_init(struct msgs *m)
{
	m->len = m->count = m->dropped = 0;
	m->text[0] = '\0';
}

void msgs_add(struct msgs *m, const char *fmt, ...)
{
	size_t room = sizeof(m->text) - m->len;
	va_list ap;
	int n;

	m->count++;
	va_start(ap, fmt);
	n = vsnprintf(m->text + m->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n + 2 > room) {
		m->text[m->len] = '\0';
		m->dropped++;
		return;
	}
	m->len += (size_t)n;
	m->text[m->len++] = '\n';
	m->text[m->len] = '\0';
}

void msgs_print(FILE *f, const struct msgs *m, const char *prefix)
{
	prefix = prefix ? prefix : "";
	for (const char *s = m->text, *nl; (nl = strchr(s, '\n')); s = nl + 1)
		fprintf(f, "%s%.*s\n", prefix, (int)(nl - s), s);
	if (m->dropped)
		fprintf(f, "%s(%u more not shown)\n", prefix, m->dropped);
}
