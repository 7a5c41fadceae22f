/*
 * ctl_capture.c - `perfmonctl dump` and `perfmonctl export` of an event
 * capture (docs/capture-format.md).
 *
 * Both load the whole file through capture_load(), which refuses anything
 * that does not add up, then replay the daemon's pairing rules over the
 * events (spans keyed by point and seq; a begin on an open span abandons
 * it; a timestamp going back discards it) with the daemon's table limits,
 * age sweep and overhead as the capture's header gives them.  Labels come
 * from the capture's name table and are untrusted bytes: tables clean
 * them (ctl_table), JSON escapes them (ctl_json).  export spreads a
 * point's overlapping spans over lanes, so no trace track holds two
 * complete events that partly overlap.
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
#include "ctl_table.h"
#include "recorder.h"
#include "report.h"
#include "units.h"

#define NO_EVENT UINT32_MAX

const char *ctl_outcome_name(enum ctl_outcome o)
{
	static const char *const names[CTL_OUT_COUNT] = {
		[CTL_OUT_OPEN] = "open", [CTL_OUT_VALUE] = "value", [CTL_OUT_BEGIN] = "begin",
		[CTL_OUT_PAIRED] = "paired", [CTL_OUT_ORPHAN] = "orphan",
		[CTL_OUT_ABANDONED] = "abandoned", [CTL_OUT_INVALID] = "invalid",
		[CTL_OUT_BEFORE_START] = "before_start", [CTL_OUT_OUT_OF_RANGE] = "out_of_range",
	};

	return (unsigned)o < CTL_OUT_COUNT ? names[o] : "?";
}

/* ---- replay ---------------------------------------------------------- */

/*
 * The daemon's rules (docs/pairing.md) over the capture's events, with the
 * settings its header carries: an open-span table of max_open_spans that
 * evicts the span touched least recently, an age sweep of spans untouched
 * for stall_ticks, max_stages statistics rows and the overhead subtracted
 * per transition.  Each open span sits in a hash map (closed ones stay as
 * tombstones, so a key seen before is known) and in a list from least to
 * most recently touched, which the eviction and the sweep take from.
 */

#define NO_SLOT UINT32_MAX

enum { SPAN_OPEN = 1, SPAN_GONE };

struct open_span {
	uint64_t key;          /* span key + 1; 0: empty slot */
	uint32_t first, last;  /* event chain */
	uint32_t older, newer; /* the recency list, while open */
	uint64_t start, touch;
	uint32_t steps;        /* transitions before the end */
	uint8_t last_step;
	uint8_t state;         /* SPAN_OPEN, SPAN_GONE */
	bool before_start;     /* no begin seen: begun before the recording */
};

struct replay {
	const struct capture *c;
	struct ctl_replayed *r;
	struct open_span *map;
	size_t mask;
	uint32_t oldest, newest, nopen;
	uint64_t *rows;        /* statistics rows in use: key + 1, open addressing */
	size_t rows_mask;
	uint32_t nrows;
};

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	return k;
}

static uint64_t minus_clamped(uint64_t v, uint64_t sub)
{
	return v > sub ? v - sub : 0;
}

static void unlink_span(struct replay *rp, struct open_span *s)
{
	if (s->older != NO_SLOT)
		rp->map[s->older].newer = s->newer;
	else
		rp->oldest = s->newer;
	if (s->newer != NO_SLOT)
		rp->map[s->newer].older = s->older;
	else
		rp->newest = s->older;
	rp->nopen--;
}

/* The span accepted an event: most recently touched now. */
static void touch_span(struct replay *rp, struct open_span *s, uint64_t ts)
{
	uint32_t slot = (uint32_t)(s - rp->map);

	if (s->state == SPAN_OPEN)
		unlink_span(rp, s);
	s->state = SPAN_OPEN;
	s->touch = ts;
	s->older = rp->newest;
	s->newer = NO_SLOT;
	if (rp->newest != NO_SLOT)
		rp->map[rp->newest].newer = slot;
	else
		rp->oldest = slot;
	rp->newest = slot;
	rp->nopen++;
}

/* Close a span: every event of its chain gets outcome `o` (the begin of a
 * paired span becomes "begin"; a span begun before the recording keeps
 * "before_start"). */
static void settle(struct replay *rp, struct open_span *s, enum ctl_outcome o)
{
	if (s->state == SPAN_OPEN)
		unlink_span(rp, s);
	s->state = SPAN_GONE;
	if (s->before_start)
		return;
	for (uint32_t i = s->first; i != NO_EVENT; i = rp->r[i].next) {
		uint8_t step = PERFMON_EVENT_STEP(rp->c->events[i].event);

		rp->r[i].outcome = (uint8_t)(o == CTL_OUT_PAIRED && step == PERFMON_BEGIN_STEP ?
					     CTL_OUT_BEGIN : o);
	}
}

