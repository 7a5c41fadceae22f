/*
 * ring_reader.c - drain the per-CPU sub-rings in passes, merge them into
 * timestamp order, account for every index exactly.
 *
 * Each slot carries a marker: index + 1 once event `index` is published,
 * (index + 1) | BUSY while it is being written, older values before.  For
 * the index at a sub-ring's tail a marker
 *   == tail + 1          the event is there: copy it, re-check the marker;
 *   newer than tail + 1  a producer a lap ahead claimed the slot: dropped;
 *   otherwise            not published yet: a stamp in flight, or a hole
 *                        left by a producer that died or stopped mid-stamp.
 *
 * A pass fixes a watermark and a target (the head) per sub-ring and drains
 * every sub-ring to its target.  Unpublished slots hold the pass up for one
 * grace period per pass, however many there are and in however many
 * sub-rings; after it every unpublished slot met in that pass is stepped
 * over and watched as a hole (counted stalled after `stall_timeout`, read if
 * it gets published).  Only a complete pass releases spans, and only those
 * older than its watermark: a span a hole delivers after that is counted as
 * misordered, never silently mixed in.
 *
 * A head that jumps further than producers could have reserved since the
 * last pass (forward or backward) is reported as absurd, not taken as a
 * loss: the reader finishes the indices it knew, then resumes where the
 * producers now reserve; indices there that it may already have read in
 * the old numbering are counted as dropped rather than read twice.
 *
 * Nothing here blocks; allocation happens once, in ring_reader_init.  The
 * only write to shared memory is ring_reader_rebase's, after a shrink.
 */
#include "build-config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring_reader.h"

/* a is before b, modulo 2^64 */
static inline bool before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

/* A pass drains at most `capacity` events per sub-ring (more were
 * overwritten) plus its holes; spans held back come from the previous pass
 * only (see ring_drain), so twice that bounds the merge buffers. */
static size_t max_events(uint32_t nsub, uint64_t capacity)
{
	return 2 * (size_t)nsub * (size_t)capacity + (size_t)nsub * RING_MAX_HOLES + 16;
}

static size_t max_runs(size_t events, uint32_t nsub)
{
	return events / 8 + nsub + 2;
}

size_t ring_reader_memory(uint32_t nsub, uint64_t capacity)
{
	size_t ev = max_events(nsub, capacity);
	return 3 * ev * sizeof(struct perfmon_event) + (max_runs(ev, nsub) + 1) * sizeof(size_t) +
	       nsub * (sizeof(struct ring_sub) + sizeof(uint64_t));
}

int ring_reader_init(struct ring_reader *r, struct perfmon_ring_header *hdr, uint32_t nsub,
		     uint64_t capacity, const uint64_t *tails, uint64_t hole_grace,
		     uint64_t stall_timeout)
{
	*r = (struct ring_reader){
		.hdr = hdr,
		.nsub = nsub,
		.capacity = capacity,
		.mask = capacity - 1,
		.hole_grace = hole_grace,
		.stall_timeout = stall_timeout,
	};
	r->max_events = max_events(nsub, capacity);
	r->max_runs = max_runs(r->max_events, nsub);
	r->sub = calloc(nsub, sizeof(*r->sub));
	r->heads = calloc(nsub, sizeof(*r->heads));
	r->spans = malloc(r->max_events * sizeof(*r->spans));
	r->tmp = malloc(r->max_events * sizeof(*r->tmp));
	r->values = malloc(r->max_events * sizeof(*r->values));
	r->runs = malloc((r->max_runs + 1) * sizeof(*r->runs));
	if (!r->sub || !r->heads || !r->spans || !r->tmp || !r->values || !r->runs) {
		ring_reader_free(r);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < nsub; k++) {
		struct ring_sub *s = &r->sub[k];
		s->ctl = PERFMON_SUBRING(hdr, k);
		s->slots = PERFMON_SUBRING_SLOTS(hdr, nsub, capacity, k);
		uint64_t h = __atomic_load_n(&s->ctl->head, __ATOMIC_ACQUIRE);

		s->tail = tails ? tails[k] : h;
		if (tails && before(h, s->tail)) {
			/* Producers reserve below where we stopped reading: a
			 * head rewound while no reader ran.  Those slots may
			 * still hold events read before: count what comes there
			 * as dropped, never read twice. */
			r->head_resets++;
			s->replay = true;
			s->replay_end = s->tail;
			s->tail = h;
		}
		s->target = s->last_head = s->tail;
	}
	return 0;
}

