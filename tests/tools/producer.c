/*
 * producer.c - a test producer process with exact counts.
 *
 *   producer NAME POINT SPANS [options]
 *     --steps          two intermediate steps per span (0 -> 1 -> 2 -> end)
 *     --seq-base N     seqs start at N (default 0)
 *     --leave-open     stamp begins only
 *     --label L        publish L as the point's label (steps as L.s1, L.s2)
 *     --values         value samples (the span count is the sample count)
 *     --value-list L   value samples exactly as listed (comma-separated
 *                      uint64), once per round; SPANS is ignored
 *     --seconds S      keep going for S seconds (SPANS per round), then exit
 *     --pause-us U     sleep U microseconds between rounds of 100 spans
 *     --slow-every K   every K-th span (i % K == K - 1) is slow: it sleeps
 *     --slow-us U      U microseconds (default 2000) between begin and end
 *
 * Prints "spans N" (events stamped = N * stamps per span) when done.
 */
#include "build-config.h"

#include <perfmon.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long spans, done = 0, pause_us = 0, slow_every = 0, slow_us = 2000;
	uint32_t point, seq_base = 0;
	int steps = 0, leave_open = 0, values = 0, e;
	const char *label = NULL, *value_list = NULL;
	double seconds = 0, t0;

	if (argc < 4) {
		fprintf(stderr, "usage: producer NAME POINT SPANS [options]\n");
		return 64;
	}
	point = (uint32_t)strtoul(argv[2], NULL, 0);
	spans = strtoul(argv[3], NULL, 0);
	for (int i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "--steps"))
			steps = 1;
		else if (!strcmp(argv[i], "--leave-open"))
			leave_open = 1;
		else if (!strcmp(argv[i], "--values"))
			values = 1;
		else if (!strcmp(argv[i], "--value-list") && i + 1 < argc)
			value_list = argv[++i];
		else if (!strcmp(argv[i], "--seq-base") && i + 1 < argc)
			seq_base = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--label") && i + 1 < argc)
			label = argv[++i];
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--slow-every") && i + 1 < argc)
			slow_every = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--slow-us") && i + 1 < argc)
			slow_us = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--pause-us") && i + 1 < argc)
			pause_us = strtoul(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "producer: unknown option %s\n", argv[i]);
			return 64;
		}
	}
	if (strcmp(argv[1], "-") != 0 && (e = perfmon_attach(argv[1])) < 0) {
		fprintf(stderr, "producer: attach %s: %s\n", argv[1], strerror(-e));
		return 1;
	}
	if (label) {
		char l[80];
		perfmon_name(point, 0, label);
		snprintf(l, sizeof(l), "%s.s1", label);
		perfmon_name(point, 1, l);
		snprintf(l, sizeof(l), "%s.s2", label);
		perfmon_name(point, 2, l);
	}
	if (value_list) {
		for (const char *v = value_list; *v;) {
			char *end;
			unsigned long long x = strtoull(v, &end, 10);

			if (end == v || (*end != ',' && *end != '\0')) {
				fprintf(stderr, "producer: bad --value-list at '%s'\n", v);
				return 64;
			}
			perfmon_value(point, x);
			done++;
			v = *end == ',' ? end + 1 : end;
		}
		printf("spans %lu\n", done);
		return 0;
	}
	t0 = now_s();
	do {
		for (unsigned long i = 0; i < spans; i++, done++) {
			uint32_t seq = seq_base + (uint32_t)i;
			if (values) {
				perfmon_value(point, i);
				continue;
			}
			perfmon_begin(point, seq);
			if (leave_open)
				continue;
			if (slow_every && i % slow_every == slow_every - 1) {
				struct timespec ts = { (time_t)(slow_us / 1000000),
						       (long)(slow_us % 1000000) * 1000 };
				nanosleep(&ts, NULL);
			}
			if (steps) {
				perfmon_step(point, 1, seq);
				perfmon_step(point, 2, seq);
			}
			perfmon_end(point, seq);
			if (pause_us && i % 100 == 99) {
				struct timespec ts = { 0, (long)pause_us * 1000 };
				nanosleep(&ts, NULL);
			}
		}
	} while (seconds > 0 && now_s() - t0 < seconds);
	printf("spans %lu\n", done);
	return 0;
}
