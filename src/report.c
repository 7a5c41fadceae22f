/*
 * report.c - build labelled, converted report rows from the pairing engine.
 *
 * Runs on the reporter thread between pairing_collect() and
 * pairing_release().  Decides which rows an interval shows (docs/csv.md),
 * resolves labels through the sanitising name cache, and converts ticks to
 * the configured unit at report time with the current TSC estimate, so the
 * lifetime figures always use the best rate known.
 */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"
#include "tsc.h"

void report_set_clock(struct report *r, uint64_t tsc, uint64_t realtime_ns)
{
	r->ref_tsc = tsc;
	r->ref_realtime_ns = realtime_ns;
}

uint64_t report_realtime_of(const struct report *r, uint64_t tsc)
{
	return tsc_realtime_at(tsc, r->ref_tsc, r->ref_realtime_ns, r->tsc_hz);
}

void report_format_utc_ns(uint64_t realtime_ns, char *buf, size_t n)
{
	time_t sec = (time_t)(realtime_ns / 1000000000u);
	unsigned ns = (unsigned)(realtime_ns % 1000000000u);
	struct tm tm;

	if (!gmtime_r(&sec, &tm))
		memset(&tm, 0, sizeof(tm));
	snprintf(buf, n, "%04d-%02d-%02d %02d:%02d:%02d.%09u", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ns);
}

double report_convert(enum report_unit u, double ticks, double tsc_hz)
{
	if (u == REPORT_UNIT_CYCLES || tsc_hz <= 0)
		return ticks;
	return u == REPORT_UNIT_US ? ticks * 1e6 / tsc_hz : ticks * 1e9 / tsc_hz;
}

int report_init(struct report *r, const struct pairing *p)
{
	memset(r, 0, sizeof(*r));
	r->scratch_cap = pairing_max_rows(p);
	r->cap = r->scratch_cap + 1;            /* + the collector row */
	r->scratch = calloc(r->scratch_cap, sizeof(*r->scratch));
	r->rows = calloc(r->cap, sizeof(*r->rows));
	if (!r->scratch || !r->rows) {
		report_free(r);
		return -ENOMEM;
	}
	return 0;
}

void report_free(struct report *r)
{
	free(r->scratch);
	free(r->rows);
	memset(r, 0, sizeof(*r));
}

/* A published label, unless it would be mistaken for a reserved one. */
static const char *published(const struct name_cache *names, uint32_t point, uint8_t step,
			     bool stage)
{
	const char *l = names ? name_cache_lookup(names, point, step) : NULL;
	if (l && stage && (!strcmp(l, "total") || !strcmp(l, "value")))
		return NULL;
	return l;
}

/*
 * A name labels the stage that ends at its step.  When a point has several
 * transitions into the same step (a dropped event can turn 1->2->end into
 * 1->end), the first one created keeps the plain name for good and the
 * others say which transition they are, so no two rows share a label.
 */
static bool secondary_into(const struct pairing_row *rows, uint32_t n, uint32_t i)
{
	const struct pairing_row *pr = &rows[i];
	for (uint32_t j = 0; j < n; j++)
		if (j != i && rows[j].kind == PAIRING_STAGE && rows[j].point == pr->point &&
		    rows[j].to == pr->to && rows[j].stage < pr->stage)
			return true;
	return false;
}

static void label_row(struct report_row *out, const struct pairing_row *pr,
		      const struct name_cache *names, bool secondary)
{
	const char *l = NULL;

	if (pr->kind == PAIRING_OVERFLOW) {
		snprintf(out->point, sizeof(out->point), "overflow");
		snprintf(out->stage, sizeof(out->stage), "%s",
			 pr->to == PERFMON_VALUE_STEP ? "value" : "total");
		return;
	}
	bool shared = false;

	if (names && (l = name_cache_point(names, pr->point, &shared)) && shared)
		snprintf(out->point, sizeof(out->point), "%s#%u", l, pr->point);
	else if (l)
		snprintf(out->point, sizeof(out->point), "%s", l);
	else
		snprintf(out->point, sizeof(out->point), "point_%u", pr->point);
	switch (pr->kind) {
	case PAIRING_TOTAL:
		snprintf(out->stage, sizeof(out->stage), "total");
		break;
	case PAIRING_VALUE:
		snprintf(out->stage, sizeof(out->stage), "value");
		break;
	default:
		if ((l = published(names, pr->point, pr->to, true)) && secondary)
			snprintf(out->stage, sizeof(out->stage), "%s (step_%u->%u)", l, pr->from,
				 pr->to);
		else if (l)
			snprintf(out->stage, sizeof(out->stage), "%s", l);
		else
			snprintf(out->stage, sizeof(out->stage), "step_%u->%u", pr->from, pr->to);
	}
}

