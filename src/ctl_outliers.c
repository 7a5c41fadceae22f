/*
 * ctl_outliers.c - the slowest spans of a run from its outliers file.
 *
 * The file holds, per interval and stage, that interval's N slowest spans;
 * the run's N slowest per stage are therefore among them.  Lines are read
 * with libcsv in strict mode, from a regular file only and with fields
 * capped as the series reader caps them (ctl_csv.h); the header must be
 * the outliers header, in any duration unit.  Labels are cleaned by the
 * table, escaped by the JSON writer.
 */
#include "build-config.h"

#include <csv.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "csv_out.h"
#include "csv_schema.h"
#include "ctl_csv.h"
#include "ctl_json.h"
#include "ctl_outliers.h"

#define NFIELDS (CSV_OUTLIERS_FIXED + 1)

struct slow {
	char *point, *stage, *seq, *start, *interval;
	double duration;
	unsigned long line;
};

struct reader {
	char *field[NFIELDS];
	unsigned nfield;
	unsigned long line;
	bool header_seen;
	char unit[16];
	struct slow *v;
	size_t n, cap;
	unsigned max_rank;
	int error;
	char why[512];
	bool opened;             /* past the open: messages do not name the file */
	const struct ctl_filter *filter;
};

static void on_field(void *s, size_t len, void *data)
{
	struct reader *r = data;
	char *copy;

	if (r->nfield >= NFIELDS) {
		r->nfield++;
		return;
	}
	copy = malloc(len + 1);
	if (!copy) {
		r->error = -ENOMEM;
		return;
	}
	memcpy(copy, s, len);
	copy[len] = '\0';
	r->field[r->nfield++] = copy;
}

static void clear_fields(struct reader *r)
{
	for (unsigned i = 0; i < NFIELDS && i < r->nfield; i++) {
		free(r->field[i]);
		r->field[i] = NULL;
	}
	r->nfield = 0;
}

static bool header_ok(struct reader *r)
{
	if (r->nfield != NFIELDS)
		return false;
	for (unsigned i = 0; i < CSV_OUTLIERS_FIXED; i++)
		if (strcmp(r->field[i], csv_outliers_columns[i]))
			return false;
	if (strncmp(r->field[6], "duration_", 9) || strlen(r->field[6] + 9) >= sizeof(r->unit))
		return false;
	strcpy(r->unit, r->field[6] + 9);
	return true;
}

static void not_a_number(struct reader *r, const char *what)
{
	r->error = -EPROTO;
	snprintf(r->why, sizeof(r->why), "line %lu: %s is not a number", r->line, what);
}

static void on_record(int c, void *data)
{
	struct reader *r = data;
	char *end;
	unsigned long rank;
	double d;

	(void)c;
	r->line++;
	if (r->error)
		goto out;
	if (!r->header_seen) {
		if (!header_ok(r)) {
			r->error = -EPROTO;
			snprintf(r->why, sizeof(r->why), "line 1 is not the outliers header "
				 "(timestamp,point,stage,rank,seq,start,duration_UNIT)");
			goto out;
		}
		r->header_seen = true;
		goto out;
	}
	if (r->nfield != NFIELDS) {
		r->error = -EPROTO;
		snprintf(r->why, sizeof(r->why), "line %lu has %u fields, not %d", r->line,
			 r->nfield, NFIELDS);
		goto out;
	}
	errno = 0;
	rank = strtoul(r->field[3], &end, 10);
	if (*end || !rank || errno) {
		not_a_number(r, "rank");
		goto out;
	}
	(void)strtoull(r->field[4], &end, 10);
	if (*end || r->field[4][0] < '0' || r->field[4][0] > '9' || errno) {
		not_a_number(r, "seq");
		goto out;
	}
	d = strtod(r->field[6], &end);
	if (*end || errno) {
		not_a_number(r, "duration");
		goto out;
	}
	if (rank > r->max_rank)
		r->max_rank = (unsigned)(rank < 100000 ? rank : 100000);
	if (r->filter && !ctl_filter_match(r->filter, r->field[1], r->field[2]))
		goto out;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 256;
		struct slow *v = realloc(r->v, cap * sizeof(*v));

		if (!v) {
			r->error = -ENOMEM;
			goto out;
		}
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct slow){ r->field[1], r->field[2], r->field[4], r->field[5],
				      r->field[0], d, r->line };
	r->field[0] = r->field[1] = r->field[2] = r->field[4] = r->field[5] = NULL;
