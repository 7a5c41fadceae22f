/*
 * ctl_plot.c - SVG small multiples of each stage's percentiles over time.
 *
 * Choices a reader of the picture benefits from:
 *  - one panel per stage with its own y range, stacked over a shared time
 *    span, so stages of very different cost stay readable;
 *  - a log axis for latencies (tails are orders of magnitude above the
 *    median); ticks at 1-2-5 steps, or finer when the data spans less;
 *  - lines break where a stage has no interval, instead of bridging it;
 *  - more intervals than pixels: each pixel column shows the worst (max)
 *    value of its intervals for every series, so no spike disappears;
 *  - every line, tick and mark carries a tooltip (<title>).
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl_cli.h"
#include "ctl_csv.h"
#include "ctl_plot.h"
#include "ctl_stats.h"
#include "ctl_text.h"

#define FOOTER_H 34
#define PANEL_H 262
#define PLOT_TOP 44          /* panel top to plot area */
#define PLOT_H 170
#define MARGIN_L 80
#define MARGIN_R 28
#define MAX_SERIES (CTL_CSV_MAX_PCT + 1)

static const char *const palette[] = {
	"#1f77b4", "#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b",
	"#e377c2", "#17becf", "#bcbd22", "#7f3b08", "#2d004b", "#00441b",
	"#a50026", "#313695", "#4d9221", "#c51b7d",
};
#define MAX_COLOR "#555555"
#define MARK_COLOR "#d62728"

struct mark {
	int64_t t;
	uint64_t invalid, abandoned, orphan, out_of_range, dropped, stalled;
};

struct pstage {
	struct ctl_vec t;                  /* interval end, ms */
	struct ctl_vec s[MAX_SERIES];      /* percentiles, then max */
	struct mark *marks;
	size_t nmarks, capmarks;
	uint64_t samples;
};

struct plot_ctx {
	const struct ctl_filter *filter;
	struct ctl_stages stages;
	struct pstage *ps;
	unsigned cap;
	struct ctl_vec times;              /* distinct interval ends, ms */
	int64_t last_t;
	unsigned long rows;
	struct ctl_csv_header h;
	bool have_h;
	bool cut;                          /* a heading ended in an ellipsis */
};

static int on_row(void *ctx, const struct ctl_csv_header *h, const struct ctl_csv_row *r)
{
	struct plot_ctx *c = ctx;
	struct pstage *p;
	int id;

	if (!c->have_h) {
		c->h = *h;
		c->have_h = true;
	}
	if (c->rows == 0 || r->time_ms != c->last_t) {
		if (ctl_vec_push(&c->times, (double)r->time_ms) < 0)
			return -ENOMEM;
		c->last_t = r->time_ms;
	}
	c->rows++;
	if (c->filter && !ctl_filter_match(c->filter, r->point, r->stage))
		return 0;
	id = ctl_stages_id(&c->stages, r->point, r->stage, r->value);
	if (id < 0)
		return id;
	if ((unsigned)id >= c->cap) {
		unsigned cap = c->cap ? c->cap * 2 : 16;
		struct pstage *n = realloc(c->ps, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + c->cap, 0, (cap - c->cap) * sizeof(*n));
		c->ps = n;
		c->cap = cap;
	}
	p = &c->ps[id];
	if (r->invalid || r->abandoned || r->orphan || r->out_of_range || r->dropped ||
	    r->stalled) {
		if (p->nmarks == p->capmarks) {
			size_t cap = p->capmarks ? p->capmarks * 2 : 16;
			struct mark *m = realloc(p->marks, cap * sizeof(*m));
			if (!m)
				return -ENOMEM;
			p->marks = m;
			p->capmarks = cap;
		}
		p->marks[p->nmarks++] = (struct mark){ r->time_ms, r->invalid, r->abandoned,
						       r->orphan, r->out_of_range, r->dropped,
						       r->stalled };
	}
	if (r->count == 0)
		return 0;
	p->samples += r->count;
	if (ctl_vec_push(&p->t, (double)r->time_ms) < 0)
		return -ENOMEM;
	for (unsigned i = 0; i < h->npct; i++)
		if (ctl_vec_push(&p->s[i], r->pct[i]) < 0)
			return -ENOMEM;
	return ctl_vec_push(&p->s[h->npct], r->max);
}

static void ctx_free(struct plot_ctx *c)
{
	for (unsigned i = 0; i < c->stages.n; i++) {
		ctl_vec_free(&c->ps[i].t);
		for (unsigned s = 0; s < MAX_SERIES; s++)
			ctl_vec_free(&c->ps[i].s[s]);
		free(c->ps[i].marks);
	}
	free(c->ps);
	ctl_vec_free(&c->times);
	ctl_stages_free(&c->stages);
}

/* Text for XML: escaped, and without the two code points XML forbids
 * (U+FFFE, U+FFFF) that valid UTF-8 may still carry. */
