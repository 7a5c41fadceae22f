/*
 * output_lock.h - one perfmond per output file.
 *
 * Flow: at start (and when a reload names a new path) the daemon takes a
 * lock for each output it writes - CSV, summary, Prometheus textfile -
 * before it creates or writes anything; a second daemon configured with
 * the same path is refused and told which process writes it.
 *
 * The lock is a POSIX record lock (fcntl F_SETLK) on `.<name>.lock` beside
 * the output: the outputs themselves are renamed by rotation and logrotate
 * and replaced whole by the atomic writers, so a lock on the output's own
 * inode would not stay on the path.  The kernel drops the lock when the
 * daemon dies, however it dies; F_GETLK names the holder's pid.  The file
 * is 0600, and a holder that is not a perfmond of the file's owner (one
 * that opened a file a killed daemon left behind) loses it
 * (lock_holder.h).
 */
#ifndef PERFMOND_OUTPUT_LOCK_H
#define PERFMOND_OUTPUT_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct output_lock {
	int fd;                 /* -1: not held */
	char path[4096];        /* the lock file */
};

#define OUTPUT_LOCK_INIT { -1, "" }

/*
 * Take the lock of output `path` (`what` words messages: "CSV",
 * "summary", "textfile").  0; -EBUSY when another process holds it, with
 * `err` naming that process; another negative errno when the lock file
 * cannot be made (the daemon then goes on without the lock, warned).
 * `*ret` is only written on success.
 */
int output_lock_take(struct output_lock *ret, const char *path, const char *what,
		     char *err, size_t errlen);

/*
 * Is `l` held on the lock file of output `path` (the same file, however
 * the path spells it)?  Taking that lock again and releasing `l` would
 * lose it: a POSIX lock belongs to the process and the file, so closing
 * any descriptor of the file drops it, and the release unlinks the file.
 */
bool output_lock_holds(const struct output_lock *l, const char *path);

/* Give the lock back and remove the lock file (safe against a concurrent
 * taker, who re-checks that the file it locked is still the one at the
 * path). */
void output_lock_release(struct output_lock *l);

#endif
