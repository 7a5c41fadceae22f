/*
 * reporter.c - one interval from the drain thread to the files (see
 * reporter.h).
 */
#include "build-config.h"

#include <errno.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include <perfmon/clock.h>

#include "clocks.h"
#include "log.h"
#include "reporter.h"
#include "summary.h"
#include "units.h"

int reporter_init(struct reporter *r, const struct reporter_setup *setup)
{
	const struct pm_config *c = setup->cfg;

	memset(r, 0, sizeof(*r));
	r->s = *setup;
	r->rs.unit = c->unit;
	r->rs.npct = c->percentiles.n;
	for (unsigned i = 0; i < r->rs.npct; i++) {
		r->rs.pct[i] = c->percentiles.p[i];
		units_percentile_label(r->rs.pct[i], r->rs.pct_label[i], sizeof(r->rs.pct_label[i]));
	}
	r->rs.subtract_overhead = c->subtract_overhead;
	if (report_init(&r->rep, setup->pairing) < 0 || report_init(&r->life, setup->pairing) < 0) {
		reporter_free(r);
		return -ENOMEM;
	}
	return 0;
}

const struct report_settings *reporter_settings(const struct reporter *r)
{
	return &r->rs;
}

void reporter_free(struct reporter *r)
{
	report_free(&r->rep);
	report_free(&r->life);
}

/* One instant on both clocks and the rate between them. */
struct anchor {
	uint64_t tsc, realtime_ns;
	double hz;
};

static uint64_t anchor_realtime(const void *ctx, uint64_t tsc)
{
	const struct anchor *a = ctx;
	return tsc_realtime_at(tsc, a->tsc, a->realtime_ns, a->hz);
}

/* The lifetime rows, with the collector-wide counts `c`. */
static void build_lifetime(struct reporter *r, const struct pairing_interval *iv, double hz,
			   const struct drain_counters *c)
{
	struct report_collector coll = { c->dropped, c->stalled };
	report_build_lifetime(&r->life, r->s.pairing, iv, r->s.names, &r->rs, hz, &coll);
}

/* The summary `which`; needs a collected interval.  0, or a negative
 * errno (logged, and the message left in `err` when given). */
static int write_summary(struct reporter *r, const struct pairing_interval *iv,
			 enum outputs_summary which, char *err, size_t errlen)
{
	struct drain_counters c = drain_counters_now(r->s.drain);
	struct summary_info si = {
		.instance = r->s.cfg->shm_name,
		.tsc_hz = tsc_clock_hz(r->s.clock),
		.tsc_invariant = r->s.invariant,
		.tsc_clock = PERFMON_CLOCK == PERFMON_CLOCK_TSC,
		.run_ns = mono_ns() - r->s.start_mono_ns,
		.overhead_ticks = (double)r->s.overhead_ticks,
		.subtracting = r->s.cfg->subtract_overhead,
		.unit = r->rs.unit,
		.drained = c.read,
		.dropped = c.dropped,
		.stalled = c.stalled,
		.misordered = c.misordered,
	};

	if (which == OUTPUTS_SUMMARY_CONFIGURED && !r->s.cfg->summary[0])
		return 0;
	build_lifetime(r, iv, si.tsc_hz, &c);
	report_set_clock(&r->life, tsc_now(), real_ns());
	return outputs_write_summary(r->s.out, which, &r->life, &si, err, errlen);
}

