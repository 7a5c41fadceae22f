/*
 * check_ctl_compare.c - `perfmonctl compare` verdicts on generated runs:
 * a 20% p50 regression is found; 20 seeded pairs drawn from one
 * distribution give no regression; a noisy stage is capped at warning; a
 * stage in one file only is listed; files in another unit, or without the
 * metric, exit 4; output is deterministic; value figures beyond 2^53
 * keep every digit.  Also the statistics under it.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "ctl_cli.h"
#include "ctl_compare.h"
#include "ctl_stats.h"

static char dir[64];
static char path_buf[4][128];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/ctl-compare-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static const char *tmp_path(unsigned slot, const char *name)
{
	snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/%s", dir, name);
	return path_buf[slot];
}

static void remove_dir(void)
{
	static const char *const names[] = { "base.csv", "cur.csv", "us.csv", "x.csv" };
	char p[160];
	for (unsigned i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static const char *data(const char *name)
{
	static char p[4096];
	const char *top = getenv("top_srcdir");
	snprintf(p, sizeof(p), "%s/tests/data/ctl/%s", top ? top : "..", name);
	return p;
}

struct series {
	const char *point, *stage;
	double *v;
	size_t n;
};

/* A perfmond CSV with one row per interval per series; the series value is
 * the p50, the other figures scale with it. */
static void write_csv(const char *path, const char *unit, const struct series *s, unsigned ns)
{
	FILE *f = fopen(path, "w");
	size_t most = 0;

	ck_assert_ptr_nonnull(f);
	fprintf(f, "timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
		"out_of_range,min_%s,mean_%s,stddev_%s,p50_%s,p90_%s,p99_%s,p99_9_%s,max_%s,"
		"tsc_hz\n", unit, unit, unit, unit, unit, unit, unit, unit);
	for (unsigned k = 0; k < ns; k++)
		most = s[k].n > most ? s[k].n : most;
	for (size_t i = 0; i < most; i++)
		for (unsigned k = 0; k < ns; k++) {
			double v;
			if (i >= s[k].n)
				continue;
			v = s[k].v[i];
			fprintf(f, "2024-05-01 12:%02zu:%02zu.000,%s,%s,latency,1000,0,0,0,0,0,0,"
				"%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,3000000000\n", (i + 1) / 60,
				(i + 1) % 60, s[k].point, s[k].stage, v / 2, v * 1.1, v / 5, v,
				v * 1.5, v * 2, v * 3, v * 4);
		}
	ck_assert_int_eq(fclose(f), 0);
}

/* n samples around mean with coefficient of variation cv (normal, kept
 * positive). */
static double *draw(struct ctl_rng *r, size_t n, double mean, double cv)
{
	double *v = malloc(n * sizeof(*v));
	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++) {
		v[i] = mean * (1 + cv * ctl_rng_normal(r));
		if (v[i] < 1)
			v[i] = 1;
	}
	return v;
}

/* Run the command; its stdout into *out (caller frees). */
static int run_cmd(char **out, char **err, int argc, char **argv)
{
	size_t ol = 0, el = 0;
	FILE *fo, *fe;
	int rc;

	*out = *err = NULL;
	fo = open_memstream(out, &ol);
	fe = open_memstream(err, &el);
	rc = ctl_compare_cmd(argc, argv, fo, fe);
	fclose(fo);
	fclose(fe);
	return rc;
}

static const struct ctl_compare_stage *find(const struct ctl_compare_result *r, const char *p)
{
	for (unsigned i = 0; i < r->n; i++)
		if (!strcmp(r->stages[i].point, p))
			return &r->stages[i];
	return NULL;
}

