/*
 * capture.h - the event capture file: one definition of its layout,
 * encoders for the daemon's recorder and a validating decoder for
 * perfmonctl.  The layout is described in docs/capture-format.md.
 *
 * Flow: drain -> recorder (hand-over buffer, writer thread) -> [capture
 * encoding] -> FILE -> [capture decoding] -> perfmonctl dump / export.
 *
 * The decoder treats the file as hostile: every length and count is
 * checked against the bytes present before anything is read, and a file
 * that does not add up is refused with a message saying what is wrong and
 * at which offset.
 */
#ifndef PERFMOND_CAPTURE_H
#define PERFMOND_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfmon/layout.h>

#define CAPTURE_VERSION        2u
#define CAPTURE_HEADER_SIZE    128u        /* what this version writes */
#define CAPTURE_HEADER_SIZE_V1 64u         /* version 1: no pairing settings */
#define CAPTURE_TRAILER_SIZE   64u
#define CAPTURE_EVENT_SIZE     20u
#define CAPTURE_NAME_FIXED     6u          /* point, step, length */
#define CAPTURE_LABEL_MAX      (PERFMON_LABEL_SIZE - 1)
#define CAPTURE_MAX_NAMES      65536u
#define CAPTURE_MAX_RINGS      65536u

/* Header flags. */
#define CAPTURE_FLAG_INVARIANT  0x1u      /* the TSC is invariant */
#define CAPTURE_FLAG_MONOTONIC  0x2u      /* timestamps are CLOCK_MONOTONIC ns */

/* Trailer flags: why the recording stopped. */
#define CAPTURE_END_CAPPED      0x1u      /* the size cap was reached */
#define CAPTURE_END_SHUTDOWN    0x2u      /* stopped early by the daemon's shutdown */
#define CAPTURE_END_WRITE_ERROR 0x4u      /* a write to the file failed */

struct capture_header {
	uint64_t tsc_hz_milli;       /* ticks per second x 1000 */
	uint64_t start_tsc;
	uint64_t start_realtime_ns;  /* UTC, ns since the epoch, at start_tsc */
	uint32_t name_count;
	uint32_t flags;              /* CAPTURE_FLAG_* */
	uint32_t ring_count;
	/* The daemon's pairing settings when the recording started, so that
	 * a replay applies its rules (0: unknown, as in a version 1 file). */
	uint32_t max_open_spans;     /* open-span table capacity */
	uint32_t max_stages;         /* statistics rows */
	uint64_t stall_ticks;        /* stalled_sample_timeout in ticks; 0: no age sweep */
	uint64_t flush_ticks;        /* flush_interval in ticks */
	uint64_t overhead_ticks;     /* subtracted per transition; 0: not subtracting */
};

struct capture_name {
	uint32_t point;
	uint8_t step;
	uint8_t len;                          /* label bytes, 1..CAPTURE_LABEL_MAX */
	char label[PERFMON_LABEL_SIZE];       /* raw bytes, NUL added after len */
	bool shared;     /* a point's label (step 0) another point shows too */
};

struct capture_event {
	uint64_t tsc;        /* timestamp, or the value of a value sample */
	uint32_t point;
	uint32_t event;      /* PERFMON_EVENT(step, seq) */
	uint16_t ring;       /* ring (CPU sub-ring) index; 0 with one ring */
};

struct capture_trailer {
	uint64_t events;
	uint64_t lost_buffer;  /* found the hand-over buffer full */
	uint64_t lost_cap;     /* drained after the size cap was reached */
	uint64_t dropped;      /* overwritten in the ring during the recording */
	uint64_t end_tsc;
	uint32_t flags;        /* CAPTURE_END_* */
	uint32_t name_count;   /* name entries between the events and the trailer */
};

/* ---- encoding (daemon) ------------------------------------------------ */

/* The header (this version's) into buf. */
void capture_encode_header(uint8_t buf[CAPTURE_HEADER_SIZE], const struct capture_header *h);

/* One name-table entry into buf (room for CAPTURE_NAME_FIXED +
 * CAPTURE_LABEL_MAX); returns its size, 0 when the label is empty or too
 * long (such a label is left out). */
size_t capture_encode_name(uint8_t *buf, uint32_t point, uint8_t step, const char *label);

/* One 20-byte event record into buf. */
void capture_encode_event(uint8_t buf[CAPTURE_EVENT_SIZE], const struct capture_event *e);

/* The 64-byte trailer into buf. */
void capture_encode_trailer(uint8_t buf[CAPTURE_TRAILER_SIZE], const struct capture_trailer *t);

/* ---- decoding (perfmonctl) ------------------------------------------- */

/* A decoded capture.  Arrays are owned; free with capture_free(). */
struct capture {
	struct capture_header h;
	uint32_t version;
	struct capture_name *names;     /* h.name_count, sorted by (point, step) */
	struct capture_event *events;
	size_t nevents;
	bool has_trailer;               /* false: the recording was cut short */
	struct capture_trailer t;
	size_t partial_bytes;           /* without a trailer: bytes of a cut last record */
};

/*
 * Decode `len` bytes at `buf`.  Returns 0, or -EPROTO (not a capture, an
 * unknown version, inconsistent sizes or counts) / -ENOMEM with `err`
 * saying what and at which offset; *ret untouched on failure.
 */
int capture_parse(const uint8_t *buf, size_t len, struct capture *ret, char *err,
		  size_t errlen);

/*
 * Read and decode the file at `path`, refusing one larger than
 * `max_bytes`.  Errors as capture_parse() plus -errno of open/read (and
 * -EFBIG), with `err` naming the path.
 */
int capture_load(const char *path, uint64_t max_bytes, struct capture *ret, char *err,
		 size_t errlen);

void capture_free(struct capture *c);

/* The label of (point, step) in the capture's name table, or NULL.  The
 * bytes are as in the file: escape them before printing. */
const char *capture_label(const struct capture *c, uint32_t point, uint8_t step);

/* The label of `point` (its step-0 name), or NULL; *ret_shared tells
 * whether another point shows the same one (published by two points, or
 * one the reports make up for another point, as names.h's rule has it):
 * dump and export then add "#point", as perfmond's reports do. */
const char *capture_point_label(const struct capture *c, uint32_t point, bool *ret_shared);

/* Ticks per second (0 when the file says nothing usable). */
double capture_tsc_hz(const struct capture *c);

/* The UTC time, ns since the epoch, of timestamp `tsc`. */
uint64_t capture_realtime_of(const struct capture *c, uint64_t tsc);

#endif /* PERFMOND_CAPTURE_H */
