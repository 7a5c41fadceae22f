/*
 * bench_engine.c - what the pairing engine costs the drain thread.
 *
 * Data flow: drain -> [pairing -> statistics] -> report.  Measures, in TSC
 * ticks read directly (rdtsc after lfence to start, rdtscp then lfence to
 * stop), min and median over repetitions:
 *   - pair + accumulate per event, begin/step/step/end spans with 256 (and
 *     1) in flight on 16 points, streamed from a 64 MB event array, larger
 *     than the last-level cache; and beside the 256, the same 256 spans
 *     taking turns (each event of span k is followed by one of span k + 1):
 *     the same tables, rows and cache footprint, but an event type the
 *     branch predictor can follow, so the difference is what guessing the
 *     type wrong costs at random; and the turns shuffled each round (every
 *     span once, in a new random order), whose tables are visited as much
 *     at random as the first row's while the type stays predictable: if
 *     it costs what the plain turns do, the order of the spans is not
 *     where the difference comes from; and the 256 at random into a table
 *     of 128 open spans, where every begin finds it full and evicts the
 *     least recently touched span;
 *   - the same with `[output] outliers = 8` against 0, measured in
 *     alternating pairs so both see the same machine;
 *   - value events, from an equally large array;
 *   - the same span streams through the drain's whole path: published
 *     into 2 (and 64) per-CPU sub-rings of a private ring, each event to a
 *     sub-ring at random (so a span's events are spread over CPUs), then
 *     ring_drain (time-ordered merge) + pair + accumulate, per event; the
 *     drain and merge alone; and both again from a single sub-ring, where
 *     nothing needs merging, so the difference is what the merge costs
 *     (for the one-span-at-a-time stream too, so each case has its
 *     control in the same run); and the whole path less the drain alone,
 *     which is what pairing with the merge costs beside the ring read;
 *   - the age sweep per open span, 1k/4k/16k spans all expired;
 *   - a begin at a full open-span table (evicting the least recently
 *     touched span), 1k/4k/16k;
 *   - the drain thread's pause in pairing_flip with 32/256/1024 live rows,
 *     and beside it what the reporter thread then spends collecting and
 *     releasing (off the drain thread);
 *   - resident memory of an engine at default settings.
 * `bench_engine drain` runs the pairing and drain-path rows alone,
 * `bench_engine merge` the drain and merge without pairing.
 * Built by `make bench`, never run by `make check`.
 */
#include "build-config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <perfmon/stamp.h>

#include "conf.h"
#include "pairing.h"
#include "prom_out.h"
#include "ring_reader.h"
#include "tsc.h"

#define REPS 15
#define STREAM_BYTES (64u << 20)
#define STREAM_EVENTS (STREAM_BYTES / sizeof(struct perfmon_event))

static uint64_t rng_state = 1;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static inline uint64_t ticks_start(void)
{
	_mm_lfence();
	return __rdtsc();
}

