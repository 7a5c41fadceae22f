/*
 * ctl_table.c - live, Markdown and CSV tables for perfmonctl.
 *
 * Fitting a live table to the terminal goes in two steps.  First the
 * columns that may wrap (labels, notes) give up width, widest first, down
 * to a floor; their cells then wrap onto extra lines inside the column,
 * preferably after a separator such as '_' or '/'.  If the numbers alone
 * are still wider than the terminal, each row is split into several
 * physical lines instead: the columns are packed greedily into lines of
 * the available width, the header is split the same way so every column
 * stays under its title, and continuation lines are indented.
 */
#include "build-config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <csv.h>

#include "ctl_table.h"
#include "ctl_text.h"

#define WRAP_FLOOR 8          /* a wrapping column keeps at least this width */
#define MAX_COLUMNS 64

struct ctl_column {
	char *header;
	enum ctl_align align;
	bool wrap;
};

struct ctl_table {
	struct ctl_column cols[MAX_COLUMNS];
	unsigned ncols;
	char ***rows;          /* rows[r][c], NULL = empty */
	unsigned nrows, cap;
	int error;             /* first failure, reported by print */
};

int ctl_format_parse(const char *s, enum ctl_format *ret)
{
	if (!strcmp(s, "live"))
		*ret = CTL_FORMAT_LIVE;
	else if (!strcmp(s, "md") || !strcmp(s, "markdown"))
		*ret = CTL_FORMAT_MD;
	else if (!strcmp(s, "csv"))
		*ret = CTL_FORMAT_CSV;
	else if (!strcmp(s, "json"))
		*ret = CTL_FORMAT_JSON;
	else
		return -EINVAL;
	return 0;
}

int ctl_format_choose(const char *opt, enum ctl_format *ret, char *err, size_t errlen)
{
	const char *env = getenv("PERFMON_FORMAT");
	enum ctl_format f = CTL_FORMAT_LIVE;

	if (opt) {
		if (ctl_format_parse(opt, &f) < 0) {
			snprintf(err, errlen, "--format %.64s: use live, md, csv or json", opt);
			return -EINVAL;
		}
	} else if (env && env[0]) {
		if (ctl_format_parse(env, &f) < 0) {
			snprintf(err, errlen, "PERFMON_FORMAT=%.64s: use live, md, csv or json", env);
			return -EINVAL;
		}
	}
	*ret = f;
	return 0;
}

unsigned ctl_terminal_width(FILE *f)
{
	struct winsize ws;
	const char *env;

	if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	env = getenv("COLUMNS");
	if (env && atoi(env) > 0)
		return (unsigned)atoi(env);
	return 0;
}

struct ctl_table *ctl_table_new(void)
{
	return calloc(1, sizeof(struct ctl_table));
}

void ctl_table_free(struct ctl_table *t)
{
	unsigned r, c;

	if (!t)
		return;
	for (c = 0; c < t->ncols; c++)
		free(t->cols[c].header);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++)
			free(t->rows[r][c]);
		free(t->rows[r]);
	}
	free(t->rows);
	free(t);
}

static char *clean_copy(const char *s)
{
	return ctl_text_dup_clean(s, strlen(s));
}

int ctl_table_add_column(struct ctl_table *t, const char *header, enum ctl_align align,
			 bool wrap)
{
	char *h;

	if (t->nrows || t->ncols >= MAX_COLUMNS)
		return t->error = -EINVAL;
	h = clean_copy(header);
	if (!h)
		return t->error = -ENOMEM;
	t->cols[t->ncols] = (struct ctl_column){ h, align, wrap };
	return (int)t->ncols++;
}

int ctl_table_add_row(struct ctl_table *t)
{
	if (t->nrows == t->cap) {
		unsigned cap = t->cap ? t->cap * 2 : 16;
		char ***rows = realloc(t->rows, cap * sizeof(*rows));
		if (!rows)
			return t->error = -ENOMEM;
		t->rows = rows;
		t->cap = cap;
	}
	t->rows[t->nrows] = calloc(t->ncols ? t->ncols : 1, sizeof(char *));
	if (!t->rows[t->nrows])
		return t->error = -ENOMEM;
	t->nrows++;
	return 0;
}

int ctl_table_set(struct ctl_table *t, unsigned col, const char *text)
{
	char *s;

	if (!t->nrows || col >= t->ncols)
		return t->error = -EINVAL;
	s = clean_copy(text ? text : "");
	if (!s)
		return t->error = -ENOMEM;
	free(t->rows[t->nrows - 1][col]);
	t->rows[t->nrows - 1][col] = s;
	return 0;
}

int ctl_table_setf(struct ctl_table *t, unsigned col, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return ctl_table_set(t, col, buf);
}

unsigned ctl_table_rows(const struct ctl_table *t)
{
	return t->nrows;
}

