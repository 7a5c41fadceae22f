/*
 * ctl_csv.c - strict reader for perfmond's CSV files.
 *
 * libcsv does the RFC 4180 tokenising in strict mode (a stray quote is an
 * error, not data) with space trimming turned off, so a label is exactly
 * what was written.  This file checks the header against the columns of
 * csv_schema.h (docs/csv.md), converts every field of a row with
 * full-field validation (no sign on a counter, no trailing junk, finite
 * figures) and cleans the labels.  A malformed file is reported with its
 * name and record number; nothing is guessed.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csv.h>

#include "csv_schema.h"
#include "ctl_csv.h"
#include "ctl_text.h"

#define FIXED_COLS CSV_FIXED_COLS
#define MAX_FIELDS 64
/* No field of a perfmond CSV comes near this (labels are at most 63
 * bytes): a longer one is not our file, and is refused before it is
 * buffered whole -- a 200 MB line must not cost 200 MB. */
#define FIELD_MAX CTL_CSV_FIELD_MAX
#define LABEL_MAX 256        /* cleaned label bytes kept */
#define QUOTE_COLS 40        /* terminal columns of the file quoted in a message */
#define QUOTE_MAX (4 * QUOTE_COLS + 8)


struct ctl_csv_reader {
	struct csv_parser p;
	char *name;
	ctl_csv_row_fn fn;
	void *ctx;

	/* the record being assembled: fields back to back, NUL-terminated */
	char *buf;
	size_t used, cap;
	size_t off[MAX_FIELDS];
	unsigned nfields;
	bool too_many;

	bool have_header;
	struct ctl_csv_header h;
	char *header_line;      /* fields joined by ',' to spot a repeated header */
	unsigned long records;
	unsigned long rows;
	bool started;           /* past the place a byte-order mark can be */
	unsigned char lead[3];  /* first bytes held back until the BOM is decided */
	unsigned nlead;
	int error;
	char errmsg[512];
};