static void figures(struct report_figures *f, const struct accum *a, bool value,
		    const struct report_settings *s, double hz)
{
	enum report_unit u = value ? REPORT_UNIT_CYCLES : s->unit;  /* values: as recorded */

	memset(f, 0, sizeof(*f));
	f->count = a->count;
	if (!a->count)
		return;
	accum_mean_parts(a, &f->mean_int, &f->mean_frac);
	f->min_raw = accum_min(a);
	f->max_raw = accum_max(a);
	f->p50_raw = accum_percentile(a, 50.0);
	f->p99_raw = accum_percentile(a, 99.0);
	f->min = report_convert(u, (double)f->min_raw, hz);
	f->max = report_convert(u, (double)f->max_raw, hz);
	f->mean = report_convert(u, accum_mean(a), hz);
	f->stddev = report_convert(u, accum_stddev(a), hz);
	f->sum = report_convert(u, accum_sum(a), hz);
	for (unsigned i = 0; i < s->npct; i++) {
		f->pct_raw[i] = accum_percentile(a, s->pct[i]);
		f->pct[i] = report_convert(u, (double)f->pct_raw[i], hz);
	}
	f->p50 = report_convert(u, (double)f->p50_raw, hz);
	f->p99 = report_convert(u, (double)f->p99_raw, hz);
}

static void start(struct report *r, struct pairing *p, const struct pairing_interval *iv,
		  const struct report_settings *s, double hz)
{
	r->nrows = 0;
	r->tsc_hz = hz;
	r->overhead = s->subtract_overhead ?
		report_convert(s->unit, (double)iv->overhead_ticks, hz) : 0;
	(void)p;
}

static struct report_row *add(struct report *r, uint32_t n, uint32_t i,
			      const struct name_cache *names,
			      const struct pairing_anomalies *anomalies,
			      const struct accum *a, const struct outlier_set *slow,
			      const struct report_settings *s, double hz,
			      const struct report_collector *coll)
{
	const struct pairing_row *pr = &r->scratch[i];
	struct report_row *out = &r->rows[r->nrows++];
	bool value = pr->kind == PAIRING_VALUE ||
		     (pr->kind == PAIRING_OVERFLOW && pr->to == PERFMON_VALUE_STEP);

	label_row(out, pr, names, pr->kind == PAIRING_STAGE && secondary_into(r->scratch, n, i));
	out->kind = value ? REPORT_VALUE : REPORT_LATENCY;
	out->point_id = pr->point;
	out->synthetic = pr->kind == PAIRING_OVERFLOW;
	out->anomalies = *anomalies;
	out->dropped = coll->dropped;
	out->stalled = coll->stalled;
	figures(&out->f, a, value, s, hz);
	out->outliers = slow;
	out->source = pr;
	return out;
}

static const struct pairing_anomalies no_anomalies;

void report_build_interval(struct report *r, struct pairing *p,
			   const struct pairing_interval *iv, const struct name_cache *names,
			   const struct report_settings *s, double tsc_hz,
			   const struct report_collector *coll, uint64_t end_realtime_ns)
{
	uint32_t n = pairing_rows(p, r->scratch, r->scratch_cap);

	start(r, p, iv, s, tsc_hz);
	r->end_realtime_ns = end_realtime_ns;
	report_set_clock(r, iv->end_tsc, end_realtime_ns);
	for (uint32_t i = 0; i < n; i++) {
		const struct pairing_row *pr = &r->scratch[i];
		bool carries = pr->kind == PAIRING_TOTAL || pr->kind == PAIRING_OVERFLOW;
		bool moved = carries && pairing_anomalies_any(pr->anomalies);

		/* A point's anomalies are shown once, on its total row. */
		if (pr->interval->count == 0 && !moved)
			continue;
		add(r, n, i, names, carries ? pr->anomalies : &no_anomalies, pr->interval,
		    pr->outliers, s, tsc_hz, coll);
	}
	if (r->nrows == 0 && (coll->dropped || coll->stalled)) {
		struct report_row *out = &r->rows[r->nrows++];
		memset(out, 0, sizeof(*out));
		snprintf(out->point, sizeof(out->point), "collector");
		snprintf(out->stage, sizeof(out->stage), "total");
		out->synthetic = true;
		out->dropped = coll->dropped;
		out->stalled = coll->stalled;
	}
}

void report_build_lifetime(struct report *r, struct pairing *p,
			   const struct pairing_interval *iv, const struct name_cache *names,
			   const struct report_settings *s, double tsc_hz,
			   const struct report_collector *coll)
{
	uint32_t n = pairing_rows(p, r->scratch, r->scratch_cap);

	start(r, p, iv, s, tsc_hz);
	for (uint32_t i = 0; i < n; i++) {
		const struct pairing_row *pr = &r->scratch[i];
		bool carries = pr->kind == PAIRING_TOTAL || pr->kind == PAIRING_OVERFLOW;
		const struct pairing_anomalies *an = carries ? pr->anomalies_lifetime : &no_anomalies;

		if (pr->lifetime->count == 0 && !pairing_anomalies_any(an))
			continue;
		add(r, n, i, names, an, pr->lifetime, pr->outliers_lifetime, s, tsc_hz, coll);
	}
}
