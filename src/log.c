/*
 * log.c - stderr logging that journald understands.
 *
 * Under systemd, stderr is a stream to journald and the environment names
 * it in JOURNAL_STREAM; each line then starts with "<N>" so the journal
 * records its priority.  Elsewhere lines carry the program name instead.
 * One write per message, so lines from the two threads never interleave.
 */
#include "build-config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static int journal;
static const char *prog = "perfmond";

void log_init(const char *progname)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (progname)
		prog = progname;
	journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
		  fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
		  (unsigned long long)st.st_ino == ino;
}

const char *log_prefix(int priority)
{
	static char buf[8][64];
	static unsigned n;
	char *b = buf[n++ % 8];

	if (journal)
		snprintf(b, sizeof(buf[0]), "<%d>", priority);
	else
		snprintf(b, sizeof(buf[0]), "%s: %s", prog,
			 priority <= LOG_ERR ? "error: " : priority == LOG_WARNING ? "warning: " : "");
	return b;
}

void log_msg(int priority, const char *fmt, ...)
{
	char buf[2048];
	size_t n;
	va_list ap;

	if (journal)
		n = (size_t)snprintf(buf, sizeof(buf), "<%d>", priority);
	else
		n = (size_t)snprintf(buf, sizeof(buf), "%s: %s", prog,
				     priority <= LOG_ERR ? "error: " :
				     priority == LOG_WARNING ? "warning: " : "");
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(buf);
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, n) < 0)
		return;
}
