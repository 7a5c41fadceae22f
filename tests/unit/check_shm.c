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

#include "check_main.h"
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

/* The files of an instance, and which one speaks for its owner: the
 * control block, the ring only when the control block is gone. */
START_TEST(test_segment_files_and_owner)
{
	const char *name = test_shm_name("owner");
	struct shm_geometry g = geo(1024, 16);
	struct shm_instance inst;
	char err[512], ring[SHM_FILE_PATH_MAX], meta[SHM_FILE_PATH_MAX];
	struct stat st;

	ck_assert_int_eq(shm_file_path(name, SHM_PART_RING, ring, sizeof(ring)), 0);
	ck_assert_int_eq(shm_file_path(name, SHM_PART_META, meta, sizeof(meta)), 0);
	ck_assert_int_eq(strncmp(ring, "/dev/shm/", 9), 0);
	ck_assert_str_eq(ring + 9, name);
	ck_assert_int_eq(strncmp(meta, ring, strlen(ring)), 0);
	ck_assert_str_eq(meta + strlen(ring), ".meta");
	ck_assert_int_eq(shm_file_path("../x", SHM_PART_RING, ring, sizeof(ring)), -EINVAL);
	ck_assert_int_eq(shm_file_path(name, SHM_PART_RING, ring, 12), -ENAMETOOLONG);
	shm_file_path(name, SHM_PART_RING, ring, sizeof(ring));

	ck_assert_int_eq(shm_segment_stat(name, &st), -ENOENT);
	ck_assert_int_eq(shm_create_or_open(name, &g, &inst, err, sizeof(err)), 0);
	/* Told apart by their modes. */
	ck_assert_int_eq(chmod(ring, 0600), 0);
	ck_assert_int_eq(chmod(meta, 0640), 0);
	ck_assert_int_eq(shm_segment_stat(name, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_uint_eq(st.st_uid, geteuid());
	ck_assert_int_eq(unlink(meta), 0);
	ck_assert_int_eq(shm_segment_stat(name, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	test_destroy(&inst);
	ck_assert_int_eq(shm_segment_stat(name, &st), -ENOENT);
}
END_TEST

/* The mapping of `capacity` onto sub-rings that docs/shm-layout.md
 * documents ("How capacity maps onto sub-rings"), table rows included. */
START_TEST(test_ring_geometry_table)
{
	static const struct {
		uint64_t capacity;
		unsigned cpus;
		uint64_t slots;        /* per sub-ring */
		uint32_t subrings;
		uint64_t slot_bytes;   /* the table's ring size: slots only */
	} t[] = {
		{ 65536, 2, 32768, 2, 2u << 20 },
		{ 65536, 8, 8192, 8, 2u << 20 },
		{ 65536, 64, 8192, 64, 16u << 20 },
		{ 65536, 256, 8192, 256, 64u << 20 },
		{ 65536, 1, 65536, 1, 2u << 20 },
		{ 65536, 3, 16384, 4, 2u << 20 },       /* rounded up to a power of two */
		{ 65536, 100000, 8192, 4096, 1u << 30 }, /* at most 4096 sub-rings */
		{ 1048576, 2, 524288, 2, 32u << 20 },
		{ 4, 64, 2, 64, 4096 },                  /* at least 2 slots each */
	};

	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint64_t slots = 0;
		uint32_t subrings = 0;
		shm_ring_geometry(t[i].capacity, t[i].cpus, &slots, &subrings);
		ck_assert_msg(slots == t[i].slots && subrings == t[i].subrings,
			      "capacity %llu on %u CPUs: %u x %llu, want %u x %llu",
			      (unsigned long long)t[i].capacity, t[i].cpus, subrings,
			      (unsigned long long)slots, t[i].subrings,
			      (unsigned long long)t[i].slots);
		ck_assert_uint_eq(slots * subrings * sizeof(struct perfmon_slot), t[i].slot_bytes);
		ck_assert_uint_eq(PERFMON_RING_BYTES(subrings, slots),
				  256 + 128 * (uint64_t)subrings + t[i].slot_bytes);
	}
}
END_TEST

/* The kernel's CPU lists, as in /sys/devices/system/cpu/possible. */
START_TEST(test_cpu_list_count)
{
	ck_assert_uint_eq(shm_cpu_list_count("0-63\n"), 64);
	ck_assert_uint_eq(shm_cpu_list_count("0-1"), 2);
	ck_assert_uint_eq(shm_cpu_list_count("0,2-5\n"), 6);
	ck_assert_uint_eq(shm_cpu_list_count("0\n"), 1);
	ck_assert_uint_eq(shm_cpu_list_count("7"), 8);
	ck_assert_uint_eq(shm_cpu_list_count(""), 0);
	ck_assert_uint_eq(shm_cpu_list_count("\n"), 0);
	ck_assert_uint_eq(shm_cpu_list_count("0-99999999999999999999"), PERFMON_MAX_SUBRINGS);
	/* this host: at least one, and no fewer than it has online */
	ck_assert_uint_ge(shm_possible_cpus(), 1);
	ck_assert_uint_ge(shm_possible_cpus(), (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shm");
	TCase *tc = tcase_create("segments");

	tcase_add_test(tc, test_create_layout_and_mode);
	tcase_add_test(tc, test_reopen_keeps_ring_and_names);
	tcase_add_test(tc, test_geometry_mismatch_refused);
	tcase_add_test(tc, test_bad_names);
	tcase_add_test(tc, test_corrupt_refused);
	tcase_add_test(tc, test_partial_refused);
	tcase_add_test(tc, test_symlink_refused);
	tcase_add_test(tc, test_no_space_fails_at_start);
	tcase_add_test(tc, test_open_existing_missing);
	tcase_add_test(tc, test_segment_files_and_owner);
	tcase_add_test(tc, test_ring_geometry_table);
	tcase_add_test(tc, test_cpu_list_count);
	suite_add_tcase(s, tc);
	return check_run(s);
}
