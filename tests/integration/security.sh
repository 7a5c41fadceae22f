#!/bin/sh
# security.sh - who may reach the segments and what the daemon will touch.
#
#   - perfmond runs as an ordinary user, set up as the systemd unit does it
#     (its own user and group, LogsDirectory= 0750, UMask=0027, no
#     capabilities), and gives its segments mode 0660 and the configured
#     group;
#   - a user in that group attaches and is counted; a user outside it gets
#     -EACCES from perfmon_attach and cannot read the name table;
#   - segments pre-created by another user, or symlinks in their place,
#     are refused and left exactly as they were;
#   - the CSV, the summary, their temporaries and rotated files never
#     follow a symlink and never overwrite or delete a file the daemon did
#     not create.
#
# Creates three users and two groups (removed at the end, also on failure).
. "$top_srcdir/tests/integration/daemon_lib.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to create users"; exit 77; }
[ -z "${PERFMOND_PACKAGE_BUILD:-}" ] ||
	{ echo "SKIP: package build: would create users and groups on the build machine"; exit 77; }
for tool in useradd userdel groupadd groupdel setpriv sha256sum; do
	command -v $tool >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

TAG=$$
GD=pmtsd$TAG           # the daemon's own group
GX=pmtsx$TAG           # the group the segments are shared with
UD=pmtsd$TAG           # the daemon's user
UP=pmtsp$TAG           # a producer in $GX
UO=pmtso$TAG           # someone else
NAMES="$SHM $SHM-foreign $SHM-link $SHM-dangling $SHM-out"
RPIDS=

cleanup_users() {
	for p in $DPID $PIDS $RPIDS; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for n in $NAMES; do
		rm -f "/dev/shm/$n" "/dev/shm/$n.meta"
	done
	# The users' collector run directories go with them: a uid userdel
	# frees is handed to the next user created.
	for u in $UD $UP $UO; do
		uid=$(id -u "$u" 2>/dev/null) || continue
		d=$("$SEGTOOL" rundir "$uid" 2>/dev/null) || continue
		[ "$(stat -c %u "$d" 2>/dev/null)" = "$uid" ] && rm -rf "$d"
		userdel "$u" 2>/dev/null || true
	done
	for g in $GD $GX; do groupdel "$g" 2>/dev/null || true; done
	cleanup
}
trap cleanup_users EXIT

groupadd "$GD" && groupadd "$GX" || { echo "SKIP: groupadd failed"; exit 77; }
useradd -M -s /usr/sbin/nologin -g "$GD" -G "$GX" "$UD" &&
	useradd -M -s /usr/sbin/nologin -N -G "$GX" "$UP" &&
	useradd -M -s /usr/sbin/nologin -N "$UO" || fail "useradd failed"

# The test's binaries, where the new users can run them (the build tree
# may sit in a directory only root can enter).
chmod 0711 "$T"
mkdir -m 0755 "$T/bin"
for b in "$PERFMOND" "$PRODUCER" "$SEGTOOL" "$top_builddir/src/perfmonctl"; do
	[ -x "$b" ] || fail "$b was not built"
	cp "$b" "$T/bin/"
done
BIN=$T/bin

# as USER CMD...: run CMD as USER with USER's groups and no capabilities.
as() {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		--inh-caps=-all --bounding-set=-all -- "$@"
}

# as_exec USER CMD...: the same, replacing the calling (sub)shell, so that
# `as_exec USER CMD &` leaves CMD's own pid in $!.
as_exec() {
	u=$1
	shift
	exec setpriv --reuid="$u" --regid="$(id -g "$u")" --init-groups \
		--inh-caps=-all --bounding-set=-all -- "$@"
}

digest() { (cd "$1" && shift && sha256sum "$@" 2>/dev/null) ; }

# --- 1. the daemon as an unprivileged user, the unit's way -------------------
INST=$SHM
LOGS=$T/logs/perfmond/$INST
mkdir -p "$LOGS" "$T/etc"
chown "$UD:$GD" "$LOGS"
chmod 0750 "$LOGS"
cat >"$T/etc/$INST.conf" <<CONF
[shm]
mode = 0660
group = $GX
[collector]
flush_interval = 100ms
CONF
chmod 0644 "$T/etc/$INST.conf"
as_exec "$UD" env LOGS_DIRECTORY="$LOGS" sh -c "umask 0027; exec '$BIN/perfmond' --instance='$INST' '$T/etc/$INST.conf'" \
	>"$T/daemon.out" 2>"$T/daemon.err" &
