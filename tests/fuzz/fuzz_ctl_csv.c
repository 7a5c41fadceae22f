/*
 * fuzz_ctl_csv.c - libFuzzer harness for the CSV reader behind
 * `perfmonctl report`, `compare`, `plot` and `top` (src/ctl_csv.c), and
 * the label cleaning and figure formatting its rows go through
 * (src/ctl_text.c).
 *
 * Flow: [fuzz input as a CSV file] -> ctl_csv reader -> rows with cleaned
 * labels -> stage index, metrics, table cells -> checked here.
 *
 * The input is the file.  What must hold for any file:
 *   - the reader gives the same verdict, the same rows and the same error
 *     whether the file arrives in one piece or in small chunks (top feeds
 *     it as the file grows);
 *   - every label handed out is valid UTF-8 with no control or invisible
 *     format character, cleaning it again changes nothing, and its
 *     terminal width and fitting agree with its length;
 *   - the stage index finds every stage it was given;
 *   - a row's timestamp parses to the time the row carries;
 *   - every figure formats to a short, clean cell, whatever its value
 *     (NaN is refused by the reader; huge, tiny and negative are not).
 * Sanitizers catch the rest.
 */
#include "build-config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctl_csv.h"
#include "ctl_text.h"
#include "fuzz_text.h"

struct seen {
	unsigned long rows;
	unsigned ncols;           /* the header's, as rows report it */
	int64_t first_ms;         /* the first row's time */
	uint64_t digest;          /* of every row's labels and counters */
	struct ctl_stages stages;
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

static void check_label(const char *s)
{
	size_t len = strlen(s), fit;
	char again[512];
	unsigned cols = 0, width;

	FUZZ_CHECK(fuzz_text_clean(s, len, NULL), "a label handed out is not clean text");
	FUZZ_CHECK(len < sizeof(again), "a label longer than the reader keeps");
	ctl_text_clean(again, s, sizeof(again));
	FUZZ_CHECK(!strcmp(again, s), "cleaning a clean label changed it");
	width = ctl_text_width(s);
	FUZZ_CHECK(width <= 2 * len, "terminal width beyond two columns per byte");
	fit = ctl_text_fit(s, 7, &cols);
	FUZZ_CHECK(fit <= len && cols <= 7 && cols <= width, "ctl_text_fit overran");
	FUZZ_CHECK(fit == len || cols >= 6, "ctl_text_fit stopped early");
}

static void check_cell(const char *cell, size_t size)
{
	size_t len = strnlen(cell, size);

	FUZZ_CHECK(len < size, "a formatted cell is not terminated");
	FUZZ_CHECK(fuzz_text_clean(cell, len, NULL), "a formatted cell is not clean text");
}

static int on_row(void *ctx, const struct ctl_csv_header *h, const struct ctl_csv_row *row)
{
	struct seen *s = ctx;
	char cell[32];
	int64_t ms;
	int id;

	check_label(row->point);
	check_label(row->stage);
	FUZZ_CHECK(ctl_csv_parse_time(row->timestamp, &ms) == 0 && ms == row->time_ms,
		   "a row's timestamp does not parse to its time");
	id = ctl_stages_id(&s->stages, row->point, row->stage, row->value);
	FUZZ_CHECK(id >= 0, "stage index: out of memory");
	FUZZ_CHECK(ctl_stages_find(&s->stages, row->point, row->stage, row->value) == id,
		   "stage index does not find what it was given");

	for (int m = 0; m < CTL_METRIC_PCT + (int)h->npct; m++) {
		const char *name = ctl_csv_metric_name(h, m);
		double v = ctl_csv_metric(row, m);

		int found = name ? ctl_csv_metric_lookup(h, name) : -1;

		/* A header may repeat a column name; the lookup then finds
		 * the first of them, which has the same name. */
		FUZZ_CHECK(found >= 0 && !strcmp(ctl_csv_metric_name(h, found), name),
			   "a metric's name does not look it up");
		ctl_fmt_duration(v, h->unit, cell, sizeof(cell));
		check_cell(cell, sizeof(cell));
		ctl_fmt_si(v, cell, sizeof(cell));
		check_cell(cell, sizeof(cell));
	}
	/* Ages come from time differences, as in `report`'s span column. */
	if (!s->rows)
		s->first_ms = row->time_ms;
	ctl_fmt_age((double)(row->time_ms - s->first_ms) / 1000.0, cell, sizeof(cell));
	check_cell(cell, sizeof(cell));
	ctl_fmt_bytes(row->mean, cell, sizeof(cell));
	check_cell(cell, sizeof(cell));

	FUZZ_CHECK(s->rows == 0 || s->ncols == h->ncols, "the header changed between rows");
	s->ncols = h->ncols;
	s->rows++;
	s->digest = mix(s->digest, row->point, strlen(row->point) + 1);
	s->digest = mix(s->digest, row->stage, strlen(row->stage) + 1);
	s->digest = mix(s->digest, &row->count, sizeof(row->count));
	s->digest = mix(s->digest, &row->orphan, sizeof(row->orphan));
	s->digest = mix(s->digest, &row->time_ms, sizeof(row->time_ms));
	return 0;
}

struct outcome {
	int rc;
	unsigned long rows;
	uint64_t digest;
	char error[512];
	unsigned ncols;
};

/* Read `data` in chunks of the sizes `chunk` yields (0: all at once). */
static void read_all(const uint8_t *data, size_t size, unsigned chunk_seed, struct outcome *out)
{
	struct ctl_csv_reader *r = NULL;
	struct seen s = { 0, 0, 0, UINT64_C(1469598103934665603), { 0 } };
	size_t pos = 0;
	int rc;

	ctl_stages_init(&s.stages);
	FUZZ_CHECK(ctl_csv_reader_new(&r, "fuzz.csv", on_row, &s) == 0, "reader: out of memory");
	rc = 0;
	while (pos < size && rc == 0) {
		size_t n = size - pos;

		if (chunk_seed) {
			chunk_seed = chunk_seed * 1103515245u + 12345u;
			n = 1 + (chunk_seed >> 16) % 13;
			if (n > size - pos)
				n = size - pos;
		}
		rc = ctl_csv_reader_feed(r, data + pos, n);
		pos += n;
	}
	if (rc == 0)
		rc = ctl_csv_reader_finish(r);
	FUZZ_CHECK(rc == 0 || rc == -EBADMSG || rc == -ENODATA,
		   "the reader failed with an unexpected error");
	FUZZ_CHECK((rc == 0) == (ctl_csv_reader_error(r)[0] == '\0'),
		   "an error without a message, or a message without an error");
	out->rc = rc;
	out->rows = ctl_csv_reader_rows(r);
	FUZZ_CHECK(out->rows == s.rows, "rows counted and rows delivered differ");
	out->digest = s.digest;
	out->ncols = s.ncols;
	snprintf(out->error, sizeof(out->error), "%s", ctl_csv_reader_error(r));
	FUZZ_CHECK(fuzz_text_clean(out->error, strlen(out->error), NULL),
		   "the reader's error message holds raw bytes from the file");
	ctl_csv_reader_free(r);
	ctl_stages_free(&s.stages);
}

static int file_fd = -1;
static char file_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* ctl_csv_read_file() opens a path: give it an in-memory file. */
	file_fd = memfd_create("fuzz_ctl_csv.csv", MFD_CLOEXEC);
	if (file_fd < 0) {
		perror("fuzz_ctl_csv: memfd_create");
		exit(1);
	}
	snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d", file_fd);
	return 0;
}

