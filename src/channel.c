/*
 * channel.c - the collector's lock, its control socket, and the client
 * that talks to it.
 *
 * Everything here rests on facts the kernel keeps and producers cannot
 * write: the owner of a segment (fstat), the holder of an fcntl lock
 * (F_GETLK), the credentials of a socket peer (SO_PEERCRED), and files in
 * a directory only the collector's user can write.  The daemon side never
 * blocks its caller's loop: connections are non-blocking, a request must
 * arrive whole within CONN_IDLE_NS of the accept, and at most
 * CHANNEL_MAX_CONNS are served at once.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/segment.h>

#include "channel.h"
#include "clocks.h"
#include "errmsg.h"
#include "lock_holder.h"
#include "shm.h"

#define CHANNEL_PROTO 1
#define CONN_IDLE_NS 2000000000ull     /* a request must arrive within 2 s */
#define REPLY_SEND_TIMEOUT_MS 200      /* a reader that does not read loses its reply */
#define MAX_COMMANDS 32

struct channel_conn {
	struct channel *ch;
	int fd;                   /* -1: slot free */
	int passed_fd;
	bool kept;                /* handed to a handler for a later reply */
	uid_t uid;
	pid_t pid;
	uint64_t deadline_ns;
	size_t len;
	char buf[CHANNEL_LINE_MAX];
};

struct channel_command {
	char name[32];
	channel_handler fn;
	void *ctx;
};

struct channel {
	char name[PERFMON_NAME_MAX + 1];
	char lock_path[PATH_MAX];
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char state_path[PATH_MAX];
	int lock_fd;
	int listen_fd;
	struct channel_state *state;      /* mapped state file, or NULL */
	unsigned ncommands;
	struct channel_command commands[MAX_COMMANDS];
	struct channel_conn conns[CHANNEL_MAX_CONNS];
};

/* ---- Paths ------------------------------------------------------------- */

static bool dir_owned_by(const char *path, uid_t uid)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid;
}

int channel_dir_for(uid_t uid, char *buf, size_t n)
{
	char user_run[64];
	int w;

	snprintf(user_run, sizeof(user_run), "/run/user/%u", (unsigned)uid);
	if (dir_owned_by("/run/perfmond", uid))
		w = snprintf(buf, n, "/run/perfmond");
	else if (dir_owned_by(user_run, uid))
		w = snprintf(buf, n, "%s/perfmond", user_run);
	else
		w = snprintf(buf, n, "/tmp/perfmond-%u", (unsigned)uid);
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* <dir>/<name>.sock, or <dir>/h-<hash>.sock when that would not fit a
 * sockaddr_un (names may be 200 characters). */
static int sock_path_for(const char *dir, const char *name, char *buf, size_t n)
{
	int w = snprintf(buf, n, "%s/%s.sock", dir, name);
	if (w < 0 || (size_t)w >= n)
		w = snprintf(buf, n, "%s/h-%016llx.sock", dir, (unsigned long long)fnv1a(name));
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

static int lock_path_for(const char *dir, const char *name, char *buf, size_t n)
{
	int w = snprintf(buf, n, "%s/%s.lock", dir, name);
	return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

int channel_segment_owner(const char *shm_name, uid_t *ret_uid)
{
	struct stat st;
	int e = shm_segment_stat(shm_name, &st);

	if (e < 0)
		return e;
	*ret_uid = st.st_uid;
	return 0;
}

/* ---- Daemon side ------------------------------------------------------- */

/* Make (if needed) and check our runtime directory: a real directory of
 * ours that nobody else can write, or refuse. */
static int prepare_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return errmsg(err, errlen, -errno, "cannot create the runtime directory %s: %s",
			      dir, strerror(errno));
	if (lstat(dir, &st) < 0)
		return errmsg(err, errlen, -errno, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022))
		return errmsg(err, errlen, -EPERM,
			      "the runtime directory %s is not a directory of this user that "
			      "only it can write (owner uid %u, mode %04o; anyone can create it "
			      "first under /tmp); remove it and start again, or run the collector "
			      "where /run/perfmond or /run/user/%u is its own", dir,
			      (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			      (unsigned)geteuid());
	return 0;
}

/* Take the lock; a lock file unlinked by its previous holder while we
 * waited is not the lock any more, so retry on the path's current file.
 * A file held by anything but a perfmond of ours (lock_holder_is_perfmond())
 * is a dead collector's, locked by someone else: it is replaced. */
static int take_lock(struct channel *ch, pid_t *ret_holder, char *err, size_t errlen)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		struct stat a, b;
		char pid[24];
		int fd = open(ch->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return errmsg(err, errlen, -errno, "cannot open %s: %s", ch->lock_path,
				      strerror(errno));
		/* Whatever the umask, and for a file an older version left
		 * readable: nobody else may open it, so nobody else can lock it. */
		if (fchmod(fd, 0600) < 0) {
			int e = errno;
			close(fd);
			return errmsg(err, errlen, -e, "cannot make %s private: %s", ch->lock_path,
				      strerror(e));
		}
		if (fcntl(fd, F_SETLK, &fl) < 0) {
			int e = errno;
			if (e == EAGAIN || e == EACCES) {
				pid_t h = lock_holder(fd);
				if (h != 0 && !lock_holder_is_perfmond(h, geteuid())) {
					/* Only if the path still names the file we saw held:
					 * another daemon may have replaced it already. */
					if (fstat(fd, &a) == 0 && lstat(ch->lock_path, &b) == 0 &&
					    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
						unlink(ch->lock_path);
					close(fd);
					continue;
				}
				close(fd);
				if (h == 0)
					continue;  /* released meanwhile */
				if (ret_holder)
					*ret_holder = h;
				return errmsg(err, errlen, -EBUSY,
					      "another perfmond (pid %d) is collecting from '%s'",
					      (int)h, ch->name);
			}
			close(fd);
			return errmsg(err, errlen, -e, "cannot lock %s: %s", ch->lock_path,
				      strerror(e));
		}
		if (fstat(fd, &a) < 0 || stat(ch->lock_path, &b) < 0 ||
		    a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
			close(fd);
			continue;
		}
		/* The pid inside is for people; the lock holder is the truth. */
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, strlen(pid), 0) < 0) {
			/* informational only */
		}
		ch->lock_fd = fd;
		return 0;
	}
	return errmsg(err, errlen, -EAGAIN, "cannot take %s: it keeps changing", ch->lock_path);
}