DPID=$!
"$SEGTOOL" wait-ready "$INST" 10 || fail "perfmond as $UD did not become ready"
[ "$(awk '/^Uid:/ {print $3}' "/proc/$DPID/status")" = "$(id -u "$UD")" ] || fail "the daemon does not run as $UD"
grep -q '^CapEff:[[:space:]]*0*$' "/proc/$DPID/status" || fail "the daemon holds capabilities"
for seg in "$INST" "$INST.meta"; do
	got=$(stat -c '%a %U %G' "/dev/shm/$seg")
	[ "$got" = "660 $UD $GX" ] || fail "/dev/shm/$seg is '$got', want '660 $UD $GX'"
done
ok "perfmond runs as $UD without capabilities; segments 0660 $UD:$GX"

# A member of the group attaches, names and stamps.
as "$UP" "$BIN/producer" "$INST" 1 1000 --label member >/dev/null 2>"$T/member.err" ||
	fail "a member of $GX cannot produce: $(cat "$T/member.err")"
as "$UP" "$BIN/perfmonctl" names "$INST" >"$T/names.member" 2>&1 || fail "a member cannot list the names"
grep -q member "$T/names.member" || fail "a member does not see the names"
# Anyone else: -EACCES, and the name table stays unreadable.
st=0
as "$UO" "$BIN/producer" "$INST" 2 1000 --label outsider >/dev/null 2>"$T/outsider.err" || st=$?
[ "$st" = 1 ] || fail "an outsider's producer exited $st"
grep -q 'Permission denied' "$T/outsider.err" || fail "an outsider's attach did not fail with EACCES: $(cat "$T/outsider.err")"
st=0
as "$UO" "$BIN/perfmonctl" names "$INST" >"$T/names.outsider" 2>&1 || st=$?
[ "$st" != 0 ] || fail "an outsider can list the names"
grep -q member "$T/names.outsider" && fail "an outsider sees the labels"
as "$UO" cat "/dev/shm/$INST.meta" >/dev/null 2>&1 && fail "an outsider can read the control block"
as "$UO" cat "/dev/shm/$INST" >/dev/null 2>&1 && fail "an outsider can read the ring"
ok "a member of $GX attaches and stamps; an outsider gets EACCES and no names"

wait_for sh -c "[ \"\$('$CSVCHECK' '$LOGS/$INST.csv' | awk -F'\t' '\$1 == \"member\" && \$2 == \"total\" {print \$3}')\" = 1000 ]" ||
	fail "the member's spans were not counted"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond as $UD exited $DSTATUS: $(cat "$T/daemon.err")"
for f in "$INST.csv" "${INST}_summary.txt"; do
	got=$(stat -c '%a %U' "$LOGS/$f")
	[ "$got" = "640 $UD" ] || fail "$f is '$got', want '640 $UD'"
done
[ -z "$(find "$LOGS" -name '.*')" ] || fail "temporary files left in $LOGS: $(ls -A "$LOGS")"
ok "as $UD: outputs in \$LOGS_DIRECTORY, mode 0640, no temporaries left"

# --- 2. segments someone else created -----------------------------------------
F=$SHM-foreign
as "$UP" "$BIN/segtool" create "$F" 1024 || fail "cannot pre-create $F as $UP"
chgrp "$GX" "/dev/shm/$F" "/dev/shm/$F.meta"
chmod 0666 "/dev/shm/$F" "/dev/shm/$F.meta"      # readable by all: ownership must decide
before=$(digest /dev/shm "$F" "$F.meta"; stat -c '%n %a %U %G %s %Y' "/dev/shm/$F" "/dev/shm/$F.meta")
for who in "$UD" root; do
	st=0
	as "$who" "$BIN/perfmond" --shm "$F" --csv "" --summary "" --duration 2s >/dev/null 2>"$T/err" || st=$?
	[ "$st" = 1 ] || fail "perfmond as $who adopted segments created by $UP (exit $st)"
	grep -q "owned by $UP" "$T/err" || fail "perfmond as $who: the refusal does not name the owner: $(cat "$T/err")"
