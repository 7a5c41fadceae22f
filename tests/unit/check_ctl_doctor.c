/*
 * check_ctl_doctor.c - `perfmonctl doctor` on fabricated /proc and /sys
 * trees: a well-tuned machine passes, a badly tuned VM warns or fails on
 * each point with a fix, SMT siblings of isolated CPUs are checked, and
 * the command itself runs on this machine and exits 0.
 */
#include "build-config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfmon/stamp.h>

#include "check_main.h"
#include "ctl_cli.h"
#include "ctl_doctor.h"

static char root[96];
static pid_t runner_pid;

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/ctl-doctor-%d-%d", (int)runner_pid, (int)getpid());
	ck_assert_int_eq(mkdir(root, 0755), 0);
}

static void teardown(void)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

static void sweep(void)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/ctl-doctor-%d-*", (int)runner_pid);
	if (system(cmd) != 0)
		fprintf(stderr, "could not sweep test leftovers\n");
}

/* Write `text` to root/rel, creating directories. */
static void put(const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void check_is(const struct ctl_doctor *d, const char *name, enum ctl_verdict v,
		     const char *found_has)
{
	const struct ctl_check *c = ctl_doctor_find(d, name);
	ck_assert_msg(c != NULL, "no check '%s'", name);
	ck_assert_msg(c->verdict == v, "%s: %s (%s), expected %s", name,
		      ctl_verdict_name(c->verdict), c->found, ctl_verdict_name(v));
	if (found_has)
		ck_assert_msg(strstr(c->found, found_has), "%s: '%s' lacks '%s'", name, c->found,
			      found_has);
	/* every non-PASS says how to fix it; a PASS needs no fix */
	ck_assert_msg((v == CTL_PASS) == (c->fix[0] == '\0'), "%s: fix '%s'", name, c->fix);
}

START_TEST(test_tuned_machine)
{
	struct ctl_doctor d;

	put("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu tsc msr constant_tsc nonstop_tsc "
	    "rdtscp\n\nprocessor\t: 1\nflags\t\t: fpu tsc\n");
	put("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n");
	put("/sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc hpet\n");
	for (int c = 0; c < 4; c++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", c);
		put(rel, "performance\n");
		snprintf(rel, sizeof(rel),
			 "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		put(rel, c < 2 ? "0-1\n" : "2-3\n");
	}
	put("/sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");
	put("/sys/devices/system/cpu/isolated", "2-3\n");
	put("/sys/devices/system/cpu/nohz_full", "2-3\n");
	put("/sys/devices/system/cpu/smt/active", "1\n");
	put("/proc/sys/kernel/perf_event_paranoid", "1\n");
	put("/sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");
	put("/proc/sys/kernel/sched_rt_runtime_us", "-1\n");
	put("/proc/sys/kernel/numa_balancing", "1\n");   /* one node: irrelevant */
	put("/sys/class/dmi/id/sys_vendor", "Dell Inc.\n");
	put("/sys/class/dmi/id/product_name", "PowerEdge R650\n");
	put("/dev/shm/.keep", "");

	ck_assert_int_eq(ctl_doctor_run(root, &d), 0);
	check_is(&d, "invariant TSC", CTL_PASS, "constant_tsc");
	check_is(&d, "clocksource", CTL_PASS, "tsc");
	check_is(&d, "frequency governor", CTL_PASS, "all 4 CPUs");
	check_is(&d, "turbo/boost", CTL_PASS, "no_turbo");
	check_is(&d, "isolated CPUs", CTL_PASS, "2-3");
	check_is(&d, "SMT siblings", CTL_PASS, "isolated too");
	check_is(&d, "perf_event_paranoid", CTL_PASS, NULL);
	check_is(&d, "transparent hugepages", CTL_PASS, "never");
	check_is(&d, "RT throttling", CTL_PASS, "off");
	check_is(&d, "NUMA balancing", CTL_PASS, "single NUMA node");
	check_is(&d, "virtual machine", CTL_PASS, NULL);
	ck_assert_ptr_nonnull(ctl_doctor_find(&d, "/dev/shm"));
	ck_assert_ptr_nonnull(ctl_doctor_find(&d, "stamp CPU number"));
	ck_assert_uint_eq(d.n, 13);
}
END_TEST

/* What a stamp picks its sub-ring by: each case of the rseq area. */
START_TEST(test_stamp_cpu_number)
{
	struct ctl_doctor d;
	const struct ctl_check *c;

	memset(&d, 0, sizeof(d));
	ctl_doctor_rseq(&d, true, 32, PERFMON_RSEQ_OFFSET_HINT);
	check_is(&d, "stamp CPU number", CTL_PASS, "rseq registered");

	memset(&d, 0, sizeof(d));
	ctl_doctor_rseq(&d, true, 0, PERFMON_RSEQ_OFFSET_HINT);
	check_is(&d, "stamp CPU number", CTL_WARN, "sub-ring 0");
	c = ctl_doctor_find(&d, "stamp CPU number");
	ck_assert_ptr_nonnull(strstr(c->fix, "glibc.pthread.rseq=0"));

	memset(&d, 0, sizeof(d));
	ctl_doctor_rseq(&d, false, 0, 0);
	check_is(&d, "stamp CPU number", CTL_WARN, "sub-ring 0");
	c = ctl_doctor_find(&d, "stamp CPU number");
	ck_assert_ptr_nonnull(strstr(c->fix, "2.35"));

	memset(&d, 0, sizeof(d));
	ctl_doctor_rseq(&d, true, 32, PERFMON_RSEQ_OFFSET_HINT + 64);
#if defined(__x86_64__)
	/* Another glibc's offset: the stamp works, one load slower. */
	check_is(&d, "stamp CPU number", CTL_WARN, "loads the offset");
	c = ctl_doctor_find(&d, "stamp CPU number");
	{
		char want[64];
		snprintf(want, sizeof(want), "-DPERFMON_RSEQ_OFFSET_HINT=%d",
			 PERFMON_RSEQ_OFFSET_HINT + 64);
		ck_assert_ptr_nonnull(strstr(c->fix, want));
	}
#else
	check_is(&d, "stamp CPU number", CTL_PASS, NULL);   /* no hint off x86-64 */
#endif
}
END_TEST

START_TEST(test_untuned_vm)
{
	struct ctl_doctor d;

	put("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu tsc constant_tsc hypervisor\n");
	put("/sys/devices/system/clocksource/clocksource0/current_clocksource", "kvm-clock\n");
	put("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave\n");
	put("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n");
	put("/sys/devices/system/cpu/cpufreq/boost", "1\n");
	put("/sys/devices/system/cpu/isolated", "\n");
	put("/sys/devices/system/cpu/nohz_full", "(null)\n");
	put("/sys/devices/system/cpu/smt/active", "1\n");
	put("/proc/sys/kernel/perf_event_paranoid", "3\n");
	put("/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
	put("/proc/sys/kernel/sched_rt_runtime_us", "950000\n");
	put("/proc/sys/kernel/sched_rt_period_us", "1000000\n");
	put("/proc/sys/kernel/numa_balancing", "1\n");
	put("/sys/devices/system/node/node1/cpulist", "4-7\n");
	put("/sys/class/dmi/id/sys_vendor", "QEMU\n");
	put("/sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n");
	/* no /dev/shm under this root */

	ck_assert_int_eq(ctl_doctor_run(root, &d), 0);
	check_is(&d, "invariant TSC", CTL_FAIL, "nonstop_tsc");
	check_is(&d, "clocksource", CTL_WARN, "kvm-clock");
	check_is(&d, "frequency governor", CTL_WARN, "1 of 2 CPUs");
	check_is(&d, "turbo/boost", CTL_WARN, "boost on");
	check_is(&d, "isolated CPUs", CTL_WARN, "no CPU is isolated");
	check_is(&d, "SMT siblings", CTL_WARN, "SMT is on");
	check_is(&d, "perf_event_paranoid", CTL_WARN, "3");
	check_is(&d, "/dev/shm", CTL_FAIL, "no /dev/shm");
	check_is(&d, "transparent hugepages", CTL_WARN, "always");
	check_is(&d, "RT throttling", CTL_WARN, "50 ms every 1000 ms");
	check_is(&d, "NUMA balancing", CTL_WARN, NULL);
	check_is(&d, "virtual machine", CTL_WARN, "QEMU");
	ck_assert_ptr_nonnull(strstr(ctl_doctor_find(&d, "frequency governor")->fix,
				     "cpupower frequency-set -g performance"));
}
END_TEST

START_TEST(test_sibling_not_isolated)
{
	struct ctl_doctor d;

	put("/sys/devices/system/cpu/isolated", "2\n");
	put("/sys/devices/system/cpu/nohz_full", "2\n");
	put("/sys/devices/system/cpu/smt/active", "1\n");
	put("/sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "2,6\n");
	ck_assert_int_eq(ctl_doctor_run(root, &d), 0);
	check_is(&d, "isolated CPUs", CTL_PASS, NULL);
	check_is(&d, "SMT siblings", CTL_WARN, "sibling CPU 6 is not");
	/* what could not be read is a warning, not a pass */
	check_is(&d, "invariant TSC", CTL_WARN, "cannot read");
	check_is(&d, "frequency governor", CTL_WARN, "cannot be verified");
	check_is(&d, "turbo/boost", CTL_WARN, "cannot tell");
}
END_TEST

START_TEST(test_isolation_half_done)
{
	struct ctl_doctor d;

	put("/sys/devices/system/cpu/isolated", "3\n");
	ck_assert_int_eq(ctl_doctor_run(root, &d), 0);
	check_is(&d, "isolated CPUs", CTL_WARN, "without nohz_full");
}
END_TEST

START_TEST(test_nothing_readable)
{
	struct ctl_doctor d;
	char missing[160];

	snprintf(missing, sizeof(missing), "%s/nowhere", root);
	ck_assert_int_eq(ctl_doctor_run(missing, &d), -ENOENT);
}
END_TEST

START_TEST(test_command_on_this_machine)
{
	static const char *const names[] = {
		"invariant TSC", "clocksource", "frequency governor", "turbo/boost",
		"isolated CPUs", "SMT siblings", "perf_event_paranoid", "/dev/shm",
		"transparent hugepages", "RT throttling", "virtual machine",
	};
	char *out = NULL, *err = NULL;
	size_t ol = 0, el = 0;
	FILE *fo = open_memstream(&out, &ol), *fe = open_memstream(&err, &el);
	char *argv[] = { "doctor", "--format", "csv" };
	int rc = ctl_doctor_cmd(3, argv, fo, fe);

	fclose(fo);
	fclose(fe);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "check,result,found,fix\n"));
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(strstr(out, names[i]), "no %s line", names[i]);
	for (const char *p = out; (p = strchr(p, '\n')) && p[1]; p++) {
		const char *comma = strchr(p + 1, ',');
		ck_assert(comma && (!strncmp(comma, ",PASS,", 6) || !strncmp(comma, ",WARN,", 6) ||
				    !strncmp(comma, ",FAIL,", 6)));
	}
	free(out);
	free(err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctl_doctor");
	TCase *tc = tcase_create("doctor");

	runner_pid = getpid();
	tcase_add_unchecked_fixture(tc, NULL, sweep);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_tuned_machine);
	tcase_add_test(tc, test_stamp_cpu_number);
	tcase_add_test(tc, test_untuned_vm);
	tcase_add_test(tc, test_sibling_not_isolated);
	tcase_add_test(tc, test_isolation_half_done);
	tcase_add_test(tc, test_nothing_readable);
	tcase_add_test(tc, test_command_on_this_machine);
	suite_add_tcase(s, tc);
	return check_run(s);
}