START_TEST(test_regression_detected)
{
	struct ctl_rng rng;
	struct ctl_compare_opts o;
	struct ctl_compare_result r;
	const struct ctl_compare_stage *st;
	double *b, *c, *steady_b, *steady_c;
	char err[1024], *out, *errs;
	int rc;

	make_dir();
	ctl_rng_seed(&rng, 11);
	b = draw(&rng, 60, 1000, 0.03);
	c = draw(&rng, 60, 1200, 0.03);
	steady_b = draw(&rng, 60, 500, 0.03);
	steady_c = draw(&rng, 60, 500, 0.03);
	{
		struct series sb[] = { { "gw", "total", b, 60 }, { "md", "total", steady_b, 60 } };
		struct series sc[] = { { "gw", "total", c, 60 }, { "md", "total", steady_c, 60 } };
		write_csv(tmp_path(0, "base.csv"), "ns", sb, 2);
		write_csv(tmp_path(1, "cur.csv"), "ns", sc, 2);
	}
	ctl_compare_defaults(&o);
	ck_assert_int_eq(ctl_compare_files(path_buf[0], path_buf[1], &o, &r, err, sizeof(err)), 0);
	st = find(&r, "gw");
	ck_assert_ptr_nonnull(st);
	ck_assert_int_ge(st->v.sev, CTL_SEV_REGRESSION);
	ck_assert(st->v.rel > 0.17 && st->v.rel < 0.23);
	ck_assert(st->v.ci_lo > 0 && st->v.ci_lo < st->v.delta && st->v.delta < st->v.ci_hi);
	ck_assert_uint_eq(st->v.nb, 60);
	st = find(&r, "md");
	ck_assert_int_eq(st->v.sev, CTL_SEV_INFO);
	ck_assert_uint_eq(r.regressions, 1);
	ctl_compare_result_free(&r);

	{
		char *argv[] = { "compare", "--fail-on-regression", path_buf[0], path_buf[1] };
		rc = run_cmd(&out, &errs, 4, argv);
		ck_assert_int_eq(rc, CTL_EXIT_REGRESSION);
		ck_assert_ptr_nonnull(strstr(out, "regressed"));
		free(out);
		free(errs);
	}
	{
		/* without --fail-on-regression the verdict is printed, exit 0 */
		char *argv[] = { "compare", "--format", "csv", path_buf[0], path_buf[1] };
		rc = run_cmd(&out, &errs, 5, argv);
		ck_assert_int_eq(rc, 0);
		ck_assert(strstr(out, ",regression,") || strstr(out, ",critical,"));
		free(out);
		free(errs);
	}
	free(b);
	free(c);
	free(steady_b);
	free(steady_c);
	remove_dir();
}
END_TEST

/*
 * Twenty pairs of runs from one distribution: never a regression.  The
 * spread is that of real per-interval medians (CV 3-5%) against the
 * default 5% threshold; over 1000 such pairs the rule calls none.
 */
START_TEST(test_same_distribution_pairs)
{
	make_dir();
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct ctl_rng rng;
		double *b, *c, *b2, *c2;
		char *out, *errs;
		int rc;

		ctl_rng_seed(&rng, seed * 7919);
		b = draw(&rng, 60, 1000, 0.05);
		c = draw(&rng, 60, 1000, 0.05);
		b2 = draw(&rng, 60, 250, 0.03);
		c2 = draw(&rng, 60, 250, 0.03);
		{
			struct series sb[] = { { "a", "total", b, 60 }, { "b", "s1", b2, 60 } };
			struct series sc[] = { { "a", "total", c, 60 }, { "b", "s1", c2, 60 } };
			write_csv(tmp_path(0, "base.csv"), "ns", sb, 2);
			write_csv(tmp_path(1, "cur.csv"), "ns", sc, 2);
		}
		{
			char *argv[] = { "compare", "--fail-on-regression", "--format", "csv",
					 path_buf[0], path_buf[1] };
			rc = run_cmd(&out, &errs, 6, argv);
		}
		ck_assert_msg(rc == 0, "seed %llu: exit %d\n%s", (unsigned long long)seed, rc, out);
		ck_assert_ptr_null(strstr(out, ",regression,"));
		ck_assert_ptr_null(strstr(out, ",critical,"));
		free(out);
		free(errs);
		free(b);
		free(c);
		free(b2);
		free(c2);
	}
	remove_dir();
}
END_TEST

