/*
 * bench_stamp.c - what one producer stamp costs, in TSC ticks, in steady
 * state against a real ring that the daemon's reader drains.
 *
 * Place in the data flow: the producer (stamp -> ring), with the drain
 * running as in the daemon.  The ring is a real pair of segments in
 * /dev/shm, created with the daemon's shm code; this process attaches to
 * it through <perfmon.h> as any producer does.  A drainer thread on the
 * other CPU empties it with ring_drain_batch(), in batches with a short
 * pause between them: a consumer polling the very next slot would pull the
 * producer's cache lines away while it writes them, and the figures would
 * be of that contention rather than of the stamp.
 *
 * Each case is a loop of N iterations timed as a whole, 3 untimed warm-up
 * repetitions then >= 15 timed ones; min and median are over repetitions,
 * divided by the stamps of one iteration.  Before each repetition the
 * producer waits (untimed) for the drainer to catch up, so a drainer held
 * up by other jobs can never be lapped.  "Net" subtracts an empty loop
 * timed the same way right before each repetition: the machine under this
 * VM changes state (the same empty loop takes 1 or ~1.7 cycles per
 * iteration from one moment to the next), and a baseline taken once
 * would carry that into every figure.  At the end the drainer's totals show that every
 * stamp reached the reader (none dropped or stalled), and each target of
 * the stamp cost is checked against the net minimum.
 */
#include "build-config.h"

#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfmon.h>

#include "bench_common.h"
#include "ring_reader.h"
#include "shm.h"

#define STAMP_DEFAULT_ITERS    50000u
#define STAMP_DEFAULT_REPS     15u
#define STAMP_WARMUP           3u
#define STAMP_DEFAULT_CAPACITY (UINT64_C(1) << 20)
#define STAMP_CALIBRATE_MS     100u
#define STAMP_POINT_BASE       1000u    /* case k stamps point BASE + k */
#define STAMP_DRAIN_BATCH      4096u
#define STAMP_DRAIN_PAUSE_NS   20000L
#define STAMP_FINAL_DRAIN_S    2u

/* The variants built from bench_stamp_disabled.c. */
void bench_stamp_loop_compiled_out(uint64_t iters, void *arg);
void bench_stamp_loop_unfenced(uint64_t iters, void *arg);

/* ---- The measured loops ---------------------------------------------------
 *
 * `arg` points to the point to stamp; it is loop-invariant, so the
 * compiler folds it into the event word once, as it would a constant.
 * bench_opaque(i) hides the counter from the optimiser: nothing that
 * depends on it can be hoisted, and the trip count is not known.
 */

static __attribute__((noinline)) void loop_empty(uint64_t iters, void *arg)
{
	uint64_t i;

	(void)arg;
	for (i = 0; i < iters; i++)
		bench_opaque(i);
}

/* Also the runtime-disabled case: the same code with the ring switched off. */
static __attribute__((noinline)) void loop_pair(uint64_t iters, void *arg)
{
	const uint32_t point = *(const uint32_t *)arg;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		bench_opaque(i);
		perfmon_begin(point, PERFMON_NO_SEQ);
		perfmon_end(point, PERFMON_NO_SEQ);
	}
}

static __attribute__((noinline)) void loop_pair_seq(uint64_t iters, void *arg)
{
	const uint32_t point = *(const uint32_t *)arg;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		bench_opaque(i);
		perfmon_begin(point, (uint32_t)i);
		perfmon_end(point, (uint32_t)i);
	}
}

static __attribute__((noinline)) void loop_pipeline(uint64_t iters, void *arg)
{
	const uint32_t point = *(const uint32_t *)arg;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		uint32_t seq;

		bench_opaque(i);
		seq = (uint32_t)i;
		perfmon_begin(point, seq);
		perfmon_step(point, 1, seq);
		perfmon_step(point, 2, seq);
		perfmon_step(point, 3, seq);
		perfmon_step(point, 4, seq);
		perfmon_end(point, seq);
	}
}

static __attribute__((noinline)) void loop_scope(uint64_t iters, void *arg)
{
	const uint32_t point = *(const uint32_t *)arg;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		bench_opaque(i);
		{
			PERFMON_SCOPE(point);
			bench_barrier();
		}
	}
}

static __attribute__((noinline)) void loop_value(uint64_t iters, void *arg)
{
	const uint32_t point = *(const uint32_t *)arg;
	uint64_t i;

	for (i = 0; i < iters; i++) {
		bench_opaque(i);
		perfmon_value(point, i);
	}
}

static __attribute__((noinline)) void loop_clock_gettime(uint64_t iters, void *arg)
{
	struct timespec a, b;
	uint64_t i;

	(void)arg;
	for (i = 0; i < iters; i++) {
		bench_opaque(i);
		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_MONOTONIC, &b);
	}
	bench_opaque(a.tv_nsec);
	bench_opaque(b.tv_nsec);
}

/* ---- Cases --------------------------------------------------------------- */

