/*
 * tsc.c - TSC rate estimation, unit conversion and stamp overhead.
 *
 * Place in the data flow: beside the drain.  The daemon starts a clock when
 * the drain thread starts, refines it at every flush and converts the raw
 * figures of the interval report with it; it measures the stamp overhead
 * once at start-up (reported in the summary, optionally subtracted by the
 * pairing code).
 *
 * The rate is Δticks / Δns between two pairs (ticks, CLOCK_MONOTONIC_RAW).
 * Each pair is read as ns, ticks, ns and the tightest of a few tries is
 * kept with the middle of its ns bracket, so a preemption between the
 * reads cannot skew it.  After 10 ms the estimate is good to a few ppm of
 * the bracket; every refinement divides that error by the run time.
 */
#include "build-config.h"

#include "tsc.h"

#include <perfmon/stamp.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define TSC_IS_X86 1
#include <cpuid.h>
#include <x86intrin.h>
#else
#define TSC_IS_X86 0
#endif

#define TSC_NS_PER_S 1000000000.0
#define TSC_PAIR_TRIES 8
#define TSC_OVERHEAD_MIN_PAIRS 1000u
#define TSC_OVERHEAD_RING_SLOTS 4096u

static uint64_t tsc_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool tsc_invariant(void)
{
#if TSC_IS_X86
	unsigned eax, ebx, ecx, edx;

	/* __get_cpuid checks the maximum extended leaf first. */
	if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx))
		return false;
	return (edx >> 8) & 1u;
#else
	return false;
#endif
}

int tsc_clocksource(const char *path, char *name, size_t n)
{
	FILE *f = fopen(path, "re");
	size_t len;

	name[0] = '\0';
	if (!f)
		return -errno;
	if (!fgets(name, (int)n, f)) {
		fclose(f);
		name[0] = '\0';
		return -EIO;
	}
	fclose(f);
	len = strcspn(name, "\n");
	name[len] = '\0';
	return strcmp(name, "tsc") == 0;
}

uint64_t tsc_now(void)
{
#if TSC_IS_X86
	return __rdtsc();
#else
	return tsc_clock_ns(CLOCK_MONOTONIC);
#endif
}

