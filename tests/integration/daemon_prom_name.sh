#!/bin/sh
# daemon_prom_name.sh - a Prometheus textfile whose name does not end in
# .prom (node_exporter would ignore it) is warned about, naming FILE:LINE,
# by --check-config and at start; a .prom name is not.
. "$top_srcdir/tests/integration/daemon_lib.sh"

printf '[prometheus]\ntextfile = %s\n' "$T/metrics.txt" >"$T/bad.conf"
printf '[prometheus]\ntextfile = %s\n' "$T/metrics.prom" >"$T/good.conf"
"$PERFMOND" --check-config "$T/bad.conf" >/dev/null 2>"$T/check.err" || fail "--check-config failed"
grep -q "$T/bad.conf:2.*textfile.*does not end in \".prom\"" "$T/check.err" ||
	fail "--check-config gave no warning: $(cat "$T/check.err")"
"$PERFMOND" --check-config "$T/good.conf" >/dev/null 2>"$T/check.err" || fail "--check-config failed"
[ ! -s "$T/check.err" ] || fail "warning for a .prom name: $(cat "$T/check.err")"
"$PERFMOND" --check-config --shm "$SHM" >/dev/null 2>"$T/check.err" || fail "--check-config failed"
grep -q 'prom' "$T/check.err" && fail "warning with no textfile: $(cat "$T/check.err")"

start_daemon "$T/bad.conf" --shm "$SHM" --csv "" --summary "" --interval 100ms
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "daemon exited $DSTATUS"
grep -q "textfile.*does not end in \".prom\"" "$T/daemon.err" ||
	fail "no warning at start: $(cat "$T/daemon.err")"
[ -f "$T/metrics.txt" ] || fail "the textfile was not written all the same"
ok "textfile without .prom: warned at --check-config and at start"
