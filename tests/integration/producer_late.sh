#!/bin/sh
# producer_late.sh - a producer started before the daemon (attached only
# through SLICK_PERFMON_SHM) starts stamping once the daemon has created the
# segments, without a restart; the labels it published before any segment
# existed are in the name table; a child it forks is counted too.  Its
# watcher is not woken by writes to other files in /dev/shm, attaches also
# while other files there change all the time, and without inotify it
# says that late attach is off.
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

# The example producer, started before the collector too, says it will be
# measured once the collector runs (not that it runs unmeasured).
SLICK_PERFMON_SHM=$SHM "$top_builddir/examples/pipeline" 0.05 >/dev/null 2>"$T/pipe.err" ||
	fail "examples/pipeline failed"
grep -q "^pipeline: no collector on '$SHM' yet; measured from when perfmond creates" \
	"$T/pipe.err" || fail "examples/pipeline before the collector said: $(cat "$T/pipe.err")"

# Its watcher thread sleeps through what other programs do in /dev/shm:
# writing and closing files there does not wake it (creations, renames into
# it and attribute changes do, and other tests running beside this one
# make some: they are counted with an inotify watch of our own and allowed).
watcher=
for t in /proc/$PIDS/task/*; do
	[ "$(cat "$t/comm" 2>/dev/null)" = perfmon-watch ] && watcher=$t
done
[ -n "$watcher" ] || fail "no perfmon-watch thread in the producer"
trap 'cleanup; rm -f "/dev/shm/$SHM-noise-a" "/dev/shm/$SHM-noise-b"' EXIT
python3 - "$watcher/status" "/dev/shm/$SHM-noise" >"$T/wakes" <<'PY' || fail "wake-up count failed"
import ctypes, os, struct, sys, time
status, noise = sys.argv[1], sys.argv[2]
IN_NONBLOCK, IN_ATTRIB, IN_MOVED_TO, IN_CREATE = 0o4000, 0x4, 0x80, 0x100
libc = ctypes.CDLL(None, use_errno=True)
def wakes():
    return int([l for l in open(status) if l.startswith('voluntary_ctxt_switches')][0].split()[1])
for f in ('a', 'b'):
    open(noise + '-' + f, 'w').close()
time.sleep(0.2)
fd = libc.inotify_init1(IN_NONBLOCK)
assert fd >= 0 and libc.inotify_add_watch(fd, b'/dev/shm', IN_CREATE | IN_MOVED_TO | IN_ATTRIB) >= 0
before = wakes()
for i in range(20):
    for f in ('a', 'b'):
        with open(noise + '-' + f, 'a') as out:   # a write and a close, nothing else
            out.write('%d\n' % i)
        time.sleep(0.02)
time.sleep(0.1)
after = wakes()
others = 0
while True:
    try:
        buf = os.read(fd, 65536)
    except BlockingIOError:
        break
    off = 0
    while off < len(buf):
        others += 1
        off += 16 + struct.unpack_from('iIII', buf, off)[3]
print(after - before, others)
PY
rm -f "/dev/shm/$SHM-noise-a" "/dev/shm/$SHM-noise-b"
read -r woken others <"$T/wakes"
[ "$woken" -le $((others + 4)) ] ||
	fail "40 writes to files in /dev/shm woke the watcher $woken times ($others other events there)"
ok "writes to other files in /dev/shm do not wake the watcher ($woken wake-ups, $others creations or attribute changes by others)"

# Another program touches a file in /dev/shm every few milliseconds while
# the daemon comes up: the watcher, woken each time, must still look again
# at the segments it first found not ready.
(while :; do touch "/dev/shm/$SHM-noise-c"; sleep 0.005; done) &
NOISE=$!
trap 'kill $NOISE 2>/dev/null || true; cleanup; rm -f "/dev/shm/$SHM-noise-a" "/dev/shm/$SHM-noise-b" "/dev/shm/$SHM-noise-c"' EXIT
start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 100ms --capacity 65536
echo "wait-attached" >&3
wait_for grep -q '^attached\|^timeout' "$T/prod.out" || fail "producer did not answer"
grep -q '^attached 65536' "$T/prod.out" || fail "producer never attached: $(cat "$T/prod.out")"
kill $NOISE
wait $NOISE 2>/dev/null || true
rm -f "/dev/shm/$SHM-noise-c"
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
! grep "^perfmon:" "$T/prod.err" || fail "the producer complained with inotify at hand"

# Without inotify (no instance left for this user: in a user namespace of
# its own, where the limit can be set to 0), the load-time attach is the
# only one, and the producer says so in one line.
if unshare -U -r sh -c 'echo 0 >/proc/sys/user/max_inotify_instances' 2>/dev/null; then
	echo quit | unshare -U -r sh -c 'echo 0 >/proc/sys/user/max_inotify_instances &&
		SLICK_PERFMON_SHM=$0 exec "$1"' "$SHM" "$LATE" >/dev/null 2>"$T/noinotify.err" ||
		fail "producer without inotify failed: $(cat "$T/noinotify.err")"
	grep -q "^perfmon: late attach to '$SHM' is off (inotify_init1: .*max_user_instances" \
		"$T/noinotify.err" || fail "no word on the late attach being off: $(cat "$T/noinotify.err")"
	[ "$(grep -c '^perfmon:' "$T/noinotify.err")" = 1 ] || fail "more than one line: $(cat "$T/noinotify.err")"
	ok "without inotify the producer says in one line that late attach is off, and why"
else
	echo "note: no user namespace here (unshare -U) to take inotify away in; that case is not checked"
fi
