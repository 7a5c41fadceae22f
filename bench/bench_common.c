/*
 * bench_common.c - timer loop, repetitions, counters, machine and noise
 * description, pinning and table output shared by the benchmarks in
 * bench/.
 *
 * Place in the data flow: outside it; see bench_common.h.  Everything here
 * runs between measured regions, never inside one: counters are read and
 * rows are printed only once a repetition's timer has stopped.
 */
#include "build-config.h"

#include "bench_common.h"

#include <ctype.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"
#include "tsc.h"

/* ---- Counters ------------------------------------------------------------ */

void bench_counters_init(struct bench_counters *cs)
{
	memset(cs, 0, sizeof(*cs));
}

int bench_counter_add(struct bench_counters *cs, const char *name, uint32_t type,
		      uint64_t config)
{
	struct perf_event_attr attr;
	struct bench_counter *c;
	long fd;

	if (cs->n == BENCH_MAX_COUNTERS)
		return -E2BIG;
	c = &cs->c[cs->n++];
	c->name = name;
	c->type = type;
	c->config = config;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config = config;
	/* User space only: the stamp never enters the kernel, and a kernel
	 * entry (a timer interrupt) must not be charged to it. */
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	/* Enabled and running times tell whether the counter was
	 * multiplexed: then its count is partial and is not used. */
	attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		c->fd = -1;
		c->err = errno;
		return -c->err;
	}
	c->fd = (int)fd;
	c->err = 0;
	return 0;
}

/* A core PMU shows up as "cpu" (or "cpu_core"/"cpu_atom" on hybrid parts). */
static bool bench_have_core_pmu(void)
{
	static const char *const dirs[] = {
		"/sys/bus/event_source/devices/cpu",
		"/sys/bus/event_source/devices/cpu_core",
		"/sys/bus/event_source/devices/cpu_atom",
	};
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (access(dirs[i], F_OK) == 0)
			return true;
	return false;
}

static int bench_read_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = 99;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 99;
		fclose(f);
	}
	return v;
}

void bench_counter_why(const struct bench_counter *c, char *buf, size_t len)
{
	const char *why;
	int paranoid;

	switch (c->err) {
	case 0:
		snprintf(buf, len, "open");
		return;
	case ENOENT:
		why = bench_have_core_pmu()
			? "this CPU's PMU has no such generic event"
			: "no hardware PMU is exposed to this kernel "
			  "(/sys/bus/event_source/devices has no cpu PMU; "
			  "typical of a VM without a virtual PMU)";
		break;
	case EACCES:
	case EPERM:
		paranoid = bench_read_paranoid();
		snprintf(buf, len,
			 "perf_event_open: %s (errno %d): not permitted with "
			 "kernel.perf_event_paranoid = %d; run with CAP_PERFMON or set it "
			 "to 2 or lower", strerror(c->err), c->err, paranoid);
		return;
	case ENOSYS:
		why = "the kernel has no perf events (CONFIG_PERF_EVENTS) or a seccomp "
		      "filter blocks the call";
		break;
	case EOPNOTSUPP:
		why = "the PMU cannot count this event in user-only mode";
		break;
	case ENODEV:
		why = "no PMU for this event type";
		break;
	case EBUSY:
		why = "the PMU is held exclusively by another user";
		break;
	case EINVAL:
		why = "the kernel rejected the event attributes";
		break;
	case EMFILE:
		why = "too many open files";
		break;
	default:
		why = "unexpected failure";
		break;
	}
	snprintf(buf, len, "perf_event_open: %s (errno %d): %s", strerror(c->err), c->err, why);
}

void bench_counters_read(const struct bench_counters *cs, struct bench_counter_snap *snap)
{
	unsigned i;

	memset(snap, 0, sizeof(*snap));
	for (i = 0; i < cs->n; i++) {
		uint64_t v[3];

		if (cs->c[i].fd < 0)
			continue;
		if (read(cs->c[i].fd, v, sizeof(v)) != (ssize_t)sizeof(v))
			continue;
		snap->value[i] = v[0];
		snap->enabled[i] = v[1];
		snap->running[i] = v[2];
		snap->ok[i] = true;
	}
}

