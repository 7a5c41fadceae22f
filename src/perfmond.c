/*
 * perfmond.c - the daemon's life: configuration, start, the main loop,
 * signals, reload, stop.
 *
 * Flow: main() parses the command line and the configuration (cmdline.c,
 * conf.c) and checks what it costs (sizing.c); start() takes the locks and
 * the control socket (outputs.c, collector.c), creates or reopens the
 * segments (shm.c), opens the outputs and starts the drain thread (drain.c:
 * ring -> pairing).  The main thread then becomes the reporter: each time
 * the drain thread flips an interval, reporter.c turns it into rows for
 * the writers (outputs.c: CSV, outliers, summary, Prometheus textfile);
 * between intervals it keeps the control block whole and answers requests
 * (collector.c), and handles signals: TERM/INT stop, HUP reload, USR1
 * reopen outputs, USR2 summary.
 */
#include "build-config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include <perfmon/clock.h>

#include "clocks.h"
#include "collector.h"
#include "conf.h"
#include "drain.h"
#include "log.h"
#include "names.h"
#include "outputs.h"
#include "pairing.h"
#include "prom_out.h"
#include "reporter.h"
#include "shm.h"
#include "shm_guard.h"
#include "sizing.h"
#include "tsc.h"

_Static_assert(CONF_MAX_BUCKETS <= PROM_MAX_BUCKETS, "every configured bound is exported");

#define EXIT_RUNTIME 1
#define HOLE_BUDGET_NS 100000000u      /* final drain: all holes share 100 ms */
#define HOLE_GRACE_NS 200000u          /* a hole holds later events up this long */

struct daemon {
	struct pm_cmdline cl;
	struct pm_config cfg;
	struct shm_instance inst;
	struct pairing *pairing;
	struct drain drain;
	struct collector co;
	struct outputs out;
	struct name_cache names;
	struct reporter rep;
	struct prom_bounds pbounds;    /* the buckets in ticks, fixed at start */
	struct tsc_clock clock;
	bool invariant;
	uint64_t overhead_ticks;
	int sigfd, wakefd;
	int shmwatch;                  /* inotify on the two segments, or -1 */

	uint64_t start_mono_ns;
	uint64_t last_heartbeat, last_watchdog_ns, watchdog_usec;
	bool stopping;
};

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

static void reload(struct daemon *d)
{
	struct pm_config nc, merged;
	struct msgs errs;
	struct conf_reload rl;
	struct pairing_config pc;
	struct drain_live live;
	struct outputs_paths paths;
	char err[512];

	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)(mono_ns() / 1000));
	msgs_init(&errs);
	if (conf_load(&d->cl, &nc, &errs) < 0 || conf_check_machine(&nc, &errs) < 0) {
		msgs_print(stderr, &errs, log_prefix(LOG_ERR));
		log_error("configuration not reloaded; the running one is kept");
		sd_notify(0, "READY=1");
		return;
	}
	conf_diff_live(&d->cfg, &nc, &merged, &rl);
	msgs_print(stderr, &rl.msgs, log_prefix(LOG_NOTICE));
	if (conf_warnings(&merged, &errs) > 0)
		msgs_print(stderr, &errs, log_prefix(LOG_WARNING));

	if (merged.cpu != d->cfg.cpu && drain_repin(&d->drain, merged.cpu, err, sizeof(err)) < 0) {
		log_error("reload: %s; the drain thread stays where it was", err);
		merged.cpu = d->cfg.cpu;
	}
	outputs_reload(&d->out, &merged, &paths);
	/* An output that could not switch is still written where it was. */
	memcpy(merged.csv, paths.csv, sizeof(merged.csv));
	memcpy(merged.summary, paths.summary, sizeof(merged.summary));
	memcpy(merged.prom_textfile, paths.textfile, sizeof(merged.prom_textfile));
	live = drain_live_from(d, &merged);
	drain_set_live(&d->drain, &live);
	d->cfg = merged;
	pc = pairing_config_from(d, &merged);
	drain_reconfigure(&d->drain, &pc);
	collector_publish_paths(&d->co);
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
	hb = drain_heartbeat(&d->drain);
	if (hb != d->last_heartbeat) {   /* only while the drain thread moves */
		sd_notify(0, "WATCHDOG=1");
		d->last_heartbeat = hb;
		d->last_watchdog_ns = now;
	}
}