/* The text of a cell, "" when unset. */
static const char *cell(const struct ctl_table *t, unsigned row, unsigned col)
{
	if (row >= t->nrows || col >= t->ncols || !t->rows[row][col])
		return "";
	return t->rows[row][col];
}

/* ---- live ------------------------------------------------------------ */

static bool is_break_char(char c)
{
	/* spaces are handled apart: the break consumes them */
	return c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == '>' || c == ',';
}

/*
 * The next line of `s` wrapped at `w` columns: its length in bytes, and in
 * *skip the bytes to skip after it (a space the break consumed).
 */
static size_t wrap_piece(const char *s, unsigned w, size_t *skip)
{
	size_t fit = ctl_text_fit(s, w, NULL), i;

	*skip = 0;
	if (s[fit] == '\0')
		return fit;
	if (fit == 0) {         /* a wide character in a 1-column cell */
		fit = 1;
		while ((s[fit] & 0xC0) == 0x80)
			fit++;
		return fit;
	}
	for (i = fit; i > fit / 3; i--) {
		if (s[i] == ' ') {
			*skip = 1;
			return i;
		}
		if (is_break_char(s[i - 1]))
			return i;
	}
	return fit;
}

/* Lines a cell takes at width w. */
static unsigned wrap_lines(const char *s, unsigned w)
{
	unsigned n = 0;
	size_t skip;

	if (!*s)
		return 1;
	while (*s) {
		s += wrap_piece(s, w, &skip);
		s += skip;
		n++;
	}
	return n;
}

/* Line `k` of cell `s` wrapped at w: pointer and length (0 past the end). */
static const char *wrap_line(const char *s, unsigned w, unsigned k, size_t *len)
{
	size_t skip, l = 0;

	for (;;) {
		l = *s ? wrap_piece(s, w, &skip) : 0;
		if (k == 0 || !*s)
			break;
		s += l + skip;
		k--;
	}
	*len = k == 0 ? l : 0;
	return s;
}

static void spaces(FILE *f, unsigned n)
{
	while (n--)
		fputc(' ', f);
}

/* Print cells `cells[c]` for columns first..last-1 of a layout. */
static void print_group(FILE *f, const struct ctl_table *t, const char *const *cells,
			const unsigned *w, unsigned first, unsigned last, unsigned indent)
{
	unsigned height = 1, k, c;

	for (c = first; c < last; c++) {
		unsigned h = wrap_lines(cells[c], w[c]);
		if (h > height)
			height = h;
	}
	for (k = 0; k < height; k++) {
		unsigned pending = indent;   /* spaces owed before the next text */
		for (c = first; c < last; c++) {
			size_t len;
			const char *p = wrap_line(cells[c], w[c], k, &len);
			char piece[1024];
			unsigned pw;

			if (len >= sizeof(piece))
				len = sizeof(piece) - 1;
			memcpy(piece, p, len);
			piece[len] = '\0';
			pw = ctl_text_width(piece);
			if (c > first)
				pending += CTL_TABLE_GAP;
			if (len == 0) {
				pending += w[c];
				continue;
			}
			if (t->cols[c].align == CTL_ALIGN_RIGHT)
				pending += w[c] > pw ? w[c] - pw : 0;
			spaces(f, pending);
			fputs(piece, f);
			pending = t->cols[c].align == CTL_ALIGN_RIGHT || w[c] < pw ? 0 : w[c] - pw;
		}
		fputc('\n', f);   /* trailing padding is never printed */
	}
}

static unsigned line_width(const unsigned *w, unsigned first, unsigned last)
{
	unsigned s = 0, c;

	for (c = first; c < last; c++)
		s += w[c] + (c > first ? CTL_TABLE_GAP : 0);
	return s;
}

