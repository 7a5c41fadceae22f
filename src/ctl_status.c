/*
 * ctl_status.c - status, names, remove and summary: the perfmonctl
 * commands that look at an instance's shared segments.
 *
 * The segments are mapped read-only (O_RDONLY), so a member of the
 * segments' group can inspect them without being root.  Whether a
 * collector is alive, its pid, counters and output paths never come from
 * the control block, which every producer can write: a collector is alive
 * when the kernel reports a holder of its lock (channel.h), and what it
 * reports comes from the daemon itself over its control socket.  The
 * control block only supplies what is shown as the ring's state (head,
 * names).
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"
#include "clocks.h"
#include "ctl_cli.h"
#include "ctl_json.h"
#include "ctl_producers.h"
#include "ctl_status.h"
#include "ctl_table.h"
#include "ctl_text.h"
#include "status_msg.h"

#define SUMMARY_TIMEOUT_S 15.0
#define RATE_WINDOW_NS 250000000L

static void sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
	nanosleep(&ts, NULL);
}

static uint64_t ld64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static uint32_t ld32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static uint32_t count_names(const struct shm_instance *inst)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < inst->max_names; i++) {
		uint64_t k = ld64(&inst->names[i].key);
		if (k && !(k & PERFMON_NAME_CLAIMED))
			n++;
	}
	return n;
}

/* The owner of the segments, as the kernel records it (a producer cannot
 * change it). */
static void segment_owner(const char *name, struct ctl_collector *c)
{
	struct stat st;

	c->seg_uid = (uid_t)-1;
	c->seg_gid = (gid_t)-1;
	if (shm_segment_stat(name, &st) < 0)
		return;
	c->seg_uid = st.st_uid;
	c->seg_gid = st.st_gid;
	c->seg_mode = st.st_mode & 07777;
}

const char *ctl_collector_exe = "perfmond";

/*
 * Liveness and the collector's own figures.  Alive: a perfmond of the
 * segments' owner holds their collector lock (channel_alive() checks the
 * holder; a lock held by anyone else is no collector).  The lock file is
 * the owner's alone (mode 0600), so for anyone else -- a member of the
 * segments' group -- a collector is alive when its control socket
 * answers, from a peer the kernel reports as the owner.  When the socket
 * answers `status`, the counters, paths and heartbeat are the daemon's;
 * when a live lock holder's socket cannot be reached, the figures stay
 * what the caller had.
 */
static void collector_probe(const char *name, struct ctl_collector *c)
{
	struct channel_expect want = { c->seg_uid, ctl_collector_exe };
	static struct status_msg st;   /* paths make it large */
	char err[512], *body = NULL;
	pid_t pid = 0;
	int a;

	c->csv_path[0] = c->summary_path[0] = '\0';
	c->alive = c->process_exists = false;
	c->state = PERFMON_COLLECTOR_STOPPED;
	c->heartbeat_age_s = -1;
	c->uptime_s = -1;
	if (c->seg_uid == (uid_t)-1 || (a = channel_alive(name, c->seg_uid, &pid)) == 0)
		return;
	if (a < 0 && channel_request(name, &want, "status", -1, 2000, &body, &pid, err,
				     sizeof(err)) < 0)
		return;   /* the lock is closed to us and no collector answers */
	c->pid = pid > 0 ? (uint32_t)pid : 0;
	c->process_exists = true;
	c->alive = true;
	c->state = PERFMON_COLLECTOR_RUNNING;
	if (!body &&
	    channel_request(name, &want, "status", -1, 2000, &body, NULL, err, sizeof(err)) < 0)
		return;
	status_msg_parse(body, &st);
	c->start_ns = st.start_ns;
	c->uptime_s = c->start_ns ? ((double)real_ns() - (double)c->start_ns) / 1e9 : -1;
	c->heartbeat_age_s = (double)st.heartbeat_age_ns / 1e9;
	c->drained = st.drained;
	c->dropped = st.dropped;
	c->stalled = st.stalled;
	c->misordered = st.misordered;
	c->open_spans = st.open_spans;
	/* The fullest sub-ring by the collector's own read positions. */
	if (st.has_fullest) {
		c->head = st.head;
		c->tail = st.tail;
		c->fullest = st.fullest;
	}
	c->capacity = st.capacity;
	c->max_names = st.max_names;
	c->overhead_ticks = st.overhead_ticks;
	c->flush_interval_ns = st.flush_interval_ns;
	c->csv_flush_interval_ns = st.csv_flush_interval_ns;
	c->tsc_invariant = st.tsc_invariant;
	c->tsc_hz = st.tsc_hz;
	ctl_text_clean(c->csv_path, st.csv, sizeof(c->csv_path));
	ctl_text_clean(c->summary_path, st.summary, sizeof(c->summary_path));
	/* A live process whose drain thread stopped moving is not collecting. */
	c->alive = c->heartbeat_age_s < CTL_HEARTBEAT_STALE_S;
	free(body);
}

