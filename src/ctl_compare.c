/*
 * ctl_compare.c - regression verdicts between two CSV runs.
 *
 * Each interval row is one sample of a stage's metric, so a stage with an
 * hour of one-second intervals has 3600 samples of, say, its p50.  The
 * verdict looks at the medians of those samples (robust to the odd bad
 * interval), asks for a move beyond both a relative and an absolute
 * threshold, and then asks whether the move is believable: a fixed-seed
 * bootstrap interval of the median difference must exclude zero and
 * neither run may be too noisy (coefficient of variation) for a verdict
 * stronger than a warning.  The seed of each stage is derived from the
 * run's seed and the stage's labels, so a stage's numbers do not depend on
 * which other stages the files hold.
 *
 * Several runs per side (comma lists) change the question: each run gives
 * one figure per stage (its median interval), and the verdict asks whether
 * the runs of the two sides differ by more than runs of one side differ
 * among themselves (Welch's t on the logarithms), which is the variation a
 * rerun really shows.  Intervals of one run are not independent of each
 * other, so with one run per side a tail metric (p90 and beyond, min, max,
 * stddev) can only reach a warning, said in so many words.
 *
 * Percentile figures are histogram bucket midpoints (buckets 1/16 wide),
 * so a median of them moves in steps.  The figure of a run is therefore
 * the grouped-data median: the bucket holding the middle interval,
 * interpolated by how many intervals lie below it and in it.
 */
#include "build-config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_cli.h"
#include "ctl_compare.h"
#include "ctl_csv.h"
#include "ctl_json.h"
#include "ctl_stats.h"
#include "ctl_text.h"
#include "hist.h"

#define CRITICAL_FACTOR 4.0
/* Bootstrap work per stage is bounded: resamples x samples. */
#define BOOTSTRAP_BUDGET 40000000.0
#define BOOTSTRAP_FLOOR 200u

void ctl_compare_defaults(struct ctl_compare_opts *o)
{
	o->metric = "p50";
	o->threshold = 0.05;
	o->min_delta = 0;
	o->max_cv = 0.25;
	o->resamples = 2000;
	o->confidence = 0.95;
	o->seed = 1;
	o->min_samples = 5;
}

const char *ctl_severity_name(enum ctl_severity s)
{
	static const char *const names[] = { "informational", "warning", "regression",
					     "critical" };
	return names[s];
}

