/*
 * perfmond.c - the daemon: configuration, segments, the drain thread, and
 * the reporter loop around them.
 *
 * Flow: main() parses the command line and the config (cmdline.c,
 * conf.c), creates or reopens the segments (shm.c), opens the outputs,
 * starts the drain thread (drain.c: ring -> pairing) and then becomes the
 * reporter: each time the drain thread flips an interval it builds the
 * report (report.c) and hands it to the writers (csv_out.c, summary.c),
 * publishes status into the control block and to systemd, and handles
 * signals: TERM/INT stop, HUP reload, USR1 reopen outputs, USR2 summary.
 */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include <perfmon/clock.h>

#include "channel.h"
#include "cmdline.h"
#include "conf.h"
#include "csv_out.h"
#include "drain.h"
#include "log.h"
#include "names.h"
#include "output_lock.h"
#include "pairing.h"
#include "prom_out.h"
#include "recorder.h"
#include "report.h"
#include "shm.h"
#include "shm_guard.h"
#include "summary.h"
#include "tsc.h"

#define EXIT_RUNTIME 1
#define HOLE_BUDGET_NS 100000000u      /* final drain: all holes share 100 ms */
#define HOLE_GRACE_NS 200000u          /* a hole holds later events up this long */

struct daemon {
	struct pm_cmdline cl;
	struct pm_config cfg;
	struct shm_instance inst;
	struct pairing *pairing;
	struct drain *drain;
	struct recorder *rec;          /* perfmonctl record */
	struct channel_conn *rec_conn; /* who asked for the running recording */
	struct name_cache names;
	struct report rep;             /* interval rows */
	struct report life;            /* lifetime rows */
	struct report_settings rs;
	struct csv_out *csv;
	struct csv_out *outl;          /* <stem>_outliers.csv; NULL when off */
	struct prom_out *prom;         /* Prometheus textfile writer */
	struct output_lock out_lock[3];  /* OUT_CSV, OUT_SUMMARY, OUT_TEXTFILE */
	struct prom_bounds pbounds;    /* the buckets in ticks, fixed at start */
	struct tsc_clock clock;
	struct channel *chan;          /* collector lock + control socket */
	struct channel_state *state;   /* private: where to resume reading */
	struct channel_conn *summary_waiters[8];   /* summary requests to answer */
	unsigned nsummary_waiters;
	uint64_t instance_id;          /* of the segments, read at start */
	uint64_t start_real_ns;
	bool meta_repaired_logged;
	bool invariant;
	uint64_t overhead_ticks;
	int sigfd, wakefd;
	int shmwatch;                  /* inotify on the two segments, or -1 */
	uint64_t shm_restores;

	uint64_t start_mono_ns;
	uint64_t last_dropped, last_stalled, last_read;
	uint64_t last_interval_mono_ns;
	uint64_t last_push_ns, next_rotate_ns;
	uint64_t last_heartbeat, last_watchdog_ns, watchdog_usec;
	bool csv_failing;
	bool outl_failing;
	uint64_t outl_lost;
	bool prom_failing;
	uint64_t csv_lost;
	uint64_t head_resets, misordered;
	bool summary_wanted;
	bool stopping;
	bool final_interval;
};

static enum channel_disposition cmd_record(void *ctx, struct channel_request *req);

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum { OUT_CSV, OUT_SUMMARY, OUT_TEXTFILE, OUT_COUNT };
static const char *const out_what[OUT_COUNT] = { "CSV", "summary", "textfile" };

/* The configured path of output `which` ("" when it is off). */
static const char *out_path(const struct pm_config *c, int which)
{
	return which == OUT_CSV ? c->csv : which == OUT_SUMMARY ? c->summary : c->prom_textfile;
}

/*
 * Hold the lock of output `which` for `path` instead of the one held now.
 * 0 when held (or nothing to hold, or the lock could not be made: then
 * the output is written unguarded, with a warning); -EBUSY when another
 * process writes `path`, logged, with the old lock kept.
 */
static int out_relock(struct daemon *d, int which, const char *path)
{
	struct output_lock nl = OUTPUT_LOCK_INIT;
	char err[1024];
	int e = 0;

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
	output_lock_release(&d->out_lock[which]);
	d->out_lock[which] = nl;
	return 0;
}

static void out_unlock_all(struct daemon *d)
{
	for (int i = 0; i < OUT_COUNT; i++)
		output_lock_release(&d->out_lock[i]);
}

/* Log what opening, reopening or rotating the CSV had to repair. */
static void log_csv_notice(struct daemon *d)
{
	char msg[1024];
	if (d->csv && csv_out_take_notice(d->csv, msg, sizeof(msg)))
		log_notice("%s", msg);
}

static void settings_from_config(struct report_settings *rs, const struct pm_config *c)
{
	memset(rs, 0, sizeof(*rs));
	rs->unit = c->unit == CONF_UNIT_US ? REPORT_UNIT_US :
		   c->unit == CONF_UNIT_CYCLES ? REPORT_UNIT_CYCLES : REPORT_UNIT_NS;
	rs->npct = c->percentiles.n;
	for (unsigned i = 0; i < rs->npct; i++) {
		rs->pct[i] = c->percentiles.p[i];
		conf_percentile_label(rs->pct[i], rs->pct_label[i], sizeof(rs->pct_label[i]));
	}
	rs->subtract_overhead = c->subtract_overhead;
}

static struct pairing_config pairing_config_from(const struct daemon *d,
						 const struct pm_config *c)
{
	struct pairing_config pc = {
		.max_open_spans = c->max_open_spans,
		.max_stages = c->max_stages,
		.stall_ticks = tsc_ns_to_ticks(&d->clock, c->stalled_sample_timeout_ns),
		.overhead_ticks = d->overhead_ticks,
		.subtract_overhead = c->subtract_overhead,
		.bounds_ticks = d->pbounds.le_ticks,
		.nbounds = d->pbounds.n,
		.outliers = c->outliers,
	};
	return pc;
}

static struct drain_live drain_live_from(const struct daemon *d, const struct pm_config *c)
{
	struct drain_live l = {
		.poll_ns = c->poll_interval_ns,
		.flush_ticks = tsc_ns_to_ticks(&d->clock, c->flush_interval_ns),
	};
	return l;
}

/* Copy a path into a status field; longer paths are cut (display only). */
static void copy_path(char *dst, size_t n, const char *src)
{
	size_t l = strnlen(src, n - 1);
	memcpy(dst, src, l);
	dst[l] = '\0';
}

/* Publish the output paths (seqlock: odd while rewriting). */
static void publish_paths(struct daemon *d)
{
	struct perfmon_meta_header *m = d->inst.meta;
	__atomic_fetch_add(&m->paths_seq, 1, __ATOMIC_ACQ_REL);
	copy_path(m->csv_path, sizeof(m->csv_path), d->cfg.csv);
	copy_path(m->summary_path, sizeof(m->summary_path), d->cfg.summary);
	__atomic_fetch_add(&m->paths_seq, 1, __ATOMIC_RELEASE);
}