static void print_live(const struct ctl_table *t, FILE *f, unsigned width)
{
	unsigned nat[MAX_COLUMNS], w[MAX_COLUMNS], starts[MAX_COLUMNS + 1];
	const char *hdr[MAX_COLUMNS];
	unsigned n = t->ncols, c, r, ngroups = 0;

	for (c = 0; c < n; c++) {
		hdr[c] = t->cols[c].header;
		nat[c] = ctl_text_width(hdr[c]);
		for (r = 0; r < t->nrows; r++) {
			unsigned cw = ctl_text_width(cell(t, r, c));
			if (cw > nat[c])
				nat[c] = cw;
		}
		if (nat[c] == 0)
			nat[c] = 1;
		w[c] = nat[c];
	}

	/* Step 1: wrap text columns, taking width from the widest first. */
	while (width && line_width(w, 0, n) > width) {
		unsigned best = n;
		for (c = 0; c < n; c++) {
			unsigned floor = nat[c] < WRAP_FLOOR ? nat[c] : WRAP_FLOOR;
			if (t->cols[c].wrap && w[c] > floor && (best == n || w[c] > w[best]))
				best = c;
		}
		if (best == n)
			break;
		w[best]--;
	}

	starts[0] = 0;
	if (!width || line_width(w, 0, n) <= width) {
		starts[1] = n;
		ngroups = 1;
	} else {
		/* Step 2: wrap rows.  Columns get back their natural width (as
		 * much as a line allows) and are packed into lines. */
		unsigned avail = width > CTL_TABLE_INDENT + 1 ? width - CTL_TABLE_INDENT : 1;
		for (c = 0; c < n; c++)
			w[c] = nat[c] < avail ? nat[c] : avail;
		c = 0;
		while (c < n) {
			unsigned room = ngroups == 0 ? width : avail, end = c + 1;
			while (end < n && line_width(w, c, end + 1) <= room)
				end++;
			starts[++ngroups] = end;
			c = end;
		}
	}

	for (unsigned g = 0; g < ngroups; g++)
		print_group(f, t, hdr, w, starts[g], starts[g + 1], g ? CTL_TABLE_INDENT : 0);
	for (r = 0; r < t->nrows; r++) {
		const char *cells[MAX_COLUMNS];
		for (c = 0; c < n; c++)
			cells[c] = cell(t, r, c);
		if (ngroups > 1)
			fputc('\n', f);   /* wrapped rows need a visible boundary */
		for (unsigned g = 0; g < ngroups; g++)
			print_group(f, t, cells, w, starts[g], starts[g + 1],
				    g ? CTL_TABLE_INDENT : 0);
	}
}

/* ---- Markdown -------------------------------------------------------- */

/* Width of s with every '|' escaped. */
static unsigned md_width(const char *s)
{
	unsigned w = ctl_text_width(s);
	for (; *s; s++)
		w += *s == '|';
	return w;
}

static void md_cell(FILE *f, const char *s, unsigned w, enum ctl_align a)
{
	unsigned cw = md_width(s);

	fputc(' ', f);
	if (a == CTL_ALIGN_RIGHT)
		spaces(f, w - cw);
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
	if (a == CTL_ALIGN_LEFT)
		spaces(f, w - cw);
	fputs(" |", f);
}

static void print_md(const struct ctl_table *t, FILE *f)
{
	unsigned w[MAX_COLUMNS], c, r;

	for (c = 0; c < t->ncols; c++) {
		w[c] = md_width(t->cols[c].header);
		if (w[c] < 3)
			w[c] = 3;
		for (r = 0; r < t->nrows; r++) {
			unsigned cw = md_width(cell(t, r, c));
			if (cw > w[c])
				w[c] = cw;
		}
	}
	fputc('|', f);
	for (c = 0; c < t->ncols; c++)
		md_cell(f, t->cols[c].header, w[c], t->cols[c].align);
	fputs("\n|", f);
	for (c = 0; c < t->ncols; c++) {
		fputc(' ', f);
		for (unsigned i = 0; i + 1 < w[c]; i++)
			fputc('-', f);
		fputs(t->cols[c].align == CTL_ALIGN_RIGHT ? ":" : "-", f);
		fputs(" |", f);
	}
	fputc('\n', f);
	for (r = 0; r < t->nrows; r++) {
		fputc('|', f);
		for (c = 0; c < t->ncols; c++)
			md_cell(f, cell(t, r, c), w[c], t->cols[c].align);
		fputc('\n', f);
	}
}

/* ---- CSV ------------------------------------------------------------- */

static void csv_field(FILE *f, const char *s)
{
	size_t len = strlen(s);

	if (strpbrk(s, ",\"\r\n") || (len && (s[0] == ' ' || s[len - 1] == ' ')))
		csv_fwrite(f, s, len);
	else
		fputs(s, f);
}

static void print_csv(const struct ctl_table *t, FILE *f)
{
	unsigned c, r;

	for (c = 0; c < t->ncols; c++) {
		if (c)
			fputc(',', f);
		csv_field(f, t->cols[c].header);
	}
	fputc('\n', f);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			if (c)
				fputc(',', f);
			csv_field(f, cell(t, r, c));
		}
		fputc('\n', f);
	}
}

int ctl_table_print(const struct ctl_table *t, FILE *f, enum ctl_format fmt, unsigned width)
{
	if (t->error)
		return t->error;
	if (!t->ncols)
		return 0;
	switch (fmt) {
	case CTL_FORMAT_LIVE:
		print_live(t, f, width);
		break;
	case CTL_FORMAT_MD:
		print_md(t, f);
		break;
	case CTL_FORMAT_CSV:
		print_csv(t, f);
		break;
	case CTL_FORMAT_JSON:
		/* Commands with JSON output write a document (ctl_json.h). */
		return -ENOTSUP;
	}
	return ferror(f) ? -EIO : 0;
}