void ctl_status_snapshot(const struct shm_instance *inst, struct ctl_collector *c)
{
	const struct perfmon_meta_header *m = inst->meta;

	memset(c, 0, sizeof(*c));
	/* Shown as the ring's state; the collector's figures replace them when
	 * it answers. */
	c->drained = ld64(&m->events_drained);
	c->dropped = ld64(&m->dropped);
	c->stalled = ld64(&m->stalled);
	c->misordered = ld64(&m->misordered);
	c->open_spans = ld64(&m->open_spans);
	c->flush_interval_ns = ld64(&m->flush_interval_ns);
	c->csv_flush_interval_ns = ld64(&m->csv_flush_interval_ns);
	/* The fullest sub-ring: the one closest to overwriting unread events. */
	c->subrings = inst->subrings;
	c->capacity = inst->capacity;
	for (uint32_t k = 0; k < inst->subrings; k++) {
		const struct perfmon_subring *s = PERFMON_SUBRING(inst->ring, k);
		uint64_t h = ld64(&s->head), t = ld64(&s->reader_tail);
		uint64_t used = h >= t ? h - t : 0;
		if (k == 0 || used > (c->head >= c->tail ? c->head - c->tail : 0)) {
			c->head = h;
			c->tail = t;
			c->fullest = k;
		}
	}
	c->tsc_hz = (double)ld64(&m->tsc_hz_milli) / 1000.0;
	c->tsc_invariant = ld32(&m->tsc_invariant) != 0;
	c->overhead_ticks = ld64(&m->overhead_ticks);
	c->max_names = inst->max_names;
	c->names_used = count_names(inst);
	c->name_conflicts = ld64(&m->name_conflicts);
	segment_owner(inst->name, c);
	collector_probe(inst->name, c);
	c->capacity = inst->capacity;
	c->max_names = inst->max_names;
}

/* Segments that cannot be validated (garbage in the header): only what
 * the kernel and the collector say. */
static void snapshot_unreadable(const char *name, struct ctl_collector *c)
{
	memset(c, 0, sizeof(*c));
	segment_owner(name, c);
	collector_probe(name, c);
}

