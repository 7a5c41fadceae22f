/*
 * check_ctl_compare_truth.c - `perfmonctl compare` against known truth:
 * synthetic runs of a stage whose latency distribution, run-to-run
 * variation and interval-to-interval noise are known, written as perfmond
 * writes them (percentiles as histogram bucket midpoints), with fixed
 * seeds.  200 A/A pairs per metric give at most 10 false regressions (1
 * in 20), with one run per side and with three; a true 10% p50 shift is
 * caught in every one of 20 pairs either way, and a true +5.7% is reported without bias (within a
 * percentage point, on average).  The detection table at 5, 10 and 20% is
 * printed for the record.  Also the JSON document, the JUnit report and
 * the digits of a note.
 */
#include "build-config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "ctl_compare.h"
#include "ctl_stats.h"
#include "hist.h"

#define INTERVALS 60
#define RUNS 3
#define PAIRS 20            /* A/B pairs per shift, and for the bias */
#define AA_PAIRS 200        /* A/A pairs: enough to tell a rate of 1/20 */
#define NMETRICS 8

static char dir[64];
/* Scales the run-to-run variation of write_run (1: typical). */
static double run_noise_scale = 1;

/* The figures of one interval, in the order of the CSV columns. */
enum { F_MIN, F_MEAN, F_SD, F_P50, F_P90, F_P99, F_P999, F_MAX };
static const char *const metric_names[NMETRICS] = { "min", "mean", "stddev", "p50",
						   "p90", "p99", "p99_9", "max" };
/* Typical shape of a pipeline stage: each figure relative to the p50, its
 * interval-to-interval noise and its run-to-run variation (log scale). */
static const double shape[NMETRICS] = { 0.6, 1.15, 0.45, 1.0, 1.5, 2.6, 4.0, 9.0 };
static const double noise_interval[NMETRICS] = { 0.03, 0.02, 0.08, 0.02, 0.03, 0.08, 0.15, 0.35 };
static const double noise_run[NMETRICS] = { 0.01, 0.012, 0.03, 0.012, 0.015, 0.025, 0.04, 0.08 };

/* What perfmond prints for a percentile at 1 tick per ns: the midpoint
 * of the histogram bucket, clamped to [min, max]. */
static double quantised(double x, double lo, double hi)
{
	uint64_t t = (uint64_t)(x + 0.5);
	unsigned idx = hist_index(t);
	double mid = (double)hist_value(idx);

	return mid < lo ? lo : mid > hi ? hi : mid;
}

static void write_run(const char *path, struct ctl_rng *rng, double p50, double shift)
{
	FILE *f = fopen(path, "w");
	double run[NMETRICS];

	ck_assert_ptr_nonnull(f);
	fprintf(f, "timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
		"out_of_range,min_ns,mean_ns,stddev_ns,p50_ns,p90_ns,p99_ns,p99_9_ns,max_ns,"
		"tsc_hz\n");
	for (unsigned m = 0; m < NMETRICS; m++)
		run[m] = p50 * (1 + shift) * shape[m] *
			 exp(run_noise_scale * noise_run[m] * ctl_rng_normal(rng));
	for (unsigned i = 0; i < INTERVALS; i++) {
		double x[NMETRICS];

		for (unsigned m = 0; m < NMETRICS; m++)
			x[m] = run[m] * exp(noise_interval[m] * ctl_rng_normal(rng));
		x[F_MIN] = floor(x[F_MIN]);
		x[F_MAX] = floor(x[F_MAX]);
		for (unsigned m = F_P50; m <= F_P999; m++)
			x[m] = quantised(x[m], x[F_MIN], x[F_MAX]);
		fprintf(f, "2024-05-01 12:%02u:%02u.000,gw,total,latency,1000,0,0,0,0,0,0,"
			"%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,1000000000\n", (i + 1) / 60,
			(i + 1) % 60, x[F_MIN], x[F_MEAN], x[F_SD], x[F_P50], x[F_P90], x[F_P99],
			x[F_P999], x[F_MAX]);
	}
	ck_assert_int_eq(fclose(f), 0);
}

/* Write `runs` runs per side into files named by `tag`; the comma lists
 * go to base and cur. */
