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
 * Spans wait in a buffer per sub-ring, where they are in timestamp order
 * already (reservation order), so releasing them is a merge of sorted runs
 * whose released parts are prefixes; what is held back stays at the front
 * of its sub-ring's buffer.  See release().
 *
 * A head that jumps further than producers could have reserved since the
 * last pass (forward or backward) is reported as absurd, not taken as a
 * loss: the reader finishes the indices it knew, then resumes where the
 * producers now reserve; indices there that it may already have read in
 * the old numbering are counted as dropped rather than read twice.
 *
 * Nothing here blocks; allocation happens once, in ring_reader_init, which
 * also makes every page of the buffers resident, so a drain pass never
 * takes a page fault in them.  The only write to shared memory is
 * ring_reader_rebase's, after a shrink.
 */
#include "build-config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring_reader.h"

/* a is before b, modulo 2^64 */
static inline bool before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

/* The radix sort of many sub-rings' spans: see radix_merge(). */
#define RADIX_BITS   12
#define RADIX_DIGITS 3
#define RADIX_MASK   ((UINT32_C(1) << RADIX_BITS) - 1)
#define RADIX_MIN_INPUTS 8      /* more than 3 rounds of merge2 */
/* ...and the spans times the rounds beyond 3 it saves reach this: its
 * fixed cost (zeroing and summing 4096 counts a digit) is then repaid.
 * The fuzzing build (tests/fuzz/run.sh) sets 1, so that its small passes
 * take the sort as well as the rounds. */
#ifndef RADIX_MIN_WORK
#define RADIX_MIN_WORK   4096
#endif
#define RADIX_BYTES(nsub) \
	((nsub) > RADIX_MIN_INPUTS ? RADIX_DIGITS * (RADIX_MASK + 1) * sizeof(uint32_t) : 0)

/*
 * A pass reads at most `capacity` events per sub-ring (more were
 * overwritten) plus the holes it watched, and a sub-ring holds back only
 * spans of the pass before (see ring_drain): twice that bounds what one
 * sub-ring's span buffer ever holds.
 */
static size_t seg_cap(uint64_t capacity)
{
	return 2 * ((size_t)capacity + RING_MAX_HOLES);
}

/* Sub-ring k's control block, from the mapping: a pass reads 64 heads
 * without also loading 64 lines of ring_sub to find them. */
static inline struct perfmon_subring *ctl_of(const struct ring_reader *r, uint32_t k)
{
	return PERFMON_SUBRING(r->hdr, k);
}

size_t ring_reader_memory(uint32_t nsub, uint64_t capacity)
{
	/* span buffers, the merged spans, the value samples: seg_cap each */
	return 3 * (size_t)nsub * seg_cap(capacity) * sizeof(struct perfmon_event) +
	       RADIX_BYTES(nsub) +
	       nsub * (sizeof(struct ring_sub) + sizeof(uint64_t) + sizeof(uint32_t) +
		       sizeof(struct ring_merge_in));
}

/*
 * Make every page of a buffer resident and written now.  A pass fills the
 * buffers as far as the ring's backlog reaches, so untouched pages would
 * be faulted in by the drain thread one by one at the first large backlog,
 * which is a burst, when the ring is fullest: with two flat-out producers
 * on a ring of 2 x 512Ki slots, those faults cost the first 250 ms several
 * laps of the ring.  The kernel populates the whole pages in one call
 * (MADV_POPULATE_WRITE, Linux 5.14+), much faster than a fault per page;
 * then one write per page from here all the same, because in a VM that
 * tracks dirty pages the first write to a page after that still costs
 * microseconds (measured for 100 MiB: 320 ms faulting each page, 14 ms
 * populating, then 110 ms writing once per page; with the kernel's call
 * alone those two producers still lost 1.3 % of their stamps, with the
 * writes too none).  Volatile:
 * malloc + memset may become calloc, which leaves mmap'd pages untouched.
 * Not instrumented: a sanitizer's shadow of the buffers has no use here
 * and would make a large ring's start slow.
 */
__attribute__((no_sanitize_address, no_sanitize_thread))
static void make_resident(void *buf, size_t bytes)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	volatile char *p = buf;

	if (!bytes)
		return;
#ifdef MADV_POPULATE_WRITE
	{
		uintptr_t lo = ((uintptr_t)buf + pg - 1) & ~(uintptr_t)(pg - 1);
		uintptr_t hi = ((uintptr_t)buf + bytes) & ~(uintptr_t)(pg - 1);

		if (hi > lo)
			(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
	}
#endif
	for (size_t i = 0; i < bytes; i += pg)
		p[i] = 0;
	p[bytes - 1] = 0;
}