#if TSC_IS_X86
/* A TSC read that cannot drift into the clock_gettime calls around it. */
static uint64_t tsc_read_ordered(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

/* One (ticks, raw ns) pair: the tightest ns bracket of a few tries. */
static void tsc_read_pair(uint64_t *ret_tsc, uint64_t *ret_ns)
{
	uint64_t best = UINT64_MAX, tsc = 0, ns = 0;
	int i;

	for (i = 0; i < TSC_PAIR_TRIES; i++) {
		uint64_t t0 = tsc_clock_ns(CLOCK_MONOTONIC_RAW);
		uint64_t t = tsc_read_ordered();
		uint64_t t1 = tsc_clock_ns(CLOCK_MONOTONIC_RAW);

		if (t1 >= t0 && t1 - t0 < best) {
			best = t1 - t0;
			tsc = t;
			ns = t0 + (t1 - t0) / 2;
		}
	}
	if (best == UINT64_MAX) {
		tsc = tsc_read_ordered();
		ns = tsc_clock_ns(CLOCK_MONOTONIC_RAW);
	}
	*ret_tsc = tsc;
	*ret_ns = ns;
}

/* Take the rate over [base, now] if that span beats the current one. */
static void tsc_clock_update(struct tsc_clock *c, uint64_t tsc, uint64_t ns)
{
	uint64_t dns, dtsc;

	if (ns <= c->base_ns || tsc <= c->base_tsc)
		return;
	dns = ns - c->base_ns;
	dtsc = tsc - c->base_tsc;
	if (dns <= c->span_ns)
		return;
	c->hz = (double)dtsc * TSC_NS_PER_S / (double)dns;
	c->span_ns = dns;
}
#endif

void tsc_clock_start(struct tsc_clock *c, unsigned calibrate_ms)
{
#if TSC_IS_X86
	uint64_t until, tsc, ns;

	memset(c, 0, sizeof(*c));
	if (calibrate_ms == 0)
		calibrate_ms = 1;
	tsc_read_pair(&c->base_tsc, &c->base_ns);
	until = c->base_ns + (uint64_t)calibrate_ms * 1000000u;
	/* Spin rather than sleep: a wake-up could land anywhere later. */
	while (tsc_clock_ns(CLOCK_MONOTONIC_RAW) < until)
		_mm_pause();
	tsc_read_pair(&tsc, &ns);
	tsc_clock_update(c, tsc, ns);
#else
	(void)calibrate_ms;
	memset(c, 0, sizeof(*c));
	c->base_ns = tsc_clock_ns(CLOCK_MONOTONIC_RAW);
	c->base_tsc = tsc_now();
	c->hz = TSC_NS_PER_S;
#endif
}

void tsc_clock_refine(struct tsc_clock *c)
{
#if TSC_IS_X86
	uint64_t tsc, ns;

	if (c->hz <= 0.0)
		return;
	tsc_read_pair(&tsc, &ns);
	tsc_clock_update(c, tsc, ns);
#else
	(void)c;
#endif
}

double tsc_clock_hz(const struct tsc_clock *c)
{
	return c->hz;
}

double tsc_to_ns(const struct tsc_clock *c, double ticks)
{
	if (!(c->hz > 0.0))
		return 0.0;
	return ticks * TSC_NS_PER_S / c->hz;
}

uint64_t tsc_ns_to_ticks(const struct tsc_clock *c, uint64_t ns)
{
	double t;

	if (!(c->hz > 0.0))
		return 0;
	t = (double)ns * c->hz / TSC_NS_PER_S + 0.5;
	/* 2^64 is the first double that no longer fits. */
	if (t >= 18446744073709551616.0)
		return UINT64_MAX;
	return (uint64_t)t;
}

/*
 * The private ring gets a header like the daemon's (magic, geometry, clock)
 * so the publish path below is byte for byte what a producer runs; only the
 * enabled check (one load of a pointer) is left out.
 */
uint64_t tsc_measure_overhead(unsigned pairs)
{
	const uint64_t cap = TSC_OVERHEAD_RING_SLOTS, mask = cap - 1;
	size_t bytes = PERFMON_RING_BYTES(1, TSC_OVERHEAD_RING_SLOTS);
	uintptr_t bits = perfmon__hot_bits(cap, 1);
	struct perfmon_slot *slots;
	struct perfmon_ring_header *r;
	uint64_t best = UINT64_MAX;
	unsigned i;

	if (pairs < TSC_OVERHEAD_MIN_PAIRS)
		pairs = TSC_OVERHEAD_MIN_PAIRS;
	r = aligned_alloc(64, bytes);
	if (!r)
		return 0;
	memset(r, 0, bytes);
	r->magic = PERFMON_RING_MAGIC;
	r->version = PERFMON_LAYOUT_VERSION;
	r->header_size = PERFMON_RING_HEADER_SIZE;
	r->slot_size = sizeof(struct perfmon_slot);
	r->clock = PERFMON_CLOCK;
	r->capacity = cap;
	r->subrings = 1;
	r->slots_offset = (uint32_t)PERFMON_RING_SLOTS_OFFSET(1);
	slots = PERFMON_SUBRING_SLOTS(r, 1, cap, 0);

	for (i = 0; i < pairs; i++) {
		uint64_t ts0, ts1;

		/* The stamps read the clock themselves, after reserving. */
		perfmon__publish_sub((char *)r, bits, perfmon__cpu(), PERFMON__TS_BEGIN, 0, 0,
				     PERFMON_EVENT(PERFMON_BEGIN_STEP, 0));
		perfmon__publish_sub((char *)r, bits, perfmon__cpu(), PERFMON__TS_END, 0, 0,
				     PERFMON_EVENT(PERFMON_END_STEP, 0));
		ts0 = slots[(2 * (uint64_t)i) & mask].tsc;
		ts1 = slots[(2 * (uint64_t)i + 1) & mask].tsc;
		if (ts1 >= ts0 && ts1 - ts0 < best)
			best = ts1 - ts0;
	}
	free(r);
	/* Every pair went backwards (a migration across unsynchronised TSCs)
	 * or the clock never ticked between stamps: report the least
	 * measurable cost rather than none. */
	if (best == UINT64_MAX || best == 0)
		best = 1;
	return best;
}

uint64_t tsc_realtime_at(uint64_t tsc, uint64_t ref_tsc, uint64_t ref_ns, double hz)
{
	double ago;

	/* The offset is small and converted alone: the epoch time itself does
	 * not fit a double's mantissa to the nanosecond. */
	if (hz <= 0)
		return ref_ns;
	if (tsc >= ref_tsc)
		return ref_ns + (uint64_t)((double)(tsc - ref_tsc) * 1e9 / hz + 0.5);
	ago = (double)(ref_tsc - tsc) * 1e9 / hz + 0.5;
	return ago >= (double)ref_ns ? 0 : ref_ns - (uint64_t)ago;
}
