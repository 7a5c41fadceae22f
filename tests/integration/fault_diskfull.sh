#!/bin/sh
# fault_diskfull.sh - the output file system fills up under a running
# perfmond (a small tmpfs mounted here): the daemon keeps draining and
# aggregating, reports the write error once per interval and not per row,
# writes every held-back row once space returns (none lost, none twice),
# and the summary at shutdown carries the lifetime figures.  Then: an
# output directory that cannot be written at start is a clear error and
# exit 1, leaving no segment behind.
. "$top_srcdir/tests/integration/daemon_lib.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a small tmpfs"; exit 77; }
[ -z "${PERFMOND_PACKAGE_BUILD:-}" ] ||
	{ echo "SKIP: package build: would mount file systems on the build machine"; exit 77; }
MNT="$T/full"
RO="$T/ro"
mkdir -p "$MNT" "$RO"
# Unmount before daemon_lib's cleanup removes $T (traps run in order: this
# one replaces it and calls it).
cleanup_mounts() {
	for p in $DPID $PIDS; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	umount "$MNT" 2>/dev/null || true
	umount "$RO" 2>/dev/null || true
	cleanup
}
trap cleanup_mounts EXIT
mount -t tmpfs -o size=256k,mode=0755 perfmond-test-full "$MNT" ||
	{ echo "SKIP: cannot mount a tmpfs here"; exit 77; }

POINTS=40
start_daemon --shm "$SHM" --csv "$MNT/out.csv" --summary "$MNT/sum.txt" --interval 100ms

# Fill the file system to the last block.
dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null || true
[ "$(df -P "$MNT" | awk 'NR == 2 {print $4}')" = 0 ] || fail "the tmpfs is not full"
errors_before=$(grep -c 'cannot write' "$T/daemon.err" || true)

# 40 labelled points, 40 rows per interval, for about 1.5 s.
t0=$(date +%s%N)
for p in $(seq 1 $POINTS); do
	"$PRODUCER" "$SHM" "$p" 100 --label "pt$p" --seconds 1.5 --pause-us 20000 >"$T/prod.$p" &
	PIDS="$PIDS $!"
done
for p in $PIDS; do wait "$p" || fail "a producer failed"; done
PIDS=
t1=$(date +%s%N)
kill -0 "$DPID" 2>/dev/null || fail "perfmond died on a full disk"
# Still draining: the reader catches up with the head, nothing lost.
wait_for sh -c "'$SEGTOOL' status '$SHM' | awk '{exit \$12 == \$14 ? 0 : 1}'" || fail "the daemon stopped draining"
"$SEGTOOL" status "$SHM" >"$T/status"
read -r _ _ _ _ _ drained _ dropped _ stalled _ tail _ head <"$T/status"
[ "$dropped" = 0 ] && [ "$stalled" = 0 ] || fail "events lost while the disk was full: $(cat "$T/status")"

# One complaint per interval at most, not one per row.
errors=$(( $(grep -c 'cannot write' "$T/daemon.err" || true) - errors_before ))
intervals=$(( (t1 - t0) / 100000000 + 3 ))
[ "$errors" -ge 1 ] || fail "the write error was never reported"
[ "$errors" -le "$intervals" ] || fail "$errors error lines in about $intervals intervals of $POINTS rows: not once per interval"
grep 'cannot write' "$T/daemon.err" | head -n 1 | grep -q "$MNT/out.csv" || fail "the error does not name the file"
ok "disk full: still draining, $errors error lines over about $intervals intervals of $POINTS rows"

# Space returns: the held-back rows go out, each once.
rm -f "$MNT/filler"
wait_for grep -q 'again' "$T/daemon.err" || fail "no notice that writing resumed"
spans=0
for p in $(seq 1 $POINTS); do spans=$((spans + $(awk '{print $2}' "$T/prod.$p"))); done
all_written() {
	"$CSVCHECK" "$MNT/out.csv" | awk -F'\t' '$1 ~ /^pt[0-9]+$/ && $2 == "total" {s += $3} END {print s + 0}'
}
wait_for sh -c "[ \"\$('$CSVCHECK' '$MNT/out.csv' | awk -F'\t' '\$1 ~ /^pt[0-9]+\$/ && \$2 == \"total\" {s += \$3} END {print s + 0}')\" = $spans ]" ||
	fail "after space returned the CSV holds $(all_written) spans of $spans"
ok "space returned: all $spans spans written once, CSV parses"

stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
"$CSVCHECK" "$MNT/out.csv" >/dev/null || fail "the CSV does not parse after the disk-full episode"
[ "$(all_written)" = "$spans" ] || fail "shutdown changed the CSV totals"
# The summary's lifetime count for each point is that point's spans.
for p in 1 $POINTS; do
	want=$(awk '{print $2}' "$T/prod.$p")
	awk -v l="pt$p" -v n="$want" '$1 == l && $2 == "total" && $4 == n {f = 1} END {exit !f}' "$MNT/sum.txt" ||
		fail "summary: pt$p total is not $want: $(grep "pt$p " "$MNT/sum.txt")"
done
ok "summary at shutdown carries the lifetime figures"

# --- unwritable output directory at start ----------------------------------
mount -t tmpfs -o ro,size=64k perfmond-test-ro "$RO" || fail "cannot mount a read-only tmpfs"
for which in csv summary; do
	rm -f "$T/daemon.err"
	if [ $which = csv ]; then
		args="--csv $RO/out.csv --summary $T/ok_summary.txt"
	else
		args="--csv $T/ok.csv --summary $RO/sum.txt"
	fi
	st=0
	# shellcheck disable=SC2086
	"$PERFMOND" --shm "$SHM-ro" $args --duration 5s 2>"$T/daemon.err" >/dev/null || st=$?
	[ "$st" = 1 ] || fail "read-only $which directory: exit $st, want 1"
	grep -q "$RO" "$T/daemon.err" || fail "read-only $which directory: the error does not name it"
	grep -qi 'read-only' "$T/daemon.err" || fail "read-only $which directory: the error does not say why"
	[ ! -e "/dev/shm/$SHM-ro" ] && [ ! -e "/dev/shm/$SHM-ro.meta" ] ||
		{ "$SEGTOOL" remove "$SHM-ro"; fail "read-only $which directory: segments left behind"; }
done
rm -f "$T/daemon.err"
st=0
"$PERFMOND" --shm "$SHM-ro" --csv "$T/no/such/dir/out.csv" --summary "$T/s.txt" --duration 5s \
	2>"$T/daemon.err" >/dev/null || st=$?
[ "$st" = 1 ] || fail "missing output directory: exit $st, want 1"
grep -q "$T/no/such/dir" "$T/daemon.err" || fail "missing output directory: not named in the error"
"$SEGTOOL" remove "$SHM-ro" 2>/dev/null && fail "missing output directory: segments left behind"
ok "unwritable or missing output directory at start: a clear error, exit 1, nothing left behind"
