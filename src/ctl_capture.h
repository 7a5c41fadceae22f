/*
 * ctl_capture.h - perfmonctl's commands on event captures: record (ask
 * the running daemon for one), dump (every event decoded) and export
 * (Chrome Trace Event JSON).  The file format is docs/capture-format.md.
 *
 * Flow: FILE -> capture_load (capture.c, validating) -> [replay: what
 * pairing makes of each event] -> table / JSON / trace.
 */
#ifndef PERFMOND_CTL_CAPTURE_H
#define PERFMOND_CTL_CAPTURE_H

#include <stdint.h>
#include <stdio.h>

#include "capture.h"

/* Largest capture dump and export read. */
#define CTL_CAPTURE_MAX_BYTES (UINT64_C(1) << 30)

/* What the replay made of an event. */
enum ctl_outcome {
	CTL_OUT_OPEN = 0,     /* span still open when the capture ends */
	CTL_OUT_VALUE,        /* a value sample */
	CTL_OUT_BEGIN,        /* the begin of a span that ended in the capture */
	CTL_OUT_PAIRED,       /* a step or end that closed a stage */
	CTL_OUT_ORPHAN,       /* a step or end without an open span */
	CTL_OUT_ABANDONED,    /* begun again, evicted from a full table or too old */
	CTL_OUT_INVALID,      /* the span went back in time and was discarded */
	CTL_OUT_BEFORE_START, /* a step or end of a span begun before the recording */
	CTL_OUT_OUT_OF_RANGE, /* paired, but a sample found no statistics row */
	CTL_OUT_COUNT
};

/* Per event, after ctl_capture_replay(). */
struct ctl_replayed {
	uint8_t outcome;      /* enum ctl_outcome */
	uint8_t from;         /* step the closed stage started at (PAIRED, OUT_OF_RANGE) */
	uint32_t next;        /* internal: the next event of the same span */
	uint64_t ticks;       /* the closed stage's duration as the daemon records it
			       * (less the overhead it subtracts) */
	uint64_t total;       /* begin -> end, the same way (on a closing end) */
	uint64_t stage_tsc;   /* the closed stage's start: the span's previous event */
	uint64_t start_tsc;   /* the span's begin (on a closing end) */
};

/* Replay the pairing rules over the capture's events with the daemon's
 * settings the capture carries (docs/capture-format.md, "What dump adds"):
 * an array of c->nevents results (free it), or NULL when out of memory. */
struct ctl_replayed *ctl_capture_replay(const struct capture *c);

/* "paired", "orphan", ... */
const char *ctl_outcome_name(enum ctl_outcome o);

int ctl_record_cmd(int argc, char **argv, FILE *out, FILE *err);
int ctl_dump_cmd(int argc, char **argv, FILE *out, FILE *err);
int ctl_export_cmd(int argc, char **argv, FILE *out, FILE *err);

#endif