bool bench_counter_delta(const struct bench_counter_snap *a, const struct bench_counter_snap *b,
			 unsigned i, uint64_t *ret_count)
{
	uint64_t en, run;

	if (i >= BENCH_MAX_COUNTERS || !a->ok[i] || !b->ok[i] || b->value[i] < a->value[i])
		return false;
	en = b->enabled[i] - a->enabled[i];
	run = b->running[i] - a->running[i];
	if (en == 0 || run != en)
		return false;
	*ret_count = b->value[i] - a->value[i];
	return true;
}

void bench_counters_close(struct bench_counters *cs)
{
	unsigned i;

	for (i = 0; i < cs->n; i++)
		if (cs->c[i].fd >= 0) {
			close(cs->c[i].fd);
			cs->c[i].fd = -1;
		}
}

/* ---- Repetitions --------------------------------------------------------- */

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void bench_min_median(double *v, size_t n, double *ret_min, double *ret_median)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	*ret_min = v[0];
	*ret_median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static bool bench_stopped(const struct bench_run *run)
{
	return run->stop && *run->stop;
}

int bench_run_reps(const struct bench_run *run, bench_loop_fn fn, void *arg,
		   struct bench_result *res)
{
	struct bench_counter_snap before, after;
	unsigned i, k;
	int ret = 0;

	res->done = 0;
	res->min = res->median = 0.0;
	res->base_min = res->base_median = 0.0;
	memset(res->count, 0, sizeof(res->count));
	memset(res->count_reps, 0, sizeof(res->count_reps));

	for (i = 0; i < run->warmup; i++) {
		if (run->before_rep)
			run->before_rep(run->before_rep_ctx);
		if (bench_stopped(run))
			return -EINTR;
		fn(run->iters, arg);
	}
	for (i = 0; i < run->reps; i++) {
		uint64_t t0, t1;

		if (run->before_rep)
			run->before_rep(run->before_rep_ctx);
		if (bench_stopped(run)) {
			ret = -EINTR;
			break;
		}
		if (run->baseline) {
			t0 = bench_tsc_start();
			run->baseline(run->iters, arg);
			t1 = bench_tsc_stop();
			res->base_per_iter[res->done] = (double)(t1 - t0) / (double)run->iters;
		}
		if (run->counters)
			bench_counters_read(run->counters, &before);
		t0 = bench_tsc_start();
		fn(run->iters, arg);
		t1 = bench_tsc_stop();
		if (run->counters) {
			bench_counters_read(run->counters, &after);
			for (k = 0; k < run->counters->n; k++) {
				uint64_t d;

				if (bench_counter_delta(&before, &after, k, &d)) {
					res->count[k] += d;
					res->count_reps[k]++;
				}
			}
		}
		res->per_iter[res->done++] = (double)(t1 - t0) / (double)run->iters;
	}
	if (res->done) {
		bench_min_median(res->per_iter, res->done, &res->min, &res->median);
		if (run->baseline)
			bench_min_median(res->base_per_iter, res->done, &res->base_min,
					 &res->base_median);
	}
	return ret;
}

/* ---- Machine ------------------------------------------------------------- */

/* Copy the first line of `path` without its newline; "" if unreadable. */
static void bench_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* Value of the first "key<blanks>: value" line of /proc/cpuinfo. */
static bool bench_cpuinfo(const char *key, char *buf, size_t len)
{
	char line[512];
	size_t klen = strlen(key);
	bool found = false;
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *v = line + klen;

		if (strncmp(line, key, klen) != 0)
			continue;
		/* "model" must not match "model name": only blanks may follow. */
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v != ':')
			continue;
		for (v++; *v == ' ' || *v == '\t'; v++)
			;
		v[strcspn(v, "\n")] = '\0';
		snprintf(buf, len, "%s", v);
		found = true;
		break;
	}
	fclose(f);
	return found;
}

