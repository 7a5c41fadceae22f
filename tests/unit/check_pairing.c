/*
 * check_pairing.c - the pairing engine (src/pairing.c): span state machine,
 * anomaly counters, stage and point table limits, overhead subtraction,
 * deferred recording, report row order, the two-thread interval hand-over,
 * and proof that the drain path never allocates.
 *
 * This binary defines malloc, calloc, realloc, aligned_alloc and memalign
 * itself, forwarding to glibc's and counting calls while a test asks it to.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "pairing.h"
#include "span_table.h"
#include "testrand.h"

/* ---- allocation counting ------------------------------------------- */

static atomic_int alloc_counting;
static atomic_long alloc_calls;

static inline void alloc_note(void)
{
	if (atomic_load_explicit(&alloc_counting, memory_order_relaxed))
		atomic_fetch_add_explicit(&alloc_calls, 1, memory_order_relaxed);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* Under a sanitizer the allocator is the sanitizer's: count through its
 * hooks instead of replacing malloc. */
int __sanitizer_install_malloc_and_free_hooks(void (*m)(const volatile void *, size_t),
					      void (*f)(const volatile void *));

static void hook_malloc(const volatile void *p, size_t size)
{
	(void)p;
	(void)size;
	alloc_note();
}

static void hook_free(const volatile void *p)
{
	(void)p;
}

__attribute__((constructor)) static void install_alloc_hooks(void)
{
	__sanitizer_install_malloc_and_free_hooks(hook_malloc, hook_free);
}
#else
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *ptr);

void *malloc(size_t size)
{
	alloc_note();
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	alloc_note();
	return __libc_calloc(n, size);
}