START_TEST(test_noisy_capped)
{
	struct ctl_rng rng;
	struct ctl_compare_opts o;
	struct ctl_compare_result r;
	double *b, *c;
	char err[1024];

	make_dir();
	ctl_rng_seed(&rng, 5);
	b = draw(&rng, 80, 1000, 0.45);
	c = draw(&rng, 80, 1600, 0.45);
	{
		struct series sb[] = { { "noisy", "total", b, 80 } };
		struct series sc[] = { { "noisy", "total", c, 80 } };
		write_csv(tmp_path(0, "base.csv"), "ns", sb, 1);
		write_csv(tmp_path(1, "cur.csv"), "ns", sc, 1);
	}
	ctl_compare_defaults(&o);
	ck_assert_int_eq(ctl_compare_files(path_buf[0], path_buf[1], &o, &r, err, sizeof(err)), 0);
	ck_assert_uint_eq(r.n, 1);
	/* well beyond the threshold, and significant, but too noisy to call */
	ck_assert(r.stages[0].v.rel > 0.2);
	ck_assert(r.stages[0].v.cv_base > o.max_cv);
	ck_assert_int_eq(r.stages[0].v.sev, CTL_SEV_WARNING);
	ck_assert_ptr_nonnull(strstr(r.stages[0].v.note, "noisy"));
	ck_assert_uint_eq(r.regressions, 0);
	ck_assert_uint_eq(r.warnings, 1);
	ctl_compare_result_free(&r);

	/* a looser cap lets the same data through as a regression */
	o.max_cv = 1.0;
	ck_assert_int_eq(ctl_compare_files(path_buf[0], path_buf[1], &o, &r, err, sizeof(err)), 0);
	ck_assert_int_ge(r.stages[0].v.sev, CTL_SEV_REGRESSION);
	ctl_compare_result_free(&r);
	free(b);
	free(c);
	remove_dir();
}
END_TEST

START_TEST(test_missing_stage_listed)
{
	struct ctl_rng rng;
	double *v = NULL;
	char *out, *errs;
	int rc;

	make_dir();
	ctl_rng_seed(&rng, 3);
	v = draw(&rng, 10, 100, 0.01);
	{
		struct series sb[] = { { "shared", "total", v, 10 }, { "gone", "total", v, 10 } };
		struct series sc[] = { { "shared", "total", v, 10 }, { "new", "step_1->2", v, 10 } };
		write_csv(tmp_path(0, "base.csv"), "ns", sb, 2);
		write_csv(tmp_path(1, "cur.csv"), "ns", sc, 2);
	}
	{
		char *argv[] = { "compare", "--format", "md", path_buf[0], path_buf[1] };
		rc = run_cmd(&out, &errs, 5, argv);
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "only one file"));
	ck_assert_ptr_nonnull(strstr(out, "| gone  | total     | base    |"));
	ck_assert_ptr_nonnull(strstr(out, "| new   | step_1->2 | current |"));
	free(out);
	free(errs);
	{
		char *argv[] = { "compare", "--format", "csv", path_buf[0], path_buf[1] };
		rc = run_cmd(&out, &errs, 5, argv);
	}
	ck_assert_ptr_nonnull(strstr(out, "gone,total,latency,p50,,,,,,,,,,,informational,"
				     "only in base"));
	ck_assert_ptr_nonnull(strstr(out, "new,step_1->2,latency,p50,,,,,,,,,,,informational,"
				     "only in current"));
	ck_assert_ptr_nonnull(strstr(out, "shared,total,latency,p50,10,10,"));
	free(out);
	free(errs);
	free(v);
	remove_dir();
}
END_TEST

START_TEST(test_unit_mismatch)
{
	struct ctl_compare_opts o;
	struct ctl_compare_result r;
	char err[1024], *out, *errs;
	char *argv[] = { "compare", (char *)strdup(data("quoted.csv")),
			 (char *)strdup(data("unit-us.csv")) };
	int rc;

	ctl_compare_defaults(&o);
	ck_assert_int_eq(ctl_compare_files(argv[1], argv[2], &o, &r, err, sizeof(err)), -EPROTO);
	rc = run_cmd(&out, &errs, 3, argv);
	ck_assert_int_eq(rc, CTL_EXIT_BAD_FILE);
	ck_assert_ptr_nonnull(strstr(errs, "in ns"));
	ck_assert_ptr_nonnull(strstr(errs, "in us"));
	ck_assert_str_eq(out, "");
	free(out);
	free(errs);
	free(argv[1]);
	free(argv[2]);
}
END_TEST