done
after=$(digest /dev/shm "$F" "$F.meta"; stat -c '%n %a %U %G %s %Y' "/dev/shm/$F" "/dev/shm/$F.meta")
[ "$before" = "$after" ] || fail "the foreign segments were modified"
ok "segments created by $UP: refused by $UD and by root, left untouched"

# --- 3. symlinks in the segments' place ---------------------------------------
L=$SHM-link
printf 'precious ring\n' >"$T/victim"
printf 'precious meta\n' >"$T/victim.meta"
chmod 0666 "$T/victim" "$T/victim.meta"
ln -s "$T/victim" "/dev/shm/$L"
ln -s "$T/victim.meta" "/dev/shm/$L.meta"
ln -s "$T/nothing-here" "/dev/shm/$SHM-dangling"
vbefore=$(digest "$T" victim victim.meta)
for who in root "$UD"; do
	for n in "$L" "$SHM-dangling"; do
		st=0
		as "$who" "$BIN/perfmond" --shm "$n" --csv "" --summary "" --duration 2s >/dev/null 2>"$T/err" || st=$?
		[ "$st" = 1 ] || fail "perfmond as $who followed the symlink /dev/shm/$n (exit $st)"
	done
	grep -q 'symbolic link' "$T/err" || grep -q 'does not' "$T/err" || fail "unclear refusal: $(cat "$T/err")"
done
[ "$(digest "$T" victim victim.meta)" = "$vbefore" ] || fail "a symlink target was written"
[ -L "/dev/shm/$L" ] && [ -L "/dev/shm/$L.meta" ] && [ -L "/dev/shm/$SHM-dangling" ] || fail "a symlink was replaced"
[ ! -e "$T/nothing-here" ] || fail "the dangling symlink's target was created"
ok "symlinks at /dev/shm/NAME: refused, targets untouched, nothing created through them"

# --- 4. output files: no symlink followed, nothing foreign clobbered ---------
O=$T/out
mkdir -p "$O"
chown "$UD:$GD" "$O"
chmod 0750 "$O"
printf 'precious output\n' >"$T/target"
chmod 0666 "$T/target"
tbefore=$(digest "$T" target)

# a) the CSV path is a symlink: refused at start.
ln -s "$T/target" "$O/a.csv"
st=0
as "$UD" "$BIN/perfmond" --shm "$SHM-out" --csv "$O/a.csv" --summary "" --duration 2s >/dev/null 2>"$T/err" || st=$?
[ "$st" = 1 ] || fail "a symlinked CSV path was accepted (exit $st)"
grep -q 'symbolic link' "$T/err" || fail "unclear refusal of a symlinked CSV: $(cat "$T/err")"
# b) the CSV path is someone else's file with other content: refused, kept.
printf 'not,a,perfmond,file\n1,2,3,4\n' >"$O/b.csv"
chown "$UO" "$O/b.csv"
chmod 0666 "$O/b.csv"
bbefore=$(digest "$O" b.csv)
st=0
as "$UD" "$BIN/perfmond" --shm "$SHM-out" --csv "$O/b.csv" --summary "" --duration 2s >/dev/null 2>"$T/err" || st=$?
[ "$st" = 1 ] || fail "a foreign CSV was appended to (exit $st)"
[ "$(digest "$O" b.csv)" = "$bbefore" ] || fail "the foreign CSV was modified"
"$SEGTOOL" remove "$SHM-out" >/dev/null 2>&1 || true
ok "CSV path that is a symlink or a foreign file: refused, untouched"

