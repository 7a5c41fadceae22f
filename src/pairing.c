/*
 * pairing.c - the span state machine, the stage and point tables, and the
 * lock-free hand-over of finished intervals to the reporter.
 *
 * Data flow: drain -> [pairing] -> statistics (accum) -> interval report.
 * See pairing.h for the threading contract.
 *
 * Stage rows are keyed by (point << 16) | (from << 8) | to.  A real
 * transition always has to != 0 (steps 1..0xFD or the end, 0xFF), so the
 * total row (point, 0, 0) cannot collide with one; the value row is
 * (point, 0xFE, 0xFE), and no transition starts at 0xFE.  Rows and points
 * are appended to dense arrays in order of first use and never removed;
 * small open-addressing maps (no deletion, load <= 1/2) find them.
 *
 * Span state machine (per event; docs/pairing.md tells it to users):
 *   begin   absent: open (evicting the least recently touched span if the
 *           table is full: abandoned for the evicted span's point);
 *           present: abandoned, and the span restarts from this begin.
 *   step    absent: orphan.  Earlier than the previous event: invalid, the
 *           span is discarded.  Else the transition is deferred.
 *   end     as a step, then every deferred transition, the last one
 *           (last step -> end, if there were steps) and the total are
 *           recorded, and the span is closed.
 *   value   a sample of the value row; never paired.
 *
 * Deferral holds up to SPAN_DEFERRED_MAX (10) transitions per span.  Past
 * that (a span with more than 10 steps), further transitions are recorded
 * as they happen; such a span can then leave stage samples behind if it is
 * later discarded, and its stages and total can fall in different intervals
 * if a flip comes between.
 */
#include "build-config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pairing.h"
#include "span_table.h"

/* Hand-over states of the finished buffer. */
enum {
	HANDOFF_FREE = 0,    /* drain thread may flip */
	HANDOFF_READY,       /* flipped; the reporter has not collected yet */
	HANDOFF_COLLECTED,   /* merged into lifetime; awaiting release */
};

/* A row's identity; immutable once published.  Its accumulators live
 * apart, see row_accum(). */
struct stage_row {
	uint64_t key;
	uint32_t point;
	uint32_t point_index;    /* PAIRING_NONE when the point table was full */
	uint8_t from, to;
	uint8_t kind;            /* enum pairing_kind */
};

/*
 * Accumulator storage.  Each row has three: interval buffers 0 and 1 (the
 * drain thread writes the current one) and the lifetime (reporter thread
 * only).  Each accumulator starts near the beginning of its own page, so
 * the part a sample touches (the header and a histogram band a few hundred
 * bytes wide) normally lies in one page: a used accumulator costs one
 * resident page instead of the 1.3 of a packed array (measured: 12 MB
 * instead of 15 MB with all 1024 default rows in use).  Starting them all
 * at the same page offset would pile every hot header into a few cache
 * sets and cost the drain loop about 10 %, so row i's accumulators are
 * shifted by (i mod ACCUM_COLORS) cache lines; the stride leaves room for
 * the shift.  Each kind has a region of its own (interval buffers 0 and 1,
 * lifetime), so a row's accumulator lies at the same offset in each.
 */
#define ACCUM_COLORS  32
#define ACCUM_STRIDE  ((sizeof(struct accum) + (ACCUM_COLORS - 1) * 64 + 4095) / 4096 * 4096)
#define ACCUM_LIFETIME 2

struct point_rec {
	uint32_t point;
	struct pairing_anomalies cnt[2];
	struct pairing_anomalies lifetime;
};

struct stage_slot {
	uint64_t key;
	uint32_t row1;           /* row index + 1; 0: empty */
	uint32_t pad;
};

struct point_slot {
	uint32_t point;
	uint32_t idx;            /* PAIRING_NONE: empty */
};

struct sort_item {
	uint64_t key;
	uint32_t ref;            /* stage index, or POINT_REF | point index */
};
#define POINT_REF (UINT32_C(1) << 31)

struct pairing {
	/* ---- drain thread ---- */
	struct span_table *spans;
	struct stage_row *stages;
	char *accums;                /* mmap'd, accums_bytes long: 3 regions */
	size_t accums_bytes;
	size_t accums_region;        /* bytes of one region: max_stages rows */
	char *cur_accums;            /* the region of interval buffer `cur` */
	uint32_t *accum_line;        /* per row: accum_offset(row) / 64 */
	char *outs;                  /* outlier sets, 3 per row like accums; NULL: off */
	size_t outs_bytes;
	size_t out_stride;           /* bytes per set */
	uint32_t nout;               /* capacity of each set; 0: off */
	struct point_rec *points;
	struct stage_slot *stage_map;
	struct point_slot *point_map;
	uint32_t stage_shift;        /* 64 - log2(map slots) */
	uint32_t stage_mask;         /* map slots - 1 */
	uint32_t point_shift;
	uint32_t point_mask;
	uint32_t max_stages;
	uint32_t max_open_spans;
	uint32_t nstages;            /* drain's own count */
	uint32_t npoints;
	uint32_t cur;                /* interval buffer being written */
	uint64_t stall_ticks;
	uint64_t overhead;           /* subtracted per stamp; 0 when off */
	uint64_t last_flip_tsc;
	uint64_t swept;              /* spans swept since the last flip */
	struct pairing_anomalies overflow[2];
	struct pairing_anomalies overflow_value[2];  /* value samples beyond max_stages */
	struct hist_bounds bounds;   /* exact counts of latency rows */

