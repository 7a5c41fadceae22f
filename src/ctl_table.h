/*
 * ctl_table.h - perfmonctl's tabular output in its three formats.
 *
 * Flow: a command (status, report, compare, ...) fills a table of text
 * cells -> [ctl_table] -> stdout as
 *   live  a compact table fitted to the terminal width: when the columns do
 *         not fit, wrappable cells (labels, notes) wrap inside their column
 *         first; when even that is not enough, each row wraps onto several
 *         lines, continuation lines indented;
 *   md    a Markdown table, columns padded so the source lines up;
 *   csv   RFC 4180, for machines.
 * Every cell is cleaned with ctl_text_clean() when it is stored, so nothing
 * a label contains can break a row or reach the terminal as a control code.
 */
#ifndef PERFMOND_CTL_TABLE_H
#define PERFMOND_CTL_TABLE_H

#include <stdbool.h>
#include <stdio.h>

enum ctl_format {
	CTL_FORMAT_LIVE = 0,
	CTL_FORMAT_MD,
	CTL_FORMAT_CSV,
	CTL_FORMAT_JSON,  /* a document, not a table: see ctl_json.h */
};

enum ctl_align {
	CTL_ALIGN_LEFT = 0,
	CTL_ALIGN_RIGHT,
};

/* Gap between live columns, and the indent of a wrapped row's later lines. */
#define CTL_TABLE_GAP 2
#define CTL_TABLE_INDENT 2

struct ctl_table;

/* "live", "md", "csv" or "json".  0 or -EINVAL. */
int ctl_format_parse(const char *s, enum ctl_format *ret);

/*
 * The format asked for: `opt` (a --format value, may be NULL), else
 * $PERFMON_FORMAT, else live.  -EINVAL with a message naming the source of
 * the bad value.
 */
int ctl_format_choose(const char *opt, enum ctl_format *ret, char *err, size_t errlen);

/*
 * Columns available to a live table on `f`: the terminal's width when `f`
 * is a terminal, else $COLUMNS when set, else 0 (no limit).
 */
unsigned ctl_terminal_width(FILE *f);

/* An empty table; NULL when out of memory. */
struct ctl_table *ctl_table_new(void);
/* NULL is accepted. */
void ctl_table_free(struct ctl_table *t);

/*
 * Add a column.  `wrap`: its cells may be wrapped in a live table (text
 * such as labels); numbers should not wrap.  Columns are added before any
 * row.  Returns the column index or a negative errno.
 */
int ctl_table_add_column(struct ctl_table *t, const char *header, enum ctl_align align,
			 bool wrap);

/* Start a new row; its cells are empty until set. */
int ctl_table_add_row(struct ctl_table *t);

/* Set cell `col` of the last row (a cleaned copy of `text`, or of the
 * formatted text). */
int ctl_table_set(struct ctl_table *t, unsigned col, const char *text);
int ctl_table_setf(struct ctl_table *t, unsigned col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Rows added so far. */
unsigned ctl_table_rows(const struct ctl_table *t);

/*
 * Print the table in `fmt`; `width` limits a live table (0: no limit).
 * Returns 0, or a negative errno if building the table ran out of memory
 * or the stream failed.
 */
int ctl_table_print(const struct ctl_table *t, FILE *f, enum ctl_format fmt, unsigned width);

#endif
