/*
 * check_conf.c - tests for the configuration (src/conf*.c) and the command
 * line (src/cmdline.c): defaults, precedence, units in files, every kind of
 * bad input, --check-config output and reload rules.
 *
 * Inputs live in tests/data/conf/ (found through $top_srcdir) or are
 * written to temporary files so each bad case has exactly known lines.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <grp.h>
#include <locale.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "conf.h"
#include "conf_keys.h"
#include "scratch.h"

#define MS UINT64_C(1000000)
#define SEC UINT64_C(1000000000)

static char *data_path(const char *name)
{
	const char *top = getenv("top_srcdir");
	static char buf[4][4096];
	static unsigned next;
	char *p = buf[next++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/tests/data/conf/%s", top ? top : ".", name);
	return p;
}

/*
 * Every file a test writes goes into one directory made before the test
 * case forks and removed after it, in the parent, so even a failed test
 * leaves nothing behind.
 */
static void setup_scratch(void)
{
	scratch_create("check_conf");
}

/* Write `text` to a fresh .conf file in the scratch directory. */
static char *write_temp(const char *text)
{
	char *path = malloc(4096);
	FILE *f;
	int fd;

	ck_assert_ptr_nonnull(path);
	snprintf(path, 4096, "%s/test-XXXXXX.conf", scratch_dir());
	fd = mkstemps(path, 5);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

static int load_path(const char *path, struct pm_config *c, struct msgs *e)
{
	struct pm_cmdline cl;

	memset(&cl, 0, sizeof(cl));
	cl.config_path = path;
	return conf_load(&cl, c, e);
}

/* Run the real command-line parser over a NULL-terminated word list. */
static int parse_args(struct pm_cmdline *cl, char *err, size_t errlen, ...)
{
	static char *argv[32];
	int argc = 0;
	va_list ap;
	char *w;

	argv[argc++] = (char *)"perfmond";
	va_start(ap, errlen);
	while ((w = va_arg(ap, char *)) && argc < 31)
		argv[argc++] = w;
	va_end(ap);
	argv[argc] = NULL;
	return cmdline_parse(argc, argv, cl, err, errlen);
}

static void fill(void *p, size_t n)
{
	memset(p, 0x5a, n);
}

static bool untouched(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		if (b[i] != 0x5a)
			return false;
	}
	return true;
}

static void clear_env(void)
{
	unsetenv("LOGS_DIRECTORY");
}

/* ================================================== */

START_TEST(test_defaults)
{
	struct pm_config c;
	struct msgs e;
	unsigned i;

	ck_assert_int_eq(conf_load(NULL, &c, &e), 0);
	ck_assert_uint_eq(e.count, 0);
	ck_assert_str_eq(c.shm_name, "perfmon");
	ck_assert_str_eq(c.instance, "");
	ck_assert_str_eq(c.config_path, "");
	ck_assert_uint_eq(c.capacity, 65536);
	ck_assert_uint_eq(c.max_names, 512);
	ck_assert_uint_eq(c.mode, 0660);
	ck_assert_str_eq(c.group, "");
	ck_assert_int_eq(c.cpu, -1);
	ck_assert_uint_eq(c.poll_interval_ns, MS);
	ck_assert_uint_eq(c.flush_interval_ns, SEC);
	ck_assert_uint_eq(c.stalled_sample_timeout_ns, 5 * SEC);
	ck_assert_uint_eq(c.max_open_spans, 4096);
	ck_assert_uint_eq(c.max_stages, 1024);
	ck_assert(!c.lock_memory);
	ck_assert_str_eq(c.csv, "perfmon.csv");
	ck_assert_str_eq(c.summary, "perfmon_summary.txt");
	ck_assert_int_eq(c.unit, REPORT_UNIT_NS);
	ck_assert_uint_eq(c.percentiles.n, 4);
	ck_assert(c.percentiles.p[0] == 50 && c.percentiles.p[1] == 90 &&
		  c.percentiles.p[2] == 99 && c.percentiles.p[3] == 99.9);
	ck_assert(!c.subtract_overhead);
	ck_assert_uint_eq(c.csv_flush_interval_ns, 0);
	ck_assert_uint_eq(c.rotate_size, 0);
	ck_assert_uint_eq(c.rotate_interval_ns, 0);
	ck_assert_uint_eq(c.rotate_keep, 10);
	ck_assert_uint_eq(c.outliers, 0);
	ck_assert_str_eq(c.prom_textfile, "");
	/* 39ns to 1.1s, no bucket more than 10% wider than its lower bound. */
	ck_assert_uint_eq(c.buckets.n, 216);
	ck_assert_uint_eq(c.buckets.le_ns[0], 39);
	for (i = 1; i < c.buckets.n; i++) {
		ck_assert_uint_gt(c.buckets.le_ns[i], c.buckets.le_ns[i - 1]);
		ck_assert_uint_le(c.buckets.le_ns[i] * 10, c.buckets.le_ns[i - 1] * 11);
	}
	ck_assert_uint_eq(c.buckets.le_ns[215], UINT64_C(1100000000));
	ck_assert_uint_eq(c.run_duration_ns, 0);
	for (i = 0; i < CONF_KEY_COUNT; i++)
		ck_assert_int_eq(c.origin[i].source, CONF_SRC_DEFAULT);
}
END_TEST

START_TEST(test_logs_directory)
{
	struct pm_cmdline cl;
	struct pm_config c;
	struct msgs e;
	char err[512];

	setenv("LOGS_DIRECTORY", "/var/log/perfmond/x", 1);
	ck_assert_int_eq(conf_load(NULL, &c, &e), 0);
	ck_assert_str_eq(c.csv, "/var/log/perfmond/x/perfmon.csv");
	ck_assert_str_eq(c.summary, "/var/log/perfmond/x/perfmon_summary.txt");
	ck_assert_str_eq(c.origin[CONF_OUTPUT_CSV].detail, "$LOGS_DIRECTORY");

	/* Several directories: the first is ours; trailing slashes go. */
	setenv("LOGS_DIRECTORY", "/srv/logs/a/:/srv/logs/b", 1);
	ck_assert_int_eq(conf_load(NULL, &c, &e), 0);
	ck_assert_str_eq(c.csv, "/srv/logs/a/perfmon.csv");

	setenv("LOGS_DIRECTORY", "", 1);
	ck_assert_int_eq(conf_load(NULL, &c, &e), 0);
	ck_assert_str_eq(c.csv, "perfmon.csv");

	/* The instance name is the stem and the default shm name. */
	setenv("LOGS_DIRECTORY", "/var/log/perfmond/trading", 1);
	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "-i", "trading", NULL), 0);
	ck_assert_int_eq(conf_load(&cl, &c, &e), 0);
	ck_assert_str_eq(c.instance, "trading");
	ck_assert_str_eq(c.shm_name, "trading");
	ck_assert_str_eq(c.origin[CONF_SHM_NAME].detail, "instance name");
	ck_assert_str_eq(c.csv, "/var/log/perfmond/trading/trading.csv");
	ck_assert_str_eq(c.summary, "/var/log/perfmond/trading/trading_summary.txt");

	/* Explicit paths win; an empty one means no file. */
	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "-i", "trading", "-o", "",
				    "--summary", "/tmp/s.txt", NULL), 0);
	ck_assert_int_eq(conf_load(&cl, &c, &e), 0);
	ck_assert_str_eq(c.csv, "");
	ck_assert_str_eq(c.summary, "/tmp/s.txt");
	ck_assert_int_eq(c.origin[CONF_OUTPUT_CSV].source, CONF_SRC_CMDLINE);
	clear_env();
}
END_TEST

