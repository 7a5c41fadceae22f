/*
 * ctl_report.c - whole-file figures per point and stage.
 *
 * Rows are folded as they stream out of the reader, so memory grows with
 * the number of stages and intervals, not with the file's bytes.  Means and
 * standard deviations are combined exactly from each interval's count,
 * mean and stddev (Chan's pairwise update); collector-wide counters
 * (dropped, stalled) repeat on every row of an interval, so they are taken
 * once per interval.
 *
 * Value rows hold whole numbers up to 2^64 - 1, more digits than a double
 * has: their min, max and percentiles are carried as the integers the file
 * wrote, and a mean above 2^53 as an integer offset plus a small remainder,
 * so the machine-readable formats print every digit the file had.
 */
#include "build-config.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_cli.h"
#include "ctl_csv.h"
#include "ctl_json.h"
#include "ctl_report.h"
#include "ctl_outliers.h"
#include "ctl_stats.h"
#include "ctl_text.h"

bool ctl_filter_match(const struct ctl_filter *f, const char *point, const char *stage)
{
	bool ok = f->npoints == 0;

	for (unsigned i = 0; i < f->npoints && !ok; i++)
		ok = fnmatch(f->points[i], point, 0) == 0;
	if (!ok)
		return false;
	if (f->nstages == 0)
		return true;
	for (unsigned i = 0; i < f->nstages; i++)
		if (fnmatch(f->stages[i], stage, 0) == 0)
			return true;
	return false;
}

int ctl_filter_add(struct ctl_filter *f, bool stage, const char *pattern)
{
	const char ***list = stage ? &f->stages : &f->points;
	unsigned *n = stage ? &f->nstages : &f->npoints;
	const char **l = realloc(*list, (*n + 1) * sizeof(*l));

	if (!l)
		return -ENOMEM;
	l[(*n)++] = pattern;
	*list = l;
	return 0;
}

void ctl_filter_free(struct ctl_filter *f)
{
	free(f->points);
	free(f->stages);
	memset(f, 0, sizeof(*f));
}

struct stage_agg {
	unsigned long rows, intervals;
	uint64_t count;
	double mean, m2;               /* pooled over all samples */
	double min, max;
	bool exact;                    /* every row gave min and max as integers */
	uint64_t min_exact, max_exact; /* then these are min and max, every digit */
	/* Means beyond 2^53 (where a double skips integers): pooled as
	 * `shift` (the first interval's integer part) + smean, M2 in sm2. */
	bool shifted;
	uint64_t shift;
	double smean, sm2;
	uint64_t invalid, abandoned, orphan, out_of_range;
	/* each interval's percentiles, exactly while every interval wrote
	 * them as whole numbers */
	struct ctl_figvec pct[CTL_CSV_MAX_PCT];
};

struct report_ctx {
	const struct ctl_filter *filter;
	struct ctl_stages stages;
	struct stage_agg *agg;
	unsigned cap;
	unsigned long rows;
	unsigned long intervals;
	int64_t first_ms, last_ms, cur_ms;
	uint64_t cur_dropped, cur_stalled, dropped, stalled;
};

static void close_interval(struct report_ctx *c)
{
	c->dropped += c->cur_dropped;
	c->stalled += c->cur_stalled;
	c->cur_dropped = c->cur_stalled = 0;
}

/* A mean written in fixed notation ("9223372036854775808.000", "12.5",
 * "7"): its integer part, exactly, and its fraction.  False for anything
 * else (a sign, an exponent). */
static bool split_fixed(const char *s, uint64_t *ret_int, double *ret_frac)
{
	char *end;
	size_t digits;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*ret_int = strtoull(s, &end, 10);
	if (errno)
		return false;
	*ret_frac = 0;
	if (*end == '\0')
		return true;
	if (*end != '.')
		return false;
	digits = strspn(end + 1, "0123456789");
	if (digits == 0 || end[1 + digits] != '\0')
		return false;
	*ret_frac = strtod(end, NULL);   /* ".500" */
	return true;
}

/* A row's mean less `shift`, without passing through a double that cannot
 * hold either. */
static double mean_less(const struct ctl_csv_row *r, uint64_t shift)
{
	uint64_t ip;
	double frac;

	if (!split_fixed(r->mean_text, &ip, &frac))
		return r->mean - (double)shift;
	return (ip >= shift ? (double)(ip - shift) : -(double)(shift - ip)) + frac;
}