START_TEST(test_metric_and_percentile_sets)
{
	char *out, *errs;
	char *base = strdup(data("quoted.csv")), *cur = strdup(data("overhead.csv"));
	int rc;

	{
		/* p90 is not in overhead.csv: say so, exit 4 */
		char *argv[] = { "compare", "--metric", "p90", base, cur };
		rc = run_cmd(&out, &errs, 5, argv);
		ck_assert_int_eq(rc, CTL_EXIT_BAD_FILE);
		ck_assert_ptr_nonnull(strstr(errs, "overhead.csv has no 'p90' column"));
		ck_assert_ptr_nonnull(strstr(errs, "p50, p99"));
		free(out);
		free(errs);
	}
	{
		/* an unknown metric name is refused the same way */
		char *argv[] = { "compare", "--metric", "p42", base, cur };
		rc = run_cmd(&out, &errs, 5, argv);
		ck_assert_int_eq(rc, CTL_EXIT_BAD_FILE);
		free(out);
		free(errs);
	}
	{
		/* p99 is in both: compared, with both caveats stated */
		char *argv[] = { "compare", "--metric", "p99", base, cur };
		rc = run_cmd(&out, &errs, 5, argv);
		ck_assert_int_eq(rc, 0);
		ck_assert_ptr_nonnull(strstr(out, "different percentile columns"));
		ck_assert_ptr_nonnull(strstr(out, "only p99, present in both, is compared"));
		ck_assert_ptr_nonnull(strstr(out, "per-stamp overhead"));
		ck_assert_ptr_nonnull(strstr(out, "gw, primary"));
		free(out);
		free(errs);
	}
	free(base);
	free(cur);
}
END_TEST

START_TEST(test_deterministic)
{
	struct ctl_rng rng;
	double *b, *c;
	char *out1, *out2, *out3, *errs;

	make_dir();
	ctl_rng_seed(&rng, 99);
	b = draw(&rng, 50, 700, 0.08);
	c = draw(&rng, 50, 760, 0.08);
	{
		struct series sb[] = { { "p", "total", b, 50 } };
		struct series sc[] = { { "p", "total", c, 50 } };
		write_csv(tmp_path(0, "base.csv"), "ns", sb, 1);
		write_csv(tmp_path(1, "cur.csv"), "ns", sc, 1);
	}
	{
		char *argv[] = { "compare", "--format", "csv", path_buf[0], path_buf[1] };
		run_cmd(&out1, &errs, 5, argv);
		free(errs);
		run_cmd(&out2, &errs, 5, argv);
		free(errs);
	}
	{
		char *argv[] = { "compare", "--format", "csv", "--seed", "12345", path_buf[0],
				 path_buf[1] };
		run_cmd(&out3, &errs, 7, argv);
		free(errs);
	}
	ck_assert_str_eq(out1, out2);
	ck_assert_str_ne(out1, out3);      /* the interval moves with the seed... */
	{
		/* ...the medians do not */
		const char *a = strstr(out1, "p,total,latency,p50,50,50,");
		const char *b3 = strstr(out3, "p,total,latency,p50,50,50,");
		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b3);
		ck_assert_int_eq(strncmp(a, b3, 40), 0);
	}
	free(out1);
	free(out2);
	free(out3);
	free(b);
	free(c);
	remove_dir();
}
END_TEST