	/* ---- published by the drain thread ---- */
	_Atomic uint32_t nstages_pub;  /* release after the row is initialised */
	_Atomic uint32_t npoints_pub;
	_Atomic uint32_t handoff;      /* HANDOFF_* */
	uint32_t done;                 /* finished buffer; valid while handoff != FREE */
	struct pairing_interval iv;    /* written before handoff becomes READY */

	/* ---- reporter thread ---- */
	uint32_t snap_nstages;
	uint32_t snap_npoints;
	struct pairing_anomalies overflow_lifetime;
	struct pairing_anomalies overflow_value_lifetime;
	struct sort_item *sort;        /* 2 * max_stages + 1 */
	uint8_t *has_total;            /* max_stages */
};

static const struct accum empty_accum;
static const struct pairing_anomalies no_anomalies;

/* Fibonacci hashing: one multiply, the top bits index the map.  Row keys
 * are small structured integers, which this spreads well enough at a load
 * factor of one half. */
static inline uint32_t fib_hash(uint64_t key, uint32_t shift)
{
	return (uint32_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> shift);
}

/* Where row i's accumulator lies in each of the three regions. */
static inline size_t accum_offset(uint32_t i)
{
	return (size_t)i * ACCUM_STRIDE + i % ACCUM_COLORS * 64;
}

/* Accumulator `which` (interval buffer 0 or 1, or ACCUM_LIFETIME) of row i. */
static inline struct accum *row_accum(const struct pairing *p, uint32_t i, unsigned which)
{
	return (struct accum *)(p->accums + which * p->accums_region + accum_offset(i));
}

/* Row i's accumulator in the interval buffer being written.  Its offset is
 * kept per row: a load costs the drain loop fewer instructions than the
 * multiply and the colour. */
static inline struct accum *cur_accum(const struct pairing *p, uint32_t i)
{
	return (struct accum *)(p->cur_accums + (size_t)p->accum_line[i] * 64);
}

/* Outlier set `which` (as for row_accum) of row i; outliers must be on. */
static inline struct outlier_set *row_outliers(const struct pairing *p, uint32_t i,
					       unsigned which)
{
	return (struct outlier_set *)(p->outs + ((size_t)i * 3 + which) * p->out_stride);
}

static inline uint64_t row_key(uint32_t point, uint8_t from, uint8_t to)
{
	return ((uint64_t)point << 16) | ((uint32_t)from << 8) | to;
}

static uint32_t map_shift(uint32_t capacity, uint32_t *ret_slots)
{
	uint64_t n = 2;
	uint32_t bits = 1;

	while (n < 2 * (uint64_t)capacity) {
		n <<= 1;
		bits++;
	}
	*ret_slots = (uint32_t)n;
	return 64 - bits;
}

static bool config_valid(const struct pairing_config *cfg)
{
	return cfg->max_open_spans >= 1 && cfg->max_open_spans <= SPAN_TABLE_MAX_CAPACITY &&
	       cfg->max_stages >= 1 && cfg->max_stages <= PAIRING_MAX_STAGES &&
	       cfg->outliers <= OUTLIERS_MAX;
}

struct pairing *pairing_new(const struct pairing_config *cfg)
{
	struct pairing *p;
	uint32_t nslots, i;

	if (!config_valid(cfg)) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		goto error;
	p->max_stages = cfg->max_stages;
	p->max_open_spans = cfg->max_open_spans;
	p->spans = span_table_new(cfg->max_open_spans);
	if (!p->spans)
		goto error;
	/*
	 * Accumulators come straight from mmap: zero pages that stay
	 * non-resident until a row is first used (all-zero is an empty accum).
	 * calloc would give the same only when it happens to use mmap itself;
	 * from the heap it clears, and so touches, every byte.  Huge pages
	 * (MADV_HUGEPAGE, taken: 18 MB of them in bench_engine) would undo
	 * that and bought nothing: pairing at random 47.6 and 48.3 ticks an
	 * event against 47.8 and 48.7 without, so the accumulators' misses
	 * are not the TLB's.
	 */
	p->accums_region = (size_t)cfg->max_stages * ACCUM_STRIDE;
	p->accums_bytes = 3 * p->accums_region;
	p->accums = mmap(NULL, p->accums_bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->accums == MAP_FAILED) {
		p->accums = NULL;
		goto error;
	}
	p->cur_accums = p->accums;
	if (cfg->outliers) {
		/* Zero pages too: an empty set is n = 0. */
		p->nout = cfg->outliers;
		p->out_stride = outliers_set_stride(cfg->outliers);
		p->outs_bytes = (size_t)cfg->max_stages * 3 * p->out_stride;
		p->outs = mmap(NULL, p->outs_bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p->outs == MAP_FAILED) {
			p->outs = NULL;
			goto error;
		}
	}
	p->stages = calloc(cfg->max_stages, sizeof(*p->stages));
	p->points = calloc(cfg->max_stages, sizeof(*p->points));
	p->sort = calloc(2 * (size_t)cfg->max_stages + 1, sizeof(*p->sort));
	p->has_total = calloc(cfg->max_stages, 1);
	p->accum_line = malloc(cfg->max_stages * sizeof(*p->accum_line));
	if (!p->stages || !p->points || !p->sort || !p->has_total || !p->accum_line)
		goto error;
	for (i = 0; i < cfg->max_stages; i++)
		p->accum_line[i] = (uint32_t)(accum_offset(i) / 64);

