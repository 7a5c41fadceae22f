/*
 * check_span_table.c - the open-span table (src/span_table.c): hash index
 * with backward-shift deletion against a reference model, capacity limits,
 * exact least-recently-touched order, eviction and the age sweep.
 */
#include "build-config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "span_table.h"
#include "testrand.h"

static struct span_table *table_new(uint32_t cap)
{
	struct span_table *t = span_table_new(cap);

	ck_assert_ptr_nonnull(t);
	return t;
}

static struct span *insert_new(struct span_table *t, uint64_t key, uint64_t now)
{
	bool created = false;
	struct span *s = span_table_insert(t, key, now, &created);

	ck_assert_ptr_nonnull(s);
	ck_assert(created);
	ck_assert_uint_eq(s->key, key);
	return s;
}

struct order {
	uint64_t keys[64];
	unsigned n;
};

static void collect_key(struct span *s, void *arg)
{
	struct order *o = arg;

	if (o->n < 64)
		o->keys[o->n] = s->key;
	o->n++;
}

static void assert_order(struct span_table *t, const uint64_t *want, unsigned n)
{
	struct order o = { .n = 0 };
	unsigned i;

	span_table_for_each(t, collect_key, &o);
	ck_assert_uint_eq(o.n, n);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(o.keys[i], want[i]);
}

START_TEST(test_bad_capacity)
{
	ck_assert_ptr_null(span_table_new(0));
	ck_assert_ptr_null(span_table_new(SPAN_TABLE_MAX_CAPACITY + 1));
}
END_TEST

START_TEST(test_key_encoding)
{
	/* seq keeps its low 24 bits; the point is the upper half. */
	ck_assert_uint_eq(span_key(7, 0x1000001), span_key(7, 1));
	ck_assert_uint_ne(span_key(7, 1), span_key(8, 1));
	ck_assert_uint_eq(span_key_point(span_key(0xFFFFFFFF, 0xFFFFFF)), 0xFFFFFFFF);
	ck_assert_uint_eq(span_key(0, 0), 0);
}
END_TEST

START_TEST(test_insert_find_erase)
{
	struct span_table *t = table_new(16);
	struct span *s, *again;
	bool created = true;

	ck_assert_ptr_null(span_table_find(t, 42));
	s = insert_new(t, 42, 100);
	ck_assert_uint_eq(s->touch, 100);
	ck_assert_uint_eq(s->nsteps, 0);
	ck_assert_uint_eq(s->ndeferred, 0);
	s->start_tsc = 555;

	/* An existing key comes back as it is, not reset or re-touched. */
	again = span_table_insert(t, 42, 900, &created);
	ck_assert_ptr_eq(again, s);
	ck_assert(!created);
	ck_assert_uint_eq(again->start_tsc, 555);
	ck_assert_uint_eq(again->touch, 100);
	ck_assert_uint_eq(span_table_count(t), 1);

	ck_assert_ptr_eq(span_table_find(t, 42), s);
	span_table_erase(t, s);
	ck_assert_ptr_null(span_table_find(t, 42));
	ck_assert_uint_eq(span_table_count(t), 0);
	ck_assert_ptr_null(span_table_oldest(t));
	span_table_free(t);
}
END_TEST

START_TEST(test_identical_low_bits)
{
	/* 200 keys differing only in the point half all stay reachable. */
	struct span_table *t = table_new(256);
	uint64_t i;

	for (i = 0; i < 200; i++)
		insert_new(t, i << 32, i);
	for (i = 0; i < 200; i++) {
		struct span *s = span_table_find(t, i << 32);

		ck_assert_ptr_nonnull(s);
		ck_assert_uint_eq(s->key, i << 32);
	}
	/* Erase every other one; the rest must survive the shifts. */
	for (i = 0; i < 200; i += 2)
		span_table_erase(t, span_table_find(t, i << 32));
	for (i = 0; i < 200; i++) {
		if (i % 2)
			ck_assert_ptr_nonnull(span_table_find(t, i << 32));
		else
			ck_assert_ptr_null(span_table_find(t, i << 32));
	}
	ck_assert_uint_eq(span_table_count(t), 100);
	span_table_free(t);
}
END_TEST

