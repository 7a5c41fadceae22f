/*
 * ctl_capture.c - `perfmonctl dump` and `perfmonctl export` of an event
 * capture (docs/capture-format.md).
 *
 * Both load the whole file through capture_load(), which refuses anything
 * that does not add up, then replay the daemon's pairing rules over the
 * events (spans keyed by point and seq; a begin on an open span abandons
 * it; a timestamp going back discards it) with no table limits.  Labels
 * come from the capture's name table and are untrusted bytes: tables clean
 * them (ctl_table), JSON escapes them (ctl_json).
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "channel.h"
#include "ctl_capture.h"
#include "ctl_cli.h"
#include "ctl_json.h"
#include "conf.h"
#include "ctl_table.h"
#include "recorder.h"
#include "report.h"

#define NO_EVENT UINT32_MAX

const char *ctl_outcome_name(enum ctl_outcome o)
{
	static const char *const names[] = {
		[CTL_OUT_OPEN] = "open", [CTL_OUT_VALUE] = "value", [CTL_OUT_BEGIN] = "begin",
		[CTL_OUT_PAIRED] = "paired", [CTL_OUT_ORPHAN] = "orphan",
		[CTL_OUT_ABANDONED] = "abandoned", [CTL_OUT_INVALID] = "invalid",
	};

	return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "?";
}

/* ---- replay ---------------------------------------------------------- */

struct open_span {
	uint64_t key;          /* span key + 1; 0: empty slot */
	uint32_t first, last;  /* event chain */
	uint64_t start, touch;
	uint8_t last_step;
	bool gone;             /* closed: the slot stays a tombstone */
};

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	return k;
}

/* Give every event of a span's chain the outcome `o` (begin events of a
 * span that ended become "begin"). */
static void settle(const struct capture *c, struct ctl_replayed *r, const struct open_span *s,
		   enum ctl_outcome o)
{
	for (uint32_t i = s->first; i != NO_EVENT; i = r[i].next) {
		uint8_t step = PERFMON_EVENT_STEP(c->events[i].event);

		r[i].outcome = (uint8_t)(o == CTL_OUT_PAIRED && step == PERFMON_BEGIN_STEP ?
					 CTL_OUT_BEGIN : o);
	}
}

struct ctl_replayed *ctl_capture_replay(const struct capture *c)
{
	struct ctl_replayed *r = calloc(c->nevents ? c->nevents : 1, sizeof(*r));
	struct open_span *map;
	size_t cap = 16;

	while (cap < 2 * c->nevents + 2)
		cap <<= 1;
	map = calloc(cap, sizeof(*map));
	if (!r || !map) {
		free(r);
		free(map);
		return NULL;
	}
	for (size_t i = 0; i < c->nevents; i++) {
		const struct capture_event *e = &c->events[i];
		uint8_t step = PERFMON_EVENT_STEP(e->event);
		uint64_t key = (((uint64_t)e->point << 32) | PERFMON_EVENT_SEQ(e->event)) + 1;
		struct open_span *s = NULL, *free_slot = NULL;
		size_t h;

		r[i].next = NO_EVENT;
		if (step == PERFMON_VALUE_STEP) {
			r[i].outcome = CTL_OUT_VALUE;
			continue;
		}
		for (h = mix(key) & (cap - 1); map[h].key; h = (h + 1) & (cap - 1)) {
			if (map[h].key == key && !map[h].gone) {
				s = &map[h];
				break;
			}
		}
		if (!s)
			free_slot = &map[h];
		if (step == PERFMON_BEGIN_STEP) {
			if (s)
				settle(c, r, s, CTL_OUT_ABANDONED);
			else
				s = free_slot;
			*s = (struct open_span){ key, (uint32_t)i, (uint32_t)i, e->tsc, e->tsc, 0,
						 false };
			continue;
		}
		if (!s) {
			r[i].outcome = CTL_OUT_ORPHAN;
			continue;
		}
		r[s->last].next = (uint32_t)i;
		s->last = (uint32_t)i;
		if (e->tsc < s->touch) {
			settle(c, r, s, CTL_OUT_INVALID);
			s->gone = true;
			continue;
		}
		r[i].from = s->last_step;
		r[i].ticks = e->tsc - s->touch;
		s->touch = e->tsc;
		s->last_step = step;
		if (step == PERFMON_END_STEP) {
			r[i].total = e->tsc - s->start;
			r[i].start_tsc = s->start;
			settle(c, r, s, CTL_OUT_PAIRED);
			s->gone = true;
		}
	}
	for (size_t h = 0; h < cap; h++)
		if (map[h].key && !map[h].gone)
			settle(c, r, &map[h], CTL_OUT_OPEN);
	free(map);
	return r;
}