int ctl_status_open_output(const char *path, uid_t owner, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (!path[0]) {
		snprintf(err, errlen, "no file configured");
		return -ENOENT;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		char clean[PERFMON_PATH_SIZE];
		ctl_text_clean(clean, path, sizeof(clean));
		snprintf(err, errlen, "cannot open %s: %s%s", clean, strerror(e),
			 e == EACCES ? " (run as the collector's user or a member of its "
			 "output directory's group)" : e == ELOOP ? " (a symbolic link; not "
			 "followed)" : "");
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != owner && st.st_uid != 0)) {
		char clean[PERFMON_PATH_SIZE];
		ctl_text_clean(clean, path, sizeof(clean));
		snprintf(err, errlen, "%s is not a regular file owned by the collector's user "
			 "(uid %u); refusing to read it", clean, (unsigned)owner);
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* ---- option parsing shared by these commands -------------------------- */

struct seg_opts {
	const char *name;
	const char *format;
	bool force;
	double timeout_s;
};

enum { OPT_FORMAT = 0x100, OPT_TIMEOUT };

/* What a command accepts besides [NAME]. */
enum {
	SEG_NAME_REQUIRED = 1 << 0,
	SEG_FORMAT = 1 << 1,
	SEG_FORCE = 1 << 2,
	SEG_TIMEOUT = 1 << 3,
};

/* [NAME] and the options in `allowed`.  Returns -1 to go on, else the exit
 * code (bad usage, already explained on `err`). */
static int parse_seg_opts(int argc, char **argv, FILE *err, unsigned allowed,
			  struct seg_opts *o)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "force", no_argument, NULL, 'f' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = argv[0];
	int c;

	memset(o, 0, sizeof(*o));
	o->timeout_s = SUMMARY_TIMEOUT_S;
	optind = 0;
	opterr = 0;
	/* GNU getopt permutes, so options may come before or after NAME. */
	while ((c = getopt_long(argc, argv, "f", opts, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			if (!(allowed & SEG_FORMAT))
				return ctl_usage_error(err, cmd, "%s prints no table: no --format",
						       cmd);
			o->format = optarg;
			break;
		case 'f':
			if (!(allowed & SEG_FORCE))
				return ctl_usage_error(err, cmd, "--force only applies to remove");
			o->force = true;
			break;
		case OPT_TIMEOUT:
			if (!(allowed & SEG_TIMEOUT))
				return ctl_usage_error(err, cmd, "--timeout only applies to summary");
			if (ctl_parse_duration(optarg, &o->timeout_s) < 0)
				return ctl_usage_error(err, cmd, "--timeout %s: not a duration "
						       "(e.g. 10s, 500ms)", optarg);
			break;
		default:
			return ctl_usage_error(err, cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->name = argv[optind++];
	if (optind < argc)
		return ctl_usage_error(err, cmd, "unexpected argument '%s'", argv[optind]);
	if (!o->name && (allowed & SEG_NAME_REQUIRED))
		return ctl_usage_error(err, cmd, "which instance? give its NAME");
	o->name = ctl_instance_name(o->name);
	return -1;
}

/* Open NAME's segments or explain why not.  Exit code on failure, else -1. */
static int open_instance(const char *cmd, const char *name, bool writable,
			 struct shm_instance *inst, FILE *err)
{
	char msg[512];
	int e = shm_open_existing(name, writable, inst, msg, sizeof(msg));

	if (e == 0)
		return -1;
	if (e == -ENOENT)
		fprintf(err, "perfmonctl %s: no segments named '%s' in /dev/shm (is perfmond "
			"running with this shm name?)\n", cmd, name);
	else
		fprintf(err, "perfmonctl %s: %s\n", cmd, msg);
	return CTL_EXIT_FAILURE;
}

static void fmt_utc(uint64_t ns, char *buf, size_t n)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!ns || !gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, n, "-");
}

/* Why the collector is not alive, for people. */
static void describe_state(const struct ctl_collector *c, char *buf, size_t n)
{
	char age[32];

	ctl_fmt_age(c->heartbeat_age_s, age, sizeof(age));
	if (c->alive)
		snprintf(buf, n, "alive, pid %u", c->pid);
	else if (c->process_exists)
		snprintf(buf, n, "not responding (pid %u holds the collector lock but its drain "
			 "thread has been silent for %s)", c->pid, age);
	else
		snprintf(buf, n, "not running (no process holds the collector lock)");
}

static const char *state_word(const struct ctl_collector *c)
{
	if (c->alive)
		return "alive";
	return c->process_exists ? "not-responding" : "stopped";
}

static const char *user_of(uid_t uid, char *buf, size_t n)
{
	struct passwd *pw = getpwuid(uid);
	if (pw)
		ctl_text_clean(buf, pw->pw_name, n);
	else
		snprintf(buf, n, "%u", (unsigned)uid);
	return buf;
}

static const char *group_of(gid_t gid, char *buf, size_t n)
{
	struct group *gr = getgrgid(gid);
	if (gr)
		ctl_text_clean(buf, gr->gr_name, n);
	else
		snprintf(buf, n, "%u", (unsigned)gid);
	return buf;
}

static void kv(struct ctl_table *t, const char *k, const char *v)
{
	ctl_table_add_row(t);
	ctl_table_set(t, 0, k);
	ctl_table_set(t, 1, v);
}

/* The status as one JSON document (schema in perfmonctl(1)). */
static int print_status_json(FILE *out, const char *name, const struct ctl_collector *c,
			     double rate, bool have_rate, const struct ctl_producer *prods,
			     unsigned nprods)
{
	uint64_t used = c->head >= c->tail ? c->head - c->tail : 0;
	struct ctl_json j;

	ctl_json_init(&j, out);
	ctl_json_object_begin(&j);
	ctl_json_kv_string(&j, "instance", name);
	ctl_json_kv_string(&j, "state", state_word(c));
	ctl_json_kv_bool(&j, "alive", c->alive);
	ctl_json_kv_u64(&j, "pid", c->pid);
	ctl_json_key(&j, "heartbeat_age_s");
	if (c->heartbeat_age_s >= 0)
		ctl_json_double(&j, c->heartbeat_age_s);
	else
		ctl_json_null(&j);
	ctl_json_key(&j, "uptime_s");
	if (c->alive && c->uptime_s >= 0)
		ctl_json_double(&j, c->uptime_s);
	else
		ctl_json_null(&j);
	ctl_json_kv_u64(&j, "start_ns", c->start_ns);
	ctl_json_kv_u64(&j, "events_drained", c->drained);
	ctl_json_key(&j, "events_per_s");
	if (have_rate)
		ctl_json_double(&j, rate);
	else
		ctl_json_null(&j);
	ctl_json_kv_u64(&j, "dropped", c->dropped);
	ctl_json_kv_u64(&j, "stalled", c->stalled);
	ctl_json_kv_u64(&j, "misordered", c->misordered);
	ctl_json_kv_u64(&j, "ring_used", used > c->capacity ? c->capacity : used);
	ctl_json_kv_u64(&j, "ring_capacity", c->capacity);
	ctl_json_kv_u64(&j, "open_spans", c->open_spans);
	ctl_json_kv_u64(&j, "names", c->names_used);
	ctl_json_kv_u64(&j, "max_names", c->max_names);
	ctl_json_kv_u64(&j, "name_conflicts", c->name_conflicts);
	ctl_json_kv_double(&j, "tsc_hz", c->tsc_hz);
	ctl_json_kv_bool(&j, "tsc_invariant", c->tsc_invariant);
	ctl_json_kv_u64(&j, "overhead_ticks", c->overhead_ticks);
	ctl_json_kv_string(&j, "csv_path", c->csv_path);
	ctl_json_kv_string(&j, "summary_path", c->summary_path);
	ctl_json_key(&j, "producers");
	ctl_json_array_begin(&j);
	for (unsigned i = 0; i < nprods; i++) {
		ctl_json_object_begin(&j);
		ctl_json_kv_u64(&j, "pid", prods[i].pid);
		ctl_json_kv_string(&j, "command", prods[i].comm);
		ctl_json_kv_u64(&j, "attach_time_s", prods[i].attach_s);
		ctl_json_kv_bool(&j, "alive", true);
		ctl_json_object_end(&j);
	}
	ctl_json_array_end(&j);
	ctl_json_object_end(&j);
	return ctl_json_finish(&j);
}

/* One line per producer: "pid 123 engine, attached 2026-... UTC (5m ago)". */
static void describe_producer(const struct ctl_producer *p, char *buf, size_t n)
{
	char when[64], age[32];
	double ago = (double)real_ns() / 1e9 - (double)p->attach_s;

	fmt_utc(p->attach_s * 1000000000u, when, sizeof(when));
	ctl_fmt_age(ago < 0 ? 0 : ago, age, sizeof(age));
	snprintf(buf, n, "pid %u %s, attached %s (%s ago)", p->pid,
		 p->comm[0] ? p->comm : "?", when, age);
}

static int print_status(FILE *out, enum ctl_format fmt, const char *name,
			const struct ctl_collector *c, double rate, bool have_rate,
			const struct ctl_producer *prods, unsigned nprods)
{
	uint64_t used = c->head >= c->tail ? c->head - c->tail : 0;
	double fill = c->capacity ? (double)(used > c->capacity ? c->capacity : used) /
				    (double)c->capacity : 0;
	struct ctl_table *t = ctl_table_new();
	char a[256], b[64], d[64];
	int e;

	if (!t)
		return -ENOMEM;
	if (fmt == CTL_FORMAT_CSV) {
		static const char *const cols[] = {
			"name", "state", "alive", "pid", "heartbeat_age_s", "uptime_s",
			"start_time", "events_drained", "events_per_s", "dropped", "stalled",
			"ring_used", "ring_capacity", "open_spans", "names", "max_names",
			"name_conflicts", "tsc_hz", "tsc_invariant", "csv_path", "summary_path",
			"producers",
		};
		for (unsigned i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
			ctl_table_add_column(t, cols[i], CTL_ALIGN_LEFT, false);
		ctl_table_add_row(t);
		ctl_table_set(t, 0, name);
		ctl_table_set(t, 1, state_word(c));
		ctl_table_set(t, 2, c->alive ? "1" : "0");
		ctl_table_setf(t, 3, "%u", c->pid);
		ctl_table_setf(t, 4, "%.3f", c->heartbeat_age_s);
		if (c->alive)   /* a stopped collector has no uptime */
			ctl_table_setf(t, 5, "%.3f", c->uptime_s);
		fmt_utc(c->start_ns, a, sizeof(a));
		ctl_table_set(t, 6, a);
		ctl_table_setf(t, 7, "%llu", (unsigned long long)c->drained);
		ctl_table_setf(t, 8, have_rate ? "%.1f" : "", rate);
		ctl_table_setf(t, 9, "%llu", (unsigned long long)c->dropped);
		ctl_table_setf(t, 10, "%llu", (unsigned long long)c->stalled);
		ctl_table_setf(t, 11, "%llu", (unsigned long long)used);
		ctl_table_setf(t, 12, "%llu", (unsigned long long)c->capacity);
		ctl_table_setf(t, 13, "%llu", (unsigned long long)c->open_spans);
		ctl_table_setf(t, 14, "%u", c->names_used);
		ctl_table_setf(t, 15, "%u", c->max_names);
		ctl_table_setf(t, 16, "%llu", (unsigned long long)c->name_conflicts);
		ctl_table_setf(t, 17, "%.3f", c->tsc_hz);
		ctl_table_set(t, 18, c->tsc_invariant ? "1" : "0");
		ctl_table_set(t, 19, c->csv_path);
		ctl_table_set(t, 20, c->summary_path);
		ctl_table_setf(t, 21, "%u", nprods);
		e = ctl_table_print(t, out, fmt, 0);
		ctl_table_free(t);
		return e;
	}

	ctl_table_add_column(t, "field", CTL_ALIGN_LEFT, false);
	ctl_table_add_column(t, "value", CTL_ALIGN_LEFT, true);
	kv(t, "instance", name);
	describe_state(c, a, sizeof(a));
	kv(t, "collector", a);
	if (c->heartbeat_age_s >= 0) {
		ctl_fmt_age(c->heartbeat_age_s, b, sizeof(b));
		snprintf(a, sizeof(a), "%s ago", b);
		kv(t, "heartbeat", a);
	}
	if (c->start_ns && c->alive) {
		fmt_utc(c->start_ns, b, sizeof(b));
		ctl_fmt_age(c->uptime_s, d, sizeof(d));
		snprintf(a, sizeof(a), "%s since %s", d, b);
		kv(t, "uptime", a);
	} else if (c->start_ns) {
		fmt_utc(c->start_ns, a, sizeof(a));
		kv(t, "started", a);
	}
	ctl_fmt_si(rate, b, sizeof(b));
	snprintf(a, sizeof(a), "%llu drained%s%s%s", (unsigned long long)c->drained,
		 have_rate ? ", " : "", have_rate ? b : "", have_rate ? "/s now" : "");
	kv(t, "events", a);
	snprintf(a, sizeof(a), "%llu", (unsigned long long)c->dropped);
	if (c->dropped)
		snprintf(a + strlen(a), sizeof(a) - strlen(a), " (%.3f%% of all events)",
			 100.0 * (double)c->dropped / (double)(c->dropped + c->drained));
	kv(t, "dropped", a);
	snprintf(a, sizeof(a), "%llu", (unsigned long long)c->stalled);
	kv(t, "stalled", a);
	snprintf(a, sizeof(a), "%llu%s", (unsigned long long)c->misordered,
		 c->misordered ? " span events paired out of time order (published after "
		 "the hole grace, or stamped in the future)" : "");
	kv(t, "misordered", a);
	snprintf(a, sizeof(a), "%.1f%% (%llu of %llu slots, fullest of %u sub-rings: %u)",
		 100.0 * fill, (unsigned long long)used, (unsigned long long)c->capacity,
		 c->subrings, c->fullest);
	kv(t, "ring fill", a);
	snprintf(a, sizeof(a), "%llu", (unsigned long long)c->open_spans);
	kv(t, "open spans", a);
	snprintf(a, sizeof(a), "%u of %u published, %llu conflicts", c->names_used,
		 c->max_names, (unsigned long long)c->name_conflicts);
	kv(t, "names", a);
	if (c->tsc_hz > 0) {
		snprintf(a, sizeof(a), "%.4f GHz, %s", c->tsc_hz / 1e9,
			 c->tsc_invariant ? "invariant" : "NOT INVARIANT: latencies are unreliable");
		kv(t, "tsc", a);
		if (c->overhead_ticks)
			snprintf(a, sizeof(a), "%llu ticks (%.1f ns) per stamp",
				 (unsigned long long)c->overhead_ticks,
				 (double)c->overhead_ticks * 1e9 / c->tsc_hz);
		if (c->overhead_ticks)
			kv(t, "overhead", a);
	}
	kv(t, "csv", c->csv_path[0] ? c->csv_path : "(none)");
	kv(t, "summary", c->summary_path[0] ? c->summary_path : "(none)");
	if (c->seg_uid != (uid_t)-1) {
		snprintf(a, sizeof(a), "/dev/shm/%s{,.meta}, owner %s:%s, mode %04o", name,
			 user_of(c->seg_uid, b, sizeof(b)), group_of(c->seg_gid, d, sizeof(d)),
			 (unsigned)c->seg_mode);
		kv(t, "segments", a);
	}
	if (nprods == 0)
		kv(t, "producers", "none attached");
	for (unsigned i = 0; i < nprods; i++) {
		describe_producer(&prods[i], a, sizeof(a));
		kv(t, i == 0 ? "producers" : "", a);
	}
	e = ctl_table_print(t, out, fmt, fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0);
	ctl_table_free(t);
	return e;
}

int ctl_status_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	struct shm_instance inst;
	struct ctl_collector c, c2;
	struct ctl_producer prods[PERFMON_MAX_PRODUCERS];
	unsigned nprods;
	struct seg_opts o;
	enum ctl_format fmt;
	double rate = 0;
	bool have_rate = false;
	char msg[512];
	int rc;

	if ((rc = parse_seg_opts(argc, argv, err, SEG_FORMAT, &o)) >= 0)
		return rc;
	if (ctl_cli_format_json(o.format, &fmt, err, argv[0]) < 0)
		return CTL_EXIT_FAILURE;
	if (shm_open_existing(o.name, false, &inst, msg, sizeof(msg)) == -EPROTO) {
		/* Garbage in the segments hides nothing: a live collector is
		 * reported from the kernel and its own answer. */
		snapshot_unreadable(o.name, &c);
		if (!c.alive) {
			fprintf(err, "perfmonctl %s: %s\n", argv[0], msg);
			return CTL_EXIT_FAILURE;
		}
		fprintf(err, "perfmonctl status: warning: %s\n", msg);
		if ((fmt == CTL_FORMAT_JSON ?
		     print_status_json(out, o.name, &c, 0, false, NULL, 0) :
		     print_status(out, fmt, o.name, &c, 0, false, NULL, 0)) < 0)
			return CTL_EXIT_FAILURE;
		return CTL_EXIT_OK;
	}
	if ((rc = open_instance(argv[0], o.name, false, &inst, err)) >= 0)
		return rc;
	ctl_status_snapshot(&inst, &c);
	if (c.alive) {
		/* The rate now, not the lifetime average: two looks 250 ms apart. */
		uint64_t t0 = mono_ns(), t1;
		sleep_ns(RATE_WINDOW_NS);
		ctl_status_snapshot(&inst, &c2);
		t1 = mono_ns();
		if (c2.alive && c2.pid == c.pid && c2.drained >= c.drained) {
			rate = (double)(c2.drained - c.drained) * 1e9 / (double)(t1 - t0);
			have_rate = true;
			c = c2;
		}
	}
	nprods = ctl_producers_read(&inst, prods);
	shm_close(&inst);
	if ((fmt == CTL_FORMAT_JSON ?
	     print_status_json(out, o.name, &c, rate, have_rate, prods, nprods) :
	     print_status(out, fmt, o.name, &c, rate, have_rate, prods, nprods)) < 0) {
		fprintf(err, "perfmonctl status: cannot write the output\n");
		return CTL_EXIT_FAILURE;
	}
	return c.alive ? CTL_EXIT_OK : CTL_EXIT_NOT_RUNNING;
}

/* ---- names ------------------------------------------------------------ */

struct name_item {
	uint32_t point;
	uint8_t step;
	char label[PERFMON_LABEL_SIZE];
};

static int cmp_name_item(const void *a, const void *b)
{
	const struct name_item *x = a, *y = b;
	if (x->point != y->point)
		return x->point < y->point ? -1 : 1;
	return (int)x->step - (int)y->step;
}

static void step_meaning(uint8_t step, char *buf, size_t n)
{
	if (step == PERFMON_BEGIN_STEP)
		snprintf(buf, n, "point");
	else if (step == PERFMON_END_STEP)
		snprintf(buf, n, "stage ending at end");
	else if (step == PERFMON_VALUE_STEP)
		snprintf(buf, n, "value");
	else
		snprintf(buf, n, "stage ending at step %u", step);
}

int ctl_names_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	struct shm_instance inst;
	struct name_item *items;
	struct seg_opts o;
	enum ctl_format fmt;
	struct ctl_table *t;
	uint32_t n = 0;
	uint64_t conflicts;
	int rc;

	if ((rc = parse_seg_opts(argc, argv, err, SEG_FORMAT, &o)) >= 0)
		return rc;
	if (ctl_cli_format_json(o.format, &fmt, err, argv[0]) < 0)
		return CTL_EXIT_FAILURE;
	if ((rc = open_instance(argv[0], o.name, false, &inst, err)) >= 0)
		return rc;
	items = calloc(inst.max_names ? inst.max_names : 1, sizeof(*items));
	t = ctl_table_new();
	if (!items || !t) {
		free(items);
		ctl_table_free(t);
		shm_close(&inst);
		fprintf(err, "perfmonctl names: out of memory\n");
		return CTL_EXIT_FAILURE;
	}
	/* The publish protocol: copy, re-check the key, terminate, clean. */
	for (uint32_t i = 0; i < inst.max_names; i++) {
		char raw[PERFMON_LABEL_SIZE];
		uint64_t k = ld64(&inst.names[i].key);
		if (k == 0 || (k & PERFMON_NAME_CLAIMED) || ((k - 1) >> 40) != 0)
			continue;
		memcpy(raw, inst.names[i].label, sizeof(raw));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&inst.names[i].key, __ATOMIC_RELAXED) != k)
			continue;
		raw[sizeof(raw) - 1] = '\0';
		items[n].point = (uint32_t)((k - 1) >> 8);
		items[n].step = (uint8_t)((k - 1) & 0xFF);
		ctl_text_clean(items[n].label, raw, sizeof(items[n].label));
		n++;
	}
	conflicts = ld64(&inst.meta->name_conflicts);
	shm_close(&inst);
	qsort(items, n, sizeof(*items), cmp_name_item);

	if (fmt == CTL_FORMAT_JSON) {
		struct ctl_json j;
		ctl_json_init(&j, out);
		ctl_json_object_begin(&j);
		ctl_json_kv_string(&j, "instance", o.name);
		ctl_json_kv_u64(&j, "max_names", inst.max_names);
		ctl_json_kv_u64(&j, "name_conflicts", conflicts);
		ctl_json_key(&j, "names");
		ctl_json_array_begin(&j);
		for (uint32_t i = 0; i < n; i++) {
			char what[48];
			step_meaning(items[i].step, what, sizeof(what));
			ctl_json_object_begin(&j);
			ctl_json_kv_u64(&j, "point", items[i].point);
			ctl_json_kv_u64(&j, "step", items[i].step);
			ctl_json_kv_string(&j, "names", what);
			ctl_json_kv_string(&j, "label", items[i].label);
			ctl_json_object_end(&j);
		}
		ctl_json_array_end(&j);
		ctl_json_object_end(&j);
		rc = ctl_json_finish(&j);
		ctl_table_free(t);
		free(items);
		return rc < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
	}
	ctl_table_add_column(t, "point", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "step", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "names", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "label", CTL_ALIGN_LEFT, true);
	for (uint32_t i = 0; i < n; i++) {
		char what[48];
		step_meaning(items[i].step, what, sizeof(what));
		ctl_table_add_row(t);
		ctl_table_setf(t, 0, "%u", items[i].point);
		ctl_table_setf(t, 1, "%u", items[i].step);
		ctl_table_set(t, 2, what);
		ctl_table_set(t, 3, items[i].label);
	}
	rc = ctl_table_print(t, out, fmt, fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0);
	if (fmt != CTL_FORMAT_CSV)
		fprintf(out, "%s%u of %u entries used, %llu conflicts\n",
			fmt == CTL_FORMAT_MD ? "\n" : "", n, inst.max_names,
			(unsigned long long)conflicts);
	ctl_table_free(t);
	free(items);
	return rc < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}