START_TEST(test_full_table)
{
	struct span_table *t = table_new(8);
	bool created = true;
	uint64_t k;

	for (k = 1; k <= 8; k++)
		insert_new(t, k, k);
	ck_assert_uint_eq(span_table_count(t), 8);
	/* A new key is refused and nothing changes... */
	ck_assert_ptr_null(span_table_insert(t, 99, 50, &created));
	ck_assert_uint_eq(span_table_count(t), 8);
	ck_assert_ptr_null(span_table_find(t, 99));
	/* ...but existing keys are still found and returned. */
	for (k = 1; k <= 8; k++) {
		struct span *s = span_table_insert(t, k, 50, &created);

		ck_assert_ptr_nonnull(s);
		ck_assert(!created);
		ck_assert_uint_eq(s->key, k);
	}
	/* Room made by an erase is usable again. */
	span_table_erase(t, span_table_find(t, 3));
	insert_new(t, 99, 60);
	ck_assert_uint_eq(span_table_count(t), 8);
	span_table_free(t);
}
END_TEST

/*
 * 50k random inserts, erases and lookups against a plain array model, on
 * a small universe so keys collide, return and wrap around the index.
 * Run for several capacities, including 1 (two slots).
 */
static void model_run(uint32_t cap, uint32_t universe, uint64_t seed)
{
	struct span_table *t = table_new(cap);
	uint64_t *keys = calloc(universe, sizeof(*keys));
	uint64_t *stamp = calloc(universe, sizeof(*stamp));
	bool *present = calloc(universe, sizeof(*present));
	uint32_t count = 0, i, op;

	ck_assert(keys && present && stamp);
	rng_state = seed;
	for (i = 0; i < universe; i++) {
		/* Half the keys share their low 32 bits, half are random. */
		keys[i] = i % 2 ? (uint64_t)i << 32 : rng_next();
	}
	for (op = 0; op < 50000; op++) {
		uint32_t k = (uint32_t)(rng_next() % universe);
		uint64_t r = rng_next() % 3;
		struct span *s = span_table_find(t, keys[k]);

		ck_assert(present[k] == (s != NULL));
		if (s)
			ck_assert_uint_eq(s->start_tsc, stamp[k]);
		if (r == 0 && s) {
			span_table_erase(t, s);
			present[k] = false;
			count--;
		} else if (!s) {
			bool created = false;

			s = span_table_insert(t, keys[k], op, &created);
			if (count == cap) {
				ck_assert_ptr_null(s);
			} else {
				ck_assert_ptr_nonnull(s);
				ck_assert(created);
				s->start_tsc = stamp[k] = rng_next();
				present[k] = true;
				count++;
			}
		}
		ck_assert_uint_eq(span_table_count(t), count);
		if (op % 4096 == 0) {
			for (i = 0; i < universe; i++)
				ck_assert(present[i] == (span_table_find(t, keys[i]) != NULL));
		}
	}
	for (i = 0; i < universe; i++)
		ck_assert(present[i] == (span_table_find(t, keys[i]) != NULL));
	free(keys);
	free(stamp);
	free(present);
	span_table_free(t);
}

START_TEST(test_model_random)
{
	model_run(1, 4, 11);
	model_run(4, 16, 12);
	model_run(64, 100, 13);
	model_run(1024, 2000, 14);
}
END_TEST

START_TEST(test_mass_erase_and_refill)
{
	/* Empty a full table completely, then fill it again: entries come
	 * back from the free list and the index has no leftovers. */
	struct span_table *t = table_new(512);
	uint64_t k;
	int round;

	for (round = 0; round < 3; round++) {
		for (k = 0; k < 512; k++)
			insert_new(t, (k << 32) | (uint64_t)round, k);
		ck_assert_uint_eq(span_table_count(t), 512);
		for (k = 0; k < 512; k++) {
			struct span *s = span_table_find(t, (k << 32) | (uint64_t)round);

			ck_assert_ptr_nonnull(s);
			span_table_erase(t, s);
		}
		ck_assert_uint_eq(span_table_count(t), 0);
		ck_assert_ptr_null(span_table_oldest(t));
	}
	ck_assert_uint_eq(span_table_peak(t), 512);
	span_table_free(t);
}
END_TEST