START_TEST(test_verdict_rules)
{
	struct ctl_compare_opts o;
	struct ctl_compare_verdict v;
	struct ctl_rng rng;
	double *b, *c;

	ctl_compare_defaults(&o);
	ctl_rng_seed(&rng, 17);
	b = draw(&rng, 40, 1000, 0.02);

	/* improved */
	c = draw(&rng, 40, 700, 0.02);
	ck_assert_int_eq(ctl_compare_samples(b, 40, c, 40, &o, 1, &v), 0);
	ck_assert_int_eq(v.sev, CTL_SEV_INFO);
	ck_assert_str_eq(v.note, "improved");
	free(c);

	/* 10%: a regression, not critical; 50%: critical */
	c = draw(&rng, 40, 1100, 0.02);
	ck_assert_int_eq(ctl_compare_samples(b, 40, c, 40, &o, 1, &v), 0);
	ck_assert_int_eq(v.sev, CTL_SEV_REGRESSION);
	ck_assert_ptr_nonnull(strstr(v.note, "slower by"));
	free(c);
	c = draw(&rng, 40, 1500, 0.02);
	ck_assert_int_eq(ctl_compare_samples(b, 40, c, 40, &o, 1, &v), 0);
	ck_assert_int_eq(v.sev, CTL_SEV_CRITICAL);

	/* the same 50% below the absolute threshold: informational */
	o.min_delta = 1000;
	ck_assert_int_eq(ctl_compare_samples(b, 40, c, 40, &o, 1, &v), 0);
	ck_assert_int_eq(v.sev, CTL_SEV_INFO);
	o.min_delta = 0;

	/* few samples: capped */
	ck_assert_int_eq(ctl_compare_samples(b, 3, c, 3, &o, 1, &v), 0);
	ck_assert_int_eq(v.sev, CTL_SEV_WARNING);
	ck_assert_ptr_nonnull(strstr(v.note, "few samples"));

	/* no samples on one side */
	ck_assert_int_eq(ctl_compare_samples(b, 40, c, 0, &o, 1, &v), 0);
	ck_assert_int_eq(v.sev, CTL_SEV_INFO);
	ck_assert_ptr_nonnull(strstr(v.note, "no samples"));
	free(c);

	/* a shift the bootstrap cannot tell from chance: warning */
	{
		/* bimodal: one sample more on the high side moves the median */
		double bb[] = { 100, 300, 100, 300, 100, 300, 100, 300, 100, 300, 100 };
		double cc[] = { 100, 300, 100, 300, 100, 300, 100, 300, 100, 300, 300 };
		o.max_cv = 10;   /* isolate the significance rule */
		ck_assert_int_eq(ctl_compare_samples(bb, 11, cc, 11, &o, 1, &v), 0);
		ck_assert(v.rel > o.threshold);
		ck_assert(v.ci_lo <= 0);
		ck_assert_int_eq(v.sev, CTL_SEV_WARNING);
		ck_assert_ptr_nonnull(strstr(v.note, "not significant"));
	}
	free(b);
}
END_TEST

START_TEST(test_usage_and_bad_files)
{
	char *out, *errs;
	char *q = strdup(data("quoted.csv")), *bad = strdup(data("bad-quote.csv"));

	{
		char *argv[] = { "compare", q };
		ck_assert_int_eq(run_cmd(&out, &errs, 2, argv), CTL_EXIT_FAILURE);
		free(out);
		free(errs);
	}
	{
		char *argv[] = { "compare", "--threshold", "lots", q, q };
		ck_assert_int_eq(run_cmd(&out, &errs, 5, argv), CTL_EXIT_FAILURE);
		free(out);
		free(errs);
	}
	{
		char *argv[] = { "compare", "--threshold", "10%", q, q };
		ck_assert_int_eq(run_cmd(&out, &errs, 5, argv), 0);
		ck_assert_ptr_nonnull(strstr(out, "more than 10%"));
		free(out);
		free(errs);
	}
	{
		char *argv[] = { "compare", q, "/nonexistent.csv" };
		ck_assert_int_eq(run_cmd(&out, &errs, 3, argv), CTL_EXIT_BAD_FILE);
		free(out);
		free(errs);
	}
	{
		char *argv[] = { "compare", bad, q };
		ck_assert_int_eq(run_cmd(&out, &errs, 3, argv), CTL_EXIT_BAD_FILE);
		ck_assert_ptr_nonnull(strstr(errs, "bad-quote.csv:2:"));
		free(out);
		free(errs);
	}
	free(q);
	free(bad);
}
END_TEST

/* A value CSV whose every figure of interval i is v[i] (written as the
 * whole number it is), one series. */
