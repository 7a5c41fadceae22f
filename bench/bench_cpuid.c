/*
 * bench_cpuid.c - what it costs a stamp to learn which sub-ring is its own.
 *
 * A stamp picks the sub-ring of the CPU it runs on, then reserves a slot,
 * then reads the TSC (include/perfmon.h: reserving first is what makes the
 * daemon's time-ordered merge exact, docs/shm-layout.md).  The CPU number
 * must therefore be known before the reservation.  Candidates, each timed
 * back to back in a loop (ticks per call, the same empty loop subtracted):
 *
 *   rseq     the cpu_id_start word of glibc's registered rseq area: one
 *            thread-local load (what perfmon.h uses)
 *   rdpid    RDPID: TSC_AUX (the kernel keeps cpu | node << 12 there)
 *   rdtscp   RDTSCP: the TSC and TSC_AUX together; used for the CPU it
 *            would read the clock before reserving, or need a second
 *            clock read after it
 *   getcpu   sched_getcpu(): the vDSO getcpu
 *   fence    for scale: the fenced clock read every begin stamp makes
 *            (lfence; rdtsc)
 *
 * Usage: bench_cpuid [--reps N] [--iters N] [--cpu C]
 * Pinned to one CPU (default: the second allowed); min and median over the
 * repetitions.  A candidate this CPU lacks is reported as such.
 */
#include "build-config.h"

#include <cpuid.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfmon.h>

#include "bench_common.h"

#if defined(__x86_64__)

static void loop_empty(uint64_t n, void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		bench_barrier();
}

static void loop_rseq(uint64_t n, void *arg)
{
	uint32_t acc = 0;
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		acc += perfmon__cpu();
	bench_opaque(acc);
}

static void loop_rdpid(uint64_t n, void *arg)
{
	uint64_t acc = 0;
	(void)arg;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t id;
		__asm__ __volatile__("rdpid %0" : "=r"(id));
		acc += id;
	}
	bench_opaque(acc);
}

static void loop_rdtscp(uint64_t n, void *arg)
{
	uint64_t acc = 0;
	(void)arg;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t lo, hi, aux;
		__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
		acc += aux + lo;
	}
	bench_opaque(acc);
}

static void loop_getcpu(uint64_t n, void *arg)
{
	int acc = 0;
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		acc += sched_getcpu();
	bench_opaque(acc);
}

static void loop_fence(uint64_t n, void *arg)
{
	uint64_t acc = 0;
	(void)arg;
	for (uint64_t i = 0; i < n; i++)
		acc += perfmon__now_begin();
	bench_opaque(acc);
}

static bool have_rdpid(void)
{
	unsigned a, b, c, d;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 22));
}

static bool have_rdtscp(void)
{
	unsigned a, b, c, d;
	return __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27));
}

int main(int argc, char **argv)
{
	static const struct bench_column cols[] = {
		{ "method", "method", 8, true },
		{ "net min", "net_min_ticks", 9, false },
		{ "net median", "net_median_ticks", 11, false },
		{ "gross median", "gross_median_ticks", 13, false },
		{ "cpu seen", "cpu_seen", 9, false },
	};
	struct {
		const char *name;
		bench_loop_fn fn;
		bool present;
	} m[] = {
		{ "rseq", loop_rseq, true },
		{ "rdpid", loop_rdpid, have_rdpid() },
		{ "rdtscp", loop_rdtscp, have_rdtscp() },
		{ "getcpu", loop_getcpu, true },
		{ "fence", loop_fence, true },
	};
	unsigned reps = 31;
	uint64_t iters = 200000;
	int cpu = -1, helper, e;
	struct bench_machine mach;
	struct bench_table t;
	enum bench_format fmt = BENCH_FORMAT_LIVE;
	double *v, *bv;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			cpu = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_cpuid [--reps N] [--iters N] [--cpu C]\n");
			return 64;
		}
	}
	if (reps < 1 || iters < 1)
		return 64;
	bench_format_from_env(&fmt);
	if (cpu < 0 && bench_default_cpus(&cpu, &helper) < 0)
		cpu = 0;
	if ((e = bench_pin_thread(pthread_self(), cpu)) < 0) {
		fprintf(stderr, "bench_cpuid: cannot pin to cpu %d: %s\n", cpu, strerror(-e));
		return 1;
	}
	bench_machine_probe(&mach, 200);
	bench_machine_print(stdout, fmt, &mach);
	bench_note(stdout, fmt, "pinned to cpu %d; %u reps x %llu calls; ticks per call, net of "
		   "an empty loop timed before each rep", cpu, reps, (unsigned long long)iters);
	v = calloc(reps, sizeof(*v));
	bv = calloc(reps, sizeof(*bv));
	if (!v || !bv)
		return 1;
	t = (struct bench_table){ stdout, fmt, cols, sizeof(cols) / sizeof(cols[0]) };
	bench_table_begin(&t);
	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		struct bench_run run = { .iters = iters, .warmup = 3, .reps = reps,
					 .baseline = loop_empty };
		struct bench_result res = { .per_iter = v, .base_per_iter = bv };
		char c0[32], c1[32], c2[32], c3[32];
		uint32_t seen = 0;

		if (!m[k].present) {
			const char *row[] = { m[k].name, "absent", "-", "-", "-" };
			bench_table_row(&t, row);
			continue;
		}
		if (bench_run_reps(&run, m[k].fn, NULL, &res) < 0)
			break;
		/* each net figure against the empty loop of its own rep */
		for (unsigned r = 0; r < res.done; r++)
			v[r] -= bv[r];
		bench_min_median(v, res.done, &res.min, &res.median);
		if (!strcmp(m[k].name, "rseq"))
			seen = perfmon__cpu();
		else if (!strcmp(m[k].name, "getcpu"))
			seen = (uint32_t)sched_getcpu();
		else if (!strcmp(m[k].name, "rdpid")) {
			uint64_t id;
			__asm__ __volatile__("rdpid %0" : "=r"(id));
			seen = (uint32_t)(id & 0xfff);
		} else if (!strcmp(m[k].name, "rdtscp")) {
			uint32_t lo, hi, aux;
			__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
			seen = aux & 0xfff;
		}
		snprintf(c0, sizeof(c0), "%.2f", res.min);
		snprintf(c1, sizeof(c1), "%.2f", res.median);
		snprintf(c2, sizeof(c2), "%.2f", res.median + res.base_median);
		if (!strcmp(m[k].name, "fence"))
			snprintf(c3, sizeof(c3), "-");
		else
			snprintf(c3, sizeof(c3), "%u", seen);
		{
			const char *row[] = { m[k].name, c0, c1, c2, c3 };
			bench_table_row(&t, row);
		}
	}
	bench_table_end(&t);
	free(v);
	free(bv);
	return 0;
}

#else
int main(void)
{
	fprintf(stderr, "bench_cpuid: x86-64 only\n");
	return 0;
}
#endif