static void summary_info_fill(const struct daemon *d, struct summary_info *si)
{
	memset(si, 0, sizeof(*si));
	si->instance = d->cfg.shm_name;
	si->tsc_hz = tsc_clock_hz(&d->clock);
	si->tsc_invariant = d->invariant;
	si->tsc_clock = PERFMON_CLOCK == PERFMON_CLOCK_TSC;
	si->run_ns = mono_ns() - d->start_mono_ns;
	si->overhead_ticks = (double)d->overhead_ticks;
	si->subtracting = d->cfg.subtract_overhead;
	si->unit = d->rs.unit;
	si->drained = d->drain->reader.read;
	si->dropped = d->drain->reader.dropped;
	si->stalled = d->drain->reader.stalled;
}

/* Lifetime summary to `path`; needs a collected interval.  0, or a
 * negative errno (logged, and the message left in `err` when given). */
static int write_summary(struct daemon *d, const struct pairing_interval *iv, const char *path,
			 char *err, size_t errlen)
{
	struct report_collector coll = { d->drain->reader.dropped, d->drain->reader.stalled };
	struct summary_info si;
	char buf[512];
	int e;

	if (!path[0])
		return 0;
	if (!err) {
		err = buf;
		errlen = sizeof(buf);
	}
	report_build_lifetime(&d->life, d->pairing, iv, &d->names, &d->rs,
			      tsc_clock_hz(&d->clock), &coll);
	report_set_clock(&d->life, tsc_now(), real_ns());
	summary_info_fill(d, &si);
	if ((e = summary_write(path, &d->life, &si, err, errlen)) < 0)
		log_error("cannot write the summary: %s", err);
	return e < 0 ? e : 0;
}

/* Answer every `perfmonctl summary` waiting: the path the summary was just
 * written to, from our own configuration. */
static void answer_summary_waiters(struct daemon *d, int e, const char *err)
{
	for (unsigned i = 0; i < d->nsummary_waiters; i++) {
		if (e < 0)
			channel_reply_error(d->summary_waiters[i], "cannot write the summary: %s",
					    err);
		else
			channel_reply_okf(d->summary_waiters[i], "%s\n", d->cfg.summary);
	}
	d->nsummary_waiters = 0;
}

/* The Prometheus textfile: lifetime figures, rewritten every interval.
 * Needs a collected interval. */
static void write_prom(struct daemon *d, const struct pairing_interval *iv, double hz,
		       uint64_t read, uint64_t dropped, uint64_t stalled, uint64_t end_real)
{
	struct report_collector coll = { dropped, stalled };
	struct prom_snapshot ps;
	char err[1024];

	report_build_lifetime(&d->life, d->pairing, iv, &d->names, &d->rs, hz, &coll);
	ps = (struct prom_snapshot){
		.instance = d->cfg.shm_name,
		.pairing = d->pairing,
		.lifetime = &d->life,
		.quantiles = d->rs.pct,
		.nquantiles = d->rs.npct,
		.buckets = &d->cfg.buckets,
		.counted = &d->pbounds,
		.tsc_hz = hz,
		.tsc_invariant = d->invariant,
		.tsc_clock = PERFMON_CLOCK == PERFMON_CLOCK_TSC,
		.drained = read,
		.dropped = dropped,
		.stalled = stalled,
		.flush_interval_ns = d->cfg.flush_interval_ns,
		.flush_realtime_ns = end_real,
	};
	if (prom_out_write(d->prom, d->cfg.prom_textfile, &ps, err, sizeof(err)) < 0) {
		if (!d->prom_failing)   /* once, not every interval */
			log_error("cannot write the Prometheus textfile: %s (retried every "
				  "interval)", err);
		d->prom_failing = true;
	} else if (d->prom_failing) {
		log_notice("writing %s again", d->cfg.prom_textfile);
		d->prom_failing = false;
	}
}

static void rotate(struct daemon *d, const struct pairing_interval *iv, uint64_t now_real)
{
	char rotated[4096], err[512];

	if (csv_out_rotate(d->csv, now_real, d->cfg.rotate_keep, rotated, sizeof(rotated),
			   err, sizeof(err)) < 0) {
		log_error("rotation failed: %s", err);
		return;
	}
	log_info("rotated the CSV to %s", rotated);
	log_csv_notice(d);
	if (d->outl && csv_out_rotate(d->outl, now_real, d->cfg.rotate_keep, rotated,
				      sizeof(rotated), err, sizeof(err)) < 0)
		log_error("rotating the outliers file failed: %s", err);
	if (d->cfg.summary[0] && d->cfg.rotate_keep > 0) {
		/* The matching summary beside it: <rotated stem>_summary.txt
		 * (with rotate_keep = 0 the rotated CSV is already gone). */
		char spath[4200];
		size_t n = strlen(rotated);
		if (n > 4 && !strcmp(rotated + n - 4, ".csv"))
			n -= 4;
		snprintf(spath, sizeof(spath), "%.*s_summary.txt", (int)n, rotated);
		write_summary(d, iv, spath, NULL, 0);
	}
}

/* The interval's slowest spans, after its CSV rows. */
static void write_outliers(struct daemon *d, int push)
{
	int e = csv_out_write(d->outl, &d->rep, push);

	if (csv_out_lost(d->outl) != d->outl_lost) {
		d->outl_lost = csv_out_lost(d->outl);
		log_error("%s: %llu outlier row(s) discarded in all: the backlog kept while "
			  "writes fail is full", csv_out_path(d->outl),
			  (unsigned long long)d->outl_lost);
	}
	if (e < 0 && !d->outl_failing)
		log_error("cannot write %s: %s (rows kept and retried)", csv_out_path(d->outl),
			  strerror(-e));
	else if (e >= 0 && d->outl_failing)
		log_notice("writing %s again", csv_out_path(d->outl));
	d->outl_failing = e < 0;
}

/* Open the outliers file beside the CSV, when both are on. */
static int open_outliers(struct daemon *d, const struct pm_config *c, struct csv_out **ret,
			 char *err, size_t errlen)
{
	char path[CONF_PATH_MAX + 16];

	*ret = NULL;
	if (!c->csv[0] || !c->outliers)
		return 0;
	if (csv_out_outliers_path(c->csv, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "%.300s...: the outliers file's name would be too long", c->csv);
		return -ENAMETOOLONG;
	}
	return csv_out_open_outliers(ret, path, &d->rs, err, errlen);
}

static void repair_meta(struct daemon *d);

/*
 * Someone shrank a segment (any member of its group can ftruncate it): a
 * fault in our mapping was absorbed by shm_guard, or inotify saw the size
 * change.  Give the segment its size back and map it again; what was cut
 * off is lost, and said so.  Producers touching the cut pages meanwhile
 * get SIGBUS: this runs within one poll of the change to keep that short.
 */