	p->stage_shift = map_shift(cfg->max_stages, &nslots);
	p->stage_mask = nslots - 1;
	p->stage_map = calloc(nslots, sizeof(*p->stage_map));
	if (!p->stage_map)
		goto error;

	p->point_shift = map_shift(cfg->max_stages, &nslots);
	p->point_mask = nslots - 1;
	p->point_map = malloc((size_t)nslots * sizeof(*p->point_map));
	if (!p->point_map)
		goto error;
	for (i = 0; i < nslots; i++)
		p->point_map[i].idx = PAIRING_NONE;

	p->stall_ticks = cfg->stall_ticks;
	p->overhead = cfg->subtract_overhead ? cfg->overhead_ticks : 0;
	hist_bounds_init(&p->bounds, cfg->bounds_ticks, cfg->bounds_ticks ? cfg->nbounds : 0);
	atomic_init(&p->nstages_pub, 0);
	atomic_init(&p->npoints_pub, 0);
	atomic_init(&p->handoff, HANDOFF_FREE);
	return p;

error:
	pairing_free(p);
	errno = ENOMEM;
	return NULL;
}

void pairing_free(struct pairing *p)
{
	if (!p)
		return;
	span_table_free(p->spans);
	if (p->accums)
		munmap(p->accums, p->accums_bytes);
	if (p->outs)
		munmap(p->outs, p->outs_bytes);
	free(p->stages);
	free(p->points);
	free(p->sort);
	free(p->has_total);
	free(p->accum_line);
	free(p->stage_map);
	free(p->point_map);
	free(p);
}

int pairing_reconfigure(struct pairing *p, const struct pairing_config *cfg)
{
	if (cfg->max_open_spans != p->max_open_spans || cfg->max_stages != p->max_stages ||
	    cfg->outliers != p->nout)
		return -EBUSY;
	p->stall_ticks = cfg->stall_ticks;
	p->overhead = cfg->subtract_overhead ? cfg->overhead_ticks : 0;
	return 0;
}

/* ---- drain thread: tables ------------------------------------------- */

/* Index of `point`'s record, creating it if there is room; PAIRING_NONE
 * when the point table is full (its anomalies then go to overflow). */
static uint32_t point_get(struct pairing *p, uint32_t point)
{
	uint32_t i = fib_hash(point, p->point_shift);
	struct point_rec *r;

	for (;;) {
		struct point_slot *s = &p->point_map[i];

		if (s->idx == PAIRING_NONE)
			break;
		if (s->point == point)
			return s->idx;
		i = (i + 1) & p->point_mask;
	}
	if (p->npoints == p->max_stages)
		return PAIRING_NONE;
	r = &p->points[p->npoints];
	r->point = point;
	p->point_map[i].point = point;
	p->point_map[i].idx = p->npoints;
	p->npoints++;
	atomic_store_explicit(&p->npoints_pub, p->npoints, memory_order_release);
	return p->npoints - 1;
}

/* The interval counters `point`'s anomalies go to now. */
static struct pairing_anomalies *anomalies_of(struct pairing *p, uint32_t point)
{
	uint32_t i = point_get(p, point);

	return i == PAIRING_NONE ? &p->overflow[p->cur] : &p->points[i].cnt[p->cur];
}

/* Append row (point, from, to) at map slot i, if there is room, and return
 * its index; PAIRING_NONE (and out_of_range for the point) when there is
 * not.  Off the fast path. */
