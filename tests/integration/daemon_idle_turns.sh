#!/bin/sh
# daemon_idle_turns.sh - the main thread's turns.  While events flow, the
# control block's copy of the drain thread's counters is refreshed every
# turn, about ten times a second; once the collector is idle the main
# thread wakes about once a second (each wake-up a voluntary context
# switch of that thread), not ten times.
. "$top_srcdir/tests/integration/daemon_lib.sh"

main_switches() {
	awk '/^voluntary_ctxt_switches:/ {print $2}' /proc/"$DPID"/task/"$DPID"/status
}

# An hour's interval: no report wakes the main thread in the test.
start_daemon --shm "$SHM" --csv '' --summary '' --interval 1h
sleep 1.5   # the turns that follow start-up
s0=$(main_switches)
sleep 4
s1=$(main_switches)
idle=$((s1 - s0))
[ "$idle" -le 12 ] || fail "idle main thread woke $idle times in 4 s (expected about 4)"

"$PRODUCER" "$SHM" 7 100 --seconds 4 --pause-us 2000 >"$T/producer.out" &
PIDS=$!
drained() { "$SEGTOOL" status "$SHM" | awk '{print $6}'; }
wait_for sh -c "[ \"\$(\"$SEGTOOL\" status \"$SHM\" | awk '{print \$6}')\" -gt 0 ]" ||
	fail "the control block never showed an event drained"
# Now in busy turns: 2 s of samples every 50 ms.
i=0
: >"$T/drained"
while [ $i -lt 40 ]; do
	drained >>"$T/drained"
	sleep 0.05
	i=$((i + 1))
done
distinct=$(sort -u "$T/drained" | wc -l)
[ "$distinct" -ge 8 ] ||
	fail "the control block's drained count took $distinct values in 2 s of flow (expected about 20)"
wait $PIDS || fail "producer failed"
PIDS=
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
ok "idle: $idle main-thread wake-ups in 4 s; flowing: $distinct distinct drained counts in 2 s"
