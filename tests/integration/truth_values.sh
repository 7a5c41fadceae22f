#!/bin/sh
# truth_values.sh - figures against ground truth through the real daemon:
# value samples near 2^63 and at 2^64-1 come out exact (min and max as
# integers, stddev to 1e-9 relative) in the CSV, the summary, the
# Prometheus textfile, `perfmonctl report` and `compare`; spans left open
# at shutdown are counted as abandoned in the last interval and named in
# the log, both when the daemon is stopped by SIGTERM and when its
# --duration runs out.
. "$top_srcdir/tests/integration/daemon_lib.sh"
PERFMONCTL="$top_builddir/src/perfmonctl"

PROM="$T/out.prom"
write_conf "$T/perfmond.conf" shm.capacity=65536 collector.flush_interval=10s \
	"prometheus.textfile=$PROM"
start_daemon "$T/perfmond.conf"
# 2^63 - 1000 and 2^63 + 1000: mean 2^63, stddev 1000 * sqrt(2).
"$PRODUCER" "$SHM" 2 0 --label big --value-list 9223372036854774808,9223372036854776808 \
	>/dev/null || fail "producer big"
"$PRODUCER" "$SHM" 1 0 --label top --value-list 18446744073709551615 >/dev/null ||
	fail "producer top"
"$PRODUCER" "$SHM" 3 5 --label open --leave-open >/dev/null || fail "producer open"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"

python3 - "$T/out.csv" <<'PY' || fail "CSV figures"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
def row(point, stage):
    r = [r for r in rows if r['point'] == point and r['stage'] == stage]
    assert len(r) == 1, (point, stage, r)
    return r[0]
big = row('big', 'value')
assert big['kind'] == 'value', big
assert big['min_ns'] == '9223372036854774808', big['min_ns']
assert big['max_ns'] == '9223372036854776808', big['max_ns']
sd = float(big['stddev_ns'])
assert abs(sd - 1000 * 2 ** 0.5) <= 1e-9 * 1414.21356, sd
assert abs(float(big['mean_ns']) - 2.0 ** 63) <= 1e-9 * 2.0 ** 63, big['mean_ns']
for c in ('p50_ns', 'p90_ns', 'p99_ns', 'p99_9_ns'):
    assert big[c].isdigit() and 9223372036854774808 <= int(big[c]) <= 9223372036854776808, (c, big[c])
top = row('top', 'value')
for c in ('min_ns', 'max_ns', 'p50_ns', 'p99_ns'):
    assert top[c] == '18446744073709551615', (c, top[c])
assert top['stddev_ns'] in ('0.000', '0'), top['stddev_ns']
o = row('open', 'total')
assert o['abandoned'] == '5' and o['count'] == '0', o
print('csv ok')
PY
ok "CSV: exact min/max near 2^63 and at 2^64-1, stddev 1414.2, 5 open spans abandoned"

grep -q 'big .*9223372036854774808 .*9223372036854776808' "$T/sum.txt" ||
	{ cat "$T/sum.txt"; fail "summary: big min/max not exact"; }
grep -q 'top .*18446744073709551615' "$T/sum.txt" || fail "summary: top not exact"
grep -q '18446744073709551616' "$T/sum.txt" && fail "summary: 2^64 printed, not a uint64"
awk '$1 == "open" && $2 == "total" { found = 1; if ($0 !~ / 5 /) exit 1 } END { exit !found }' \
	"$T/sum.txt" || { cat "$T/sum.txt"; fail "summary: open spans not abandoned"; }
ok "summary: exact integers, abandoned spans"

grep -q 'perfmond_value{.*point="top".*quantile="0.5".*} 18446744073709551615$' "$PROM" ||
	{ grep perfmond_value "$PROM"; fail "prometheus: top quantile not exact"; }
grep -q 'perfmond_value_sum{.*point="big".*} 18446744073709551616$' "$PROM" ||
	{ grep perfmond_value "$PROM"; fail "prometheus: big _sum not exact (2^64)"; }
grep -q 'perfmond_spans_abandoned_total{.*point="open".*} 5$' "$PROM" ||
	{ grep abandoned "$PROM"; fail "prometheus: abandoned"; }