/*
 * How long the main thread waits for its next turn when nothing wakes it:
 * 100 ms while the drain thread's counters move (they are copied into the
 * control block each turn) or a recording runs, a second when the
 * collector is idle.  Signals, the drain thread's interval wake-up, the
 * segments' inotify watch and the control socket wake it at once either
 * way; the idle wait only spaces the heartbeat in the control block
 * (stale after 3 s), and saves nine wake-ups a second.  Without the
 * inotify watch a shrunk control block is noticed only by the turns, so
 * they stay at 100 ms.  The watchdog is pinged at least every half period.
 */
static int turn_ms(const struct daemon *d, bool busy)
{
	int ms = busy || d->shmwatch < 0 ? 100 : 1000;

	if (d->watchdog_usec && d->watchdog_usec / 4000 < (uint64_t)ms)
		ms = (int)(d->watchdog_usec / 4000);
	return ms > 0 ? ms : 1;
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
			outputs_reopen(&d->out);
			break;
		case SIGUSR2:
			collector_want_summary(&d->co);
			break;
		}
	}
}

/* inotify on both segments: a shrink is seen at once, not at the next
 * fault. */
static int watch_segments(const char *name)
{
	char path[SHM_FILE_PATH_MAX];
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (fd < 0)
		return -1;
	for (unsigned part = SHM_PART_RING; part <= SHM_PART_META; part <<= 1)
		if (shm_file_path(name, part, path, sizeof(path)) == 0)
			inotify_add_watch(fd, path, IN_MODIFY | IN_ATTRIB);
	return fd;
}

/* The collector's tables: allocated whole, here, once. */
static int alloc_engine(struct daemon *d)
{
	struct pairing_config pc = pairing_config_from(d, &d->cfg);
	struct reporter_setup rs = {
		.cfg = &d->cfg,
		.inst = &d->inst,
		.drain = &d->drain,
		.co = &d->co,
		.out = &d->out,
		.clock = &d->clock,
		.names = &d->names,
		.pbounds = &d->pbounds,
		.invariant = d->invariant,
		.overhead_ticks = d->overhead_ticks,
		.start_mono_ns = d->start_mono_ns,
	};

	rs.pairing = d->pairing = pairing_new(&pc);
	if (!d->pairing || reporter_init(&d->rep, &rs) < 0 ||
	    name_cache_init(&d->names, d->cfg.max_names) < 0) {
		/* Retrying cannot make memory appear: a configuration error. */
		log_error("cannot allocate the collector's tables for max_stages = %u and "
			  "max_open_spans = %u: %s; lower them", d->cfg.max_stages,
			  d->cfg.max_open_spans, strerror(errno));
		return -ENOMEM;
	}
	return 0;
}

/* The clock, the per-stamp overhead and the buckets in ticks. */
static void measure_clock(struct daemon *d)
{
	tsc_clock_start(&d->clock, 10);
	d->invariant = tsc_invariant();
	if (PERFMON_CLOCK == PERFMON_CLOCK_TSC && !d->invariant)
		log_warning("this CPU's TSC is not invariant: latencies may be wrong when the "
			    "frequency changes");
	if (PERFMON_CLOCK == PERFMON_CLOCK_TSC) {
		char src[64];
		if (tsc_clocksource(TSC_CLOCKSOURCE_PATH, src, sizeof(src)) == 0)
			log_warning("the kernel's clock source is '%s', not 'tsc': it did not find "
				    "the CPUs' TSCs synchronised, so spans that begin on one CPU "
				    "and end on another may be mismeasured, and their events "
				    "reach pairing out of time order (counted as misordered)", src);
	}
	d->overhead_ticks = tsc_measure_overhead(1000);
	/* Histogram bounds in ticks, fixed for the run: the drain thread counts
	 * samples at them exactly and Prometheus counters must never move. */
	prom_bounds_init(&d->pbounds, d->cfg.buckets.le_ns, d->cfg.buckets.n,
			 tsc_clock_hz(&d->clock));
}

