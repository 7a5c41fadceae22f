/*
 * check_ctl_capture.c - perfmonctl's capture commands (src/ctl_capture.c):
 * the pairing replay gives each event the outcome the daemon's rules give
 * it, with stage durations and totals; dump prints one line per event in
 * the table formats and the outcome, stage and figures in JSON; export
 * writes one complete event per stage and per span and a counter per value;
 * bad usage exits 1 and a corrupt file 4.
 */
#include "build-config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "check_main.h"
#include "ctl_capture.h"
#include "ctl_cli.h"
#include "scratch.h"

static struct capture C;
static struct capture_event ev[64];

static void add(uint64_t tsc, uint32_t point, uint8_t step, uint32_t seq)
{
	ev[C.nevents++] = (struct capture_event){ tsc, point, PERFMON_EVENT(step, seq), 0 };
}

/* Two interleaved spans of point 1, a re-begin, an end without a begin,
 * time going back, a value, and a span left open; no settings (a version
 * 1 capture): no table limits, no age sweep. */
static void scenario(void)
{
	memset(&C, 0, sizeof(C));
	C.events = ev;
	C.h.tsc_hz_milli = 1000000000000ull;     /* 1 GHz: ticks are ns */
	C.h.ring_count = 1;
	add(100, 1, PERFMON_BEGIN_STEP, 1);       /* 0 begin (span 1) */
	add(110, 1, PERFMON_BEGIN_STEP, 2);       /* 1 begin (span 2) */
	add(130, 1, 1, 1);                        /* 2 paired 0->1, 30 */
	add(150, 1, PERFMON_END_STEP, 2);         /* 3 paired total, 40 */
	add(200, 1, PERFMON_END_STEP, 1);         /* 4 paired 1->end, 70; total 100 */
	add(210, 2, PERFMON_END_STEP, 9);         /* 5 before_start (no sweep: it may be) */
	add(220, 3, PERFMON_BEGIN_STEP, 4);       /* 6 abandoned */
	add(230, 3, 1, 4);                        /* 7 abandoned with it */
	add(240, 3, PERFMON_BEGIN_STEP, 4);       /* 8 begin */
	add(260, 3, PERFMON_END_STEP, 4);         /* 9 paired, 20 */
	add(300, 5, PERFMON_BEGIN_STEP, 6);       /* 10 invalid */
	add(290, 5, 1, 6);                        /* 11 invalid */
	add(77, 6, PERFMON_VALUE_STEP, 0);        /* 12 value */
	add(400, 7, PERFMON_BEGIN_STEP, 8);       /* 13 open */
	add(410, 7, 2, 8);                        /* 14 open */
}

/* Replay C: every event's outcome must be want's. */
static struct ctl_replayed *replay_expecting(const uint8_t *want)
{
	struct ctl_replayed *r = ctl_capture_replay(&C);

	ck_assert_ptr_nonnull(r);
	for (size_t i = 0; i < C.nevents; i++)
		ck_assert_msg(r[i].outcome == want[i], "event %zu: %s, not %s", i,
			      ctl_outcome_name(r[i].outcome), ctl_outcome_name(want[i]));
	return r;
}

/* A closed stage's figures: the step it started at, its duration, the
 * span's total (0 on a step). */
static void figures(const struct ctl_replayed *r, uint8_t from, uint64_t ticks,
		    uint64_t total)
{
	ck_assert_uint_eq(r->from, from);
	ck_assert_uint_eq(r->ticks, ticks);
	ck_assert_uint_eq(r->total, total);
}

START_TEST(test_replay)
{
	static const uint8_t want[] = {
		CTL_OUT_BEGIN, CTL_OUT_BEGIN, CTL_OUT_PAIRED, CTL_OUT_PAIRED, CTL_OUT_PAIRED,
		CTL_OUT_BEFORE_START, CTL_OUT_ABANDONED, CTL_OUT_ABANDONED, CTL_OUT_BEGIN,
		CTL_OUT_PAIRED, CTL_OUT_INVALID, CTL_OUT_INVALID, CTL_OUT_VALUE, CTL_OUT_OPEN,
		CTL_OUT_OPEN,
	};
	struct ctl_replayed *r;

	scenario();
	r = replay_expecting(want);
	figures(&r[2], 0, 30, 0);
	figures(&r[3], 0, 40, 40);
	figures(&r[4], 1, 70, 100);
	ck_assert_uint_eq(r[4].start_tsc, 100);
	figures(&r[9], 0, 20, 20);
	ck_assert_str_eq(ctl_outcome_name(CTL_OUT_ORPHAN), "orphan");
	free(r);
}
END_TEST

