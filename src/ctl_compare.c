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
 */
#include "build-config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cli.h"
#include "ctl_compare.h"
#include "ctl_csv.h"
#include "ctl_stats.h"
#include "ctl_text.h"

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

int ctl_compare_samples(const double *base, size_t nb, const double *cur, size_t nc,
			const struct ctl_compare_opts *o, uint64_t seed,
			struct ctl_compare_verdict *ret)
{
	struct ctl_compare_verdict v;
	bool worse, better;
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
	if (v.base != 0)
		v.rel = v.delta / fabs(v.base);
	else
		v.rel = v.delta > 0 ? INFINITY : v.delta < 0 ? -INFINITY : 0;

	v.resamples = o->resamples;
	if ((double)v.resamples * (double)(nb + nc) > BOOTSTRAP_BUDGET) {
		double fit = BOOTSTRAP_BUDGET / (double)(nb + nc);
		v.resamples = fit < BOOTSTRAP_FLOOR ? BOOTSTRAP_FLOOR : (unsigned)fit;
		if (v.resamples > o->resamples)
			v.resamples = o->resamples;
	}
	if (v.resamples) {
		e = ctl_bootstrap_median_diff(base, nb, cur, nc, v.resamples, o->confidence, seed,
					      &v.ci_lo, &v.ci_hi);
		if (e < 0)
			return e;
	}

	worse = v.rel > o->threshold && v.delta > o->min_delta;
	better = v.rel < -o->threshold && -v.delta > o->min_delta;
	if (!worse) {
		v.sev = CTL_SEV_INFO;
		snprintf(v.note, sizeof(v.note), "%s", better ? "improved" :
			 v.delta == 0 ? "unchanged" : "within thresholds");
		*ret = v;
		return 0;
	}
	v.sev = v.rel > CRITICAL_FACTOR * o->threshold ? CTL_SEV_CRITICAL : CTL_SEV_REGRESSION;
	if (v.cv_base > o->max_cv || v.cv_cur > o->max_cv) {
		v.sev = CTL_SEV_WARNING;
		add_note(&v, "noisy: cv %.2f > %.2f", v.cv_base > v.cv_cur ? v.cv_base : v.cv_cur,
			 o->max_cv);
	}
	if (!isnan(v.ci_lo) && v.ci_lo <= 0) {
		v.sev = CTL_SEV_WARNING;
		add_note(&v, "not significant: the interval of the difference reaches %.3g",
			 v.ci_lo);
	}
	if (nb < o->min_samples || nc < o->min_samples) {
		v.sev = CTL_SEV_WARNING;
		add_note(&v, "few samples: %zu/%zu intervals", nb, nc);
	}
	if (!v.note[0])
		add_note(&v, "slower by %.1f%%", 100 * v.rel);
	*ret = v;
	return 0;
}

/* ---- reading the two files ------------------------------------------- */

struct side {
	const char *path;
	const char *metric_name;
	int metric;                /* id, or -1 before the header is seen */
	bool metric_missing;
	struct ctl_stages stages;
	struct ctl_vec *samples;
	unsigned cap;
	struct ctl_csv_header h;
	unsigned long rows;
	double tsc_min, tsc_max;
};

static int side_row(void *ctx, const struct ctl_csv_header *h, const struct ctl_csv_row *r)
{
	struct side *s = ctx;
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
	if (ctl_grow((void **)&s->samples, &s->cap, (unsigned)id, sizeof(*s->samples)) < 0)
		return -ENOMEM;
	if (r->count == 0)
		return 0;   /* anomaly-only rows carry no figure */
	return ctl_vec_push(&s->samples[id], ctl_csv_metric(r, s->metric));
}

static void side_free(struct side *s)
{
	for (unsigned i = 0; i < s->stages.n; i++)
		ctl_vec_free(&s->samples[i]);
	free(s->samples);
	ctl_stages_free(&s->stages);
}

static void list_columns(const struct ctl_csv_header *h, char *buf, size_t n)
{
	size_t l = (size_t)snprintf(buf, n, "min, mean, stddev, max");
	for (unsigned i = 0; i < h->npct && l < n; i++)
		l += (size_t)snprintf(buf + l, n - l, ", %s", h->pct_label[i]);
}

static int read_side(struct side *s, char *err, size_t errlen)
{
	char cols[300];
	int e;

	s->metric = -1;
	ctl_stages_init(&s->stages);
	e = ctl_csv_read_file(s->path, side_row, s, &s->h, err, errlen);
	if (e == 0 && s->metric < 0) {
		/* No rows: the header alone decides whether the metric exists. */
		s->metric = ctl_csv_metric_lookup(&s->h, s->metric_name);
		s->metric_missing = s->metric < 0;
	}
	if (s->metric_missing) {
		struct ctl_csv_header h;
		char dummy[8];
		/* The reader stopped at the first row; its header is what we need. */
		if (e != 0)
			ctl_csv_read_file(s->path, NULL, NULL, &h, dummy, sizeof(dummy));
		else
			h = s->h;
		list_columns(&h, cols, sizeof(cols));
		snprintf(err, errlen, "%s has no '%s' column to compare (it has: %s)", s->path,
			 s->metric_name, cols);
		return -ENOENT;
	}
	return e;
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
	char lb[200], lc[200];

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
	    fabs(b->tsc_max - c->tsc_min) > 0.01 * c->tsc_min)
		snprintf(r->notes[r->nnotes++], sizeof(r->notes[0]),
			 "the runs had different TSC rates (%.3f vs %.3f GHz): figures in cycles "
			 "are not directly comparable", b->tsc_max / 1e9, c->tsc_min / 1e9);
}