/* ---- labels ---------------------------------------------------------- */

static void point_label(const struct capture *c, uint32_t point, char *buf, size_t n)
{
	const char *l = capture_label(c, point, 0);

	if (l)
		snprintf(buf, n, "%s", l);
	else
		snprintf(buf, n, "point_%u", point);
}

/* The stage a paired event closed, labelled as the CSV labels it. */
static void stage_label(const struct capture *c, const struct capture_event *e,
			const struct ctl_replayed *r, char *buf, size_t n)
{
	uint8_t to = PERFMON_EVENT_STEP(e->event);
	const char *l;

	if (to == PERFMON_END_STEP && r->from == PERFMON_BEGIN_STEP) {
		snprintf(buf, n, "total");
		return;
	}
	l = capture_label(c, e->point, to);
	if (l && strcmp(l, "total") && strcmp(l, "value"))
		snprintf(buf, n, "%s", l);
	else
		snprintf(buf, n, "step_%u->%u", r->from, to);
}

static const char *step_name(uint8_t step, char *buf, size_t n)
{
	if (step == PERFMON_BEGIN_STEP)
		return "begin";
	if (step == PERFMON_END_STEP)
		return "end";
	if (step == PERFMON_VALUE_STEP)
		return "value";
	snprintf(buf, n, "%u", step);
	return buf;
}

static double ticks_ns(const struct capture *c, uint64_t ticks)
{
	double hz = capture_tsc_hz(c);

	return hz > 0 ? (double)ticks * 1e9 / hz : (double)ticks;
}

/* Load FILE or say why not.  CTL_EXIT_OK or CTL_EXIT_BAD_FILE. */
static int load(const char *cmd, const char *path, struct capture *c, FILE *err)
{
	char msg[700];

	if (capture_load(path, CTL_CAPTURE_MAX_BYTES, c, msg, sizeof(msg)) < 0) {
		fprintf(err, "perfmonctl %s: %s\n", cmd, msg);
		return CTL_EXIT_BAD_FILE;
	}
	if (!c->has_trailer)
		fprintf(err, "perfmonctl %s: %s: the capture has no trailer: the recording was cut "
			"short; %zu whole events decoded%s\n", cmd, path, c->nevents,
			c->partial_bytes ? ", a cut last record ignored" : "");
	return CTL_EXIT_OK;
}

/* ---- dump ------------------------------------------------------------ */

enum { COL_TIME, COL_RING, COL_POINT, COL_STEP, COL_SEQ, COL_VALUE, COL_OUTCOME, COL_STAGE,
       COL_DUR, COL_TOTAL, NCOLS };

static int dump_table(const struct capture *c, const struct ctl_replayed *r, FILE *out,
		      enum ctl_format fmt)
{
	static const char *const heads[NCOLS] = { "time (UTC)", "ring", "point", "step", "seq",
						   "value", "outcome", "stage", "duration_ns",
						   "total_ns" };
	struct ctl_table *t = ctl_table_new();
	char buf[128];
	int e = 0;