static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == 0xEF && (unsigned char)s[1] == 0xBF &&
		    ((unsigned char)s[2] == 0xBE || (unsigned char)s[2] == 0xBF)) {
			fputc('?', f);
			s += 2;
		} else if (c == '&') {
			fputs("&amp;", f);
		} else if (c == '<') {
			fputs("&lt;", f);
		} else if (c == '>') {
			fputs("&gt;", f);
		} else if (c == '"') {
			fputs("&quot;", f);
		} else if (c == '\'') {
			fputs("&apos;", f);
		} else {
			fputc(c, f);
		}
	}
}

static void series_name(const struct ctl_csv_header *h, unsigned i, char *buf, size_t n)
{
	if (i == h->npct)
		snprintf(buf, n, "max");
	else
		snprintf(buf, n, "p%g", h->pct[i]);
}

static void fmt_value(bool value, const char *unit, double v, char *buf, size_t n)
{
	if (value)
		ctl_fmt_si(v, buf, n);
	else
		ctl_fmt_duration(v, unit, buf, n);
}

/* A tick label: like fmt_value, without the zeros a round tick does not
 * need ("20.0us" -> "20us", "2.50us" -> "2.5us"). */
static void fmt_tick(bool value, const char *unit, double v, char *buf, size_t n)
{
	char *dot, *end;

	fmt_value(value, unit, v, buf, n);
	dot = strchr(buf, '.');
	if (!dot)
		return;
	for (end = dot + 1; *end >= '0' && *end <= '9'; end++)
		;
	{
		char *last = end;
		while (last > dot + 1 && last[-1] == '0')
			last--;
		if (last == dot + 1)
			last = dot;
		memmove(last, end, strlen(end) + 1);
	}
}

static void fmt_clock(int64_t ms, const char *fmt, char *buf, size_t n)
{
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, n, fmt, &tm))
		snprintf(buf, n, "?");
}

/* ---- scales ------------------------------------------------------------ */

struct yscale {
	bool log;
	double lo, hi;            /* in data units (log: positive) */
	double ticks[64];
	unsigned nticks;
};

static double y_frac(const struct yscale *y, double v)
{
	if (y->log) {
		if (v <= y->lo)
			return 0;
		return (log10(v) - log10(y->lo)) / (log10(y->hi) - log10(y->lo));
	}
	return (v - y->lo) / (y->hi - y->lo);
}

/* A 1-2-5 step giving at most `max` ticks over `span`. */
static double nice_step(double span, unsigned max)
{
	double base = pow(10, floor(log10(span / max)));
	static const double m[] = { 1, 2, 5, 10 };
	for (unsigned i = 0; i < 4; i++)
		if (span / (base * m[i]) <= max)
			return base * m[i];
	return base * 10;
}

static void linear_ticks(struct yscale *y, unsigned max)
{
	double step = nice_step(y->hi - y->lo, max);
	y->nticks = 0;
	for (double v = ceil(y->lo / step) * step; v <= y->hi + step * 1e-9 && y->nticks < 64;
	     v += step)
		y->ticks[y->nticks++] = fabs(v) < step * 1e-9 ? 0 : v;
}

static void make_yscale(struct yscale *y, bool value, double mn, double mx, double mnpos)
{
	memset(y, 0, sizeof(*y));
	if (value || mnpos <= 0 || !(mx > 0)) {
		/* Linear from zero (or below, for negative values). */
		y->lo = mn < 0 ? mn : 0;
		y->hi = mx > y->lo ? mx : y->lo + 1;
		y->hi += (y->hi - y->lo) * 0.06;
		linear_ticks(y, 6);
		return;
	}
	y->log = true;
	{
		double l0 = log10(mnpos), l1 = log10(mx), span = l1 - l0, pad;
		if (span < 0.2) {          /* nearly flat: show a factor of ~1.6 */
			pad = (0.2 - span) / 2;
			l0 -= pad;
			l1 += pad;
			span = 0.2;
		}
		pad = span * 0.06;
		y->lo = pow(10, l0 - pad);
		y->hi = pow(10, l1 + pad);
		span = l1 - l0 + 2 * pad;
		if (span < 0.6) {
			/* Less than a factor of 4: evenly spaced values read best. */
			linear_ticks(y, 5);
			return;
		}
		{
			static const double m125[] = { 1, 2, 5 };
			static const double m1[] = { 1 };
			static const double m19[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
			const double *m = span > 3.5 ? m1 : span > 1.2 ? m125 : m19;
			unsigned nm = span > 3.5 ? 1 : span > 1.2 ? 3 : 9;
			int every = span > 7 ? 2 : 1;
			for (int e = (int)floor(log10(y->lo)); e <= (int)ceil(log10(y->hi)); e++) {
				if (every > 1 && e % every)
					continue;
				for (unsigned i = 0; i < nm && y->nticks < 64; i++) {
					double v = m[i] * pow(10, e);
					if (v >= y->lo && v <= y->hi)
						y->ticks[y->nticks++] = v;
				}
			}
		}
	}
}

/* Time ticks: the smallest step giving at most 7 ticks. */
static int64_t time_step(int64_t span, int64_t max_ticks)
{
	static const int64_t steps[] = {
		1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000,
		900000, 1800000, 3600000, 7200000, 10800000, 21600000, 43200000,
		86400000, 172800000, 604800000,
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (span / steps[i] <= max_ticks)
			return steps[i];
	return (span / max_ticks / 86400000 + 1) * 86400000;
}

/* ---- text layout --------------------------------------------------------- */

/*
 * Nothing may be clipped at any width: text is measured with a
 * conservative estimate of DejaVu Sans advances (the first font asked for;
 * the fallbacks are no wider) and wrapped to the room it has.
 */
static double text_px(const char *s, double size, bool bold)
{
	double em = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c & 0xC0) == 0x80)
			continue;   /* UTF-8 continuation byte */
		if (strchr("il.,:;|!'", c))
			em += 0.32;
		else if (c == ' ')
			em += 0.34;
		else if (strchr("ftrj()/-[]", c))
			em += 0.44;
		else if (strchr("mwMW@%", c) || c >= 0x80)
			em += 1.0;
		else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
			em += 0.74;
		else
			em += 0.64;
	}
	return em * size * (bold ? 1.1 : 1.0);
}

