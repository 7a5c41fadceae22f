#!/bin/sh
# ctl_record.sh - perfmonctl record / dump / export against the real daemon:
#   - a record of a known producer dumps back exactly what it stamped,
#     event for event, with what pairing made of each, in every format,
#     and carries the daemon's pairing settings;
#   - its Chrome export is valid JSON whose spans' counts, min, mean and
#     max match the CSV's figures for the same spans;
#   - under a flat-out producer a size-capped recording stops at the cap
#     and counts what it lost, and the file says the same;
#   - a flat-out producer into a small ring, inside the recording: the
#     events captured, lost and dropped by the ring add up to those stamped;
#   - a second concurrent recording, an existing file and a stopped
#     collector are refused, leaving no file behind.
. "$top_srcdir/tests/integration/daemon_lib.sh"
CTL="$top_builddir/src/perfmonctl"

recording() { grep -q 'recording every event' "$T/daemon.err"; }
recordings_done() { [ "$(grep -c 'recording finished' "$T/daemon.err")" -ge "$1" ]; }

start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 100ms \
	--capacity 1048576

# ---- a known producer, recorded whole
"$CTL" record "$SHM" --seconds 3 -o "$T/cap" >"$T/rec.out" 2>"$T/rec.err" &
rpid=$!
wait_for recording || fail "the daemon did not start recording"
# Pinned to the second CPU where there is one: its events come from that
# CPU's sub-ring, and the dump says so.
pin=0
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] && taskset -c 1 true 2>/dev/null && pin=1
taskset -c $pin "$PRODUCER" "$SHM" 9 3000 --steps --seq-base 100 --label known >/dev/null
"$PRODUCER" "$SHM" 10 500 --values --label depth >/dev/null
rc=0; wait $rpid || rc=$?
[ $rc = 0 ] || { cat "$T/rec.err"; fail "record exited $rc"; }
grep -q '^captured 12500 events, lost 0;' "$T/rec.out" || { cat "$T/rec.out"; fail "record's counts"; }
grep -q "^wrote $T/cap\$" "$T/rec.out" || fail "record did not name the file"
ok "record: 12500 events captured, 0 lost"

"$CTL" dump "$T/cap" --format json >"$T/dump.json" || fail "dump --format json"
python3 - "$T/dump.json" "$pin" <<'PY' || fail "the dump does not match what was stamped"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d['events']
assert d['capture']['events'] == 12500 and d['capture']['lost'] == 0, d['capture']
# the daemon's pairing settings travel with the capture (the defaults here)
c = d['capture']
assert (c['version'], c['max_open_spans'], c['max_stages'], c['overhead_ticks']) == \
    (2, 4096, 1024, 0), c
assert c['stall_ticks'] > c['flush_ticks'] > 0, c
spans = [e for e in ev if e['point'] == 9]
want = []
for s in range(100, 3100):
    want += [(0, s, 'begin'), (1, s, 'paired'), (2, s, 'paired'), (255, s, 'paired')]
