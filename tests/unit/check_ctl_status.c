/*
 * check_ctl_status.c - status, names, remove and summary against segments
 * the test makes itself and a stand-in collector in a child process that
 * holds the collector lock and answers on the control socket as perfmond
 * does: liveness (lock, heartbeat) whatever the status block says, exit
 * codes, the three formats, hostile labels in the name table, remove
 * refusing a live collector, the summary handshake (answered, timed out,
 * no summary configured, paths in the control block ignored), and
 * read-only access for a member of the segments' group.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <perfmon.h>

#include "channel.h"
#include "check_main.h"
#include "ctl_cli.h"
#include "ctl_status.h"
#include "testutil.h"

static char seg[96];
static char tmpdir[96];
static pid_t runner_pid;
static pid_t fake_pid;

/*
 * Each test (a forked child) names its segments and directory after the
 * runner and itself; the runner sweeps whatever a failed test left behind
 * when the case ends.
 */
static void setup(void)
{
	snprintf(seg, sizeof(seg), "pmt-ctlst-%d-%d", (int)runner_pid, (int)getpid());
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ctl-status-%d-%d", (int)runner_pid, (int)getpid());
	ck_assert_int_eq(mkdir(tmpdir, 0755), 0);
}

static void fake_stop(void);

static void teardown(void)
{
	char cmd[200];
	fake_stop();
	shm_remove(seg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void sweep(void)
{
	char cmd[600], dir[256];

	/* ...and the stand-in collectors' lock and socket files, which a
	 * collector killed with SIGKILL leaves in the run directory */
	if (channel_dir_for(geteuid(), dir, sizeof(dir)) < 0)
		snprintf(dir, sizeof(dir), "/nonexistent");
	snprintf(cmd, sizeof(cmd), "rm -rf /dev/shm/pmt-ctlst-%d-* /tmp/ctl-status-%d-* "
		 "'%s'/pmt-ctlst-%d-*", (int)runner_pid, (int)runner_pid, dir, (int)runner_pid);
	if (system(cmd) != 0)
		fprintf(stderr, "could not sweep test leftovers\n");
}

static const char *tmpfile_in(const char *name)
{
	static char p[2][160];
	static unsigned slot;
	slot ^= 1;
	snprintf(p[slot], sizeof(p[slot]), "%s/%s", tmpdir, name);
	return p[slot];
}

/* Fill the status block as a running daemon would (or a forger). */
static void play_daemon(struct shm_instance *inst, uint32_t state, pid_t pid, double hb_age_s)
{
	struct perfmon_meta_header *m = inst->meta;

	m->collector_pid = (uint32_t)pid;
	m->start_ns = (uint64_t)time(NULL) * 1000000000u - 65000000000u;
	m->heartbeat_ns = test_now_ns() - (uint64_t)(hb_age_s * 1e9);
	m->events_drained = 123456;
	m->dropped = 7;
	m->stalled = 1;
	m->open_spans = 3;
	m->tsc_hz_milli = 3000000000000u;
	m->tsc_invariant = 1;
	m->overhead_ticks = 60;
	PERFMON_SUBRING(inst->ring, 0)->head = 256;
	m->reader_tail = 0;
	/* Paths a forger would plant: never shown, never opened. */
	snprintf(m->csv_path, sizeof(m->csv_path), "/etc/forged.csv");
	snprintf(m->summary_path, sizeof(m->summary_path), "/etc/passwd");
	__atomic_store_n(&m->collector_state, state, __ATOMIC_RELEASE);
}

/* The stand-in collector's behaviour. */
struct fake {
	double hb_age_s;
	const char *summary;       /* path answered to `summary`; "" none configured */
	const char *text;          /* written there first */
	bool silent;               /* keep summary requests unanswered */
};

static enum channel_disposition fake_status(void *ctx, struct channel_request *req)
{
	struct fake *f = ctx;
	char csv[200];
	snprintf(csv, sizeof(csv), "%s/x.csv", tmpdir);
	channel_reply_okf(req->conn,
			  "pid %d\nstart_ns %llu\nheartbeat_age_ns %llu\ndrained 123456\n"
			  "dropped 7\nstalled 1\nmisordered 5\nopen_spans 3\ntail 0\ncapacity 1024\n"
			  "max_names 64\ntsc_hz 3000000000.000\ntsc_invariant 1\n"
			  "overhead_ticks 60\ncsv %s\nsummary %s\ntextfile \n", (int)getpid(),
			  (unsigned long long)time(NULL) * 1000000000ull - 65000000000ull,
			  (unsigned long long)(f->hb_age_s * 1e9), csv, f->summary);
	return CHANNEL_REPLIED;
}

static enum channel_disposition fake_summary(void *ctx, struct channel_request *req)
{
	struct fake *f = ctx;
	FILE *out;
	if (!f->summary[0]) {
		channel_reply_error(req->conn, "this collector writes no summary");
		return CHANNEL_REPLIED;
	}
	if (f->silent)
		return CHANNEL_LATER;     /* never answered */
	out = fopen(f->summary, "w");
	fputs(f->text, out);
	fclose(out);
	channel_reply_okf(req->conn, "%s\n", f->summary);
	return CHANNEL_REPLIED;
}

/* Start a stand-in collector of `seg` in a child; returns once it holds
 * the lock. */
static void fake_start(struct fake f)
{
	int p[2];
	char c;

	ctl_collector_exe = NULL;    /* the stand-in is not perfmond */
	ck_assert_int_eq(pipe(p), 0);
	fake_pid = fork();
	ck_assert_int_ge(fake_pid, 0);
	if (fake_pid == 0) {
		struct channel *ch;
		char err[256];
		if (channel_open(&ch, seg, 0660, (gid_t)-1, NULL, err, sizeof(err)) < 0)
			_exit(1);
		channel_register(ch, "status", fake_status, &f);
		channel_register(ch, "summary", fake_summary, &f);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;) {
			struct pollfd pfd[CHANNEL_MAX_CONNS + 1];
			int n = channel_poll_fill(ch, pfd, CHANNEL_MAX_CONNS + 1);
			poll(pfd, (nfds_t)n, 100);
			channel_dispatch(ch, pfd, n);
			if (getppid() == 1)
				_exit(0);
		}
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
}

static void fake_stop(void)
{
	if (fake_pid > 0) {
		kill(fake_pid, SIGKILL);
		waitpid(fake_pid, NULL, 0);
	}
	fake_pid = 0;
}

typedef int (*cmd_fn)(int, char **, FILE *, FILE *);

static int run(cmd_fn fn, char **out, char **err, int argc, char **argv)
{
	size_t ol = 0, el = 0;
	FILE *fo = open_memstream(out, &ol), *fe = open_memstream(err, &el);
	int rc = fn(argc, argv, fo, fe);
	fclose(fo);
	fclose(fe);
	return rc;
}

START_TEST(test_status_alive)
{
	struct shm_instance inst;
	char *out, *err, expect[128];
	char *argv[] = { "status", seg, "--format", "csv" };
	int rc;

	test_create(seg, 1024, 64, &inst);
	play_daemon(&inst, PERFMON_COLLECTOR_NONE, 1, 100);
	fake_start((struct fake){ 0, tmpfile_in("x_summary.txt"), "", false });
	rc = run(ctl_status_cmd, &out, &err, 4, argv);
	ck_assert_msg(rc == CTL_EXIT_OK, "exit %d: %s", rc, err);
	snprintf(expect, sizeof(expect), "\n%s,alive,1,%d,", seg, (int)fake_pid);
	ck_assert_msg(strstr(out, expect), "%s", out);
	ck_assert_ptr_nonnull(strstr(out, ",123456,0.0,7,1,256,1024,3,0,64,0,3000000000.000,1,"));
	ck_assert_ptr_nonnull(strstr(out, tmpfile_in("x_summary.txt")));
	ck_assert_ptr_null(strstr(out, "/etc/"));
	free(out);
	free(err);

	/* live: for people (getopt permuted argv: build it again) */
	{
		char *live[] = { "status", seg, "--format", "live" };
		ck_assert_int_eq(run(ctl_status_cmd, &out, &err, 4, live), CTL_EXIT_OK);
	}
	ck_assert_ptr_nonnull(strstr(out, "alive, pid"));
	ck_assert_ptr_nonnull(strstr(out, "25.0% (256 of 1024 slots, fullest of 1 sub-rings: 0)"));
	ck_assert_ptr_nonnull(strstr(out, "3.0000 GHz, invariant"));
	ck_assert_ptr_nonnull(strstr(out, "uptime"));
	ck_assert_msg(strstr(out, "misordered  5 span events paired out of time order"), "%s", out);
	free(out);
	free(err);
	{
		char *json[] = { "status", seg, "--format", "json" };
		ck_assert_int_eq(run(ctl_status_cmd, &out, &err, 4, json), CTL_EXIT_OK);
	}
	ck_assert_msg(strstr(out, "\"stalled\":1,\"misordered\":5,"), "%s", out);
	free(out);
	free(err);
	shm_close(&inst);
}
END_TEST

/* Every way of not being alive exits 3 and says which, and no forged
 * status block makes a collector look alive. */
START_TEST(test_status_not_alive)
{
	struct shm_instance inst;
	char *out, *err;
	char *argv[] = { "status", seg, "--format", "csv" };

	test_create(seg, 1024, 64, &inst);
	ck_assert_int_eq(run(ctl_status_cmd, &out, &err, 4, argv), CTL_EXIT_NOT_RUNNING);
	ck_assert_ptr_nonnull(strstr(out, ",stopped,0,"));
	free(out);
	free(err);

	fake_start((struct fake){ 10, "", "", false });   /* silent drain */
	ck_assert_int_eq(run(ctl_status_cmd, &out, &err, 4, argv), CTL_EXIT_NOT_RUNNING);
	ck_assert_ptr_nonnull(strstr(out, ",not-responding,0,"));
	free(out);
	free(err);
	fake_stop();

	/* forged: "running", a live pid mapping the ring (ours), fresh heartbeat */
	play_daemon(&inst, PERFMON_COLLECTOR_RUNNING, getpid(), 0);
	{
		char *live[] = { "status", seg, "--format", "live" };
		ck_assert_int_eq(run(ctl_status_cmd, &out, &err, 4, live), CTL_EXIT_NOT_RUNNING);
	}
	ck_assert_ptr_nonnull(strstr(out, "no process holds the collector lock"));
	free(out);
	free(err);
	shm_close(&inst);
}
END_TEST

/* A live collector stays alive whatever a producer writes over the
 * control block, even garbage that makes the segments unreadable. */
START_TEST(test_status_garbage_block)
{
	struct shm_instance inst;
	char *out, *err;
	char *argv[] = { "status", seg, "--format", "csv" };
	char expect[128];
	int rc;

	test_create(seg, 1024, 64, &inst);
	fake_start((struct fake){ 0, "", "", false });
	memset(inst.meta, 0xA5, PERFMON_META_NAMES_OFFSET);
	rc = run(ctl_status_cmd, &out, &err, 4, argv);
	ck_assert_msg(rc == CTL_EXIT_OK, "exit %d: %s", rc, err);
	snprintf(expect, sizeof(expect), "\n%s,alive,1,%d,", seg, (int)fake_pid);
	ck_assert_msg(strstr(out, expect), "%s", out);
	free(out);
	free(err);
	shm_close(&inst);
}
END_TEST

START_TEST(test_status_no_segments)
{
	char *out, *err;
	char *argv[] = { "status", seg };
	char *bad[] = { "status", "../etc" };

	ck_assert_int_eq(run(ctl_status_cmd, &out, &err, 2, argv), CTL_EXIT_FAILURE);
	ck_assert_ptr_nonnull(strstr(err, "no segments named"));
	free(out);
	free(err);
	ck_assert_int_eq(run(ctl_status_cmd, &out, &err, 2, bad), CTL_EXIT_FAILURE);
	ck_assert_ptr_nonnull(strstr(err, "invalid shm name"));
	free(out);
	free(err);
}
END_TEST

START_TEST(test_default_name)
{
	setenv("SLICK_PERFMON_SHM", "from-env", 1);
	ck_assert_str_eq(ctl_instance_name(NULL), "from-env");
	ck_assert_str_eq(ctl_instance_name("given"), "given");
	unsetenv("SLICK_PERFMON_SHM");
	ck_assert_str_eq(ctl_instance_name(NULL), "perfmon");
}
END_TEST

START_TEST(test_names_hostile_labels)
{
	struct shm_instance inst;
	char *out, *err;
	char *argv[] = { "names", seg, "--format", "csv" };
	unsigned lines = 0;

	test_create(seg, 1024, 16, &inst);
	ck_assert_int_eq(perfmon_attach(seg), 0);
	ck_assert_int_eq(perfmon_name(1, 0, "gateway"), 0);
	ck_assert_int_eq(perfmon_name(1, 3, "parse, \"fast\""), 0);
	ck_assert_int_eq(perfmon_name(2, 255, "evil\x1b[2J\nforged,row"), 0);
	perfmon_detach();
	/* an entry without a terminator, written behind the API's back */
	inst.names[5].key = PERFMON_NAME_KEY(9, 0);
	memset(inst.names[5].label, 'A', sizeof(inst.names[5].label));
	/* an entry still being written is not shown */
	inst.names[6].key = PERFMON_NAME_KEY(10, 0) | PERFMON_NAME_CLAIMED;
	inst.meta->name_generation += 2;

	ck_assert_int_eq(run(ctl_names_cmd, &out, &err, 4, argv), CTL_EXIT_OK);
	for (const char *p = out; *p; p++) {
		lines += *p == '\n';
		ck_assert_msg(*p == '\n' || (unsigned char)*p >= 0x20, "control byte in output");
	}
	ck_assert_uint_eq(lines, 5);
	ck_assert_ptr_nonnull(strstr(out, "point,step,names,label\n"));
	ck_assert_ptr_nonnull(strstr(out, "\n1,0,point,gateway\n"));
	ck_assert_ptr_nonnull(strstr(out, "\n1,3,stage ending at step 3,\"parse, \"\"fast\"\"\"\n"));
	ck_assert_ptr_nonnull(strstr(out, "\n2,255,stage ending at end,\"evil?[2J?forged,row\"\n"));
	ck_assert_ptr_nonnull(strstr(out, "\n9,0,point,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
				     "AAAAAAAAAAAAAAAA\n"));
	free(out);
	free(err);

	{
		char *live[] = { "names", seg, "--format", "live" };
		ck_assert_int_eq(run(ctl_names_cmd, &out, &err, 4, live), CTL_EXIT_OK);
	}
	ck_assert_ptr_nonnull(strstr(out, "4 of 16 entries used"));
	ck_assert_ptr_null(strchr(out, '\x1b'));
	free(out);
	free(err);
	shm_close(&inst);
}
END_TEST

START_TEST(test_remove)
{
	struct shm_instance inst;
	char *out, *err;
	char *argv[] = { "remove", seg };
	char *force[] = { "remove", seg, "--force" };
	char *noname[] = { "remove" };

	test_create(seg, 1024, 16, &inst);
	memset(inst.meta, 0, PERFMON_META_NAMES_OFFSET);   /* says nothing runs */
	fake_start((struct fake){ 0, "", "", false });
	shm_close(&inst);
	ck_assert_int_eq(run(ctl_remove_cmd, &out, &err, 1, noname), CTL_EXIT_FAILURE);
	free(out);
	free(err);

	ck_assert_int_eq(run(ctl_remove_cmd, &out, &err, 2, argv), CTL_EXIT_FAILURE);
	ck_assert_ptr_nonnull(strstr(err, "is running on"));
	ck_assert(test_segment_exists(seg, "") && test_segment_exists(seg, ".meta"));
	free(out);
	free(err);

	ck_assert_int_eq(run(ctl_remove_cmd, &out, &err, 3, force), CTL_EXIT_OK);
	ck_assert(!test_segment_exists(seg, "") && !test_segment_exists(seg, ".meta"));
	free(out);
	free(err);
	fake_stop();

	ck_assert_int_eq(run(ctl_remove_cmd, &out, &err, 2, argv), CTL_EXIT_FAILURE);
	ck_assert_ptr_nonnull(strstr(err, "no segments named"));
	free(out);
	free(err);

	/* no collector, whatever the status block claims */
	test_create(seg, 1024, 16, &inst);
	play_daemon(&inst, PERFMON_COLLECTOR_RUNNING, getpid(), 0);
	shm_close(&inst);
	ck_assert_int_eq(run(ctl_remove_cmd, &out, &err, 2, argv), CTL_EXIT_OK);
	ck_assert(!test_segment_exists(seg, ""));
	free(out);
	free(err);

	/* a half-removed instance (one segment left) can be cleaned up */
	test_create(seg, 1024, 16, &inst);
	shm_close(&inst);
	{
		char obj[128];
		snprintf(obj, sizeof(obj), "/%s", seg);
		ck_assert_int_eq(shm_unlink(obj), 0);
	}
	ck_assert_int_eq(run(ctl_remove_cmd, &out, &err, 2, argv), CTL_EXIT_OK);
	ck_assert(!test_segment_exists(seg, ".meta"));
	free(out);
	free(err);
}
END_TEST

START_TEST(test_summary_handshake)
{
	struct shm_instance inst;
	char *out, *err;
	char *argv[] = { "summary", seg, "--timeout", "5s" };
	int rc;

	test_create(seg, 1024, 16, &inst);
	play_daemon(&inst, PERFMON_COLLECTOR_RUNNING, getpid(), 0);   /* names /etc/passwd */
	fake_start((struct fake){ 0, tmpfile_in("x_summary.txt"),
				  "perfmond summary   instance x\n\x1b]0;gotcha\x07point_7  total  42\n",
				  false });
	rc = run(ctl_summary_cmd, &out, &err, 4, argv);
	ck_assert_msg(rc == CTL_EXIT_OK, "exit %d: %s", rc, err);
	ck_assert_msg(strstr(out, "point_7  total  42\n"), "%s / %s", out, err);
	ck_assert_ptr_nonnull(strstr(out, "?]0;gotcha?"));
	ck_assert_ptr_null(strchr(out, '\x1b'));
	ck_assert_ptr_null(strstr(out, "root:"));
	free(out);
	free(err);
	shm_close(&inst);
}
END_TEST

START_TEST(test_summary_failures)
{
	struct shm_instance inst;
	char *out, *err;
	char *argv[] = { "summary", seg, "--timeout", "300ms" };

	/* no collector, though the status block says one runs */
	test_create(seg, 1024, 16, &inst);
	play_daemon(&inst, PERFMON_COLLECTOR_RUNNING, getpid(), 0);
	ck_assert_int_eq(run(ctl_summary_cmd, &out, &err, 4, argv), CTL_EXIT_NOT_RUNNING);
	free(out);
	free(err);

	/* a collector that never answers: exit 1 after the timeout */
	fake_start((struct fake){ 0, tmpfile_in("x_summary.txt"), "", true });
	ck_assert_int_eq(run(ctl_summary_cmd, &out, &err, 4, argv), CTL_EXIT_FAILURE);
	ck_assert_ptr_nonnull(strstr(err, "did not answer within 0.3s"));
	free(out);
	free(err);
	fake_stop();

	/* no summary configured */
	fake_start((struct fake){ 0, "", "", false });
	ck_assert_int_eq(run(ctl_summary_cmd, &out, &err, 4, argv), CTL_EXIT_FAILURE);
	ck_assert_ptr_nonnull(strstr(err, "writes no summary"));
	free(out);
	free(err);
	shm_close(&inst);
}
END_TEST

/* Files named in the control block are opened only if they are safe. */
START_TEST(test_open_output_safety)
{
	char err[512];
	int fd;
	FILE *f = fopen(tmpfile_in("ok.txt"), "w");

	fputs("x\n", f);
	fclose(f);
	fd = ctl_status_open_output(tmpfile_in("ok.txt"), geteuid(), err, sizeof(err));
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(symlink(tmpfile_in("ok.txt"), tmpfile_in("link.txt")), 0);
	ck_assert_int_eq(ctl_status_open_output(tmpfile_in("link.txt"), geteuid(), err,
						sizeof(err)), -ELOOP);
	ck_assert_int_eq(ctl_status_open_output(tmpdir, geteuid(), err, sizeof(err)), -EPERM);
	ck_assert_int_eq(mkfifo(tmpfile_in("fifo"), 0600), 0);
	ck_assert_int_eq(ctl_status_open_output(tmpfile_in("fifo"), geteuid(), err, sizeof(err)),
			 -EPERM);
	ck_assert_int_eq(ctl_status_open_output("", geteuid(), err, sizeof(err)), -ENOENT);
	if (geteuid() == 0) {
		/* owned by someone who is neither the collector nor root */
		ck_assert_int_eq(chown(tmpfile_in("ok.txt"), 65534, 65534), 0);
		ck_assert_int_eq(ctl_status_open_output(tmpfile_in("ok.txt"), 1000, err,
							sizeof(err)), -EPERM);
		ck_assert_ptr_nonnull(strstr(err, "refusing"));
	}
}
END_TEST

/*
 * A user in the segments' group (mode 0660) can run status: the segments
 * are opened read-only.  Needs root to become that user; as anyone else it
 * checks what it can (the owner reads).
 */
START_TEST(test_group_member_can_read)
{
	struct shm_instance inst;
	pid_t child;
	int status;
	gid_t seg_gid = getegid();

	test_create(seg, 1024, 16, &inst);
	fake_start((struct fake){ 0, "", "", false });
	if (geteuid() != 0) {
		char *out, *err;
		char *argv[] = { "status", seg };
		ck_assert_int_eq(run(ctl_status_cmd, &out, &err, 2, argv), CTL_EXIT_OK);
		free(out);
		free(err);
		shm_close(&inst);
		return;
	}
	for (int member = 1; member >= 0; member--) {
		child = fork();
		ck_assert_int_ge(child, 0);
		if (child == 0) {
			char *out, *err;
			char *argv[] = { "status", seg, "--format", "csv" };
			gid_t groups[1] = { seg_gid };
			int rc;
			if (setgroups(member ? 1 : 0, groups) < 0 || setgid(65534) < 0 ||
			    setuid(65534) < 0)
				_exit(100);
			rc = run(ctl_status_cmd, &out, &err, 4, argv);
			/* 0: read and found alive */
			_exit(rc == CTL_EXIT_OK && strstr(out, ",alive,1,") ? 0 :
			      rc == CTL_EXIT_FAILURE && strstr(err, "permission denied") ? 1 : 2);
		}
		ck_assert_int_eq(waitpid(child, &status, 0), child);
		ck_assert(WIFEXITED(status));
		ck_assert_int_eq(WEXITSTATUS(status), member ? 0 : 1);
	}
	shm_close(&inst);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl_status");
	TCase *tc = tcase_create("status");

	runner_pid = getpid();
	tcase_add_unchecked_fixture(tc, NULL, sweep);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_status_alive);
	tcase_add_test(tc, test_status_not_alive);
	tcase_add_test(tc, test_status_garbage_block);
	tcase_add_test(tc, test_status_no_segments);
	tcase_add_test(tc, test_default_name);
	tcase_add_test(tc, test_names_hostile_labels);
	tcase_add_test(tc, test_remove);
	tcase_add_test(tc, test_summary_handshake);
	tcase_add_test(tc, test_summary_failures);
	tcase_add_test(tc, test_open_output_safety);
	tcase_add_test(tc, test_group_member_can_read);
	suite_add_tcase(s, tc);
	return check_run(s);
}