void bench_machine_probe(struct bench_machine *m, unsigned calibrate_ms)
{
	char model[96] = "", family[16] = "", mnum[16] = "";
	struct tsc_clock clk;
	struct utsname u;
	struct tm tm;
	cpu_set_t set;
	time_t now;

	memset(m, 0, sizeof(*m));
	now = time(NULL);
	if (localtime_r(&now, &tm))
		strftime(m->date, sizeof(m->date), "%Y-%m-%d %H:%M:%S %z", &tm);

	if (!bench_cpuinfo("model name", model, sizeof(model)))
		snprintf(model, sizeof(model), "unknown");
	if (bench_cpuinfo("cpu family", family, sizeof(family)) &&
	    bench_cpuinfo("model", mnum, sizeof(mnum)))
		snprintf(m->cpu_model, sizeof(m->cpu_model), "%s (family %s, model %s)",
			 model, family, mnum);
	else
		snprintf(m->cpu_model, sizeof(m->cpu_model), "%s", model);

	m->cpus_online = sysconf(_SC_NPROCESSORS_ONLN);
	CPU_ZERO(&set);
	m->cpus_allowed = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : -1;

	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof(m->kernel), "%s %s %s", u.sysname, u.release,
			 u.machine);
	bench_read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
			m->clocksource, sizeof(m->clocksource));
#if defined(__clang__)
	snprintf(m->compiler, sizeof(m->compiler), "clang %s", __clang_version__);
#elif defined(__GNUC__)
	snprintf(m->compiler, sizeof(m->compiler), "gcc %s", __VERSION__);
#else
	snprintf(m->compiler, sizeof(m->compiler), "unknown");
#endif

	m->tsc_calibrate_ms = calibrate_ms;
	tsc_clock_start(&clk, calibrate_ms);
	m->tsc_hz = tsc_clock_hz(&clk);
	m->tsc_invariant = tsc_invariant();
}

void bench_machine_print(FILE *out, enum bench_format fmt, const struct bench_machine *m)
{
	bench_note(out, fmt, "date: %s", m->date);
	bench_note(out, fmt, "cpu: %s; %ld online, %d usable by this process", m->cpu_model,
		   m->cpus_online, m->cpus_allowed);
	bench_note(out, fmt, "tsc: %.2f MHz (measured against CLOCK_MONOTONIC_RAW over %u ms), %s; "
		   "clocksource %s; 1 tick = %.3f ns", m->tsc_hz / 1e6, m->tsc_calibrate_ms,
		   m->tsc_invariant ? "invariant" : "NOT invariant",
		   m->clocksource[0] ? m->clocksource : "unknown",
		   m->tsc_hz > 0 ? 1e9 / m->tsc_hz : 0.0);
	bench_note(out, fmt, "kernel: %s; compiler: %s", m->kernel[0] ? m->kernel : "unknown",
		   m->compiler);
}

/* ---- Noise --------------------------------------------------------------- */

static bool bench_proc_stat(uint64_t *ret_busy, uint64_t *ret_steal)
{
	unsigned long long user, nice, sys, idle, iowait, irq, softirq, steal;
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return false;
	/* The first line sums every CPU. */
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &sys, &idle,
		   &iowait, &irq, &softirq, &steal);
	fclose(f);
	if (n != 8)
		return false;
	*ret_busy = user + nice + sys + irq + softirq;
	*ret_steal = steal;
	return true;
}

static uint64_t bench_self_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
	       (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
}

static uint64_t bench_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_noise_start(struct bench_noise *n)
{
	n->ok = bench_proc_stat(&n->busy_ticks, &n->steal_ticks);
	n->self_us = bench_self_us();
	n->wall_ns = bench_mono_ns();
}

