/*
 * segtool.c - test helper: create, drain and remove segments, and act as a
 * producer process (auto-attached from the environment, or leaving a hole)
 * so tests can exercise the protocol across processes without the daemon.
 *
 *   segtool create NAME CAPACITY [MAX_NAMES]
 *   segtool remove NAME
 *   segtool drain NAME            read everything from index 0; print counts
 *   segtool autostamp POINT PAIRS stamp begin/end pairs on the ring attached
 *                                 at load time from SLICK_PERFMON_SHM
 *   segtool at-main               print "cpu_ns N enabled E": the CPU time
 *                                 the process had used when main() began
 *                                 (load-time attach included), and whether
 *                                 that attach succeeded
 *   segtool stamp NAME POINT PAIRS  explicit attach, then stamp
 *   segtool hole NAME             reserve one slot and exit without publishing
 *   segtool wait-ready NAME SECS  wait until a collector runs on NAME
 *   segtool status NAME           print the collector status fields
 *   segtool garbage NAME          overwrite the control block's header and
 *                                 status block with garbage, as a producer can
 *   segtool poke NAME FIELD VALUE write one control-block field: reader_tail,
 *                                 collector_pid, collector_state, heartbeat_ns,
 *                                 summary_path, csv_path
 *   segtool poke-ring NAME FIELD VALUE  write `head` or `reader_tail` of
 *                                 every sub-ring: VALUE, or -N / +N to
 *                                 move each by N (modulo 2^64)
 *   segtool truncate NAME SUFFIX BYTES  ftruncate /dev/shm/NAME<SUFFIX>
 *   segtool rundir [UID]          the collectors' runtime directory of UID
 *   segtool shrink-window NAME SUFFIX BYTES  shrink the segment and print
 *                                 how long (us) until its size is back
 *   segtool hold-lock FILE SECS   take a read lock on FILE ("-": the file
 *                                 open on stdin), print "held", keep it
 *                                 SECS seconds: a forger of liveness
 *
 * remove also removes this user's collector files of NAME (lock, socket,
 * state) from its runtime directory.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfmon.h>

#include "../unit/testrand.h"
#include "channel.h"
#include "ring_reader.h"
#include "shm.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmd_drain(const char *name)
{
	enum { MAXP = 1024 };
	static uint64_t per_point[MAXP];
	struct shm_instance inst;
	struct ring_reader rd;
	struct perfmon_event ev[256];
	char err[512];
	uint64_t deadline, *zeros;
	size_t n;

	if (shm_open_existing(name, false, &inst, err, sizeof(err)) < 0) {
		fprintf(stderr, "segtool: %s\n", err);
		return 1;
	}
	zeros = calloc(inst.subrings, sizeof(*zeros));
	if (!zeros || ring_reader_init(&rd, inst.ring, inst.subrings, inst.capacity, zeros,
				       1000000, 200000000) < 0) {
		fprintf(stderr, "segtool: out of memory\n");
		return 1;
	}
	ring_reader_clock(&rd, now_ns);
	free(zeros);
	ring_reader_freeze(&rd);
	deadline = now_ns() + 2000000000u;
	while (!ring_reader_settled(&rd) && now_ns() < deadline) {
		uint64_t wm = perfmon__now_begin();
		n = ring_drain_batch(&rd, ev, 256, now_ns(), wm);
		for (size_t i = 0; i < n; i++)
			if (ev[i].point < MAXP)
				per_point[ev[i].point]++;
	}
	while ((n = ring_drain_batch(&rd, ev, 256, now_ns(), perfmon__now_begin())) > 0)
		for (size_t i = 0; i < n; i++)
			if (ev[i].point < MAXP)
				per_point[ev[i].point]++;
	{
		struct ring_batch b;
		ring_reader_release_all(&rd, &b);
		for (size_t i = 0; i < b.nspans; i++)
			if (b.spans[i].point < MAXP)
				per_point[b.spans[i].point]++;
	}
	printf("read %llu dropped %llu stalled %llu\n", (unsigned long long)rd.read,
	       (unsigned long long)rd.dropped, (unsigned long long)rd.stalled);
	for (unsigned p = 0; p < MAXP; p++)
		if (per_point[p])
			printf("point %u %llu\n", p, (unsigned long long)per_point[p]);
	ring_reader_free(&rd);
	shm_close(&inst);
	return 0;
}

/* The control block mapped raw (no validation: it may be garbage). */
static struct perfmon_meta_header *map_meta_raw(const char *name)
{
	char obj[PERFMON_NAME_MAX + 8];
	void *p;
	int fd;

