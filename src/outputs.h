/*
 * outputs.h - the files one collector writes: the CSV and its outliers
 * file, the summary, the Prometheus textfile.
 *
 * Flow: report (interval and lifetime rows) -> [outputs] -> csv_out,
 * summary, prom_out -> files.  This module owns what happens around the
 * writers: the locks that keep a second collector off the same files,
 * opening (leaving nothing behind when a start is refused), reopening on
 * SIGUSR1, rotation with the summary and outliers beside the rotated CSV,
 * switching files on reload, and logging a failing write once rather than
 * every interval while the rows wait for space.  The reporter thread is
 * its only user.
 */
#ifndef PERFMOND_OUTPUTS_H
#define PERFMOND_OUTPUTS_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "csv_out.h"
#include "output_lock.h"
#include "prom_out.h"
#include "report.h"
#include "summary.h"

enum { OUT_CSV, OUT_SUMMARY, OUT_TEXTFILE, OUT_COUNT };

/* Which summary outputs_write_summary() writes. */
enum outputs_summary {
	OUTPUTS_SUMMARY_CONFIGURED,   /* at [output] summary */
	OUTPUTS_SUMMARY_ROTATED,      /* beside the CSV the last rotation made */
};

/* The paths the outputs are written to ("" : that output is off). */
struct outputs_paths {
	char csv[CONF_PATH_MAX];
	char summary[CONF_PATH_MAX];
	char textfile[CONF_PATH_MAX];
};

struct outputs {
	const struct pm_config *cfg;   /* the daemon's configuration, current */
	struct report_settings rs;     /* fixed for the life of a CSV */
	struct csv_out *csv;
	struct csv_out *outl;          /* <stem>_outliers.csv; NULL when off */
	struct prom_out *prom;
	struct output_lock lock[OUT_COUNT];
	bool csv_failing, outl_failing, prom_failing;
	uint64_t csv_lost, outl_lost;
	uint64_t last_push_ns, next_rotate_ns;   /* CLOCK_MONOTONIC */
	char rotated_summary[CONF_PATH_MAX + 64];
};

/* Nothing open, nothing locked. */
void outputs_init(struct outputs *o);

/*
 * Before anything is created: hold the lock of every configured output
 * (another live perfmond writing one of them: -EBUSY, logged with its pid)
 * and check that the summary's directory can be written.  0 or a negative
 * errno, logged.
 */
int outputs_lock(struct outputs *o, const struct pm_config *c);

/*
 * Open the CSV and its outliers file with `rs`, and the textfile writer.
 * `c` stays the configuration the outputs follow (the daemon's own, which a
 * reload rewrites in place).  On failure nothing this call created is left
 * behind; 0 or a negative errno, logged.
 */
int outputs_open(struct outputs *o, const struct pm_config *c, const struct report_settings *rs,
		 uint64_t now_mono_ns);

/*
 * Reload: take over `next`'s output paths where they differ from the
 * current ones (locking, opening, removing the old textfile).  An output
 * that cannot be switched keeps its old path, and is logged.  The paths
 * written from now on go to `ret_paths`: the configuration that replaces
 * the current one must carry them.
 */
void outputs_reload(struct outputs *o, const struct pm_config *next,
		    struct outputs_paths *ret_paths);

/* SIGUSR1: reopen the CSV and its outliers file at their paths. */
void outputs_reopen(struct outputs *o);

/*
 * One interval's rows: append to the CSV and the outliers file (pushed to
 * the file now when `push` or csv_flush_interval says so).  Rotates when
 * rotate_size or rotate_interval is reached; true when a summary is then
 * due beside the rotated CSV (OUTPUTS_SUMMARY_ROTATED).
 */
bool outputs_write_interval(struct outputs *o, const struct report *rep,
			    uint64_t now_mono_ns, uint64_t now_real_ns, bool push);

/* Rewrite the Prometheus textfile, when one is configured. */
void outputs_write_prom(struct outputs *o, const struct prom_snapshot *ps);

/* Write the summary `which` (none when its path is ""): 0 or a negative
 * errno, logged, the message also left in `err` when given. */
int outputs_write_summary(struct outputs *o, enum outputs_summary which,
			  const struct report *lifetime, const struct summary_info *si,
			  char *err, size_t errlen);

/* Push and close the files (the locks stay until outputs_unlock). */
void outputs_close(struct outputs *o);

/* A start refused after outputs_open: close the files, removing those it
 * created and wrote nothing but a header to. */
void outputs_discard(struct outputs *o);

/* Release the locks and the textfile writer. */
void outputs_unlock(struct outputs *o);

#endif /* PERFMOND_OUTPUTS_H */
