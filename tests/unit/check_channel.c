/*
 * check_channel.c - the collector's lock and control socket: liveness,
 * one-line requests, file descriptors passed along, replies given later,
 * and the peer checks of the client.
 *
 * The daemon half runs in a thread of this process (its own poll loop, as
 * perfmond's reporter runs it); lock conflicts are seen from forked
 * children, since fcntl locks never conflict within one process.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel.h"
#include "check_main.h"

struct server {
	struct channel *ch;
	pthread_t thread;
	int stop;                         /* atomic */
	struct channel_conn *later;       /* server thread only */
	int later_ticks;
	int later_seen;                   /* atomic: a deferred request arrived */
};

/* Points to a static buffer: copy it before the next call. */
static const char *unique_name(const char *tag)
{
	static char buf[96];
	static int n;
	snprintf(buf, sizeof(buf), "pmt-chan-%s-%d-%d", tag, (int)getpid(), n++);
	return buf;
}

static enum channel_disposition cmd_echo(void *ctx, struct channel_request *req)
{
	char out[1024] = "";
	(void)ctx;
	for (int i = 0; i < req->argc; i++) {
		strcat(out, req->argv[i]);
		strcat(out, i + 1 < req->argc ? " " : "\n");
	}
	channel_reply_okf(req->conn, "%d args: %s", req->argc, out);
	return CHANNEL_REPLIED;
}

static enum channel_disposition cmd_write(void *ctx, struct channel_request *req)
{
	static const char msg[] = "written by the daemon\n";
	(void)ctx;
	if (req->fd < 0) {
		channel_reply_error(req->conn, "no file descriptor passed");
		return CHANNEL_REPLIED;
	}
	if (write(req->fd, msg, sizeof(msg) - 1) != (ssize_t)sizeof(msg) - 1) {
		channel_reply_error(req->conn, "write: %s", strerror(errno));
		return CHANNEL_REPLIED;
	}
	channel_reply_ok(req->conn, NULL);
	return CHANNEL_REPLIED;     /* req->fd is closed by the channel */
}

static enum channel_disposition cmd_later(void *ctx, struct channel_request *req)
{
	struct server *s = ctx;
	s->later = req->conn;
	s->later_ticks = req->argc ? atoi(req->argv[0]) : 3;
	__atomic_store_n(&s->later_seen, 1, __ATOMIC_RELEASE);
	return CHANNEL_LATER;
}

static enum channel_disposition cmd_never(void *ctx, struct channel_request *req)
{
	struct server *s = ctx;
	s->later = req->conn;
	s->later_ticks = -1;    /* kept, never answered while the client waits */
	return CHANNEL_LATER;
}

static void *server_loop(void *arg)
{
	struct server *s = arg;
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd pfd[CHANNEL_MAX_CONNS + 1];
		int n = channel_poll_fill(s->ch, pfd, CHANNEL_MAX_CONNS + 1);
		if (poll(pfd, (nfds_t)n, 10) < 0)
			continue;
		channel_dispatch(s->ch, pfd, n);
		if (s->later && s->later_ticks > 0 && --s->later_ticks == 0) {
			channel_reply_okf(s->later, "answered later\n");
			s->later = NULL;
		}
	}
	return NULL;
}

static void server_start(struct server *s, const char *name)
{
	char err[512];
	pid_t holder = 0;
	memset(s, 0, sizeof(*s));
	ck_assert_msg(channel_open(&s->ch, name, 0660, (gid_t)-1, &holder, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(channel_register(s->ch, "echo", cmd_echo, s), 0);
	ck_assert_int_eq(channel_register(s->ch, "write", cmd_write, s), 0);
	ck_assert_int_eq(channel_register(s->ch, "later", cmd_later, s), 0);
	ck_assert_int_eq(channel_register(s->ch, "never", cmd_never, s), 0);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, server_loop, s), 0);
}

static void server_stop(struct server *s)
{
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	pthread_join(s->thread, NULL);
	if (s->later)
		channel_reply_error(s->later, "shutting down");
	channel_close(s->ch);
}

static struct channel_expect me(void)
{
	struct channel_expect w = { geteuid(), NULL };
	return w;
}

static int ask(const char *name, const char *req, int fd, char **body, pid_t *pid,
	       char *err, size_t errlen)
{
	struct channel_expect w = me();
	*body = NULL;
	return channel_request(name, &w, req, fd, 5000, body, pid, err, errlen);
}