got = [(e['step'], e['seq'], e['outcome']) for e in spans]
assert got == want, next((i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w)
pin = int(sys.argv[2])
assert d['capture']['rings'] >= 2 or pin == 0, d['capture']
assert all(e['label'] == 'known' and e['ring'] == pin for e in spans), \
    sorted(set(e['ring'] for e in spans))
stages = [e['stage'] for e in spans if e['step'] != 0]
assert stages == ['known.s1', 'known.s2', 'step_2->255'] * 3000, stages[:6]
ends = [e for e in spans if e['step'] == 255]
assert all(abs(e['total_ns'] - sum(x['duration_ns'] for x in spans[4*i+1:4*i+4])) < 1
           for i, e in enumerate(ends[:100]))
t = [e['time_ns'] for e in spans]
assert t == sorted(t), 'one producer thread: times do not go back'
vals = [e for e in ev if e['point'] == 10]
assert [(e['value'], e['outcome']) for e in vals] == [(i, 'value') for i in range(500)]
assert 'time_ns' not in vals[0]
PY
ok "dump matches the producer's stamps event for event"

for f in csv md live; do
	"$CTL" dump "$T/cap" --format $f >"$T/dump.$f" || fail "dump --format $f"
done
python3 - "$T/dump.csv" <<'PY' || fail "dump --format csv"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
assert rows[0][:3] == ['time (UTC)', 'ring', 'point'], rows[0]
assert len(rows) == 12501, len(rows)
# The two producers' events in the order of the capture; the spans'
# first two rows as the producer stamped them.
known = [r for r in rows[1:] if r[2] == 'known']
assert len(known) == 12000, len(known)
assert known[0][2:5] == ['known', 'begin', '100'] and known[0][6] == 'begin', known[0]
assert known[1][6:8] == ['paired', 'known.s1'], known[1]
PY
[ "$(grep -c 'paired' "$T/dump.md")" = 9000 ] || fail "dump --format md rows"
[ "$(grep -c 'paired' "$T/dump.live")" = 9000 ] || fail "dump --format live rows"
ok "dump in csv, md and live"

"$CTL" export "$T/cap" --format chrome -o "$T/trace.json" >/dev/null || fail "export"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
python3 - "$T/trace.json" "$T/out.csv" <<'PY' || fail "the export does not match the CSV"
import csv, json, sys
tr = json.load(open(sys.argv[1]))
evs = tr['traceEvents']
names = {e['tid']: e['args']['name'] for e in evs if e['ph'] == 'M' and e['name'] == 'thread_name'}
# one producer thread: its spans never overlap, one lane
assert sorted(names.values()) == ['depth', 'known'], names
known = next(t for t, n in names.items() if n == 'known')
durs = {}
for e in evs:
    if e['ph'] == 'X' and e['tid'] == known:
        durs.setdefault(e['name'], []).append(e['dur'] * 1000.0)
        assert e['cat'] == 'known' and e['ts'] >= 0
counters = [e for e in evs if e['ph'] == 'C']
assert [e['args']['value'] for e in counters] == list(range(500))
rows = list(csv.DictReader(open(sys.argv[2], newline='')))
for stage in ('total', 'known.s1', 'known.s2', 'step_2->255'):
    rs = [r for r in rows if r['point'] == 'known' and r['stage'] == stage]
    count = sum(int(r['count']) for r in rs)
    d = durs[stage]
    assert count == len(d) == 3000, (stage, count, len(d))
    lo = min(float(r['min_ns']) for r in rs)
    hi = max(float(r['max_ns']) for r in rs)
    mean = sum(float(r['mean_ns']) * int(r['count']) for r in rs) / count
    close = lambda a, b: abs(a - b) <= 1e-3 * max(a, b) + 0.2
    assert close(min(d), lo), (stage, 'min', min(d), lo)
    assert close(max(d), hi), (stage, 'max', max(d), hi)
    assert close(sum(d) / len(d), mean), (stage, 'mean', sum(d) / len(d), mean)
PY
ok "export: valid JSON, one track per point, spans' figures equal the CSV's"

# ---- flat out, capped
start_daemon --shm "$SHM" --csv "" --summary "" --interval 100ms --capacity 1048576
"$PRODUCER" "$SHM" 11 100000 --seconds 3 >/dev/null &
PIDS="$PIDS $!"
rc=0
"$CTL" record "$SHM" --seconds 1 --max-size 64K -o "$T/capped" >"$T/rec2.out" 2>&1 || rc=$?
[ $rc = 0 ] || { cat "$T/rec2.out"; fail "capped record exited $rc"; }
grep -q 'stopped early: the capture reached its size cap' "$T/rec2.out" || fail "no cap notice"
size=$(stat -c %s "$T/capped")
[ "$size" -le 65536 ] || fail "capture of $size bytes beyond its 64K cap"
"$CTL" dump "$T/capped" --format json >"$T/capped.json" || fail "dump of the capped capture"
python3 - "$T/capped.json" "$T/rec2.out" <<'PY' || { cat "$T/rec2.out"; fail "lost events not counted"; }
import json, re, sys
c = json.load(open(sys.argv[1]))['capture']
out = open(sys.argv[2]).read()
m = re.search(r'captured (\d+) events, lost (\d+)', out)
captured, lost = int(m.group(1)), int(m.group(2))
assert c['events'] == captured and c['lost'] == lost and c['capped'], (c, captured, lost)
assert lost > 0 and c['lost_cap'] > 0
PY
ok "flat-out producer, 64K cap: stopped at the cap, lost events counted"

# ---- refusals
# A recording long enough to outlast the checks on a slow (sanitizer)
# build; the daemon's stop ends it.
n0=$(grep -c 'recording every event' "$T/daemon.err")
"$CTL" record "$SHM" --seconds 600 -o "$T/first" >"$T/first.out" 2>&1 &
rpid=$!
wait_for sh -c "[ \$(grep -c 'recording every event' '$T/daemon.err') -gt $n0 ]" ||
	fail "the recording did not start"
rc=0; "$CTL" record "$SHM" --seconds 1 -o "$T/second" 2>"$T/busy.err" || rc=$?
[ $rc = 1 ] && grep -q 'already running' "$T/busy.err" || fail "concurrent record: rc $rc"
[ ! -e "$T/second" ] || fail "a refused recording left its file"
rc=0; "$CTL" record "$SHM" --seconds 1 -o "$T/first" 2>"$T/exists.err" || rc=$?
[ $rc = 1 ] && grep -q 'File exists' "$T/exists.err" || fail "existing file: rc $rc"
stop_daemon TERM
wait $rpid || { cat "$T/first.out"; fail "the first recording failed when the daemon stopped"; }
rc=0; "$CTL" record "$SHM" --seconds 1 -o "$T/none" 2>"$T/none.err" || rc=$?
[ $rc = 3 ] && grep -q 'no collector' "$T/none.err" || fail "no collector: rc $rc"
[ ! -e "$T/none" ] || fail "a failed recording left its file"
ok "concurrent recording, existing file and stopped collector refused"

# ---- flat out into a small ring: every event stamped is accounted for
# A producer that runs entirely inside the recording: each of its events
# was captured, lost on the way to the file, or overwritten in the ring
# before the daemon read it.
"$SEGTOOL" remove "$SHM" >/dev/null   # a new ring, of 4096 slots
start_daemon --shm "$SHM" --csv "" --summary "" --interval 100ms --capacity 4096
n0=$(grep -c 'recording every event' "$T/daemon.err" || true)
"$CTL" record "$SHM" --seconds 6 -o "$T/flat" >"$T/rec3.out" 2>&1 &
rpid=$!
wait_for sh -c "[ \$(grep -c 'recording every event' '$T/daemon.err') -gt $n0 ]" ||
	fail "the flat-out recording did not start"
"$PRODUCER" "$SHM" 12 1000000 >/dev/null || fail "the flat-out producer failed"
kill -0 $rpid 2>/dev/null || fail "the producer outlasted the recording (a slow machine?)"
rc=0; wait $rpid || rc=$?
[ $rc = 0 ] || { cat "$T/rec3.out"; fail "flat-out record exited $rc"; }
python3 - "$T/rec3.out" <<'PY' || { cat "$T/rec3.out"; fail "events unaccounted for"; }
import re, sys
out = open(sys.argv[1]).read()
m = re.search(r'captured (\d+) events, lost (\d+).*the ring dropped (\d+) while recording', out)
captured, lost, dropped = (int(x) for x in m.groups())
assert captured + lost + dropped == 2000000, (captured, lost, dropped)
assert dropped > 0, 'a 4096-slot ring kept up with a flat-out producer: nothing was tested'
PY
stop_daemon TERM
ok "flat out into a small ring: captured + lost + dropped = the 2000000 events stamped ($(sed -n "s/^captured \([0-9]*\) events, lost \([0-9]*\).*dropped \([0-9]*\).*/\1 + \2 + \3/p" "$T/rec3.out"))"
