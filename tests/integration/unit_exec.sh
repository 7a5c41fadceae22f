#!/bin/sh
# unit_exec.sh - the generated unit's Exec lines, with %i substituted, run
# as written and behave: what systemd would do for `systemctl start`,
# `systemctl reload` (check first, then signal) and `systemctl stop`.
. "$top_srcdir/tests/integration/daemon_lib.sh"

unit="$top_builddir/systemd/perfmond@.service"
[ -f "$unit" ] || fail "$unit was not generated"
inst="$SHM"
mkdir -p "$T/etc/perfmond" "$T/log/perfmond/$inst"
cat >"$T/etc/perfmond/$inst.conf" <<CONF
[collector]
flush_interval = 100ms
CONF

# Each line as systemd runs it: %i is the instance, the configured paths
# point into this build and a scratch /etc.
exec_line() {
	grep "^$1=" "$unit" | sed -n "${2:-1}p" | sed -e "s/^$1=//" -e "s/%i/$inst/g" \
		-e "s#[^ ]*/sbin/perfmond#$PERFMOND#" -e "s#[^ ]*/etc/perfmond/#$T/etc/perfmond/#g"
}
start=$(exec_line ExecStart)
check=$(exec_line ExecReload 1)
signal=$(exec_line ExecReload 2)
case "$start" in *"--instance=$inst"*"$T/etc/perfmond/$inst.conf") ;; *) fail "ExecStart: $start" ;; esac

# start: systemd sets LOGS_DIRECTORY from LogsDirectory=perfmond/%i
LOGS_DIRECTORY="$T/log/perfmond/$inst" sh -c "exec $start" >/dev/null 2>"$T/daemon.err" &
DPID=$!
"$SEGTOOL" wait-ready "$inst" 10 || fail "ExecStart did not bring up the collector"
"$PRODUCER" "$inst" 1 1000 --label unit >/dev/null
ok "ExecStart runs: shm named after the instance, outputs in LOGS_DIRECTORY"

# reload: the check passes, then the signal line with $MAINPID
printf '[collector]\nflush_interval = 200ms\n' >"$T/etc/perfmond/$inst.conf"
sh -c "$check" >/dev/null || fail "ExecReload check failed on a good file"
MAINPID=$DPID sh -c "$signal" || fail "ExecReload signal line failed"
wait_for grep -q 'flush_interval = 200ms.*applied' "$T/daemon.err" ||
	fail "the reload was not applied"
kill -0 "$DPID" || fail "the daemon did not survive the reload"
# a broken file: the check line fails with 78, so systemd never signals
printf '[collector]\nflush_interval = never\n' >"$T/etc/perfmond/$inst.conf"
status=0
sh -c "$check" >/dev/null 2>"$T/check.err" || status=$?
[ "$status" = 78 ] || fail "ExecReload check on a broken file: exit $status, expected 78"
grep -q "$T/etc/perfmond/$inst.conf:2" "$T/check.err" || fail "check does not name FILE:LINE"
ok "ExecReload: checks first (78 on a broken file), then signals"

# stop: SIGTERM, clean exit, files in the logs directory
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "exit $DSTATUS on SIGTERM"
[ "$(count_of unit total "$T/log/perfmond/$inst/$inst.csv")" = 1000 ] ||
	fail "no rows in $T/log/perfmond/$inst/$inst.csv"
[ -s "$T/log/perfmond/$inst/${inst}_summary.txt" ] || fail "no summary in the logs directory"
ok "stop: exit 0, CSV and summary in the logs directory"