/* ---- remove ------------------------------------------------------------ */

int ctl_remove_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	struct ctl_collector c;
	struct seg_opts o;
	char path[PERFMON_NAME_MAX + 8];
	unsigned parts = 0;
	int rc, e;

	if ((rc = parse_seg_opts(argc, argv, err, SEG_NAME_REQUIRED | SEG_FORCE, &o)) >= 0)
		return rc;
	if ((e = shm_object_name(o.name, "", path, sizeof(path))) < 0) {
		fprintf(err, "perfmonctl remove: invalid shm name '%s': use 1-%d characters of "
			"[A-Za-z0-9._-], not starting with '.' nor ending in '.meta'\n", o.name, PERFMON_NAME_MAX);
		return CTL_EXIT_FAILURE;
	}
	/* Whatever the segments contain: the lock decides. */
	memset(&c, 0, sizeof(c));
	segment_owner(o.name, &c);
	if (c.seg_uid != (uid_t)-1) {
		pid_t pid = 0;
		int a = channel_alive(o.name, c.seg_uid, &pid);
		if (a != 0 && !o.force) {
			if (a == 1)
				fprintf(err, "perfmonctl remove: a collector (pid %d) is running on "
					"'%s'; stop it first, or use --force (attached producers keep "
					"stamping into the removed ring until they reattach)\n",
					(int)pid, o.name);
			else
				fprintf(err, "perfmonctl remove: cannot tell whether a collector is "
					"running on '%s' (its lock: %s); run as its user or root, or "
					"use --force\n", o.name, strerror(-a));
			return CTL_EXIT_FAILURE;
		}
	}
	/* Unreadable or corrupt segments are exactly what remove is for. */
	e = shm_remove_parts(o.name, &parts);
	if (e == -ENOENT) {
		fprintf(err, "perfmonctl remove: no segments named '%s' in /dev/shm\n", o.name);
		return CTL_EXIT_FAILURE;
	}
	if (e < 0) {
		fprintf(err, "perfmonctl remove: cannot remove the segments of '%s': %s%s\n",
			o.name, strerror(-e), e == -EACCES || e == -EPERM ?
			" (/dev/shm is sticky: only their owner or root may remove them)" : "");
		return CTL_EXIT_FAILURE;
	}
	if (parts == (SHM_PART_RING | SHM_PART_META))
		fprintf(out, "removed /dev/shm/%s and /dev/shm/%s.meta\n", o.name, o.name);
	else
		fprintf(out, "removed /dev/shm/%s%s (the other segment was not there)\n", o.name,
			parts & SHM_PART_META ? ".meta" : "");
	return CTL_EXIT_OK;
}