/* Lines of one wrapped text: far more than any title, label or figure
 * line needs at the narrowest width; beyond it the text ends in an
 * ellipsis and the command warns. */
#define WRAP_MAX_LINES 32
#define WRAP_LINE 512

/* Bytes of `s` (cut at a character boundary) that fit in `avail` px. */
static size_t fit_px(const char *s, size_t len, double size, bool bold, double avail)
{
	char tmp[WRAP_LINE];
	size_t n = 0;

	while (n < len) {
		size_t next = n + 1;
		while (next < len && ((unsigned char)s[next] & 0xC0) == 0x80)
			next++;
		if (next >= sizeof(tmp))
			break;
		memcpy(tmp, s, next);
		tmp[next] = '\0';
		if (text_px(tmp, size, bold) > avail)
			break;
		n = next;
	}
	return n ? n : (len ? 1 : 0);
}

/* End line `l` with an ellipsis, shortened so that both fit in `avail`. */
static void end_with_ellipsis(char *l, double size, bool bold, double avail)
{
	static const char ell[] = "\xe2\x80\xa6";   /* U+2026 */
	size_t len = strlen(l);
	char tmp[WRAP_LINE + sizeof(ell)];

	for (;;) {
		snprintf(tmp, sizeof(tmp), "%.*s%s", (int)len, l, ell);
		if (len == 0 || text_px(tmp, size, bold) <= avail)
			break;
		do   /* one character less */
			len--;
		while (len > 0 && ((unsigned char)l[len] & 0xC0) == 0x80);
	}
	if (len + sizeof(ell) > WRAP_LINE)
		len = WRAP_LINE - sizeof(ell);
	memcpy(l + len, ell, sizeof(ell));
}

/*
 * Break `text` into lines of at most `avail` px: at spaces, and a word
 * longer than a line (a long label or path) where it must.  Returns the
 * number of lines.  Text that would need more than WRAP_MAX_LINES lines
 * ends in an ellipsis on the last one, and *cut is set.
 */
static unsigned wrap_px(const char *text, double size, bool bold, double avail,
			char lines[WRAP_MAX_LINES][WRAP_LINE], bool *cut)
{
	unsigned n = 0;
	const char *p = text;

	while (*p == ' ')
		p++;
	while (*p && n < WRAP_MAX_LINES) {
		size_t len = strlen(p), take = fit_px(p, len, size, bold, avail);
		if (take < len) {
			/* Back up to the last space that keeps the line non-empty. */
			size_t sp = take;
			while (sp > 0 && p[sp] != ' ')
				sp--;
			if (sp > 0) {
				take = sp;
			} else {
				/* One long word: break after a '/' (paths), else
				 * after '_', '-' or '.', if there is one. */
				for (const char *set = "/\0_-.\0"; *set && sp == 0; set += strlen(set) + 1)
					for (size_t k = take; k > 1 && sp == 0; k--)
						if (strchr(set, p[k - 1]))
							sp = k;
				if (sp > 0)
					take = sp;
			}
		}
		if (take >= WRAP_LINE)
			take = WRAP_LINE - 1;
		memcpy(lines[n], p, take);
		lines[n][take] = '\0';
		while (take > 0 && lines[n][take - 1] == ' ')
			lines[n][--take] = '\0';
		n++;
		p += take;
		while (*p == ' ')
			p++;
	}
	if (*p) {
		end_with_ellipsis(lines[n - 1], size, bold, avail);
		*cut = true;
	}
	return n;
}

/* ---- drawing ----------------------------------------------------------- */

struct frame {
	double x0, y0, w, h;      /* plot area */
	int64_t t0, t1;
};

