#!/bin/sh
# daemon_watchdog.sh - WATCHDOG=1 is sent only while the drain thread makes
# progress: freezing that one thread (ptrace) stops the pings although the
# rest of the daemon runs on; thawing it brings them back.
. "$top_srcdir/tests/integration/daemon_lib.sh"

sock="$T/notify.sock"
notify_listen "$sock" "$T/notify.log" 30
PIDS=$!
wait_for test -S "$sock" || fail "listener did not start"
NOTIFY_SOCKET="$sock" WATCHDOG_USEC=200000 start_daemon --shm "$SHM" --csv '' --summary ''
wait_for grep -q 'WATCHDOG=1' "$T/notify.log" || fail "no WATCHDOG=1"
tid=
for t in /proc/"$DPID"/task/*; do
	[ "$(cat "$t/comm")" = perfmond-drain ] && tid=${t##*/}
done
[ -n "$tid" ] || fail "no drain thread found"

python3 - "$tid" "$T/freeze.log" <<'PY' || fail "could not freeze the drain thread"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
tid = int(sys.argv[1])
if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0:
    sys.exit('ptrace seize: errno %d' % ctypes.get_errno())
libc.ptrace(PTRACE_INTERRUPT, tid, None, None)
os.waitpid(tid, 0x40000000)        # __WALL: wait for the thread's stop
t0 = time.monotonic()
time.sleep(1.5)
t1 = time.monotonic()
libc.ptrace(PTRACE_DETACH, tid, None, None)
open(sys.argv[2], 'w').write('%.3f %.3f\n' % (t0, t1))
PY
sleep 1
stop_daemon TERM
wait $PIDS || true
PIDS=
read -r t0 t1 <"$T/freeze.log"
# No ping from 0.25 s after the freeze (one already decided may still
# arrive) until it ends; pings before and after it.
during=$(awk -v a="$t0" -v b="$t1" '/WATCHDOG=1/ && $1 > a + 0.25 && $1 < b' "$T/notify.log" | wc -l)
before=$(awk -v a="$t0" '/WATCHDOG=1/ && $1 < a' "$T/notify.log" | wc -l)
after=$(awk -v b="$t1" '/WATCHDOG=1/ && $1 > b' "$T/notify.log" | wc -l)
[ "$before" -gt 0 ] || fail "no pings before the freeze"
[ "$during" = 0 ] || fail "$during ping(s) while the drain thread was frozen"
[ "$after" -gt 0 ] || fail "pings did not resume after the thaw"
ok "watchdog: $before pings before, none during a 1.5 s drain-thread freeze, $after after"