grep -q '^# HELP perfmond_spans_abandoned_total .*still open at shutdown' "$PROM" ||
	{ grep abandoned "$PROM"; fail "prometheus: HELP does not say open spans at shutdown count"; }
ok "prometheus: exact quantiles and sums, abandoned spans"

"$PERFMONCTL" report --format=csv "$T/out.csv" >"$T/report.csv" || fail "report"
python3 - "$T/report.csv" "$T/out.csv" <<'PY' || { cat "$T/report.csv"; fail "report figures"; }
import csv, sys
rows = {(r['point'], r['stage']): r for r in csv.DictReader(open(sys.argv[1], newline=''))}
src = {(r['point'], r['stage']): r for r in csv.DictReader(open(sys.argv[2], newline=''))}
big, top = rows[('big', 'value')], rows[('top', 'value')]
assert big['min_ns'] == '9223372036854774808' and big['max_ns'] == '9223372036854776808', big
assert top['min_ns'] == '18446744073709551615' and top['max_ns'] == top['min_ns'], top
assert abs(float(big['stddev_ns']) - 1414.2135623730951) < 1e-6, big['stddev_ns']
assert rows[('open', 'total')]['abandoned'] == '5'
# Percentiles by nearest rank of {2^63 - 1000, 2^63 + 1000}: p50 is the
# lower sample, p90 and up the upper one; of {2^64 - 1} that value.  One
# interval, so median, min and max of each are that figure, every digit.
want = {'big': {'p50': 2**63 - 1000, 'p90': 2**63 + 1000, 'p99': 2**63 + 1000,
                'p99_9': 2**63 + 1000},
        'top': {p: 2**64 - 1 for p in ('p50', 'p90', 'p99', 'p99_9')}}
for point, pcts in want.items():
    r = rows[(point, 'value')]
    for p, v in pcts.items():
        for spread in ('median', 'min', 'max'):
            col = '%s_%s_ns' % (p, spread)
            assert r[col] == str(v), (point, col, r[col], v)
    # the mean as the daemon wrote it (one interval): every digit
    assert r['mean_ns'] == src[(point, 'value')]['mean_ns'], (r['mean_ns'], src[(point, 'value')])
assert big['mean_ns'] == '9223372036854775808.000', big['mean_ns']
for r in rows.values():
    for k, v in r.items():
        assert 'e+' not in v and 'e-' not in v, (k, v)
print('report ok')
PY
"$PERFMONCTL" report --format=md "$T/out.csv" >"$T/report.md" || fail "report md"
grep -q '18446744073709551615' "$T/report.md" || { cat "$T/report.md"; fail "report md: top max"; }
# percentiles of 2^64 - 1 and 2^63 + 1000 with an SI prefix past P
grep -q ' 18.4E ' "$T/report.md" && grep -q ' 9.22E ' "$T/report.md" ||
	{ cat "$T/report.md"; fail "report md: no E prefix"; }
"$PERFMONCTL" report --format=json "$T/out.csv" >"$T/report.json" || fail "report json"
python3 - "$T/report.json" <<'PY' || { cat "$T/report.json"; fail "report json figures"; }
import json, sys
doc = json.load(open(sys.argv[1]))
def find(o):
    if isinstance(o, dict):
        if o.get('point') == 'top' and o.get('stage') == 'value':
            return o
        for v in o.values():
            r = find(v)
            if r: return r
    if isinstance(o, list):
        for v in o:
            r = find(v)
            if r: return r
top = find(doc)
assert top['min'] == 18446744073709551615 and top['max'] == 18446744073709551615, top
stages = {(s['point'], s['stage']): s for s in doc['stages']}
want = {'big': {'p50': 2**63 - 1000, 'p90': 2**63 + 1000, 'p99': 2**63 + 1000,
                'p99_9': 2**63 + 1000},
        'top': {p: 2**64 - 1 for p in ('p50', 'p90', 'p99', 'p99_9')}}
