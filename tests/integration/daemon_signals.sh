#!/bin/sh
# daemon_signals.sh - summaries, reopens, rotations and reloads asked for
# while a producer stamps: 50 SIGUSR2 and 20 SIGUSR1 (twice after a
# rename, as logrotate does), 3 SIGHUP, with rotate_size making the daemon
# rotate by itself.  The daemon exits 0 (under ThreadSanitizer: no report),
# every summary it wrote parses, and the files hold every span once.
. "$top_srcdir/tests/integration/daemon_lib.sh"

cat >"$T/p.conf" <<CONF
[shm]
name = $SHM
capacity = 1048576
[collector]
flush_interval = 50ms
[output]
csv = $T/out.csv
summary = $T/out_summary.txt
rotate_size = 1K
rotate_keep = 1000
CONF
start_daemon "$T/p.conf"
"$PRODUCER" "$SHM" 1 100 --label sig --seconds 4 --pause-us 200 >"$T/prod.out" &
PPID_=$!
PIDS=$PPID_
i=0
while [ $i -lt 50 ]; do
	kill -USR2 "$DPID" || fail "the daemon went away at SIGUSR2 $i"
	if [ $((i % 5)) = 0 ]; then
		# as logrotate would, now and then; a reopen in place otherwise
		case $i in 5|45) mv "$T/out.csv" "$T/moved-$i.csv" 2>/dev/null || true ;; esac
		kill -USR1 "$DPID"
		kill -USR1 "$DPID"
	fi
	[ $((i % 20)) = 10 ] && kill -HUP "$DPID"
	sleep 0.05
	i=$((i + 1))
done
kill -HUP "$DPID"
wait "$PPID_" || fail "producer failed"
PIDS=
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS: $(tail -5 "$T/daemon.err")"
grep -q "ThreadSanitizer" "$T/daemon.err" && fail "ThreadSanitizer: $(grep -A5 ThreadSanitizer "$T/daemon.err" | head -20)"
spans=$(awk '{print $2}' "$T/prod.out")
total=$(count_of sig total "$T"/*.csv)
[ "$total" = "$spans" ] || fail "produced $spans spans, the files hold $total"
grep -q "collector" "$T/out_summary.txt" || grep -q "sig" "$T/out_summary.txt" || fail "summary: $(head -5 "$T/out_summary.txt")"
n=$(ls "$T" | grep -c '^out-.*_summary\.txt$' || true)
[ "$n" -ge 1 ] || fail "no rotation happened: $(ls -la "$T")"
ok "50 SIGUSR2, 20 SIGUSR1, 3 SIGHUP and $n rotations under a producer: exit 0, $total spans = produced"
