/*
 * bench_stamp_disabled.c - the begin/end pair loop of bench_stamp, built
 * under one of the producer header's compile-time switches.
 *
 * Place in the data flow: the producer (stamp -> ring), measured.  The
 * switches of <perfmon.h> act per translation unit, so each variant is
 * this file compiled on its own (see mk/bench.am):
 *   -DPERFMON_ENABLED=0    every call compiles to nothing: the loop must
 *                          cost what an empty loop costs;
 *   -DPERFMON_SERIALIZE=0  plain rdtsc without fences, stamping into the
 *                          same attached ring as the fenced cases (the
 *                          header's process-wide state is one symbol).
 * The loop is the fenced pair loop of bench_stamp.c, statement for
 * statement.
 */
#include "build-config.h"

#include <perfmon.h>

#include "bench_common.h"

#if !PERFMON_ENABLED
#define BENCH_STAMP_VARIANT_LOOP bench_stamp_loop_compiled_out
#elif !PERFMON_SERIALIZE
#define BENCH_STAMP_VARIANT_LOOP bench_stamp_loop_unfenced
#else
#error "build with -DPERFMON_ENABLED=0 or -DPERFMON_SERIALIZE=0 (mk/bench.am does)"
#endif

/* `arg` points to the uint32_t point to stamp. */
void BENCH_STAMP_VARIANT_LOOP(uint64_t iters, void *arg);

__attribute__((noinline)) void BENCH_STAMP_VARIANT_LOOP(uint64_t iters, void *arg)
{
	const uint32_t point = *(const uint32_t *)arg;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		bench_opaque(i);
		perfmon_begin(point, PERFMON_NO_SEQ);
		perfmon_end(point, PERFMON_NO_SEQ);
	}
}