void *realloc(void *ptr, size_t size)
{
	alloc_note();
	return __libc_realloc(ptr, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	alloc_note();
	return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size)
{
	alloc_note();
	return __libc_memalign(align, size);
}

void free(void *ptr)
{
	__libc_free(ptr);
}
#endif

/* ---- harness --------------------------------------------------------- */

static struct pairing *P;
static struct pairing_interval IV;
static uint64_t flip_clock;

static uint32_t engine_outliers;   /* outliers kept by engine()'s engines */

static struct pairing *engine(uint32_t max_open, uint32_t max_stages, uint64_t stall,
			      uint64_t overhead, bool subtract)
{
	struct pairing_config cfg = {
		.outliers = engine_outliers,
		.max_open_spans = max_open,
		.max_stages = max_stages,
		.stall_ticks = stall,
		.overhead_ticks = overhead,
		.subtract_overhead = subtract,
	};
	struct pairing *p = pairing_new(&cfg);

	ck_assert_ptr_nonnull(p);
	return p;
}

static void setup_default(void)
{
	P = engine(4096, 1024, 0, 0, false);
	flip_clock = 0;
}

static void teardown(void)
{
	pairing_free(P);
	P = NULL;
}

static void ev(uint32_t point, uint8_t step, uint64_t ts, uint32_t seq)
{
	struct perfmon_event e = { .tsc = ts, .point = point, .event = PERFMON_EVENT(step, seq) };

	pairing_feed(P, &e, 1);
}

static void begin(uint32_t point, uint64_t ts)
{
	ev(point, PERFMON_BEGIN_STEP, ts, 0);
}

static void step(uint32_t point, uint8_t s, uint64_t ts)
{
	ev(point, s, ts, 0);
}

static void end(uint32_t point, uint64_t ts)
{
	ev(point, PERFMON_END_STEP, ts, 0);
}

static void value(uint32_t point, uint64_t v)
{
	ev(point, PERFMON_VALUE_STEP, v, 0);
}

/* End the interval and take it on the reporter side. */
static void snap(void)
{
	ck_assert(pairing_flip(P, ++flip_clock));
	ck_assert(pairing_collect(P, &IV));
}

static void unsnap(void)
{
	pairing_release(P);
}

static const struct accum *row_iv(enum pairing_kind kind, uint32_t point, uint8_t from,
				  uint8_t to)
{
	struct pairing_row r;

	if (!pairing_find_row(P, kind, point, from, to, &r))
		return NULL;
	return r.interval;
}

static const struct accum *stage_iv(uint32_t point, uint8_t from, uint8_t to)
{
	return row_iv(PAIRING_STAGE, point, from, to);
}

static const struct accum *total_iv(uint32_t point)
{
	return row_iv(PAIRING_TOTAL, point, 0, 0);
}

static struct pairing_anomalies anomalies(uint32_t point)
{
	struct pairing_anomalies none = { 0, 0, 0, 0 };
	struct pairing_row r;

	if (!pairing_find_row(P, PAIRING_TOTAL, point, 0, 0, &r))
		return none;
	return *r.anomalies;
}

/* Every kind of anomaly in `a` was counted more than `floor` times: the
 * stream that made them reached each anomaly path. */
static void assert_every_anomaly_above(struct pairing_anomalies a, uint64_t floor)
{
	ck_assert_uint_gt(a.abandoned, floor);
	ck_assert_uint_gt(a.orphan, floor);
	ck_assert_uint_gt(a.invalid, floor);
	ck_assert_uint_gt(a.out_of_range, floor);
}

/* Rows holding samples in the finished interval. */
static unsigned rows_with_samples(void)
{
	struct pairing_row *rows = calloc(pairing_max_rows(P), sizeof(*rows));
	unsigned i, n, k = 0;

	ck_assert_ptr_nonnull(rows);
	n = pairing_rows(P, rows, pairing_max_rows(P));
	for (i = 0; i < n; i++)
		k += rows[i].interval->count != 0;
	free(rows);
	return k;
}

/* ---- test_pairing scenarios ----------------------------------------- */

START_TEST(test_bad_config)
{
	struct pairing_config cfg = { .max_open_spans = 0, .max_stages = 10 };

	errno = 0;
	ck_assert_ptr_null(pairing_new(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	cfg.max_open_spans = 10;
	cfg.max_stages = 0;
	ck_assert_ptr_null(pairing_new(&cfg));
	cfg.max_stages = PAIRING_MAX_STAGES + 1;
	ck_assert_ptr_null(pairing_new(&cfg));
}
END_TEST

START_TEST(test_simple_span)
{
	const struct accum *t;

	begin(1, 1000);
	ck_assert_uint_eq(pairing_open_spans(P), 1);
	end(1, 1500);
	ck_assert_uint_eq(pairing_open_spans(P), 0);
	snap();
	t = total_iv(1);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(t->count, 1);
	ck_assert_uint_eq(accum_min(t), 500);
	/* Only the total: no 0 -> 255 row. */
	ck_assert_ptr_null(stage_iv(1, 0, 0xFF));
	ck_assert_uint_eq(IV.nstages, 1);
	ck_assert_uint_eq(rows_with_samples(), 1);
	{
		struct pairing_anomalies a = anomalies(1);
		ck_assert(!pairing_anomalies_any(&a));
	}
	unsnap();
}
END_TEST

START_TEST(test_pipeline)
{
	double sum;

	begin(3, 1000);
	step(3, 1, 1100);
	step(3, 2, 1350);
	step(3, 3, 1400);
	end(3, 1600);
	snap();
	ck_assert_uint_eq(IV.nstages, 5);
	ck_assert_uint_eq(accum_min(stage_iv(3, 0, 1)), 100);
	ck_assert_uint_eq(accum_min(stage_iv(3, 1, 2)), 250);
	ck_assert_uint_eq(accum_min(stage_iv(3, 2, 3)), 50);
	ck_assert_uint_eq(accum_min(stage_iv(3, 3, 0xFF)), 200);
	ck_assert_uint_eq(accum_min(total_iv(3)), 600);
	sum = accum_mean(stage_iv(3, 0, 1)) + accum_mean(stage_iv(3, 1, 2)) +
	      accum_mean(stage_iv(3, 2, 3)) + accum_mean(stage_iv(3, 3, 0xFF));
	ck_assert_double_eq(sum, accum_mean(total_iv(3)));
	unsnap();
}
END_TEST

START_TEST(test_rebegin_abandons)
{
	begin(1, 1000);
	step(1, 4, 1100);
	begin(1, 1200);
	end(1, 1500);
	snap();
	ck_assert_uint_eq(anomalies(1).abandoned, 1);
	ck_assert_uint_eq(total_iv(1)->count, 1);
	ck_assert_uint_eq(accum_min(total_iv(1)), 300);
	/* The abandoned span's deferred stage was never recorded. */
	ck_assert_ptr_null(stage_iv(1, 0, 4));
	unsnap();
}
END_TEST

START_TEST(test_orphans)
{
	step(1, 2, 100);
	end(1, 200);
	snap();
	ck_assert_uint_eq(anomalies(1).orphan, 2);
	ck_assert_uint_eq(total_iv(1)->count, 0);
	ck_assert_uint_eq(rows_with_samples(), 0);
	unsnap();

	begin(2, 1000);
	end(2, 1100);
	end(2, 1200);
	snap();
	ck_assert_uint_eq(total_iv(2)->count, 1);
	ck_assert_uint_eq(anomalies(2).orphan, 1);
	ck_assert_uint_eq(anomalies(1).orphan, 0);
	unsnap();
}
END_TEST

START_TEST(test_steps_carry_no_order)
{
	begin(1, 0);
	step(1, 3, 10);
	step(1, 1, 30);
	end(1, 60);
	snap();
	ck_assert_ptr_nonnull(stage_iv(1, 3, 1));
	ck_assert_uint_eq(accum_min(stage_iv(1, 3, 1)), 20);
	ck_assert_ptr_null(stage_iv(1, 1, 3));
	unsnap();
}
END_TEST

START_TEST(test_invalid_discards_span)
{
	begin(1, 5000);
	step(1, 1, 4000);
	ck_assert_uint_eq(pairing_open_spans(P), 0);
	end(1, 6000);
	snap();
	ck_assert_uint_eq(anomalies(1).invalid, 1);
	ck_assert_uint_eq(anomalies(1).orphan, 1);
	ck_assert_uint_eq(rows_with_samples(), 0);
	unsnap();

	/* A span discarded after good steps leaves none of them behind. */
	begin(2, 100);
	step(2, 1, 200);
	step(2, 2, 300);
	end(2, 250);
	snap();
	ck_assert_uint_eq(anomalies(2).invalid, 1);
	ck_assert_ptr_null(stage_iv(2, 0, 1));
	ck_assert_ptr_null(stage_iv(2, 1, 2));
	ck_assert_uint_eq(total_iv(2)->count, 0);
	unsnap();
}
END_TEST

START_TEST(test_equal_timestamps)
{
	begin(1, 700);
	step(1, 5, 700);
	end(1, 700);
	begin(2, 800);
	end(2, 800);
	snap();
	ck_assert_uint_eq(anomalies(1).invalid, 0);
	ck_assert_uint_eq(stage_iv(1, 0, 5)->count, 1);
	ck_assert_uint_eq(accum_max(stage_iv(1, 0, 5)), 0);
	ck_assert_uint_eq(total_iv(2)->count, 1);
	ck_assert_uint_eq(accum_max(total_iv(2)), 0);
	unsnap();
}
END_TEST

START_TEST(test_interleaved_points)
{
	begin(1, 1000);
	begin(2, 1100);
	end(1, 1300);
	end(2, 1800);
	snap();
	ck_assert_uint_eq(accum_min(total_iv(1)), 300);
	ck_assert_uint_eq(accum_min(total_iv(2)), 700);
	unsnap();
}
END_TEST

START_TEST(test_intervals_do_not_fold)
{
	struct pairing_row r;

	begin(1, 0);
	end(1, 100);
	snap();
	unsnap();
	begin(1, 1000);
	end(1, 1300);
	snap();
	ck_assert(pairing_find_row(P, PAIRING_TOTAL, 1, 0, 0, &r));
	ck_assert_uint_eq(r.interval->count, 1);
	ck_assert_uint_eq(accum_min(r.interval), 300);
	ck_assert_uint_eq(r.lifetime->count, 2);
	ck_assert_uint_eq(accum_min(r.lifetime), 100);
	ck_assert_uint_eq(accum_max(r.lifetime), 300);
	unsnap();
	/* An idle interval: the row is there, empty, lifetime kept. */
	snap();
	ck_assert(pairing_find_row(P, PAIRING_TOTAL, 1, 0, 0, &r));
	ck_assert_uint_eq(r.interval->count, 0);
	ck_assert_uint_eq(r.lifetime->count, 2);
	unsnap();
}
END_TEST

START_TEST(test_overhead_clamps)
{
	pairing_free(P);
	P = engine(64, 64, 0, 40, true);
	begin(1, 0);
	step(1, 1, 100);
	step(1, 2, 110);
	end(1, 1110);
	snap();
	ck_assert_uint_eq(accum_min(stage_iv(1, 0, 1)), 60);
	ck_assert_uint_eq(accum_min(stage_iv(1, 1, 2)), 0);
	ck_assert_uint_eq(accum_min(stage_iv(1, 2, 0xFF)), 960);
	ck_assert_uint_eq(accum_min(total_iv(1)), 1110 - 3 * 40);
	ck_assert_uint_eq(IV.overhead_ticks, 40);
	unsnap();
}
END_TEST

START_TEST(test_overhead_stages_add_up)
{
	uint64_t sum;

	pairing_free(P);
	P = engine(64, 64, 0, 10, true);
	begin(1, 1000);
	step(1, 1, 1100);
	step(1, 2, 1350);
	end(1, 1600);
	snap();
	sum = accum_min(stage_iv(1, 0, 1)) + accum_min(stage_iv(1, 1, 2)) +
	      accum_min(stage_iv(1, 2, 0xFF));
	ck_assert_uint_eq(accum_min(total_iv(1)), 600 - 30);
	ck_assert_uint_eq(sum, 600 - 30);
	unsnap();
}
END_TEST

START_TEST(test_overhead_simple_and_repeated)
{
	pairing_free(P);
	P = engine(64, 64, 0, 25, true);
	begin(1, 1000);
	end(1, 1500);
	snap();
	ck_assert_uint_eq(accum_min(total_iv(1)), 475);
	unsnap();

	/* begin 1 1 1 end: four transitions, 0->1, 1->1 twice, 1->end. */
	pairing_free(P);
	P = engine(64, 64, 0, 5, true);
	begin(2, 0);
	step(2, 1, 100);
	step(2, 1, 200);
	step(2, 1, 300);
	end(2, 400);
	value(2, 3);
	snap();
	ck_assert_uint_eq(accum_min(total_iv(2)), 400 - 20);
	ck_assert_uint_eq(stage_iv(2, 1, 1)->count, 2);
	ck_assert_uint_eq(accum_mean(stage_iv(2, 1, 1)), 95);
	ck_assert_uint_eq(accum_min(stage_iv(2, 0, 1)) + 2 * 95 + accum_min(stage_iv(2, 1, 0xFF)),
			  380);
	/* Values are never corrected. */
	ck_assert_uint_eq(accum_min(row_iv(PAIRING_VALUE, 2, 0, 0)), 3);
	unsnap();
}
END_TEST

START_TEST(test_overhead_off_by_default)
{
	pairing_free(P);
	P = engine(64, 64, 0, 25, false);
	begin(1, 1000);
	end(1, 1500);
	snap();
	ck_assert_uint_eq(accum_min(total_iv(1)), 500);
	ck_assert_uint_eq(IV.overhead_ticks, 0);
	unsnap();
}
END_TEST

START_TEST(test_reconfigure)
{
	struct pairing_config cfg = { .max_open_spans = 4096, .max_stages = 1024,
				      .overhead_ticks = 100, .subtract_overhead = true };

	cfg.max_stages = 2048;
	ck_assert_int_eq(pairing_reconfigure(P, &cfg), -EBUSY);
	begin(1, 0);
	end(1, 500);
	cfg.max_stages = 1024;
	ck_assert_int_eq(pairing_reconfigure(P, &cfg), 0);
	begin(1, 1000);
	end(1, 1500);
	snap();
	ck_assert_uint_eq(accum_max(total_iv(1)), 500);
	ck_assert_uint_eq(accum_min(total_iv(1)), 400);
	unsnap();
}
END_TEST

START_TEST(test_values)
{
	const struct accum *v;

	value(9, 10);
	value(9, 30);
	value(9, UINT64_MAX);
	/* A value point can have spans too, and values never pair. */
	begin(9, 100);
	value(9, 20);
	end(9, 150);
	snap();
	v = row_iv(PAIRING_VALUE, 9, 0, 0);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(v->count, 4);
	ck_assert_uint_eq(accum_min(v), 10);
	ck_assert_uint_eq(accum_max(v), UINT64_MAX);
	ck_assert_uint_eq(accum_min(total_iv(9)), 50);
	{
		struct pairing_anomalies a = anomalies(9);
		ck_assert(!pairing_anomalies_any(&a));
	}
	ck_assert_uint_eq(IV.nstages, 2);
	unsnap();
}
END_TEST

START_TEST(test_row_keys_distinct)
{
	/* Total (p,0,0), value (p,0xFE,0xFE) and every transition out of the
	 * begin are separate rows. */
	begin(4, 0);
	step(4, 0xFD, 5);
	step(4, 1, 7);
	end(4, 10);
	begin(4, 20);
	step(4, 1, 21);
	end(4, 30);
	value(4, 77);
	snap();
	ck_assert_uint_eq(IV.nstages, 6);
	ck_assert_uint_eq(total_iv(4)->count, 2);
	ck_assert_uint_eq(stage_iv(4, 0, 0xFD)->count, 1);
	ck_assert_uint_eq(stage_iv(4, 0xFD, 1)->count, 1);
	ck_assert_uint_eq(stage_iv(4, 0, 1)->count, 1);
	ck_assert_uint_eq(stage_iv(4, 1, 0xFF)->count, 2);
	ck_assert_uint_eq(row_iv(PAIRING_VALUE, 4, 0, 0)->count, 1);
	unsnap();
}
END_TEST

START_TEST(test_max_stages_out_of_range)
{
	uint32_t pt;
	struct pairing_row r;
	unsigned n = 0;

	pairing_free(P);
	P = engine(64, 4, 0, 0, false);
	for (pt = 0; pt < 20; pt++) {
		begin(pt, 100);
		end(pt, 200);
	}
	snap();
	ck_assert_uint_le(IV.nstages, 4);
	for (pt = 0; pt < 20; pt++)
		n += total_iv(pt) != NULL;
	ck_assert_uint_eq(n, 4);
	/* The 16 points without a row have no point record either: their
	 * out_of_range folds into the overflow row. */
	ck_assert(pairing_find_row(P, PAIRING_OVERFLOW, 0, 0, 0, &r));
	ck_assert_uint_eq(r.anomalies->out_of_range, 16);
	ck_assert_uint_eq(IV.npoints, 4);
	unsnap();
}
END_TEST

START_TEST(test_out_of_range_known_point)
{
	/* Two rows fill the table; the point's total no longer fits.  The
	 * point has a record, so the count is its own, on a total row that
	 * has no samples. */
	struct pairing_row r;

	pairing_free(P);
	P = engine(64, 2, 0, 0, false);
	begin(1, 0);
	step(1, 1, 10);
	end(1, 30);
	snap();
	ck_assert_uint_eq(stage_iv(1, 0, 1)->count, 1);
	ck_assert_uint_eq(stage_iv(1, 1, 0xFF)->count, 1);
	ck_assert(pairing_find_row(P, PAIRING_TOTAL, 1, 0, 0, &r));
	ck_assert_uint_eq(r.stage, PAIRING_NONE);
	ck_assert_uint_eq(r.interval->count, 0);
	ck_assert_uint_eq(r.anomalies->out_of_range, 1);
	ck_assert(!pairing_find_row(P, PAIRING_OVERFLOW, 0, 0, 0, &r));
	unsnap();
}
END_TEST

START_TEST(test_overflow_folding)
{
	struct pairing_row *rows;
	unsigned n;
	uint32_t pt;

	pairing_free(P);
	P = engine(64, 4, 0, 0, false);
	/* A real point at UINT32_MAX still answers for itself. */
	end(UINT32_MAX, 10);
	for (pt = 0; pt < 10; pt++)
		end(pt, 10);
	snap();
	ck_assert_uint_eq(anomalies(UINT32_MAX).orphan, 1);
	ck_assert_uint_eq(anomalies(0).orphan, 1);
	ck_assert_uint_eq(anomalies(2).orphan, 1);
	ck_assert_uint_eq(anomalies(3).orphan, 0);
	rows = calloc(pairing_max_rows(P), sizeof(*rows));
	ck_assert_ptr_nonnull(rows);
	n = pairing_rows(P, rows, pairing_max_rows(P));
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(rows[0].point, 0);
	ck_assert_uint_eq(rows[2].point, 2);
	ck_assert_uint_eq(rows[3].point, UINT32_MAX);
	ck_assert_int_eq(rows[3].kind, PAIRING_TOTAL);
	/* The overflow row is last and holds the other 7 points. */
	ck_assert_int_eq(rows[4].kind, PAIRING_OVERFLOW);
	ck_assert_uint_eq(rows[4].anomalies->orphan, 7);
	ck_assert_uint_eq(rows[4].anomalies_lifetime->orphan, 7);
	ck_assert_uint_eq(rows[4].interval->count, 0);
	unsnap();
	/* Next interval: lifetime kept, interval delta back to 0. */
	snap();
	n = pairing_rows(P, rows, pairing_max_rows(P));
	ck_assert_int_eq(rows[n - 1].kind, PAIRING_OVERFLOW);
	ck_assert_uint_eq(rows[n - 1].anomalies->orphan, 0);
	ck_assert_uint_eq(rows[n - 1].anomalies_lifetime->orphan, 7);
	unsnap();
	free(rows);
}
END_TEST

START_TEST(test_row_order)
{
	struct pairing_row *rows;
	unsigned n, i;
	static const struct {
		uint32_t point;
		enum pairing_kind kind;
		uint8_t from, to;
	} want[] = {
		{ 2, PAIRING_STAGE, 0, 1 },
		{ 2, PAIRING_STAGE, 1, 0xFF },
		{ 2, PAIRING_TOTAL, 0, 0 },
		{ 5, PAIRING_TOTAL, 0, 0 },      /* anomalies only */
		{ 9, PAIRING_STAGE, 0, 3 },
		{ 9, PAIRING_STAGE, 0, 7 },
		{ 9, PAIRING_STAGE, 3, 0xFF },
		{ 9, PAIRING_STAGE, 7, 0xFF },
		{ 9, PAIRING_TOTAL, 0, 0 },
		{ 9, PAIRING_VALUE, 0, 0 },
		{ 11, PAIRING_VALUE, 0, 0 },     /* values only: no total row */
	};

	value(11, 1);
	value(9, 1);
	begin(9, 0);
	step(9, 7, 1);
	end(9, 2);
	end(5, 3);
	begin(2, 0);
	step(2, 1, 1);
	end(2, 2);
	begin(9, 10);
	step(9, 3, 11);
	end(9, 12);
	snap();
	rows = calloc(pairing_max_rows(P), sizeof(*rows));
	ck_assert_ptr_nonnull(rows);
	n = pairing_rows(P, rows, pairing_max_rows(P));
	ck_assert_uint_eq(n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(rows[i].point, want[i].point);
		ck_assert_int_eq(rows[i].kind, want[i].kind);
		ck_assert_uint_eq(rows[i].from, want[i].from);
		ck_assert_uint_eq(rows[i].to, want[i].to);
	}
	ck_assert_uint_eq(rows[3].anomalies->orphan, 1);
	ck_assert_uint_eq(rows[3].stage, PAIRING_NONE);
	/* A short array gets a prefix. */
	ck_assert_uint_eq(pairing_rows(P, rows, 3), 3);
	ck_assert_uint_eq(rows[2].point, 2);
	unsnap();
	free(rows);
}
END_TEST

START_TEST(test_eviction_charges_evicted_point)
{
	pairing_free(P);
	P = engine(2, 64, 0, 0, false);
	begin(1, 10);
	begin(2, 20);
	begin(3, 30);     /* evicts point 1's span */
	end(1, 40);       /* ...which is now an orphan */
	end(3, 50);
	snap();
	ck_assert_uint_eq(anomalies(1).abandoned, 1);
	ck_assert_uint_eq(anomalies(1).orphan, 1);
	ck_assert_uint_eq(anomalies(3).abandoned, 0);
	ck_assert_uint_eq(accum_min(total_iv(3)), 20);
	ck_assert_uint_eq(IV.open_spans, 1);
	ck_assert_uint_eq(IV.peak_open, 2);
	unsnap();
}
END_TEST

START_TEST(test_sweep_records_nothing)
{
	pairing_free(P);
	P = engine(64, 64, 1000, 0, false);
	begin(1, 100);
	step(1, 1, 200);
	begin(2, 1500);
	ck_assert_uint_eq(pairing_sweep(P, 1100), 0);
	ck_assert_uint_eq(pairing_sweep(P, 1201), 1);
	ck_assert_uint_eq(pairing_open_spans(P), 1);
	end(1, 1300);
	snap();
	ck_assert_uint_eq(anomalies(1).abandoned, 1);
	ck_assert_uint_eq(anomalies(1).orphan, 1);
	ck_assert_ptr_null(stage_iv(1, 0, 1));
	ck_assert_uint_eq(IV.abandoned_by_age, 1);
	unsnap();
}
END_TEST

/* ---- deferred recording and the interval hand-over ------------------- */

START_TEST(test_flip_mid_span)
{
	struct pairing_row r;

	begin(1, 1000);
	step(1, 1, 1100);
	snap();
	/* Nothing of the open span is in the first interval. */
	ck_assert_ptr_null(stage_iv(1, 0, 1));
	ck_assert_ptr_null(total_iv(1));
	unsnap();
	step(1, 2, 1300);
	end(1, 1600);
	snap();
	ck_assert_uint_eq(stage_iv(1, 0, 1)->count, 1);
	ck_assert_uint_eq(stage_iv(1, 1, 2)->count, 1);
	ck_assert_uint_eq(stage_iv(1, 2, 0xFF)->count, 1);
	ck_assert(pairing_find_row(P, PAIRING_TOTAL, 1, 0, 0, &r));
	ck_assert_uint_eq(r.interval->count, 1);
	ck_assert_uint_eq(accum_min(r.interval), 600);
	unsnap();
}
END_TEST

/* A span on point 1 with `nsteps` steps, the first at `ts`, step i `gap` + i
 * after the one before, the end 1000 after the last.  Returns the end's
 * timestamp. */
static uint64_t long_span(uint64_t ts, uint64_t gap, unsigned nsteps)
{
	begin(1, ts);
	for (unsigned i = 1; i <= nsteps; i++) {
		ts += gap + i;
		step(1, (uint8_t)i, ts);
	}
	ts += 1000;
	end(1, ts);
	return ts;
}

/* Of the finished interval: check that it has `nrows` rows of one sample
 * each, and return the sum of the stage rows' samples. */
static uint64_t stage_sum_one_each(unsigned nrows)
{
	struct pairing_row *rows = calloc(pairing_max_rows(P), sizeof(*rows));
	uint64_t sum = 0;
	unsigned i, n;

	ck_assert_ptr_nonnull(rows);
	n = pairing_rows(P, rows, pairing_max_rows(P));
	ck_assert_uint_eq(n, nrows);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(rows[i].interval->count, 1);
		if (rows[i].kind == PAIRING_STAGE)
			sum += accum_min(rows[i].interval);
	}
	free(rows);
	return sum;
}

START_TEST(test_long_span_past_deferral)
{
	/* More steps than the deferral holds: the extra transitions are
	 * recorded as they come, and everything still adds up. */
	unsigned nsteps = SPAN_DEFERRED_MAX + 6;
	uint64_t ts = long_span(0, 0, nsteps);

	snap();
	ck_assert_uint_eq(stage_sum_one_each(nsteps + 2), ts);
	ck_assert_uint_eq(accum_min(total_iv(1)), ts);
	ck_assert_uint_eq(accum_min(stage_iv(1, (uint8_t)nsteps, 0xFF)), 1000);
	unsnap();
}
END_TEST

/* A span past the deferral with the overhead subtracted: one overhead per
 * transition, the deferred ones and those recorded as they came alike, so
 * the stages still add up to the total. */
START_TEST(test_overhead_past_deferral)
{
	unsigned nsteps = SPAN_DEFERRED_MAX + 6;
	uint64_t ts;

	pairing_free(P);
	P = engine(64, 64, 0, 10, true);
	ts = long_span(1000, 100, nsteps);
	snap();
	ck_assert_uint_eq(stage_sum_one_each(nsteps + 2), ts - 1000 - 10 * (nsteps + 1));
	ck_assert_uint_eq(accum_min(total_iv(1)), ts - 1000 - 10 * (nsteps + 1));
	ck_assert_uint_eq(accum_min(stage_iv(1, (uint8_t)nsteps, 0xFF)), 1000 - 10);
	unsnap();
}
END_TEST

START_TEST(test_flip_while_held)
{
	struct pairing_interval iv2;

	begin(1, 0);
	end(1, 10);
	ck_assert(pairing_flip(P, 100));
	/* The reporter still holds it: the next flip fails and the drain
	 * side keeps accumulating into its own buffer. */
	begin(1, 20);
	end(1, 50);
	ck_assert(!pairing_flip(P, 200));
	ck_assert(pairing_collect(P, &IV));
	ck_assert(pairing_collect(P, &iv2));   /* same interval, not merged twice */
	ck_assert_uint_eq(IV.end_tsc, 100);
	ck_assert_uint_eq(total_iv(1)->count, 1);
	{
		struct pairing_row r;
		ck_assert(pairing_find_row(P, PAIRING_TOTAL, 1, 0, 0, &r));
		ck_assert_uint_eq(r.lifetime->count, 1);
	}
	begin(1, 60);
	end(1, 100);
	pairing_release(P);
	ck_assert(!pairing_collect(P, &IV));
	ck_assert(pairing_flip(P, 300));
	ck_assert(pairing_collect(P, &IV));
	ck_assert_uint_eq(IV.start_tsc, 100);
	ck_assert_uint_eq(IV.end_tsc, 300);
	ck_assert_uint_eq(total_iv(1)->count, 2);
	pairing_release(P);
	/* Release without collect still folds the interval into lifetime. */
	begin(1, 400);
	end(1, 410);
	ck_assert(pairing_flip(P, 500));
	pairing_release(P);
	ck_assert(pairing_flip(P, 600));
	ck_assert(pairing_collect(P, &IV));
	{
		struct pairing_row r;
		ck_assert(pairing_find_row(P, PAIRING_TOTAL, 1, 0, 0, &r));
		ck_assert_uint_eq(r.interval->count, 0);
		ck_assert_uint_eq(r.lifetime->count, 4);
	}
	pairing_release(P);
}
END_TEST

/* Stages of a 3-stage pipeline add up to the total, interval by interval,
 * with random delays, overlapping seqs and flips falling mid-span. */
START_TEST(test_stage_means_sum)
{
	enum { SPANS = 20000, LIVE = 16 };
	uint64_t ts = 1000, next[LIVE];
	unsigned stage_of[LIVE], done = 0, started = 0, intervals = 0, i;

	rng_state = 42;
	memset(stage_of, 0, sizeof(stage_of));
	memset(next, 0, sizeof(next));
	while (done < SPANS) {
		unsigned k = (unsigned)(rng_next() % LIVE);

		ts += 1 + rng_next() % 500;
		if (stage_of[k] == 0) {
			if (started == SPANS)
				continue;
			ev(7, PERFMON_BEGIN_STEP, ts, k + 1);
			started++;
			stage_of[k] = 1;
		} else if (stage_of[k] < 3) {
			ev(7, (uint8_t)stage_of[k], ts, k + 1);
			stage_of[k]++;
		} else {
			ev(7, PERFMON_END_STEP, ts, k + 1);
			stage_of[k] = 0;
			done++;
		}
		if (rng_next() % 997 == 0 || done == SPANS) {
			const struct accum *t, *a, *b, *c;

			snap();
			intervals++;
			t = total_iv(7);
			if (t && t->count) {
				a = stage_iv(7, 0, 1);
				b = stage_iv(7, 1, 2);
				c = stage_iv(7, 2, 0xFF);
				ck_assert_uint_eq(a->count, t->count);
				ck_assert_uint_eq(b->count, t->count);
				ck_assert_uint_eq(c->count, t->count);
				ck_assert_double_eq_tol(accum_mean(a) + accum_mean(b) + accum_mean(c),
							accum_mean(t), 1e-9 * accum_mean(t));
			}
			unsnap();
		}
	}
	ck_assert_uint_gt(intervals, 10);
	for (i = 0; i < LIVE; i++)
		ck_assert_uint_eq(stage_of[i], 0);
}
END_TEST

/*
 * Random events, garbage included: no crash, and every begin is accounted
 * for exactly once: it ended (total), was abandoned, was invalidated, or
 * is still open.
 */
START_TEST(test_conservation_random)
{
	enum { EVENTS = 300000 };
	uint64_t begins = 0, totals = 0, abandoned = 0, invalid = 0;
	struct pairing_row *rows;
	unsigned n, i, k;

	pairing_free(P);
	P = engine(64, 4096, 5000, 0, false);
	rng_state = 7;
	for (k = 0; k < EVENTS; k++) {
		uint64_t r = rng_next();
		uint32_t point = (uint32_t)(r % 13);
		uint32_t seq = (uint32_t)((r >> 8) % 11);
		uint8_t s;
		uint64_t ts = k * 10 + (r >> 40) % 40;   /* mostly forward, some back */

		switch ((r >> 16) % 5) {
		case 0: case 1: s = PERFMON_BEGIN_STEP; begins++; break;
		case 2: s = PERFMON_END_STEP; break;
		case 3: s = (uint8_t)(1 + (r >> 24) % 4); break;
		default: s = (uint8_t)(r >> 32); begins += s == PERFMON_BEGIN_STEP; break;
		}
		ev(point, s, ts, seq);
		if (k % 50000 == 0)
			pairing_sweep(P, ts);
	}
	snap();
	rows = calloc(pairing_max_rows(P), sizeof(*rows));
	ck_assert_ptr_nonnull(rows);
	n = pairing_rows(P, rows, pairing_max_rows(P));
	for (i = 0; i < n; i++) {
		if (rows[i].kind != PAIRING_TOTAL)
			continue;
		totals += rows[i].lifetime->count;
		abandoned += rows[i].anomalies_lifetime->abandoned;
		invalid += rows[i].anomalies_lifetime->invalid;
	}
	ck_assert_uint_gt(totals, 1000);
	ck_assert_uint_gt(abandoned, 100);
	ck_assert_uint_gt(invalid, 100);
	ck_assert_uint_eq(begins, totals + abandoned + invalid + IV.open_spans);
	unsnap();
	free(rows);
}
END_TEST

/*
 * Within one feed, samples are recorded in the order of the events that
 * make them, whatever path each takes: an end records its span's deferred
 * stages, a step past the deferral records at once.  With equal durations
 * a set of one keeps the first offered.  Span 1 ends (its 5 -> 6 took 50)
 * before span 2, deferring no more, takes its own 5 -> 6 in 50: span 1's
 * is kept.  The row exists beforehand, so that making it decides nothing.
 */
START_TEST(test_samples_in_event_order)
{
	static const uint8_t long_steps[] = { 1, 2, 3, 4, 5, 7, 8, 9, 10, 5 };
	struct perfmon_event e[32];
	struct pairing_row r;
	uint64_t ts = 1000;
	unsigned n = 0;

	pairing_free(P);
	engine_outliers = 1;
	P = engine(4096, 1024, 0, 0, false);
	engine_outliers = 0;
	begin(1, ts);
	step(1, 5, ts += 1);
	step(1, 6, ts += 10);
	end(1, ts += 1);
	e[n++] = (struct perfmon_event){ ts += 1, 1, PERFMON_EVENT(PERFMON_BEGIN_STEP, 1) };
	e[n++] = (struct perfmon_event){ ts += 1, 1, PERFMON_EVENT(5, 1) };
	e[n++] = (struct perfmon_event){ ts += 50, 1, PERFMON_EVENT(6, 1) };
	e[n++] = (struct perfmon_event){ ts += 1, 1, PERFMON_EVENT(PERFMON_BEGIN_STEP, 2) };
	for (unsigned i = 0; i < sizeof(long_steps); i++)
		e[n++] = (struct perfmon_event){ ts += 1, 1, PERFMON_EVENT(long_steps[i], 2) };
	e[n++] = (struct perfmon_event){ ts + 1, 1, PERFMON_EVENT(PERFMON_END_STEP, 1) };
	e[n++] = (struct perfmon_event){ ts += 50, 1, PERFMON_EVENT(6, 2) };
	pairing_feed(P, e, n);
	snap();
	ck_assert(pairing_find_row(P, PAIRING_STAGE, 1, 5, 6, &r));
	ck_assert_uint_eq(r.interval->count, 3);
	ck_assert_uint_eq(r.outliers->n, 1);
	ck_assert_uint_eq(r.outliers->e[0].ticks, 50);
	ck_assert_uint_eq(r.outliers->e[0].seq, 1);
	unsnap();
}
END_TEST

/* Two engines' finished intervals hold the same rows in the same order,
 * sample for sample, bound count for bound count, outlier for outlier. */
static struct pairing_anomalies assert_same_interval(struct pairing *a, struct pairing *b,
						      uint32_t nout)
{
	struct pairing_anomalies life = { 0, 0, 0, 0 };
	struct pairing_interval ia, ib;
	struct pairing_row *ra = calloc(pairing_max_rows(a), sizeof(*ra));
	struct pairing_row *rb = calloc(pairing_max_rows(b), sizeof(*rb));
	uint32_t n;

	ck_assert_ptr_nonnull(ra);
	ck_assert_ptr_nonnull(rb);
	ck_assert(pairing_collect(a, &ia));
	ck_assert(pairing_collect(b, &ib));
	ck_assert_mem_eq(&ia, &ib, sizeof(ia));
	n = pairing_rows(a, ra, pairing_max_rows(a));
	ck_assert_uint_eq(pairing_rows(b, rb, pairing_max_rows(b)), n);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_int_eq(ra[i].kind, rb[i].kind);
		ck_assert_uint_eq(ra[i].point, rb[i].point);
		ck_assert_uint_eq(ra[i].from, rb[i].from);
		ck_assert_uint_eq(ra[i].to, rb[i].to);
		ck_assert_uint_eq(ra[i].stage, rb[i].stage);
		ck_assert_mem_eq(ra[i].interval, rb[i].interval, sizeof(struct accum));
		ck_assert_mem_eq(ra[i].lifetime, rb[i].lifetime, sizeof(struct accum));
		ck_assert_mem_eq(ra[i].anomalies, rb[i].anomalies, sizeof(*ra[i].anomalies));
		ck_assert_mem_eq(ra[i].anomalies_lifetime, rb[i].anomalies_lifetime,
				 sizeof(*ra[i].anomalies_lifetime));
		life.abandoned += ra[i].anomalies_lifetime->abandoned;
		life.orphan += ra[i].anomalies_lifetime->orphan;
		life.invalid += ra[i].anomalies_lifetime->invalid;
		life.out_of_range += ra[i].anomalies_lifetime->out_of_range;
		ck_assert_int_eq(!ra[i].outliers, !rb[i].outliers);
		if (ra[i].outliers) {
			ck_assert_mem_eq(ra[i].outliers, rb[i].outliers, outliers_set_size(nout));
			ck_assert_mem_eq(ra[i].outliers_lifetime, rb[i].outliers_lifetime,
					 outliers_set_size(nout));
		}
	}
	free(ra);
	free(rb);
	return life;
}

/*
 * A feed looks ahead (hashing and prefetching events to come) and runs its
 * last events apart, but nothing it records may depend on how the stream
 * was cut into feeds: a stream fed in batches of any size must leave
 * exactly what it leaves fed one event at a time, rows in the same order
 * included.  The stream has it all: a table small enough to evict, spans
 * past the deferral, begins of open spans, orphans, events out of order,
 * value samples, points enough to fill the row table, and sweeps and
 * flips between feeds.
 */
START_TEST(test_batches_equal_single_events)
{
	enum { EVENTS = 200000, NOUT = 4 };
	struct perfmon_event *evs = malloc(EVENTS * sizeof(*evs));
	struct pairing *one, *many;
	struct pairing_anomalies life = { 0, 0, 0, 0 };
	uint64_t ts = UINT64_C(1) << 20, long_spans = 0;
	uint8_t steps[40][16] = { { 0 } };
	size_t k = 0;
	unsigned flips = 0;

	ck_assert_ptr_nonnull(evs);
	engine_outliers = NOUT;
	one = engine(48, 150, 30000, 2, true);
	many = engine(48, 150, 30000, 2, true);
	engine_outliers = 0;
	rng_state = 11;
	for (size_t i = 0; i < EVENTS; i++) {
		uint64_t r = rng_next();
		uint32_t point = (uint32_t)(r % 40), seq = (uint32_t)((r >> 8) % 16);
		unsigned pick = (unsigned)((r >> 16) % 100);
		uint8_t s;

		if (pick < 22) {
			s = PERFMON_BEGIN_STEP;
			steps[point][seq] = 0;
		} else if (pick < 40) {
			s = PERFMON_END_STEP;
			long_spans += steps[point][seq] > SPAN_DEFERRED_MAX;
		} else if (pick < 90) {
			s = (uint8_t)(1 + (r >> 24) % 6);
			steps[point][seq]++;
		} else if (pick < 97) {
			s = PERFMON_VALUE_STEP;
		} else {
			s = (uint8_t)(r >> 32);
		}
		ts += (r >> 40) % 50;
		evs[i] = (struct perfmon_event){
			/* one in 16 from well before its predecessors */
			.tsc = s == PERFMON_VALUE_STEP ? (r >> 40) : ts - (r >> 60 ? 0 : 30000),
			.point = point,
			.event = PERFMON_EVENT(s, seq),
		};
	}
	ck_assert_uint_gt(long_spans, 100);
	while (k < EVENTS) {
		size_t m = 1 + rng_next() % 3000;

		if (m > EVENTS - k)
			m = EVENTS - k;
		for (size_t i = 0; i < m; i++)
			pairing_feed(one, &evs[k + i], 1);
		pairing_feed(many, &evs[k], m);
		k += m;
		if (rng_next() % 4 == 0)
			ck_assert_uint_eq(pairing_sweep(one, evs[k - 1].tsc),
					  pairing_sweep(many, evs[k - 1].tsc));
		if (rng_next() % 8 == 0 || k == EVENTS) {
			ck_assert(pairing_flip(one, evs[k - 1].tsc));
			ck_assert(pairing_flip(many, evs[k - 1].tsc));
			life = assert_same_interval(one, many, NOUT);
			pairing_release(one);
			pairing_release(many);
			flips++;
		}
	}
	/* The stream did all it was meant to: evictions, orphans, spans
	 * out of order, rows run out (the last interval's lifetime). */
	ck_assert_uint_gt(flips, 5);
	assert_every_anomaly_above(life, 100);
	pairing_free(one);
	pairing_free(many);
	free(evs);
}
END_TEST

struct handover {
	struct pairing *p;
	unsigned spans;
	atomic_int drain_done;
	unsigned flips;
	uint64_t interval_totals;
	uint64_t lifetime_totals;
	unsigned intervals_seen;
	unsigned mismatches;
	unsigned rows_max;
};

static void *handover_drain(void *arg)
{
	struct handover *h = arg;
	uint64_t ts = 1, seq;
	struct perfmon_event batch[4 * 8];
	unsigned i, k, n;

	/* Eight spans in flight at a time, on points that keep appearing. */
	for (i = 0; i < h->spans; i += 8) {
		n = 0;
		for (k = 0; k < 8 && i + k < h->spans; k++) {
			uint32_t point = ((i + k) / 5000) % 40;

			seq = k + 1;
			batch[n++] = (struct perfmon_event){ ts++, point, PERFMON_EVENT(0, seq) };
			batch[n++] = (struct perfmon_event){ ts++, point, PERFMON_EVENT(1, seq) };
		}
		for (k = 0; k < 8 && i + k < h->spans; k++) {
			uint32_t point = ((i + k) / 5000) % 40;

			seq = k + 1;
			batch[n++] = (struct perfmon_event){ ts += 3, point, PERFMON_EVENT(2, seq) };
			batch[n++] = (struct perfmon_event){ ts += 5, point, PERFMON_EVENT(0xFF, seq) };
		}
		pairing_feed(h->p, batch, n);
		if ((i / 8) % 64 == 0)
			h->flips += pairing_flip(h->p, ts);
	}
	/* The last interval must get out: wait for the reporter's release. */
	while (!pairing_flip(h->p, ts))
		sched_yield();
	h->flips++;
	atomic_store_explicit(&h->drain_done, 1, memory_order_release);
	return NULL;
}

static void *handover_report(void *arg)
{
	struct handover *h = arg;
	struct pairing_row *rows = calloc(pairing_max_rows(h->p), sizeof(*rows));
	struct pairing_interval iv;

	ck_assert_ptr_nonnull(rows);
	for (;;) {
		int finished = atomic_load_explicit(&h->drain_done, memory_order_acquire);
		unsigned n, i;

		if (!pairing_collect(h->p, &iv)) {
			if (finished)
				break;
			sched_yield();
			continue;
		}
		h->intervals_seen++;
		n = pairing_rows(h->p, rows, pairing_max_rows(h->p));
		if (n > h->rows_max)
			h->rows_max = n;
		h->lifetime_totals = 0;
		for (i = 0; i < n; i++) {
			const struct accum *a, *b, *c;

			if (rows[i].kind != PAIRING_TOTAL)
				continue;
			h->interval_totals += rows[i].interval->count;
			h->lifetime_totals += rows[i].lifetime->count;
			/* Rows of a point sort together: 0->1, 1->2, 2->end, total. */
			if (i < 3) {
				h->mismatches++;
				continue;
			}
			a = rows[i - 3].interval;
			b = rows[i - 2].interval;
			c = rows[i - 1].interval;
			if (a->count != rows[i].interval->count || b->count != a->count ||
			    c->count != a->count)
				h->mismatches++;
		}
		pairing_release(h->p);
	}
	free(rows);
	return NULL;
}

START_TEST(test_two_thread_handover)
{
	struct handover h = { .spans = 200000 };
	pthread_t drain, report;

	pairing_free(P);
	P = engine(4096, 1024, 0, 0, false);
	h.p = P;
	atomic_init(&h.drain_done, 0);
	ck_assert_int_eq(pthread_create(&report, NULL, handover_report, &h), 0);
	ck_assert_int_eq(pthread_create(&drain, NULL, handover_drain, &h), 0);
	pthread_join(drain, NULL);
	pthread_join(report, NULL);
	ck_assert_uint_eq(h.intervals_seen, h.flips);
	ck_assert_uint_gt(h.flips, 1);
	ck_assert_uint_eq(h.interval_totals, h.spans);
	ck_assert_uint_eq(h.lifetime_totals, h.spans);
	ck_assert_uint_eq(h.mismatches, 0);
	ck_assert_uint_eq(h.rows_max, 40 * 4);
}
END_TEST

/* ---- slowest spans -------------------------------------------------- */

static int desc_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y) - (x > y);
}

