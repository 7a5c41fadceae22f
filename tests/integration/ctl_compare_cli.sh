#!/bin/sh
# ctl_compare_cli.sh - the real `perfmonctl compare` on the command line:
# --format json parsed with python3's json, --junit FILE parsed with
# xml.etree.ElementTree (one test case per stage present in both files, a
# failure element on the planted regression only, no "nan" anywhere), the
# exit codes of perfmonctl(1) (0, 1 bad usage, 4 unreadable or mismatched,
# 5 regression with --fail-on-regression), several runs per side, and a
# CSV the real daemon wrote compared with itself.
. "$top_srcdir/tests/integration/daemon_lib.sh"
PERFMONCTL="$top_builddir/src/perfmonctl"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to parse JSON and XML"; exit 77; }

# expect RC CMD...: run CMD, output in $T/out and $T/err; its exit code must be RC.
expect() {
	want=$1; shift
	rc=0
	"$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" = "$want" ] ||
		fail "$* exited $rc, not $want: $(cat "$T/out" "$T/err")"
}

# Synthetic runs with the documented header (perfmond(8), docs/csv.md):
# 30 one-second intervals of
#   gw/total   latency, p50 about 1000 ns (x SCALE in the run), 1% noise
#   gw/parse   latency, about 400 ns, the same on both sides
#   gw/idle    anomaly-only rows (count 0): present in both, no samples
#   depth/value   value samples, identical in every run
#   only/base or only/current  a stage of one side only
# gen FILE SIDE SCALE SEED
gen() {
	python3 - "$@" <<'PY'
import random, sys
path, side, scale, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(seed)
same = random.Random(99)     # the value stage: identical on every run
hdr = ("timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,"
       "out_of_range,min_ns,mean_ns,stddev_ns,p50_ns,p90_ns,p99_ns,p99_9_ns,max_ns,tsc_hz")
def lat(p50):
    x = p50 * (1 + 0.01 * rnd.gauss(0, 1))
    return [0.6 * x, 1.1 * x, 0.3 * x, x, 1.5 * x, 2.5 * x, 4 * x, 9 * x]
with open(path, "w") as f:
    print(hdr, file=f)
    for i in range(30):
        ts = "2024-05-01 12:00:%02d.000" % (i + 1)
        rows = [("gw", "total", "latency", 1000, lat(1000 * scale)),
                ("gw", "parse", "latency", 1000, lat(400)),
                ("only", side, "latency", 10, lat(50))]
        for p, s, k, n, x in rows:
            print("%s,%s,%s,%s,%d,0,0,0,0,0,0,%s,1067580369" % (
                ts, p, s, k, n, ",".join("%.1f" % v for v in x)), file=f)
        print("%s,gw,idle,latency,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,1067580369" % ts, file=f)
        d = same.randrange(90, 110)
        print("%s,depth,value,value,50,0,0,0,0,0,0,%d,%d.000,3.000,%d,%d,%d,%d,%d,1067580369"
              % (ts, d - 10, d, d, d + 5, d + 8, d + 9, d + 10), file=f)
PY
}

gen "$T/a.csv" base 1.0 1
gen "$T/a2.csv" base 1.0 2
gen "$T/a3.csv" base 1.0 3
gen "$T/same.csv" current 1.0 4
gen "$T/b.csv" current 1.12 5
gen "$T/b2.csv" current 1.12 6
gen "$T/b3.csv" current 1.12 7