void ring_reader_free(struct ring_reader *r)
{
	free(r->sub);
	free(r->heads);
	free(r->spans);
	free(r->tmp);
	free(r->values);
	free(r->runs);
	r->sub = NULL;
	r->heads = NULL;
	r->spans = r->tmp = r->values = NULL;
	r->runs = NULL;
}

uint64_t ring_reader_head(const struct ring_reader *r)
{
	uint64_t sum = 0;
	for (uint32_t k = 0; k < r->nsub; k++)
		sum += __atomic_load_n(&r->sub[k].ctl->head, __ATOMIC_ACQUIRE);
	return sum;
}

uint64_t ring_reader_backlog(const struct ring_reader *r)
{
	uint64_t sum = 0;
	for (uint32_t k = 0; k < r->nsub; k++) {
		const struct ring_sub *s = &r->sub[k];
		uint64_t h = __atomic_load_n(&s->ctl->head, __ATOMIC_ACQUIRE);
		sum += (before(s->tail, h) && h - s->tail <= r->capacity ? h - s->tail : 0) +
		       s->nholes;
	}
	return sum;
}

/*
 * Try to copy event `idx` out of its slot.  Returns 1 if `out` holds a
 * valid event, 0 if the slot is not published yet, -1 if the event is lost
 * (overwritten before or while we read it).
 */
static inline int take(const struct ring_reader *r, const struct ring_sub *s, uint64_t idx,
		       struct perfmon_event *out)
{
	struct perfmon_slot *slot = &s->slots[idx & r->mask];
	uint64_t want = idx + 1;
	uint64_t m = __atomic_load_n(&slot->marker, __ATOMIC_ACQUIRE);
	uint64_t pe;

