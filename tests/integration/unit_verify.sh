#!/bin/sh
# unit_verify.sh - the generated systemd unit, checked without systemd as
# PID 1:
#   - no @placeholder@ is left and it runs the configured perfmond;
#   - `systemd-analyze verify` prints nothing (it exits 0 even on unknown
#     keys, so any output at all is a failure), Documentation= man pages
#     included, and a deliberate typo does make it print;
#   - `systemd-analyze security --offline=yes` scores the exposure that
#     docs/operations.md records;
#   - the unit's SystemCallFilter= lets through every system call the real
#     daemon makes while pinned, locking memory, giving its segments to a
#     group, reloading, reopening, rotating and stopping (needs strace;
#     that part is skipped, with a note, without it).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
SA=${SYSTEMD_ANALYZE:-}
if [ -z "$SA" ] || ! [ -x "$SA" ]; then
	echo "SKIP: systemd-analyze not found (Debian package systemd)"
	exit 77
fi
unit=$top_builddir/systemd/perfmond@.service
daemon=$(cd "$top_builddir/src" && pwd)/perfmond
tmp=$(mktemp -d)
dpid=
cleanup() {
	[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null
	# the segments, and the lock, socket and state file in the run directory
	"$top_builddir/tests/tools/segtool" remove "$shm" >/dev/null 2>&1 ||
		rm -f "/dev/shm/$shm" "/dev/shm/$shm.meta"
	rm -rf "$tmp"
}
shm=pm-unit-$$
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

[ -f "$unit" ] || { echo "FAIL: $unit was not generated"; exit 1; }
[ -x "$daemon" ] || { echo "FAIL: $daemon is not built"; exit 1; }

if grep -n '@[A-Za-z_]*@' "$unit"; then
	bad "unsubstituted placeholders in $unit"
fi
for key in ExecStart ExecReload; do
	grep "^$key=" "$unit" | grep -v '^ExecReload=/bin/kill' | while IFS= read -r line; do
		case $line in
		*=/*/sbin/perfmond\ *) ;;
		*) echo "FAIL: $line: not an absolute .../sbin/perfmond"; exit 1 ;;
		esac
	done || fail=1
done
grep -q '^ExecStart=.* --instance=%i .*/perfmond/%i\.conf$' "$unit" ||
	bad "ExecStart does not read .../perfmond/%i.conf for instance %i"
grep -q '^RemoveIPC=no$' "$unit" || bad "RemoveIPC=no is missing"
if grep -E -q '^(DynamicUser=yes|RemoveIPC=yes)|^SystemCallFilter=.*~.*@(resources|memlock)' "$unit"; then
	bad "the unit has a setting that breaks shared rings or pinning"
fi
echo "ok: placeholders substituted, paths and shm-safe settings in place"

# verify checks that every Exec*= binary exists: point them at this build.
mkdir -p "$tmp/units" "$tmp/man/man1" "$tmp/man/man3" "$tmp/man/man5" "$tmp/man/man8"
sed -E "s#^(Exec[A-Za-z]+=[-+!:@]*)[^ ]*/perfmond( |\$)#\\1$daemon\\2#" "$unit" \
	> "$tmp/units/perfmond@.service"
for page in "$top_srcdir"/man/*.[1-9]; do
	sec=${page##*.}
	cp "$page" "$tmp/man/man$sec/"
done

verify() {
	# The instance name and the template alone are both valid inputs.
	( cd "$tmp/units" &&
	  MANPATH=$tmp/man SYSTEMD_LOG_COLOR=0 "$SA" verify "$PWD/perfmond@check.service" 2>&1 &&
	  MANPATH=$tmp/man SYSTEMD_LOG_COLOR=0 "$SA" verify "$PWD/perfmond@.service" 2>&1 )
}
out=$(verify)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
	printf '%s\n' "$out"
	bad "systemd-analyze verify: rc=$rc, output above"
else
	echo "ok: systemd-analyze verify prints nothing"
fi

# The check can fail: a misspelt key makes verify talk (with rc 0).
cp "$tmp/units/perfmond@.service" "$tmp/good.service"
sed 's/^WatchdogSec=/WatchdogSecs=/' "$tmp/good.service" > "$tmp/units/perfmond@.service"
out=$(verify)
if [ -z "$out" ]; then
	bad "systemd-analyze verify did not notice WatchdogSecs="
else
	echo "ok: a misspelt key is reported ($(printf '%s' "$out" | head -n 1))"
fi
cp "$tmp/good.service" "$tmp/units/perfmond@.service"

# Exposure score: recorded in docs/operations.md; a change either way means
# the hardening changed and the documentation must follow.
sec=$("$SA" security --offline=yes --man=no "$tmp/units/perfmond@check.service" 2>&1)
score=$(printf '%s\n' "$sec" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p')
if [ -z "$score" ]; then
	printf '%s\n' "$sec"
	bad "no exposure level in systemd-analyze security output"
else
	documented=$(sed -n 's/.*exposure level of \*\*\([0-9.]*\)\*\*.*/\1/p' \
		"$top_srcdir/docs/operations.md" | head -n 1)
	if [ "$score" != "$documented" ]; then
		printf '%s\n' "$sec" | grep -E '✗|Overall'
		bad "exposure $score, but docs/operations.md records '$documented'"
	else
		echo "ok: systemd-analyze security: exposure $score, as documented"
	fi
fi

# ---- The syscall filter against the daemon's real system calls ----------
if ! command -v strace >/dev/null 2>&1; then
	echo "note: strace not found (Debian package strace): syscall filter not exercised"
	exit $fail
fi
if ! strace -f -qq -o /dev/null true 2>/dev/null; then
	echo "note: strace cannot trace here (ptrace refused): syscall filter not exercised"
	exit $fail
fi

# Expand a syscall group recursively into names, one per line.
expand() {
	"$SA" syscall-filter "$1" 2>/dev/null | sed -e 's/^[[:space:]]*//' -e '/^#/d' -e '/^$/d' |
	while IFS= read -r s; do
		case $s in
		"$1") ;;
		@*) expand "$s" ;;
		*) echo "$s" ;;
		esac
	done
}
# The allow list the unit builds: its first SystemCallFilter= line is an
# allow list, then each line adds (plain) or removes (~) names in order.
: > "$tmp/allowed"
sed -n 's/^SystemCallFilter=//p' "$unit" > "$tmp/filters"
while IFS= read -r f; do
	case $f in
	'~'*) op=remove; f=${f#\~} ;;
	*) op=add ;;
	esac
	: > "$tmp/names"
	for item in $f; do
		case $item in
		@*) expand "$item" >> "$tmp/names" ;;
		*) echo "$item" >> "$tmp/names" ;;
		esac
	done
	sort -u "$tmp/names" -o "$tmp/names"
	if [ $op = add ]; then
		sort -u "$tmp/allowed" "$tmp/names" -o "$tmp/allowed"
	else
		comm -23 "$tmp/allowed" "$tmp/names" > "$tmp/left" && mv "$tmp/left" "$tmp/allowed"
	fi
