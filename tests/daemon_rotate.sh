#!/bin/sh
# daemon_rotate.sh - external rotation (rename + SIGUSR1) and size rotation:
# every file starts with the header and the counts summed over all files
# equal what was produced.
. "$top_srcdir/tests/daemon_lib.sh"

cat >"$T/p.conf" <<CONF
[shm]
name = $SHM
capacity = 1048576
[collector]
flush_interval = 50ms
[output]
csv = $T/out.csv
summary = $T/out_summary.txt
rotate_size = 2K
rotate_keep = 1000
CONF
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
ls "$T" | grep -E -q '^out-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\.csv$' || fail "no rotated file name of the spec's form"
ls "$T" | grep -E -q '^out-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?_summary\.txt$' || fail "no rotated summary"
total=$(count_of rot total "$@")
[ "$total" = "$spans" ] || fail "produced $spans spans, files hold $total"
ok "$# files, each with a header, $total spans = produced"
