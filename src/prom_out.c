/*
 * prom_out.c - the Prometheus text-exposition file (docs/fleet.md) that
 * node_exporter's textfile collector serves, rewritten after each interval.
 *
 * Flow: drain -> pairing -> statistics -> report (lifetime rows, reporter
 * thread) -> [prom_out] -> `[prometheus] textfile` -> node_exporter.
 *
 * What goes in, and why:
 *  - Histograms and counters are cumulative in Prometheus, so every figure
 *    is a lifetime one.  A bucket counts every sample at or below its `le`,
 *    exactly: the log-linear histogram alone cannot say how many samples of
 *    the one bucket a bound falls inside lie below the bound, so the drain
 *    thread counts those too (hist_bounds in hist.h), at the bounds in
 *    ticks fixed at start (struct prom_bounds).  A bound the engine was not
 *    given (never the case in the daemon, whose buckets cannot change
 *    without a restart) falls back to counting only whole histogram buckets
 *    at or below it, which never counts a sample above the bound.  The
 *    +Inf bucket is the exact count.
 *  - Summary quantiles are the lifetime percentiles, the same figures as the
 *    summary file, covering the same samples as their _count and _sum; a
 *    recent window is what the histogram with rate() is for.
 *  - Ticks become seconds at the TSC rate of the first write.  The daemon
 *    refines its estimate every interval; converting with a moving rate
 *    could move a bucket bound across a histogram bucket edge, or shrink
 *    _sum, and Prometheus reads any decrease of a counter as a restart.
 *    The fixed rate differs from the refined one by parts per million.
 *  - Value rows hold numbers in the caller's unit, which bounds in seconds
 *    do not fit: they get a summary (quantiles, _sum, _count) only.
 *  - Label values are escaped per the format (backslash, double quote,
 *    newline) and made valid UTF-8.  Two rows must never share a label set
 *    (node_exporter would serve one and drop the other); published labels
 *    can collide (two points named alike, a stage named like another's
 *    generated label), so generated labels (`point_<id>`, `step_<a>-><b>`,
 *    `overflow`, `total`, `value`) are reserved first, then published ones
 *    are taken in report order, and a later duplicate gets its ids
 *    appended: `<label>#<id>` for a point, `<label>#<a>-><b>` for a stage.
 *    A row still colliding after that is left out, with a comment line.
 *
 * Numbers are printed in the C locale; bounds, the flush time and the
 * interval are exact decimals of their nanoseconds, other figures the
 * shortest decimal that reads back as the same double.
 */
#include "build-config.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "errmsg.h"
#include "prom_out.h"

_Static_assert(HIST_MAX_BOUNDS >= PROM_MAX_BUCKETS, "every bucket bound needs a slot");

#define LABEL_SIZE (REPORT_LABEL_SIZE + 32)   /* a label with ids appended */
#define NUM_SIZE 48

/* One exported row: a lifetime report row and its pairing row. */
struct prom_item {
	const struct report_row *row;
	struct pairing_row pr;
	uint32_t point_off, stage_off;   /* effective labels in the arena */
	bool latency;                    /* histogram and latency summary */
	bool value;                      /* value summary */
	bool anomalies;                  /* per-point anomaly counters */
	bool skip;                       /* labels could not be made unique */
};

struct prom_out {
	double rate;                     /* ticks per second, fixed at the first write */
	locale_t c_locale;
	struct prom_item *items;
	uint32_t items_cap, nitems;
	char *arena;                     /* effective labels, NUL-terminated */
	size_t arena_len, arena_cap;
	uint32_t *set;                   /* open addressing: item index + 1, 0 empty */
	uint32_t set_mask;
};

struct prom_out *prom_out_new(void)
{
	struct prom_out *po = calloc(1, sizeof(*po));

	if (!po)
		return NULL;
	po->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (po->c_locale == (locale_t)0) {
		free(po);
		errno = ENOMEM;
		return NULL;
	}
	return po;
}