	if (!t)
		return -ENOMEM;
	for (unsigned k = 0; k < NCOLS; k++)
		ctl_table_add_column(t, heads[k],
				     k == COL_POINT || k == COL_STAGE || k == COL_OUTCOME ||
				     k == COL_TIME || k == COL_STEP ? CTL_ALIGN_LEFT : CTL_ALIGN_RIGHT,
				     k == COL_POINT || k == COL_STAGE);
	for (size_t i = 0; i < c->nevents && e >= 0; i++) {
		const struct capture_event *ev = &c->events[i];
		uint8_t step = PERFMON_EVENT_STEP(ev->event);

		if ((e = ctl_table_add_row(t)) < 0)
			break;
		if (step != PERFMON_VALUE_STEP) {
			report_format_utc_ns(capture_realtime_of(c, ev->tsc), buf, sizeof(buf));
			ctl_table_set(t, COL_TIME, buf);
			ctl_table_setf(t, COL_SEQ, "%u", PERFMON_EVENT_SEQ(ev->event));
		} else {
			ctl_table_setf(t, COL_VALUE, "%llu", (unsigned long long)ev->tsc);
		}
		ctl_table_setf(t, COL_RING, "%u", ev->ring);
		point_label(c, ev->point, buf, sizeof(buf));
		ctl_table_set(t, COL_POINT, buf);
		ctl_table_set(t, COL_STEP, step_name(step, buf, sizeof(buf)));
		ctl_table_set(t, COL_OUTCOME, ctl_outcome_name(r[i].outcome));
		if (r[i].outcome == CTL_OUT_PAIRED) {
			stage_label(c, ev, &r[i], buf, sizeof(buf));
			ctl_table_set(t, COL_STAGE, buf);
			ctl_table_setf(t, COL_DUR, "%.1f", ticks_ns(c, r[i].ticks));
			if (step == PERFMON_END_STEP)
				ctl_table_setf(t, COL_TOTAL, "%.1f", ticks_ns(c, r[i].total));
		}
	}
	if (e >= 0)
		e = ctl_table_print(t, out, fmt, fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0);
	ctl_table_free(t);
	return e;
}

static int dump_json(const struct capture *c, const struct ctl_replayed *r, FILE *out)
{
	struct ctl_json j;
	char buf[128];

	ctl_json_init(&j, out);
	ctl_json_object_begin(&j);
	ctl_json_key(&j, "capture");
	ctl_json_object_begin(&j);
	ctl_json_kv_double(&j, "tsc_hz", capture_tsc_hz(c));
	ctl_json_kv_u64(&j, "start_ns", c->h.start_realtime_ns);
	report_format_utc_ns(c->h.start_realtime_ns, buf, sizeof(buf));
	ctl_json_kv_string(&j, "start", buf);
	ctl_json_kv_u64(&j, "rings", c->h.ring_count);
	ctl_json_kv_u64(&j, "events", c->nevents);
	ctl_json_kv_bool(&j, "complete", c->has_trailer);
	if (c->has_trailer) {
		ctl_json_kv_u64(&j, "lost", c->t.lost_buffer + c->t.lost_cap);
		ctl_json_kv_u64(&j, "lost_buffer", c->t.lost_buffer);
		ctl_json_kv_u64(&j, "lost_cap", c->t.lost_cap);
		ctl_json_kv_u64(&j, "dropped", c->t.dropped);
		ctl_json_kv_bool(&j, "capped", c->t.flags & CAPTURE_END_CAPPED);
	}
	ctl_json_key(&j, "names");
	ctl_json_array_begin(&j);
	for (uint32_t i = 0; i < c->h.name_count; i++) {
		ctl_json_object_begin(&j);
		ctl_json_kv_u64(&j, "point", c->names[i].point);
		ctl_json_kv_u64(&j, "step", c->names[i].step);
		ctl_json_kv_string(&j, "label", c->names[i].label);
		ctl_json_object_end(&j);
	}
	ctl_json_array_end(&j);
	ctl_json_object_end(&j);
	ctl_json_key(&j, "events");
	ctl_json_array_begin(&j);
	for (size_t i = 0; i < c->nevents; i++) {
		const struct capture_event *ev = &c->events[i];
		uint8_t step = PERFMON_EVENT_STEP(ev->event);

		ctl_json_object_begin(&j);
		if (step != PERFMON_VALUE_STEP) {
			uint64_t ns = capture_realtime_of(c, ev->tsc);

			ctl_json_kv_u64(&j, "time_ns", ns);
			report_format_utc_ns(ns, buf, sizeof(buf));
			ctl_json_kv_string(&j, "time", buf);
			ctl_json_kv_u64(&j, "tsc", ev->tsc);
		}
		ctl_json_kv_u64(&j, "ring", ev->ring);
		ctl_json_kv_u64(&j, "point", ev->point);
		point_label(c, ev->point, buf, sizeof(buf));
		ctl_json_kv_string(&j, "label", buf);
		ctl_json_kv_u64(&j, "step", step);
		if (step == PERFMON_VALUE_STEP)
			ctl_json_kv_u64(&j, "value", ev->tsc);
		else
			ctl_json_kv_u64(&j, "seq", PERFMON_EVENT_SEQ(ev->event));
		ctl_json_kv_string(&j, "outcome", ctl_outcome_name(r[i].outcome));
		if (r[i].outcome == CTL_OUT_PAIRED) {
			stage_label(c, ev, &r[i], buf, sizeof(buf));
			ctl_json_kv_string(&j, "stage", buf);
			ctl_json_kv_double(&j, "duration_ns", ticks_ns(c, r[i].ticks));
			if (step == PERFMON_END_STEP)
				ctl_json_kv_double(&j, "total_ns", ticks_ns(c, r[i].total));
		}
		ctl_json_object_end(&j);
	}
	ctl_json_array_end(&j);
	ctl_json_object_end(&j);
	return ctl_json_finish(&j);
}