enum stamp_case_id {
	CASE_EMPTY,
	CASE_PAIR,
	CASE_PAIR_SEQ,
	CASE_PIPELINE,
	CASE_SCOPE,
	CASE_VALUE,
	CASE_DISABLED,
	CASE_COMPILED_OUT,
	CASE_UNFENCED,
	CASE_CLOCK_GETTIME,
	CASE_COUNT,
	CASE_PREFAULT = CASE_COUNT,   /* the untimed lap that faults the ring in */
};

struct stamp_case {
	const char *name;
	const char *per;          /* what the figures are divided by */
	bench_loop_fn fn;
	unsigned stamps;          /* stamps (or calls) per iteration */
	bool publishes;           /* its stamps reach the ring */
	bool disabled;            /* run with perfmon_set_enabled(false) */
};

static const struct stamp_case stamp_cases[CASE_COUNT] = {
	[CASE_EMPTY]        = { "empty loop",               "iter",  loop_empty, 1, false, false },
	[CASE_PAIR]         = { "pair fenced",              "stamp", loop_pair, 2, true, false },
	[CASE_PAIR_SEQ]     = { "pair fenced, runtime seq", "stamp", loop_pair_seq, 2, true, false },
	[CASE_PIPELINE]     = { "pipeline, 6 stamps",       "stamp", loop_pipeline, 6, true, false },
	[CASE_SCOPE]        = { "scope guard",              "stamp", loop_scope, 2, true, false },
	[CASE_VALUE]        = { "value sample",             "stamp", loop_value, 1, true, false },
	[CASE_DISABLED]     = { "pair, runtime-disabled",   "stamp", loop_pair, 2, false, true },
	[CASE_COMPILED_OUT] = { "pair, compiled out",       "stamp",
				bench_stamp_loop_compiled_out, 2, false, false },
	[CASE_UNFENCED]     = { "pair unfenced",            "stamp",
				bench_stamp_loop_unfenced, 2, true, false },
	[CASE_CLOCK_GETTIME] = { "clock_gettime pair",      "call",  loop_clock_gettime, 2, false,
				 false },
};

/* What a case measured, per stamp (per call, per iteration: see `per`). */
struct stamp_figures {
	unsigned reps;
	double min, median;                /* gross */
	double base_min;                   /* the empty loop beside it, per iteration */
	double net_min, net_median;        /* minus the empty loop beside it */
	double counter[BENCH_MAX_COUNTERS]; /* mean per stamp; < 0: no exact count */
	unsigned counter_reps[BENCH_MAX_COUNTERS];
	double foreign_ms;                 /* < 0: unknown */
	uint64_t expected;                 /* events it put in the ring */
};

/* Hardware counters tried around each case, in this order. */
static const struct {
	const char *name;         /* in notes and as the CSV key */
	const char *title;        /* live and Markdown column */
	uint32_t type;
	uint64_t config;
} stamp_counters[] = {
	{ "instructions", "instr", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "branch_misses", "br-miss", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
};
_Static_assert(sizeof(stamp_counters) / sizeof(stamp_counters[0]) <= BENCH_MAX_COUNTERS,
	       "more counters than bench_common holds");

/* ---- Options ------------------------------------------------------------- */

struct stamp_opts {
	uint64_t iters, reps, capacity;
	enum bench_format fmt;
	int cpu_producer, cpu_drainer;
	bool cpus_given;
};

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"Usage: %s [OPTION]...\n"
		"Cost of one producer stamp in TSC ticks, against a real ring drained\n"
		"by another thread.  Min and median over repetitions; net = minus an\n"
		"empty loop measured the same way.\n"
		"\n"
		"  --reps N        timed repetitions per case (default %u; after %u warm-up)\n"
		"  --iters N       iterations per repetition (default %u)\n"
		"  --format F      live, md or csv (default $PERFMON_FORMAT, else live)\n"
		"  --cpu P,C       pin the producer to CPU P and the drainer to CPU C\n"
		"                  (default: second and first CPU this process may use)\n"
		"  --capacity N    ring slots, a power of two (default %llu)\n"
		"  -h, --help      this text\n",
		prog, STAMP_DEFAULT_REPS, STAMP_WARMUP, STAMP_DEFAULT_ITERS,
		(unsigned long long)STAMP_DEFAULT_CAPACITY);
}

static int parse_cpus(const char *s, int *ret_p, int *ret_c)
{
	const char *comma = strchr(s, ',');
	char first[32];
	uint64_t p, c;

	if (!comma || (size_t)(comma - s) >= sizeof(first))
		return -EINVAL;
	memcpy(first, s, (size_t)(comma - s));
	first[comma - s] = '\0';
	if (bench_parse_u64(first, 0, CPU_SETSIZE - 1, &p) < 0 ||
	    bench_parse_u64(comma + 1, 0, CPU_SETSIZE - 1, &c) < 0)
		return -EINVAL;
	*ret_p = (int)p;
	*ret_c = (int)c;
	return 0;
}

