#!/bin/sh
# idle_cpu.sh - CPU time an idle perfmond spends per second of wall time,
# with its ring sized as for hosts of several CPU counts (PERFMOND_CPUS:
# one sub-ring per CPU), so the cost of polling many sub-rings shows.
#
# Usage: bench/idle_cpu.sh [BUILDDIR] [SECONDS] [WINDOWS] [CPUS...]
#   defaults: the current directory, 10 s, 3 windows, CPU counts 2 and 64.
# For each CPU count: start perfmond (no outputs), let it settle 1 s, then
# sum its threads' on-CPU time (/proc/PID/task/*/schedstat, nanoseconds)
# at the start and end of each window; print every window and the min and
# median, in % of one core.
# Run it on an otherwise idle machine: it is the idle cost being measured.
set -eu
b=${1:-.}
secs=${2:-10}
windows=${3:-3}
[ $# -gt 3 ] && shift 3 || set --
cpus=${*:-2 64}
d="$b/src/perfmond"
[ -x "$d" ] || { echo "idle_cpu.sh: no $d (give the build directory)" >&2; exit 64; }
oncpu() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%d", s}'; }
# The collector's runtime directory, chosen as perfmond chooses it: its
# lock, socket and state file are removed with the instance.
uid=$(id -u)
owned() { [ -d "$1" ] && [ "$(stat -c %u "$1")" = "$uid" ]; }
if owned /run/perfmond; then rundir=/run/perfmond
elif owned "/run/user/$uid"; then rundir=/run/user/$uid/perfmond
else rundir=/tmp/perfmond-$uid
fi

echo "idle perfmond, % of one core per window of $secs s (on-CPU time of all its threads)"
echo "machine: $(nproc) CPUs online, $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $cpus; do
	name="pmbench-idle-$n-$$"
	PERFMOND_CPUS=$n "$d" --shm "$name" --csv "" --summary "" 2>/dev/null &
	pid=$!
	sleep 1
	vals=
	w=0
	while [ "$w" -lt "$windows" ]; do
		t0=$(oncpu "$pid")
		sleep "$secs"
		t1=$(oncpu "$pid")
		vals="$vals $(awk -v a="$t0" -v b="$t1" -v s="$secs" \
			'BEGIN {printf "%.3f", (b - a) / 1e9 / s * 100}')"
		w=$((w + 1))
	done
	sub=$(ls -l "/dev/shm/$name" | awk '{print $5}')
	kill -TERM "$pid"
	wait "$pid" || true
	"$b/src/perfmonctl" remove --force "$name" >/dev/null 2>&1 || rm -f "/dev/shm/$name" "/dev/shm/$name.meta"
	rm -f "$rundir/$name.lock" "$rundir/$name.sock" "$rundir/$name.state"
	echo "$vals" | tr ' ' '\n' | grep . | sort -n | awk -v n="$n" -v bytes="$sub" -v all="$vals" '
		{ v[NR] = $1 }
		END {
			med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "PERFMOND_CPUS=%-4s ring %9d bytes: windows%s -> min %.3f %%, median %.3f %%\n",
				n, bytes, all, v[1], med
		}'
done