int ctl_dump_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = NULL;
	struct ctl_replayed *r;
	enum ctl_format fmt;
	struct capture c;
	int ch, rc, e;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch != 'f')
			return ctl_usage_error(err, argv[0], "unknown option '%s'", argv[optind - 1]);
		format = optarg;
	}
	if (optind + 1 != argc)
		return ctl_usage_error(err, argv[0], "give exactly one capture FILE");
	if (ctl_cli_format_json(format, &fmt, err, argv[0]) < 0)
		return CTL_EXIT_FAILURE;
	if ((rc = load(argv[0], argv[optind], &c, err)) != CTL_EXIT_OK)
		return rc;
	r = ctl_capture_replay(&c);
	if (!r) {
		capture_free(&c);
		fprintf(err, "perfmonctl dump: out of memory\n");
		return CTL_EXIT_FAILURE;
	}
	e = fmt == CTL_FORMAT_JSON ? dump_json(&c, r, out) : dump_table(&c, r, out, fmt);
	if (e < 0) {
		fprintf(err, "perfmonctl dump: cannot print: %s\n", strerror(-e));
		rc = CTL_EXIT_FAILURE;
	}
	free(r);
	capture_free(&c);
	return rc;
}

/* ---- export ---------------------------------------------------------- */

static mode_t current_umask(void)
{
	mode_t m = umask(022);

	umask(m);
	return m;
}

/* Microseconds since the recording started (the trace's time zero). */
static double trace_us(const struct capture *c, uint64_t tsc)
{
	double hz = capture_tsc_hz(c);
	double d = tsc >= c->h.start_tsc ? (double)(tsc - c->h.start_tsc) :
		   -(double)(c->h.start_tsc - tsc);

	return hz > 0 ? d * 1e6 / hz : d / 1000.0;
}

/* A duration in microseconds, converted alone so it keeps every digit. */
static double ticks_us(const struct capture *c, uint64_t ticks)
{
	return ticks_ns(c, ticks) / 1000.0;
}