static double px_x(const struct frame *f, double t)
{
	return f->x0 + (t - (double)f->t0) / (double)(f->t1 - f->t0) * f->w;
}

static double px_y(const struct frame *f, const struct yscale *y, double v)
{
	double fr = y_frac(y, v);
	if (fr < 0)
		fr = 0;
	if (fr > 1)
		fr = 1;
	return f->y0 + f->h - fr * f->h;
}

/* The pixel column of time t; the last instant belongs to the last column
 * rather than to a column of its own past the edge. */
static double pixel_column(const struct frame *f, double t, double bucket_w)
{
	double col = floor((t - (double)f->t0) / bucket_w);
	return col >= f->w ? f->w - 1 : col;
}

/*
 * One series as a single path.  Points closer than a pixel are merged into
 * their column's maximum; the line breaks across gaps longer than
 * `gap_ms`.  An isolated point becomes a dot so it stays visible.
 */
static void draw_series(FILE *out, const struct frame *f, const struct yscale *y,
			const struct pstage *p, unsigned si, double gap_ms, const char *color,
			const char *dash, double width, const char *name)
{
	const double *t = p->t.v, *v = p->s[si].v;
	size_t n = p->t.n, i = 0;
	double last_t = 0, bucket_w = (double)(f->t1 - f->t0) / f->w;
	bool open = false;

	fprintf(out, "<path class=\"series %s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
		"stroke-linejoin=\"round\" stroke-linecap=\"round\"%s%s%s d=\"", name, color, width,
		dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
	while (i < n) {
		/* Fold every point of this pixel column; a gap is measured from
		 * the last point of one column to the first of the next. */
		double col = pixel_column(f, t[i], bucket_w), first = t[i], tt = t[i];
		double vv = v[i];
		size_t j = i + 1;
		bool joined, isolated;

		while (j < n && pixel_column(f, t[j], bucket_w) == col) {
			if (v[j] > vv)
				vv = v[j];
			tt = t[j];
			j++;
		}
		joined = open && first - last_t <= gap_ms;
		isolated = !joined && (j >= n || t[j] - tt > gap_ms);
		fprintf(out, "%s%.1f %.1f", joined ? " L" : " M", px_x(f, tt), px_y(f, y, vv));
		if (isolated)   /* a dot: a small circle drawn with the line's pen */
			fputs(" m-1.6 0 a1.6 1.6 0 1 0 3.2 0 a1.6 1.6 0 1 0 -3.2 0 m1.6 0", out);
		open = true;
		last_t = tt;
		i = j;
	}
	fprintf(out, "\"><title>%s</title></path>\n", name);
}

static void draw_marks(FILE *out, const struct frame *f, const struct pstage *p)
{
	for (size_t i = 0; i < p->nmarks; i++) {
		const struct mark *m = &p->marks[i];
		double x = px_x(f, (double)m->t), y = f->y0 + 1;
		char when[32];

		fmt_clock(m->t, "%H:%M:%S", when, sizeof(when));
		fprintf(out, "<path class=\"anomaly\" d=\"M%.1f %.1f l-4 -7 h8 z\" fill=\"%s\" "
			"stroke=\"#ffffff\" stroke-width=\"0.6\" transform=\"translate(0 8)\">"
			"<title>%s UTC: invalid %llu, abandoned %llu, orphan %llu, out_of_range %llu, "
			"collector dropped %llu, stalled %llu</title></path>\n",
			x, y, MARK_COLOR, when, (unsigned long long)m->invalid,
			(unsigned long long)m->abandoned, (unsigned long long)m->orphan,
			(unsigned long long)m->out_of_range, (unsigned long long)m->dropped,
			(unsigned long long)m->stalled);
	}
}

static void draw_time_axis(FILE *out, const struct frame *f, bool last)
{
	/* Labels are at most "12-31 23:59" wide: one per 90 px, up to 7. */
	int64_t max_ticks = f->w >= 7 * 90 ? 7 : f->w >= 2 * 90 ? (int64_t)(f->w / 90) : 1;
	int64_t span = f->t1 - f->t0, step = time_step(span, max_ticks), t;
	const char *fmt = step < 60000 ? "%H:%M:%S" : step >= 86400000 ? "%m-%d" :
			  span > 86400000 ? "%m-%d %H:%M" : "%H:%M";
	char label[32];

	for (t = (f->t0 + step - 1) / step * step; t <= f->t1; t += step) {
		double x = px_x(f, (double)t);
		fmt_clock(t, fmt, label, sizeof(label));
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>\n",
			x, f->y0, x, f->y0 + f->h);
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888888\"/>\n",
			x, f->y0 + f->h, x, f->y0 + f->h + 4);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\" "
			"fill=\"#444444\">%s</text>\n", x, f->y0 + f->h + 16, label);
	}
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\" "
		"fill=\"#666666\">%s</text>\n", f->x0 + f->w, f->y0 + f->h + 32,
		last ? "time (UTC)" : "UTC");
}

