/*
 * ctl_doctor.h - `perfmonctl doctor`: is this machine fit for trustworthy
 * latency measurement?
 *
 * Flow: /proc and /sys (read-only) -> [ctl_doctor: one check per concern]
 * -> ctl_table with PASS/WARN/FAIL, what was found, and the fix.  The
 * checks read files under a root directory so they can be exercised on a
 * fabricated tree; the command uses "/".
 */
#ifndef PERFMOND_CTL_DOCTOR_H
#define PERFMOND_CTL_DOCTOR_H

#include <stdbool.h>
#include <stdio.h>

enum ctl_verdict {
	CTL_PASS = 0,
	CTL_WARN,
	CTL_FAIL,
};

#define CTL_DOCTOR_MAX 24

struct ctl_check {
	const char *name;
	enum ctl_verdict verdict;
	char found[320];
	char fix[400];              /* empty on PASS */
};

struct ctl_doctor {
	struct ctl_check checks[CTL_DOCTOR_MAX];
	unsigned n;
	unsigned sources_read;      /* files that could be read at all */
};

/* "PASS", "WARN", "FAIL". */
const char *ctl_verdict_name(enum ctl_verdict v);

/*
 * Run every check against the tree at `root` ("/" for this machine).
 * Returns 0, or -ENOENT when nothing under /proc or /sys could be read (the
 * checks could not run).
 */
int ctl_doctor_run(const char *root, struct ctl_doctor *ret);

/*
 * Add the check "stamp CPU number" to `d`: what a stamp in a process like
 * this one picks its sub-ring by (perfmon/stamp.h).  `have`: this glibc
 * has an rseq area at all; `size` and `offset`: its __rseq_size (0: not
 * registered) and __rseq_offset.  ctl_doctor_run passes this process's.
 */
void ctl_doctor_rseq(struct ctl_doctor *d, bool have, unsigned size, long offset);

/* The check called `name` in `d`, or NULL. */
const struct ctl_check *ctl_doctor_find(const struct ctl_doctor *d, const char *name);

/* The command: exit 0 whatever the verdicts, 1 when it could not run. */
int ctl_doctor_cmd(int argc, char **argv, FILE *out, FILE *err);

#endif