static void complete_event(struct ctl_json *j, const char *name, const char *cat, uint32_t tid,
			   double ts, double dur, uint32_t seq)
{
	ctl_json_object_begin(j);
	ctl_json_kv_string(j, "name", name);
	ctl_json_kv_string(j, "cat", cat);
	ctl_json_kv_string(j, "ph", "X");
	ctl_json_kv_double(j, "ts", ts);
	ctl_json_kv_double(j, "dur", dur);
	ctl_json_kv_u64(j, "pid", 1);
	ctl_json_kv_u64(j, "tid", tid);
	ctl_json_key(j, "args");
	ctl_json_object_begin(j);
	ctl_json_kv_u64(j, "seq", seq);
	ctl_json_object_end(j);
	ctl_json_object_end(j);
}

/*
 * Chrome Trace Event JSON: every span that ended in the capture becomes a
 * "total" complete event on its point's track, with one complete event
 * per stage inside it; value samples become counter events at the time of
 * the last timestamped event read before them (a value carries no time of
 * its own); metadata names the tracks after the points.
 */
static int export_chrome(const struct capture *c, const struct ctl_replayed *r, FILE *f)
{
	struct ctl_json j;
	char label[128], stage[128];
	uint64_t last_ts = c->h.start_tsc;
	size_t npoints = 0;
	uint32_t *points = calloc(c->nevents ? c->nevents : 1, sizeof(*points));

	if (!points)
		return -ENOMEM;
	ctl_json_init(&j, f);
	ctl_json_object_begin(&j);
	ctl_json_kv_string(&j, "displayTimeUnit", "ns");
	ctl_json_key(&j, "otherData");
	ctl_json_object_begin(&j);
	ctl_json_kv_string(&j, "source", "perfmond capture");
	report_format_utc_ns(c->h.start_realtime_ns, label, sizeof(label));
	ctl_json_kv_string(&j, "start_utc", label);
	ctl_json_kv_double(&j, "tsc_hz", capture_tsc_hz(c));
	ctl_json_object_end(&j);
	ctl_json_key(&j, "traceEvents");
	ctl_json_array_begin(&j);

	ctl_json_object_begin(&j);
	ctl_json_kv_string(&j, "name", "process_name");
	ctl_json_kv_string(&j, "ph", "M");
	ctl_json_kv_u64(&j, "pid", 1);
	ctl_json_key(&j, "args");
	ctl_json_object_begin(&j);
	ctl_json_kv_string(&j, "name", "perfmond");
	ctl_json_object_end(&j);
	ctl_json_object_end(&j);

	for (size_t i = 0; i < c->nevents; i++) {
		const struct capture_event *ev = &c->events[i];
		uint8_t step = PERFMON_EVENT_STEP(ev->event);
		size_t k;

		/* One track per point, named once. */
		for (k = 0; k < npoints && points[k] != ev->point; k++)
			;
		if (k == npoints) {
			points[npoints++] = ev->point;
			point_label(c, ev->point, label, sizeof(label));
			ctl_json_object_begin(&j);
			ctl_json_kv_string(&j, "name", "thread_name");
			ctl_json_kv_string(&j, "ph", "M");
			ctl_json_kv_u64(&j, "pid", 1);
			ctl_json_kv_u64(&j, "tid", ev->point);
			ctl_json_key(&j, "args");
			ctl_json_object_begin(&j);
			ctl_json_kv_string(&j, "name", label);
			ctl_json_object_end(&j);
			ctl_json_object_end(&j);
		}
		if (step == PERFMON_VALUE_STEP) {
			point_label(c, ev->point, label, sizeof(label));
			ctl_json_object_begin(&j);
			ctl_json_kv_string(&j, "name", label);
			ctl_json_kv_string(&j, "ph", "C");
			ctl_json_kv_double(&j, "ts", trace_us(c, last_ts));
			ctl_json_kv_u64(&j, "pid", 1);
			ctl_json_kv_u64(&j, "tid", ev->point);
			ctl_json_key(&j, "args");
			ctl_json_object_begin(&j);
			ctl_json_kv_u64(&j, "value", ev->tsc);
			ctl_json_object_end(&j);
			ctl_json_object_end(&j);
			continue;
		}
		last_ts = ev->tsc;
		if (r[i].outcome != CTL_OUT_PAIRED)
			continue;
		point_label(c, ev->point, label, sizeof(label));
		/* A stage ends here (begin -> end alone is only the total). */
		if (!(step == PERFMON_END_STEP && r[i].from == PERFMON_BEGIN_STEP)) {
			stage_label(c, ev, &r[i], stage, sizeof(stage));
			complete_event(&j, stage, label, ev->point, trace_us(c, ev->tsc - r[i].ticks),
				       ticks_us(c, r[i].ticks), PERFMON_EVENT_SEQ(ev->event));
		}
		if (step == PERFMON_END_STEP)
			complete_event(&j, "total", label, ev->point, trace_us(c, r[i].start_tsc),
				       ticks_us(c, r[i].total), PERFMON_EVENT_SEQ(ev->event));
	}
	ctl_json_array_end(&j);
	ctl_json_object_end(&j);
	free(points);
	return ctl_json_finish(&j);
}