static __attribute__((noinline)) uint32_t
row_create(struct pairing *p, uint32_t i, uint64_t key, uint32_t point, uint8_t from,
	   uint8_t to, enum pairing_kind kind)
{
	struct stage_row *st;
	uint32_t idx;

	if (p->nstages == p->max_stages) {
		/* Value samples have their own overflow row, of kind value. */
		if (kind == PAIRING_VALUE)
			p->overflow_value[p->cur].out_of_range++;
		else
			anomalies_of(p, point)->out_of_range++;
		return PAIRING_NONE;
	}
	idx = p->nstages;
	st = &p->stages[idx];
	st->key = key;
	st->point = point;
	st->from = from;
	st->to = to;
	st->kind = (uint8_t)kind;
	/* The point is published before the row, so a reporter that sees the
	 * row also sees its point. */
	st->point_index = point_get(p, point);
	p->stage_map[i].key = key;
	p->stage_map[i].row1 = idx + 1;
	p->nstages++;
	atomic_store_explicit(&p->nstages_pub, p->nstages, memory_order_release);
	return idx;
}

/* The index of row (point, from, to), creating the row on first use;
 * PAIRING_NONE when the stage table is full. */
static inline uint32_t row_get(struct pairing *p, uint32_t point, uint8_t from, uint8_t to,
			       enum pairing_kind kind)
{
	uint64_t key = row_key(point, from, to);
	uint32_t i = fib_hash(key, p->stage_shift);

	for (;;) {
		struct stage_slot *s = &p->stage_map[i];

		if (__builtin_expect(s->key == key && s->row1 != 0, 1))
			return s->row1 - 1;
		if (!s->row1)
			return row_create(p, i, key, point, from, to, kind);
		i = (i + 1) & p->stage_mask;
	}
}

static inline uint64_t minus_clamped(uint64_t v, uint64_t sub)
{
	return v > sub ? v - sub : 0;
}

/* The state machine's pieces are inlined into the drain loop: the calls
 * were a measurable share of the per-event cost. */
#define DRAIN_INLINE static inline __attribute__((always_inline))

/* One latency sample of row idx in the current interval: its accumulator
 * and, when on, its slowest-spans set. */
DRAIN_INLINE void record_latency(struct pairing *p, uint32_t idx, uint64_t v, uint64_t start,
				 uint64_t key, bool outl)
{
	struct accum *a = cur_accum(p, idx);

	accum_add_bounded(a, v, &p->bounds);
	/* The gate sits beside the accumulator's header: a sample too fast
	 * for the set never touches the set. */
	if (outl && v >= a->gate)
		a->gate = outliers_offer(row_outliers(p, idx, p->cur), p->nout, v, start,
					 (uint32_t)key & 0xFFFFFFu);
}

/* A transition of span `key` that started at `start` and took `delta`. */
DRAIN_INLINE void record_stage(struct pairing *p, uint64_t key, uint8_t from, uint8_t to,
			       uint64_t start, uint64_t delta, bool outl)
{
	uint32_t idx = row_get(p, span_key_point(key), from, to, PAIRING_STAGE);

	if (idx != PAIRING_NONE)
		record_latency(p, idx, minus_clamped(delta, p->overhead), start, key, outl);
}

/* ---- drain thread: the state machine -------------------------------- */

DRAIN_INLINE void span_begin(struct pairing *p, uint64_t key, uint64_t h, uint64_t ts)
{
	bool created;
	struct span *s = span_table_insert_hashed(p->spans, key, h, ts, &created);

	if (!s) {
		uint64_t old;

		span_table_evict_oldest(p->spans, &old);
		anomalies_of(p, span_key_point(old))->abandoned++;
		s = span_table_insert_hashed(p->spans, key, h, ts, &created);
	} else if (!created) {
		anomalies_of(p, span_key_point(key))->abandoned++;
		span_table_touch(p->spans, s, ts);
		s->nsteps = 0;
		s->last_step = 0;
		s->ndeferred = 0;
	}
	/* touch is ts already: set by the insert or the touch above. */
	s->start_tsc = ts;
}

DRAIN_INLINE void span_step(struct pairing *p, struct span *s, uint8_t step, uint64_t ts,
			    bool outl)
{
	uint64_t delta = ts - s->touch;

	if (s->ndeferred < SPAN_DEFERRED_MAX) {
		s->to[s->ndeferred] = step;
		s->delta[s->ndeferred] = delta;
		s->ndeferred++;
	} else {
		record_stage(p, s->key, s->last_step, step, s->touch, delta, outl);
		s->nsteps += s->nsteps != UINT32_MAX - SPAN_DEFERRED_MAX;
	}
	s->last_step = step;
	span_table_touch(p->spans, s, ts);
}

