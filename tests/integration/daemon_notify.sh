#!/bin/sh
# daemon_notify.sh - the sd_notify conversation through our own
# NOTIFY_SOCKET listener: READY=1 once the segments exist and the drain
# thread runs, STATUS= each interval, WATCHDOG=1 while the drain thread
# moves, RELOADING=1/READY=1 around SIGHUP, STOPPING=1 at SIGTERM.
. "$top_srcdir/tests/integration/daemon_lib.sh"

sock="$T/notify.sock"
notify_listen "$sock" "$T/notify.log" 20
lpid=$!
PIDS=$lpid
wait_for test -S "$sock" || fail "listener did not start"

NOTIFY_SOCKET="$sock" WATCHDOG_USEC=200000 start_daemon --shm "$SHM" --csv "$T/out.csv" \
	--summary "$T/sum.txt" --interval 100ms
# READY only once the segments exist and the collector runs.
wait_for grep -q 'READY=1' "$T/notify.log" || fail "no READY=1"
"$PRODUCER" "$SHM" 1 1000 >/dev/null
wait_for grep -q 'STATUS=.*events/s' "$T/notify.log" || fail "no STATUS= per interval"
wait_for grep -q 'WATCHDOG=1' "$T/notify.log" || fail "no WATCHDOG=1"
kill -HUP "$DPID"
wait_for grep -q 'RELOADING=1' "$T/notify.log" || fail "no RELOADING=1"
stop_daemon TERM
wait $lpid || true
PIDS=
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
seq=$(grep -o -E 'READY=1|RELOADING=1|STOPPING=1' "$T/notify.log" | tr '\n' ' ')
case "$seq" in
"READY=1 RELOADING=1 READY=1 STOPPING=1 ") ;;
*) fail "sequence: $seq" ;;
esac
grep -q 'MONOTONIC_USEC=' "$T/notify.log" || fail "RELOADING without MONOTONIC_USEC"
ok "READY, STATUS, WATCHDOG, RELOADING/READY, STOPPING in order"