static int on_row(void *ctx, const struct ctl_csv_header *h, const struct ctl_csv_row *r)
{
	struct report_ctx *c = ctx;
	struct stage_agg *a;
	int id;

	/* Collector counters: once per interval (rows of one interval share
	 * their timestamp and come together). */
	if (c->rows == 0 || r->time_ms != c->cur_ms) {
		if (c->rows)
			close_interval(c);
		c->intervals++;
		c->cur_ms = r->time_ms;
		if (c->rows == 0 || r->time_ms < c->first_ms)
			c->first_ms = r->time_ms;
		if (c->rows == 0 || r->time_ms > c->last_ms)
			c->last_ms = r->time_ms;
	}
	c->rows++;
	if (r->dropped > c->cur_dropped)
		c->cur_dropped = r->dropped;
	if (r->stalled > c->cur_stalled)
		c->cur_stalled = r->stalled;

	if (!ctl_filter_match(c->filter, r->point, r->stage))
		return 0;
	id = ctl_stages_id(&c->stages, r->point, r->stage, r->value);
	if (id < 0)
		return id;
	if (ctl_grow((void **)&c->agg, &c->cap, (unsigned)id, sizeof(*c->agg)) < 0)
		return -ENOMEM;
	a = &c->agg[id];
	a->rows++;
	a->invalid += r->invalid;
	a->abandoned += r->abandoned;
	a->orphan += r->orphan;
	a->out_of_range += r->out_of_range;
	if (r->count == 0)
		return 0;
	if (a->intervals == 0) {
		uint64_t ip;
		double frac;
		a->shifted = split_fixed(r->mean_text, &ip, &frac) && ip >= (UINT64_C(1) << 53);
		a->shift = a->shifted ? ip : 0;
	}
	if (a->intervals == 0 || r->min < a->min)
		a->min = r->min;
	if (a->intervals == 0 || r->max > a->max)
		a->max = r->max;
	a->exact = r->min_max_exact && (a->intervals == 0 || a->exact);
	if (a->exact && (a->intervals == 0 || r->min_exact < a->min_exact))
		a->min_exact = r->min_exact;
	if (a->exact && (a->intervals == 0 || r->max_exact > a->max_exact))
		a->max_exact = r->max_exact;
	a->intervals++;
	{
		/* Merge (n_b, mean_b, M2_b) into the running totals. */
		double nb = (double)r->count, na = (double)a->count, n = na + nb;
		double d = r->mean - a->mean;
		double m2b = r->count > 1 ? r->stddev * r->stddev * (nb - 1) : 0;
		a->mean += d * nb / n;
		a->m2 += m2b + d * d * na * nb / n;
		if (a->shifted) {
			d = mean_less(r, a->shift) - a->smean;
			a->smean += d * nb / n;
			a->sm2 += m2b + d * d * na * nb / n;
		}
		a->count += r->count;
	}
	for (unsigned i = 0; i < h->npct; i++)
		if (ctl_figvec_push(&a->pct[i], r->pct[i], r->pct_is_int[i], r->pct_exact[i]) < 0)
			return -ENOMEM;
	return 0;
}

/* The pooled mean as a double (for the human formats). */
static double agg_mean(const struct stage_agg *a)
{
	return a->shifted ? (double)a->shift + a->smean : a->mean;
}

static double agg_sd(const struct stage_agg *a)
{
	if (a->count < 2)
		return 0;
	return sqrt((a->shifted ? a->sm2 : a->m2) / (double)(a->count - 1));
}

/*
 * The pooled mean for machine-readable output: a mean beyond 2^53 as its
 * exact integer part and three decimals, as perfmond writes it (a single
 * interval comes out as the file had it); else the double's digits.
 */
static const char *agg_mean_text(const struct stage_agg *a, char *buf, size_t n)
{
	double fl, frac;
	long long thou;
	uint64_t whole = a->shift;

	if (!a->shifted) {
		ctl_fmt_exact(a->mean, buf, n);
		return buf;
	}
	fl = floor(a->smean);
	frac = a->smean - fl;
	thou = llround(frac * 1000);
	if (thou >= 1000) {
		thou -= 1000;
		fl += 1;
	}
	if (fl >= 0)
		whole += (uint64_t)fl;
	else
		whole -= (uint64_t)-fl;
	snprintf(buf, n, "%llu.%03lld", (unsigned long long)whole, thou);
	return buf;
}