static void add_note(struct ctl_compare_verdict *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_note(struct ctl_compare_verdict *v, const char *fmt, ...)
{
	size_t l = strlen(v->note);
	va_list ap;

	if (l && l + 2 < sizeof(v->note)) {
		memcpy(v->note + l, "; ", 3);
		l += 2;
	}
	va_start(ap, fmt);
	vsnprintf(v->note + l, sizeof(v->note) - l, fmt, ap);
	va_end(ap);
}

/* Severity and note of one-run-per-side verdict `v` from its figures,
 * interval and spread. */
static void judge(struct ctl_compare_verdict *v, const struct ctl_compare_opts *o)
{
	bool worse = v->rel > o->threshold && v->delta > o->min_delta;
	bool better = v->rel < -o->threshold && -v->delta > o->min_delta;

	v->note[0] = '\0';
	if (!worse) {
		v->sev = CTL_SEV_INFO;
		add_note(v, "%s", better ? "improved" : v->delta == 0 ? "unchanged" :
			 "within thresholds");
		if (v->degenerate)
			add_note(v, "no interval: every interval of each run gave the same "
				 "figure");
		return;
	}
	v->sev = v->rel > CRITICAL_FACTOR * o->threshold ? CTL_SEV_CRITICAL : CTL_SEV_REGRESSION;
	if (v->degenerate)
		add_note(v, "no interval of the difference: every interval of each run gave "
			 "the same figure (one histogram bucket), so there is no spread to "
			 "estimate it from");
	if (v->cv_base > o->max_cv || v->cv_cur > o->max_cv) {
		v->sev = CTL_SEV_WARNING;
		add_note(v, "noisy: cv %.2f > %.2f", v->cv_base > v->cv_cur ? v->cv_base :
			 v->cv_cur, o->max_cv);
	}
	if (!isnan(v->ci_lo) && v->ci_lo <= 0) {
		char lo[40];
		v->sev = CTL_SEV_WARNING;
		ctl_fmt_exact(v->ci_lo, lo, sizeof(lo));
		add_note(v, "not significant: the interval of the difference reaches %s", lo);
	}
	if (v->nb < o->min_samples || v->nc < o->min_samples) {
		v->sev = CTL_SEV_WARNING;
		add_note(v, "few samples: %zu/%zu intervals", v->nb, v->nc);
	}
	if (v->sev >= CTL_SEV_REGRESSION)
		add_note(v, "slower by %.1f%%", 100 * v->rel);
}

/* The bootstrap resamples for n samples in all, within the budget. */
static unsigned resamples_for(const struct ctl_compare_opts *o, size_t n)
{
	double fit = BOOTSTRAP_BUDGET / (double)n;

	if ((double)o->resamples <= fit)
		return o->resamples;
	return fit < BOOTSTRAP_FLOOR ? (o->resamples < BOOTSTRAP_FLOOR ? o->resamples :
					BOOTSTRAP_FLOOR) : (unsigned)fit;
}

/* delta relative to base; infinite when base is 0 and delta is not. */
static double relative(double delta, double base)
{
	if (base != 0)
		return delta / fabs(base);
	return delta > 0 ? INFINITY : delta < 0 ? -INFINITY : 0;
}

/* Give `v` the exact figures base and cur (and their difference). */
static void set_exact(struct ctl_compare_verdict *v, struct ctl_exact base, struct ctl_exact cur)
{
	v->exact = true;
	v->base_x = base;
	v->cur_x = cur;
	v->base = ctl_exact_double(base);
	v->cur = ctl_exact_double(cur);
	v->delta = ctl_exact_diff(base, cur);
	v->rel = relative(v->delta, v->base);
}

int ctl_compare_samples(const double *base, size_t nb, const double *cur, size_t nc,
			const struct ctl_compare_opts *o, uint64_t seed,
			struct ctl_compare_verdict *ret)
{
	struct ctl_compare_verdict v;
	int e;

	memset(&v, 0, sizeof(v));
	v.nb = nb;
	v.nc = nc;
	v.ci_lo = v.ci_hi = NAN;
	v.base = ctl_median(base, nb);
	v.cur = ctl_median(cur, nc);
	if (nb == 0 || nc == 0) {
		v.delta = v.rel = NAN;
		v.sev = CTL_SEV_INFO;
		snprintf(v.note, sizeof(v.note), "no samples in %s",
			 nb == 0 && nc == 0 ? "either file" : nb == 0 ? "base" : "current");
		*ret = v;
		return 0;
	}
	if (isnan(v.base) || isnan(v.cur))
		return -ENOMEM;
	v.cv_base = ctl_cv(base, nb);
	v.cv_cur = ctl_cv(cur, nc);
	v.delta = v.cur - v.base;
	v.rel = relative(v.delta, v.base);

	v.resamples = resamples_for(o, nb + nc);
	v.kb = v.kc = 1;
	if (v.resamples) {
		e = ctl_bootstrap_median_diff(base, nb, cur, nc, v.resamples, o->confidence, seed,
					      &v.ci_lo, &v.ci_hi);
		if (e < 0)
			return e;
		/* Every resample gave the same difference: the intervals of
		 * each run agree exactly (typically one histogram bucket), and
		 * a zero-width interval says nothing about how sure we are. */
		if (v.ci_lo == v.ci_hi) {
			v.degenerate = true;
			v.ci_lo = v.ci_hi = NAN;
		}
	}

	judge(&v, o);
	*ret = v;
	return 0;
}

/* ---- reading the runs -------------------------------------------------- */

/* One side: its runs, with one stage index over all of them. */
struct side {
	const char *paths[CTL_COMPARE_MAX_RUNS];
	unsigned nruns, cur_run;
	const char *metric_name;
	int metric;                /* id in the current run's header, -1 before it */
	bool metric_missing;
	struct ctl_stages stages;
	struct ctl_figvec *samples;   /* per stage: every run's intervals */
	struct ctl_figvec *runs[CTL_COMPARE_MAX_RUNS];   /* per run, per stage */
	unsigned cap, run_cap[CTL_COMPARE_MAX_RUNS];
	struct ctl_csv_header h;   /* the first run's */
	unsigned long rows;
	double tsc_min, tsc_max;
	char storage[4096];        /* the comma list, split */
};

static int side_row(void *ctx, const struct ctl_csv_header *h, const struct ctl_csv_row *r)
{
	struct side *s = ctx;
	unsigned k = s->cur_run;
	uint64_t xi;
	bool whole;
	double x;
	int id;

	if (s->metric < 0) {
		s->metric = ctl_csv_metric_lookup(h, s->metric_name);
		if (s->metric < 0) {
			s->metric_missing = true;
			return -ENOENT;
		}
	}
	if (s->rows == 0 || r->tsc_hz < s->tsc_min)
		s->tsc_min = r->tsc_hz;
	if (s->rows == 0 || r->tsc_hz > s->tsc_max)
		s->tsc_max = r->tsc_hz;
	s->rows++;
	id = ctl_stages_id(&s->stages, r->point, r->stage, r->value);
	if (id < 0)
		return id;
	if (ctl_grow((void **)&s->samples, &s->cap, (unsigned)id, sizeof(*s->samples)) < 0 ||
	    ctl_grow((void **)&s->runs[k], &s->run_cap[k], (unsigned)id, sizeof(*s->runs[k])) < 0)
		return -ENOMEM;
	if (r->count == 0)
		return 0;   /* anomaly-only rows carry no figure */
	x = ctl_csv_metric(r, s->metric);
	whole = ctl_csv_metric_exact(r, s->metric, &xi);
	if (ctl_figvec_push(&s->samples[id], x, whole, xi) < 0 ||
	    ctl_figvec_push(&s->runs[k][id], x, whole, xi) < 0)
		return -ENOMEM;
	return 0;
}

static void side_free(struct side *s)
{
	for (unsigned i = 0; i < s->stages.n; i++) {
		ctl_figvec_free(&s->samples[i]);
		for (unsigned k = 0; k < s->nruns; k++)
			if (i < s->run_cap[k])
				ctl_figvec_free(&s->runs[k][i]);
	}
	for (unsigned k = 0; k < s->nruns; k++)
		free(s->runs[k]);
	free(s->samples);
	ctl_stages_free(&s->stages);
}

/* Split `arg` into run paths: a path that exists as written is one file. */
static int side_split(struct side *s, const char *arg, char *err, size_t errlen)
{
	char *p, *next;

	if (access(arg, F_OK) == 0 || !strchr(arg, ',')) {
		s->paths[0] = arg;
		s->nruns = 1;
		return 0;
	}
	if (strlen(arg) >= sizeof(s->storage)) {
		snprintf(err, errlen, "the list of runs '%.60s...' is too long", arg);
		return -EINVAL;
	}
	memcpy(s->storage, arg, strlen(arg) + 1);
	for (p = s->storage; p; p = next) {
		next = strchr(p, ',');
		if (next)
			*next++ = '\0';
		if (!*p) {
			snprintf(err, errlen, "'%s': an empty name in the list of runs", arg);
			return -EINVAL;
		}
		if (s->nruns == CTL_COMPARE_MAX_RUNS) {
			snprintf(err, errlen, "'%.60s...': more than %u runs on one side", arg,
				 CTL_COMPARE_MAX_RUNS);
			return -EINVAL;
		}
		s->paths[s->nruns++] = p;
	}
	return 0;
}

static void list_columns(const struct ctl_csv_header *h, char *buf, size_t n)
{
	size_t l = (size_t)snprintf(buf, n, "min, mean, stddev, max");
	for (unsigned i = 0; i < h->npct && l < n; i++)
		l += (size_t)snprintf(buf + l, n - l, ", %s", h->pct_label[i]);
}

static int read_run(struct side *s, unsigned k, char *err, size_t errlen)
{
	struct ctl_csv_header h;
	const char *path = s->paths[k];
	char cols[300];
	int e;

	s->metric = -1;
	s->cur_run = k;
	e = ctl_csv_read_file(path, side_row, s, &h, err, errlen);
	if (e == 0 && s->metric < 0) {
		/* No rows: the header alone decides whether the metric exists. */
		s->metric = ctl_csv_metric_lookup(&h, s->metric_name);
		s->metric_missing = s->metric < 0;
	}
	if (s->metric_missing) {
		char dummy[8];
		/* The reader stopped at the first row; its header is what we need. */
		if (e != 0)
			ctl_csv_read_file(path, NULL, NULL, &h, dummy, sizeof(dummy));
		list_columns(&h, cols, sizeof(cols));
		snprintf(err, errlen, "%s has no '%s' column to compare (it has: %s)", path,
			 s->metric_name, cols);
		return -ENOENT;
	}
	if (e < 0)
		return e;
	if (k == 0) {
		s->h = h;
	} else if (strcmp(h.unit, s->h.unit)) {
		snprintf(err, errlen, "%s is in %s and %s in %s: the runs of one side must "
			 "share a unit", s->paths[0], s->h.unit, path, h.unit);
		return -EPROTO;
	}
	return 0;
}

static int read_side(struct side *s, const char *arg, char *err, size_t errlen)
{
	int e;

	ctl_stages_init(&s->stages);
	if ((e = side_split(s, arg, err, errlen)) < 0)
		return e;
	for (unsigned k = 0; k < s->nruns; k++)
		if ((e = read_run(s, k, err, errlen)) < 0)
			return e;
	return 0;
}

static uint64_t stage_seed(uint64_t seed, const struct ctl_stage *st)
{
	uint64_t h = UINT64_C(1469598103934665603);
	const char *parts[2] = { st->point, st->stage };

	for (int i = 0; i < 2; i++) {
		for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
			h = (h ^ *p) * UINT64_C(1099511628211);
		h = (h ^ 0xFF) * UINT64_C(1099511628211);
	}
	return seed ^ h ^ (uint64_t)st->value;
}

static int add_stage(struct ctl_compare_result *r, const struct ctl_stage *st,
		     enum ctl_presence p, unsigned *cap)
{
	struct ctl_compare_stage *cs;

	if (r->n == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 32;
		struct ctl_compare_stage *n = realloc(r->stages, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		r->stages = n;
		*cap = ncap;
	}
	cs = &r->stages[r->n];
	memset(cs, 0, sizeof(*cs));
	cs->point = strdup(st->point);
	cs->stage = strdup(st->stage);
	cs->value = st->value;
	cs->presence = p;
	cs->v.ci_lo = cs->v.ci_hi = NAN;
	if (!cs->point || !cs->stage) {
		free(cs->point);
		free(cs->stage);
		return -ENOMEM;
	}
	r->n++;
	return 0;
}

static void pct_list(const struct ctl_csv_header *h, char *buf, size_t n)
{
	size_t l = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < h->npct && l < n; i++)
		l += (size_t)snprintf(buf + l, n - l, "%s%s", i ? "," : "", h->pct_label[i]);
	if (!h->npct)
		snprintf(buf, n, "none");
}

static void add_file_notes(struct ctl_compare_result *r, const struct side *b,
			   const struct side *c)
{
	bool same_pct = b->h.npct == c->h.npct;
	char lb[200], lc[200], x[40], y[40];

	for (unsigned i = 0; same_pct && i < b->h.npct; i++)
		same_pct = !strcmp(b->h.pct_label[i], c->h.pct_label[i]);
	if (!same_pct && r->nnotes < 4) {
		pct_list(&b->h, lb, sizeof(lb));
		pct_list(&c->h, lc, sizeof(lc));
		snprintf(r->notes[r->nnotes++], sizeof(r->notes[0]),
			 "the files have different percentile columns (base: %s; current: %s); "
			 "only %s, present in both, is compared", lb, lc, r->metric);
	}
	if (b->h.has_overhead != c->h.has_overhead && r->nnotes < 4)
		snprintf(r->notes[r->nnotes++], sizeof(r->notes[0]),
			 "%s subtracts the per-stamp overhead and %s does not: latencies differ "
			 "by about that overhead for this reason alone",
			 b->h.has_overhead ? "base" : "current",
			 b->h.has_overhead ? "current" : "base");
	if (!strcmp(r->unit, "cycles") && b->rows && c->rows && r->nnotes < 4 &&
	    fabs(b->tsc_max - c->tsc_min) > 0.01 * c->tsc_min) {
		/* Every digit the files had: this note is read by scripts too. */
		ctl_fmt_exact(b->tsc_max, x, sizeof(x));
		ctl_fmt_exact(c->tsc_min, y, sizeof(y));
		snprintf(r->notes[r->nnotes++], sizeof(r->notes[0]),
			 "the runs had different TSC rates (%s vs %s Hz): figures in cycles "
			 "are not directly comparable", x, y);
	}
	if (b->nruns == 1 && c->nruns == 1 && r->tail && r->nnotes < 4)
		snprintf(r->notes[r->nnotes++], sizeof(r->notes[0]),
			 "one run per side cannot support a verdict on %s: the intervals of one "
			 "run are not independent and the run-to-run variation of a tail is "
			 "unknown, so no stage goes beyond a warning; give several runs per "
			 "side (A1.csv,A2.csv,A3.csv B1.csv,B2.csv,B3.csv)", r->metric);
}

/* ---- the figure of a run, and the run-level test ----------------------- */

/* The histogram bucket holding figure x of a side: its index, and its edges
 * in the file's unit.  false when x is not a histogram figure. */
static bool bucket_of(double x, const char *unit, double hz, bool value, unsigned *ret_idx,
		      double *ret_lo, double *ret_w)
{
	double per_tick = value || !strcmp(unit, "cycles") ? 1.0 :
			  !strcmp(unit, "us") ? 1e6 / hz : 1e9 / hz;
	double t;
	uint64_t ti, w;
	unsigned idx, block;

	if (!(hz > 0) || !(x >= 0) || !isfinite(per_tick))
		return false;
	t = x / per_tick + 0.5;
	ti = t >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)t;
	idx = hist_index(ti);
	block = idx >> HIST_PRECISION;
	w = block == 0 ? 1 : UINT64_C(1) << (block - 1);
	*ret_idx = idx;
	*ret_w = (double)w * per_tick;
	*ret_lo = (double)(ti >> (block ? block - 1 : 0) << (block ? block - 1 : 0)) * per_tick;
	return true;
}

