#!/bin/sh
# producer_late.sh - a producer started before the daemon (attached only
# through SLICK_PERFMON_SHM) starts stamping once the daemon has created the
# segments, without a restart; the labels it published before any segment
# existed are in the name table; a child it forks is counted too.
. "$top_srcdir/tests/integration/daemon_lib.sh"
# Up to 8 CPUs the ring has exactly the configured slots; size it so here.
PERFMOND_CPUS=2
export PERFMOND_CPUS
LATE="$top_builddir/tests/tools/late_producer"

mkfifo "$T/in"
SLICK_PERFMON_SHM=$SHM "$LATE" <"$T/in" >"$T/prod.out" 2>"$T/prod.err" &
PIDS=$!
exec 3>"$T/in"
# The producer runs first, with no segment anywhere: its stamps go nowhere.
echo "spans 300" >&3
wait_for grep -q '^spans 300' "$T/prod.out" || fail "producer did not run"

start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 100ms --capacity 65536
echo "wait-attached" >&3
wait_for grep -q '^attached\|^timeout' "$T/prod.out" || fail "producer did not answer"
grep -q '^attached 65536' "$T/prod.out" || fail "producer never attached: $(cat "$T/prod.out")"
echo "spans 1000" >&3
echo "fork 250" >&3
wait_for grep -q '^child .* spans 250' "$T/prod.out" || fail "forked child did not stamp: $(cat "$T/prod.out")"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "daemon exited $DSTATUS"
echo quit >&3
exec 3>&-
wait $PIDS || fail "producer failed"
PIDS=

# Exactly the spans stamped after the daemon came up: the parent's 1000 and
# the forked child's 250 (which goes on stamping into the inherited ring).
n=$(count_of late late.s1 "$T/out.csv")
[ "$n" = 1250 ] || fail "expected 1250 spans under the label published before the segments existed, got $n"
[ "$(count_of late total "$T/out.csv")" = 1250 ] || fail "total row count wrong"
[ "$(column_sum late total 8 "$T/out.csv")" = 0 ] || fail "orphans"
ok "producer started first: 1250 spans counted under its early labels"
