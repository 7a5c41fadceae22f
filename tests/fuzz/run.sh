#!/bin/sh
# tests/fuzz/run.sh - build the libFuzzer harnesses with clang and run each
# for a fixed time, starting from the seed corpus in the repository.
#
#   tests/fuzz/run.sh [SECONDS] [HARNESS...]
#
# Environment: top_srcdir, top_builddir (default: this script's tree and
# the current directory, which must hold build-config.h from configure),
# CLANG (default clang), FUZZ_SECONDS (default 60, overridden by the first
# argument), FUZZ_FLAGS (extra libFuzzer options).
#
# Each harness is compiled from the library's own sources (not the
# gcc-built libperfmond.a) with -fsanitize=fuzzer,address,undefined into
# $top_builddir/fuzz-out.  New corpus entries go to fuzz-out/work/HARNESS,
# so repeated runs build on each other; the seeds in tests/fuzz/corpus are
# only read.  A crash leaves its input in fuzz-out/artifacts and makes the
# script fail; each harness's full log is fuzz-out/HARNESS.log.  The last
# lines give, per harness, the executions, the edges covered (of those
# instrumented) and libFuzzer's feature count.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$(pwd)}"
: "${CLANG:=clang}"
seconds=${FUZZ_SECONDS:-60}
if [ $# -gt 0 ]; then
	seconds=$1
	shift
fi
case $seconds in
''|*[!0-9]*) echo "run.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 64 ;;
esac

if [ ! -f "$top_builddir/build-config.h" ]; then
	echo "run.sh: $top_builddir/build-config.h not found: run configure first, and run" >&2
	echo "        this script from the build directory (or set top_builddir)" >&2
	exit 1
fi
if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "run.sh: $CLANG not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
	exit 1
fi

S=$top_srcdir/src
# The sources each harness links: exactly the code that handles its input.
sources_of() {
	case $1 in
	fuzz_conf)
		echo "$S/conf.c $S/conf_keys.c $S/cmdline.c $S/units.c $S/msgs.c $S/cpus.c" ;;
	fuzz_ingest)
		echo "$S/ring_reader.c $S/pairing.c $S/span_table.c $S/accum.c $S/hist.c" \
		     "$S/names.c $S/report.c $S/csv_out.c $S/csv_schema.c $S/summary.c" \
		     "$S/atomic_file.c $S/outliers.c $S/tsc.c" ;;
	fuzz_ctl_csv)
		echo "$S/ctl_csv.c $S/csv_schema.c $S/ctl_text.c $S/names.c" ;;
	fuzz_capture)
		echo "$S/capture.c $S/ctl_capture.c $S/ctl_cli.c $S/ctl_json.c $S/ctl_table.c" \
		     "$S/ctl_text.c $S/channel.c $S/units.c $S/report.c $S/pairing.c" \
		     "$S/span_table.c $S/accum.c $S/hist.c $S/outliers.c $S/names.c $S/tsc.c" \
		     "$S/shm.c $S/shm_guard.c $S/lock_holder.c" ;;
	esac
}

# What a harness compiles its sources with beyond CFLAGS_FUZZ: fuzz_ingest's
# passes are a few hundred spans, so the reader's radix sort, which many
# sub-rings take from a few thousand, takes them too.
flags_of() {
	case $1 in
	fuzz_ingest) echo "-DRADIX_MIN_WORK=1" ;;
	esac
}

harnesses=${*:-fuzz_conf fuzz_ingest fuzz_ctl_csv fuzz_capture}
out=$top_builddir/fuzz-out
mkdir -p "$out/work" "$out/artifacts"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/perfmond-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT INT TERM

# A C file the toolchain must link with libFuzzer: fail early and clearly
# when the runtime (libclang-rt-*-dev on Debian) is missing.
cat >"$scratch/probe.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }
EOF
if ! "$CLANG" -fsanitize=fuzzer,address,undefined -o "$scratch/probe" "$scratch/probe.c" \
	>"$scratch/probe.log" 2>&1; then
	cat "$scratch/probe.log" >&2
	echo "run.sh: $CLANG cannot link libFuzzer (Debian: apt-get install libclang-rt-14-dev)" >&2
	exit 1
fi

CFLAGS_FUZZ="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
-fno-omit-frame-pointer -Wall -Wextra -std=gnu11 \
-I$top_srcdir/include -I$S -I$top_builddir -I$here"
status=0
summary=

for h in $harnesses; do
	srcs=$(sources_of "$h")
	if [ -z "$srcs" ]; then
		echo "run.sh: unknown harness '$h'" >&2
		exit 64
	fi
	missing=
	for f in $srcs; do [ -f "$f" ] || missing="$missing $f"; done
	if [ -n "$missing" ]; then
		echo "== $h: skipped, sources not present:$missing"
		summary="$summary
$h: skipped (sources missing)"
		continue
	fi
	echo "== $h: building"
	# shellcheck disable=SC2086
	if ! "$CLANG" $CFLAGS_FUZZ $(flags_of "$h") -o "$out/$h" "$here/$h.c" "$here/fuzz_text.c" $srcs \
		-linih -lcsv -lm; then
		echo "run.sh: $h does not build" >&2
		status=1
		summary="$summary
$h: BUILD FAILED"
		continue
	fi
	mkdir -p "$out/work/$h"
	echo "== $h: fuzzing for ${seconds}s"
	log=$out/$h.log
	rc=0
	# shellcheck disable=SC2086
	TMPDIR=$scratch ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$out/$h" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/$h-" \
		${FUZZ_FLAGS:-} "$out/work/$h" "$top_srcdir/tests/fuzz/corpus/$h" \
		>"$log" 2>&1 || rc=$?
	edges=$(sed -n 's/.*Loaded 1 modules *(\([0-9]*\) inline 8-bit counters).*/\1/p' "$log" | head -n 1)
	done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(echo "$done_line" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$done_line" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	rate=$(echo "$done_line" | sed -n 's/.* exec\/s: \([0-9]*\).*/\1/p')
	corp=$(echo "$done_line" | sed -n 's/.* corp: \([^ ]*\).*/\1/p')
	if [ $rc -ne 0 ] || [ -z "$done_line" ]; then
		status=1
		echo "== $h: FAILED (exit $rc); the last lines of $log:"
		grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)' "$log" | tail -n 40
		for a in "$out/artifacts/$h"-*; do
			[ -e "$a" ] && echo "   input kept: $a"
		done
		summary="$summary
$h: FAILED after ${execs:-?} executions (see $log)"
		continue
	fi
	echo "$done_line"
	summary="$summary
$h: ${execs} executions in ${seconds}s (${rate} exec/s), cov ${cov}/${edges} edges, ft ${ft}, corpus ${corp}"
done

echo "== fuzz summary${summary}"
exit $status