static int start_drain(struct daemon *d, const uint64_t *tails)
{
	struct drain_setup s = {
		.inst = &d->inst,
		.pairing = d->pairing,
		.tails = tails,
		.cpu = d->cfg.cpu,
		.hole_grace_ticks = tsc_ns_to_ticks(&d->clock,
			HOLE_GRACE_NS < d->cfg.stalled_sample_timeout_ns ? HOLE_GRACE_NS :
			d->cfg.stalled_sample_timeout_ns),
		.stall_ticks = tsc_ns_to_ticks(&d->clock, d->cfg.stalled_sample_timeout_ns),
		.live = drain_live_from(d, &d->cfg),
		.wake_fd = d->wakefd,
		.recorder = collector_recorder(&d->co),
		.resume_store = collector_resume_store(&d->co),
	};
	char err[1024];
	int e = drain_start(&d->drain, &s, err, sizeof(err));

	if (e < 0)
		log_error("%s", err);
	return e;
}

static int start(struct daemon *d)
{
	struct shm_geometry g;
	uint64_t *tails = NULL;
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
	/* Before anything is created or written: no other collector may be
	 * writing one of our outputs. */
	if (outputs_lock(&d->out, &d->cfg) < 0)
		return EXIT_RUNTIME;
	measure_clock(d);
	if (alloc_engine(d) < 0) {
		outputs_unlock(&d->out);
		return CONF_EXIT_CONFIG;
	}
	if (collector_open(&d->co, &d->cfg, gid, &d->clock, &d->names) < 0)
		goto error_out;
	if ((e = shm_guard_install()) < 0) {
		log_error("cannot install the SIGBUS handler: %s", strerror(-e));
		goto error_chan;
	}
	g = (struct shm_geometry){ 0, 0, d->cfg.max_names, d->cfg.mode, gid };
	sizing_ring(&d->cfg, &g.capacity, &g.subrings);
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
	if (outputs_open(&d->out, &d->cfg, reporter_settings(&d->rep), mono_ns()) < 0)
		goto error_shm;
	if (!(tails = calloc(d->inst.subrings, sizeof(*tails)))) {
		log_error("cannot allocate the collector's tables: %s", strerror(errno));
		goto error_files;
	}
	if (collector_attach(&d->co, &d->inst, &d->drain, d->invariant, d->overhead_ticks,
			     tails) < 0 || start_drain(d, tails) < 0)
		goto error_files;
	free(tails);
	collector_running(&d->co);
	log_info("collecting from /dev/shm/%s (%u sub-rings of %llu slots%s), %s",
		 d->cfg.shm_name, d->inst.subrings, (unsigned long long)d->inst.capacity,
		 d->inst.created ? ", created" : ", reopened",
		 d->cfg.csv[0] ? d->cfg.csv : "no CSV");
	return 0;

error_files:
	free(tails);
	outputs_discard(&d->out);
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
	collector_close(&d->co);
error_out:
	outputs_unlock(&d->out);
	return EXIT_RUNTIME;
}

static void finish(struct daemon *d)
{
	struct drain_counters c;
	size_t open;

	sd_notify(0, "STOPPING=1");
	d->stopping = true;
	drain_stop(&d->drain, tsc_ns_to_ticks(&d->clock, HOLE_BUDGET_NS));
	c = drain_counters_now(&d->drain);
	if (c.unfinished)
		log_warning("%llu reserved slot(s) never published by shutdown; counted as stalled",
			    (unsigned long long)c.unfinished);
	collector_begin_stop(&d->co, c.dropped);
	/* An interval the reporter had not collected yet, then the last one.
	 * The drain thread has stopped: its side of the engine is ours now.
	 * Spans begun and never ended go into the last interval as abandoned. */
	reporter_interval(&d->rep, true, false);
	open = pairing_abandon_open(d->pairing);
	if (drain_flip_final(&d->drain, tsc_now()))
		reporter_interval(&d->rep, true, true);
	outputs_close(&d->out);
	collector_stop(&d->co);
	log_info("stopped: %llu events drained, %llu dropped, %llu stalled, "
		 "%zu span(s) still open counted as abandoned", (unsigned long long)c.read,
		 (unsigned long long)c.dropped, (unsigned long long)c.stalled, open);
}

