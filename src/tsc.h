/*
 * tsc.h - the producers' clock as the daemon sees it: reading it, learning
 * its rate, converting ticks to nanoseconds, and measuring what one stamp
 * costs.
 *
 * Place in the data flow: producers stamp raw ticks into the ring (TSC on
 * x86, CLOCK_MONOTONIC nanoseconds elsewhere: PERFMON_CLOCK in
 * perfmon/clock.h); pairing and statistics work in those raw ticks; the interval report
 * converts them to ns, us or cycles with the rate estimated here.  The rate
 * is measured against CLOCK_MONOTONIC_RAW (not slewed by NTP) from one base
 * pair taken at start-up, and re-estimated from that same base pair at each
 * flush, so its precision improves over the whole run.
 *
 * A struct tsc_clock is not shared between threads by this module: the
 * caller refines and reads it on one thread, or serialises access.
 */
#ifndef PERFMOND_TSC_H
#define PERFMOND_TSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tsc_clock {
	uint64_t base_tsc, base_ns;    /* base pair: ticks and CLOCK_MONOTONIC_RAW ns */
	double hz;                     /* ticks per second; 0 until started */
	uint64_t span_ns;              /* length of the interval hz was measured over */
};

/* Whether the TSC runs at a constant rate through frequency changes and
 * deep sleep states (CPUID 0x80000007 EDX bit 8).  Always false off x86,
 * where the timestamps are CLOCK_MONOTONIC and the question does not
 * arise. */
bool tsc_invariant(void);

/* Where the kernel says which clock source it trusts. */
#define TSC_CLOCKSOURCE_PATH "/sys/devices/system/clocksource/clocksource0/current_clocksource"

/*
 * Whether the TSCs of all CPUs may be taken as one clock, as the kernel
 * judged it: its clock source (read from `path`, normally
 * TSC_CLOCKSOURCE_PATH) is `tsc` only when it found them synchronised.  The
 * time-ordered merge of the per-CPU sub-rings, and every span that begins
 * on one CPU and ends on another, rely on it.  Returns 1 (tsc), 0 (another
 * source, named in `name`) or a negative errno when it cannot be read
 * (`name` then empty).
 */
int tsc_clocksource(const char *path, char *name, size_t n);

/* Current reading of the clock the producers stamp with: plain rdtsc on
 * x86 (no fence: callers want a cheap "now", not an ordering point),
 * CLOCK_MONOTONIC nanoseconds elsewhere. */
uint64_t tsc_now(void);

/*
 * Take the base pair and estimate the rate over a spin of calibrate_ms
 * milliseconds (at least 1; 10 is plenty for a first estimate, refining
 * does the rest).  Off x86 the ticks are nanoseconds: hz is exactly 1e9 and
 * there is no spin.
 */
void tsc_clock_start(struct tsc_clock *c, unsigned calibrate_ms);

/* Re-estimate hz over the whole time since tsc_clock_start.  Ignored when
 * that span is not longer than the one the current estimate used, or when
 * either clock appears to have gone backwards. */
void tsc_clock_refine(struct tsc_clock *c);

/* Ticks per second (1e9 off x86); 0 before tsc_clock_start. */
double tsc_clock_hz(const struct tsc_clock *c);

/* Duration of `ticks` in nanoseconds; 0 before tsc_clock_start. */
double tsc_to_ns(const struct tsc_clock *c, double ticks);

/* Duration of `ns` nanoseconds in ticks, rounded, saturating at
 * UINT64_MAX; 0 before tsc_clock_start. */
uint64_t tsc_ns_to_ticks(const struct tsc_clock *c, uint64_t ns);

/* The CLOCK_REALTIME instant (ns since the epoch) of timestamp `tsc`,
 * given that `ref_tsc` happened at `ref_ns` and the clock runs at `hz`
 * (`ref_ns` itself when hz is not known). */
uint64_t tsc_realtime_at(uint64_t tsc, uint64_t ref_tsc, uint64_t ref_ns, double hz);

/*
 * Per-stamp overhead in ticks: the smallest (end - begin) over `pairs`
 * back-to-back begin/end stamps (at least 1000) published into a private
 * ring through the producer header's own timestamp and publish code.  This
 * is what one stamp adds between two timestamps of a span.  0 only if the
 * private ring cannot be allocated.
 */
uint64_t tsc_measure_overhead(unsigned pairs);

#endif /* PERFMOND_TSC_H */