/* Whether statistics row (point, from, to) exists or can be made. */
static bool row_ok(struct replay *rp, uint32_t point, uint8_t from, uint8_t to)
{
	uint64_t key = ((uint64_t)point << 16 | (uint64_t)from << 8 | to) + 1;
	size_t h;

	if (!rp->rows)
		return true;   /* no limit known */
	for (h = mix(key) & rp->rows_mask; rp->rows[h]; h = (h + 1) & rp->rows_mask)
		if (rp->rows[h] == key)
			return true;
	if (rp->nrows == rp->c->h.max_stages)
		return false;
	rp->rows[h] = key;
	rp->nrows++;
	return true;
}

/* A span ended at event `end`: its samples in the daemon's order (each
 * transition, then the total), those without a row marked. */
static void record_span(struct replay *rp, struct open_span *s, uint32_t end)
{
	const struct capture_event *e = &rp->c->events[end];
	bool total_ok;

	settle(rp, s, CTL_OUT_PAIRED);
	for (uint32_t i = rp->r[s->first].next; i != NO_EVENT; i = rp->r[i].next) {
		uint8_t to = PERFMON_EVENT_STEP(rp->c->events[i].event);

		if ((i != end || s->steps) && !row_ok(rp, e->point, rp->r[i].from, to))
			rp->r[i].outcome = CTL_OUT_OUT_OF_RANGE;
	}
	total_ok = row_ok(rp, e->point, 0, 0);
	if (!total_ok)
		rp->r[end].outcome = CTL_OUT_OUT_OF_RANGE;
}

/* The age sweep, as of `now`: spans untouched for more than stall_ticks
 * are abandoned. */
static void sweep(struct replay *rp, uint64_t now)
{
	uint64_t stall = rp->c->h.stall_ticks;

	while (stall && rp->oldest != NO_SLOT) {
		struct open_span *s = &rp->map[rp->oldest];

		if (now <= s->touch || now - s->touch <= stall)
			break;
		settle(rp, s, CTL_OUT_ABANDONED);
	}
}

/* Could a span with no begin in the capture have been open when the
 * recording started, to take an event at `ts`?  Only if the age sweep
 * (at most one flush interval late) had not abandoned it by then. */
static bool may_predate(const struct capture *c, uint64_t ts)
{
	uint64_t bound = c->h.stall_ticks + c->h.flush_ticks;

	if (!c->h.stall_ticks || ts <= c->h.start_tsc)
		return true;
	return bound < c->h.stall_ticks || ts - c->h.start_tsc <= bound;
}

/* The open span of `key`, or NULL with *ret_free the slot a new one
 * takes and *ret_seen whether the key had a span before. */
static struct open_span *find_span(struct replay *rp, uint64_t key, struct open_span **ret_free,
				   bool *ret_seen)
{
	size_t h;

	*ret_seen = false;
	for (h = mix(key) & rp->mask; rp->map[h].key; h = (h + 1) & rp->mask) {
		if (rp->map[h].key != key)
			continue;
		if (rp->map[h].state == SPAN_OPEN)
			return &rp->map[h];
		*ret_seen = true;
	}
	*ret_free = &rp->map[h];
	return NULL;
}

/* A new span in slot `s`, its chain starting at event i. */
static void open_span(struct replay *rp, struct open_span *s, uint64_t key, uint32_t i,
		      uint8_t step, bool before_start)
{
	uint64_t ts = rp->c->events[i].tsc;

	if (rp->c->h.max_open_spans && rp->nopen >= rp->c->h.max_open_spans)
		settle(rp, &rp->map[rp->oldest], CTL_OUT_ABANDONED);   /* evicted */
	*s = (struct open_span){ key, i, i, NO_SLOT, NO_SLOT, ts, ts, 0, step, 0, before_start };
	touch_span(rp, s, ts);
}

