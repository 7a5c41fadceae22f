/*
 * check_shm.c - segment creation, reopening, validation and removal.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm.h"
#include "testutil.h"

static struct shm_geometry geo(uint64_t cap, uint32_t names)
{
	struct shm_geometry g = { cap, 1, names, 0660, (gid_t)-1 };
	return g;
}

START_TEST(test_create_layout_and_mode)
{
	const char *name = test_shm_name("create");
	struct shm_geometry g = geo(1024, 16);
	struct shm_instance inst;
	char err[512], path[256];
	struct stat st;
	mode_t old = umask(077);   /* must not affect the segments' mode */

	ck_assert_int_eq(shm_create_or_open(name, &g, &inst, err, sizeof(err)), 0);
	umask(old);
	ck_assert(inst.created);
	ck_assert_uint_eq(inst.capacity, 1024);
	ck_assert_uint_eq(inst.max_names, 16);
	ck_assert_uint_eq(inst.ring->magic, PERFMON_RING_MAGIC);
	ck_assert_uint_eq(inst.meta->magic, PERFMON_META_MAGIC);
	ck_assert_uint_eq(inst.ring->instance_id, inst.meta->instance_id);
	ck_assert_uint_eq(inst.ring_len, PERFMON_RING_BYTES(1, 1024));
	/* Producers built for the shared-ring layouts accept version 1 or 2
	 * only: the per-CPU layout must never carry either. */
	ck_assert_uint_eq(inst.ring->version, 3);
	ck_assert_uint_eq(inst.meta->version, 3);
	ck_assert_uint_eq(inst.meta_len, PERFMON_META_BYTES(16));
	ck_assert_uint_eq(PERFMON_SUBRING(inst.ring, 0)->head, 0);
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0660);
	ck_assert_uint_eq((uint64_t)st.st_size, PERFMON_RING_BYTES(1, 1024));
	/* Space is reserved up front, not on first touch. */
	ck_assert_uint_ge((uint64_t)st.st_blocks * 512, PERFMON_RING_BYTES(1, 1024));
	snprintf(path, sizeof(path), "/dev/shm/%s.meta", name);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0660);
	test_destroy(&inst);
	ck_assert(!test_segment_exists(name, ""));
	ck_assert(!test_segment_exists(name, ".meta"));
}
END_TEST

START_TEST(test_reopen_keeps_ring_and_names)
{
	const char *name = test_shm_name("reopen");
	struct shm_geometry g = geo(256, 8);
	struct shm_instance a, b;
	char err[512];

	ck_assert_int_eq(shm_create_or_open(name, &g, &a, err, sizeof(err)), 0);
	PERFMON_SUBRING(a.ring, 0)->head = 12345;
	strcpy(a.names[0].label, "kept");
	a.names[0].key = PERFMON_NAME_KEY(3, 0);
	ck_assert_int_eq(shm_create_or_open(name, &g, &b, err, sizeof(err)), 0);
	ck_assert(!b.created);
	ck_assert_uint_eq(PERFMON_SUBRING(b.ring, 0)->head, 12345);
	ck_assert_str_eq(b.names[0].label, "kept");
	ck_assert_uint_eq(b.ring->instance_id, a.ring->instance_id);
	shm_close(&b);
	test_destroy(&a);
}
END_TEST

START_TEST(test_geometry_mismatch_refused)
{
	const char *name = test_shm_name("geom");
	struct shm_geometry g = geo(256, 8), g2 = geo(512, 8), g3 = geo(256, 9);
	struct shm_instance a, b;
	char err[512];

	ck_assert_int_eq(shm_create_or_open(name, &g, &a, err, sizeof(err)), 0);
	memset(&b, 0x5a, sizeof(b));
	ck_assert_int_eq(shm_create_or_open(name, &g2, &b, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "perfmonctl remove"));
	ck_assert_ptr_nonnull(strstr(err, "of 256 slots"));
	ck_assert_uint_eq(((unsigned char *)&b)[0], 0x5a);   /* untouched on failure */
	ck_assert_int_eq(shm_create_or_open(name, &g3, &b, err, sizeof(err)), -EEXIST);
	test_destroy(&a);
}
END_TEST