	snprintf(obj, sizeof(obj), "/%s.meta", name);
	fd = shm_open(obj, O_RDWR, 0);
	if (fd < 0) {
		perror("segtool: shm_open");
		return NULL;
	}
	p = mmap(NULL, PERFMON_META_NAMES_OFFSET, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static int cmd_poke(const char *name, const char *field, const char *value)
{
	struct perfmon_meta_header *m = map_meta_raw(name);
	uint64_t v = strtoull(value, NULL, 0);

	if (!m)
		return 1;
	if (!strcmp(field, "reader_tail"))
		__atomic_store_n(&m->reader_tail, v, __ATOMIC_RELEASE);
	else if (!strcmp(field, "collector_pid"))
		__atomic_store_n(&m->collector_pid, (uint32_t)v, __ATOMIC_RELEASE);
	else if (!strcmp(field, "collector_state"))
		__atomic_store_n(&m->collector_state, (uint32_t)v, __ATOMIC_RELEASE);
	else if (!strcmp(field, "heartbeat_ns"))
		__atomic_store_n(&m->heartbeat_ns, v, __ATOMIC_RELEASE);
	else if (!strcmp(field, "summary_path"))
		snprintf(m->summary_path, sizeof(m->summary_path), "%s", value);
	else if (!strcmp(field, "csv_path"))
		snprintf(m->csv_path, sizeof(m->csv_path), "%s", value);
	else {
		fprintf(stderr, "segtool: unknown field %s\n", field);
		return 64;
	}
	munmap(m, PERFMON_META_NAMES_OFFSET);
	return 0;
}

/* Rewrite a field of every sub-ring's control block, as a group member can. */
static int cmd_poke_ring(const char *name, const char *field, const char *value)
{
	struct shm_instance inst;
	char err[512];
	bool back = value[0] == '-', fwd = value[0] == '+';
	uint64_t v = strtoull(value + (back || fwd), NULL, 0);

	if (strcmp(field, "head") && strcmp(field, "reader_tail")) {
		fprintf(stderr, "segtool: unknown sub-ring field %s\n", field);
		return 64;
	}
	if (shm_open_existing(name, true, &inst, err, sizeof(err)) < 0) {
		fprintf(stderr, "segtool: %s\n", err);
		return 1;
	}
	for (uint32_t k = 0; k < inst.subrings; k++) {
		struct perfmon_subring *sr = PERFMON_SUBRING(inst.ring, k);
		uint64_t *f = !strcmp(field, "head") ? &sr->head : &sr->reader_tail;
		uint64_t old = __atomic_load_n(f, __ATOMIC_RELAXED);
		/* relative moves wrap, as a forger's would */
		__atomic_store_n(f, back ? old - v : fwd ? old + v : v, __ATOMIC_RELEASE);
	}
	shm_close(&inst);
	return 0;
}

static int cmd_garbage(const char *name)
{
	struct perfmon_meta_header *m = map_meta_raw(name);

	if (!m)
		return 1;
	rng_seed(1);
	for (size_t i = 0; i < PERFMON_META_NAMES_OFFSET; i++)
		((volatile unsigned char *)m)[i] = (unsigned char)rng_next();
	munmap(m, PERFMON_META_NAMES_OFFSET);
	return 0;
}

static void remove_rundir_files(const char *name)
{
	static const char *const ext[] = { "lock", "sock", "state" };
	char dir[512], path[1024];

	if (channel_dir_for(geteuid(), dir, sizeof(dir)) < 0)
		return;
	for (unsigned i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext[i]);
		unlink(path);
	}
}

static void stamp_pairs(uint32_t point, unsigned long pairs)
{
	for (unsigned long i = 0; i < pairs; i++) {
		perfmon_begin(point, (uint32_t)i);
		perfmon_end(point, (uint32_t)i);
	}
}

static uint64_t sum_heads(const struct shm_instance *inst)
{
	uint64_t sum = 0;
	for (uint32_t k = 0; k < inst->subrings; k++)
		sum += PERFMON_SUBRING(inst->ring, k)->head;
	return sum;
}

int main(int argc, char **argv)
{
	char err[512];

	if (argc == 2 && !strcmp(argv[1], "at-main")) {
		struct timespec cpu;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
		printf("cpu_ns %llu enabled %d\n",
		       (unsigned long long)cpu.tv_sec * 1000000000ull + (unsigned long long)cpu.tv_nsec,
		       perfmon_enabled() ? 1 : 0);
		return 0;
	}

	if (argc >= 4 && !strcmp(argv[1], "create")) {
		/* CAPACITY is the total, mapped onto sub-rings as perfmond does
		 * (PERFMOND_CPUS overrides the CPU count there too). */
		const char *cpus = getenv("PERFMOND_CPUS");
		struct shm_geometry g = { 0, 0,
					  argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 0) : 64,
					  0660, (gid_t)-1 };
		struct shm_instance inst;
		shm_ring_geometry(strtoull(argv[3], NULL, 0),
				  cpus && cpus[0] ? (unsigned)strtoul(cpus, NULL, 10)
						  : shm_possible_cpus(),
				  &g.capacity, &g.subrings);
		if (shm_create_or_open(argv[2], &g, &inst, err, sizeof(err)) < 0) {
			fprintf(stderr, "segtool: %s\n", err);
			return 1;
		}
		shm_close(&inst);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "poke"))
		return cmd_poke(argv[2], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[1], "poke-ring"))
		return cmd_poke_ring(argv[2], argv[3], argv[4]);
	if (argc == 3 && !strcmp(argv[1], "garbage"))
		return cmd_garbage(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "truncate")) {
		char path[PERFMON_NAME_MAX + 32];
		snprintf(path, sizeof(path), "/dev/shm/%s%s", argv[2], argv[3]);
		if (truncate(path, (off_t)strtoull(argv[4], NULL, 0)) < 0) {
			perror("segtool: truncate");
			return 1;
		}
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "shrink-window")) {
		char path[PERFMON_NAME_MAX + 32];
		struct stat st;
		uint64_t t0, deadline;
		off_t full;
		snprintf(path, sizeof(path), "/dev/shm/%s%s", argv[2], argv[3]);
		if (stat(path, &st) < 0)
			return 1;
		full = st.st_size;
		t0 = now_ns();
		if (truncate(path, (off_t)strtoull(argv[4], NULL, 0)) < 0)
			return 1;
		deadline = t0 + 10000000000ull;
		while (stat(path, &st) == 0 && st.st_size < full && now_ns() < deadline)
			;
		if (st.st_size < full) {
			fprintf(stderr, "segtool: %s not restored within 10 s\n", path);
			return 1;
		}
		printf("%.0f\n", (double)(now_ns() - t0) / 1e3);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "hold-lock")) {
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
		int fd = strcmp(argv[2], "-") ? open(argv[2], O_RDONLY | O_NOFOLLOW) : 0;
		if (fd < 0) {
			fprintf(stderr, "segtool: %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		if (fcntl(fd, F_SETLK, &fl) < 0) {
			fprintf(stderr, "segtool: cannot lock %s: %s\n", argv[2], strerror(errno));
			return 2;
		}
		printf("held\n");
		fflush(stdout);
		sleep((unsigned)strtoul(argv[3], NULL, 10));
		return 0;
	}
	if (argc >= 2 && argc <= 3 && !strcmp(argv[1], "rundir")) {
		char dir[512];
		channel_dir_for(argc == 3 ? (uid_t)strtoul(argv[2], NULL, 0) : geteuid(), dir,
				sizeof(dir));
		printf("%s\n", dir);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "remove")) {
		remove_rundir_files(argv[2]);
		return shm_remove(argv[2]) == 0 ? 0 : 1;
	}
	if (argc == 3 && !strcmp(argv[1], "drain"))
		return cmd_drain(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "autostamp")) {
		/* No attach call: the header attached at load time, or not. */
		printf("enabled %d\n", perfmon_enabled() ? 1 : 0);
		stamp_pairs((uint32_t)strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
		return perfmon_enabled() ? 0 : 3;
	}
	if (argc == 5 && !strcmp(argv[1], "stamp")) {
		int e = perfmon_attach(argv[2]);
		if (e < 0) {
			fprintf(stderr, "segtool: attach %s: %s\n", argv[2], strerror(-e));
			return 1;
		}
		stamp_pairs((uint32_t)strtoul(argv[3], NULL, 0), strtoul(argv[4], NULL, 0));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "hole")) {
		int e = perfmon_attach(argv[2]);
		if (e < 0)
			return 1;
		/* Die between reserve and publish, as a killed producer would. */
		__atomic_fetch_add(&PERFMON_SUBRING(perfmon__g.ring, perfmon__cpu() &
						    (perfmon__g.ring->subrings - 1))->head,
				   1, __ATOMIC_RELAXED);
		_exit(0);
	}
	if (argc == 4 && !strcmp(argv[1], "wait-ready")) {
		uint64_t deadline = now_ns() + (uint64_t)(atof(argv[3]) * 1e9);
		do {
			struct shm_instance inst;
			if (shm_open_existing(argv[2], false, &inst, err, sizeof(err)) == 0) {
				int up = __atomic_load_n(&inst.meta->collector_state, __ATOMIC_ACQUIRE) ==
					 PERFMON_COLLECTOR_RUNNING;
				shm_close(&inst);
				if (up)
					return 0;
			}
			struct timespec ts = { 0, 10000000 };
			nanosleep(&ts, NULL);
		} while (now_ns() < deadline);
		fprintf(stderr, "segtool: no collector on %s\n", argv[2]);
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "status")) {
		struct shm_instance inst;
		if (shm_open_existing(argv[2], false, &inst, err, sizeof(err)) < 0) {
			fprintf(stderr, "segtool: %s\n", err);
			return 1;
		}
		printf("state %u pid %u drained %llu dropped %llu stalled %llu tail %llu head %llu\n",
		       inst.meta->collector_state, inst.meta->collector_pid,
		       (unsigned long long)inst.meta->events_drained,
		       (unsigned long long)inst.meta->dropped,
		       (unsigned long long)inst.meta->stalled,
		       (unsigned long long)inst.meta->reader_tail,
		       (unsigned long long)sum_heads(&inst));
		shm_close(&inst);
		return 0;
	}
	fprintf(stderr, "usage: segtool create|remove|drain|autostamp|at-main|stamp|hole|wait-ready|status|garbage|poke|poke-ring|truncate|rundir|shrink-window|hold-lock ...\n");
	return 64;
}
