#!/bin/sh
# daemon_signals.sh - summaries, reopens, rotations, reloads and control
# requests while a producer stamps: 50 SIGUSR2 and 20 SIGUSR1 (twice after
# a rename, as logrotate does), `perfmonctl summary` and `status` over the
# control socket, and 3 SIGHUP, each after the configuration was rewritten
# (flush and poll intervals, stall timeout, CSV push, rotation size and the
# output paths change under load; one new CSV path cannot be opened and the
# old one is kept), with rotate_size making the daemon rotate by itself.
# The daemon exits 0 (under ThreadSanitizer: no report), every summary it
# wrote parses, and the files hold every span once.
. "$top_srcdir/tests/integration/daemon_lib.sh"
CTL="$top_builddir/src/perfmonctl"

# conf CSV SUMMARY [SECTION.KEY=VALUE]...: the configuration, rewritten
# before each reload.
conf() {
	c_csv=$1; c_sum=$2; shift 2
	write_conf "$T/p.conf" shm.capacity=1048576 "output.csv=$c_csv" "output.summary=$c_sum" \
		output.rotate_keep=1000 "$@"
}
conf "$T/out.csv" "$T/out_summary.txt" collector.flush_interval=50ms output.rotate_size=1K
CUR=$T/out.csv
start_daemon "$T/p.conf"
"$PRODUCER" "$SHM" 1 100 --label sig --seconds 4 --pause-us 200 >"$T/prod.out" &
PPID_=$!
PIDS=$PPID_
asked=0
n=0
while [ $n -lt 50 ]; do
	kill -USR2 "$DPID" || fail "the daemon went away at SIGUSR2 $n"
	if [ $((n % 5)) = 0 ]; then
		# as logrotate would, now and then; a reopen in place otherwise
		case $n in 5|45) mv "$CUR" "$T/moved-$n.csv" 2>/dev/null || true ;; esac
		kill -USR1 "$DPID"
		kill -USR1 "$DPID"
	fi
	if [ $((n % 10)) = 3 ]; then
		"$CTL" summary "$SHM" --timeout 10s >"$T/asked.txt" 2>"$T/asked.err" ||
			fail "perfmonctl summary under load: $(cat "$T/asked.err")"
		grep -q 'perfmond summary' "$T/asked.txt" || fail "summary asked for: $(cat "$T/asked.txt")"
		"$CTL" status "$SHM" >"$T/status.txt" 2>&1 || fail "perfmonctl status: $(cat "$T/status.txt")"
		grep -q "alive, pid $DPID" "$T/status.txt" || fail "status under load: $(cat "$T/status.txt")"
		asked=$((asked + 1))
	fi
	case $n in
	10)
		conf "$T/b.csv" "$T/b_summary.txt" collector.flush_interval=20ms \
			collector.poll_interval=2ms collector.stalled_sample_timeout=5s \
			output.csv_flush_interval=100ms output.rotate_size=2K
		CUR=$T/b.csv
		kill -HUP "$DPID" ;;
	30)
		# A directory that does not exist: the CSV stays where it is.
		conf "$T/none/x.csv" "$T/b_summary.txt" collector.flush_interval=30ms \
			output.rotate_size=1K
		kill -HUP "$DPID"
		wait_for grep -q "still writing $T/b.csv" "$T/daemon.err" ||
			fail "a CSV that cannot be opened was not refused on reload"
		"$CTL" status "$SHM" --format csv >"$T/status.out" || fail "status after the reload"
		grep -q ",$T/b.csv,$T/b_summary.txt," "$T/status.out" ||
			fail "status does not show the CSV still written: $(cat "$T/status.out")"
		;;
	esac
	sleep 0.05
	n=$((n + 1))
done
conf "$T/c.csv" "$T/c_summary.txt" collector.flush_interval=50ms output.rotate_size=1K
kill -HUP "$DPID"
wait "$PPID_" || fail "producer failed"
PIDS=
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS: $(tail -5 "$T/daemon.err")"
grep -q "ThreadSanitizer" "$T/daemon.err" && fail "ThreadSanitizer: $(grep -A5 ThreadSanitizer "$T/daemon.err" | head -20)"
for v in 20ms 30ms; do
	grep -q "flush_interval = $v .*applied" "$T/daemon.err" || fail "flush_interval $v not applied"
done
[ -s "$T/b.csv" ] && [ -s "$T/c.csv" ] || fail "the reloads did not move the CSV: $(ls "$T")"
[ ! -e "$T/none" ] || fail "the refused CSV's directory was created"
spans=$(awk '{print $2}' "$T/prod.out")
total=$(count_of sig total "$T"/*.csv)
[ "$total" = "$spans" ] || fail "produced $spans spans, the files hold $total"
grep -q "sig" "$T/c_summary.txt" || fail "summary: $(head -5 "$T/c_summary.txt")"
n=$(ls "$T" | grep -c '^[a-z]*-.*_summary\.txt$' || true)
[ "$n" -ge 1 ] || fail "no rotation happened: $(ls -la "$T")"
ok "50 SIGUSR2, 20 SIGUSR1, $asked summary and status requests, 3 SIGHUP with new settings and $n rotations under a producer: exit 0, $total spans = produced"
