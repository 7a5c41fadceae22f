/*
 * promgen.c - write a Prometheus exposition from synthetic events, through
 * the real pairing, name cache, lifetime report and prom_out code, for the
 * shell tests that hand it to promtool and node_exporter.
 *
 *   promgen OUT.prom
 *
 * The events (rate fixed at 1 GHz, so one tick is one nanosecond):
 *   point 1 "alpha" (exported as "alpha#1": point 4 has that name too),
 *   steps 1 ("alpha.s1") and 2 (unnamed): 1000 spans,
 *     begin -> 1 takes 100 + i % 50 ns, 1 -> 2 takes 1000 ns, 2 -> end
 *     takes 1000 + i ns;
 *   point 2 'quote " back \ comma, space ü 日本': 500 spans of 2000 ns;
 *   point 3 "depth": 1000 value samples, 1 .. 100 ten times (sum 50500);
 *   point 4 "alpha" again: 10 spans of 50 ns (exported as "alpha#4");
 *   point 5 "orphans": 7 ends with no begin (orphan counter only);
 * and collector counters drained = events fed, dropped 3, stalled 2,
 * misordered 4,
 * instance "promgen", flush at 1700000000.25 s, interval 1 s.
 */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "pairing.h"
#include "conf.h"
#include "prom_out.h"
#include "report.h"

#define MAX_NAMES 16

static struct pairing *P;
static uint64_t fed;

static void ev(uint32_t point, uint8_t step, uint64_t ts, uint32_t seq)
{
	struct perfmon_event e = { .tsc = ts, .point = point, .event = PERFMON_EVENT(step, seq) };

	pairing_feed(P, &e, 1);
	fed++;
}

static void name(struct perfmon_name_entry *tab, unsigned *n, uint32_t point, uint8_t step,
		 const char *label)
{
	tab[*n].key = PERFMON_NAME_KEY(point, step);
	snprintf(tab[*n].label, sizeof(tab[*n].label), "%s", label);
	(*n)++;
}

int main(int argc, char **argv)
{
	static struct perfmon_meta_header meta;
	static struct perfmon_name_entry tab[MAX_NAMES];
	struct pairing_config pc = { .max_open_spans = 64, .max_stages = 64 };
	struct report_settings rs = { .unit = REPORT_UNIT_NS, .npct = 4,
				      .pct = { 50, 90, 99, 99.9 } };
	struct conf_buckets b = { .n = 27 };
	struct report_collector coll = { 3, 2 };
	struct pairing_interval iv;
	struct name_cache names;
	struct report life;
	struct prom_out *po;
	struct prom_snapshot s;
	unsigned n = 0;
	uint64_t t = 1000;
	char err[1024];

	if (argc != 2) {
		fprintf(stderr, "usage: promgen OUT.prom\n");
		return 64;
	}
	name(tab, &n, 1, 0, "alpha");
	name(tab, &n, 1, 1, "alpha.s1");
	name(tab, &n, 2, 0, "quote \" back \\ comma, space \xc3\xbc \xe6\x97\xa5\xe6\x9c\xac");
	name(tab, &n, 3, 0, "depth");
	name(tab, &n, 4, 0, "alpha");
	name(tab, &n, 5, 0, "orphans");
	meta.name_generation = n;
	if (name_cache_init(&names, MAX_NAMES) < 0 || !(P = pairing_new(&pc)) ||
	    report_init(&life, P) < 0 || !(po = prom_out_new())) {
		fprintf(stderr, "promgen: out of memory\n");
		return 1;
	}
	name_cache_refresh(&names, &meta, tab, MAX_NAMES);

	for (uint32_t i = 0; i < 1000; i++, t += 10000) {
		ev(1, PERFMON_BEGIN_STEP, t, i + 1);
		ev(1, 1, t + 100 + i % 50, i + 1);
		ev(1, 2, t + 1100 + i % 50, i + 1);
		ev(1, PERFMON_END_STEP, t + 2100 + i % 50 + i, i + 1);
	}
	for (uint32_t i = 0; i < 500; i++, t += 10000) {
		ev(2, PERFMON_BEGIN_STEP, t, i + 1);
		ev(2, PERFMON_END_STEP, t + 2000, i + 1);
	}
	for (uint32_t i = 0; i < 1000; i++)
		ev(3, PERFMON_VALUE_STEP, i % 100 + 1, 0);
	for (uint32_t i = 0; i < 10; i++, t += 10000) {
		ev(4, PERFMON_BEGIN_STEP, t, i + 1);
		ev(4, PERFMON_END_STEP, t + 50, i + 1);
	}
	for (uint32_t i = 0; i < 7; i++)
		ev(5, PERFMON_END_STEP, t + i, 100 + i);

	for (unsigned i = 0; i < b.n; i++)
		b.le_ns[i] = UINT64_C(16) << i;
	if (!pairing_flip(P, t) || !pairing_collect(P, &iv)) {
		fprintf(stderr, "promgen: no interval to collect\n");
		return 1;
	}
	report_build_lifetime(&life, P, &iv, &names, &rs, 1e9, &coll);
	s = (struct prom_snapshot){
		.instance = "promgen",
		.lifetime = &life,
		.quantiles = rs.pct,
		.nquantiles = rs.npct,
		.le_ns = b.le_ns,
		.nle = b.n,
		.slots = pairing_bounds(P),
		.tsc_hz = 1e9,
		.tsc_invariant = true,
		.tsc_clock = true,
		.drained = fed,
		.dropped = coll.dropped,
		.stalled = coll.stalled,
		.misordered = 4,
		.flush_interval_ns = 1000000000u,
		.flush_realtime_ns = UINT64_C(1700000000250000000),
	};
	if (prom_out_write(po, argv[1], &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "promgen: %s\n", err);
		return 1;
	}
	pairing_release(P);
	prom_out_free(po);
	report_free(&life);
	name_cache_free(&names);
	pairing_free(P);
	return 0;
}