# c) a running daemon: summary path a symlink (replaced, not followed),
#    SIGUSR1 after the CSV path became a symlink, rotations beside foreign
#    files and symlinks with rotated-looking names.
STEM=c
ln -s "$T/target" "$O/c_summary.txt"
printf 'keep me\n' >"$O/$STEM-20000101T000000Z.csv"          # rotated-looking, foreign
printf 'keep me too\n' >"$O/$STEM-20000101T000000Z_summary.txt"
printf 'notes\n' >"$O/$STEM-notes.csv"
chown "$UO" "$O/$STEM-20000101T000000Z.csv" "$O/$STEM-20000101T000000Z_summary.txt" "$O/$STEM-notes.csv"
# Symlinks under the rotated names of the next seconds.
now=$(date -u +%s)
for i in 0 1 2 3 4 5 6 7 8 9 10 11 12; do
	ln -s "$T/target" "$O/$STEM-$(date -u -d "@$((now + i))" +%Y%m%dT%H%M%SZ).csv"
done
fbefore=$(digest "$O" "$STEM-20000101T000000Z.csv" "$STEM-20000101T000000Z_summary.txt" "$STEM-notes.csv")
cat >"$T/out.conf" <<CONF
[shm]
name = $SHM-out
group = $GX
[collector]
flush_interval = 100ms
[output]
csv = $O/$STEM.csv
summary = $O/${STEM}_summary.txt
rotate_size = 1K
rotate_keep = 1
CONF
chmod 0644 "$T/out.conf"
as_exec "$UD" sh -c "umask 0027; exec '$BIN/perfmond' '$T/out.conf'" >"$T/daemon.out" 2>"$T/daemon.err" &
DPID=$!
"$SEGTOOL" wait-ready "$SHM-out" 10 || fail "perfmond for the output checks did not start"
as_exec "$UP" "$BIN/producer" "$SHM-out" 3 200 --steps --label rot --seconds 3 --pause-us 50000 >/dev/null &
RPIDS=$!
wait_for sh -c "grep -c 'rotated the CSV' '$T/daemon.err' | grep -q '^[3-9]'" || fail "no rotations happened"
# SIGUSR1 with a symlink at the CSV path: not followed, writing goes on.
mv "$O/$STEM.csv" "$O/moved.csv"
ln -s "$T/target" "$O/$STEM.csv"
kill -USR1 "$DPID"
wait_for grep -q 'cannot reopen' "$T/daemon.err" || fail "SIGUSR1 onto a symlink was not refused"
wait $RPIDS || fail "the rotation producer failed"
RPIDS=
kill -USR2 "$DPID"      # a summary now: through mkstemp and rename
sleep 0.3
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS: $(cat "$T/daemon.err")"
# Every problem is listed, not just the first.
problems=
problem() { problems="$problems
  - $*"; }
[ "$(digest "$T" target)" = "$tbefore" ] || problem "a symlink target was written through"
[ -f "$O/c_summary.txt" ] && [ ! -L "$O/c_summary.txt" ] || problem "the summary did not replace its symlink"
[ -L "$O/$STEM.csv" ] || problem "the symlink at the CSV path was replaced"
for f in "$STEM-20000101T000000Z.csv" "$STEM-20000101T000000Z_summary.txt" "$STEM-notes.csv"; do
	[ -f "$O/$f" ] || problem "rotation pruning deleted $f, which belongs to $UO"
done
[ "$(digest "$O" "$STEM-20000101T000000Z.csv" "$STEM-20000101T000000Z_summary.txt" "$STEM-notes.csv" 2>/dev/null)" = "$fbefore" ] ||
	problem "files the daemon did not create were modified"
for i in 0 1 2 3 4 5 6 7 8 9 10 11 12; do
	l=$O/$STEM-$(date -u -d "@$((now + i))" +%Y%m%dT%H%M%SZ).csv
	[ -L "$l" ] || problem "the symlink $(basename "$l") was removed or replaced"
done
ours=$(find "$O" -maxdepth 1 -type f -user "$UD" -name "$STEM-2*Z*.csv" | wc -l)
[ "$ours" -ge 1 ] || problem "rotate_keep = 1, but no rotated CSV of the daemon's is left: $(grep -c 'rotated the CSV' "$T/daemon.err") rotations"
[ -z "$(find "$O" -name '.*')" ] || problem "temporary files left behind: $(ls -A "$O")"
[ -z "$problems" ] || fail "output files:$problems
$(ls -l "$O")"
ok "summary symlink replaced not followed; SIGUSR1 onto a symlink refused; rotation kept foreign files and symlinks"
