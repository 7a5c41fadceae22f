/*
 * check_prom_out.c - tests for the Prometheus exposition writer
 * (src/prom_out.c), fed by the real pairing engine, name cache and lifetime
 * report: the families (HELP and TYPE once each, series grouped, perfmond_instance
 * on every series, the flush time last), bucket counts against an
 * independent count of the samples (cumulative, never over a bound, +Inf
 * equal to the count), _sum and quantiles in seconds, exact le and
 * quantile labels, label escaping (quote, backslash, newline, bad UTF-8,
 * comma/space/UTF-8 kept), unique label sets when published names collide,
 * value rows, anomaly and collector counters, the conversion rate fixed at
 * the first write, the C locale under a comma-decimal one, and the atomic
 * write (mode, no temporary left, symlink replaced, a concurrent reader
 * never sees a partial file, failures named).  promtool and node_exporter
 * are driven by tests/prom_*.sh.
 */
#include "build-config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_main.h"
#include "hist.h"
#include "names.h"
#include "pairing.h"
#include "conf.h"
#include "prom_out.h"
#include "report.h"
#include "scratch.h"

#define MAX_NAMES 64
#define FLUSH_NS UINT64_C(1700000000123456789)
/* "ünïcödé 日本" */
#define UNICODE_LABEL "\xc3\xbc" "n" "\xc3\xaf" "c" "\xc3\xb6" "d" "\xc3\xa9" \
	" \xe6\x97\xa5\xe6\x9c\xac"

/* ---- fixture: pairing -> name cache -> lifetime report -> snapshot ---- */

static struct fx {
	struct pairing *p;
	struct perfmon_meta_header meta;
	struct perfmon_name_entry tab[MAX_NAMES];
	unsigned ntab;
	struct name_cache names;
	struct report life;
	struct report_settings rs;
	struct conf_buckets b;
	struct prom_out *po;
	struct prom_snapshot s;
	struct pairing_interval iv;
	uint64_t fed, now;
	bool held;
} F;

static void fx_start_with(uint32_t max_stages)
{
	struct pairing_config pc = { .max_open_spans = 64, .max_stages = max_stages };

	memset(&F, 0, sizeof(F));
	F.p = pairing_new(&pc);
	ck_assert_ptr_nonnull(F.p);
	ck_assert_int_eq(name_cache_init(&F.names, MAX_NAMES), 0);
	ck_assert_int_eq(report_init(&F.life, F.p), 0);
	F.po = prom_out_new();
	ck_assert_ptr_nonnull(F.po);
	F.rs.unit = REPORT_UNIT_NS;
	F.rs.npct = 2;
	F.rs.pct[0] = 50;
	F.rs.pct[1] = 99;
	F.b.n = 27;
	for (unsigned i = 0; i < F.b.n; i++)
		F.b.le_ns[i] = UINT64_C(16) << i;
	F.now = 1;
}

static void fx_start(void)
{
	fx_start_with(64);
}

static void fx_stop(void)
{
	if (F.held)
		pairing_release(F.p);
	prom_out_free(F.po);
	report_free(&F.life);
	name_cache_free(&F.names);
	pairing_free(F.p);
	memset(&F, 0, sizeof(F));
}

/* Publish a label the way a producer would; the cache sanitises it. */
static void fx_name(uint32_t point, uint8_t step, const char *label)
{
	ck_assert_uint_lt(F.ntab, MAX_NAMES);
	F.tab[F.ntab].key = PERFMON_NAME_KEY(point, step);
	snprintf(F.tab[F.ntab].label, sizeof(F.tab[F.ntab].label), "%s", label);
	F.ntab++;
	F.meta.name_generation++;
}

static void fx_ev(uint32_t point, uint8_t step, uint64_t ts, uint32_t seq)
{
	struct perfmon_event e = { .tsc = ts, .point = point, .event = PERFMON_EVENT(step, seq) };

	pairing_feed(F.p, &e, 1);
	F.fed++;
	if (ts >= F.now)
		F.now = ts + 1;
}

/* One begin -> end span of `lat` ticks. */
static void fx_span(uint32_t point, uint32_t seq, uint64_t lat)
{
	uint64_t t = F.now + 1000;

	fx_ev(point, PERFMON_BEGIN_STEP, t, seq);
	fx_ev(point, PERFMON_END_STEP, t + lat, seq);
}

/* End the interval and build the lifetime report, as the daemon does. */
static void fx_collect(double hz)
{
	struct report_collector coll = { 0, 0 };

	ck_assert(!F.held);
	ck_assert(pairing_flip(F.p, F.now++));
	ck_assert(pairing_collect(F.p, &F.iv));
	F.held = true;
	name_cache_refresh(&F.names, &F.meta, F.tab, MAX_NAMES);
	report_build_lifetime(&F.life, F.p, &F.iv, &F.names, &F.rs, hz, &coll);
	F.s = (struct prom_snapshot){
		.instance = "t",
		.lifetime = &F.life,
		.quantiles = F.rs.pct,
		.nquantiles = F.rs.npct,
		.le_ns = F.b.le_ns,
		.nle = F.b.n,
		.slots = pairing_bounds(F.p),
		.tsc_hz = hz,
		.tsc_invariant = true,
		.tsc_clock = true,
		.drained = F.fed,
		.flush_interval_ns = 1000000000u,
		.flush_realtime_ns = FLUSH_NS,
	};
}

static void fx_release(void)
{
	pairing_release(F.p);
	F.held = false;
}

