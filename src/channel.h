/*
 * channel.h - the collector's control channel: liveness from kernel facts
 * and a request/reply channel to the live daemon.
 *
 * Flow: at start perfmond takes an fcntl write lock on
 * <dir>/<name>.lock and listens on the unix stream socket
 * <dir>/<name>.sock, where <dir> is derived from the segment owner's uid
 * alone (channel_dir_for(); the rule is written down in perfmond(8)).
 * Producers can write the segments but not <dir>, so nothing they write can
 * make a collector look alive or dead: liveness is "the kernel says a
 * process holds the lock", and a reply comes from a peer whose uid
 * SO_PEERCRED reports.  perfmonctl and a second perfmond use the client
 * half below.
 *
 * Protocol (docs/control-channel.md): on accept the daemon greets with
 * "perfmond 1 <name> <pid>\n"; the client sends one request line
 * "<command> [arg ...]\n" (at most CHANNEL_LINE_MAX bytes, optionally with
 * one file descriptor in SCM_RIGHTS); the daemon answers "ok\n<body>" or
 * "error <message>\n" and closes the connection.  One request per
 * connection.
 */
#ifndef PERFMOND_CHANNEL_H
#define PERFMOND_CHANNEL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <perfmon/layout.h>

#define CHANNEL_LINE_MAX 4096      /* a request line, newline included */
#define CHANNEL_MAX_ARGS 16
#define CHANNEL_MAX_CONNS 16       /* connections the daemon serves at once */
#define CHANNEL_REPLY_MAX (1u << 20)

/* ---- Daemon side ------------------------------------------------------ */

struct channel;
struct channel_conn;

/* A request as a handler sees it.  Valid for the handler call only, except
 * `conn`, which stays valid until channel_reply*() on it. */
struct channel_request {
	const char *command;
	int argc;
	char **argv;              /* argv[0] is the first argument, not the command */
	int fd;                   /* passed with SCM_RIGHTS, or -1; a handler that
				   * keeps it sets this to -1, else it is closed */
	uid_t peer_uid;
	pid_t peer_pid;
	struct channel_conn *conn;
};

/* What a handler returns. */
enum channel_disposition {
	CHANNEL_REPLIED = 0,      /* it called channel_reply*() on req->conn */
	CHANNEL_LATER = 1,        /* it keeps req->conn and replies later */
};

typedef enum channel_disposition (*channel_handler)(void *ctx, struct channel_request *req);

/*
 * Take the collector lock of `shm_name` for this process's user and listen
 * on its socket (mode `mode` & 0666, group `gid` unless (gid_t)-1).
 * -EBUSY when another process holds the lock: `*ret_holder` is its pid.
 * Other failures: negative errno and a message in `err`.
 */
int channel_open(struct channel **ret, const char *shm_name, mode_t mode, gid_t gid,
		 pid_t *ret_holder, char *err, size_t errlen);

/* Unlink the socket and lock file, release the lock, free everything
 * (pending connections are closed unanswered).  NULL is fine. */
void channel_close(struct channel *ch);

/* Add command `name` (later registrations of a name replace earlier ones).
 * 0, or -ENOSPC when the table is full. */
int channel_register(struct channel *ch, const char *name, channel_handler fn, void *ctx);

/* Poll integration: fill at most `max` entries of `pfd` with what the
 * channel waits on; returns how many.  After poll(), pass the same entries
 * to channel_dispatch(), which accepts, reads and runs handlers, and drops
 * connections that sat idle too long.  Never blocks. */
int channel_poll_fill(struct channel *ch, struct pollfd *pfd, int max);
void channel_dispatch(struct channel *ch, const struct pollfd *pfd, int n);

/* Reply and close the connection.  `body` may be NULL.  Never blocks: a
 * reply that does not fit the socket buffer is cut. */
void channel_reply_ok(struct channel_conn *conn, const char *body);
void channel_reply_okf(struct channel_conn *conn, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void channel_reply_error(struct channel_conn *conn, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The collector's private state file <dir>/<name>.state, mapped shared and
 * writable (created zeroed when missing).  It outlives the daemon, so a
 * restart resumes from what the previous one recorded there; producers
 * cannot write it.  Unmapped by channel_close(), never unlinked.
 */
struct channel_state {
	uint64_t magic;           /* CHANNEL_STATE_MAGIC once written */
	uint64_t instance_id;     /* the segments this state belongs to */
	uint64_t subrings;        /* sub-rings of those segments */
	uint64_t tails[PERFMON_MAX_SUBRINGS];   /* next index to read in each */
};
#define CHANNEL_STATE_MAGIC 0x32657461746d7070ull   /* "ppmtate2" */
int channel_state_map(struct channel *ch, struct channel_state **ret, char *err,
		      size_t errlen);

/*
 * A run begins over the segments `instance_id` of `subrings` sub-rings:
 * into `ret_tails`, where to resume reading each sub-ring -- the positions
 * `st` holds when the segments were `reopened` and are those it was written
 * for, else `heads` (which may be `ret_tails` itself).  From then on `st`
 * belongs to these segments and holds those positions.
 */
void channel_state_begin(struct channel_state *st, uint64_t instance_id, uint32_t subrings,
			 bool reopened, const uint64_t *heads, uint64_t *ret_tails);

/* Has the client of a kept connection gone away? */
bool channel_conn_hung_up(struct channel_conn *conn);

/* ---- Both sides --------------------------------------------------------- */

/*
 * The runtime directory of collectors run by `uid`, into `buf`:
 * /run/perfmond when that directory exists and belongs to `uid` (the
 * unit's RuntimeDirectory=), else /run/user/<uid>/perfmond when
 * /run/user/<uid> belongs to `uid`, else /tmp/perfmond-<uid>.
 */
int channel_dir_for(uid_t uid, char *buf, size_t n);

/* The owner uid of the segments of <name>, from the kernel: producers
 * cannot change it (shm_segment_stat). */
int channel_segment_owner(const char *shm_name, uid_t *ret_uid);

/* ---- Client side -------------------------------------------------------- */

/* What the client requires of the peer. */
struct channel_expect {
	uid_t uid;                /* the segment owner's uid */
	const char *exe;          /* basename the peer's executable must have
				   * (checked when /proc lets us read it); NULL: any */
};

/*
 * Liveness of the collector of `shm_name` run by `owner`: 1 with
 * `*ret_pid` when a process holds its lock, 0 when none does, negative
 * errno when it cannot be told (-EACCES: the directory is closed to us).
 */
int channel_alive(const char *shm_name, uid_t owner, pid_t *ret_pid);

/*
 * Send `request` (one line, no newline) with `fd` (or -1) to the collector
 * of `shm_name`, verify the peer against `want` and that it serves
 * `shm_name`, and wait up to `timeout_ms` for the reply.  Returns 0 with
 * the reply body in `*ret_body` (malloc'ed, NUL-terminated; free it) when
 * the daemon said ok; -EREMOTEIO with the daemon's message in `err` when it
 * said error; -ECONNREFUSED/-ENOENT when no collector listens;
 * -ETIMEDOUT; -EPERM when the peer is not who it must be.
 * `*ret_pid` (may be NULL) receives the peer's pid once verified.
 */
int channel_request(const char *shm_name, const struct channel_expect *want,
		    const char *request, int fd, int timeout_ms, char **ret_body,
		    pid_t *ret_pid, char *err, size_t errlen);

#endif
