/*
 * bench_common.h - what every benchmark in bench/ shares: the timer around
 * a measured loop, repetitions with min and median, optional hardware
 * counters, the description of the machine and of the noise on it, CPU
 * pinning, and tables printed as a live view, Markdown or CSV.
 *
 * Place in the data flow: outside it.  Benchmarks drive the real code of
 * each stage (producer stamps into a real ring, the daemon's drain,
 * pairing, statistics) and measure it here; nothing in the daemon or the
 * producer header depends on this file.
 *
 * Unit: TSC ticks.  A measured region is opened with lfence;rdtsc;lfence
 * (nothing before it is still running, nothing after it has started) and
 * closed with rdtscp;lfence (everything inside has retired).  A figure is
 * the cost of one operation run back to back in a loop, i.e. throughput
 * cost; independent work may overlap between iterations.
 *
 * The TSC rate comes from src/tsc.c: link src/libperfmond.a.
 */
#ifndef PERFMOND_BENCH_COMMON_H
#define PERFMOND_BENCH_COMMON_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- Timer ------------------------------------------------------------- */

#if defined(__x86_64__) || defined(__i386__)
/* Open a measured region: earlier work has finished, later work waits. */
static inline uint64_t bench_tsc_start(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* Close a measured region: everything inside has retired. */
static inline uint64_t bench_tsc_stop(void)
{
	uint32_t lo, hi, aux;

	__asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
	(void)aux;
	return ((uint64_t)hi << 32) | lo;
}

/* A cheap, unordered reading, for deadlines and pacing. */
static inline uint64_t bench_tsc_now(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#else
#error "bench/ measures in TSC ticks and needs an x86 CPU"
#endif

/*
 * Make `x` opaque to the optimiser: it may have changed, so a loop counter
 * passed through this cannot be strength-reduced, its trip count cannot be
 * precomputed and work depending on it cannot be hoisted out of the loop.
 * Costs no instruction.
 */
#define bench_opaque(x) __asm__ __volatile__("" : "+r"(x))

/* Compiler barrier: memory may have been read or written here. */
#define bench_barrier() __asm__ __volatile__("" : : : "memory")

/* ---- Hardware counters (perf_event_open) ------------------------------- */

#define BENCH_MAX_COUNTERS 4

struct bench_counter {
	const char *name;          /* as printed, e.g. "instructions" */
	uint32_t type;             /* PERF_TYPE_* */
	uint64_t config;           /* PERF_COUNT_* */
	int fd;                    /* -1 when unavailable */
	int err;                   /* errno of the failed open; 0 when open */
};

struct bench_counters {
	unsigned n;
	struct bench_counter c[BENCH_MAX_COUNTERS];
};

/* A snapshot of every counter of a set, taken by bench_counters_read. */
struct bench_counter_snap {
	uint64_t value[BENCH_MAX_COUNTERS];
	uint64_t enabled[BENCH_MAX_COUNTERS];
	uint64_t running[BENCH_MAX_COUNTERS];
	bool ok[BENCH_MAX_COUNTERS];
};

/* Empty set. */
void bench_counters_init(struct bench_counters *cs);

/*
 * Open one counter for the calling thread, user space only, counting from
 * now on.  The attempt is recorded either way, so the benchmark can say
 * which counter is missing and why.  Returns 0 or a negative errno
 * (-E2BIG when the set is full).
 */
int bench_counter_add(struct bench_counters *cs, const char *name, uint32_t type,
		      uint64_t config);

/* Why counter `c` could not be opened, in words a person can act on,
 * into buf (always NUL-terminated). */
void bench_counter_why(const struct bench_counter *c, char *buf, size_t len);

/* Read every open counter of the set into `snap`. */
void bench_counters_read(const struct bench_counters *cs, struct bench_counter_snap *snap);

/*
 * Events counted by counter `i` between two snapshots.  False when the
 * counter was not counting the whole time (the kernel multiplexed it with
 * others or could not schedule it): such an interval has no exact count,
 * and none is made up by scaling.
 */
bool bench_counter_delta(const struct bench_counter_snap *a, const struct bench_counter_snap *b,
			 unsigned i, uint64_t *ret_count);

/* Close every open counter. */
void bench_counters_close(struct bench_counters *cs);

/* ---- Repetitions --------------------------------------------------------- */

/* A loop under test: `iters` back-to-back runs of the measured operation. */
typedef void (*bench_loop_fn)(uint64_t iters, void *arg);

struct bench_run {
	uint64_t iters;            /* iterations per repetition */
	unsigned warmup;           /* untimed repetitions first */
	unsigned reps;             /* timed repetitions */
	struct bench_counters *counters;      /* NULL: no counters */
	volatile sig_atomic_t *stop;          /* NULL, or checked between reps */
	/* NULL, or called before every rep, warm-up included, outside the
	 * timed region: e.g. to let a consumer catch up. */
	void (*before_rep)(void *ctx);
	void *before_rep_ctx;
	/* NULL, or a reference loop (typically empty) timed the same way
	 * right before each timed rep, so that the figure it is subtracted
	 * from was taken in the same machine state. */
	bench_loop_fn baseline;
};

struct bench_result {
	double *per_iter;          /* caller's array of `reps`: ticks per iteration
				    * of each timed rep, sorted on return */
	unsigned done;             /* timed reps completed (< reps when stopped) */
	double min, median;        /* of per_iter[0..done) */
	double *base_per_iter;     /* as per_iter, for run->baseline (else unused) */
	double base_min, base_median;
	/* Counters: totals over the reps in which they counted exactly. */
	uint64_t count[BENCH_MAX_COUNTERS];
	unsigned count_reps[BENCH_MAX_COUNTERS];
};

/*
 * Run `fn` run->warmup times untimed, then run->reps times between the
 * timer reads, each over run->iters iterations (each timed rep preceded
 * by a timed rep of run->baseline when there is one).  Counters are read
 * outside the timed region and count `fn` only.  Returns 0, or -EINTR when *run->stop was raised (the
 * reps done so far are summarised).
 */
int bench_run_reps(const struct bench_run *run, bench_loop_fn fn, void *arg,
		   struct bench_result *res);

/* Minimum and median of v[0..n), n >= 1; `v` is sorted in place.  The
 * median of an even count is the mean of the two middle values. */
void bench_min_median(double *v, size_t n, double *ret_min, double *ret_median);

/* ---- Machine and noise ----------------------------------------------------- */

struct bench_machine {
	char date[64];             /* local time the run started, ISO 8601 */
	char cpu_model[128];
	long cpus_online;
	int cpus_allowed;          /* in this process's affinity mask */
	char kernel[200];            /* sysname release version machine */
	char clocksource[32];
	char compiler[96];
	double tsc_hz;             /* measured against CLOCK_MONOTONIC_RAW */
	unsigned tsc_calibrate_ms;
	bool tsc_invariant;
};

/* Describe this machine; spins `calibrate_ms` to measure the TSC rate. */
void bench_machine_probe(struct bench_machine *m, unsigned calibrate_ms);

/*
 * CPU time that others spent on this machine while we ran: the busy time
 * of every CPU in /proc/stat minus our own process's CPU time.  Resolution
 * is one clock tick of /proc/stat (10 ms at USER_HZ 100) per CPU.
 */
struct bench_noise {
	bool ok;                   /* /proc/stat was readable */
	uint64_t busy_ticks;       /* user+nice+system+irq+softirq, all CPUs */
	uint64_t steal_ticks;      /* time the hypervisor ran something else */
	uint64_t self_us;          /* our user+system time */
	uint64_t wall_ns;
};

void bench_noise_start(struct bench_noise *n);

/* Foreign busy time, steal time and wall time since `start`, in ms.
 * False when /proc/stat could not be read. */
bool bench_noise_since(const struct bench_noise *start, double *ret_foreign_ms,
		       double *ret_steal_ms, double *ret_wall_ms);

/* ---- CPUs ---------------------------------------------------------------- */

/* Pin thread `th` to `cpu`.  Returns 0 or a negative errno. */
int bench_pin_thread(pthread_t th, int cpu);

/*
 * Default placement: the measured thread on the second CPU this process
 * may use and its helper (consumer, drainer) on the first.  With a single
 * CPU both get it.  Returns the number of CPUs allowed, or a negative
 * errno.
 */
int bench_default_cpus(int *ret_measured, int *ret_helper);

/* ---- Leftovers ------------------------------------------------------------ */

/*
 * An interrupted benchmark leaves nothing behind: after bench_leave_nothing,
 * SIGINT, SIGTERM, SIGHUP and SIGPIPE (output piped into `head`) stop the
 * child registered with bench_leftover_child, remove every file registered
 * with bench_leftover_shm or bench_leftover_file, and kill the process with
 * the same signal.  A normal end cleans up as before; registering a name
 * twice, or one already removed, is harmless.  At most 16 files.
 */
void bench_leave_nothing(void);
/* The ring and control segment of the shared-memory instance `name`. */
int bench_leftover_shm(const char *name);
int bench_leftover_file(const char *path);
/* The child to stop with SIGTERM (and reap) first; 0 for none. */
void bench_leftover_child(pid_t pid);

/* ---- Output -------------------------------------------------------------- */

enum bench_format {
	BENCH_FORMAT_LIVE,         /* aligned columns, one row as each result arrives */
	BENCH_FORMAT_MD,           /* Markdown */
	BENCH_FORMAT_CSV,          /* RFC 4180; notes as lines starting with '#' */
};

/* "live", "md" or "csv".  Returns 0 or -EINVAL. */
int bench_format_parse(const char *s, enum bench_format *ret);

/* The format named by $PERFMON_FORMAT, else live.  -EINVAL when the
 * variable names none (*ret is then left alone). */
int bench_format_from_env(enum bench_format *ret);

/* Columns a table may have. */
#define BENCH_MAX_COLUMNS 32

struct bench_column {
	const char *title;         /* header in live and Markdown */
	const char *key;           /* header in CSV: no spaces */
	int width;                 /* live width */
	bool left;                 /* left-aligned (text); else right (numbers) */
};

struct bench_table {
	FILE *out;
	enum bench_format fmt;
	const struct bench_column *cols;
	unsigned ncols;
};

/* A section title. */
void bench_heading(FILE *out, enum bench_format fmt, const char *title);

/* One line of prose (machine, notes, totals).  printf-like. */
void bench_note(FILE *out, enum bench_format fmt, const char *f, ...)
	__attribute__((format(printf, 3, 4)));

/* Header of a table of at most BENCH_MAX_COLUMNS columns; rows follow
 * with bench_table_row (`cells` holds ncols strings, NULL prints empty),
 * each flushed as it comes; bench_table_end closes the table. */
void bench_table_begin(const struct bench_table *t);
void bench_table_row(const struct bench_table *t, const char *const *cells);
void bench_table_end(const struct bench_table *t);

/* Print the description of the machine as notes. */
void bench_machine_print(FILE *out, enum bench_format fmt, const struct bench_machine *m);

/* ---- Command line -------------------------------------------------------- */

/* Parse an unsigned decimal in [min, max].  Returns 0, -EINVAL or -ERANGE. */
int bench_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

#endif /* PERFMOND_BENCH_COMMON_H */