/* The set's durations, slowest first. */
static uint32_t set_ticks(const struct outlier_set *s, uint64_t *out)
{
	for (uint32_t i = 0; i < s->n; i++)
		out[i] = s->e[i].ticks;
	qsort(out, s->n, sizeof(*out), desc_u64);
	return s->n;
}

/*
 * The engine offers a sample to a row's set only when it is not below the
 * gate kept beside the accumulator.  Each interval's set must still be
 * exactly its own N slowest, also when every span of an interval is
 * faster than the last interval's slowest (the gate starts over with the
 * interval), and the lifetime set the N slowest of all.
 */
START_TEST(test_outliers_exact_across_intervals)
{
	enum { N = 5, SPANS = 300, INTERVALS = 4 };
	static uint64_t want[INTERVALS][INTERVALS * SPANS], all[INTERVALS * SPANS];
	uint64_t got[N], ts = 1000;
	uint32_t seq = 0;

	pairing_free(P);
	engine_outliers = N;
	P = engine(4096, 1024, 0, 0, false);
	engine_outliers = 0;
	rng_state = 7;
	for (unsigned k = 0; k < INTERVALS; k++) {
		struct pairing_row r;
		/* Each interval ten times faster than the one before. */
		uint64_t scale = UINT64_C(1000000) / ((uint64_t)1 << (3 * k));

		for (unsigned i = 0; i < SPANS; i++) {
			uint64_t d = 1 + rng_next() % scale;

			ev(9, PERFMON_BEGIN_STEP, ts, seq);
			ev(9, PERFMON_END_STEP, ts + d, seq);
			seq++;
			ts += d + 1;
			want[k][i] = d;
			all[k * SPANS + i] = d;
		}
		snap();
		ck_assert(pairing_find_row(P, PAIRING_TOTAL, 9, 0, 0, &r));
		ck_assert_ptr_nonnull(r.outliers);
		ck_assert_uint_eq(set_ticks(r.outliers, got), N);
		qsort(want[k], SPANS, sizeof(want[k][0]), desc_u64);
		for (unsigned j = 0; j < N; j++)
			ck_assert_uint_eq(got[j], want[k][j]);
		/* The lifetime, this interval included. */
		ck_assert_uint_eq(set_ticks(r.outliers_lifetime, got), N);
		memcpy(want[k], all, (k + 1) * SPANS * sizeof(all[0]));
		qsort(want[k], (k + 1) * SPANS, sizeof(all[0]), desc_u64);
		for (unsigned j = 0; j < N; j++)
			ck_assert_uint_eq(got[j], want[k][j]);
		unsnap();
	}
}
END_TEST

