#!/bin/sh
# trust_liveness.sh - nothing a producer writes into the control block
# decides whether a collector is alive, where a restart resumes, or which
# file perfmonctl prints:
#   - the whole control block overwritten with garbage under a live daemon:
#     status still says alive (exit 0), a second perfmond still refuses
#     with the first one's pid, remove refuses, the daemon keeps collecting
#     and restores the header;
#   - after the collector stops, a forged "running" state with the pid of a
#     live process mapping the ring makes nothing look alive;
#   - rewound reader_tails (the control block's and every sub-ring's), or
#     heads rewound while the daemon was down, do not replay old events
#     after a restart;
#   - a forged summary_path is never printed by perfmonctl summary;
#   - a killed collector's lock file, locked by anything but a perfmond of
#     its owner, makes nothing alive and keeps nothing from starting.
. "$top_srcdir/tests/integration/daemon_lib.sh"
CTL="$top_builddir/src/perfmonctl"

start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 100ms --capacity 65536
"$PRODUCER" "$SHM" 3 2000 --label engine >"$T/p1.out" || fail "producer 1"

"$SEGTOOL" garbage "$SHM" || fail "cannot scribble"
"$CTL" status "$SHM" >"$T/st.out" 2>"$T/st.err"; st=$?
[ $st = 0 ] || fail "status after garbage exited $st: $(cat "$T/st.out" "$T/st.err")"
grep -q "alive, pid $DPID" "$T/st.out" || fail "status does not report pid $DPID: $(cat "$T/st.out")"
ok "control block overwritten with garbage: status still alive, pid $DPID"

st=0
"$PERFMOND" --shm "$SHM" --csv "" --summary "" --interval 100ms --capacity 65536 \
	>/dev/null 2>"$T/second.err" || st=$?
[ $st = 1 ] || fail "a second perfmond exited $st: $(cat "$T/second.err")"
grep -q "another perfmond (pid $DPID)" "$T/second.err" || fail "refusal does not name pid $DPID: $(cat "$T/second.err")"
st=0
"$CTL" remove "$SHM" >/dev/null 2>"$T/rm.err" || st=$?
[ $st = 1 ] && grep -q "pid $DPID" "$T/rm.err" || fail "remove did not refuse: $st $(cat "$T/rm.err")"
ok "a second perfmond and remove refuse, naming pid $DPID"

# The daemon restores its header and keeps collecting.
wait_for "$SEGTOOL" status "$SHM" || fail "the daemon did not restore the control block"
"$PRODUCER" "$SHM" 3 3000 >"$T/p2.out" || fail "producer 2 could not attach after the repair"
grep -q "overwritten by a producer" "$T/daemon.err" || fail "the repair was not logged"

# A forged summary_path is not what summary prints.
"$SEGTOOL" poke "$SHM" summary_path /etc/passwd
"$CTL" summary "$SHM" >"$T/sum.out" 2>"$T/sum.err" || fail "summary: $(cat "$T/sum.err")"
grep -q "root:" "$T/sum.out" && fail "summary printed the forged path"
grep -q "engine" "$T/sum.out" || fail "summary is not the collector's: $(head -5 "$T/sum.out")"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
[ "$(count_of engine total "$T/out.csv")" = 5000 ] || fail "engine spans: $(count_of engine total "$T/out.csv")"
ok "collection went on (5000 spans counted), summary from the daemon"

# After the stop, forge liveness with a live process that maps the ring.
"$PRODUCER" "$SHM" 4 1 --seconds 30 --pause-us 100000 >/dev/null &
PIDS=$!
sleep 0.3
"$SEGTOOL" poke "$SHM" collector_pid "$PIDS"
"$SEGTOOL" poke "$SHM" collector_state 1
"$SEGTOOL" poke "$SHM" heartbeat_ns "$(awk '{printf "%d", $1 * 1e9}' /proc/uptime)"
st=0
"$CTL" status "$SHM" >"$T/st.out" 2>&1 || st=$?
[ $st = 3 ] || fail "status of a stopped collector with forged liveness exited $st: $(cat "$T/st.out")"
ok "forged state, pid and heartbeat: still not alive (exit 3)"
# ... nor keeps a collector from starting while that process lives.
start_daemon --shm "$SHM" --csv "" --summary "" --interval 100ms --capacity 65536
# (the forged state satisfies start_daemon's wait at once: ask the kernel)
wait_for sh -c "'$CTL' status '$SHM' | grep -q 'alive, pid $DPID'" ||
	fail "no collector came up beside the forged pid: $(cat "$T/daemon.err")"
kill -0 "$PIDS" || fail "the forger exited too early"
# The forger stops first, so the collector reads all it stamped: the ring
# then holds a ring's worth of events, every one counted once already.
kill "$PIDS"; wait "$PIDS" 2>/dev/null || true; PIDS=
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond beside the forged pid exited $DSTATUS"
ok "a collector starts although a forged pid of a live process mapping the ring was written"

# all_totals FILE: spans counted on every point's total row.
all_totals() {
	"$CSVCHECK" "$1" | awk -F'\t' '$2 == "total" {s += $3} END {print s + 0}'
}

# Rewind every reader_tail a producer can write -- the control block's and
# each sub-ring's -- leaving the heads where they are: a restart must count
# only what is stamped after it.
"$SEGTOOL" poke "$SHM" reader_tail 0
"$SEGTOOL" poke-ring "$SHM" reader_tail 0
start_daemon --shm "$SHM" --csv "$T/out2.csv" --summary "" --interval 100ms --capacity 65536
"$PRODUCER" "$SHM" 5 100 --label fresh >/dev/null || fail "producer 3"
wait_for sh -c "[ \$('$CSVCHECK' '$T/out2.csv' | awk -F'\t' '\$1 == \"fresh\" && \$2 == \"total\" {s += \$3} END {print s + 0}') = 100 ]" ||
	fail "new events: $(count_of fresh total "$T/out2.csv") of 100"