/* The daemon's settings from the header: a table of two open spans (the
 * least recently touched evicted), an age sweep, three statistics rows,
 * the overhead subtracted; a step or end with no begin is "before_start"
 * while a span begun before the recording could still be open. */
START_TEST(test_replay_settings)
{
	static const uint8_t want[] = {
		CTL_OUT_BEFORE_START, CTL_OUT_ABANDONED, CTL_OUT_BEGIN, CTL_OUT_ABANDONED,
		CTL_OUT_ORPHAN, CTL_OUT_PAIRED, CTL_OUT_PAIRED, CTL_OUT_OUT_OF_RANGE,
		CTL_OUT_BEFORE_START, CTL_OUT_BEFORE_START, CTL_OUT_ORPHAN, CTL_OUT_ORPHAN,
		CTL_OUT_BEGIN, CTL_OUT_PAIRED, CTL_OUT_BEGIN, CTL_OUT_OUT_OF_RANGE, CTL_OUT_OPEN,
	};
	struct ctl_replayed *r;

	memset(&C, 0, sizeof(C));
	C.events = ev;
	C.h = (struct capture_header){ .tsc_hz_milli = 1000000000000ull, .ring_count = 1,
				       .start_tsc = 1000, .max_open_spans = 2, .max_stages = 3,
				       .stall_ticks = 100, .flush_ticks = 20,
				       .overhead_ticks = 5 };
	add(990, 1, PERFMON_END_STEP, 1);     /* 0 stamped before the start */
	add(1000, 1, PERFMON_BEGIN_STEP, 2);  /* 1 evicted by 3 */
	add(1010, 1, PERFMON_BEGIN_STEP, 3);  /* 2 */
	add(1020, 1, PERFMON_BEGIN_STEP, 4);  /* 3 swept at 9 (untouched for 110) */
	add(1030, 1, PERFMON_END_STEP, 2);    /* 4 its span was evicted */
	add(1040, 1, 1, 3);                   /* 5 0->1: 30 - 5 */
	add(1060, 1, PERFMON_END_STEP, 3);    /* 6 1->end: 20 - 5; total 50 - 2 * 5 */
	add(7, 2, PERFMON_VALUE_STEP, 0);     /* 7 a fourth row */
	add(1110, 3, 1, 5);                   /* 8 110 after the start: may predate it */
	add(1130, 3, PERFMON_END_STEP, 5);    /* 9 the same span */
	add(1140, 1, PERFMON_END_STEP, 4);    /* 10 swept */
	add(1150, 4, 1, 6);                   /* 11 150 after the start: too late */
	add(1160, 1, PERFMON_BEGIN_STEP, 7);  /* 12 */
	add(1170, 1, PERFMON_END_STEP, 7);    /* 13 the total row exists */
	add(1180, 5, PERFMON_BEGIN_STEP, 8);  /* 14 */
	add(1190, 5, PERFMON_END_STEP, 8);    /* 15 no row left for its total */
	add(1195, 6, PERFMON_BEGIN_STEP, 9);  /* 16 */
	r = replay_expecting(want);
	figures(&r[5], 0, 25, 0);
	figures(&r[6], 1, 15, 40);
	ck_assert_uint_eq(r[5].stage_tsc, 1010);
	ck_assert_uint_eq(r[6].start_tsc, 1010);
	figures(&r[13], 0, 5, 5);
	figures(&r[15], 0, 5, 5);
	free(r);

	/* without a sweep a span may have begun any time before */
	C.h.stall_ticks = 0;
	r = ctl_capture_replay(&C);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(ctl_outcome_name(r[11].outcome), "before_start");
	free(r);
}
END_TEST

struct label {
	uint32_t point;
	uint8_t step;
	const char *text;
};

/* The events of C as a file with these labels. */
static char *write_labelled(const struct label *l, uint32_t nl)
{
	static uint8_t buf[4096];
	struct capture_header h = C.h;
	struct capture_trailer t = { .events = C.nevents };
	char *path = scratch_path("s.pmcap");
	size_t off = CAPTURE_HEADER_SIZE;
	FILE *f;

	h.name_count = nl;
	h.start_tsc = 100;
	h.start_realtime_ns = 1700000000000000000ull;
	capture_encode_header(buf, &h);
	for (uint32_t i = 0; i < nl; i++)
		off += capture_encode_name(buf + off, l[i].point, l[i].step, l[i].text);
	for (size_t i = 0; i < C.nevents; i++, off += CAPTURE_EVENT_SIZE)
		capture_encode_event(buf + off, &ev[i]);
	capture_encode_trailer(buf + off, &t);
	off += CAPTURE_TRAILER_SIZE;
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, off, f), off);
	fclose(f);
	return path;
}

