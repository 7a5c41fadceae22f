#!/bin/sh
# daemon_schema.sh - appending to a CSV whose header differs is refused with
# exit 1, both headers named, and the file left byte-identical; a file cut
# mid-row by a crash is repaired on append.
. "$top_srcdir/tests/integration/daemon_lib.sh"

printf 'timestamp,point,stage,kind,count,dropped,invalid,stalled,abandoned,orphan,out_of_range,min_us,mean_us,stddev_us,p50_us,max_us,tsc_hz\n2026-01-01 00:00:00.000,a,total,latency,1,0,0,0,0,0,0,1.0,1.0,0.0,1.0,1.0,2445000000\n' >"$T/out.csv"
cp "$T/out.csv" "$T/before.csv"
status=0
"$PERFMOND" --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --duration 1s \
	2>"$T/err" || status=$?
[ "$status" = 1 ] || fail "exit $status, expected 1"
cmp -s "$T/out.csv" "$T/before.csv" || fail "the file was modified"
grep -q 'min_us' "$T/err" && grep -q 'min_ns' "$T/err" || fail "message does not name both headers: $(cat "$T/err")"
[ ! -e "/dev/shm/$SHM" ] || fail "segments left behind after a refused start"
ok "mismatched header refused, file untouched"

# A crash mid-write left half a row: the next run repairs and appends.
"$PERFMOND" --shm "$SHM" --csv "$T/ok.csv" --summary "$T/sum.txt" --duration 300ms --interval 100ms 2>>"$T/daemon.err"
printf '2026-01-01 00:00:00.000,"cut' >>"$T/ok.csv"
"$PERFMOND" --shm "$SHM" --csv "$T/ok.csv" --summary "$T/sum.txt" --duration 300ms --interval 100ms 2>>"$T/daemon.err"
"$CSVCHECK" "$T/ok.csv" >/dev/null || fail "repaired file does not parse"
grep -q '"cut' "$T/ok.csv" && fail "partial row still there"
ok "incomplete last line repaired on append"

# An outliers file of another schema beside a CSV that does not exist yet:
# refused with exit 1, and the CSV is not left behind.
printf 'not,the,outliers,header\n' >"$T/run_outliers.csv"
cp "$T/run_outliers.csv" "$T/before_outliers.csv"
write_conf "$T/o.conf" "output.csv=$T/run.csv" "output.summary=" output.outliers=4
status=0
"$PERFMOND" "$T/o.conf" --duration 1s 2>"$T/err" || status=$?
[ "$status" = 1 ] || fail "outliers header: exit $status, expected 1: $(cat "$T/err")"
grep -q 'run_outliers.csv' "$T/err" || fail "the refusal does not name the outliers file: $(cat "$T/err")"
[ ! -e "$T/run.csv" ] || fail "the CSV was created although the start was refused"
cmp -s "$T/run_outliers.csv" "$T/before_outliers.csv" || fail "the outliers file was modified"
ok "outliers file of another schema refused, nothing created"