static int run(struct daemon *d)
{
	uint64_t deadline = d->cfg.run_duration_ns ? mono_ns() + d->cfg.run_duration_ns : 0;
	bool busy = true;
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
		int timeout = turn_ms(d, busy), nchan;
		uint64_t now = mono_ns();

		if (deadline) {
			if (now >= deadline)
				break;
			if ((deadline - now) / 1000000 < (uint64_t)timeout)
				timeout = (int)((deadline - now) / 1000000) + 1;
		}
		nchan = collector_poll_fill(&d->co, pfd + 3, CHANNEL_MAX_CONNS + 1);
		if (poll(pfd, (nfds_t)(3 + nchan), timeout) < 0 && errno != EINTR) {
			log_error("poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents & POLLIN)
			handle_signals(d);
		if (pfd[1].revents & POLLIN) {
			uint64_t v;
			if (read(d->wakefd, &v, sizeof(v)) == sizeof(v))
				reporter_interval(&d->rep, d->stopping, false);
		}
		if (pfd[2].revents & POLLIN) {
			char buf[4096];
			while (read(d->shmwatch, buf, sizeof(buf)) > 0)
				;
			drain_ring_changed(&d->drain);
		}
		/* Every turn, not only on inotify: a fault the guard absorbed
		 * needs the mapping back even if the size is whole again. */
		busy = collector_tick(&d->co);
		collector_dispatch(&d->co, pfd + 3, nchan);
		watchdog(d);
	}
	finish(d);
	collector_tick(&d->co);
	shm_close(&d->inst);
	if (d->shmwatch >= 0)
		close(d->shmwatch);
	outputs_unlock(&d->out);
	collector_close(&d->co);
	return 0;
}

/* --check-config: print the configuration with where each value came
 * from, refuse what this machine cannot provide; what only the target
 * machine can tell (group, CPU) is a warning here and an error at start. */
static int check_config(struct daemon *d, struct msgs *errs)
{
	conf_print(stdout, &d->cfg);
	sizing_print(stdout, &d->cfg);
	if (sizing_check(&d->cfg, true, errs) < 0) {
		msgs_print(stderr, errs, log_prefix(LOG_ERR));
		return CONF_EXIT_CONFIG;
	}
	if (conf_check_machine(&d->cfg, errs) < 0)
		msgs_print(stderr, errs, log_prefix(LOG_WARNING));
	if (conf_warnings(&d->cfg, errs) > 0)
		msgs_print(stderr, errs, log_prefix(LOG_WARNING));
	return 0;
}

int main(int argc, char **argv)
{
	static struct daemon d;
	struct msgs errs;
	char err[1024];

	log_init("perfmond");
	d.shmwatch = -1;
	outputs_init(&d.out);
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
	msgs_init(&errs);
	if (conf_load(&d.cl, &d.cfg, &errs) < 0) {
		msgs_print(stderr, &errs, log_prefix(LOG_ERR));
		return CONF_EXIT_CONFIG;
	}
	if (d.cl.check_config)
		return check_config(&d, &errs);
	if (sizing_check(&d.cfg, false, &errs) < 0 || conf_check_machine(&d.cfg, &errs) < 0) {
		msgs_print(stderr, &errs, log_prefix(LOG_ERR));
		return CONF_EXIT_CONFIG;
	}
	if (conf_warnings(&d.cfg, &errs) > 0)
		msgs_print(stderr, &errs, log_prefix(LOG_WARNING));
	return run(&d);
}