START_TEST(test_manual_example)
{
	const char *path = data_path("manual-example.conf");
	struct pm_config c;
	struct msgs e;
	static const struct { enum conf_key k; unsigned line; } lines[] = {
		{ CONF_SHM_NAME, 2 }, { CONF_SHM_CAPACITY, 3 }, { CONF_SHM_MAX_NAMES, 4 },
		{ CONF_SHM_MODE, 5 }, { CONF_SHM_GROUP, 6 }, { CONF_COLLECTOR_CPU, 9 },
		{ CONF_COLLECTOR_POLL_INTERVAL, 10 },
		{ CONF_COLLECTOR_LOCK_MEMORY, 15 }, { CONF_OUTPUT_CSV, 18 },
		{ CONF_OUTPUT_PERCENTILES, 21 }, { CONF_OUTPUT_ROTATE_KEEP, 26 },
		{ CONF_PROMETHEUS_BUCKETS, 30 },
	};
	static const uint64_t buckets[] = {
		100, 1000, 10000, 100000, MS, 10 * MS, 100 * MS, SEC,
	};
	unsigned i;

	clear_env();
	ck_assert_msg(load_path(path, &c, &e) == 0, "%s", e.text);
	ck_assert_str_eq(c.config_path, path);
	ck_assert_str_eq(c.shm_name, "trading");
	ck_assert_uint_eq(c.capacity, 65536);
	ck_assert_uint_eq(c.max_names, 512);
	ck_assert_uint_eq(c.mode, 0660);
	ck_assert_str_eq(c.group, "perfmon");
	ck_assert_int_eq(c.cpu, 3);
	ck_assert_uint_eq(c.poll_interval_ns, MS);
	ck_assert_uint_eq(c.flush_interval_ns, SEC);
	ck_assert_uint_eq(c.stalled_sample_timeout_ns, 5 * SEC);
	ck_assert_uint_eq(c.max_open_spans, 4096);
	ck_assert_uint_eq(c.max_stages, 1024);
	ck_assert(!c.lock_memory);
	ck_assert_str_eq(c.csv, "/var/log/perfmond/trading/trading.csv");
	ck_assert_str_eq(c.summary, "/var/log/perfmond/trading/trading_summary.txt");
	ck_assert_int_eq(c.unit, REPORT_UNIT_NS);
	ck_assert_uint_eq(c.percentiles.n, 4);
	ck_assert(c.percentiles.p[3] == 99.9);
	ck_assert(!c.subtract_overhead);
	ck_assert_uint_eq(c.csv_flush_interval_ns, 0);
	ck_assert_uint_eq(c.rotate_size, 0);
	ck_assert_uint_eq(c.rotate_interval_ns, 0);
	ck_assert_uint_eq(c.rotate_keep, 10);
	ck_assert_uint_eq(c.outliers, 0);
	ck_assert_str_eq(c.prom_textfile,
			 "/var/lib/prometheus/node-exporter/perfmond_trading.prom");
	ck_assert_uint_eq(c.buckets.n, 8);
	for (i = 0; i < 8; i++)
		ck_assert_uint_eq(c.buckets.le_ns[i], buckets[i]);
	/* every key but outliers, which the example leaves at its default */
	for (i = 0; i < CONF_KEY_COUNT; i++)
		ck_assert_int_eq(c.origin[i].source,
				 i == CONF_OUTPUT_OUTLIERS ? CONF_SRC_DEFAULT : CONF_SRC_FILE);
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		ck_assert_uint_eq(c.origin[lines[i].k].line, lines[i].line);
}
END_TEST

/* The example names group perfmon and CPU 3: the machine check tells
 * whether this machine has them, in the FILE:LINE form. */
START_TEST(test_machine_check_example)
{
	const char *path = data_path("manual-example.conf");
	bool has_group = getgrnam("perfmon") != NULL;
	struct pm_config c;
	struct msgs e;
	cpu_set_t set;
	bool has_cpu;
	char want[4200];
	int rc;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	has_cpu = CPU_ISSET(3, &set);
	ck_assert_int_eq(load_path(path, &c, &e), 0);
	rc = conf_check_machine(&c, &e);
	ck_assert_int_eq(rc != 0, !has_group || !has_cpu);
	ck_assert_uint_eq(e.count, (unsigned)!has_group + (unsigned)!has_cpu);
	snprintf(want, sizeof(want), "%s:6: [shm] group = perfmon: no such group", path);
	ck_assert_int_eq(strstr(e.text, want) != NULL, !has_group);
	snprintf(want, sizeof(want), "%s:9: [collector] cpu = 3: CPU 3 is not available", path);
	ck_assert_int_eq(strstr(e.text, want) != NULL, !has_cpu);
}
END_TEST

START_TEST(test_machine_check)
{
	struct group *gr = getgrgid(getgid());
	struct pm_config c;
	struct msgs e;
	char text[512], want[600];
	cpu_set_t set;
	int cpu, bad = -1;
	char *path;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	for (cpu = 0; !CPU_ISSET(cpu, &set); cpu++)
		;
	for (bad = CPU_SETSIZE - 1; bad >= 0 && CPU_ISSET(bad, &set); bad--)
		;
	ck_assert_int_ge(bad, 0);

	/* An existing group and an allowed CPU pass. */
	ck_assert_ptr_nonnull(gr);
	snprintf(text, sizeof(text), "[shm]\ngroup = %s\n[collector]\ncpu = %d\n",
		 gr->gr_name, cpu);
	path = write_temp(text);
	ck_assert_int_eq(load_path(path, &c, &e), 0);
	ck_assert_msg(conf_check_machine(&c, &e) == 0, "%s", e.text);
	ck_assert_uint_eq(e.count, 0);
	unlink(path);
	free(path);

	snprintf(text, sizeof(text), "[shm]\ngroup = no-such-group-zq\n\n"
		 "[collector]\ncpu = %d\n", bad);
	path = write_temp(text);
	ck_assert_int_eq(load_path(path, &c, &e), 0);
	ck_assert_int_ne(conf_check_machine(&c, &e), 0);
	ck_assert_uint_eq(e.count, 2);
	snprintf(want, sizeof(want), "%s:2: [shm] group = no-such-group-zq: no such group",
		 path);
	ck_assert_msg(strstr(e.text, want), "%s", e.text);
	snprintf(want, sizeof(want), "%s:5: [collector] cpu = %d: CPU %d is not available",
		 path, bad, bad);
	ck_assert_msg(strstr(e.text, want), "%s", e.text);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_resolve_group)
{
	struct group *gr = getgrgid(getgid());
	gid_t gid = 0;

	ck_assert_int_eq(conf_resolve_group("", &gid), 0);
	ck_assert(gid == (gid_t)-1);
	ck_assert_ptr_nonnull(gr);
	ck_assert_int_eq(conf_resolve_group(gr->gr_name, &gid), 0);
	ck_assert_uint_eq(gid, getgid());
	ck_assert_int_eq(conf_resolve_group("54321", &gid), 0);
	ck_assert_uint_eq(gid, 54321);
	gid = 7;
	ck_assert_int_eq(conf_resolve_group("no-such-group-zq", &gid), -ENOENT);
	ck_assert_int_eq(conf_resolve_group("bad:group", &gid), -EINVAL);
	ck_assert_uint_eq(gid, 7);
}
END_TEST