/* Median, min and max of a percentile column over the intervals. */
struct pct_spread {
	bool exact;                 /* every interval wrote a whole number */
	double med, lo, hi;
	struct ctl_exact med_x, lo_x, hi_x;
};

static void pct_spread(struct stage_agg *a, unsigned p, struct pct_spread *ret)
{
	struct ctl_vec *pv = &a->pct[p].d;
	struct ctl_u64vec *uv = &a->pct[p].u;

	memset(ret, 0, sizeof(*ret));
	ctl_sort(pv->v, pv->n);
	ret->med = ctl_quantile_sorted(pv->v, pv->n, 0.5);
	ret->lo = pv->n ? pv->v[0] : NAN;
	ret->hi = pv->n ? pv->v[pv->n - 1] : NAN;
	ret->exact = ctl_figvec_exact(&a->pct[p]);
	if (ret->exact) {
		ctl_u64_sort(uv->v, uv->n);
		ret->med_x = ctl_u64_median_sorted(uv->v, uv->n);
		ret->lo_x.whole = uv->v[0];
		ret->hi_x.whole = uv->v[uv->n - 1];
	}
}

static void fmt_fig(bool value, const char *unit, double v, char *buf, size_t n)
{
	if (value)
		ctl_fmt_si(v, buf, n);
	else
		ctl_fmt_duration(v, unit, buf, n);
}

static const char *exact(double v, char *buf, size_t n)
{
	ctl_fmt_exact(v, buf, n);
	return buf;
}

static void fmt_time(int64_t ms, char *buf, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, n, "?");
}

static int build_table(struct report_ctx *c, const struct ctl_csv_header *h,
		       enum ctl_format fmt, struct ctl_table *t)
{
	bool raw = fmt == CTL_FORMAT_CSV;
	char b[64], b2[64], b3[64];
	unsigned i, p;
	int dropped_col = -1;

	ctl_table_add_column(t, "point", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "stage", CTL_ALIGN_LEFT, true);
	if (raw)
		ctl_table_add_column(t, "kind", CTL_ALIGN_LEFT, false);
	ctl_table_add_column(t, "intervals", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "count", CTL_ALIGN_RIGHT, false);
	if (raw) {
		static const char *const figs[] = { "mean", "stddev", "min", "max" };
		for (i = 0; i < 4; i++) {
			snprintf(b, sizeof(b), "%s_%s", figs[i], h->unit);
			ctl_table_add_column(t, b, CTL_ALIGN_RIGHT, false);
		}
		for (p = 0; p < h->npct; p++) {
			static const char *const spread[] = { "median", "min", "max" };
			for (i = 0; i < 3; i++) {
				snprintf(b, sizeof(b), "%s_%s_%s", h->pct_label[p], spread[i],
					 h->unit);
				ctl_table_add_column(t, b, CTL_ALIGN_RIGHT, false);
			}
		}
		ctl_table_add_column(t, "invalid", CTL_ALIGN_RIGHT, false);
		ctl_table_add_column(t, "abandoned", CTL_ALIGN_RIGHT, false);
		ctl_table_add_column(t, "orphan", CTL_ALIGN_RIGHT, false);
		ctl_table_add_column(t, "out_of_range", CTL_ALIGN_RIGHT, false);
		/* collector-wide: filled on the last row only (kind collector) */
		dropped_col = ctl_table_add_column(t, "dropped", CTL_ALIGN_RIGHT, false);
		ctl_table_add_column(t, "stalled", CTL_ALIGN_RIGHT, false);
	} else {
		ctl_table_add_column(t, "mean", CTL_ALIGN_RIGHT, false);
		ctl_table_add_column(t, "stddev", CTL_ALIGN_RIGHT, false);
		ctl_table_add_column(t, "min", CTL_ALIGN_RIGHT, false);
		ctl_table_add_column(t, "max", CTL_ALIGN_RIGHT, false);
		for (p = 0; p < h->npct; p++) {
			snprintf(b, sizeof(b), "%s (range)", h->pct_label[p]);
			ctl_table_add_column(t, b, CTL_ALIGN_RIGHT, false);
		}
		ctl_table_add_column(t, "anomalies", CTL_ALIGN_RIGHT, false);
	}

