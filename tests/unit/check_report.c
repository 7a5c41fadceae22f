/*
 * check_report.c - which rows an interval shows and how they are labelled
 * and converted (docs/csv.md), driven through the real pairing engine.
 */
#include "build-config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "report.h"

static struct pairing *p;
static struct report rep;
static struct report_settings rs;
static struct name_cache names;
static struct perfmon_meta_header *meta;
static struct perfmon_name_entry *tab;

static void setup(void)
{
	struct pairing_config pc = { .max_open_spans = 64, .max_stages = 16 };
	p = pairing_new(&pc);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(report_init(&rep, p), 0);
	memset(&rs, 0, sizeof(rs));
	rs.unit = REPORT_UNIT_NS;
	rs.npct = 2;
	rs.pct[0] = 50;
	rs.pct[1] = 99.9;
	strcpy(rs.pct_label[0], "p50");
	strcpy(rs.pct_label[1], "p99_9");
	ck_assert_int_eq(name_cache_init(&names, 8), 0);
	meta = calloc(1, PERFMON_META_BYTES(8));
	tab = (struct perfmon_name_entry *)((char *)meta + PERFMON_META_NAMES_OFFSET);
}

static void teardown(void)
{
	report_free(&rep);
	pairing_free(p);
	name_cache_free(&names);
	free(meta);
}

static void name(unsigned i, uint32_t point, uint8_t step, const char *label)
{
	tab[i].key = PERFMON_NAME_KEY(point, step);
	strcpy(tab[i].label, label);
	meta->name_generation++;
	name_cache_refresh(&names, meta, tab, 8);
}

static void ev(uint64_t tsc, uint32_t point, uint8_t step, uint32_t seq)
{
	struct perfmon_event e = { tsc, point, PERFMON_EVENT(step, seq) };
	pairing_feed(p, &e, 1);
}

/* Flip, collect and build; `hz` 1e9 makes one tick one nanosecond. */
static void interval(uint64_t dropped, uint64_t stalled)
{
	struct pairing_interval iv;
	struct report_collector coll = { dropped, stalled };
	static uint64_t now = 1000000;
	pairing_release(p);
	ck_assert(pairing_flip(p, now += 1000000));
	ck_assert(pairing_collect(p, &iv));
	report_build_interval(&rep, p, &iv, &names, &rs, 1e9, &coll, 1700000000000000000ull);
}

static const struct report_row *find(const char *point, const char *stage)
{
	for (uint32_t i = 0; i < rep.nrows; i++)
		if (!strcmp(rep.rows[i].point, point) && !strcmp(rep.rows[i].stage, stage))
			return &rep.rows[i];
	return NULL;
}

START_TEST(test_generated_and_published_labels)
{
	ev(1000, 3, 0, 1);
	ev(1100, 3, 1, 1);
	ev(1300, 3, 255, 1);
	interval(0, 0);
	ck_assert_uint_eq(rep.nrows, 3);
	ck_assert_ptr_nonnull(find("point_3", "step_0->1"));
	ck_assert_ptr_nonnull(find("point_3", "step_1->255"));
	ck_assert_ptr_nonnull(find("point_3", "total"));
	ck_assert_uint_eq(find("point_3", "total")->f.count, 1);
	ck_assert(fabs(find("point_3", "total")->f.mean - 300) < 1e-9);
	name(0, 3, 0, "order, \"entry\"");
	name(1, 3, 1, "decode");
	ev(2000, 3, 0, 1);
	ev(2100, 3, 1, 1);
	ev(2300, 3, 255, 1);
	interval(0, 0);
	ck_assert_ptr_nonnull(find("order, \"entry\"", "decode"));
	ck_assert_ptr_nonnull(find("order, \"entry\"", "step_1->255"));
	/* rows in order: stages by (from, to), total last */
	ck_assert_str_eq(rep.rows[2].stage, "total");
}
END_TEST

/* Two points with one name, or a point named as the reports name another:
 * each such point's rows say which point they are, in every interval. */
START_TEST(test_shared_point_labels_told_apart)
{
	name(0, 1, 0, "dup");
	name(1, 2, 0, "dup");
	name(2, 6, 0, "point_7");   /* what point 7 is called unnamed */
	name(3, 8, 0, "overflow");
	name(4, 9, 0, "point_9");   /* its own generated label: fine */
	ev(10, 1, 0, 1);
	ev(20, 1, 255, 1);
	interval(0, 0);
	ck_assert_ptr_nonnull(find("dup#1", "total"));   /* point 2 idle: still #1 */
	for (uint32_t pt = 2; pt <= 9; pt++) {
		ev(100 * pt, pt, 0, 1);
		ev(100 * pt + 50, pt, 255, 1);
	}
	interval(0, 0);
	ck_assert_ptr_nonnull(find("dup#2", "total"));
	ck_assert_ptr_nonnull(find("point_7#6", "total"));
	ck_assert_ptr_nonnull(find("point_7", "total"));
	ck_assert_ptr_nonnull(find("overflow#8", "total"));
	ck_assert_ptr_nonnull(find("point_9", "total"));
	ck_assert_ptr_null(find("dup", "total"));
}
END_TEST

START_TEST(test_reserved_labels_not_reused)
{
	name(0, 4, 1, "total");
	name(1, 4, 2, "value");
	ev(10, 4, 0, 0);
	ev(20, 4, 1, 0);
	ev(30, 4, 2, 0);
	ev(40, 4, 255, 0);
	interval(0, 0);
	ck_assert_ptr_nonnull(find("point_4", "step_0->1"));
	ck_assert_ptr_nonnull(find("point_4", "step_1->2"));
	ck_assert_uint_eq(rep.nrows, 4);
}
END_TEST