START_TEST(test_precedence)
{
	char *cfg = data_path("cmdline-over-file.conf");
	struct pm_cmdline cl;
	struct pm_config c;
	struct msgs e;
	char err[512];

	clear_env();
	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "--capacity", "4096",
				    "--unit", "cycles", "-i", "inst", cfg, NULL), 0);
	ck_assert_msg(conf_load(&cl, &c, &e) == 0, "%s", e.text);
	/* command line over file */
	ck_assert_uint_eq(c.capacity, 4096);
	ck_assert_int_eq(c.origin[CONF_SHM_CAPACITY].source, CONF_SRC_CMDLINE);
	ck_assert_str_eq(c.origin[CONF_SHM_CAPACITY].detail, "--capacity");
	ck_assert_int_eq(c.unit, REPORT_UNIT_CYCLES);
	ck_assert_int_eq(c.origin[CONF_OUTPUT_UNIT].source, CONF_SRC_CMDLINE);
	/* file over defaults, including the instance-derived shm name */
	ck_assert_str_eq(c.shm_name, "from-file");
	ck_assert_int_eq(c.origin[CONF_SHM_NAME].source, CONF_SRC_FILE);
	ck_assert_uint_eq(c.origin[CONF_SHM_NAME].line, 3);
	ck_assert_uint_eq(c.flush_interval_ns, 2 * SEC);
	ck_assert_uint_eq(c.origin[CONF_COLLECTOR_FLUSH_INTERVAL].line, 7);
	ck_assert_str_eq(c.csv, "/tmp/from-file.csv");
	ck_assert_uint_eq(c.origin[CONF_OUTPUT_CSV].line, 12);
	/* defaults where neither says anything; the stem is the instance */
	ck_assert_uint_eq(c.poll_interval_ns, MS);
	ck_assert_int_eq(c.origin[CONF_COLLECTOR_POLL_INTERVAL].source, CONF_SRC_DEFAULT);
	ck_assert_str_eq(c.summary, "inst_summary.txt");
	ck_assert_int_eq(c.origin[CONF_OUTPUT_SUMMARY].source, CONF_SRC_DEFAULT);

	/* --shm beats the file's name; --interval beats its flush_interval */
	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "-c", cfg, "-n", "cl-name",
				    "--interval", "250ms", "--cpu", "none",
				    "--duration", "90s", NULL), 0);
	ck_assert_int_eq(conf_load(&cl, &c, &e), 0);
	ck_assert_str_eq(c.shm_name, "cl-name");
	ck_assert_uint_eq(c.flush_interval_ns, 250 * MS);
	ck_assert_int_eq(c.origin[CONF_COLLECTOR_FLUSH_INTERVAL].source, CONF_SRC_CMDLINE);
	ck_assert_uint_eq(c.run_duration_ns, 90 * SEC);
	ck_assert_int_eq(c.duration_origin.source, CONF_SRC_CMDLINE);
}
END_TEST

START_TEST(test_units_in_file)
{
	const char *path = data_path("units.conf");
	struct pm_config c;
	struct msgs e;
	char *tmp;

	ck_assert_msg(load_path(path, &c, &e) == 0, "%s", e.text);
	ck_assert_uint_eq(c.capacity, 256 * 1024);
	ck_assert_uint_eq(c.poll_interval_ns, 250000);
	ck_assert_uint_eq(c.flush_interval_ns, 1500 * MS);
	ck_assert_uint_eq(c.stalled_sample_timeout_ns, 120 * SEC);
	ck_assert_uint_eq(c.csv_flush_interval_ns, 10 * SEC);
	ck_assert_uint_eq(c.rotate_size, UINT64_C(64) << 20);
	ck_assert_uint_eq(c.rotate_interval_ns, 86400 * SEC);
	ck_assert_uint_eq(c.rotate_keep, 0);
	ck_assert_uint_eq(c.buckets.n, 6);
	ck_assert_uint_eq(c.buckets.le_ns[0], 500);
	ck_assert_uint_eq(c.buckets.le_ns[2], 2500000);
	ck_assert_uint_eq(c.buckets.le_ns[5], 3600 * SEC);

	/* Sizes: bare bytes and every binary suffix. */
	tmp = write_temp("[output]\nrotate_size = 4096\n");
	ck_assert_int_eq(load_path(tmp, &c, &e), 0);
	ck_assert_uint_eq(c.rotate_size, 4096);
	unlink(tmp);
	free(tmp);
	tmp = write_temp("[output]\nrotate_size = 1.5K\n");
	ck_assert_int_eq(load_path(tmp, &c, &e), 0);
	ck_assert_uint_eq(c.rotate_size, 1536);
	unlink(tmp);
	free(tmp);
	tmp = write_temp("[output]\nrotate_size = 2G\n");
	ck_assert_int_eq(load_path(tmp, &c, &e), 0);
	ck_assert_uint_eq(c.rotate_size, UINT64_C(2) << 30);
	unlink(tmp);
	free(tmp);
	tmp = write_temp("[output]\nrotate_size = 3m\n");
	ck_assert_int_eq(load_path(tmp, &c, &e), 0);
	ck_assert_uint_eq(c.rotate_size, UINT64_C(3) << 20);
	unlink(tmp);
	free(tmp);
}
END_TEST

START_TEST(test_indented_crlf_bom)
{
	struct pm_config c;
	struct msgs e;

	ck_assert_msg(load_path(data_path("indented.conf"), &c, &e) == 0, "%s", e.text);
	ck_assert_str_eq(c.shm_name, "indented");
	ck_assert_uint_eq(c.capacity, 2048);
	ck_assert_uint_eq(c.origin[CONF_SHM_CAPACITY].line, 4);
	ck_assert_uint_eq(c.max_names, 64);
	ck_assert_str_eq(c.csv, "/tmp/a;b.csv");
	ck_assert_int_eq(c.unit, REPORT_UNIT_US);
	ck_assert_str_eq(c.summary, "");
	ck_assert_int_eq(c.origin[CONF_OUTPUT_SUMMARY].source, CONF_SRC_FILE);
}
END_TEST

/* percentiles and buckets may go on over indented lines. */
START_TEST(test_list_continuation)
{
	struct pm_config c;
	struct msgs e;
	char *path, want[4300];

	path = write_temp("[output]\n"
			  "percentiles = 50, 90,\n"
			  "    99\n"
			  "; a comment between does not end the list\n"
			  "\n"
			  "    99.9, 99.99   ; and an inline one\n"
			  "  unit = us\n"
			  "[prometheus]\n"
			  "buckets =\n"
			  "\t1us, 10us,\n"
			  "\t100us\n");
	ck_assert_msg(load_path(path, &c, &e) == 0, "%s", e.text);
	ck_assert_uint_eq(c.percentiles.n, 5);
	ck_assert(c.percentiles.p[2] == 99 && c.percentiles.p[4] == 99.99);
	ck_assert_uint_eq(c.origin[CONF_OUTPUT_PERCENTILES].line, 2);
	/* an indented key after a list is a key, not more list */
	ck_assert_int_eq(c.unit, REPORT_UNIT_US);
	ck_assert_uint_eq(c.origin[CONF_OUTPUT_UNIT].line, 7);
	ck_assert_uint_eq(c.buckets.n, 3);
	ck_assert_uint_eq(c.buckets.le_ns[2], 100000);
	unlink(path);
	free(path);

	/* An over-long line inside a list is one problem, not two. */
	snprintf(want, sizeof(want), "[output]\npercentiles = 50,\n    %0220d\n    99\n", 0);
	path = write_temp(want);
	ck_assert_int_lt(load_path(path, &c, &e), 0);
	ck_assert_msg(e.count == 1, "%s", e.text);
	snprintf(want, sizeof(want), "%s:3: the line is 224 bytes long", path);
	ck_assert_msg(strstr(e.text, want), "%s", e.text);
	unlink(path);
	free(path);
}
END_TEST

/* ================================================== */
/* Bad files: each fails as a whole, leaves the output alone, and says
 * FILE:LINE and the key. */