bool bench_noise_since(const struct bench_noise *start, double *ret_foreign_ms,
		       double *ret_steal_ms, double *ret_wall_ms)
{
	struct bench_noise now;
	double tick_ms, foreign;
	long hz = sysconf(_SC_CLK_TCK);

	bench_noise_start(&now);
	*ret_wall_ms = (double)(now.wall_ns - start->wall_ns) / 1e6;
	if (!start->ok || !now.ok || hz <= 0)
		return false;
	tick_ms = 1000.0 / (double)hz;
	foreign = (double)(now.busy_ticks - start->busy_ticks) * tick_ms -
		  (double)(now.self_us - start->self_us) / 1000.0;
	/* Our own time is exact, the system's is in whole ticks: a small
	 * negative difference is rounding and reads as none. */
	*ret_foreign_ms = foreign > 0 ? foreign : 0.0;
	*ret_steal_ms = (double)(now.steal_ticks - start->steal_ticks) * tick_ms;
	return true;
}

/* ---- CPUs ---------------------------------------------------------------- */

int bench_pin_thread(pthread_t th, int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_setaffinity_np(th, sizeof(set), &set);
}

int bench_default_cpus(int *ret_measured, int *ret_helper)
{
	int cpu, first = -1, second = -1, n = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -errno;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (first < 0)
			first = cpu;
		else if (second < 0)
			second = cpu;
		n++;
	}
	if (first < 0)
		return -ENODEV;
	*ret_helper = first;
	*ret_measured = second >= 0 ? second : first;
	return n;
}

/* ---- Leftovers ------------------------------------------------------------ */

#define LEFTOVERS_MAX 32

static char leftovers[LEFTOVERS_MAX][320];
static volatile sig_atomic_t nleftovers;
static volatile pid_t leftover_pid;

/* Only what a signal handler may do: kill, waitpid, unlink, raise. */
static void leftovers_signal(int sig)
{
	pid_t pid = leftover_pid;

	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	for (sig_atomic_t i = 0; i < nleftovers; i++)
		unlink(leftovers[i]);
	signal(sig, SIG_DFL);
	raise(sig);
}

void bench_leave_nothing(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = leftovers_signal;
	sigfillset(&sa.sa_mask);   /* one cleanup, whatever comes next */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

int bench_leftover_file(const char *path)
{
	sig_atomic_t n = nleftovers;

	for (sig_atomic_t i = 0; i < n; i++)
		if (!strcmp(leftovers[i], path))
			return 0;
	if (n == LEFTOVERS_MAX || strlen(path) >= sizeof(leftovers[0]))
		return -ENOSPC;
	memcpy(leftovers[n], path, strlen(path) + 1);
	nleftovers = n + 1;   /* published after the path is whole */
	return 0;
}

int bench_leftover_shm(const char *name)
{
	static const char *const suffixes[] = { "", ".meta" };
	char obj[256], path[320];
	int e;

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		if ((e = shm_object_name(name, suffixes[i], obj, sizeof(obj))) < 0)
			return e;
		snprintf(path, sizeof(path), "/dev/shm%s", obj);
		if ((e = bench_leftover_file(path)) < 0)
			return e;
	}
	return 0;
}

void bench_leftover_child(pid_t pid)
{
	leftover_pid = pid;
}

/* ---- Output -------------------------------------------------------------- */

int bench_format_parse(const char *s, enum bench_format *ret)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "live") == 0)
		*ret = BENCH_FORMAT_LIVE;
	else if (strcmp(s, "md") == 0)
		*ret = BENCH_FORMAT_MD;
	else if (strcmp(s, "csv") == 0)
		*ret = BENCH_FORMAT_CSV;
	else
		return -EINVAL;
	return 0;
}

int bench_format_from_env(enum bench_format *ret)
{
	const char *s = getenv("PERFMON_FORMAT");

	if (!s || !s[0]) {
		*ret = BENCH_FORMAT_LIVE;
		return 0;
	}
	return bench_format_parse(s, ret);
}