/* The same bytes through ctl_csv_read_file(), as `report` reads a file. */
static void read_as_file(const uint8_t *data, size_t size, const struct outcome *whole)
{
	struct seen s = { 0, 0, 0, UINT64_C(1469598103934665603), { 0 } };
	struct ctl_csv_header h;
	char err[512] = "";
	int rc;

	FUZZ_CHECK(ftruncate(file_fd, 0) == 0, "ftruncate");
	FUZZ_CHECK(size == 0 || pwrite(file_fd, data, size, 0) == (ssize_t)size, "pwrite");
	ctl_stages_init(&s.stages);
	rc = ctl_csv_read_file(file_path, on_row, &s, &h, err, sizeof(err));
	FUZZ_CHECK(rc == whole->rc, "reading the file gives another verdict than the stream");
	FUZZ_CHECK(s.rows == whole->rows && s.digest == whole->digest,
		   "reading the file gives other rows than the stream");
	FUZZ_CHECK(rc != 0 || h.ncols == whole->ncols || whole->rows == 0,
		   "reading the file gives another header");
	FUZZ_CHECK(fuzz_text_clean(err, strlen(err), NULL),
		   "the file reader's error message holds raw bytes from the file");
	ctl_stages_free(&s.stages);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct outcome whole, chunked;
	static char cleaned[4096 * 4 + 1];

	read_all(data, size, 0, &whole);
	read_all(data, size, (unsigned)size * 2654435761u | 1u, &chunked);
	FUZZ_CHECK(whole.rc == chunked.rc, "chunked reading changed the verdict");
	FUZZ_CHECK(whole.rows == chunked.rows && whole.digest == chunked.digest,
		   "chunked reading changed the rows");
	FUZZ_CHECK(whole.ncols == chunked.ncols, "chunked reading changed the header");
	FUZZ_CHECK(!strcmp(whole.error, chunked.error), "chunked reading changed the error");
	read_as_file(data, size, &whole);

	/* The cleaning rule itself, on the raw bytes as one label. */
	if (size < sizeof(cleaned)) {
		char *dup = ctl_text_dup_clean((const char *)data, size);
		char again[sizeof(cleaned)];

		FUZZ_CHECK(dup != NULL, "ctl_text_dup_clean: out of memory");
		FUZZ_CHECK(fuzz_text_clean(dup, strlen(dup), NULL), "ctl_text_dup_clean left raw bytes");
		ctl_text_clean(again, dup, sizeof(again));
		FUZZ_CHECK(!strcmp(again, dup), "cleaning is not idempotent");
		free(dup);
	}
	return 0;
}
