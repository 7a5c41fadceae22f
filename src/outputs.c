/*
 * outputs.c - the collector's files: locks, opening, reopening, rotation,
 * reload, and failures logged once (see outputs.h).
 */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "outputs.h"

static const char *const out_what[OUT_COUNT] = { "CSV", "summary", "textfile" };

/* The configured path of output `which` ("" when it is off). */
static const char *out_path(const struct pm_config *c, int which)
{
	return which == OUT_CSV ? c->csv : which == OUT_SUMMARY ? c->summary : c->prom_textfile;
}

/* The same field in an outputs_paths. */
static char *paths_field(struct outputs_paths *p, int which)
{
	return which == OUT_CSV ? p->csv : which == OUT_SUMMARY ? p->summary : p->textfile;
}

void outputs_init(struct outputs *o)
{
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < OUT_COUNT; i++)
		o->lock[i] = (struct output_lock)OUTPUT_LOCK_INIT;
}

/*
 * Hold the lock of output `which` for `path` instead of the one held now.
 * 0 when held (or nothing to hold, or the lock could not be made: then
 * the output is written unguarded, with a warning); -EBUSY when another
 * process writes `path`, logged, with the old lock kept.
 */
static int relock(struct outputs *o, int which, const char *path)
{
	struct output_lock nl = OUTPUT_LOCK_INIT;
	char err[1024];
	int e = 0;

	if (path[0] && output_lock_holds(&o->lock[which], path))
		return 0;   /* the same file spelled another way: keep its lock */
	if (path[0]) {
		e = output_lock_take(&nl, path, out_what[which], err, sizeof(err));
		if (e == -EBUSY) {
			log_error("%s", err);
			return e;
		}
		if (e < 0)
			log_warning("%s; writing it without protection against a second "
				    "collector", err);
	}
	output_lock_release(&o->lock[which]);
	o->lock[which] = nl;
	return 0;
}

/* The summary is written by rename: its directory must take a new file. */
static int check_summary_dir(const char *path)
{
	char dir[4096], tmp[4200];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!path[0])
		return 0;
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	snprintf(tmp, sizeof(tmp), "%s/.perfmond-probe-XXXXXX", dir);
	fd = mkstemp(tmp);
	if (fd < 0) {
		log_error("cannot write the summary %s: directory %s: %s", path, dir,
			  strerror(errno));
		return -errno;
	}
	close(fd);
	unlink(tmp);
	return 0;
}

int outputs_lock(struct outputs *o, const struct pm_config *c)
{
	int e;

	if ((e = check_summary_dir(c->summary)) < 0)
		return e;
	for (int i = 0; i < OUT_COUNT; i++)
		if ((e = relock(o, i, out_path(c, i))) < 0) {
			outputs_unlock(o);
			return e;
		}
	return 0;
}

/* Log what opening, reopening or rotating the CSV had to repair. */
static void log_csv_notice(struct outputs *o)
{
	char msg[1024];
	if (o->csv && csv_out_take_notice(o->csv, msg, sizeof(msg)))
		log_notice("%s", msg);
}

/* Open the CSV at `csv` ("" : none) and, with `outliers`, the outliers
 * file beside it.  On failure neither is left behind; the message is in
 * `err`. */
static int open_csv(const char *csv, bool outliers, const struct report_settings *rs,
		    struct csv_out **ret_csv, struct csv_out **ret_outl, char *err, size_t errlen)
{
	char path[CONF_PATH_MAX + 16];
	int e;

	*ret_csv = *ret_outl = NULL;
	if (!csv[0])
		return 0;
	if ((e = csv_out_open(ret_csv, csv, rs, err, errlen)) < 0)
		return e;
	if (!outliers)
		return 0;
	if (csv_out_companion_path(csv, CSV_OUTLIERS_SUFFIX, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "%.300s...: the outliers file's name would be too long", csv);
		e = -ENAMETOOLONG;
	} else {
		e = csv_out_open_outliers(ret_outl, path, rs, err, errlen);
	}
	if (e < 0) {
		csv_out_discard(*ret_csv);
		*ret_csv = NULL;
	}
	return e;
}