/* The exposition as a string (free it). */
static char *fx_format(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(prom_out_format(F.po, f, &F.s), 0);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

/* ---- reading the text back ------------------------------------------- */

/* The value of the series written exactly as `series` (name{labels}), or
 * NULL; the returned text lives until the next call. */
static const char *value_of(const char *text, const char *series)
{
	static char v[128];
	size_t n = strlen(series);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, series, n) && l[n] == ' ') {
			const char *e = strchr(l + n + 1, '\n');
			size_t len = e ? (size_t)(e - l - n - 1) : strlen(l + n + 1);

			ck_assert_uint_lt(len, sizeof(v));
			memcpy(v, l + n + 1, len);
			v[len] = '\0';
			return v;
		}
	}
	return NULL;
}

static uint64_t u64_of(const char *text, const char *series)
{
	const char *v = value_of(text, series);

	ck_assert_msg(v != NULL, "no series %s", series);
	return strtoull(v, NULL, 10);
}

static unsigned lines_starting(const char *text, const char *prefix)
{
	unsigned n = 0;
	size_t len = strlen(prefix);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += !strncmp(l, prefix, len);
	return n;
}

/* Series name{labels} of a total row of point `p` of instance "t". */
static const char *lat(const char *suffix, const char *point, const char *stage,
		       const char *extra)
{
	static char buf[4][512];
	static unsigned next;
	char *b = buf[next++ % 4];

	snprintf(b, sizeof(buf[0]),
		 "perfmond_latency_seconds%s{perfmond_instance=\"t\",point=\"%s\",stage=\"%s\","
		 "kind=\"latency\"%s%s}", suffix, point, stage, extra ? "," : "",
		 extra ? extra : "");
	return b;
}

/*
 * Every sample line belongs to the family last declared with TYPE (after
 * its HELP), no family is declared twice, every series carries
 * perfmond_instance="t", no label set repeats, and the file ends with the flush
 * time.
 */
static void check_structure(const char *text)
{
	char family[128] = "", declared[64][128];
	unsigned ndeclared = 0, nlines = 0;
	char **seen = NULL;
	const char *l, *last = NULL;

	for (l = text; *l; l = strchr(l, '\n') + 1) {
		const char *e = strchr(l, '\n');
		char line[1024];

		ck_assert_msg(e != NULL, "last line not terminated");
		ck_assert_uint_lt((size_t)(e - l), sizeof(line));
		memcpy(line, l, (size_t)(e - l));
		line[e - l] = '\0';
		ck_assert_msg(line[0] != '\0', "blank line");
		last = l;
		if (!strncmp(line, "# HELP ", 7)) {
			char name[128];

			ck_assert_int_eq(sscanf(line + 7, "%127s", name), 1);
			for (unsigned i = 0; i < ndeclared; i++)
				ck_assert_msg(strcmp(declared[i], name), "%s declared twice", name);
			ck_assert_uint_lt(ndeclared, 64);
			snprintf(declared[ndeclared++], sizeof(declared[0]), "%s", name);
			snprintf(family, sizeof(family), "%s", name);
			l = e + 1;
			ck_assert_msg(!strncmp(l, "# TYPE ", 7) && !strncmp(l + 7, name, strlen(name)),
				      "HELP %s not followed by its TYPE", name);
			continue;
		}
		if (line[0] == '#')
			continue;
		{
			size_t fl = strlen(family);
			const char *rest = line + fl;
			char *key;

			ck_assert_msg(fl && !strncmp(line, family, fl) &&
				      (rest[0] == '{' || !strncmp(rest, "_bucket{", 8) ||
				       !strncmp(rest, "_sum{", 5) || !strncmp(rest, "_count{", 7)),
				      "%s outside its family (%s)", line, family);
			ck_assert_msg(strstr(line, "{perfmond_instance=\"t\""), "no instance: %s", line);
			key = strndup(line, (size_t)(strrchr(line, ' ') - line));
			for (unsigned i = 0; i < nlines; i++)
				ck_assert_msg(strcmp(seen[i], key), "repeated series %s", key);
			seen = realloc(seen, (nlines + 1) * sizeof(*seen));
			seen[nlines++] = key;
		}
	}
	ck_assert_ptr_nonnull(last);
	ck_assert_msg(!strncmp(last, "perfmond_last_flush_timestamp_seconds{", 38),
		      "file does not end with the flush time");
	for (unsigned i = 0; i < nlines; i++)
		free(seen[i]);
	free(seen);
}

/* ---- tests ------------------------------------------------------------ */

START_TEST(test_families)
{
	static const char *const fams[][2] = {
		{ "perfmond_latency_seconds", "histogram" },
		{ "perfmond_latency_quantile_seconds", "summary" },
		{ "perfmond_value", "summary" },
		{ "perfmond_spans_abandoned_total", "counter" },
		{ "perfmond_spans_orphan_total", "counter" },
		{ "perfmond_spans_invalid_total", "counter" },
		{ "perfmond_samples_out_of_range_total", "counter" },
		{ "perfmond_events_drained_total", "counter" },
		{ "perfmond_events_dropped_total", "counter" },
		{ "perfmond_slots_stalled_total", "counter" },
		{ "perfmond_events_misordered_total", "counter" },
		{ "perfmond_tsc_frequency_hertz", "gauge" },
		{ "perfmond_tsc_invariant", "gauge" },
		{ "perfmond_flush_interval_seconds", "gauge" },
		{ "perfmond_last_flush_timestamp_seconds", "gauge" },
	};
	char *text;

	fx_start();
	fx_name(1, 0, "alpha");
	fx_name(1, 1, "decode");
	for (uint32_t i = 1; i <= 50; i++) {
		fx_ev(1, PERFMON_BEGIN_STEP, F.now + 10, i);
		fx_ev(1, 1, F.now + 100, i);
		fx_ev(1, PERFMON_END_STEP, F.now + 300, i);
		fx_ev(2, PERFMON_VALUE_STEP, i, 0);
	}
	fx_collect(1e9);
	text = fx_format();
	check_structure(text);
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		char want[200];

		snprintf(want, sizeof(want), "# TYPE %s %s\n", fams[i][0], fams[i][1]);
		ck_assert_msg(strstr(text, want), "missing: %s", want);
	}
	ck_assert_ptr_nonnull(value_of(text, lat("_count", "alpha", "decode", NULL)));
	ck_assert_ptr_nonnull(value_of(text, lat("_count", "alpha", "step_1->255", NULL)));
	ck_assert_uint_eq(u64_of(text, lat("_count", "alpha", "total", NULL)), 50);
	/* Three latency rows: 27 bounds + +Inf each. */
	ck_assert_uint_eq(lines_starting(text, "perfmond_latency_seconds_bucket{"), 3 * 28);
	free(text);
	fx_stop();
}
END_TEST