/* Returns 0, or the exit status to leave with (2 usage, 0 for --help). */
static int parse_options(int argc, char **argv, struct stamp_opts *o, int *ret_exit)
{
	static const struct option longopts[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "iters", required_argument, NULL, 'n' },
		{ "format", required_argument, NULL, 'f' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "capacity", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	*o = (struct stamp_opts){
		.iters = STAMP_DEFAULT_ITERS,
		.reps = STAMP_DEFAULT_REPS,
		.capacity = STAMP_DEFAULT_CAPACITY,
	};
	if (bench_format_from_env(&o->fmt) < 0) {
		fprintf(stderr, "%s: PERFMON_FORMAT='%s' is not one of live, md, csv\n", argv[0],
			getenv("PERFMON_FORMAT"));
		*ret_exit = 2;
		return -EINVAL;
	}
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			if (bench_parse_u64(optarg, 1, 100000, &o->reps) < 0) {
				fprintf(stderr, "%s: --reps wants 1 to 100000, not '%s'\n",
					argv[0], optarg);
				goto usage_error;
			}
			break;
		case 'n':
			if (bench_parse_u64(optarg, 1, 1000000000, &o->iters) < 0) {
				fprintf(stderr, "%s: --iters wants 1 to 1000000000, not '%s'\n",
					argv[0], optarg);
				goto usage_error;
			}
			break;
		case 'f':
			if (bench_format_parse(optarg, &o->fmt) < 0) {
				fprintf(stderr, "%s: --format wants live, md or csv, not '%s'\n",
					argv[0], optarg);
				goto usage_error;
			}
			break;
		case 'c':
			if (parse_cpus(optarg, &o->cpu_producer, &o->cpu_drainer) < 0) {
				fprintf(stderr, "%s: --cpu wants PRODUCER,DRAINER CPU numbers, "
					"e.g. 1,0, not '%s'\n", argv[0], optarg);
				goto usage_error;
			}
			o->cpus_given = true;
			break;
		case 'C':
			if (bench_parse_u64(optarg, 1024, UINT64_C(1) << 26, &o->capacity) < 0 ||
			    (o->capacity & (o->capacity - 1))) {
				fprintf(stderr, "%s: --capacity wants a power of two from 1024 to "
					"67108864, not '%s'\n", argv[0], optarg);
				goto usage_error;
			}
			break;
		case 'h':
			usage(stdout, argv[0]);
			*ret_exit = 0;
			return -ECANCELED;
		default:
			goto usage_error;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
		goto usage_error;
	}
	return 0;

usage_error:
	fprintf(stderr, "Try '%s --help'.\n", argv[0]);
	*ret_exit = 2;
	return -EINVAL;
}

/* ---- Signals: the ring is removed on SIGINT, SIGTERM, SIGHUP and SIGPIPE - */

static volatile sig_atomic_t stamp_stop;

static void on_signal(int sig)
{
	stamp_stop = sig;
}

static void install_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	/* A second signal kills at once, should cleanup itself hang; but not
	 * a second SIGPIPE, which every further write to a closed pipe (the
	 * reader was `head`) raises before the ring is removed. */
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sa.sa_flags = sigs[i] == SIGPIPE ? 0 : SA_RESETHAND;
		sigaction(sigs[i], &sa, NULL);
	}
}

/* ---- Drainer ------------------------------------------------------------- */

struct drainer {
	pthread_t thread;
	int cpu;
	int pin_err;
	struct ring_reader rd;
	uint64_t ticks_per_s;
	int started;                       /* atomic: the thread is reading */
	int stop;                          /* atomic: final drain, then exit */
	uint64_t tail;                     /* atomic: every index below is accounted for */
	/* Written by the drainer, read by main after the join. */
	uint64_t passes;
	uint64_t max_backlog;
	uint64_t per_point[CASE_COUNT + 1];
	uint64_t unknown_point;
	bool final_complete;               /* every reserved index accounted for */
	struct perfmon_event buf[STAMP_DRAIN_BATCH];
};

static void drainer_account(struct drainer *d, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t p = d->buf[i].point;

		if (p >= STAMP_POINT_BASE && p - STAMP_POINT_BASE <= CASE_COUNT)
			d->per_point[p - STAMP_POINT_BASE]++;
		else
			d->unknown_point++;
	}
}

/* Drain everything there is now, one full batch after another. */
static void drainer_pass(struct drainer *d)
{
	uint64_t backlog = ring_reader_backlog(&d->rd);
	size_t n;

	if (backlog > d->max_backlog)
		d->max_backlog = backlog;
	do {
		uint64_t wm = perfmon__now_begin();
		n = ring_drain_batch(&d->rd, d->buf, STAMP_DRAIN_BATCH, wm, wm);
		drainer_account(d, n);
	} while (n == STAMP_DRAIN_BATCH);
	d->passes++;
	/* one sub-ring here: its tail is the reader's position */
	if (d->rd.sub[0].nholes == 0 && !d->rd.in_pass)
		__atomic_store_n(&d->tail, d->rd.sub[0].tail, __ATOMIC_RELEASE);
}