static void replay_one(struct replay *rp, uint32_t i)
{
	const struct capture_event *e = &rp->c->events[i];
	struct ctl_replayed *r = &rp->r[i];
	uint8_t step = PERFMON_EVENT_STEP(e->event);
	uint64_t key = (((uint64_t)e->point << 32) | PERFMON_EVENT_SEQ(e->event)) + 1;
	struct open_span *s, *free_slot = NULL;
	bool seen;

	r->next = NO_EVENT;
	if (step == PERFMON_VALUE_STEP) {
		r->outcome = row_ok(rp, e->point, PERFMON_VALUE_STEP, PERFMON_VALUE_STEP) ?
			     CTL_OUT_VALUE : CTL_OUT_OUT_OF_RANGE;
		return;
	}
	sweep(rp, e->tsc);
	s = find_span(rp, key, &free_slot, &seen);
	if (step == PERFMON_BEGIN_STEP) {
		if (s) {
			settle(rp, s, CTL_OUT_ABANDONED);
			free_slot = s;   /* the tombstone's chain is settled: reuse it */
		}
		open_span(rp, free_slot, key, i, step, false);
		return;
	}
	if (!s) {
		/* A first event of a span with no begin in the capture: it may
		 * have begun before the recording, and the daemon paired it. */
		if (!seen && may_predate(rp->c, e->tsc)) {
			r->outcome = CTL_OUT_BEFORE_START;
			if (step != PERFMON_END_STEP)
				open_span(rp, free_slot, key, i, step, true);
		} else {
			r->outcome = CTL_OUT_ORPHAN;
		}
		return;
	}
	rp->r[s->last].next = i;
	s->last = i;
	if (e->tsc < s->touch) {
		r->outcome = CTL_OUT_INVALID;   /* the rest of a before_start span keeps its own */
		settle(rp, s, CTL_OUT_INVALID);
		return;
	}
	if (s->before_start) {
		r->outcome = CTL_OUT_BEFORE_START;
	} else {
		r->from = s->last_step;
		r->stage_tsc = s->touch;
		r->ticks = minus_clamped(e->tsc - s->touch, rp->c->h.overhead_ticks);
	}
	if (step != PERFMON_END_STEP) {
		s->steps += s->steps != UINT32_MAX;
		s->last_step = step;
		touch_span(rp, s, e->tsc);
		return;
	}
	if (s->before_start) {
		settle(rp, s, CTL_OUT_BEFORE_START);
		return;
	}
	{
		uint64_t sub;

		if (__builtin_mul_overflow(rp->c->h.overhead_ticks, (uint64_t)s->steps + 1, &sub))
			sub = UINT64_MAX;
		r->total = minus_clamped(e->tsc - s->start, sub);
	}
	r->start_tsc = s->start;
	record_span(rp, s, i);
}

struct ctl_replayed *ctl_capture_replay(const struct capture *c)
{
	struct replay rp = { .c = c, .oldest = NO_SLOT, .newest = NO_SLOT };
	size_t cap = 16, rows = 16;

	while (cap < 2 * c->nevents + 2)
		cap <<= 1;
	rp.r = calloc(c->nevents ? c->nevents : 1, sizeof(*rp.r));
	rp.map = calloc(cap, sizeof(*rp.map));
	rp.mask = cap - 1;
	if (c->h.max_stages) {
		/* at most two rows per event, and never more than max_stages */
		while (rows < 4 * (uint64_t)c->nevents + 2 && rows < 2 * (uint64_t)c->h.max_stages)
			rows <<= 1;
		rp.rows = calloc(rows, sizeof(*rp.rows));
		rp.rows_mask = rows - 1;
	}
	if (!rp.r || !rp.map || (c->h.max_stages && !rp.rows)) {
		free(rp.r);
		free(rp.map);
		free(rp.rows);
		return NULL;
	}
	for (size_t i = 0; i < c->nevents; i++)
		replay_one(&rp, (uint32_t)i);
	/* What the sweep would have abandoned by the end, then what is left. */
	sweep(&rp, c->has_trailer ? c->t.end_tsc :
	      c->nevents ? c->events[c->nevents - 1].tsc : 0);
	while (rp.oldest != NO_SLOT)
		settle(&rp, &rp.map[rp.oldest], CTL_OUT_OPEN);
	free(rp.map);
	free(rp.rows);
	return rp.r;
}

/* ---- labels ---------------------------------------------------------- */

/* As perfmond's reports label the point: a label another point shows too
 * gets "#point". */