/* Samples 1..2000 ticks (one each): the exported count at every bound
 * against a per-sample count with the documented rule. */
static void check_buckets(double hz)
{
	static const uint64_t bounds_ns[] = { 1, 16, 100, 1000, 1024, 1500, 1999, 2000000 };
	char *text, le[64];
	uint64_t prev = 0;

	fx_start();
	for (uint32_t i = 1; i <= 2000; i++)
		fx_span(1, i, i);
	F.b.n = sizeof(bounds_ns) / sizeof(bounds_ns[0]);
	memcpy(F.b.le_ns, bounds_ns, sizeof(bounds_ns));
	fx_collect(hz);
	text = fx_format();
	check_structure(text);
	for (unsigned k = 0; k < F.b.n; k++) {
		uint64_t le_ticks = (uint64_t)((double)bounds_ns[k] * hz / 1e9);
		uint64_t want = 0, at_most = 0, got;

		for (uint64_t v = 1; v <= 2000; v++) {
			unsigned idx = hist_index(v);

			want += hist_lower(idx) + hist_width(idx) - 1 <= le_ticks;
			at_most += v <= le_ticks;
		}
		snprintf(le, sizeof(le), "le=\"%s\"",
			 (const char *[]){ "0.000000001", "0.000000016", "0.0000001", "0.000001",
					   "0.000001024", "0.0000015", "0.000001999",
					   "0.002" }[k]);
		got = u64_of(text, lat("_bucket", "point_1", "total", le));
		ck_assert_msg(got == want, "hz %g le %s: %llu, want %llu", hz, le,
			      (unsigned long long)got, (unsigned long long)want);
		/* Never counts a sample above the bound; misses at most the one
		 * histogram bucket the bound falls in (1/16 of it). */
		ck_assert_uint_le(got, at_most);
		ck_assert_uint_ge(got + at_most / 16 + 1, at_most);
		ck_assert_uint_ge(got, prev);
		prev = got;
	}
	ck_assert_uint_eq(u64_of(text, lat("_bucket", "point_1", "total", "le=\"+Inf\"")), 2000);
	ck_assert_uint_eq(u64_of(text, lat("_count", "point_1", "total", NULL)), 2000);
	free(text);
	fx_stop();
}

START_TEST(test_buckets_unit_rate)
{
	char *text;

	check_buckets(1e9);
	/* Below 32 ticks every value has its own bucket: exact. */
	fx_start();
	for (uint32_t i = 1; i <= 31; i++)
		fx_span(1, i, i);
	F.b.n = 1;
	F.b.le_ns[0] = 16;
	fx_collect(1e9);
	text = fx_format();
	ck_assert_uint_eq(u64_of(text, lat("_bucket", "point_1", "total",
					   "le=\"0.000000016\"")), 16);
	free(text);
	fx_stop();
}
END_TEST

START_TEST(test_buckets_other_rates)
{
	check_buckets(2.5e9);
	check_buckets(0.75e9);
}
END_TEST

START_TEST(test_sum_and_quantiles_in_seconds)
{
	char *text;

	fx_start();
	for (uint32_t i = 1; i <= 10; i++)
		fx_span(1, i, 1000);
	fx_span(1, 11, 3000);
	fx_collect(2e9);
	text = fx_format();
	/* 13000 ticks at 2 GHz */
	ck_assert_str_eq(value_of(text, lat("_sum", "point_1", "total", NULL)), "6.5e-06");
	ck_assert_str_eq(value_of(text, "perfmond_latency_quantile_seconds_sum{perfmond_instance=\"t\","
				  "point=\"point_1\",stage=\"total\",kind=\"latency\"}"), "6.5e-06");
	ck_assert_str_eq(value_of(text, "perfmond_latency_quantile_seconds_count{perfmond_instance=\"t\","
				  "point=\"point_1\",stage=\"total\",kind=\"latency\"}"), "11");
	/* Quantiles are the lifetime percentiles (the summary file's), in
	 * seconds: p50 the histogram's figure for 1000 ticks, p99 the largest
	 * sample (rank 11 of 11). */
	{
		struct pairing_row r;

		ck_assert(pairing_find_row(F.p, PAIRING_TOTAL, 1, 0, 0, &r));
		ck_assert_double_eq(strtod(value_of(text,
			"perfmond_latency_quantile_seconds{perfmond_instance=\"t\",point=\"point_1\","
			"stage=\"total\",kind=\"latency\",quantile=\"0.5\"}"), NULL),
			(double)accum_percentile(r.lifetime, 50) / 2e9);
		ck_assert_str_eq(value_of(text,
			"perfmond_latency_quantile_seconds{perfmond_instance=\"t\",point=\"point_1\","
			"stage=\"total\",kind=\"latency\",quantile=\"0.99\"}"), "1.5e-06");
	}
	free(text);
	fx_stop();
}
END_TEST