START_TEST(test_second_transition_into_a_step_is_told_apart)
{
	name(0, 5, 255, "send");
	ev(10, 5, 0, 1);
	ev(20, 5, 2, 1);
	ev(30, 5, 255, 1);
	ev(40, 5, 0, 2);
	ev(50, 5, 1, 2);          /* a span whose step 2 was lost */
	ev(60, 5, 255, 2);
	interval(0, 0);
	ck_assert_ptr_nonnull(find("point_5", "send"));
	ck_assert_ptr_nonnull(find("point_5", "send (step_1->255)"));
}
END_TEST

START_TEST(test_anomaly_only_rows)
{
	ev(10, 6, 255, 9);        /* orphan end */
	ev(20, 6, 255, 9);
	interval(0, 0);
	ck_assert_uint_eq(rep.nrows, 1);
	ck_assert_str_eq(rep.rows[0].stage, "total");
	ck_assert_uint_eq(rep.rows[0].f.count, 0);
	ck_assert_uint_eq(rep.rows[0].anomalies.orphan, 2);
	/* nothing moved: nothing written, and the delta is not repeated */
	interval(0, 0);
	ck_assert_uint_eq(rep.nrows, 0);
}
END_TEST

START_TEST(test_collector_row)
{
	interval(5, 1);
	ck_assert_uint_eq(rep.nrows, 1);
	ck_assert_str_eq(rep.rows[0].point, "collector");
	ck_assert_str_eq(rep.rows[0].stage, "total");
	ck_assert_uint_eq(rep.rows[0].dropped, 5);
	ck_assert_uint_eq(rep.rows[0].stalled, 1);
	/* with other rows, the deltas ride on every row and no collector row */
	ev(1, 7, PERFMON_VALUE_STEP, 0);
	interval(2, 0);
	ck_assert_uint_eq(rep.nrows, 1);
	ck_assert_str_eq(rep.rows[0].stage, "value");
	ck_assert_uint_eq(rep.rows[0].dropped, 2);
}
END_TEST

START_TEST(test_values_not_converted)
{
	ev(1000, 8, PERFMON_VALUE_STEP, 0);
	ev(3000, 8, PERFMON_VALUE_STEP, 0);
	rs.unit = REPORT_UNIT_US;
	interval(0, 0);
	ck_assert_int_eq(rep.rows[0].kind, REPORT_VALUE);
	ck_assert(fabs(rep.rows[0].f.min - 1000) < 1e-9);
	ck_assert(fabs(rep.rows[0].f.max - 3000) < 1e-9);
	ck_assert(fabs(rep.rows[0].f.mean - 2000) < 1e-9);
}
END_TEST

START_TEST(test_units)
{
	ev(0, 9, 0, 0);
	ev(5000, 9, 255, 0);
	rs.unit = REPORT_UNIT_US;
	interval(0, 0);
	ck_assert(fabs(rep.rows[0].f.max - 5.0) < 1e-9);     /* 5000 ticks at 1 GHz */
	ck_assert(fabs(report_convert(REPORT_UNIT_NS, 2.5e9, 2.5e9) - 1e9) < 1e-3);
	ck_assert(fabs(report_convert(REPORT_UNIT_CYCLES, 123, 2.5e9) - 123) < 1e-9);
	ck_assert_str_eq(report_unit_name(REPORT_UNIT_CYCLES), "cycles");
}
END_TEST

START_TEST(test_overflow_row_last)
{
	/* 16 stages: 16 points with totals fill the table, then anomalies of
	 * further points fold into the overflow row. */
	for (uint32_t pt = 0; pt < 16; pt++) {
		ev(10, pt, 0, 0);
		ev(20, pt, 255, 0);
	}
	for (uint32_t pt = 100; pt < 120; pt++)
		ev(30, pt, 255, 0);      /* orphans */
	interval(0, 0);
	ck_assert_str_eq(rep.rows[rep.nrows - 1].point, "overflow");
	ck_assert_uint_gt(rep.rows[rep.nrows - 1].anomalies.orphan, 0);
}
END_TEST

START_TEST(test_lifetime_rows)
{
	struct pairing_interval iv;
	struct report_collector coll = { 0, 0 };
	ev(0, 2, 0, 0);
	ev(100, 2, 255, 0);
	interval(0, 0);
	ev(0, 2, 0, 0);
	ev(300, 2, 255, 0);
	interval(0, 0);
	pairing_release(p);
	ck_assert(pairing_flip(p, 99999999));
	ck_assert(pairing_collect(p, &iv));
	report_build_lifetime(&rep, p, &iv, &names, &rs, 1e9, &coll);
	ck_assert_uint_eq(rep.nrows, 1);
	ck_assert_uint_eq(rep.rows[0].f.count, 2);
	ck_assert(fabs(rep.rows[0].f.p50 - 100) <= 100 / 32.0);
	ck_assert(fabs(rep.rows[0].f.max - 300) < 1e-9);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("rows");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_generated_and_published_labels);
	tcase_add_test(tc, test_shared_point_labels_told_apart);
	tcase_add_test(tc, test_reserved_labels_not_reused);
	tcase_add_test(tc, test_second_transition_into_a_step_is_told_apart);
	tcase_add_test(tc, test_anomaly_only_rows);
	tcase_add_test(tc, test_collector_row);
	tcase_add_test(tc, test_values_not_converted);
	tcase_add_test(tc, test_units);
	tcase_add_test(tc, test_overflow_row_last);
	tcase_add_test(tc, test_lifetime_rows);
	suite_add_tcase(s, tc);
	return check_run(s);
}
