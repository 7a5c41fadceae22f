"""prom_dashboard.py - run by prom_dashboard.sh against a live Prometheus.

    prom_dashboard.py PROM_URL HOST INSTANCE DASHBOARD.json RULES_DIR OUT.csv

Waits (bounded) for two scrapes with traffic and for the recording rules,
then evaluates, at one instant:
  - the dashboard's variables (label_values() through the series API);
  - every panel target, with the variables substituted once as "All"
    (their allValue) and once as one value each, $__rate_interval as a
    window covering the run;
  - every recording rule (its expression and its recorded series) and
    every alert rule (its state, its expression, and the operands of its
    top-level comparison).
Each result must have the labels the panel's legend or the rule's grouping
names, and plausible values: percentiles (p50, p99, p99.9) within the
CSV's over the same intervals, widened to the histogram buckets they fall
in, the mean equal to the CSV's, zero losses, a fresh collector.  A rule
or panel this file has no expectation for is an error: add one.
"""
import calendar
import csv
import json
import math
import re
import statistics
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

PROM, HOST, INSTANCE, DASHBOARD, RULES, CSV = sys.argv[1:7]
# $__rate_interval: covers the whole run, from the first scrape (the
# producers already run: prom_dashboard.sh starts them first) to the
# evaluation; set below, once the scrapes are in.
WINDOW = None
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def api(path, **params):
    url = PROM + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")
    try:
        with OPENER.open(url, timeout=10) as r:
            doc = json.load(r)
    except urllib.error.HTTPError as e:
        raise RuntimeError("%s: %s %s" % (url, e, e.read().decode(errors="replace")))
    if doc.get("status") != "success":
        raise RuntimeError("%s: %r" % (url, doc))
    return doc["data"]


def query(expr, at):
    data = api("/api/v1/query", query=expr, time="%.3f" % at)
    if data["resultType"] != "vector":
        raise RuntimeError("%s: result type %s" % (expr, data["resultType"]))
    return [(r["metric"], float(r["value"][1])) for r in data["result"]]


# ---- wait: two scrapes with traffic, rules evaluated ------------------------
deadline = time.monotonic() + 60
need = [
    # three samples of a moving count: the first scrape and two more
    'count_over_time(perfmond_latency_seconds_count{point="alpha",stage="total"}[1m]) >= 3',
    'increase(perfmond_latency_seconds_count{point="alpha",stage="total"}[1m]) > 0',
    'increase(perfmond_latency_seconds_count{point="beta",stage="total"}[1m]) > 0',
    'fleet:perfmond_latency_seconds:p99_rate5m{point="alpha",stage="total"}',
    'instance:perfmond_latency_seconds:p99_rate5m{point="beta",stage="total"}',
]
while True:
    missing = [q for q in need if not query(q, time.time())]
    if not missing:
        break
    if time.monotonic() > deadline:
        sys.exit("after 60 s still nothing for: %s" % missing)
    time.sleep(0.5)
# One more evaluation round, so every rule ran on the same data.
time.sleep(1.5)
NOW = round(time.time(), 3)   # as queries send it: in milliseconds
print("scraped; evaluating at %.3f" % NOW)
# A scrape or rule evaluation stamped at or before NOW may still be being
# stored (each runs every second, and takes at most that): wait for them,
# so that every query at NOW below sees the same samples.  (Without this,
# the [5m] and [90s] ranges below were once read a scrape apart.)
time.sleep(1.5)

# ---- the daemon's own figures ----------------------------------------------
# The intervals a rate() over the run covers: after the one the first
# scrape saw, up to the one the last scrape saw (the file's flush time is
# the CSV timestamp of its interval).
# 90 s, or on a loaded machine, where scrapes time out and the run
# stretches, twice the age of the first sample: the window then starts
# further before it than the samples' mean spacing (there are at least
# three), so rate() extrapolates toward its start as with a quick run.
older = api("/api/v1/query", query="perfmond_last_flush_timestamp_seconds[5m]",
            time="%.3f" % NOW)["result"][0]["values"]
