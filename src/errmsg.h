/*
 * errmsg.h - how a function hands back what went wrong: a message in the
 * caller's buffer and, with errmsg(), the code it returns.  A NULL buffer
 * or a zero length writes nothing.
 */
#ifndef PERFMOND_ERRMSG_H
#define PERFMOND_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline void errmsg_v(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
}

/* Write the message; nothing else. */
static inline __attribute__((format(printf, 3, 4))) void errmsg_set(char *err, size_t errlen,
								      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errmsg_v(err, errlen, fmt, ap);
	va_end(ap);
}

/* Write the message and return `code`: `return errmsg(err, errlen, -EIO, ...)`. */
static inline __attribute__((format(printf, 4, 5))) int errmsg(char *err, size_t errlen, int code,
							     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errmsg_v(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

#endif /* PERFMOND_ERRMSG_H */