static void restore_segments(struct daemon *d)
{
	struct shm_restore_report rep;
	int e = shm_restore(&d->inst, &rep);

	if (e < 0) {
		log_error("/dev/shm/%s was shrunk and cannot be restored: %s", d->inst.name,
			  strerror(-e));
		return;
	}
	if (!rep.ring_restored && !rep.meta_restored)
		return;
	d->shm_restores++;
	if (rep.ring_restored)
		shm_repair_ring(&d->inst);
	if (rep.ring_restored)
		log_warning("/dev/shm/%s was shrunk by someone (%zu bytes cut off, %zu slots: "
			    "the events in them are lost); size restored (%llu time(s) in all)",
			    d->inst.name, rep.ring_lost_bytes,
			    rep.ring_lost_bytes / sizeof(struct perfmon_slot),
			    (unsigned long long)d->shm_restores);
	if (rep.meta_restored) {
		log_warning("/dev/shm/%s.meta was shrunk by someone (%zu bytes cut off: labels "
			    "in them are lost); size and header restored (%llu time(s) in all)",
			    d->inst.name, rep.meta_lost_bytes,
			    (unsigned long long)d->shm_restores);
		repair_meta(d);
	}
}

static int watch_segments(const char *name)
{
	char path[PERFMON_NAME_MAX + 32];
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (fd < 0)
		return -1;
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	inotify_add_watch(fd, path, IN_MODIFY | IN_ATTRIB);
	snprintf(path, sizeof(path), "/dev/shm/%s.meta", name);
	inotify_add_watch(fd, path, IN_MODIFY | IN_ATTRIB);
	return fd;
}

/* One finished interval: report, write, publish, release. */
static void handle_interval(struct daemon *d)
{
	struct pairing_interval iv;
	struct report_collector coll;
	uint64_t now_tsc, now_real, now_mono, dropped, stalled, read, end_real;
	double hz, secs;
	int e, push;

	if (!pairing_collect(d->pairing, &iv))
		return;
	repair_meta(d);
	tsc_clock_refine(&d->clock);
	hz = tsc_clock_hz(&d->clock);
	now_tsc = tsc_now();
	now_real = real_ns();
	now_mono = mono_ns();
	name_cache_refresh(&d->names, d->inst.meta, d->inst.names, d->inst.max_names);

	read = __atomic_load_n(&d->drain->flip_read, __ATOMIC_RELAXED);
	dropped = __atomic_load_n(&d->drain->flip_dropped, __ATOMIC_RELAXED);
	stalled = __atomic_load_n(&d->drain->flip_stalled, __ATOMIC_RELAXED);
	if (__atomic_load_n(&d->drain->flip_head_resets, __ATOMIC_RELAXED) != d->head_resets) {
		d->head_resets = __atomic_load_n(&d->drain->flip_head_resets, __ATOMIC_RELAXED);
		log_warning("a sub-ring's head took an absurd value (%llu time(s) in all): a "
			    "producer wrote garbage into /dev/shm/%s; reading resynchronised "
			    "where producers now reserve", (unsigned long long)d->head_resets,
			    d->inst.name);
	}
	if (__atomic_load_n(&d->drain->flip_misordered, __ATOMIC_RELAXED) != d->misordered) {
		d->misordered = __atomic_load_n(&d->drain->flip_misordered, __ATOMIC_RELAXED);
		log_warning("%llu span event(s) in all reached pairing out of time order (a slot "
			    "published after the hole grace, or a timestamp from the future in "
			    "/dev/shm/%s)", (unsigned long long)d->misordered, d->inst.name);
	}
	coll.dropped = dropped - d->last_dropped;
	coll.stalled = stalled - d->last_stalled;
	end_real = now_real - (uint64_t)tsc_to_ns(&d->clock, (double)(now_tsc > iv.end_tsc ?
							       now_tsc - iv.end_tsc : 0));
	report_build_interval(&d->rep, d->pairing, &iv, &d->names, &d->rs, hz, &coll, end_real);

	if (d->csv) {
		push = d->cfg.csv_flush_interval_ns == 0 || d->stopping ||
		       now_mono - d->last_push_ns >= d->cfg.csv_flush_interval_ns;
		e = csv_out_write(d->csv, &d->rep, push);
		if (push)
			d->last_push_ns = now_mono;
		if (csv_out_lost(d->csv) != d->csv_lost) {
			log_error("%s: %llu interval row(s) discarded in all: the backlog kept "
				  "while writes fail is full", d->cfg.csv,
				  (unsigned long long)csv_out_lost(d->csv));
			d->csv_lost = csv_out_lost(d->csv);
		}
		if (e < 0) {
			/* Once per interval, not per row; the rows wait for space. */
			log_error("cannot write %s: %s (rows kept and retried)", d->cfg.csv,
				  strerror(-e));
			d->csv_failing = true;
		} else if (d->csv_failing) {
			log_notice("writing %s again", d->cfg.csv);
			d->csv_failing = false;
		}
		if (d->outl)
			write_outliers(d, push);
		if ((d->cfg.rotate_size && csv_out_size(d->csv) >= d->cfg.rotate_size) ||
		    (d->cfg.rotate_interval_ns && now_mono >= d->next_rotate_ns)) {
			rotate(d, &iv, now_real);
			d->next_rotate_ns = now_mono + d->cfg.rotate_interval_ns;
		}
	}

	if (d->cfg.prom_textfile[0])
		write_prom(d, &iv, hz, read, dropped, stalled, end_real);

	if (d->summary_wanted) {
		char serr[512] = "";
		e = write_summary(d, &iv, d->cfg.summary, serr, sizeof(serr));
		answer_summary_waiters(d, e, serr);
		d->summary_wanted = false;
	}
	if (d->final_interval)
		write_summary(d, &iv, d->cfg.summary, NULL, 0);
	pairing_release(d->pairing);

	__atomic_store_n(&d->inst.meta->tsc_hz_milli, (uint64_t)(hz * 1000.0), __ATOMIC_RELAXED);
	secs = d->last_interval_mono_ns ? (double)(now_mono - d->last_interval_mono_ns) / 1e9 : 0;
	sd_notifyf(0, "STATUS=%.0f events/s, dropped %llu, stalled %llu",
		   secs > 0 ? (double)(read - d->last_read) / secs : 0.0,
		   (unsigned long long)dropped, (unsigned long long)stalled);
	d->last_interval_mono_ns = now_mono;
	d->last_read = read;
	d->last_dropped = dropped;
	d->last_stalled = stalled;
}