static void draw_y_axis(FILE *out, const struct frame *f, const struct yscale *y,
			bool value, const char *unit)
{
	char label[32];

	for (unsigned i = 0; i < y->nticks; i++) {
		double py = px_y(f, y, y->ticks[i]);
		fmt_tick(value, unit, y->ticks[i], label, sizeof(label));
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>\n",
			f->x0, py, f->x0 + f->w, py);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\" "
			"fill=\"#444444\">%s</text>\n", f->x0 - 6, py + 4, label);
	}
	fprintf(out, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\" "
		"font-size=\"11\" fill=\"#666666\">%s</text>\n", 16.0, f->y0 + f->h / 2,
		value ? "value (linear)" : y->log ? "latency (log scale)" : "latency");
}

#define HEAD_LINE_H 17    /* each extra line of a panel's heading */

/* A panel's heading: "point / stage" in bold, then its figures, on the
 * same line when there is room, else wrapped below. */
struct panel_head {
	char title[WRAP_MAX_LINES][WRAP_LINE];
	char stats[WRAP_MAX_LINES][WRAP_LINE];
	unsigned nt, ns;
	bool inline_stats;
	bool cut;                  /* some of it did not fit in WRAP_MAX_LINES */
};

static void panel_head(const struct plot_ctx *c, unsigned id, unsigned width,
		       struct panel_head *ph)
{
	const struct ctl_stage *st = &c->stages.items[id];
	const struct pstage *p = &c->ps[id];
	const struct ctl_csv_header *h = &c->h;
	double avail = (double)width - MARGIN_L - MARGIN_R, mx = -INFINITY;
	char title[1100], stats[512], a[64], b[64];
	size_t len = 0;

	for (unsigned s = 0; s <= h->npct; s++)
		for (size_t i = 0; i < p->s[s].n; i++)
			mx = p->s[s].v[i] > mx ? p->s[s].v[i] : mx;
	snprintf(title, sizeof(title), "%s / %s", st->point, st->stage);
	if (p->t.n) {
		ctl_fmt_si((double)p->samples, a, sizeof(a));
		len += (size_t)snprintf(stats + len, sizeof(stats) - len, "%zu interval%s, %s sample%s",
					p->t.n, p->t.n == 1 ? "" : "s", a, p->samples == 1 ? "" : "s");
		if (h->npct) {
			fmt_value(st->value, h->unit, ctl_median(p->s[0].v, p->s[0].n), b, sizeof(b));
			len += (size_t)snprintf(stats + len, sizeof(stats) - len, ", median p%g %s",
						h->pct[0], b);
		}
		fmt_value(st->value, h->unit, mx, b, sizeof(b));
		len += (size_t)snprintf(stats + len, sizeof(stats) - len, ", worst max %s", b);
	} else {
		len += (size_t)snprintf(stats + len, sizeof(stats) - len, "no samples");
	}
	if (p->nmarks && len < sizeof(stats))
		snprintf(stats + len, sizeof(stats) - len, ", %zu interval%s with anomalies",
			 p->nmarks, p->nmarks > 1 ? "s" : "");
	ph->cut = false;
	ph->nt = wrap_px(title, 14, true, avail, ph->title, &ph->cut);
	ph->inline_stats = ph->nt == 1 &&
		text_px(title, 14, true) + 10 + text_px(stats, 12, false) <= avail;
	if (ph->inline_stats) {
		snprintf(ph->stats[0], WRAP_LINE, "%s", stats);
		ph->ns = 1;
	} else {
		ph->ns = wrap_px(stats, 12, false, avail, ph->stats, &ph->cut);
	}
}

/* Extra height of a panel whose heading takes more than one line. */
static double panel_extra(const struct panel_head *ph)
{
	return (double)((ph->nt - 1) + (ph->inline_stats ? 0 : ph->ns)) * HEAD_LINE_H;
}

