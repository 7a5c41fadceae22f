/*
 * ctl_status.h - perfmonctl's view of a running instance: the collector's
 * status block, the name table, removing segments, and asking the daemon
 * for a summary.
 *
 * Flow: liveness from the collector's lock, the collector's figures and
 * output paths from its control socket (channel.h), the ring's state and
 * the name table from a read-only mapping of the segments -> status,
 * names, top, remove.  `summary` asks the daemon over the socket and
 * prints the file it names.  Everything read from the control block is
 * untrusted (producers can write it): labels are cleaned before printing,
 * and no path is ever taken from it.
 */
#ifndef PERFMOND_CTL_STATUS_H
#define PERFMOND_CTL_STATUS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <perfmon/layout.h>

#include "shm.h"

/* A heartbeat older than this means the drain thread is not running. */
#define CTL_HEARTBEAT_STALE_S 3.0

/* The executable a collector must run (checked when /proc shows it);
 * the Check suites stand in for it. */
extern const char *ctl_collector_exe;

/* One consistent-enough copy of the status block. */
struct ctl_collector {
	uint32_t pid;
	uint32_t state;              /* PERFMON_COLLECTOR_* */
	bool process_exists;         /* kill(pid, 0) succeeded or EPERM */
	bool alive;                  /* running, process there, heartbeat fresh */
	double heartbeat_age_s;      /* < 0: no heartbeat yet */
	double uptime_s;             /* since start_ns; < 0 when unknown */
	uint64_t start_ns;           /* CLOCK_REALTIME */
	uint64_t drained, dropped, stalled, open_spans;
	uint64_t misordered;         /* span events paired out of time order */
	uint64_t head, tail, capacity;   /* of the fullest sub-ring */
	uint32_t subrings, fullest;
	double tsc_hz;
	bool tsc_invariant;
	uint64_t overhead_ticks;
	uint64_t flush_interval_ns;      /* 0: unknown */
	uint64_t csv_flush_interval_ns;  /* 0: the CSV gets every interval at once */
	uint32_t names_used, max_names;
	uint64_t name_conflicts;
	uint64_t summary_request, summary_done;
	char csv_path[PERFMON_PATH_SIZE];
	char summary_path[PERFMON_PATH_SIZE];
	uid_t seg_uid;               /* owner of the control block (from the kernel) */
	gid_t seg_gid;
	mode_t seg_mode;
};

/* Read the status block of an opened instance (paths under their seqlock). */
void ctl_status_snapshot(const struct shm_instance *inst, struct ctl_collector *ret);

/*
 * Open `path`, named by the collector's status block, for reading: only a
 * regular file owned by `owner` (the segments' owner, whom the daemon runs
 * as) or by root, never through a symlink.  Returns an fd or a negative
 * errno with a message.
 */
int ctl_status_open_output(const char *path, uid_t owner, char *err, size_t errlen);

/* status [NAME]: exit 0 alive, 3 no collector alive, 1 no such segments. */
int ctl_status_cmd(int argc, char **argv, FILE *out, FILE *err);

/* names [NAME]: the name table; exit 0, or 1 without segments. */
int ctl_names_cmd(int argc, char **argv, FILE *out, FILE *err);

/* remove NAME [--force]: exit 0 removed, 1 refused (live collector),
 * missing or not permitted. */
int ctl_remove_cmd(int argc, char **argv, FILE *out, FILE *err);

/* summary [NAME]: exit 0 printed, 3 no collector alive, 1 no answer in
 * time, no summary configured, or the file is unreadable or unsafe. */
int ctl_summary_cmd(int argc, char **argv, FILE *out, FILE *err);

#endif