	if (m != want) {
		/* Newer or older, modulo 2^63 (the busy bit hides bit 63). */
		int64_t d = (int64_t)(((m & ~PERFMON_SLOT_BUSY) - (want & ~PERFMON_SLOT_BUSY)) << 1);
		return d > 0 ? -1 : 0;
	}
	out->tsc = __atomic_load_n(&slot->tsc, __ATOMIC_RELAXED);
	pe = __atomic_load_n(&slot->point_event, __ATOMIC_RELAXED);
	/* Seqlock check: a writer stores BUSY before touching the payload,
	 * so an unchanged marker proves the copy is whole. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&slot->marker, __ATOMIC_RELAXED) != want)
		return -1;
	out->point = (uint32_t)pe;
	out->event = (uint32_t)(pe >> 32);
	return 1;
}

/* File an event read from a sub-ring: spans wait for the merge, value
 * samples go straight out. */
static inline void keep(struct ring_reader *r, const struct perfmon_event *ev)
{
	if (PERFMON_EVENT_STEP(ev->event) == PERFMON_VALUE_STEP) {
		r->values[r->nvalues++] = *ev;
		return;
	}
	if (ev->tsc < r->released_wm)
		r->misordered++;   /* younger spans already went out */
	/* Note where an ascending run ends, for sort_spans. */
	if (!r->nspans) {
		r->runs[0] = 0;
		r->nruns = 1;
	} else if (ev->tsc < r->spans[r->nspans - 1].tsc) {
		if (r->nruns < r->max_runs)
			r->runs[r->nruns++] = r->nspans;
		else
			r->unsorted = true;
	}
	r->spans[r->nspans++] = *ev;
}

static void forget_hole(struct ring_sub *s, unsigned i)
{
	for (s->nholes--; i < s->nholes; i++)
		s->holes[i] = s->holes[i + 1];
}

/* Deliver the watched holes that got published meanwhile, retire those
 * lost or timed out. */
static void check_holes(struct ring_reader *r, struct ring_sub *s, uint64_t now)
{
	unsigned i = 0;

	while (i < s->nholes) {
		struct ring_hole *h = &s->holes[i];
		struct perfmon_event ev;
		int t = take(r, s, h->index, &ev);
		if (t > 0) {
			keep(r, &ev);
			r->read++;
		} else if (t < 0) {
			r->dropped++;
		} else if (now - h->since >= r->stall_timeout) {
			r->stalled++;
		} else {
			i++;
			continue;
		}
		forget_hole(s, i);
	}
}

static void add_hole(struct ring_reader *r, struct ring_sub *s, uint64_t idx, uint64_t now)
{
	if (s->nholes == RING_MAX_HOLES) {
		/* A burst of holes (a producer that died in a loop, or a forged
		 * head) must not halt collection: the oldest watched hole is
		 * given up early and counted as stalled. */
		r->stalled++;
		forget_hole(s, 0);
	}
	s->holes[s->nholes++] = (struct ring_hole){ idx, now };
}

/*
 * Set sub-ring `s`'s target for a new pass from its shared head `h`, read
 * after the clock gave `t0` and before it gave `t1`.  A head that
 * moved further than producers could have reserved since the head read of
 * the last complete pass (whose clock reading came first, so the time
 * between the two head reads is at most t1 - last_pass_now) is absurd.
 */
static void aim(struct ring_reader *r, struct ring_sub *s, uint64_t h, uint64_t t0,
		uint64_t t1)
{
	if (s->forged) {
		if (s->tail != s->last_head)
			return;   /* still finishing the indices we knew */
		if (h - s->forged_at > (t1 - s->forged_now) + r->capacity) {
			/* forged again before producers moved on from it */
			if (h != s->forged_at) {
				r->head_resets++;
				s->forged_at = h;
				s->forged_now = t0;
			}
			return;
		}
		/* Producers reserve from forged_at on now.  If that is behind
		 * where we were, those slots may still hold events we read in
		 * the old numbering: count them dropped, never read twice. */
		if (before(s->forged_at, s->tail)) {
			uint64_t end = s->tail;
			s->tail = s->forged_at;
			s->replay_end = end;
			s->replay = true;
		} else {
			s->tail = s->forged_at;
		}
		s->forged = false;
	} else if (h - s->last_head > (t1 - r->last_pass_now) + r->capacity) {
		r->head_resets++;
		s->forged = true;
		s->forged_at = h;
		s->forged_now = t0;
		return;   /* target stays at last_head */
	}
	s->last_head = h;
	if (h - s->tail > r->capacity) {
		/* Lapped: every slot below h - capacity has been claimed by a
		 * newer event.  Count them without visiting each one. */
		r->dropped += h - r->capacity - s->tail;
		s->tail = h - r->capacity;
	}
	s->target = h;
}

/* Drain sub-ring `s` towards its target.  Returns false while an
 * unpublished slot holds the pass within its grace. */
static bool drain_sub_(struct ring_reader *r, struct ring_sub *s, uint64_t now);

/* Drain sub-ring `s`; show the tap what it read, as read (one call per
 * sub-ring and pass, none when nothing was read: the tap costs the drain
 * path nothing per event). */
static bool drain_sub(struct ring_reader *r, struct ring_sub *s, uint64_t now)
{
	size_t v0 = r->nvalues, s0 = r->nspans;
	bool done = drain_sub_(r, s, now);

	if (r->tap && (r->nvalues > v0 || r->nspans > s0))
		r->tap(r->tap_ctx, (uint32_t)(s - r->sub), r->values + v0, r->nvalues - v0,
		       r->spans + s0, r->nspans - s0);
	return done;
}

static bool drain_sub_(struct ring_reader *r, struct ring_sub *s, uint64_t now)
{
	if (s->nholes)
		check_holes(r, s, now);
	while (s->tail != s->target) {
		struct perfmon_event ev;
		int t;

		if (s->replay) {
			if (before(s->tail, s->replay_end)) {
				uint64_t end = before(s->target, s->replay_end) ? s->target
									     : s->replay_end;
				r->dropped += end - s->tail;
				s->tail = end;
				continue;
			}
			s->replay = false;
		}
		t = take(r, s, s->tail, &ev);
		if (t > 0) {
			keep(r, &ev);
			r->read++;
			s->tail++;
			continue;
		}
		if (t < 0) {
			r->dropped++;
			s->tail++;
			continue;
		}
		/* Not published yet: one grace for the whole pass. */
		if (!r->grace_on) {
			r->grace_on = true;
			r->grace_since = now;
		}
		if (now - r->grace_since < r->hole_grace)
			return false;
		add_hole(r, s, s->tail, now);
		s->tail++;
	}
	return true;
}

static int cmp_tsc(const void *a, const void *b)
{
	uint64_t x = ((const struct perfmon_event *)a)->tsc;
	uint64_t y = ((const struct perfmon_event *)b)->tsc;
	return x < y ? -1 : x > y;
}

/*
 * Sort the held spans by timestamp.  They arrive as a few long ascending
 * runs (one per busy sub-ring, plus those held back, already sorted), whose
 * starts keep() noted, so a natural merge sort costs one copy per event and
 * per doubling of the runs: one when two sub-rings are busy.  The merge is
 * branch-free (timestamps of different CPUs interleave unpredictably) and
 * stable: equal timestamps keep their reservation order, so a producer's
 * own events keep their order.
 */
static void sort_spans(struct ring_reader *r)
{
	struct perfmon_event *src = r->spans, *dst = r->tmp;
	size_t n = r->nspans, nr = r->nruns, *runs = r->runs;

	if (r->unsorted) {
		/* no order to speak of (hostile timestamps) */
		qsort(src, n, sizeof(*src), cmp_tsc);
		return;
	}
	if (nr < 2)
		return;
	runs[nr] = n;
	while (nr > 1) {
		size_t w = 0, j;
		for (j = 0; j + 1 < nr; j += 2) {
			const struct perfmon_event *a = src + runs[j], *am = src + runs[j + 1];
			const struct perfmon_event *b = am, *bm = src + runs[j + 2];
			struct perfmon_event *o = dst + runs[j];
			while (a < am && b < bm) {
				/* select by mask: no branch to mispredict */
				uintptr_t takeb = b->tsc < a->tsc;
				uintptr_t pick = (uintptr_t)a ^
						 (((uintptr_t)a ^ (uintptr_t)b) & (0 - takeb));
				*o++ = *(const struct perfmon_event *)pick;
				b += takeb;
				a += takeb ^ 1;
			}
			memcpy(o, a, (size_t)(am - a) * sizeof(*src));
			o += am - a;
			memcpy(o, b, (size_t)(bm - b) * sizeof(*src));
			runs[w++] = runs[j];
		}
		if (j < nr) {
			memcpy(dst + runs[j], src + runs[j], (runs[j + 1] - runs[j]) * sizeof(*src));
			runs[w++] = runs[j];
		}
		runs[w] = n;
		nr = w;
		struct perfmon_event *t = src;
		src = dst;
		dst = t;
	}
	r->spans = src;
	r->tmp = dst;
}

/* First held span with tsc >= wm (they are sorted). */
static size_t lower_bound(const struct perfmon_event *a, size_t n, uint64_t wm)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid].tsc < wm)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Forget what the last call handed out. */
static void compact(struct ring_reader *r)
{
	if (r->released) {
		memmove(r->spans, r->spans + r->released,
			(r->nspans - r->released) * sizeof(*r->spans));
		r->nspans -= r->released;
		r->released = 0;
		/* what is held back is sorted: one run */
		r->nruns = r->nspans ? 1 : 0;
		r->runs[0] = 0;
		r->unsorted = false;
	}

	r->nvalues = 0;
	r->last = (struct ring_batch){ 0 };
	r->last_pos = 0;
}