# check_json FILE EXPECT_REGRESSED_STAGE|- : the document's shape and verdicts.
check_json() {
	python3 - "$@" <<'PY' || fail "compare JSON: $(cat "$1")"
import json, sys
doc = json.load(open(sys.argv[1]))
planted = sys.argv[2]
assert doc["metric"] == "p50" and doc["unit"] == "ns", doc
for k in ("threshold", "min_delta", "max_cv", "confidence"):
    assert isinstance(doc[k], (int, float)), k
assert doc["threshold"] == 0.05 and doc["seed"] == 1, doc
assert isinstance(doc["notes"], list)
st = {(s["point"], s["stage"]): s for s in doc["stages"]}
assert st[("only", "base")]["presence"] == "base", st[("only", "base")]
assert st[("only", "current")]["presence"] == "current", st[("only", "current")]
assert "severity" not in st[("only", "base")]
both = [s for s in doc["stages"] if s["presence"] == "both"]
assert sorted((s["point"], s["stage"]) for s in both) == \
    [("depth", "value"), ("gw", "idle"), ("gw", "parse"), ("gw", "total")], both
idle = st[("gw", "idle")]
assert idle["base"] is None and idle["current"] is None and idle["change"] is None, idle
assert idle["severity"] == "informational" and "no samples" in idle["note"], idle
assert idle["ci_method"] == "none", idle
for s in both:
    assert isinstance(s["base_intervals"], int) and isinstance(s["base_runs"], int), s
    want = "regression" if "%s/%s" % (s["point"], s["stage"]) == planted else "informational"
    assert s["severity"] == want, (s, want)
    if s is not idle:
        assert s["base_intervals"] == 30 * s["base_runs"], s
        assert isinstance(s["base"], (int, float)) and isinstance(s["delta"], (int, float)), s
    if s["point"] == "gw" and s is not idle:
        assert isinstance(s["ci_low"], (int, float)), s
    elif s["ci_low"] is None:   # no spread to build an interval from: said so
        assert s["ci_method"] == "none" and "no interval" in s["note"] or s is idle, s
regressed = sum(s["severity"] in ("regression", "critical") for s in both)
assert doc["regressions"] == regressed and doc["critical"] == 0, doc
if planted != "-":
    t = st[tuple(planted.split("/"))]
    assert 0.08 < t["change"] < 0.16 and t["ci_low"] > 0, t
    assert t["delta"] == t["current"] - t["base"] or \
        abs(t["delta"] - (t["current"] - t["base"])) <= 1e-9 * t["base"], t
PY
}

# check_junit FILE EXPECT_FAILED_STAGE|- : one testcase per stage in both files.
check_junit() {
	python3 - "$@" <<'PY' || fail "JUnit report: $(cat "$1")"
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
planted = sys.argv[2]
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
assert len(suites) == 1 and suites[0].get("name") == "perfmonctl compare p50", suites
cases = suites[0].findall("testcase")
names = sorted((c.get("classname"), c.get("name")) for c in cases)
assert names == [("depth", "value"), ("gw", "idle"), ("gw", "parse"), ("gw", "total")], names
failed = [c for c in cases if c.find("failure") is not None]
want = [] if planted == "-" else [tuple(planted.split("/"))]
assert [(c.get("classname"), c.get("name")) for c in failed] == want, failed
assert suites[0].get("tests") == "4" and root.get("tests") == "4", root.attrib
assert suites[0].get("failures") == str(len(want)) == root.get("failures"), root.attrib
for c in failed:
    f = c.find("failure")
    assert f.get("type") == "regression" and "p50 regression: base " in f.get("message"), f.attrib
    assert c.find("system-out") is None
for c in cases:
    if c in failed:
        continue
    out = c.find("system-out").text
    assert out.startswith("p50 informational: base "), out
    if c.get("name") == "idle":
        assert "base -, current - ns, change -: no samples in either file" in out, out
text = open(sys.argv[1]).read()
assert "nan" not in text.lower(), text
PY
}

# --- A/A: nothing regressed, every exit 0 ---------------------------------
expect 0 "$PERFMONCTL" compare "$T/a.csv" "$T/same.csv" --format json --junit "$T/aa.xml" \
	--fail-on-regression
[ "$(wc -l <"$T/out")" = 1 ] || fail "compare --format json is not one line"
cp "$T/out" "$T/aa.json"
check_json "$T/aa.json" -
check_junit "$T/aa.xml" -
ok "A/A: JSON and JUnit parse, one test case per stage in both, no failure, exit 0"

# --- A/B: a planted +12% p50 on gw/total ----------------------------------
expect 0 "$PERFMONCTL" compare "$T/a.csv" "$T/b.csv" --format json --junit "$T/ab.xml"
cp "$T/out" "$T/ab.json"
check_json "$T/ab.json" gw/total
check_junit "$T/ab.xml" gw/total
ok "A/B: the planted regression is the one failure element; exit 0 without --fail-on-regression"
expect 5 "$PERFMONCTL" compare "$T/a.csv" "$T/b.csv" --format json --junit "$T/ab5.xml" \
	--fail-on-regression
cmp -s "$T/out" "$T/ab.json" || fail "--fail-on-regression changed the JSON"
cmp -s "$T/ab5.xml" "$T/ab.xml" || fail "--fail-on-regression changed the JUnit report"
expect 5 "$PERFMONCTL" compare "$T/a.csv" "$T/b.csv" --fail-on-regression
grep -q 'result: 1 stage(s) regressed' "$T/out" || fail "live verdict: $(cat "$T/out")"
ok "regression with --fail-on-regression: exit 5, the same documents"

