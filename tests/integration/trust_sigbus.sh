#!/bin/sh
# trust_sigbus.sh - a member of the segments' group shrinks them with
# ftruncate() under a running daemon: the daemon survives, restores their
# size and headers, counts and logs what was lost (here a hole it was
# watching), keeps collecting every event stamped after the restore; the
# last interval and the summary are written at the stop.  Shrunk while the
# daemon is down, they are repaired at its start instead of refused.  Also
# prints how long producers are exposed (shrink to restored size).
. "$top_srcdir/tests/integration/daemon_lib.sh"

cat >"$T/p.conf" <<CONF
[shm]
name = $SHM
capacity = 65536
[collector]
flush_interval = 100ms
stalled_sample_timeout = 1h
[output]
csv = $T/out.csv
summary = $T/sum.txt
CONF
start_daemon "$T/p.conf"
ring=$(stat -c %s "/dev/shm/$SHM")
meta=$(stat -c %s "/dev/shm/$SHM.meta")

# accounted N: wait until the daemon has accounted for N events (read,
# dropped or stalled), as its display copy in the control block says.
accounted() {
	wait_for sh -c "\"$SEGTOOL\" status $SHM | awk -v n=$1 '{exit !(\$6 + \$8 + \$10 >= n)}'" ||
		fail "the daemon did not account for $1 events: $("$SEGTOOL" status "$SHM")"
}

"$PRODUCER" "$SHM" 1 1000 --label before >/dev/null || fail "producer before"
accounted 2000
# A producer dead between reserving and publishing: a hole the daemon
# steps over and watches (for an hour: stalled_sample_timeout).
"$SEGTOOL" hole "$SHM"
accounted 2000
wait_for sh -c "\"$SEGTOOL\" status $SHM | awk '{exit !(\$12 == \$14)}'" ||
	fail "the hole was not stepped over: $("$SEGTOOL" status "$SHM")"

"$SEGTOOL" truncate "$SHM" "" 0 || fail "truncate ring"
"$SEGTOOL" truncate "$SHM" .meta 4096 || fail "truncate meta"
wait_for sh -c "[ \$(stat -c %s /dev/shm/$SHM) = $ring ] && [ \$(stat -c %s /dev/shm/$SHM.meta) = $meta ]" ||
	fail "sizes not restored: $(stat -c %s "/dev/shm/$SHM" "/dev/shm/$SHM.meta")"
kill -0 "$DPID" || fail "the daemon died: $(cat "$T/daemon.err")"
wait_for "$SEGTOOL" status "$SHM" || fail "headers not restored"
grep -q "was shrunk by someone" "$T/daemon.err" || fail "the shrink was not logged"
# The wiped heads go on from where they were: what is stamped now is read.
"$PRODUCER" "$SHM" 2 2000 --label after >/dev/null || fail "a producer cannot attach after the repair"
accounted 6001
# Written out under their label before the next shrink cuts the label off.
wait_for sh -c "[ \$(\"$CSVCHECK\" \"$T/out.csv\" | awk -F'\t' '\$1==\"after\" && \$2==\"total\" {s+=\$3} END{print s+0}') = 2000 ]" ||
	fail "spans after the first shrink: $(count_of after total "$T/out.csv") of 2000"
ok "ring shrunk to 0 and control block to 4096 bytes: daemon alive, sizes and headers restored"

# How long a producer would be exposed: shrink to restored size.
w1=$("$SEGTOOL" shrink-window "$SHM" "" 4096) || fail "ring not restored"
w2=$("$SEGTOOL" shrink-window "$SHM" .meta 4096) || fail "control block not restored"
echo "note: exposure window (shrink -> size restored): ring ${w1} us, control block ${w2} us"
"$PRODUCER" "$SHM" 2 500 --label after >/dev/null || fail "producer after the second shrink"
accounted 7001
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS after the shrinks"
# Every event stamped after a restore is read; the hole, watched when its
# slot was cut off, is counted dropped with it, once; nothing else is lost.
after=$(count_of after total "$T/out.csv")
line=$(grep "stopped:" "$T/daemon.err") || fail "no stop line"
counts=$(echo "$line" | sed -n 's/.*stopped: \([0-9]*\) events drained, \([0-9]*\) dropped, \([0-9]*\) stalled.*/\1 \2 \3/p')
[ "$counts" = "7000 1 0" ] || fail "drained, dropped, stalled: $counts (want 7000 1 0): $line"
[ "$after" = 2500 ] || fail "spans after the shrinks: $after of 2500"
grep -q "1 unread event(s) in them counted as dropped" "$T/daemon.err" ||
	fail "the restore did not say what it counted: $(grep shrunk "$T/daemon.err")"
grep -q after "$T/sum.txt" || fail "no summary written at the stop"
ok "kept collecting: all 2500 spans stamped after the shrinks, the watched hole counted dropped once; summary written at the stop"

# Shrunk while the daemon is down: repaired at start.
"$SEGTOOL" truncate "$SHM" "" 0
"$SEGTOOL" truncate "$SHM" .meta 0
start_daemon --shm "$SHM" --csv "$T/out2.csv" --summary "" --interval 100ms --capacity 65536
grep -q "restored" "$T/daemon.err" || fail "the start did not say it repaired the segments"
"$PRODUCER" "$SHM" 3 300 --label later >/dev/null || fail "producer after the repair at start"
accounted 600
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
[ "$(count_of later total "$T/out2.csv")" = 300 ] || fail "spans after repair at start: $(count_of later total "$T/out2.csv")"
ok "segments shrunk to 0 while stopped: repaired at start, collecting"
