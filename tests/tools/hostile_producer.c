/*
 * hostile_producer.c - a producer process that writes what a buggy or
 * malicious producer could: adversarial events and labels through the
 * public API, and raw bytes into the ring and the name table.
 *
 * Flow: [this process] -> ring and control block -> the perfmond under
 * test.  tests/integration/hostile.sh runs it against a real daemon and checks that the
 * daemon stays up, counts what happened and writes clean output.
 *
 *   hostile_producer NAME exact
 *       Deterministic abuse on points 10-17 through the producer API (and
 *       the producer protocol with chosen timestamps), then hostile labels.
 *       Prints "expect POINT STAGE COLUMN VALUE" lines: the CSV totals a
 *       correct daemon must end up with (columns as in tests/tools/csvcheck),
 *       and "events N": how many events it published.
 *   hostile_producer NAME overflow FIRST COUNT
 *       One begin/end span on each of COUNT points from FIRST: more points
 *       than the daemon's tables hold.  Prints "events N".
 *   hostile_producer NAME random SEED EVENTS
 *       EVENTS events with random points (every bound and beyond), steps
 *       (reserved ones included), seqs (beyond 24 bits, so they alias) and
 *       timestamps (backwards, 0, 2^64-1), all through the real publish
 *       protocol: every one must be accounted read, dropped or stalled.
 *       Points 10-17 are left alone.  Prints "events N".
 *   hostile_producer NAME scribble SEED SECONDS
 *       Raw garbage for SECONDS: random slot bytes and markers, the shared
 *       head moved forwards and backwards, name-table entries with random
 *       keys, claim bits and unterminated labels, generation bumps, the
 *       collector status (paths, seqlock, counters) overwritten, mixed
 *       with random events.  Nothing is promised about the counts then,
 *       only that the daemon survives and its output stays well-formed.
 *   hostile_producer NAME claim PID
 *       Write PID and "running" into the control block's collector status,
 *       as if a collector PID were draining this ring.
 *
 * Exit status 0, or 1 when the segments cannot be opened.  Random choices
 * come from a fixed-seed generator, so a failing run can be repeated.
 */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfmon.h>

#include "../unit/testrand.h"
#include "shm.h"
#include "tsc.h"

static struct shm_instance inst;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The producer protocol of docs/shm-layout.md, with a timestamp of our
 * choosing. */
static uint32_t my_sub(void)
{
	return perfmon__cpu() & (inst.subrings - 1);
}

static struct perfmon_slot *sub_slots(uint32_t sub)
{
	return PERFMON_SUBRING_SLOTS(inst.ring, inst.subrings, inst.capacity, sub);
}

static void publish(uint64_t tsc, uint32_t point, uint32_t event)
{
	uint32_t sub = my_sub();
	uint64_t idx = __atomic_fetch_add(&PERFMON_SUBRING(inst.ring, sub)->head, 1,
					  __ATOMIC_RELAXED);
	struct perfmon_slot *s = sub_slots(sub) + (idx & (inst.capacity - 1));

	__atomic_store_n(&s->marker, (idx + 1) | PERFMON_SLOT_BUSY, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->tsc, tsc, __ATOMIC_RELAXED);
	__atomic_store_n(&s->point_event, (uint64_t)point | (uint64_t)event << 32,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&s->marker, idx + 1, __ATOMIC_RELEASE);
}

/*
 * Publish n events of `point` as one group: all slots reserved at once and
 * the first published last, so the daemon's reader, which waits at the
 * first, takes the whole group in one batch.  A sweep for aged spans can
 * then never fall between a span's begin and its end, whatever their
 * timestamps say.
 */
