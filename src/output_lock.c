/*
 * output_lock.c - the lock that keeps two daemons from writing one output
 * file (see output_lock.h for why it sits in a file beside the output).
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lock_holder.h"
#include "output_lock.h"

/* "<dir>/.<name>.lock" for output "<dir>/<name>". */
static int lock_path(const char *path, char *out, size_t n)
{
	const char *slash = strrchr(path, '/');
	int len;

	if (slash)
		len = snprintf(out, n, "%.*s/.%s.lock", (int)(slash - path), path, slash + 1);
	else
		len = snprintf(out, n, ".%s.lock", path);
	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

static void describe_holder(pid_t pid, char *buf, size_t n)
{
	char p[64], comm[64] = "";
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%ld/comm", (long)pid);
	if ((f = fopen(p, "re"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	if (!strcmp(comm, "perfmond"))
		snprintf(buf, n, "another perfmond (pid %ld)", (long)pid);
	else if (comm[0])
		snprintf(buf, n, "process %ld (%s)", (long)pid, comm);
	else
		snprintf(buf, n, "process %ld", (long)pid);
}

static int refuse(const char *what, const char *path, pid_t pid, char *err, size_t errlen)
{
	char who[128];

	describe_holder(pid, who, sizeof(who));
	snprintf(err, errlen, "%s %s is being written by %s; two collectors must not write "
		 "one file: give this one its own path, or stop the other", what, path, who);
	return -EBUSY;
}

int output_lock_take(struct output_lock *ret, const char *path, const char *what,
		     char *err, size_t errlen)
{
	char lp[sizeof(ret->path)];
	int e;

	if ((e = lock_path(path, lp, sizeof(lp))) < 0) {
		snprintf(err, errlen, "%s %s: path too long for its lock file", what, path);
		return e;
	}
	/* A releasing daemon unlinks the file it held: what we lock must
	 * still be the file at the path, else try again. */
	for (int tries = 0; tries < 10; tries++) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		struct stat a, b;
		pid_t pid;
		int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);

		if (fd < 0) {
			e = -errno;
			/* Not ours to write, but perhaps readable: still say who holds it. */
			fd = open(lp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
			if (fd >= 0) {
				pid = lock_holder(fd);
				close(fd);
				if (pid > 0)
					return refuse(what, path, pid, err, errlen);
			}
			snprintf(err, errlen, "cannot create the lock file %s of %s %s: %s", lp,
				 what, path, strerror(-e));
			return e;
		}
		/* Whatever the umask, and for a file an older version left
		 * readable: nobody but the daemon's user may open it, so nobody
		 * else can hold it. */
		if (fchmod(fd, 0600) < 0 || fcntl(fd, F_SETLK, &fl) < 0) {
			e = -errno;
			if (e == -EAGAIN || e == -EACCES) {
				pid = lock_holder(fd);
				/* A file outlives a daemon killed with SIGKILL, and
				 * whoever had it open can lock it: only a perfmond of
				 * the file's owner is another collector.  Anything
				 * else loses the file, if it is still the one at the
				 * path. */
				if (pid != 0 && fstat(fd, &a) == 0 &&
				    !lock_holder_is_perfmond(pid, a.st_uid)) {
					if (lstat(lp, &b) == 0 && a.st_dev == b.st_dev &&
					    a.st_ino == b.st_ino)
						unlink(lp);
					close(fd);
					continue;
				}
				close(fd);
				if (pid > 0)
					return refuse(what, path, pid, err, errlen);
				continue;   /* released between our two looks */
			}
			close(fd);
			snprintf(err, errlen, "cannot lock %s (for %s %s): %s", lp, what, path,
				 strerror(-e));
			return e;
		}
		if (fstat(fd, &a) == 0 && stat(lp, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino) {
			ret->fd = fd;
			memcpy(ret->path, lp, sizeof(lp));
			return 0;
		}
		close(fd);
	}
	snprintf(err, errlen, "cannot lock %s (for %s %s): it keeps changing", lp, what, path);
	return -EAGAIN;
}

bool output_lock_holds(const struct output_lock *l, const char *path)
{
	char lp[sizeof(l->path)];
	struct stat a, b;

	return l->fd >= 0 && lock_path(path, lp, sizeof(lp)) == 0 && fstat(l->fd, &a) == 0 &&
	       stat(lp, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void output_lock_release(struct output_lock *l)
{
	if (l->fd < 0)
		return;
	/* Unlink while still holding the lock: a taker that opened the old
	 * file finds, once we let go, that it is no longer at the path. */
	unlink(l->path);
	close(l->fd);
	l->fd = -1;
	l->path[0] = '\0';
}