AGE = NOW - float(older[0][0])
WINDOW = "%ds" % max(90, 2 * math.ceil(AGE))
flushes = api("/api/v1/query", query="perfmond_last_flush_timestamp_seconds[%s]" % WINDOW,
              time="%.3f" % NOW)["result"][0]["values"]
if AGE > 150 or len(older) != len(flushes):
    sys.exit("the run outgrew its window: first sample %.0f s old, %d samples in 5m, %d in %s"
             % (AGE, len(older), len(flushes), WINDOW))
print("window %s: %d scrapes" % (WINDOW, len(flushes)))
first, last = float(flushes[0][1]), float(flushes[-1][1])


def stamp(text):
    day, clock = text.split(" ")
    return calendar.timegm(time.strptime(day + " " + clock[:8], "%Y-%m-%d %H:%M:%S")) + \
        float("0" + clock[8:])


rows = [r for r in csv.DictReader(open(CSV, newline=""))
        if first + 0.0005 < stamp(r["timestamp"]) <= last + 0.0005 and int(r["count"]) > 0]
print("%d scrapes over %.1f s of flushes; %d CSV rows between them" % (
    len(flushes), last - first, len(rows)))


def csv_figure(point, stage, col):
    """The figure of the CSV over the scraped intervals: the count-weighted
    mean; for a percentile (which cannot be rebuilt from the rows) the
    median, least and greatest over the intervals."""
    mine = [r for r in rows if r["point"] == point and r["stage"] == stage]
    if col == "mean_ns":
        n = sum(int(r["count"]) for r in mine)
        return sum(float(r[col]) * int(r["count"]) for r in mine) / n / 1e9 if n else None
    vals = [float(r[col]) / 1e9 for r in mine]
    return (statistics.median(vals), min(vals), max(vals)) if vals else None


# The exposition's bucket bounds (the finite `le`s), in seconds.
BOUNDS = sorted(float(l["le"]) for l, _ in
                query('count by (le) (perfmond_latency_seconds_bucket{le!="+Inf"})', NOW))


def near(got, want, what):
    """A percentile of the run lies between the least and the greatest of
    the intervals' (each within 1/16: the daemon's histogram), and
    histogram_quantile() interpolates inside the bucket that holds it: the
    answer lies between the lower bound of the bucket of the least and the
    upper bound of the bucket of the greatest (with the default bounds,
    within 10%; below the lowest bound, anywhere in the first bucket from
    0).  The median over the intervals is printed beside it."""
    if want is None:
        fail("%s: the CSV has no rows to compare with" % what)
        return
    median, lo, hi = want
    floor = max([b for b in BOUNDS if b < lo * (1 - 1 / 16)], default=0.0)
    ceil = min([b for b in BOUNDS if b >= hi * (1 + 1 / 16)], default=math.inf)
    if not floor <= got <= ceil:
        fail("%s = %.3g s, outside the CSV's intervals %.3g..%.3g s (median %.3g s) "
             "widened to their buckets %.3g..%.3g s" % (what, got, lo, hi, median, floor, ceil))
    else:
        print("  %s = %.3g s (CSV: median %.3g s, intervals %.3g..%.3g s)" % (what, got, median, lo, hi))


def labels_of(series):
    return {k for k in series if k != "__name__"}


TARGET_LABELS = {"instance", "job", "perfmond_instance"}
# The producer names steps 1 and 2 of alpha; the step to the end stays unnamed.
STAGES = {("alpha", "total"), ("alpha", "alpha.s1"), ("alpha", "alpha.s2"),
          ("alpha", "step_2->255"), ("beta", "total")}

# ---- the dashboard -------------------------------------------------------
dash = json.load(open(DASHBOARD))
variables = {v["name"]: v for v in dash["templating"]["list"]}
for name in ("datasource", "host", "instance", "point", "stage"):
    if name not in variables:
        fail("dashboard: no $%s variable" % name)
