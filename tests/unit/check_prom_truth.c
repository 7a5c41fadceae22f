/*
 * check_prom_truth.c - the Prometheus histogram against ground truth.
 * Known latency distributions go through the real pairing engine, the
 * lifetime report and the exposition writer with the default buckets;
 * every `le` bucket must hold exactly the samples at or below it, and
 * histogram_quantile(0.99) computed from the file (Prometheus's formula:
 * linear interpolation inside the bucket holding the rank, the lowest
 * bucket starting at 0) must lie within 10% of the exact nearest-rank p99
 * for latencies from 50 ns to 1 s.  The error table is printed for the
 * record.  Also the example that failed before: 1000 spans of 253.5 ns,
 * and the size of the textfile at 100 stages with the default buckets.
 */
#include "build-config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "conf.h"
#include "names.h"
#include "pairing.h"
#include "prom_out.h"
#include "report.h"
#include "testrand.h"

#define NMAX 20000

static struct pm_config cfg;

static void default_buckets(void)
{
	struct pm_cmdline cl;
	struct msgs e;

	memset(&cl, 0, sizeof(cl));
	msgs_init(&e);
	cl.config_path = "/dev/null";
	ck_assert_int_eq(conf_load(&cl, &cfg, &e), 0);
}

struct bucket {
	double le;            /* seconds; INFINITY for +Inf */
	uint64_t count;
};

/* Scrape the exposition of `ticks[0..n)` (one stage, point 1) at `hz`
 * through the default buckets; fills b (cumulative) and returns how
 * many there are. */
static unsigned scrape(const uint64_t *ticks, size_t n, double hz, struct bucket *b,
		       unsigned cap)
{
	struct prom_bounds pb;
	struct pairing_config pc = { .max_open_spans = 64, .max_stages = 16 };
	struct report_settings rs = { .unit = REPORT_UNIT_NS, .npct = 1, .pct = { 99 } };
	struct report_collector coll = { 0, 0 };
	struct pairing_interval iv;
	struct report life;
	struct prom_snapshot s;
	struct pairing *p;
	struct prom_out *po = prom_out_new();
	char *text = NULL, *line;
	size_t len = 0;
	uint64_t now = 1000;
	unsigned nb = 0;
	FILE *f;

	prom_bounds_init(&pb, cfg.buckets.le_ns, cfg.buckets.n, hz);
	pc.bounds_ticks = pb.le_ticks;
	pc.nbounds = pb.n;
	p = pairing_new(&pc);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(po);
	for (size_t i = 0; i < n; i++) {
		struct perfmon_event e[2] = {
			{ .tsc = now, .point = 1, .event = PERFMON_EVENT(PERFMON_BEGIN_STEP, 1) },
			{ .tsc = now + ticks[i], .point = 1,
			  .event = PERFMON_EVENT(PERFMON_END_STEP, 1) },
		};
		pairing_feed(p, e, 2);
		now += ticks[i] + 10;
	}
	ck_assert(pairing_flip(p, now));
	ck_assert(pairing_collect(p, &iv));
	ck_assert_int_eq(report_init(&life, p), 0);
	report_build_lifetime(&life, p, &iv, NULL, &rs, hz, &coll);
	s = (struct prom_snapshot){
		.instance = "t", .lifetime = &life, .quantiles = rs.pct, .nquantiles = 1,
		.le_ns = cfg.buckets.le_ns, .nle = cfg.buckets.n, .counted = &pb,
		.slots = pairing_bounds(p), .tsc_hz = hz,
		.tsc_invariant = true, .tsc_clock = true, .flush_interval_ns = 1000000000u,
	};
	f = open_memstream(&text, &len);
	ck_assert_int_eq(prom_out_format(po, f, &s), 0);
	fclose(f);
	for (line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *le;

		if (strncmp(line, "perfmond_latency_seconds_bucket{", 32) ||
		    !strstr(line, "stage=\"total\"") || !(le = strstr(line, "le=\"")))
			continue;
		ck_assert_uint_lt(nb, cap);
		b[nb].le = !strncmp(le + 4, "+Inf", 4) ? INFINITY : strtod(le + 4, NULL);
		b[nb].count = strtoull(strstr(le, "} ") + 2, NULL, 10);
		nb++;
	}
	free(text);
	pairing_release(p);
	report_free(&life);
	prom_out_free(po);
	pairing_free(p);
	return nb;
}