static void publish_group(unsigned n, const uint64_t *tsc, uint32_t point,
			  const uint32_t *event)
{
	uint32_t sub = my_sub();
	uint64_t idx = __atomic_fetch_add(&PERFMON_SUBRING(inst.ring, sub)->head, n,
					  __ATOMIC_RELAXED);
	struct perfmon_slot *slots = sub_slots(sub);

	for (unsigned k = 0; k < n; k++)
		__atomic_store_n(&slots[(idx + k) & (inst.capacity - 1)].marker,
				 (idx + k + 1) | PERFMON_SLOT_BUSY, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (unsigned k = n; k-- > 0;) {
		struct perfmon_slot *s = &slots[(idx + k) & (inst.capacity - 1)];

		__atomic_store_n(&s->tsc, tsc[k], __ATOMIC_RELAXED);
		__atomic_store_n(&s->point_event, (uint64_t)point | (uint64_t)event[k] << 32,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&s->marker, idx + k + 1, __ATOMIC_RELEASE);
	}
}

static void expect(uint32_t point, const char *stage, int column, uint64_t value)
{
	printf("expect %u %s %d %llu\n", point, stage, column, (unsigned long long)value);
}

/* Write a name-table entry as a careless producer would: no terminator. */
static void raw_label(uint32_t point, uint8_t step, const char *bytes)
{
	for (uint32_t i = 0; i < inst.max_names; i++) {
		uint64_t zero = 0;
		struct perfmon_name_entry *e = &inst.names[i];

		if (!__atomic_compare_exchange_n(&e->key, &zero,
						 PERFMON_NAME_KEY(point, step) | PERFMON_NAME_CLAIMED,
						 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		for (size_t k = 0; k < sizeof(e->label); k++)
			e->label[k] = bytes[k % strlen(bytes)];
		__atomic_store_n(&e->key, PERFMON_NAME_KEY(point, step), __ATOMIC_RELEASE);
		__atomic_fetch_add(&inst.meta->name_generation, 1, __ATOMIC_RELEASE);
		return;
	}
}

/*
 * Points 10-17, each one kind of abuse whose effect on the counters is
 * known exactly.  Stage and point labels are hostile too.
 */
static int cmd_exact(void)
{
	enum { N = 50 };
	const uint32_t wrap = PERFMON_MAX_SEQ + 1;
	uint64_t events = 0;
	char longest[PERFMON_LABEL_SIZE + 8];
	int e;

	/* Labels first, so the first interval already carries them. */
	perfmon_name(10, 0, "orphans,\"quoted\"\r\ninjected,row,0,0");
	perfmon_name(11, 0, "\x1b]0;pwned\x07\x1b[2J\x1b[31mred");
	perfmon_name(12, 0, "bad\xff\xfe utf8 \xc0\xaf overlong \xed\xa0\x80 surrogate");
	perfmon_name(13, 0, "c1\xc2\x9b" "31m \xc2\x85 nel");
	perfmon_name(14, 0, "\xe2\x80\xae" "desrever \xe2\x81\xa6 isolate");
	perfmon_name(15, 0, "  spaces  ");
	perfmon_name(16, 0, "total");
	perfmon_name(16, 0xFF, "value");          /* a stage may not pose as these */
	perfmon_name(17, 0xFD, "tab\there;semi;colon");
	memset(longest, 'L', sizeof(longest));
	longest[sizeof(longest) - 1] = '\0';
	e = perfmon_name(17, 0, longest);
	if (e != -ENAMETOOLONG) {
		fprintf(stderr, "hostile_producer: an over-long label gave %d, not -ENAMETOOLONG\n", e);
		return 1;
	}
	longest[PERFMON_LABEL_SIZE - 1] = '\0';   /* 63 bytes: the longest that fits */
	perfmon_name(17, 0, longest);
	raw_label(12, 1, "unterminated\x1b[1m,\n");

	/* 10: steps and ends with no open span: orphans. */
	for (uint32_t s = 0; s < N; s++) {
		perfmon_step(10, 1, 1000 + s);
		perfmon_end(10, 2000 + s);
		events += 2;
	}
	expect(10, "total", 8, 2 * N);
	expect(10, "total", 3, 0);

	/* 11: the end earlier than the begin, and every other span a step
	 * earlier still.  The daemon merges the per-CPU sub-rings into
	 * timestamp order before pairing, so the end (and the step) arrive
	 * first and find no span: orphans; the begin is left open. */
	for (uint32_t s = 0; s < N; s++) {
		uint64_t t0 = tsc_now();
		uint64_t tsc[3] = { t0, t0 - 1, t0 - 1000 };
		uint32_t ev[3] = { PERFMON_EVENT(PERFMON_BEGIN_STEP, s + 1),
				   PERFMON_EVENT(1, s + 1), PERFMON_EVENT(PERFMON_END_STEP, s + 1) };

		if (s & 1) {
			publish_group(3, tsc, 11, ev);
			events += 3;
		} else {
			tsc[1] = tsc[2];
			ev[1] = ev[2];
			publish_group(2, tsc, 11, ev);
			events += 2;
		}
	}
	expect(11, "total", 5, 0);
	expect(11, "total", 8, N + N / 2);
	expect(11, "total", 3, 0);

	/* 12: a second begin on an open span: abandoned, the later one wins. */
	for (uint32_t s = 0; s < N; s++) {
		perfmon_begin(12, 300 + s);
		perfmon_begin(12, 300 + s);
		perfmon_end(12, 300 + s);
		events += 3;
	}
	expect(12, "total", 7, N);
	expect(12, "total", 3, N);

	/* 13: values at both ends of the range. */
	for (uint32_t s = 0; s < N; s++) {
		perfmon_value(13, 0);
		perfmon_value(13, UINT64_MAX);
		events += 2;
	}
	expect(13, "value", 3, 2 * N);

	/* 14: seqs beyond 24 bits alias: the second begin re-opens the span. */
	for (uint32_t s = 0; s < N; s++) {
		perfmon_begin(14, 40 + s);
		perfmon_begin(14, 40 + s + wrap);
		perfmon_end(14, 40 + s + 2 * wrap);
		events += 3;
	}
	expect(14, "total", 7, N);
	expect(14, "total", 3, N);

	/* 15: timestamps at the top of the range: a one-tick span counts
	 * (both events look as if from the future and are handed on, in
	 * order, as misordered); an end that wrapped to 0 sorts before its
	 * begin: an orphan. */
	for (uint32_t s = 0; s < N; s++) {
		const uint64_t ok[2] = { UINT64_MAX - 1, UINT64_MAX }, wrapped[2] = { UINT64_MAX, 0 };
		const uint32_t ev1[2] = { PERFMON_EVENT(PERFMON_BEGIN_STEP, 2 * s + 1),
					  PERFMON_EVENT(PERFMON_END_STEP, 2 * s + 1) };
		const uint32_t ev2[2] = { PERFMON_EVENT(PERFMON_BEGIN_STEP, 2 * s + 2),
					  PERFMON_EVENT(PERFMON_END_STEP, 2 * s + 2) };

		publish_group(2, ok, 15, ev1);
		publish_group(2, wrapped, 15, ev2);
		events += 4;
	}
	expect(15, "total", 3, N);
	expect(15, "total", 5, 0);
	expect(15, "total", 8, N);

	/* 16: begin and end written as steps 0 and 0xFF, seq 0 (no seq). */
	for (uint32_t s = 0; s < N; s++) {
		perfmon_step(16, PERFMON_BEGIN_STEP, PERFMON_NO_SEQ);
		perfmon_step(16, PERFMON_END_STEP, PERFMON_NO_SEQ);
		events += 2;
	}
	expect(16, "total", 3, N);

	/* 17: the highest span step. */
	for (uint32_t s = 0; s < N; s++) {
		perfmon_begin(17, s);
		perfmon_step(17, PERFMON_MAX_SPAN_STEP, s);
		perfmon_end(17, s);
		events += 3;
	}
	expect(17, "total", 3, N);
	for (int col = 4; col <= 9; col++)
		expect(17, "total", col, 0);
	printf("events %llu\n", (unsigned long long)events);
	return 0;
}

static int cmd_overflow(uint32_t first, uint32_t count)
{
	for (uint32_t p = first; p < first + count; p++) {
		perfmon_begin(p, 1);
		perfmon_end(p, 1);
	}
	printf("events %llu\n", (unsigned long long)count * 2);
	return 0;
}

/* A point from every interesting region, never 10-17. */
static uint32_t random_point(void)
{
	static const uint32_t edges[] = { 0, 1, 9, 18, 63, 64, 65, 255, 256, 1023, 1024, 1025,
					  65535, 65536, 0x7FFFFFFF, 0x80000000, UINT32_MAX - 1,
					  UINT32_MAX };
	uint64_t r = rng_next();
	uint32_t p = r & 1 ? edges[(r >> 1) % (sizeof(edges) / sizeof(edges[0]))] :
		     (uint32_t)(r >> 32);

	return p >= 10 && p <= 17 ? p + 8 : p;
}

static uint8_t random_step(void)
{
	static const uint8_t edges[] = { 0, 0, 1, 2, 0xFD, 0xFE, 0xFF, 0xFF };
	uint64_t r = rng_next();

	return r & 1 ? edges[(r >> 1) % sizeof(edges)] : (uint8_t)(r >> 8);
}

static uint64_t random_tsc(uint64_t *clock)
{
	uint64_t r = rng_next();

	switch (r % 8) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX;
	case 2:
		return *clock - (r >> 40);       /* backwards */
	default:
		return *clock += (r >> 52);      /* forwards, mostly */
	}
}

static void random_event(uint64_t *clock)
{
	uint32_t seq = (uint32_t)rng_next();

	if (rng_next() & 1)
		seq &= 0x1F;                     /* few seqs: spans that really pair */
	/* PERFMON_EVENT keeps 24 bits of seq: larger ones alias. */
	publish(random_tsc(clock), random_point(), PERFMON_EVENT(random_step(), seq));
}

static int cmd_random(uint64_t events)
{
	uint64_t clock = 1u << 30;

	for (uint64_t i = 0; i < events; i++)
		random_event(&clock);
	printf("events %llu\n", (unsigned long long)events);
	return 0;
}

static void scribble_slot(void)
{
	uint32_t sub = (uint32_t)rng_next() & (inst.subrings - 1);
	struct perfmon_slot *slots = sub_slots(sub);
	uint64_t i = rng_next() & (inst.capacity - 1);
	uint64_t head = __atomic_load_n(&PERFMON_SUBRING(inst.ring, sub)->head, __ATOMIC_RELAXED);
	uint64_t r = rng_next();

	switch (r % 4) {
	case 0:       /* a marker that claims an index not reserved yet */
		slots[i].marker = head + 1 + (rng_next() % 4);
		break;
	case 1:       /* busy forever */
		slots[i].marker = (head + 1) | PERFMON_SLOT_BUSY;
		break;
	case 2:       /* pure noise */
		slots[i].marker = rng_next();
		break;
	default:      /* a plausible marker for an older lap */
		slots[i].marker = head > inst.capacity ? head - inst.capacity : 1;
		break;
	}
	slots[i].tsc = rng_next();
	slots[i].point_event = rng_next();
	slots[i].reserved = rng_next();
}

static void scribble_head(void)
{
	uint64_t r = rng_next();
	uint64_t *h = &PERFMON_SUBRING(inst.ring, (uint32_t)rng_next() & (inst.subrings - 1))->head;
	uint64_t head = __atomic_load_n(h, __ATOMIC_RELAXED);

	if (r & 1)
		__atomic_store_n(h, head + (r >> 56), __ATOMIC_RELAXED);
	else
		__atomic_store_n(h, head - (head < (r >> 56) ? head : r >> 56), __ATOMIC_RELAXED);
}

static void scribble_name(void)
{
	struct perfmon_name_entry *e;
	uint64_t r = rng_next();

	if (!inst.max_names)
		return;
	e = &inst.names[r % inst.max_names];
	for (size_t k = 0; k < sizeof(e->label); k += 8) {
		uint64_t v = rng_next();
		memcpy(e->label + k, &v, 8);
	}
	switch ((r >> 32) % 4) {
	case 0:
		e->key = rng_next();
		break;
	case 1:
		e->key = PERFMON_NAME_KEY(random_point(), random_step()) | PERFMON_NAME_CLAIMED;
		break;
	default:
		e->key = PERFMON_NAME_KEY(random_point(), random_step());
		break;
	}
	__atomic_fetch_add(&inst.meta->name_generation, 1, __ATOMIC_RELEASE);
}

/* The collector status is the daemon's to write, but nothing stops a
 * producer: unterminated paths, a seqlock left odd, absurd counters. */
static void scribble_status(void)
{
	struct perfmon_meta_header *m = inst.meta;
	uint64_t r = rng_next();

	switch (r % 4) {
	case 0:
		for (size_t k = 0; k < sizeof(m->csv_path); k++)
			m->csv_path[k] = (char)(rng_next() | 1);
		break;
	case 1:
		for (size_t k = 0; k < sizeof(m->summary_path); k++)
			m->summary_path[k] = (char)(rng_next() | 1);
		break;
	case 2:
		__atomic_store_n(&m->paths_seq, rng_next() | 1, __ATOMIC_RELAXED);
		break;
	default:
		__atomic_store_n(&m->start_ns, rng_next(), __ATOMIC_RELAXED);
		__atomic_store_n(&m->tsc_hz_milli, rng_next(), __ATOMIC_RELAXED);
		__atomic_store_n(&m->summary_request, rng_next(), __ATOMIC_RELAXED);
		break;
	}
}

static int cmd_scribble(double seconds)
{
	double end = now_s() + seconds;
	uint64_t clock = 1u << 30;

	while (now_s() < end) {
		for (int i = 0; i < 1000; i++) {
			uint64_t r = rng_next() % 1000;

			if (r < 10)
				scribble_slot();
			else if (r < 11)
				scribble_head();
			else if (r < 15)
				scribble_name();
			else if (r < 16)
				scribble_status();
			else
				random_event(&clock);
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char err[512];
	int e;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3) {
		fprintf(stderr, "usage: hostile_producer NAME exact|overflow|random|scribble|claim ...\n");
		return 64;
	}
	if (shm_open_existing(argv[1], true, &inst, err, sizeof(err)) < 0) {
		fprintf(stderr, "hostile_producer: %s\n", err);
		return 1;
	}
	if ((e = perfmon_attach(argv[1])) < 0) {
		fprintf(stderr, "hostile_producer: attach %s: %s\n", argv[1], strerror(-e));
		return 1;
	}
	if (!strcmp(argv[2], "exact"))
		return cmd_exact();
	if (!strcmp(argv[2], "claim") && argc == 4) {
		__atomic_store_n(&inst.meta->collector_pid, (uint32_t)strtoul(argv[3], NULL, 0),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&inst.meta->collector_state, PERFMON_COLLECTOR_RUNNING,
				 __ATOMIC_RELEASE);
		return 0;
	}
	if (!strcmp(argv[2], "overflow") && argc == 5)
		return cmd_overflow((uint32_t)strtoul(argv[3], NULL, 0),
				    (uint32_t)strtoul(argv[4], NULL, 0));
	if (argc == 5) {
		rng_seed(strtoull(argv[3], NULL, 0));
		if (!strcmp(argv[2], "random"))
			return cmd_random(strtoull(argv[4], NULL, 0));
		if (!strcmp(argv[2], "scribble"))
			return cmd_scribble(atof(argv[4]));
	}
	fprintf(stderr, "hostile_producer: bad arguments\n");
	return 64;
}
