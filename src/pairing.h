/*
 * pairing.h - the pairing engine: drained events in, per-stage statistics
 * and anomaly counters out.
 *
 * Data flow: producer -> ring -> drain -> [pairing] -> statistics (accum)
 * -> interval report -> CSV / summary.
 *
 * The drain thread feeds 16-byte events.  Spans are keyed by (point, seq)
 * in a fixed-capacity open-span table (span_table.h); each transition
 * from -> to becomes a sample of stage row (point, from, to), each finished
 * span a sample of the point's total row, each value event a sample of the
 * point's value row.  The stage samples of a span are recorded when the span
 * ends, together with its total, so they always land in the same interval
 * and a discarded span leaves nothing behind.
 *
 * Two threads, no locks.  Every row has two interval accumulators; the
 * drain thread writes only the current one.  pairing_flip() (drain thread,
 * O(1), no I/O, no formatting) hands the current buffer over and switches
 * to the other; the reporter thread then calls pairing_collect(), reads the
 * rows, and pairing_release() clears the finished buffer and lets the next
 * flip happen.  A flip attempted before the release fails harmlessly: the
 * drain thread keeps accumulating into its buffer, which simply covers a
 * longer interval.  Rows are only ever appended; the drain thread publishes
 * the row count with release ordering after a row is initialised.
 *
 * With outliers configured, every latency sample is also offered to its
 * row's "slowest N" set (outliers.h), kept per interval buffer and for
 * the lifetime exactly like the accumulators, with the span's seq and the
 * timestamp the transition started at.
 *
 * All memory is allocated by pairing_new(); the drain-thread functions never
 * allocate.  Accumulators live in anonymous memory and rely on all-zero
 * being an empty accumulator, so rows never used cost no resident memory
 * and a used one about three pages.
 */
#ifndef PERFMOND_PAIRING_H
#define PERFMOND_PAIRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfmon/layout.h>
#include "accum.h"
#include "outliers.h"

#define PAIRING_NONE UINT32_MAX

/* Largest max_stages accepted (rows cost 36 KB of address space each). */
#define PAIRING_MAX_STAGES (UINT32_C(1) << 20)

struct pairing_config {
	uint32_t max_open_spans;   /* open-span table capacity, >= 1 */
	uint32_t max_stages;       /* stage rows (and points), >= 1 */
	uint64_t stall_ticks;      /* stalled_sample_timeout in ticks; 0: no age sweep */
	uint64_t overhead_ticks;   /* cost of one stamp, in ticks */
	bool subtract_overhead;    /* subtract overhead_ticks from latency rows */
	/* Latency bounds (ticks, nondecreasing) at which every row counts its
	 * samples exactly (hist.h); fixed for the life of the engine. */
	const uint64_t *bounds_ticks;
	unsigned nbounds;
	uint32_t outliers;         /* slowest spans kept per row and interval; 0: none */
};

enum pairing_kind {
	PAIRING_STAGE = 0,   /* transition from -> to */
	PAIRING_TOTAL,       /* begin -> end of a span; carries the point's anomalies */
	PAIRING_VALUE,       /* value samples (PERFMON_VALUE_STEP) */
	PAIRING_OVERFLOW,    /* anomalies of points beyond max_stages; `to` is
			      * PERFMON_VALUE_STEP on the row for value samples */
};

/* Per-point anomaly counters (docs/pairing.md, "Anomaly counters"). */
struct pairing_anomalies {
	uint64_t abandoned;     /* re-begin, eviction from a full table, age sweep */
	uint64_t orphan;        /* step or end with no open span */
	uint64_t invalid;       /* timestamp going backwards; span discarded */
	uint64_t out_of_range;  /* sample dropped because the stage table was full */
};

/* What a finished interval covers; filled by pairing_collect(). */
struct pairing_interval {
	uint64_t start_tsc;       /* end of the previous interval (0 for the first) */
	uint64_t end_tsc;         /* now_tsc given to the flip */
	uint64_t overhead_ticks;  /* subtracted per stamp in this interval, 0 if off */
	uint32_t nstages;         /* rows existing at collection */
	uint32_t npoints;         /* points known at collection */
	uint32_t open_spans;      /* open at the flip */
	uint32_t peak_open;       /* most ever open at once, at the flip */
	uint64_t abandoned_by_age;/* spans swept as too old during the interval */
};

/*
 * One report row.  Pointers are valid from pairing_collect() to
 * pairing_release() and are never NULL: a row with nothing of a kind points
 * at an empty accumulator or zero counters.
 */
struct pairing_row {
	enum pairing_kind kind;
	uint32_t point;                  /* point id (0 for the overflow row) */
	uint8_t from, to;                /* PAIRING_STAGE: the transition */
	uint32_t stage;                  /* row index, PAIRING_NONE for rows without samples */
	const struct accum *interval;    /* the finished interval */
	const struct accum *lifetime;    /* every interval so far, this one included */
	const struct pairing_anomalies *anomalies;          /* interval deltas */
	const struct pairing_anomalies *anomalies_lifetime;
	/* The slowest samples of a latency row (interval, lifetime); NULL
	 * when outliers are off or the row is not a latency row. */
	const struct outlier_set *outliers;
	const struct outlier_set *outliers_lifetime;
};

