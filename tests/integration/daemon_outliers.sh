#!/bin/sh
# daemon_outliers.sh - [output] outliers against ground truth: a producer
# plants slow spans (known seqs) among fast ones; the outliers file lists
# exactly those as the slow ones, ranked, each interval's rank 1 equal to
# the CSV's max for that row, start times inside the run; the summary's
# whole-run list is exactly the planted seqs; perfmonctl report --outliers
# lists them too, as a table and as JSON.
. "$top_srcdir/tests/integration/daemon_lib.sh"

cat > "$T/d.conf" <<CONF
[output]
outliers = 8
CONF
before=$(date +%s)
start_daemon --config "$T/d.conf" --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" \
	--interval 100ms
# 2000 spans, seqs 1..2000; every 250th (seqs 250, 500, ..., 2000) sleeps 3 ms.
"$PRODUCER" "$SHM" 4 2000 --seq-base 1 --label slow --slow-every 250 --slow-us 3000 \
	--pause-us 500 >/dev/null
stop_daemon TERM
after=$(date +%s)
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
[ -f "$T/out_outliers.csv" ] || fail "no out_outliers.csv beside the CSV"

python3 - "$T/out.csv" "$T/out_outliers.csv" "$T/sum.txt" "$before" "$after" <<'PY' ||
import csv, sys, calendar, time
series, outl, summ, before, after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]) + 1
rows = list(csv.reader(open(outl, newline='')))
assert rows[0] == ['timestamp', 'point', 'stage', 'rank', 'seq', 'start', 'duration_ns'], rows[0]
planted = set(range(250, 2001, 250))
slow = [int(r[4]) for r in rows[1:] if r[1] == 'slow' and r[2] == 'total' and float(r[6]) >= 2.5e6]
assert sorted(slow) == sorted(planted), ('slow seqs listed', sorted(slow))
# ranks: 1..k per (interval, stage), durations not increasing
groups = {}
for r in rows[1:]:
    groups.setdefault((r[0], r[1], r[2]), []).append(r)
for key, g in groups.items():
    assert [int(r[3]) for r in g] == list(range(1, len(g) + 1)), key
    d = [float(r[6]) for r in g]
    assert d == sorted(d, reverse=True), key
    assert len(g) <= 8, key
    for r in g:
        sec, frac = r[5].split('.')
        assert len(frac) == 9, r[5]
        t = calendar.timegm(time.strptime(sec, '%Y-%m-%d %H:%M:%S'))
        assert before - 1 <= t <= after, (r[5], before, after)
# rank 1 is the CSV row's max, to the digit
s = list(csv.reader(open(series, newline='')))
head = s[0]
mx = head.index('max_ns')
maxes = {(r[0], r[1], r[2]): r[mx] for r in s[1:]}
for key, g in groups.items():
    assert maxes[key] == g[0][6], (key, maxes.get(key), g[0][6])
# summary: the run's 8 slowest spans of slow/total are the planted ones
text = open(summ).read()
assert 'Slowest spans of the run' in text, text
sect = text.split('Slowest spans of the run', 1)[1].split('\n')
seqs, inside, starts = [], False, {}
for line in sect:
    if line.startswith('slow total'):
        inside = True
        continue
    if inside:
        if not line.startswith('  '):
            break
        f = line.split()
        seqs.append(int(f[2]))
        starts[int(f[2])] = f[3] + ' ' + f[4]
assert sorted(seqs) == sorted(planted), seqs
# each is dated once: the same start, to the nanosecond, as in the file
for r in rows[1:]:
    if r[1] == 'slow' and r[2] == 'total' and int(r[4]) in starts:
        assert r[5] == starts[int(r[4])], ('start differs', r[4], r[5], starts[int(r[4])])
PY
	fail "outliers do not match the planted spans"
ok "planted slow spans listed with their seq, ranked, rank 1 = CSV max, in the summary"

# perfmonctl report --outliers: the run's 8 slowest of slow/total are the
# planted ones, ranked 1..8, slowest first.
"$top_builddir/src/perfmonctl" report "$T/out.csv" --outliers --point slow --stage total \
	--format csv >"$T/rep.csv" || fail "report --outliers"
python3 - "$T/rep.csv" <<'PY' || { cat "$T/rep.csv"; fail "report --outliers lists the wrong spans"; }
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
assert rows[0] == ['point', 'stage', 'rank', 'seq', 'start (UTC)', 'duration_ns', 'interval'], rows[0]
body = rows[1:]
assert [int(r[2]) for r in body] == list(range(1, 9)), body
assert sorted(int(r[3]) for r in body) == list(range(250, 2001, 250)), body
d = [float(r[5]) for r in body]
assert d == sorted(d, reverse=True)
PY
"$top_builddir/src/perfmonctl" report "$T/out.csv" --outliers --point slow --stage total \
	--format json >"$T/rep.json" || fail "report --outliers --format json"
python3 - "$T/rep.json" "$T/rep.csv" "$T/out_outliers.csv" <<'PY' ||
import csv, json, sys
doc = json.load(open(sys.argv[1]))
assert doc['file'] == sys.argv[3] and doc['unit'] == 'ns', doc
spans = doc['spans']
assert [s['rank'] for s in spans] == list(range(1, 9)), spans
assert sorted(s['seq'] for s in spans) == list(range(250, 2001, 250)), spans
assert all(s['point'] == 'slow' and s['stage'] == 'total' for s in spans), spans
# the same spans as the csv table, field for field
rows = list(csv.reader(open(sys.argv[2], newline='')))[1:]
assert [(r[3], r[4], float(r[5]), r[6]) for r in rows] == \
    [(str(s['seq']), s['start'], s['duration'], s['interval']) for s in spans], (rows, spans)
PY
	{ cat "$T/rep.json"; fail "report --outliers --format json"; }
"$top_builddir/src/perfmonctl" report "$T/out.csv" --outliers >/dev/null || fail "report --outliers (live)"
rc=0; "$top_builddir/src/perfmonctl" report "$T/sum.txt" --outliers >/dev/null 2>&1 || rc=$?
[ $rc = 4 ] || fail "report --outliers without an outliers file: exit $rc"
ok "perfmonctl report --outliers lists the run's slowest spans"

# The outlier sets count in the memory a configuration needs: max_stages
# chosen so that the rows alone take half this machine's memory and swap
# (about 36 KiB each), and 1000 outliers (about 94 KiB more per row) take
# it past all of it.
have_kib=$(awk '/^(MemTotal|SwapTotal):/ {s += $2} END {print s}' /proc/meminfo)
stages=$((have_kib / 72))
if [ "$stages" -le 1048576 ]; then
	printf '[collector]\nmax_stages = %s\n[output]\ncsv = %s\nsummary =\n' "$stages" \
		"$T/m.csv" >"$T/m.conf"
	"$PERFMOND" --check-config --shm "$SHM" "$T/m.conf" >/dev/null 2>"$T/err" ||
		fail "max_stages = $stages without outliers refused: $(cat "$T/err")"
	printf 'outliers = 1000\n' >>"$T/m.conf"
	st=0
	"$PERFMOND" --check-config --shm "$SHM" "$T/m.conf" >/dev/null 2>"$T/err" || st=$?
	[ $st = 78 ] && grep -q "max_stages = $stages .*outliers = 1000.* GiB of memory" "$T/err" ||
		fail "max_stages = $stages with 1000 outliers: exit $st: $(cat "$T/err")"
	ok "--check-config counts the outlier sets in the memory needed"
else
	echo "note: $((have_kib / 1048576)) GiB of memory: max_stages cannot reach half of it," \
		"the outliers' memory is not checked here"
fi
