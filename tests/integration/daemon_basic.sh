#!/bin/sh
# daemon_basic.sh - two producer processes with names, exact counts in the
# CSV (read back with libcsv and Python's csv module), the summary, and a
# clean SIGTERM exit.
. "$top_srcdir/tests/integration/daemon_lib.sh"

start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 200ms \
	--capacity 1048576
"$PRODUCER" "$SHM" 1 20000 --steps --label alpha >/dev/null &
p1=$!
"$PRODUCER" "$SHM" 2 15000 --label 'beta, "quoted"' >/dev/null &
p2=$!
"$PRODUCER" "$SHM" 3 5000 --values --label depth >/dev/null
wait $p1 $p2
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"

"$CSVCHECK" "$T/out.csv" >"$T/sums" || fail "CSV does not parse strictly"
[ "$(count_of alpha total "$T/out.csv")" = 20000 ] || fail "alpha total: $(cat "$T/sums")"
[ "$(count_of alpha alpha.s1 "$T/out.csv")" = 20000 ] || fail "alpha stage s1"
[ "$(count_of alpha alpha.s2 "$T/out.csv")" = 20000 ] || fail "alpha stage s2"
[ "$(count_of alpha 'step_2->255' "$T/out.csv")" = 20000 ] || fail "alpha stage end"
[ "$(count_of 'beta, "quoted"' total "$T/out.csv")" = 15000 ] || fail "beta total"
[ "$(count_of depth value "$T/out.csv")" = 5000 ] || fail "depth values"
for col in 4 5 6 7 8 9; do
	[ "$(column_sum alpha total $col "$T/out.csv")" = 0 ] || fail "alpha: anomaly column $col"
done
ok "exact counts and labels, no anomalies"

python3 - "$T/out.csv" <<'PY' || fail "Python csv check"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
head = rows[0]
assert head[:5] == ['timestamp', 'point', 'stage', 'kind', 'count'], head
assert head[-1] == 'tsc_hz' and 'p99_9_ns' in head and 'min_ns' in head, head
for r in rows[1:]:
    assert len(r) == len(head), r
    for name, v in zip(head, r):
        if name in ('timestamp', 'point', 'stage', 'kind'):
            continue
        float(v)
    d = dict(zip(head, r))
    assert d['kind'] in ('latency', 'value'), d
    if int(d['count']) > 0:
        vals = [float(d[c]) for c in ('min_ns', 'p50_ns', 'p90_ns', 'p99_ns', 'p99_9_ns', 'max_ns')]
        assert vals == sorted(vals), d
    assert 5e8 < float(d['tsc_hz']) < 1e10, d
    assert d['kind'] == ('value' if d['stage'] == 'value' else 'latency'), d
print("python csv: %d rows" % (len(rows) - 1))
PY
ok "Python's csv module agrees"

grep -q 'perfmond summary' "$T/sum.txt" || fail "summary header"
grep -q 'GHz' "$T/sum.txt" || fail "summary tsc rate"
grep -q 'alpha' "$T/sum.txt" && grep -q 'depth' "$T/sum.txt" || fail "summary labels"
ok "summary written"
