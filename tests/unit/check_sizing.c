/*
 * check_sizing.c - the memory limit of the collector's cgroup, as
 * sizing_memory_limit() reads it from /proc/self/cgroup and the cgroup
 * file system: here both are files made in a scratch directory, for
 * cgroup v2 (memory.max) and v1 (memory.limit_in_bytes of the memory
 * controller), limited or not, on the cgroup itself or an ancestor.
 */
#include "build-config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "sizing.h"

static char top[256];

/* Write `text` to top/rel, making the directories on the way. */
static void put(const char *rel, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	for (char *p = path + strlen(top) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static double limit(void)
{
	char self[300], root[300];
	snprintf(self, sizeof(self), "%s/self_cgroup", top);
	snprintf(root, sizeof(root), "%s/fs", top);
	return sizing_memory_limit(self, root);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(top, sizeof(top), "%s/pmt-sizing.XXXXXX", tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(top));
}

static void teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_v2_ancestor_binds)
{
	put("self_cgroup", "0::/system.slice/perfmond@x.service\n");
	put("fs/system.slice/perfmond@x.service/memory.max", "max\n");
	put("fs/system.slice/memory.max", "1073741824\n");
	ck_assert(limit() == 1073741824.0);
	/* The tighter of the two, wherever it is. */
	put("fs/system.slice/perfmond@x.service/memory.max", "268435456\n");
	ck_assert(limit() == 268435456.0);
}
END_TEST

START_TEST(test_v2_unlimited)
{
	put("self_cgroup", "0::/user.slice\n");
	put("fs/user.slice/memory.max", "max\n");
	ck_assert(limit() == 0);
	put("self_cgroup", "0::/\n");     /* a container's root: no file at all */
	ck_assert(limit() == 0);
}
END_TEST

START_TEST(test_v1_memory_controller)
{
	put("self_cgroup", "9:name=systemd:/\n5:cpu,cpuacct:/a\n4:memory:/a/b\n0::/\n");
	put("fs/memory/memory.limit_in_bytes", "9223372036854771712\n");   /* unlimited */
	put("fs/memory/a/b/memory.limit_in_bytes", "536870912\n");
	put("fs/cpu,cpuacct/a/memory.limit_in_bytes", "1\n");  /* not the memory controller */
	ck_assert(limit() == 536870912.0);
	put("self_cgroup", "4:blkio,memory:/a/b\n");
	ck_assert(limit() == 536870912.0);
	put("fs/memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
	ck_assert(limit() == 0);
}
END_TEST

START_TEST(test_unreadable)
{
	ck_assert(limit() == 0);   /* no /proc/self/cgroup */
	put("self_cgroup", "garbage without colons\n::\n");
	ck_assert(limit() == 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sizing");
	TCase *tc = tcase_create("cgroup");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_v2_ancestor_binds);
	tcase_add_test(tc, test_v2_unlimited);
	tcase_add_test(tc, test_v1_memory_controller);
	tcase_add_test(tc, test_unreadable);
	suite_add_tcase(s, tc);
	return check_run(s);
}