# --- several runs per side ------------------------------------------------
expect 5 "$PERFMONCTL" compare "$T/a.csv,$T/a2.csv,$T/a3.csv" "$T/b.csv,$T/b2.csv,$T/b3.csv" \
	--format json --junit "$T/runs.xml" --fail-on-regression
cp "$T/out" "$T/runs.json"
check_json "$T/runs.json" gw/total
check_junit "$T/runs.xml" gw/total
python3 - "$T/runs.json" "$T" <<'PY' || fail "runs JSON: $(cat "$T/runs.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
t = sys.argv[2]
assert doc["base"] == [t + "/a.csv", t + "/a2.csv", t + "/a3.csv"], doc["base"]
assert doc["current"] == [t + "/b.csv", t + "/b2.csv", t + "/b3.csv"], doc["current"]
st = {(s["point"], s["stage"]): s for s in doc["stages"]}
tot = st[("gw", "total")]
assert tot["base_runs"] == 3 and tot["current_runs"] == 3, tot
assert tot["ci_method"] == "welch-runs", tot
assert doc["base_rows"] == 3 * 30 * 5, doc["base_rows"]
PY
ok "three runs per side: Welch over the runs, the same test cases"

# --- exit codes: bad usage 1, unreadable or mismatched file 4 ------------
expect 1 "$PERFMONCTL" compare "$T/a.csv"
expect 1 "$PERFMONCTL" compare "$T/a.csv" "$T/b.csv" --no-such-option
expect 1 "$PERFMONCTL" compare "$T/a.csv" "$T/b.csv" --format yaml
expect 1 "$PERFMONCTL" compare "$T/a.csv" "$T/b.csv" --threshold lots
expect 1 "$PERFMONCTL" compare "$T/a.csv" "$T/b.csv" --junit "$T/no/such/dir/r.xml"
grep -q 'cannot write the JUnit report' "$T/err" || fail "junit error: $(cat "$T/err")"
expect 4 "$PERFMONCTL" compare "$T/a.csv" "$T/missing.csv" --format json
[ -s "$T/out" ] && fail "a document was written for an unreadable file"
sed 's/_ns/_us/g' "$T/b.csv" >"$T/b_us.csv"
expect 4 "$PERFMONCTL" compare "$T/a.csv" "$T/b_us.csv" --junit "$T/mismatch.xml"
grep -q 'different units' "$T/err" || fail "unit mismatch: $(cat "$T/err")"
[ -e "$T/mismatch.xml" ] && fail "a JUnit report was written for files that cannot be compared"
expect 4 "$PERFMONCTL" compare "$T/a.csv" "$T/b.csv" --metric p42
ok "exit codes: 1 for bad usage or an unwritable report, 4 for unreadable or mismatched files"

# --- a CSV the real daemon wrote, compared with itself --------------------
start_daemon --shm "$SHM" --csv "$T/real.csv" --summary "" --interval 100ms
"$PRODUCER" "$SHM" 7 2000 --steps --label engine >/dev/null || fail "producer failed"
"$PRODUCER" "$SHM" 8 500 --values --label depth >/dev/null || fail "value producer failed"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "daemon exited $DSTATUS"
expect 0 "$PERFMONCTL" compare "$T/real.csv" "$T/real.csv" --format json --junit "$T/real.xml" \
	--fail-on-regression
python3 - "$T/out" "$T/real.xml" "$T/real.csv" <<'PY' || fail "real CSV: $(cat "$T/out" "$T/real.xml")"
import csv, json, sys
import xml.etree.ElementTree as ET
doc = json.load(open(sys.argv[1]))
stages = {(r["point"], r["stage"]) for r in csv.DictReader(open(sys.argv[3], newline=""))}
both = {(s["point"], s["stage"]) for s in doc["stages"] if s["presence"] == "both"}
assert both == stages and ("engine", "total") in both and ("depth", "value") in both, (both, stages)
assert doc["regressions"] == 0, doc
for s in doc["stages"]:
    assert s["severity"] == "informational", s
    if s["base_intervals"]:
        assert s["delta"] == 0 and s["change"] == 0, s
cases = ET.parse(sys.argv[2]).getroot().findall("testsuite/testcase")
assert {(c.get("classname"), c.get("name")) for c in cases} == stages, cases
assert all(c.find("failure") is None for c in cases)
PY
ok "the daemon's own CSV against itself: a test case per stage, nothing regressed"