struct pairing;

/*
 * Create a pairing engine.  Every table and accumulator it will ever use is
 * allocated here.  Returns NULL with errno EINVAL (bad config) or ENOMEM.
 */
struct pairing *pairing_new(const struct pairing_config *cfg);

/* The bounds latency rows count exactly at, as given to pairing_new(). */
const struct hist_bounds *pairing_bounds(const struct pairing *p);
/* The bytes pairing_new(cfg) maps and allocates (its accumulators are
 * mapped up front and become resident as rows are used). */
size_t pairing_memory_bytes(const struct pairing_config *cfg);

/* Free an engine.  NULL is accepted. */
void pairing_free(struct pairing *p);

/*
 * Drain thread: change what can change while running (stall timeout and
 * overhead subtraction).  Returns -EBUSY, changing nothing, if the
 * capacities differ from those the engine was created with.
 */
int pairing_reconfigure(struct pairing *p, const struct pairing_config *cfg);

/* Drain thread: pair and accumulate n events. */
void pairing_feed(struct pairing *p, const struct perfmon_event *ev, size_t n);

/*
 * Drain thread: abandon every span untouched for more than stall_ticks at
 * now_tsc.  Costs O(spans swept).  Returns how many were swept.
 */
size_t pairing_sweep(struct pairing *p, uint64_t now_tsc);

/*
 * Drain thread: end the current interval at now_tsc and hand it to the
 * reporter.  O(1): a few loads and stores, whatever the number of rows.
 * Returns false, changing nothing, while the reporter still holds the
 * previous interval.
 */
bool pairing_flip(struct pairing *p, uint64_t now_tsc);

/*
 * Drain thread: whether the reporter has released the previous interval,
 * so that pairing_flip() will succeed (only the drain thread can make it
 * fail again).  What the drain thread writes after a true answer and
 * before the flip, the reporter sees once it collects that interval.
 */
bool pairing_flip_ready(const struct pairing *p);

/*
 * Drain thread (or whoever owns the drain side once it has stopped):
 * count every span still open as abandoned on its point, in the current
 * interval, and empty the table.  Shutdown calls this before the last
 * flip so that no begun span leaves without a trace.  Returns how many.
 */
size_t pairing_abandon_open(struct pairing *p);

/*
 * Reporter thread: take the interval finished by the last flip, merge it
 * into the lifetime figures and describe it in *ret.  Returns false when no
 * interval is waiting.  Calling it again before pairing_release() returns
 * the same interval without merging twice.
 */
bool pairing_collect(struct pairing *p, struct pairing_interval *ret);

/* Reporter thread: the most rows pairing_rows() can return. */
uint32_t pairing_max_rows(const struct pairing *p);

/*
 * Reporter thread, after pairing_collect(): fill `rows` (room for `cap`)
 * in report order: points ascending; within a point its transitions by
 * (from, to), then the total row, then the value row; the overflow rows
 * last (latency, then values: value samples that found the stage table
 * full are counted on their own overflow row, to == PERFMON_VALUE_STEP).  A point with anomalies but no finished span gets a total row with
 * no samples.  Rows of the lifetime that saw nothing in this interval are
 * included: whether to print them is the report's choice.  Returns the
 * number of rows (at most cap; pairing_max_rows() is always enough).
 */
uint32_t pairing_rows(struct pairing *p, struct pairing_row *rows, uint32_t cap);

/*
 * Reporter thread, after pairing_collect(): the row of the given kind
 * (from/to only matter for PAIRING_STAGE; point is ignored for
 * PAIRING_OVERFLOW).  Linear in the number of rows.  Returns false when
 * the row does not exist.
 */
bool pairing_find_row(struct pairing *p, enum pairing_kind kind, uint32_t point,
		      uint8_t from, uint8_t to, struct pairing_row *ret);

/*
 * Reporter thread: clear the finished interval and let the next flip
 * happen.  Merges first if pairing_collect() was not called, so nothing is
 * lost.  Does nothing when no interval is held.
 */
void pairing_release(struct pairing *p);

/* Capacity of every outlier set (the configured outliers; 0: off). */
uint32_t pairing_outliers_cap(const struct pairing *p);

/*
 * Reporter thread, after pairing_collect(): give the collected interval's
 * slowest samples (and those of them the lifetime sets took) their UTC
 * start, `realtime_of(ctx, tsc)`, once: the outliers file and the summary
 * then print the same instant for the same span.
 */
void pairing_date_outliers(struct pairing *p,
			   uint64_t (*realtime_of)(const void *ctx, uint64_t tsc), const void *ctx);

/* Drain thread: open spans now (other threads: pairing_interval). */
uint32_t pairing_open_spans(const struct pairing *p);

/* Drain thread: most spans ever open at once. */
uint32_t pairing_peak_open(const struct pairing *p);

/* True when any counter in *a is non-zero. */
static inline bool pairing_anomalies_any(const struct pairing_anomalies *a)
{
	return (a->abandoned | a->orphan | a->invalid | a->out_of_range) != 0;
}

#endif /* PERFMOND_PAIRING_H */
