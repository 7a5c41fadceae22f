#!/bin/sh
# daemon_restart.sh - restart perfmond under a running producer: the
# producer keeps stamping without noticing, the new daemon reopens the same
# ring and names and goes on collecting, appending to the same CSV.
. "$top_srcdir/tests/daemon_lib.sh"

start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 100ms --capacity 1048576
"$PRODUCER" "$SHM" 7 100 --steps --label engine --seconds 3 --pause-us 1000 >"$T/prod.out" &
PIDS=$!
sleep 1
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "first daemon exited $DSTATUS"
first=$(count_of engine total "$T/out.csv")
[ "$first" -gt 0 ] || fail "first run collected nothing"
start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 100ms --capacity 1048576
wait $PIDS || fail "the producer failed across the restart"
PIDS=
spans=$(awk '{print $2}' "$T/prod.out")
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "second daemon exited $DSTATUS"
total=$(count_of engine total "$T/out.csv")
[ "$total" -gt "$first" ] || fail "second run collected nothing under the producer's names"
[ "$(grep -c '^timestamp,' "$T/out.csv")" = 1 ] || fail "header written twice"
# The restarted daemon resumed where the first stopped: every span is
# accounted for (the ring is large enough that nothing was overwritten).
[ "$total" = "$spans" ] || fail "spans produced $spans, counted $total"
ok "restart under a running producer: $spans spans, all collected, one header"
