#!/bin/sh
# daemon_reload.sh - SIGHUP reloads the whole file: live settings are
# applied, the rest reported and kept; a broken file is refused and the
# daemon goes on; SIGUSR2 writes the summary while running; lock_memory
# locks the daemon's memory.
. "$top_srcdir/tests/integration/daemon_lib.sh"

# lock_memory needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK: an
# unprivileged user (a package build) usually has 8 MiB, less than the
# daemon's tables, and its start would rightly fail.
lock=yes
if [ "$(id -u)" != 0 ] && [ "$(ulimit -l)" != unlimited ]; then
	lock=no
fi
conf() {
	write_conf "$T/p.conf" "shm.capacity=$1" "collector.flush_interval=$2" \
		"collector.lock_memory=$lock" "output.percentiles=$3"
}
conf 65536 100ms "50, 99"
start_daemon "$T/p.conf"
if [ "$lock" = no ]; then
	echo "note: not root and RLIMIT_MEMLOCK is $(ulimit -l) KiB: lock_memory not checked"
elif nm "$PERFMOND" 2>/dev/null | grep -q '__[at]san_init'; then
	# A sanitizer's shadow memory cannot be locked; mlockall's own
	# result is still checked by the daemon at start (exit 1 on failure).
	echo "note: sanitizer build, VmLck not checked"
else
	grep -q 'VmLck:[[:space:]]*[1-9]' "/proc/$DPID/status" ||
		fail "lock_memory = yes did not lock memory"
	ok "lock_memory locks the daemon's memory"
fi

"$PRODUCER" "$SHM" 1 1000 --label reload >/dev/null
kill -USR2 "$DPID"
wait_for test -s "$T/sum.txt" || fail "SIGUSR2 did not write the summary"
grep -q reload "$T/sum.txt" || fail "summary lacks the running figures"
ok "SIGUSR2 writes the summary while running"

conf 131072 300ms "50, 90"
kill -HUP "$DPID"
wait_for grep -q 'flush_interval = 300ms.*applied' "$T/daemon.err" || fail "flush_interval not applied"
grep -q 'capacity = 131072.*cannot' "$T/daemon.err" || fail "capacity change not reported as kept"
grep -q 'percentiles = .*cannot' "$T/daemon.err" || fail "percentile change not reported as kept"
ok "reload: live settings applied, the rest reported and kept"

printf '[collector]\nflush_interval = soon\n' >"$T/p.conf"
kill -HUP "$DPID"
wait_for grep -q 'configuration not reloaded' "$T/daemon.err" || fail "broken file not refused"
grep -q "$T/p.conf:2" "$T/daemon.err" || fail "refusal does not name FILE:LINE"
"$PRODUCER" "$SHM" 1 500 --label reload >/dev/null
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
[ "$(count_of reload total "$T/out.csv")" = 1500 ] || fail "collection did not go on after the reloads"
head -n 1 "$T/out.csv" | grep -q 'p99_ns' || fail "the CSV header changed under a kept setting"
ok "a broken reload is refused and collection goes on"
