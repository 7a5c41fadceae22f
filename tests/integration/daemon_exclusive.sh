#!/bin/sh
# daemon_exclusive.sh - two daemons never write one output: a second
# perfmond (another shm name) configured with the CSV, the summary or the
# textfile a live one writes exits 1 naming the other's pid, creating and
# writing nothing; once the first has stopped, the path is free again; a
# reload that spells the same files another way keeps them locked.
. "$top_srcdir/tests/integration/daemon_lib.sh"
SHM2="$SHM-b"
trap 'cleanup; "$SEGTOOL" remove "$SHM2" >/dev/null 2>&1 || true' EXIT

printf '[prometheus]\ntextfile = %s\n' "$T/a.prom" >"$T/prom.conf"
start_daemon "$T/prom.conf" --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 100ms
"$PRODUCER" "$SHM" 1 200 --label one >/dev/null || fail "producer failed"
wait_for grep -q one "$T/out.csv" || fail "first daemon wrote no row"

second() {  # second daemon on SHM2 with one output shared; sets rc, out
	rc=0
	"$PERFMOND" --shm "$SHM2" --interval 100ms --duration 1s "$@" >"$T/second.out" 2>&1 || rc=$?
}
before=$(cksum <"$T/out.csv")
second --csv "$T/out.csv" --summary ""
[ $rc = 1 ] || fail "second daemon on the same CSV exited $rc: $(cat "$T/second.out")"
grep -q "CSV $T/out.csv is being written by another perfmond (pid $DPID)" "$T/second.out" ||
	fail "refusal does not name the other pid: $(cat "$T/second.out")"
[ ! -e "/dev/shm/$SHM2" ] || fail "the refused daemon created segments"

second --csv "" --summary "$T/sum.txt"
[ $rc = 1 ] || fail "second daemon on the same summary exited $rc"
grep -q "summary $T/sum.txt is being written by another perfmond (pid $DPID)" "$T/second.out" ||
	fail "summary refusal: $(cat "$T/second.out")"

printf '[prometheus]\ntextfile = %s\n' "$T/a.prom" >"$T/prom2.conf"
# The same file spelled another way is the same file.
(cd "$T" && "$PERFMOND" "$T/prom2.conf" --shm "$SHM2" --csv "" --summary "" --duration 1s \
	>"$T/second.out" 2>&1) && rc=0 || rc=$?
[ $rc = 1 ] || fail "second daemon on the same textfile exited $rc"
grep -q "textfile $T/a.prom is being written by another perfmond (pid $DPID)" "$T/second.out" ||
	fail "textfile refusal: $(cat "$T/second.out")"
(cd "$T" && "$PERFMOND" --shm "$SHM2" --csv "./out.csv" --summary "" --duration 1s \
	>"$T/second.out" 2>&1) && rc=0 || rc=$?
[ $rc = 1 ] || fail "second daemon on ./out.csv (relative) exited $rc"

"$PRODUCER" "$SHM" 1 100 --label one >/dev/null
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "first daemon exited $DSTATUS"
[ "$(count_of one total "$T/out.csv")" = 300 ] || fail "first daemon lost rows: $(count_of one total "$T/out.csv")"
[ "$(grep -c '^timestamp,' "$T/out.csv")" = 1 ] || fail "a second header was written"
[ "$before" != "$(cksum <"$T/out.csv")" ] || fail "first daemon stopped writing"
ls -a "$T" | grep -q '\.lock$' && fail "lock files left behind: $(ls -a "$T")"

# Free again: the second daemon may now write it.
second --csv "$T/out.csv" --summary ""
[ $rc = 0 ] || fail "after the first stopped, the second was refused: $(cat "$T/second.out")"
ok "a second daemon is refused the CSV, summary and textfile of a live one, with its pid"

# A reload that spells the same outputs another way keeps their locks: the
# lock file is the same file, and letting go of the old lock would drop
# the new one with it.
rm -f "$T/out.csv" "$T/sum.txt"
printf '[output]\ncsv = %s\nsummary = %s\n' "$T/out.csv" "$T/sum.txt" >"$T/re.conf"
: >"$T/daemon.err"
start_daemon "$T/re.conf" --shm "$SHM" --interval 100ms
printf '[output]\ncsv = %s\nsummary = %s\n' "$T/./out.csv" "$T/../$(basename "$T")/sum.txt" \
	>"$T/re.conf"
kill -HUP "$DPID"
wait_for grep -q "csv = $T/./out.csv.*applied" "$T/daemon.err" || fail "the reload was not applied"
"$PRODUCER" "$SHM" 2 100 --label again >/dev/null || fail "producer failed after the reload"
wait_for grep -q again "$T/out.csv" || fail "no row after the reload"
second --csv "$T/out.csv" --summary ""
[ $rc = 1 ] || fail "after a reload to $T/./out.csv a second daemon on $T/out.csv exited $rc: $(cat "$T/second.out")"
grep -q "CSV $T/out.csv is being written by another perfmond (pid $DPID)" "$T/second.out" ||
	fail "refusal after the reload does not name the pid: $(cat "$T/second.out")"
second --csv "" --summary "$T/sum.txt"
[ $rc = 1 ] || fail "after a reload, a second daemon on the same summary exited $rc"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "first daemon exited $DSTATUS"
ls -a "$T" | grep -q '\.lock$' && fail "lock files left behind after the reload: $(ls -a "$T")"
ok "a reload to another spelling of the same files keeps them locked"

# A lock file is the daemon's alone (0600), and one left behind by a
# daemon killed with SIGKILL cannot be held into a refusal: whoever had
# it open could lock it, but only a perfmond of the file's owner counts
# as another collector.
rm -f "$T/out.csv" "$T/sum.txt"
start_daemon "$T/re.conf" --shm "$SHM" --interval 100ms
wait_for test -e "$T/.out.csv.lock" || fail "no lock file beside the CSV"
[ "$(stat -c %a "$T/.out.csv.lock")" = 600 ] ||
	fail "the CSV's lock file has mode $(stat -c %a "$T/.out.csv.lock"), want 600"
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null || true
[ -e "$T/.out.csv.lock" ] || fail "SIGKILL left no lock file (the test needs one)"
python3 -c '
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.lockf(fd, fcntl.LOCK_SH)
print("held", flush=True)
time.sleep(60)' "$T/.out.csv.lock" >"$T/holder.out" 2>&1 &
HOLDER=$!
PIDS="$PIDS $HOLDER"
wait_for grep -q held "$T/holder.out" || fail "the stand-in could not lock the file: $(cat "$T/holder.out")"
second --csv "$T/out.csv" --summary ""
[ $rc = 0 ] || fail "a lock file held by a process that is no perfmond kept a daemon out (exit $rc): $(cat "$T/second.out")"
kill "$HOLDER" 2>/dev/null || true
ok "output lock files are private, and only a live perfmond holds one"
