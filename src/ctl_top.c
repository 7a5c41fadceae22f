/*
 * ctl_top.c - follow an instance's CSV and redraw the latest interval.
 *
 * Following: the header is read from the start of the file, then only the
 * last TAIL_BYTES (from the next line boundary; the daemon's labels never
 * contain a line break) so a day-long file opens instantly.  Growth is
 * polled; a rotation (the path now names another inode) or a truncation
 * makes top finish the old file and start the new one from its header.
 * The screen is redrawn when rows arrive and at least once a second for
 * the collector's status, on the alternate screen so the terminal is left
 * as it was.  All text on screen goes through ctl_table/ctl_text, so no
 * label can emit a control sequence; the only escapes are top's own.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "ctl_cli.h"
#include "ctl_csv.h"
#include "ctl_status.h"
#include "ctl_table.h"
#include "ctl_text.h"
#include "ctl_top.h"

#define TAIL_BYTES (256 * 1024)
#define POLL_MS 200

struct top_stage {
	int64_t t;                 /* interval end of its latest row */
	uint64_t count;
	double lo, hi, max;        /* p50-ish, p99-ish, max */
	/* the same exactly, when the file wrote whole numbers (value rows) */
	bool lo_int, hi_int, max_int;
	uint64_t lo_u, hi_u, max_u;
	uint64_t anomalies;
	bool value;
};

struct top {
	/* what is shown */
	struct ctl_stages stages;
	struct top_stage *st;
	unsigned cap;
	int64_t last_t;            /* latest interval end */
	int64_t min_gap_ms;        /* shortest gap between two interval ends seen */
	uint64_t last_dropped, last_stalled;
	int lo_id, hi_id;
	char lo_name[24], hi_name[24], unit[8];

	/* the file followed */
	char path[PERFMON_PATH_SIZE + 1];
	char shown_path[PERFMON_PATH_SIZE + 1];
	int fd;
	dev_t dev;
	ino_t ino;
	off_t off;
	struct ctl_csv_reader *r;
	char err[600];

	/* the instance, when following one */
	const char *name;
	bool explicit_file;        /* --csv: follow that file, whatever the daemon says */
	bool have_inst;
	struct shm_instance inst;
	struct ctl_collector coll;
	uint64_t rate_drained, rate_ns;
	double rate;
	bool have_rate;
};

static volatile sig_atomic_t quit_flag, winch_flag;

static void on_quit(int sig)
{
	(void)sig;
	quit_flag = 1;
}

static void on_winch(int sig)
{
	(void)sig;
	winch_flag = 1;
}

static int on_row(void *ctx, const struct ctl_csv_header *h, const struct ctl_csv_row *r)
{
	struct top *t = ctx;
	struct top_stage *s;
	int id;

	if (t->lo_id < 0) {
		/* p50 and p99 when the file has them, else its outermost columns */
		t->lo_id = ctl_csv_metric_lookup(h, "p50");
		t->hi_id = ctl_csv_metric_lookup(h, "p99");
		if (t->lo_id < 0)
			t->lo_id = h->npct ? CTL_METRIC_PCT : CTL_METRIC_MEAN;
		if (t->hi_id < 0)
			t->hi_id = h->npct ? CTL_METRIC_PCT + (int)h->npct - 1 : CTL_METRIC_MAX;
		snprintf(t->lo_name, sizeof(t->lo_name), "%s", ctl_csv_metric_name(h, t->lo_id));
		snprintf(t->hi_name, sizeof(t->hi_name), "%s", ctl_csv_metric_name(h, t->hi_id));
		snprintf(t->unit, sizeof(t->unit), "%s", h->unit);
	}
	if (r->time_ms > t->last_t) {
		if (t->last_t && (!t->min_gap_ms || r->time_ms - t->last_t < t->min_gap_ms))
			t->min_gap_ms = r->time_ms - t->last_t;
		t->last_t = r->time_ms;
		t->last_dropped = t->last_stalled = 0;
	}
	if (r->time_ms == t->last_t) {
		if (r->dropped > t->last_dropped)
			t->last_dropped = r->dropped;
		if (r->stalled > t->last_stalled)
			t->last_stalled = r->stalled;
	}
	id = ctl_stages_id(&t->stages, r->point, r->stage, r->value);
	if (id < 0)
		return id;
	if ((unsigned)id >= t->cap) {
		unsigned cap = t->cap ? t->cap * 2 : 32;
		struct top_stage *n = realloc(t->st, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + t->cap, 0, (cap - t->cap) * sizeof(*n));
		t->st = n;
		t->cap = cap;
	}
	s = &t->st[id];
	if (r->time_ms < s->t)
		return 0;
	s->t = r->time_ms;
	s->count = r->count;
	s->lo = ctl_csv_metric(r, t->lo_id);
	s->hi = ctl_csv_metric(r, t->hi_id);
	s->max = r->max;
	s->lo_int = ctl_csv_metric_exact(r, t->lo_id, &s->lo_u);
	s->hi_int = ctl_csv_metric_exact(r, t->hi_id, &s->hi_u);
	s->max_int = ctl_csv_metric_exact(r, CTL_METRIC_MAX, &s->max_u);
	s->value = r->value;
	s->anomalies = r->invalid + r->abandoned + r->orphan + r->out_of_range;
	if (!strcmp(r->point, "collector"))
		s->anomalies += r->dropped + r->stalled;
	return 0;
}