static void *drainer_main(void *arg)
{
	struct drainer *d = arg;
	const struct timespec pause = { 0, STAMP_DRAIN_PAUSE_NS };
	struct ring_batch b;
	uint64_t deadline;

	d->pin_err = bench_pin_thread(pthread_self(), d->cpu);
	__atomic_store_n(&d->started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		drainer_pass(d);
		/* Batch policy: let a batch build up instead of polling the
		 * slot the producer is writing. */
		nanosleep(&pause, NULL);
	}
	/* The producer has stopped: account for every index it reserved. */
	ring_reader_freeze(&d->rd);
	deadline = bench_tsc_now() + STAMP_FINAL_DRAIN_S * d->ticks_per_s;
	while (!ring_reader_settled(&d->rd) && bench_tsc_now() < deadline) {
		drainer_pass(d);
		nanosleep(&pause, NULL);
	}
	if (!ring_reader_settled(&d->rd)) {
		ring_reader_abandon_holes(&d->rd);
		drainer_pass(d);
		drainer_pass(d);
	}
	d->final_complete = ring_reader_settled(&d->rd);
	drainer_pass(d);   /* what the last pass released */
	ring_reader_release_all(&d->rd, &b);
	drainer_pass(d);
	return NULL;
}

/* Start the drainer with our signals blocked: main handles them. */
static int drainer_start(struct drainer *d)
{
	sigset_t all, old;
	int e;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&d->thread, NULL, drainer_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return -e;
	/* Handshake: measure nothing before the reader is in its loop. */
	while (!__atomic_load_n(&d->started, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	return 0;
}

/*
 * Wait until the drainer has caught up with everything published so far.
 * Called before every rep: each starts with an empty ring, and only one
 * rep's stamps are ever in flight, so a drainer held up by other jobs on
 * its CPU cannot make the producer lap it.  Spins rather than sleeps, so
 * the producer's CPU stays awake for the next timed rep.  Gives up after
 * a while (the totals will show it) or on a signal.
 */
static void drainer_wait_idle(void *ctx)
{
	struct drainer *d = ctx;
	uint64_t head = __atomic_load_n(&PERFMON_SUBRING(d->rd.hdr, 0)->head, __ATOMIC_ACQUIRE);
	uint64_t deadline = bench_tsc_now() + STAMP_FINAL_DRAIN_S * d->ticks_per_s;

	while (__atomic_load_n(&d->tail, __ATOMIC_ACQUIRE) < head && !stamp_stop &&
	       bench_tsc_now() < deadline)
		__builtin_ia32_pause();
}

static void drainer_stop(struct drainer *d)
{
	__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
	pthread_join(d->thread, NULL);
}

/* ---- Output -------------------------------------------------------------- */

enum {
	COL_CASE, COL_PER, COL_MIN, COL_MEDIAN, COL_BASE, COL_NET_MIN, COL_NET_MEDIAN, COL_NS,
	COL_FIXED_BEFORE_COUNTERS
};

struct stamp_table {
	struct bench_table t;
	struct bench_column cols[BENCH_MAX_COLUMNS];
	int counter_col[BENCH_MAX_COUNTERS];  /* column of counter k, or -1 */
	int foreign_col, note_col;
};

static void stamp_table_init(struct stamp_table *st, enum bench_format fmt,
			     const struct bench_counters *cs)
{
	static const struct bench_column fixed[COL_FIXED_BEFORE_COUNTERS] = {
		[COL_CASE]       = { "case", "case", 24, true },
		[COL_PER]        = { "per", "per", 5, true },
		[COL_MIN]        = { "min", "min_ticks", 7, false },
		[COL_MEDIAN]     = { "median", "median_ticks", 7, false },
		[COL_BASE]       = { "base", "empty_loop_min_ticks_per_iter", 5, false },
		[COL_NET_MIN]    = { "net min", "net_min_ticks", 7, false },
		[COL_NET_MEDIAN] = { "net med", "net_median_ticks", 7, false },
		[COL_NS]         = { "net ns", "net_min_ns", 6, false },
	};
	unsigned n = COL_FIXED_BEFORE_COUNTERS, k;

	memset(st, 0, sizeof(*st));
	memcpy(st->cols, fixed, sizeof(fixed));
	for (k = 0; k < BENCH_MAX_COUNTERS; k++)
		st->counter_col[k] = -1;
	for (k = 0; k < cs->n; k++) {
		if (cs->c[k].fd < 0)
			continue;   /* unavailable: the column is left out */
		st->counter_col[k] = (int)n;
		st->cols[n++] = (struct bench_column){ stamp_counters[k].title,
						       stamp_counters[k].name, 8, false };
	}
	st->foreign_col = (int)n;
	st->cols[n++] = (struct bench_column){ "foreign ms", "foreign_busy_ms", 10, false };
	st->note_col = (int)n;
	st->cols[n++] = (struct bench_column){ "note", "note", 5, true };
	st->t = (struct bench_table){ stdout, fmt, st->cols, n };
}

static void stamp_table_row(const struct stamp_table *st, const struct stamp_case *c,
			    const struct stamp_figures *f, double ns_per_tick, unsigned reps_wanted)
{
	char buf[BENCH_MAX_COLUMNS][48];
	const char *cells[BENCH_MAX_COLUMNS];
	/* CSV leaves a missing figure empty, so the column stays numeric. */
	const char *none = st->t.fmt == BENCH_FORMAT_CSV ? "" : "-";
	char note[48] = "";
	unsigned k;

	memset(cells, 0, sizeof(cells));
	cells[COL_CASE] = c->name;
	cells[COL_PER] = c->per;
	snprintf(buf[COL_MIN], sizeof(buf[0]), "%.1f", f->min);
	snprintf(buf[COL_MEDIAN], sizeof(buf[0]), "%.1f", f->median);
	snprintf(buf[COL_BASE], sizeof(buf[0]), "%.1f", f->base_min);
	snprintf(buf[COL_NET_MIN], sizeof(buf[0]), "%.1f", f->net_min);
	snprintf(buf[COL_NET_MEDIAN], sizeof(buf[0]), "%.1f", f->net_median);
	snprintf(buf[COL_NS], sizeof(buf[0]), "%.1f", f->net_min * ns_per_tick);
	for (k = COL_MIN; k <= COL_NS; k++)
		cells[k] = buf[k];
	for (k = 0; k < BENCH_MAX_COUNTERS; k++) {
		int col = st->counter_col[k];

		if (col < 0)
			continue;
		if (f->counter[k] < 0)
			snprintf(buf[col], sizeof(buf[0]), "%s", none);
		else
			snprintf(buf[col], sizeof(buf[0]), "%.2f", f->counter[k]);
		cells[col] = buf[col];
		if (f->counter_reps[k] < f->reps && !note[0])
			snprintf(note, sizeof(note), "counted %u/%u reps", f->counter_reps[k],
				 f->reps);
	}
	if (f->foreign_ms < 0)
		snprintf(buf[st->foreign_col], sizeof(buf[0]), "%s", none);
	else
		snprintf(buf[st->foreign_col], sizeof(buf[0]), "%.0f", f->foreign_ms);
	cells[st->foreign_col] = buf[st->foreign_col];
	/* As in the reference notes: a median more than 10 % (and a tick)
	 * above the minimum says the reps were disturbed. */
	if (!note[0] && f->median - f->min > 0.1 * f->min && f->median - f->min > 1.0)
		snprintf(note, sizeof(note), "noisy");
	if (f->reps < reps_wanted)
		snprintf(note, sizeof(note), "stopped after %u reps", f->reps);
	cells[st->note_col] = note;
	bench_table_row(&st->t, cells);
}

/* One target: met when the net minimum is within `limit` (per stamp). */
static void print_target(enum bench_format fmt, const char *what, const char *limit_text,
			 const struct stamp_figures *f, bool met)
{
	bench_note(stdout, fmt,
		   "%s %s: net min %.2f, net median %.2f (gross min %.2f, median %.2f) "
		   "ticks/stamp: %s", what, limit_text, f->net_min, f->net_median, f->min,
		   f->median, met ? "MET" : "NOT MET");
}

/* ---- Main ---------------------------------------------------------------- */

struct stamp_run {
	struct stamp_opts o;
	struct bench_machine machine;
	char shm_name[64];
	struct shm_instance inst;
	bool have_inst, attached;
	struct drainer *drainer;
	bool drainer_running;
	struct bench_counters counters;
	struct stamp_figures fig[CASE_COUNT];
	unsigned cases_done;
	uint64_t prefault_events;
};

static int create_ring(struct stamp_run *s)
{
	const struct shm_geometry g = {
		.capacity = s->o.capacity, .subrings = 1, .max_names = 16, .mode = 0600, .gid = (gid_t)-1,
	};
	char err[512];
	int e;

	snprintf(s->shm_name, sizeof(s->shm_name), "bench-stamp-%ld", (long)getpid());
	/* Segments of this name can only be left over by an earlier process
	 * that had our pid and was killed: start afresh. */
	shm_remove(s->shm_name);
	e = shm_create_or_open(s->shm_name, &g, &s->inst, err, sizeof(err));
	if (e < 0) {
		fprintf(stderr, "bench_stamp: %s\n", err);
		return e;
	}
	s->have_inst = true;
	if (!s->inst.created) {
		fprintf(stderr, "bench_stamp: segments '%s' reappeared while being created\n",
			s->shm_name);
		return -EEXIST;
	}
	e = perfmon_attach(s->shm_name);
	if (e < 0) {
		fprintf(stderr, "bench_stamp: perfmon_attach('%s'): %s%s\n", s->shm_name,
			strerror(-e), e == -ECANCELED ?
			" (SLICK_PERFMON_DISABLE is set: unset it to measure stamps)" : "");
		return e;
	}
	s->attached = true;
	return 0;
}

static void cleanup(struct stamp_run *s)
{
	if (s->drainer_running) {
		drainer_stop(s->drainer);
		s->drainer_running = false;
	}
	if (s->attached) {
		perfmon_detach();
		s->attached = false;
	}
	if (s->have_inst) {
		shm_close(&s->inst);
		shm_remove(s->shm_name);
		s->have_inst = false;
	}
	bench_counters_close(&s->counters);
}

static void open_counters(struct stamp_run *s)
{
	char why[512];
	unsigned k;

	bench_counters_init(&s->counters);
	for (k = 0; k < sizeof(stamp_counters) / sizeof(stamp_counters[0]); k++)
		bench_counter_add(&s->counters, stamp_counters[k].name, stamp_counters[k].type,
				  stamp_counters[k].config);
	for (k = 0; k < s->counters.n; k++) {
		const struct bench_counter *c = &s->counters.c[k];

		if (c->fd >= 0) {
			bench_note(stdout, s->o.fmt, "counter %s: per thread, user space only; "
				   "mean per stamp over the reps it counted exactly, loop "
				   "included (see the empty loop row)", c->name);
			continue;
		}
		bench_counter_why(c, why, sizeof(why));
		bench_note(stdout, s->o.fmt, "counter %s: unavailable, column left out: %s",
			   c->name, why);
	}
}

static void figures_from(struct stamp_figures *f, const struct stamp_case *c,
			 const struct bench_result *r, const struct bench_counters *cs,
			 uint64_t iters)
{
	unsigned k;

	f->reps = r->done;
	f->min = r->min / c->stamps;
	f->median = r->median / c->stamps;
	for (k = 0; k < BENCH_MAX_COUNTERS; k++) {
		f->counter[k] = -1.0;
		f->counter_reps[k] = 0;
	}
	for (k = 0; k < cs->n; k++) {
		if (cs->c[k].fd < 0 || r->count_reps[k] == 0)
			continue;
		f->counter[k] = (double)r->count[k] /
				((double)r->count_reps[k] * (double)iters * c->stamps);
		f->counter_reps[k] = r->count_reps[k];
	}
}

static int run_cases(struct stamp_run *s)
{
	const struct bench_run run = {
		.iters = s->o.iters, .warmup = STAMP_WARMUP, .reps = (unsigned)s->o.reps,
		.counters = &s->counters, .stop = &stamp_stop,
		.before_rep = drainer_wait_idle, .before_rep_ctx = s->drainer,
		.baseline = loop_empty,
	};
	double ns_per_tick = s->machine.tsc_hz > 0 ? 1e9 / s->machine.tsc_hz : 0.0;
	struct bench_result res;
	struct stamp_table st;
	uint32_t point;
	unsigned id;
	int e = 0;

	res.per_iter = calloc(s->o.reps, sizeof(double));
	res.base_per_iter = calloc(s->o.reps, sizeof(double));
	if (!res.per_iter || !res.base_per_iter) {
		free(res.per_iter);
		free(res.base_per_iter);
		return -ENOMEM;
	}

	/* One untimed lap of value stamps: every page of the ring is then
	 * faulted into both mappings (producer's and drainer's), and the
	 * first case is measured in the same state as the last. */
	point = STAMP_POINT_BASE + CASE_PREFAULT;
	loop_value(s->o.capacity, &point);
	s->prefault_events = s->o.capacity;

	bench_heading(stdout, s->o.fmt, "TSC ticks per stamp (per call for clock_gettime, "
		      "per iteration for the empty loop); net = minus an empty loop timed "
		      "before each rep; base = its min per iteration");
	stamp_table_init(&st, s->o.fmt, &s->counters);
	bench_table_begin(&st.t);

	for (id = 0; id < CASE_COUNT; id++) {
		const struct stamp_case *c = &stamp_cases[id];
		struct stamp_figures *f = &s->fig[id];
		struct bench_noise noise;
		double steal_ms, wall_ms;

		point = STAMP_POINT_BASE + id;
		if (c->disabled)
			perfmon_set_enabled(false);
		bench_noise_start(&noise);
		e = bench_run_reps(&run, c->fn, &point, &res);
		if (!bench_noise_since(&noise, &f->foreign_ms, &steal_ms, &wall_ms))
			f->foreign_ms = -1.0;
		if (c->disabled)
			perfmon_set_enabled(true);
		if (e == -EINTR && res.done == 0)
			break;
		figures_from(f, c, &res, &s->counters, s->o.iters);
		if (c->publishes)
			f->expected = (uint64_t)c->stamps * s->o.iters * (STAMP_WARMUP + res.done);
		f->base_min = res.base_min;
		f->net_min = (res.min - res.base_min) / c->stamps;
		f->net_median = (res.median - res.base_median) / c->stamps;
		stamp_table_row(&st, c, f, ns_per_tick, (unsigned)s->o.reps);
		s->cases_done = id + 1;
		if (e == -EINTR)
			break;
	}
	bench_table_end(&st.t);
	free(res.per_iter);
	free(res.base_per_iter);
	return e;
}

/* Totals of the drainer: the evidence that the cases ran in steady state
 * with every stamp delivered. */
static void report_drainer(struct stamp_run *s)
{
	const struct drainer *d = s->drainer;
	const struct ring_reader *rd = &d->rd;
	enum bench_format fmt = s->o.fmt;
	uint64_t expected = s->prefault_events, head = ring_reader_head(rd);
	unsigned id, mismatches = 0;

	bench_heading(stdout, fmt, "Drainer");
	bench_note(stdout, fmt, "cpu %d; ring_drain_batch() of up to %u events until the ring "
		   "is empty, then a %ld us pause; %llu passes; largest backlog %llu slots "
		   "(%.1f %% of the ring)", d->cpu, STAMP_DRAIN_BATCH, STAMP_DRAIN_PAUSE_NS / 1000,
		   (unsigned long long)d->passes, (unsigned long long)d->max_backlog,
		   100.0 * (double)d->max_backlog / (double)s->o.capacity);
	for (id = 0; id < s->cases_done; id++)
		expected += s->fig[id].expected;
	bench_note(stdout, fmt, "events published (ring head) %llu, expected from the cases "
		   "%llu (including the %llu-event prefault lap)", (unsigned long long)head,
		   (unsigned long long)expected, (unsigned long long)s->prefault_events);
	bench_note(stdout, fmt, "read %llu, dropped %llu, stalled %llu, with an unknown point "
		   "%llu; reader done: %s", (unsigned long long)rd->read,
		   (unsigned long long)rd->dropped, (unsigned long long)rd->stalled,
		   (unsigned long long)d->unknown_point, d->final_complete ? "yes" : "NO");
	if (stamp_stop) {
		/* The interrupted case stamped an unknown number of warm-up reps. */
		bench_note(stdout, fmt, "interrupted: no per-case check of the counts");
		return;
	}
	for (id = 0; id < s->cases_done; id++) {
		if (d->per_point[id] == s->fig[id].expected)
			continue;
		mismatches++;
		bench_note(stdout, fmt, "case '%s': drained %llu events, expected %llu",
			   stamp_cases[id].name, (unsigned long long)d->per_point[id],
			   (unsigned long long)s->fig[id].expected);
	}
	if (d->per_point[CASE_PREFAULT] != s->prefault_events) {
		mismatches++;
		bench_note(stdout, fmt, "prefault lap: drained %llu events, expected %llu",
			   (unsigned long long)d->per_point[CASE_PREFAULT],
			   (unsigned long long)s->prefault_events);
	}
	if (!mismatches && rd->dropped == 0 && rd->stalled == 0 && d->unknown_point == 0 &&
	    head == expected && rd->read == expected && d->final_complete)
		bench_note(stdout, fmt, "every stamp was drained, per case exactly as "
			   "expected: zero loss");
	else
		bench_note(stdout, fmt, "WARNING: the drain was not loss-free or not as "
			   "expected: the figures above may not be steady state");
}

/*
 * The empty loop beside each case is the best witness of the machine's
 * state: the same instructions, so any change in it is the machine's.
 */
static void report_baseline(const struct stamp_run *s)
{
	double lo = 0, hi = 0;
	unsigned id;

	for (id = 0; id < s->cases_done; id++) {
		double b = s->fig[id].base_min;

		if (id == 0 || b < lo)
			lo = b;
		if (id == 0 || b > hi)
			hi = b;
	}
	if (!s->cases_done)
		return;
	bench_note(stdout, s->o.fmt, "empty loop beside the cases (base): %.2f to %.2f ticks "
		   "per iteration", lo, hi);
	if (hi > 1.25 * lo && hi - lo > 0.1)
		bench_note(stdout, s->o.fmt, "the machine changed state during the run: rows with "
			   "a base above %.2f ran slower for reasons outside this process (with "
			   "no foreign CPU time here, outside this VM); run again for quiet "
			   "figures", lo);
}

static void report_targets(const struct stamp_run *s)
{
	enum bench_format fmt = s->o.fmt;
	const struct stamp_figures *f = s->fig;

	if (s->cases_done < CASE_COUNT)
		return;
	bench_heading(stdout, fmt, "Targets (net min per stamp, this machine)");
	print_target(fmt, "fenced pair", "<= 85", &f[CASE_PAIR], f[CASE_PAIR].net_min <= 85.0);
	print_target(fmt, "value sample", "<= 12", &f[CASE_VALUE], f[CASE_VALUE].net_min <= 12.0);
	print_target(fmt, "runtime-disabled pair", "<= 1.5", &f[CASE_DISABLED],
		     f[CASE_DISABLED].net_min <= 1.5);
	/* "0" at the precision printed: the loop is the empty loop's. */
	print_target(fmt, "compiled out", "= 0 (|net min| < 0.05)", &f[CASE_COMPILED_OUT],
		     f[CASE_COMPILED_OUT].net_min < 0.05 && f[CASE_COMPILED_OUT].net_min > -0.05);
}

/* The clock the drainer's passes read (the producers' clock). */
static uint64_t drainer_clock(void)
{
	return perfmon__now_begin();
}

int main(int argc, char **argv)
{
	struct stamp_run *s;
	struct bench_noise total_noise;
	double foreign_ms, steal_ms, wall_ms;
	int e, rc = 1, ncpus, ex = 0;

	s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "bench_stamp: out of memory\n");
		return 1;
	}
	if (parse_options(argc, argv, &s->o, &ex) < 0) {
		free(s);
		return ex;
	}
	s->drainer = calloc(1, sizeof(*s->drainer));
	if (!s->drainer) {
		fprintf(stderr, "bench_stamp: out of memory\n");
		free(s);
		return 1;
	}
	install_signals();
	bench_noise_start(&total_noise);

	if (!s->o.cpus_given) {
		ncpus = bench_default_cpus(&s->o.cpu_producer, &s->o.cpu_drainer);
		if (ncpus < 0) {
			fprintf(stderr, "bench_stamp: cannot read this process's CPU affinity: "
				"%s\n", strerror(-ncpus));
			goto out;
		}
	}
	/* Before pinning: the affinity it reports is the process's. */
	bench_machine_probe(&s->machine, STAMP_CALIBRATE_MS);
	e = bench_pin_thread(pthread_self(), s->o.cpu_producer);
	if (e < 0) {
		fprintf(stderr, "bench_stamp: cannot pin the producer to cpu %d: %s\n",
			s->o.cpu_producer, strerror(-e));
		goto out;
	}
	bench_heading(stdout, s->o.fmt, "bench_stamp: cost of a producer stamp");
	bench_machine_print(stdout, s->o.fmt, &s->machine);

	if (create_ring(s) < 0)
		goto out;
	s->drainer->cpu = s->o.cpu_drainer;
	s->drainer->ticks_per_s = (uint64_t)s->machine.tsc_hz;
	/* A slot not yet published holds the reader for 1 ms at most; after
	 * 100 ms it counts as stalled.  A healthy producer leaves none. */
	if (ring_reader_init(&s->drainer->rd, s->inst.ring, s->inst.subrings, s->inst.capacity,
			     NULL, s->drainer->ticks_per_s / 1000,
			     s->drainer->ticks_per_s / 10) < 0) {
		fprintf(stderr, "bench_stamp: out of memory\n");
		goto out;
	}
	ring_reader_clock(&s->drainer->rd, drainer_clock);
	s->drainer->tail = s->drainer->rd.sub[0].tail;
	e = drainer_start(s->drainer);
	if (e < 0) {
		fprintf(stderr, "bench_stamp: cannot start the drainer thread: %s\n",
			strerror(-e));
		goto out;
	}
	s->drainer_running = true;
	if (s->drainer->pin_err < 0) {
		fprintf(stderr, "bench_stamp: cannot pin the drainer to cpu %d: %s\n",
			s->o.cpu_drainer, strerror(-s->drainer->pin_err));
		goto out;
	}

	bench_note(stdout, s->o.fmt, "ring: /dev/shm/%s, %llu slots (%llu MiB), created with "
		   "the daemon's shm code, attached with perfmon_attach()", s->shm_name,
		   (unsigned long long)s->o.capacity,
		   (unsigned long long)(PERFMON_RING_BYTES(1, s->o.capacity) >> 20));
	bench_note(stdout, s->o.fmt, "producer (this thread) on cpu %d, drainer on cpu %d%s; "
		   "%llu iterations per rep, %u warm-up + %llu timed reps%s",
		   s->o.cpu_producer, s->o.cpu_drainer,
		   s->o.cpu_producer == s->o.cpu_drainer ?
		   " (same cpu: the drainer runs only when the producer is preempted)" : "",
		   (unsigned long long)s->o.iters, STAMP_WARMUP, (unsigned long long)s->o.reps,
		   s->o.reps < 15 ? " (fewer than 15: medians are weak)" : "");
	open_counters(s);

	e = run_cases(s);
	if (e < 0 && e != -EINTR) {
		fprintf(stderr, "bench_stamp: %s\n", strerror(-e));
		goto out;
	}
	drainer_stop(s->drainer);
	s->drainer_running = false;
	report_drainer(s);

	bench_heading(stdout, s->o.fmt, "Noise");
	if (bench_noise_since(&total_noise, &foreign_ms, &steal_ms, &wall_ms))
		bench_note(stdout, s->o.fmt, "other processes were busy %.0f ms of CPU time during "
			   "the %.0f ms run (resolution 10 ms per CPU); steal %.0f ms",
			   foreign_ms, wall_ms, steal_ms);
	else
		bench_note(stdout, s->o.fmt, "foreign CPU time unknown: /proc/stat unreadable");
	report_baseline(s);
	report_targets(s);
	if (!stamp_stop)
		bench_note(stdout, s->o.fmt, "reproduce: bench/bench_stamp --reps %llu --iters %llu "
			   "--capacity %llu --cpu %d,%d --format %s",
			   (unsigned long long)s->o.reps, (unsigned long long)s->o.iters,
			   (unsigned long long)s->o.capacity, s->o.cpu_producer, s->o.cpu_drainer,
			   s->o.fmt == BENCH_FORMAT_MD ? "md" :
			   s->o.fmt == BENCH_FORMAT_CSV ? "csv" : "live");
	rc = stamp_stop ? 1 : 0;
out:
	cleanup(s);
	free(s->drainer);
	free(s);
	if (stamp_stop) {
		fprintf(stderr, "bench_stamp: stopped by signal %d; the ring was removed\n",
			(int)stamp_stop);
		/* Die of the signal (SA_RESETHAND restored the default action of
		 * all but SIGPIPE). */
		signal((int)stamp_stop, SIG_DFL);
		raise((int)stamp_stop);
	}
	return rc;
}
