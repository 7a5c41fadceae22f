/*
 * bench_drain.c - cross-process drain throughput: the real perfmond,
 * pinned to one CPU, drains a producer stamping begin/end pairs flat out
 * on the other.
 *
 * For each ring size, five runs of:
 *   streaming  the producer stamps N events flat out while the daemon
 *              drains; we report the producer's rate, the rate at which
 *              the daemon got through all of them (first stamp to the
 *              last event read and paired), and the fraction dropped;
 *   backlog    the daemon is stopped (SIGSTOP) while the producer fills
 *              most of the ring, then continued: the time to drain the
 *              backlog is the daemon's own ceiling, whatever the producer.
 * Each run also prints the CPU time other processes took meanwhile: runs
 * where another job competed for the two CPUs are marked noisy.
 * A run is drained when the daemon has read every event (the sub-rings'
 * read positions, which its drain thread writes into the ring about every
 * millisecond) and its drain thread is asleep again (/proc), which it is
 * only once everything read was paired: about a millisecond of
 * resolution.  The loss counts come from the control block, which the
 * daemon's main thread refreshes only every 100 ms, read once it has
 * caught up.  The figures are min and median over the runs.
 *
 *   bench_drain [--perfmond PATH] [--events N] [--runs R] [--cpu P,D]
 */
#include "build-config.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <perfmon.h>

#include "bench_common.h"
#include "channel.h"
#include "shm.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

struct daemon_run {
	pid_t pid;
	pid_t drain_tid;         /* the daemon's drain thread; 0 if not found */
	char name[64];
	struct shm_instance inst;
};

/* The thread of `pid` named perfmond-drain, or 0. */
static pid_t find_drain_thread(pid_t pid)
{
	char path[320], comm[32];
	struct dirent *e;
	pid_t tid = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return 0;
	while (!tid && (e = readdir(dir))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "perfmond-drain", 14))
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	closedir(dir);
	return tid;
}

/* The drain thread is asleep: it sleeps only when a pass found nothing and
 * everything read before was handed to pairing (and paired). */
static bool drain_asleep(const struct daemon_run *d)
{
	char path[96], buf[256], *p;
	FILE *f;
	bool asleep = false;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)d->pid, (int)d->drain_tid);
	if (!(f = fopen(path, "r")))
		return false;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		asleep = p[1] == ' ' && p[2] == 'S';
	fclose(f);
	return asleep;
}

/* The daemon's files in its runtime directory (stop_daemon), and its
 * segments: what an interrupted run must not leave behind. */
static const char *const kept[] = { "state", "lock", "sock" };
#define NKEPT (sizeof(kept) / sizeof(kept[0]))

/* The path of instance `name`'s runtime file kept[i]. */
static int kept_file(const char *name, size_t i, char *path, size_t n)
{
	char dir[256];

	if (channel_dir_for(getuid(), dir, sizeof(dir)) < 0)
		return -1;
	snprintf(path, n, "%s/%s.%s", dir, name, kept[i]);
	return 0;
}

static void leftover_instance(const char *name)
{
	char path[512];

	bench_leftover_shm(name);
	for (size_t i = 0; i < NKEPT; i++)
		if (kept_file(name, i, path, sizeof(path)) == 0)
			bench_leftover_file(path);
}

static int start_daemon(struct daemon_run *d, const char *perfmond, uint64_t capacity,
			int cpu)
{
	char cap[32], cpus[16], err[512];
	double deadline;

	snprintf(d->name, sizeof(d->name), "bench-drain-%d", (int)getpid());
	snprintf(cap, sizeof(cap), "%llu", (unsigned long long)capacity);
	snprintf(cpus, sizeof(cpus), "%d", cpu);
	shm_remove(d->name);
	leftover_instance(d->name);
	d->pid = fork();
	if (d->pid < 0)
		return -errno;
	if (d->pid == 0) {
		/* The producer pinned this process; the daemon picks its own CPU. */
		cpu_set_t all;
		CPU_ZERO(&all);
		for (int c = 0; c < 1024; c++)
			CPU_SET(c, &all);
		sched_setaffinity(0, sizeof(all), &all);
		if (!freopen("/dev/null", "w", stderr))
			_exit(126);
		execl(perfmond, "perfmond", "--shm", d->name, "--capacity", cap, "--cpu", cpus,
		      "--csv", "", "--summary", "", "--interval", "1s", (char *)NULL);
		_exit(127);
	}
	bench_leftover_child(d->pid);
	deadline = now_s() + 10;
	while (now_s() < deadline) {
		if (shm_open_existing(d->name, false, &d->inst, err, sizeof(err)) == 0) {
			if (__atomic_load_n(&d->inst.meta->collector_state, __ATOMIC_ACQUIRE) ==
			    PERFMON_COLLECTOR_RUNNING && (d->drain_tid = find_drain_thread(d->pid)))
				return 0;
			shm_close(&d->inst);
		}
		sleep_ms(5);
	}
	return -ETIMEDOUT;
}