/*
 * The pass buffers come from their own mapping, started on a 2 MiB
 * boundary and marked MADV_HUGEPAGE, so that the kernel backs them with
 * transparent huge pages where it has them (the system's THP setting
 * "always" or "madvise"; elsewhere they are plain pages, as from malloc).
 * This is for the idle daemon: in some VMs (PVM, measured) a thread that
 * sleeps and wakes pays on each wake-up for every 4 KiB page its process
 * has mapped, about 0.03 us per MiB, and with one sub-ring per CPU these
 * buffers are most of the daemon's memory (48 MiB of its 70 for 64 CPUs,
 * about 1 us of a 12 us wake-up; in huge pages, next to nothing).  See
 * docs/shm-layout.md.
 */
#define BUF_ALIGN ((size_t)2 << 20)

static size_t buf_len(size_t bytes)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (bytes + pg - 1) & ~(pg - 1);
}

static void *buf_alloc(size_t bytes)
{
	size_t len = buf_len(bytes);
	char *m, *a;

	if (!len)
		return NULL;
	m = mmap(NULL, len + BUF_ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	a = (char *)(((uintptr_t)m + BUF_ALIGN - 1) & ~(uintptr_t)(BUF_ALIGN - 1));
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (m + BUF_ALIGN > a)
		munmap(a + len, (size_t)(m + BUF_ALIGN - a));
#ifdef MADV_HUGEPAGE
	(void)madvise(a, len, MADV_HUGEPAGE);
#endif
	return a;
}

static void buf_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, buf_len(bytes));
}