static const struct bad_case {
	const char *text;
	unsigned line;
	const char *needle;     /* the key, section or offending text */
	const char *why;        /* part of the explanation */
} bad_cases[] = {
	{ "[shm]\n[bogus]\nx = 1\n", 2, "[bogus]", "unknown section" },
	{ "[shm]\ncapacty = 1024\n", 2, "[shm] capacty = 1024", "unknown key; allowed in [shm]: name, capacity" },
	{ "[shm]\nCapacity = 1024\n", 2, "Capacity", "did you mean 'capacity'" },
	{ "[shm]\ncpu = 1\n", 2, "[shm] cpu = 1", "belongs in [collector]" },
	{ "capacity = 1024\n[shm]\n", 1, "capacity = 1024", "outside any section; it belongs in [shm]" },
	{ "[collector]\npoll_interval = 5 ms x\n", 2, "[collector] poll_interval = 5 ms x", "unknown unit" },
	{ "[collector]\nflush_interval = 5\n", 2, "[collector] flush_interval = 5", "unit is required" },
	{ "[collector]\npoll_interval = 2s\n", 2, "poll_interval = 2s", "too large; allowed: a duration from 1us to 1s" },
	{ "[output]\ncsv_flush_interval = 10us\n", 2, "csv_flush_interval = 10us", "too small; allowed: 0 (push every interval)" },
	{ "[shm]\n\ncapacity = 1000\n", 3, "[shm] capacity = 1000", "must be a power of two (the nearest are 512 and 1024)" },
	{ "[shm]\ncapacity = 0\n", 2, "[shm] capacity = 0", "out of range; allowed: a power of two from 64" },
	{ "[shm]\ncapacity = 2G\n", 2, "[shm] capacity = 2G", "out of range" },
	{ "[output]\npercentiles = 50, 101\n", 2, "[output] percentiles = 50, 101", "101 is outside [0, 100]" },
	{ "[output]\npercentiles = 50, nan\n", 2, "[output] percentiles = 50, nan", "NaN" },
	{ "[output]\npercentiles = inf\n", 2, "[output] percentiles = inf", "outside [0, 100]" },
	{ "[output]\npercentiles = 50, -1\n", 2, "percentiles = 50, -1", "-1 is outside [0, 100]" },
	{ "[output]\npercentiles = 50, 90, 50.0\n", 2, "percentiles = 50, 90, 50.0", "listed twice" },
	{ "[output]\npercentiles = 50,,90\n", 2, "percentiles = 50,,90", "element 2 of the list is empty" },
	{ "[output]\npercentiles = 50, ninety\n", 2, "percentiles", "'ninety' is not a number" },
	{ "[output]\npercentiles = 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n", 2, "percentiles", "more than 16" },
	{ "[shm]\nmax_names = 10\n\nmax_names = 20\n", 4, "[shm] max_names = 20", "duplicate key, already set on line 2" },
	{ "[collector]\nlock_memory = maybe\n", 2, "[collector] lock_memory = maybe", "not a yes/no value" },
	{ "[shm]\nmode = 0668\n", 2, "[shm] mode = 0668", "not an octal number" },
	{ "[shm]\nmode = 0440\n", 2, "[shm] mode = 0440", "owner must keep read and write" },
	{ "[shm]\nmode = 4770\n", 2, "[shm] mode = 4770", "out of range; allowed: octal permission bits" },
	{ "[collector]\ncpu = two\n", 2, "[collector] cpu = two", "not 'none' or a CPU number" },
	{ "[collector]\ncpu = -1\n", 2, "[collector] cpu = -1", "not 'none' or a CPU number" },
	{ "[collector]\ncpu = 4096\n", 2, "[collector] cpu = 4096", "CPU numbers go up to 1023" },
	{ "[output]\nunit = ms\n", 2, "[output] unit = ms", "unknown unit; allowed: ns, us or cycles" },
	{ "[shm]\nname = .hidden\n", 2, "[shm] name = .hidden", "starts with '.'" },
	{ "[shm]\nname = x.meta\n", 2, "[shm] name = x.meta", "ends in '.meta'" },
	{ "[shm]\nname = a/b\n", 2, "[shm] name = a/b", "character 2 is not allowed" },
	{ "[shm]\nname =\n", 2, "[shm] name = \"\"", "name is empty" },
	{ "[shm]\ngroup = a b\n", 2, "[shm] group = a b", "cannot contain ' '" },
	{ "[output]\nrotate_size = 99999999999999999999\n", 2, "rotate_size", "number is too large" },
	{ "[output]\nrotate_size = 100\n", 2, "rotate_size = 100", "too small" },
	{ "[output]\nrotate_size = 1.3K\n", 2, "rotate_size = 1.3K", "not a whole number of bytes" },
	{ "[output]\nrotate_keep = 4294967296\n", 2, "rotate_keep = 4294967296", "out of range" },
	{ "[output]\nrotate_keep = 3s\n", 2, "rotate_keep = 3s", "unknown unit" },
	{ "[collector]\nstalled_sample_timeout = 999999999999d\n", 2, "stalled_sample_timeout", "too large" },
	{ "[collector]\nmax_open_spans = 1.5\n", 2, "max_open_spans = 1.5", "not a whole number" },
	{ "[shm\nname = x\n", 1, "[shm", "no closing ']'" },
	{ "[shm] name = x\n", 1, "[shm] name = x", "unexpected text after the section header" },
	{ "[shm]\ngarbage\n", 2, "'garbage'", "not a 'key = value' line" },
	{ "[shm]\n= 5\n", 2, "[shm] = 5", "key name is missing" },
	{ "[prometheus]\nbuckets = 1us, 1us\n", 2, "[prometheus] buckets = 1us, 1us", "not larger than the bound before it" },
	{ "[prometheus]\nbuckets = 1us, 5\n", 2, "buckets = 1us, 5", "'5': a unit is required" },
	{ "[prometheus]\nbuckets =\n", 2, "[prometheus] buckets = \"\"", "at least one bound" },
	{ "[prometheus]\nbuckets = 0, 1us\n", 2, "buckets = 0, 1us", "out of range" },
	{ "[shm]\ncapacity = 1024\n   2048\n", 3, "'2048'", "only percentiles and buckets can continue" },
	{ "[shm]\n   orphan\n", 2, "'orphan'", "not a 'key = value' line" },
	{ "[output]\npercentiles = 50,\n  ; a comment\n  101\n", 2, "[output] percentiles = 50, 101", "101 is outside" },
	{ "[output]\nunit = bogus\n   more\n   and more\n", 2, "[output] unit = bogus", "unknown unit" },
	{ "[output]\ncsv = /tmp/x\nsummary = /tmp/x\n", 3, "[output] summary = /tmp/x", "the same file as [output] csv" },
	{ "[output]\nsummary = perfmon.csv\n", 2, "[output] summary = perfmon.csv", "the same file as [output] csv" },
	{ "[x ;y]\nname = 1\n", 1, "[x ;y]", "unknown section" },
	{ "[output]\npercentiles = 50, 1e-100\n", 2, "[output] percentiles = 50, 1e-100", "1e-100 has more than 15 decimal places" },
};

START_TEST(test_bad_matrix)
{
	const struct bad_case *bc = &bad_cases[_i];
	struct pm_config c;
	struct msgs e;
	char want[4300];
	char *path;

	clear_env();
	path = write_temp(bc->text);
	fill(&c, sizeof(c));
	ck_assert_int_lt(load_path(path, &c, &e), 0);
	ck_assert_msg(untouched(&c, sizeof(c)), "output modified for %s", bc->text);
	ck_assert_msg(e.count == 1, "%u messages for %s:\n%s", e.count, bc->text, e.text);
	snprintf(want, sizeof(want), "%s:%u: ", path, bc->line);
	ck_assert_msg(strncmp(e.text, want, strlen(want)) == 0, "want '%s' in: %s", want, e.text);
	ck_assert_msg(strstr(e.text, bc->needle), "want '%s' in: %s", bc->needle, e.text);
	ck_assert_msg(strstr(e.text, bc->why), "want '%s' in: %s", bc->why, e.text);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_several_errors)
{
	const char *path = data_path("several-errors.conf");
	static const struct { unsigned line; const char *needle; } want[] = {
		{ 4, "[shm] capacity = 1000: must be a power of two" },
		{ 6, "[shm] mode = 0999: not an octal number" },
		{ 9, "[collector] poll_interval = 5: a unit is required" },
		{ 10, "[collector] lock_memory = perhaps" },
		{ 14, "[output] percentiles = 50, 101: 101 is outside" },
		{ 15, "[output] unit = parsecs" },
		{ 16, "[output] colour = blue: unknown key" },
		{ 18, "[graphs]: unknown section" },
	};
	struct pm_config c;
	struct msgs e;
	char line[4300];
	unsigned i;

	fill(&c, sizeof(c));
	ck_assert_int_eq(load_path(path, &c, &e), -EINVAL);
	ck_assert(untouched(&c, sizeof(c)));
	ck_assert_msg(e.count == sizeof(want) / sizeof(want[0]), "%s", e.text);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(line, sizeof(line), "%s:%u: %s", path, want[i].line, want[i].needle);
		ck_assert_msg(strstr(e.text, line), "want '%s' in:\n%s", line, e.text);
	}
	/* The key in the unknown section is not reported a second time. */
	ck_assert_ptr_null(strstr(e.text, "width"));
}
END_TEST