/* Best effort: a unit whose system call filter allows only fchown()
 * leaves the socket in the daemon's own group (the unit's runtime
 * directory is that group's anyway). */
static bool give_group(const char *path, gid_t gid)
{
	if (gid != (gid_t)-1 && gid != getegid() && chown(path, (uid_t)-1, gid) < 0) {
		/* kept in our group */
	}
	return true;
}

static int listen_socket(struct channel *ch, mode_t mode, gid_t gid, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	memcpy(sa.sun_path, ch->sock_path, strlen(ch->sock_path) + 1);
	/* We hold the lock, so a socket file left here is a dead daemon's. */
	if (unlink(ch->sock_path) < 0 && errno != ENOENT)
		return errmsg(err, errlen, -errno, "cannot remove the stale socket %s: %s",
			      ch->sock_path, strerror(errno));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errmsg(err, errlen, -errno, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(ch->sock_path, mode & 0666) < 0 ||
	    !give_group(ch->sock_path, gid) ||
	    listen(fd, CHANNEL_MAX_CONNS) < 0) {
		int e = errno;
		close(fd);
		unlink(ch->sock_path);
		return errmsg(err, errlen, -e, "cannot listen on %s: %s", ch->sock_path,
			      strerror(e));
	}
	ch->listen_fd = fd;
	return 0;
}

static enum channel_disposition cmd_ping(void *ctx, struct channel_request *req)
{
	(void)ctx;
	channel_reply_ok(req->conn, "pong\n");
	return CHANNEL_REPLIED;
}