static void draw_panel(FILE *out, const struct plot_ctx *c, unsigned id, double top,
		       unsigned width, int64_t t0, int64_t t1, double gap_ms, bool last)
{
	const struct ctl_stage *st = &c->stages.items[id];
	const struct pstage *p = &c->ps[id];
	const struct ctl_csv_header *h = &c->h;
	unsigned nser = h->npct + 1;
	struct panel_head ph;
	struct frame f;
	struct yscale y;
	double mn = INFINITY, mx = -INFINITY, mnpos = INFINITY, ly = top + 24;

	panel_head(c, id, width, &ph);
	f = (struct frame){ MARGIN_L, top + PLOT_TOP + panel_extra(&ph),
			    width - MARGIN_L - MARGIN_R, PLOT_H, t0, t1 };
	for (unsigned s = 0; s < nser; s++)
		for (size_t i = 0; i < p->s[s].n; i++) {
			double v = p->s[s].v[i];
			mn = v < mn ? v : mn;
			mx = v > mx ? v : mx;
			if (v > 0 && v < mnpos)
				mnpos = v;
		}

	fprintf(out, "<g class=\"panel\">\n");
	for (unsigned i = 0; i < ph.nt; i++, ly += HEAD_LINE_H) {
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\" "
			"fill=\"#222222\">", MARGIN_L, ly);
		xml_text(out, ph.title[i]);
		if (ph.inline_stats) {
			fprintf(out, "<tspan font-weight=\"normal\" font-size=\"12\" "
				"fill=\"#666666\" dx=\"10\">");
			xml_text(out, ph.stats[0]);
			fputs("</tspan>", out);
		}
		fputs("</text>\n", out);
	}
	for (unsigned i = 0; !ph.inline_stats && i < ph.ns; i++, ly += HEAD_LINE_H) {
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" fill=\"#666666\">",
			MARGIN_L, ly);
		xml_text(out, ph.stats[i]);
		fputs("</text>\n", out);
	}

	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fcfcfc\" "
		"stroke=\"none\"/>\n", f.x0, f.y0, f.w, f.h);
	fprintf(out, "<clipPath id=\"clip%u\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		"height=\"%.1f\"/></clipPath>\n", id, f.x0 - 4, f.y0 - 4, f.w + 8, f.h + 8);
	if (p->t.n) {
		make_yscale(&y, st->value, mn, mx, mnpos);
		draw_y_axis(out, &f, &y, st->value, h->unit);
	}
	draw_time_axis(out, &f, last);
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
		"stroke=\"#b0b0b0\"/>\n", f.x0, f.y0, f.w, f.h);
	if (p->t.n) {
		fprintf(out, "<g clip-path=\"url(#clip%u)\">\n", id);
		/* max at the back, then the tail down to the median on top */
		draw_series(out, &f, &y, p, h->npct, gap_ms, MAX_COLOR, "5 3", 1.2, "max");
		for (unsigned s = h->npct; s-- > 0;) {
			char name[24];
			series_name(h, s, name, sizeof(name));
			draw_series(out, &f, &y, p, s, gap_ms,
				    palette[s % (sizeof(palette) / sizeof(palette[0]))], NULL,
				    s == 0 ? 2.2 : 1.6, name);
		}
		fputs("</g>\n", out);
	} else {
		static const char *const none[] = {
			"no interval with samples (anomaly counters only)",
			"no samples (anomalies only)", "no samples",
		};
		unsigned k = 0;
		while (k < 2 && text_px(none[k], 12, false) > f.w - 8)
			k++;
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
			"fill=\"#888888\">%s</text>\n", f.x0 + f.w / 2, f.y0 + f.h / 2, none[k]);
	}
	draw_marks(out, &f, p);
	fputs("</g>\n", out);
}

/* The legend from baseline `y`, wrapped into rows that fit `width`;
 * returns the baseline of its last row.  With out == NULL only measures. */
static double draw_legend(FILE *out, const struct ctl_csv_header *h, double y, unsigned width)
{
	static const char marks[] = "interval with anomalies or lost events";
	double x = MARGIN_L, right = (double)width - MARGIN_R;
	char name[24];

	for (unsigned s = 0; s <= h->npct; s++) {
		bool is_max = s == h->npct;
		double w;
		series_name(h, s, name, sizeof(name));
		w = 27 + text_px(name, 12, false);
		if (x > MARGIN_L && x + w > right) {
			x = MARGIN_L;
			y += 18;
		}
		if (out) {
			fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"%s\" stroke-width=\"%s\"%s/>\n", x, y - 4, x + 22, y - 4,
				is_max ? MAX_COLOR : palette[s % (sizeof(palette) / sizeof(palette[0]))],
				s == 0 ? "2.2" : is_max ? "1.2" : "1.6",
				is_max ? " stroke-dasharray=\"5 3\"" : "");
			fprintf(out, "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
				"fill=\"#333333\">%s</text>\n", x + 27, y, name);
		}
		x += w + 13;
	}
	if (x > MARGIN_L && x + 18 + text_px(marks, 12, false) > right) {
		x = MARGIN_L;
		y += 18;
	}
	if (out) {
		fprintf(out, "<path d=\"M%.1f %.1f l-4 -7 h8 z\" fill=\"%s\" "
			"transform=\"translate(0 -1)\"/>\n", x + 4, y, MARK_COLOR);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#333333\">%s"
			"</text>\n", x + 14, y, marks);
	}
	return y;
}

/* Title, subtitle and legend, each wrapped to `width`; returns the height
 * they take, and sets *cut when some text did not fit.  With out == NULL
 * only measures. */