START_TEST(test_quantile_and_le_labels)
{
	static const double pct[] = { 0, 0.1, 12.5, 50, 90, 99, 99.9, 99.99, 100 };
	static const char *const q[] = { "0", "0.001", "0.125", "0.5", "0.9", "0.99", "0.999",
					 "0.9999", "1" };
	static const uint64_t le_ns[] = { 1, 16, 1000, 1073741824, 1500000000,
					  UINT64_C(86400000000000) };
	static const char *const le[] = { "0.000000001", "0.000000016", "0.000001",
					  "1.073741824", "1.5", "86400" };
	char *text, want[256];

	fx_start();
	fx_span(1, 1, 100);
	fx_ev(2, PERFMON_VALUE_STEP, 7, 0);
	F.rs.npct = sizeof(pct) / sizeof(pct[0]);
	memcpy(F.rs.pct, pct, sizeof(pct));
	F.b.n = sizeof(le_ns) / sizeof(le_ns[0]);
	memcpy(F.b.le_ns, le_ns, sizeof(le_ns));
	fx_collect(1e9);
	text = fx_format();
	check_structure(text);
	for (unsigned i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		snprintf(want, sizeof(want), ",kind=\"latency\",quantile=\"%s\"} ", q[i]);
		ck_assert_msg(strstr(text, want), "missing %s", want);
		snprintf(want, sizeof(want), ",kind=\"value\",quantile=\"%s\"} 7\n", q[i]);
		ck_assert_msg(strstr(text, want), "missing %s", want);
	}
	for (unsigned i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
		snprintf(want, sizeof(want), ",le=\"%s\"} ", le[i]);
		ck_assert_msg(strstr(text, want), "missing %s", want);
	}
	ck_assert_uint_eq(lines_starting(text, "perfmond_latency_quantile_seconds{"), 9);
	free(text);
	fx_stop();
}
END_TEST

START_TEST(test_label_escaping)
{
	char *text;

	fx_start();
	fx_name(1, 0, "a\"b\\c");
	fx_name(1, 1, "say \"hi\"");
	fx_name(2, 0, "comma, and space");
	fx_name(3, 0, UNICODE_LABEL);
	fx_ev(1, PERFMON_BEGIN_STEP, 10, 1);
	fx_ev(1, 1, 20, 1);
	fx_ev(1, PERFMON_END_STEP, 30, 1);
	fx_span(2, 1, 5);
	fx_span(3, 1, 5);
	fx_span(4, 1, 5);
	fx_span(5, 1, 5);
	fx_collect(1e9);
	/* Bytes the name cache would never let through, put straight into the
	 * report, still come out as valid exposition text. */
	snprintf(F.life.rows[F.life.nrows - 2].point, REPORT_LABEL_SIZE, "two\nlines");
	snprintf(F.life.rows[F.life.nrows - 1].point, REPORT_LABEL_SIZE, "bad \xff\xc3( \xe2\x82");
	text = fx_format();
	check_structure(text);
	ck_assert_ptr_nonnull(value_of(text, lat("_count", "a\\\"b\\\\c", "say \\\"hi\\\"", NULL)));
	ck_assert_ptr_nonnull(value_of(text, lat("_count", "comma, and space", "total", NULL)));
	ck_assert_ptr_nonnull(value_of(text, lat("_count", UNICODE_LABEL, "total", NULL)));
	ck_assert_ptr_nonnull(value_of(text, lat("_count", "two\\nlines", "total", NULL)));
	ck_assert_ptr_nonnull(value_of(text, lat("_count", "bad ?" "?( ?" "?", "total", NULL)));
	ck_assert_ptr_nonnull(value_of(text, "perfmond_spans_orphan_total{perfmond_instance=\"t\","
				       "point=\"a\\\"b\\\\c\"}"));
	free(text);
	fx_stop();
}
END_TEST

