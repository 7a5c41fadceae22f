#!/bin/sh
# daemon_percpu.sh - the real daemon over per-CPU sub-rings: spans that
# begin on one CPU and end on the other (which CPU begins alternates, so
# only the time-ordered merge puts each end after its begin), a thread that
# migrates in the middle of its spans, more threads than CPUs, and a
# producer stopped (SIGSTOP) between reserving and publishing while others
# go on, and spans spread over every sub-ring at once.  Every span pairs
# (no orphan, nothing invalid) and every reserved index is accounted for.
# With PERFMOND_CPUS set (daemon_percpu_cpus*.sh) the ring is sized as for
# a host with that many CPUs.
. "$top_srcdir/tests/integration/daemon_lib.sh"

PP="$top_builddir/tests/tools/percpu_producer"
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || { echo "SKIP: needs 2 online CPUs"; exit 77; }

cat >"$T/p.conf" <<CONF
[shm]
name = $SHM
capacity = 262144
[collector]
flush_interval = 100ms
stalled_sample_timeout = 5m
[output]
csv = $T/out.csv
summary = $T/sum.txt
CONF
start_daemon "$T/p.conf"
if [ -n "${PERFMOND_CPUS:-}" ]; then
	"$top_builddir/src/perfmonctl" status "$SHM" | grep -q "fullest of $PERFMOND_CPUS sub-rings" ||
		fail "PERFMOND_CPUS=$PERFMOND_CPUS did not give $PERFMOND_CPUS sub-rings: $("$top_builddir/src/perfmonctl" status "$SHM")"
	ok "ring sized as for PERFMOND_CPUS=$PERFMOND_CPUS: that many sub-rings"
fi

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

# A producer stopped between reserving a begin's slot (its timestamp read)
# and publishing it: the others go on.  The stall timeout (5 min) is far
# beyond what this part waits while the producer is stopped (two waits of
# about 10 s and one producer run), so on a slow machine too the slot is
# still watched, not given up as stalled, when the producer publishes it.
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
# Its begin reaches pairing after younger spans: counted, and still paired
# with the end it stamped once continued.
wait_for is stopped total 1 \
	|| fail "the late span was not delivered, or did not pair: $(count_of stopped total "$T/out.csv")"
[ "$(column_sum stopped total 8 "$T/out.csv")" = 0 ] || fail "the late begin's end was an orphan"
late() {
	"$top_builddir/src/perfmonctl" status "$SHM" --format json >"$T/late.json" &&
	python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["misordered"] < 1)' "$T/late.json"
}
wait_for late || fail "the late begin is not counted as misordered: $(cat "$T/late.json")"
ok "its begin is delivered once published, counted as misordered, and pairs"

# freeze_drain: stop the drain thread (ptrace) until thaw_drain, so that
# what producers stamp meanwhile waits in the ring for one pass.
tid=
for t in /proc/"$DPID"/task/*; do
	[ "$(cat "$t/comm")" = perfmond-drain ] && tid=${t##*/}
done
[ -n "$tid" ] || fail "no drain thread found"
freeze_drain() {
	rm -f "$T/frozen" "$T/thaw"
	python3 - "$tid" "$T/frozen" "$T/thaw" <<'PY' &
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
tid = int(sys.argv[1])
if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0:
    sys.exit('ptrace seize: errno %d' % ctypes.get_errno())
libc.ptrace(PTRACE_INTERRUPT, tid, None, None)
os.waitpid(tid, 0x40000000)        # __WALL: wait for the thread's stop
open(sys.argv[2], 'w').close()
deadline = time.monotonic() + 30
while not os.path.exists(sys.argv[3]) and time.monotonic() < deadline:
    time.sleep(0.01)
libc.ptrace(PTRACE_DETACH, tid, None, None)
PY
	FPID=$!
	wait_for test -e "$T/frozen" || fail "could not freeze the drain thread"
}
thaw_drain() {
	touch "$T/thaw"
	wait "$FPID" || fail "the freezer failed"
}

# Every sub-ring busy in one pass: 20000 spans, each with its begin, step
# and end in three different sub-rings, stamped while the drain thread is
# frozen, so that its next pass merges every sub-ring's spans at once (more
# than 8 busy sub-rings, as with PERFMOND_CPUS=64, take the radix sort).
freeze_drain
"$PP" "$SHM" spread 20000 >"$T/spread.out" || fail "spread producer failed"
thaw_drain
wait_for is spread total 20000 \
	|| fail "spread spans not all paired: $(count_of spread total "$T/out.csv")"
[ "$(column_sum spread total 8 "$T/out.csv")" = 0 ] || fail "spread: orphans: an end or step merged before its begin"
[ "$(column_sum spread total 5 "$T/out.csv")" = 0 ] || fail "spread: invalid spans"
ok "spans spread over every sub-ring, merged in one pass, all paired"

# perfmonctl status shows the fullest sub-ring by the collector's own read
# positions: with the drain thread frozen, 1500 spans stamped on CPU 1 and
# 500 on CPU 0 leave 3000 and 1000 events unread (4000 in the one sub-ring
# of a ring sized for one CPU).
freeze_drain
taskset -c 1 "$PRODUCER" "$SHM" 7 1500 --label full1 >/dev/null || fail "producer on CPU 1"
taskset -c 0 "$PRODUCER" "$SHM" 8 500 --label full0 >/dev/null || fail "producer on CPU 0"
"$top_builddir/src/perfmonctl" status "$SHM" --format json >"$T/st.json" || fail "status while frozen"
thaw_drain
want_used=3000
[ "${PERFMOND_CPUS:-}" != 1 ] || want_used=4000
python3 - "$T/st.json" "$want_used" <<'PY' || fail "status does not show the fullest sub-ring: $(cat "$T/st.json")"
import json, sys
j = json.load(open(sys.argv[1]))
c = j.get('collector', j)
assert c['ring_used'] == int(sys.argv[2]), c['ring_used']
PY
wait_for is full1 total 1500 && wait_for is full0 total 500 || fail "the spans stamped while frozen were not read"
ok "status shows the fullest sub-ring's fill ($want_used of its slots, not the sum of all)"

# Every reserved index of every sub-ring is read, dropped or stalled.
wait_for sh -c "[ \$('$SEGTOOL' status '$SHM' | awk '{print \$6 + \$8 + \$10 == \$14}') = 1 ]" \
	|| fail "counts do not add up: $("$SEGTOOL" status "$SHM")"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
line=$("$SEGTOOL" status "$SHM")
drained=$(status_field drained); dropped=$(status_field dropped); stalled=$(status_field stalled)
head=$(status_field head)
[ "$dropped" = 0 ] && [ "$stalled" = 0 ] || fail "lost events: $line"
# cross 2 x 3000, migrate 3 x 1000, crowd 2 x 16000, the late span 2,
# spread 3 x 20000, full1 2 x 1500, full0 2 x 500
[ "$drained" = $((6000 + 3000 + 32000 + 2 + 60000 + 4000)) ] || fail "drained $drained, want 105002: $line"
[ "$head" = "$drained" ] || fail "reserved $head, accounted $drained: $line"
ok "every stamp accounted for: $line"