static void write_value_csv(const char *path, const char *point, const uint64_t *v, size_t n)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
		"out_of_range,min_ns,mean_ns,stddev_ns,p50_ns,p90_ns,p99_ns,p99_9_ns,max_ns,"
		"tsc_hz\n");
	for (size_t i = 0; i < n; i++) {
		unsigned long long x = (unsigned long long)v[i];
		fprintf(f, "2024-05-01 12:00:%02zu.000,%s,value,value,1,0,0,0,0,0,0,%llu,%llu.000,"
			"0.000,%llu,%llu,%llu,%llu,%llu,3000000000\n", i + 1, point, x, x, x, x, x,
			x, x);
	}
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * Value figures beyond 2^53 compared exactly: medians (with a half for an
 * even count), their difference and its interval keep every digit, where
 * a double rounds 2^63 + 1004 and 2^63 + 1195 to 2^63 and 2^63 + 2048.
 */
START_TEST(test_big_values_exact)
{
	const uint64_t h = UINT64_C(1) << 63;
	uint64_t b[5], c[5], top[4];
	struct ctl_compare_opts o;
	struct ctl_compare_result r;
	const struct ctl_compare_verdict *v;
	char err[1024], t[64], *out, *errs;

	make_dir();
	for (unsigned i = 0; i < 5; i++) {
		b[i] = h + 1000 + 2 * i;     /* median 2^63 + 1004 */
		c[i] = h + 1191 + 2 * i;     /* median 2^63 + 1195 */
	}
	write_value_csv(tmp_path(0, "base.csv"), "big", b, 5);
	write_value_csv(tmp_path(1, "cur.csv"), "big", c, 5);
	ctl_compare_defaults(&o);
	o.metric = "max";
	ck_assert_int_eq(ctl_compare_files(path_buf[0], path_buf[1], &o, &r, err, sizeof(err)), 0);
	v = &find(&r, "big")->v;
	ck_assert(v->exact);
	ck_assert_str_eq(ctl_exact_text(v->base_x, t, sizeof(t)), "9223372036854776812");
	ck_assert_str_eq(ctl_exact_text(v->cur_x, t, sizeof(t)), "9223372036854777003");
	ck_assert(v->delta == 191);
	/* the interval of the difference, from the exact samples: between
	 * the smallest and largest difference of two samples */
	ck_assert(v->ci_lo >= 183 && v->ci_lo <= 191 && v->ci_hi >= 191 && v->ci_hi <= 199);
	ck_assert_ptr_null(strstr(v->note, "unchanged"));
	ctl_compare_result_free(&r);
	{
		char *argv[] = { "compare", "--metric", "max", "--format", "csv", path_buf[0],
				 path_buf[1] };
		ck_assert_int_eq(run_cmd(&out, &errs, 7, argv), 0);
		ck_assert_ptr_nonnull(strstr(out, ",9223372036854776812,9223372036854777003,191,"));
		free(out);
		free(errs);
	}
	{
		char *argv[] = { "compare", "--metric", "min", "--format", "md", path_buf[0],
				 path_buf[1] };
		ck_assert_int_eq(run_cmd(&out, &errs, 7, argv), 0);
		ck_assert_ptr_nonnull(strstr(out, "| 9223372036854776812 | 9223372036854777003 |"));
		ck_assert_ptr_nonnull(strstr(out, "+191 |"));
		free(out);
		free(errs);
	}

	/* an even count at the top of the range: the median has a half */
	for (unsigned i = 0; i < 4; i++)
		top[i] = UINT64_MAX - i;
	write_value_csv(tmp_path(0, "base.csv"), "top", top, 4);
	write_value_csv(tmp_path(1, "cur.csv"), "top", top + 1, 3);
	{
		char *argv[] = { "compare", "--metric", "max", "--format", "json", path_buf[0],
				 path_buf[1] };
		ck_assert_int_eq(run_cmd(&out, &errs, 7, argv), 0);
		ck_assert_ptr_nonnull(strstr(out, "\"base\":18446744073709551613.5,"
					     "\"current\":18446744073709551613,\"delta\":-0.5,"));
		free(out);
		free(errs);
	}
	/* several runs per side, each giving the same figure: still exact */
	{
		char base[300], cur[300];
		snprintf(base, sizeof(base), "%s,%s", path_buf[0], path_buf[0]);
		snprintf(cur, sizeof(cur), "%s,%s", path_buf[0], path_buf[0]);
		char *argv[] = { "compare", "--metric", "max", "--format", "csv", base, cur };
		ck_assert_int_eq(run_cmd(&out, &errs, 7, argv), 0);
		ck_assert_ptr_nonnull(strstr(out, ",18446744073709551613.5,18446744073709551613.5,"
					     "0,"));
		free(out);
		free(errs);
	}
	remove_dir();
}
END_TEST