START_TEST(test_request_reply)
{
	const char *name = unique_name("rr");
	struct server s;
	char err[512], *body;
	pid_t pid = 0;

	server_start(&s, name);
	ck_assert_msg(ask(name, "echo a bb  ccc", -1, &body, &pid, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(body, "3 args: a bb ccc\n");
	ck_assert_int_eq(pid, getpid());
	free(body);
	ck_assert_int_eq(ask(name, "ping", -1, &body, NULL, err, sizeof(err)), 0);
	ck_assert_str_eq(body, "pong\n");
	free(body);
	/* Unknown commands and empty requests get an error, not a hang. */
	ck_assert_int_eq(ask(name, "frobnicate x", -1, &body, NULL, err, sizeof(err)),
			 -EREMOTEIO);
	ck_assert_ptr_nonnull(strstr(err, "unknown command 'frobnicate'"));
	ck_assert_int_eq(ask(name, "", -1, &body, NULL, err, sizeof(err)), -EREMOTEIO);
	ck_assert_int_eq(ask(name, "a\nb", -1, &body, NULL, err, sizeof(err)), -EINVAL);
	server_stop(&s);
}
END_TEST

START_TEST(test_fd_passed)
{
	const char *name = unique_name("fd");
	char path[] = "/tmp/pmt-chan-fd-XXXXXX", err[512], *body, got[64] = "";
	struct server s;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	server_start(&s, name);
	ck_assert_msg(ask(name, "write", fd, &body, NULL, err, sizeof(err)) == 0, "%s", err);
	free(body);
	ck_assert_int_eq(pread(fd, got, sizeof(got) - 1, 0), 22);
	ck_assert_str_eq(got, "written by the daemon\n");
	ck_assert_int_eq(ask(name, "write", -1, &body, NULL, err, sizeof(err)), -EREMOTEIO);
	ck_assert_ptr_nonnull(strstr(err, "no file descriptor"));
	server_stop(&s);
	close(fd);
	unlink(path);
}
END_TEST

START_TEST(test_reply_later)
{
	const char *name = unique_name("later");
	struct server s;
	char err[512], *body;

	server_start(&s, name);
	ck_assert_msg(ask(name, "later 5", -1, &body, NULL, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(body, "answered later\n");
	ck_assert(__atomic_load_n(&s.later_seen, __ATOMIC_ACQUIRE));
	free(body);
	/* Another request is served while one waits. */
	{
		struct channel_expect w = me();
		ck_assert_int_eq(channel_request(name, &w, "never", -1, 200, &body, NULL, err,
						 sizeof(err)), -ETIMEDOUT);
	}
	server_stop(&s);
}
END_TEST

START_TEST(test_second_collector_refused)
{
	const char *name = unique_name("lock");
	struct server s;
	pid_t child, parent = getpid();
	int status;

	server_start(&s, name);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct channel *ch = NULL;
		char err[512];
		pid_t holder = 0, alive_pid = 0;
		if (channel_alive(name, geteuid(), &alive_pid) != 1 || alive_pid != parent)
			_exit(2);
		if (channel_open(&ch, name, 0660, (gid_t)-1, &holder, err, sizeof(err)) != -EBUSY)
			_exit(3);
		if (holder != parent || !strstr(err, "another perfmond"))
			_exit(4);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	server_stop(&s);
}
END_TEST

START_TEST(test_gone_after_close)
{
	const char *name = unique_name("gone");
	struct server s;
	char err[512], *body;
	pid_t pid = 0;
	int e;

	server_start(&s, name);
	server_stop(&s);
	ck_assert_int_eq(channel_alive(name, geteuid(), &pid), 0);
	e = ask(name, "ping", -1, &body, NULL, err, sizeof(err));
	ck_assert(e == -ENOENT || e == -ECONNREFUSED);
	/* And the name can be served again. */
	server_start(&s, name);
	ck_assert_int_eq(ask(name, "ping", -1, &body, NULL, err, sizeof(err)), 0);
	free(body);
	server_stop(&s);
}
END_TEST

START_TEST(test_peer_checks)
{
	char name[96], *other;
	char dir[512], a[1100], b[1100], err[512], *body = NULL;
	struct channel_expect w = me();
	struct server s, s2;

	snprintf(name, sizeof(name), "%s", unique_name("peer"));
	server_start(&s, name);
	/* The peer's executable must be the one asked for. */
	w.exe = "perfmond";
	ck_assert_int_eq(channel_request(name, &w, "ping", -1, 5000, &body, NULL, err,
					 sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "which is not perfmond"));
	w.exe = "check_channel";
	ck_assert_msg(channel_request(name, &w, "ping", -1, 5000, &body, NULL, err,
				      sizeof(err)) == 0, "%s", err);
	free(body);

	/* A socket that answers for another name is not this name's collector. */
	other = strdup(unique_name("peer-other"));
	server_start(&s2, other);
	ck_assert_int_eq(channel_dir_for(geteuid(), dir, sizeof(dir)), 0);
	snprintf(a, sizeof(a), "%s/%s.sock", dir, name);
	snprintf(b, sizeof(b), "%s/%s.sock", dir, other);
	ck_assert_int_eq(rename(b, a), 0);
	ck_assert_int_eq(ask(name, "ping", -1, &body, NULL, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "does not serve"));
	server_stop(&s2);
	server_stop(&s);
	free(other);
}
END_TEST

/* A dead collector's lock file (left by SIGKILL; an older version made it
 * readable) held by a process that is no collector -- /bin/sleep, which
 * keeps the lock it took before exec, or an open file description lock,
 * which has no pid: not alive, and the next collector replaces the file
 * and makes it the owner's alone, whatever the umask. */
START_TEST(test_foreign_holder)
{
	char name[96], dir[512], path[1100], err[512];
	struct flock ofd = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
	struct channel *ch = NULL;
	struct stat forged, st;
	pid_t pid = 0, holder = 0, child;
	int p[2], fd, status;
	mode_t old;
	char c;

	snprintf(name, sizeof(name), "%s", unique_name("forged"));
	ck_assert_int_eq(channel_dir_for(geteuid(), dir, sizeof(dir)), 0);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/%s.lock", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &forged), 0);

	/* An open file description lock. */
	ck_assert_int_eq(fcntl(fd, F_OFD_SETLK, &ofd), 0);
	ck_assert_int_eq(channel_alive(name, geteuid(), &pid), 0);
	close(fd);

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
		int lfd = open(path, O_RDONLY);   /* kept across exec, and the lock */
		if (lfd < 0 || fcntl(lfd, F_SETLK, &fl) < 0 || write(p[1], "h", 1) != 1)
			_exit(1);
		execlp("sleep", "sleep", "30", (char *)NULL);
		_exit(1);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	/* exec'd: wait until /proc shows sleep, not this test */
	for (int i = 0; i < 500; i++) {
		char exe[64], link[512];
		ssize_t n;
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)child);
		n = readlink(exe, link, sizeof(link) - 1);
		if (n > 0 && (link[n] = '\0', strstr(link, "sleep")))
			break;
		usleep(10000);
	}
	ck_assert_int_eq(channel_alive(name, geteuid(), &pid), 0);

	old = umask(0);
	ck_assert_msg(channel_open(&ch, name, 0660, (gid_t)-1, &holder, err, sizeof(err)) == 0,
		      "%s (holder %d)", err, (int)holder);
	umask(old);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(st.st_ino != forged.st_ino || st.st_dev != forged.st_dev);
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(kill(child, 0), 0);    /* the forger still holds the old file */
	kill(child, SIGKILL);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	channel_close(ch);
}
END_TEST

/* As root: a socket bound by another uid in the owner's directory is
 * refused by SO_PEERCRED. */
START_TEST(test_peer_uid_checked)
{
	const uid_t owner = 65534;
	const char *name = unique_name("uid");
	char dir[512], err[512], *body = NULL;
	struct channel_expect w = { owner, NULL };
	struct server s;
	bool made = false;

	if (geteuid() != 0) {
		printf("skip test_peer_uid_checked: needs root to make another uid's directory\n");
		return;
	}
	ck_assert_int_eq(channel_dir_for(owner, dir, sizeof(dir)), 0);
	if (mkdir(dir, 0755) == 0)
		made = true;
	/* root serves from its own directory; plant that socket in the
	 * owner's directory, as a writer of that directory could. */
	server_start(&s, name);
	{
		char rootdir[512], a[1100], b[1100];
		ck_assert_int_eq(channel_dir_for(0, rootdir, sizeof(rootdir)), 0);
		snprintf(a, sizeof(a), "%s/%s.sock", rootdir, name);
		snprintf(b, sizeof(b), "%s/%s.sock", dir, name);
		ck_assert_int_eq(rename(a, b), 0);
		ck_assert_int_eq(channel_request(name, &w, "ping", -1, 5000, &body, NULL, err,
						 sizeof(err)), -EPERM);
		ck_assert_ptr_nonnull(strstr(err, "not by the segment owner"));
		unlink(b);
	}
	server_stop(&s);
	if (made)
		rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("channel");
	TCase *tc = tcase_create("channel");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_request_reply);
	tcase_add_test(tc, test_fd_passed);
	tcase_add_test(tc, test_reply_later);
	tcase_add_test(tc, test_second_collector_refused);
	tcase_add_test(tc, test_gone_after_close);
	tcase_add_test(tc, test_foreign_holder);
	tcase_add_test(tc, test_peer_checks);
	tcase_add_test(tc, test_peer_uid_checked);
	suite_add_tcase(s, tc);
	return check_run(s);
}
