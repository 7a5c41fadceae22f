#!/bin/sh
# demo.sh - build everything and run the demo: perfmond on its built-in
# defaults (files in a scratch directory) with the example pipeline
# producer stamping for a few seconds, then the summary.  The instance is
# named after the user (perfmon-demo-USER), so two users can run the demo
# on one host at once.  Needs only the build dependencies, and no root.
set -eu
cd "$(dirname "$0")"
need_for=build
. ./.ci/need-deps
top=$(pwd)
if [ ! -x _build/src/perfmond ]; then
	echo "demo: building (first run only)..."
	./autogen.sh >/dev/null 2>&1 || ./autogen.sh
	mkdir -p _build
	(cd _build && ../configure -q && make -j"$(nproc)" >/dev/null)
fi
make -C _build -j"$(nproc)" src/perfmond src/perfmonctl examples/pipeline >/dev/null

user=$(id -un 2>/dev/null || id -u)
name=perfmon-demo-$(printf '%s' "$user" | tr -c 'A-Za-z0-9._-' '_')
ctl="$top/_build/src/perfmonctl"
run=$(mktemp -d "${TMPDIR:-/tmp}/perfmond-demo.XXXXXX")
cd "$run"
echo "demo: perfmond on built-in defaults with a 256K-slot ring, instance $name, in $run"
# The example stamps flat out, about 8 million events a second from one
# thread: the default ring's 32768 slots per sub-ring on a 2-CPU host hold
# 4 ms of that, less than a virtual machine's host may take a vCPU away.
# A ring four times the default (8 MiB there) rides that out.
"$top/_build/src/perfmond" --instance "$name" --capacity 256K &
daemon=$!
trap 'kill $daemon 2>/dev/null || true' EXIT
# Wait until the collector is alive (it creates the segments first).
i=0
until "$ctl" status "$name" >/dev/null 2>&1 || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
echo "demo: the example pipeline stamps for 3 seconds (SLICK_PERFMON_SHM=$name)"
SLICK_PERFMON_SHM=$name "$top/_build/examples/pipeline" 3
sleep 1.2
"$ctl" status "$name" || true
kill -TERM $daemon
wait $daemon || true
trap - EXIT
echo
echo "demo: $run/${name}_summary.txt"
cat "${name}_summary.txt"
echo
echo "demo: the interval CSV is $run/$name.csv ($(($(wc -l < "$name.csv") - 1)) rows)"
"$ctl" remove "$name" >/dev/null 2>&1 || true