struct keyed {
	unsigned idx;              /* histogram bucket */
	double lo, w;              /* its lower edge and width, in the file's unit */
};

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The buckets of the figures v[0..n); false when one is not a histogram
 * figure. */
static bool key_all(const double *v, size_t n, const char *unit, double hz, bool value,
		    struct keyed *k)
{
	for (size_t i = 0; i < n; i++)
		if (!bucket_of(v[i], unit, hz, value, &k[i].idx, &k[i].lo, &k[i].w))
			return false;
	return true;
}

/*
 * Grouped-data median of k[0..n), sorted by bucket, each figure taken
 * cnt[i] times (once each when cnt is NULL), m times in all: the bucket
 * holding the middle figure, interpolated by how many lie below it and in
 * it.  Counts instead of a sorted copy keep a bootstrap resample linear.
 */
static double grouped_median(const struct keyed *k, const unsigned *cnt, size_t n, size_t m)
{
	size_t i = 0, j, below = 0, in = 0;

#define TIMES(x) (cnt ? cnt[x] : 1u)
	for (; below + TIMES(i) <= m / 2; i++)   /* k[i] holds the figure of rank m/2 */
		below += TIMES(i);
	for (j = i; j > 0 && k[j - 1].idx == k[i].idx; j--)
		below -= TIMES(j - 1);
	for (; j < n && k[j].idx == k[i].idx; j++)
		in += TIMES(j);
#undef TIMES
	return k[i].lo + k[i].w * ((double)m / 2.0 - (double)below) / (double)in;
}

/*
 * The figure of one run: the median of its intervals; for a percentile
 * metric the grouped-data median over the histogram buckets the interval
 * figures fall in, which moves smoothly with the distribution instead of
 * in bucket steps.  NaN when empty.
 */
static double run_figure(const struct ctl_vec *v, bool pct, const char *unit, double hz,
			 bool value)
{
	struct keyed *k;
	double med;

	if (v->n == 0)
		return NAN;
	if (!pct || v->n < 2)
		return ctl_median(v->v, v->n);
	k = malloc(v->n * sizeof(*k));
	if (!k)
		return NAN;
	if (key_all(v->v, v->n, unit, hz, value, k)) {
		qsort(k, v->n, sizeof(*k), keyed_cmp);
		med = grouped_median(k, NULL, v->n, v->n);
	} else {
		med = ctl_median(v->v, v->n);
	}
	free(k);
	return med;
}

static int double_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/*
 * Bootstrap of the difference of grouped medians, for one run per side:
 * as ctl_bootstrap_median_diff, with the statistic that does not move in
 * bucket steps.  -EINVAL when a figure is not a histogram figure.
 */
static int grouped_bootstrap(const struct ctl_vec *b, const struct ctl_vec *c,
			     const char *unit, double hz, bool value, unsigned resamples,
			     double confidence, uint64_t seed, double *ret_lo, double *ret_hi)
{
	struct keyed *kb = malloc(b->n * sizeof(*kb)), *kc = malloc(c->n * sizeof(*kc));
	unsigned *cnt = malloc((b->n > c->n ? b->n : c->n) * sizeof(*cnt));
	double *d = malloc(resamples * sizeof(*d));
	struct ctl_rng rng;
	int e = -ENOMEM;

	if (!kb || !kc || !cnt || !d)
		goto out;
	e = -EINVAL;
	if (!key_all(b->v, b->n, unit, hz, value, kb) || !key_all(c->v, c->n, unit, hz, value, kc))
		goto out;
	qsort(kb, b->n, sizeof(*kb), keyed_cmp);
	qsort(kc, c->n, sizeof(*kc), keyed_cmp);
	ctl_rng_seed(&rng, seed);
	for (unsigned r = 0; r < resamples; r++) {
		double mb, mc;

		/* a resample: how many times each figure was drawn */
		memset(cnt, 0, b->n * sizeof(*cnt));
		for (size_t i = 0; i < b->n; i++)
			cnt[ctl_rng_below(&rng, b->n)]++;
		mb = grouped_median(kb, cnt, b->n, b->n);
		memset(cnt, 0, c->n * sizeof(*cnt));
		for (size_t i = 0; i < c->n; i++)
			cnt[ctl_rng_below(&rng, c->n)]++;
		mc = grouped_median(kc, cnt, c->n, c->n);
		d[r] = mc - mb;
	}
	qsort(d, resamples, sizeof(*d), double_cmp);
	*ret_lo = ctl_quantile_sorted(d, resamples, (1 - confidence) / 2);
	*ret_hi = ctl_quantile_sorted(d, resamples, 1 - (1 - confidence) / 2);
	e = 0;
out:
	free(kb);
	free(kc);
	free(cnt);
	free(d);
	return e;
}

