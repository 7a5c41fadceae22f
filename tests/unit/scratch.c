/*
 * scratch.c - the scratch directory shared by the file-writing Check suites
 * (tests of the CSV, summary and Prometheus writers and of the
 * configuration).  Fixtures call scratch_create() and scratch_remove() so a
 * failed test leaves nothing behind; the tests build paths inside it, read
 * files back whole, and may build a comma-decimal locale there.
 */
#include "build-config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "scratch.h"

static char scratch[3000];

void scratch_create(const char *tag)
{
	const char *dir = getenv("TMPDIR");

	snprintf(scratch, sizeof(scratch), "%s/%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
	ck_assert_ptr_nonnull(mkdtemp(scratch));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void scratch_remove(void)
{
	if (scratch[0])
		nftw(scratch, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

const char *scratch_dir(void)
{
	return scratch;
}

char *scratch_path(const char *name)
{
	static char buf[8][4096];
	static unsigned next;
	char *p = buf[next++ % 8];

	snprintf(p, sizeof(buf[0]), "%s/%s", scratch, name);
	return p;
}

unsigned scratch_count(const char *prefix)
{
	DIR *d = opendir(scratch);
	struct dirent *de;
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

char *scratch_slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (ret_len)
		*ret_len = (size_t)n;
	return buf;
}

bool scratch_comma_locale(void)
{
	static const char *const names[] = {
		"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "nl_NL.UTF-8", "ru_RU.UTF-8",
	};
	char cmd[9000], src[4200], dir[4096];
	FILE *f;

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (setlocale(LC_NUMERIC, names[i]) && !strcmp(localeconv()->decimal_point, ","))
			return true;
	snprintf(dir, sizeof(dir), "%s/locale", scratch);
	/* A second call in the same directory reuses what the first built. */
	if (mkdir(dir, 0700) && errno != EEXIST)
		return false;
	snprintf(src, sizeof(src), "%s/comma.src", dir);
	f = fopen(src, "w");
	if (!f)
		return false;
	fputs("LC_NUMERIC\ndecimal_point \",\"\nthousands_sep \".\"\ngrouping 3;3\n"
	      "END LC_NUMERIC\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "localedef -i '%s' -f ANSI_X3.4-1968 -c '%s/comma' "
		 ">/dev/null 2>&1", src, dir);
	if (system(cmd) == -1)
		return false;
	setenv("LOCPATH", dir, 1);
	return setlocale(LC_NUMERIC, "comma") && !strcmp(localeconv()->decimal_point, ",");
}
