/*
 * check_capture.c - the capture file format (src/capture.c): what the
 * encoders write decodes to the same header, names and events; a capture
 * cut short is decoded up to its last whole record and says so; every
 * kind of corruption is refused with a message, never a crash (including
 * every truncation and many random byte flips of a valid file).
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "check_main.h"
#include "testrand.h"

static uint8_t file[4096];
static size_t file_len;

/* A capture: 2 names (one hostile), 5 events over 2 rings, a trailer. */
static void build(bool trailer)
{
	struct capture_header h = {
		.tsc_hz_milli = 2000000000000ull,    /* 2 GHz */
		.start_tsc = 1000000,
		.start_realtime_ns = 1700000000123456789ull,
		.name_count = 2,
		.flags = CAPTURE_FLAG_INVARIANT,
		.ring_count = 2,
		.max_open_spans = 4096,
		.max_stages = 1024,
		.stall_ticks = 10000000000ull,
		.flush_ticks = 2000000000ull,
		.overhead_ticks = 0xFEDCBA9876543210ull,
	};
	struct capture_trailer t = { .events = 5, .lost_buffer = 7, .lost_cap = 1, .dropped = 3,
				     .end_tsc = 9999999, .flags = CAPTURE_END_CAPPED };
	size_t off = 0;

	capture_encode_header(file, &h);
	off = CAPTURE_HEADER_SIZE;
	off += capture_encode_name(file + off, 7, 0, "orders");
	off += capture_encode_name(file + off, 7, 1, "evil\"\n\x1b[31m</script>");
	for (uint32_t i = 0; i < 5; i++) {
		struct capture_event e = {
			.tsc = 1000000 + 100 * i,
			.point = 7,
			.event = PERFMON_EVENT(i == 4 ? PERFMON_END_STEP : (uint8_t)i, 42),
			.ring = (uint16_t)(i % 2),
		};
		capture_encode_event(file + off, &e);
		off += CAPTURE_EVENT_SIZE;
	}
	if (trailer) {
		capture_encode_trailer(file + off, &t);
		off += CAPTURE_TRAILER_SIZE;
	}
	file_len = off;
}