START_TEST(test_lru_order)
{
	struct span_table *t = table_new(8);
	uint64_t key;

	for (key = 1; key <= 5; key++)
		insert_new(t, key, key * 10);
	{
		static const uint64_t want[] = { 1, 2, 3, 4, 5 };
		assert_order(t, want, 5);
	}
	/* Touching moves to the young end; touching the youngest is a no-op. */
	span_table_touch(t, span_table_find(t, 2), 60);
	span_table_touch(t, span_table_find(t, 1), 70);
	span_table_touch(t, span_table_find(t, 1), 71);
	{
		static const uint64_t want[] = { 3, 4, 5, 2, 1 };
		assert_order(t, want, 5);
	}
	/* Erasing from the middle and both ends keeps the links whole. */
	span_table_erase(t, span_table_find(t, 5));
	span_table_erase(t, span_table_find(t, 3));
	span_table_erase(t, span_table_find(t, 1));
	{
		static const uint64_t want[] = { 4, 2 };
		assert_order(t, want, 2);
	}
	insert_new(t, 9, 80);
	{
		static const uint64_t want[] = { 4, 2, 9 };
		assert_order(t, want, 3);
	}
	span_table_free(t);
}
END_TEST

START_TEST(test_evict_oldest)
{
	struct span_table *t = table_new(64);
	uint64_t key, got;

	for (key = 1; key <= 64; key++)
		insert_new(t, key, key);
	/* A span touched since it was opened is no longer a candidate. */
	span_table_touch(t, span_table_find(t, 1), 100);
	span_table_touch(t, span_table_find(t, 5), 101);
	for (key = 2; key <= 13; key++) {
		if (key == 5)
			continue;
		ck_assert(span_table_evict_oldest(t, &got));
		ck_assert_uint_eq(got, key);
	}
	ck_assert(span_table_evict_oldest(t, &got));
	ck_assert_uint_eq(got, 14);
	ck_assert_ptr_nonnull(span_table_find(t, 1));
	ck_assert_ptr_nonnull(span_table_find(t, 5));
	ck_assert_ptr_null(span_table_find(t, 2));
	ck_assert_uint_eq(span_table_count(t), 64 - 12);

	span_table_clear(t);
	ck_assert(!span_table_evict_oldest(t, &got));
	ck_assert_uint_eq(span_table_peak(t), 0);
	ck_assert_uint_eq(span_table_capacity(t), 64);
	span_table_free(t);
}
END_TEST

struct model_walk {
	const uint64_t *last;    /* per key of the model: its latest touch, 0: not open */
	uint64_t prev;           /* the model's touch of the span visited before */
	unsigned n;
};

static void check_walk(struct span *s, void *arg)
{
	struct model_walk *w = arg;
	uint64_t mine = w->last[span_key_point(s->key)];

	ck_assert_uint_ne(mine, 0);
	ck_assert_uint_gt(mine, w->prev);
	w->prev = mine;
	w->n++;
}

/*
 * Touch order against a reference model: random inserts, touches, erases
 * and evictions, long enough for the queue to be compacted and the heap
 * refreshed many times.  The model keeps, per key, the number of its
 * latest touch; the least recently touched span is the open key with the
 * smallest number, and span_table_for_each() visits the open keys by
 * increasing number (checked every 61 operations, which also moves every
 * record to the heap).
 */