START_TEST(test_unreadable)
{
	const char *top = getenv("top_srcdir");
	char dir[4096], want[4200];
	struct pm_config c;
	struct msgs e;

	snprintf(dir, sizeof(dir), "%s/tests/data/conf", top ? top : ".");
	fill(&c, sizeof(c));
	ck_assert_int_eq(load_path(dir, &c, &e), -EISDIR);
	ck_assert(untouched(&c, sizeof(c)));
	snprintf(want, sizeof(want), "%s: cannot read the config file: %s", dir,
		 strerror(EISDIR));
	ck_assert_msg(strstr(e.text, want), "%s", e.text);

	ck_assert_int_eq(load_path("/nonexistent/perfmond.conf", &c, &e), -ENOENT);
	ck_assert(untouched(&c, sizeof(c)));
	snprintf(want, sizeof(want), "/nonexistent/perfmond.conf: cannot read the "
		 "config file: %s", strerror(ENOENT));
	ck_assert_msg(strstr(e.text, want), "%s", e.text);
	ck_assert_uint_eq(e.count, 1);
}
END_TEST

START_TEST(test_long_lines)
{
	char text[1024], want[4300], path199[200];
	struct pm_config c;
	struct msgs e;
	char *path;
	size_t n;

	/* 199 bytes is the longest line: a csv path that fills it loads. */
	n = 199 - strlen("csv = ");
	memset(path199, 'a', n);
	path199[0] = '/';
	path199[n] = '\0';
	snprintf(text, sizeof(text), "[output]\ncsv = %s\n", path199);
	ck_assert_uint_eq(strlen(strchr(text, '\n') + 1), 200);
	path = write_temp(text);
	ck_assert_msg(load_path(path, &c, &e) == 0, "%s", e.text);
	ck_assert_str_eq(c.csv, path199);
	unlink(path);
	free(path);

	/* One more byte is refused at its own line, and the line numbers of
	 * what follows stay right. */
	snprintf(text, sizeof(text), "[output]\ncsv = %sb\nunit = furlongs\n", path199);
	path = write_temp(text);
	fill(&c, sizeof(c));
	ck_assert_int_lt(load_path(path, &c, &e), 0);
	ck_assert(untouched(&c, sizeof(c)));
	ck_assert_uint_eq(e.count, 2);
	snprintf(want, sizeof(want), "%s:2: the line is 200 bytes long; lines can be "
		 "at most 199 bytes", path);
	ck_assert_msg(strstr(e.text, want), "%s", e.text);
	snprintf(want, sizeof(want), "%s:3: [output] unit = furlongs", path);
	ck_assert_msg(strstr(e.text, want), "%s", e.text);
	unlink(path);
	free(path);
}
END_TEST

/* [prometheus] buckets = n bounds of 16 characters each, eight to a line,
 * the last one `last_delta` ns further: a list longer than 4 KiB. */
static char *bucket_file(unsigned n, unsigned last_delta)
{
	static char text[8192];
	size_t len = (size_t)snprintf(text, sizeof(text), "[prometheus]\nbuckets =");

	for (unsigned i = 0; i < n; i++) {
		unsigned long long ns = UINT64_C(86000000000001) + UINT64_C(1000001) * i +
					(i == n - 1 ? last_delta : 0);

		len += (size_t)snprintf(text + len, sizeof(text) - len, "%s %lluns%s",
					i % 8 ? "" : "\n   ", ns, i < n - 1 ? "," : "\n");
	}
	ck_assert_uint_lt(len, sizeof(text) - 1);
	return write_temp(text);
}

/* What the words for buckets allow is what the parser takes. */
START_TEST(test_bucket_limit)
{
	char list[4096], err[8192];
	size_t len = 0;

	ck_assert_int_lt(conf_check_option(CONF_PROMETHEUS_BUCKETS, "--buckets", "0",
					   err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "allowed: 1 to 256 durations from 1ns to 1d"), "%s", err);
	for (unsigned i = 1; i <= 256; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%uns", i > 1 ? ", " : "", i);
	ck_assert_msg(conf_check_option(CONF_PROMETHEUS_BUCKETS, "--buckets", list,
					err, sizeof(err)) == 0, "%s", err);
	snprintf(list + len, sizeof(list) - len, ", 257ns");
	ck_assert_int_lt(conf_check_option(CONF_PROMETHEUS_BUCKETS, "--buckets", list,
					   err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, ": more than 256 bounds; allowed: 1 to 256 durations"), "%s", err);
}
END_TEST

/* Outliers are written beside the CSV: with no CSV, none are, which is
 * valid but worth a warning naming FILE:LINE (or the option); with a CSV,
 * or with outliers off, there is nothing to say. */
START_TEST(test_outliers_without_csv)
{
	struct pm_cmdline cl;
	struct pm_config c;
	struct msgs w;
	char want[4300], err[512], *path;

	clear_env();
	path = write_temp("[output]\ncsv =\noutliers = 5\n");
	ck_assert_msg(load_path(path, &c, &w) == 0, "%s", w.text);
	ck_assert_int_eq(conf_warnings(&c, &w), 1);
	snprintf(want, sizeof(want), "%s:3: [output] outliers = 5: no outliers will be written",
		 path);
	ck_assert_msg(strstr(w.text, want), "%s", w.text);
	ck_assert_msg(strstr(w.text, "[output] csv is empty"), "%s", w.text);
	ck_assert_ptr_null(strstr(w.text, "allowed:"));

	/* The CSV emptied on the command line instead: the same warning. */
	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "-o", "", NULL), 0);
	cl.config_path = path;
	ck_assert_int_eq(conf_load(&cl, &c, &w), 0);
	ck_assert_int_eq(conf_warnings(&c, &w), 1);
	unlink(path);
	free(path);

	path = write_temp("[output]\noutliers = 5\n");
	ck_assert_int_eq(load_path(path, &c, &w), 0);
	ck_assert_msg(conf_warnings(&c, &w) == 0, "%s", w.text);
	unlink(path);
	free(path);
	path = write_temp("[output]\ncsv =\n");
	ck_assert_int_eq(load_path(path, &c, &w), 0);
	ck_assert_msg(conf_warnings(&c, &w) == 0, "%s", w.text);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_reload_keeps_previous_on_error)
{
	struct pm_config c, before;
	struct msgs e;
	char *good = write_temp("[collector]\nflush_interval = 3s\n");
	char *bad = write_temp("[collector]\nflush_interval = 4s\npoll_interval = x\n");

	ck_assert_int_eq(load_path(good, &c, &e), 0);
	memcpy(&before, &c, sizeof(c));
	ck_assert_int_lt(load_path(bad, &c, &e), 0);
	ck_assert_int_eq(memcmp(&before, &c, sizeof(c)), 0);
	ck_assert_uint_eq(c.flush_interval_ns, 3 * SEC);
	unlink(good);
	unlink(bad);
	free(good);
	free(bad);
}
END_TEST

/* ================================================== */
/* --check-config output */