if variables.get("datasource", {}).get("type") != "datasource" or \
   variables["datasource"].get("query") != "prometheus":
    fail("dashboard: $datasource is not a Prometheus data source variable")
DS = {"type": "prometheus", "uid": "${datasource}"}


def substitute(text, values):
    text = text.replace("$__rate_interval", WINDOW)
    for name in sorted(values, key=len, reverse=True):
        text = text.replace("${%s}" % name, values[name]).replace("$" + name, values[name])
    if "$" in text.replace("$1", ""):
        fail("unsubstituted variable in %r" % text)
    return text


# Variables in order, each query with the earlier ones substituted: the
# values Grafana would offer.
offered = {}
chosen_all, chosen_one = {}, {}
want_one = {"host": HOST, "instance": INSTANCE, "point": "alpha", "stage": "total"}
for name in ("host", "instance", "point", "stage"):
    v = variables[name]
    m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", v["definition"])
    if not m or v["query"].get("query") != v["definition"]:
        fail("$%s: not a label_values(selector, label) query: %r" % (name, v["definition"]))
        continue
    if not v.get("includeAll") or v.get("allValue") != ".*" or not v.get("multi"):
        fail("$%s: want multi-value with All = .*" % name)
    sel = substitute(m.group(1), chosen_all)
    series = api("/api/v1/series", **{"match[]": sel, "start": "%.3f" % (NOW - 300),
                                      "end": "%.3f" % NOW})
    offered[name] = sorted({s[m.group(2)] for s in series if m.group(2) in s})
    print("$%s offers %s" % (name, offered[name]))
    if want_one[name] not in offered[name]:
        fail("$%s does not offer %r" % (name, want_one[name]))
    chosen_all[name] = ".*"
    # As Grafana writes a value into a regex matcher: escaped for the
    # regex, then for the PromQL string.
    chosen_one[name] = re.escape(want_one[name]).replace("\\", "\\\\")
if set(offered.get("point", [])) != {"alpha", "beta"}:
    fail("$point offers %s, want alpha and beta" % offered.get("point"))
if set(offered.get("stage", [])) != {s for _, s in STAGES}:
    fail("$stage offers %s" % offered.get("stage"))

tsc = query("perfmond_tsc_invariant", NOW)
tsc_invariant = tsc[0][1] if len(tsc) == 1 else None


def check_panel(title, target, series, mode):
    what = "%s [%s] (%s)" % (title, target["refId"], mode)
    if not series:
        fail("%s: no series" % what)
        return
    want = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")))
    for labels, value in series:
        if not want <= labels_of(labels):
            fail("%s: series %r lacks legend labels %s" % (what, labels, want))
        if not math.isfinite(value):
            fail("%s: %r = %r" % (what, labels, value))
    if labels_of(series[0][0]) & {"point", "stage"} == {"point", "stage"}:
        got = {(l["point"], l["stage"]) for l, _ in series}
        expect = STAGES if mode == "All" else {("alpha", "total")}
        if got != expect:
            fail("%s: stages %s, want %s" % (what, sorted(got), sorted(expect)))
    for labels, value in series:
        if "instance" in labels and labels["instance"] != HOST or \
           "perfmond_instance" in labels and labels["perfmond_instance"] != INSTANCE:
            fail("%s: foreign series %r" % (what, labels))
        name = "%s %s" % (what, " ".join("%s=%s" % kv for kv in sorted(labels.items())))
        quant = re.match(r"histogram_quantile\((0\.\d+),", target["expr"])
        if quant:
            col = {"0.5": "p50_ns", "0.99": "p99_ns", "0.999": "p99_9_ns"}.get(quant.group(1))
            if col:
                near(value, csv_figure(labels["point"], labels["stage"], col), name)
            else:
                fail("%s: no CSV column for quantile %s: add one" % (name, quant.group(1)))
        elif title in ("Event rate", "Span rate per stage"):
            if not value > 0:
                fail("%s = %r, want > 0" % (name, value))
            print("  %s = %.1f /s" % (name, value))
        elif title in ("Dropped and stalled", "Span anomalies per point"):
            if value != 0:
                fail("%s = %r, want 0" % (name, value))
        elif title == "Collector up":
            if value != 1:
                fail("%s = %r, want 1" % (name, value))
        elif title == "Age of the last flush":
            if not 0 <= value < 10:
                fail("%s = %r s, want a fresh file" % (name, value))
            print("  %s = %.2f s" % (name, value))
        elif title == "TSC invariant":
            if value != tsc_invariant or value not in (0, 1):
                fail("%s = %r, the exposition says %r" % (name, value, tsc_invariant))
        else:
            fail("%s: no expectation for this panel: add one" % what)
            return


