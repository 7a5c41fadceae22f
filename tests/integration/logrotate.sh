#!/bin/sh
# logrotate.sh - etc/logrotate.d/perfmond, checked with the real logrotate:
#   - `logrotate -d` on the shipped file is clean (no error, no warning
#     beyond debug mode's own notice);
#   - against a live daemon whose outputs sit where the unit puts them
#     ($LOGS_DIRECTORY/NAME.csv), `logrotate -f` with the shipped file
#     (pointed at a temporary tree, postrotate signalling that daemon)
#     renames the CSV and copies the summary; the daemon reopens; the new
#     CSV starts with the same header; the daemon's own rotated files are
#     left alone; and the rows of the rotated and the new file add up to
#     exactly the spans a producer stamped throughout, so no interval row
#     was lost or written twice around the rotation.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}" "${CC:=cc}"
LOGROTATE=${LOGROTATE:-}
if [ -z "$LOGROTATE" ] || ! [ -x "$LOGROTATE" ]; then
	echo "SKIP: logrotate not found (Debian package logrotate)"
	exit 77
fi
shipped=$top_srcdir/etc/logrotate.d/perfmond
daemon=$top_builddir/src/perfmond
tmp=$(mktemp -d)
name=pm-lr-$$
dpid=
ppid_=
cleanup() {
	[ -n "$ppid_" ] && kill -KILL "$ppid_" 2>/dev/null
	[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null
	# the segments, and the lock, socket and state file in the run directory
	"$top_builddir/tests/tools/segtool" remove "$name" >/dev/null 2>&1 ||
		rm -f "/dev/shm/$name" "/dev/shm/$name.meta"
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
die() { [ -f "$tmp/daemon.log" ] && cat "$tmp/daemon.log"; echo "FAIL: $*"; exit 1; }
user=$(id -un)
group=$(id -gn)

# ---- logrotate -d on the shipped file ------------------------------------
# Without a perfmon user (no systemd-sysusers run here) logrotate rejects
# "su perfmon perfmon"; only then is that one line replaced.
conf=$tmp/shipped.conf
if getent passwd perfmon > /dev/null && getent group perfmon > /dev/null; then
	cp "$shipped" "$conf"
else
	echo "note: no perfmon user here: 'su perfmon perfmon' checked as 'su $user $group'"
	sed "s/^\([[:space:]]*su\) perfmon perfmon\$/\1 $user $group/" "$shipped" > "$conf"
fi
"$LOGROTATE" -d -s "$tmp/state.d" "$conf" > "$tmp/debug.out" 2>&1
rc=$?
if [ $rc -ne 0 ] || grep -i -E 'error|warning' "$tmp/debug.out" | grep -v -q 'in debug mode does nothing'; then
	cat "$tmp/debug.out"
	bad "logrotate -d on the shipped file: rc=$rc or errors/warnings above"
else
	echo "ok: logrotate -d on the shipped file is clean"
fi
grep -q 'rotating pattern: /var/log/perfmond/' "$tmp/debug.out" ||
	bad "logrotate -d did not read the /var/log/perfmond patterns"
# Rows written between a copy and a truncation would be lost, and the live
# file would restart headerless: the CSVs must be renamed, never truncated.
if grep -q '^[[:space:]]*copytruncate' "$shipped" || ! grep -q '^[[:space:]]*nocreate' "$shipped"; then
	bad "the shipped file must rename the CSVs (nocreate, no copytruncate)"
fi

# ---- a forced rotation against a live daemon -------------------------------
[ -x "$daemon" ] || die "$daemon is not built"
command -v "$CC" > /dev/null 2>&1 || die "no C compiler ($CC) for the producer"

# A producer that stamps one span about every 100us until told to stop,
# then prints how many it stamped.
cat > "$tmp/producer.c" <<'C'
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <perfmon.h>

int main(int argc, char **argv)
{
	struct timespec pause = { 0, 100000 };
	unsigned long n = 0;
	int r;

	if (argc != 3)
		return 2;
	r = perfmon_attach(argv[1]);
	if (r < 0) {
		fprintf(stderr, "attach %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	perfmon_name(7, 0, "lr_point");
	while (access(argv[2], F_OK) != 0) {
		perfmon_begin(7, (uint32_t)n);
		perfmon_end(7, (uint32_t)n);
		n++;
		nanosleep(&pause, NULL);
	}
	printf("%lu\n", n);
	return 0;
}
C
"$CC" -std=c11 -O2 -Wall -Werror -I"$top_srcdir/include" -o "$tmp/producer" "$tmp/producer.c" ||
	die "cannot build the producer"

# The unit's layout: /var/log/perfmond/NAME/NAME.csv, via $LOGS_DIRECTORY.
logs=$tmp/log/perfmond
dir=$logs/$name
mkdir -p "$dir"
csv=$dir/$name.csv
summary=$dir/${name}_summary.txt
# Files the daemon would have rotated itself: logrotate must not touch them.
printf 'decoy\n' > "$dir/$name-20250101T000000Z.csv"
printf 'decoy\n' > "$dir/$name-20250101T000000Z_summary.txt"

LOGS_DIRECTORY=$dir "$daemon" --instance="$name" --interval=100ms 2> "$tmp/daemon.log" &
dpid=$!

deadline=$(( $(date +%s) + 30 ))
wait_for() {    # wait_for DESCRIPTION COMMAND...: poll until COMMAND succeeds
	what=$1
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$deadline" ] || die "timed out waiting for $what"
		kill -0 "$dpid" 2> /dev/null || die "the daemon exited while waiting for $what"
		sleep 0.05
	done
}
data_rows() { [ -f "$1" ] && [ "$(grep -c ',lr_point,total,' "$1")" -ge "$2" ]; }

wait_for "the segments" test -e "/dev/shm/$name.meta"
"$tmp/producer" "$name" "$tmp/stop" > "$tmp/stamped" &
ppid_=$!
wait_for "rows in the CSV" data_rows "$csv" 2
kill -USR2 "$dpid"
wait_for "the summary" test -f "$summary"
header=$(head -n 1 "$csv")

# The shipped file, pointed at this tree and this daemon.
sed -e "s|/var/log/perfmond/|$logs/|g" \
    -e "s/^\([[:space:]]*su\) perfmon perfmon\$/\1 $user $group/" \
    -e "s|^\([[:space:]]*\)if \[ -d /run/systemd/system \].*|\1kill -USR1 $dpid|" \
    "$shipped" > "$tmp/live.conf"
grep -q "kill -USR1 $dpid" "$tmp/live.conf" || die "could not point postrotate at the daemon"
"$LOGROTATE" -f -s "$tmp/state" "$tmp/live.conf" > "$tmp/rotate.out" 2>&1 ||
	{ cat "$tmp/rotate.out"; die "logrotate -f failed"; }

rotated=$(ls "$dir" | grep -x "$name\\.csv-[0-9]\\{8\\}T[0-9]\\{6\\}")
[ -n "$rotated" ] || { ls -l "$dir"; die "no rotated CSV $name.csv-YYYYmmddTHHMMSS"; }
echo "ok: the CSV was renamed to $rotated"
# The daemon reopens on SIGUSR1 and starts the configured path again;
# then let rows arrive in the new file before stopping the producer.
wait_for "the reopened CSV" test -f "$csv"
wait_for "rows in the new CSV" data_rows "$csv" 2
: > "$tmp/stop"
wait "$ppid_" || die "the producer failed"
ppid_=
kill -TERM "$dpid"
wait "$dpid"
rc=$?
dpid=
[ $rc -eq 0 ] || bad "the daemon exited $rc on SIGTERM"
grep -q 'reopened' "$tmp/daemon.log" || bad "the daemon did not log a reopen"

[ "$(head -n 1 "$csv")" = "$header" ] && echo "ok: the new CSV starts with the header" ||
	bad "the new CSV does not start with the header: $(head -n 1 "$csv")"
[ "$(head -n 1 "$dir/$rotated")" = "$header" ] || bad "the rotated CSV lost its header"
[ "$(grep -c '^timestamp,' "$csv")" -eq 1 ] || bad "the new CSV has more than one header"

stamped=$(cat "$tmp/stamped")
spans() {       # spans counted in the total rows of the files given
	awk -F, '$2 == "lr_point" && $3 == "total" { n += $5 } END { print n + 0 }' "$@"
}
before=$(spans "$dir/$rotated")
after=$(spans "$csv")
dropped=$(awk -F, 'NR > 1 { n += $6 } END { print n + 0 }' "$dir/$rotated" "$csv")
[ "$dropped" -eq 0 ] || bad "$dropped events dropped: the ring overflowed, counts cannot be compared"
if [ "$before" -gt 0 ] && [ "$after" -gt 0 ] && [ $((before + after)) -eq "$stamped" ]; then
	echo "ok: $before spans before and $after after the rotation: all $stamped stamped, none twice"
else
	bad "spans before $before + after $after != stamped $stamped"
fi

copies=$(ls "$dir" | grep -c -x "${name}_summary\\.txt-[0-9]\\{8\\}T[0-9]\\{6\\}\\(\\.gz\\)\\{0,1\\}")
[ "$copies" -eq 1 ] && [ -f "$summary" ] && echo "ok: the summary was copied and stays in place" ||
	bad "summary rotation: $copies copies, current one present: $([ -f "$summary" ] && echo yes || echo no)"
for f in "$name-20250101T000000Z.csv" "$name-20250101T000000Z_summary.txt"; do
	[ "$(cat "$dir/$f")" = decoy ] || bad "logrotate touched the daemon's own rotated file $f"
done
[ "$(ls "$dir" | grep -c 20250101T000000Z)" -eq 2 ] && echo "ok: the daemon's own rotated files were left alone" ||
	bad "the daemon's own rotated files were renamed: $(ls "$dir" | tr '\n' ' ')"
exit $fail