/* The scenario as a file with labels. */
static char *write_file(void)
{
	static const struct label l[] = { { 1, 0, "orders" }, { 1, 1, "risk" } };

	return write_labelled(l, 2);
}

static char *run(int (*cmd)(int, char **, FILE *, FILE *), int argc, char **argv, int want_rc)
{
	char *buf = NULL, *ebuf = NULL;
	size_t n = 0, en = 0;
	FILE *out = open_memstream(&buf, &n), *err = open_memstream(&ebuf, &en);
	int rc = cmd(argc, argv, out, err);

	fclose(out);
	fclose(err);
	ck_assert_msg(rc == want_rc, "exit %d, not %d: %s", rc, want_rc, ebuf);
	free(ebuf);
	return buf;
}

static unsigned count(const char *s, const char *what)
{
	unsigned k = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		k++;
	return k;
}

START_TEST(test_dump_and_export)
{
	char *path, *out;

	scratch_create("check_ctl_capture");
	scenario();
	path = write_file();
	{
		char *argv[] = { "dump", path, "--format", "csv", NULL };

		out = run(ctl_dump_cmd, 4, argv, CTL_EXIT_OK);
		ck_assert_uint_eq(count(out, "\n"), 16);
		ck_assert_ptr_nonnull(strstr(out, "2023-11-14 22:13:20.000000030,0,orders,1,1,,"
					     "paired,risk,30.0,\n"));
		ck_assert_ptr_nonnull(strstr(out, ",orders,end,1,,paired,step_1->255,70.0,100.0\n"));
		ck_assert_ptr_nonnull(strstr(out, ",point_6,value,,77,value,,,\n"));
		free(out);
	}
	{
		char *argv[] = { "dump", path, "--format", "json", NULL };

		out = run(ctl_dump_cmd, 4, argv, CTL_EXIT_OK);
		ck_assert_uint_eq(count(out, "\"outcome\":"), 15);
		/* From a file the spans come in timestamp order, as the daemon's
		 * merge hands them to pairing: the step at 290 goes before its
		 * begin at 300, with no begin before it (as a span begun before
		 * the recording), and the begin stays open. */
		ck_assert_uint_eq(count(out, "\"outcome\":\"invalid\""), 0);
		ck_assert_uint_eq(count(out, "\"outcome\":\"orphan\""), 0);
		ck_assert_uint_eq(count(out, "\"outcome\":\"before_start\""), 2);
		ck_assert_uint_eq(count(out, "\"outcome\":\"open\""), 3);
		ck_assert_ptr_nonnull(strstr(out, "\"stage\":\"total\",\"duration_ns\":40"));
		ck_assert_ptr_nonnull(strstr(out, "\"label\":\"risk\""));
		free(out);
	}
	{
		char *argv[] = { "export", path, "--format", "chrome", "-o", "-", NULL };

		out = run(ctl_export_cmd, 6, argv, CTL_EXIT_OK);
		/* stages: risk, step_1->255 (span 1); totals: spans 1, 2, 4 */
		ck_assert_uint_eq(count(out, "\"ph\":\"X\""), 5);
		ck_assert_uint_eq(count(out, "\"name\":\"total\""), 3);
		ck_assert_uint_eq(count(out, "\"ph\":\"C\""), 1);
		ck_assert_ptr_nonnull(strstr(out, "\"name\":\"risk\",\"cat\":\"orders\",\"ph\":\"X\","
					     "\"ts\":0,\"dur\":0.03"));
		free(out);
	}
	{
		char *argv[] = { "export", path, "--format", "json", "-o", "-", NULL };

		free(run(ctl_export_cmd, 6, argv, CTL_EXIT_FAILURE));
	}
	{
		char *argv[] = { "dump", NULL };

		free(run(ctl_dump_cmd, 1, argv, CTL_EXIT_FAILURE));
	}
	{
		FILE *f = fopen(path, "r+b");
		char *argv[] = { "dump", path, NULL };

		ck_assert_ptr_nonnull(f);
		fputs("XX", f);
		fclose(f);
		free(run(ctl_dump_cmd, 2, argv, CTL_EXIT_BAD_FILE));
	}
	scratch_remove();
}
END_TEST

/* The complete events of a Chrome trace: tid, start and duration. */
struct xev {
	unsigned tid;
	double ts, dur;
	char name[32];
};

static size_t complete_events(const char *json, struct xev *x, size_t max)
{
	size_t n = 0;

	for (const char *p = json; (p = strstr(p, "{\"name\":\"")) && n < max; p++) {
		char ph[4];

		if (sscanf(p, "{\"name\":\"%31[^\"]\",\"cat\":\"%*[^\"]\",\"ph\":\"%1[^\"]\","
			   "\"ts\":%lf,\"dur\":%lf,\"pid\":1,\"tid\":%u", x[n].name, ph, &x[n].ts,
			   &x[n].dur, &x[n].tid) == 5 && ph[0] == 'X')
			n++;
	}
	return n;
}