static char *print_to_string(const struct pm_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	conf_print(f, c);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

static void assert_same_values(const struct pm_config *a, const struct pm_config *b)
{
	ck_assert_str_eq(a->shm_name, b->shm_name);
	ck_assert_uint_eq(a->capacity, b->capacity);
	ck_assert_uint_eq(a->max_names, b->max_names);
	ck_assert_uint_eq(a->mode, b->mode);
	ck_assert_str_eq(a->group, b->group);
	ck_assert_int_eq(a->cpu, b->cpu);
	ck_assert_uint_eq(a->poll_interval_ns, b->poll_interval_ns);
	ck_assert_uint_eq(a->flush_interval_ns, b->flush_interval_ns);
	ck_assert_uint_eq(a->stalled_sample_timeout_ns, b->stalled_sample_timeout_ns);
	ck_assert_uint_eq(a->max_open_spans, b->max_open_spans);
	ck_assert_uint_eq(a->max_stages, b->max_stages);
	ck_assert_int_eq(a->lock_memory, b->lock_memory);
	ck_assert_str_eq(a->csv, b->csv);
	ck_assert_str_eq(a->summary, b->summary);
	ck_assert_int_eq(a->unit, b->unit);
	ck_assert_int_eq(memcmp(&a->percentiles, &b->percentiles, sizeof(a->percentiles)), 0);
	ck_assert_int_eq(a->subtract_overhead, b->subtract_overhead);
	ck_assert_uint_eq(a->csv_flush_interval_ns, b->csv_flush_interval_ns);
	ck_assert_uint_eq(a->rotate_size, b->rotate_size);
	ck_assert_uint_eq(a->rotate_interval_ns, b->rotate_interval_ns);
	ck_assert_uint_eq(a->rotate_keep, b->rotate_keep);
	ck_assert_str_eq(a->prom_textfile, b->prom_textfile);
	ck_assert_int_eq(memcmp(&a->buckets, &b->buckets, sizeof(a->buckets)), 0);
}

/* What conf_print() wrote for `c`, `out`, loads back to the same values. */
static void assert_reads_back(const struct pm_config *c, const char *out)
{
	struct pm_config back;
	struct msgs e;
	char *path = write_temp(out);

	ck_assert_msg(load_path(path, &back, &e) == 0, "%s\n%s", e.text, out);
	assert_same_values(c, &back);
	unlink(path);
	free(path);
}

START_TEST(test_print)
{
	const char *cfg = data_path("manual-example.conf");
	struct pm_config c, back;
	struct pm_cmdline cl;
	struct msgs e;
	char err[512], want[4300], *out, *path;
	int ki;

	clear_env();
	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "--capacity", "1024",
				    "-i", "trading", cfg, NULL), 0);
	ck_assert_int_eq(conf_load(&cl, &c, &e), 0);
	out = print_to_string(&c);

	/* every key, each with where it came from */
	for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
		const char *name = conf_keys[ki].name;

		snprintf(want, sizeof(want), "\n%s = ", name);
		ck_assert_msg(strstr(out, want), "no %s in:\n%s", name, out);
	}
	ck_assert_ptr_nonnull(strstr(out, "\n[shm]\n"));
	ck_assert_ptr_nonnull(strstr(out, "\n[prometheus]\n"));
	ck_assert_ptr_nonnull(strstr(out, "capacity = 1024"));
	ck_assert_ptr_nonnull(strstr(out, "; from command line (--capacity)\n"));
	snprintf(want, sizeof(want), "max_names = 512                        ; from %s:4\n", cfg);
	ck_assert_msg(strstr(out, want), "want '%s' in:\n%s", want, out);
	ck_assert_ptr_nonnull(strstr(out, "percentiles = 50, 90, 99, 99.9"));
	ck_assert_ptr_nonnull(strstr(out, "mode = 0660"));
	ck_assert_ptr_nonnull(strstr(out, "cpu = 3"));
	ck_assert_ptr_nonnull(strstr(out, "buckets = 100ns, 1us, 10us, 100us, 1ms, 10ms, 100ms, 1s"));
	ck_assert_ptr_nonnull(strstr(out, "; instance: trading (from command line (--instance))"));
	ck_assert_ptr_nonnull(strstr(out, "; duration: 0 (from default (until signalled))"));
	snprintf(want, sizeof(want), "; config file: %s\n", cfg);
	ck_assert_ptr_nonnull(strstr(out, want));

	/* It reads back as a config file with the same values. */
	path = write_temp(out);
	ck_assert_msg(load_path(path, &back, &e) == 0, "%s\n%s", e.text, out);
	assert_same_values(&c, &back);
	unlink(path);
	free(path);
	free(out);

	/* A path long enough to push the origin comment past the line
	 * limit gets the comment on a line of its own. */
	{
		char longpath[181];
		struct pm_config lc;

		memset(longpath, 'x', sizeof(longpath) - 1);
		longpath[0] = '/';
		longpath[sizeof(longpath) - 1] = '\0';
		ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "-o", longpath, NULL), 0);
		ck_assert_int_eq(conf_load(&cl, &lc, &e), 0);
		out = print_to_string(&lc);
		snprintf(want, sizeof(want), "; csv: from command line (--csv)\ncsv = %s\n",
			 longpath);
		ck_assert_msg(strstr(out, want), "%s", out);
		path = write_temp(out);
		ck_assert_msg(load_path(path, &back, &e) == 0, "%s", e.text);
		ck_assert_str_eq(back.csv, longpath);
		unlink(path);
		free(path);
		free(out);
	}

	/* Defaults say so, and also read back. */
	ck_assert_int_eq(conf_load(NULL, &c, &e), 0);
	out = print_to_string(&c);
	ck_assert_ptr_nonnull(strstr(out, "; config file: none (built-in defaults)"));
	ck_assert_ptr_nonnull(strstr(out, "group =                                ; from default (the daemon's own group)\n"));
	ck_assert_ptr_nonnull(strstr(out, "cpu = none "));
	ck_assert_ptr_nonnull(strstr(out, "csv = perfmon.csv                      ; from default (current directory)\n"));
	ck_assert_ptr_nonnull(strstr(out, "textfile =                             ; from default\n"));
	ck_assert_ptr_nonnull(strstr(out, "buckets = 39ns, 42ns, 46ns,"));
	path = write_temp(out);
	ck_assert_msg(load_path(path, &back, &e) == 0, "%s\n%s", e.text, out);
	assert_same_values(&c, &back);
	unlink(path);
	free(path);
	free(out);
}
END_TEST