void prom_out_free(struct prom_out *po)
{
	if (!po)
		return;
	freelocale(po->c_locale);
	free(po->items);
	free(po->arena);
	free(po->set);
	free(po);
}

double prom_out_rate(const struct prom_out *po)
{
	return po->rate;
}

/* ---- scratch memory, kept between writes ------------------------------ */

/* `buf` with room for `want` elements (NULL when out of memory, `buf`
 * then left as it was). */
static void *grow(void *buf, uint32_t *cap, uint32_t want, size_t size)
{
	void *n;

	if (want <= *cap && buf)
		return buf;
	n = realloc(buf, (size_t)(want ? want : 1) * size);
	if (n)
		*cap = want;
	return n;
}

/* Append a label to the arena; UINT32_MAX when out of memory. */
static uint32_t arena_add(struct prom_out *po, const char *s)
{
	size_t n = strlen(s) + 1;
	uint32_t off;

	if (po->arena_len + n > po->arena_cap) {
		size_t cap = po->arena_cap ? po->arena_cap : 4096;
		char *a;

		while (cap < po->arena_len + n)
			cap *= 2;
		if (cap > UINT32_MAX || !(a = realloc(po->arena, cap)))
			return UINT32_MAX;
		po->arena = a;
		po->arena_cap = cap;
	}
	off = (uint32_t)po->arena_len;
	memcpy(po->arena + off, s, n);
	po->arena_len += n;
	return off;
}

static const char *label_at(const struct prom_out *po, uint32_t off)
{
	return po->arena + off;
}

/* ---- the label sets: which effective labels are taken ----------------- */

/* With `stage` NULL the set holds point labels, else (point, stage) pairs. */
static uint64_t label_hash(const char *point, const char *stage)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (const unsigned char *c = (const unsigned char *)point; *c; c++)
		h = (h ^ *c) * UINT64_C(1099511628211);
	if (stage) {
		h = (h ^ 0x100) * UINT64_C(1099511628211);
		for (const unsigned char *c = (const unsigned char *)stage; *c; c++)
			h = (h ^ *c) * UINT64_C(1099511628211);
	}
	return h ^ (h >> 29);
}

