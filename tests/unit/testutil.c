/*
 * testutil.c - helpers shared by the Check suites.
 */
#include "build-config.h"

#include <check.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

const char *test_shm_name(const char *tag)
{
	static char buf[8][96];
	static unsigned n;
	char *b = buf[n % 8];
	snprintf(b, sizeof(buf[0]), "pmt-%s-%d-%u", tag, (int)getpid(), n);
	n++;
	return b;
}

void test_create(const char *name, uint64_t capacity, uint32_t max_names,
		 struct shm_instance *ret)
{
	struct shm_geometry g = { capacity, 1, max_names, 0660, (gid_t)-1 };
	char err[512];
	int e = shm_create_or_open(name, &g, ret, err, sizeof(err));
	ck_assert_msg(e == 0, "create %s: %s", name, err);
}

void test_create_sub(const char *name, uint32_t subrings, uint64_t capacity,
		     uint32_t max_names, struct shm_instance *ret)
{
	struct shm_geometry g = { capacity, subrings, max_names, 0660, (gid_t)-1 };
	char err[512];
	int e = shm_create_or_open(name, &g, ret, err, sizeof(err));
	ck_assert_msg(e == 0, "create %s: %s", name, err);
}

void test_destroy(struct shm_instance *inst)
{
	char name[sizeof(inst->name)];
	snprintf(name, sizeof(name), "%s", inst->name);
	shm_close(inst);
	shm_remove(name);
}

uint64_t test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int test_segment_exists(const char *name, const char *suffix)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "/dev/shm/%s%s", name, suffix);
	return lstat(path, &st) == 0;
}