for point, pcts in want.items():
    s = stages[(point, 'value')]
    for p, v in pcts.items():
        for spread in ('median', 'min', 'max'):
            got = s['percentiles'][p][spread]
            # a JSON integer, exactly: not a double near it
            assert type(got) is int and got == v, (point, p, spread, got, v)
big = stages[('big', 'value')]
assert big['min'] == 2**63 - 1000 and big['max'] == 2**63 + 1000, big
# the mean with all its digits: read as a decimal, not a double
from decimal import Decimal
exact = json.load(open(sys.argv[1]), parse_float=Decimal)
means = {(s['point'], s['stage']): s['mean'] for s in exact['stages']}
assert means[('big', 'value')] == Decimal(2**63), means[('big', 'value')]
assert means[('top', 'value')] == Decimal(2**64 - 1), means[('top', 'value')]
PY
ok "perfmonctl report keeps every digit (min, max, percentiles, mean) in csv and json"

# compare on these figures: medians and differences of whole numbers past
# 2^53 keep every digit (a double turns 2^64 - 1 into 2^64 and cannot
# tell 2^63 + 1000 from 2^63 + 1191).
sed 's/,9223372036854776808,\([0-9.]*\)$/,9223372036854776999,\1/' "$T/out.csv" >"$T/b.csv"
grep -q 9223372036854776999 "$T/b.csv" || fail "could not make the changed copy of the CSV"
for metric in max min; do
	"$PERFMONCTL" compare "$T/out.csv" "$T/b.csv" --metric $metric --format csv \
		>"$T/cmp.csv" 2>/dev/null || fail "compare --metric $metric --format csv"
	"$PERFMONCTL" compare "$T/out.csv" "$T/b.csv" --metric $metric --format json \
		>"$T/cmp.json" || fail "compare --metric $metric --format json"
	"$PERFMONCTL" compare "$T/out.csv" "$T/b.csv" --metric $metric --format md \
		>"$T/cmp.md" || fail "compare --metric $metric --format md"
	python3 - "$metric" "$T/cmp.csv" "$T/cmp.json" "$T/cmp.md" <<'PY' ||
import csv, json, sys
metric = sys.argv[1]
want = {('top', 'value'): (2**64 - 1, 2**64 - 1),
        ('big', 'value'): (2**63 + 1000, 2**63 + 1191) if metric == 'max' else
                          (2**63 - 1000, 2**63 - 1000)}
rows = {(r['point'], r['stage']): r for r in csv.DictReader(open(sys.argv[2], newline=''))}
stages = {(s['point'], s['stage']): s for s in json.load(open(sys.argv[3]))['stages']}
md = open(sys.argv[4]).read()
for key, (b, c) in want.items():
    r, s = rows[key], stages[key]
    assert (r['base_ns'], r['current_ns'], r['delta_ns']) == (str(b), str(c), str(c - b)), r
    assert (s['base'], s['current'], s['delta']) == (b, c, c - b), s
    for k in ('base', 'current', 'delta'):
        assert type(s[k]) is int, (k, s[k])
    assert ('unchanged' in r['note']) == (b == c), r['note']
    assert ' %d ' % b in md and ' %d ' % c in md, md
    if c != b:
        assert ' +%d ' % (c - b) in md, md
print(metric, 'ok')
PY
	{ cat "$T/cmp.csv" "$T/cmp.json" "$T/cmp.md"; fail "compare --metric $metric: figures not exact"; }
done
ok "perfmonctl compare --metric max/min keeps every digit near 2^63 and at 2^64-1 (csv, json, md)"

# top's CSV is machine-readable too: the latest interval with every digit.
"$PERFMONCTL" top "$SHM" --csv "$T/out.csv" --once --format csv >"$T/top.csv" || fail "top --once"
python3 - "$T/top.csv" <<'PY' || { cat "$T/top.csv"; fail "top --format csv figures"; }
import csv, sys
rows = {(r['point'], r['stage']): r for r in csv.DictReader(open(sys.argv[1], newline=''))}
big, top = rows[('big', 'value')], rows[('top', 'value')]
assert (big['p50'], big['p99'], big['max']) == (str(2**63 - 1000), str(2**63 + 1000),
                                                str(2**63 + 1000)), big
