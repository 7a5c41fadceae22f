#!/bin/sh
# ctl_report_json.sh - perfmonctl report --format json over a CSV the real
# daemon wrote: one document, exact counts as JSON integers, figures as
# numbers, every configured percentile; $PERFMON_FORMAT=json works too.
. "$top_srcdir/tests/integration/daemon_lib.sh"
PERFMONCTL="$top_builddir/src/perfmonctl"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to parse the JSON"; exit 77; }

start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "" --interval 100ms
"$PRODUCER" "$SHM" 7 1000 --steps --label engine >/dev/null || fail "producer failed"
"$PRODUCER" "$SHM" 8 500 --values --label depth >/dev/null || fail "value producer failed"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "daemon exited $DSTATUS"

"$PERFMONCTL" report "$T/out.csv" --format json >"$T/r.json" || fail "report exit $?"
[ "$(wc -l <"$T/r.json")" = 1 ] || fail "not one document on one line"
python3 - "$T/r.json" "$T/out.csv" <<'PY' || fail "report JSON wrong: $(cat "$T/r.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["file"] == sys.argv[2] and d["unit"] == "ns", d
assert d["percentiles"] == ["p50", "p90", "p99", "p99_9"], d["percentiles"]
assert isinstance(d["rows"], int) and d["rows"] > 0 and d["dropped"] == 0
st = {(s["point"], s["stage"]): s for s in d["stages"]}
tot = st[("engine", "total")]
assert tot["count"] == 1000 and tot["kind"] == "latency", tot
assert st[("engine", "engine.s1")]["count"] == 1000
assert isinstance(tot["mean"], (int, float)) and tot["min"] <= tot["mean"] <= tot["max"], tot
for p in d["percentiles"]:
    f = tot["percentiles"][p]
    assert f["min"] <= f["median"] <= f["max"], (p, f)
v = st[("depth", "value")]
assert v["kind"] == "value" and v["count"] == 500 and v["min"] == 0 and v["max"] == 499, v
for k in ("invalid", "abandoned", "orphan", "out_of_range"):
    assert tot[k] == 0, k
PY
PERFMON_FORMAT=json "$PERFMONCTL" report "$T/out.csv" | python3 -c 'import json,sys; json.load(sys.stdin)' ||
	fail "PERFMON_FORMAT=json did not give JSON"
ok "report --format json: counts exact, figures numeric, percentiles complete"