	for (unsigned id = 0; id < c->stages.n; id++) {
		const struct ctl_stage *s = &c->stages.items[id];
		struct stage_agg *a = &c->agg[id];
		double sd = agg_sd(a);
		unsigned col = 0;
		bool any = a->intervals > 0;

		ctl_table_add_row(t);
		ctl_table_set(t, col++, s->point);
		ctl_table_set(t, col++, s->stage);
		if (raw)
			ctl_table_set(t, col++, s->value ? "value" : "latency");
		ctl_table_setf(t, col++, "%lu", a->intervals);
		ctl_table_setf(t, col++, "%llu", (unsigned long long)a->count);
		if (raw) {
			/* Machine-readable: every digit the file had. */
			double v[4] = { a->mean, sd, a->min, a->max };
			for (i = 0; i < 4; i++, col++) {
				if (!any)
					continue;
				if (i == 0)
					ctl_table_set(t, col, agg_mean_text(a, b, sizeof(b)));
				else if (i >= 2 && a->exact)
					ctl_table_setf(t, col, "%llu", (unsigned long long)
						       (i == 2 ? a->min_exact : a->max_exact));
				else
					ctl_table_set(t, col, exact(v[i], b, sizeof(b)));
			}
			for (p = 0; p < h->npct; p++) {
				struct pct_spread ps;
				pct_spread(a, p, &ps);
				if (any && ps.exact) {
					ctl_table_set(t, col, ctl_exact_text(ps.med_x, b, sizeof(b)));
					ctl_table_set(t, col + 1, ctl_exact_text(ps.lo_x, b, sizeof(b)));
					ctl_table_set(t, col + 2, ctl_exact_text(ps.hi_x, b, sizeof(b)));
				} else if (any) {
					ctl_table_set(t, col, exact(ps.med, b, sizeof(b)));
					ctl_table_set(t, col + 1, exact(ps.lo, b, sizeof(b)));
					ctl_table_set(t, col + 2, exact(ps.hi, b, sizeof(b)));
				}
				col += 3;
			}
			ctl_table_setf(t, col++, "%llu", (unsigned long long)a->invalid);
			ctl_table_setf(t, col++, "%llu", (unsigned long long)a->abandoned);
			ctl_table_setf(t, col++, "%llu", (unsigned long long)a->orphan);
			ctl_table_setf(t, col++, "%llu", (unsigned long long)a->out_of_range);
			continue;
		}
		if (any) {
			double v[4] = { agg_mean(a), sd, a->min, a->max };
			for (i = 0; i < 4; i++) {
				if (i >= 2 && s->value && a->exact)   /* min, max: exact */
					snprintf(b, sizeof(b), "%llu", (unsigned long long)
						 (i == 2 ? a->min_exact : a->max_exact));
				else
					fmt_fig(s->value, h->unit, v[i], b, sizeof(b));
				ctl_table_set(t, col++, b);
			}
			for (p = 0; p < h->npct; p++) {
				struct pct_spread ps;
				pct_spread(a, p, &ps);
				fmt_fig(s->value, h->unit, ps.med, b, sizeof(b));
				fmt_fig(s->value, h->unit, ps.lo, b2, sizeof(b2));
				fmt_fig(s->value, h->unit, ps.hi, b3, sizeof(b3));
				if (a->pct[p].d.n > 1 && strcmp(b2, b3))
					ctl_table_setf(t, col++, "%s (%s..%s)", b, b2, b3);
				else
					ctl_table_set(t, col++, b);
			}
		} else {
			col += 4 + h->npct;
		}
		ctl_table_setf(t, col++, "%llu", (unsigned long long)(a->invalid + a->abandoned +
								      a->orphan + a->out_of_range));
	}
	if (raw && dropped_col >= 0) {
		/* The collector's losses over the whole file (counted once per
		 * interval), whatever the filters: the one row of kind
		 * collector, the only one with dropped and stalled. */
		unsigned col = 0;
		ctl_table_add_row(t);
		ctl_table_set(t, col++, "collector");
		ctl_table_set(t, col++, "total");
		ctl_table_set(t, col++, "collector");
		ctl_table_setf(t, col, "%lu", c->intervals);
		col = (unsigned)dropped_col;
		ctl_table_setf(t, col++, "%llu", (unsigned long long)c->dropped);
		ctl_table_setf(t, col, "%llu", (unsigned long long)c->stalled);
	}
	return 0;
}

static void json_fig(struct ctl_json *j, const char *key, bool any, double v)
{
	ctl_json_key(j, key);
	if (any)
		ctl_json_double(j, v);
	else
		ctl_json_null(j);
}