static void reopen_outputs(struct daemon *d)
{
	char err[512];
	if (!d->csv)
		return;
	if (csv_out_reopen(d->csv, err, sizeof(err)) < 0)
		log_error("cannot reopen the CSV: %s", err);
	else
		log_info("reopened %s", d->cfg.csv);
	log_csv_notice(d);
	if (d->outl && csv_out_reopen(d->outl, err, sizeof(err)) < 0)
		log_error("cannot reopen the outliers file: %s", err);
}

static void reload(struct daemon *d)
{
	struct pm_config nc, merged;
	struct conf_msgs errs;
	struct conf_reload rl;
	char err[512];

	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)(mono_ns() / 1000));
	conf_msgs_init(&errs);
	if (conf_load(&d->cl, &nc, &errs) < 0 || conf_check_machine(&nc, &errs) < 0) {
		conf_msgs_print(stderr, &errs, log_prefix(LOG_ERR));
		log_error("configuration not reloaded; the running one is kept");
		sd_notify(0, "READY=1");
		return;
	}
	conf_diff_live(&d->cfg, &nc, &merged, &rl);
	conf_msgs_print(stderr, &rl.msgs, log_prefix(LOG_NOTICE));
	if (conf_warnings(&merged, &errs) > 0)
		conf_msgs_print(stderr, &errs, log_prefix(LOG_WARNING));

	if (merged.cpu != d->cfg.cpu && drain_repin(d->drain, merged.cpu, err, sizeof(err)) < 0) {
		log_error("reload: %s; the drain thread stays where it was", err);
		merged.cpu = d->cfg.cpu;
	}
	for (int i = OUT_SUMMARY; i < OUT_COUNT; i++) {
		char *np = i == OUT_SUMMARY ? merged.summary : merged.prom_textfile;
		if (strcmp(np, out_path(&d->cfg, i)) != 0 && out_relock(d, i, np) < 0) {
			log_error("reload: still writing the %s to %s", out_what[i],
				  out_path(&d->cfg, i)[0] ? out_path(&d->cfg, i) : "(none)");
			snprintf(np, CONF_PATH_MAX, "%s", out_path(&d->cfg, i));
		}
	}
	if (strcmp(merged.csv, d->cfg.csv) != 0 && out_relock(d, OUT_CSV, merged.csv) < 0) {
		log_error("reload: still writing %s", d->cfg.csv[0] ? d->cfg.csv : "no CSV");
		snprintf(merged.csv, sizeof(merged.csv), "%s", d->cfg.csv);
	}
	if (strcmp(merged.csv, d->cfg.csv) != 0) {
		struct csv_out *nc_csv = NULL, *nc_outl = NULL;
		if ((merged.csv[0] && csv_out_open(&nc_csv, merged.csv, &d->rs, err,
						   sizeof(err)) < 0) ||
		    open_outliers(d, &merged, &nc_outl, err, sizeof(err)) < 0) {
			log_error("reload: %s; still writing %s", err, d->cfg.csv);
			snprintf(merged.csv, sizeof(merged.csv), "%s", d->cfg.csv);
			out_relock(d, OUT_CSV, d->cfg.csv);
			csv_out_close(nc_csv);
		} else {
			csv_out_close(d->csv);
			csv_out_close(d->outl);
			d->csv = nc_csv;
			d->outl = nc_outl;
		}
	}
	__atomic_store_n(&d->drain->live.poll_ns, merged.poll_interval_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&d->drain->live.flush_ticks,
			 tsc_ns_to_ticks(&d->clock, merged.flush_interval_ns), __ATOMIC_RELAXED);
	if (strcmp(merged.prom_textfile, d->cfg.prom_textfile) != 0 && d->cfg.prom_textfile[0] &&
	    unlink(d->cfg.prom_textfile) < 0 && errno != ENOENT)
		/* Left in place, node_exporter would serve both files' series. */
		log_warning("reload: cannot remove the previous Prometheus textfile %s: %s",
			    d->cfg.prom_textfile, strerror(errno));
	d->cfg = merged;
	{
		struct pairing_config pc = pairing_config_from(d, &merged);
		drain_reconfigure(d->drain, &pc);
	}
	publish_paths(d);
	sd_notify(0, "READY=1");
}

static void watchdog(struct daemon *d)
{
	uint64_t hb, now;
	if (!d->watchdog_usec)
		return;
	now = mono_ns();
	if (now - d->last_watchdog_ns < d->watchdog_usec * 1000 / 2)
		return;
	hb = __atomic_load_n(&d->drain->heartbeat, __ATOMIC_RELAXED);
	if (hb != d->last_heartbeat) {   /* only while the drain thread moves */
		sd_notify(0, "WATCHDOG=1");
		d->last_heartbeat = hb;
		d->last_watchdog_ns = now;
	}
}