void ring_reader_clock(struct ring_reader *r, uint64_t (*clock)(void))
{
	r->clock = clock;
}

void ring_reader_tap(struct ring_reader *r, ring_tap_fn fn, void *ctx)
{
	r->tap = fn;
	r->tap_ctx = ctx;
}

void ring_reader_guard(struct ring_reader *r, const uint64_t *faults,
		       const uint64_t *faults_handled)
{
	r->faults = faults;
	r->faults_handled = faults_handled;
}

/* The mapping has faulted since its owner last restored it. */
static bool unrestored(const struct ring_reader *r)
{
	return r->faults && __atomic_load_n(r->faults, __ATOMIC_RELAXED) !=
			    __atomic_load_n(r->faults_handled, __ATOMIC_RELAXED);
}

static bool start_pass(struct ring_reader *r, uint64_t now, uint64_t wm)
{
	uint64_t *heads = r->heads;

	/* Every span held back was read before `wm` was taken, and stamped
	 * before it was published, so it is older than wm.  One that is not
	 * carries a timestamp from the future (a broken or hostile producer):
	 * hand it out now, counted, instead of holding it for ever. */
	size_t k = lower_bound(r->spans, r->nspans, wm);
	if (k < r->nspans) {
		r->misordered += r->nspans - k;
		memcpy(r->values + r->nvalues, r->spans + k, (r->nspans - k) * sizeof(*r->spans));
		r->nvalues += r->nspans - k;
		r->nspans = k;
		r->nruns = k ? 1 : 0;
	}
	uint64_t after;

#if !defined(__x86_64__) && !defined(__i386__)
	/* The caller read `wm` before this call.  On x86 its fenced rdtsc keeps
	 * the head loads after it; elsewhere the clock read is no memory access,
	 * and only a full fence keeps the heads from being read before it. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	/* The heads first, then whether they could be zeros of a shrink, then
	 * the clock again (the bound on how far they may have moved). */
	for (uint32_t i = 0; i < r->nsub; i++)
		heads[i] = __atomic_load_n(&r->sub[i].ctl->head, __ATOMIC_ACQUIRE);
	if (unrestored(r))
		return false;
	after = r->clock ? r->clock() : now;
	if (before(after, now))
		after = now;
	r->pass_wm = wm;
	r->pass_now = now;
	r->grace_on = false;
	for (uint32_t i = 0; i < r->nsub; i++)
		aim(r, &r->sub[i], heads[i], now, after);
	r->in_pass = true;
	if (r->frozen)
		r->final_pass = true;
	return true;
}