/* The report as one JSON document (schema in perfmonctl(1)). */
static int print_json(struct report_ctx *c, const struct ctl_csv_header *h, const char *path,
		      FILE *out)
{
	struct ctl_json j;
	char t0[32], t1[32];

	ctl_json_init(&j, out);
	ctl_json_object_begin(&j);
	ctl_json_kv_string(&j, "file", path);
	ctl_json_kv_string(&j, "unit", h->unit);
	ctl_json_kv_u64(&j, "rows", c->rows);
	ctl_json_kv_u64(&j, "intervals", c->intervals);
	fmt_time(c->first_ms, t0, sizeof(t0));
	fmt_time(c->last_ms, t1, sizeof(t1));
	ctl_json_key(&j, "first");
	if (c->rows)
		ctl_json_string(&j, t0);
	else
		ctl_json_null(&j);
	ctl_json_key(&j, "last");
	if (c->rows)
		ctl_json_string(&j, t1);
	else
		ctl_json_null(&j);
	ctl_json_kv_u64(&j, "dropped", c->dropped);
	ctl_json_kv_u64(&j, "stalled", c->stalled);
	ctl_json_key(&j, "percentiles");
	ctl_json_array_begin(&j);
	for (unsigned p = 0; p < h->npct; p++)
		ctl_json_string(&j, h->pct_label[p]);
	ctl_json_array_end(&j);
	ctl_json_key(&j, "stages");
	ctl_json_array_begin(&j);
	for (unsigned id = 0; id < c->stages.n; id++) {
		const struct ctl_stage *s = &c->stages.items[id];
		struct stage_agg *a = &c->agg[id];
		double sd = agg_sd(a);
		bool any = a->intervals > 0;
		char b[64];

		ctl_json_object_begin(&j);
		ctl_json_kv_string(&j, "point", s->point);
		ctl_json_kv_string(&j, "stage", s->stage);
		ctl_json_kv_string(&j, "kind", s->value ? "value" : "latency");
		ctl_json_kv_u64(&j, "intervals", a->intervals);
		ctl_json_kv_u64(&j, "count", a->count);
		if (any && a->shifted) {   /* beyond 2^53: the digits, not a double */
			ctl_json_key(&j, "mean");
			ctl_json_number_text(&j, agg_mean_text(a, b, sizeof(b)));
		} else {
			json_fig(&j, "mean", any, a->mean);
		}
		json_fig(&j, "stddev", any, sd);
		if (any && a->exact) {   /* whole numbers in the file: every digit */
			ctl_json_kv_u64(&j, "min", a->min_exact);
			ctl_json_kv_u64(&j, "max", a->max_exact);
		} else {
			json_fig(&j, "min", any, a->min);
			json_fig(&j, "max", any, a->max);
		}
		ctl_json_key(&j, "percentiles");
		ctl_json_object_begin(&j);
		for (unsigned p = 0; p < h->npct; p++) {
			struct pct_spread ps;
			bool have = any && a->pct[p].d.n > 0;
			pct_spread(a, p, &ps);
			ctl_json_key(&j, h->pct_label[p]);
			ctl_json_object_begin(&j);
			if (have && ps.exact) {
				ctl_json_key(&j, "median");
				ctl_json_number_text(&j, ctl_exact_text(ps.med_x, b, sizeof(b)));
				ctl_json_kv_u64(&j, "min", ps.lo_x.whole);
				ctl_json_kv_u64(&j, "max", ps.hi_x.whole);
			} else {
				json_fig(&j, "median", have, ps.med);
				json_fig(&j, "min", have, ps.lo);
				json_fig(&j, "max", have, ps.hi);
			}
			ctl_json_object_end(&j);
		}
		ctl_json_object_end(&j);
		ctl_json_kv_u64(&j, "invalid", a->invalid);
		ctl_json_kv_u64(&j, "abandoned", a->abandoned);
		ctl_json_kv_u64(&j, "orphan", a->orphan);
		ctl_json_kv_u64(&j, "out_of_range", a->out_of_range);
		ctl_json_object_end(&j);
	}
	ctl_json_array_end(&j);
	ctl_json_object_end(&j);
	return ctl_json_finish(&j);
}

int ctl_report_file(const char *path, const struct ctl_filter *filter, FILE *out,
		    enum ctl_format fmt, unsigned width, char *err, size_t errlen)
{
	struct report_ctx c;
	struct ctl_csv_header h;
	struct ctl_table *t = NULL;
	char t0[32], t1[32], span[32];
	int e;