START_TEST(test_roundtrip)
{
	struct capture c;
	char err[256];

	build(true);
	ck_assert_int_eq(capture_parse(file, file_len, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.h.tsc_hz_milli, 2000000000000ull);
	ck_assert(capture_tsc_hz(&c) == 2e9);
	ck_assert_uint_eq(c.h.start_realtime_ns, 1700000000123456789ull);
	ck_assert_uint_eq(c.h.ring_count, 2);
	ck_assert_uint_eq(c.version, CAPTURE_VERSION);
	ck_assert_uint_eq(c.h.max_open_spans, 4096);
	ck_assert_uint_eq(c.h.max_stages, 1024);
	ck_assert_uint_eq(c.h.stall_ticks, 10000000000ull);
	ck_assert_uint_eq(c.h.flush_ticks, 2000000000ull);
	ck_assert_uint_eq(c.h.overhead_ticks, 0xFEDCBA9876543210ull);
	ck_assert_uint_eq(c.h.name_count, 2);
	ck_assert_str_eq(capture_label(&c, 7, 0), "orders");
	ck_assert_str_eq(capture_label(&c, 7, 1), "evil\"\n\x1b[31m</script>");
	ck_assert_ptr_null(capture_label(&c, 7, 2));
	ck_assert_uint_eq(c.nevents, 5);
	for (uint32_t i = 0; i < 5; i++) {
		ck_assert_uint_eq(c.events[i].tsc, 1000000 + 100 * i);
		ck_assert_uint_eq(c.events[i].point, 7);
		ck_assert_uint_eq(PERFMON_EVENT_SEQ(c.events[i].event), 42);
		ck_assert_uint_eq(c.events[i].ring, i % 2);
	}
	ck_assert(c.has_trailer);
	ck_assert_uint_eq(c.t.lost_buffer, 7);
	ck_assert_uint_eq(c.t.lost_cap, 1);
	ck_assert_uint_eq(c.t.dropped, 3);
	ck_assert_uint_eq(c.t.flags, CAPTURE_END_CAPPED);
	/* 200 ticks at 2 GHz: 100 ns after the start, to the nanosecond */
	ck_assert_uint_eq(capture_realtime_of(&c, 1000200), 1700000000123456889ull);
	ck_assert_uint_eq(capture_realtime_of(&c, 999800), 1700000000123456689ull);
	capture_free(&c);
}
END_TEST

static void refused(const char *why_part);

/* Labels after the events (published during the recording): new ones
 * are added, one already in the header keeps the header's label. */
START_TEST(test_late_names)
{
	struct capture_trailer t = { .events = 5, .name_count = 2 };
	struct capture c;
	char err[256];

	build(false);
	file_len += capture_encode_name(file + file_len, 7, 0, "renamed");
	file_len += capture_encode_name(file + file_len, 9, 0, "later");
	capture_encode_trailer(file + file_len, &t);
	file_len += CAPTURE_TRAILER_SIZE;
	ck_assert_msg(capture_parse(file, file_len, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.nevents, 5);
	ck_assert_uint_eq(c.h.name_count, 3);
	ck_assert_str_eq(capture_label(&c, 7, 0), "orders");
	ck_assert_str_eq(capture_label(&c, 9, 0), "later");
	capture_free(&c);

	/* one byte too many between the late names and the trailer */
	memmove(file + file_len - CAPTURE_TRAILER_SIZE + 1, file + file_len - CAPTURE_TRAILER_SIZE,
		CAPTURE_TRAILER_SIZE);
	file[file_len - CAPTURE_TRAILER_SIZE] = 'x';
	file_len++;
	refused("stray bytes");
}
END_TEST

/* A version 1 file: a 64-byte header without the pairing settings
 * (read as unknown: 0); version 2 needs its 128 bytes. */
START_TEST(test_version1)
{
	struct capture c;
	char err[256];

	build(true);
	memmove(file + CAPTURE_HEADER_SIZE_V1, file + CAPTURE_HEADER_SIZE,
		file_len - CAPTURE_HEADER_SIZE);
	file_len -= CAPTURE_HEADER_SIZE - CAPTURE_HEADER_SIZE_V1;
	file[12] = CAPTURE_HEADER_SIZE_V1;
	refused("header size 64");
	file[8] = 1;
	ck_assert_msg(capture_parse(file, file_len, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.version, 1);
	ck_assert_uint_eq(c.nevents, 5);
	ck_assert_uint_eq(c.h.ring_count, 2);
	ck_assert_str_eq(capture_label(&c, 7, 0), "orders");
	ck_assert_uint_eq(c.h.max_open_spans + c.h.max_stages, 0);
	ck_assert_uint_eq(c.h.stall_ticks + c.h.flush_ticks + c.h.overhead_ticks, 0);
	capture_free(&c);
}
END_TEST

START_TEST(test_cut_short)
{
	struct capture c;
	char err[256];

	build(false);
	ck_assert_int_eq(capture_parse(file, file_len - 7, &c, err, sizeof(err)), 0);
	ck_assert(!c.has_trailer);
	ck_assert_uint_eq(c.nevents, 4);
	ck_assert_uint_eq(c.partial_bytes, CAPTURE_EVENT_SIZE - 7);
	capture_free(&c);
}
END_TEST

static void refused(const char *why_part)
{
	struct capture c;
	char err[256] = "";

	ck_assert_int_eq(capture_parse(file, file_len, &c, err, sizeof(err)), -EPROTO);
	ck_assert_msg(strstr(err, why_part) != NULL, "'%s' lacks '%s'", err, why_part);
}

START_TEST(test_corrupt_refused)
{
	build(true);
	file[0] = 'X';
	refused("not a perfmond capture");

	build(true);
	file[8] = 9;
	refused("version 9");

	build(true);
	file[12] = 0xFF;
	file[13] = 0xFF;
	refused("header size");

	build(true);
	file[40] = 0xFF;
	file[41] = 0xFF;
	file[42] = 0xFF;
	refused("names at offset 40");

	build(true);
	file[48] = 0;
	refused("0 rings");

	build(true);
	file[CAPTURE_HEADER_SIZE + 5] = 0;      /* first label's length */
	refused("has length 0");

	build(true);
	file[CAPTURE_HEADER_SIZE + 5] = 200;
	refused("has length 200");

	build(true);
	file[file_len - CAPTURE_TRAILER_SIZE + 8] = 6;   /* trailer says 6 events */
	refused("the trailer counts 6 events");

	build(true);
	file[file_len - CAPTURE_TRAILER_SIZE + 8] = 4;   /* 4 events: 20 bytes too many */
	refused("stray bytes");

	build(true);
	/* ring 5 of 2 in the first event */
	file[file_len - CAPTURE_TRAILER_SIZE - 5 * CAPTURE_EVENT_SIZE + 16] = 5;
	refused("ring 5 of 2");

	build(true);
	/* the second name becomes a duplicate of the first */
	file[CAPTURE_HEADER_SIZE + 12 + 4] = 0;
	refused("two labels for point 7 step 0");
}
END_TEST

/* Every prefix and many random corruptions: decoded or refused, never a
 * crash or an out-of-bounds read (run under ASan in the sanitizer build). */
START_TEST(test_every_truncation_and_flips)
{
	struct capture c;
	char err[256];

	rng_seed(12345);
	build(true);
	for (size_t n = 0; n < file_len; n++) {
		uint8_t *copy = malloc(n ? n : 1);

		memcpy(copy, file, n);
		if (capture_parse(copy, n, &c, err, sizeof(err)) == 0) {
			ck_assert_uint_le(c.nevents * CAPTURE_EVENT_SIZE, n);
			capture_free(&c);
		} else {
			ck_assert(err[0] != '\0');
		}
		free(copy);
	}
	for (unsigned round = 0; round < 20000; round++) {
		uint8_t copy[sizeof(file)];

		memcpy(copy, file, file_len);
		for (unsigned k = 0; k < 1 + round % 4; k++) {
			uint64_t x = rng_next();
			copy[(x >> 33) % file_len] = (uint8_t)(x >> 20);
		}
		if (capture_parse(copy, file_len, &c, err, sizeof(err)) == 0)
			capture_free(&c);
	}
}
END_TEST

/* Spans in timestamp order across rings; a value sample (no time of its
 * own) just after the latest span read from its ring before it, or first
 * when its ring had none. */
START_TEST(test_event_order)
{
	static const struct { uint64_t tsc; uint8_t step; uint16_t ring; } in[] = {
		{ 100, PERFMON_BEGIN_STEP, 0 }, { 500, PERFMON_BEGIN_STEP, 1 },
		{ 7, PERFMON_VALUE_STEP, 0 },   { 600, PERFMON_END_STEP, 1 },
		{ 300, PERFMON_END_STEP, 0 },   { 8, PERFMON_VALUE_STEP, 1 },
		{ 9, PERFMON_VALUE_STEP, 0 },   { 90, PERFMON_BEGIN_STEP, 0 },
	};
	static const uint64_t want[] = { 90, 100, 7, 300, 9, 500, 600, 8 };
	struct capture_header h = { .tsc_hz_milli = 1000000000000ull, .ring_count = 2 };
	struct capture c;
	size_t off = CAPTURE_HEADER_SIZE;
	char err[256];

	capture_encode_header(file, &h);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++, off += CAPTURE_EVENT_SIZE) {
		struct capture_event e = { in[i].tsc, 1, PERFMON_EVENT(in[i].step, 1), in[i].ring };

		capture_encode_event(file + off, &e);
	}
	ck_assert_int_eq(capture_parse(file, off, &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.nevents, 8);
	for (size_t i = 0; i < 8; i++)
		ck_assert_msg(c.events[i].tsc == want[i], "event %zu: %llu, not %llu", i,
			      (unsigned long long)c.events[i].tsc, (unsigned long long)want[i]);
	capture_free(&c);

	/* a value before any span of its ring goes first */
	memmove(file + CAPTURE_HEADER_SIZE, file + CAPTURE_HEADER_SIZE + 5 * CAPTURE_EVENT_SIZE,
		CAPTURE_EVENT_SIZE);
	ck_assert_int_eq(capture_parse(file, CAPTURE_HEADER_SIZE + 2 * CAPTURE_EVENT_SIZE, &c,
				       err, sizeof(err)), 0);
	ck_assert_uint_eq(c.events[0].tsc, 8);
	ck_assert_uint_eq(c.events[1].tsc, 500);
	capture_free(&c);
}
END_TEST

/* Points' labels another point shows too are marked, late names
 * included, as perfmond's name cache marks them; stage labels never. */
START_TEST(test_shared_labels)
{
	struct capture_header h = { .tsc_hz_milli = 1000000000000ull, .ring_count = 1,
				    .name_count = 5 };
	struct capture_trailer t = { .name_count = 2 };
	struct capture c;
	size_t off = CAPTURE_HEADER_SIZE;
	char err[256];
	bool shared;

	capture_encode_header(file, &h);
	off += capture_encode_name(file + off, 1, 0, "dup");
	off += capture_encode_name(file + off, 2, 0, "dup");
	off += capture_encode_name(file + off, 3, 0, "point_9");
	off += capture_encode_name(file + off, 4, 0, "solo");
	off += capture_encode_name(file + off, 4, 1, "dup");
	off += capture_encode_name(file + off, 5, 0, "dup");
	off += capture_encode_name(file + off, 6, 0, "point_6");
	capture_encode_trailer(file + off, &t);
	off += CAPTURE_TRAILER_SIZE;
	ck_assert_msg(capture_parse(file, off, &c, err, sizeof(err)) == 0, "%s", err);
	for (uint32_t p = 1; p <= 7; p++) {
		const char *l = capture_point_label(&c, p, &shared);

		ck_assert_msg(shared == (p <= 3 || p == 5), "point %u", p);
		ck_assert((l != NULL) == (p != 7));
	}
	ck_assert_str_eq(capture_point_label(&c, 5, &shared), "dup");
	capture_free(&c);
}
END_TEST

START_TEST(test_encode_name_limits)
{
	uint8_t buf[CAPTURE_NAME_FIXED + CAPTURE_LABEL_MAX];
	char big[CAPTURE_LABEL_MAX + 2];

	ck_assert_uint_eq(capture_encode_name(buf, 1, 0, ""), 0);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_uint_eq(capture_encode_name(buf, 1, 0, big), 0);
	big[CAPTURE_LABEL_MAX] = '\0';
	ck_assert_uint_eq(capture_encode_name(buf, 1, 0, big),
			  CAPTURE_NAME_FIXED + CAPTURE_LABEL_MAX);
}
END_TEST

static Suite *capture_suite(void)
{
	Suite *s = suite_create("capture");
	TCase *tc = tcase_create("format");

	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_cut_short);
	tcase_add_test(tc, test_version1);
	tcase_add_test(tc, test_late_names);
	tcase_add_test(tc, test_corrupt_refused);
	tcase_add_test(tc, test_every_truncation_and_flips);
	tcase_add_test(tc, test_encode_name_limits);
	tcase_add_test(tc, test_event_order);
	tcase_add_test(tc, test_shared_labels);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(capture_suite());
}
