/*
 * status_msg.c - format and parse the control channel's `status` answer
 * (see status_msg.h).
 */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status_msg.h"

/* A path on one line. */
static void one_line(char *dst, size_t n, const char *src)
{
	size_t i;
	for (i = 0; i + 1 < n && src[i]; i++)
		dst[i] = src[i] == '\n' ? '?' : src[i];
	dst[i] = '\0';
}

char *status_msg_format(char *buf, size_t n, const struct status_msg *s)
{
	char csv[STATUS_MSG_PATH_SIZE], summary[STATUS_MSG_PATH_SIZE],
	     textfile[STATUS_MSG_PATH_SIZE];

	one_line(csv, sizeof(csv), s->csv);
	one_line(summary, sizeof(summary), s->summary);
	one_line(textfile, sizeof(textfile), s->textfile);
	snprintf(buf, n,
		 "pid %d\nstart_ns %llu\nheartbeat_age_ns %llu\ndrained %llu\n"
		 "dropped %llu\nstalled %llu\nmisordered %llu\nopen_spans %llu\nfullest %u\n"
		 "head %llu\ntail %llu\ncapacity %llu\nmax_names %u\ntsc_hz %.3f\n"
		 "tsc_invariant %d\noverhead_ticks %llu\nflush_interval_ns %llu\n"
		 "csv_flush_interval_ns %llu\ncsv %s\nsummary %s\ntextfile %s\n",
		 s->pid, (unsigned long long)s->start_ns,
		 (unsigned long long)s->heartbeat_age_ns, (unsigned long long)s->drained,
		 (unsigned long long)s->dropped, (unsigned long long)s->stalled,
		 (unsigned long long)s->misordered, (unsigned long long)s->open_spans, s->fullest,
		 (unsigned long long)s->head, (unsigned long long)s->tail,
		 (unsigned long long)s->capacity, s->max_names, s->tsc_hz,
		 s->tsc_invariant ? 1 : 0, (unsigned long long)s->overhead_ticks,
		 (unsigned long long)s->flush_interval_ns,
		 (unsigned long long)s->csv_flush_interval_ns, csv, summary, textfile);
	return buf;
}

/* The value of `key` in `body`, into buf; NULL when absent. */
static const char *value(const char *body, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);

	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			const char *v = p + kl + 1, *e = strchr(v, '\n');
			size_t l = e ? (size_t)(e - v) : strlen(v);
			if (l >= n)
				l = n - 1;
			memcpy(buf, v, l);
			buf[l] = '\0';
			return buf;
		}
	}
	return NULL;
}

static uint64_t u64(const char *body, const char *key)
{
	char v[32];
	return value(body, key, v, sizeof(v)) ? strtoull(v, NULL, 10) : 0;
}

void status_msg_parse(const char *body, struct status_msg *s)
{
	char v[32];

	memset(s, 0, sizeof(*s));
	s->pid = (int)u64(body, "pid");
	s->start_ns = u64(body, "start_ns");
	s->heartbeat_age_ns = u64(body, "heartbeat_age_ns");
	s->drained = u64(body, "drained");
	s->dropped = u64(body, "dropped");
	s->stalled = u64(body, "stalled");
	s->misordered = u64(body, "misordered");
	s->open_spans = u64(body, "open_spans");
	s->has_fullest = value(body, "head", v, sizeof(v)) != NULL;
	s->fullest = (uint32_t)u64(body, "fullest");
	s->head = u64(body, "head");
	s->tail = u64(body, "tail");
	s->capacity = u64(body, "capacity");
	s->max_names = (uint32_t)u64(body, "max_names");
	s->tsc_invariant = u64(body, "tsc_invariant") != 0;
	s->overhead_ticks = u64(body, "overhead_ticks");
	s->flush_interval_ns = u64(body, "flush_interval_ns");
	s->csv_flush_interval_ns = u64(body, "csv_flush_interval_ns");
	if (value(body, "tsc_hz", v, sizeof(v)))
		s->tsc_hz = strtod(v, NULL);
	if (!value(body, "csv", s->csv, sizeof(s->csv)))
		s->csv[0] = '\0';
	if (!value(body, "summary", s->summary, sizeof(s->summary)))
		s->summary[0] = '\0';
	if (!value(body, "textfile", s->textfile, sizeof(s->textfile)))
		s->textfile[0] = '\0';
}
