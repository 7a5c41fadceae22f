#!/bin/sh
# trust_sigbus.sh - a member of the segments' group shrinks them with
# ftruncate() under a running daemon: the daemon survives, restores their
# size and headers, logs what was lost and keeps collecting; the last
# interval and the summary are written at the stop.  Shrunk while the
# daemon is down, they are repaired at its start instead of refused.  Also
# prints how long producers are exposed (shrink to restored size).
. "$top_srcdir/tests/daemon_lib.sh"

start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 100ms --capacity 65536
ring=$(stat -c %s "/dev/shm/$SHM")
meta=$(stat -c %s "/dev/shm/$SHM.meta")
"$PRODUCER" "$SHM" 1 1000 --label before >/dev/null || fail "producer before"
sleep 0.3

"$SEGTOOL" truncate "$SHM" "" 0 || fail "truncate ring"
"$SEGTOOL" truncate "$SHM" .meta 4096 || fail "truncate meta"
wait_for sh -c "[ \$(stat -c %s /dev/shm/$SHM) = $ring ] && [ \$(stat -c %s /dev/shm/$SHM.meta) = $meta ]" ||
	fail "sizes not restored: $(stat -c %s "/dev/shm/$SHM" "/dev/shm/$SHM.meta")"
kill -0 "$DPID" || fail "the daemon died: $(cat "$T/daemon.err")"
wait_for "$SEGTOOL" status "$SHM" || fail "headers not restored"
grep -q "was shrunk by someone" "$T/daemon.err" || fail "the shrink was not logged"
"$PRODUCER" "$SHM" 2 2000 --label after >/dev/null || fail "a producer cannot attach after the repair"
ok "ring shrunk to 0 and control block to 4096 bytes: daemon alive, sizes and headers restored"

# How long a producer would be exposed: shrink to restored size.
w1=$("$SEGTOOL" shrink-window "$SHM" "" 4096) || fail "ring not restored"
w2=$("$SEGTOOL" shrink-window "$SHM" .meta 4096) || fail "control block not restored"
echo "note: exposure window (shrink -> size restored): ring ${w1} us, control block ${w2} us"
"$PRODUCER" "$SHM" 2 500 --label after >/dev/null || fail "producer after the second shrink"
sleep 0.3
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS after the shrinks"
# A shrink to 0 zeroes the sub-rings' heads: the reader sees them go back
# (an absurd head) and counts the indices it cannot prove fresh as
# dropped.  Every event is still in exactly one counter: 1000 spans before
# and 2500 after are 7000 events, drained or dropped.
after=$(count_of after total "$T/out.csv")
line=$(grep "stopped:" "$T/daemon.err") || fail "no stop line"
drained=$(echo "$line" | sed -n 's/.*stopped: \([0-9]*\) events drained, \([0-9]*\) dropped.*/\1/p')
dropped=$(echo "$line" | sed -n 's/.*stopped: \([0-9]*\) events drained, \([0-9]*\) dropped.*/\2/p')
[ $((drained + dropped)) = 7000 ] || fail "events not all accounted for: $line"
[ "$after" -ge 1 ] && [ $((after * 2 + dropped)) -ge 5000 ] ||
	fail "spans after the shrink: $after with $dropped dropped"
grep -q after "$T/sum.txt" || fail "no summary written at the stop"
ok "kept collecting: $after of 2500 spans after the shrinks, the rest counted dropped; summary written at the stop"

# Shrunk while the daemon is down: repaired at start.
"$SEGTOOL" truncate "$SHM" "" 0
"$SEGTOOL" truncate "$SHM" .meta 0
start_daemon --shm "$SHM" --csv "$T/out2.csv" --summary "" --interval 100ms --capacity 65536
grep -q "restored" "$T/daemon.err" || fail "the start did not say it repaired the segments"
"$PRODUCER" "$SHM" 3 300 --label later >/dev/null || fail "producer after the repair at start"
sleep 0.3
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
[ "$(count_of later total "$T/out2.csv")" = 300 ] || fail "spans after repair at start: $(count_of later total "$T/out2.csv")"
ok "segments shrunk to 0 while stopped: repaired at start, collecting"