START_TEST(test_statistics)
{
	double odd[] = { 5, 1, 4, 2, 3 };
	double even[] = { 8, 2, 6, 4 };
	double same[] = { 7, 7, 7 };
	double sorted[] = { 1, 2, 3, 4 };
	double big[1001], lo1, hi1, lo2, hi2;
	struct ctl_rng r;

	ck_assert(ctl_median(odd, 5) == 3);
	ck_assert(odd[0] == 5);                 /* ctl_median leaves the input alone */
	ck_assert(ctl_median(even, 4) == 5);
	ck_assert(ctl_median_inplace(same, 3) == 7);
	ck_assert(isnan(ctl_median(odd, 0)));
	ck_assert(ctl_quantile_sorted(sorted, 4, 0.5) == 2.5);
	ck_assert(ctl_quantile_sorted(sorted, 4, 0) == 1);
	ck_assert(ctl_quantile_sorted(sorted, 4, 1) == 4);
	ck_assert(fabs(ctl_cv(sorted, 4) - 1.2909944487358056 / 2.5) < 1e-12);
	ck_assert(ctl_cv(same, 3) == 0);

	/* median of a shuffled 0..1000 is 500 */
	for (unsigned i = 0; i < 1001; i++)
		big[i] = (double)((i * 7919) % 1001);
	ck_assert(ctl_median_inplace(big, 1001) == 500);

	/* the bootstrap is a function of its seed */
	ctl_rng_seed(&r, 1);
	for (unsigned i = 0; i < 200; i++)
		big[i] = 100 + ctl_rng_normal(&r);
	ck_assert_int_eq(ctl_bootstrap_median_diff(big, 100, big + 100, 100, 500, 0.95, 42, &lo1,
						   &hi1), 0);
	ck_assert_int_eq(ctl_bootstrap_median_diff(big, 100, big + 100, 100, 500, 0.95, 42, &lo2,
						   &hi2), 0);
	ck_assert(lo1 == lo2 && hi1 == hi2);
	ck_assert(lo1 < 0 && hi1 > 0);          /* same distribution: covers zero */
	ck_assert_int_eq(ctl_bootstrap_median_diff(big, 0, big, 10, 10, 0.95, 1, &lo1, &hi1),
			 -EINVAL);

	/* below() stays in range and reaches both ends */
	{
		bool seen0 = false, seen9 = false;
		for (unsigned i = 0; i < 1000; i++) {
			uint64_t x = ctl_rng_below(&r, 10);
			ck_assert_uint_lt(x, 10);
			seen0 |= x == 0;
			seen9 |= x == 9;
		}
		ck_assert(seen0 && seen9);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl_compare");
	TCase *tc = tcase_create("compare");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_regression_detected);
	tcase_add_test(tc, test_same_distribution_pairs);
	tcase_add_test(tc, test_noisy_capped);
	tcase_add_test(tc, test_missing_stage_listed);
	tcase_add_test(tc, test_unit_mismatch);
	tcase_add_test(tc, test_metric_and_percentile_sets);
	tcase_add_test(tc, test_deterministic);
	tcase_add_test(tc, test_verdict_rules);
	tcase_add_test(tc, test_usage_and_bad_files);
	tcase_add_test(tc, test_big_values_exact);
	tcase_add_test(tc, test_statistics);
	suite_add_tcase(s, tc);
	return check_run(s);
}