int ctl_export_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = NULL, *path = NULL;
	struct ctl_replayed *r;
	struct capture c;
	char tmp[4200];
	int ch, rc, e, fd;
	FILE *f;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (ch == 'f')
			format = optarg;
		else if (ch == 'o')
			path = optarg;
		else
			return ctl_usage_error(err, argv[0], "unknown option '%s'", argv[optind - 1]);
	}
	if (optind + 1 != argc)
		return ctl_usage_error(err, argv[0], "give exactly one capture FILE");
	if (!format || strcmp(format, "chrome") != 0)
		return ctl_usage_error(err, argv[0], "--format chrome is the one export format");
	if (!path || !path[0])
		return ctl_usage_error(err, argv[0], "give the trace file with -o OUT.json "
				       "(- for standard output)");
	if ((rc = load(argv[0], argv[optind], &c, err)) != CTL_EXIT_OK)
		return rc;
	r = ctl_capture_replay(&c);
	if (!r) {
		capture_free(&c);
		fprintf(err, "perfmonctl export: out of memory\n");
		return CTL_EXIT_FAILURE;
	}
	if (!strcmp(path, "-")) {
		e = export_chrome(&c, r, out);
		if (e < 0) {
			fprintf(err, "perfmonctl export: cannot write the trace: %s\n", strerror(-e));
			rc = CTL_EXIT_FAILURE;
		}
		goto done;
	}
	/* Written beside the target and renamed over it: a reader never sees
	 * half a trace, and a failure leaves the old file alone. */
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkstemp(tmp);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		fprintf(err, "perfmonctl export: cannot create %s: %s\n", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		rc = CTL_EXIT_FAILURE;
		goto done;
	}
	fchmod(fd, 0644 & ~current_umask());
	e = export_chrome(&c, r, f);
	if (fclose(f) != 0 && e >= 0)
		e = -errno;
	if (e >= 0 && rename(tmp, path) < 0)
		e = -errno;
	if (e < 0) {
		unlink(tmp);
		fprintf(err, "perfmonctl export: cannot write %s: %s\n", path, strerror(-e));
		rc = CTL_EXIT_FAILURE;
		goto done;
	}
	fprintf(out, "wrote %s: %zu events\n", path, c.nevents);
done:
	free(r);
	capture_free(&c);
	return rc;
}

/* ---- record ---------------------------------------------------------- */

/* "key N" from the daemon's reply body; 0 when absent. */
static uint64_t reply_field(const char *body, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return strtoull(p + kl + 1, NULL, 10);
	return 0;
}

/* Remove the capture file we created if the daemon never wrote to it. */
static void drop_if_empty(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && st.st_size == 0)
		unlink(path);
}

