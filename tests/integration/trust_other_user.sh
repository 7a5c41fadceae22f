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

# The last-resort runtime directory /tmp/perfmond-UID can be made by anyone
# before the collector's user runs: one that is not that user's, or that
# others can write, is refused with a message, and nothing is created.
X=$((40000 + $$ % 20000))
D=/tmp/perfmond-$X
if [ -e "/run/user/$X" ] || [ -e "$D" ]; then
	echo "note: uid $X has a runtime directory already; the pre-created one is not tried"
	exit 0
fi
mkdir "$D"
XDIR=$D
trap 'rm -rf "$XDIR"; cleanup' EXIT
# run_as_x: perfmond as uid X; sets st, output in $T/x.err
run_as_x() {
	st=0
	setpriv --reuid=$X --regid=$X --clear-groups "$PERFMOND" --shm "$SHM-x" --csv "" \
		--summary "" --interval 100ms --capacity 4096 "$@" >/dev/null 2>"$T/x.err" || st=$?
}
for how in "owner 65534 mode 0755" "owner $X mode 0777"; do
	set -- $how
	chown "$2" "$D"
	chmod "$4" "$D"
	run_as_x
	[ $st = 1 ] || fail "uid $X started with $D of $how: exit $st $(cat "$T/x.err")"
	grep -q "runtime directory $D is not a directory of this user" "$T/x.err" ||
		fail "unclear refusal of $D ($how): $(cat "$T/x.err")"
	[ ! -e "/dev/shm/$SHM-x" ] || fail "segments created before the refusal ($how)"
	ok "$D pre-created ($how): refused with a message, nothing created"
done
chmod 0755 "$D"
setpriv --reuid=$X --regid=$X --clear-groups "$PERFMOND" --shm "$SHM-x" --csv "" --summary "" \
	--interval 100ms --capacity 4096 >/dev/null 2>"$T/x.err" &
DPID=$!
"$SEGTOOL" wait-ready "$SHM-x" 10 || fail "uid $X did not start in its own $D: $(cat "$T/x.err")"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "the collector of uid $X exited $DSTATUS"
setpriv --reuid=$X --regid=$X --clear-groups "$SEGTOOL" remove "$SHM-x" || true
ok "$D of its own, mode 0755: the collector of uid $X starts"
