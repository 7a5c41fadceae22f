/*
 * csv_schema.c - the columns of perfmond's CSV files (see csv_schema.h).
 */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_schema.h"

const char *const csv_fixed_columns[CSV_FIXED_COLS] = {
	"timestamp", "point", "stage", "kind", "count", "dropped", "invalid",
	"stalled", "abandoned", "orphan", "out_of_range",
};

const char *const csv_outliers_columns[CSV_OUTLIERS_FIXED] = {
	"timestamp", "point", "stage", "rank", "seq", "start",
};

/* The figures before the percentiles, each <name>_<unit>; then the
 * percentiles, then max_<unit>, tsc_hz and, when on, overhead_<unit>. */
static const char *const figures_before_pct[] = { "min", "mean", "stddev" };
#define NBEFORE (sizeof(figures_before_pct) / sizeof(figures_before_pct[0]))
_Static_assert(CSV_COL_PCT == CSV_FIXED_COLS + NBEFORE, "percentiles follow stddev");

unsigned csv_series_ncols(const struct csv_series_shape *s)
{
	return CSV_COL_PCT + s->npct + 2 + (s->overhead ? 1 : 0);
}

/* "<a>_<unit>" or `a` alone (unit NULL) into buf: its length, or -1. */
static int name(char *buf, size_t n, const char *a, const char *unit)
{
	int w = unit ? snprintf(buf, n, "%s_%s", a, unit) : snprintf(buf, n, "%s", a);
	return w < 0 || (size_t)w >= n ? -1 : w;
}

int csv_series_column(const struct csv_series_shape *s, unsigned i, char *buf, size_t n)
{
	const char *u = report_unit_name(s->unit);

	if (i < CSV_FIXED_COLS)
		return name(buf, n, csv_fixed_columns[i], NULL);
	if (i < CSV_COL_PCT)
		return name(buf, n, figures_before_pct[i - CSV_FIXED_COLS], u);
	i -= CSV_COL_PCT;
	if (i < s->npct)
		return name(buf, n, s->pct_label[i], u);
	i -= s->npct;
	if (i == 0)
		return name(buf, n, "max", u);
	if (i == 1)
		return name(buf, n, "tsc_hz", NULL);
	if (i == 2 && s->overhead)
		return name(buf, n, "overhead", u);
	return -1;
}

/* Join `ncols` columns named by `column(ctx, i, ...)` into buf. */
static int join(char *buf, size_t n, unsigned ncols,
		int (*column)(const void *ctx, unsigned i, char *buf, size_t n), const void *ctx)
{
	size_t k = 0;

	if (!n)
		return -1;
	buf[0] = '\0';
	for (unsigned i = 0; i < ncols; i++) {
		int w;
		if (i) {
			if (k + 1 >= n)
				return -1;
			buf[k++] = ',';
		}
		if ((w = column(ctx, i, buf + k, n - k)) < 0)
			return -1;
		k += (size_t)w;
	}
	return (int)k;
}

static int series_column(const void *ctx, unsigned i, char *buf, size_t n)
{
	return csv_series_column(ctx, i, buf, n);
}

int csv_series_header(char *buf, size_t n, const struct csv_series_shape *s)
{
	return join(buf, n, csv_series_ncols(s), series_column, s);
}

static int outliers_column(const void *ctx, unsigned i, char *buf, size_t n)
{
	const enum report_unit *unit = ctx;

	if (i < CSV_OUTLIERS_FIXED)
		return name(buf, n, csv_outliers_columns[i], NULL);
	return name(buf, n, "duration", report_unit_name(*unit));
}

int csv_outliers_header(char *buf, size_t n, enum report_unit unit)
{
	return join(buf, n, CSV_OUTLIERS_FIXED + 1, outliers_column, &unit);
}

bool csv_unit_parse(const char *s, enum report_unit *ret)
{
	static const enum report_unit units[] = { REPORT_UNIT_NS, REPORT_UNIT_US,
						  REPORT_UNIT_CYCLES };

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(s, report_unit_name(units[i]))) {
			*ret = units[i];
			return true;
		}
	}
	return false;
}

/*
 * The daemon names a percentile's column after the shortest decimal form
 * of the percentile (units_percentile_label), '.' written as '_', and the
 * unit: p99_9_ns.  Read back here: p, digits, at most one '_' between
 * digits, then _<unit>.
 */
bool csv_pct_column(const char *col, enum report_unit unit, double *ret_pct,
		    size_t *ret_label_len)
{
	const char *u = report_unit_name(unit);
	size_t len = strlen(col), ul = strlen(u), i;
	char num[24];
	bool sep = false;
	double v;

	if (len <= ul + 1 || col[len - ul - 1] != '_' || strcmp(col + len - ul, u))
		return false;
	len -= ul + 1;
	if (len < 2 || len >= sizeof(num) || col[0] != 'p')
		return false;
	for (i = 1; i < len; i++) {
		char c = col[i];
		if (c == '_' && !sep && i > 1 && i + 1 < len) {
			sep = true;
			num[i - 1] = '.';
		} else if (c >= '0' && c <= '9') {
			num[i - 1] = c;
		} else {
			return false;
		}
	}
	num[len - 1] = '\0';
	v = strtod(num, NULL);
	if (!(v >= 0 && v <= 100))
		return false;
	*ret_pct = v;
	*ret_label_len = len;
	return true;
}