static int set_reset(struct prom_out *po, uint32_t entries)
{
	uint32_t cap = 16;

	while (cap < 2 * (uint64_t)entries + 2)
		cap *= 2;
	if (cap > po->set_mask + 1 || !po->set) {
		uint32_t *n = realloc(po->set, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		po->set = n;
	} else {
		cap = po->set_mask + 1;
	}
	po->set_mask = cap - 1;
	memset(po->set, 0, (size_t)cap * sizeof(*po->set));
	return 0;
}

/* Whether the label (pair) is taken; else, with `add`, take it for item i. */
static bool set_taken(struct prom_out *po, const char *point, const char *stage, bool add,
		      uint32_t i)
{
	uint32_t k = (uint32_t)label_hash(point, stage) & po->set_mask;

	for (;; k = (k + 1) & po->set_mask) {
		uint32_t e = po->set[k];
		const struct prom_item *it;

		if (!e) {
			if (add)
				po->set[k] = i + 1;
			return false;
		}
		it = &po->items[e - 1];
		if (!strcmp(label_at(po, it->point_off), point) &&
		    (!stage || !strcmp(label_at(po, it->stage_off), stage)))
			return true;
	}
}

/* ---- the rows exported ------------------------------------------------ */

/* The lifetime report's rows, each with the engine row it came from. */
static int collect_items(struct prom_out *po, const struct prom_snapshot *s)
{
	const struct report *rep = s->lifetime;
	struct prom_item *items;

	items = grow(po->items, &po->items_cap, rep->nrows, sizeof(*items));
	if (!items)
		return -ENOMEM;
	po->items = items;
	po->nitems = 0;
	for (uint32_t i = 0; i < rep->nrows; i++) {
		const struct report_row *r = &rep->rows[i];
		struct prom_item *it;

		if (!r->source)
			continue;   /* the collector row: exported as collector counters */
		it = &po->items[po->nitems++];
		memset(it, 0, sizeof(*it));
		it->row = r;
		it->pr = *r->source;
		it->latency = it->pr.kind == PAIRING_STAGE || it->pr.kind == PAIRING_TOTAL;
		it->value = it->pr.kind == PAIRING_VALUE;
		it->anomalies = it->pr.kind == PAIRING_TOTAL || it->pr.kind == PAIRING_OVERFLOW;
	}
	return 0;
}

/* ---- unique labels ----------------------------------------------------- */

/* The label a row gets when nothing is published for it. */
static void generated_point(const struct prom_item *it, char *buf, size_t n)
{
	if (it->pr.kind == PAIRING_OVERFLOW)
		snprintf(buf, n, "overflow");
	else
		snprintf(buf, n, "point_%u", it->pr.point);
}

static void generated_stage(const struct prom_item *it, char *buf, size_t n)
{
	switch (it->pr.kind) {
	case PAIRING_STAGE:
		snprintf(buf, n, "step_%u->%u", it->pr.from, it->pr.to);
		break;
	case PAIRING_VALUE:
		snprintf(buf, n, "value");
		break;
	default:
		snprintf(buf, n, "%s", it->pr.kind == PAIRING_OVERFLOW &&
			 it->pr.to == PERFMON_VALUE_STEP ? "value" : "total");
	}
}

static bool same_point(const struct prom_item *a, const struct prom_item *b)
{
	return a->pr.kind == PAIRING_OVERFLOW ? b->pr.kind == PAIRING_OVERFLOW :
	       b->pr.kind != PAIRING_OVERFLOW && a->pr.point == b->pr.point;
}

/*
 * Give the point group starting at item `first` (`count` items) its
 * label: `canonical` pass takes only generated labels, the other pass the
 * rest.  Returns -ENOMEM or 0.
 */
static int name_point(struct prom_out *po, uint32_t first, uint32_t count, bool canonical)
{
	struct prom_item *it = &po->items[first];
	char gen[LABEL_SIZE], label[LABEL_SIZE];
	uint32_t off;
	bool is_gen;

	generated_point(it, gen, sizeof(gen));
	is_gen = !strcmp(gen, it->row->point);
	if (is_gen != canonical)
		return 0;
	snprintf(label, sizeof(label), "%s", it->row->point);
	if (set_taken(po, label, NULL, false, 0)) {
		if (it->pr.kind == PAIRING_OVERFLOW)
			snprintf(label, sizeof(label), "%s#overflow", it->row->point);
		else
			snprintf(label, sizeof(label), "%s#%u", it->row->point, it->pr.point);
		if (set_taken(po, label, NULL, false, 0)) {
			for (uint32_t k = 0; k < count; k++)
				it[k].skip = true;
			return 0;
		}
	}
	if ((off = arena_add(po, label)) == UINT32_MAX)
		return -ENOMEM;
	for (uint32_t k = 0; k < count; k++)
		it[k].point_off = off;
	set_taken(po, label, NULL, true, first);
	return 0;
}

static int name_stage(struct prom_out *po, uint32_t i, bool canonical)
{
	struct prom_item *it = &po->items[i];
	const char *point = label_at(po, it->point_off);
	char gen[LABEL_SIZE], label[LABEL_SIZE];
	uint32_t off;

	generated_stage(it, gen, sizeof(gen));
	if (it->skip || !strcmp(gen, it->row->stage) != canonical)
		return 0;
	snprintf(label, sizeof(label), "%s", it->row->stage);
	if (set_taken(po, point, label, false, 0)) {
		snprintf(label, sizeof(label), "%s#%u->%u", it->row->stage, it->pr.from,
			 it->pr.to);
		if (set_taken(po, point, label, false, 0)) {
			it->skip = true;
			return 0;
		}
	}
	if ((off = arena_add(po, label)) == UINT32_MAX)
		return -ENOMEM;
	it->stage_off = off;
	set_taken(po, point, label, true, i);
	return 0;
}

static int unique_labels(struct prom_out *po)
{
	int e;

	po->arena_len = 0;
	if ((e = set_reset(po, po->nitems)) < 0)
		return e;
	/* Points: rows of one point are adjacent (report order). */
	for (int pass = 1; pass >= 0; pass--) {
		for (uint32_t i = 0, j; i < po->nitems; i = j) {
			for (j = i + 1; j < po->nitems && same_point(&po->items[i], &po->items[j]); j++)
				;
			if ((e = name_point(po, i, j - i, pass)) < 0)
				return e;
		}
	}
	/* Stages, as (point, stage) pairs: points are unique by now. */
	if ((e = set_reset(po, po->nitems)) < 0)
		return e;
	for (int pass = 1; pass >= 0; pass--)
		for (uint32_t i = 0; i < po->nitems; i++)
			if ((e = name_stage(po, i, pass)) < 0)
				return e;
	return 0;
}

/* ---- text ------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s, 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	uint32_t cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, cp = c & 0x1F, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, cp = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)   /* also stops at the NUL */
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/* A label value, escaped as the format requires; bytes that are not
 * UTF-8 become '?'. */
static void put_escaped(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_len(p);

		if (n == 0) {
			putc('?', f);
			p++;
		} else if (*p == '\\') {
			fputs("\\\\", f);
			p++;
		} else if (*p == '"') {
			fputs("\\\"", f);
			p++;
		} else if (*p == '\n') {
			fputs("\\n", f);
			p++;
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
}

/* The shortest decimal that reads back as v (caller set the C locale). */
static void format_double(double v, char *buf, size_t n)
{
	if (isnan(v)) {
		snprintf(buf, n, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, n, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* ns nanoseconds as an exact decimal number of seconds: 16 -> 0.000000016. */
static void format_ns_seconds(uint64_t ns, char *buf, size_t n)
{
	uint64_t frac = ns % 1000000000u;
	int digits = 9;

	if (!frac) {
		snprintf(buf, n, "%llu", (unsigned long long)(ns / 1000000000u));
		return;
	}
	while (frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	snprintf(buf, n, "%llu.%0*llu", (unsigned long long)(ns / 1000000000u), digits,
		 (unsigned long long)frac);
}

/*
 * The quantile label of percentile p: p / 100 written with the digits of
 * p's own shortest decimal, so 99.9 gives "0.999" (not the binary
 * quotient's 0.9990000000000001) and every host writes the same text.
 */
static void format_quantile(double p, char *buf, size_t n)
{
	char t[NUM_SIZE], digits[NUM_SIZE], out[2 * NUM_SIZE];
	size_t nd = 0, w = 0;
	const char *e;
	int exp10;

	if (!(p > 0)) {
		snprintf(buf, n, "0");
		return;
	}
	for (int prec = 0; prec <= 16; prec++) {
		snprintf(t, sizeof(t), "%.*e", prec, p);
		if (strtod(t, NULL) == p)
			break;
	}
	/* t is d[.ddd]e<exp>, so p = 0.dddd * 10^(exp + 1). */
	for (e = t; *e && *e != 'e'; e++)
		if (*e >= '0' && *e <= '9')
			digits[nd++] = *e;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	exp10 = (*e ? atoi(e + 1) : 0) + 1 - 2;   /* two places left: divided by 100 */
	if (exp10 <= 0) {
		out[w++] = '0';
		out[w++] = '.';
		for (int z = 0; z < -exp10 && w < NUM_SIZE; z++)
			out[w++] = '0';
		for (size_t i = 0; i < nd; i++)
			out[w++] = digits[i];
	} else {
		for (size_t i = 0; i < nd || (int)i < exp10; i++) {
			if ((int)i == exp10)
				out[w++] = '.';
			out[w++] = i < nd ? digits[i] : '0';
			if (w >= NUM_SIZE)
				break;
		}
	}
	out[w] = '\0';
	snprintf(buf, n, "%s", out);
}

/* ---- the exposition ----------------------------------------------------- */

struct out {
	FILE *f;
	const struct prom_out *po;
	const struct prom_snapshot *s;
};

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	fprintf(o->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

enum { WITH_POINT = 1, WITH_STAGE = 2 };

/*
 * Start a series: name, suffix and labels (perfmond_instance; point, stage and kind
 * as `with` says; one extra label if xname is set), then a space.  The
 * caller prints the value.
 */
static void series(struct out *o, const char *name, const char *suffix,
		   const struct prom_item *it, unsigned with, const char *xname, const char *xval)
{
	FILE *f = o->f;

	fprintf(f, "%s%s{perfmond_instance=\"", name, suffix);
	put_escaped(f, o->s->instance);
	if (with & WITH_POINT) {
		fputs("\",point=\"", f);
		put_escaped(f, label_at(o->po, it->point_off));
	}
	if (with & WITH_STAGE) {
		fputs("\",stage=\"", f);
		put_escaped(f, label_at(o->po, it->stage_off));
		fputs(it->row->kind == REPORT_VALUE ? "\",kind=\"value" : "\",kind=\"latency", f);
	}
	if (xname)
		fprintf(f, "\",%s=\"%s", xname, xval);
	fputs("\"} ", f);
}

static void put_u64(struct out *o, uint64_t v)
{
	fprintf(o->f, "%llu\n", (unsigned long long)v);
}

/* hi * 2^64 + lo in decimal, every digit. */
static void put_u128(struct out *o, uint64_t hi, uint64_t lo)
{
	unsigned __int128 v = ((unsigned __int128)hi << 64) | lo;
	char buf[48], *p = buf + sizeof(buf) - 1;

	*p = '\0';
	do {
		*--p = (char)('0' + (unsigned)(v % 10));
		v /= 10;
	} while (v);
	fprintf(o->f, "%s\n", p);
}

static void put_double(struct out *o, double v)
{
	char buf[NUM_SIZE];

	format_double(v, buf, sizeof(buf));
	fprintf(o->f, "%s\n", buf);
}

static void whole_buckets(const struct accum *a, const uint64_t *le_ticks, unsigned nb,
			  uint64_t *ret);

void prom_bounds_init(struct prom_bounds *b, const uint64_t *le_ns, unsigned n, double tsc_hz)
{
	memset(b, 0, sizeof(*b));
	b->n = n < PROM_MAX_BUCKETS ? n : PROM_MAX_BUCKETS;
	for (unsigned i = 0; i < b->n; i++) {
		double t = (double)le_ns[i] * tsc_hz / 1e9;

		b->le_ns[i] = le_ns[i];
		b->le_ticks[i] = t >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)t;
	}
}

/* Cumulative counts of `a` at each bound (in ticks): exact where the bound
 * has a counted slot (slot[b] >= 0), else whole buckets only; see above. */
static void cumulative(const struct accum *a, const struct hist_bounds *hb, const int *slot,
		       const uint64_t *le_ticks, unsigned nb, uint64_t *ret)
{
	whole_buckets(a, le_ticks, nb, ret);
	for (unsigned b = 0; b < nb; b++)
		if (slot[b] >= 0)
			ret[b] = accum_at_or_below(a, hb, (unsigned)slot[b]);
}

/* Counts of the histogram buckets lying wholly at or below each bound. */
static void whole_buckets(const struct accum *a, const uint64_t *le_ticks, unsigned nb,
			  uint64_t *ret)
{
	unsigned lo, hi, b = 0;
	uint64_t cum = 0;

	if (a->count == 0) {
		memset(ret, 0, nb * sizeof(*ret));
		return;
	}
	accum_band(a, &lo, &hi);
	for (unsigned i = lo; i <= hi; i++) {
		uint64_t upper = hist_lower(i) + (hist_width(i) - 1);

		while (b < nb && upper > le_ticks[b])
			ret[b++] = cum;
		cum += a->buckets[i];
	}
	while (b < nb)
		ret[b++] = cum;
}

enum family_of { FAM_LATENCY, FAM_VALUE, FAM_ANOMALIES };

static bool in_family(const struct prom_item *it, enum family_of fam)
{
	if (it->skip)
		return false;
	return fam == FAM_LATENCY ? it->latency : fam == FAM_VALUE ? it->value : it->anomalies;
}

/* Families with no series are left out altogether. */
static bool family_has_series(const struct prom_out *po, enum family_of fam)
{
	for (uint32_t i = 0; i < po->nitems; i++)
		if (in_family(&po->items[i], fam))
			return true;
	return false;
}

static void latency_families(struct out *o, const char (*le)[NUM_SIZE],
			     const uint64_t *le_ticks, const int *slot, unsigned nb,
			     const char (*q)[NUM_SIZE])
{
	const struct prom_out *po = o->po;
	const struct prom_snapshot *s = o->s;
	const char *hname = "perfmond_latency_seconds";
	const char *sname = "perfmond_latency_quantile_seconds";
	uint64_t cum[PROM_MAX_BUCKETS];

	if (!family_has_series(po, FAM_LATENCY))
		return;
	family(o, hname, "histogram",
	       "Stage and end-to-end span latency since the collector started.");
	for (uint32_t i = 0; i < po->nitems; i++) {
		const struct prom_item *it = &po->items[i];
		const struct accum *a = it->pr.lifetime;

		if (!in_family(it, FAM_LATENCY))
			continue;
		cumulative(a, s->slots, slot, le_ticks, nb, cum);
		for (unsigned b = 0; b < nb; b++) {
			series(o, hname, "_bucket", it, WITH_POINT | WITH_STAGE, "le", le[b]);
			put_u64(o, cum[b]);
		}
		series(o, hname, "_bucket", it, WITH_POINT | WITH_STAGE, "le", "+Inf");
		put_u64(o, a->count);
		series(o, hname, "_sum", it, WITH_POINT | WITH_STAGE, NULL, NULL);
		put_double(o, accum_sum(a) / po->rate);
		series(o, hname, "_count", it, WITH_POINT | WITH_STAGE, NULL, NULL);
		put_u64(o, a->count);
	}

	family(o, sname, "summary",
	       "Stage and end-to-end span latency percentiles since the collector started.");
	for (uint32_t i = 0; i < po->nitems; i++) {
		const struct prom_item *it = &po->items[i];
		const struct accum *a = it->pr.lifetime;

		if (!in_family(it, FAM_LATENCY))
			continue;
		for (unsigned k = 0; k < s->nquantiles; k++) {
			series(o, sname, "", it, WITH_POINT | WITH_STAGE, "quantile", q[k]);
			put_double(o, a->count ? (double)accum_percentile(a, s->quantiles[k]) /
						 po->rate : NAN);
		}
		series(o, sname, "_sum", it, WITH_POINT | WITH_STAGE, NULL, NULL);
		put_double(o, accum_sum(a) / po->rate);
		series(o, sname, "_count", it, WITH_POINT | WITH_STAGE, NULL, NULL);
		put_u64(o, a->count);
	}
}

static void value_family(struct out *o, const char (*q)[NUM_SIZE])
{
	const struct prom_out *po = o->po;
	const struct prom_snapshot *s = o->s;
	const char *name = "perfmond_value";

	if (!family_has_series(po, FAM_VALUE))
		return;
	family(o, name, "summary",
	       "Value samples in the producer's own unit since the collector started.");
	for (uint32_t i = 0; i < po->nitems; i++) {
		const struct prom_item *it = &po->items[i];
		const struct accum *a = it->pr.lifetime;

		if (!in_family(it, FAM_VALUE))
			continue;
		for (unsigned k = 0; k < s->nquantiles; k++) {
			series(o, name, "", it, WITH_POINT | WITH_STAGE, "quantile", q[k]);
			if (a->count)
				put_u64(o, accum_percentile(a, s->quantiles[k]));
			else
				put_double(o, NAN);
		}
		series(o, name, "_sum", it, WITH_POINT | WITH_STAGE, NULL, NULL);
		put_u128(o, a->sum_hi, a->sum_lo);   /* exact, every digit */
		series(o, name, "_count", it, WITH_POINT | WITH_STAGE, NULL, NULL);
		put_u64(o, a->count);
	}
}

static void anomaly_families(struct out *o)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} fams[] = {
		{ "perfmond_spans_abandoned_total",
		  "Spans abandoned: begun again while open, evicted from a full table, untouched "
		  "for stalled_sample_timeout, or still open at shutdown.",
		  offsetof(struct pairing_anomalies, abandoned) },
		{ "perfmond_spans_orphan_total",
		  "Step or end events that found no open span.",
		  offsetof(struct pairing_anomalies, orphan) },
		{ "perfmond_spans_invalid_total",
		  "Spans discarded because a timestamp went backwards.",
		  offsetof(struct pairing_anomalies, invalid) },
		{ "perfmond_samples_out_of_range_total",
		  "Samples dropped because the stage table (max_stages) was full.",
		  offsetof(struct pairing_anomalies, out_of_range) },
	};
	const struct prom_out *po = o->po;

	if (!family_has_series(po, FAM_ANOMALIES))
		return;
	for (size_t k = 0; k < sizeof(fams) / sizeof(fams[0]); k++) {
		family(o, fams[k].name, "counter", fams[k].help);
		for (uint32_t i = 0, j; i < po->nitems; i = j) {
			const struct prom_item *it = NULL;
			uint64_t sum = 0;

			/* One series per point: the two overflow rows (spans and
			 * value samples) share the point, so their counts add. */
			for (j = i; j < po->nitems && same_point(&po->items[i], &po->items[j]); j++) {
				if (!in_family(&po->items[j], FAM_ANOMALIES))
					continue;
				if (!it)
					it = &po->items[j];
				sum += *(const uint64_t *)((const char *)
					po->items[j].pr.anomalies_lifetime + fams[k].off);
			}
			if (!it)
				continue;
			series(o, fams[k].name, "", it, WITH_POINT, NULL, NULL);
			put_u64(o, sum);
		}
	}
}

static void collector_families(struct out *o)
{
	const struct prom_snapshot *s = o->s;
	char num[NUM_SIZE];

	family(o, "perfmond_events_drained_total", "counter",
	       "Events read from the ring by the collector.");
	series(o, "perfmond_events_drained_total", "", NULL, 0, NULL, NULL);
	put_u64(o, s->drained);
	family(o, "perfmond_events_dropped_total", "counter",
	       "Events overwritten in the ring before the collector read them.");
	series(o, "perfmond_events_dropped_total", "", NULL, 0, NULL, NULL);
	put_u64(o, s->dropped);
	family(o, "perfmond_slots_stalled_total", "counter",
	       "Ring slots reserved by a producer but never published, stepped over.");
	series(o, "perfmond_slots_stalled_total", "", NULL, 0, NULL, NULL);
	put_u64(o, s->stalled);
	family(o, "perfmond_events_misordered_total", "counter",
	       "Span events the collector could only pair after younger ones.");
	series(o, "perfmond_events_misordered_total", "", NULL, 0, NULL, NULL);
	put_u64(o, s->misordered);

	family(o, "perfmond_tsc_frequency_hertz", "gauge",
	       "Timestamp counter rate as currently estimated by the collector.");
	series(o, "perfmond_tsc_frequency_hertz", "", NULL, 0, NULL, NULL);
	put_double(o, s->tsc_hz);
	family(o, "perfmond_tsc_invariant", "gauge",
	       "1 when timestamps run at a constant rate (invariant TSC, or CLOCK_MONOTONIC "
	       "off x86), 0 when they may not.");
	series(o, "perfmond_tsc_invariant", "", NULL, 0, NULL, NULL);
	put_u64(o, s->tsc_invariant || !s->tsc_clock);

	family(o, "perfmond_flush_interval_seconds", "gauge",
	       "How often the collector rewrites this file.");
	series(o, "perfmond_flush_interval_seconds", "", NULL, 0, NULL, NULL);
	format_ns_seconds(s->flush_interval_ns, num, sizeof(num));
	fprintf(o->f, "%s\n", num);
	/* Last, so a complete file always ends with it. */
	family(o, "perfmond_last_flush_timestamp_seconds", "gauge",
	       "End of the interval this file was written for, in seconds since the epoch.");
	series(o, "perfmond_last_flush_timestamp_seconds", "", NULL, 0, NULL, NULL);
	format_ns_seconds(s->flush_realtime_ns, num, sizeof(num));
	fprintf(o->f, "%s\n", num);
}

static void skipped_rows(struct out *o)
{
	for (uint32_t i = 0; i < o->po->nitems; i++) {
		const struct prom_item *it = &o->po->items[i];

		if (!it->skip)
			continue;
		fputs("# perfmond: left out point \"", o->f);
		put_escaped(o->f, it->row->point);
		fputs("\" stage \"", o->f);
		put_escaped(o->f, it->row->stage);
		fputs("\": its labels collide with another row's\n", o->f);
	}
}

int prom_out_format(struct prom_out *po, FILE *f, const struct prom_snapshot *s)
{
	char le[PROM_MAX_BUCKETS][NUM_SIZE], q[REPORT_MAX_PCT][NUM_SIZE];
	uint64_t le_ticks[PROM_MAX_BUCKETS];
	int slot[PROM_MAX_BUCKETS];
	unsigned nb = s->le_ns ? s->nle : 0, j = 0;
	struct out o = { f, po, s };
	locale_t old;
	int e;

	if (po->rate <= 0 && s->tsc_hz > 0)
		po->rate = s->tsc_hz;
	if (po->rate <= 0 || nb > PROM_MAX_BUCKETS || s->nquantiles > REPORT_MAX_PCT)
		return -EINVAL;
	if ((e = collect_items(po, s)) < 0 || (e = unique_labels(po)) < 0)
		return e;

	old = uselocale(po->c_locale);
	for (unsigned b = 0; b < nb; b++) {
		double t = (double)s->le_ns[b] * po->rate / 1e9;

		format_ns_seconds(s->le_ns[b], le[b], sizeof(le[b]));
		le_ticks[b] = t >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)t;
		/* The engine's slot for this bound, if it counts at it. */
		slot[b] = -1;
		while (s->counted && j < s->counted->n && s->counted->le_ns[j] < s->le_ns[b])
			j++;
		if (s->counted && s->slots && j < s->counted->n && j < s->slots->n &&
		    s->counted->le_ns[j] == s->le_ns[b]) {
			slot[b] = (int)j;
			le_ticks[b] = s->counted->le_ticks[j];
		}
	}
	for (unsigned k = 0; k < s->nquantiles; k++)
		format_quantile(s->quantiles[k], q[k], sizeof(q[k]));

	latency_families(&o, le, le_ticks, slot, nb, q);
	value_family(&o, q);
	anomaly_families(&o);
	skipped_rows(&o);
	collector_families(&o);
	uselocale(old);
	return ferror(f) ? -EIO : 0;
}

/*
 * No fsync: the file is regenerated within one interval, and a scrape
 * only needs rename's atomicity, not durability; syncing every second
 * would stall the reporter on slow disks for nothing.
 */
struct prom_fill {
	struct prom_out *po;
	const struct prom_snapshot *s;
	int result;
};

static int fill_prom(FILE *f, void *arg)
{
	struct prom_fill *pf = arg;
	return pf->result = prom_out_format(pf->po, f, pf->s);
}

int prom_out_write(struct prom_out *po, const char *path, const struct prom_snapshot *s,
		   char *err, size_t errlen)
{
	struct prom_fill pf = { po, s, 0 };
	int e = atomic_file_write(path, PROM_OUT_FILE_MODE, false, "exposition", fill_prom, &pf,
				  err, errlen);
	if (e < 0 && pf.result == -EINVAL)
		errmsg_set(err, errlen, "%s: cannot build the exposition: no TSC rate or too many "
		           "buckets or quantiles", path);
	return e;
}
