/*
 * log.h - the daemon's messages: stderr, with sd-daemon priority prefixes
 * ("<3>") when stderr is connected to the journal, plain otherwise.
 */
#ifndef PERFMOND_LOG_H
#define PERFMOND_LOG_H

#include <syslog.h>

/* Detect journald on stderr (JOURNAL_STREAM matches stderr's device:inode). */
void log_init(const char *progname);

/* What starts a line at `priority`: "<N>" under journald, else
 * "perfmond: " (and "error: "/"warning: "), for text printed by others. */
const char *log_prefix(int priority);

/* Log at a syslog priority (LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO). */
void log_msg(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...)  log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)    log_msg(LOG_INFO, __VA_ARGS__)

#endif