	memset(&c, 0, sizeof(c));
	c.filter = filter;
	ctl_stages_init(&c.stages);
	e = ctl_csv_read_file(path, on_row, &c, &h, err, errlen);
	if (e < 0)
		goto out;
	if (c.rows)
		close_interval(&c);
	if (fmt == CTL_FORMAT_JSON) {
		if ((e = print_json(&c, &h, path, out)) < 0)
			snprintf(err, errlen, "cannot write the report");
		goto out;
	}
	t = ctl_table_new();
	if (!t) {
		e = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	build_table(&c, &h, fmt, t);
	if (fmt != CTL_FORMAT_CSV) {
		char clean[512];
		ctl_text_clean(clean, path, sizeof(clean));
		fmt_time(c.first_ms, t0, sizeof(t0));
		fmt_time(c.last_ms, t1, sizeof(t1));
		ctl_fmt_age((double)(c.last_ms - c.first_ms) / 1000.0, span, sizeof(span));
		if (c.rows)
			fprintf(out, "%s: %lu rows in %lu intervals, %s to %s UTC (%s), unit %s\n",
				clean, c.rows, c.intervals, t0, t1, span, h.unit);
		else
			fprintf(out, "%s: no interval rows, unit %s\n", clean, h.unit);
		if (fmt == CTL_FORMAT_MD)
			fputc('\n', out);
	}
	if (ctl_table_rows(t) == 0 && fmt != CTL_FORMAT_CSV)
		fprintf(out, "no stage matches%s\n",
			filter->npoints || filter->nstages ? " the --point/--stage filters" : "");
	else if ((e = ctl_table_print(t, out, fmt, width)) < 0)
		snprintf(err, errlen, "cannot write the report: %s", strerror(-e));
	if (e == 0 && fmt != CTL_FORMAT_CSV && (c.dropped || c.stalled))
		fprintf(out, "%scollector: %llu events dropped, %llu stalled over the file\n",
			fmt == CTL_FORMAT_MD ? "\n" : "", (unsigned long long)c.dropped,
			(unsigned long long)c.stalled);
out:
	ctl_table_free(t);
	for (unsigned i = 0; i < c.stages.n; i++)
		for (unsigned p = 0; p < CTL_CSV_MAX_PCT; p++)
			ctl_figvec_free(&c.agg[i].pct[p]);
	free(c.agg);
	ctl_stages_free(&c.stages);
	return e;
}

enum { OPT_FORMAT = 0x100, OPT_POINT, OPT_STAGE, OPT_OUTLIERS };

int ctl_report_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "point", required_argument, NULL, OPT_POINT },
		{ "stage", required_argument, NULL, OPT_STAGE },
		{ "outliers", no_argument, NULL, OPT_OUTLIERS },
		{ NULL, 0, NULL, 0 },
	};
	bool outliers = false;
	struct ctl_filter filter = { 0 };
	const char *format = NULL;
	enum ctl_format fmt;
	char msg[600];
	int c, rc = CTL_EXIT_OK;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case OPT_FORMAT:
			format = optarg;
			break;
		case OPT_OUTLIERS:
			outliers = true;
			break;
		case OPT_POINT:
		case OPT_STAGE:
			if (ctl_filter_add(&filter, c == OPT_STAGE, optarg) < 0) {
				ctl_filter_free(&filter);
				return CTL_EXIT_FAILURE;
			}
			break;
		default:
			ctl_filter_free(&filter);
			return ctl_usage_error(err, argv[0], "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind + 1 != argc) {
		ctl_filter_free(&filter);
		return ctl_usage_error(err, argv[0], "give exactly one FILE.csv");
	}
	if (ctl_cli_format_json(format, &fmt, err, argv[0]) < 0) {
		ctl_filter_free(&filter);
		return CTL_EXIT_FAILURE;
	}
	if (outliers) {
		if (ctl_outliers_report(argv[optind], &filter, out, fmt,
					fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0, msg,
					sizeof(msg)) < 0) {
			fprintf(err, "perfmonctl report: %s\n", msg);
			rc = CTL_EXIT_BAD_FILE;
		}
	} else if (ctl_report_file(argv[optind], &filter, out, fmt,
			    fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0, msg,
			    sizeof(msg)) < 0) {
		fprintf(err, "perfmonctl report: %s\n", msg);
		rc = CTL_EXIT_BAD_FILE;
	}
	ctl_filter_free(&filter);
	return rc;
}