/* The Prometheus textfile: lifetime figures, rewritten every interval. */
static void write_prom(struct reporter *r, const struct pairing_interval *iv, double hz,
		       const struct drain_counters *c, uint64_t end_real)
{
	const struct pm_config *cfg = r->s.cfg;
	struct prom_snapshot ps;

	build_lifetime(r, iv, hz, c);
	ps = (struct prom_snapshot){
		.instance = cfg->shm_name,
		.lifetime = &r->life,
		.quantiles = r->rs.pct,
		.nquantiles = r->rs.npct,
		.le_ns = cfg->buckets.le_ns,
		.nle = cfg->buckets.n,
		.counted = r->s.pbounds,
		.slots = pairing_bounds(r->s.pairing),
		.tsc_hz = hz,
		.tsc_invariant = r->s.invariant,
		.tsc_clock = PERFMON_CLOCK == PERFMON_CLOCK_TSC,
		.drained = c->read,
		.dropped = c->dropped,
		.stalled = c->stalled,
		.misordered = c->misordered,
		.flush_interval_ns = cfg->flush_interval_ns,
		.flush_realtime_ns = end_real,
	};
	outputs_write_prom(r->s.out, &ps);
}

/* Anomalies of the reader, logged as their counts grow. */
static void log_reader_anomalies(const struct reporter *r, const struct drain_counters *c)
{
	const char *name = r->s.inst->name;

	if (c->head_resets != r->last.head_resets)
		log_warning("a sub-ring's head took an absurd value (%llu time(s) in all): a "
			    "producer wrote garbage into /dev/shm/%s; reading resynchronised "
			    "where producers now reserve", (unsigned long long)c->head_resets, name);
	if (c->misordered != r->last.misordered)
		log_warning("%llu span event(s) in all reached pairing out of time order (a slot "
			    "published after the hole grace, or a timestamp from the future in "
			    "/dev/shm/%s)", (unsigned long long)c->misordered, name);
}

bool reporter_interval(struct reporter *r, bool stopping, bool last)
{
	struct shm_instance *inst = r->s.inst;
	struct pairing_interval iv;
	struct report_collector coll;
	struct drain_counters c;
	struct anchor a;
	uint64_t now_mono, end_real;
	double secs;

	if (!drain_collect(r->s.drain, &iv, &c))
		return false;
	tsc_clock_refine(r->s.clock);
	a.hz = tsc_clock_hz(r->s.clock);
	collector_repair(r->s.co, a.hz);
	/* The two readings are back to back: a better anchor than the
	 * interval's end, whose wall-clock time is read later. */
	a.tsc = tsc_now();
	a.realtime_ns = real_ns();
	pairing_date_outliers(r->s.pairing, anchor_realtime, &a);
	now_mono = mono_ns();
	name_cache_refresh(r->s.names, inst->meta, inst->names, inst->max_names);

	log_reader_anomalies(r, &c);
	coll.dropped = c.dropped - r->last.dropped;
	coll.stalled = c.stalled - r->last.stalled;
	end_real = a.realtime_ns - (uint64_t)tsc_to_ns(r->s.clock, (double)(a.tsc > iv.end_tsc ?
									    a.tsc - iv.end_tsc : 0));
	report_build_interval(&r->rep, r->s.pairing, &iv, r->s.names, &r->rs, a.hz, &coll,
			      end_real);

	if (outputs_write_interval(r->s.out, &r->rep, now_mono, a.realtime_ns, stopping))
		write_summary(r, &iv, OUTPUTS_SUMMARY_ROTATED, NULL, 0);
	if (r->s.cfg->prom_textfile[0])
		write_prom(r, &iv, a.hz, &c, end_real);
	if (collector_summary_wanted(r->s.co)) {
		char serr[512] = "";
		int e = write_summary(r, &iv, OUTPUTS_SUMMARY_CONFIGURED, serr, sizeof(serr));
		collector_summary_done(r->s.co, e, serr);
	}
	if (last)
		write_summary(r, &iv, OUTPUTS_SUMMARY_CONFIGURED, NULL, 0);
	pairing_release(r->s.pairing);

	secs = r->last_mono_ns ? (double)(now_mono - r->last_mono_ns) / 1e9 : 0;
	sd_notifyf(0, "STATUS=%.0f events/s, dropped %llu, stalled %llu",
		   secs > 0 ? (double)(c.read - r->last.read) / secs : 0.0,
		   (unsigned long long)c.dropped, (unsigned long long)c.stalled);
	r->last_mono_ns = now_mono;
	r->last = c;
	return true;
}