int ctl_compare_files(const char *base, const char *cur, const struct ctl_compare_opts *o,
		      struct ctl_compare_result *ret, char *err, size_t errlen)
{
	struct side b = { .path = base, .metric_name = o->metric };
	struct side c = { .path = cur, .metric_name = o->metric };
	struct ctl_compare_result r;
	unsigned cap = 0, i;
	int e;

	memset(&r, 0, sizeof(r));
	if ((e = read_side(&b, err, errlen)) < 0 || (e = read_side(&c, err, errlen)) < 0)
		goto out;
	if (strcmp(b.h.unit, c.h.unit)) {
		snprintf(err, errlen, "%s is in %s and %s in %s: runs in different units are "
			 "not compared (no conversion is attempted); record both with the same "
			 "[output] unit", base, b.h.unit, cur, c.h.unit);
		e = -EPROTO;
		goto out;
	}
	snprintf(r.unit, sizeof(r.unit), "%s", b.h.unit);
	snprintf(r.metric, sizeof(r.metric), "%s", ctl_csv_metric_name(&b.h, b.metric));
	r.base_rows = b.rows;
	r.cur_rows = c.rows;
	add_file_notes(&r, &b, &c);

	for (i = 0; i < b.stages.n; i++) {
		const struct ctl_stage *st = &b.stages.items[i];
		int j = ctl_stages_find(&c.stages, st->point, st->stage, st->value);
		struct ctl_compare_stage *cs;

		if ((e = add_stage(&r, st, j < 0 ? CTL_ONLY_BASE : CTL_IN_BOTH, &cap)) < 0)
			goto nomem;
		if (j < 0)
			continue;
		cs = &r.stages[r.n - 1];
		e = ctl_compare_samples(b.samples[i].v, b.samples[i].n, c.samples[j].v,
					c.samples[j].n, o, stage_seed(o->seed, st), &cs->v);
		if (e < 0)
			goto nomem;
		r.criticals += cs->v.sev == CTL_SEV_CRITICAL;
		r.regressions += cs->v.sev >= CTL_SEV_REGRESSION;
		r.warnings += cs->v.sev == CTL_SEV_WARNING;
	}
	for (i = 0; i < c.stages.n; i++) {
		const struct ctl_stage *st = &c.stages.items[i];
		if (ctl_stages_find(&b.stages, st->point, st->stage, st->value) < 0 &&
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
	side_free(&b);
	side_free(&c);
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

static void raw(struct ctl_table *t, unsigned col, double v)
{
	if (!isnan(v))
		ctl_table_setf(t, col, "%.6g", v);
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
		raw(t, 6, v->base);
		raw(t, 7, v->cur);
		raw(t, 8, v->delta);
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
	fprintf(out, "base:    %s (%lu rows)\ncurrent: %s (%lu rows)\n", cb, r->base_rows, cc,
		r->cur_rows);
	fprintf(out, "metric %s per interval, unit %s; regression when the median grows by "
		"more than %g%% and more than %s; critical beyond %g%%; capped at warning "
		"when cv > %g or the %g%% bootstrap interval (seed %llu) reaches 0\n",
		r->metric, r->unit, 100 * o->threshold, d, 100 * CRITICAL_FACTOR * o->threshold,
		o->max_cv, 100 * o->confidence, (unsigned long long)o->seed);
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
		ctl_table_setf(t, 2, "%zu/%zu", v->nb, v->nc);
		fig(s, r->unit, v->base, b, sizeof(b));
		ctl_table_set(t, 3, b);
		fig(s, r->unit, v->cur, b, sizeof(b));
		ctl_table_set(t, 4, b);
		signed_fig(s, r->unit, v->delta, b, sizeof(b));
		ctl_table_set(t, 5, b);
		if (isfinite(v->rel))
			ctl_table_setf(t, 6, "%+.1f%%", 100 * v->rel);
		else
			ctl_table_set(t, 6, isnan(v->rel) ? "-" : v->rel > 0 ? "+inf" : "-inf");
		if (!isnan(v->ci_lo)) {
			signed_fig(s, r->unit, v->ci_lo, b, sizeof(b));
			signed_fig(s, r->unit, v->ci_hi, c2, sizeof(c2));
			ctl_table_setf(t, 7, "%s..%s", b, c2);
		} else {
			ctl_table_set(t, 7, "-");
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

enum {
	OPT_FORMAT = 0x100, OPT_METRIC, OPT_THRESHOLD, OPT_MIN_DELTA, OPT_MAX_CV,
	OPT_RESAMPLES, OPT_SEED, OPT_FAIL, OPT_CONFIDENCE, OPT_MIN_SAMPLES,
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
		{ NULL, 0, NULL, 0 },
	};
	struct ctl_compare_opts o;
	struct ctl_compare_result r;
	const char *format = NULL, *cmd = argv[0];
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
		default:
			return ctl_usage_error(err, cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind + 2 != argc)
		return ctl_usage_error(err, cmd, "give BASE.csv and CURRENT.csv");
	if (ctl_cli_format(format, &fmt, err, cmd) < 0)
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