/* ---- no allocation on the drain path -------------------------------- */

START_TEST(test_drain_never_allocates)
{
	enum { EVENTS = 1000000, BATCH = 1024 };
	struct perfmon_event *evs = calloc(BATCH, sizeof(*evs));
	void *(*volatile probe)(size_t) = malloc;
	uint64_t ts = 1;
	long calls, probe_calls;
	unsigned k = 0, b, flips = 0;
	size_t swept = 0;

	ck_assert_ptr_nonnull(evs);
	pairing_free(P);
	/* Small tables so evictions and out_of_range happen too; the
	 * slowest-spans sets are filled on the same path. */
	engine_outliers = 8;
	P = engine(256, 200, 20000, 20, true);
	engine_outliers = 0;
	rng_state = 99;

	/* The counter is live: one deliberate call is seen. */
	atomic_store(&alloc_calls, 0);
	atomic_store(&alloc_counting, 1);
	free(probe(16));
	atomic_store(&alloc_counting, 0);
	probe_calls = atomic_load(&alloc_calls);

	atomic_store(&alloc_calls, 0);
	atomic_store(&alloc_counting, 1);
	while (k < EVENTS) {
		for (b = 0; b < BATCH; b++, k++) {
			uint64_t r = rng_next();
			uint32_t point = (uint32_t)(r % 300);
			uint32_t seq = (uint32_t)((r >> 10) % 600);
			uint8_t s;

			switch ((r >> 20) % 8) {
			case 0: case 1: s = PERFMON_BEGIN_STEP; break;
			case 2: case 3: s = PERFMON_END_STEP; break;
			case 4: s = PERFMON_VALUE_STEP; break;
			default: s = (uint8_t)(1 + (r >> 30) % 6); break;
			}
			ts += (r >> 40) % 64;
			/* One event in 16 goes 1000 ticks back: invalid spans. */
			evs[b] = (struct perfmon_event){
				ts - (ts > 1000 && (r >> 50) % 16 == 0 ? 1000 : 0),
				point, PERFMON_EVENT(s, seq) };
		}
		pairing_feed(P, evs, BATCH);
		if ((k / BATCH) % 50 == 0)
			swept += pairing_sweep(P, ts);
		if ((k / BATCH) % 100 == 0 && pairing_flip(P, ts)) {
			flips++;
			pairing_collect(P, &IV);
			pairing_release(P);
		}
	}
	atomic_store(&alloc_counting, 0);
	calls = atomic_load(&alloc_calls);

	ck_assert_int_eq(probe_calls, 1);
	ck_assert_int_eq(calls, 0);
	ck_assert_uint_gt(flips, 5);
	ck_assert_uint_gt(swept, 0);
	/* The run really exercised the anomaly paths. */
	ck_assert(pairing_flip(P, ts + 1));
	ck_assert(pairing_collect(P, &IV));
	{
		struct pairing_row *rows = calloc(pairing_max_rows(P), sizeof(*rows));
		struct pairing_anomalies sum = { 0, 0, 0, 0 };
		unsigned n, i;

		ck_assert_ptr_nonnull(rows);
		n = pairing_rows(P, rows, pairing_max_rows(P));
		for (i = 0; i < n; i++) {
			sum.abandoned += rows[i].anomalies_lifetime->abandoned;
			sum.orphan += rows[i].anomalies_lifetime->orphan;
			sum.invalid += rows[i].anomalies_lifetime->invalid;
			sum.out_of_range += rows[i].anomalies_lifetime->out_of_range;
		}
		assert_every_anomaly_above(sum, 0);
		free(rows);
	}
	pairing_release(P);
	free(evs);
}
END_TEST

