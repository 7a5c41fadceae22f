/*
 * status_msg.h - the `status` answer of the control channel, one
 * definition for both ends: perfmond fills and formats it, perfmonctl
 * parses it (docs/control-channel.md lists the keys).
 *
 * The text is one "key value" per line; a path is the rest of its line,
 * a newline in it sent as '?'.  Unknown keys are ignored and missing ones
 * read as 0, so either end may be a version apart.
 */
#ifndef PERFMOND_STATUS_MSG_H
#define PERFMOND_STATUS_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


#define STATUS_MSG_PATH_SIZE 4096   /* a whole configured path */

struct status_msg {
	int pid;
	uint64_t start_ns;            /* CLOCK_REALTIME */
	uint64_t heartbeat_age_ns;    /* since the drain thread last published */
	uint64_t drained, dropped, stalled, open_spans;
	uint64_t misordered;          /* span events paired out of time order */
	/* the fullest sub-ring: its index, head and the collector's read
	 * position in it */
	uint32_t fullest;
	uint64_t head, tail;
	bool has_fullest;             /* parse: the answer named it */
	uint64_t capacity;            /* slots per sub-ring */
	uint32_t max_names;
	double tsc_hz;
	bool tsc_invariant;
	uint64_t overhead_ticks;
	uint64_t flush_interval_ns, csv_flush_interval_ns;   /* 0: unknown / every interval */
	char csv[STATUS_MSG_PATH_SIZE], summary[STATUS_MSG_PATH_SIZE],
	     textfile[STATUS_MSG_PATH_SIZE];
};

/* The answer for `s` into buf (n bytes, cut if smaller).  Returns buf. */
char *status_msg_format(char *buf, size_t n, const struct status_msg *s);

/* Fill `s` from an answer `body`. */
void status_msg_parse(const char *body, struct status_msg *s);

#endif /* PERFMOND_STATUS_MSG_H */
