/*
 * lock_holder.h - who holds a perfmond lock file, and whether that holder
 * may be believed.
 *
 * The collector's lock (channel.c) and the output locks (output_lock.c)
 * are fcntl record locks on files beside what they guard.  The kernel
 * names a lock's holder (F_GETLK), but anyone who can open such a file can
 * lock it, and a file outlives a collector killed with SIGKILL: a holder
 * counts only when it is perfmond running as the file's owner.
 */
#ifndef PERFMOND_LOCK_HOLDER_H
#define PERFMOND_LOCK_HOLDER_H

#include <stdbool.h>
#include <sys/types.h>

/* The process holding a lock on any part of `fd`'s file: its pid, 0 when
 * nobody holds one, -1 for an open file description lock (no pid). */
pid_t lock_holder(int fd);

/* Is the basename of `exe` (a /proc/PID/exe link) `want`?  libtool's
 * "lt-" prefix and the " (deleted)" of an upgraded binary are allowed. */
bool lock_holder_exe_named(const char *exe, const char *want);

/*
 * May holder `pid` of a lock file owned by `owner` be taken for a
 * perfmond?  Only a process running as `owner` whose executable is
 * perfmond (by name, or the very file this process runs: perfmond under
 * another name, or a test's stand-in).  Who asks -- the owner (the files
 * are 0600) and root -- sees the owner's processes in /proc whatever its
 * hidepid= option, so a holder that cannot be seen, or an open file
 * description lock, is no perfmond.
 */
bool lock_holder_is_perfmond(pid_t pid, uid_t owner);

#endif