/* Stop the daemon and remove its instance: the segments, and the files it
 * keeps in its runtime directory (the state file outlives a daemon, for
 * the next one to resume from). */
static void stop_daemon(struct daemon_run *d)
{
	char path[512];
	int st;

	shm_close(&d->inst);
	kill(d->pid, SIGTERM);
	waitpid(d->pid, &st, 0);
	bench_leftover_child(0);
	shm_remove(d->name);
	for (size_t i = 0; i < NKEPT; i++)
		if (kept_file(d->name, i, path, sizeof(path)) == 0)
			unlink(path);
}

/* Events the daemon has accounted for: read, dropped or stalled. */
static uint64_t accounted(const struct daemon_run *d, uint64_t *dropped)
{
	const struct perfmon_meta_header *m = d->inst.meta;
	uint64_t drop = __atomic_load_n(&m->dropped, __ATOMIC_RELAXED);
	if (dropped)
		*dropped = drop;
	return __atomic_load_n(&m->events_drained, __ATOMIC_RELAXED) + drop +
	       __atomic_load_n(&m->stalled, __ATOMIC_RELAXED);
}

/* Ring indices the daemon has gone past (read, dropped, or stepped over
 * as holes), summed over the sub-rings: their read positions, which the
 * drain thread writes into the ring each time it publishes its counters. */
static uint64_t examined(const struct daemon_run *d)
{
	uint64_t sum = 0;

	for (uint32_t k = 0; k < d->inst.subrings; k++)
		sum += __atomic_load_n(&PERFMON_SUBRING(d->inst.ring, k)->reader_tail,
				       __ATOMIC_RELAXED);
	return sum;
}

/* Wait until the daemon has gone past `target` ring indices and paired
 * what it read: its drain thread is asleep again (30 s at most); returns
 * the time it happened, to about a millisecond (the read positions' and
 * the poll interval's resolution). */
static double wait_drained(const struct daemon_run *d, uint64_t target)
{
	double deadline = now_s() + 30;
	while ((examined(d) < target || !drain_asleep(d)) && now_s() < deadline)
		;
	return now_s();
}

/* Wait until the daemon has accounted for `target` events (30 s at most);
 * returns the time it happened. */
static double wait_accounted(const struct daemon_run *d, uint64_t target)
{
	double deadline = now_s() + 30;
	while (accounted(d, NULL) < target && now_s() < deadline)
		;
	return now_s();
}

static void stamp_pairs(uint64_t pairs)
{
	for (uint64_t i = 0; i < pairs; i++) {
		perfmon_begin(1, (uint32_t)i);
		perfmon_end(1, (uint32_t)i);
	}
}

struct result {
	double prod_rate, drain_rate, drop_frac, backlog_rate;
	double others_ms;        /* CPU time of processes other than us and the daemon */
};