npanels = nqueries = 0
for panel in dash["panels"]:
    if panel["type"] == "row":
        continue
    npanels += 1
    if panel.get("datasource") != DS:
        fail("panel %r: datasource %r, want the $datasource variable" % (panel["title"], panel.get("datasource")))
    if not panel.get("targets"):
        fail("panel %r has no query" % panel["title"])
    for target in panel.get("targets", []):
        if target.get("datasource") != DS:
            fail("panel %r %s: datasource is not $datasource" % (panel["title"], target["refId"]))
        for mode, values in (("All", chosen_all), ("one", chosen_one)):
            expr = substitute(target["expr"], values)
            nqueries += 1
            check_panel(panel["title"], target, query(expr, NOW), mode)
print("dashboard: %d panels, %d queries evaluated" % (npanels, nqueries))

# ---- the rules -----------------------------------------------------------
in_files = {}
for f in ("perfmond-recording.yml", "perfmond-alerts.yml"):
    for g in yaml.safe_load(open("%s/%s" % (RULES, f)))["groups"]:
        for r in g["rules"]:
            in_files[r.get("record") or r.get("alert")] = r
loaded = {}
for g in api("/api/v1/rules")["groups"]:
    for r in g["rules"]:
        loaded[r["name"]] = r
        if r["health"] != "ok" or r.get("lastError"):
            fail("rule %s: health %s %s" % (r["name"], r["health"], r.get("lastError", "")))
if set(loaded) != set(in_files):
    fail("rules loaded %s, in the files %s" % (sorted(loaded), sorted(in_files)))

# record -> (labels, check(labels, value) -> error or None)
P = {"point", "stage"}


def quantile_check(col):
    def check(labels, value):
        near(value, csv_figure(labels["point"], labels["stage"], col),
             "%s %s/%s" % (rule, labels["point"], labels["stage"]))
    return check


def positive(labels, value):
    return None if value > 0 else "%r, want > 0" % value


def zero(labels, value):
    return None if value == 0 else "%r, want 0" % value


def increase(samples, start, end):
    """increase() over [start, end] as Prometheus 2 works it out from the
    raw samples (the daemon's counters never reset): the rise from the
    first sample to the last, extrapolated toward the window's ends, by
    at most half a scrape interval where the samples stop short, and at the
    start never past where the counter would have been 0."""
    (t0, v0), (t1, v1) = samples[0], samples[-1]
    rise, sampled = v1 - v0, t1 - t0
    avg = sampled / (len(samples) - 1)
    to_start, to_end = t0 - start, end - t1
    if rise > 0 and v0 >= 0:
        to_start = min(to_start, sampled * v0 / rise)
    span = sampled + sum(d if d < 1.1 * avg else avg / 2 for d in (to_start, to_end))
    return rise * span / sampled