static int setup_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	/* Blocked before any thread starts, so only the signalfd sees them. */
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	/* Past a file-size limit, write() fails with EFBIG and the rows wait,
	 * as on a full disk, instead of the process being killed. */
	signal(SIGXFSZ, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static void handle_signals(struct daemon *d)
{
	struct signalfd_siginfo si;
	while (read(d->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			d->stopping = true;
			break;
		case SIGHUP:
			reload(d);
			break;
		case SIGUSR1:
			reopen_outputs(d);
			break;
		case SIGUSR2:
			d->summary_wanted = true;
			break;
		}
	}
}

/*
 * Refuse to run beside another live collector of `name`, before anything
 * is created or adopted: first the collector of whoever owns existing
 * segments (the kernel reports the owner and the holder of its lock;
 * nothing in the segments counts), then our own lock, which this process
 * then holds until it exits.
 */
static int take_collector_lock(struct daemon *d, gid_t gid)
{
	char err[1024];
	pid_t holder = 0;
	uid_t owner;
	int e;

	if (channel_segment_owner(d->cfg.shm_name, &owner) == 0 && owner != geteuid() &&
	    channel_alive(d->cfg.shm_name, owner, &holder) == 1) {
		log_error("another perfmond (pid %d, uid %u) is collecting from '%s'; stop it "
			  "first", (int)holder, (unsigned)owner, d->cfg.shm_name);
		return -EBUSY;
	}
	e = channel_open(&d->chan, d->cfg.shm_name, d->cfg.mode, gid, &holder, err,
			 sizeof(err));
	if (e == -EBUSY) {
		log_error("%s; stop it first", err);
		return e;
	}
	if (e < 0) {
		log_error("cannot open the control socket: %s", err);
		return e;
	}
	return 0;
}

/*
 * Where to resume reading each sub-ring: a restarted daemon goes on from
 * where the last one stopped (what was overwritten meanwhile is counted as
 * dropped).  Those positions come from our private state file, which the
 * drain thread keeps current; the ring's reader_tail fields are display
 * copies, since a producer rewinding them would make us count events
 * twice.  State that belongs to other segments (or none), or a position
 * past a sub-ring's head, means: start at the head.
 */
static void resume_tails(struct daemon *d, uint64_t *tails)
{
	struct channel_state *st = d->state;
	bool ours = !d->inst.created && st->magic == CHANNEL_STATE_MAGIC &&
		    st->instance_id == d->inst.instance_id && st->subrings == d->inst.subrings;

	for (uint32_t k = 0; k < d->inst.subrings; k++) {
		struct perfmon_subring *s = PERFMON_SUBRING(d->inst.ring, k);
		uint64_t head = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
		uint64_t tail = __atomic_load_n(&st->tails[k], __ATOMIC_RELAXED);

		tails[k] = ours && tail <= head ? tail : head;
		__atomic_store_n(&st->tails[k], tails[k], __ATOMIC_RELAXED);
	}
	st->instance_id = d->inst.instance_id;
	st->subrings = d->inst.subrings;
	st->magic = CHANNEL_STATE_MAGIC;
}

/* Possible CPUs, or PERFMOND_CPUS (1-4096) to size the ring for another
 * host (docs/shm-layout.md). */
static unsigned ring_cpus(void)
{
	const char *v = getenv("PERFMOND_CPUS");
	char *end;
	unsigned long n;

	if (v && v[0]) {
		errno = 0;
		n = strtoul(v, &end, 10);
		if (!errno && !*end && n >= 1 && n <= PERFMON_MAX_SUBRINGS)
			return (unsigned)n;
		log_warning("PERFMOND_CPUS=%s ignored: not a number from 1 to %u", v,
			    PERFMON_MAX_SUBRINGS);
	}
	return shm_possible_cpus();
}

/* Copy a path into a one-line reply value (a newline would end it). */
static void one_line(char *dst, size_t n, const char *src)
{
	size_t i;
	for (i = 0; i + 1 < n && src[i]; i++)
		dst[i] = src[i] == '\n' ? '?' : src[i];
	dst[i] = '\0';
}

/*
 * `status`: the collector's own view, one "key value" per line (see
 * docs/control-channel.md).  Everything comes from this process's memory,
 * none of it from the control block.
 */
static enum channel_disposition cmd_status(void *ctx, struct channel_request *req)
{
	struct daemon *d = ctx;
	uint64_t hb = __atomic_load_n(&d->drain->pub.heartbeat_ns, __ATOMIC_RELAXED);
	uint64_t now = mono_ns();
	char csv[PERFMON_PATH_SIZE * 4], summary[PERFMON_PATH_SIZE * 4], textfile[sizeof(csv)];

	one_line(csv, sizeof(csv), d->cfg.csv);
	one_line(summary, sizeof(summary), d->cfg.summary);
	one_line(textfile, sizeof(textfile), d->cfg.prom_textfile);
	channel_reply_okf(req->conn,
			  "pid %d\nstart_ns %llu\nheartbeat_age_ns %llu\ndrained %llu\n"
			  "dropped %llu\nstalled %llu\nopen_spans %llu\ntail %llu\n"
			  "capacity %llu\nmax_names %u\ntsc_hz %.3f\ntsc_invariant %d\n"
			  "overhead_ticks %llu\ncsv %s\nsummary %s\ntextfile %s\n",
			  (int)getpid(), (unsigned long long)d->start_real_ns,
			  (unsigned long long)(hb && now > hb ? now - hb : 0),
			  (unsigned long long)__atomic_load_n(&d->drain->pub.read, __ATOMIC_RELAXED),
			  (unsigned long long)__atomic_load_n(&d->drain->pub.dropped, __ATOMIC_RELAXED),
			  (unsigned long long)__atomic_load_n(&d->drain->pub.stalled, __ATOMIC_RELAXED),
			  (unsigned long long)__atomic_load_n(&d->drain->pub.open_spans,
							      __ATOMIC_RELAXED),
			  (unsigned long long)__atomic_load_n(&d->drain->pub.tail, __ATOMIC_RELAXED),
			  (unsigned long long)d->inst.capacity, d->inst.max_names,
			  tsc_clock_hz(&d->clock), d->invariant ? 1 : 0,
			  (unsigned long long)d->overhead_ticks, csv, summary, textfile);
	return CHANNEL_REPLIED;
}

/* `summary`: write the summary at the next interval, then answer with its
 * path (the one this daemon was configured with). */
static enum channel_disposition cmd_summary(void *ctx, struct channel_request *req)
{
	struct daemon *d = ctx;

	if (!d->cfg.summary[0]) {
		channel_reply_error(req->conn, "this collector writes no summary (its [output] "
				    "summary is empty)");
		return CHANNEL_REPLIED;
	}
	if (d->stopping || d->nsummary_waiters == sizeof(d->summary_waiters) /
	    sizeof(d->summary_waiters[0])) {
		channel_reply_error(req->conn, "busy; try again");
		return CHANNEL_REPLIED;
	}
	d->summary_waiters[d->nsummary_waiters++] = req->conn;
	d->summary_wanted = true;
	return CHANNEL_LATER;
}

/* Keep the control block's fixed header and our status fields as we wrote
 * them: producers need the header to attach, perfmonctl shows the rest. */
static void repair_meta(struct daemon *d)
{
	struct perfmon_meta_header *m = d->inst.meta;
	unsigned n = shm_repair_meta(&d->inst);

	if (__atomic_load_n(&m->collector_pid, __ATOMIC_RELAXED) != (uint32_t)getpid()) {
		__atomic_store_n(&m->collector_pid, (uint32_t)getpid(), __ATOMIC_RELAXED);
		n++;
	}
	if (__atomic_load_n(&m->start_ns, __ATOMIC_RELAXED) != d->start_real_ns) {
		__atomic_store_n(&m->start_ns, d->start_real_ns, __ATOMIC_RELAXED);
		n++;
	}
	if (!d->stopping && __atomic_load_n(&m->collector_state, __ATOMIC_RELAXED) !=
	    PERFMON_COLLECTOR_RUNNING) {
		__atomic_store_n(&m->collector_state, PERFMON_COLLECTOR_RUNNING, __ATOMIC_RELEASE);
		n++;
	}
	if (n) {
		publish_paths(d);
		if (!d->meta_repaired_logged)   /* once: a scribbler may keep at it */
			log_warning("/dev/shm/%s.meta was overwritten by a producer; restored %u "
				    "field(s) (logged once)", d->inst.name, n);
		d->meta_repaired_logged = true;
	}
}

/*
 * Can this machine give the configuration the memory it asks for?  The
 * collector's tables are sized by max_stages and max_open_spans and
 * allocated whole at start; a size that cannot be had (max_stages = 1M
 * asks for tens of GiB) is a configuration error, found here by making
 * the very allocations the daemon makes (with `trial`; the start makes
 * them for real right after, and that failing is a configuration error
 * too), and not a start that fails and is retried forever.  Prints what
 * is needed; 0 or -ENOMEM with the message in `errs`.
 */
static int check_memory(const struct pm_config *c, bool trial, struct conf_msgs *errs)
{
	struct pairing_config pc = {
		.max_open_spans = c->max_open_spans,
		.max_stages = c->max_stages,
		.stall_ticks = 1,
	};
	struct report a, b;
	struct pairing *p;
	size_t tables = pairing_memory_bytes(&pc) +
			2 * ((2 * (size_t)c->max_stages + 2) *
			     (sizeof(struct report_row) + sizeof(struct pairing_row)));
	uint64_t cap = 0;
	uint32_t nsub = 0;
	size_t shm;
	struct sysinfo si;
	bool ok;

	shm_ring_geometry(c->capacity, ring_cpus(), &cap, &nsub);
	shm = PERFMON_RING_BYTES(nsub, cap) + PERFMON_META_BYTES(c->max_names);

	(void)shm;   /* reported with a refusal only: a good --check-config stays quiet */
	if (sysinfo(&si) == 0) {
		double have = ((double)si.totalram + (double)si.totalswap) * si.mem_unit;
		if ((double)tables > have) {
			conf_msgs_add(errs, "[collector] max_stages = %u and max_open_spans = %u "
				      "need %.1f GiB of memory, more than this machine has (%.1f "
				      "GiB of memory and swap); lower them", c->max_stages,
				      c->max_open_spans, (double)tables / 1073741824.0,
				      have / 1073741824.0);
			return -ENOMEM;
		}
	}
	if (!trial)
		return 0;
	errno = 0;
	p = pairing_new(&pc);
	ok = p && report_init(&a, p) == 0;
	if (ok) {
		ok = report_init(&b, p) == 0;
		report_free(&a);
		if (ok)
			report_free(&b);
	}
	pairing_free(p);
	if (!ok) {
		conf_msgs_add(errs, "[collector] max_stages = %u and max_open_spans = %u need "
			      "%.1f GiB of memory, which this machine cannot provide (%s); lower "
			      "them", c->max_stages, c->max_open_spans,
			      (double)tables / 1073741824.0, strerror(errno ? errno : ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

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

static int start(struct daemon *d)
{
	struct shm_geometry g;
	struct pairing_config pc;
	struct drain_live live;
	uint64_t *tails;
	char err[1024];
	gid_t gid = (gid_t)-1;
	int e;

	d->start_mono_ns = mono_ns();
	conf_resolve_group(d->cfg.group, &gid);   /* checked by conf_check_machine */
	if (d->cfg.lock_memory && mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) < 0) {
		log_error("lock_memory: mlockall failed: %s (raise LimitMEMLOCK= or run with "
			  "CAP_IPC_LOCK)", strerror(errno));
		return EXIT_RUNTIME;
	}
	if (check_summary_dir(d->cfg.summary) < 0)
		return EXIT_RUNTIME;
	/* Before anything is created or written: no other collector may be
	 * writing one of our outputs. */
	for (int i = 0; i < OUT_COUNT; i++)
		if (out_relock(d, i, out_path(&d->cfg, i)) < 0) {
			out_unlock_all(d);
			return EXIT_RUNTIME;
		}

	tsc_clock_start(&d->clock, 10);
	d->invariant = tsc_invariant();
	if (PERFMON_CLOCK == PERFMON_CLOCK_TSC && !d->invariant)
		log_warning("this CPU's TSC is not invariant: latencies may be wrong when the "
			    "frequency changes");
	d->overhead_ticks = tsc_measure_overhead(1000);
	/* Histogram bounds in ticks, fixed for the run: the drain thread counts
	 * samples at them exactly and Prometheus counters must never move. */
	prom_bounds_init(&d->pbounds, &d->cfg.buckets, tsc_clock_hz(&d->clock));

	pc = pairing_config_from(d, &d->cfg);
	d->pairing = pairing_new(&pc);
	if (!d->pairing || report_init(&d->rep, d->pairing) < 0 ||
	    report_init(&d->life, d->pairing) < 0 ||
	    name_cache_init(&d->names, d->cfg.max_names) < 0 || !(d->prom = prom_out_new()) ||
	    !(d->rec = recorder_new())) {
		/* Retrying cannot make memory appear: a configuration error. */
		log_error("cannot allocate the collector's tables for max_stages = %u and "
			  "max_open_spans = %u: %s; lower them", d->cfg.max_stages,
			  d->cfg.max_open_spans, strerror(errno));
		channel_close(d->chan);
		d->chan = NULL;
		return CONF_EXIT_CONFIG;
	}
	settings_from_config(&d->rs, &d->cfg);

	if (take_collector_lock(d, gid) < 0) {
		out_unlock_all(d);
		return EXIT_RUNTIME;
	}
	channel_register(d->chan, "record", cmd_record, d);
	if ((e = shm_guard_install()) < 0) {
		log_error("cannot install the SIGBUS handler: %s", strerror(-e));
		goto error_chan;
	}
	g = (struct shm_geometry){ 0, 0, d->cfg.max_names, d->cfg.mode, gid };
	shm_ring_geometry(d->cfg.capacity, ring_cpus(), &g.capacity, &g.subrings);
	if ((e = shm_create_or_open(d->cfg.shm_name, &g, &d->inst, err, sizeof(err))) < 0) {
		log_error("%s", err);
		goto error_chan;
	}
	if (d->inst.repaired)
		log_warning("the segments of '%s' had been %s; restored (collection starts at "
			    "the ring's head)", d->cfg.shm_name,
			    d->inst.repaired & SHM_REPAIRED_HEADER ? "shrunk, headers and all" :
			    "shrunk");
	d->shmwatch = watch_segments(d->cfg.shm_name);
	if (d->cfg.csv[0] && csv_out_open(&d->csv, d->cfg.csv, &d->rs, err, sizeof(err)) < 0) {
		log_error("%s", err);
		goto error_shm;
	}
	log_csv_notice(d);
	if (open_outliers(d, &d->cfg, &d->outl, err, sizeof(err)) < 0) {
		log_error("%s", err);
		goto error_csv;
	}

	if (channel_state_map(d->chan, &d->state, err, sizeof(err)) < 0) {
		log_error("%s", err);
		goto error_csv;
	}
	channel_register(d->chan, "status", cmd_status, d);
	channel_register(d->chan, "summary", cmd_summary, d);
	d->start_real_ns = real_ns();
	d->inst.meta->collector_pid = (uint32_t)getpid();
	d->inst.meta->start_ns = d->start_real_ns;
	d->inst.meta->tsc_hz_milli = (uint64_t)(tsc_clock_hz(&d->clock) * 1000.0);
	d->inst.meta->tsc_invariant = d->invariant;
	d->inst.meta->overhead_ticks = d->overhead_ticks;
	publish_paths(d);

	live = drain_live_from(d, &d->cfg);
	d->drain->recorder = d->rec;
	d->drain->resume_store = d->state->tails;
	tails = calloc(d->inst.subrings, sizeof(*tails));
	if (!tails) {
		log_error("cannot allocate the collector's tables: %s", strerror(errno));
		goto error_csv;
	}
	resume_tails(d, tails);
	e = drain_start(d->drain, &d->inst, d->pairing, tails, d->cfg.cpu,
			tsc_ns_to_ticks(&d->clock, HOLE_GRACE_NS < d->cfg.stalled_sample_timeout_ns ?
					HOLE_GRACE_NS : d->cfg.stalled_sample_timeout_ns),
			pc.stall_ticks, &live, d->wakefd, err, sizeof(err));
	free(tails);
	if (e < 0) {
		log_error("%s", err);
		goto error_csv;
	}
	__atomic_store_n(&d->inst.meta->collector_state, PERFMON_COLLECTOR_RUNNING,
			 __ATOMIC_RELEASE);
	d->next_rotate_ns = mono_ns() + d->cfg.rotate_interval_ns;
	log_info("collecting from /dev/shm/%s (%u sub-rings of %llu slots%s), %s",
		 d->cfg.shm_name, d->inst.subrings, (unsigned long long)d->inst.capacity,
		 d->inst.created ? ", created" : ", reopened",
		 d->cfg.csv[0] ? d->cfg.csv : "no CSV");
	return 0;

error_csv:
	csv_out_close(d->csv);
	csv_out_close(d->outl);
	d->csv = NULL;
	d->outl = NULL;
error_shm:
	if (d->inst.created) {
		char name[sizeof(d->inst.name)];
		snprintf(name, sizeof(name), "%s", d->inst.name);
		shm_close(&d->inst);
		shm_remove(name);
	} else {
		shm_close(&d->inst);
	}
error_chan:
	out_unlock_all(d);
	channel_close(d->chan);
	d->chan = NULL;
	return EXIT_RUNTIME;
}

/* A recording that has ended: log it (and answer whoever asked). */
static void recording_done(struct daemon *d, const struct recorder_result *res)
{
	if (res->error)
		log_error("recording stopped: writing the capture failed: %s", strerror(-res->error));
	log_info("recording finished: %llu events captured, %llu lost (%llu buffer full, "
		 "%llu past the size cap), %llu dropped by the ring",
		 (unsigned long long)res->t.events,
		 (unsigned long long)(res->t.lost_buffer + res->t.lost_cap),
		 (unsigned long long)res->t.lost_buffer, (unsigned long long)res->t.lost_cap,
		 (unsigned long long)res->t.dropped);
	if (d->rec_conn) {
		/* Answered even when the client went away: the reply frees the
		 * connection. */
		if (res->error)
			channel_reply_error(d->rec_conn, "writing the capture failed after %llu "
					    "events: %s", (unsigned long long)res->t.events,
					    strerror(-res->error));
		else
			channel_reply_okf(d->rec_conn,
					  "events %llu\nlost %llu\nlost_buffer %llu\nlost_cap %llu\n"
					  "dropped %llu\ncapped %d\nshutdown %d\n",
					  (unsigned long long)res->t.events,
					  (unsigned long long)(res->t.lost_buffer + res->t.lost_cap),
					  (unsigned long long)res->t.lost_buffer,
					  (unsigned long long)res->t.lost_cap,
					  (unsigned long long)res->t.dropped,
					  !!(res->t.flags & CAPTURE_END_CAPPED),
					  !!(res->t.flags & CAPTURE_END_SHUTDOWN));
		d->rec_conn = NULL;
	}
}

/*
 * `record SECONDS [MAX_BYTES]` with the capture file's fd: perfmonctl
 * opened the file with its own rights, so the daemon writes nothing where
 * it chose the path itself.  Answered when the recording ends.
 */
static enum channel_disposition cmd_record(void *ctx, struct channel_request *req)
{
	struct daemon *d = ctx;
	struct capture_header h;
	uint64_t max_bytes = 0, now_tsc;
	char err[256], *end;
	double secs;
	int fd;

	if (req->fd < 0) {
		channel_reply_error(req->conn, "record: the capture file's descriptor must come "
				    "with the request");
		return CHANNEL_REPLIED;
	}
	if (req->argc < 1 || req->argc > 2) {
		channel_reply_error(req->conn, "record: usage: record SECONDS [MAX_BYTES]");
		return CHANNEL_REPLIED;
	}
	errno = 0;
	secs = strtod(req->argv[0], &end);
	if (errno || *end || !(secs > 0) || secs > RECORDER_MAX_SECONDS) {
		channel_reply_error(req->conn, "record: seconds must be more than 0 and at most %d",
				    RECORDER_MAX_SECONDS);
		return CHANNEL_REPLIED;
	}
	if (req->argc == 2) {
		errno = 0;
		max_bytes = strtoull(req->argv[1], &end, 10);
		if (errno || *end || max_bytes < CAPTURE_HEADER_SIZE + CAPTURE_TRAILER_SIZE) {
			channel_reply_error(req->conn, "record: bad size cap '%.40s'", req->argv[1]);
			return CHANNEL_REPLIED;
		}
	}
	name_cache_refresh(&d->names, d->inst.meta, d->inst.names, d->inst.max_names);
	memset(&h, 0, sizeof(h));
	now_tsc = tsc_now();
	h.start_tsc = now_tsc;
	h.start_realtime_ns = real_ns();
	h.tsc_hz_milli = (uint64_t)(tsc_clock_hz(&d->clock) * 1000.0);
	h.flags = (d->invariant ? CAPTURE_FLAG_INVARIANT : 0) |
		  (PERFMON_CLOCK == PERFMON_CLOCK_TSC ? 0 : CAPTURE_FLAG_MONOTONIC);
	h.ring_count = 1;
	fd = req->fd;
	req->fd = -1;   /* the recorder owns it now, also on failure */
	if (recorder_start(d->rec, fd, now_tsc, tsc_ns_to_ticks(&d->clock, (uint64_t)(secs * 1e9)),
			   max_bytes, &h, &d->names, err, sizeof(err)) < 0) {
		channel_reply_error(req->conn, "record: %s", err);
		return CHANNEL_REPLIED;
	}
	log_info("recording every event for %g s (asked by uid %u, pid %d)", secs,
		 (unsigned)req->peer_uid, (int)req->peer_pid);
	d->rec_conn = req->conn;
	return CHANNEL_LATER;
}

/* Main thread, each loop: collect a recording that has finished. */
static void poll_recording(struct daemon *d)
{
	struct recorder_result res;

	if (!recorder_finished(d->rec))
		return;
	name_cache_refresh(&d->names, d->inst.meta, d->inst.names, d->inst.max_names);
	if (recorder_poll(d->rec, &d->names, &res))
		recording_done(d, &res);
}

/* At shutdown, after the drain thread has exited: end a recording. */
static void finish_recording(struct daemon *d)
{
	struct recorder_result res;

	name_cache_refresh(&d->names, d->inst.meta, d->inst.names, d->inst.max_names);
	if (recorder_shutdown(d->rec, tsc_now(), d->drain->reader.dropped, &d->names, &res))
		recording_done(d, &res);
}

static void finish(struct daemon *d)
{
	size_t open;

	sd_notify(0, "STOPPING=1");
	d->stopping = true;
	drain_stop(d->drain, tsc_ns_to_ticks(&d->clock, HOLE_BUDGET_NS));
	if (d->drain->final_unfinished)
		log_warning("%llu reserved slot(s) never published by shutdown; counted as stalled",
			    (unsigned long long)d->drain->final_unfinished);
	finish_recording(d);
	/* An interval the reporter had not collected yet, then the last one. */
	handle_interval(d);
	{
		uint64_t dropped = d->drain->reader.dropped, stalled = d->drain->reader.stalled;
		__atomic_store_n(&d->drain->flip_read, d->drain->reader.read, __ATOMIC_RELAXED);
		__atomic_store_n(&d->drain->flip_dropped, dropped, __ATOMIC_RELAXED);
		__atomic_store_n(&d->drain->flip_stalled, stalled, __ATOMIC_RELAXED);
	}
	/* The drain thread has stopped: its side of the engine is ours now.
	 * Spans begun and never ended go into the last interval as abandoned. */
	open = pairing_abandon_open(d->pairing);
	d->final_interval = true;
	if (pairing_flip(d->pairing, tsc_now()))
		handle_interval(d);
	csv_out_close(d->csv);
	csv_out_close(d->outl);
	d->csv = NULL;
	d->outl = NULL;
	for (unsigned i = 0; i < d->nsummary_waiters; i++)
		channel_reply_error(d->summary_waiters[i], "the collector stopped first");
	d->nsummary_waiters = 0;
	__atomic_store_n(&d->inst.meta->collector_state, PERFMON_COLLECTOR_STOPPED,
			 __ATOMIC_RELEASE);
	log_info("stopped: %llu events drained, %llu dropped, %llu stalled, "
		 "%zu span(s) still open counted as abandoned",
		 (unsigned long long)d->drain->reader.read,
		 (unsigned long long)d->drain->reader.dropped,
		 (unsigned long long)d->drain->reader.stalled, open);
}

static int run(struct daemon *d)
{
	uint64_t deadline = d->cfg.run_duration_ns ? mono_ns() + d->cfg.run_duration_ns : 0;
	int e;

	d->sigfd = setup_signals();
	d->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->sigfd < 0 || d->wakefd < 0) {
		log_error("cannot set up signal handling: %s", strerror(errno));
		return EXIT_RUNTIME;
	}
	if ((e = start(d)) != 0)
		return e;
	if (sd_watchdog_enabled(0, &d->watchdog_usec) <= 0)
		d->watchdog_usec = 0;
	sd_notifyf(0, "READY=1\nSTATUS=collecting from %s", d->cfg.shm_name);

	while (!d->stopping) {
		struct pollfd pfd[3 + CHANNEL_MAX_CONNS + 1] = {
			{ d->sigfd, POLLIN, 0 }, { d->wakefd, POLLIN, 0 }, { d->shmwatch, POLLIN, 0 } };
		int timeout = 100, nchan;
		uint64_t now = mono_ns();

		if (deadline) {
			if (now >= deadline)
				break;
			if ((deadline - now) / 1000000 < (uint64_t)timeout)
				timeout = (int)((deadline - now) / 1000000) + 1;
		}
		nchan = channel_poll_fill(d->chan, pfd + 3, CHANNEL_MAX_CONNS + 1);
		if (poll(pfd, (nfds_t)(3 + nchan), timeout) < 0 && errno != EINTR) {
			log_error("poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents & POLLIN)
			handle_signals(d);
		if (pfd[1].revents & POLLIN) {
			uint64_t v;
			if (read(d->wakefd, &v, sizeof(v)) == sizeof(v))
				handle_interval(d);
		}
		if (pfd[2].revents & POLLIN) {
			char buf[4096];
			while (read(d->shmwatch, buf, sizeof(buf)) > 0)
				;
		}
		/* Every turn, not only on inotify: a fault the guard absorbed
		 * needs the mapping back even if the size is whole again. */
		restore_segments(d);
		channel_dispatch(d->chan, pfd + 3, nchan);
		poll_recording(d);
		watchdog(d);
	}
	finish(d);
	restore_segments(d);
	shm_close(&d->inst);
	if (d->shmwatch >= 0)
		close(d->shmwatch);
	out_unlock_all(d);
	channel_close(d->chan);
	d->chan = NULL;
	return 0;
}

int main(int argc, char **argv)
{
	static struct daemon d;
	static struct drain drain;
	struct conf_msgs errs;
	char err[1024];
	int e;

	log_init("perfmond");
	d.drain = &drain;
	d.shmwatch = -1;
	for (int i = 0; i < OUT_COUNT; i++)
		d.out_lock[i] = (struct output_lock)OUTPUT_LOCK_INIT;
	if (cmdline_parse(argc, argv, &d.cl, err, sizeof(err)) < 0) {
		fprintf(stderr, "perfmond: %s\n", err);
		return CMDLINE_EXIT_USAGE;
	}
	if (d.cl.show_help) {
		cmdline_usage(stdout);
		return 0;
	}
	if (d.cl.show_version) {
		cmdline_version(stdout);
		return 0;
	}
	conf_msgs_init(&errs);
	if (conf_load(&d.cl, &d.cfg, &errs) < 0) {
		conf_msgs_print(stderr, &errs, log_prefix(LOG_ERR));
		return CONF_EXIT_CONFIG;
	}
	if (d.cl.check_config) {
		/* The file is checked anywhere; what only this machine can tell
		 * (group, CPU) is a warning here and an error at start. */
		conf_print(stdout, &d.cfg);
		if (check_memory(&d.cfg, true, &errs) < 0) {
			conf_msgs_print(stderr, &errs, log_prefix(LOG_ERR));
			return CONF_EXIT_CONFIG;
		}
		if (conf_check_machine(&d.cfg, &errs) < 0)
			conf_msgs_print(stderr, &errs, log_prefix(LOG_WARNING));
		if (conf_warnings(&d.cfg, &errs) > 0)
			conf_msgs_print(stderr, &errs, log_prefix(LOG_WARNING));
		return 0;
	}
	if (check_memory(&d.cfg, false, &errs) < 0 || conf_check_machine(&d.cfg, &errs) < 0) {
		conf_msgs_print(stderr, &errs, log_prefix(LOG_ERR));
		return CONF_EXIT_CONFIG;
	}
	if (conf_warnings(&d.cfg, &errs) > 0)
		conf_msgs_print(stderr, &errs, log_prefix(LOG_WARNING));
	e = run(&d);
	return e;
}