static Suite *pairing_suite(void)
{
	Suite *s = suite_create("pairing");
	TCase *tc = tcase_create("pairing");
	TCase *th = tcase_create("handover");

	tcase_add_checked_fixture(tc, setup_default, teardown);
	tcase_add_test(tc, test_bad_config);
	tcase_add_test(tc, test_simple_span);
	tcase_add_test(tc, test_pipeline);
	tcase_add_test(tc, test_rebegin_abandons);
	tcase_add_test(tc, test_orphans);
	tcase_add_test(tc, test_steps_carry_no_order);
	tcase_add_test(tc, test_invalid_discards_span);
	tcase_add_test(tc, test_equal_timestamps);
	tcase_add_test(tc, test_interleaved_points);
	tcase_add_test(tc, test_intervals_do_not_fold);
	tcase_add_test(tc, test_overhead_clamps);
	tcase_add_test(tc, test_overhead_stages_add_up);
	tcase_add_test(tc, test_overhead_simple_and_repeated);
	tcase_add_test(tc, test_overhead_off_by_default);
	tcase_add_test(tc, test_reconfigure);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_row_keys_distinct);
	tcase_add_test(tc, test_max_stages_out_of_range);
	tcase_add_test(tc, test_out_of_range_known_point);
	tcase_add_test(tc, test_overflow_folding);
	tcase_add_test(tc, test_row_order);
	tcase_add_test(tc, test_eviction_charges_evicted_point);
	tcase_add_test(tc, test_sweep_records_nothing);
	tcase_add_test(tc, test_flip_mid_span);
	tcase_add_test(tc, test_long_span_past_deferral);
	tcase_add_test(tc, test_overhead_past_deferral);
	tcase_add_test(tc, test_flip_while_held);
	tcase_add_test(tc, test_stage_means_sum);
	tcase_add_test(tc, test_conservation_random);
	tcase_add_test(tc, test_batches_equal_single_events);
	tcase_add_test(tc, test_samples_in_event_order);
	tcase_add_test(tc, test_outliers_exact_across_intervals);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(th, setup_default, teardown);
	tcase_set_timeout(th, 120);
	tcase_add_test(th, test_two_thread_handover);
	tcase_add_test(th, test_drain_never_allocates);
	suite_add_tcase(s, th);
	return s;
}

int main(void)
{
	return check_run(pairing_suite());
}
