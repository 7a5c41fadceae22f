#!/bin/sh
# producer_reattach.sh - the segments are removed and created again with a
# new capacity under a running producer: it follows them to the new ring
# with no restart, and republishes its labels into the new name table.
. "$top_srcdir/tests/integration/daemon_lib.sh"
# Up to 8 CPUs the ring has exactly the configured slots; size it so here
# (each of the two sub-rings gets half: a lone thread's burst must fit in one).
PERFMOND_CPUS=2
export PERFMOND_CPUS
LATE="$top_builddir/tests/tools/late_producer"
PERFMONCTL="$top_builddir/src/perfmonctl"

start_daemon --shm "$SHM" --csv "$T/one.csv" --summary "$T/one.txt" --interval 100ms --capacity 4096
mkfifo "$T/in"
SLICK_PERFMON_SHM=$SHM "$LATE" <"$T/in" >"$T/prod.out" 2>"$T/prod.err" &
PIDS=$!
exec 3>"$T/in"
echo "wait-attached" >&3
wait_for grep -q '^attached\|^timeout' "$T/prod.out" || fail "producer did not answer"
grep -q '^attached 4096' "$T/prod.out" || fail "producer did not attach: $(cat "$T/prod.out")"
echo "spans 400" >&3
wait_for grep -q '^spans 400' "$T/prod.out" || fail "producer did not stamp"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "first daemon exited $DSTATUS"
[ "$(count_of late total "$T/one.csv")" = 400 ] || fail "first ring: $(count_of late total "$T/one.csv") spans, not 400"

"$PERFMONCTL" remove "$SHM" >/dev/null || fail "perfmonctl remove failed"
[ ! -e "/dev/shm/$SHM" ] || fail "segments still there"
start_daemon --shm "$SHM" --csv "$T/two.csv" --summary "$T/two.txt" --interval 100ms --capacity 8192
echo "wait-attached" >&3
wait_for grep -q '^attached 8192\|^timeout' "$T/prod.out" || fail "producer did not answer"
grep -q '^attached 8192' "$T/prod.out" || fail "producer did not re-attach: $(cat "$T/prod.out")"
echo "spans 700" >&3
wait_for grep -q '^spans 700' "$T/prod.out" || fail "producer did not stamp"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "second daemon exited $DSTATUS"
echo quit >&3
exec 3>&-
wait $PIDS || fail "producer failed"
PIDS=
n=$(count_of late late.s1 "$T/two.csv")
[ "$n" = 700 ] || fail "new ring: expected 700 spans under the replayed labels, got $n"
ok "re-attached to a recreated ring (4096 -> 8192 slots), labels replayed, 700 spans counted"