/* ---- following the file ------------------------------------------------ */

static void follow_close(struct top *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	ctl_csv_reader_free(t->r);
	t->r = NULL;
}

/* Feed everything from the current offset to the end of the file. */
static int follow_drain(struct top *t)
{
	char buf[65536];
	ssize_t n;

	while ((n = pread(t->fd, buf, sizeof(buf), t->off)) > 0) {
		t->off += n;
		if (ctl_csv_reader_feed(t->r, buf, (size_t)n) < 0) {
			snprintf(t->err, sizeof(t->err), "%s", ctl_csv_reader_error(t->r));
			return -EBADMSG;
		}
	}
	if (n < 0) {
		snprintf(t->err, sizeof(t->err), "cannot read %s: %s", t->shown_path,
			 strerror(errno));
		return -errno;
	}
	return 0;
}

static int follow_open(struct top *t)
{
	char buf[65536];
	struct stat st;
	ssize_t n;
	off_t hdr_end, start;
	int e;

	if (t->have_inst && !t->explicit_file) {
		t->fd = ctl_status_open_output(t->path, t->coll.seg_uid, t->err, sizeof(t->err));
		if (t->fd < 0)
			return t->fd;
		/* Not blocking: a FIFO was refused above; reads below are plain. */
	} else {
		/* Non-blocking: a FIFO must not hold us in open(). */
		t->fd = open(t->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (t->fd < 0) {
			e = -errno;
			snprintf(t->err, sizeof(t->err), "cannot open %s: %s", t->shown_path,
				 strerror(errno));
			return e;
		}
	}
	if (fstat(t->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(t->err, sizeof(t->err), "%s is not a regular file", t->shown_path);
		follow_close(t);
		return -EINVAL;
	}
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	if ((e = ctl_csv_reader_new(&t->r, t->shown_path, on_row, t)) < 0) {
		follow_close(t);
		return e;
	}
	/* The header line, then the tail of the file from a line boundary. */
	n = pread(t->fd, buf, sizeof(buf), 0);
	if (n <= 0) {
		t->off = 0;
		return 0;         /* empty so far: the header comes with the first push */
	}
	{
		char *nl = memchr(buf, '\n', (size_t)n);
		if (!nl) {
			t->off = 0;
			return 0; /* the header is still being written */
		}
		hdr_end = nl - buf + 1;
	}
	if (ctl_csv_reader_feed(t->r, buf, (size_t)hdr_end) < 0) {
		snprintf(t->err, sizeof(t->err), "%s", ctl_csv_reader_error(t->r));
		follow_close(t);
		return -EBADMSG;
	}
	start = hdr_end;
	if (st.st_size - hdr_end > TAIL_BYTES) {
		off_t at = st.st_size - TAIL_BYTES;
		n = pread(t->fd, buf, sizeof(buf), at);
		if (n > 0) {
			char *nl = memchr(buf, '\n', (size_t)n);
			if (nl)
				start = at + (nl - buf) + 1;
		}
	}
	t->off = start;
	if ((e = follow_drain(t)) < 0) {
		follow_close(t);
		return e;
	}
	return 0;
}

/* Poll the file: more rows, a rotation or a truncation. */
static int follow_poll(struct top *t)
{
	struct stat st;
	int e;

	if (t->fd < 0)
		return follow_open(t);
	if ((e = follow_drain(t)) < 0)
		return e;
	if (stat(t->path, &st) == 0 && (st.st_ino != t->ino || st.st_dev != t->dev)) {
		follow_close(t);        /* rotated: the old file is complete */
		return follow_open(t);
	}
	if (fstat(t->fd, &st) == 0 && st.st_size < t->off) {
		follow_close(t);        /* truncated in place */
		return follow_open(t);
	}
	return 0;
}

/* ---- the instance's status ---------------------------------------------- */

static void refresh_status(struct top *t)
{
	uint64_t now;

	if (!t->have_inst)
		return;
	ctl_status_snapshot(&t->inst, &t->coll);
	now = mono_ns();
	/* A rate over at least 200 ms, or none yet. */
	if (!t->rate_ns || now - t->rate_ns >= 200000000u) {
		if (t->rate_ns && t->coll.drained >= t->rate_drained) {
			t->rate = (double)(t->coll.drained - t->rate_drained) * 1e9 /
				  (double)(now - t->rate_ns);
			t->have_rate = true;
		}
		t->rate_drained = t->coll.drained;
		t->rate_ns = now;
	}
	/* A reload may point the daemon at another file. */
	if (!t->explicit_file && t->coll.csv_path[0] && strcmp(t->coll.csv_path, t->path)) {
		follow_close(t);
		snprintf(t->path, sizeof(t->path), "%s", t->coll.csv_path);
		ctl_text_clean(t->shown_path, t->path, sizeof(t->shown_path));
	}
}

/* ---- drawing ------------------------------------------------------------- */

static void fig(const struct top *t, const struct top_stage *s, double v, char *buf, size_t n)
{
	if (s->value)
		ctl_fmt_si(v, buf, n);
	else
		ctl_fmt_duration(v, t->unit, buf, n);
}

/*
 * How long an interval is, in ms: the collector's flush_interval when it
 * says (the rows of idle intervals are not written, so two rows may be
 * many intervals apart), else the shortest gap seen between two interval
 * ends (following a file alone); 0 while unknown.
 */
static int64_t interval_ms(const struct top *t)
{
	if (t->have_inst && t->coll.flush_interval_ns)
		return (int64_t)(t->coll.flush_interval_ns / 1000000u);
	return t->min_gap_ms;
}

/*
 * The latest interval is stale when it ended so long ago that the
 * collector would have written a newer one by now: its figures are no
 * longer live.  Rows reach the file csv_flush_interval apart (0: every
 * interval), at the first interval end after that much time, so the newest
 * row can be csv_flush_interval + flush_interval old just before the next
 * write; one flush interval more allows for the write itself.
 */
static bool interval_stale(const struct top *t, double *ret_age_s)
{
	struct timespec ts;
	int64_t now_ms, len_ms = interval_ms(t), push_ms = 0;

	if (!t->last_t || len_ms <= 0)
		return false;
	if (t->have_inst)
		push_ms = (int64_t)(t->coll.csv_flush_interval_ns / 1000000u);
	clock_gettime(CLOCK_REALTIME, &ts);
	now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	*ret_age_s = (double)(now_ms - t->last_t) / 1000.0;
	return now_ms - t->last_t > push_ms + 2 * len_ms;
}

/* A CSV cell with every digit the file had. */
static void raw_fig(struct ctl_table *tab, unsigned col, double v, bool is_int, uint64_t u)
{
	char b[48];

	if (is_int) {
		ctl_table_setf(tab, col, "%llu", (unsigned long long)u);
		return;
	}
	ctl_fmt_exact(v, b, sizeof(b));
	ctl_table_set(tab, col, b);
}

static struct ctl_table *build_table(const struct top *t, bool raw)
{
	struct ctl_table *tab = ctl_table_new();
	/* A rate over the interval's own length, never over a gap of idle
	 * intervals between two rows. */
	double age_s, secs = (double)interval_ms(t) / 1000.0;
	char b[48];

	/* A stale interval has no current rate: its rows are history (and say
	 * so in a column of their own in CSV). */
	bool stale = interval_stale(t, &age_s);

	if (stale)
		secs = 0;

	if (!tab)
		return NULL;
	ctl_table_add_column(tab, "point", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(tab, "stage", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(tab, "count", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(tab, "rate/s", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(tab, t->lo_name[0] ? t->lo_name : "p50", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(tab, t->hi_name[0] ? t->hi_name : "p99", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(tab, "max", CTL_ALIGN_RIGHT, false);
	/* "anom", not "anomalies": five columns that an 80-column label needs */
	ctl_table_add_column(tab, raw ? "anomalies" : "anom", CTL_ALIGN_RIGHT, false);
	if (raw)
		ctl_table_add_column(tab, "stale", CTL_ALIGN_RIGHT, false);
	for (unsigned i = 0; i < t->stages.n; i++) {
		const struct top_stage *s = &t->st[i];
		bool now = s->t == t->last_t;
		uint64_t count = now ? s->count : 0;

		ctl_table_add_row(tab);
		ctl_table_set(tab, 0, t->stages.items[i].point);
		ctl_table_set(tab, 1, t->stages.items[i].stage);
		if (raw) {
			ctl_table_setf(tab, 2, "%llu", (unsigned long long)count);
			if (secs > 0)
				ctl_table_setf(tab, 3, "%.3f", (double)count / secs);
			if (now && count) {
				raw_fig(tab, 4, s->lo, s->lo_int, s->lo_u);
				raw_fig(tab, 5, s->hi, s->hi_int, s->hi_u);
				raw_fig(tab, 6, s->max, s->max_int, s->max_u);
			}
			ctl_table_setf(tab, 7, "%llu", (unsigned long long)(now ? s->anomalies : 0));
			ctl_table_set(tab, 8, stale ? "1" : "0");
			continue;
		}
		ctl_fmt_si((double)count, b, sizeof(b));
		ctl_table_set(tab, 2, b);
		if (secs > 0) {
			ctl_fmt_si((double)count / secs, b, sizeof(b));
			ctl_table_set(tab, 3, b);
		} else {
			ctl_table_set(tab, 3, "-");
		}
		if (now && count) {
			fig(t, s, s->lo, b, sizeof(b));
			ctl_table_set(tab, 4, b);
			fig(t, s, s->hi, b, sizeof(b));
			ctl_table_set(tab, 5, b);
			fig(t, s, s->max, b, sizeof(b));
			ctl_table_set(tab, 6, b);
		} else {
			ctl_table_set(tab, 4, "-");
			ctl_table_set(tab, 5, "-");
			ctl_table_set(tab, 6, "-");
		}
		ctl_fmt_si((double)(now ? s->anomalies : 0), b, sizeof(b));
		ctl_table_set(tab, 7, b);
	}
	return tab;
}

/*
 * Join `pieces` with ", " into `buf` as long as the line fits `width`
 * columns (0: no limit).  Pieces come in order of importance: one that does
 * not fit is left out whole, never cut, and so is everything after it.
 * Only the first piece is cut when it alone is too wide.
 */
static void join_fit(char *buf, size_t n, const char *const *pieces, unsigned np,
		     unsigned width)
{
	size_t len = 0;
	unsigned cols = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < np; i++) {
		char clean[600];
		unsigned w;
		ctl_text_clean(clean, pieces[i], sizeof(clean));
		w = ctl_text_width(clean) + (i ? 2 : 0);
		if (width && cols + w > width) {
			if (i == 0)
				clean[ctl_text_fit(clean, width, NULL)] = '\0';
			else
				break;
		}
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", clean);
		if (len >= n)
			break;
		cols += w;
	}
}

/* The lines above the table: who, how fast, which interval; each fitted
 * to `width` columns (0: no limit) by leaving out whole pieces. */
static void header_lines(const struct top *t, unsigned width, char *l1, size_t n1, char *l2,
			 size_t n2)
{
	const struct ctl_collector *c = &t->coll;
	char rate[96], up[96], drop[96], stall[96], ring[48], who[300], when[48] = "";
	char age[32], a[80], b[32], d[32];
	const char *p[6];
	double age_s = 0;
	bool stale = interval_stale(t, &age_s);

	if (t->have_inst && c->alive) {
		uint64_t used = c->head >= c->tail ? c->head - c->tail : 0;
		snprintf(who, sizeof(who), "%s: pid %u", t->name, c->pid);
		ctl_fmt_age(c->uptime_s, a, sizeof(a));
		snprintf(up, sizeof(up), "up %s", a);
		ctl_fmt_si(t->rate, a, sizeof(a));
		snprintf(rate, sizeof(rate), "%s ev/s", t->have_rate ? a : "-");
		ctl_fmt_si((double)c->dropped, a, sizeof(a));
		snprintf(drop, sizeof(drop), "dropped %s", a);
		ctl_fmt_si((double)c->stalled, a, sizeof(a));
		snprintf(stall, sizeof(stall), "stalled %s", a);
		snprintf(ring, sizeof(ring), "ring %.0f%%", c->capacity ? 100.0 *
			 (double)(used > c->capacity ? c->capacity : used) / (double)c->capacity : 0);
		p[0] = who, p[1] = up, p[2] = rate, p[3] = drop, p[4] = stall, p[5] = ring;
		join_fit(l1, n1, p, 6, width);
	} else if (t->have_inst) {
		snprintf(who, sizeof(who), "%s: NO COLLECTOR RUNNING", t->name);
		p[0] = who, p[1] = "showing the last rows written";
		join_fit(l1, n1, p, 2, width);
	} else {
		snprintf(who, sizeof(who), "following %s", t->shown_path);
		p[0] = who;
		join_fit(l1, n1, p, 1, width);
	}
	if (t->last_t) {
		time_t sec = (time_t)(t->last_t / 1000);
		struct tm tm;
		char hms[16];
		if (gmtime_r(&sec, &tm) && strftime(hms, sizeof(hms), "%H:%M:%S", &tm))
			snprintf(when, sizeof(when), "%s.%03d UTC", hms, (int)(t->last_t % 1000));
	}
	ctl_fmt_si((double)t->last_dropped, b, sizeof(b));
	snprintf(drop, sizeof(drop), "dropped %s", b);
	ctl_fmt_si((double)t->last_stalled, d, sizeof(d));
	snprintf(stall, sizeof(stall), "stalled %s", d);
	if (!t->last_t) {
		snprintf(l2, n2, "no interval yet");
	} else if (stale) {
		ctl_fmt_age(age_s, age, sizeof(age));
		snprintf(a, sizeof(a), "STALE: last interval ended %s ago", age);
		snprintf(who, sizeof(who), "at %s", when);
		p[0] = a, p[1] = who, p[2] = "no newer rows";
		join_fit(l2, n2, p, 3, width);
	} else if (interval_ms(t) > 0) {
		snprintf(a, sizeof(a), "interval ending %s (%.3gs)", when,
			 (double)interval_ms(t) / 1000.0);
		p[0] = a, p[1] = drop, p[2] = stall;
		join_fit(l2, n2, p, 3, width);
	} else {
		snprintf(a, sizeof(a), "interval ending %s", when);
		p[0] = a;
		join_fit(l2, n2, p, 1, width);
	}
}

static void term_size(unsigned *cols, unsigned *rows)
{
	struct winsize ws;
	*cols = 80;
	*rows = 24;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

/*
 * One screen line: erase it first, then at most `width` columns of text.
 * (Erasing after the text would eat the last character of a full-width
 * line on terminals that hold the cursor in the last column.)
 */
static void put_line(FILE *out, const char *line, size_t len, unsigned width)
{
	char clean[1024];
	size_t n;

	if (len >= sizeof(clean))
		len = sizeof(clean) - 1;
	memcpy(clean, line, len);
	clean[len] = '\0';
	n = ctl_text_fit(clean, width, NULL);
	fprintf(out, "\033[2K%.*s\r\n", (int)n, clean);
}

static void draw(struct top *t, FILE *out)
{
	struct ctl_table *tab = build_table(t, false);
	unsigned cols, rows, budget, total = 0;
	char l1[512], l2[512], msg[700], *buf = NULL;
	size_t len = 0;
	FILE *mem;

	term_size(&cols, &rows);
	header_lines(t, cols, l1, sizeof(l1), l2, sizeof(l2));
	fputs("\033[H", out);
	put_line(out, l1, strlen(l1), cols);
	put_line(out, l2, strlen(l2), cols);
	put_line(out, "", 0, cols);
	/* three header lines above, the key help on the last line */
	budget = rows > 5 ? rows - 4 : 1;
	mem = open_memstream(&buf, &len);
	if (mem && tab) {
		if (t->stages.n)
			ctl_table_print(tab, mem, CTL_FORMAT_LIVE, cols);
		else
			fputs(t->err[0] ? t->err : "waiting for the first interval...", mem);
		fclose(mem);
		for (size_t i = 0; i < len; i++)
			total += buf[i] == '\n';
		for (const char *p = buf; p && *p && budget; budget--, total--) {
			const char *nl = strchr(p, '\n');
			size_t l = nl ? (size_t)(nl - p) : strlen(p);
			if (budget == 1 && total > 1) {
				snprintf(msg, sizeof(msg), "... %u more lines (enlarge the terminal)",
					 total);
				put_line(out, msg, strlen(msg), cols);
				break;
			}
			put_line(out, p, l, cols);
			p += l + (nl != NULL);
		}
	}
	fputs("\033[J", out);   /* clear what an earlier, longer screen left */
	/* The key line: the longest wording that fits, never a cut word. */
	if (t->err[0] && t->stages.n)
		snprintf(msg, sizeof(msg), "q: quit   %s", t->err);
	else if (cols > 76)
		snprintf(msg, sizeof(msg), "q: quit   anom: invalid + abandoned + orphan + "
			 "out_of_range in the interval");
	else if (cols > 48)
		snprintf(msg, sizeof(msg), "q: quit   anom: anomalies in the interval");
	else
		snprintf(msg, sizeof(msg), "q: quit");
	ctl_text_clean(l1, msg, sizeof(l1));
	fprintf(out, "\033[%u;1H%.*s", rows, (int)ctl_text_fit(l1, cols > 1 ? cols - 1 : 1,
								   NULL), l1);
	fflush(out);
	free(buf);
	ctl_table_free(tab);
}

/* ---- the command ------------------------------------------------------------ */

static void top_free(struct top *t)
{
	follow_close(t);
	if (t->have_inst)
		shm_close(&t->inst);
	free(t->st);
	ctl_stages_free(&t->stages);
}

static int print_once(struct top *t, FILE *out, enum ctl_format fmt)
{
	struct ctl_table *tab = build_table(t, fmt == CTL_FORMAT_CSV);
	char l1[512], l2[512];
	int e;

	if (!tab)
		return -ENOMEM;
	if (fmt != CTL_FORMAT_CSV) {
		header_lines(t, fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0, l1,
			     sizeof(l1), l2, sizeof(l2));
		fprintf(out, "%s\n%s\n\n", l1, l2);
	}
	e = ctl_table_print(tab, out, fmt, fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0);
	ctl_table_free(tab);
	return e;
}

static int run_live(struct top *t, FILE *out, double refresh_s)
{
	struct termios saved, raw;
	struct sigaction sa;
	bool tty_in = isatty(STDIN_FILENO), dirty = true;
	uint64_t last_draw = 0, last_status = mono_ns();
	int rc = CTL_EXIT_OK;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_quit;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	if (tty_in && tcgetattr(STDIN_FILENO, &saved) == 0) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	} else {
		tty_in = false;
	}
	fputs("\033[?1049h\033[?25l\033[H\033[2J", out);   /* alternate screen, no cursor */

	while (!quit_flag) {
		struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
		uint64_t now;
		unsigned long before = t->r ? ctl_csv_reader_rows(t->r) : 0;
		int n;

		n = poll(&p, tty_in ? 1 : 0, (int)(refresh_s * 1000 < POLL_MS ?
						    refresh_s * 1000 : POLL_MS));
		if (n > 0 && (p.revents & POLLIN)) {
			char keys[32];
			ssize_t k = read(STDIN_FILENO, keys, sizeof(keys));
			for (ssize_t i = 0; i < k; i++)
				if (keys[i] == 'q' || keys[i] == 'Q')
					quit_flag = 1;
			if (k == 0)
				tty_in = false;   /* stdin closed: only signals end top */
		}
		if (quit_flag)
			break;
		now = mono_ns();
		if (now - last_status >= 1000000000u) {
			refresh_status(t);
			last_status = now;
			dirty = true;
		}
		if (follow_poll(t) == 0)
			t->err[0] = '\0';
		if (t->r && ctl_csv_reader_rows(t->r) != before)
			dirty = true;
		if (winch_flag) {
			winch_flag = 0;
			fputs("\033[2J", out);
			dirty = true;
		}
		if (dirty && now - last_draw >= (uint64_t)(refresh_s * 1e9 * 0.5)) {
			draw(t, out);
			last_draw = now;
			dirty = false;
		}
	}
	fputs("\033[?25h\033[?1049l", out);
	fflush(out);
	if (tty_in)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	return rc;
}

enum { OPT_CSV = 0x100, OPT_ONCE, OPT_FORMAT, OPT_REFRESH };

int ctl_top_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option opts[] = {
		{ "csv", required_argument, NULL, OPT_CSV },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "refresh", required_argument, NULL, OPT_REFRESH },
		{ NULL, 0, NULL, 0 },
	};
	static struct top t;
	const char *csv = NULL, *format = NULL, *cmd = argv[0];
	bool once = false;
	double refresh = 1.0;
	enum ctl_format fmt;
	char msg[600];
	int c, e, rc = CTL_EXIT_OK;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case OPT_CSV:
			csv = optarg;
			break;
		case OPT_ONCE:
			once = true;
			break;
		case OPT_FORMAT:
			format = optarg;
			break;
		case OPT_REFRESH:
			if (ctl_parse_duration(optarg, &refresh) < 0 || refresh < 0.05)
				return ctl_usage_error(err, cmd, "--refresh %s: a duration of at "
						       "least 50ms", optarg);
			break;
		default:
			return ctl_usage_error(err, cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return ctl_usage_error(err, cmd, "unexpected argument '%s'", argv[optind + 1]);
	if (ctl_cli_format(format, &fmt, err, cmd) < 0)
		return CTL_EXIT_FAILURE;

	memset(&t, 0, sizeof(t));
	t.fd = -1;
	t.lo_id = t.hi_id = -1;
	ctl_stages_init(&t.stages);
	t.name = ctl_instance_name(optind < argc ? argv[optind] : NULL);
	if (!csv || optind < argc) {
		e = shm_open_existing(t.name, false, &t.inst, msg, sizeof(msg));
		if (e < 0 && !csv) {
			if (e == -ENOENT)
				fprintf(err, "perfmonctl top: no segments named '%s' in /dev/shm\n",
					t.name);
			else
				fprintf(err, "perfmonctl top: %s\n", msg);
			return CTL_EXIT_FAILURE;
		}
		t.have_inst = e == 0;
	}
	if (t.have_inst) {
		ctl_status_snapshot(&t.inst, &t.coll);
		t.rate_drained = t.coll.drained;
		t.rate_ns = mono_ns();
		if (!t.coll.alive && !csv) {
			fprintf(err, "perfmonctl top: no collector running on '%s' (perfmonctl "
				"status %s tells more)\n", t.name, t.name);
			top_free(&t);
			return CTL_EXIT_NOT_RUNNING;
		}
		if (!csv && !t.coll.csv_path[0]) {
			fprintf(err, "perfmonctl top: the collector on '%s' writes no CSV, which is "
				"what top follows\n", t.name);
			top_free(&t);
			return CTL_EXIT_FAILURE;
		}
	}
	snprintf(t.path, sizeof(t.path), "%s", csv ? csv : t.coll.csv_path);
	ctl_text_clean(t.shown_path, t.path, sizeof(t.shown_path));
	t.explicit_file = csv != NULL;

	if ((e = follow_open(&t)) < 0 && (once || csv)) {
		fprintf(err, "perfmonctl top: %s\n", t.err);
		top_free(&t);
		return e == -EBADMSG ? CTL_EXIT_BAD_FILE : CTL_EXIT_FAILURE;
	}
	if (once || !isatty(STDOUT_FILENO) || out != stdout) {
		if (t.have_inst)
			refresh_status(&t);
		if (print_once(&t, out, fmt) < 0)
			rc = CTL_EXIT_FAILURE;
	} else {
		rc = run_live(&t, out, refresh);
	}
	top_free(&t);
	return rc;
}