/* The most precise percentiles and the longest lists print as they read. */
START_TEST(test_print_extremes)
{
	struct pm_config c;
	struct msgs e;
	char *path, *out;

	path = write_temp("[output]\npercentiles = 1e-15, 12.345678901234567, "
			  "33.3333333333333333333, -0, 100\n");
	ck_assert_msg(load_path(path, &c, &e) == 0, "%s", e.text);
	unlink(path);
	free(path);
	out = print_to_string(&c);
	ck_assert_msg(strstr(out, "percentiles = 0.000000000000001, 12.345678901234567, ; from "),
		      "%s", out);
	ck_assert_msg(strstr(out, "\n    33.333333333333336, 0, 100\n"), "%s", out);
	assert_reads_back(&c, out);
	free(out);

	/* A list from a file whose path would push its origin past the line
	 * limit gets the comment above it, as any other key. */
	{
		char name[160], *longpath;
		FILE *f;

		memset(name, 'p', sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		longpath = scratch_path(name);
		ck_assert_ptr_nonnull(f = fopen(longpath, "w"));
		fputs("[output]\npercentiles = 50, 99\n", f);
		ck_assert_int_eq(fclose(f), 0);
		ck_assert_msg(load_path(longpath, &c, &e) == 0, "%s", e.text);
		out = print_to_string(&c);
		ck_assert_msg(strstr(out, "; percentiles: from "), "%s", out);
		assert_reads_back(&c, out);
		unlink(longpath);
		free(out);
	}

	path = bucket_file(256, 0);
	ck_assert_msg(load_path(path, &c, &e) == 0, "%s", e.text);
	unlink(path);
	free(path);
	out = print_to_string(&c);
	assert_reads_back(&c, out);
	free(out);
}
END_TEST

START_TEST(test_comma_locale)
{
	struct pm_config c;
	struct msgs e;
	char buf[64], *path, *out;
	bool have = scratch_comma_locale();

	if (!have) {
		fprintf(stderr, "# no comma-decimal locale could be set up; "
			"locale independence not exercised\n");
	} else {
		snprintf(buf, sizeof(buf), "%.1f", 0.5);
		ck_assert_str_eq(buf, "0,5");
	}
	ck_assert_int_eq(units_percentile_label(99.9, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "p99_9");
	ck_assert_int_eq(units_percentile_label(99.99999991, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "p99_99999991");

	path = write_temp("[output]\npercentiles = 12.5, 99.9\n[collector]\n"
			  "flush_interval = 1.5s\n");
	ck_assert_msg(load_path(path, &c, &e) == 0, "%s", e.text);
	ck_assert(c.percentiles.n == 2 && c.percentiles.p[0] == 12.5 &&
		  c.percentiles.p[1] == 99.9);
	ck_assert_uint_eq(c.flush_interval_ns, 1500 * MS);
	out = print_to_string(&c);
	ck_assert_msg(strstr(out, "percentiles = 12.5, 99.9 "), "%s", out);
	free(out);
	unlink(path);
	free(path);
	setlocale(LC_NUMERIC, "C");
}
END_TEST

/* ================================================== */
/* Command line */

START_TEST(test_cmdline_ok)
{
	struct pm_cmdline cl;
	char err[512];

	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), NULL), 0);
	ck_assert_ptr_null(cl.config_path);
	ck_assert_ptr_null(cl.instance);
	ck_assert(!cl.check_config && !cl.show_help && !cl.show_version && !cl.duration_set);

	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "-c", "/etc/p.conf",
				    "--check-config", NULL), 0);
	ck_assert_str_eq(cl.config_path, "/etc/p.conf");
	ck_assert(cl.check_config);

	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "--instance=trading",
				    "/etc/perfmond/trading.conf", NULL), 0);
	ck_assert_str_eq(cl.config_path, "/etc/perfmond/trading.conf");
	ck_assert_str_eq(cl.instance, "trading");

	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "-n", "ring1", "-o", "",
				    "-s", "/tmp/s.txt", "--cpu", "0", "--interval", "100ms",
				    "--capacity=64K", "--unit", "us", "--duration", "0",
				    "-V", "-h", NULL), 0);
	ck_assert_str_eq(cl.value[CONF_SHM_NAME], "ring1");
	ck_assert_str_eq(cl.value[CONF_OUTPUT_CSV], "");
	ck_assert_str_eq(cl.value[CONF_OUTPUT_SUMMARY], "/tmp/s.txt");
	ck_assert_str_eq(cl.value[CONF_COLLECTOR_CPU], "0");
	ck_assert_str_eq(cl.value[CONF_COLLECTOR_FLUSH_INTERVAL], "100ms");
	ck_assert_str_eq(cl.opt[CONF_COLLECTOR_FLUSH_INTERVAL], "--interval");
	ck_assert_str_eq(cl.value[CONF_SHM_CAPACITY], "64K");
	ck_assert_str_eq(cl.value[CONF_OUTPUT_UNIT], "us");
	ck_assert_ptr_null(cl.value[CONF_SHM_MAX_NAMES]);
	ck_assert(cl.duration_set && cl.duration_ns == 0);
	ck_assert(cl.show_version && cl.show_help);

	/* unique abbreviations are getopt's business and fine */
	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "--dur", "2s", NULL), 0);
	ck_assert_uint_eq(cl.duration_ns, 2 * SEC);
}
END_TEST

static const struct cmdline_bad {
	const char *args[6];
	const char *needle;
} cmdline_bad[] = {
	{ { "--bogus" }, "command line: unknown option '--bogus'" },
	{ { "-x" }, "command line: unknown option '-x'" },
	{ { "--check-config", "-xV" }, "command line: unknown option '-x'" },
	{ { "--capacity" }, "command line: option '--capacity' needs a value" },
	{ { "-c" }, "command line: option '-c' needs a value" },
	{ { "--c", "x" }, "option '--c' is ambiguous" },
	{ { "--check-config=yes" }, "option '--check-config' takes no value" },
	{ { "-c", "a.conf", "b.conf" }, "already given with --config 'a.conf'" },
	{ { "a.conf", "b.conf" }, "'b.conf': only one CONFIG-FILE argument" },
	{ { "-c", "" }, "--config: the file name is empty" },
	{ { "--capacity", "1000" }, "command line: --capacity 1000: must be a power of two (the nearest are 512 and 1024); allowed: a power of two from 64 to 1073741824" },
	{ { "--capacity", "lots" }, "command line: --capacity lots: not a number" },
	{ { "--unit", "parsecs" }, "command line: --unit parsecs: unknown unit; allowed: ns, us or cycles" },
	{ { "--interval", "5" }, "command line: --interval 5: a unit is required" },
	{ { "--interval", "0" }, "command line: --interval 0: too small" },
	{ { "--cpu", "x" }, "command line: --cpu x: not 'none' or a CPU number" },
	{ { "--shm", ".x" }, "command line: --shm .x: name starts with '.'" },
	{ { "-n", "" }, "command line: --shm \"\": name is empty" },
	{ { "-i", "a b" }, "command line: --instance a b: character 2 is not allowed" },
	{ { "--duration", "-1s" }, "command line: --duration -1s: must not be negative" },
	{ { "--duration", "10" }, "command line: --duration 10: a unit is required" },
};

START_TEST(test_cmdline_bad)
{
	const struct cmdline_bad *bc = &cmdline_bad[_i];
	struct pm_cmdline cl;
	char *argv[8], err[1024];
	int argc = 0, j;

	argv[argc++] = (char *)"perfmond";
	for (j = 0; j < 6 && bc->args[j]; j++)
		argv[argc++] = (char *)bc->args[j];
	argv[argc] = NULL;
	fill(&cl, sizeof(cl));
	ck_assert_int_eq(cmdline_parse(argc, argv, &cl, err, sizeof(err)), -EINVAL);
	ck_assert(untouched(&cl, sizeof(cl)));
	ck_assert_msg(strstr(err, bc->needle), "want '%s' in: %s", bc->needle, err);
	ck_assert_msg(strstr(err, "\nTry 'perfmond --help' for more information."),
		      "no --help pointer in: %s", err);
}
END_TEST

START_TEST(test_cmdline_long_name)
{
	struct pm_cmdline cl;
	char name[202], err[1024];

	memset(name, 'n', 200);
	name[200] = '\0';
	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "--shm", name, NULL), 0);
	name[200] = 'n';
	name[201] = '\0';
	ck_assert_int_eq(parse_args(&cl, err, sizeof(err), "--shm", name, NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "name is 201 characters long"));
}
END_TEST

START_TEST(test_usage_text)
{
	static const char *const options[] = {
		"-c, --config FILE", "-i, --instance NAME", "-n, --shm NAME",
		"-o, --csv PATH", "-s, --summary PATH", "--cpu N",
		"--interval DURATION", "--capacity N", "--unit UNIT",
		"--duration DURATION", "--check-config", "-V, --version", "-h, --help",
	};
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&buf, &len);

	cmdline_usage(f);
	cmdline_version(f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "Usage: perfmond [OPTIONS] [CONFIG-FILE]"));
	for (i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		ck_assert_msg(strstr(buf, options[i]), "no '%s' in --help", options[i]);
	ck_assert_ptr_nonnull(strstr(buf, "perfmond " PACKAGE_VERSION "\n"));
	free(buf);
}
END_TEST

START_TEST(test_check_option)
{
	char err[1024];

	ck_assert_int_eq(conf_check_option(CONF_SHM_CAPACITY, "--capacity", "65536",
					   err, sizeof(err)), 0);
	ck_assert_int_lt(conf_check_option(CONF_OUTPUT_UNIT, "--unit", "hours",
					   err, sizeof(err)), 0);
	ck_assert_str_eq(err, "command line: --unit hours: unknown unit; allowed: "
			 "ns, us or cycles");
}
END_TEST

/* ================================================== */
/* Reload */

