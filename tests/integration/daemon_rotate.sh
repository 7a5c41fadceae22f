#!/bin/sh
# daemon_rotate.sh - external rotation (rename + SIGUSR1) and size rotation:
# every file starts with the header and the counts summed over all files
# equal what was produced.
. "$top_srcdir/tests/integration/daemon_lib.sh"

write_conf "$T/p.conf" shm.capacity=1048576 collector.flush_interval=50ms \
	"output.summary=$T/out_summary.txt" output.rotate_size=2K output.rotate_keep=1000
start_daemon "$T/p.conf"
"$PRODUCER" "$SHM" 1 200 --label rot --seconds 2 --pause-us 500 >"$T/prod1.out"
mv "$T/out.csv" "$T/renamed.csv"
kill -USR1 "$DPID"
wait_for test -s "$T/out.csv" || fail "no new file after SIGUSR1"
"$PRODUCER" "$SHM" 1 200 --label rot --seconds 1 --pause-us 500 >"$T/prod2.out"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
spans=$(( $(awk '{print $2}' "$T/prod1.out") + $(awk '{print $2}' "$T/prod2.out") ))
set -- "$T"/*.csv
[ $# -ge 4 ] || fail "expected several rotated files, got $*"
for f in "$@"; do
	head -n 1 "$f" | grep -q '^timestamp,point,stage,kind,count' || fail "$f lacks the header"
done
ls "$T" | grep -E -q '^out-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\.csv$' || fail "no rotated file named STEM-YYYYMMDDTHHMMSSZ[-N].csv"
ls "$T" | grep -E -q '^out-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?_summary\.txt$' || fail "no rotated summary"
total=$(count_of rot total "$@")
[ "$total" = "$spans" ] || fail "produced $spans spans, files hold $total"
ok "$# files, each with a header, $total spans = produced"

# With outliers on, each rotated CSV keeps its companions beside it:
# STEM-TS.csv, STEM-TS_summary.txt and STEM-TS_outliers.csv, pruned
# together by rotate_keep, and report --outliers reads a rotated run.
stop_daemon TERM 2>/dev/null || true
rm -f "$T"/*.csv "$T"/*.txt
write_conf "$T/o.conf" shm.capacity=1048576 collector.flush_interval=50ms \
	"output.summary=$T/out_summary.txt" output.outliers=3 output.rotate_size=2K \
	output.rotate_keep=2
r0=$(grep -c "rotated the CSV" "$T/daemon.err" || true)
start_daemon "$T/o.conf"
"$PRODUCER" "$SHM" 1 200 --label rot --seconds 4 --pause-us 500 >/dev/null
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
[ $(($(grep -c "rotated the CSV" "$T/daemon.err") - r0)) -ge 3 ] || fail "fewer than 3 rotations: nothing pruned"
ls "$T" | grep -q '^out_outliers-' && fail "an outliers file rotated under its own stem: $(ls "$T")"
n=0
for f in "$T"/out-*Z.csv "$T"/out-*Z-[0-9]*.csv; do
	[ -e "$f" ] || continue
	case $f in *_outliers.csv) continue ;; esac
	n=$((n + 1))
	s=${f%.csv}
	[ -f "${s}_summary.txt" ] || fail "no summary beside $f: $(ls "$T")"
	[ -f "${s}_outliers.csv" ] || fail "no outliers file beside $f: $(ls "$T")"
	last=$f
done
[ "$n" = 2 ] || fail "rotate_keep = 2 left $n rotated CSVs: $(ls "$T")"
[ "$(ls "$T" | grep -c '^out-.*_outliers\.csv$')" = 2 ] || fail "outliers files not pruned with their CSV: $(ls "$T")"
"$top_builddir/src/perfmonctl" report "$last" --outliers --format csv >"$T/rep.csv" ||
	fail "report --outliers on the rotated $last"
grep -q '^rot,' "$T/rep.csv" || grep -q '"rot"' "$T/rep.csv" || fail "no outliers of point rot in the rotated run: $(cat "$T/rep.csv")"
ok "outliers files rotated and pruned with the CSV, each beside its summary; report --outliers reads a rotated run"