/* Prometheus's histogram_quantile(q) over cumulative buckets sorted by le. */
static double histogram_quantile(double q, const struct bucket *b, unsigned nb)
{
	double rank = q * (double)b[nb - 1].count, lo = 0, prev = 0;

	for (unsigned i = 0; i < nb; i++) {
		if ((double)b[i].count >= rank) {
			if (isinf(b[i].le))
				return b[nb - 2].le;   /* the highest finite bound */
			if (i == 0 && b[i].le <= 0)
				return b[i].le;
			return lo + (b[i].le - lo) * (rank - prev) / ((double)b[i].count - prev);
		}
		lo = b[i].le;
		prev = (double)b[i].count;
	}
	return NAN;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Every bucket holds exactly the samples whose ticks are at or below its
 * bound in ticks; returns the exact nearest-rank p99 in seconds. */
static double check_exact(uint64_t *ticks, size_t n, double hz, const struct bucket *b,
			  unsigned nb)
{
	struct prom_bounds pb;
	size_t j = 0;

	prom_bounds_init(&pb, cfg.buckets.le_ns, cfg.buckets.n, hz);
	ck_assert_uint_eq(nb, pb.n + 1);
	qsort(ticks, n, sizeof(*ticks), u64_cmp);
	for (unsigned i = 0; i < pb.n; i++) {
		while (j < n && ticks[j] <= pb.le_ticks[i])
			j++;
		ck_assert_msg(b[i].count == j, "le %g: %llu, exactly %zu", b[i].le,
			      (unsigned long long)b[i].count, j);
	}
	ck_assert_uint_eq(b[nb - 1].count, n);
	return (double)ticks[(size_t)ceil(0.99 * (double)n) - 1] / hz;
}

static double normal(void)
{
	return sqrt(-2 * log(1 - rng_unit())) * cos(2 * M_PI * rng_unit());
}

START_TEST(test_quantile_error_default_buckets)
{
	static const char *const shapes[] = { "constant", "lognormal 0.3", "uniform [m,1.5m]",
					      "bimodal 98/2 at 3m" };
	static uint64_t ticks[NMAX], copy[NMAX];
	static struct bucket b[CONF_MAX_BUCKETS + 1];
	const double hz = 2.5e9;
	/* p99 from 50 ns to 1 s, 8 per decade, 1 s itself the last. */
	const unsigned steps = (unsigned)ceil(8 * log10(1.0 / 50e-9));
	double worst = 0;
	bool at_1s[4] = { false };

	rng_seed(88172645463325252ull);
	default_buckets();
	fprintf(stderr, "# histogram_quantile(0.99) relative error, default buckets, %g Hz\n"
		"# %-12s %16s %16s %16s %16s\n", hz, "p99 (about)", shapes[0], shapes[1], shapes[2],
		shapes[3]);
	for (unsigned k = 0; k <= steps; k++) {
		double m = k == steps ? 1.0 : 50e-9 * pow(1.0 / 50e-9, (double)k / steps);

		fprintf(stderr, "# %-12.3g", m);
		for (unsigned sh = 0; sh < 4; sh++) {
			size_t n = 5000;
			double exact, est, err;
			unsigned nb;

			for (size_t i = 0; i < n; i++) {
				double x;
				switch (sh) {
				case 0: x = m; break;
				case 1: x = m * exp(0.3 * normal()) / exp(0.3 * 2.326); break;
				case 2: x = m * (1 + 0.5 * rng_unit()) / 1.495; break;
				default: x = rng_unit() < 0.98 ? m / 3 * (1 + 0.1 * rng_unit()) :
								 m * (1 + 0.1 * rng_unit());
				}
				ticks[i] = (uint64_t)(x * hz);
				if (ticks[i] < 1)
					ticks[i] = 1;
			}
			memcpy(copy, ticks, n * sizeof(*ticks));
			nb = scrape(ticks, n, hz, b, CONF_MAX_BUCKETS + 1);
			exact = check_exact(copy, n, hz, b, nb);
			est = histogram_quantile(0.99, b, nb);
			err = (est - exact) / exact;
			fprintf(stderr, " %+15.2f%%", 100 * err);
			/* every point of the grid (its p99 is m, give or take the
			 * sampling) but one whose exact p99 fell below 50 ns */
			if (exact >= 50e-9) {
				ck_assert_msg(fabs(err) <= 0.10, "%s, p99 %g s: histogram_quantile %g s "
					      "(%+.1f%%)", shapes[sh], exact, est, 100 * err);
				worst = fabs(err) > worst ? fabs(err) : worst;
				at_1s[sh] |= k == steps;
			}
		}
		fprintf(stderr, "\n");
	}
	fprintf(stderr, "# worst |error| %.2f%%\n", 100 * worst);
	/* the grid reached 1 s in every shape */
	for (unsigned sh = 0; sh < 4; sh++)
		ck_assert_msg(at_1s[sh], "%s: p99 of 1 s not checked", shapes[sh]);
}
END_TEST

/* The worst case for interpolation: every sample one tick above a bound,
 * for every default bound from 50 ns to 1 s. */
START_TEST(test_worst_case_just_above_each_bound)
{
	static uint64_t ticks[200], copy[200];
	static struct bucket b[CONF_MAX_BUCKETS + 1];
	const double hz = 1e9;
	double worst = 0;

	default_buckets();
	for (unsigned k = 0; k < cfg.buckets.n; k++) {
		uint64_t le = cfg.buckets.le_ns[k];
		double exact, est;
		unsigned nb;

		if (le < 50 || le >= 1000000000)
			continue;
		for (unsigned i = 0; i < 200; i++)
			ticks[i] = le + 1;
		memcpy(copy, ticks, sizeof(ticks));
		nb = scrape(ticks, 200, hz, b, CONF_MAX_BUCKETS + 1);
		exact = check_exact(copy, 200, hz, b, nb);
		est = histogram_quantile(0.99, b, nb);
		ck_assert_msg(fabs(est - exact) / exact <= 0.10, "just above %llu ns: %g vs %g",
			      (unsigned long long)le, est, exact);
		if (fabs(est - exact) / exact > worst)
			worst = fabs(est - exact) / exact;
	}
	fprintf(stderr, "# worst case (all samples 1 ns above a bound): |error| %.2f%%\n",
		100 * worst);
}
END_TEST

/* 1000 spans of 253.5 ns: every one is at or below 260 ns, none at or
 * below 240 ns, and histogram_quantile(0.99) lands inside (240, 260]. */
START_TEST(test_253_5_ns)
{
	static uint64_t ticks[1000];
	static struct bucket b[CONF_MAX_BUCKETS + 1];
	unsigned nb, i;
	double est;

	default_buckets();
	for (i = 0; i < 1000; i++)
		ticks[i] = 507;          /* at 2 GHz: 253.5 ns */
	nb = scrape(ticks, 1000, 2e9, b, CONF_MAX_BUCKETS + 1);
	check_exact(ticks, 1000, 2e9, b, nb);
	for (i = 0; i < nb && b[i].le < 259e-9; i++)
		;
	ck_assert(fabs(b[i].le - 260e-9) < 1e-15 && b[i].count == 1000);
	ck_assert(fabs(b[i - 1].le - 240e-9) < 1e-15 && b[i - 1].count == 0);
	est = histogram_quantile(0.99, b, nb);
	ck_assert(fabs(est - 253.5e-9) / 253.5e-9 <= 0.10);
}
END_TEST

/* A sample exactly at a bound counts towards it (le is "at or below"),
 * one tick more does not. */
START_TEST(test_sample_at_the_bound)
{
	static uint64_t ticks[2];
	static struct bucket b[CONF_MAX_BUCKETS + 1];
	unsigned nb, i;

	default_buckets();
	ticks[0] = 1000;                 /* at 1 GHz, exactly le = 1us */
	ticks[1] = 1001;
	nb = scrape(ticks, 2, 1e9, b, CONF_MAX_BUCKETS + 1);
	for (i = 0; i < nb && b[i].le < 0.999e-6; i++)
		;
	ck_assert(fabs(b[i].le - 1e-6) < 1e-15);
	ck_assert_uint_eq(b[i].count, 1);
	ck_assert_uint_eq(b[i + 1].count, 2);
}
END_TEST

/* Bounds closer together than a histogram bucket (several in one bucket)
 * are each exact too. */
START_TEST(test_bounds_sharing_a_bucket)
{
	static const uint64_t le_ns[] = { 31, 32, 1000, 1001, 1002, 1010, 1023, 1024, 5000 };
	static uint64_t ticks[2000], copy[2000];
	static struct bucket b[CONF_MAX_BUCKETS + 1];
	unsigned nb;

	default_buckets();
	cfg.buckets.n = sizeof(le_ns) / sizeof(le_ns[0]);
	memcpy(cfg.buckets.le_ns, le_ns, sizeof(le_ns));
	for (unsigned i = 0; i < 2000; i++)
		ticks[i] = 1 + (i * 7919u) % 1100;    /* every value 1..1100, shuffled */
	memcpy(copy, ticks, sizeof(ticks));
	nb = scrape(ticks, 2000, 1e9, b, CONF_MAX_BUCKETS + 1);
	check_exact(copy, 2000, 1e9, b, nb);
}
END_TEST

/*
 * The size of the textfile with the default buckets at 100 stages: 25
 * points of begin -> 2 steps -> end (3 stage rows and total each), labels
 * of about 30 characters as a real pipeline has them, instance "trading",
 * the default percentiles.  The figures perfmond.conf(5) and docs/fleet.md
 * state are printed and checked here: 225 series per stage (217 buckets),
 * about 36 KB per stage, under 3.7 MB in all.
 */
#define SIZE_POINTS 25
#define SIZE_BOUND 3700000   /* bytes: "under 3.7 MB" (3,599,181 when written) */

START_TEST(test_textfile_size_100_stages)
{
	static struct perfmon_meta_header meta;
	static struct perfmon_name_entry tab[4 * SIZE_POINTS];
	static const char *const steps[3] = { "decode_and_validate", "risk_limits_check",
					      "route_to_venue_session" };
	struct prom_bounds pb;
	struct pairing_config pc = { .max_open_spans = 4096, .max_stages = 256 };
	struct report_settings rs = { .unit = REPORT_UNIT_NS, .npct = 4,
				      .pct = { 50, 90, 99, 99.9 } };
	struct report_collector coll = { 0, 0 };
	struct pairing_interval iv;
	struct name_cache names;
	struct report life;
	struct prom_snapshot snap;
	struct pairing *p;
	struct prom_out *po = prom_out_new();
	const double hz = 2.5e9;
	char *text = NULL, *line;
	size_t len = 0;
	unsigned n = 0, stages = 0, series[2] = { 0 }, buckets = 0;
	uint64_t t = 1000;
	FILE *f;

	default_buckets();
	for (uint32_t pt = 1; pt <= SIZE_POINTS; pt++) {
		tab[n].key = PERFMON_NAME_KEY(pt, 0);
		snprintf(tab[n++].label, sizeof(tab[0].label), "order_gateway_venue_%02u_primary",
			 pt);
		for (uint8_t st = 1; st <= 3; st++) {
			tab[n].key = PERFMON_NAME_KEY(pt, st == 3 ? PERFMON_END_STEP : st);
			snprintf(tab[n++].label, sizeof(tab[0].label), "%s_%02u", steps[st - 1], pt);
		}
	}
	meta.name_generation = n;
	ck_assert_int_eq(name_cache_init(&names, 4 * SIZE_POINTS), 0);
	name_cache_refresh(&names, &meta, tab, 4 * SIZE_POINTS);
	prom_bounds_init(&pb, cfg.buckets.le_ns, cfg.buckets.n, hz);
	pc.bounds_ticks = pb.le_ticks;
	pc.nbounds = pb.n;
	p = pairing_new(&pc);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(po);
	/* 2000 spans per point, stages from a few hundred ns to tens of us */
	for (uint32_t i = 0; i < 2000; i++) {
		for (uint32_t pt = 1; pt <= SIZE_POINTS; pt++, t += 100000) {
			uint64_t d1 = 500 + (i * 7919u + pt) % 4000, d2 = 2000 + (i * 104729u) % 60000;
			struct perfmon_event e[4] = {
				{ .tsc = t, .point = pt, .event = PERFMON_EVENT(PERFMON_BEGIN_STEP, i + 1) },
				{ .tsc = t + d1, .point = pt, .event = PERFMON_EVENT(1, i + 1) },
				{ .tsc = t + d1 + d2, .point = pt, .event = PERFMON_EVENT(2, i + 1) },
				{ .tsc = t + 2 * d1 + d2, .point = pt,
				  .event = PERFMON_EVENT(PERFMON_END_STEP, i + 1) },
			};
			pairing_feed(p, e, 4);
		}
	}
	ck_assert(pairing_flip(p, t));
	ck_assert(pairing_collect(p, &iv));
	ck_assert_int_eq(report_init(&life, p), 0);
	report_build_lifetime(&life, p, &iv, &names, &rs, hz, &coll);
	snap = (struct prom_snapshot){
		.instance = "trading", .lifetime = &life, .quantiles = rs.pct,
		.nquantiles = rs.npct, .le_ns = cfg.buckets.le_ns, .nle = cfg.buckets.n,
		.counted = &pb, .slots = pairing_bounds(p), .tsc_hz = hz,
		.tsc_invariant = true, .tsc_clock = true, .drained = 8 * 2000 * SIZE_POINTS,
		.flush_interval_ns = 1000000000u,
		.flush_realtime_ns = UINT64_C(1700000000250000000),
	};
	f = open_memstream(&text, &len);
	ck_assert_int_eq(prom_out_format(po, f, &snap), 0);
	fclose(f);
	/* the stages, and the series of one of them */
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		bool step = strstr(line, "stage=\"risk_limits_check_07\"") != NULL;

		if (!strncmp(line, "perfmond_latency_seconds_count{", 31))
			stages++;
		if (*line == '#' || !strstr(line, "point=\"order_gateway_venue_07_primary\""))
			continue;
		if (step) {
			series[0]++;
			buckets += !strncmp(line, "perfmond_latency_seconds_bucket{", 32);
		}
		series[1] += strstr(line, "stage=\"total\"") != NULL;
	}
	fprintf(stderr, "# textfile, default buckets (%u bounds), %u stages: %zu bytes "
		"(%zu per stage); series per stage %u (%u of them buckets), per total row %u\n",
		cfg.buckets.n, stages, len, len / stages, series[0], buckets, series[1]);
	ck_assert_uint_eq(stages, 4 * SIZE_POINTS);
	ck_assert_uint_eq(buckets, cfg.buckets.n + 1);
	ck_assert_uint_eq(series[0], cfg.buckets.n + 1 + 2 + rs.npct + 2);
	ck_assert_msg(len < SIZE_BOUND, "%zu bytes at %u stages, more than the %u stated", len,
		      stages, SIZE_BOUND);
	free(text);
	pairing_release(p);
	report_free(&life);
	name_cache_free(&names);
	prom_out_free(po);
	pairing_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prom_truth");
	TCase *tc = tcase_create("truth");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_quantile_error_default_buckets);
	tcase_add_test(tc, test_253_5_ns);
	tcase_add_test(tc, test_worst_case_just_above_each_bound);
	tcase_add_test(tc, test_sample_at_the_bound);
	tcase_add_test(tc, test_bounds_sharing_a_bucket);
	tcase_add_test(tc, test_textfile_size_100_stages);
	suite_add_tcase(s, tc);
	return check_run(s);
}