static void write_pair_at(const char *tag, struct ctl_rng *rng, unsigned runs, double p50,
			  double shift, char *base, char *cur, size_t n)
{
	size_t lb = 0, lc = 0;

	base[0] = cur[0] = '\0';
	for (unsigned k = 0; k < runs; k++) {
		char pb[128], pc[128];

		snprintf(pb, sizeof(pb), "%s/%s-a%u.csv", dir, tag, k);
		snprintf(pc, sizeof(pc), "%s/%s-b%u.csv", dir, tag, k);
		write_run(pb, rng, p50, 0);
		write_run(pc, rng, p50, shift);
		lb += (size_t)snprintf(base + lb, n - lb, "%s%s", k ? "," : "", pb);
		lc += (size_t)snprintf(cur + lc, n - lc, "%s%s", k ? "," : "", pc);
	}
}

static void write_pair(const char *tag, struct ctl_rng *rng, unsigned runs, double shift,
		       char *base, char *cur, size_t n)
{
	write_pair_at(tag, rng, runs, 2000, shift, base, cur, n);
}

static void remove_files(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Regressions flagged among `pairs` pairs for each metric at `shift`. */
static void flagged(unsigned runs, double shift, uint64_t seed, unsigned pairs, unsigned *ret)
{
	struct ctl_rng rng;
	char base[2048], cur[2048], err[1024];

	memset(ret, 0, NMETRICS * sizeof(*ret));
	ctl_rng_seed(&rng, seed);
	for (unsigned p = 0; p < pairs; p++) {
		char tag[32];

		snprintf(tag, sizeof(tag), "r%u-s%.0f-%u", runs, shift * 100, p);
		write_pair(tag, &rng, runs, shift, base, cur, sizeof(base));
		for (unsigned m = 0; m < NMETRICS; m++) {
			struct ctl_compare_opts o;
			struct ctl_compare_result r;

			ctl_compare_defaults(&o);
			o.metric = metric_names[m];
			ck_assert_int_eq(ctl_compare_files(base, cur, &o, &r, err, sizeof(err)), 0);
			ck_assert_uint_eq(r.n, 1);
			ck_assert_uint_eq(r.stages[0].v.kb, runs);
			ret[m] += r.regressions;
			ctl_compare_result_free(&r);
		}
	}
}

static void print_row(const char *what, const unsigned *n)
{
	fprintf(stderr, "# %-22s", what);
	for (unsigned m = 0; m < NMETRICS; m++)
		fprintf(stderr, " %6u", n[m]);
	fprintf(stderr, "\n");
}

START_TEST(test_aa_and_ab)
{
	static const unsigned runs_per_side[] = { 1, RUNS };
	static const double shifts[] = { 0.05, 0.10, 0.20 };

	snprintf(dir, sizeof(dir), "/tmp/ctl-truth-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	fprintf(stderr, "# regressions flagged (defaults), A/A in %u pairs, A/B in %u\n# %-22s",
		AA_PAIRS, PAIRS, "");
	for (unsigned m = 0; m < NMETRICS; m++)
		fprintf(stderr, " %6s", metric_names[m]);
	fprintf(stderr, "\n");
	for (unsigned r = 0; r < 2; r++) {
		unsigned runs = runs_per_side[r], n[NMETRICS];
		char what[64];

		flagged(runs, 0, 100 + runs, AA_PAIRS, n);
		snprintf(what, sizeof(what), "A/A, %u run(s)/side", runs);
		print_row(what, n);
		for (unsigned m = 0; m < NMETRICS; m++)
			ck_assert_msg(n[m] <= AA_PAIRS / 20, "%s: %u false regressions in %u A/A "
				      "pairs, %u run(s)", metric_names[m], n[m], AA_PAIRS, runs);
		for (unsigned s = 0; s < 3; s++) {
			flagged(runs, shifts[s], 200 + runs * 10 + s, PAIRS, n);
			snprintf(what, sizeof(what), "+%.0f%%, %u run(s)/side", shifts[s] * 100, runs);
			print_row(what, n);
			if (shifts[s] >= 0.10)
				ck_assert_msg(n[F_P50] == PAIRS, "p50 +%.0f%% caught %u/%u, %u run(s)",
					      shifts[s] * 100, n[F_P50], PAIRS, runs);
		}
	}
	remove_files();
}
END_TEST

/*
 * No quantisation bias: a true +5.7% p50 shift comes out, averaged over the
 * pairs, within one percentage point of 5.7%, with one run per side and
 * with three.  Bucket midpoints move in steps of 1/32 to 1/16: 2000 ns and
 * 2114 ns print as 2016 and 2112 (+4.8%), 1960 ns and 2072 ns as 1952 and
 * 2112 (+8.2%), 2060 ns and 2177 ns as 2112 and 2240 (+6.1%).  Run-to-run
 * variation would average that out over many pairs, so here it is small,
 * as for one workload measured again and again: the runs of every pair
 * sit at the same place in their buckets.
 */
START_TEST(test_p50_shift_unbiased)
{
	static const unsigned runs_per_side[] = { 1, RUNS };
	static const double at[] = { 2000, 1960, 2060 };
	const double shift = 0.057;

	snprintf(dir, sizeof(dir), "/tmp/ctl-truth-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	run_noise_scale = 0.1;
	for (unsigned a = 0; a < sizeof(at) / sizeof(at[0]); a++) {
		for (unsigned k = 0; k < 2; k++) {
			unsigned runs = runs_per_side[k];
			struct ctl_rng rng;
			char base[2048], cur[2048], err[1024];
			double sum = 0, mean;

			ctl_rng_seed(&rng, 300 + runs + 10 * a);
			for (unsigned p = 0; p < PAIRS; p++) {
				struct ctl_compare_opts o;
				struct ctl_compare_result r;
				char tag[32];

				snprintf(tag, sizeof(tag), "bias-%u-r%u-%u", a, runs, p);
				write_pair_at(tag, &rng, runs, at[a], shift, base, cur, sizeof(base));
				ctl_compare_defaults(&o);
				o.metric = "p50";
				ck_assert_int_eq(ctl_compare_files(base, cur, &o, &r, err, sizeof(err)),
						 0);
				ck_assert_uint_eq(r.n, 1);
				ck_assert(isfinite(r.stages[0].v.rel));
				sum += r.stages[0].v.rel;
				ctl_compare_result_free(&r);
			}
			mean = sum / PAIRS;
			fprintf(stderr, "# p50 %.0f ns +%.1f%%, %u run(s)/side: reported %+.2f%% on "
				"average over %u pairs\n", at[a], 100 * shift, runs, 100 * mean, PAIRS);
			ck_assert_msg(fabs(mean - shift) <= 0.01, "a true +%.1f%% p50 shift at %.0f ns "
				      "is reported as %+.2f%% on average (%u run(s)/side)",
				      100 * shift, at[a], 100 * mean, runs);
		}
	}
	run_noise_scale = 1;
	remove_files();
}
END_TEST

/* Notes are read by scripts too: a TSC rate keeps every digit. */
START_TEST(test_notes_every_digit)
{
	static const char hdr[] = "timestamp,point,stage,kind,count,dropped,invalid,stalled,"
				  "abandoned,orphan,out_of_range,min_cycles,mean_cycles,"
				  "stddev_cycles,p50_cycles,p90_cycles,p99_cycles,p99_9_cycles,"
				  "max_cycles,tsc_hz\n";
	static const char *const hz[2] = { "1067580369", "2445405947" };
	struct ctl_compare_opts o;
	struct ctl_compare_result r;
	char path[2][128], err[1024], *doc = NULL;
	size_t dl = 0;
	bool found = false;
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/ctl-truth-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (unsigned k = 0; k < 2; k++) {
		snprintf(path[k], sizeof(path[k]), "%s/tsc-%u.csv", dir, k);
		f = fopen(path[k], "w");
		ck_assert_ptr_nonnull(f);
		fputs(hdr, f);
		for (unsigned i = 0; i < 10; i++)
			fprintf(f, "2024-05-01 12:00:%02u.000,gw,total,latency,100,0,0,0,0,0,0,"
				"900,1000.0,50.0,1000,1100,1200,1300,1400,%s\n", i + 1, hz[k]);
		ck_assert_int_eq(fclose(f), 0);
	}
	ctl_compare_defaults(&o);
	ck_assert_int_eq(ctl_compare_files(path[0], path[1], &o, &r, err, sizeof(err)), 0);
	for (unsigned i = 0; i < r.nnotes; i++) {
		if (!strstr(r.notes[i], "TSC rates"))
			continue;
		found = true;
		ck_assert_msg(strstr(r.notes[i], "(1067580369 vs 2445405947 Hz)"), "%s", r.notes[i]);
		ck_assert_msg(!strstr(r.notes[i], "e+"), "%s", r.notes[i]);
	}
	ck_assert_msg(found, "no note on the different TSC rates");
	f = open_memstream(&doc, &dl);
	ck_assert_int_eq(ctl_compare_print_json(f, path[0], path[1], &r, &o), 0);
	fclose(f);
	ck_assert_msg(strstr(doc, "1067580369 vs 2445405947 Hz"), "%s", doc);
	free(doc);
	ctl_compare_result_free(&r);
	remove_files();
}
END_TEST

/* One run per side: a tail metric says plainly why it cannot go beyond a
 * warning; several runs: the run-level test is used. */
START_TEST(test_tail_needs_runs_and_outputs)
{
	struct ctl_rng rng;
	struct ctl_compare_opts o;
	struct ctl_compare_result r;
	char base[2048], cur[2048], err[1024], *doc = NULL, *xml = NULL;
	size_t dl = 0, xl = 0;
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/ctl-truth-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ctl_rng_seed(&rng, 5);
	write_pair("one", &rng, 1, 0.5, base, cur, sizeof(base));
	ctl_compare_defaults(&o);
	o.metric = "p99";
	ck_assert_int_eq(ctl_compare_files(base, cur, &o, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.stages[0].v.sev, CTL_SEV_WARNING);
	ck_assert_uint_eq(r.nnotes, 1);
	ck_assert_ptr_nonnull(strstr(r.notes[0], "one run per side cannot support a verdict"));
	ctl_compare_result_free(&r);

	write_pair("three", &rng, 3, 0.5, base, cur, sizeof(base));
	ck_assert_int_eq(ctl_compare_files(base, cur, &o, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.stages[0].v.sev, CTL_SEV_CRITICAL);
	ck_assert(r.stages[0].v.runs_test);
	ck_assert(r.stages[0].v.ci_lo > 0 && r.stages[0].v.ci_lo < r.stages[0].v.ci_hi);
	ck_assert(fabs(r.stages[0].v.rel - 0.5) < 0.1);

	f = open_memstream(&doc, &dl);
	ck_assert_int_eq(ctl_compare_print_json(f, base, cur, &r, &o), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(doc, "\"metric\":\"p99\""));
	ck_assert_ptr_nonnull(strstr(doc, "\"ci_method\":\"welch-runs\""));
	ck_assert_ptr_nonnull(strstr(doc, "\"severity\":\"critical\""));
	ck_assert_ptr_nonnull(strstr(doc, "\"base_runs\":3"));
	ck_assert_ptr_nonnull(strstr(doc, "three-a2.csv\"]"));
	f = open_memstream(&xml, &xl);
	ck_assert_int_eq(ctl_compare_write_junit(f, &r), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(xml, "<testsuite name=\"perfmonctl compare p99\" tests=\"1\" "
				     "failures=\"1\""));
	ck_assert_ptr_nonnull(strstr(xml, "<testcase classname=\"gw\" name=\"total\">"));
	ck_assert_ptr_nonnull(strstr(xml, "<failure type=\"critical\""));
	free(doc);
	free(xml);
	ctl_compare_result_free(&r);
	remove_files();
}
END_TEST

/* Every interval in one bucket on both sides: the bootstrap interval has
 * zero width, and it is explained instead of shown. */
START_TEST(test_degenerate_interval_explained)
{
	double b[20], c[20];
	struct ctl_compare_opts o;
	struct ctl_compare_verdict v;

	for (unsigned i = 0; i < 20; i++) {
		b[i] = 2016;
		c[i] = 2272;
	}
	ctl_compare_defaults(&o);
	ck_assert_int_eq(ctl_compare_samples(b, 20, c, 20, &o, 1, &v), 0);
	ck_assert(v.degenerate);
	ck_assert(isnan(v.ci_lo) && isnan(v.ci_hi));
	ck_assert_ptr_nonnull(strstr(v.note, "no interval of the difference"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ctl_compare_truth");
	TCase *tc = tcase_create("truth");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_aa_and_ab);
	tcase_add_test(tc, test_p50_shift_unbiased);
	tcase_add_test(tc, test_notes_every_digit);
	tcase_add_test(tc, test_tail_needs_runs_and_outputs);
	tcase_add_test(tc, test_degenerate_interval_explained);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(suite());
}