DRAIN_INLINE void span_end(struct pairing *p, struct span *s, uint32_t slot, uint64_t ts,
			   bool outl)
{
	uint32_t point = span_key_point(s->key);
	uint8_t from = PERFMON_BEGIN_STEP;
	uint64_t total = ts - s->start_tsc;
	uint64_t sub, at = s->start_tsc;
	uint32_t nsteps = s->ndeferred + s->nsteps;
	uint32_t idx;
	unsigned i;

	/* Deferred transitions are back to back from the begin. */
	for (i = 0; i < s->ndeferred; i++) {
		record_stage(p, s->key, from, s->to[i], at, s->delta[i], outl);
		at += s->delta[i];
		from = s->to[i];
	}
	if (nsteps)
		record_stage(p, s->key, s->last_step, PERFMON_END_STEP, s->touch, ts - s->touch,
			     outl);

	/* One overhead per transition: the stages still add up to the total. */
	if (__builtin_mul_overflow(p->overhead, (uint64_t)nsteps + 1, &sub))
		sub = UINT64_MAX;
	idx = row_get(p, point, 0, 0, PAIRING_TOTAL);
	if (idx != PAIRING_NONE)
		record_latency(p, idx, minus_clamped(total, sub), s->start_tsc, s->key, outl);
	/* Recording changed no span, so the slot found is still good. */
	span_table_erase_at(p->spans, s, slot);
}

/*
 * One event.  Its kind picks the path by branch.  When spans interleave at
 * random, no predictor can know the next event's kind: bench_engine drain
 * measures 27-28.5 ticks an event at random against 21.5-23 for the same
 * spans taking turns.  Two ways around the branch were measured and lost:
 *   - every event doing a begin's, a step's and an end's table work, the
 *     right result kept by conditional moves and the ends recorded a few
 *     dozen at a time, closed the gap but ran about 230 instructions an
 *     event before recording anything, where this path runs about 90: 38-48
 *     ticks in every order, taking turns included;
 *   - a step and an end alone sharing such a path, a begin still by branch,
 *     saved 1.3 ticks at random but cost 2.9 more with one span at a time
 *     (a scratch driver feeding bench_engine's streams).
 */
DRAIN_INLINE void feed_one(struct pairing *p, const struct perfmon_event *ev, uint64_t key,
			   uint64_t h, bool outl)
{
	uint8_t step = PERFMON_EVENT_STEP(ev->event);
	uint64_t ts = ev->tsc;
	struct span *s;
	uint32_t slot;

	if (step == PERFMON_VALUE_STEP) {
		uint32_t idx = row_get(p, ev->point, PERFMON_VALUE_STEP, PERFMON_VALUE_STEP,
				       PAIRING_VALUE);

		if (idx != PAIRING_NONE)
			accum_add(cur_accum(p, idx), ts);
		return;
	}
	if (step == PERFMON_BEGIN_STEP) {
		span_begin(p, key, h, ts);
		return;
	}
	s = span_table_find_hashed(p->spans, key, h, &slot);
	if (!s) {
		anomalies_of(p, ev->point)->orphan++;
		return;
	}
	if (ts < s->touch) {
		anomalies_of(p, ev->point)->invalid++;
		span_table_erase_at(p->spans, s, slot);
		return;
	}
	if (step == PERFMON_END_STEP)
		span_end(p, s, slot, ts, outl);
	else
		span_step(p, s, step, ts, outl);
}

/*
 * Software pipelining of the span lookups.  A span event needs a hash slot
 * and then the entry it names: two dependent loads that miss the first
 * level cache as soon as a few hundred spans are open.  So PF_FAR events
 * ahead the key is made and hashed (once: both wait in small rings) and
 * its slot prefetched; PF_NEAR events ahead the slot, by then cached, is
 * read and the entry prefetched.  Value events take the same path without
 * a branch; their keys and prefetches are merely useless.
 */
#define PF_FAR  16
#define PF_NEAR 8
#define PF_RING 32     /* power of two > PF_FAR */

/* Event i's span key and its hash into the rings, and its index slot
 * prefetched. */
static inline void feed_ahead(const struct span_table *t, const struct perfmon_event *ev, size_t i,
			      uint64_t *key, uint64_t *hash)
{
	uint64_t k = span_key(ev[i].point, PERFMON_EVENT_SEQ(ev[i].event));
	uint64_t h = span_hash(k);

	key[i % PF_RING] = k;
	hash[i % PF_RING] = h;
	span_table_prefetch_slot(t, h);
}

/* The last PF_FAR events of a feed, whose look-ahead runs out. */
static __attribute__((noinline)) void feed_tail(struct pairing *p, const struct perfmon_event *ev,
						size_t i, size_t n, const uint64_t *key,
						const uint64_t *hash)
{
	const struct span_table *t = p->spans;

	for (; i < n; i++) {
		if (i + PF_NEAR < n)
			span_table_prefetch_entry(t, hash[(i + PF_NEAR) % PF_RING]);
		feed_one(p, &ev[i], key[i % PF_RING], hash[i % PF_RING], p->nout != 0);
	}
}

/* A feed, with the outlier sets on (`outl`) or off: a constant, so that
 * each of the two copies pairing_feed() makes of this loop has no test
 * for it per sample.  A third copy for a zero overhead (the default) ran
 * 4.5 instructions an event fewer, and a per-point cache of a span's rows
 * for its end 0.3: neither measured faster (a scratch driver,
 * bench_engine drain). */