START_TEST(test_label_collisions)
{
	char *text;

	fx_start();
	fx_name(1, 0, "dup");
	fx_name(2, 0, "dup");
	fx_name(3, 0, "point_4");      /* point 4, unnamed, owns that label */
	fx_name(5, 0, "p5");
	fx_name(5, 2, "s2");           /* 1->2 and 0->2 both end at s2: the report */
	fx_name(6, 0, "z#8");          /* tells them apart; looks told apart */
	fx_name(7, 0, "z");
	fx_name(8, 0, "z");            /* shared: "z#7" and "z#8" */
	fx_name(9, 0, "p9");
	fx_name(9, 2, "step_0->1");    /* 1->2 named like the generated 0->1 */
	for (uint32_t p = 1; p <= 8; p++)
		if (p != 5)
			fx_span(p, 1, 10 * p);
	fx_ev(5, PERFMON_BEGIN_STEP, 1000, 1);
	fx_ev(5, 1, 1002, 1);
	fx_ev(5, 2, 1005, 1);
	fx_ev(5, PERFMON_END_STEP, 1009, 1);
	fx_ev(5, PERFMON_BEGIN_STEP, 2000, 2);
	fx_ev(5, 2, 2007, 2);
	fx_ev(5, PERFMON_END_STEP, 2008, 2);
	fx_ev(9, PERFMON_BEGIN_STEP, 3000, 1);
	fx_ev(9, 1, 3011, 1);
	fx_ev(9, 2, 3024, 1);
	fx_ev(9, PERFMON_END_STEP, 3030, 1);
	fx_collect(1e9);
	text = fx_format();
	check_structure(text);
	/* Shared labels: every point that shows one says which it is. */
	ck_assert_str_eq(value_of(text, lat("_sum", "dup#1", "total", NULL)), "1e-08");
	ck_assert_str_eq(value_of(text, lat("_sum", "dup#2", "total", NULL)), "2e-08");
	ck_assert_ptr_null(value_of(text, lat("_sum", "dup", "total", NULL)));
	ck_assert_str_eq(value_of(text, lat("_sum", "point_4", "total", NULL)), "4e-08");
	ck_assert_str_eq(value_of(text, lat("_sum", "point_4#3", "total", NULL)), "3e-08");
	ck_assert_str_eq(value_of(text, lat("_sum", "p5", "s2", NULL)), "3e-09");
	ck_assert_str_eq(value_of(text, lat("_sum", "p5", "s2 (step_0->2)", NULL)), "7e-09");
	ck_assert_str_eq(value_of(text, lat("_sum", "p9", "step_0->1", NULL)), "1.1e-08");
	ck_assert_str_eq(value_of(text, lat("_sum", "p9", "step_0->1#1->2", NULL)), "1.3e-08");
	ck_assert_str_eq(value_of(text, lat("_sum", "z#8#6", "total", NULL)), "6e-08");
	ck_assert_str_eq(value_of(text, lat("_sum", "z#7", "total", NULL)), "7e-08");
	ck_assert_str_eq(value_of(text, lat("_sum", "z#8", "total", NULL)), "8e-08");
	ck_assert_ptr_null(value_of(text, lat("_sum", "z", "total", NULL)));
	ck_assert_ptr_null(strstr(text, "# perfmond: left out point"));
	free(text);
	fx_stop();
}
END_TEST

/* Spans and value samples both overflowing: one series per counter for
 * the overflow point, the two rows' counts added. */
START_TEST(test_both_overflow_rows_one_series)
{
	char *text;
	const char *key = "perfmond_samples_out_of_range_total{perfmond_instance=\"t\","
			  "point=\"overflow\"}";

	fx_start_with(1);
	fx_ev(1, PERFMON_VALUE_STEP, 5, 0);   /* takes the one row */
	fx_ev(2, PERFMON_VALUE_STEP, 6, 0);   /* value overflow */
	fx_ev(3, PERFMON_BEGIN_STEP, 10, 1);
	fx_ev(3, PERFMON_END_STEP, 20, 1);    /* span overflow */
	fx_collect(1e9);
	text = fx_format();
	check_structure(text);
	ck_assert_str_eq(value_of(text, key), "2");
	ck_assert_ptr_null(strstr(strstr(text, key) + 1, key));   /* once */
	free(text);
	fx_stop();
}
END_TEST

START_TEST(test_overflow_keeps_its_label)
{
	char *text;

	fx_start_with(2);
	fx_name(1, 0, "overflow");
	fx_ev(1, PERFMON_VALUE_STEP, 5, 0);
	fx_ev(2, PERFMON_VALUE_STEP, 6, 0);
	fx_ev(3, PERFMON_VALUE_STEP, 7, 0);   /* no room: out of range, overflow row */
	fx_collect(1e9);
	text = fx_format();
	check_structure(text);
	ck_assert_str_eq(value_of(text, "perfmond_samples_out_of_range_total{perfmond_instance=\"t\","
				  "point=\"overflow\"}"), "1");
	ck_assert_str_eq(value_of(text, "perfmond_value_count{perfmond_instance=\"t\",point=\"overflow#1\","
				  "stage=\"value\",kind=\"value\"}"), "1");
	/* The overflow row has no samples of its own: counters only. */
	ck_assert_ptr_null(strstr(text, "point=\"overflow\",stage"));
	free(text);
	fx_stop();
}
END_TEST

START_TEST(test_values)
{
	char *text;
	const char *v;

	fx_start();
	fx_name(1, 0, "depth");
	fx_name(2, 0, "huge");
	for (uint64_t i = 1; i <= 100; i++)
		fx_ev(1, PERFMON_VALUE_STEP, i, 0);
	fx_ev(2, PERFMON_VALUE_STEP, UINT64_C(1) << 63, 0);
	fx_ev(2, PERFMON_VALUE_STEP, UINT64_C(1) << 63, 0);
	fx_ev(3, PERFMON_VALUE_STEP, (UINT64_C(1) << 53) + 1, 0);
	fx_collect(1e9);
	text = fx_format();
	check_structure(text);
	v = "perfmond_value{perfmond_instance=\"t\",point=\"depth\",stage=\"value\",kind=\"value\","
	    "quantile=\"0.5\"}";
	ck_assert_str_eq(value_of(text, v), "51");   /* rank 50: bucket [50, 52) */
	ck_assert_str_eq(value_of(text, "perfmond_value_sum{perfmond_instance=\"t\",point=\"depth\","
				  "stage=\"value\",kind=\"value\"}"), "5050");
	ck_assert_str_eq(value_of(text, "perfmond_value_count{perfmond_instance=\"t\",point=\"depth\","
				  "stage=\"value\",kind=\"value\"}"), "100");
	/* Exact past 64 bits too: 2 * 2^63, every digit. */
	ck_assert_str_eq(value_of(text, "perfmond_value_sum{perfmond_instance=\"t\",point=\"huge\","
				  "stage=\"value\",kind=\"value\"}"), "18446744073709551616");
	ck_assert_str_eq(value_of(text, "perfmond_value_sum{perfmond_instance=\"t\",point=\"point_3\","
				  "stage=\"value\",kind=\"value\"}"), "9007199254740993");
	/* Values have no histogram, no latency series, no anomaly row. */
	ck_assert_ptr_null(strstr(text, "perfmond_latency"));
	ck_assert_ptr_null(strstr(text, "perfmond_spans_"));
	free(text);
	fx_stop();
}
END_TEST

