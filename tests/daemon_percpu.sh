#!/bin/sh
# daemon_percpu.sh - the real daemon over per-CPU sub-rings: spans that
# begin on CPU 0 and end on CPU 1, a thread that migrates in the middle of
# its spans, more threads than CPUs, and a producer stopped (SIGSTOP)
# between reserving and publishing while others go on.  Every span pairs
# (no orphan, nothing invalid) and every reserved index is accounted for.
. "$top_srcdir/tests/daemon_lib.sh"

PP="$top_builddir/tests/percpu_producer"
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || { echo "SKIP: needs 2 online CPUs"; exit 77; }

cat >"$T/p.conf" <<CONF
[shm]
name = $SHM
capacity = 262144
[collector]
flush_interval = 100ms
stalled_sample_timeout = 20s
[output]
csv = $T/out.csv
summary = $T/sum.txt
CONF
start_daemon "$T/p.conf"

# status_field NAME: a field of `segtool status` (drained, dropped, head...).
status_field() {
	"$SEGTOOL" status "$SHM" | awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}'
}

"$PP" "$SHM" cross 3000 >"$T/cross.out" || fail "cross producer failed"
"$PP" "$SHM" migrate 1000 >"$T/migrate.out" || fail "migrating producer failed"
"$PP" "$SHM" crowd 8000 >"$T/crowd.out" || fail "crowd producer failed"
# is POINT STAGE N: the CSV holds N events of that row
is() { [ "$(count_of "$1" "$2" "$T/out.csv")" = "$3" ]; }

wait_for is xcpu total 4000 && wait_for is crowd total 8000 \
	|| fail "spans not all paired: xcpu $(count_of xcpu total "$T/out.csv"), crowd $(count_of crowd total "$T/out.csv")"
for p in xcpu crowd; do
	[ "$(column_sum $p total 8 "$T/out.csv")" = 0 ] || fail "$p: orphans: the merge put an end before its begin"
	[ "$(column_sum $p total 5 "$T/out.csv")" = 0 ] || fail "$p: invalid spans"
done
ok "cross-CPU, migrating and crowded spans all paired"

# A producer stopped between reserving and publishing: the others go on.
"$PP" "$SHM" stop 1 >"$T/stop.out" &
SPID=$!
PIDS="$SPID"
wait_for grep -q reserved "$T/stop.out" || fail "the stopping producer did not reserve"
wait_for sh -c "awk '{exit \$3 != \"T\"}' /proc/$SPID/stat" \
	|| fail "the producer did not stop"
# Behind the hole, in whatever sub-ring: 8000 more spans from 8 threads.
"$PP" "$SHM" crowd 8000 >/dev/null || fail "crowd producer failed"
wait_for is crowd total 16000 \
	|| fail "spans behind a stopped producer held up: $(count_of crowd total "$T/out.csv")"
ok "a producer stopped mid-stamp holds nobody up"
kill -CONT "$SPID"
wait "$SPID" || fail "the stopped producer failed after SIGCONT"
PIDS=
wait_for is stopped value 1 \
	|| fail "the late stamp was not delivered"
ok "its stamp is delivered once it publishes"

# Every reserved index of every sub-ring is read, dropped or stalled.
wait_for sh -c "[ \$('$SEGTOOL' status '$SHM' | awk '{print \$6 + \$8 + \$10 == \$14}') = 1 ]" \
	|| fail "counts do not add up: $("$SEGTOOL" status "$SHM")"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
line=$("$SEGTOOL" status "$SHM")
drained=$(status_field drained); dropped=$(status_field dropped); stalled=$(status_field stalled)
head=$(status_field head)
[ "$dropped" = 0 ] && [ "$stalled" = 0 ] || fail "lost events: $line"
# cross 2 x 3000, migrate 3 x 1000, crowd 2 x 16000, the late value 1
[ "$drained" = $((6000 + 3000 + 32000 + 1)) ] || fail "drained $drained, want 41001: $line"
[ "$head" = "$drained" ] || fail "reserved $head, accounted $drained: $line"
ok "every stamp accounted for: $line"