/* CPU time of `pid` in ms (user + system, /proc resolution). */
static double proc_cpu_ms(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (!fgets(buf, sizeof(buf), f) || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		ut = st = 0;
	fclose(f);
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static int one_run(const char *perfmond, uint64_t capacity, uint64_t events, int pcpu,
		   int dcpu, struct result *r)
{
	struct daemon_run d;
	struct bench_noise noise;
	double foreign_ms = 0, steal_ms, wall_ms, daemon_ms;
	uint64_t base, first, dropped0, dropped1, backlog;
	double t0, t1, t2;
	int e;

	if ((e = start_daemon(&d, perfmond, capacity, dcpu)) < 0)
		return e;
	if ((e = perfmon_attach(d.name)) < 0) {
		stop_daemon(&d);
		return e;
	}
	bench_noise_start(&noise);
	daemon_ms = proc_cpu_ms(d.pid);
	/* streaming */
	base = accounted(&d, &dropped0);
	first = examined(&d);
	t0 = now_s();
	stamp_pairs(events / 2);
	t1 = now_s();
	t2 = wait_drained(&d, first + events);
	wait_accounted(&d, base + events);
	accounted(&d, &dropped1);
	r->prod_rate = (double)events / (t1 - t0);
	r->drain_rate = (double)events / (t2 - t0);
	r->drop_frac = (double)(dropped1 - dropped0) / (double)events;

	/* backlog: three quarters of the ring, drained from a standstill
	 * (only rings big enough to time with millisecond updates) */
	r->backlog_rate = 0;
	backlog = capacity / 4 * 3;
	if (capacity < (UINT64_C(1) << 20))
		goto out;
	first = examined(&d);
	kill(d.pid, SIGSTOP);
	stamp_pairs(backlog / 2);
	t0 = now_s();
	kill(d.pid, SIGCONT);
	t2 = wait_drained(&d, first + backlog);
	r->backlog_rate = (double)backlog / (t2 - t0);
out:
	bench_noise_since(&noise, &foreign_ms, &steal_ms, &wall_ms);
	r->others_ms = foreign_ms - (proc_cpu_ms(d.pid) - daemon_ms);
	if (r->others_ms < 0)
		r->others_ms = 0;
	perfmon_detach();
	stop_daemon(&d);
	(void)pcpu;
	return 0;
}

static void row(const char *what, double *v, int n, double scale, const char *unit)
{
	double mn, med;
	bench_min_median(v, (size_t)n, &mn, &med);
	printf("  %-30s min %10.3f  median %10.3f%s\n", what, mn * scale, med * scale, unit);
}

int main(int argc, char **argv)
{
	const char *perfmond = "src/perfmond";
	uint64_t events = 10000000, caps[2] = { UINT64_C(1) << 20, 65536 };
	int runs = 5, pcpu = 1, dcpu = 0;
	struct bench_machine m;

	bench_leave_nothing();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--perfmond") && i + 1 < argc)
			perfmond = argv[++i];
		else if (!strcmp(argv[i], "--events") && i + 1 < argc)
			events = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
			sscanf(argv[++i], "%d,%d", &pcpu, &dcpu);
		else {
			fprintf(stderr, "usage: bench_drain [--perfmond PATH] [--events N] "
				"[--runs R] [--cpu PRODUCER,DAEMON]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > 100 || events < 1000)
		return 2;
	bench_machine_probe(&m, 100);
	bench_machine_print(stdout, BENCH_FORMAT_LIVE, &m);
	bench_pin_thread(pthread_self(), pcpu);
	printf("producer: this process on cpu %d, begin/end pairs flat out, %llu stamps per run\n"
	       "daemon:   %s --cpu %d (default poll and batch), %d runs per ring size\n\n",
	       pcpu, (unsigned long long)events, perfmond, dcpu, runs);

	for (int c = 0; c < 2; c++) {
		double prod[100], drain[100], drop[100], backlog[100];
		int n = 0;
		for (int i = 0; i < runs; i++) {
			struct result r;
			int e = one_run(perfmond, caps[c], events, pcpu, dcpu, &r);
			if (e < 0) {
				fprintf(stderr, "bench_drain: run failed: %s\n", strerror(-e));
				return 1;
			}
			prod[n] = r.prod_rate;
			drain[n] = r.drain_rate;
			drop[n] = r.drop_frac;
			backlog[n] = r.backlog_rate;
			printf("ring %7llu run %d: producer %6.2f M/s, drained all in %6.2f M/s, "
			       "dropped %6.3f %%", (unsigned long long)caps[c], i + 1,
			       r.prod_rate / 1e6, r.drain_rate / 1e6, r.drop_frac * 100);
			if (r.backlog_rate > 0)
				printf(", backlog drain %6.2f M/s", r.backlog_rate / 1e6);
			printf("; others busy %.0f ms%s\n", r.others_ms,
			       r.others_ms > 100 ? " (noisy: another job competed)" : "");
			n++;
		}
		printf("ring %llu slots, %d runs:\n", (unsigned long long)caps[c], n);
		row("producer rate (M stamps/s)", prod, n, 1e-6, "");
		row("streaming drain (M events/s)", drain, n, 1e-6, "");
		row("dropped (%)", drop, n, 100, "");
		if (backlog[0] > 0)
			row("backlog drain (M events/s)", backlog, n, 1e-6, "");
		printf("\n");
	}
	return 0;
}