void bench_heading(FILE *out, enum bench_format fmt, const char *title)
{
	switch (fmt) {
	case BENCH_FORMAT_LIVE:
		fprintf(out, "\n== %s ==\n", title);
		break;
	case BENCH_FORMAT_MD:
		fprintf(out, "\n## %s\n\n", title);
		break;
	case BENCH_FORMAT_CSV:
		fprintf(out, "# %s\n", title);
		break;
	}
	fflush(out);
}

void bench_note(FILE *out, enum bench_format fmt, const char *f, ...)
{
	va_list ap;

	fputs(fmt == BENCH_FORMAT_MD ? "- " : fmt == BENCH_FORMAT_CSV ? "# " : "", out);
	va_start(ap, f);
	vfprintf(out, f, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
}

/* RFC 4180: quote a field holding a separator, a quote or a line break. */
static void bench_csv_field(FILE *out, const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")] && !(s[0] == ' ' || (s[0] && s[strlen(s) - 1] == ' '))) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

/* Markdown cells cannot hold a bare '|'. */
static void bench_md_field(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', out);
		fputc(*s, out);
	}
}

static void bench_live_field(FILE *out, const struct bench_column *c, const char *s, bool last)
{
	if (c->left && last)
		fputs(s, out);
	else
		fprintf(out, c->left ? "%-*s" : "%*s", c->width, s);
}

static void bench_emit_row(const struct bench_table *t, const char *const *cells)
{
	unsigned i, n = t->ncols < BENCH_MAX_COLUMNS ? t->ncols : BENCH_MAX_COLUMNS;

	for (i = 0; i < n; i++) {
		const char *s = cells[i] ? cells[i] : "";

		switch (t->fmt) {
		case BENCH_FORMAT_LIVE:
			/* No trailing blank after an empty text column at the end. */
			if (i && (s[0] || !t->cols[i].left || i + 1 < n))
				fputc(' ', t->out);
			bench_live_field(t->out, &t->cols[i], s, i + 1 == n);
			break;
		case BENCH_FORMAT_MD:
			fputs(i ? " | " : "| ", t->out);
			bench_md_field(t->out, s);
			break;
		case BENCH_FORMAT_CSV:
			if (i)
				fputc(',', t->out);
			bench_csv_field(t->out, s);
			break;
		}
	}
	fputs(t->fmt == BENCH_FORMAT_MD ? " |\n" : "\n", t->out);
}

void bench_table_begin(const struct bench_table *t)
{
	const char *cells[BENCH_MAX_COLUMNS];
	unsigned i;
	int w = 0;

	for (i = 0; i < t->ncols && i < BENCH_MAX_COLUMNS; i++)
		cells[i] = t->fmt == BENCH_FORMAT_CSV ? t->cols[i].key : t->cols[i].title;
	if (t->fmt == BENCH_FORMAT_MD)
		fputc('\n', t->out);
	bench_emit_row(t, cells);
	switch (t->fmt) {
	case BENCH_FORMAT_LIVE:
		for (i = 0; i < t->ncols && i < BENCH_MAX_COLUMNS; i++)
			w += t->cols[i].width + (i ? 1 : 0);
		for (; w > 0; w--)
			fputc('-', t->out);
		fputc('\n', t->out);
		break;
	case BENCH_FORMAT_MD:
		for (i = 0; i < t->ncols && i < BENCH_MAX_COLUMNS; i++)
			fputs(t->cols[i].left ? "|---" : "|---:", t->out);
		fputs("|\n", t->out);
		break;
	case BENCH_FORMAT_CSV:
		break;
	}
	fflush(t->out);
}

void bench_table_row(const struct bench_table *t, const char *const *cells)
{
	bench_emit_row(t, cells);
	fflush(t->out);
}

void bench_table_end(const struct bench_table *t)
{
	if (t->fmt == BENCH_FORMAT_MD)
		fputc('\n', t->out);
	fflush(t->out);
}

/* ---- Command line -------------------------------------------------------- */

int bench_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}
