#!/bin/sh
# trust_other_user.sh - a collector running as another user (as the unit
# runs it, user perfmon) is alive: root starting perfmond on the same name
# is told that another collector runs, with its pid (exit 1), and is not
# sent to remove the segments from under it; perfmonctl status as root
# reports it alive.  Needs root to run the first daemon as another user.
. "$top_srcdir/tests/integration/daemon_lib.sh"
CTL="$top_builddir/src/perfmonctl"

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root to run a collector as another user"
	exit 77
fi
[ -z "${PERFMOND_PACKAGE_BUILD:-}" ] ||
	{ echo "SKIP: package build: needs root privileges (a collector as another user)"; exit 77; }
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: setpriv (util-linux) not found"; exit 77; }
U=65534
chmod 0755 "$T"

setpriv --reuid=$U --regid=$U --clear-groups "$PERFMOND" --shm "$SHM" --csv "" --summary "" \
	--interval 100ms --capacity 4096 >"$T/daemon.out" 2>"$T/daemon.err" &
DPID=$!
"$SEGTOOL" wait-ready "$SHM" 10 || fail "the collector as uid $U did not become ready"

st=0
"$PERFMOND" --shm "$SHM" --csv "" --summary "" --interval 100ms --capacity 4096 \
	>/dev/null 2>"$T/root.err" || st=$?
[ $st = 1 ] || fail "root's perfmond exited $st: $(cat "$T/root.err")"
grep -q "another perfmond (pid $DPID" "$T/root.err" || fail "not told about pid $DPID: $(cat "$T/root.err")"
grep -q "remove" "$T/root.err" && fail "root was told to remove a live collector's ring: $(cat "$T/root.err")"
ok "root's perfmond: another collector (pid $DPID) is running; no remove hint"

"$CTL" status "$SHM" >"$T/st.out" 2>&1 || fail "status: $(cat "$T/st.out")"
grep -q "alive, pid $DPID" "$T/st.out" || fail "status: $(cat "$T/st.out")"
ok "status as root: alive, pid $DPID"

stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "the collector exited $DSTATUS"
st=0
"$PERFMOND" --shm "$SHM" --csv "" --summary "" --interval 100ms --capacity 4096 \
	>/dev/null 2>"$T/root.err" || st=$?
[ $st = 1 ] && grep -q "owned by" "$T/root.err" || fail "after the stop: $st $(cat "$T/root.err")"
ok "after it stopped: the ownership check speaks"
setpriv --reuid=$U --regid=$U --clear-groups "$SEGTOOL" remove "$SHM" || true