/* Two points publishing one name: dump and export tell them apart with
 * "#point", as perfmond's reports do. */
START_TEST(test_shared_names)
{
	static const struct label l[] = { { 1, 0, "dup" }, { 2, 0, "dup" } };
	char *path, *out;

	scratch_create("check_ctl_capture");
	memset(&C, 0, sizeof(C));
	C.events = ev;
	C.h = (struct capture_header){ .tsc_hz_milli = 1000000000000ull, .ring_count = 1 };
	add(100, 1, PERFMON_BEGIN_STEP, 5);
	add(110, 2, PERFMON_BEGIN_STEP, 5);
	add(120, 1, PERFMON_END_STEP, 5);
	add(130, 2, PERFMON_END_STEP, 5);
	path = write_labelled(l, 2);
	{
		char *argv[] = { "dump", path, "--format", "csv", NULL };

		out = run(ctl_dump_cmd, 4, argv, CTL_EXIT_OK);
		ck_assert_uint_eq(count(out, ",dup#1,"), 2);
		ck_assert_uint_eq(count(out, ",dup#2,"), 2);
		free(out);
	}
	{
		char *argv[] = { "export", path, "--format", "chrome", "-o", "-", NULL };

		out = run(ctl_export_cmd, 6, argv, CTL_EXIT_OK);
		ck_assert_ptr_nonnull(strstr(out, "\"tid\":1,\"args\":{\"name\":\"dup#1\"}"));
		ck_assert_ptr_nonnull(strstr(out, "\"tid\":2,\"args\":{\"name\":\"dup#2\"}"));
		ck_assert_uint_eq(count(out, "\"cat\":\"dup#2\""), 1);
		free(out);
	}
	scratch_remove();
}
END_TEST

/* Five spans of one point, three open at once at the most: the export
 * puts them on three lanes, no two complete events of a lane partly
 * overlapping, each span's figures unchanged. */
START_TEST(test_export_lanes)
{
	struct xev x[64];
	char *path, *out;
	size_t n, totals = 0;
	unsigned maxtid = 0;

	scratch_create("check_ctl_capture");
	memset(&C, 0, sizeof(C));
	C.events = ev;
	C.h.tsc_hz_milli = 1000000000000ull;
	C.h.ring_count = 1;
	for (uint32_t s = 1; s <= 5; s++) {
		add(100 * s, 1, PERFMON_BEGIN_STEP, s);
		add(100 * s + 50, 1, 1, s);
		add(100 * s + 250, 1, PERFMON_END_STEP, s);
	}
	path = write_file();
	{
		char *argv[] = { "export", path, "--format", "chrome", "-o", "-", NULL };

		out = run(ctl_export_cmd, 6, argv, CTL_EXIT_OK);
	}
	n = complete_events(out, x, 64);
	ck_assert_uint_eq(n, 15);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(x[i].name, "total")) {
			ck_assert(x[i].dur == 0.25);
			totals++;
		} else {
			ck_assert(x[i].dur == (strcmp(x[i].name, "risk") ? 0.2 : 0.05));
		}
		maxtid = x[i].tid > maxtid ? x[i].tid : maxtid;
		/* in whole nanoseconds, as a viewer takes them */
		for (size_t k = 0; k < n; k++) {
			long long a0 = llround(x[i].ts * 1000), a1 = a0 + llround(x[i].dur * 1000);
			long long b0 = llround(x[k].ts * 1000), b1 = b0 + llround(x[k].dur * 1000);

			ck_assert_msg(x[i].tid != x[k].tid || !(a0 < b0 && b0 < a1 && a1 < b1),
				      "events %zu and %zu partly overlap on tid %u", i, k, x[i].tid);
		}
	}
	ck_assert_uint_eq(totals, 5);
	ck_assert_uint_eq(maxtid, 3);
	ck_assert_ptr_nonnull(strstr(out, "\"tid\":2,\"args\":{\"name\":\"orders (lane 2)\"}"));
	ck_assert_ptr_nonnull(strstr(out, "\"tid\":3,\"args\":{\"name\":\"orders (lane 3)\"}"));
	free(out);
	scratch_remove();
}
END_TEST

static Suite *ctl_capture_suite(void)
{
	Suite *s = suite_create("ctl_capture");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_replay);
	tcase_add_test(tc, test_replay_settings);
	tcase_add_test(tc, test_dump_and_export);
	tcase_add_test(tc, test_export_lanes);
	tcase_add_test(tc, test_shared_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(ctl_capture_suite());
}