int ring_reader_init(struct ring_reader *r, struct perfmon_ring_header *hdr, uint32_t nsub,
		     uint64_t capacity, const uint64_t *tails, uint64_t hole_grace,
		     uint64_t stall_timeout)
{
	size_t events;

	*r = (struct ring_reader){
		.hdr = hdr,
		.nsub = nsub,
		.capacity = capacity,
		.mask = capacity - 1,
		.hole_grace = hole_grace,
		.stall_timeout = stall_timeout,
		.seg_cap = seg_cap(capacity),
	};
	events = (size_t)nsub * r->seg_cap;
	r->max_values = events;
	r->sub = aligned_alloc(_Alignof(struct ring_sub), nsub * sizeof(*r->sub));
	if (r->sub)
		memset(r->sub, 0, nsub * sizeof(*r->sub));
	r->heads = calloc(nsub, sizeof(*r->heads));
	r->sub_spans = buf_alloc(events * sizeof(*r->sub_spans));
	r->merged = buf_alloc(events * sizeof(*r->merged));
	r->values = buf_alloc(events * sizeof(*r->values));
	r->in = malloc(nsub * sizeof(*r->in));
	r->live = malloc(nsub * sizeof(*r->live));
	r->radix = RADIX_BYTES(nsub) ? malloc(RADIX_BYTES(nsub)) : NULL;
	if (!r->sub || !r->heads || !r->sub_spans || !r->merged || !r->values || !r->in ||
	    !r->live || (RADIX_BYTES(nsub) && !r->radix)) {
		ring_reader_free(r);
		return -ENOMEM;
	}
	make_resident(r->sub_spans, events * sizeof(*r->sub_spans));
	make_resident(r->merged, events * sizeof(*r->merged));
	make_resident(r->values, events * sizeof(*r->values));
	make_resident(r->radix, RADIX_BYTES(nsub));
	for (uint32_t k = 0; k < nsub; k++) {
		struct ring_sub *s = &r->sub[k];
		s->slots = PERFMON_SUBRING_SLOTS(hdr, nsub, capacity, k);
		s->spans = r->sub_spans + (size_t)k * r->seg_cap;
		uint64_t h = __atomic_load_n(&ctl_of(r, k)->head, __ATOMIC_ACQUIRE);

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
	buf_free(r->sub_spans, r->max_values * sizeof(*r->sub_spans));
	buf_free(r->merged, r->max_values * sizeof(*r->merged));
	buf_free(r->values, r->max_values * sizeof(*r->values));
	free(r->in);
	free(r->live);
	free(r->radix);
	r->sub = NULL;
	r->heads = NULL;
	r->sub_spans = r->merged = r->values = NULL;
	r->in = NULL;
	r->live = NULL;
	r->radix = NULL;
}

uint64_t ring_reader_head(const struct ring_reader *r)
{
	uint64_t sum = 0;
	for (uint32_t k = 0; k < r->nsub; k++)
		sum += __atomic_load_n(&ctl_of(r, k)->head, __ATOMIC_ACQUIRE);
	return sum;
}

bool ring_reader_waiting(const struct ring_reader *r, uint64_t now)
{
	return r->in_pass && r->grace_on && now - r->grace_since < r->hole_grace;
}

uint64_t ring_reader_backlog(const struct ring_reader *r)
{
	uint64_t sum = 0;
	for (uint32_t k = 0; k < r->nsub; k++) {
		const struct ring_sub *s = &r->sub[k];
		uint64_t h = __atomic_load_n(&ctl_of(r, k)->head, __ATOMIC_ACQUIRE);
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

/* File an event read from sub-ring `s`: spans wait in the sub-ring's own
 * buffer for the merge, value samples go straight out. */
static inline void keep(struct ring_reader *r, struct ring_sub *s,
			const struct perfmon_event *ev)
{
	if (PERFMON_EVENT_STEP(ev->event) == PERFMON_VALUE_STEP) {
		r->values[r->nvalues++] = *ev;
		return;
	}
	if (ev->tsc < r->released_wm)
		r->misordered++;   /* younger spans already went out */
	/* A sub-ring's spans come in reservation order, which is timestamp
	 * order but for threads sharing its CPU that were preempted between
	 * reserving and reading the clock (and hostile timestamps). */
	if (s->nspans && ev->tsc < s->spans[s->nspans - 1].tsc)
		s->unsorted = true;
	s->spans[s->nspans++] = *ev;
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
			keep(r, s, &ev);
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
	size_t v0 = r->nvalues, s0 = s->nspans;
	bool done = drain_sub_(r, s, now);

	if (r->tap && (r->nvalues > v0 || s->nspans > s0))
		r->tap(r->tap_ctx, (uint32_t)(s - r->sub), r->values + v0, r->nvalues - v0,
		       s->spans + s0, s->nspans - s0);
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
			keep(r, s, &ev);
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

/*
 * One step of a merge from both ends of the runs [*a, *ae) and [*b, *be):
 * the smaller front span (a's on equal timestamps) to *lo, the larger back
 * span (b's on equal timestamps) to the slot before *hi.  Each choice is
 * made by mask, with no branch to mispredict (timestamps of different CPUs
 * interleave at random).  Both runs must hold a span.
 */
static inline __attribute__((always_inline)) void
merge_step(const struct perfmon_event **a, const struct perfmon_event **ae,
	   const struct perfmon_event **b, const struct perfmon_event **be,
	   struct perfmon_event **lo, struct perfmon_event **hi)
{
	size_t fb = (*b)->tsc < (*a)->tsc;             /* front: b only if smaller */
	size_t ba = (*ae)[-1].tsc > (*be)[-1].tsc;     /* back: a only if larger */

	*(*lo)++ = *(fb ? *b : *a);
	*--*hi = *(ba ? *ae - 1 : *be - 1);
	*b += fb;
	*a += fb ^ 1;
	*ae -= ba;
	*be -= ba ^ 1;
}

static inline size_t min_size(size_t x, size_t y)
{
	return x < y ? x : y;
}

/*
 * Merge the sorted runs a[0, na) and b[0, nb) into o, stably, from both
 * ends at once: two independent chains of dependent loads, which the
 * processor overlaps.  A round of t steps from each end takes at most 2t
 * spans from either run, so with 2t <= min(remaining) neither run runs out
 * and the ends never cross; the few spans left when that bound reaches 0
 * are merged from the front.
 */
static void merge_ends(const struct perfmon_event *a, size_t na, const struct perfmon_event *b,
		       size_t nb, struct perfmon_event *o)
{
	const struct perfmon_event *ae = a + na, *be = b + nb;
	struct perfmon_event *lo = o, *hi = o + na + nb;
	size_t t;

	while ((t = min_size((size_t)(ae - a), (size_t)(be - b)) / 2) > 0) {
		do
			merge_step(&a, &ae, &b, &be, &lo, &hi);
		while (--t);
	}
	while (a < ae && b < be) {
		size_t fb = b->tsc < a->tsc;
		*lo++ = *(fb ? b : a);
		b += fb;
		a += fb ^ 1;
	}
	memcpy(lo, a, (size_t)(ae - a) * sizeof(*o));
	lo += ae - a;
	memcpy(lo, b, (size_t)(be - b) * sizeof(*o));
}

/* How many of a's spans are among the first k of the stable merge of
 * a[0, na) and b[0, nb) (k <= na + nb). */
static size_t merge_split(const struct perfmon_event *a, size_t na,
			  const struct perfmon_event *b, size_t nb, size_t k)
{
	size_t lo = k > nb ? k - nb : 0, hi = k < na ? k : na;

	/* The first i of a with k - i of b are a prefix of the merge unless
	 * a[i] goes before b[k - i - 1] (a's first on equal timestamps):
	 * that holds for every i below the answer and for none from it. */
	while (lo < hi) {
		size_t i = lo + (hi - lo) / 2;
		if (a[i].tsc <= b[k - i - 1].tsc)
			lo = i + 1;
		else
			hi = i;
	}
	return lo;
}

/* Below this many spans the split's search costs more than it saves. */
#define MERGE_SPLIT_MIN 64

/*
 * Merge the sorted runs a[0, na) and b[0, nb) into o, stably (on equal
 * timestamps a's spans first).  Each merge from both ends (merge_ends) is
 * one chain of dependent loads per end, so the output is split at its
 * middle (merge_split) and both halves are merged at once: four chains,
 * as many as the registers hold, which measured about a third cheaper
 * than two (bench_engine merge, 2 sub-rings).  What is left of either half
 * when one of its runs nears its end goes to merge_ends.
 */
static void merge2(const struct perfmon_event *a, size_t na, const struct perfmon_event *b,
		   size_t nb, struct perfmon_event *o)
{
	size_t k = (na + nb) / 2, ka, t;
	const struct perfmon_event *a0, *ae0, *b0, *be0, *a1, *ae1, *b1, *be1;
	struct perfmon_event *lo0, *hi0, *lo1, *hi1;

	if (na + nb < MERGE_SPLIT_MIN) {
		merge_ends(a, na, b, nb, o);
		return;
	}
	ka = merge_split(a, na, b, nb, k);
	a0 = a, ae0 = a + ka, b0 = b, be0 = b + (k - ka);
	a1 = ae0, ae1 = a + na, b1 = be0, be1 = b + nb;
	lo0 = o, hi0 = lo1 = o + k, hi1 = o + na + nb;
	for (;;) {
		t = min_size(min_size((size_t)(ae0 - a0), (size_t)(be0 - b0)),
			     min_size((size_t)(ae1 - a1), (size_t)(be1 - b1))) / 2;
		if (!t)
			break;
		do {
			merge_step(&a0, &ae0, &b0, &be0, &lo0, &hi0);
			merge_step(&a1, &ae1, &b1, &be1, &lo1, &hi1);
		} while (--t);
	}
	merge_ends(a0, (size_t)(ae0 - a0), b0, (size_t)(be0 - b0), lo0);
	merge_ends(a1, (size_t)(ae1 - a1), b1, (size_t)(be1 - b1), lo1);
}

/* Where the ascending run that starts at a[i] ends. */
static size_t run_end(const struct perfmon_event *a, size_t i, size_t n)
{
	while (++i < n && a[i].tsc >= a[i - 1].tsc)
		;
	return i;
}

/*
 * Sort one sub-ring's spans, stably, using `tmp` (as large) as scratch: a
 * natural merge sort, each pass merging pairs of ascending runs.  Only for
 * a sub-ring whose spans were not already in order, which takes threads
 * sharing a CPU preempted mid-stamp, or hostile timestamps: O(n log n) at
 * worst.
 */
static void sort_sub(struct perfmon_event *a, size_t n, struct perfmon_event *tmp)
{
	struct perfmon_event *src = a, *dst = tmp, *t;

	while (run_end(src, 0, n) < n) {
		for (size_t i = 0; i < n;) {
			size_t m = run_end(src, i, n), e;
			if (m == n) {
				memcpy(dst + i, src + i, (n - i) * sizeof(*a));
				break;
			}
			e = run_end(src, m, n);
			merge2(src + i, m - i, src + m, e - m, dst + i);
			i = e;
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}

/*
 * Merge the `k` sorted inputs in[0, k) (k >= 2) in rounds of merges two by
 * two (merge2), writing the first round to `a`, the next to `b`, and so on
 * (each with room for all the inputs).  Returns where the merged spans
 * are; `in` is used up.  Each round copies every span once, and there are
 * log2(k) rounds.  (A k-way merge through a loser tree copies every span
 * once, but its log2(k) dependent selections per span cost more than these
 * rounds, whose merge2 keeps four independent chains going.)
 */
static struct perfmon_event *merge_rounds(struct ring_merge_in *in, uint32_t k,
					  struct perfmon_event *a, struct perfmon_event *b)
{
	struct perfmon_event *dst = a;

	while (k > 1) {
		uint32_t w = 0;
		size_t off = 0;

		/* A round writes every run it makes to `dst`, in the order of
		 * the runs: it reads none of what it writes.  An odd run out
		 * is copied along, so the next round reads only `dst`. */
		for (uint32_t i = 0; i < k; i += 2) {
			size_t na = (size_t)(in[i].end - in[i].p), nb = 0;
			if (i + 1 < k) {
				nb = (size_t)(in[i + 1].end - in[i + 1].p);
				merge2(in[i].p, na, in[i + 1].p, nb, dst + off);
			} else {
				memcpy(dst + off, in[i].p, na * sizeof(*dst));
			}
			in[w++] = (struct ring_merge_in){ dst + off, dst + off + na + nb };
			off += na + nb;
		}
		k = w;
		dst = dst == a ? b : a;
	}
	return dst == a ? b : a;
}

/* One pass: the spans of runs[0, k) to their places in `dst`, the place
 * of digit v being at[v] and on. */
static void radix_pass(const struct ring_merge_in *runs, uint32_t k, struct perfmon_event *dst,
		       uint32_t *at, uint64_t lo, unsigned shift)
{
	for (uint32_t i = 0; i < k; i++) {
		for (const struct perfmon_event *e = runs[i].p; e < runs[i].end; e++)
			dst[at[((e->tsc - lo) >> shift) & RADIX_MASK]++] = *e;
	}
}

/* Count the `digits` digits of every span of runs[0, k) above `lo`.  A
 * constant `digits` unrolls the loop over them: a loop of unknown length
 * per span made this count take 2.4 ticks a span, not 1.4 (bench_engine
 * merge, 64 sub-rings). */
static inline __attribute__((always_inline)) void
radix_count(const struct ring_merge_in *runs, uint32_t k, uint64_t lo,
	    uint32_t (*count)[RADIX_MASK + 1], unsigned digits)
{
	for (uint32_t i = 0; i < k; i++) {
		for (const struct perfmon_event *e = runs[i].p; e < runs[i].end; e++) {
			uint64_t v = e->tsc - lo;

			for (unsigned d = 0; d < digits; d++)
				count[d][(v >> (d * RADIX_BITS)) & RADIX_MASK]++;
		}
	}
}
_Static_assert(RADIX_DIGITS == 3, "radix_merge counts 1, 2 or 3 digits");

/*
 * merge_rounds()'s work by a stable radix sort, for many inputs: every
 * span goes once to a bucket of its timestamp's next RADIX_BITS above the
 * smallest, a pass per digit, lowest first, with no comparison at all.  A
 * pass copies in the order it reads and the first reads the inputs in
 * turn, so spans of equal timestamps come out in the order of their
 * inputs, as from the rounds.  A pass that would leave every span where
 * it is (the digit is the same for all) is skipped.  NULL, with nothing
 * written, where the timestamps are all equal (the rounds copy them as
 * they are), span more than RADIX_DIGITS digits (tens of seconds), or the
 * spans are more than 32-bit counts hold.
 *
 * Measured with bench_engine merge: a pass spanning up to 2^24 ticks
 * (8 ms at 2 GHz; 2 passes) costs about as much as 4 rounds of merge2,
 * whatever the number of inputs: 8 inputs (3 rounds) merge 1.5 ticks a
 * span cheaper in rounds, 16 (4 rounds) cost the same either way, 64 (6
 * rounds) 5 ticks a span less by this sort.  So it takes more than 8
 * inputs, in a pass of 4096 spans or more with 9 to 16 of them, 2048 with
 * 17 to 32, 1366 with 33 to 64: below that, zeroing and summing the counts
 * costs more than the rounds it saves.
 *
 * With 64 inputs the sort is about 6.5 ticks a span.  Its passes wait on
 * stores scattered over 4096 places.  These variants were measured
 * (drain+merge alone, 64 sub-rings, least ticks per 64Ki-span chunk,
 * alternating runs) and each cost as much or more:
 *   - cutting the pass into slices of about 512 spans by the high bits
 *     (each input's share of a slice is a sorted piece, copied as one),
 *     then sorting each slice by 8-bit digits in the first level cache:
 *     13.9 and 14.3, against 9.4 and 9.4;
 *   - sorting 32-bit keys (offset << 8 | input) instead of spans, and then
 *     taking each span from its input in key order: 10.7, 10.2 and 10.5,
 *     against 10.0, 9.9 and 9.9; with the pairing after it (drain+merge+
 *     pair less the ring read, ten pairs of runs), 35.5 at least, against
 *     34.3: its smaller footprint left the pairing no faster.  The same
 *     keys by three 8-bit digits: 11.5 to 12.9, against 9.7 to 10.5;
 *   - counting the second digit during the first pass, not before it:
 *     9.9 to 10.9, against 9.5 to 10.0 (13.6 in one slow phase);
 *   - prefetching, 8 or 16 spans ahead, where each span will be stored:
 *     no gain.
 * Earlier trials cut the pass into time slices of 4k to 16k spans
 * (12.2 to 15.6, against 11.5) and used smaller digits, with more passes.
 * On an older core (AMD family 25, 2.4 GHz TSC; the same row: 17.6 to
 * 18.4 for this sort), these lost too:
 *   - one pass into about as many buckets as spans (up to 2^16 counts),
 *     then insertion to order each bucket: 21.9 to 22.5;
 *   - the digits counted as the drain reads each span, which spares the
 *     counting pass: 21.0 to 21.3;
 *   - three 8-bit digits: 21.1 to 21.7 (median 35: the passes spanning
 *     more than 2^24 ticks went to the rounds); three of 10 bits: 25.0;
 *   - the rounds of merge2: 26.7 to 26.9.
 * The key sort above gained a little there: 17.3 to 17.5, and 58.1 to
 * 58.9 against 58.6 to 59.3 with the pairing (less the ring read): less
 * than it lost on the first machine.  On that older core, with the
 * pairing (bench_engine drain, merge+pair less the ring read, alternating
 * with the product's 58.5 to 59.8), these lost too:
 *   - the key sort with no merged array at all, the pairing's look-ahead
 *     taking each span from its input as the keys name it: 66.3 to 69.4,
 *     and as much with the inputs spaced so that they fall in different
 *     cache sets; reading 64 inputs by turns inside the pairing's loop
 *     costs it far more than the copy it spares;
 *   - passes cut to 4Ki, 8Ki or 16Ki spans, whose sorted spans are still
 *     in the second level cache when the pairing reads them: 57.9 to
 *     60.3, no gain: the sort costs what it costs wherever its data is;
 *   - the 64 sub-rings of the size the daemon gives a 64-CPU host (8192
 *     slots each, not 65536): 67.8 against 67.1 for the whole path;
 *   - the first pass done by the ring read itself, each span filed as it
 *     is read into a bucket of its low digit (room for 64 a bucket) and
 *     its high digit counted, so that neither the counting pass nor the
 *     copy into the sub-ring's buffer remains: the drain and merge alone
 *     26.2 to 26.6, against 18.5 to 19.3 (a scattered store per span
 *     slows the ring read far more than a pass of its own costs);
 *   - write-combining buffers: each bucket's spans staged four at a time
 *     in a cache line of its own and stored to their place a whole line
 *     at once (plain or streaming stores, 8- to 12-bit digits): 29 to 43
 *     ticks a span against 11 for this sort (a standalone driver with
 *     the same 64 inputs), even with 8-bit digits, whose staging lines
 *     all fit the first level cache.
 */
static struct perfmon_event *radix_merge(const struct ring_merge_in *in, uint32_t k, size_t n,
					 struct perfmon_event *a, struct perfmon_event *b,
					 uint32_t (*count)[RADIX_MASK + 1])
{
	uint64_t lo = in[0].p->tsc, hi = in[0].end[-1].tsc;
	struct perfmon_event *dst = a;
	struct ring_merge_in src = { NULL, NULL };
	unsigned digits = 0;

	for (uint32_t i = 1; i < k; i++) {
		lo = in[i].p->tsc < lo ? in[i].p->tsc : lo;
		hi = in[i].end[-1].tsc > hi ? in[i].end[-1].tsc : hi;
	}
	while (digits <= RADIX_DIGITS && digits * RADIX_BITS < 64 &&
	       (hi - lo) >> (digits * RADIX_BITS))
		digits++;
	if (!digits || digits > RADIX_DIGITS || n > UINT32_MAX)
		return NULL;   /* all equal (the rounds keep their order), or too wide */
	memset(count, 0, digits * sizeof(*count));
	if (digits == 1)
		radix_count(in, k, lo, count, 1);
	else if (digits == 2)
		radix_count(in, k, lo, count, 2);
	else
		radix_count(in, k, lo, count, 3);
	for (unsigned d = 0; d < digits; d++) {
		unsigned shift = d * RADIX_BITS;
		uint32_t at = 0, c;

		if (count[d][((in[0].p->tsc - lo) >> shift) & RADIX_MASK] == n)
			continue;
		for (uint32_t v = 0; v <= RADIX_MASK; v++) {
			c = count[d][v];
			count[d][v] = at;
			at += c;
		}
		if (src.p)
			radix_pass(&src, 1, dst, count[d], lo, shift);
		else
			radix_pass(in, k, dst, count[d], lo, shift);
		src = (struct ring_merge_in){ dst, dst + n };
		dst = dst == a ? b : a;
	}
	return (struct perfmon_event *)src.p;
}

/* First span of a sorted array with tsc >= wm. */
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

/*
 * Hand out, in timestamp order, every held span stamped before `wm` (all
 * of them with `all`).  Each sub-ring's spans are one sorted run (sorted
 * first if they are not); what goes out of each is a prefix, and the rest
 * stays where it is, held back for the next pass.  One busy sub-ring is
 * handed out as it lies, two are merged (one copy of each span), up to
 * RADIX_MIN_INPUTS in rounds of two, more by a radix sort
 * when the pass is large enough.  Returns the number held back.
 */
static size_t release(struct ring_reader *r, uint64_t wm, bool all)
{
	const struct perfmon_event *out = NULL;
	size_t total = 0, held = 0;
	uint32_t nin = 0;

	r->nlive = 0;
	for (uint32_t k = 0; k < r->nsub; k++) {
		struct ring_sub *s = &r->sub[k];
		size_t n;

		if (!s->nspans)
			continue;
		if (s->unsorted) {
			sort_sub(s->spans, s->nspans, r->merged + (size_t)k * r->seg_cap);
			s->unsorted = false;
		}
		n = all ? s->nspans : lower_bound(s->spans, s->nspans, wm);
		held += s->nspans - n;
		if (!n)
			continue;
		s->out = n;
		r->live[r->nlive++] = k;
		r->in[nin++] = (struct ring_merge_in){ s->spans, s->spans + n };
		total += n;
	}
	if (nin == 1) {
		out = r->in[0].p;
	} else if (nin == 2) {
		merge2(r->in[0].p, (size_t)(r->in[0].end - r->in[0].p), r->in[1].p,
		       (size_t)(r->in[1].end - r->in[1].p), r->merged);
		out = r->merged;
	} else if (nin > 2) {
		/* The rounds alternate with the free part of the value buffer:
		 * this call's values and every span it holds came from one
		 * pass and the spans held back before it, which is what the
		 * value buffer was sized for. */
		uint32_t rounds = 32 - (uint32_t)__builtin_clz(nin - 1);

		out = nin > RADIX_MIN_INPUTS && total * (rounds - 3) >= RADIX_MIN_WORK ?
		      radix_merge(r->in, nin, total, r->merged, r->values + r->nvalues,
				  (uint32_t (*)[RADIX_MASK + 1])r->radix) : NULL;
		if (!out)
			out = merge_rounds(r->in, nin, r->merged, r->values + r->nvalues);
	}
	r->last.spans = out;
	r->last.nspans = total;
	return held;
}

/* Forget what the last call handed out: each sub-ring keeps the spans it
 * held back, at the front of its buffer (still sorted). */
static void compact(struct ring_reader *r)
{
	for (uint32_t i = 0; i < r->nlive; i++) {
		struct ring_sub *s = &r->sub[r->live[i]];
		memmove(s->spans, s->spans + s->out, (s->nspans - s->out) * sizeof(*s->spans));
		s->nspans -= s->out;
		s->out = 0;
	}
	r->nlive = 0;
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
	uint64_t after, moved = 0;

	/* Every span held back was read before `wm` was taken, and stamped
	 * before it was published, so it is older than wm.  One that is not
	 * carries a timestamp from the future (a broken or hostile producer):
	 * hand it out now, counted, instead of holding it for ever.  (A quiet
	 * reader holds none.) */
	for (uint32_t i = 0; i < r->nsub && !r->quiet; i++) {
		struct ring_sub *s = &r->sub[i];
		size_t k = s->nspans ? lower_bound(s->spans, s->nspans, wm) : 0;
		if (k < s->nspans) {
			r->misordered += s->nspans - k;
			memcpy(r->values + r->nvalues, s->spans + k,
			       (s->nspans - k) * sizeof(*s->spans));
			r->nvalues += s->nspans - k;
			s->nspans = k;
		}
	}

#if !defined(__x86_64__) && !defined(__i386__)
	/* The caller read `wm` before this call.  On x86 its fenced rdtsc keeps
	 * the head loads after it; elsewhere the clock read is no memory access,
	 * and only a full fence keeps the heads from being read before it. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	/* The heads first, then whether they could be zeros of a shrink, then
	 * the clock again (the bound on how far they may have moved). */
	for (uint32_t i = 0; i < r->nsub; i++) {
		uint64_t h = __atomic_load_n(&ctl_of(r, i)->head, __ATOMIC_ACQUIRE);
		moved |= h ^ heads[i];
		heads[i] = h;
	}
	if (unrestored(r)) {
		r->quiet = false;   /* `heads` no longer says where a pass found them */
		return false;
	}
	if (r->quiet && !moved) {
		/* Nothing reserved since a pass that left nothing behind: this
		 * pass would aim every sub-ring where it is, read nothing and
		 * release nothing.  What it would change, it changes here. */
		if (wm > r->released_wm)
			r->released_wm = wm;
		r->pass_wm = wm;
		r->pass_now = r->last_pass_now = now;
		r->grace_on = false;
		if (r->frozen)
			r->final_pass = true;
		return false;
	}
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
	unsigned busy = 0;

	compact(r);
	if (!r->in_pass) {
		/* frozen and done, a quiet pass, or the mapping needs its owner */
		if (r->final_pass || !start_pass(r, now, watermark))
			goto out;
	}
	r->quiet = false;
	r->progress++;
	for (uint32_t i = 0; i < r->nsub; i++) {
		struct ring_sub *s = &r->sub[i];
		if (!drain_sub(r, s, now))
			complete = false;
		busy |= s->nholes | s->forged | s->replay;
	}
	if (complete) {
		/* Every event stamped before pass_wm is in hand (or a hole past
		 * the grace, counted): release those, in order. */
		r->quiet = !release(r, r->pass_wm, false) && !busy;
		if (r->pass_wm > r->released_wm)
			r->released_wm = r->pass_wm;
		r->in_pass = false;
		r->last_pass_now = r->pass_now;
	}
out:
	r->last.values = r->values;
	r->last.nvalues = r->nvalues;
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
		struct perfmon_subring *c = ctl_of(r, k);
		size_t ctl = (size_t)((char *)&c->head - (char *)r->hdr);
		uint64_t base, early;

		/* A sub-ring whose head survived keeps its numbering: its cut
		 * slots read as unpublished and end as holes, each counted
		 * once, like any other. */
		if (ctl + sizeof(c->head) <= cut_at)
			continue;
		/* Its head is gone, and with it every slot (they lie beyond
		 * the heads): what was not read yet is lost.  Stamps that
		 * reserved past last_head before the shrink may still publish,
		 * so the numbering resumes a capacity further, where no such
		 * stamp can share an index with a new one.  Producers that
		 * reserved from 0 since the size came back sit below the new
		 * numbering: lost too. */
		base = s->last_head + r->capacity;
		early = __atomic_fetch_add(&c->head, base, __ATOMIC_ACQ_REL);
		lost += (s->last_head - s->tail) + s->nholes + early;
		s->nholes = 0;
		s->tail = s->target = s->last_head = base + early;
		s->forged = s->replay = false;
	}
	r->dropped += lost;
	r->quiet = false;
	r->progress++;
	return lost;
}

size_t ring_reader_release_all(struct ring_reader *r, struct ring_batch *b)
{
	compact(r);
	release(r, 0, true);
	r->last.values = r->values;
	*b = r->last;
	return b->nspans;
}

struct ring_counters ring_reader_counters(const struct ring_reader *r)
{
	return (struct ring_counters){ r->read, r->dropped, r->stalled, r->head_resets,
				       r->misordered };
}

uint64_t ring_reader_tail(const struct ring_reader *r, uint32_t k)
{
	return r->sub[k].tail;
}

uint64_t ring_reader_progress(const struct ring_reader *r)
{
	return r->progress;
}

void ring_reader_set_stall_timeout(struct ring_reader *r, uint64_t stall_timeout)
{
	r->stall_timeout = stall_timeout;
}
