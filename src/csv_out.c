/*
 * csv_out.c - the CSV time series writer (docs/csv.md).
 *
 * Flow: drain -> pairing -> report (one interval's rows, reporter thread)
 * -> [csv_out] -> the CSV file, and its rotated siblings.
 *
 * Rows are formatted into a private buffer and pushed with write(2).  The
 * buffer is the backlog as well: when the file system refuses a write
 * (ENOSPC, EDQUOT, EFBIG, EIO) the unwritten bytes stay, in order, and go
 * out on a later call, so a full disk costs no row and duplicates none.
 * The buffer always starts at a row boundary; `off` counts the bytes of
 * its first row that already reached the file when a short write cut that
 * row.  When the daemon switches files with such a cut row pending, the
 * written prefix is truncated away from the old file and the whole row
 * goes to the new one, so both stay parseable.
 *
 * Files are opened O_APPEND and O_NOFOLLOW, only if regular; an existing
 * file must start with exactly this session's header.  Rotated names are
 * taken with RENAME_NOREPLACE, so nothing the daemon did not create is
 * ever overwritten, and pruning only touches regular files of the exact
 * rotated pattern owned by the daemon's user, never a symlink.  Numbers
 * are formatted in the C locale through uselocale(), whatever the process
 * locale says.
 */
#include "build-config.h"

#include <csv.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "csv_out.h"
#include "csv_schema.h"

/* Rows are pushed at the latest when this much is buffered. */
#define CSV_PUSH_AT (64u * 1024)
/* What is kept while writes fail; rows beyond it are counted as lost. */
#define CSV_BACKLOG_MAX (4u * 1024 * 1024)
#define CSV_HEADER_MAX 1024
/* One formatted row: two quoted labels and about 30 numbers. */
#define CSV_LINE_MAX 16384
/* How much of an existing file's first line is read and compared. */
#define CSV_FIRST_LINE_MAX 4096
#define CSV_FILE_MODE 0640

struct csv_out {
	char *path;               /* as configured */
	char *prefix;             /* path up to and including the last '/' */
	char *stem;               /* basename without ".csv" */
	int fd;
	uint64_t size;            /* bytes in the current file */
	uint64_t lost;
	int failing;              /* last push error, 0 when writes succeed */
	locale_t c_locale;
	struct report_settings s;
	char header[CSV_HEADER_MAX];
	size_t header_len;
	char *buf;
	size_t len, cap;
	size_t off;               /* bytes of buf's first row already in the file */
	char notice[1024];        /* what open/reopen repaired, for the log */
	bool outliers;            /* the slowest-spans file, not the series */
	bool created;             /* csv_out_open made the file */
	struct outlier *sorted;   /* outliers: one row's set, slowest first */
	char last_ts[17];         /* timestamp of the last rotated name taken */
	unsigned long last_seq;   /* and its suffix: never reused in that second */
	char line[CSV_LINE_MAX];
};

/* printf into a caller's message buffer, which may be NULL. */
__attribute__((format(printf, 3, 4)))
static void msg(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !n)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

