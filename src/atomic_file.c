/*
 * atomic_file.c - whole-file replacement by temporary file and rename.
 */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "errmsg.h"

int atomic_file_write(const char *path, mode_t mode, bool sync, const char *what,
		      atomic_file_fill fill, void *arg, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char tmp[8192];
	FILE *f;
	int fd, e;

	if (!*base) {
		errmsg_set(err, errlen, "%s: names a directory, not a file", path);
		return -EISDIR;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX", (int)(base - path), path,
			     base) >= sizeof(tmp)) {
		errmsg_set(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		e = errno;
		errmsg_set(err, errlen, "%s: cannot create a temporary file beside it (%s): %s", path,
		           tmp, strerror(e));
		return -e;
	}
	if (fchmod(fd, mode) < 0 || !(f = fdopen(fd, "w"))) {
		e = errno;
		close(fd);
		errmsg_set(err, errlen, "%s: temporary %s: %s", path, tmp, strerror(e));
		goto error_tmp;
	}
	e = fill(f, arg);
	if (e < 0 && e != -EIO) {
		fclose(f);
		e = -e;
		errmsg_set(err, errlen, "%s: cannot build the %s: %s", path, what, strerror(e));
		goto error_tmp;
	}
	if (fflush(f) != 0 || ferror(f) || (sync && fsync(fd) < 0)) {
		e = errno ? errno : EIO;
		fclose(f);
		errmsg_set(err, errlen, "%s: cannot write the %s (temporary %s): %s", path, what, tmp,
		           strerror(e));
		goto error_tmp;
	}
	if (fclose(f) != 0) {
		e = errno;
		errmsg_set(err, errlen, "%s: cannot close the %s (temporary %s): %s", path, what, tmp,
		           strerror(e));
		goto error_tmp;
	}
	if (rename(tmp, path) < 0) {
		e = errno;
		errmsg_set(err, errlen, "%s: cannot replace it with the new %s: %s", path, what,
		           strerror(e));
		goto error_tmp;
	}
	return 0;

error_tmp:
	unlink(tmp);
	return -e;
}