DRAIN_INLINE void feed(struct pairing *p, const struct perfmon_event *ev, size_t n, bool outl)
{
	const struct span_table *t = p->spans;
	uint64_t key[PF_RING], hash[PF_RING];
	size_t i, lead = n < PF_FAR ? n : PF_FAR;

	for (i = 0; i < lead; i++)
		feed_ahead(t, ev, i, key, hash);
	/* The bulk, with both look-aheads in range, tested for neither; then
	 * the last PF_FAR events. */
	for (i = 0; i + PF_FAR < n; i++) {
		feed_ahead(t, ev, i + PF_FAR, key, hash);
		span_table_prefetch_entry(t, hash[(i + PF_NEAR) % PF_RING]);
		feed_one(p, &ev[i], key[i % PF_RING], hash[i % PF_RING], outl);
	}
	feed_tail(p, ev, i, n, key, hash);
}

void pairing_feed(struct pairing *p, const struct perfmon_event *ev, size_t n)
{
	if (p->nout)
		feed(p, ev, n, true);
	else
		feed(p, ev, n, false);
}

size_t pairing_sweep(struct pairing *p, uint64_t now_tsc)
{
	struct span *s;
	size_t n = 0;

	while ((s = span_table_expired(p->spans, now_tsc, p->stall_ticks))) {
		anomalies_of(p, span_key_point(s->key))->abandoned++;
		span_table_erase(p->spans, s);
		n++;
	}
	p->swept += n;
	return n;
}

const struct hist_bounds *pairing_bounds(const struct pairing *p)
{
	return &p->bounds;
}

size_t pairing_abandon_open(struct pairing *p)
{
	uint64_t key;
	size_t n = 0;

	while (span_table_evict_oldest(p->spans, &key)) {
		anomalies_of(p, span_key_point(key))->abandoned++;
		n++;
	}
	return n;
}

bool pairing_flip_ready(const struct pairing *p)
{
	/* Acquire: the reporter's last look at the previous interval happens
	 * before what the caller writes for the next one. */
	return atomic_load_explicit(&p->handoff, memory_order_acquire) == HANDOFF_FREE;
}

bool pairing_flip(struct pairing *p, uint64_t now_tsc)
{
	/* Acquire: the reporter's clearing of this buffer happens before we
	 * write into it again. */
	if (atomic_load_explicit(&p->handoff, memory_order_acquire) != HANDOFF_FREE)
		return false;
	p->done = p->cur;
	p->iv.start_tsc = p->last_flip_tsc;
	p->iv.end_tsc = now_tsc;
	p->iv.overhead_ticks = p->overhead;
	p->iv.open_spans = span_table_count(p->spans);
	p->iv.peak_open = span_table_peak(p->spans);
	p->iv.abandoned_by_age = p->swept;
	p->swept = 0;
	p->last_flip_tsc = now_tsc;
	p->cur ^= 1;
	p->cur_accums = p->accums + p->cur * p->accums_region;
	/* Release: every sample written into the finished buffer is visible
	 * to the reporter once it sees READY. */
	atomic_store_explicit(&p->handoff, HANDOFF_READY, memory_order_release);
	return true;
}

uint32_t pairing_outliers_cap(const struct pairing *p)
{
	return p->nout;
}

uint32_t pairing_open_spans(const struct pairing *p)
{
	return span_table_count(p->spans);
}

uint32_t pairing_peak_open(const struct pairing *p)
{
	return span_table_peak(p->spans);
}

/* ---- reporter thread ------------------------------------------------ */

static void anomalies_add(struct pairing_anomalies *dst, const struct pairing_anomalies *src)
{
	dst->abandoned += src->abandoned;
	dst->orphan += src->orphan;
	dst->invalid += src->invalid;
	dst->out_of_range += src->out_of_range;
}

bool pairing_collect(struct pairing *p, struct pairing_interval *ret)
{
	uint32_t h = atomic_load_explicit(&p->handoff, memory_order_acquire);
	uint32_t i, d;

	if (h == HANDOFF_FREE)
		return false;
	if (h == HANDOFF_READY) {
		/* Rows before points: a row's point is published before the
		 * row, so every snapshotted row's point is in the snapshot. */
		p->snap_nstages = atomic_load_explicit(&p->nstages_pub, memory_order_acquire);
		p->snap_npoints = atomic_load_explicit(&p->npoints_pub, memory_order_acquire);
		d = p->done;
		for (i = 0; i < p->snap_nstages; i++) {
			const struct accum *a = row_accum(p, i, d);

			if (!a->count)
				continue;
			accum_merge(row_accum(p, i, ACCUM_LIFETIME), a, &p->bounds);
			if (p->nout)
				outliers_merge(row_outliers(p, i, ACCUM_LIFETIME),
					       row_outliers(p, i, d), p->nout);
		}
		for (i = 0; i < p->snap_npoints; i++)
			anomalies_add(&p->points[i].lifetime, &p->points[i].cnt[d]);
		anomalies_add(&p->overflow_lifetime, &p->overflow[d]);
		anomalies_add(&p->overflow_value_lifetime, &p->overflow_value[d]);
		/* Only the reporter moves READY -> COLLECTED; the drain thread
		 * only compares against FREE. */
		atomic_store_explicit(&p->handoff, HANDOFF_COLLECTED, memory_order_relaxed);
	}
	if (ret) {
		*ret = p->iv;
		ret->nstages = p->snap_nstages;
		ret->npoints = p->snap_npoints;
	}
	return true;
}

