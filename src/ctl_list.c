/*
 * ctl_list.c - `perfmonctl list`: one row per instance found in /dev/shm,
 * with its collector's state and pid, uptime, current event rate, dropped
 * events and the number of live producers.  Whether a collector is alive
 * is decided by ctl_status_snapshot(), the same test `status` uses.
 */
#include "build-config.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_cli.h"
#include "ctl_json.h"
#include "ctl_list.h"
#include "ctl_producers.h"
#include "ctl_status.h"
#include "ctl_table.h"
#include "ctl_text.h"

#define LIST_RATE_WINDOW_NS 250000000L

struct list_row {
	char name[PERFMON_NAME_MAX + 1];
	bool usable;                 /* segments opened and validated */
	char why[256];               /* when not usable */
	struct ctl_collector c;
	double rate;
	bool have_rate;
	unsigned producers;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_row(const void *a, const void *b)
{
	return strcmp(((const struct list_row *)a)->name, ((const struct list_row *)b)->name);
}

/* NAME for every /dev/shm/NAME.meta whose NAME is a valid instance name
 * and whose ring /dev/shm/NAME exists too. */
static int find_instances(struct list_row **ret, size_t *ret_n)
{
	struct list_row *rows = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d;
	DIR *dir = opendir("/dev/shm");

	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((d = readdir(dir))) {
		char obj[PERFMON_NAME_MAX + 8], ring[PERFMON_NAME_MAX + 16];
		size_t len = strlen(d->d_name);
		if (len <= 5 || strcmp(d->d_name + len - 5, ".meta") != 0 ||
		    len - 5 > PERFMON_NAME_MAX)
			continue;
		if (n == cap) {
			struct list_row *r = realloc(rows, (cap ? cap * 2 : 16) * sizeof(*r));
			if (!r) {
				free(rows);
				closedir(dir);
				return -ENOMEM;
			}
			rows = r;
			cap = cap ? cap * 2 : 16;
		}
		memset(&rows[n], 0, sizeof(rows[n]));
		memcpy(rows[n].name, d->d_name, len - 5);
		rows[n].name[len - 5] = '\0';
		snprintf(ring, sizeof(ring), "/dev/shm/%s", rows[n].name);
		if (shm_object_name(rows[n].name, "", obj, sizeof(obj)) < 0 ||
		    access(ring, F_OK) < 0)
			continue;
		n++;
	}
	closedir(dir);
	if (n)   /* rows may be NULL when there is none */
		qsort(rows, n, sizeof(*rows), cmp_row);
	*ret = rows;
	*ret_n = n;
	return 0;
}

/* Status and producers of every row; the rate from two looks, one window
 * apart for all instances at once. */
static void look(struct list_row *rows, size_t n)
{
	struct ctl_producer prods[PERFMON_MAX_PRODUCERS];
	uint64_t *first = calloc(n ? n : 1, sizeof(*first));
	uint64_t t0, t1;
	bool any_alive = false;

	for (size_t i = 0; i < n; i++) {
		struct shm_instance inst;
		if (shm_open_existing(rows[i].name, false, &inst, rows[i].why,
				      sizeof(rows[i].why)) < 0) {
			if (!rows[i].why[0])
				snprintf(rows[i].why, sizeof(rows[i].why), "cannot open");
			continue;
		}
		rows[i].usable = true;
		ctl_status_snapshot(&inst, &rows[i].c);
		rows[i].producers = ctl_producers_read(&inst, prods);
		shm_close(&inst);
		if (first)
			first[i] = rows[i].c.drained;
		any_alive |= rows[i].c.alive;
	}
	if (!any_alive || !first) {
		free(first);
		return;
	}
	t0 = mono_ns();
	nanosleep(&(struct timespec){ 0, LIST_RATE_WINDOW_NS }, NULL);
	for (size_t i = 0; i < n; i++) {
		struct shm_instance inst;
		struct ctl_collector c2;
		char msg[256];
		if (!rows[i].usable || !rows[i].c.alive ||
		    shm_open_existing(rows[i].name, false, &inst, msg, sizeof(msg)) < 0)
			continue;
		ctl_status_snapshot(&inst, &c2);
		shm_close(&inst);
		t1 = mono_ns();
		if (c2.alive && c2.pid == rows[i].c.pid && c2.drained >= first[i]) {
			rows[i].rate = (double)(c2.drained - first[i]) * 1e9 / (double)(t1 - t0);
			rows[i].have_rate = true;
			rows[i].c = c2;
		}
	}
	free(first);
}

static const char *row_state(const struct list_row *r)
{
	if (!r->usable)
		return "unusable";
	if (r->c.alive)
		return "alive";
	if (r->c.state == PERFMON_COLLECTOR_NONE)
		return "never-started";
	if (r->c.state == PERFMON_COLLECTOR_STOPPED)
		return "stopped";
	return r->c.process_exists ? "not-responding" : "dead";
}

static int print_json(FILE *out, const struct list_row *rows, size_t n)
{
	struct ctl_json j;

	ctl_json_init(&j, out);
	ctl_json_object_begin(&j);
	ctl_json_key(&j, "instances");
	ctl_json_array_begin(&j);
	for (size_t i = 0; i < n; i++) {
		const struct list_row *r = &rows[i];
		ctl_json_object_begin(&j);
		ctl_json_kv_string(&j, "name", r->name);
		ctl_json_kv_string(&j, "state", row_state(r));
		ctl_json_kv_bool(&j, "alive", r->usable && r->c.alive);
		if (!r->usable) {
			ctl_json_kv_string(&j, "error", r->why);
			ctl_json_object_end(&j);
			continue;
		}
		ctl_json_kv_u64(&j, "pid", r->c.pid);
		ctl_json_key(&j, "uptime_s");
		if (r->c.alive && r->c.uptime_s >= 0)
			ctl_json_double(&j, r->c.uptime_s);
		else
			ctl_json_null(&j);
		ctl_json_key(&j, "events_per_s");
		if (r->have_rate)
			ctl_json_double(&j, r->rate);
		else
			ctl_json_null(&j);
		ctl_json_kv_u64(&j, "events_drained", r->c.drained);
		ctl_json_kv_u64(&j, "dropped", r->c.dropped);
		ctl_json_kv_u64(&j, "producers", r->producers);
		ctl_json_object_end(&j);
	}
	ctl_json_array_end(&j);
	ctl_json_object_end(&j);
	return ctl_json_finish(&j);
}

static int print_table(FILE *out, enum ctl_format fmt, const struct list_row *rows, size_t n)
{
	static const char *const cols[] = {
		"name", "state", "pid", "uptime", "events/s", "dropped", "producers",
	};
	static const char *const csv_cols[] = {
		"name", "state", "pid", "uptime_s", "events_per_s", "dropped", "producers",
	};
	struct ctl_table *t = ctl_table_new();
	int e;

	if (!t)
		return -ENOMEM;
	for (unsigned i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		ctl_table_add_column(t, fmt == CTL_FORMAT_CSV ? csv_cols[i] : cols[i],
				     i < 2 ? CTL_ALIGN_LEFT : CTL_ALIGN_RIGHT, i == 0);
	for (size_t i = 0; i < n; i++) {
		const struct list_row *r = &rows[i];
		char buf[64];
		ctl_table_add_row(t);
		ctl_table_set(t, 0, r->name);
		ctl_table_set(t, 1, row_state(r));
		if (!r->usable)
			continue;
		if (r->c.pid)
			ctl_table_setf(t, 2, "%u", r->c.pid);
		if (r->c.alive && r->c.uptime_s >= 0) {
			if (fmt == CTL_FORMAT_CSV)
				ctl_table_setf(t, 3, "%.3f", r->c.uptime_s);
			else {
				ctl_fmt_age(r->c.uptime_s, buf, sizeof(buf));
				ctl_table_set(t, 3, buf);
			}
		}
		if (r->have_rate) {
			if (fmt == CTL_FORMAT_CSV)
				ctl_table_setf(t, 4, "%.1f", r->rate);
			else {
				ctl_fmt_si(r->rate, buf, sizeof(buf));
				ctl_table_set(t, 4, buf);
			}
		}
		ctl_table_setf(t, 5, "%llu", (unsigned long long)r->c.dropped);
		ctl_table_setf(t, 6, "%u", r->producers);
	}
	e = ctl_table_print(t, out, fmt, fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0);
	ctl_table_free(t);
	if (e >= 0 && fmt == CTL_FORMAT_LIVE && n == 0)
		fprintf(out, "no perfmond instance on this host (no segments in /dev/shm)\n");
	return e;
}

int ctl_list_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = NULL;
	struct list_row *rows = NULL;
	enum ctl_format fmt;
	size_t n = 0;
	int c, e;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'F')
			return ctl_usage_error(err, argv[0], "unknown option '%s'",
					       argv[optind - 1]);
		format = optarg;
	}
	if (optind < argc)
		return ctl_usage_error(err, argv[0], "unexpected argument '%s'", argv[optind]);
	if (ctl_cli_format_json(format, &fmt, err, argv[0]) < 0)
		return CTL_EXIT_FAILURE;
	if ((e = find_instances(&rows, &n)) < 0) {
		fprintf(err, "perfmonctl list: cannot read /dev/shm: %s\n", strerror(-e));
		return CTL_EXIT_FAILURE;
	}
	look(rows, n);
	for (size_t i = 0; i < n; i++)
		if (!rows[i].usable)
			fprintf(err, "perfmonctl list: %s: %s\n", rows[i].name, rows[i].why);
	e = fmt == CTL_FORMAT_JSON ? print_json(out, rows, n) : print_table(out, fmt, rows, n);
	free(rows);
	if (e < 0) {
		fprintf(err, "perfmonctl list: cannot write the output\n");
		return CTL_EXIT_FAILURE;
	}
	return CTL_EXIT_OK;
}