int outputs_open(struct outputs *o, const struct pm_config *c, const struct report_settings *rs,
		 uint64_t now_mono_ns)
{
	char err[1024];
	int e;

	o->cfg = c;
	o->rs = *rs;
	if (!(o->prom = prom_out_new())) {
		log_error("cannot allocate the Prometheus writer: %s", strerror(errno));
		return -ENOMEM;
	}
	if ((e = open_csv(c->csv, c->outliers, rs, &o->csv, &o->outl, err, sizeof(err))) < 0) {
		log_error("%s", err);
		return e;
	}
	log_csv_notice(o);
	o->next_rotate_ns = now_mono_ns + c->rotate_interval_ns;
	return 0;
}

void outputs_reload(struct outputs *o, const struct pm_config *next,
		    struct outputs_paths *ret_paths)
{
	const struct pm_config *cur = o->cfg;
	struct outputs_paths p;
	char err[1024];

	for (int i = 0; i < OUT_COUNT; i++)
		snprintf(paths_field(&p, i), CONF_PATH_MAX, "%s", out_path(next, i));
	for (int i = OUT_SUMMARY; i < OUT_COUNT; i++) {
		if (strcmp(out_path(next, i), out_path(cur, i)) != 0 &&
		    relock(o, i, out_path(next, i)) < 0) {
			log_error("reload: still writing the %s to %s", out_what[i],
				  out_path(cur, i)[0] ? out_path(cur, i) : "(none)");
			snprintf(paths_field(&p, i), CONF_PATH_MAX, "%s", out_path(cur, i));
		}
	}
	if (strcmp(next->csv, cur->csv) != 0 && relock(o, OUT_CSV, next->csv) < 0) {
		log_error("reload: still writing %s", cur->csv[0] ? cur->csv : "no CSV");
		snprintf(p.csv, sizeof(p.csv), "%s", cur->csv);
	}
	if (strcmp(p.csv, cur->csv) != 0) {
		struct csv_out *nc, *no;
		if (open_csv(p.csv, next->outliers, &o->rs, &nc, &no, err, sizeof(err)) < 0) {
			log_error("reload: %s; still writing %s", err, cur->csv);
			snprintf(p.csv, sizeof(p.csv), "%s", cur->csv);
			relock(o, OUT_CSV, cur->csv);
		} else {
			csv_out_close(o->csv);
			csv_out_close(o->outl);
			o->csv = nc;
			o->outl = no;
			o->csv_failing = o->outl_failing = false;
			o->csv_lost = o->outl_lost = 0;
		}
	}
	if (strcmp(p.textfile, cur->prom_textfile) != 0 && cur->prom_textfile[0] &&
	    unlink(cur->prom_textfile) < 0 && errno != ENOENT)
		/* Left in place, node_exporter would serve both files' series. */
		log_warning("reload: cannot remove the previous Prometheus textfile %s: %s",
			    cur->prom_textfile, strerror(errno));
	*ret_paths = p;
}

void outputs_reopen(struct outputs *o)
{
	char err[512];

	if (!o->csv)
		return;
	if (csv_out_reopen(o->csv, err, sizeof(err)) < 0)
		log_error("cannot reopen the CSV: %s", err);
	else
		log_info("reopened %s", o->cfg->csv);
	log_csv_notice(o);
	if (o->outl && csv_out_reopen(o->outl, err, sizeof(err)) < 0)
		log_error("cannot reopen the outliers file: %s", err);
}

/* Append to one file; a failure and its end are logged once each, and a
 * backlog that had to discard rows is reported as it grows. */
static void write_one(struct csv_out *c, const struct report *rep, bool push, bool *failing,
		      uint64_t *lost, const char *what)
{
	int e = csv_out_write(c, rep, push);

	if (csv_out_lost(c) != *lost) {
		*lost = csv_out_lost(c);
		log_error("%s: %llu %s row(s) discarded in all: the backlog kept while writes "
			  "fail is full", csv_out_path(c), (unsigned long long)*lost, what);
	}
	if (e < 0 && !*failing)
		log_error("cannot write %s: %s (rows kept and retried)", csv_out_path(c),
			  strerror(-e));
	else if (e >= 0 && *failing)
		log_notice("writing %s again", csv_out_path(c));
	*failing = e < 0;
}