START_TEST(test_anomalies)
{
	char *text;

	fx_start();
	fx_name(1, 0, "a");
	fx_name(2, 0, "orphans");
	fx_ev(1, PERFMON_BEGIN_STEP, 100, 1);
	fx_ev(1, PERFMON_BEGIN_STEP, 110, 1);     /* abandons the first */
	fx_ev(1, PERFMON_END_STEP, 120, 1);
	fx_ev(1, PERFMON_BEGIN_STEP, 200, 2);
	fx_ev(1, PERFMON_END_STEP, 150, 2);       /* backwards: invalid */
	fx_ev(2, PERFMON_END_STEP, 300, 9);       /* orphans only */
	fx_ev(2, 3, 301, 9);
	fx_collect(1e9);
	text = fx_format();
	check_structure(text);
	ck_assert_str_eq(value_of(text, "perfmond_spans_abandoned_total{perfmond_instance=\"t\",point=\"a\"}"),
			 "1");
	ck_assert_str_eq(value_of(text, "perfmond_spans_invalid_total{perfmond_instance=\"t\",point=\"a\"}"),
			 "1");
	ck_assert_str_eq(value_of(text, "perfmond_spans_orphan_total{perfmond_instance=\"t\",point=\"a\"}"),
			 "0");
	ck_assert_str_eq(value_of(text, "perfmond_spans_orphan_total{perfmond_instance=\"t\","
				  "point=\"orphans\"}"), "2");
	ck_assert_str_eq(value_of(text, lat("_count", "a", "total", NULL)), "1");
	/* A point with anomalies only: zero counts, quantiles NaN. */
	ck_assert_str_eq(value_of(text, lat("_count", "orphans", "total", NULL)), "0");
	ck_assert_str_eq(value_of(text, lat("_bucket", "orphans", "total", "le=\"+Inf\"")), "0");
	ck_assert_str_eq(value_of(text, "perfmond_latency_quantile_seconds{perfmond_instance=\"t\","
				  "point=\"orphans\",stage=\"total\",kind=\"latency\","
				  "quantile=\"0.5\"}"), "NaN");
	free(text);
	fx_stop();
}
END_TEST

START_TEST(test_collector_and_clock)
{
	static const struct {
		bool invariant, tsc;
		const char *want;
	} clocks[] = { { true, true, "1" }, { false, true, "0" }, { false, false, "1" } };
	char *text;

	fx_start();
	fx_span(1, 1, 10);
	fx_collect(2.9e9);
	F.s.drained = 123456789012;
	F.s.dropped = 17;
	F.s.stalled = 3;
	F.s.misordered = 5;
	F.s.flush_interval_ns = 250000000;
	for (unsigned i = 0; i < 3; i++) {
		F.s.tsc_invariant = clocks[i].invariant;
		F.s.tsc_clock = clocks[i].tsc;
		text = fx_format();
		check_structure(text);
		ck_assert_str_eq(value_of(text, "perfmond_tsc_invariant{perfmond_instance=\"t\"}"),
				 clocks[i].want);
		ck_assert_str_eq(value_of(text, "perfmond_events_drained_total{perfmond_instance=\"t\"}"),
				 "123456789012");
		ck_assert_str_eq(value_of(text, "perfmond_events_dropped_total{perfmond_instance=\"t\"}"),
				 "17");
		ck_assert_str_eq(value_of(text, "perfmond_slots_stalled_total{perfmond_instance=\"t\"}"),
				 "3");
		ck_assert_str_eq(value_of(text, "perfmond_events_misordered_total"
					  "{perfmond_instance=\"t\"}"), "5");
		ck_assert_str_eq(value_of(text, "perfmond_tsc_frequency_hertz{perfmond_instance=\"t\"}"),
				 "2.9e+09");
		ck_assert_str_eq(value_of(text, "perfmond_flush_interval_seconds{perfmond_instance=\"t\"}"),
				 "0.25");
		ck_assert_str_eq(value_of(text, "perfmond_last_flush_timestamp_seconds"
					  "{perfmond_instance=\"t\"}"), "1700000000.123456789");
		free(text);
	}
	fx_stop();
}
END_TEST

/* Every bucket count of the latency rows, in file order. */
static unsigned bucket_counts(const char *text, uint64_t *ret, unsigned cap)
{
	const char *l = text;
	unsigned k = 0;

	while ((l = strstr(l, "perfmond_latency_seconds_bucket{")) && k < cap) {
		const char *e = strchr(l, '\n');
		const char *sp = e;

		while (sp > l && sp[-1] != ' ')
			sp--;
		ret[k++] = strtoull(sp, NULL, 10);
		l = e;
	}
	return k;
}