size_t ring_drain(struct ring_reader *r, uint64_t now, uint64_t watermark,
		  struct ring_batch *b)
{
	bool complete = true;
	size_t k;

	compact(r);
	if (!r->in_pass) {
		if (r->final_pass || !start_pass(r, now, watermark))
			goto out;   /* frozen and done, or the mapping needs its owner */
	}
	for (uint32_t i = 0; i < r->nsub; i++)
		if (!drain_sub(r, &r->sub[i], now))
			complete = false;
	if (complete) {
		/* Every event stamped before pass_wm is in hand (or a hole past
		 * the grace, counted): release those, in order. */
		sort_spans(r);
		r->nruns = r->nspans ? 1 : 0;
		r->runs[0] = 0;
		r->unsorted = false;
		k = lower_bound(r->spans, r->nspans, r->pass_wm);
		r->released = k;
		if (r->pass_wm > r->released_wm)
			r->released_wm = r->pass_wm;
		r->in_pass = false;
		r->last_pass_now = r->pass_now;
	}
out:
	r->last = (struct ring_batch){ r->values, r->nvalues, r->spans, r->released };
	*b = r->last;
	return b->nvalues + b->nspans;
}

size_t ring_drain_batch(struct ring_reader *r, struct perfmon_event *out, size_t max,
			uint64_t now, uint64_t watermark)
{
	size_t n = 0;

	for (;;) {
		size_t have = r->last.nvalues + r->last.nspans;
		while (n < max && r->last_pos < have) {
			size_t p = r->last_pos++;
			out[n++] = p < r->last.nvalues ? r->last.values[p]
						      : r->last.spans[p - r->last.nvalues];
		}
		if (n == max || n > 0)
			return n;
		if (ring_drain(r, now, watermark, &(struct ring_batch){ 0 }) == 0)
			return 0;
	}
}

void ring_reader_freeze(struct ring_reader *r)
{
	r->frozen = true;
}

bool ring_reader_settled(const struct ring_reader *r)
{
	if (!r->final_pass || r->in_pass)
		return false;
	for (uint32_t k = 0; k < r->nsub; k++)
		if (r->sub[k].nholes)
			return false;
	return true;
}

void ring_reader_abandon_holes(struct ring_reader *r)
{
	for (uint32_t k = 0; k < r->nsub; k++) {
		r->stalled += r->sub[k].nholes;
		r->sub[k].nholes = 0;
	}
	r->hole_grace = 0;
	r->stall_timeout = 0;
	r->faults = NULL;   /* the end: take the mapping as it reads */
}

uint64_t ring_reader_rebase(struct ring_reader *r, size_t cut_at)
{
	uint64_t lost = 0;

	for (uint32_t k = 0; k < r->nsub; k++) {
		struct ring_sub *s = &r->sub[k];
		size_t ctl = (size_t)((char *)&s->ctl->head - (char *)r->hdr);
		uint64_t base, early;

		/* A sub-ring whose head survived keeps its numbering: its cut
		 * slots read as unpublished and end as holes, each counted
		 * once, like any other. */
		if (ctl + sizeof(s->ctl->head) <= cut_at)
			continue;
		/* Its head is gone, and with it every slot (they lie beyond
		 * the heads): what was not read yet is lost.  Stamps that
		 * reserved past last_head before the shrink may still publish,
		 * so the numbering resumes a capacity further, where no such
		 * stamp can share an index with a new one.  Producers that
		 * reserved from 0 since the size came back sit below the new
		 * numbering: lost too. */
		base = s->last_head + r->capacity;
		early = __atomic_fetch_add(&s->ctl->head, base, __ATOMIC_ACQ_REL);
		lost += (s->last_head - s->tail) + s->nholes + early;
		s->nholes = 0;
		s->tail = s->target = s->last_head = base + early;
		s->forged = s->replay = false;
	}
	r->dropped += lost;
	return lost;
}

size_t ring_reader_release_all(struct ring_reader *r, struct ring_batch *b)
{
	compact(r);
	sort_spans(r);
	r->nruns = r->nspans ? 1 : 0;
	r->runs[0] = 0;
	r->unsorted = false;
	r->released = r->nspans;
	r->last = (struct ring_batch){ r->values, 0, r->spans, r->released };
	*b = r->last;
	return b->nspans;
}