def mean_check(labels, value):
    """Two checks.  The exposition's sum and count rose, between the first
    scrape and the last, by the CSV's spans over the same intervals: their
    quotient is the CSV's mean, exactly but for the CSV's rounding to 0.1
    ns and the conversion rate (parts per million).  And the rule divides
    the two rates: each is extrapolated on its own, and at the start the
    limit at 0 differs between a sum and a count whose first intervals'
    mean differs from the run's, so its value is the quotient of the two
    increases worked out as Prometheus does, not the raw one."""
    want = csv_figure(labels["point"], labels["stage"], "mean_ns")
    what = "%s %s/%s" % (rule, labels["point"], labels["stage"])
    if "[%s]" % RULE_RANGE not in in_files[rule]["expr"]:
        return "its expression has no [%s] window: set RULE_RANGE to its window" % RULE_RANGE
    sel = '{perfmond_instance="%s",point="%s",stage="%s"}[%s]' % (
        labels["perfmond_instance"], labels["point"], labels["stage"], RULE_RANGE)
    raw = []
    for name in ("perfmond_latency_seconds_sum", "perfmond_latency_seconds_count"):
        res = api("/api/v1/query", query=name + sel, time="%.3f" % NOW)["result"]
        if len(res) != 1 or len(res[0]["values"]) < 2:
            return "%s%s: %d series, want one with two samples or more" % (name, sel, len(res))
        raw.append([(float(t), float(v)) for t, v in res[0]["values"]])
    (s, c), start = raw, NOW - RULE_SECONDS
    plain = (s[-1][1] - s[0][1]) / (c[-1][1] - c[0][1])
    if want is None or not abs(plain - want) <= 1e-3 * want + 0.1e-9:
        return "the exposition's mean from the first scrape to the last is %r s, the " \
            "CSV's over the same intervals %r s" % (plain, want)
    # The replica first, against Prometheus's own increase() of each.
    for name, samples in zip(("sum", "count"), raw):
        got = api("/api/v1/query", query="increase(perfmond_latency_seconds_%s%s)" % (name, sel),
                  time="%.3f" % NOW)["result"]
        mine = increase(samples, start, NOW)
        if len(got) != 1 or not abs(float(got[0]["value"][1]) - mine) <= 1e-6 * mine:
            return "increase() of the %s is %s, worked out here %r" % (
                name, [g["value"][1] for g in got], mine)
    ruled = increase(s, start, NOW) / increase(c, start, NOW)
    if not abs(value - ruled) <= 1e-6 * ruled:
        return "%r s, the quotient of the increases is %r s" % (value, ruled)
    print("  %s = %.6g s (CSV %.6g s; the scrapes' sum / count %.6g s, extrapolated %.6g s)"
          % (what, value, want, plain, ruled))


# The window of the rates in the rules (the mean's above all).
RULE_RANGE, RULE_SECONDS = "5m", 300

RECORDING = {
    "instance:perfmond_latency_seconds:p99_rate5m": ({"instance", "perfmond_instance"} | P, quantile_check("p99_ns")),
    "fleet:perfmond_latency_seconds_bucket:rate5m": ({"perfmond_instance", "le"} | P, lambda l, v: None if v >= 0 else "negative"),
    "fleet:perfmond_latency_seconds:p99_rate5m": ({"perfmond_instance"} | P, quantile_check("p99_ns")),
    "fleet:perfmond_latency_seconds:p50_rate5m": ({"perfmond_instance"} | P, quantile_check("p50_ns")),
    "fleet:perfmond_latency_seconds:mean_rate5m": ({"perfmond_instance"} | P, mean_check),
    "fleet:perfmond_latency_seconds_count:rate5m": ({"perfmond_instance"} | P, positive),
    "instance:perfmond_events_dropped:ratio_rate5m": (TARGET_LABELS, zero),
}
# alert -> (labels of the first operand, range of its values, firing?)
ALERTS = {
    "PerfmondEventsDropped": (TARGET_LABELS, (0, 0), False),
    "PerfmondSlotsStalled": (TARGET_LABELS, (0, 0), False),
    "PerfmondCollectorStale": (TARGET_LABELS, (0, 10), False),
    "PerfmondCollectorMissing": (TARGET_LABELS, (NOW - 120, NOW + 1), False),
    "PerfmondTextfileUnreadable": ({"instance", "job"}, (0, 0), False),
    "PerfmondStageTableFull": (TARGET_LABELS | {"point"}, (0, 0), False),
    "PerfmondTscNotInvariant": (TARGET_LABELS, (0, 1), tsc_invariant == 0),
    "PerfmondP99Regression": ({"perfmond_instance"} | P, (1e-9, 1), False),
    "PerfmondHostP99Outlier": ({"instance", "perfmond_instance"} | P, (1e-9, 1), False),
}