START_TEST(test_rate_fixed_and_counts_monotonic)
{
	uint64_t before[28], after[28];
	char *text;

	fx_start();
	for (uint32_t i = 1; i <= 500; i++)
		fx_span(1, i, 10 * i);
	fx_collect(1e9);
	text = fx_format();
	ck_assert_str_eq(value_of(text, lat("_sum", "point_1", "total", NULL)), "0.0012525");
	ck_assert_uint_eq(bucket_counts(text, before, 28), 28);
	free(text);
	fx_release();

	/* A refined estimate 0.1 % higher: the export keeps the first rate,
	 * so no bucket count moves down and _sum only grows. */
	fx_span(1, 1000, 10);
	fx_collect(1.001e9);
	text = fx_format();
	ck_assert_double_eq(prom_out_rate(F.po), 1e9);
	ck_assert_str_eq(value_of(text, lat("_sum", "point_1", "total", NULL)),
			 "0.00125251");
	ck_assert_str_eq(value_of(text, "perfmond_tsc_frequency_hertz{perfmond_instance=\"t\"}"),
			 "1.001e+09");
	ck_assert_uint_eq(bucket_counts(text, after, 28), 28);
	for (unsigned k = 0; k < 28; k++) {
		ck_assert_uint_ge(after[k], before[k]);
		ck_assert_uint_le(after[k], before[k] + 1);
	}
	ck_assert_uint_eq(after[27], 501);
	free(text);
	fx_stop();
}
END_TEST

START_TEST(test_errors_in_format)
{
	struct report other;
	struct pairing_config pc = { .max_open_spans = 8, .max_stages = 8 };
	struct pairing *p2;
	struct pairing_interval iv;
	struct report_collector coll = { 0, 0 };
	FILE *f = fopen("/dev/null", "w");

	ck_assert_ptr_nonnull(f);
	fx_start();
	fx_span(1, 1, 10);
	fx_collect(0);
	/* No rate known yet. */
	ck_assert_int_eq(prom_out_format(F.po, f, &F.s), -EINVAL);
	ck_assert_double_eq(prom_out_rate(F.po), 0);
	F.s.tsc_hz = 1e9;
	ck_assert_int_eq(prom_out_format(F.po, f, &F.s), 0);
	/* Each row carries the engine row it came from: a report of another
	 * engine exports that engine's histogram, not this one's. */
	p2 = pairing_new(&pc);
	ck_assert_ptr_nonnull(p2);
	ck_assert_int_eq(report_init(&other, p2), 0);
	{
		struct perfmon_event e[2] = {
			{ .tsc = 5, .point = 9, .event = PERFMON_EVENT(PERFMON_BEGIN_STEP, 1) },
			{ .tsc = 9, .point = 9, .event = PERFMON_EVENT(PERFMON_END_STEP, 1) },
		};
		pairing_feed(p2, e, 2);
	}
	ck_assert(pairing_flip(p2, 100));
	ck_assert(pairing_collect(p2, &iv));
	report_build_lifetime(&other, p2, &iv, NULL, &F.rs, 1e9, &coll);
	F.s.lifetime = &other;
	F.s.slots = pairing_bounds(p2);
	{
		char *text = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&text, &len);

		ck_assert_ptr_nonnull(mf);
		ck_assert_int_eq(prom_out_format(F.po, mf, &F.s), 0);
		fclose(mf);
		ck_assert_ptr_nonnull(strstr(text, "perfmond_latency_seconds_count{"));
		ck_assert_ptr_nonnull(strstr(text, "point=\"point_9\""));
		ck_assert_ptr_null(strstr(text, "point=\"point_1\""));
		free(text);
	}
	pairing_release(p2);
	report_free(&other);
	pairing_free(p2);
	fclose(f);
	fx_stop();
}
END_TEST

START_TEST(test_comma_locale)
{
	char *text, probe[16];

	ck_assert_msg(scratch_comma_locale(), "no comma-decimal locale could be set up");
	snprintf(probe, sizeof(probe), "%.1f", 0.5);
	ck_assert_str_eq(probe, "0,5");
	fx_start();
	for (uint32_t i = 1; i <= 10; i++)
		fx_span(1, i, 1000);
	F.rs.pct[1] = 99.9;
	fx_collect(2e9);
	F.s.flush_interval_ns = 1500000000;
	text = fx_format();
	setlocale(LC_NUMERIC, "C");
	check_structure(text);
	ck_assert_str_eq(value_of(text, lat("_sum", "point_1", "total", NULL)), "5e-06");
	ck_assert_ptr_nonnull(strstr(text, "quantile=\"0.999\"} "));
	ck_assert_str_eq(value_of(text, "perfmond_flush_interval_seconds{perfmond_instance=\"t\"}"), "1.5");
	ck_assert_ptr_null(strstr(text, "0,"));
	free(text);
	fx_stop();
}
END_TEST

/* ---- the atomic write ---------------------------------------------------- */

static void setup_scratch(void)
{
	scratch_create("check_prom_out");
}

static unsigned dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