out:
	clear_fields(r);
}

/* By point, stage, then slowest first (earliest line among equals). */
static int slow_cmp(const void *a, const void *b)
{
	const struct slow *x = a, *y = b;
	int c = strcmp(x->point, y->point);

	if (c)
		return c;
	if ((c = strcmp(x->stage, y->stage)))
		return c;
	if (x->duration != y->duration)
		return x->duration < y->duration ? 1 : -1;
	return (x->line > y->line) - (x->line < y->line);
}

/* Read the outliers file: a regular file only (a FIFO or a device would
 * hang or never end), each field at most CTL_CSV_FIELD_MAX bytes. */
static int read_file(const char *path, struct reader *r)
{
	struct csv_parser p;
	char buf[65536];
	size_t n;
	int fd = ctl_csv_open_regular(path, r->why, sizeof(r->why));
	FILE *f;

	if (fd < 0)
		return r->error = fd;
	if (!(f = fdopen(fd, "r"))) {
		r->error = -errno;
		close(fd);
		snprintf(r->why, sizeof(r->why), "cannot read %s: %s", path, strerror(-r->error));
		return r->error;
	}
	r->opened = true;
	if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
		fclose(f);
		return -ENOMEM;
	}
	ctl_csv_parser_limits(&p);
	while (!r->error && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (csv_parse(&p, buf, n, on_field, on_record, r) != n && !r->error) {
			r->error = csv_error(&p) == CSV_ENOMEM ? -EFBIG : -EPROTO;
			if (r->error == -EFBIG)
				snprintf(r->why, sizeof(r->why), "near line %lu, a field longer than "
					 "%d bytes: not an outliers file", r->line + 1,
					 CTL_CSV_FIELD_MAX);
			else
				snprintf(r->why, sizeof(r->why), "malformed CSV near line %lu: %s",
					 r->line + 1, csv_strerror(csv_error(&p)));
		}
	if (!r->error && ferror(f)) {
		r->error = -EIO;
		snprintf(r->why, sizeof(r->why), "read error");
	}
	if (!r->error)
		csv_fini(&p, on_field, on_record, r);
	csv_free(&p);
	fclose(f);
	clear_fields(r);
	if (!r->error && !r->header_seen) {
		r->error = -EPROTO;
		snprintf(r->why, sizeof(r->why), "empty file: no header");
	}
	return r->error;
}

/* The kept spans as JSON (perfmonctl(1), JSON OUTPUT). */
static int print_json(const char *path, const struct reader *r, const unsigned *rank,
		      FILE *out)
{
	struct ctl_json j;

	ctl_json_init(&j, out);
	ctl_json_object_begin(&j);
	ctl_json_kv_string(&j, "file", path);
	ctl_json_kv_string(&j, "unit", r->unit);
	ctl_json_key(&j, "spans");
	ctl_json_array_begin(&j);
	for (size_t i = 0; i < r->n; i++) {
		if (!rank[i])
			continue;
		ctl_json_object_begin(&j);
		ctl_json_kv_string(&j, "point", r->v[i].point);
		ctl_json_kv_string(&j, "stage", r->v[i].stage);
		ctl_json_kv_u64(&j, "rank", rank[i]);
		ctl_json_key(&j, "seq");
		ctl_json_number_text(&j, r->v[i].seq);
		ctl_json_kv_string(&j, "start", r->v[i].start);
		ctl_json_kv_double(&j, "duration", r->v[i].duration);
		ctl_json_kv_string(&j, "interval", r->v[i].interval);
		ctl_json_object_end(&j);
	}
	ctl_json_array_end(&j);
	ctl_json_object_end(&j);
	return ctl_json_finish(&j);
}

