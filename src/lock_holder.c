/*
 * lock_holder.c - who holds a perfmond lock file (see lock_holder.h), read
 * from the kernel: F_GETLK for the holder, /proc for its user and program.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lock_holder.h"

pid_t lock_holder(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
		return 0;
	return fl.l_pid > 0 ? fl.l_pid : -1;
}

/* The effective uid of process `pid`, from /proc/PID/status. */
static int proc_euid(pid_t pid, uid_t *ret_uid)
{
	char path[64], line[256];
	unsigned long real, eff;
	int e = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %lu %lu", &real, &eff) == 2) {
			*ret_uid = (uid_t)eff;
			e = 0;
			break;
		}
	fclose(f);
	return e;
}

bool lock_holder_exe_named(const char *exe, const char *want)
{
	const char *base = strrchr(exe, '/');
	size_t wl = strlen(want);

	base = base ? base + 1 : exe;
	if (!strncmp(base, "lt-", 3))
		base += 3;
	return !strncmp(base, want, wl) && (base[wl] == '\0' || !strcmp(base + wl, " (deleted)"));
}

bool lock_holder_is_perfmond(pid_t pid, uid_t owner)
{
	char path[64], exe[PATH_MAX];
	struct stat mine, theirs;
	uid_t uid = (uid_t)-1;
	ssize_t n;

	if (pid <= 0)   /* an open file description lock: no process to check */
		return false;
	if (proc_euid(pid, &uid) < 0 || uid != owner)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &theirs) == 0 && stat("/proc/self/exe", &mine) == 0 &&
	    theirs.st_dev == mine.st_dev && theirs.st_ino == mine.st_ino)
		return true;
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0)   /* a process of the owner that is not dumpable: its uid decides */
		return errno == EACCES || errno == EPERM;
	exe[n] = '\0';
	return lock_holder_exe_named(exe, "perfmond");
}