stop_daemon TERM
[ "$(all_totals "$T/out2.csv")" = 100 ] ||
	fail "old events replayed: $(all_totals "$T/out2.csv") spans counted after the restart, 100 stamped"
ok "rewound reader_tails (control block and every sub-ring) replay nothing after a restart"

# Rewind every sub-ring's head (and reader_tail) by 4000 while the daemon
# is down, put the heads back after the restart: the 2000 spans of the
# old numbering there are not counted again.
"$SEGTOOL" poke-ring "$SHM" head -4000
"$SEGTOOL" poke-ring "$SHM" reader_tail 0
start_daemon --shm "$SHM" --csv "$T/out3.csv" --summary "" --interval 100ms --capacity 65536
"$SEGTOOL" poke-ring "$SHM" head +4000
"$PRODUCER" "$SHM" 6 100 --label fresh2 >/dev/null || fail "producer 4"
wait_for sh -c "[ \$(\"$CSVCHECK\" \"$T/out3.csv\" | awk -F'\t' '\$1==\"fresh2\" && \$2==\"total\" {s+=\$3} END{print s+0}') = 100 ]" ||
	fail "new events after the head rewind: $(count_of fresh2 total "$T/out3.csv")"
stop_daemon TERM
for p in engine fresh; do
	[ "$(count_of $p total "$T/out3.csv")" = 0 ] ||
		fail "old events replayed after a head rewind: $(count_of $p total "$T/out3.csv") $p spans"
done
grep -q "absurd value" "$T/daemon.err" || fail "the rewound head was not reported"
ok "heads rewound while the daemon was down: nothing counted twice, the rewind reported"

# --- A dead collector's lock file cannot be made to look held ----------------
# An unclean stop (SIGKILL, the watchdog's SIGABRT) leaves RUNDIR/NAME.lock
# behind.  Whoever holds a lock on it is no collector unless it is a
# perfmond of the file's owner: status says stopped (exit 3), remove goes
# ahead, and a restart replaces the file.
# forged_lock WHAT CMD... 3<FILE: CMD holds a read lock on the leftover
# lock file (given the path, or on its stdin, which is FILE: a background
# command's own stdin would be /dev/null).
forged_lock() {
	what=$1
	shift
	"$@" <&3 >"$T/hold.out" 2>"$T/hold.err" &
	PIDS=$!
	wait_for grep -q held "$T/hold.out" || fail "$what: no lock taken: $(cat "$T/hold.err")"
	st=0
	"$CTL" status "$SHM" >"$T/st.out" 2>&1 || st=$?
	[ $st = 3 ] || fail "$what: status of a dead collector exited $st: $(cat "$T/st.out")"
}

# restart_beside_forger WHAT: a collector starts although the forger holds
# the old file, and is the one reported alive.
restart_beside_forger() {
	start_daemon --shm "$SHM" --csv "" --summary "" --interval 100ms --capacity 65536
	wait_for sh -c "'$CTL' status '$SHM' | grep -q 'alive, pid $DPID'" ||
		fail "$1: the restarted collector is not reported alive: $("$CTL" status "$SHM" 2>&1)"
	kill -0 "$PIDS" || fail "$1: the forger exited too early: $(cat "$T/hold.err")"
	kill "$PIDS"; wait "$PIDS" 2>/dev/null || true; PIDS=
}

umask 027   # as the unit runs it: the group may read what it is not denied
start_daemon --shm "$SHM" --csv "" --summary "" --interval 100ms --capacity 65536
lock="$("$SEGTOOL" rundir)/$SHM.lock"
stop_daemon KILL
[ -f "$lock" ] || fail "no lock file left at $lock after SIGKILL"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	chmod 0755 "$T"
	# A member of the daemon's group cannot even open it.  The other uid
	# runs the tool without TSAN_OPTIONS: it is single-threaded, and the
	# suppressions file the options name lies in a build tree that uid
	# may not be able to read.
	st=0
	env -u TSAN_OPTIONS setpriv --reuid=65534 --regid="$(id -g)" --clear-groups \
		"$SEGTOOL" hold-lock "$lock" 30 >"$T/hold.out" 2>"$T/hold.err" || st=$?
	[ $st = 1 ] || fail "a group member could lock $lock (mode $(stat -c %a "$lock")): exit $st"
	ok "the lock file (mode $(stat -c %a "$lock")) is closed to the daemon's group"
	# With a descriptor of it all the same (opened by root here, as one
	# kept from a time it was readable would be): another uid's lock.
	forged_lock "uid 65534" env -u TSAN_OPTIONS setpriv --reuid=65534 --regid=65534 \
		--clear-groups "$SEGTOOL" hold-lock - 60 3<"$lock"
	st=0
	"$CTL" remove "$SHM" >"$T/rm.out" 2>&1 || st=$?
	[ $st = 0 ] || fail "remove beside a forged lock holder exited $st: $(cat "$T/rm.out")"
	restart_beside_forger "uid 65534"
	ok "another uid holding a dead collector's lock file: status 3, remove and restart go ahead"
	stop_daemon KILL
else
	echo "note: not root (or no setpriv): the other-uid forger is not tried"
fi
# The collector's own user, but not perfmond.
forged_lock "a process of the owner that is not perfmond" "$SEGTOOL" hold-lock "$lock" 60 3<"$lock"
restart_beside_forger "owner's segtool"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond beside the forged lock exited $DSTATUS"
ok "a process of the owner that is not perfmond holding the lock file: status 3, restart goes ahead"