/* Student's t density and the quantile q of its distribution (q > 0.5). */
static double t_pdf(double x, double df)
{
	return exp(lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * log(df * M_PI) -
		   (df + 1) / 2 * log1p(x * x / df));
}

static double t_cdf_upper_half(double t, double df)
{
	/* P(0 < T < t) by Simpson's rule: smooth integrand, 400 panels. */
	const int m = 400;
	double h = t / m, sum = t_pdf(0, df) + t_pdf(t, df);

	for (int i = 1; i < m; i++)
		sum += (i & 1 ? 4 : 2) * t_pdf(i * h, df);
	return sum * h / 3;
}

static double t_quantile(double q, double df)
{
	double lo = 0, hi = 1000;

	for (int i = 0; i < 60; i++) {
		double mid = (lo + hi) / 2;
		if (0.5 + t_cdf_upper_half(mid, df) < q)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/*
 * Runs against runs: the logarithms of the run figures of each side,
 * Welch's t interval of the difference of their means (a side with one
 * run borrows the other side's spread), turned back into a relative
 * change and an interval of the difference in the file's unit.
 */
static void runs_verdict(const double *lb, unsigned kb, const double *lc, unsigned kc,
			 const struct ctl_compare_opts *o, const struct ctl_exact *xb,
			 const struct ctl_exact *xc, struct ctl_compare_verdict *v)
{
	double mb, sb, mc, sc, se2, df, d, half, t;
	double gb = 0, gc = 0;
	bool worse, better;

	for (unsigned i = 0; i < kb; i++)
		gb += log(lb[i]);
	for (unsigned i = 0; i < kc; i++)
		gc += log(lc[i]);
	{
		double xb[CTL_COMPARE_MAX_RUNS], xc[CTL_COMPARE_MAX_RUNS];
		for (unsigned i = 0; i < kb; i++)
			xb[i] = log(lb[i]);
		for (unsigned i = 0; i < kc; i++)
			xc[i] = log(lc[i]);
		ctl_mean_sd(xb, kb, &mb, &sb);
		ctl_mean_sd(xc, kc, &mc, &sc);
	}
	if (kb < 2) {
		sb = sc;
		df = kc - 1;
	} else if (kc < 2) {
		sc = sb;
		df = kb - 1;
	} else {
		double vb = sb * sb / kb, vc = sc * sc / kc;
		df = vb + vc > 0 ? (vb + vc) * (vb + vc) /
			(vb * vb / (kb - 1) + vc * vc / (kc - 1)) : kb + kc - 2;
	}
	se2 = sb * sb / kb + sc * sc / kc;
	d = mc - mb;
	v->base = exp(mb);
	v->cur = exp(mc);
	v->delta = v->cur - v->base;
	v->rel = exp(d) - 1;
	if (xb && xc)   /* every run of each side gave the same whole number */
		set_exact(v, *xb, *xc);
	v->runs_test = true;
	v->degenerate = false;
	if (!(se2 > 0)) {
		v->degenerate = true;
		v->ci_lo = v->ci_hi = NAN;
	} else {
		t = t_quantile(0.5 + o->confidence / 2, df);
		half = t * sqrt(se2);
		v->ci_lo = v->base * (exp(d - half) - 1);
		v->ci_hi = v->base * (exp(d + half) - 1);
	}
	worse = v->rel > o->threshold && v->delta > o->min_delta;
	better = v->rel < -o->threshold && -v->delta > o->min_delta;
	v->note[0] = '\0';
	if (!worse) {
		v->sev = CTL_SEV_INFO;
		add_note(v, "%s", better ? "improved" : v->delta == 0 ? "unchanged" :
			 "within thresholds");
		if (v->degenerate)
			add_note(v, "no interval: every run of both sides gave the same figure");
		return;
	}
	v->sev = v->rel > CRITICAL_FACTOR * o->threshold ? CTL_SEV_CRITICAL : CTL_SEV_REGRESSION;
	if (v->degenerate) {
		v->sev = CTL_SEV_WARNING;
		add_note(v, "no interval of the difference: every run of both sides gave the "
			 "same figure, so run-to-run variation cannot be estimated");
	} else if (v->ci_lo <= 0) {
		char lo[40];
		ctl_fmt_exact(v->ci_lo, lo, sizeof(lo));
		v->sev = CTL_SEV_WARNING;
		add_note(v, "not significant: the runs of one side differ about as much; the "
			 "interval of the difference reaches %s", lo);
	}
	if (!v->note[0])
		add_note(v, "slower by %.1f%% over %u+%u runs", 100 * v->rel, kb, kc);
}

/* Centre metrics (mean, percentiles below 90) are stable enough from one
 * run per side; the others are tails. */
static bool metric_is_tail(const struct ctl_csv_header *h, int id)
{
	if (id == CTL_METRIC_MEAN)
		return false;
	if (id >= CTL_METRIC_PCT)
		return h->pct[id - CTL_METRIC_PCT] >= 90.0;
	return true;
}

/*
 * ctl_compare_samples() on whole-number figures, exactly: the samples less
 * the smallest of them all, so that medians, their difference and its
 * interval keep every digit in a double (what a stage's figures spread
 * over is far below 2^53 even where the figures themselves are not), and
 * the medians themselves as integers.
 */
static int exact_samples(const struct ctl_figvec *b, const struct ctl_figvec *c,
			 const struct ctl_compare_opts *o, uint64_t seed,
			 struct ctl_compare_verdict *ret)
{
	size_t nb = b->u.n, nc = c->u.n, i;
	uint64_t *u = malloc((nb + nc) * sizeof(*u)), origin = UINT64_MAX;
	double *d = malloc((nb + nc) * sizeof(*d));
	int e = -ENOMEM;

	if (!u || !d)
		goto out;
	memcpy(u, b->u.v, nb * sizeof(*u));
	memcpy(u + nb, c->u.v, nc * sizeof(*u));
	for (i = 0; i < nb + nc; i++)
		if (u[i] < origin)
			origin = u[i];
	for (i = 0; i < nb + nc; i++)
		d[i] = (double)(u[i] - origin);
	e = ctl_compare_samples(d, nb, d + nb, nc, o, seed, ret);
	if (e < 0)
		goto out;
	ctl_u64_sort(u, nb);
	ctl_u64_sort(u + nb, nc);
	set_exact(ret, ctl_u64_median_sorted(u, nb), ctl_u64_median_sorted(u + nb, nc));
	ret->cv_base = ctl_cv(b->d.v, nb);
	ret->cv_cur = ctl_cv(c->d.v, nc);
	judge(ret, o);
out:
	free(u);
	free(d);
	return e;
}

/*
 * The figure of stage `id` on side `s` exactly, when it is a plain median
 * of whole numbers (not a grouped median) and every run of the side gave
 * the same one.
 */
static bool side_exact(const struct side *s, unsigned id, bool pct, struct ctl_exact *ret)
{
	bool any = false;

	for (unsigned k = 0; k < s->nruns; k++) {
		struct ctl_figvec *f = id < s->run_cap[k] ? &s->runs[k][id] : NULL;
		struct ctl_exact x;

		if (!f || f->d.n == 0)
			continue;
		if (!ctl_figvec_exact(f) || (pct && f->d.n >= 2))
			return false;
		ctl_u64_sort(f->u.v, f->u.n);
		x = ctl_u64_median_sorted(f->u.v, f->u.n);
		if (any && (x.whole != ret->whole || x.half != ret->half))
			return false;
		*ret = x;
		any = true;
	}
	return any;
}

/* The verdict on every interval of both sides (exactly when they are
 * whole numbers). */
static int samples_verdict(const struct ctl_figvec *sb, const struct ctl_figvec *sc,
			   const struct ctl_compare_opts *o, uint64_t seed,
			   struct ctl_compare_verdict *ret)
{
	if (ctl_figvec_exact(sb) && ctl_figvec_exact(sc))
		return exact_samples(sb, sc, o, seed, ret);
	return ctl_compare_samples(sb->d.v, sb->d.n, sc->d.v, sc->d.n, o, seed, ret);
}

static int compare_stage(const struct side *b, unsigned ib, const struct side *c, unsigned ic,
			 const struct ctl_compare_opts *o, const struct ctl_stage *st, bool pct,
			 bool tail, struct ctl_compare_verdict *ret)
{
	const struct ctl_figvec *sb = &b->samples[ib], *sc = &c->samples[ic];
	double lb[CTL_COMPARE_MAX_RUNS], lc[CTL_COMPARE_MAX_RUNS];
	struct ctl_compare_opts so = *o;
	uint64_t seed = stage_seed(o->seed, st);
	struct ctl_exact xb, xc;
	unsigned kb = 0, kc = 0;
	bool exact, runs, grouped;
	int e;

	for (unsigned k = 0; k < b->nruns; k++) {
		double x = ib < b->run_cap[k] ? run_figure(&b->runs[k][ib].d, pct, b->h.unit,
							  b->tsc_min, st->value) : NAN;
		if (x > 0)
			lb[kb++] = x;
	}
	for (unsigned k = 0; k < c->nruns; k++) {
		double x = ic < c->run_cap[k] ? run_figure(&c->runs[k][ic].d, pct, c->h.unit,
							  c->tsc_min, st->value) : NAN;
		if (x > 0)
			lc[kc++] = x;
	}
	/* The interval bootstrap of the samples is not run where the
	 * verdict takes its interval from elsewhere: the runs, or grouped
	 * medians. */
	runs = kb && kc && kb + kc >= 3;
	grouped = kb && kc && !runs && pct;
	if (runs || grouped)
		so.resamples = 0;
	e = samples_verdict(sb, sc, &so, seed, ret);
	if (e < 0 || ret->nb == 0 || ret->nc == 0)
		return e;
	exact = side_exact(b, ib, pct, &xb) && side_exact(c, ic, pct, &xc);
	if (kb == 0 || kc == 0)
		return 0;
	if (runs) {
		runs_verdict(lb, kb, lc, kc, o, exact ? &xb : NULL, exact ? &xc : NULL, ret);
	} else {
		/* One run per side: the interval bootstrap, on grouped medians
		 * for a percentile so that neither the figures nor their
		 * interval move in bucket steps. */
		ret->resamples = grouped ? resamples_for(o, ret->nb + ret->nc) : ret->resamples;
		if (grouped && ret->resamples) {
			double lo, hi;

			e = grouped_bootstrap(&b->runs[0][ib].d, &c->runs[0][ic].d, b->h.unit,
					      b->tsc_min, st->value, ret->resamples, o->confidence,
					      seed, &lo, &hi);
			if (e == -ENOMEM)
				return e;
			if (e == 0) {
				ret->degenerate = lo == hi;
				ret->ci_lo = ret->degenerate ? NAN : lo;
				ret->ci_hi = ret->degenerate ? NAN : hi;
			} else if ((e = samples_verdict(sb, sc, o, seed, ret)) < 0) {
				/* not histogram figures: the plain interval bootstrap */
				return e;
			}
		}
		if (exact) {
			set_exact(ret, xb, xc);
		} else {
			ret->base = lb[0];
			ret->cur = lc[0];
			ret->delta = lc[0] - lb[0];
			ret->rel = ret->delta / lb[0];
		}
		judge(ret, o);
		if (tail && ret->sev >= CTL_SEV_REGRESSION) {
			ret->sev = CTL_SEV_WARNING;
			add_note(ret, "one run per side: a tail verdict needs several runs per side");
		}
	}
	ret->kb = kb;
	ret->kc = kc;
	return 0;
}

int ctl_compare_files(const char *base, const char *cur, const struct ctl_compare_opts *o,
		      struct ctl_compare_result *ret, char *err, size_t errlen)
{
	struct side *b = calloc(1, sizeof(*b)), *c = calloc(1, sizeof(*c));
	struct ctl_compare_result r;
	unsigned cap = 0, i;
	bool pct, tail;
	int e;

	memset(&r, 0, sizeof(r));
	if (!b || !c) {
		free(b);
		free(c);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->metric_name = c->metric_name = o->metric;
	if ((e = read_side(b, base, err, errlen)) < 0 || (e = read_side(c, cur, err, errlen)) < 0)
		goto out;
	if (strcmp(b->h.unit, c->h.unit)) {
		snprintf(err, errlen, "%s is in %s and %s in %s: runs in different units are "
			 "not compared (no conversion is attempted); record both with the same "
			 "[output] unit", b->paths[0], b->h.unit, c->paths[0], c->h.unit);
		e = -EPROTO;
		goto out;
	}
	{
		int id = ctl_csv_metric_lookup(&b->h, o->metric);
		pct = id >= CTL_METRIC_PCT;
		tail = metric_is_tail(&b->h, id);
		snprintf(r.metric, sizeof(r.metric), "%s", ctl_csv_metric_name(&b->h, id));
	}
	snprintf(r.unit, sizeof(r.unit), "%s", b->h.unit);
	r.base_rows = b->rows;
	r.cur_rows = c->rows;
	r.base_runs = b->nruns;
	r.cur_runs = c->nruns;
	r.tail = tail;
	add_file_notes(&r, b, c);

	for (i = 0; i < b->stages.n; i++) {
		const struct ctl_stage *st = &b->stages.items[i];
		int j = ctl_stages_find(&c->stages, st->point, st->stage, st->value);
		struct ctl_compare_stage *cs;

		if ((e = add_stage(&r, st, j < 0 ? CTL_ONLY_BASE : CTL_IN_BOTH, &cap)) < 0)
			goto nomem;
		if (j < 0)
			continue;
		cs = &r.stages[r.n - 1];
		e = compare_stage(b, i, c, (unsigned)j, o, st, pct, tail, &cs->v);
		if (e < 0)
			goto nomem;
		r.criticals += cs->v.sev == CTL_SEV_CRITICAL;
		r.regressions += cs->v.sev >= CTL_SEV_REGRESSION;
		r.warnings += cs->v.sev == CTL_SEV_WARNING;
	}
	for (i = 0; i < c->stages.n; i++) {
		const struct ctl_stage *st = &c->stages.items[i];
		if (ctl_stages_find(&b->stages, st->point, st->stage, st->value) < 0 &&
		    (e = add_stage(&r, st, CTL_ONLY_CURRENT, &cap)) < 0)
			goto nomem;
	}
	*ret = r;
	e = 0;
	goto out_sides;
nomem:
	snprintf(err, errlen, "out of memory");
	e = -ENOMEM;
out:
	ctl_compare_result_free(&r);
out_sides:
	side_free(b);
	side_free(c);
	free(b);
	free(c);
	return e;
}

void ctl_compare_result_free(struct ctl_compare_result *r)
{
	for (unsigned i = 0; i < r->n; i++) {
		free(r->stages[i].point);
		free(r->stages[i].stage);
	}
	free(r->stages);
	memset(r, 0, sizeof(*r));
}

/* ---- output ------------------------------------------------------------ */

static void fig(const struct ctl_compare_stage *s, const char *unit, double v, char *buf,
		size_t n)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else if (s->value)
		ctl_fmt_si(v, buf, n);
	else
		ctl_fmt_duration(v, unit, buf, n);
}

static void signed_fig(const struct ctl_compare_stage *s, const char *unit, double v,
		       char *buf, size_t n)
{
	fig(s, unit, v, buf + (v > 0), n - (v > 0));
	if (v > 0)
		buf[0] = '+';
}

/* base, current and delta with every digit, when the verdict has them
 * exactly; false otherwise.  `plus` signs a positive delta. */
static bool exact_texts(const struct ctl_compare_verdict *v, bool plus, char t[3][48])
{
	if (!v->exact)
		return false;
	ctl_exact_text(v->base_x, t[0], sizeof(t[0]));
	ctl_exact_text(v->cur_x, t[1], sizeof(t[1]));
	ctl_exact_diff_text(v->base_x, v->cur_x, plus, t[2], sizeof(t[2]));
	return true;
}

/* Machine-readable figures keep every digit. */
static void raw(struct ctl_table *t, unsigned col, double v)
{
	char b[40];

	if (isnan(v))
		return;
	ctl_fmt_exact(v, b, sizeof(b));
	ctl_table_set(t, col, b);
}

static void csv_rows(struct ctl_table *t, const struct ctl_compare_result *r)
{
	char b[64];
	static const char *const cols[] = { "point", "stage", "kind", "metric", "n_base",
					    "n_current" };
	static const char *const figs[] = { "base", "current", "delta" };

	for (unsigned i = 0; i < 6; i++)
		ctl_table_add_column(t, cols[i], CTL_ALIGN_LEFT, false);
	for (unsigned i = 0; i < 3; i++) {
		snprintf(b, sizeof(b), "%s_%s", figs[i], r->unit);
		ctl_table_add_column(t, b, CTL_ALIGN_LEFT, false);
	}
	ctl_table_add_column(t, "change", CTL_ALIGN_LEFT, false);
	snprintf(b, sizeof(b), "ci_low_%s", r->unit);
	ctl_table_add_column(t, b, CTL_ALIGN_LEFT, false);
	snprintf(b, sizeof(b), "ci_high_%s", r->unit);
	ctl_table_add_column(t, b, CTL_ALIGN_LEFT, false);
	ctl_table_add_column(t, "cv_base", CTL_ALIGN_LEFT, false);
	ctl_table_add_column(t, "cv_current", CTL_ALIGN_LEFT, false);
	ctl_table_add_column(t, "severity", CTL_ALIGN_LEFT, false);
	ctl_table_add_column(t, "note", CTL_ALIGN_LEFT, false);
	for (unsigned i = 0; i < r->n; i++) {
		const struct ctl_compare_stage *s = &r->stages[i];
		const struct ctl_compare_verdict *v = &s->v;
		char x[3][48];
		ctl_table_add_row(t);
		ctl_table_set(t, 0, s->point);
		ctl_table_set(t, 1, s->stage);
		ctl_table_set(t, 2, s->value ? "value" : "latency");
		ctl_table_set(t, 3, r->metric);
		if (s->presence != CTL_IN_BOTH) {
			ctl_table_set(t, 14, "informational");
			ctl_table_set(t, 15, s->presence == CTL_ONLY_BASE ? "only in base" :
					     "only in current");
			continue;
		}
		ctl_table_setf(t, 4, "%zu", v->nb);
		ctl_table_setf(t, 5, "%zu", v->nc);
		if (exact_texts(v, false, x)) {
			for (unsigned f = 0; f < 3; f++)
				ctl_table_set(t, 6 + f, x[f]);
		} else {
			raw(t, 6, v->base);
			raw(t, 7, v->cur);
			raw(t, 8, v->delta);
		}
		if (isfinite(v->rel))
			raw(t, 9, v->rel);
		raw(t, 10, v->ci_lo);
		raw(t, 11, v->ci_hi);
		raw(t, 12, v->cv_base);
		raw(t, 13, v->cv_cur);
		ctl_table_set(t, 14, ctl_severity_name(v->sev));
		ctl_table_set(t, 15, v->note);
	}
}

int ctl_compare_print(FILE *out, const char *base, const char *cur,
		      const struct ctl_compare_result *r, const struct ctl_compare_opts *o,
		      enum ctl_format fmt, unsigned width)
{
	struct ctl_table *t = ctl_table_new(), *one = ctl_table_new();
	char b[64], c2[64], d[64], cb[512], cc[512];
	unsigned matched = 0, reduced = 0;
	int e = 0;

	if (!t || !one) {
		ctl_table_free(t);
		ctl_table_free(one);
		return -ENOMEM;
	}
	if (fmt == CTL_FORMAT_CSV) {
		csv_rows(t, r);
		e = ctl_table_print(t, out, fmt, 0);
		goto out;
	}

	ctl_text_clean(cb, base, sizeof(cb));
	ctl_text_clean(cc, cur, sizeof(cc));
	ctl_fmt_duration(o->min_delta, r->unit, d, sizeof(d));
	fprintf(out, "base:    %s (%u run(s), %lu rows)\ncurrent: %s (%u run(s), %lu rows)\n",
		cb, r->base_runs, r->base_rows, cc, r->cur_runs, r->cur_rows);
	if (r->base_runs + r->cur_runs >= 3)
		fprintf(out, "metric %s, unit %s; each run's median interval is one sample; "
			"regression when it grows by more than %g%% and more than %s; critical "
			"beyond %g%%; capped at warning when the %g%% interval of the difference "
			"(Welch's t over the runs) reaches 0\n", r->metric, r->unit,
			100 * o->threshold, d, 100 * CRITICAL_FACTOR * o->threshold,
			100 * o->confidence);
	else
		fprintf(out, "metric %s per interval, unit %s; regression when the median grows "
			"by more than %g%% and more than %s; critical beyond %g%%; capped at "
			"warning when cv > %g or the %g%% bootstrap interval (seed %llu) reaches "
			"0\n", r->metric, r->unit, 100 * o->threshold, d,
			100 * CRITICAL_FACTOR * o->threshold, o->max_cv, 100 * o->confidence,
			(unsigned long long)o->seed);
	for (unsigned i = 0; i < r->nnotes; i++)
		fprintf(out, "note: %s\n", r->notes[i]);
	fputc('\n', out);

	ctl_table_add_column(t, "point", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "stage", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "n", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "base", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "current", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "delta", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "change", CTL_ALIGN_RIGHT, false);
	snprintf(b, sizeof(b), "%g%% CI of delta", 100 * o->confidence);
	ctl_table_add_column(t, b, CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "cv", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "verdict", CTL_ALIGN_LEFT, false);
	ctl_table_add_column(t, "note", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(one, "point", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(one, "stage", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(one, "only in", CTL_ALIGN_LEFT, false);
	for (unsigned i = 0; i < r->n; i++) {
		const struct ctl_compare_stage *s = &r->stages[i];
		const struct ctl_compare_verdict *v = &s->v;
		char x[3][48];
		if (s->presence != CTL_IN_BOTH) {
			ctl_table_add_row(one);
			ctl_table_set(one, 0, s->point);
			ctl_table_set(one, 1, s->stage);
			ctl_table_set(one, 2, s->presence == CTL_ONLY_BASE ? "base" : "current");
			continue;
		}
		matched++;
		reduced += v->resamples && v->resamples < o->resamples;
		ctl_table_add_row(t);
		ctl_table_set(t, 0, s->point);
		ctl_table_set(t, 1, s->stage);
		if (v->runs_test)
			ctl_table_setf(t, 2, "%u/%u runs", v->kb, v->kc);
		else
			ctl_table_setf(t, 2, "%zu/%zu", v->nb, v->nc);
		if (s->value && exact_texts(v, true, x)) {
			/* a value's every digit: a count or sequence number
			 * shortened to 9.22E would hide the very change shown */
			for (unsigned f = 0; f < 3; f++)
				ctl_table_set(t, 3 + f, x[f]);
		} else {
			fig(s, r->unit, v->base, b, sizeof(b));
			ctl_table_set(t, 3, b);
			fig(s, r->unit, v->cur, b, sizeof(b));
			ctl_table_set(t, 4, b);
			signed_fig(s, r->unit, v->delta, b, sizeof(b));
			ctl_table_set(t, 5, b);
		}
		if (isfinite(v->rel))
			ctl_table_setf(t, 6, "%+.1f%%", 100 * v->rel);
		else
			ctl_table_set(t, 6, isnan(v->rel) ? "-" : v->rel > 0 ? "+inf" : "-inf");
		if (!isnan(v->ci_lo)) {
			signed_fig(s, r->unit, v->ci_lo, b, sizeof(b));
			signed_fig(s, r->unit, v->ci_hi, c2, sizeof(c2));
			ctl_table_setf(t, 7, "%s..%s", b, c2);
		} else {
			ctl_table_set(t, 7, v->degenerate ? "none (see note)" : "-");
		}
		ctl_table_setf(t, 8, "%.2f/%.2f", v->cv_base, v->cv_cur);
		ctl_table_set(t, 9, ctl_severity_name(v->sev));
		ctl_table_set(t, 10, v->note);
	}
	if (matched)
		e = ctl_table_print(t, out, fmt, width);
	else
		fprintf(out, "no stage is present in both files\n");
	if (e == 0 && ctl_table_rows(one)) {
		fprintf(out, "\nstages present in only one file (not compared):\n%s",
			fmt == CTL_FORMAT_MD ? "\n" : "");
		e = ctl_table_print(one, out, fmt, width);
	}
	if (reduced)
		fprintf(out, "\n%u stage(s) with very many intervals used fewer bootstrap "
			"resamples (at least %u) to keep the run short\n", reduced,
			BOOTSTRAP_FLOOR);
	fprintf(out, "\n");
	if (r->regressions)
		fprintf(out, "result: %u stage(s) regressed (%u critical), %u warning(s)\n",
			r->regressions, r->criticals, r->warnings);
	else
		fprintf(out, "result: no regression, %u warning(s)\n", r->warnings);
out:
	ctl_table_free(t);
	ctl_table_free(one);
	if (e == 0 && ferror(out))
		e = -EIO;
	return e;
}

static void json_fig(struct ctl_json *j, const char *key, double v)
{
	ctl_json_key(j, key);
	if (isfinite(v))
		ctl_json_double(j, v);
	else
		ctl_json_null(j);
}

static void json_paths(struct ctl_json *j, const char *key, const char *arg)
{
	struct side s;
	char err[200];

	memset(&s, 0, sizeof(s));
	ctl_json_key(j, key);
	ctl_json_array_begin(j);
	if (side_split(&s, arg, err, sizeof(err)) == 0)
		for (unsigned k = 0; k < s.nruns; k++)
			ctl_json_string(j, s.paths[k]);
	ctl_json_array_end(j);
}

int ctl_compare_print_json(FILE *out, const char *base, const char *cur,
			   const struct ctl_compare_result *r, const struct ctl_compare_opts *o)
{
	struct ctl_json j;

	ctl_json_init(&j, out);
	ctl_json_object_begin(&j);
	json_paths(&j, "base", base);
	json_paths(&j, "current", cur);
	ctl_json_kv_string(&j, "metric", r->metric);
	ctl_json_kv_string(&j, "unit", r->unit);
	ctl_json_kv_double(&j, "threshold", o->threshold);
	ctl_json_kv_double(&j, "min_delta", o->min_delta);
	ctl_json_kv_double(&j, "max_cv", o->max_cv);
	ctl_json_kv_double(&j, "confidence", o->confidence);
	ctl_json_kv_u64(&j, "seed", o->seed);
	ctl_json_kv_u64(&j, "base_rows", r->base_rows);
	ctl_json_kv_u64(&j, "current_rows", r->cur_rows);
	ctl_json_key(&j, "notes");
	ctl_json_array_begin(&j);
	for (unsigned i = 0; i < r->nnotes; i++)
		ctl_json_string(&j, r->notes[i]);
	ctl_json_array_end(&j);
	ctl_json_key(&j, "stages");
	ctl_json_array_begin(&j);
	for (unsigned i = 0; i < r->n; i++) {
		const struct ctl_compare_stage *s = &r->stages[i];
		const struct ctl_compare_verdict *v = &s->v;
		char x[3][48];

		ctl_json_object_begin(&j);
		ctl_json_kv_string(&j, "point", s->point);
		ctl_json_kv_string(&j, "stage", s->stage);
		ctl_json_kv_string(&j, "kind", s->value ? "value" : "latency");
		ctl_json_kv_string(&j, "presence", s->presence == CTL_IN_BOTH ? "both" :
				   s->presence == CTL_ONLY_BASE ? "base" : "current");
		if (s->presence == CTL_IN_BOTH) {
			ctl_json_kv_u64(&j, "base_runs", v->kb);
			ctl_json_kv_u64(&j, "current_runs", v->kc);
			ctl_json_kv_u64(&j, "base_intervals", v->nb);
			ctl_json_kv_u64(&j, "current_intervals", v->nc);
			if (exact_texts(v, false, x)) {
				static const char *const keys[] = { "base", "current", "delta" };
				for (unsigned f = 0; f < 3; f++) {
					ctl_json_key(&j, keys[f]);
					ctl_json_number_text(&j, x[f]);
				}
			} else {
				json_fig(&j, "base", v->base);
				json_fig(&j, "current", v->cur);
				json_fig(&j, "delta", v->delta);
			}
			json_fig(&j, "change", v->rel);
			json_fig(&j, "ci_low", v->ci_lo);
			json_fig(&j, "ci_high", v->ci_hi);
			ctl_json_kv_string(&j, "ci_method", v->degenerate || v->nb == 0 ||
					   v->nc == 0 ? "none" : v->runs_test ? "welch-runs" :
					   "bootstrap-intervals");
			json_fig(&j, "cv_base", v->cv_base);
			json_fig(&j, "cv_current", v->cv_cur);
			ctl_json_kv_string(&j, "severity", ctl_severity_name(v->sev));
			ctl_json_kv_string(&j, "note", v->note);
		}
		ctl_json_object_end(&j);
	}
	ctl_json_array_end(&j);
	ctl_json_kv_u64(&j, "regressions", r->regressions);
	ctl_json_kv_u64(&j, "critical", r->criticals);
	ctl_json_kv_u64(&j, "warnings", r->warnings);
	ctl_json_object_end(&j);
	return ctl_json_finish(&j);
}

/* XML text: the five predefined entities; control characters other than
 * tab and newline (not allowed in XML 1.0) become '?'. */
static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		switch (ch) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			fputc(ch < 0x20 && ch != '\t' && ch != '\n' ? '?' : ch, f);
		}
	}
}

/* A figure of the JUnit text: every digit, "-" where there is none (a
 * stage without samples on one side), never "nan". */
static const char *junit_fig(double v, char *buf, size_t n)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else if (isinf(v))
		snprintf(buf, n, "%s", v > 0 ? "+inf" : "-inf");
	else
		ctl_fmt_exact(v, buf, n);
	return buf;
}

int ctl_compare_write_junit(FILE *f, const struct ctl_compare_result *r)
{
	unsigned tests = 0;

	for (unsigned i = 0; i < r->n; i++)
		tests += r->stages[i].presence == CTL_IN_BOTH;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<testsuites tests=\"%u\" failures=\"%u\">\n", tests, r->regressions);
	fprintf(f, "  <testsuite name=\"perfmonctl compare ");
	xml_text(f, r->metric);
	fprintf(f, "\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"0\">\n", tests,
		r->regressions);
	for (unsigned i = 0; i < r->n; i++) {
		const struct ctl_compare_stage *s = &r->stages[i];
		const struct ctl_compare_verdict *v = &s->v;
		char b[48], c[48], d[40], x[3][48];

		if (s->presence != CTL_IN_BOTH)
			continue;
		fputs("    <testcase classname=\"", f);
		xml_text(f, s->point);
		fputs("\" name=\"", f);
		xml_text(f, s->stage);
		fputs("\"", f);
		junit_fig(v->base, b, sizeof(b));
		junit_fig(v->cur, c, sizeof(c));
		if (exact_texts(v, false, x)) {
			snprintf(b, sizeof(b), "%s", x[0]);
			snprintf(c, sizeof(c), "%s", x[1]);
		}
		junit_fig(v->rel, d, sizeof(d));
		if (v->sev >= CTL_SEV_REGRESSION) {
			fprintf(f, ">\n      <failure type=\"%s\" message=\"", ctl_severity_name(v->sev));
			fprintf(f, "%s %s: base %s, current %s %s, change %s: ", r->metric,
				ctl_severity_name(v->sev), b, c, r->unit, d);
			xml_text(f, v->note);
			fputs("\"/>\n    </testcase>\n", f);
		} else {
			fputs(">\n      <system-out>", f);
			fprintf(f, "%s %s: base %s, current %s %s, change %s: ", r->metric,
				ctl_severity_name(v->sev), b, c, r->unit, d);
			xml_text(f, v->note);
			fputs("</system-out>\n    </testcase>\n", f);
		}
	}
	fputs("  </testsuite>\n</testsuites>\n", f);
	return ferror(f) ? -EIO : 0;
}