int channel_open(struct channel **ret, const char *shm_name, mode_t mode, gid_t gid,
		 pid_t *ret_holder, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	struct channel *ch;
	int e;

	if ((e = perfmon__shm_path(shm_name, "", dir, sizeof(dir))) < 0)
		return errmsg(err, errlen, e, "invalid shm name '%s'", shm_name);
	if ((e = channel_dir_for(geteuid(), dir, sizeof(dir))) < 0)
		return errmsg(err, errlen, e, "runtime directory path too long");
	if ((e = prepare_dir(dir, err, errlen)) < 0)
		return e;
	if (!(ch = calloc(1, sizeof(*ch))))
		return errmsg(err, errlen, -ENOMEM, "out of memory");
	ch->lock_fd = ch->listen_fd = -1;
	for (int i = 0; i < CHANNEL_MAX_CONNS; i++) {
		ch->conns[i].fd = -1;
		ch->conns[i].passed_fd = -1;
		ch->conns[i].ch = ch;
	}
	snprintf(ch->name, sizeof(ch->name), "%s", shm_name);
	snprintf(ch->state_path, sizeof(ch->state_path), "%s/%s.state", dir, shm_name);
	if (lock_path_for(dir, shm_name, ch->lock_path, sizeof(ch->lock_path)) < 0 ||
	    sock_path_for(dir, shm_name, ch->sock_path, sizeof(ch->sock_path)) < 0) {
		e = errmsg(err, errlen, -ENAMETOOLONG, "runtime directory path too long: %s", dir);
		goto error;
	}
	if ((e = take_lock(ch, ret_holder, err, errlen)) < 0)
		goto error;
	if ((e = listen_socket(ch, mode, gid, err, errlen)) < 0)
		goto error_lock;
	channel_register(ch, "ping", cmd_ping, NULL);
	*ret = ch;
	return 0;

error_lock:
	unlink(ch->lock_path);
	close(ch->lock_fd);
error:
	free(ch);
	return e;
}

static void conn_free(struct channel_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->passed_fd >= 0)
		close(c->passed_fd);
	c->fd = c->passed_fd = -1;
	c->kept = false;
	c->len = 0;
}

void channel_close(struct channel *ch)
{
	if (!ch)
		return;
	for (int i = 0; i < CHANNEL_MAX_CONNS; i++)
		conn_free(&ch->conns[i]);
	if (ch->state)
		munmap(ch->state, sizeof(*ch->state));
	if (ch->listen_fd >= 0) {
		unlink(ch->sock_path);
		close(ch->listen_fd);
	}
	if (ch->lock_fd >= 0) {
		/* Unlinked while still held: a waiter re-checks the path. */
		unlink(ch->lock_path);
		close(ch->lock_fd);
	}
	free(ch);
}