/* Rotate the CSV, its outliers file beside it; true when a summary is
 * due beside the rotated CSV (at o->rotated_summary). */
static bool rotate(struct outputs *o, uint64_t now_real)
{
	const struct pm_config *c = o->cfg;
	char rotated[4096], err[512];

	if (csv_out_rotate(o->csv, now_real, c->rotate_keep, rotated, sizeof(rotated), err,
			   sizeof(err)) < 0) {
		log_error("rotation failed: %s", err);
		return false;
	}
	log_info("rotated the CSV to %s", rotated);
	log_csv_notice(o);
	if (o->outl && csv_out_rotate_beside(o->outl, rotated, c->rotate_keep, err,
					     sizeof(err)) < 0)
		log_error("rotating the outliers file failed: %s", err);
	/* With rotate_keep = 0 the rotated CSV is already gone. */
	return c->summary[0] && c->rotate_keep != 0 &&
	       csv_out_companion_path(rotated, CSV_SUMMARY_SUFFIX, o->rotated_summary,
				      sizeof(o->rotated_summary)) == 0;
}

bool outputs_write_interval(struct outputs *o, const struct report *rep,
			    uint64_t now_mono_ns, uint64_t now_real_ns, bool push)
{
	const struct pm_config *c = o->cfg;
	bool summary = false;

	if (!o->csv)
		return false;
	push = push || c->csv_flush_interval_ns == 0 ||
	       now_mono_ns - o->last_push_ns >= c->csv_flush_interval_ns;
	write_one(o->csv, rep, push, &o->csv_failing, &o->csv_lost, "interval");
	if (o->outl)
		write_one(o->outl, rep, push, &o->outl_failing, &o->outl_lost, "outlier");
	if (push)
		o->last_push_ns = now_mono_ns;
	if ((c->rotate_size && csv_out_size(o->csv) >= c->rotate_size) ||
	    (c->rotate_interval_ns && now_mono_ns >= o->next_rotate_ns)) {
		summary = rotate(o, now_real_ns);
		o->next_rotate_ns = now_mono_ns + c->rotate_interval_ns;
	}
	return summary;
}

void outputs_write_prom(struct outputs *o, const struct prom_snapshot *ps)
{
	const char *path = o->cfg->prom_textfile;
	char err[1024];

	if (!path[0])
		return;
	if (prom_out_write(o->prom, path, ps, err, sizeof(err)) < 0) {
		if (!o->prom_failing)   /* once, not every interval */
			log_error("cannot write the Prometheus textfile: %s (retried every "
				  "interval)", err);
		o->prom_failing = true;
	} else if (o->prom_failing) {
		log_notice("writing %s again", path);
		o->prom_failing = false;
	}
}

int outputs_write_summary(struct outputs *o, enum outputs_summary which,
			  const struct report *lifetime, const struct summary_info *si,
			  char *err, size_t errlen)
{
	const char *path = which == OUTPUTS_SUMMARY_ROTATED ? o->rotated_summary : o->cfg->summary;
	char buf[512];
	int e;

	if (!path[0])
		return 0;
	if (!err) {
		err = buf;
		errlen = sizeof(buf);
	}
	if ((e = summary_write(path, lifetime, si, err, errlen)) < 0)
		log_error("cannot write the summary: %s", err);
	return e < 0 ? e : 0;
}

void outputs_close(struct outputs *o)
{
	csv_out_close(o->csv);
	csv_out_close(o->outl);
	o->csv = o->outl = NULL;
}

void outputs_discard(struct outputs *o)
{
	csv_out_discard(o->csv);
	csv_out_discard(o->outl);
	o->csv = o->outl = NULL;
}

void outputs_unlock(struct outputs *o)
{
	for (int i = 0; i < OUT_COUNT; i++)
		output_lock_release(&o->lock[i]);
	prom_out_free(o->prom);
	o->prom = NULL;
}
