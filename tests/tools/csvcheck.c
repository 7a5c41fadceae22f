/*
 * csvcheck.c - read a perfmond CSV with libcsv's strict parser.
 *
 *   csvcheck FILE...   every row must have the header's width; prints one
 *                      line per (point, stage): the summed count and
 *                      anomaly columns over all files, and "rows N"
 *
 * Exits 1 on a parse error, a width mismatch or differing headers.
 */
#include "build-config.h"

#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXF 64
#define MAXROWS 4096

struct acc {
	char point[256], stage[256];
	unsigned long long v[7];          /* count dropped invalid stalled abandoned orphan oor */
};

static char header[4096], cur_header[4096];
static char fields[MAXF][256];
static size_t nf, width, rows;
static int bad, in_header;
static struct acc accs[MAXROWS];
static size_t naccs;
static const char *file;

static void on_field(void *s, size_t len, void *data)
{
	(void)data;
	if (nf < MAXF) {
		size_t l = len < 255 ? len : 255;
		memcpy(fields[nf], s, l);
		fields[nf][l] = '\0';
	}
	nf++;
}

static void on_row(int c, void *data)
{
	(void)c;
	(void)data;
	if (in_header) {
		size_t len = 0;
		for (size_t i = 0; i < nf && i < MAXF; i++)
			len += (size_t)snprintf(cur_header + len, sizeof(cur_header) - len, "%s%s",
						i ? "," : "", fields[i]);
		if (header[0] && strcmp(header, cur_header)) {
			fprintf(stderr, "%s: header differs:\n  %s\n  %s\n", file, header, cur_header);
			bad = 1;
		}
		strcpy(header, cur_header);
		width = nf;
		in_header = 0;
	} else {
		struct acc *a = NULL;
		if (nf != width) {
			fprintf(stderr, "%s: row %zu has %zu fields, header has %zu\n", file,
				rows + 1, nf, width);
			bad = 1;
		} else {
			for (size_t i = 0; i < naccs; i++)
				if (!strcmp(accs[i].point, fields[1]) &&
				    !strcmp(accs[i].stage, fields[2]))
					a = &accs[i];
			if (!a && naccs < MAXROWS) {
				a = &accs[naccs++];
				snprintf(a->point, sizeof(a->point), "%s", fields[1]);
				snprintf(a->stage, sizeof(a->stage), "%s", fields[2]);
			}
			for (int k = 0; a && k < 7; k++) {
				char *end;
				unsigned long long v = strtoull(fields[4 + k], &end, 10);
				if (*end) {
					fprintf(stderr, "%s: row %zu: '%s' is not a count\n", file,
						rows + 1, fields[4 + k]);
					bad = 1;
				}
				a->v[k] += v;
			}
		}
		rows++;
	}
	nf = 0;
}

int main(int argc, char **argv)
{
	struct csv_parser p;
	char buf[65536];
	size_t n;

	for (int f = 1; f < argc; f++) {
		FILE *fp = fopen(argv[f], "rb");
		file = argv[f];
		if (!fp) {
			perror(argv[f]);
			return 1;
		}
		csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL);
		in_header = 1;
		nf = 0;
		while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
			if (csv_parse(&p, buf, n, on_field, on_row, NULL) != n) {
				fprintf(stderr, "%s: %s\n", argv[f], csv_strerror(csv_error(&p)));
				return 1;
			}
		if (csv_fini(&p, on_field, on_row, NULL) != 0) {
			fprintf(stderr, "%s: %s\n", argv[f], csv_strerror(csv_error(&p)));
			return 1;
		}
		csv_free(&p);
		fclose(fp);
	}
	for (size_t i = 0; i < naccs; i++)
		printf("%s\t%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n", accs[i].point,
		       accs[i].stage, accs[i].v[0], accs[i].v[1], accs[i].v[2], accs[i].v[3],
		       accs[i].v[4], accs[i].v[5], accs[i].v[6]);
	printf("rows %zu\n", rows);
	return bad;
}