int channel_state_map(struct channel *ch, struct channel_state **ret, char *err,
		      size_t errlen)
{
	struct stat st;
	void *p;
	int fd;

	if (ch->state) {
		*ret = ch->state;
		return 0;
	}
	fd = open(ch->state_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return errmsg(err, errlen, -errno, "cannot open %s: %s", ch->state_path,
			      strerror(errno));
	/* Ours alone (the directory is), so its size only changes here. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    ((size_t)st.st_size < sizeof(*ch->state) &&
	     ftruncate(fd, (off_t)sizeof(*ch->state)) < 0)) {
		int e = errno ? errno : EINVAL;
		close(fd);
		return errmsg(err, errlen, -e, "cannot use %s: %s", ch->state_path, strerror(e));
	}
	p = mmap(NULL, sizeof(*ch->state), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return errmsg(err, errlen, -errno, "cannot map %s: %s", ch->state_path,
			      strerror(errno));
	ch->state = p;
	*ret = p;
	return 0;
}

void channel_state_begin(struct channel_state *st, uint64_t instance_id, uint32_t subrings,
			 bool reopened, const uint64_t *heads, uint64_t *ret_tails)
{
	bool ours = reopened && st->magic == CHANNEL_STATE_MAGIC &&
		    st->instance_id == instance_id && st->subrings == subrings;

	for (uint32_t k = 0; k < subrings; k++) {
		ret_tails[k] = ours ? __atomic_load_n(&st->tails[k], __ATOMIC_RELAXED) : heads[k];
		__atomic_store_n(&st->tails[k], ret_tails[k], __ATOMIC_RELAXED);
	}
	st->instance_id = instance_id;
	st->subrings = subrings;
	st->magic = CHANNEL_STATE_MAGIC;
}

int channel_register(struct channel *ch, const char *name, channel_handler fn, void *ctx)
{
	unsigned i;
	for (i = 0; i < ch->ncommands; i++)
		if (!strcmp(ch->commands[i].name, name))
			break;
	if (i == MAX_COMMANDS || strlen(name) >= sizeof(ch->commands[i].name))
		return -ENOSPC;
	snprintf(ch->commands[i].name, sizeof(ch->commands[i].name), "%s", name);
	ch->commands[i].fn = fn;
	ch->commands[i].ctx = ctx;
	if (i == ch->ncommands)
		ch->ncommands++;
	return 0;
}

static void send_all(int fd, const char *p, size_t n)
{
	uint64_t deadline = mono_ns() + REPLY_SEND_TIMEOUT_MS * 1000000ull;
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			uint64_t now = mono_ns();
			struct pollfd pfd = { fd, POLLOUT, 0 };
			if (now >= deadline)
				return;
			poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1);
			continue;
		}
		return;
	}
}

static void reply(struct channel_conn *c, const char *head, const char *body)
{
	if (c->fd >= 0) {
		send_all(c->fd, head, strlen(head));
		if (body)
			send_all(c->fd, body, strlen(body));
	}
	conn_free(c);
}

void channel_reply_ok(struct channel_conn *conn, const char *body)
{
	reply(conn, "ok\n", body);
}

void channel_reply_okf(struct channel_conn *conn, const char *fmt, ...)
{
	va_list ap;
	char *body = NULL;
	va_start(ap, fmt);
	if (vasprintf(&body, fmt, ap) < 0)
		body = NULL;
	va_end(ap);
	reply(conn, "ok\n", body);
	free(body);
}

void channel_reply_error(struct channel_conn *conn, const char *fmt, ...)
{
	char msg[1024], line[1100];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *p = msg; *p; p++)   /* one line */
		if (*p == '\n')
			*p = ' ';
	snprintf(line, sizeof(line), "error %s\n", msg);
	reply(conn, line, NULL);
}

bool channel_conn_hung_up(struct channel_conn *conn)
{
	struct pollfd pfd = { conn->fd, POLLIN, 0 };
	char b;
	if (conn->fd < 0)
		return true;
	if (poll(&pfd, 1, 0) <= 0)
		return false;
	if (pfd.revents & (POLLHUP | POLLERR))
		return true;
	/* Readable: EOF means gone; stray bytes after the request are ignored. */
	return recv(conn->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

static void accept_one(struct channel *ch)
{
	struct channel_conn *c = NULL;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	char greet[PERFMON_NAME_MAX + 64];
	int fd = accept4(ch->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	for (int i = 0; i < CHANNEL_MAX_CONNS; i++)
		if (ch->conns[i].fd < 0) {
			c = &ch->conns[i];
			break;
		}
	if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		close(fd);   /* busy: the client sees EOF and may retry */
		return;
	}
	c->fd = fd;
	c->uid = cred.uid;
	c->pid = cred.pid;
	c->len = 0;
	c->kept = false;
	c->deadline_ns = mono_ns() + CONN_IDLE_NS;
	snprintf(greet, sizeof(greet), "perfmond %d %s %d\n", CHANNEL_PROTO, ch->name,
		 (int)getpid());
	send_all(fd, greet, strlen(greet));
}

static void run_request(struct channel *ch, struct channel_conn *c)
{
	char *argv[CHANNEL_MAX_ARGS + 1], *save = NULL, *tok;
	struct channel_request req;
	int argc = 0;
	const char *cmd;

	c->buf[c->len] = '\0';
	cmd = strtok_r(c->buf, " \t", &save);
	if (!cmd) {
		channel_reply_error(c, "empty request");
		return;
	}
	while ((tok = strtok_r(NULL, " \t", &save))) {
		if (argc == CHANNEL_MAX_ARGS) {
			channel_reply_error(c, "too many arguments (at most %d)", CHANNEL_MAX_ARGS);
			return;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	for (unsigned i = 0; i < ch->ncommands; i++) {
		if (strcmp(ch->commands[i].name, cmd))
			continue;
		req = (struct channel_request){ cmd, argc, argv, c->passed_fd, c->uid, c->pid, c };
		c->passed_fd = -1;
		c->kept = true;    /* the handler owns it now */
		if (ch->commands[i].fn(ch->commands[i].ctx, &req) == CHANNEL_REPLIED)
			c->kept = false;
		if (req.fd >= 0)
			close(req.fd);
		return;
	}
	channel_reply_error(c, "unknown command '%.64s'", cmd);
}

static void read_request(struct channel *ch, struct channel_conn *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { c->buf + c->len, sizeof(c->buf) - 1 - c->len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	ssize_t r = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	char *nl;

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); r >= 0 && cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < nfd; i++) {
				int pfd;
				memcpy(&pfd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (c->passed_fd < 0)
					c->passed_fd = pfd;
				else
					close(pfd);
			}
		}
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		channel_reply_error(c, "at most one file descriptor per request");
		return;
	}
	if (r <= 0) {            /* EOF or error before a whole request */
		conn_free(c);
		return;
	}
	c->len += (size_t)r;
	nl = memchr(c->buf, '\n', c->len);
	if (nl) {
		c->len = (size_t)(nl - c->buf);
		run_request(ch, c);
	} else if (c->len >= sizeof(c->buf) - 1) {
		channel_reply_error(c, "request longer than %d bytes", CHANNEL_LINE_MAX);
	}
}

int channel_poll_fill(struct channel *ch, struct pollfd *pfd, int max)
{
	int n = 0;
	if (n < max)
		pfd[n++] = (struct pollfd){ ch->listen_fd, POLLIN, 0 };
	for (int i = 0; i < CHANNEL_MAX_CONNS && n < max; i++)
		if (ch->conns[i].fd >= 0 && !ch->conns[i].kept)
			pfd[n++] = (struct pollfd){ ch->conns[i].fd, POLLIN, 0 };
	return n;
}

void channel_dispatch(struct channel *ch, const struct pollfd *pfd, int n)
{
	uint64_t now = mono_ns();

	for (int k = 0; k < n; k++) {
		if (!pfd[k].revents)
			continue;
		if (pfd[k].fd == ch->listen_fd) {
			accept_one(ch);
			continue;
		}
		for (int i = 0; i < CHANNEL_MAX_CONNS; i++) {
			struct channel_conn *c = &ch->conns[i];
			if (c->fd == pfd[k].fd && c->fd >= 0 && !c->kept) {
				read_request(ch, c);
				break;
			}
		}
	}
	for (int i = 0; i < CHANNEL_MAX_CONNS; i++) {
		struct channel_conn *c = &ch->conns[i];
		if (c->fd >= 0 && !c->kept && now > c->deadline_ns)
			conn_free(c);   /* too slow to say what it wants */
	}
}

/* ---- Client side ------------------------------------------------------- */

int channel_alive(const char *shm_name, uid_t owner, pid_t *ret_pid)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct stat st;
	pid_t h;
	int fd, e;

	if ((e = channel_dir_for(owner, dir, sizeof(dir))) < 0 ||
	    (e = lock_path_for(dir, shm_name, path, sizeof(path))) < 0)
		return e;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* Only the collector's user can write that directory; a file of
	 * someone else's there says nothing. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != owner) {
		close(fd);
		return 0;
	}
	h = lock_holder(fd);
	close(fd);
	if (h == 0 || !lock_holder_is_perfmond(h, owner))
		return 0;
	if (ret_pid)
		*ret_pid = h;
	return 1;
}

static bool exe_matches(pid_t pid, const char *want)
{
	char path[64], exe[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0)   /* not ours to read (another user, hidepid): uid decides */
		return true;
	exe[n] = '\0';
	return lock_holder_exe_named(exe, want);
}

/* Read until `delim` (or EOF when delim is 0) or `deadline`. */
static int read_until(int fd, char **buf, size_t *len, size_t *cap, char delim,
		      uint64_t deadline)
{
	for (;;) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		uint64_t now = mono_ns();
		ssize_t r;

		if (delim && *len && memchr(*buf, delim, *len))
			return 0;
		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1) < 0 && errno != EINTR)
			return -errno;
		if (*cap - *len < 4096) {
			size_t nc = *cap * 2;
			char *nb;
			if (nc > CHANNEL_REPLY_MAX + 4096)
				return -EMSGSIZE;
			if (!(nb = realloc(*buf, nc)))
				return -ENOMEM;
			*buf = nb;
			*cap = nc;
		}
		r = recv(fd, *buf + *len, *cap - *len - 1, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return delim ? -ECONNRESET : 0;
		*len += (size_t)r;
		(*buf)[*len] = '\0';
	}
}

