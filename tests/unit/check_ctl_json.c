/*
 * check_ctl_json.c - perfmonctl's JSON writer: separators in nested
 * documents, string escaping (controls, quotes, invalid UTF-8, U+2028),
 * integers with every digit, doubles that read back exactly, numbers kept
 * as text, unbalanced documents reported; and the format choice that
 * lets only JSON-capable commands accept --format json.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "ctl_cli.h"
#include "ctl_json.h"

static char *buf;
static size_t len;
static FILE *out;
static struct ctl_json j;

static void open_doc(void)
{
	buf = NULL;
	len = 0;
	out = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(out);
	ctl_json_init(&j, out);
}

/* Finish the document, expecting `rc`, and return its text. */
static const char *close_doc(int rc)
{
	ck_assert_int_eq(ctl_json_finish(&j), rc);
	fclose(out);
	return buf;
}

START_TEST(nested_separators)
{
	open_doc();
	ctl_json_object_begin(&j);
	ctl_json_kv_string(&j, "name", "trading");
	ctl_json_key(&j, "rows");
	ctl_json_array_begin(&j);
	ctl_json_object_begin(&j);
	ctl_json_kv_u64(&j, "count", 3);
	ctl_json_kv_bool(&j, "alive", true);
	ctl_json_object_end(&j);
	ctl_json_object_begin(&j);
	ctl_json_object_end(&j);
	ctl_json_array_begin(&j);
	ctl_json_array_end(&j);
	ctl_json_null(&j);
	ctl_json_array_end(&j);
	ctl_json_kv_i64(&j, "delta", -5);
	ctl_json_object_end(&j);
	ck_assert_str_eq(close_doc(0),
		"{\"name\":\"trading\",\"rows\":[{\"count\":3,\"alive\":true},{},[],null],"
		"\"delta\":-5}\n");
	free(buf);
}
END_TEST

START_TEST(string_escapes)
{
	open_doc();
	ctl_json_array_begin(&j);
	ctl_json_string(&j, "a\"b\\c\n\t\x01\x7f");
	ctl_json_string(&j, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");   /* é € 😀 kept */
	ctl_json_string(&j, "bad \xff \xc0\xaf \xed\xa0\x80 \xe2\x82");      /* not UTF-8 */
	ctl_json_string(&j, "ls\xe2\x80\xa8ps\xe2\x80\xa9");
	ctl_json_string(&j, "c1\xc2\x80\xc2\x9f\xc2\xa0");   /* U+0080, U+009F escaped; U+00A0 kept */
	ctl_json_string(&j, NULL);
	ctl_json_array_end(&j);
	ck_assert_str_eq(close_doc(0),
		"[\"a\\\"b\\\\c\\n\\t\\u0001\\u007f\","
		"\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
		"\"bad \\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\","
		"\"ls\\u2028ps\\u2029\",\"c1\\u0080\\u009f\xc2\xa0\",null]\n");
	free(buf);
}
END_TEST

START_TEST(numbers_every_digit)
{
	const double ds[] = { 0.1, 1.0 / 3, 1067580369.0, 5e-324, DBL_MAX, -2.5, 0.0 };

	open_doc();
	ctl_json_array_begin(&j);
	ctl_json_u64(&j, UINT64_MAX);
	ctl_json_i64(&j, INT64_MIN);
	ctl_json_double(&j, NAN);
	ctl_json_double(&j, INFINITY);
	ctl_json_array_end(&j);
	ck_assert_str_eq(close_doc(0),
		"[18446744073709551615,-9223372036854775808,null,null]\n");
	free(buf);

	for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
		open_doc();
		ctl_json_double(&j, ds[i]);
		close_doc(0);
		ck_assert_msg(strtod(buf, NULL) == ds[i], "%s does not read back", buf);
		ck_assert_msg(ctl_json_is_number(strtok(buf, "\n")), "%s is not a JSON number", buf);
		free(buf);
	}
	/* The shortest form when one exists. */
	open_doc();
	ctl_json_double(&j, 1067580369.0);
	ck_assert_str_eq(close_doc(0), "1067580369\n");
	free(buf);
	/* Whole numbers up to 2^64 - 1: integers with every digit. */
	open_doc();
	ctl_json_array_begin(&j);
	ctl_json_double(&j, 18158513697557839872.0);
	ctl_json_double(&j, 9223372036854774784.0);
	ctl_json_double(&j, 18446744073709551616.0);   /* 2^64: not a uint64 */
	ctl_json_array_end(&j);
	ck_assert_str_eq(close_doc(0),
		"[18158513697557839872,9223372036854774784,1.8446744073709552e+19]\n");
	free(buf);
}
END_TEST

START_TEST(number_text)
{
	open_doc();
	ctl_json_array_begin(&j);
	ctl_json_number_text(&j, "18446744073709551615");
	ctl_json_number_text(&j, "-0.000123e+45");
	ctl_json_number_text(&j, "nan");
	ctl_json_number_text(&j, "");
	ctl_json_number_text(&j, "01");
	ctl_json_number_text(&j, "1.");
	ctl_json_number_text(&j, "1e");
	ctl_json_array_end(&j);
	ck_assert_str_eq(close_doc(0),
		"[18446744073709551615,-0.000123e+45,\"nan\",\"\",\"01\",\"1.\",\"1e\"]\n");
	free(buf);
}
END_TEST

START_TEST(unbalanced_reported)
{
	open_doc();
	ctl_json_object_begin(&j);
	close_doc(-EINVAL);
	free(buf);

	open_doc();
	ctl_json_object_begin(&j);
	ctl_json_key(&j, "dangling");
	ctl_json_object_end(&j);
	close_doc(-EINVAL);
	free(buf);

	open_doc();
	for (int i = 0; i < CTL_JSON_MAX_DEPTH + 2; i++)
		ctl_json_array_begin(&j);
	for (int i = 0; i < CTL_JSON_MAX_DEPTH + 2; i++)
		ctl_json_array_end(&j);
	close_doc(-EINVAL);
	free(buf);
}
END_TEST

START_TEST(format_choice)
{
	enum ctl_format f;
	FILE *err = fopen("/dev/null", "w");

	ck_assert_ptr_nonnull(err);
	unsetenv("PERFMON_FORMAT");
	ck_assert_int_eq(ctl_cli_format_json("json", &f, err, "report"), 0);
	ck_assert_int_eq(f, CTL_FORMAT_JSON);
	ck_assert_int_eq(ctl_cli_format("json", &f, err, "top"), -EINVAL);
	ck_assert_int_eq(ctl_cli_format_json("yaml", &f, err, "report"), -EINVAL);
	setenv("PERFMON_FORMAT", "json", 1);
	ck_assert_int_eq(ctl_cli_format(NULL, &f, err, "top"), 0);
	ck_assert_int_eq(f, CTL_FORMAT_LIVE);
	ck_assert_int_eq(ctl_cli_format_json(NULL, &f, err, "report"), 0);
	ck_assert_int_eq(f, CTL_FORMAT_JSON);
	unsetenv("PERFMON_FORMAT");
	fclose(err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl_json");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, nested_separators);
	tcase_add_test(tc, string_escapes);
	tcase_add_test(tc, numbers_every_digit);
	tcase_add_test(tc, number_text);
	tcase_add_test(tc, unbalanced_reported);
	tcase_add_test(tc, format_choice);
	suite_add_tcase(s, tc);
	return check_run(s);
}