static void order_model_run(uint32_t cap, uint32_t universe, uint64_t seed, unsigned ops)
{
	struct span_table *t = table_new(cap);
	uint64_t *last = calloc(universe, sizeof(*last));   /* 0: not open */
	uint64_t clock = 0;
	uint32_t count = 0, i;
	unsigned op;

	ck_assert_ptr_nonnull(last);
	rng_state = seed;
	for (op = 0; op < ops; op++) {
		uint32_t k = (uint32_t)(rng_next() % universe);
		uint64_t r = rng_next() % 8;
		uint32_t oldest = UINT32_MAX;
		uint64_t best = UINT64_MAX;
		struct span *s = span_table_find(t, (uint64_t)k << 32);

		if (r < 3 && s) {
			span_table_touch(t, s, op);
			last[k] = ++clock;
		} else if (r < 5 && s) {
			span_table_erase(t, s);
			last[k] = 0;
			count--;
		} else if (r < 7 && !s && count < cap) {
			insert_new(t, (uint64_t)k << 32, op);
			last[k] = ++clock;
			count++;
		} else if (count > 0) {
			uint64_t key;

			for (i = 0; i < universe; i++) {
				if (last[i] && last[i] < best) {
					best = last[i];
					oldest = i;
				}
			}
			ck_assert(span_table_evict_oldest(t, &key));
			ck_assert_uint_eq(key, (uint64_t)oldest << 32);
			last[oldest] = 0;
			count--;
		}
		ck_assert_uint_eq(span_table_count(t), count);
		if (op % 61 == 60) {
			struct model_walk w = { last, 0, 0 };

			span_table_for_each(t, check_walk, &w);
			ck_assert_uint_eq(w.n, count);
		}
	}
	/* Drain in order: every remaining span comes out oldest first. */
	while (count > 0) {
		uint32_t oldest = UINT32_MAX;
		uint64_t best = UINT64_MAX, key;

		for (i = 0; i < universe; i++) {
			if (last[i] && last[i] < best) {
				best = last[i];
				oldest = i;
			}
		}
		ck_assert(span_table_evict_oldest(t, &key));
		ck_assert_uint_eq(key, (uint64_t)oldest << 32);
		last[oldest] = 0;
		count--;
	}
	ck_assert_ptr_null(span_table_oldest(t));
	free(last);
	span_table_free(t);
}

START_TEST(test_order_model)
{
	order_model_run(1, 3, 21, 20000);
	order_model_run(8, 20, 22, 50000);
	order_model_run(100, 150, 23, 50000);
	order_model_run(100, 1000, 24, 50000);
}
END_TEST

START_TEST(test_touch_storm)
{
	/* Two spans touched over and over while others wait: the touch
	 * numbers run far past the others', which must stay in order ahead
	 * of the busy ones. */
	struct span_table *t = table_new(4);
	struct span *busy;
	uint64_t key;
	unsigned i;

	insert_new(t, 1, 0);
	insert_new(t, 2, 1);
	busy = insert_new(t, 3, 2);
	insert_new(t, 4, 3);
	for (i = 0; i < 100000; i++)
		span_table_touch(t, i % 2 ? busy : span_table_find(t, 4), 10 + i);
	{
		static const uint64_t want[] = { 1, 2, 4, 3 };
		assert_order(t, want, 4);
	}
	ck_assert(span_table_evict_oldest(t, &key));
	ck_assert_uint_eq(key, 1);
	ck_assert_uint_eq(span_table_oldest(t)->key, 2);
	span_table_free(t);
}
END_TEST

START_TEST(test_dead_records_in_heap)
{
	/* Spans touched since they opened move to the heap when the oldest
	 * is looked for.  Those that then close leave dead items under a
	 * live top, which must be skipped when the top is touched again and
	 * sinks below them. */
	struct span_table *t = table_new(8);
	uint64_t k, key;

	for (k = 1; k <= 7; k++)
		insert_new(t, k, k);
	for (k = 1; k <= 7; k++)
		span_table_touch(t, span_table_find(t, k), 10 + k);
	ck_assert_uint_eq(span_table_oldest(t)->key, 1);
	for (k = 2; k <= 7; k++)
		span_table_erase(t, span_table_find(t, k));
	insert_new(t, 20, 20);
	insert_new(t, 21, 21);
	span_table_touch(t, span_table_find(t, 1), 22);
	ck_assert_uint_eq(span_table_oldest(t)->key, 20);
	insert_new(t, 4, 23);   /* an entry of a dead item, open again */
	{
		static const uint64_t want[] = { 20, 21, 1, 4 };
		assert_order(t, want, 4);
	}
	span_table_touch(t, span_table_find(t, 20), 24);
	for (k = 0; k < 4; k++) {
		static const uint64_t want[] = { 21, 1, 4, 20 };

		ck_assert(span_table_evict_oldest(t, &key));
		ck_assert_uint_eq(key, want[k]);
	}
	ck_assert_ptr_null(span_table_oldest(t));
	span_table_free(t);
}
END_TEST