void pairing_date_outliers(struct pairing *p,
			   uint64_t (*realtime_of)(const void *ctx, uint64_t tsc), const void *ctx)
{
	if (!p->nout)
		return;
	/* The interval's sets and the lifetime ones they were merged into:
	 * what this interval added is all that is still undated. */
	for (uint32_t i = 0; i < p->snap_nstages; i++) {
		if (!row_accum(p, i, p->done)->count)
			continue;
		outliers_date(row_outliers(p, i, p->done), realtime_of, ctx);
		outliers_date(row_outliers(p, i, ACCUM_LIFETIME), realtime_of, ctx);
	}
}

void pairing_release(struct pairing *p)
{
	uint32_t h = atomic_load_explicit(&p->handoff, memory_order_acquire);
	uint32_t i, d = p->done;

	if (h == HANDOFF_FREE)
		return;
	if (h == HANDOFF_READY)
		pairing_collect(p, NULL);
	for (i = 0; i < p->snap_nstages; i++) {
		struct accum *a = row_accum(p, i, d);

		if (!a->count)
			continue;
		accum_clear(a, &p->bounds);
		if (p->nout)
			outliers_clear(row_outliers(p, i, d));
	}
	for (i = 0; i < p->snap_npoints; i++)
		memset(&p->points[i].cnt[d], 0, sizeof(p->points[i].cnt[d]));
	memset(&p->overflow[d], 0, sizeof(p->overflow[d]));
	memset(&p->overflow_value[d], 0, sizeof(p->overflow_value[d]));
	/* Release: the cleared buffer is complete before the drain thread
	 * may flip into it. */
	atomic_store_explicit(&p->handoff, HANDOFF_FREE, memory_order_release);
}

size_t pairing_memory_bytes(const struct pairing_config *cfg)
{
	const struct pairing *p = NULL;
	uint32_t nstage_slots, npoint_slots;

	map_shift(cfg->max_stages, &nstage_slots);
	map_shift(cfg->max_stages, &npoint_slots);
	return sizeof(*p) + span_table_memory_bytes(cfg->max_open_spans) +
	       (size_t)cfg->max_stages * 3 * ACCUM_STRIDE +
	       (size_t)cfg->max_stages *
		       (sizeof(*p->stages) + sizeof(*p->points) + sizeof(*p->accum_line) + 1) +
	       (2 * (size_t)cfg->max_stages + 1) * sizeof(*p->sort) +
	       (size_t)nstage_slots * sizeof(*p->stage_map) +
	       (size_t)npoint_slots * sizeof(*p->point_map) +
	       (cfg->outliers ? (size_t)cfg->max_stages * 3 * outliers_set_stride(cfg->outliers) :
		0);
}

uint32_t pairing_max_rows(const struct pairing *p)
{
	return 2 * p->max_stages + 2;   /* rows, points' total rows, two overflow rows */
}

static void fill_stage_row(const struct pairing *p, uint32_t i, struct pairing_row *r)
{
	const struct stage_row *st = &p->stages[i];
	uint32_t pi = st->point_index;

	r->kind = (enum pairing_kind)st->kind;
	r->point = st->point;
	r->from = st->kind == PAIRING_STAGE ? st->from : 0;
	r->to = st->kind == PAIRING_STAGE ? st->to : 0;
	r->stage = i;
	r->interval = row_accum(p, i, p->done);
	r->lifetime = row_accum(p, i, ACCUM_LIFETIME);
	if (st->kind == PAIRING_TOTAL && pi != PAIRING_NONE && pi < p->snap_npoints) {
		r->anomalies = &p->points[pi].cnt[p->done];
		r->anomalies_lifetime = &p->points[pi].lifetime;
	} else {
		r->anomalies = &no_anomalies;
		r->anomalies_lifetime = &no_anomalies;
	}
	if (p->nout && st->kind != PAIRING_VALUE) {
		r->outliers = row_outliers(p, i, p->done);
		r->outliers_lifetime = row_outliers(p, i, ACCUM_LIFETIME);
	} else {
		r->outliers = NULL;
		r->outliers_lifetime = NULL;
	}
}

