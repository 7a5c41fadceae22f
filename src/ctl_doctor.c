/*
 * ctl_doctor.c - machine checks for trustworthy measurement.
 *
 * Each check reads what the kernel exposes, says what it found, and when
 * the result is not a PASS, the command or setting that fixes it.  A check
 * that cannot tell (the interface is missing, as in many VMs) warns rather
 * than passes: an unverified assumption is exactly what a latency number
 * must not rest on.
 */
#include "build-config.h"

#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <perfmon/stamp.h>
#ifdef PERFMON__HAVE_RSEQ
#include <sys/rseq.h>
#endif

#include "ctl_cli.h"
#include "ctl_doctor.h"
#include "ctl_table.h"
#include "ctl_text.h"

#define TMPFS_MAGIC_NUMBER 0x01021994
#define MAX_CPUS 4096
#define RING_DEFAULT_BYTES (256.0 + 65536.0 * 32.0 + 4096.0 + 512.0 * 72.0)
#define SHM_COMFORT_BYTES (64.0 * 1024 * 1024)

struct doc {
	const char *root;
	struct ctl_doctor *d;
};

const char *ctl_verdict_name(enum ctl_verdict v)
{
	return v == CTL_PASS ? "PASS" : v == CTL_WARN ? "WARN" : "FAIL";
}

static void path_of(const struct doc *x, const char *rel, char *buf, size_t n)
{
	size_t l = strlen(x->root);
	while (l > 0 && x->root[l - 1] == '/')
		l--;
	snprintf(buf, n, "%.*s%s", (int)l, x->root, rel);
}

