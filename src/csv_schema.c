/*
 * csv_schema.c - the columns of perfmond's CSV files (see csv_schema.h).
 */
#include "build-config.h"

#include <stdio.h>
#include <string.h>

#include "csv_schema.h"

const char *const csv_fixed_columns[CSV_FIXED_COLS] = {
	"timestamp", "point", "stage", "kind", "count", "dropped", "invalid",
	"stalled", "abandoned", "orphan", "out_of_range",
};

const char *const csv_outliers_columns[CSV_OUTLIERS_FIXED] = {
	"timestamp", "point", "stage", "rank", "seq", "start",
};

bool csv_unit_known(const char *u)
{
	return !strcmp(u, "ns") || !strcmp(u, "us") || !strcmp(u, "cycles");
}

/* Append to buf at *k; false once it no longer fits. */
static bool put(char *buf, size_t n, int *k, const char *a, const char *b, const char *c)
{
	int w;

	if (*k < 0)
		return false;
	w = snprintf(buf + *k, n - (size_t)*k, "%s%s%s", a, b, c);
	if (w < 0 || (size_t)w >= n - (size_t)*k) {
		*k = -1;
		return false;
	}
	*k += w;
	return true;
}

int csv_series_header(char *buf, size_t n, const char *unit, const char (*pct_label)[24],
		      unsigned npct, bool overhead)
{
	int k = 0;

	if (!n)
		return -1;
	buf[0] = '\0';
	for (unsigned i = 0; i < CSV_FIXED_COLS; i++)
		put(buf, n, &k, i ? "," : "", csv_fixed_columns[i], "");
	put(buf, n, &k, ",min_", unit, "");
	put(buf, n, &k, ",mean_", unit, "");
	put(buf, n, &k, ",stddev_", unit, "");
	for (unsigned i = 0; i < npct; i++) {
		put(buf, n, &k, ",", pct_label[i], "_");
		put(buf, n, &k, unit, "", "");
	}
	put(buf, n, &k, ",max_", unit, ",tsc_hz");
	if (overhead)
		put(buf, n, &k, ",overhead_", unit, "");
	return k;
}

int csv_outliers_header(char *buf, size_t n, const char *unit)
{
	int k = 0;

	if (!n)
		return -1;
	buf[0] = '\0';
	for (unsigned i = 0; i < CSV_OUTLIERS_FIXED; i++)
		put(buf, n, &k, i ? "," : "", csv_outliers_columns[i], "");
	put(buf, n, &k, ",duration_", unit, "");
	return k;
}
