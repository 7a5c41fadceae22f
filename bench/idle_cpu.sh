#!/bin/sh
# idle_cpu.sh - CPU time an idle perfmond spends per second of wall time,
# with its ring sized as for hosts of several CPU counts (PERFMOND_CPUS:
# one sub-ring per CPU), so the cost of polling many sub-rings shows.
#
# Usage: bench/idle_cpu.sh [BUILDDIR] [SECONDS] [WINDOWS] [DAEMON...]
#   defaults: the current directory, 10 s, 3 windows, CPU counts 2 and 64.
#   A DAEMON is a CPU count (BUILDDIR's perfmond with that many sub-rings)
#   or DIR:CPUS, the perfmond of build directory DIR, so that two builds
#   (say the last release and this tree) can be compared side by side.
# Every daemon listed runs at the same time (no outputs), so all of them
# see the same machine: a host whose speed drifts between runs moves them
# together.  After 1 s to settle, the on-CPU time of each daemon's threads
# (/proc/PID/task/*/schedstat, nanoseconds) is summed at the start and end
# of each window; the script prints every window and each daemon's min,
# median and mean, in % of one core.
# Run it on an otherwise idle machine: it is the idle cost being measured.
set -eu
b=${1:-.}
secs=${2:-10}
windows=${3:-3}
[ $# -gt 3 ] && shift 3 || set --
[ $# -gt 0 ] || set -- 2 64
oncpu() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'; }
# The collector's runtime directory, chosen as perfmond chooses it: its
# lock, socket and state file are removed with the instance.
uid=$(id -u)
owned() { [ -d "$1" ] && [ "$(stat -c %u "$1")" = "$uid" ]; }
if owned /run/perfmond; then rundir=/run/perfmond
elif owned "/run/user/$uid"; then rundir=/run/user/$uid/perfmond
else rundir=/tmp/perfmond-$uid
fi
work=$(mktemp -d)
names=

cleanup() {
	for name in $names; do
		pid=$(cat "$work/$name.pid")
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		rm -f "/dev/shm/$name" "/dev/shm/$name.meta"
		rm -f "$rundir/$name.lock" "$rundir/$name.sock" "$rundir/$name.state"
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "idle perfmond, % of one core per window of $secs s (on-CPU time of all its threads)"
echo "machine: $(nproc) CPUs online, $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
for spec in "$@"; do
	case $spec in
	*:*) dir=${spec%:*} n=${spec##*:} ;;
	*) dir=$b n=$spec ;;
	esac
	d="$dir/src/perfmond"
	[ -x "$d" ] || { echo "idle_cpu.sh: no $d (give the build directory)" >&2; exit 64; }
	i=$((i + 1))
	name="pmbench-idle-$i-$n-$$"
	PERFMOND_CPUS=$n "$d" --shm "$name" --csv "" --summary "" 2>/dev/null &
	echo $! >"$work/$name.pid"
	echo "$dir PERFMOND_CPUS=$n" >"$work/$name.label"
	names="$names $name"
done
sleep 1
w=0
while [ "$w" -lt "$windows" ]; do
	for name in $names; do
		oncpu "$(cat "$work/$name.pid")" >"$work/$name.t0"
	done
	sleep "$secs"
	line="window $((w + 1)):"
	for name in $names; do
		v=$(awk -v a="$(cat "$work/$name.t0")" -v b="$(oncpu "$(cat "$work/$name.pid")")" \
			-v s="$secs" 'BEGIN {printf "%.3f", (b - a) / 1e9 / s * 100}')
		echo "$v" >>"$work/$name.vals"
		line="$line $v"
	done
	echo "$line"
	w=$((w + 1))
done
for name in $names; do
	bytes=$(stat -c %s "/dev/shm/$name")
	sort -n "$work/$name.vals" | awk -v what="$(cat "$work/$name.label")" -v bytes="$bytes" '
		{ v[NR] = $1; sum += $1 }
		END {
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%s, ring %d bytes: min %.3f %%, median %.3f %%, mean %.3f %%\n",
				what, bytes, v[1], med, sum / NR
		}'
done
