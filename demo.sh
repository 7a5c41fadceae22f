#!/bin/sh
# demo.sh - build everything and run the demo: perfmond on its built-in
# defaults (shm "perfmon", files in the current directory) with the example
# pipeline producer stamping for a few seconds, then the summary.
set -eu
cd "$(dirname "$0")"
. ./.ci/need-deps
top=$(pwd)
if [ ! -x _build/src/perfmond ]; then
	echo "demo: building (first run only)..."
	./autogen.sh >/dev/null 2>&1 || ./autogen.sh
	mkdir -p _build
	(cd _build && ../configure -q && make -j"$(nproc)" >/dev/null)
fi
make -C _build -j"$(nproc)" src/perfmond src/perfmonctl examples/pipeline >/dev/null

run=$(mktemp -d "${TMPDIR:-/tmp}/perfmond-demo.XXXXXX")
cd "$run"
echo "demo: perfmond on built-in defaults in $run"
"$top/_build/src/perfmond" &
daemon=$!
trap 'kill $daemon 2>/dev/null || true' EXIT
# Wait for the segments: the daemon creates them before it is ready.
i=0
until [ -e /dev/shm/perfmon.meta ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
sleep 0.2
echo "demo: the example pipeline stamps for 3 seconds (SLICK_PERFMON_SHM=perfmon)"
SLICK_PERFMON_SHM=perfmon "$top/_build/examples/pipeline" 3
sleep 1.2
"$top/_build/src/perfmonctl" status perfmon || true
kill -TERM $daemon
wait $daemon || true
trap - EXIT
echo
echo "demo: $run/perfmon_summary.txt"
cat perfmon_summary.txt
echo
echo "demo: the interval CSV is $run/perfmon.csv ($(($(wc -l < perfmon.csv) - 1)) rows)"
"$top/_build/src/perfmonctl" remove perfmon >/dev/null 2>&1 || true