static double draw_header(FILE *out, const struct ctl_csv_header *h, unsigned width,
			  const char *title, const char *subtitle, bool *cut)
{
	char lines[WRAP_MAX_LINES][WRAP_LINE];
	double avail = (double)width - MARGIN_L - MARGIN_R, y = 28;
	unsigned n = wrap_px(title, 18, true, avail, lines, cut);

	for (unsigned i = 0; i < n; i++, y += 22)
		if (out) {
			fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"18\" "
				"font-weight=\"bold\" fill=\"#111111\">", MARGIN_L, y);
			xml_text(out, lines[i]);
			fputs("</text>\n", out);
		}
	y += 20 - 22;
	n = wrap_px(subtitle, 12, false, avail, lines, cut);
	for (unsigned i = 0; i < n; i++, y += 16)
		if (out) {
			fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" "
				"fill=\"#555555\">", MARGIN_L, y);
			xml_text(out, lines[i]);
			fputs("</text>\n", out);
		}
	y = draw_legend(out, h, y - 16 + 24, width);
	return y + 12;
}

static double median_step(const struct ctl_vec *times)
{
	struct ctl_vec d = { 0 };
	double *s, m = 1000;

	if (times->n < 2)
		return m;
	s = malloc(times->n * sizeof(*s));
	if (!s)
		return m;
	memcpy(s, times->v, times->n * sizeof(*s));
	ctl_sort(s, times->n);
	for (size_t i = 1; i < times->n; i++)
		if (s[i] > s[i - 1] && ctl_vec_push(&d, s[i] - s[i - 1]) < 0)
			break;
	if (d.n)
		m = ctl_median(d.v, d.n);
	ctl_vec_free(&d);
	free(s);
	return m;
}

/* Keep each stage's points in time order (files may have been joined). */
static void sort_stage(struct pstage *p, unsigned nser)
{
	for (size_t i = 1; i < p->t.n; i++) {
		double t = p->t.v[i], v[MAX_SERIES];
		size_t j = i;
		if (p->t.v[i - 1] <= t)
			continue;
		for (unsigned s = 0; s < nser; s++)
			v[s] = p->s[s].v[i];
		while (j > 0 && p->t.v[j - 1] > t) {
			p->t.v[j] = p->t.v[j - 1];
			for (unsigned s = 0; s < nser; s++)
				p->s[s].v[j] = p->s[s].v[j - 1];
			j--;
		}
		p->t.v[j] = t;
		for (unsigned s = 0; s < nser; s++)
			p->s[s].v[j] = v[s];
	}
}

static void render(FILE *out, struct plot_ctx *c, const struct ctl_plot_opts *o,
		   const char *path)
{
	unsigned width = o->width, n = c->stages.n;
	double height, header_h, gap_ms, top, *extra;
	int64_t t0 = INT64_MAX, t1 = INT64_MIN;
	char a[40], b[40], span[32], title[512], subtitle[256];

	for (size_t i = 0; i < c->times.n; i++) {
		int64_t t = (int64_t)c->times.v[i];
		t0 = t < t0 ? t : t0;
		t1 = t > t1 ? t : t1;
	}
	gap_ms = 1.5 * median_step(&c->times);
	/* Each row is the end of an interval: show the first one's start. */
	t0 -= (int64_t)(gap_ms / 1.5);
	if (t1 <= t0)
		t1 = t0 + 1000;
	for (unsigned i = 0; i < n; i++)
		sort_stage(&c->ps[i], c->h.npct + 1);

	ctl_text_clean(title, o->title ? o->title : path, sizeof(title));
	fmt_clock(t0, "%Y-%m-%d %H:%M:%S", a, sizeof(a));
	fmt_clock(t1, "%Y-%m-%d %H:%M:%S", b, sizeof(b));
	ctl_fmt_age((double)(t1 - t0) / 1000.0, span, sizeof(span));
	snprintf(subtitle, sizeof(subtitle), "%zu intervals from %s to %s UTC (%s); latencies "
		 "in %s; one panel per stage", c->times.n, a, b, span, c->h.unit);

	/* Measure first: headings that wrap make their panel taller. */
	header_h = draw_header(NULL, &c->h, width, title, subtitle, &c->cut);
	extra = calloc(n ? n : 1, sizeof(*extra));
	height = header_h + FOOTER_H;
	for (unsigned i = 0; i < n; i++) {
		struct panel_head ph;
		panel_head(c, i, width, &ph);
		c->cut |= ph.cut;
		if (extra)
			extra[i] = panel_extra(&ph);
		height += PANEL_H + (extra ? extra[i] : 0);
	}

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n");
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%u\" "
		"height=\"%.0f\" viewBox=\"0 0 %u %.0f\" font-family=\"DejaVu Sans, Helvetica, "
		"Arial, sans-serif\">\n", width, height, width, height);
	fputs("<title>", out);
	xml_text(out, title);
	fputs("</title>\n", out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
		width, height);
	draw_header(out, &c->h, width, title, subtitle, &c->cut);
	top = header_h;
	for (unsigned i = 0; i < n; i++) {
		draw_panel(out, c, i, top, width, t0, t1, gap_ms, i + 1 == n);
		top += PANEL_H + (extra ? extra[i] : 0);
	}
	fprintf(out, "<text x=\"%u\" y=\"%.0f\" text-anchor=\"end\" font-size=\"10\" "
		"fill=\"#999999\">perfmonctl plot</text>\n", width - MARGIN_R, height - 12);
	fputs("</svg>\n", out);
	free(extra);
}