assert top['p50'] == top['p99'] == top['max'] == str(2**64 - 1), top
PY
ok "perfmonctl top --format csv keeps every digit"

grep -q '5 span(s) still open counted as abandoned' "$T/daemon.err" ||
	fail "shutdown log does not say how many spans were open"
ok "shutdown log names the open spans"

# Spans open when --duration runs out: the same as at SIGTERM.  Several
# intervals pass first (flush every 300 ms), so "the last interval" means
# something; the 5 open spans must be abandoned in that one only, and the
# spans that were closed must not be touched.
write_conf "$T/dur.conf" shm.capacity=65536 collector.flush_interval=300ms \
	collector.stalled_sample_timeout=60s "output.csv=$T/dur.csv" \
	"output.summary=$T/dur_sum.txt"
: >"$T/daemon.err"
start_daemon "$T/dur.conf" --duration 2s
"$PRODUCER" "$SHM" 3 5 --label open --leave-open >/dev/null || fail "producer open (duration)"
"$PRODUCER" "$SHM" 4 40 --label closed >/dev/null || fail "producer closed (duration)"
i=0
while kill -0 "$DPID" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 200 ] || fail "perfmond did not stop when --duration 2s ran out"
	sleep 0.1
done
DSTATUS=0
wait "$DPID" || DSTATUS=$?
DPID=
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS at the end of --duration"
python3 - "$T/dur.csv" <<'PY' || { cat "$T/dur.csv"; fail "duration: open spans in the CSV"; }
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
stamps = sorted({r['timestamp'] for r in rows})
assert len(stamps) >= 2, stamps           # more than the shutdown interval
last = stamps[-1]
o = [r for r in rows if r['point'] == 'open' and r['stage'] == 'total']
assert sum(int(r['abandoned']) for r in o) == 5, o
assert [r['timestamp'] for r in o if int(r['abandoned'])] == [last], (o, last)
assert all(r['count'] == '0' for r in o), o
c = [r for r in rows if r['point'] == 'closed' and r['stage'] == 'total']
assert sum(int(r['count']) for r in c) == 40 and sum(int(r['abandoned']) for r in c) == 0, c
print('duration csv ok')
PY
awk '$1 == "open" && $2 == "total" { found = 1; if ($0 !~ / 5 /) exit 1 } END { exit !found }' \
	"$T/dur_sum.txt" || { cat "$T/dur_sum.txt"; fail "duration summary: open spans not abandoned"; }
grep -q 'stopped: .* 5 span(s) still open counted as abandoned' "$T/daemon.err" ||
	fail "duration: the shutdown log does not say 5 spans were open"
ok "--duration: 5 open spans abandoned in the last interval's CSV, the summary and the log"

# Value samples that find the stage table full are counted on an overflow
# row of kind value, not on a latency row.
write_conf "$T/small.conf" shm.capacity=65536 collector.max_stages=1 \
	"output.csv=$T/small.csv" "output.summary=$T/small_sum.txt"
: >"$T/daemon.err"
start_daemon "$T/small.conf"
"$PRODUCER" "$SHM" 10 3 >/dev/null || fail "producer spans"
# The spans take the one stage row first: wait until an interval shows
# them paired (the merge holds spans back a little, value samples go
# straight through).
wait_for sh -c "\"$CSVCHECK\" \"$T/small.csv\" | grep -q total" || fail "spans not paired"
"$PRODUCER" "$SHM" 11 7 --values >/dev/null || fail "producer values"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS (small table)"
python3 - "$T/small.csv" <<'PY' || { cat "$T/small.csv"; fail "overflow value row"; }
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
ov = [r for r in rows if r['point'] == 'overflow']
assert len(ov) == 1, ov
assert ov[0]['stage'] == 'value' and ov[0]['kind'] == 'value', ov[0]
assert ov[0]['out_of_range'] == '7', ov[0]
assert sum(int(r['out_of_range']) for r in rows if r['kind'] == 'latency') == 0, rows
PY
ok "value samples beyond max_stages: overflow row of kind value"