enum {
	OPT_FORMAT = 0x100, OPT_METRIC, OPT_THRESHOLD, OPT_MIN_DELTA, OPT_MAX_CV,
	OPT_RESAMPLES, OPT_SEED, OPT_FAIL, OPT_CONFIDENCE, OPT_MIN_SAMPLES, OPT_JUNIT,
};

int ctl_compare_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "metric", required_argument, NULL, OPT_METRIC },
		{ "threshold", required_argument, NULL, OPT_THRESHOLD },
		{ "min-delta", required_argument, NULL, OPT_MIN_DELTA },
		{ "max-cv", required_argument, NULL, OPT_MAX_CV },
		{ "resamples", required_argument, NULL, OPT_RESAMPLES },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "confidence", required_argument, NULL, OPT_CONFIDENCE },
		{ "min-samples", required_argument, NULL, OPT_MIN_SAMPLES },
		{ "fail-on-regression", no_argument, NULL, OPT_FAIL },
		{ "junit", required_argument, NULL, OPT_JUNIT },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl_compare_opts o;
	struct ctl_compare_result r;
	const char *format = NULL, *cmd = argv[0], *junit = NULL;
	enum ctl_format fmt;
	bool fail = false;
	char msg[1200];
	double v;
	uint64_t u;
	int c, e;

	ctl_compare_defaults(&o);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			format = optarg;
			break;
		case OPT_METRIC:
			o.metric = optarg;
			break;
		case OPT_THRESHOLD:
			/* "5%" and "0.05" mean the same */
			if (optarg[0] && optarg[strlen(optarg) - 1] == '%') {
				char num[64];
				snprintf(num, sizeof(num), "%.*s", (int)strlen(optarg) - 1, optarg);
				if (ctl_parse_number(num, &v) < 0 || v < 0)
					return ctl_usage_error(err, cmd, "--threshold %s: not a "
							       "percentage", optarg);
				o.threshold = v / 100;
			} else if (ctl_parse_number(optarg, &v) < 0 || v < 0) {
				return ctl_usage_error(err, cmd, "--threshold %s: give a fraction "
						       "(0.05) or a percentage (5%%)", optarg);
			} else {
				o.threshold = v;
			}
			break;
		case OPT_MIN_DELTA:
			if (ctl_parse_number(optarg, &o.min_delta) < 0 || o.min_delta < 0)
				return ctl_usage_error(err, cmd, "--min-delta %s: give a number in "
						       "the files' unit", optarg);
			break;
		case OPT_MAX_CV:
			if (ctl_parse_number(optarg, &o.max_cv) < 0 || o.max_cv < 0)
				return ctl_usage_error(err, cmd, "--max-cv %s: not a number >= 0",
						       optarg);
			break;
		case OPT_RESAMPLES:
			if (ctl_parse_u64(optarg, &u) < 0 || u > 1000000)
				return ctl_usage_error(err, cmd, "--resamples %s: 0 to 1000000",
						       optarg);
			o.resamples = (unsigned)u;
			break;
		case OPT_SEED:
			if (ctl_parse_u64(optarg, &o.seed) < 0)
				return ctl_usage_error(err, cmd, "--seed %s: not an integer", optarg);
			break;
		case OPT_CONFIDENCE:
			if (ctl_parse_number(optarg, &o.confidence) < 0 || o.confidence <= 0 ||
			    o.confidence >= 1)
				return ctl_usage_error(err, cmd, "--confidence %s: between 0 and 1 "
						       "(e.g. 0.95)", optarg);
			break;
		case OPT_MIN_SAMPLES:
			if (ctl_parse_u64(optarg, &u) < 0 || u > 1000000)
				return ctl_usage_error(err, cmd, "--min-samples %s: not a count",
						       optarg);
			o.min_samples = (unsigned)u;
			break;
		case OPT_FAIL:
			fail = true;
			break;
		case OPT_JUNIT:
			if (!optarg[0])
				return ctl_usage_error(err, cmd, "--junit needs a file name");
			junit = optarg;
			break;
		default:
			return ctl_usage_error(err, cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind + 2 != argc)
		return ctl_usage_error(err, cmd, "give BASE.csv and CURRENT.csv (or comma lists "
				       "of runs: A1.csv,A2.csv B1.csv,B2.csv)");
	if (ctl_cli_format_json(format, &fmt, err, cmd) < 0)
		return CTL_EXIT_FAILURE;
	e = ctl_compare_files(argv[optind], argv[optind + 1], &o, &r, msg, sizeof(msg));
	if (e < 0) {
		char clean[sizeof(msg)];
		ctl_text_clean(clean, msg, sizeof(clean));
		fprintf(err, "perfmonctl compare: %s\n", clean);
		return e == -ENOMEM ? CTL_EXIT_FAILURE : CTL_EXIT_BAD_FILE;
	}
	if (fmt == CTL_FORMAT_CSV)
		for (unsigned i = 0; i < r.nnotes; i++)
			fprintf(err, "perfmonctl compare: note: %s\n", r.notes[i]);
	if (junit) {
		FILE *jf = fopen(junit, "w");
		int je = jf ? ctl_compare_write_junit(jf, &r) : -errno;

		if (jf && fclose(jf) != 0 && je == 0)
			je = -errno;
		if (je < 0) {
			char clean[512];
			ctl_text_clean(clean, junit, sizeof(clean));
			fprintf(err, "perfmonctl compare: cannot write the JUnit report %s: %s\n",
				clean, strerror(-je));
			ctl_compare_result_free(&r);
			return CTL_EXIT_FAILURE;
		}
	}
	if (fmt == CTL_FORMAT_JSON)
		e = ctl_compare_print_json(out, argv[optind], argv[optind + 1], &r, &o);
	else
		e = ctl_compare_print(out, argv[optind], argv[optind + 1], &r, &o, fmt,
				      fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0);
	c = r.regressions;
	ctl_compare_result_free(&r);
	if (e < 0) {
		fprintf(err, "perfmonctl compare: cannot write the output\n");
		return CTL_EXIT_FAILURE;
	}
	return fail && c ? CTL_EXIT_REGRESSION : CTL_EXIT_OK;
}