int ctl_plot_file(const char *path, const struct ctl_plot_opts *o, FILE *out, char *err,
		  size_t errlen)
{
	struct plot_ctx c;
	struct ctl_csv_header h;
	int e;

	memset(&c, 0, sizeof(c));
	c.filter = o->filter;
	ctl_stages_init(&c.stages);
	e = ctl_csv_read_file(path, on_row, &c, &h, err, errlen);
	if (e == 0 && c.stages.n == 0) {
		snprintf(err, errlen, "%s: no interval rows%s to plot", path,
			 c.rows ? " pass the --point/--stage filters" : "");
		e = -ENODATA;
	}
	if (e == 0) {
		c.h = h;
		render(out, &c, o, path);
		if (ferror(out)) {
			snprintf(err, errlen, "cannot write the SVG");
			e = -EIO;
		} else if (c.cut) {
			snprintf(err, errlen, "warning: a heading needs more than %u lines at "
				 "--width %u and ends in an ellipsis; give a shorter --title or a "
				 "larger --width", WRAP_MAX_LINES, o->width);
		} else if (errlen) {
			err[0] = '\0';
		}
	}
	ctx_free(&c);
	return e;
}

enum { OPT_POINT = 0x100, OPT_STAGE, OPT_WIDTH, OPT_TITLE };

int ctl_plot_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "point", required_argument, NULL, OPT_POINT },
		{ "stage", required_argument, NULL, OPT_STAGE },
		{ "width", required_argument, NULL, OPT_WIDTH },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl_filter filter = { 0 };
	struct ctl_plot_opts o = { 960, NULL, &filter };
	const char *dest = NULL, *cmd = argv[0];
	char msg[9000], tmp[4200];
	uint64_t w;
	FILE *f = NULL;
	int c, e, rc = CTL_EXIT_OK, fd;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			dest = optarg;
			break;
		case OPT_POINT:
		case OPT_STAGE:
			if (ctl_filter_add(&filter, c == OPT_STAGE, optarg) < 0)
				goto nomem;
			break;
		case OPT_WIDTH:
			if (ctl_parse_u64(optarg, &w) < 0 || w < 400 || w > 20000) {
				ctl_filter_free(&filter);
				return ctl_usage_error(err, cmd, "--width %s: 400 to 20000 pixels",
						       optarg);
			}
			o.width = (unsigned)w;
			break;
		case OPT_TITLE:
			o.title = optarg;
			break;
		default:
			ctl_filter_free(&filter);
			return ctl_usage_error(err, cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind + 1 != argc || !dest) {
		ctl_filter_free(&filter);
		return ctl_usage_error(err, cmd, "usage: plot FILE.csv -o OUT.svg ('-o -' for "
				       "standard output)");
	}
	if (!strcmp(dest, "-")) {
		e = ctl_plot_file(argv[optind], &o, out, msg, sizeof(msg));
		if (e < 0 || msg[0])   /* the failure, or a warning */
			fprintf(err, "perfmonctl plot: %s\n", msg);
		if (e < 0)
			rc = e == -EIO ? CTL_EXIT_FAILURE : CTL_EXIT_BAD_FILE;
		ctl_filter_free(&filter);
		return rc;
	}
	/* Write beside the destination and rename: never a half-written SVG. */
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", dest);
	fd = mkstemp(tmp);
	if (fd < 0 || fchmod(fd, 0644) < 0 || !(f = fdopen(fd, "w"))) {
		fprintf(err, "perfmonctl plot: cannot create %s: %s\n", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		ctl_filter_free(&filter);
		return CTL_EXIT_FAILURE;
	}
	e = ctl_plot_file(argv[optind], &o, f, msg, sizeof(msg));
	if (e == 0 && msg[0])
		fprintf(err, "perfmonctl plot: %s\n", msg);
	if (fclose(f) != 0 && e == 0) {
		e = -EIO;
		snprintf(msg, sizeof(msg), "cannot write %s: %s", dest, strerror(errno));
	}
	if (e == 0 && rename(tmp, dest) < 0) {
		e = -EIO;
		snprintf(msg, sizeof(msg), "cannot rename %s to %s: %s", tmp, dest, strerror(errno));
	}
	if (e < 0) {
		unlink(tmp);
		fprintf(err, "perfmonctl plot: %s\n", msg);
		rc = e == -EIO ? CTL_EXIT_FAILURE : CTL_EXIT_BAD_FILE;
	}
	ctl_filter_free(&filter);
	return rc;
nomem:
	ctl_filter_free(&filter);
	fprintf(err, "perfmonctl plot: out of memory\n");
	return CTL_EXIT_FAILURE;
}