START_TEST(test_write_atomic)
{
	char err[512], *text, *file;
	struct stat st;
	mode_t old;

	ck_assert_int_eq(mkdir(scratch_path("tf"), 0755), 0);
	fx_start();
	fx_span(1, 1, 10);
	fx_collect(1e9);
	old = umask(077);
	ck_assert_int_eq(prom_out_write(F.po, scratch_path("tf/perfmond.prom"), &F.s, err,
					sizeof(err)), 0);
	umask(old);
	ck_assert_int_eq(stat(scratch_path("tf/perfmond.prom"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, PROM_OUT_FILE_MODE);
	ck_assert_uint_eq(dir_entries(scratch_path("tf")), 1);
	text = fx_format();
	file = scratch_slurp(scratch_path("tf/perfmond.prom"), NULL);
	ck_assert_str_eq(file, text);
	free(file);
	free(text);

	/* A symlink at the path is replaced, its target left alone. */
	{
		FILE *f = fopen(scratch_path("target"), "w");
		ck_assert_ptr_nonnull(f);
		fputs("untouched\n", f);
		fclose(f);
	}
	ck_assert_int_eq(symlink(scratch_path("target"), scratch_path("tf/link.prom")), 0);
	ck_assert_int_eq(prom_out_write(F.po, scratch_path("tf/link.prom"), &F.s, err,
					sizeof(err)), 0);
	ck_assert_int_eq(lstat(scratch_path("tf/link.prom"), &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	file = scratch_slurp(scratch_path("target"), NULL);
	ck_assert_str_eq(file, "untouched\n");
	free(file);
	ck_assert_uint_eq(dir_entries(scratch_path("tf")), 2);
	fx_stop();
}
END_TEST

START_TEST(test_write_failures)
{
	char err[512];
	int e;

	fx_start();
	fx_span(1, 1, 10);
	fx_collect(1e9);
	e = prom_out_write(F.po, scratch_path("missing/perfmond.prom"), &F.s, err, sizeof(err));
	ck_assert_int_eq(e, -ENOENT);
	ck_assert_msg(strstr(err, scratch_path("missing/perfmond.prom")), "err: %s", err);
	{
		FILE *f = fopen(scratch_path("plain"), "w");
		ck_assert_ptr_nonnull(f);
		fclose(f);
	}
	ck_assert_int_eq(prom_out_write(F.po, scratch_path("plain/x.prom"), &F.s, err, sizeof(err)),
			 -ENOTDIR);
	ck_assert_int_eq(prom_out_write(F.po, scratch_path("dir/"), &F.s, err, sizeof(err)),
			 -EISDIR);
	ck_assert_int_eq(mkdir(scratch_path("empty"), 0755), 0);
	F.s.tsc_hz = 0;
	prom_out_free(F.po);
	F.po = prom_out_new();
	e = prom_out_write(F.po, scratch_path("empty/x.prom"), &F.s, err, sizeof(err));
	ck_assert_int_eq(e, -EINVAL);
	ck_assert_msg(strstr(err, "TSC rate"), "err: %s", err);
	ck_assert_uint_eq(dir_entries(scratch_path("empty")), 0);   /* temporary removed */
	fx_stop();
}
END_TEST

/* Whether `text` is a whole exposition. */
static bool complete(const char *text, size_t n)
{
	const char *last;

	if (n < 2 || strncmp(text, "# HELP ", 7) || text[n - 1] != '\n')
		return false;
	for (last = text + n - 2; last > text && last[-1] != '\n'; last--)
		;
	return !strncmp(last, "perfmond_last_flush_timestamp_seconds{", 38);
}

START_TEST(test_concurrent_reader)
{
	static char buf[1 << 20];
	struct conf_buckets one = { .n = 1, .le_ns = { 1000 } };
	int stop[2], status;
	char err[512];
	pid_t pid;

	fx_start();
	for (uint32_t p = 1; p <= 40; p++)
		fx_span(p, 1, 100 + p);
	fx_collect(1e9);
	ck_assert_int_eq(prom_out_write(F.po, scratch_path("live.prom"), &F.s, err,
					sizeof(err)), 0);
	ck_assert_int_eq(pipe(stop), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* Reader: read whole files until the writer closes the pipe,
		 * then once more; exit 1 on a partial file, 2 if it read none. */
		unsigned long reads = 0;
		char c;

		close(stop[1]);
		fcntl(stop[0], F_SETFL, O_NONBLOCK);
		for (;;) {
			bool last = read(stop[0], &c, 1) == 0;
			int fd = open(scratch_path("live.prom"), O_RDONLY);
			size_t n = 0;
			ssize_t r;

			if (fd < 0)
				_exit(3);
			while ((r = read(fd, buf + n, sizeof(buf) - n)) > 0)
				n += (size_t)r;
			close(fd);
			if (!complete(buf, n))
				_exit(1);
			reads++;
			if (last)
				_exit(reads > 1 ? 0 : 2);
		}
	}
	close(stop[0]);
	/* Alternate a large and a small file, so a torn read could not look
	 * whole by accident. */
	for (int i = 0; i < 400; i++) {
		F.s.le_ns = i % 2 ? one.le_ns : F.b.le_ns;
		F.s.nle = i % 2 ? one.n : F.b.n;
		ck_assert_int_eq(prom_out_write(F.po, scratch_path("live.prom"), &F.s, err,
					sizeof(err)), 0);
	}
	close(stop[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "reader saw a partial file (status %d)", status);
	ck_assert_uint_eq(dir_entries(scratch_dir()), 1);
	fx_stop();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prom_out");
	TCase *tc = tcase_create("format");
	TCase *tw = tcase_create("write");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_families);
	tcase_add_test(tc, test_buckets_unit_rate);
	tcase_add_test(tc, test_buckets_other_rates);
	tcase_add_test(tc, test_sum_and_quantiles_in_seconds);
	tcase_add_test(tc, test_quantile_and_le_labels);
	tcase_add_test(tc, test_label_escaping);
	tcase_add_test(tc, test_label_collisions);
	tcase_add_test(tc, test_overflow_keeps_its_label);
	tcase_add_test(tc, test_both_overflow_rows_one_series);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_anomalies);
	tcase_add_test(tc, test_collector_and_clock);
	tcase_add_test(tc, test_rate_fixed_and_counts_monotonic);
	tcase_add_test(tc, test_errors_in_format);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tw, setup_scratch, scratch_remove);
	tcase_set_timeout(tw, 30);
	tcase_add_test(tw, test_comma_locale);
	tcase_add_test(tw, test_write_atomic);
	tcase_add_test(tw, test_write_failures);
	tcase_add_test(tw, test_concurrent_reader);
	suite_add_tcase(s, tw);

	return check_run(s);
}