def same_series(a, b):
    key = lambda s: sorted((tuple(sorted(l.items())), v) for l, v in s)
    return key(a) == key(b)


for rule, r in in_files.items():
    if "record" in r:
        if rule not in RECORDING:
            fail("recording rule %s: no expectation: add one" % rule)
            continue
        want, check = RECORDING[rule]
        direct = query(r["expr"], NOW)
        recorded = query(rule, NOW)
        if not direct or not recorded:
            fail("%s: expression gives %d series, recorded %d" % (rule, len(direct), len(recorded)))
            continue
        if {tuple(sorted(l.items())) for l, _ in direct} != \
           {tuple(sorted((k, x) for k, x in l.items() if k != "__name__")) for l, _ in recorded}:
            fail("%s: the recorded label sets differ from the expression's" % rule)
        for labels, value in direct:
            if labels_of(labels) != want:
                fail("%s: labels %s, want %s" % (rule, sorted(labels), sorted(want)))
            err = check(labels, value)
            if err:
                fail("%s %r: %s" % (rule, labels, err))
        if P <= want and {(l["point"], l["stage"]) for l, _ in direct} != STAGES:
            fail("%s: stages %s" % (rule, sorted({(l["point"], l["stage"]) for l, _ in direct})))
        print("recording %s: %d series" % (rule, len(direct)))
        continue
    if rule not in ALERTS:
        fail("alert %s: no expectation: add one" % rule)
        continue
    want, (lo, hi), firing = ALERTS[rule]
    state = loaded.get(rule, {}).get("state")
    if state != ("firing" if firing else "inactive"):
        fail("alert %s is %s" % (rule, state))
    if bool(query(r["expr"], NOW)) != firing:
        fail("alert %s: its expression %s" % (rule, "is empty" if firing else "matches"))
    # The operands of the top-level comparison or set operator; the first
    # is the figure the alert watches.
    expr, depth, quote, cuts, i = r["expr"].strip(), 0, None, [], 0
    while i < len(expr):
        c = expr[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and not re.match(r"[\w:]", expr[i - 1] if i else " "):
            m = re.match(r"(==|!=|>=|<=|>|<|and\b|or\b|unless\b)", expr[i:])
            if m:
                cuts.append((i, i + m.end()))
                i += m.end()
                continue
        i += 1
    if not cuts:
        fail("alert %s: no comparison in %r" % (rule, expr))
        continue
    bounds = [0] + [x for c in cuts for x in c] + [len(expr)]
    operands = [expr[bounds[k]:bounds[k + 1]] for k in range(0, len(bounds), 2)]
    mod = re.compile(r"^\s*(bool\b|(on|ignoring|group_left|group_right)\s*(\([^)]*\))?)\s*")
    for k, operand in enumerate(operands):
        while mod.match(operand):
            operand = operand[mod.match(operand).end():]
        operand = operand.strip()
        if re.fullmatch(r"[0-9.e+-]+", operand):
            continue
        result = query(operand, NOW)
        if k > 0:
            print("  %s operand %d: %d series" % (rule, k, len(result)))
            continue
        if not result:
            fail("alert %s: %s gives nothing" % (rule, operand))
        for labels, value in result:
            if labels_of(labels) != want:
                fail("alert %s: %s labels %s, want %s" % (rule, operand, sorted(labels), sorted(want)))
            if not lo <= value <= hi:
                fail("alert %s: %s %r = %r, want %g..%g" % (rule, operand, labels, value, lo, hi))
        print("alert %s: %s; %s: %d series, values %s" % (
            rule, state, operand, len(result), sorted({"%.4g" % v for _, v in result})))

if failures:
    sys.exit("%d failures" % len(failures))
print("all %d rules and %d dashboard queries hold" % (len(in_files), nqueries))