START_TEST(test_bad_names)
{
	struct shm_geometry g = geo(256, 8);
	struct shm_instance a;
	char err[512], longname[256];

	ck_assert_int_eq(shm_create_or_open("", &g, &a, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(shm_create_or_open(".hidden", &g, &a, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(shm_create_or_open("a/b", &g, &a, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(shm_create_or_open("sp ace", &g, &a, err, sizeof(err)), -EINVAL);
	/* x.meta would be the control block of x */
	ck_assert_int_eq(shm_create_or_open("x.meta", &g, &a, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(shm_remove("x.meta"), -EINVAL);
	memset(longname, 'x', 201);
	longname[201] = '\0';
	ck_assert_int_eq(shm_create_or_open(longname, &g, &a, err, sizeof(err)), -ENAMETOOLONG);
	ck_assert_ptr_nonnull(strstr(err, "invalid shm name"));
	g.capacity = 1000;
	ck_assert_int_eq(shm_create_or_open("pmt-cap", &g, &a, err, sizeof(err)), -EINVAL);
	ck_assert(!test_segment_exists("pmt-cap", ""));
}
END_TEST

START_TEST(test_corrupt_refused)
{
	const char *name = test_shm_name("corrupt");
	struct shm_geometry g = geo(256, 8);
	struct shm_instance a, b;
	char err[512];

	ck_assert_int_eq(shm_create_or_open(name, &g, &a, err, sizeof(err)), 0);
	a.ring->magic ^= 1;
	ck_assert_int_eq(shm_create_or_open(name, &g, &b, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "bad magic"));
	ck_assert_int_eq(shm_open_existing(name, false, &b, err, sizeof(err)), -EPROTO);
	a.ring->magic ^= 1;
	a.meta->version = 99;
	ck_assert_int_eq(shm_create_or_open(name, &g, &b, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "layout version"));
	a.meta->version = PERFMON_LAYOUT_VERSION;
	/* Segments of the shared-ring layouts, 1 and 2 (2 added the producer
	 * registry): refused, said why and what to do. */
	for (uint32_t v = 1; v <= 2; v++) {
		a.ring->version = a.meta->version = v;
		ck_assert_int_eq(shm_create_or_open(name, &g, &b, err, sizeof(err)), -EPROTO);
		ck_assert_ptr_nonnull(strstr(err, "an older layout (shared ring)"));
		ck_assert_ptr_nonnull(strstr(err, "perfmonctl remove"));
		ck_assert_int_eq(shm_open_existing(name, false, &b, err, sizeof(err)), -EPROTO);
	}
	a.ring->version = a.meta->version = PERFMON_LAYOUT_VERSION;
	a.ring->capacity = 1u << 20;   /* larger than the segment */
	ck_assert_int_eq(shm_open_existing(name, false, &b, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "corrupt"));
	a.ring->capacity = 256;
	a.meta->instance_id++;
	ck_assert_int_eq(shm_open_existing(name, false, &b, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "belong together"));
	a.meta->instance_id--;
	ck_assert_int_eq(shm_open_existing(name, false, &b, err, sizeof(err)), 0);
	ck_assert_uint_eq(b.capacity, 256);
	shm_close(&b);
	test_destroy(&a);
}
END_TEST

START_TEST(test_partial_refused)
{
	const char *name = test_shm_name("partial");
	struct shm_geometry g = geo(256, 8);
	struct shm_instance a;
	char err[512], obj[256];

	ck_assert_int_eq(shm_create_or_open(name, &g, &a, err, sizeof(err)), 0);
	shm_close(&a);
	snprintf(obj, sizeof(obj), "/%s.meta", name);
	ck_assert_int_eq(shm_unlink(obj), 0);
	ck_assert_int_eq(shm_create_or_open(name, &g, &a, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "does not"));
	ck_assert_int_eq(shm_remove(name), 0);
	ck_assert_int_eq(shm_remove(name), -ENOENT);
}
END_TEST

START_TEST(test_symlink_refused)
{
	const char *name = test_shm_name("link");
	struct shm_geometry g = geo(256, 8);
	struct shm_instance a;
	char err[512], path[256];

	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	ck_assert_int_eq(symlink("/dev/null", path), 0);
	snprintf(path, sizeof(path), "/dev/shm/%s.meta", name);
	ck_assert_int_eq(symlink("/dev/null", path), 0);
	ck_assert_int_lt(shm_create_or_open(name, &g, &a, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
	ck_assert_int_eq(shm_remove(name), 0);
}
END_TEST

START_TEST(test_no_space_fails_at_start)
{
	const char *name = test_shm_name("huge");
	struct shm_geometry g = geo(UINT64_C(1) << 42, 8);   /* 128 TiB */
	struct shm_instance a;
	char err[512];

	ck_assert_int_lt(shm_create_or_open(name, &g, &a, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "cannot reserve"));
	ck_assert(!test_segment_exists(name, ""));
	ck_assert(!test_segment_exists(name, ".meta"));
}
END_TEST

START_TEST(test_open_existing_missing)
{
	struct shm_instance a;
	char err[512];
	ck_assert_int_eq(shm_open_existing("pmt-never-created", false, &a, err, sizeof(err)),
			 -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shm");
	TCase *tc = tcase_create("segments");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_create_layout_and_mode);
	tcase_add_test(tc, test_reopen_keeps_ring_and_names);
	tcase_add_test(tc, test_geometry_mismatch_refused);
	tcase_add_test(tc, test_bad_names);
	tcase_add_test(tc, test_corrupt_refused);
	tcase_add_test(tc, test_partial_refused);
	tcase_add_test(tc, test_symlink_refused);
	tcase_add_test(tc, test_no_space_fails_at_start);
	tcase_add_test(tc, test_open_existing_missing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