done < "$tmp/filters"
[ -s "$tmp/allowed" ] || { echo "FAIL: could not expand the unit's SystemCallFilter="; exit 1; }

# Run the daemon through everything it does in production, under strace.
mkdir -p "$tmp/logs"
lock=no
[ "$(id -u)" = 0 ] && lock=yes
cat > "$tmp/run.conf" <<EOF
[shm]
name = $shm
capacity = 1024
group = $(id -g)
[collector]
cpu = $(sed -n 's/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p' /proc/self/status)
poll_interval = 100us
flush_interval = 50ms
lock_memory = $lock
[output]
rotate_interval = 100ms
rotate_keep = 1
[prometheus]
textfile = $tmp/logs/unit.prom
EOF
LOGS_DIRECTORY=$tmp/logs strace -f -qq -o "$tmp/trace" \
	"$daemon" --instance=unit "$tmp/run.conf" 2> "$tmp/daemon.log" &
spid=$!
dpid=
deadline=$(( $(date +%s) + 20 ))
# The daemon is strace's child; it is ready once its CSV exists.
while [ -z "$dpid" ] || ! [ -f "$tmp/logs/unit.csv" ]; do
	[ "$(date +%s)" -lt "$deadline" ] || { cat "$tmp/daemon.log"; echo "FAIL: the daemon did not start"; exit 1; }
	dpid=$(ps -o pid= --ppid "$spid" 2>/dev/null | tr -d ' ')
	sleep 0.05
done
# Reload with a change, reopen, ask for a summary; wait for each to show.
sed -i 's/^flush_interval = .*/flush_interval = 60ms/' "$tmp/run.conf"
kill -HUP "$dpid"
kill -USR1 "$dpid"
kill -USR2 "$dpid"
while ! [ -f "$tmp/logs/unit_summary.txt" ] ||
      ! grep -q 'reopened' "$tmp/daemon.log" ||
      [ "$(ls "$tmp/logs" | grep -c -- '-[0-9]*T[0-9]*Z.*\.csv$')" -lt 1 ]; do
	[ "$(date +%s)" -lt "$deadline" ] || { cat "$tmp/daemon.log"; echo "FAIL: reload/reopen/summary/rotation not seen"; exit 1; }
	sleep 0.05
done
kill -TERM "$dpid"
wait "$spid"
dpid=
sed -n 's/^[0-9]\{1,\} \{1,\}\([a-z0-9_]\{1,\}\)(.*/\1/p' "$tmp/trace" | sort -u > "$tmp/used"
[ -s "$tmp/used" ] || { echo "FAIL: no system calls traced"; exit 1; }
missing=$(comm -23 "$tmp/used" "$tmp/allowed")
# execve is strace's own start of the daemon; systemd execs before the filter.
missing=$(printf '%s\n' $missing | grep -v -x execve)
if [ -n "$missing" ]; then
	bad "system calls the daemon makes but the unit's filter denies: $(echo $missing)"
else
	echo "ok: all $(wc -l < "$tmp/used") system calls the daemon made are allowed by the unit"
fi
grep -q -x sched_setaffinity "$tmp/used" || bad "the traced run never pinned its drain thread"
exit $fail