static int send_request(int fd, const char *line, int pass_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	size_t n = strlen(line);
	struct iovec iov = { (void *)line, n };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t w;

	if (pass_fd >= 0) {
		struct cmsghdr *cm;
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	/* The line is far smaller than a socket buffer: one sendmsg. */
	w = sendmsg(fd, &mh, MSG_NOSIGNAL);
	if (w < 0)
		return -errno;
	return (size_t)w == n ? 0 : -EIO;
}

int channel_request(const char *shm_name, const struct channel_expect *want,
		    const char *request, int fd, int timeout_ms, char **ret_body,
		    pid_t *ret_pid, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t deadline = mono_ns() + (uint64_t)timeout_ms * 1000000u;
	char dir[PATH_MAX], line[CHANNEL_LINE_MAX + 1], gname[PERFMON_NAME_MAX + 2];
	char *buf = NULL, *nl;
	size_t len = 0, cap = 8192;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	int s = -1, e, proto, gpid;

	if (strchr(request, '\n') || strlen(request) + 1 >= sizeof(line))
		return errmsg(err, errlen, -EINVAL, "a request is one line of at most %d bytes",
			      CHANNEL_LINE_MAX - 1);
	if ((e = channel_dir_for(want->uid, dir, sizeof(dir))) < 0 ||
	    (e = sock_path_for(dir, shm_name, sa.sun_path, sizeof(sa.sun_path))) < 0)
		return errmsg(err, errlen, e, "runtime directory path too long");
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return errmsg(err, errlen, -errno, "socket: %s", strerror(errno));
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = -errno;
		errmsg(err, errlen, e, "no collector answers on %s: %s", sa.sun_path,
		       strerror(-e));
		goto out;
	}
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		e = errmsg(err, errlen, -errno, "SO_PEERCRED: %s", strerror(errno));
		goto out;
	}
	if (cred.uid != want->uid) {
		e = errmsg(err, errlen, -EPERM,
			   "%s is served by uid %u, not by the segment owner (uid %u); not "
			   "talking to it", sa.sun_path, (unsigned)cred.uid, (unsigned)want->uid);
		goto out;
	}
	if (want->exe && !exe_matches(cred.pid, want->exe)) {
		e = errmsg(err, errlen, -EPERM, "%s is served by pid %d, which is not %s",
			   sa.sun_path, (int)cred.pid, want->exe);
		goto out;
	}
	if (!(buf = malloc(cap))) {
		e = errmsg(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	buf[0] = '\0';
	if ((e = read_until(s, &buf, &len, &cap, '\n', deadline)) < 0) {
		errmsg(err, errlen, e, "no greeting from the collector on %s: %s", sa.sun_path,
		       e == -ECONNRESET ? "it closed the connection (busy?)" : strerror(-e));
		goto out;
	}
	nl = memchr(buf, '\n', len);
	*nl = '\0';
	if (sscanf(buf, "perfmond %d %201s %d", &proto, gname, &gpid) != 3 ||
	    proto != CHANNEL_PROTO || strcmp(gname, shm_name) || gpid != cred.pid) {
		e = errmsg(err, errlen, -EPROTO,
			   "the collector on %s does not serve '%s' (it said \"%.100s\")",
			   sa.sun_path, shm_name, buf);
		goto out;
	}
	if (ret_pid)
		*ret_pid = cred.pid;
	/* What followed the greeting belongs to the reply. */
	len -= (size_t)(nl + 1 - buf);
	memmove(buf, nl + 1, len + 1);
	snprintf(line, sizeof(line), "%s\n", request);
	if ((e = send_request(s, line, fd)) < 0) {
		errmsg(err, errlen, e, "cannot send the request: %s", strerror(-e));
		goto out;
	}
	if ((e = read_until(s, &buf, &len, &cap, 0, deadline)) < 0) {
		errmsg(err, errlen, e, "no reply from the collector (pid %d): %s", (int)cred.pid,
		       e == -ETIMEDOUT ? "timed out" : strerror(-e));
		goto out;
	}
	if (!strncmp(buf, "ok\n", 3)) {
		memmove(buf, buf + 3, len - 3 + 1);
		*ret_body = buf;
		buf = NULL;
		e = 0;
	} else if (!strncmp(buf, "error ", 6)) {
		nl = strchr(buf, '\n');
		if (nl)
			*nl = '\0';
		e = errmsg(err, errlen, -EREMOTEIO, "%s", buf + 6);
	} else {
		e = errmsg(err, errlen, -EPROTO, "the collector (pid %d) sent no reply",
			   (int)cred.pid);
	}
out:
	free(buf);
	if (s >= 0)
		close(s);
	return e;
}
