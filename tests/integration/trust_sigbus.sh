#!/bin/sh
# trust_sigbus.sh - a member of the segments' group shrinks them with
# ftruncate() under a running daemon: the daemon survives, restores their
# size and headers, counts and logs what was lost (here a hole it was
# watching), keeps collecting every event stamped after the restore; the
# last interval and the summary are written at the stop.  Shrunk while the
# daemon is down, they are repaired at its start instead of refused.  Cut
# again and again under a flooding producer, whose pages the drain thread
# is reading, the daemon survives every cut and logs every restore.
# perfmonctl status and top (in a terminal) read segments cut under them
# without dying.  Also prints how long producers are exposed (shrink to
# restored size), with the ring idle and busy, and bounds it.
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
echo "note: exposure window (shrink -> size restored), idle ring: ring ${w1} us, control block ${w2} us"
# Restored within a poll interval or so; 200 ms is a generous bound for a
# loaded machine.
[ "$w1" -lt 200000 ] && [ "$w2" -lt 200000 ] || fail "exposure window too long: ${w1} us, ${w2} us"
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

# --- Cut under a flood, again and again ------------------------------------
# The drain thread reads the ring without pause while a producer floods it,
# so it reads a cut page before the size change is noticed (without its
# SIGBUS guard it would die here).  The flooding producer may itself be
# killed by SIGBUS (exit 135): the exposure documented in perfmond(8).
start_daemon --shm "$SHM" --csv "$T/out3.csv" --summary "$T/sum3.txt" --interval 100ms --capacity 65536
ring_lines() { grep -c "/dev/shm/$SHM was shrunk by someone" "$T/daemon.err" || true; }
meta_lines() { grep -c "/dev/shm/$SHM.meta was shrunk by someone" "$T/daemon.err" || true; }
heads() { "$SEGTOOL" status "$SHM" | awk '{print $14}'; }
r0=$(ring_lines)
m0=$(meta_lines)
# flood_start: a producer flooding the ring, once the heads are seen
# moving (a producer that could not attach, racing a repair, is replaced).
# flood_stop: SIGKILL it, whatever state the cuts left it in (killed by
# SIGBUS, or still being killed under a sanitizer).
flood_start() {
	for try in 1 2 3; do
		h=$(heads)
		"$PRODUCER" "$SHM" 4 1000 --label flood --seconds 60 >/dev/null 2>&1 &
		FLOOD=$!
		PIDS=$FLOOD
		wait_for sh -c "! kill -0 $FLOOD || [ \$(\"$SEGTOOL\" status $SHM | awk '{print \$14}') -gt $((h + 20000)) ]"
		kill -0 "$FLOOD" 2>/dev/null && return 0
		wait "$FLOOD" || true
	done
	fail "no producer floods the ring: $("$SEGTOOL" status "$SHM")"
}
flood_stop() {
	kill -9 "$FLOOD" 2>/dev/null || true
	wait "$FLOOD" 2>/dev/null || true
	PIDS=
}
ROUNDS=12
round=0   # (wait_for uses i)
while [ $round -lt $ROUNDS ]; do
	round=$((round + 1))
	flood_start
	# Every other round the ring keeps its header (heads survive; the cut
	# slots read as unpublished), else it is cut to nothing.
	[ $((round % 2)) = 0 ] && cut=4096 || cut=0
	"$SEGTOOL" truncate "$SHM" "" $cut || fail "truncate ring"
	"$SEGTOOL" truncate "$SHM" .meta 4096 || fail "truncate meta"
	wait_for sh -c "! kill -0 $DPID || { [ \$(stat -c %s /dev/shm/$SHM) = $ring ] && [ \$(stat -c %s /dev/shm/$SHM.meta) = $meta ]; }"
	if ! kill -0 "$DPID" 2>/dev/null; then
		st=0
		wait "$DPID" || st=$?
		DPID=
		fail "round $round: perfmond died (exit $st) when the ring was cut to $cut bytes under a flood"
	fi
	[ "$(stat -c %s "/dev/shm/$SHM")" = $ring ] && [ "$(stat -c %s "/dev/shm/$SHM.meta")" = $meta ] ||
		fail "round $round: sizes not restored: $(stat -c %s "/dev/shm/$SHM" "/dev/shm/$SHM.meta")"
	wait_for sh -c "[ \$(grep -c '/dev/shm/$SHM was shrunk by someone' '$T/daemon.err') -ge $((r0 + round)) ]" ||
		fail "round $round: the ring's restore was not logged"
	flood_stop