/* Total row of a point that has anomalies but no finished span. */
static void fill_point_row(const struct pairing *p, uint32_t j, struct pairing_row *r)
{
	r->kind = PAIRING_TOTAL;
	r->point = p->points[j].point;
	r->from = 0;
	r->to = 0;
	r->stage = PAIRING_NONE;
	r->interval = &empty_accum;
	r->lifetime = &empty_accum;
	r->anomalies = &p->points[j].cnt[p->done];
	r->anomalies_lifetime = &p->points[j].lifetime;
	r->outliers = NULL;
	r->outliers_lifetime = NULL;
}

static void fill_overflow_row(const struct pairing *p, bool value, struct pairing_row *r)
{
	r->kind = PAIRING_OVERFLOW;
	r->point = 0;
	r->from = 0;
	r->to = value ? PERFMON_VALUE_STEP : 0;
	r->stage = PAIRING_NONE;
	r->interval = &empty_accum;
	r->lifetime = &empty_accum;
	r->anomalies = value ? &p->overflow_value[p->done] : &p->overflow[p->done];
	r->anomalies_lifetime = value ? &p->overflow_value_lifetime : &p->overflow_lifetime;
	r->outliers = NULL;
	r->outliers_lifetime = NULL;
}

/* Report order within a point: transitions, total, value. */
static uint64_t sort_key(uint32_t point, unsigned kind, uint8_t from, uint8_t to)
{
	unsigned rank = kind == PAIRING_STAGE ? 0 : kind == PAIRING_TOTAL ? 1 : 2;

	return ((uint64_t)point << 18) | ((uint64_t)rank << 16) | ((uint32_t)from << 8) | to;
}

static int sort_cmp(const void *a, const void *b)
{
	const struct sort_item *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

/* Whether the total row of point record j exists: it does when the point
 * has a finished span or, without one, any anomaly so far. */
static void mark_totals(struct pairing *p)
{
	uint32_t i;

	memset(p->has_total, 0, p->snap_npoints);
	for (i = 0; i < p->snap_nstages; i++) {
		const struct stage_row *st = &p->stages[i];

		if (st->kind == PAIRING_TOTAL && st->point_index < p->snap_npoints)
			p->has_total[st->point_index] = 1;
	}
}

static bool handed_over(const struct pairing *p)
{
	return atomic_load_explicit(&p->handoff, memory_order_acquire) == HANDOFF_COLLECTED;
}

uint32_t pairing_rows(struct pairing *p, struct pairing_row *rows, uint32_t cap)
{
	uint32_t i, n = 0, out = 0;

	if (!handed_over(p))
		return 0;
	mark_totals(p);
	for (i = 0; i < p->snap_nstages; i++) {
		const struct stage_row *st = &p->stages[i];

		p->sort[n].key = sort_key(st->point, st->kind, st->from, st->to);
		p->sort[n++].ref = i;
	}
	for (i = 0; i < p->snap_npoints; i++) {
		if (p->has_total[i] || !pairing_anomalies_any(&p->points[i].lifetime))
			continue;
		p->sort[n].key = sort_key(p->points[i].point, PAIRING_TOTAL, 0, 0);
		p->sort[n++].ref = POINT_REF | i;
	}
	qsort(p->sort, n, sizeof(*p->sort), sort_cmp);
	for (i = 0; i < n && out < cap; i++, out++) {
		if (p->sort[i].ref & POINT_REF)
			fill_point_row(p, p->sort[i].ref & ~POINT_REF, &rows[out]);
		else
			fill_stage_row(p, p->sort[i].ref, &rows[out]);
	}
	if (out < cap && pairing_anomalies_any(&p->overflow_lifetime))
		fill_overflow_row(p, false, &rows[out++]);
	if (out < cap && pairing_anomalies_any(&p->overflow_value_lifetime))
		fill_overflow_row(p, true, &rows[out++]);
	return out;
}

bool pairing_find_row(struct pairing *p, enum pairing_kind kind, uint32_t point,
		      uint8_t from, uint8_t to, struct pairing_row *ret)
{
	uint64_t key;
	uint32_t i;

	if (!handed_over(p))
		return false;
	if (kind == PAIRING_OVERFLOW) {
		bool value = to == PERFMON_VALUE_STEP;

		if (!pairing_anomalies_any(value ? &p->overflow_value_lifetime :
					   &p->overflow_lifetime))
			return false;
		fill_overflow_row(p, value, ret);
		return true;
	}
	if (kind == PAIRING_TOTAL)
		key = row_key(point, 0, 0);
	else if (kind == PAIRING_VALUE)
		key = row_key(point, PERFMON_VALUE_STEP, PERFMON_VALUE_STEP);
	else
		key = row_key(point, from, to);
	for (i = 0; i < p->snap_nstages; i++) {
		if (p->stages[i].key == key) {
			fill_stage_row(p, i, ret);
			return true;
		}
	}
	if (kind != PAIRING_TOTAL)
		return false;
	for (i = 0; i < p->snap_npoints; i++) {
		if (p->points[i].point == point &&
		    pairing_anomalies_any(&p->points[i].lifetime)) {
			fill_point_row(p, i, ret);
			return true;
		}
	}
	return false;
}