static unsigned sweep(struct span_table *t, uint64_t now, uint64_t age, uint64_t *ret_keys)
{
	struct span *s;
	unsigned n = 0;

	while ((s = span_table_expired(t, now, age))) {
		ret_keys[n++] = s->key;
		span_table_erase(t, s);
	}
	return n;
}

START_TEST(test_sweep_exact)
{
	struct span_table *t = table_new(128);
	uint64_t keys[128], k;
	unsigned n, i;

	/* Touches at 0, 10, ..., 990. */
	for (k = 0; k < 100; k++)
		insert_new(t, k + 1, k * 10);
	/* Age 0 disables ageing. */
	ck_assert_uint_eq(sweep(t, 1000000, 0, keys), 0);
	/* Strictly older than the age: 1000 - touch > 500 means touch < 500. */
	n = sweep(t, 1000, 500, keys);
	ck_assert_uint_eq(n, 50);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(keys[i], i + 1);
	ck_assert_uint_eq(span_table_count(t), 50);
	ck_assert_ptr_nonnull(span_table_find(t, 51));
	/* A second sweep at the same time finds nothing more. */
	ck_assert_uint_eq(sweep(t, 1000, 500, keys), 0);
	/* Touching refreshes: key 51 (touch 500) touched at 2000 survives. */
	span_table_touch(t, span_table_find(t, 51), 2000);
	n = sweep(t, 2000, 100, keys);
	ck_assert_uint_eq(n, 49);
	ck_assert_uint_eq(span_table_count(t), 1);
	ck_assert_ptr_nonnull(span_table_find(t, 51));
	span_table_free(t);
}
END_TEST

START_TEST(test_sweep_future_touch)
{
	struct span_table *t = table_new(8);
	uint64_t keys[8];

	/* Slightly ahead of the sweep's clock: young, and it blocks nothing
	 * for longer than the age. */
	insert_new(t, 1, 1100);
	insert_new(t, 2, 500);
	ck_assert_uint_eq(sweep(t, 1000, 300, keys), 0);
	ck_assert_uint_eq(sweep(t, 1401, 300, keys), 2);
	/* A garbage timestamp far in the future cannot pin the table. */
	insert_new(t, 3, UINT64_MAX - 5);
	insert_new(t, 4, 2000);
	ck_assert_uint_eq(sweep(t, 2100, 300, keys), 1);
	ck_assert_uint_eq(keys[0], 3);
	ck_assert_uint_eq(sweep(t, 2400, 300, keys), 1);
	ck_assert_uint_eq(keys[0], 4);
	span_table_free(t);
}
END_TEST

START_TEST(test_peak)
{
	struct span_table *t = table_new(32);
	uint64_t k;

	for (k = 0; k < 20; k++)
		insert_new(t, k, k);
	for (k = 0; k < 15; k++)
		span_table_erase(t, span_table_find(t, k));
	for (k = 100; k < 105; k++)
		insert_new(t, k, k);
	ck_assert_uint_eq(span_table_count(t), 10);
	ck_assert_uint_eq(span_table_peak(t), 20);
	span_table_free(t);
}
END_TEST

static Suite *span_table_suite(void)
{
	Suite *s = suite_create("span_table");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_bad_capacity);
	tcase_add_test(tc, test_key_encoding);
	tcase_add_test(tc, test_insert_find_erase);
	tcase_add_test(tc, test_identical_low_bits);
	tcase_add_test(tc, test_full_table);
	tcase_add_test(tc, test_model_random);
	tcase_add_test(tc, test_mass_erase_and_refill);
	tcase_add_test(tc, test_lru_order);
	tcase_add_test(tc, test_order_model);
	tcase_add_test(tc, test_touch_storm);
	tcase_add_test(tc, test_dead_records_in_heap);
	tcase_add_test(tc, test_evict_oldest);
	tcase_add_test(tc, test_sweep_exact);
	tcase_add_test(tc, test_sweep_future_touch);
	tcase_add_test(tc, test_peak);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(span_table_suite());
}