static void point_label(const struct capture *c, uint32_t point, char *buf, size_t n)
{
	bool shared;
	const char *l = capture_point_label(c, point, &shared);

	if (l && shared)
		snprintf(buf, n, "%s#%u", l, point);
	else if (l)
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

/* Did event `ev` close a stage (its figures are in `r`)? */
static bool closed_stage(const struct capture_event *ev, const struct ctl_replayed *r)
{
	return r->outcome == CTL_OUT_PAIRED ||
	       (r->outcome == CTL_OUT_OUT_OF_RANGE &&
		PERFMON_EVENT_STEP(ev->event) != PERFMON_VALUE_STEP);
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
		if (closed_stage(ev, &r[i])) {
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
	ctl_json_kv_u64(&j, "version", c->version);
	ctl_json_kv_u64(&j, "max_open_spans", c->h.max_open_spans);
	ctl_json_kv_u64(&j, "max_stages", c->h.max_stages);
	ctl_json_kv_u64(&j, "stall_ticks", c->h.stall_ticks);
	ctl_json_kv_u64(&j, "flush_ticks", c->h.flush_ticks);
	ctl_json_kv_u64(&j, "overhead_ticks", c->h.overhead_ticks);
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
		if (closed_stage(ev, &r[i])) {
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
 * Tracks.  Spans of one point overlap when several seqs are open at once,
 * and a trace viewer drops complete events that partly overlap on one
 * track; so each point gets as many tracks ("lanes") as it had spans open
 * at once, and each span the first lane free at its begin.  Spans are
 * taken in the order of their begins, so a lane is free when its last span
 * ended by then: first fit in that order is exact (never more lanes than
 * spans open at one time).
 */
struct track {
	uint32_t point;
	uint32_t nlanes, cap;
	uint64_t *ends;        /* per lane: when its last span ended */
	uint32_t tid0;         /* tid of lane 0; lane k is tid0 + k */
};

struct tracks {
	struct track *v;       /* by first appearance, then sorted by point */
	uint32_t n;
	uint32_t *slot;        /* open addressing: track index + 1, by point */
	size_t mask;
	uint32_t *lane;        /* per event: the lane of its span */
};

static void tracks_free(struct tracks *t)
{
	for (uint32_t i = 0; t->v && i < t->n; i++)
		free(t->v[i].ends);
	free(t->v);
	free(t->slot);
	free(t->lane);
}

/* The track of `point`, added if new; NULL when out of memory. */
static struct track *track_of(struct tracks *t, uint32_t point)
{
	size_t h;

	for (h = mix(point) & t->mask; t->slot[h]; h = (h + 1) & t->mask)
		if (t->v[t->slot[h] - 1].point == point)
			return &t->v[t->slot[h] - 1];
	t->v[t->n] = (struct track){ point, 1, 4, calloc(4, sizeof(uint64_t)), 0 };
	if (!t->v[t->n].ends)
		return NULL;
	t->slot[h] = ++t->n;
	return &t->v[t->n - 1];
}

/* The first lane of `tr` free at `start`, now busy until `end`. */
static int take_lane(struct track *tr, uint64_t start, uint64_t end, uint32_t *ret)
{
	uint32_t k;

	for (k = 0; k < tr->nlanes && tr->ends[k] > start; k++)
		;
	if (k == tr->cap) {
		uint64_t *e = realloc(tr->ends, 2 * tr->cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		tr->ends = e;
		tr->cap *= 2;
	}
	if (k == tr->nlanes)
		tr->nlanes++;
	tr->ends[k] = end;
	*ret = k;
	return 0;
}

static int by_point(const void *a, const void *b)
{
	const struct track *x = a, *y = b;

	return (x->point > y->point) - (x->point < y->point);
}

/* A track per point seen, a lane per span that ended, tids in point order. */
static int lay_tracks(const struct capture *c, const struct ctl_replayed *r, struct tracks *t)
{
	size_t cap = 16;
	uint32_t tid = 1;

	while (cap < 2 * c->nevents + 2)
		cap <<= 1;
	memset(t, 0, sizeof(*t));
	t->v = calloc(c->nevents ? c->nevents : 1, sizeof(*t->v));
	t->slot = calloc(cap, sizeof(*t->slot));
	t->lane = calloc(c->nevents ? c->nevents : 1, sizeof(*t->lane));
	t->mask = cap - 1;
	if (!t->v || !t->slot || !t->lane)
		return -ENOMEM;
	for (size_t i = 0; i < c->nevents; i++) {
		struct track *tr = track_of(t, c->events[i].point);
		uint32_t end = (uint32_t)i, lane;

		if (!tr)
			return -ENOMEM;
		if (r[i].outcome != CTL_OUT_BEGIN)
			continue;
		while (r[end].next != NO_EVENT)
			end = r[end].next;
		if (take_lane(tr, c->events[i].tsc, c->events[end].tsc, &lane) < 0)
			return -ENOMEM;
		for (uint32_t k = (uint32_t)i; k != NO_EVENT; k = r[k].next)
			t->lane[k] = lane;
	}
	qsort(t->v, t->n, sizeof(*t->v), by_point);
	for (uint32_t i = 0; i < t->n; i++) {
		t->v[i].tid0 = tid;
		tid += t->v[i].nlanes;
	}
	/* The slots point into the order before the sort: rebuild them. */
	memset(t->slot, 0, cap * sizeof(*t->slot));
	for (uint32_t i = 0; i < t->n; i++) {
		size_t h;

		for (h = mix(t->v[i].point) & t->mask; t->slot[h]; h = (h + 1) & t->mask)
			;
		t->slot[h] = i + 1;
	}
	return 0;
}

static void thread_meta(struct ctl_json *j, uint32_t tid, const char *what, const char *key,
			const char *name, uint64_t index)
{
	ctl_json_object_begin(j);
	ctl_json_kv_string(j, "name", what);
	ctl_json_kv_string(j, "ph", "M");
	ctl_json_kv_u64(j, "pid", 1);
	ctl_json_kv_u64(j, "tid", tid);
	ctl_json_key(j, "args");
	ctl_json_object_begin(j);
	if (name)
		ctl_json_kv_string(j, key, name);
	else
		ctl_json_kv_u64(j, key, index);
	ctl_json_object_end(j);
	ctl_json_object_end(j);
}

/*
 * Chrome Trace Event JSON: every span that ended in the capture becomes a
 * "total" complete event on a lane of its point, with one complete event
 * per stage inside it; value samples become counter events at the time of
 * the span event before them (capture_parse placed them after the latest
 * one read from their sub-ring: a value carries no time of its own);
 * metadata names the lanes after the points and keeps them in point order.
 */
static int export_chrome(const struct capture *c, const struct ctl_replayed *r, FILE *f)
{
	struct ctl_json j;
	struct tracks t;
	char label[128], stage[128], name[160];
	uint64_t last_ts = c->h.start_tsc;

	if (lay_tracks(c, r, &t) < 0) {
		tracks_free(&t);
		return -ENOMEM;
	}
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

	for (uint32_t i = 0; i < t.n; i++) {
		point_label(c, t.v[i].point, label, sizeof(label));
		for (uint32_t k = 0; k < t.v[i].nlanes; k++) {
			if (k)
				snprintf(name, sizeof(name), "%s (lane %u)", label, k + 1);
			thread_meta(&j, t.v[i].tid0 + k, "thread_name", "name", k ? name : label, 0);
			thread_meta(&j, t.v[i].tid0 + k, "thread_sort_index", "sort_index", NULL,
				    t.v[i].tid0 + k);
		}
	}

	for (size_t i = 0; i < c->nevents; i++) {
		const struct capture_event *ev = &c->events[i];
		uint8_t step = PERFMON_EVENT_STEP(ev->event);
		uint32_t tid = track_of(&t, ev->point)->tid0 + t.lane[i];

		if (step == PERFMON_VALUE_STEP) {
			point_label(c, ev->point, label, sizeof(label));
			ctl_json_object_begin(&j);
			ctl_json_kv_string(&j, "name", label);
			ctl_json_kv_string(&j, "ph", "C");
			ctl_json_kv_double(&j, "ts", trace_us(c, last_ts));
			ctl_json_kv_u64(&j, "pid", 1);
			ctl_json_kv_u64(&j, "tid", tid);
			ctl_json_key(&j, "args");
			ctl_json_object_begin(&j);
			ctl_json_kv_u64(&j, "value", ev->tsc);
			ctl_json_object_end(&j);
			ctl_json_object_end(&j);
			continue;
		}
		last_ts = ev->tsc;
		if (!closed_stage(ev, &r[i]))
			continue;
		point_label(c, ev->point, label, sizeof(label));
		/* A stage ends here (begin -> end alone is only the total).  As
		 * stamped: less an overhead, the stages would not nest. */
		if (!(step == PERFMON_END_STEP && r[i].from == PERFMON_BEGIN_STEP)) {
			stage_label(c, ev, &r[i], stage, sizeof(stage));
			complete_event(&j, stage, label, tid, trace_us(c, r[i].stage_tsc),
				       ticks_us(c, ev->tsc - r[i].stage_tsc),
				       PERFMON_EVENT_SEQ(ev->event));
		}
		if (step == PERFMON_END_STEP)
			complete_event(&j, "total", label, tid, trace_us(c, r[i].start_tsc),
				       ticks_us(c, ev->tsc - r[i].start_tsc),
				       PERFMON_EVENT_SEQ(ev->event));
	}
	ctl_json_array_end(&j);
	ctl_json_object_end(&j);
	tracks_free(&t);
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

			if (units_parse(optarg, &units_size, &max_size, why, sizeof(why)) < 0 ||
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