done
# The exposure window with the ring busy: the drain thread is reading,
# not sleeping in its poll.
flood_start
w3=$("$SEGTOOL" shrink-window "$SHM" "" 4096) || fail "ring not restored under a flood"
echo "note: exposure window (shrink -> size restored), ring busy: ${w3} us"
[ "$w3" -lt 200000 ] || fail "exposure window under a flood too long: ${w3} us"
flood_stop
[ "$(meta_lines)" -gt "$m0" ] || fail "no restore of the control block logged"
# Whatever the flood left, the reader catches up with the heads and goes
# on counting every span stamped now.
"$PRODUCER" "$SHM" 2 2000 --label calm >/dev/null || fail "a producer cannot attach after the flood's cuts"
wait_for sh -c "[ \$(\"$CSVCHECK\" \"$T/out3.csv\" | awk -F'\t' '\$1==\"calm\" && \$2==\"total\" {s+=\$3} END{print s+0}') = 2000 ]" ||
	fail "spans after the flood's cuts: $(count_of calm total "$T/out3.csv") of 2000"
wait_for sh -c "\"$SEGTOOL\" status $SHM | awk '{exit !(\$12 == \$14)}'" ||
	fail "the reader does not catch up with the heads: $("$SEGTOOL" status "$SHM")"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS after the cuts under a flood"
[ "$(count_of calm total "$T/out3.csv")" = 2000 ] || fail "calm spans: $(count_of calm total "$T/out3.csv")"
grep -q calm "$T/sum3.txt" || fail "no summary written at the stop"
ok "$ROUNDS cuts of the ring (and its control block) under a flood: daemon alive, each restore logged, all 2000 spans stamped afterwards counted"

# --- perfmonctl across a shrink ----------------------------------------------
# perfmonctl maps the segments read-only and reads them again later (top at
# every refresh, status a second time 250 ms after its first look): a shrink
# in between must not kill it with SIGBUS.  The collector is stopped
# (SIGSTOP) meanwhile, so the segments stay cut until perfmonctl has read
# them: status waits 2 s for the stopped collector's answer at each look,
# and top looks again every second.
CTL="$top_builddir/src/perfmonctl"
start_daemon --shm "$SHM" --csv "$T/out4.csv" --summary "" --interval 100ms --capacity 65536
"$PRODUCER" "$SHM" 2 100 --label seen >/dev/null || fail "producer before perfmonctl"
TOP=
if command -v script >/dev/null 2>&1; then
	mkfifo "$T/keys"
	script -qec "'$CTL' top '$SHM' --refresh 0.1" /dev/null <"$T/keys" >"$T/top.out" 2>&1 &
	TOP=$!
	exec 4>"$T/keys"
	wait_for grep -q "q: quit" "$T/top.out" || fail "perfmonctl top does not draw: $(cat "$T/top.out")"
else
	echo "note: script(1) not found: perfmonctl top is not tried"
fi
kill -STOP "$DPID"
"$CTL" status "$SHM" >"$T/st4.out" 2>"$T/st4.err" &
ST=$!
wait_for grep -q "/dev/shm/$SHM.meta" "/proc/$ST/maps" || fail "perfmonctl status did not map the segments"
"$SEGTOOL" truncate "$SHM" "" 0 || fail "truncate ring"
"$SEGTOOL" truncate "$SHM" .meta 0 || fail "truncate meta"
st=0
wait "$ST" || st=$?
kill -CONT "$DPID"
[ $st != 135 ] || fail "perfmonctl status was killed by SIGBUS"
grep -q "was shrunk while it was being read" "$T/st4.err" ||
	fail "perfmonctl status did not read the cut segments (exit $st): $(cat "$T/st4.out" "$T/st4.err")"
ok "perfmonctl status across a shrink: exit $st, the faults absorbed and reported"
wait_for sh -c "[ \$(stat -c %s /dev/shm/$SHM) = $ring ] && [ \$(stat -c %s /dev/shm/$SHM.meta) = $meta ]" ||
	fail "sizes not restored after SIGCONT"
if [ -n "$TOP" ]; then
	(printf q >&4) 2>/dev/null || true   # a subshell: top may be gone (SIGPIPE)
	exec 4>&-
	st=0
	wait "$TOP" || st=$?
	[ $st != 135 ] || fail "perfmonctl top was killed by SIGBUS"
	[ $st = 0 ] || fail "perfmonctl top exited $st: $(tail -c 2000 "$T/top.out")"
	grep -q "was shrunk while it was being read" "$T/top.out" ||
		fail "perfmonctl top did not read the cut segments: $(tail -c 2000 "$T/top.out")"
	ok "perfmonctl top (in a terminal) across a shrink: quit normally, the faults absorbed and reported"
fi
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS after perfmonctl's phase"