/* ---- summary ----------------------------------------------------------- */

/* Copy a file to `out` line by line, each line cleaned. */
static int print_clean_file(int fd, FILE *out)
{
	FILE *f = fdopen(fd, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f) {
		close(fd);
		return -errno;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		char *c;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		c = ctl_text_dup_clean(line, (size_t)n);
		if (!c)
			break;
		fprintf(out, "%s\n", c);
		free(c);
	}
	free(line);
	fclose(f);
	return ferror(out) ? -EIO : 0;
}

int ctl_summary_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	struct ctl_collector c;
	struct channel_expect want;
	struct seg_opts o;
	char msg[1024], *body = NULL, *nl;
	int rc, fd, e;

	if ((rc = parse_seg_opts(argc, argv, err, SEG_TIMEOUT, &o)) >= 0)
		return rc;
	memset(&c, 0, sizeof(c));
	segment_owner(o.name, &c);
	if (c.seg_uid == (uid_t)-1) {
		fprintf(err, "perfmonctl summary: no segments named '%s' in /dev/shm (is "
			"perfmond running with this shm name?)\n", o.name);
		return CTL_EXIT_FAILURE;
	}
	collector_probe(o.name, &c);
	if (!c.process_exists) {
		describe_state(&c, msg, sizeof(msg));
		fprintf(err, "perfmonctl summary: no collector running on '%s': %s\n", o.name,
			msg);
		return CTL_EXIT_NOT_RUNNING;
	}
	/* The daemon writes the summary at its next interval and answers with
	 * the path it wrote: its own configuration, not the control block. */
	want = (struct channel_expect){ c.seg_uid, ctl_collector_exe };
	e = channel_request(o.name, &want, "summary", -1, (int)(o.timeout_s * 1000), &body,
			    NULL, msg, sizeof(msg));
	if (e == -ETIMEDOUT) {
		fprintf(err, "perfmonctl summary: the collector (pid %u) did not answer within "
			"%.1fs; it writes the summary at its next interval, so use a --timeout "
			"longer than its flush_interval\n", c.pid, o.timeout_s);
		return CTL_EXIT_FAILURE;
	}
	if (e < 0) {
		fprintf(err, "perfmonctl summary: %s\n", msg);
		return e == -ENOENT || e == -ECONNREFUSED ? CTL_EXIT_NOT_RUNNING : CTL_EXIT_FAILURE;
	}
	if ((nl = strchr(body, '\n')))
		*nl = '\0';
	fd = ctl_status_open_output(body, c.seg_uid, msg, sizeof(msg));
	free(body);
	if (fd < 0) {
		fprintf(err, "perfmonctl summary: %s\n", msg);
		return CTL_EXIT_FAILURE;
	}
	if (print_clean_file(fd, out) < 0) {
		fprintf(err, "perfmonctl summary: cannot print the summary: %s\n",
			strerror(errno));
		return CTL_EXIT_FAILURE;
	}
	return CTL_EXIT_OK;
}