void csv_format_timestamp(uint64_t realtime_ns, char *buf, size_t n)
{
	time_t sec = (time_t)(realtime_ns / 1000000000u);
	unsigned ms = (unsigned)(realtime_ns / 1000000u % 1000u);
	struct tm tm;

	if (!gmtime_r(&sec, &tm))
		memset(&tm, 0, sizeof(tm));
	snprintf(buf, n, "%04d-%02d-%02d %02d:%02d:%02d.%03u", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

int csv_out_companion_path(const char *csv_path, const char *suffix, char *buf, size_t n)
{
	size_t l = strlen(csv_path);
	int k;

	if (l > 4 && !strcmp(csv_path + l - 4, ".csv"))
		l -= 4;
	k = snprintf(buf, n, "%.*s%s", (int)l, csv_path, suffix);
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

int csv_out_outliers_path(const char *csv_path, char *buf, size_t n)
{
	return csv_out_companion_path(csv_path, CSV_OUTLIERS_SUFFIX, buf, n);
}

static int build_header(struct csv_out *c)
{
	struct csv_series_shape shape = { c->s.unit, c->s.npct, c->s.pct_label,
					  c->s.subtract_overhead };
	int k = c->outliers ? csv_outliers_header(c->header, sizeof(c->header), c->s.unit)
			    : csv_series_header(c->header, sizeof(c->header), &shape);

	if (k < 0)
		return -ENAMETOOLONG;
	c->header_len = (size_t)k;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Formatting one row */

struct line {
	char *p;
	size_t len, cap;
	bool overflow;
};

__attribute__((format(printf, 2, 3)))
static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (l->overflow)
		return;
	va_start(ap, fmt);
	k = vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= l->cap - l->len)
		l->overflow = true;
	else
		l->len += (size_t)k;
}

/* RFC 4180 needs quotes for these; libcsv's reader also trims unquoted spaces. */
static bool needs_quotes(const char *s, size_t n)
{
	if (n && (s[0] == ' ' || s[n - 1] == ' '))
		return true;
	return strpbrk(s, ",\"\r\n") != NULL;
}

static void put_label(struct line *l, const char *s)
{
	size_t n = strnlen(s, REPORT_LABEL_SIZE);
	size_t need;

	if (l->overflow)
		return;
	if (!needs_quotes(s, n)) {
		put(l, ",%.*s", (int)n, s);
		return;
	}
	put(l, ",");
	need = csv_write(NULL, 0, s, n);
	if (l->overflow || need >= l->cap - l->len) {
		l->overflow = true;
		return;
	}
	l->len += csv_write(l->p + l->len, l->cap - l->len, s, n);
}

/*
 * A value row's mean or stddev: fixed notation with at least three
 * decimals and as many more as it takes to read back as the same double,
 * so that a spread of 1414.2135623730951 is not cut to 1414.214.
 */
static void put_value_figure(struct line *l, double v)
{
	char buf[64];
	int d;

	for (d = 3; d < 17; d++) {
		snprintf(buf, sizeof(buf), "%.*f", d, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	put(l, ",%.*f", d, v);
}

static void format_row(struct csv_out *c, struct line *l, const char *ts, double tsc_hz,
		       double overhead, const struct report_row *row)
{
	const char *lat = c->s.unit == REPORT_UNIT_US ? ",%.4f" : ",%.1f";
	bool value = row->kind == REPORT_VALUE;
	const struct report_figures *f = &row->f;

	put(l, "%s", ts);
	put_label(l, row->point);
	put_label(l, row->stage);
	put(l, ",%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu", value ? "value" : "latency",
	    (unsigned long long)f->count, (unsigned long long)row->dropped,
	    (unsigned long long)row->anomalies.invalid, (unsigned long long)row->stalled,
	    (unsigned long long)row->anomalies.abandoned,
	    (unsigned long long)row->anomalies.orphan,
	    (unsigned long long)row->anomalies.out_of_range);
	/* Values are whole numbers as recorded: printed from the exact
	 * integers, every digit, whatever their magnitude. */
	if (value)
		put(l, ",%llu", (unsigned long long)f->min_raw);
	else
		put(l, lat, f->min);
	if (value && f->mean_int >= (UINT64_C(1) << 53)) {
		/* Beyond 2^53 a double skips integers: the integer part exactly. */
		put(l, ",%llu.%03u", (unsigned long long)f->mean_int,
		    (unsigned)(f->mean_frac * 1000.0));
		put_value_figure(l, f->stddev);
	} else if (value) {
		put_value_figure(l, f->mean);
		put_value_figure(l, f->stddev);
	} else {
		put(l, lat, f->mean);
		put(l, lat, f->stddev);
	}
	for (unsigned i = 0; i < c->s.npct; i++) {
		if (value)
			put(l, ",%llu", (unsigned long long)f->pct_raw[i]);
		else
			put(l, lat, f->pct[i]);
	}
	if (value)
		put(l, ",%llu", (unsigned long long)f->max_raw);
	else
		put(l, lat, f->max);
	put(l, ",%.0f", tsc_hz);
	if (c->s.subtract_overhead)
		put(l, lat, overhead);
	put(l, "\n");
}

/* ------------------------------------------------------------------ */
/* The buffer */

static bool grow(struct csv_out *c, size_t need)
{
	size_t cap = c->cap ? c->cap : CSV_PUSH_AT * 2;
	char *b;

	if (need <= c->cap)
		return true;
	while (cap < need)
		cap *= 2;
	b = realloc(c->buf, cap);
	if (!b)
		return false;
	c->buf = b;
	c->cap = cap;
	return true;
}

/*
 * Write what is buffered.  A short write leaves the rest for later; the
 * buffer is then compacted so it starts at the row the file ends inside.
 */
static int push(struct csv_out *c)
{
	size_t done = c->off;
	int e = 0;

	while (done < c->len) {
		ssize_t n = write(c->fd, c->buf + done, c->len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = -errno;
			break;
		}
		if (n == 0) {
			e = -EIO;
			break;
		}
		done += (size_t)n;
		c->size += (uint64_t)n;
	}
	if (done == c->len) {
		c->len = 0;
		c->off = 0;
	} else {
		const char *nl = done ? memrchr(c->buf, '\n', done) : NULL;
		size_t from = nl ? (size_t)(nl + 1 - c->buf) : 0;

		memmove(c->buf, c->buf + from, c->len - from);
		c->len -= from;
		c->off = done - from;
	}
	c->failing = e;
	return e;
}

/*
 * Before leaving the current file: if a short write left part of a row in
 * it, cut that part off so the file ends with a whole row; the row is sent
 * again, whole, to the next file.
 */
static void drop_partial_row(struct csv_out *c)
{
	struct stat st;

	if (!c->off)
		return;
	if (fstat(c->fd, &st) == 0 && (uint64_t)st.st_size >= c->off &&
	    ftruncate(c->fd, st.st_size - (off_t)c->off) == 0) {
		c->off = 0;
		return;
	}
	/* The old file keeps an incomplete last line; the next start repairs it. */
	c->off = 0;
}

/* Put the header in front of the buffered rows (a file just created). */
static bool queue_header(struct csv_out *c)
{
	size_t n = c->header_len + 1;

	if (!grow(c, c->len + n))
		return false;
	memmove(c->buf + n, c->buf, c->len);
	memcpy(c->buf, c->header, c->header_len);
	c->buf[c->header_len] = '\n';
	c->len += n;
	return true;
}

/* ------------------------------------------------------------------ */
/* Opening a file */

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Offset just after the last '\n' before `end`, or -1 if there is none. */
static off_t last_newline_end(int fd, off_t end)
{
	char chunk[4096];

	while (end > 0) {
		off_t from = end > (off_t)sizeof(chunk) ? end - (off_t)sizeof(chunk) : 0;
		ssize_t n = pread(fd, chunk, (size_t)(end - from), from);
		const char *nl;

		if (n <= 0)
			return -1;
		nl = memrchr(chunk, '\n', (size_t)n);
		if (nl)
			return from + (nl - chunk) + 1;
		end = from;
	}
	return -1;
}

static int refuse_header(const struct csv_out *c, const char *path, const char *old,
			 size_t oldlen, char *err, size_t errlen)
{
	msg(err, errlen, "%s: existing header differs from this configuration's; refusing "
	    "to append (file left untouched)\n  file:    %.*s\n  current: %s\n"
	    "move the file away or restore the previous unit/percentiles/subtract_overhead",
	    path, (int)oldlen, old, c->header);
	return -EEXIST;
}

/*
 * Check an existing, non-empty file: its first line must be our header,
 * and a last line cut short (a crash mid-write) is truncated away.  A file
 * holding only the beginning of our header is emptied (*ret_empty).
 */
static int check_existing(struct csv_out *c, int fd, const char *path, off_t size,
			  bool *ret_empty, char *err, size_t errlen)
{
	char first[CSV_FIRST_LINE_MAX];
	ssize_t n;
	const char *nl;
	size_t flen;
	char last;
	off_t keep;

	*ret_empty = false;
	n = pread(fd, first, sizeof(first), 0);
	if (n < 0) {
		msg(err, errlen, "%s: cannot read the existing header: %s", path, strerror(errno));
		return -errno;
	}
	nl = memchr(first, '\n', (size_t)n);
	if (!nl) {
		/* No complete line at all: an interrupted header, or not ours. */
		if ((off_t)n == size && (size_t)n <= c->header_len &&
		    !memcmp(first, c->header, (size_t)n)) {
			if (ftruncate(fd, 0) < 0) {
				msg(err, errlen, "%s: cannot repair the incomplete header: %s",
				    path, strerror(errno));
				return -errno;
			}
			msg(c->notice, sizeof(c->notice), "%s: held only part of the CSV "
			    "header (%lld bytes, an interrupted write); rewrote it", path,
			    (long long)size);
			*ret_empty = true;
			return 0;
		}
		return refuse_header(c, path, first, (size_t)n < 200 ? (size_t)n : 200,
				     err, errlen);
	}
	flen = (size_t)(nl - first);
	if (flen && first[flen - 1] == '\r')
		flen--;
	if (flen != c->header_len || memcmp(first, c->header, flen))
		return refuse_header(c, path, first, flen, err, errlen);

	if (pread(fd, &last, 1, size - 1) != 1) {
		msg(err, errlen, "%s: cannot read its last byte", path);
		return -EIO;
	}
	if (last == '\n')
		return 0;
	keep = last_newline_end(fd, size);
	if (keep <= 0 || ftruncate(fd, keep) < 0) {
		int e = keep <= 0 ? EIO : errno;
		msg(err, errlen, "%s: the last line is incomplete and could not be removed: %s",
		    path, strerror(e));
		return -e;
	}
	msg(c->notice, sizeof(c->notice), "%s: the last line was incomplete (%lld bytes, an "
	    "interrupted write); removed it so the file stays parseable", path,
	    (long long)(size - keep));
	return 0;
}

/*
 * Open `path` for appending without following a symlink.  *ret_new tells
 * whether the file is empty and needs the header.  Opened read-write: the
 * existing header is read and a torn last line truncated through the same
 * descriptor, so the checks and the appends concern one and the same file.
 */
static int open_file(struct csv_out *c, const char *path, int *ret_fd, uint64_t *ret_size,
		     bool *ret_new, char *err, size_t errlen)
{
	struct stat st;
	bool empty;
	int fd, e, fl;

	/* O_NONBLOCK so a FIFO at the path cannot hang the open. */
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
		  O_NONBLOCK, CSV_FILE_MODE);
	if (fd < 0) {
		e = errno;
		if (e == ELOOP)
			msg(err, errlen, "%s: is a symbolic link; refusing to follow it (name "
			    "the real file in [output] csv)", path);
		else if (e == ENOENT)
			msg(err, errlen, "%s: cannot create: its directory does not exist", path);
		else
			msg(err, errlen, "%s: cannot open for appending: %s", path, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		msg(err, errlen, "%s: cannot stat: %s", path, strerror(e));
		goto error_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		e = EINVAL;
		msg(err, errlen, "%s: not a regular file; refusing to write CSV rows to it", path);
		goto error_fd;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		e = errno;
		msg(err, errlen, "%s: fcntl: %s", path, strerror(e));
		goto error_fd;
	}
	empty = st.st_size == 0;
	if (!empty) {
		e = -check_existing(c, fd, path, st.st_size, &empty, err, errlen);
		if (e)
			goto error_fd;
		if (fstat(fd, &st) < 0) {
			e = errno;
			msg(err, errlen, "%s: cannot stat: %s", path, strerror(e));
			goto error_fd;
		}
	}
	*ret_fd = fd;
	*ret_size = (uint64_t)st.st_size;
	*ret_new = empty;
	return 0;

error_fd:
	close(fd);
	return -e;
}

static int split_path(struct csv_out *c, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t blen = strlen(base);

	if (!*base)
		return -EISDIR;
	if (blen > 4 && !strcmp(base + blen - 4, ".csv"))
		blen -= 4;
	c->path = strdup(path);
	c->prefix = strndup(path, (size_t)(base - path));
	c->stem = strndup(base, blen);
	return c->path && c->prefix && c->stem ? 0 : -ENOMEM;
}

static void free_out(struct csv_out *c)
{
	if (c->c_locale)
		freelocale(c->c_locale);
	free(c->path);
	free(c->prefix);
	free(c->stem);
	free(c->buf);
	free(c->sorted);
	free(c);
}

static int open_kind(struct csv_out **ret, const char *path, const struct report_settings *s,
		     bool outliers, char *err, size_t errlen)
{
	struct csv_out *c;
	bool fresh;
	int e;

	c = calloc(1, sizeof(*c));
	if (!c || (outliers && !(c->sorted = calloc(OUTLIERS_MAX, sizeof(*c->sorted))))) {
		if (c)
			free(c);
		msg(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	c->outliers = outliers;
	c->fd = -1;
	c->s = *s;
	if (c->s.npct > REPORT_MAX_PCT)
		c->s.npct = REPORT_MAX_PCT;
	e = split_path(c, path);
	if (e < 0) {
		msg(err, errlen, "%s: %s", path, e == -EISDIR ? "names a directory, not a file" :
		    "out of memory");
		goto error;
	}
	c->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (!c->c_locale || !grow(c, CSV_PUSH_AT * 2)) {
		e = -ENOMEM;
		msg(err, errlen, "%s: out of memory", path);
		goto error;
	}
	e = build_header(c);
	if (e < 0) {
		msg(err, errlen, "%s: the CSV header would exceed %d bytes", path, CSV_HEADER_MAX);
		goto error;
	}
	c->created = lstat(path, &(struct stat){ 0 }) < 0 && errno == ENOENT;
	e = open_file(c, path, &c->fd, &c->size, &fresh, err, errlen);
	if (e < 0)
		goto error;
	if (fresh) {
		/* At start a full disk is reported now, not after the first interval. */
		memcpy(c->line, c->header, c->header_len);
		c->line[c->header_len] = '\n';
		e = write_all(c->fd, c->line, c->header_len + 1);
		if (e < 0) {
			msg(err, errlen, "%s: cannot write the CSV header: %s", path, strerror(-e));
			/* Leave no torn header behind. */
			if (ftruncate(c->fd, 0) < 0) {
				/* Then the next start recognises the fragment and
				 * rewrites it. */
			}
			close(c->fd);
			goto error;
		}
		c->size = c->header_len + 1;
	}
	*ret = c;
	return 0;

error:
	free_out(c);
	return e;
}

int csv_out_open(struct csv_out **ret, const char *path, const struct report_settings *s,
		 char *err, size_t errlen)
{
	return open_kind(ret, path, s, false, err, errlen);
}

int csv_out_open_outliers(struct csv_out **ret, const char *path,
			  const struct report_settings *s, char *err, size_t errlen)
{
	return open_kind(ret, path, s, true, err, errlen);
}

const char *csv_out_path(const struct csv_out *c)
{
	return c->path;
}

const char *csv_out_header(const struct csv_out *c)
{
	return c->header;
}

bool csv_out_take_notice(struct csv_out *c, char *buf, size_t n)
{
	if (!c->notice[0])
		return false;
	msg(buf, n, "%s", c->notice);
	c->notice[0] = '\0';
	return true;
}

/* ------------------------------------------------------------------ */
/* Writing */

/* Append one formatted line to the buffer, or count it lost. */
static void queue_line(struct csv_out *c, const struct line *l)
{
	if (l->overflow) {
		c->lost++;
		return;
	}
	/* Keep the buffer small while the file takes what it is given. */
	if (c->len + l->len > CSV_PUSH_AT && !c->failing)
		push(c);
	if (c->len + l->len > CSV_BACKLOG_MAX || !grow(c, c->len + l->len)) {
		c->lost++;
		return;
	}
	memcpy(c->buf + c->len, l->p, l->len);
	c->len += l->len;
}

/* The outlier lines of one row: slowest first, ranked from 1. */
static void queue_outliers(struct csv_out *c, const char *ts, const struct report *r,
			   const struct report_row *row)
{
	const char *fmt = c->s.unit == REPORT_UNIT_US ? ",%.4f\n" : ",%.1f\n";
	uint32_t n;

	if (!row->outliers || row->kind != REPORT_LATENCY)
		return;
	n = outliers_sorted(row->outliers, c->sorted);
	for (uint32_t k = 0; k < n; k++) {
		struct line l = { c->line, 0, sizeof(c->line), false };
		char start[48];

		report_format_utc_ns(c->sorted[k].start_ns ? c->sorted[k].start_ns :
				     report_realtime_of(r, c->sorted[k].start_tsc), start,
					sizeof(start));
		put(&l, "%s", ts);
		put_label(&l, row->point);
		put_label(&l, row->stage);
		put(&l, ",%u,%u,%s", k + 1, c->sorted[k].seq, start);
		put(&l, fmt, report_convert(c->s.unit, (double)c->sorted[k].ticks, r->tsc_hz));
		queue_line(c, &l);
	}
}

int csv_out_write(struct csv_out *c, const struct report *r, int push_now)
{
	char ts[48];
	locale_t prev;

	csv_format_timestamp(r->end_realtime_ns, ts, sizeof(ts));
	prev = uselocale(c->c_locale);
	for (uint32_t i = 0; i < r->nrows; i++) {
		struct line l = { c->line, 0, sizeof(c->line), false };

		if (c->outliers) {
			queue_outliers(c, ts, r, &r->rows[i]);
			continue;
		}
		format_row(c, &l, ts, r->tsc_hz, r->overhead, &r->rows[i]);
		queue_line(c, &l);
	}
	uselocale(prev);
	if (push_now || c->len >= CSV_PUSH_AT)
		return push(c);
	return c->failing;
}

int csv_out_flush(struct csv_out *c)
{
	return push(c);
}

uint64_t csv_out_size(const struct csv_out *c)
{
	return c->size;
}

uint64_t csv_out_lost(const struct csv_out *c)
{
	return c->lost;
}

/*
 * Continue in `fd` (already opened, `fresh` if it needs a header).  The
 * callers have pushed what the old file would take and cut off a row left
 * incomplete in it; what is still buffered follows the header here.
 */
static void switch_file(struct csv_out *c, int fd, uint64_t size, bool fresh)
{
	close(c->fd);
	c->fd = fd;
	c->size = size;
	if (fresh && !queue_header(c)) {
		/* No memory for the header: start the file with it directly. */
		if (write_all(fd, c->header, c->header_len) == 0 &&
		    write_all(fd, "\n", 1) == 0)
			c->size += c->header_len + 1;
	}
	push(c);
}

int csv_out_reopen(struct csv_out *c, char *err, size_t errlen)
{
	uint64_t size;
	bool fresh;
	int fd, e;

	push(c);
	drop_partial_row(c);
	e = open_file(c, c->path, &fd, &size, &fresh, err, errlen);
	if (e < 0)
		return e;       /* keep writing where we were */
	switch_file(c, fd, size, fresh);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Rotation */

/* A rotated file's identity: its timestamp and the collision counter. */
struct rotated {
	char ts[17];            /* YYYYmmddTHHMMSSZ */
	unsigned long seq;      /* 0: no "-N" suffix */
};

/* The largest "-N" parse_rotated() accepts: nine digits. */
#define ROTATED_SEQ_MAX 999999999ul

/* A rotated set: the CSV, its summary and its outliers file. */
static const char *const rotated_suffixes[] = { ".csv", CSV_SUMMARY_SUFFIX, CSV_OUTLIERS_SUFFIX };
#define ROTATED_KINDS (sizeof(rotated_suffixes) / sizeof(rotated_suffixes[0]))

/*
 * Parse `<stem>-YYYYmmddTHHMMSSZ[-N]<suffix>` where suffix is one of
 * rotated_suffixes; anything else is not ours to touch.
 */
static bool parse_rotated(const char *name, const char *stem, struct rotated *ret)
{
	size_t sl = strlen(stem);
	const char *p;
	unsigned long seq = 0;

	if (strncmp(name, stem, sl) || name[sl] != '-')
		return false;
	p = name + sl + 1;
	for (int i = 0; i < 16; i++) {
		char ch = p[i];
		bool ok = i == 8 ? ch == 'T' : i == 15 ? ch == 'Z' : (ch >= '0' && ch <= '9');
		if (!ok)
			return false;
	}
	memcpy(ret->ts, p, 16);
	ret->ts[16] = '\0';
	p += 16;
	if (*p == '-') {
		const char *d = ++p;
		if (*p < '1' || *p > '9')
			return false;
		while (*p >= '0' && *p <= '9' && p - d < 9)
			seq = seq * 10 + (unsigned long)(*p++ - '0');
	}
	for (size_t k = 0; k < ROTATED_KINDS; k++)
		if (!strcmp(p, rotated_suffixes[k])) {
			ret->seq = seq;
			return true;
		}
	return false;
}

static int rotated_cmp(const void *a, const void *b)
{
	const struct rotated *x = a, *y = b;
	int k = strcmp(x->ts, y->ts);

	if (k)
		return k;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void rotated_name(char *buf, size_t n, const char *stem, const struct rotated *r,
			 const char *suffix)
{
	if (r->seq)
		snprintf(buf, n, "%s-%s-%lu%s", stem, r->ts, r->seq, suffix);
	else
		snprintf(buf, n, "%s-%s%s", stem, r->ts, suffix);
}

/*
 * Only a regular file owned by our effective user can be one the daemon
 * rotated; a symlink or someone else's file under a rotated-looking name is
 * left alone.  Not following symlinks is what makes this safe in a
 * directory others can write to.
 */
static bool rotated_is_ours(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	       st.st_uid == geteuid();
}

static DIR *open_rotation_dir(const struct csv_out *c)
{
	return opendir(c->prefix[0] ? c->prefix : ".");
}

/*
 * The first suffix to try for a rotation at `ts`: one above the highest
 * suffix any name (ours or not, CSV, summary or outliers) already has for
 * `ts`, and above the last one this writer took in that second.  Reusing a
 * lower free suffix, e.g. the bare name after pruning removed it, would
 * make the newest file sort as the oldest of its second.  A directory that
 * cannot be listed leaves the rename loop to step over taken names.
 */
static unsigned long first_seq(const struct csv_out *c, const char *ts)
{
	unsigned long next = 0;
	struct rotated r;
	struct dirent *de;
	DIR *d;

	if (!strcmp(c->last_ts, ts))
		next = c->last_seq + 1;
	d = open_rotation_dir(c);
	if (!d)
		return next;
	while ((de = readdir(d)))
		if (parse_rotated(de->d_name, c->stem, &r) && !strcmp(r.ts, ts) &&
		    r.seq + 1 > next)
			next = r.seq + 1;
	closedir(d);
	/* Names squatted up to the limit: look for a free one from the bottom. */
	return next > ROTATED_SEQ_MAX ? 0 : next;
}

/*
 * Delete the oldest rotated sets beyond `keep`.  A set is a rotated CSV,
 * its summary and its outliers file; any of them may be missing.  Only
 * regular files owned by our effective user count (rotated_is_ours()).
 * `just` is the set this rotation created: it always stays unless keep is
 * 0, so keep = N leaves it plus the N-1 others latest by (timestamp,
 * suffix).  Order is by name, not by modification time, so after the wall
 * clock stepped back the sets dated in the future sort newest and are kept
 * longest, while sets rotated after the step each go at the next rotation
 * once keep is reached.  Returns how many sets went.
 */
static int prune(struct csv_out *c, unsigned keep, const struct rotated *just, char *err,
		 size_t errlen)
{
	const char *dirpath = c->prefix[0] ? c->prefix : ".";
	struct rotated *ids = NULL, r;
	size_t n = 0, cap = 0, uniq = 0, others = keep ? keep - 1 : 0;
	struct dirent *de;
	int dfd, removed = 0, e = 0;
	DIR *d;

	d = open_rotation_dir(c);
	if (!d) {
		msg(err, errlen, "%s: cannot list for pruning rotated files: %s", dirpath,
		    strerror(errno));
		return -errno;
	}
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		if (!parse_rotated(de->d_name, c->stem, &r))
			continue;
		if (keep && !rotated_cmp(&r, just))
			continue;
		if (!rotated_is_ours(dfd, de->d_name))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 32;
			struct rotated *ni = realloc(ids, nc * sizeof(*ids));
			if (!ni) {
				e = -ENOMEM;
				msg(err, errlen, "%s: out of memory while pruning", dirpath);
				goto out;
			}
			ids = ni;
			cap = nc;
		}
		ids[n++] = r;
	}
	if (n)
		qsort(ids, n, sizeof(*ids), rotated_cmp);
	for (size_t i = 0; i < n; i++)
		if (!uniq || rotated_cmp(&ids[uniq - 1], &ids[i]))
			ids[uniq++] = ids[i];
	for (size_t i = 0; i + others < uniq; i++) {
		char name[4096];

		for (size_t k = 0; k < ROTATED_KINDS; k++) {
			rotated_name(name, sizeof(name), c->stem, &ids[i], rotated_suffixes[k]);
			/* Each on its own: the CSV may be ours, the summary not. */
			if (!rotated_is_ours(dfd, name))
				continue;
			if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT && !e) {
				e = -errno;
				msg(err, errlen, "%s%s: cannot remove an old rotated file: %s",
				    c->prefix, name, strerror(errno));
			}
		}
		removed++;
	}
out:
	free(ids);
	closedir(d);
	return e < 0 ? e : removed;
}

/* Rename without replacing: RENAME_NOREPLACE, or link+unlink where unsupported. */
static int rename_noreplace(const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (link(from, to) < 0)
		return -errno;
	if (unlink(from) < 0) {
		int e = errno;
		unlink(to);
		return -e;
	}
	return 0;
}

int csv_out_rotate(struct csv_out *c, uint64_t when_realtime_ns, unsigned keep,
		   char *ret_path, size_t pathlen, char *err, size_t errlen)
{
	struct stat cur, at_path;
	struct rotated r = { .seq = 0 };
	char name[4096], target[8192];
	time_t sec = (time_t)(when_realtime_ns / 1000000000u);
	struct tm tm;
	uint64_t size;
	bool fresh;
	int fd, e;

	push(c);
	drop_partial_row(c);
	if (fstat(c->fd, &cur) < 0 || lstat(c->path, &at_path) < 0 ||
	    cur.st_dev != at_path.st_dev || cur.st_ino != at_path.st_ino) {
		/* Someone moved our file (logrotate without SIGUSR1): follow the path. */
		e = csv_out_reopen(c, err, errlen);
		if (e < 0)
			return e;
		msg(err, errlen, "%s: the file being written had been moved away by someone "
		    "else; reopened the path instead of rotating", c->path);
		return -ESTALE;
	}
	if (!gmtime_r(&sec, &tm) || strftime(r.ts, sizeof(r.ts), "%Y%m%dT%H%M%SZ", &tm) != 16)
		snprintf(r.ts, sizeof(r.ts), "00000000T000000Z");
	r.seq = first_seq(c, r.ts);
	for (unsigned tries = 0;; tries++) {
		struct stat st;

		/* The companions' names must be free as well: the daemon
		 * writes them next and must not replace someone else's file. */
		e = 0;
		for (size_t k = 1; k < ROTATED_KINDS && !e; k++) {
			rotated_name(name, sizeof(name), c->stem, &r, rotated_suffixes[k]);
			snprintf(target, sizeof(target), "%s%s", c->prefix, name);
			if (lstat(target, &st) == 0)
				e = -EEXIST;
		}
		if (!e) {
			rotated_name(name, sizeof(name), c->stem, &r, ".csv");
			snprintf(target, sizeof(target), "%s%s", c->prefix, name);
			e = rename_noreplace(c->path, target);
		}
		if (e != -EEXIST || tries >= 999 || r.seq >= ROTATED_SEQ_MAX)
			break;
		r.seq++;
	}
	if (e < 0) {
		msg(err, errlen, "%s: cannot rename to %s: %s", c->path, target, strerror(-e));
		return e;
	}
	memcpy(c->last_ts, r.ts, sizeof(c->last_ts));
	c->last_seq = r.seq;
	e = open_file(c, c->path, &fd, &size, &fresh, err, errlen);
	if (e < 0)
		return e;       /* still appending to the renamed file */
	switch_file(c, fd, size, fresh);
	snprintf(ret_path, pathlen, "%s", target);
	/* The rotation itself succeeded: a pruning problem is only a notice. */
	prune(c, keep, &r, c->notice, sizeof(c->notice));
	return 0;
}

int csv_out_rotate_beside(struct csv_out *c, const char *rotated_csv, unsigned keep, char *err,
			  size_t errlen)
{
	char target[4200];
	uint64_t size;
	bool fresh;
	int fd, e;

	if (csv_out_companion_path(rotated_csv, CSV_OUTLIERS_SUFFIX, target, sizeof(target)) < 0) {
		msg(err, errlen, "%s: the rotated name would be too long", rotated_csv);
		return -ENAMETOOLONG;
	}
	push(c);
	drop_partial_row(c);
	if ((e = rename_noreplace(c->path, target)) < 0) {
		msg(err, errlen, "%s: cannot rename to %s: %s", c->path, target, strerror(-e));
		return e;
	}
	e = open_file(c, c->path, &fd, &size, &fresh, err, errlen);
	if (e < 0)
		return e;       /* still appending to the renamed file */
	switch_file(c, fd, size, fresh);
	if (!keep)
		unlink(target);   /* as the rotated CSV beside it */
	return 0;
}

void csv_out_discard(struct csv_out *c)
{
	bool untouched;

	if (!c)
		return;
	untouched = c->created && c->fd >= 0 && !c->len && c->size == c->header_len + 1;
	if (untouched)
		unlink(c->path);
	csv_out_close(c);
}

void csv_out_close(struct csv_out *c)
{
	if (!c)
		return;
	if (c->fd >= 0) {
		push(c);
		drop_partial_row(c);
		close(c->fd);
	}
	free_out(c);
}