/* The kept spans as a table. */
static int print_table(const struct reader *r, const unsigned *rank,
		       const struct ctl_filter *filter, FILE *out, enum ctl_format fmt,
		       unsigned width)
{
	struct ctl_table *t = ctl_table_new();
	char head[32];
	int e = 0;

	if (!t)
		return -ENOMEM;
	snprintf(head, sizeof(head), "duration_%s", r->unit);
	ctl_table_add_column(t, "point", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "stage", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "rank", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "seq", CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "start (UTC)", CTL_ALIGN_LEFT, false);
	ctl_table_add_column(t, head, CTL_ALIGN_RIGHT, false);
	ctl_table_add_column(t, "interval", CTL_ALIGN_LEFT, false);
	for (size_t i = 0; i < r->n; i++) {
		if (!rank[i])
			continue;
		ctl_table_add_row(t);
		ctl_table_set(t, 0, r->v[i].point);
		ctl_table_set(t, 1, r->v[i].stage);
		ctl_table_setf(t, 2, "%u", rank[i]);
		ctl_table_set(t, 3, r->v[i].seq);
		ctl_table_set(t, 4, r->v[i].start);
		ctl_table_setf(t, 5, "%.10g", r->v[i].duration);
		ctl_table_set(t, 6, r->v[i].interval);
	}
	if (ctl_table_rows(t) == 0 && fmt != CTL_FORMAT_CSV)
		fprintf(out, "no slow spans listed%s\n",
			filter && (filter->npoints || filter->nstages) ?
			" for the --point/--stage filters" : "");
	else
		e = ctl_table_print(t, out, fmt, width);
	ctl_table_free(t);
	return e;
}

int ctl_outliers_report(const char *csv_path, const struct ctl_filter *filter, FILE *out,
			enum ctl_format fmt, unsigned width, char *err, size_t errlen)
{
	struct reader r = { .filter = filter };
	unsigned *rank = NULL, k = 0;
	char path[4200];
	int e;

	if (csv_out_outliers_path(csv_path, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "%s: name too long", csv_path);
		return -ENAMETOOLONG;
	}
	e = read_file(path, &r);
	if (e < 0) {
		snprintf(err, errlen, "%s%s%s%s", r.opened ? path : "", r.opened ? ": " : "", r.why,
			 e == -ENOENT ? " (the daemon writes it with [output] outliers set)" : "");
		goto out;
	}
	qsort(r.v, r.n, sizeof(*r.v), slow_cmp);
	/* Each span's rank in its stage over the whole file; 0: past the
	 * most an interval listed, left out. */
	rank = calloc(r.n ? r.n : 1, sizeof(*rank));
	if (!rank) {
		e = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < r.n; i++) {
		if (i == 0 || strcmp(r.v[i].point, r.v[i - 1].point) ||
		    strcmp(r.v[i].stage, r.v[i - 1].stage))
			k = 0;
		rank[i] = ++k <= r.max_rank ? k : 0;
	}
	e = fmt == CTL_FORMAT_JSON ? print_json(path, &r, rank, out) :
	    print_table(&r, rank, filter, out, fmt, width);
	if (e < 0)
		snprintf(err, errlen, "cannot write the report: %s", strerror(-e));
out:
	free(rank);
	for (size_t i = 0; i < r.n; i++) {
		free(r.v[i].point);
		free(r.v[i].stage);
		free(r.v[i].seq);
		free(r.v[i].start);
		free(r.v[i].interval);
	}
	free(r.v);
	return e;
}