int ctl_record_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "output", required_argument, NULL, 'o' },
		{ "max-size", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *name;
	double seconds = 5;
	uint64_t max_size = RECORDER_MAX_BYTES;
	struct channel_expect want;
	char req[64], msg[600], *body = NULL;
	uid_t owner;
	int ch, fd, e, rc = CTL_EXIT_OK;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (ch == 's') {
			if (ctl_parse_duration(optarg, &seconds) < 0 || !(seconds > 0) ||
			    seconds > RECORDER_MAX_SECONDS)
				return ctl_usage_error(err, argv[0], "--seconds takes a duration above "
						       "0 and up to %d s, not '%s'",
						       RECORDER_MAX_SECONDS, optarg);
		} else if (ch == 'o') {
			path = optarg;
		} else if (ch == 'm') {
			char why[128];

			if (conf_value_parse_size(optarg, &max_size, why, sizeof(why)) < 0 ||
			    max_size < 4096 || max_size > RECORDER_MAX_BYTES)
				return ctl_usage_error(err, argv[0], "--max-size takes a size from 4K to "
						       "%lluM, not '%s'",
						       (unsigned long long)(RECORDER_MAX_BYTES >> 20),
						       optarg);
		} else {
			return ctl_usage_error(err, argv[0], "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind + 1 < argc)
		return ctl_usage_error(err, argv[0], "give at most one instance NAME");
	if (!path || !path[0])
		return ctl_usage_error(err, argv[0], "give the capture file with -o FILE");
	name = ctl_instance_name(optind < argc ? argv[optind] : NULL);
	if (channel_segment_owner(name, &owner) < 0) {
		fprintf(err, "perfmonctl record: no segments named '%s' (/dev/shm/%s)\n", name, name);
		return CTL_EXIT_FAILURE;
	}
	/* Created here with this user's rights: the daemon only ever writes
	 * to the descriptor it is handed. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(err, "perfmonctl record: cannot create %s: %s%s\n", path, strerror(errno),
			errno == EEXIST ? " (choose a new name; an existing file is never replaced)" :
			"");
		return CTL_EXIT_FAILURE;
	}
	want = (struct channel_expect){ owner, "perfmond" };
	snprintf(req, sizeof(req), "record %.6f %llu", seconds, (unsigned long long)max_size);
	fprintf(err, "recording every event of '%s' for %g s into %s...\n", name, seconds, path);
	e = channel_request(name, &want, req, fd, (int)(seconds * 1000) + 5000, &body, NULL, msg,
			    sizeof(msg));
	if (e == -ENOENT || e == -ECONNREFUSED) {
		fprintf(err, "perfmonctl record: no collector is running on '%s'\n", name);
		rc = CTL_EXIT_NOT_RUNNING;
	} else if (e < 0) {
		fprintf(err, "perfmonctl record: %s\n", msg);
		rc = CTL_EXIT_FAILURE;
	} else {
		uint64_t lost = reply_field(body, "lost");

		fprintf(out, "captured %llu events, lost %llu", (unsigned long long)reply_field(body,
			"events"), (unsigned long long)lost);
		if (lost)
			fprintf(out, " (%llu: the daemon's hand-over buffer was full, %llu: past the "
				"size cap)", (unsigned long long)reply_field(body, "lost_buffer"),
				(unsigned long long)reply_field(body, "lost_cap"));
		fprintf(out, "; the ring dropped %llu while recording\n",
			(unsigned long long)reply_field(body, "dropped"));
		if (reply_field(body, "capped"))
			fprintf(out, "stopped early: the capture reached its size cap (%llu bytes)\n",
				(unsigned long long)max_size);
		if (reply_field(body, "shutdown"))
			fprintf(out, "stopped early: the daemon shut down\n");
		fprintf(out, "wrote %s\n", path);
	}
	if (rc != CTL_EXIT_OK)
		drop_if_empty(fd, path);
	close(fd);
	free(body);
	return rc;
}