START_TEST(test_reload_diff)
{
	struct pm_config old, new, run, alias;
	struct conf_reload r;
	struct msgs e;
	char *path;
	int ki;

	clear_env();
	ck_assert_int_eq(conf_load(NULL, &old, &e), 0);
	path = write_temp("[shm]\ncapacity = 131072\nname = other\n"
			  "[collector]\nflush_interval = 2s\ncpu = 0\nlock_memory = yes\n"
			  "[output]\ncsv = /tmp/new.csv\nunit = us\npercentiles = 50, 99\n"
			  "rotate_size = 1M\nsubtract_overhead = yes\n"
			  "[prometheus]\ntextfile = /tmp/p.prom\n");
	ck_assert_int_eq(load_path(path, &new, &e), 0);

	conf_diff_live(&old, &new, &run, &r);
	ck_assert_uint_eq(r.applied, CONF_KEY_BIT(CONF_COLLECTOR_FLUSH_INTERVAL) |
			  CONF_KEY_BIT(CONF_COLLECTOR_CPU) | CONF_KEY_BIT(CONF_OUTPUT_CSV) |
			  CONF_KEY_BIT(CONF_OUTPUT_ROTATE_SIZE) |
			  CONF_KEY_BIT(CONF_PROMETHEUS_TEXTFILE));
	ck_assert_uint_eq(r.kept, CONF_KEY_BIT(CONF_SHM_CAPACITY) |
			  CONF_KEY_BIT(CONF_SHM_NAME) | CONF_KEY_BIT(CONF_COLLECTOR_LOCK_MEMORY) |
			  CONF_KEY_BIT(CONF_OUTPUT_UNIT) | CONF_KEY_BIT(CONF_OUTPUT_PERCENTILES) |
			  CONF_KEY_BIT(CONF_OUTPUT_SUBTRACT_OVERHEAD));
	ck_assert_uint_eq(r.msgs.count, 11);

	/* live values are new, the rest old, each with its own origin */
	ck_assert_uint_eq(run.flush_interval_ns, 2 * SEC);
	ck_assert_int_eq(run.origin[CONF_COLLECTOR_FLUSH_INTERVAL].source, CONF_SRC_FILE);
	ck_assert_int_eq(run.cpu, 0);
	ck_assert_str_eq(run.csv, "/tmp/new.csv");
	ck_assert_str_eq(run.prom_textfile, "/tmp/p.prom");
	ck_assert_uint_eq(run.rotate_size, 1 << 20);
	ck_assert_uint_eq(run.capacity, 65536);
	ck_assert_int_eq(run.origin[CONF_SHM_CAPACITY].source, CONF_SRC_DEFAULT);
	ck_assert_str_eq(run.shm_name, "perfmon");
	ck_assert(!run.lock_memory && !run.subtract_overhead);
	ck_assert_int_eq(run.unit, REPORT_UNIT_NS);
	ck_assert_uint_eq(run.percentiles.n, 4);
	ck_assert_msg(strstr(r.msgs.text, "[shm] capacity = 131072 (from "), "%s", r.msgs.text);
	ck_assert_msg(strstr(r.msgs.text, ":2): cannot change while perfmond runs; "
			     "keeping 65536 until it restarts"), "%s", r.msgs.text);
	ck_assert_msg(strstr(r.msgs.text, "[collector] flush_interval = 2s (from "),
		      "%s", r.msgs.text);
	ck_assert_msg(strstr(r.msgs.text, "applied; was 1s"), "%s", r.msgs.text);
	ck_assert_msg(strstr(r.msgs.text, "[output] percentiles = 50, 99"), "%s", r.msgs.text);

	/* The result is the same whether ret_run is old, new or neither. */
	memcpy(&alias, &old, sizeof(old));
	conf_diff_live(&alias, &new, &alias, &r);
	ck_assert_int_eq(memcmp(&alias, &run, sizeof(run)), 0);
	memcpy(&alias, &new, sizeof(new));
	conf_diff_live(&old, &alias, &alias, &r);
	ck_assert_int_eq(memcmp(&alias, &run, sizeof(run)), 0);

	/* Nothing changed, nothing to say. */
	conf_diff_live(&old, &old, &run, &r);
	ck_assert_uint_eq(r.applied | r.kept, 0);
	ck_assert_uint_eq(r.msgs.count, 0);

	/* The classification itself. */
	for (ki = 0; ki < CONF_KEY_COUNT; ki++) {
		bool live = ki == CONF_COLLECTOR_CPU || ki == CONF_COLLECTOR_POLL_INTERVAL ||
			ki == CONF_COLLECTOR_FLUSH_INTERVAL ||
			ki == CONF_COLLECTOR_STALLED_SAMPLE_TIMEOUT ||
			ki == CONF_OUTPUT_CSV || ki == CONF_OUTPUT_SUMMARY ||
			ki == CONF_OUTPUT_CSV_FLUSH_INTERVAL || ki == CONF_OUTPUT_ROTATE_SIZE ||
			ki == CONF_OUTPUT_ROTATE_INTERVAL || ki == CONF_OUTPUT_ROTATE_KEEP ||
			ki == CONF_PROMETHEUS_TEXTFILE;

		/* buckets: counted exactly by the drain thread from the start */
		ck_assert_int_eq(conf_keys[ki].live, live);
	}
	unlink(path);
	free(path);
}
END_TEST

/* Lists are compared by their values, however long their text. */
START_TEST(test_reload_long_list)
{
	struct pm_config old, new, run;
	struct conf_reload r;
	struct msgs e;
	char *a = bucket_file(256, 0), *b = bucket_file(256, 7);

	ck_assert_msg(load_path(a, &old, &e) == 0, "%s", e.text);
	ck_assert_msg(load_path(b, &new, &e) == 0, "%s", e.text);
	conf_diff_live(&old, &new, &run, &r);
	ck_assert_uint_eq(r.applied, 0);
	ck_assert_uint_eq(r.kept, CONF_KEY_BIT(CONF_PROMETHEUS_BUCKETS));
	ck_assert_uint_eq(r.msgs.count, 1);
	ck_assert_uint_eq(r.msgs.dropped, 0);
	ck_assert(!strncmp(r.msgs.text, "[prometheus] buckets = 86000000000001ns, ", 41));
	ck_assert_ptr_nonnull(strstr(r.msgs.text, ", 86000255000263ns (from "));
	ck_assert_ptr_nonnull(strstr(r.msgs.text, ", 86000255000256ns until it restarts\n"));
	ck_assert_int_eq(memcmp(&run.buckets, &old.buckets, sizeof(old.buckets)), 0);
	unlink(a);
	unlink(b);
	free(a);
	free(b);
}
END_TEST

static Suite *conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc;

	tc = tcase_create("load");
	tcase_add_unchecked_fixture(tc, setup_scratch, scratch_remove);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_logs_directory);
	tcase_add_test(tc, test_manual_example);
	tcase_add_test(tc, test_machine_check_example);
	tcase_add_test(tc, test_machine_check);
	tcase_add_test(tc, test_resolve_group);
	tcase_add_test(tc, test_precedence);
	tcase_add_test(tc, test_units_in_file);
	tcase_add_test(tc, test_indented_crlf_bom);
	tcase_add_test(tc, test_list_continuation);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_unchecked_fixture(tc, setup_scratch, scratch_remove);
	tcase_add_loop_test(tc, test_bad_matrix, 0,
			    (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	tcase_add_test(tc, test_several_errors);
	tcase_add_test(tc, test_unreadable);
	tcase_add_test(tc, test_long_lines);
	tcase_add_test(tc, test_bucket_limit);
	tcase_add_test(tc, test_reload_keeps_previous_on_error);
	tcase_add_test(tc, test_outliers_without_csv);
	suite_add_tcase(s, tc);

	tc = tcase_create("print");
	tcase_add_unchecked_fixture(tc, setup_scratch, scratch_remove);
	tcase_add_test(tc, test_print);
	tcase_add_test(tc, test_print_extremes);
	tcase_add_test(tc, test_comma_locale);
	tcase_set_timeout(tc, 20);
	suite_add_tcase(s, tc);

	tc = tcase_create("cmdline");
	tcase_add_unchecked_fixture(tc, setup_scratch, scratch_remove);
	tcase_add_test(tc, test_cmdline_ok);
	tcase_add_loop_test(tc, test_cmdline_bad, 0,
			    (int)(sizeof(cmdline_bad) / sizeof(cmdline_bad[0])));
	tcase_add_test(tc, test_cmdline_long_name);
	tcase_add_test(tc, test_usage_text);
	tcase_add_test(tc, test_check_option);
	suite_add_tcase(s, tc);

	tc = tcase_create("reload");
	tcase_add_unchecked_fixture(tc, setup_scratch, scratch_remove);
	tcase_add_test(tc, test_reload_diff);
	tcase_add_test(tc, test_reload_long_list);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(conf_suite());
}
