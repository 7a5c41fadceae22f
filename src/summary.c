/*
 * summary.c - the summary file: lifetime figures per row as a fixed-width
 * table for people (docs/summary.md).
 *
 * Flow: drain -> pairing -> report (lifetime rows, reporter thread) ->
 * [summary] -> `<summary path>`, at shutdown, on SIGUSR2 / `perfmonctl
 * summary`, and beside each rotated CSV.
 *
 * Every cell is formatted first and the column widths come from the data,
 * so a long label widens its column instead of pushing the row out of
 * line; labels are measured in UTF-8 characters, not bytes.  Formatting is
 * done in the C locale whatever the process locale.  The file is replaced
 * atomically: written to a fresh temporary beside it (mkstemp: never
 * follows a symlink, never clobbers), synced, then renamed over the path,
 * so a reader sees the old summary or the new one, never half of one.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "summary.h"

#define SUMMARY_FILE_MODE 0640
#define CELL_SIZE 40

enum col {
	COL_POINT,
	COL_STAGE,
	COL_KIND,
	COL_COUNT,
	COL_INVALID,
	COL_ABANDONED,
	COL_ORPHAN,
	COL_OUT_OF_RANGE,
	COL_MIN,
	COL_MEAN,
	COL_P50,
	COL_P99,
	COL_MAX,
	NCOLS
};

static const struct {
	const char *title;
	unsigned min_width;
	bool left;
} columns[NCOLS] = {
	[COL_POINT] = { "point", 18, true },
	[COL_STAGE] = { "stage", 14, true },
	[COL_KIND] = { "kind", 7, true },
	[COL_COUNT] = { "count", 10, false },
	[COL_INVALID] = { "invalid", 8, false },
	[COL_ABANDONED] = { "abandoned", 9, false },
	[COL_ORPHAN] = { "orphan", 8, false },
	[COL_OUT_OF_RANGE] = { "out_of_range", 12, false },
	[COL_MIN] = { "min", 10, false },
	[COL_MEAN] = { "mean", 10, false },
	[COL_P50] = { "p50", 10, false },
	[COL_P99] = { "p99", 10, false },
	[COL_MAX] = { "max", 10, false },
};

#define COL_GAP 2

/* Characters on screen, counting a UTF-8 sequence as one. */
static unsigned display_width(const char *s)
{
	unsigned w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

static void pad(FILE *f, unsigned n)
{
	while (n--)
		fputc(' ', f);
}

static void format_duration_c(double v, enum report_unit unit, char *buf, size_t n)
{
	if (unit == REPORT_UNIT_CYCLES) {
		snprintf(buf, n, "%.0fcyc", v);
		return;
	}
	if (unit == REPORT_UNIT_US)
		v *= 1000.0;
	if (v < 1000.0)
		snprintf(buf, n, "%.1fns", v);
	else if (v < 1e6)
		snprintf(buf, n, "%.2fus", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, n, "%.2fms", v / 1e6);
	else
		snprintf(buf, n, "%.2fs", v / 1e9);
}

/* Run the formatting in the C locale, restoring the caller's afterwards. */
struct c_locale_scope {
	locale_t c, prev;
};

static void c_locale_enter(struct c_locale_scope *sc)
{
	sc->c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	sc->prev = sc->c ? uselocale(sc->c) : (locale_t)0;
}

static void c_locale_leave(struct c_locale_scope *sc)
{
	if (!sc->c)
		return;
	uselocale(sc->prev);
	freelocale(sc->c);
}

void summary_format_duration(double v, enum report_unit unit, char *buf, size_t n)
{
	struct c_locale_scope sc;

	c_locale_enter(&sc);
	format_duration_c(v, unit, buf, n);
	c_locale_leave(&sc);
}

/* A latency in its unit, or a value: `raw` exactly (min, max,
 * percentiles), or `v` with two decimals (the mean). */
static void format_figure(double v, uint64_t raw, const struct report_row *row,
			  enum report_unit unit, bool mean, char *buf, size_t n)
{
	if (row->f.count == 0)
		snprintf(buf, n, "-");
	else if (row->kind == REPORT_VALUE && mean) {
		/* Integer part exact (a double cannot hold every uint64), the
		 * fraction rounded to two decimals. */
		unsigned long long i = row->f.mean_int;
		unsigned c = (unsigned)(row->f.mean_frac * 100.0 + 0.5);

		if (c >= 100) {
			i++;
			c = 0;
		}
		snprintf(buf, n, "%llu.%02u", i, c);
	}
	else if (row->kind == REPORT_VALUE)
		snprintf(buf, n, "%llu", (unsigned long long)raw);
	else
		format_duration_c(v, unit, buf, n);
}

static void row_cells(char cells[NCOLS][CELL_SIZE], const struct report_row *row,
		      enum report_unit unit)
{
	const struct report_figures *f = &row->f;

	/* Labels are printed from the row itself; they may be longer than a cell. */
	cells[COL_POINT][0] = cells[COL_STAGE][0] = '\0';
	snprintf(cells[COL_KIND], CELL_SIZE, "%s",
		 row->kind == REPORT_VALUE ? "value" : "latency");
	snprintf(cells[COL_COUNT], CELL_SIZE, "%llu", (unsigned long long)f->count);
	snprintf(cells[COL_INVALID], CELL_SIZE, "%llu",
		 (unsigned long long)row->anomalies.invalid);
	snprintf(cells[COL_ABANDONED], CELL_SIZE, "%llu",
		 (unsigned long long)row->anomalies.abandoned);
	snprintf(cells[COL_ORPHAN], CELL_SIZE, "%llu",
		 (unsigned long long)row->anomalies.orphan);
	snprintf(cells[COL_OUT_OF_RANGE], CELL_SIZE, "%llu",
		 (unsigned long long)row->anomalies.out_of_range);
	format_figure(f->min, f->min_raw, row, unit, false, cells[COL_MIN], CELL_SIZE);
	format_figure(f->mean, 0, row, unit, true, cells[COL_MEAN], CELL_SIZE);
	format_figure(f->p50, f->p50_raw, row, unit, false, cells[COL_P50], CELL_SIZE);
	format_figure(f->p99, f->p99_raw, row, unit, false, cells[COL_P99], CELL_SIZE);
	format_figure(f->max, f->max_raw, row, unit, false, cells[COL_MAX], CELL_SIZE);
}

static void put_cell(FILE *f, enum col c, const char *text, unsigned width)
{
	unsigned w = display_width(text);
	unsigned fill = width > w ? width - w : 0;

	if (c)
		pad(f, COL_GAP);
	if (columns[c].left) {
		fputs(text, f);
		if (c != NCOLS - 1)
			pad(f, fill);
	} else {
		pad(f, fill);
		fputs(text, f);
	}
}

static void header_line(FILE *f, const struct summary_info *info)
{
	uint64_t s = info->run_ns / 1000000000u;

	fprintf(f, "perfmond summary   instance %s   ", info->instance ? info->instance : "-");
	if (info->tsc_clock)
		fprintf(f, "tsc %.4f GHz (%s)", info->tsc_hz / 1e9,
			info->tsc_invariant ? "invariant" : "NOT INVARIANT");
	else
		fprintf(f, "clock CLOCK_MONOTONIC (no TSC)");
	fprintf(f, "   run %llu:%02u:%02u", (unsigned long long)(s / 3600),
		(unsigned)(s / 60 % 60), (unsigned)(s % 60));
	fprintf(f, "   overhead %.0f %s/stamp%s", info->overhead_ticks,
		info->tsc_clock ? "cyc" : "ns", info->subtracting ? " (subtracted)" : "");
	fprintf(f, "   drained %llu   dropped %llu   stalled %llu   misordered %llu\n",
		(unsigned long long)info->drained, (unsigned long long)info->dropped,
		(unsigned long long)info->stalled, (unsigned long long)info->misordered);
	if (info->tsc_clock && !info->tsc_invariant) {
		fputs("WARNING: this CPU's time stamp counter is NOT INVARIANT: its rate follows "
		      "the core frequency\n"
		      "WARNING: or stops in sleep states, so every latency below may be wrong "
		      "by a large factor.\n"
		      "WARNING: measure on a CPU with constant_tsc and nonstop_tsc "
		      "(see `perfmonctl doctor`).\n", f);
	} else if (!info->tsc_clock) {
		fputs("note: timestamps come from CLOCK_MONOTONIC on this architecture; "
		      "figures are in nanoseconds of that clock.\n", f);
	}
}

/* With outliers on: each latency row's slowest spans of the run. */
static void slowest_spans(FILE *f, const struct report *r, enum report_unit unit)
{
	struct outlier *sorted = NULL;
	bool titled = false;

	for (uint32_t i = 0; r && i < r->nrows; i++) {
		const struct report_row *row = &r->rows[i];
		uint32_t n;

		if (!row->outliers || !row->outliers->n)
			continue;
		if (!sorted && !(sorted = calloc(OUTLIERS_MAX, sizeof(*sorted)))) {
			fputs("(out of memory: slowest spans not shown)\n", f);
			return;
		}
		if (!titled) {
			fputs("\nSlowest spans of the run (seq, start UTC, duration):\n", f);
			titled = true;
		}
		fprintf(f, "%s %s\n", row->point, row->stage);
		n = outliers_sorted(row->outliers, sorted);
		for (uint32_t k = 0; k < n; k++) {
			char start[48], dur[48];

			report_format_utc_ns(sorted[k].start_ns ? sorted[k].start_ns :
				     report_realtime_of(r, sorted[k].start_tsc), start,
					     sizeof(start));
			summary_format_duration(report_convert(unit, (double)sorted[k].ticks,
							       r->tsc_hz), unit, dur, sizeof(dur));
			fprintf(f, "  %2u. seq %-8u %s  %s\n", k + 1, sorted[k].seq, start, dur);
		}
	}
	free(sorted);
}

void summary_format(FILE *f, const struct report *lifetime, const struct summary_info *info)
{
	char (*cells)[NCOLS][CELL_SIZE] = NULL;
	unsigned width[NCOLS], total = 0;
	uint32_t n = lifetime ? lifetime->nrows : 0;
	struct c_locale_scope sc;

	c_locale_enter(&sc);
	header_line(f, info);

	if (n)
		cells = calloc(n, sizeof(*cells));
	for (unsigned c = 0; c < NCOLS; c++) {
		width[c] = columns[c].min_width;
		if (display_width(columns[c].title) > width[c])
			width[c] = display_width(columns[c].title);
	}
	for (uint32_t i = 0; cells && i < n; i++) {
		const struct report_row *row = &lifetime->rows[i];

		row_cells(cells[i], row, info->unit);
		if (display_width(row->point) > width[COL_POINT])
			width[COL_POINT] = display_width(row->point);
		if (display_width(row->stage) > width[COL_STAGE])
			width[COL_STAGE] = display_width(row->stage);
		for (unsigned c = COL_KIND; c < NCOLS; c++)
			if (display_width(cells[i][c]) > width[c])
				width[c] = display_width(cells[i][c]);
	}
	for (unsigned c = 0; c < NCOLS; c++)
		total += width[c] + (c ? COL_GAP : 0);

	for (unsigned c = 0; c < NCOLS; c++)
		put_cell(f, c, columns[c].title, width[c]);
	fputc('\n', f);
	for (unsigned i = 0; i < total; i++)
		fputc('-', f);
	fputc('\n', f);

	if (n && !cells) {
		fputs("(out of memory: rows not shown)\n", f);
	} else if (!n) {
		fputs("(no samples and no anomalies yet)\n", f);
	}
	for (uint32_t i = 0; cells && i < n; i++) {
		const struct report_row *row = &lifetime->rows[i];

		put_cell(f, COL_POINT, row->point, width[COL_POINT]);
		put_cell(f, COL_STAGE, row->stage, width[COL_STAGE]);
		for (unsigned c = COL_KIND; c < NCOLS; c++)
			put_cell(f, c, cells[i][c], width[c]);
		fputc('\n', f);
	}
	free(cells);
	slowest_spans(f, lifetime, info->unit);
	c_locale_leave(&sc);
}

struct summary_fill {
	const struct report *lifetime;
	const struct summary_info *info;
};

static int fill_summary(FILE *f, void *arg)
{
	const struct summary_fill *sf = arg;
	summary_format(f, sf->lifetime, sf->info);
	return 0;
}

int summary_write(const char *path, const struct report *lifetime,
		  const struct summary_info *info, char *err, size_t errlen)
{
	struct summary_fill sf = { lifetime, info };
	return atomic_file_write(path, SUMMARY_FILE_MODE, true, "summary", fill_summary, &sf,
				 err, errlen);
}