/* Read a whole small file below the root; trailing newline removed. */
static bool read_file(struct doc *x, const char *rel, char *buf, size_t n)
{
	char path[4096];
	size_t got;
	FILE *f;

	path_of(x, rel, path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return false;
	got = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[got] = '\0';
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
		buf[--got] = '\0';
	x->d->sources_read++;
	return true;
}

static bool read_long(struct doc *x, const char *rel, long *ret)
{
	char buf[64], *end;
	if (!read_file(x, rel, buf, sizeof(buf)))
		return false;
	*ret = strtol(buf, &end, 10);
	return end != buf;
}

static struct ctl_check *add(struct doc *x, const char *name, enum ctl_verdict v,
			     const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static struct ctl_check *add(struct doc *x, const char *name, enum ctl_verdict v,
			     const char *fix, const char *fmt, ...)
{
	struct ctl_check *c;
	va_list ap;

	if (x->d->n == CTL_DOCTOR_MAX)
		return NULL;
	c = &x->d->checks[x->d->n++];
	c->name = name;
	c->verdict = v;
	va_start(ap, fmt);
	vsnprintf(c->found, sizeof(c->found), fmt, ap);
	va_end(ap);
	snprintf(c->fix, sizeof(c->fix), "%s", v == CTL_PASS || !fix ? "" : fix);
	return c;
}

/* The "flags" line of /proc/cpuinfo, or "" (and false) when unreadable. */
static bool cpu_flags(struct doc *x, char *buf, size_t n)
{
	char path[4096], *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	buf[0] = '\0';
	path_of(x, "/proc/cpuinfo", path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return false;
	x->d->sources_read++;
	while (getline(&line, &cap, f) > 0) {
		char *colon;
		if (strncmp(line, "flags", 5) || !(colon = strchr(line, ':')))
			continue;
		snprintf(buf, n, " %s", colon + 1);
		buf[strcspn(buf, "\n")] = ' ';
		found = true;
		break;
	}
	free(line);
	fclose(f);
	return found;
}

static bool has_flag(const char *flags, const char *flag)
{
	char pat[64];
	snprintf(pat, sizeof(pat), " %s ", flag);
	return strstr(flags, pat) != NULL;
}

/* "0-3,8" into a CPU set; false when malformed. */
static bool parse_cpulist(const char *s, unsigned char *set, unsigned *count)
{
	*count = 0;
	memset(set, 0, MAX_CPUS);
	while (*s) {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b;
		if (end == s)
			return false;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtoul(s + 1, &end, 10);
			if (end == s + 1)
				return false;
			s = end;
		}
		for (unsigned long c = a; c <= b && c < MAX_CPUS; c++)
			if (!set[c]) {
				set[c] = 1;
				(*count)++;
			}
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return false;
		else if (*s)
			s++;
	}
	return true;
}

static void check_tsc(struct doc *x, const char *flags, bool have_flags)
{
	const char *name = "invariant TSC";

	if (!have_flags) {
		add(x, name, CTL_WARN, "run on a machine whose /proc/cpuinfo lists the CPU flags",
		    "cannot read the CPU flags from /proc/cpuinfo");
		return;
	}
	if (!has_flag(flags, "tsc")) {
		add(x, name, CTL_WARN, "latencies come from CLOCK_MONOTONIC here (coarser and "
		    "slower per stamp); use an x86 machine for cycle-accurate stamps",
		    "no TSC on this CPU");
		return;
	}
	if (has_flag(flags, "constant_tsc") && has_flag(flags, "nonstop_tsc"))
		add(x, name, CTL_PASS, NULL, "constant_tsc and nonstop_tsc: the TSC ticks at a "
		    "fixed rate in every frequency and sleep state");
	else
		add(x, name, CTL_FAIL, "use a CPU (or a hypervisor configuration) that exposes "
		    "an invariant TSC; until then latencies move with CPU frequency and sleep "
		    "states", "the TSC is not invariant (%s%s missing)",
		    has_flag(flags, "constant_tsc") ? "" : "constant_tsc ",
		    has_flag(flags, "nonstop_tsc") ? "" : "nonstop_tsc");
}

static void check_clocksource(struct doc *x)
{
	char cur[64], avail[256];

	if (!read_file(x, "/sys/devices/system/clocksource/clocksource0/current_clocksource",
		       cur, sizeof(cur))) {
		add(x, "clocksource", CTL_WARN, "mount sysfs to let the check read it",
		    "cannot read the current clocksource");
		return;
	}
	if (!read_file(x, "/sys/devices/system/clocksource/clocksource0/available_clocksource",
		       avail, sizeof(avail)))
		avail[0] = '\0';
	if (!strcmp(cur, "tsc"))
		add(x, "clocksource", CTL_PASS, NULL, "tsc");
	else
		add(x, "clocksource", CTL_WARN, "the kernel does not trust the TSC: look for "
		    "'clocksource: tsc unstable' in dmesg; if the TSC is known good, boot with "
		    "tsc=reliable (or clocksource=tsc)", "%s (available: %s); calibration "
		    "against CLOCK_MONOTONIC and log timestamps use a slower or coarser clock",
		    cur, avail[0] ? avail : "?");
}

static void check_governor(struct doc *x)
{
	char pattern[4096], gov[64], other[64] = "";
	unsigned total = 0, perf = 0;
	glob_t g;

	path_of(x, "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor", pattern,
		sizeof(pattern));
	if (glob(pattern, 0, NULL, &g) != 0) {
		add(x, "frequency governor", CTL_WARN, "check the firmware (BIOS) power profile: "
		    "choose maximum performance", "no cpufreq interface: the frequency is fixed "
		    "or managed by firmware or a hypervisor, and cannot be verified here");
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");
		if (!f)
			continue;
		if (fgets(gov, sizeof(gov), f)) {
			gov[strcspn(gov, "\n")] = '\0';
			total++;
			if (!strcmp(gov, "performance"))
				perf++;
			else if (!other[0])
				ctl_text_clean(other, gov, sizeof(other));
		}
		fclose(f);
	}
	globfree(&g);
	x->d->sources_read++;
	if (total && perf == total)
		add(x, "frequency governor", CTL_PASS, NULL, "performance on all %u CPUs", total);
	else
		add(x, "frequency governor", CTL_WARN, "cpupower frequency-set -g performance "
		    "(or echo performance | tee /sys/devices/system/cpu/cpu*/cpufreq/"
		    "scaling_governor)", "%u of %u CPUs are not on 'performance' (e.g. '%s'): the "
		    "clock speed, and so every latency, changes with load", total - perf, total,
		    other);
}

static void check_boost(struct doc *x)
{
	long v;

	if (read_long(x, "/sys/devices/system/cpu/intel_pstate/no_turbo", &v)) {
		if (v == 1)
			add(x, "turbo/boost", CTL_PASS, NULL, "turbo off (intel_pstate no_turbo=1)");
		else
			add(x, "turbo/boost", CTL_WARN, "echo 1 > /sys/devices/system/cpu/"
			    "intel_pstate/no_turbo", "turbo on: the frequency depends on "
			    "temperature and on how many cores are busy");
		return;
	}
	if (read_long(x, "/sys/devices/system/cpu/cpufreq/boost", &v)) {
		if (v == 0)
			add(x, "turbo/boost", CTL_PASS, NULL, "boost off (cpufreq/boost=0)");
		else
			add(x, "turbo/boost", CTL_WARN, "echo 0 > /sys/devices/system/cpu/cpufreq/"
			    "boost", "boost on: the frequency depends on temperature and on how "
			    "many cores are busy");
		return;
	}
	add(x, "turbo/boost", CTL_WARN, "disable turbo/boost in the firmware (BIOS) settings",
	    "no turbo or boost control exposed; cannot tell whether it is on");
}

static void check_isolation(struct doc *x, unsigned char *iso, unsigned *niso)
{
	char isolated[512] = "", nohz[512] = "";
	unsigned char nohz_set[MAX_CPUS];
	unsigned nnohz = 0;
	const char *fix = "boot with isolcpus=N-M nohz_full=N-M rcu_nocbs=N-M, then pin "
			  "perfmond ([collector] cpu) and the measured threads to those CPUs";

	*niso = 0;
	read_file(x, "/sys/devices/system/cpu/isolated", isolated, sizeof(isolated));
	read_file(x, "/sys/devices/system/cpu/nohz_full", nohz, sizeof(nohz));
	if (!strcmp(nohz, "(null)"))
		nohz[0] = '\0';
	if (!parse_cpulist(isolated, iso, niso))
		*niso = 0;
	if (!parse_cpulist(nohz, nohz_set, &nnohz))
		nnohz = 0;
	if (!*niso && !nnohz)
		add(x, "isolated CPUs", CTL_WARN, fix, "no CPU is isolated: the drain thread and "
		    "the measured threads share their cores with the scheduler's other work");
	else if (!nnohz)
		add(x, "isolated CPUs", CTL_WARN, "add nohz_full= and rcu_nocbs= with the same "
		    "CPUs to the kernel command line", "isolated %s, but without nohz_full the "
		    "timer tick still interrupts them", isolated);
	else if (!*niso)
		add(x, "isolated CPUs", CTL_WARN, "add isolcpus= (or a cpuset) with the same CPUs "
		    "so the scheduler keeps other tasks off them", "nohz_full %s, but nothing "
		    "keeps other tasks off those CPUs", nohz);
	else
		add(x, "isolated CPUs", CTL_PASS, NULL, "isolated %s, nohz_full %s", isolated,
		    nohz);
}

static void check_smt(struct doc *x, const unsigned char *iso, unsigned niso)
{
	long active;
	char rel[128], sib[256];
	unsigned char sibs[MAX_CPUS];
	unsigned ns;
	const char *fix = "echo off > /sys/devices/system/cpu/smt/control (or nosmt on the "
			  "kernel command line), or isolate both siblings of every measured core";

	if (!read_long(x, "/sys/devices/system/cpu/smt/active", &active)) {
		if (!read_file(x, "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
			       sib, sizeof(sib)) || !parse_cpulist(sib, sibs, &ns)) {
			add(x, "SMT siblings", CTL_WARN, fix, "cannot tell whether SMT is on");
			return;
		}
		active = ns > 1;
	}
	if (!active) {
		add(x, "SMT siblings", CTL_PASS, NULL, "SMT is off: no core is shared");
		return;
	}
	if (niso) {
		/* Fine if every isolated CPU's siblings are isolated as well. */
		for (unsigned c = 0; c < MAX_CPUS; c++) {
			if (!iso[c])
				continue;
			snprintf(rel, sizeof(rel),
				 "/sys/devices/system/cpu/cpu%u/topology/thread_siblings_list", c);
			if (!read_file(x, rel, sib, sizeof(sib)) || !parse_cpulist(sib, sibs, &ns))
				continue;
			for (unsigned s = 0; s < MAX_CPUS; s++)
				if (sibs[s] && !iso[s]) {
					add(x, "SMT siblings", CTL_WARN, fix, "SMT is on and CPU %u is "
					    "isolated but its sibling CPU %u is not: whatever runs there "
					    "shares the core's execution units", c, s);
					return;
				}
		}
		add(x, "SMT siblings", CTL_PASS, NULL, "SMT is on, but the siblings of the "
		    "isolated CPUs are isolated too");
		return;
	}
	add(x, "SMT siblings", CTL_WARN, fix, "SMT is on: a hyperthread sibling competes for "
	    "the same core, adding jitter to whatever is measured there");
}

static void check_paranoid(struct doc *x)
{
	long v;

	if (!read_long(x, "/proc/sys/kernel/perf_event_paranoid", &v)) {
		add(x, "perf_event_paranoid", CTL_WARN, "mount procfs", "cannot read "
		    "kernel.perf_event_paranoid");
		return;
	}
	if (v <= 2)
		add(x, "perf_event_paranoid", CTL_PASS, NULL, "%ld: perf can profile and "
		    "cross-check user-space measurements", v);
	else
		add(x, "perf_event_paranoid", CTL_WARN, "sysctl -w kernel.perf_event_paranoid=1 "
		    "(persist it in /etc/sysctl.d/)", "%ld: perf is closed to unprivileged "
		    "users, so measurements cannot be cross-checked with hardware counters", v);
}

static void check_shm(struct doc *x)
{
	char path[4096], a[32], b[32];
	struct statvfs vfs;
	struct statfs fs;
	double total, avail;
	bool tmpfs;

	path_of(x, "/dev/shm", path, sizeof(path));
	if (statvfs(path, &vfs) < 0 || statfs(path, &fs) < 0) {
		add(x, "/dev/shm", CTL_FAIL, "mount -t tmpfs -o size=1G tmpfs /dev/shm",
		    "no /dev/shm (%s): POSIX shared memory is unavailable", strerror(errno));
		return;
	}
	total = (double)vfs.f_blocks * (double)vfs.f_frsize;
	avail = (double)vfs.f_bavail * (double)vfs.f_frsize;
	tmpfs = (unsigned long)fs.f_type == TMPFS_MAGIC_NUMBER;
	ctl_fmt_bytes(avail, a, sizeof(a));
	ctl_fmt_bytes(total, b, sizeof(b));
	if (avail < RING_DEFAULT_BYTES)
		add(x, "/dev/shm", CTL_FAIL, "mount -o remount,size=1G /dev/shm, or remove stale "
		    "segments (perfmonctl remove NAME), or lower [shm] capacity",
		    "%s free of %s: not even a default ring (65536 slots, 2 MiB) fits", a, b);
	else if (avail < SHM_COMFORT_BYTES)
		add(x, "/dev/shm", CTL_WARN, "mount -o remount,size=1G /dev/shm (persist it in "
		    "/etc/fstab)", "%s free of %s: room for only a few rings", a, b);
	else if (!tmpfs)
		add(x, "/dev/shm", CTL_WARN, "mount -t tmpfs tmpfs /dev/shm", "%s free of %s, but "
		    "not a tmpfs: ring pages may be written back to disk", a, b);
	else
		add(x, "/dev/shm", CTL_PASS, NULL, "tmpfs, %s free of %s", a, b);
}

static void check_thp(struct doc *x)
{
	char v[128];

	if (!read_file(x, "/sys/kernel/mm/transparent_hugepage/enabled", v, sizeof(v))) {
		add(x, "transparent hugepages", CTL_PASS, NULL, "not available on this kernel");
		return;
	}
	if (strstr(v, "[always]"))
		add(x, "transparent hugepages", CTL_WARN, "echo madvise > /sys/kernel/mm/"
		    "transparent_hugepage/enabled (or transparent_hugepage=madvise at boot)",
		    "always: page faults may stall on compaction and khugepaged rewrites "
		    "memory under running threads");
	else
		add(x, "transparent hugepages", CTL_PASS, NULL, "%s",
		    strstr(v, "[never]") ? "never" : "madvise (only where asked for)");
}

static void check_rt(struct doc *x)
{
	long runtime, period = 1000000;

	if (!read_long(x, "/proc/sys/kernel/sched_rt_runtime_us", &runtime)) {
		add(x, "RT throttling", CTL_WARN, "mount procfs", "cannot read "
		    "kernel.sched_rt_runtime_us");
		return;
	}
	read_long(x, "/proc/sys/kernel/sched_rt_period_us", &period);
	if (runtime < 0)
		add(x, "RT throttling", CTL_PASS, NULL, "off: real-time threads are never "
		    "paused by the scheduler");
	else
		add(x, "RT throttling", CTL_WARN, "sysctl -w kernel.sched_rt_runtime_us=-1, only "
		    "with isolated CPUs; or do not busy-poll under SCHED_FIFO",
		    "on: a real-time thread that spins is paused for %.0f ms every %.0f ms, "
		    "which shows up as a latency spike", (double)(period - runtime) / 1000.0,
		    (double)period / 1000.0);
}

static void check_numa(struct doc *x)
{
	char node1[4096];
	long v;
	FILE *f;

	path_of(x, "/sys/devices/system/node/node1/cpulist", node1, sizeof(node1));
	f = fopen(node1, "r");
	if (f)
		fclose(f);
	if (!read_long(x, "/proc/sys/kernel/numa_balancing", &v) || v == 0 || !f) {
		add(x, "NUMA balancing", CTL_PASS, NULL, "%s", f ? "automatic NUMA balancing off"
		    : "a single NUMA node");
		return;
	}
	add(x, "NUMA balancing", CTL_WARN, "sysctl -w kernel.numa_balancing=0, and bind the "
	    "measured process with numactl", "automatic NUMA balancing is on: the kernel "
	    "unmaps and migrates pages under running threads");
}

static void check_vm(struct doc *x, const char *flags)
{
	static const char *const vendors[] = {
		"QEMU", "KVM", "VMware", "VirtualBox", "Xen", "Amazon EC2", "Google Compute",
		"Virtual Machine", "Parallels", "BHYVE", "OpenStack", "innotek",
	};
	char hv[64] = "", product[128] = "", vendor[128] = "", what[300] = "";

	read_file(x, "/sys/hypervisor/type", hv, sizeof(hv));
	read_file(x, "/sys/class/dmi/id/product_name", product, sizeof(product));
	read_file(x, "/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	for (size_t i = 0; i < sizeof(vendors) / sizeof(vendors[0]) && !what[0]; i++)
		if (strstr(product, vendors[i]) || strstr(vendor, vendors[i])) {
			char p[128], v[128];
			ctl_text_clean(p, product, sizeof(p));
			ctl_text_clean(v, vendor, sizeof(v));
			snprintf(what, sizeof(what), "%s %s", v, p);
		}
	if (!what[0] && hv[0])
		ctl_text_clean(what, hv, sizeof(what));
	if (!what[0] && has_flag(flags, "hypervisor"))
		snprintf(what, sizeof(what), "a hypervisor (CPU flag)");
	if (what[0])
		add(x, "virtual machine", CTL_WARN, "measure on bare metal, or give the guest "
		    "dedicated host cores (vCPU pinning, no overcommit) and expect steal time",
		    "running under %s: vCPU preemption and steal time show up as latency that "
		    "no setting inside the guest removes", what);
	else
		add(x, "virtual machine", CTL_PASS, NULL, "no hypervisor detected");
}

void ctl_doctor_rseq(struct ctl_doctor *d, bool have, unsigned size, long offset)
{
	struct doc x = { "/", d };
	const char *name = "stamp CPU number";
#if defined(__x86_64__)
	char fix[96];
#endif

	if (!have)
		add(&x, name, CTL_WARN, "build the producers against glibc 2.35 or later, on "
		    "x86-64 or arm64", "no rseq area in this glibc: every producer thread stamps "
		    "into sub-ring 0, so threads on different CPUs share one head");
	else if (!size)
		add(&x, name, CTL_WARN, "remove glibc.pthread.rseq=0 from GLIBC_TUNABLES, or run "
		    "a kernel with rseq (4.18 or later)", "glibc did not register rseq in this "
		    "environment: every producer thread stamps into sub-ring 0, so threads on "
		    "different CPUs share one head");
#if defined(__x86_64__)
	else if (offset != PERFMON_RSEQ_OFFSET_HINT) {
		snprintf(fix, sizeof(fix), "build the producers with "
			 "-DPERFMON_RSEQ_OFFSET_HINT=%ld", offset);
		add(&x, name, CTL_WARN, fix, "rseq registered at offset %ld, not the headers' "
		    "%d: a stamp loads the offset before the CPU number (a fenced pair costs "
		    "about 1.5 ticks more)", offset, PERFMON_RSEQ_OFFSET_HINT);
	} else {
		add(&x, name, CTL_PASS, NULL, "rseq registered at offset %ld: a stamp reads the "
		    "CPU it runs on in one load", offset);
	}
#else
	else
		add(&x, name, CTL_PASS, NULL, "rseq registered at offset %ld: a stamp reads the "
		    "CPU it runs on from it", offset);
#endif
}

int ctl_doctor_run(const char *root, struct ctl_doctor *ret)
{
	struct ctl_doctor d;
	struct doc x = { root, &d };
	unsigned char iso[MAX_CPUS];
	unsigned niso;
	char flags[8192];
	bool have_flags;

	memset(&d, 0, sizeof(d));
	have_flags = cpu_flags(&x, flags, sizeof(flags));
	check_tsc(&x, flags, have_flags);
	check_clocksource(&x);
	check_governor(&x);
	check_boost(&x);
	check_isolation(&x, iso, &niso);
	check_smt(&x, iso, niso);
	check_paranoid(&x);
	check_shm(&x);
	check_thp(&x);
	check_rt(&x);
	check_numa(&x);
	check_vm(&x, flags);
#ifdef PERFMON__HAVE_RSEQ
	ctl_doctor_rseq(&d, true, __rseq_size, (long)__rseq_offset);
#else
	ctl_doctor_rseq(&d, false, 0, 0);
#endif
	*ret = d;
	return d.sources_read ? 0 : -ENOENT;
}

const struct ctl_check *ctl_doctor_find(const struct ctl_doctor *d, const char *name)
{
	for (unsigned i = 0; i < d->n; i++)
		if (!strcmp(d->checks[i].name, name))
			return &d->checks[i];
	return NULL;
}

int ctl_doctor_cmd(int argc, char **argv, FILE *out, FILE *err)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	static struct ctl_doctor d;
	const char *format = NULL;
	enum ctl_format fmt;
	struct ctl_table *t;
	unsigned counts[3] = { 0, 0, 0 };
	int c, e;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c != 'F')
			return ctl_usage_error(err, argv[0], "unknown option '%s'", argv[optind - 1]);
		format = optarg;
	}
	if (optind != argc)
		return ctl_usage_error(err, argv[0], "takes no arguments");
	if (ctl_cli_format(format, &fmt, err, argv[0]) < 0)
		return CTL_EXIT_FAILURE;
	if (ctl_doctor_run("/", &d) < 0) {
		fprintf(err, "perfmonctl doctor: cannot read /proc or /sys; the checks could "
			"not run (mount them, or run doctor on the host)\n");
		return CTL_EXIT_FAILURE;
	}
	t = ctl_table_new();
	if (!t)
		return CTL_EXIT_FAILURE;
	ctl_table_add_column(t, "check", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "result", CTL_ALIGN_LEFT, false);
	ctl_table_add_column(t, "found", CTL_ALIGN_LEFT, true);
	ctl_table_add_column(t, "fix", CTL_ALIGN_LEFT, true);
	for (unsigned i = 0; i < d.n; i++) {
		counts[d.checks[i].verdict]++;
		ctl_table_add_row(t);
		ctl_table_set(t, 0, d.checks[i].name);
		ctl_table_set(t, 1, ctl_verdict_name(d.checks[i].verdict));
		ctl_table_set(t, 2, d.checks[i].found);
		ctl_table_set(t, 3, d.checks[i].fix);
	}
	e = ctl_table_print(t, out, fmt, fmt == CTL_FORMAT_LIVE ? ctl_terminal_width(out) : 0);
	if (fmt != CTL_FORMAT_CSV)
		fprintf(out, "%s%u passed, %u warnings, %u failures\n",
			fmt == CTL_FORMAT_MD ? "\n" : "", counts[CTL_PASS], counts[CTL_WARN],
			counts[CTL_FAIL]);
	ctl_table_free(t);
	return e < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}