static inline uint64_t ticks_stop(void)
{
	unsigned aux;
	uint64_t t = __rdtscp(&aux);

	_mm_lfence();
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct result {
	double min, median;
};

static struct result summarise(double *v, unsigned n)
{
	struct result r;

	qsort(v, n, sizeof(*v), cmp_double);
	r.min = v[0];
	r.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return r;
}

static void row(const char *what, const char *param, struct result r, const char *unit)
{
	printf("%-44s %10s %10.1f %10.1f  %s\n", what, param, r.min, r.median, unit);
}

static struct pairing *engine_outliers(uint32_t max_open, uint32_t max_stages, uint64_t stall,
				       uint32_t outliers)
{
	/* The default Prometheus buckets at 1 tick per ns: latency rows count
	 * the samples at or below each bound exactly, as the daemon does. */
	static struct conf_buckets cb;
	static struct prom_bounds pb;
	struct pairing_config cfg = {
		.max_open_spans = max_open,
		.max_stages = max_stages,
		.stall_ticks = stall,
		.bounds_ticks = pb.le_ticks,
		.outliers = outliers,
	};
	struct pairing *p;

	conf_default_buckets(&cb);
	prom_bounds_init(&pb, cb.le_ns, cb.n, 1e9);
	cfg.nbounds = pb.n;
	p = pairing_new(&cfg);

	if (!p) {
		perror("pairing_new");
		exit(1);
	}
	return p;
}

static struct pairing *engine(uint32_t max_open, uint32_t max_stages, uint64_t stall)
{
	return engine_outliers(max_open, max_stages, stall, 0);
}

/* The reporter's side of a flush, done inline between measurements. */
static void drain_interval(struct pairing *p, uint64_t now)
{
	struct pairing_interval iv;

	if (pairing_flip(p, now)) {
		pairing_collect(p, &iv);
		pairing_release(p);
	}
}

/* The order in which a span stream's events visit its spans. */
enum span_order {
	AT_RANDOM,      /* each event's span picked at random */
	IN_TURN,        /* spans 0, 1, ... live - 1, 0, ... */
	SHUFFLED_TURNS, /* every span once a round, in a new random order each round */
};

/* begin, step 1, step 2, end for `live` (at most 256) concurrent (point,
 * seq) keys, visited in `order`.  The few spans left open at the end of
 * one pass are re-begun by the next. */
static struct perfmon_event *make_span_stream(size_t n, unsigned live, enum span_order order)
{
	static const uint8_t steps[4] = { PERFMON_BEGIN_STEP, 1, 2, PERFMON_END_STEP };
	struct perfmon_event *ev = malloc(n * sizeof(*ev));
	uint8_t state[256] = { 0 };
	unsigned turn[256];
	uint64_t ts = 1000;

	if (!ev)
		return NULL;
	for (unsigned k = 0; k < live; k++)
		turn[k] = k;
	for (size_t i = 0; i < n; i++) {
		unsigned k = order == AT_RANDOM ? (unsigned)(rng_next() % live) : turn[i % live];

		/* A new order (Fisher-Yates) once this round's last span is picked. */
		for (unsigned a = live - 1; order == SHUFFLED_TURNS && i % live == live - 1 && a > 0;
		     a--) {
			unsigned b = (unsigned)(rng_next() % (a + 1)), t = turn[a];

			turn[a] = turn[b];
			turn[b] = t;
		}
		ts += 1 + rng_next() % 200;
		ev[i].tsc = ts;
		ev[i].point = k % 16;
		ev[i].event = PERFMON_EVENT(steps[state[k]], k + 1);
		state[k] = (uint8_t)((state[k] + 1) % 4);
	}
	return ev;
}

static struct perfmon_event *make_value_stream(size_t n)
{
	struct perfmon_event *ev = malloc(n * sizeof(*ev));
	size_t i;

	if (!ev)
		return NULL;
	for (i = 0; i < n; i++) {
		uint64_t r = rng_next();

		ev[i].tsc = (r >> 20) % 100000;
		ev[i].point = 100 + (uint32_t)(r % 16);
		ev[i].event = PERFMON_EVENT(PERFMON_VALUE_STEP, 0);
	}
	return ev;
}

/* A stream paired and accumulated by an engine of `max_open` open spans. */
static void bench_stream_in(const char *what, const char *param, struct perfmon_event *ev,
			    size_t n, uint32_t max_open)
{
	struct pairing *p = engine(max_open, 1024, 0);
	double v[REPS];
	unsigned r;

	pairing_feed(p, ev, n);   /* warm the rows; the array is evicted again below */
	drain_interval(p, 1);
	const size_t chunk = 65536;
	size_t nc = 0;
	double *cv = malloc(((n + chunk - 1) / chunk) * REPS * sizeof(*cv));

	if (!cv)
		return;
	for (r = 0; r < REPS; r++) {
		uint64_t t0 = ticks_start();

		pairing_feed(p, ev, n);
		v[r] = (double)(ticks_stop() - t0) / (double)n;
		drain_interval(p, r + 2);
	}
	row(what, param, summarise(v, REPS), "ticks/event");
	/* The same fed in 64Ki-event chunks, each timed: on a loaded
	 * machine some chunks run undisturbed, so their minimum is usable. */
	for (r = 0; r < REPS; r++) {
		for (size_t off = 0; off < n; off += chunk) {
			size_t m = n - off < chunk ? n - off : chunk;
			uint64_t t0 = ticks_start();
			pairing_feed(p, ev + off, m);
			cv[nc++] = (double)(ticks_stop() - t0) / (double)m;
		}
		drain_interval(p, r + 2);
	}
	row("  per 64Ki-event chunk", param, summarise(cv, (unsigned)nc), "ticks/event");
	free(cv);
	pairing_free(p);
}

static void bench_stream(const char *what, const char *param, struct perfmon_event *ev,
			 size_t n)
{
	bench_stream_in(what, param, ev, n, 4096);
}

/* Pairing with the slowest-spans sets on (8) and off.  The machine's
 * load drifts, so the two engines are measured in pairs, in alternating
 * order (off/on, on/off, ...), and besides each engine's own min and
 * median the median of the per-pair ratios is printed: drift slower than
 * a pair cancels out of it. */
#define OUTLIER_PAIRS 31

static double feed_ticks(struct pairing *p, struct perfmon_event *ev, size_t n, unsigned r)
{
	uint64_t t0 = ticks_start();
	double v;

	pairing_feed(p, ev, n);
	v = (double)(ticks_stop() - t0) / (double)n;
	drain_interval(p, r + 2);
	return v;
}

static void bench_outliers(struct perfmon_event *ev, size_t n)
{
	struct pairing *off = engine_outliers(4096, 1024, 0, 0);
	struct pairing *on = engine_outliers(4096, 1024, 0, 8);
	double v0[OUTLIER_PAIRS], v8[OUTLIER_PAIRS], ratio[OUTLIER_PAIRS];
	struct result r0, r8, rr;
	unsigned r;

	pairing_feed(off, ev, n);
	pairing_feed(on, ev, n);
	drain_interval(off, 1);
	drain_interval(on, 1);
	for (r = 0; r < OUTLIER_PAIRS; r++) {
		if (r % 2) {
			v8[r] = feed_ticks(on, ev, n, r);
			v0[r] = feed_ticks(off, ev, n, r);
		} else {
			v0[r] = feed_ticks(off, ev, n, r);
			v8[r] = feed_ticks(on, ev, n, r);
		}
		ratio[r] = 100.0 * (v8[r] / v0[r] - 1);
	}
	r0 = summarise(v0, OUTLIER_PAIRS);
	r8 = summarise(v8, OUTLIER_PAIRS);
	rr = summarise(ratio, OUTLIER_PAIRS);
	row("pair+accumulate, outliers = 0", "256 live", r0, "ticks/event");
	row("pair+accumulate, outliers = 8", "256 live", r8, "ticks/event");
	printf("%-44s %10s %9.1f%% %9.1f%%  min / median\n", "outliers = 8 vs 0", "",
	       100.0 * (r8.min / r0.min - 1), 100.0 * (r8.median / r0.median - 1));
	row("outliers = 8 vs 0, per alternating pair", "31 pairs", rr, "% more (min, median)");
	pairing_free(off);
	pairing_free(on);
}

/*
 * The drain's path with the merge in it: chunks of the stream published
 * into `nsub` sub-rings (untimed), then drained, merged and paired (timed).
 * With `pair` false, the drain and merge alone.  Returns the per-chunk
 * figures.
 */
static struct result bench_merge(const char *what, const char *param, struct perfmon_event *ev,
			size_t n, uint32_t nsub, bool pair)
{
	const uint64_t cap = UINT64_C(1) << 16;
	const size_t chunk = (size_t)cap;
	size_t bytes = (PERFMON_RING_BYTES(nsub, cap) + 4095) & ~(size_t)4095;
	struct perfmon_ring_header *hdr = aligned_alloc(4096, bytes);
	struct pairing *p = engine(4096, 1024, 0);
	struct ring_reader rd;
	struct ring_batch b;
	double v[REPS];
	size_t nchunks = (n + chunk - 1) / chunk, nc = 0;
	double *cv = malloc(nchunks * REPS * sizeof(*cv));
	struct result chunks = { 0, 0 };

	if (!hdr || !p || !cv)
		return chunks;
	memset(hdr, 0, bytes);
	hdr->capacity = cap;
	hdr->subrings = nsub;
	if (ring_reader_init(&rd, hdr, nsub, cap, NULL, 0, UINT64_MAX / 2) < 0)
		return chunks;
	for (unsigned r = 0; r < REPS + 1; r++) {
		uint64_t ticks = 0;
		for (size_t off = 0; off < n; off += chunk) {
			size_t m = n - off < chunk ? n - off : chunk;
			uint64_t t0;
			for (size_t i = 0; i < m; i++)
				perfmon__publish_to(hdr, cap, nsub, (uint32_t)(rng_next() % nsub),
						    ev[off + i].tsc, ev[off + i].point,
						    ev[off + i].event);
			t0 = ticks_start();
			ring_drain(&rd, 1, ev[off + m - 1].tsc + 1, &b);
			if (pair) {
				pairing_feed(p, b.values, b.nvalues);
				pairing_feed(p, b.spans, b.nspans);
			}
			t0 = ticks_stop() - t0;
			ticks += t0;
			if (r)
				cv[nc++] = (double)t0 / (double)m;
		}
		if (r)   /* the first pass warms the ring and the rows */
			v[r - 1] = (double)ticks / (double)n;
		drain_interval(p, r + 2);
	}
	row(what, param, summarise(v, REPS), "ticks/event");
	chunks = summarise(cv, (unsigned)nc);
	row("  per 64Ki-event chunk", param, chunks, "ticks/event");
	free(cv);
	ring_reader_free(&rd);
	pairing_free(p);
	free(hdr);
	return chunks;
}

/* a - b, minimum from minima and median from medians: a cost that two
 * cases of one run differ by. */
static struct result minus(struct result a, struct result b)
{
	return (struct result){ a.min - b.min, a.median - b.median };
}

static void bench_sweep(uint32_t nspans)
{
	struct pairing *p = engine(nspans, 1024, 1000);
	struct perfmon_event *ev = malloc(nspans * sizeof(*ev));
	double v[REPS];
	char param[32];
	unsigned r, i;

	for (r = 0; r < REPS; r++) {
		for (i = 0; i < nspans; i++) {
			ev[i].tsc = 10 + i;
			ev[i].point = i % 64;
			ev[i].event = PERFMON_EVENT(PERFMON_BEGIN_STEP, i);
		}
		pairing_feed(p, ev, nspans);
		{
			uint64_t t0 = ticks_start();
			size_t swept = pairing_sweep(p, UINT64_C(1) << 40);

			v[r] = (double)(ticks_stop() - t0) / (double)nspans;
			if (swept != nspans) {
				fprintf(stderr, "sweep: %zu of %u\n", swept, nspans);
				exit(1);
			}
		}
		drain_interval(p, r + 1);
	}
	snprintf(param, sizeof(param), "%u", nspans);
	row("age sweep, all expired", param, summarise(v, REPS), "ticks/span");
	pairing_free(p);
	free(ev);
}

static void bench_evict(uint32_t nspans)
{
	enum { BEGINS = 65536 };
	struct pairing *p = engine(nspans, 1024, 0);
	struct perfmon_event *ev = malloc(BEGINS * sizeof(*ev));
	uint64_t ts = 1;
	double v[REPS];
	char param[32];
	unsigned r, i;

	/* Fill the table, then every begin of a new key evicts. */
	for (i = 0; i < nspans; i++) {
		struct perfmon_event e = { ts++, i % 64, PERFMON_EVENT(PERFMON_BEGIN_STEP, i) };

		pairing_feed(p, &e, 1);
	}
	for (r = 0; r < REPS; r++) {
		for (i = 0; i < BEGINS; i++) {
			uint64_t k = rng_next();

			ev[i].tsc = ts++;
			ev[i].point = (uint32_t)(k % 64);
			ev[i].event = PERFMON_EVENT(PERFMON_BEGIN_STEP, (uint32_t)(k >> 32));
		}
		{
			uint64_t t0 = ticks_start();

			pairing_feed(p, ev, BEGINS);
			v[r] = (double)(ticks_stop() - t0) / BEGINS;
		}
		if (pairing_open_spans(p) != nspans)
			exit(1);
		drain_interval(p, r + 1);
	}
	snprintf(param, sizeof(param), "%u", nspans);
	row("begin at a full table (evicts oldest)", param, summarise(v, REPS), "ticks/begin");
	pairing_free(p);
	free(ev);
}

/* nrows live rows: nrows / 4 points, each with 0->1, 1->2, 2->end, total;
 * stages last 20..2000 ticks. */
static void feed_rows(struct pairing *p, uint32_t nrows, uint64_t *ts)
{
	uint32_t pt;
	unsigned k;

	for (pt = 0; pt < nrows / 4; pt++) {
		static const uint8_t steps[4] = { PERFMON_BEGIN_STEP, 1, 2, PERFMON_END_STEP };

		for (k = 0; k < 4; k++) {
			struct perfmon_event e = { *ts, pt, PERFMON_EVENT(steps[k], 1) };

			*ts += 20 + rng_next() % 1980;
			pairing_feed(p, &e, 1);
		}
	}
}

static void bench_flip(uint32_t nrows, double hz)
{
	enum { FLIPS = 101 };
	struct pairing *p = engine(4096, 1024, 0);
	double pause[FLIPS], report[FLIPS];
	struct pairing_interval iv;
	uint64_t ts = 1;
	char param[32];
	unsigned r;
	struct result res;

	for (r = 0; r < FLIPS; r++) {
		uint64_t t0, t1;
		bool ok;

		feed_rows(p, nrows, &ts);
		t0 = ticks_start();
		ok = pairing_flip(p, ts);
		pause[r] = (double)(ticks_stop() - t0);
		if (!ok)
			exit(1);
		t1 = ticks_start();
		pairing_collect(p, &iv);
		pairing_release(p);
		report[r] = (double)(ticks_stop() - t1);
		if (iv.nstages != nrows)
			exit(1);
	}
	snprintf(param, sizeof(param), "%u rows", nrows);
	res = summarise(pause, FLIPS);
	row("flush: drain-thread pause (pairing_flip)", param, res, "ticks");
	if (hz > 0)
		printf("%-44s %10s %10.3f %10.3f  us\n", "", "", res.min * 1e6 / hz,
		       res.median * 1e6 / hz);
	row("flush: reporter collect+release (off drain)", param, summarise(report, FLIPS),
	    "ticks");
	pairing_free(p);
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, resident = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Resident memory of an engine at default settings, empty and with some
 * or all of its rows in use (stages of 20..2000 ticks). */
static void bench_rss(void)
{
	static const uint32_t used[] = { 0, 256, 1024 };
	unsigned u, i;

	printf("\nresident memory, engine at defaults (max_open_spans 4096, max_stages 1024):\n");
	for (u = 0; u < 3; u++) {
		long before = rss_kb();
		struct pairing *p = engine(4096, 1024, 0);
		uint64_t ts = 1;

		for (i = 0; i < 10 && used[u]; i++) {
			feed_rows(p, used[u], &ts);
			drain_interval(p, ts);
		}
		printf("  %4u rows used over 10 intervals: %6.2f MB\n", used[u],
		       (double)(rss_kb() - before) / 1024);
		pairing_free(p);
	}
}

static void header(double hz)
{
	char model[256] = "unknown", line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");
	time_t now = time(NULL);
	char date[64];

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');

			if (!strncmp(line, "model name", 10) && colon) {
				snprintf(model, sizeof(model), "%s", colon + 2);
				model[strcspn(model, "\n")] = 0;
				break;
			}
		}
		fclose(f);
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
	printf("bench_engine: pairing engine costs on the drain thread\n");
	printf("cpu: %s, nproc: %ld, tsc: %.3f GHz%s, date: %s\n", model,
	       sysconf(_SC_NPROCESSORS_ONLN), hz / 1e9, tsc_invariant() ? " (invariant)" : "",
	       date);
	printf("min and median over %d repetitions (flip: 101), TSC ticks\n\n", REPS);
	printf("%-44s %10s %10s %10s  %s\n", "case", "param", "min", "median", "unit");
}

/*
 * The drain's whole path, `live` spans in flight: with the merge in it
 * (2 and 64 sub-rings), and from one sub-ring (no merge), paired and not.
 * Then what pairing with the merge costs beside reading the ring (which a
 * single ring costs too): the whole path less the drain alone, per chunk.
 */
static void bench_drain_path(struct perfmon_event *spans, const char *live)
{
	struct result path2, path64, alone;

	path2 = bench_merge("drain+merge+pair, 2 sub-rings", live, spans, STREAM_EVENTS, 2, true);
	path64 = bench_merge("drain+merge+pair, 64 sub-rings", live, spans, STREAM_EVENTS, 64,
			     true);
	bench_merge("drain+pair, 1 sub-ring (no merge)", live, spans, STREAM_EVENTS, 1, true);
	bench_merge("drain+merge alone, 2 sub-rings", live, spans, STREAM_EVENTS, 2, false);
	bench_merge("drain+merge alone, 64 sub-rings", live, spans, STREAM_EVENTS, 64, false);
	alone = bench_merge("drain alone, 1 sub-ring (no merge)", live, spans, STREAM_EVENTS, 1,
			    false);
	row("merge+pair, 2 sub-rings, less ring read", live, minus(path2, alone),
	    "ticks/event");
	row("merge+pair, 64 sub-rings, less ring read", live, minus(path64, alone),
	    "ticks/event");
}

int main(int argc, char **argv)
{
	struct tsc_clock clock;
	struct perfmon_event *spans, *in_turn, *values;
	static const uint32_t sizes[] = { 1024, 4096, 16384 };
	static const uint32_t rows[] = { 32, 256, 1024 };
	/* `bench_engine drain`: the pairing and drain-path rows only;
	 * `bench_engine merge`: the drain and merge without pairing */
	bool drain_only = argc > 1 && !strcmp(argv[1], "drain");
	unsigned i;

	tsc_clock_start(&clock, 20);
	header(tsc_clock_hz(&clock));
	if (argc > 1 && !strcmp(argv[1], "merge")) {
		spans = make_span_stream(STREAM_EVENTS, 256, AT_RANDOM);
		if (!spans)
			return 1;
		bench_merge("drain+merge alone, 2 sub-rings", "256 live", spans, STREAM_EVENTS, 2,
			    false);
		bench_merge("drain+merge alone, 4 sub-rings", "256 live", spans, STREAM_EVENTS, 4,
			    false);
		bench_merge("drain+merge alone, 8 sub-rings", "256 live", spans, STREAM_EVENTS, 8,
			    false);
		bench_merge("drain+merge alone, 16 sub-rings", "256 live", spans, STREAM_EVENTS, 16,
			    false);
		bench_merge("drain+merge alone, 64 sub-rings", "256 live", spans, STREAM_EVENTS, 64,
			    false);
		bench_merge("drain alone, 1 sub-ring (no merge)", "256 live", spans, STREAM_EVENTS,
			    1, false);
		free(spans);
		return 0;
	}

	/* The headline figure: 256 spans in flight, interleaved at random,
	 * so the event type is unpredictable; then one span at a time (the
	 * branch-predictable floor). */
	spans = make_span_stream(STREAM_EVENTS, 256, AT_RANDOM);
	if (!spans)
		return 1;
	bench_stream("pair+accumulate, b/1/2/end spans, 64 MB", "256 live", spans, STREAM_EVENTS);
	in_turn = make_span_stream(STREAM_EVENTS, 256, IN_TURN);
	if (!in_turn)
		return 1;
	bench_stream("  the same 256 spans taking turns", "256 live", in_turn, STREAM_EVENTS);
	free(in_turn);
	in_turn = make_span_stream(STREAM_EVENTS, 256, SHUFFLED_TURNS);
	if (!in_turn)
		return 1;
	bench_stream("  taking turns, shuffled each round", "256 live", in_turn, STREAM_EVENTS);
	free(in_turn);
	/* The table full: a begin evicts the least recently touched span
	 * (found from the touch order), most steps and ends are orphans. */
	bench_stream_in("  into a table of 128 open spans", "256 live", spans, STREAM_EVENTS, 128);
	if (!drain_only)
		bench_outliers(spans, STREAM_EVENTS);
	bench_drain_path(spans, "256 live");
	free(spans);
	spans = make_span_stream(STREAM_EVENTS, 1, AT_RANDOM);
	if (!spans)
		return 1;
	bench_stream("pair+accumulate, b/1/2/end spans, 64 MB", "1 live", spans, STREAM_EVENTS);
	bench_drain_path(spans, "1 live");
	free(spans);
	if (drain_only)
		return 0;
	values = make_value_stream(STREAM_EVENTS);
	if (!values)
		return 1;
	bench_stream("value events, 16 points, 64 MB", "16 rows", values, STREAM_EVENTS);
	free(values);

	for (i = 0; i < 3; i++)
		bench_sweep(sizes[i]);
	for (i = 0; i < 3; i++)
		bench_evict(sizes[i]);
	for (i = 0; i < 3; i++)
		bench_flip(rows[i], tsc_clock_hz(&clock));
	bench_rss();
	return 0;
}