static int set_error(struct ctl_csv_reader *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A piece of the file to quote in a message: cleaned like a label (no
 * escape, line break or bidi control can reach the operator's terminal)
 * and cut to QUOTE_COLS columns between two characters, "..." marking the
 * cut.  `buf` holds QUOTE_MAX bytes.
 */
static const char *quote(char *buf, const char *src)
{
	char tmp[QUOTE_MAX - 3];      /* room left for "..." */
	size_t len, cut;

	len = ctl_text_clean(tmp, src, sizeof(tmp));
	cut = ctl_text_fit(tmp, QUOTE_COLS, NULL);
	memcpy(buf, tmp, cut);
	if (cut < len || strlen(src) > sizeof(tmp) - 1) {
		memcpy(buf + cut, "...", 3);
		cut += 3;
	}
	buf[cut] = '\0';
	return buf;
}

static int set_error(struct ctl_csv_reader *r, int code, const char *fmt, ...)
{
	char msg[400], raw[sizeof(r->errmsg)];
	va_list ap;

	if (r->error)
		return r->error;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Every quoted fragment was cleaned already; cleaning the whole
	 * message as well covers the stream's name and any later message. */
	snprintf(raw, sizeof(raw), "%s:%lu: %s", r->name, r->records, msg);
	ctl_text_clean(r->errmsg, raw, sizeof(r->errmsg));
	r->error = code;
	return code;
}

/* libcsv's field callback: append the field to the record. */
/* libcsv grows its field buffer through this: refused past FIELD_MAX. */
static void *capped_realloc(void *p, size_t n)
{
	if (n > FIELD_MAX + 1024)
		return NULL;
	return realloc(p, n);
}

static void on_field(void *s, size_t len, void *data)
{
	struct ctl_csv_reader *r = data;
	size_t i;

	if (r->error)
		return;
	if (r->nfields == MAX_FIELDS) {
		r->too_many = true;
		return;
	}
	if (r->used + len + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 512;
		char *b;
		while (cap < r->used + len + 1)
			cap *= 2;
		b = realloc(r->buf, cap);
		if (!b) {
			set_error(r, -ENOMEM, "out of memory");
			return;
		}
		r->buf = b;
		r->cap = cap;
	}
	r->off[r->nfields++] = r->used;
	for (i = 0; i < len; i++) {
		char c = ((char *)s)[i];
		r->buf[r->used++] = c ? c : '\x01';   /* an embedded NUL is a control char */
	}
	r->buf[r->used++] = '\0';
}

static bool parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static bool parse_double(const char *s, double *ret)
{
	char *end;
	if (!*s || *s == ' ')
		return false;
	errno = 0;
	*ret = strtod(s, &end);
	return *end == '\0' && isfinite(*ret) && errno != ERANGE;
}

/* Column `c` of `f` against the name the schema gives it for `shape`; 0,
 * or -EBADMSG with the message in `err` (`what` before it, or nothing). */
static int expect_column(char *const *f, unsigned n, unsigned c,
			 const struct csv_series_shape *shape, const char *what,
			 char *err, size_t errlen)
{
	char want[64], q[QUOTE_MAX];

	if (csv_series_column(shape, c, want, sizeof(want)) < 0 || (c < n && !strcmp(f[c], want)))
		return 0;
	snprintf(err, errlen, "%scolumn %u is '%s', expected '%s'", what, c + 1,
		 quote(q, c < n ? f[c] : ""), want);
	return -EBADMSG;
}

/*
 * A header line's fields against the series schema (csv_schema.h): the
 * fixed columns, the unit from min_U, the percentile columns up to max_U,
 * then every column compared with the name the schema gives it for what
 * was found.  0 or -EBADMSG.
 */
static int parse_header(char *const *f, unsigned n, struct ctl_csv_header *ret,
			char *err, size_t errlen)
{
	struct ctl_csv_header h;
	struct csv_series_shape shape = { REPORT_UNIT_NS, 0, h.pct_label, false };
	unsigned i, c;
	size_t label_len;
	char want[64], q[QUOTE_MAX];
	double p;

	memset(&h, 0, sizeof(h));
	for (c = 0; c < FIXED_COLS; c++)
		if (expect_column(f, n, c, &shape, "not a perfmond CSV header: ", err, errlen))
			return -EBADMSG;
	if (n <= FIXED_COLS || strncmp(f[FIXED_COLS], "min_", 4) ||
	    !csv_unit_parse(f[FIXED_COLS] + 4, &shape.unit)) {
		snprintf(err, errlen, "not a perfmond CSV header: column %u is '%s', "
			 "expected min_ns, min_us or min_cycles", FIXED_COLS + 1,
			 quote(q, n > FIXED_COLS ? f[FIXED_COLS] : ""));
		return -EBADMSG;
	}
	snprintf(h.unit, sizeof(h.unit), "%s", report_unit_name(shape.unit));
	for (c = FIXED_COLS + 1; c < CSV_COL_PCT; c++)
		if (expect_column(f, n, c, &shape, "", err, errlen))
			return -EBADMSG;
	/* Percentile columns until the one the schema puts after them. */
	for (; c < n; c++) {
		shape.npct = h.npct;
		csv_series_column(&shape, c, want, sizeof(want));
		if (!strcmp(f[c], want))
			break;
		if (!csv_pct_column(f[c], shape.unit, &p, &label_len)) {
			snprintf(err, errlen, "column %u is '%s', expected a percentile "
				 "column such as p99_%s or '%s'", c + 1, quote(q, f[c]), h.unit, want);
			return -EBADMSG;
		}
		for (i = 0; i < h.npct; i++) {
			if (h.pct[i] == p) {
				/* Two columns for one figure: which one is meant? */
				snprintf(err, errlen, "column %u '%s' repeats percentile column "
					 "'%s_%s'", c + 1, quote(q, f[c]), h.pct_label[i], h.unit);
				return -EBADMSG;
			}
		}
		if (h.npct == CTL_CSV_MAX_PCT) {
			snprintf(err, errlen, "more than %d percentile columns", CTL_CSV_MAX_PCT);
			return -EBADMSG;
		}
		snprintf(h.pct_label[h.npct], sizeof(h.pct_label[0]), "%.*s", (int)label_len, f[c]);
		h.pct[h.npct++] = p;
	}
	shape.npct = h.npct;
	if (c >= n) {
		csv_series_column(&shape, c, want, sizeof(want));
		snprintf(err, errlen, "no '%s' column", want);
		return -EBADMSG;
	}
	/* Then what the schema puts after them, and the overhead column if it
	 * is there. */
	for (c++; c < csv_series_ncols(&shape); c++)
		if (expect_column(f, n, c, &shape, "", err, errlen))
			return -EBADMSG;
	shape.overhead = true;
	if (c < n && csv_series_column(&shape, c, want, sizeof(want)) >= 0 && !strcmp(f[c], want))
		c++;
	else
		shape.overhead = false;
	if (c != n) {
		snprintf(err, errlen, "unexpected column %u '%s' after '%s'", c + 1,
			 quote(q, f[c]), f[c - 1]);
		return -EBADMSG;
	}
	h.has_overhead = shape.overhead;
	h.ncols = n;
	*ret = h;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

int ctl_csv_parse_time(const char *s, int64_t *ret_ms)
{
	static const char pattern[] = "dddd-dd-dd dd:dd:dd.ddd";
	int v[23];
	unsigned i, mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec, ms;

	for (i = 0; i < sizeof(pattern) - 1; i++) {
		if (pattern[i] == 'd') {
			if (s[i] < '0' || s[i] > '9')
				return -EINVAL;
			v[i] = s[i] - '0';
		} else if (s[i] != pattern[i]) {
			return -EINVAL;
		}
	}
	if (s[i] != '\0')
		return -EINVAL;
	y = v[0] * 1000 + v[1] * 100 + v[2] * 10 + v[3];
	mo = v[5] * 10 + v[6];
	d = v[8] * 10 + v[9];
	h = v[11] * 10 + v[12];
	mi = v[14] * 10 + v[15];
	sec = v[17] * 10 + v[18];
	ms = v[20] * 100 + v[21] * 10 + v[22];
	if (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		mdays[1] = 29;
	if (mo < 1 || mo > 12 || d < 1 || d > (int)mdays[mo - 1] || h > 23 || mi > 59 ||
	    sec > 60)
		return -EINVAL;
	*ret_ms = ((days_from_civil(y, (unsigned)mo, (unsigned)d) * 24 + h) * 60 + mi) * 60000 +
		  (int64_t)sec * 1000 + ms;
	return 0;
}

static const char *field(const struct ctl_csv_reader *r, unsigned i)
{
	return r->buf + r->off[i];
}

static char *join_fields(const struct ctl_csv_reader *r)
{
	size_t len = r->used;
	char *s = malloc(len + 1);
	if (!s)
		return NULL;
	memcpy(s, r->buf, len);
	for (size_t i = 0; i + 1 < len; i++)
		if (s[i] == '\0')
			s[i] = ',';
	s[len ? len - 1 : 0] = '\0';
	return s;
}

static bool same_as_header(const struct ctl_csv_reader *r)
{
	size_t hl = strlen(r->header_line);
	const char *h = r->header_line;

	if (r->used != hl + 1)
		return false;
	for (size_t i = 0; i < hl; i++)
		if (r->buf[i] != h[i] && !(r->buf[i] == '\0' && h[i] == ','))
			return false;
	return true;
}

static int take_header(struct ctl_csv_reader *r)
{
	char *f[MAX_FIELDS], msg[300];
	unsigned i;

	for (i = 0; i < r->nfields; i++)
		f[i] = r->buf + r->off[i];
	if (parse_header(f, r->nfields, &r->h, msg, sizeof(msg)) < 0)
		return set_error(r, -EBADMSG, "%s", msg);
	r->header_line = join_fields(r);
	if (!r->header_line)
		return set_error(r, -ENOMEM, "out of memory");
	r->have_header = true;
	return 0;
}

static int take_row(struct ctl_csv_reader *r)
{
	const struct ctl_csv_header *h = &r->h;
	struct ctl_csv_row row;
	char point[LABEL_MAX], stage[LABEL_MAX];
	uint64_t *counters[] = { &row.count, &row.dropped, &row.invalid, &row.stalled,
				 &row.abandoned, &row.orphan, &row.out_of_range };
	double *figs[3] = { &row.min, &row.mean, &row.stddev };
	unsigned i, c;
	const char *kind;
	char q[QUOTE_MAX];

	if (!strcmp(field(r, 0), "timestamp")) {
		if (same_as_header(r))
			return 0;   /* files appended one after another */
		return set_error(r, -EBADMSG, "a different header in the middle of the file "
				 "(files with different columns were joined)");
	}
	if (r->nfields != h->ncols)
		return set_error(r, -EBADMSG, "%u fields, the header has %u", r->nfields,
				 h->ncols);
	memset(&row, 0, sizeof(row));
	row.record = r->records;
	row.timestamp = field(r, 0);
	if (ctl_csv_parse_time(row.timestamp, &row.time_ms) < 0)
		return set_error(r, -EBADMSG, "timestamp '%s' is not YYYY-MM-DD HH:MM:SS.mmm",
				 quote(q, row.timestamp));
	ctl_text_clean(point, field(r, 1), sizeof(point));
	ctl_text_clean(stage, field(r, 2), sizeof(stage));
	row.point = point;
	row.stage = stage;
	kind = field(r, 3);
	if (!strcmp(kind, "value"))
		row.value = true;
	else if (strcmp(kind, "latency"))
		return set_error(r, -EBADMSG, "kind '%s' is neither latency nor value",
				 quote(q, kind));
	for (i = 0; i < 7; i++)
		if (!parse_u64(field(r, 4 + i), counters[i]))
			return set_error(r, -EBADMSG, "%s '%s' is not a count", csv_fixed_columns[CSV_COL_COUNT + i],
					 quote(q, field(r, 4 + i)));
	c = FIXED_COLS;
	for (i = 0; i < 3; i++, c++)
		if (!parse_double(field(r, c), figs[i]))
			goto bad_number;
	row.mean_text = field(r, FIXED_COLS + 1);
	for (i = 0; i < h->npct; i++, c++) {
		if (!parse_double(field(r, c), &row.pct[i]))
			goto bad_number;
		row.pct_is_int[i] = parse_u64(field(r, c), &row.pct_exact[i]);
	}
	if (!parse_double(field(r, c), &row.max))
		goto bad_number;
	row.min_max_exact = parse_u64(field(r, FIXED_COLS), &row.min_exact) &&
			    parse_u64(field(r, c), &row.max_exact);
	c++;
	if (!parse_double(field(r, c), &row.tsc_hz))
		goto bad_number;
	c++;
	if (h->has_overhead && !parse_double(field(r, c), &row.overhead))
		goto bad_number;
	r->rows++;
	if (r->fn) {
		int e = r->fn(r->ctx, h, &row);
		if (e < 0)
			return set_error(r, e, "%s", strerror(-e));
	}
	return 0;

bad_number:
	return set_error(r, -EBADMSG, "column %u '%s' is not a number", c + 1,
			 quote(q, field(r, c)));
}

/* libcsv's record callback. */
static void on_record(int term, void *data)
{
	struct ctl_csv_reader *r = data;

	(void)term;
	if (r->error)
		return;
	r->records++;
	if (r->too_many)
		set_error(r, -EBADMSG, "more than %d fields", MAX_FIELDS);
	else if (!r->have_header)
		take_header(r);
	else
		take_row(r);
	r->nfields = 0;
	r->used = 0;
	r->too_many = false;
}

/* Keep spaces: a label " a" is not "a". */
static int no_space(unsigned char c)
{
	(void)c;
	return 0;
}

void ctl_csv_parser_limits(struct csv_parser *p)
{
	csv_set_space_func(p, no_space);
	csv_set_realloc_func(p, capped_realloc);
}

int ctl_csv_reader_new(struct ctl_csv_reader **ret, const char *name, ctl_csv_row_fn fn,
		       void *ctx)
{
	struct ctl_csv_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->name = strdup(name);
	if (!r->name || csv_init(&r->p, CSV_STRICT | CSV_STRICT_FINI) != 0) {
		free(r->name);
		free(r);
		return -ENOMEM;
	}
	ctl_csv_parser_limits(&r->p);
	r->fn = fn;
	r->ctx = ctx;
	*ret = r;
	return 0;
}

/* Hand bytes to libcsv; a tokenising error becomes the reader's error. */
static int parse_bytes(struct ctl_csv_reader *r, const unsigned char *b, size_t len)
{
	if (len && csv_parse(&r->p, b, len, on_field, on_record, r) != len && !r->error) {
		r->records++;
		if (csv_error(&r->p) == CSV_ENOMEM)
			set_error(r, -EFBIG, "a field longer than %d bytes: not a perfmond CSV",
				  FIELD_MAX);
		else
			set_error(r, -EBADMSG, "malformed CSV: %s", csv_strerror(csv_error(&r->p)));
	}
	return r->error;
}

/* The UTF-8 byte-order mark a spreadsheet export puts first. */
static const unsigned char bom[3] = { 0xEF, 0xBB, 0xBF };

/* Give the bytes held back at the start to libcsv, less a complete mark. */
static int release_lead(struct ctl_csv_reader *r)
{
	r->started = true;
	if (r->nlead == sizeof(bom) && !memcmp(r->lead, bom, sizeof(bom)))
		return 0;
	return parse_bytes(r, r->lead, r->nlead);
}

int ctl_csv_reader_feed(struct ctl_csv_reader *r, const void *buf, size_t len)
{
	const unsigned char *b = buf;

	if (r->error)
		return r->error;
	/* The mark is recognised however the first bytes are split between
	 * calls (top feeds a growing file): hold them back until three are
	 * here or one of them is not the mark's. */
	while (!r->started && len) {
		unsigned char c = *b++;

		len--;
		r->lead[r->nlead++] = c;
		if ((c != bom[r->nlead - 1] || r->nlead == sizeof(bom)) && release_lead(r) < 0)
			return r->error;
	}
	return parse_bytes(r, b, len);
}

int ctl_csv_reader_finish(struct ctl_csv_reader *r)
{
	if (r->error)
		return r->error;
	if (!r->started && release_lead(r) < 0)    /* a file shorter than a mark */
		return r->error;
	if (csv_fini(&r->p, on_field, on_record, r) != 0 && !r->error) {
		r->records++;
		set_error(r, -EBADMSG, "malformed CSV at the end: %s",
			  csv_strerror(csv_error(&r->p)));
	}
	if (!r->error && !r->have_header)
		set_error(r, -ENODATA, "empty file: no CSV header");
	return r->error;
}

unsigned long ctl_csv_reader_rows(const struct ctl_csv_reader *r)
{
	return r->rows;
}

const char *ctl_csv_reader_error(const struct ctl_csv_reader *r)
{
	return r->errmsg;
}

void ctl_csv_reader_free(struct ctl_csv_reader *r)
{
	if (!r)
		return;
	csv_free(&r->p);
	free(r->buf);
	free(r->header_line);
	free(r->name);
	free(r);
}

/* A message about the file itself, cleaned: a path can hold any byte. */
static void file_error(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void file_error(char *err, size_t errlen, const char *fmt, ...)
{
	char raw[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	ctl_text_clean(err, raw, errlen);
}

int ctl_csv_open_regular(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd, e;

	/* Non-blocking, so a FIFO cannot hold us in open(). */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		file_error(err, errlen, "cannot open %s: %s", path, strerror(-e));
		return e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		file_error(err, errlen, "%s is not a regular file (a FIFO, device or directory "
			   "cannot be a CSV file)", path);
		return -EINVAL;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int ctl_csv_read_file(const char *path, ctl_csv_row_fn fn, void *ctx,
		      struct ctl_csv_header *ret_header, char *err, size_t errlen)
{
	struct ctl_csv_reader *r;
	char buf[65536];
	size_t n;
	FILE *f;
	int e;

	if ((e = ctl_csv_open_regular(path, err, errlen)) < 0)
		return e;
	f = fdopen(e, "r");
	if (!f) {
		e = -errno;
		file_error(err, errlen, "cannot open %s: %s", path, strerror(-e));
		return e;
	}
	if ((e = ctl_csv_reader_new(&r, path, fn, ctx)) < 0) {
		fclose(f);
		file_error(err, errlen, "%s: out of memory", path);
		return e;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if ((e = ctl_csv_reader_feed(r, buf, n)) < 0)
			break;
	if (e == 0 && ferror(f)) {
		e = -EIO;
		file_error(err, errlen, "cannot read %s: %s", path, strerror(errno));
	} else if (e == 0) {
		e = ctl_csv_reader_finish(r);
	}
	if (e < 0 && r->errmsg[0])
		snprintf(err, errlen, "%s", r->errmsg);
	if (e == 0 && ret_header)
		*ret_header = r->h;
	ctl_csv_reader_free(r);
	fclose(f);
	return e;
}

int ctl_csv_metric_lookup(const struct ctl_csv_header *h, const char *name)
{
	char norm[24];
	size_t i;

	if (!strcmp(name, "min"))
		return CTL_METRIC_MIN;
	if (!strcmp(name, "mean"))
		return CTL_METRIC_MEAN;
	if (!strcmp(name, "stddev"))
		return CTL_METRIC_STDDEV;
	if (!strcmp(name, "max"))
		return CTL_METRIC_MAX;
	if (!strcmp(name, "median"))
		name = "p50";
	for (i = 0; name[i] && i + 1 < sizeof(norm); i++)
		norm[i] = name[i] == '.' ? '_' : name[i];
	norm[i] = '\0';
	for (i = 0; i < h->npct; i++)
		if (!strcmp(h->pct_label[i], norm))
			return CTL_METRIC_PCT + (int)i;
	return -ENOENT;
}

const char *ctl_csv_metric_name(const struct ctl_csv_header *h, int id)
{
	static const char *const fixed[] = { "min", "mean", "stddev", "max" };

	if (id >= 0 && id < CTL_METRIC_PCT)
		return fixed[id];
	if (id >= CTL_METRIC_PCT && (unsigned)(id - CTL_METRIC_PCT) < h->npct)
		return h->pct_label[id - CTL_METRIC_PCT];
	return "?";
}

double ctl_csv_metric(const struct ctl_csv_row *row, int id)
{
	switch (id) {
	case CTL_METRIC_MIN:
		return row->min;
	case CTL_METRIC_MEAN:
		return row->mean;
	case CTL_METRIC_STDDEV:
		return row->stddev;
	case CTL_METRIC_MAX:
		return row->max;
	default:
		return row->pct[id - CTL_METRIC_PCT];
	}
}

bool ctl_csv_metric_exact(const struct ctl_csv_row *row, int id, uint64_t *ret)
{
	switch (id) {
	case CTL_METRIC_MIN:
		*ret = row->min_exact;
		return row->min_max_exact;
	case CTL_METRIC_MAX:
		*ret = row->max_exact;
		return row->min_max_exact;
	case CTL_METRIC_MEAN:
	case CTL_METRIC_STDDEV:
		return false;
	default:
		*ret = row->pct_exact[id - CTL_METRIC_PCT];
		return row->pct_is_int[id - CTL_METRIC_PCT];
	}
}

/* ---- stage index ---------------------------------------------------- */

static uint64_t stage_hash(const char *point, const char *stage, bool value)
{
	uint64_t h = UINT64_C(1469598103934665603);
	const char *parts[2] = { point, stage };

	for (int i = 0; i < 2; i++) {
		for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
			h = (h ^ *p) * UINT64_C(1099511628211);
		h = (h ^ 0xFF) * UINT64_C(1099511628211);
	}
	return h ^ value;
}

void ctl_stages_init(struct ctl_stages *s)
{
	memset(s, 0, sizeof(*s));
}

void ctl_stages_free(struct ctl_stages *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		free(s->items[i].point);
		free(s->items[i].stage);
	}
	free(s->items);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

static bool stage_equal(const struct ctl_stage *it, const char *point, const char *stage,
			bool value)
{
	return it->value == value && !strcmp(it->point, point) && !strcmp(it->stage, stage);
}

int ctl_stages_find(const struct ctl_stages *s, const char *point, const char *stage,
		    bool value)
{
	unsigned i;

	if (!s->slots)
		return -ENOENT;
	for (i = (unsigned)stage_hash(point, stage, value) & s->mask; s->slots[i];
	     i = (i + 1) & s->mask)
		if (stage_equal(&s->items[s->slots[i] - 1], point, stage, value))
			return (int)s->slots[i] - 1;
	return -ENOENT;
}

static int rehash(struct ctl_stages *s, unsigned nslots)
{
	unsigned *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	free(s->slots);
	s->slots = slots;
	s->mask = nslots - 1;
	for (unsigned id = 0; id < s->n; id++) {
		const struct ctl_stage *it = &s->items[id];
		unsigned i = (unsigned)stage_hash(it->point, it->stage, it->value) & s->mask;
		while (slots[i])
			i = (i + 1) & s->mask;
		slots[i] = id + 1;
	}
	return 0;
}

int ctl_stages_id(struct ctl_stages *s, const char *point, const char *stage, bool value)
{
	int id = ctl_stages_find(s, point, stage, value);
	struct ctl_stage it;

	if (id >= 0)
		return id;
	if (s->n == s->cap) {
		unsigned cap = s->cap ? s->cap * 2 : 16;
		struct ctl_stage *items = realloc(s->items, cap * sizeof(*items));
		if (!items)
			return -ENOMEM;
		s->items = items;
		s->cap = cap;
	}
	it.point = strdup(point);
	it.stage = strdup(stage);
	it.value = value;
	if (!it.point || !it.stage) {
		free(it.point);
		free(it.stage);
		return -ENOMEM;
	}
	s->items[s->n++] = it;
	if (!s->slots || s->n * 2 > s->mask + 1) {
		if (rehash(s, s->slots ? (s->mask + 1) * 2 : 64) < 0) {
			s->n--;
			free(it.point);
			free(it.stage);
			return -ENOMEM;
		}
	} else {
		unsigned i = (unsigned)stage_hash(point, stage, value) & s->mask;
		while (s->slots[i])
			i = (i + 1) & s->mask;
		s->slots[i] = s->n;
	}
	return (int)s->n - 1;
}
