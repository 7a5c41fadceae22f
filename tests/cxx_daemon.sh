#!/bin/sh
# cxx_daemon.sh - C++ producers against a real perfmond, rows checked in
# the CSV with exact counts and the labels their name functions publish:
#   - tests/cxx_native (C++17, <perfmon.hpp>): enum-class points and steps,
#     seq, value samples, the scope guard on normal exit, early return,
#     exception unwinding, cancel() and moves, publish_names from a
#     constexpr function, set_enabled, attach/detach;
#   - tests/slick_usage (C++20, written against slick-perfmon's API and
#     compiled against the compatibility headers): declared points with a
#     constexpr name_of, a pipeline with steps, seq-keyed spans ended on
#     another thread, scope guards, value samples, shared-producer start(),
#     and start() refusing the modes perfmond does not have.
. "$top_srcdir/tests/daemon_lib.sh"
NATIVE="$top_builddir/tests/cxx_native"
SLICK="$top_builddir/tests/slick_usage"

# ---- start() in the modes that cannot exist: false, and a message --------------
"$SLICK" --modes >"$T/modes.out" 2>"$T/modes.err" || fail "slick_usage --modes exited $?"
for m in local shared_collector absent; do
	grep -q "^$m 0\$" "$T/modes.out" || fail "start() in '$m' did not return false: $(cat "$T/modes.out")"
done
grep -q '^running 0 enabled 0$' "$T/modes.out" || fail "a refused start() left the collector running"
grep -q 'run_mode local is not available.*perfmond@' "$T/modes.err" ||
	fail "local mode: no message naming perfmond@NAME: $(cat "$T/modes.err")"
grep -q 'run_mode shared_collector is not available.*perfmond@pmt-slick-none' "$T/modes.err" ||
	fail "shared_collector mode: no message naming perfmond@NAME"
[ "$(grep -c . "$T/modes.err")" = 2 ] || fail "absent segments are not quiet: $(cat "$T/modes.err")"
ok "local and shared_collector refused with a message; absent segments quietly"

# ---- both producers against one daemon -------------------------------------------
start_daemon --shm "$SHM" --csv "$T/out.csv" --summary "$T/sum.txt" --interval 200ms \
	--capacity 65536
# SLICK_PERFMON_DISABLE wins over an explicit configuration, as in slick-perfmon.
SLICK_PERFMON_DISABLE=1 "$SLICK" "$SHM" >/dev/null 2>&1 && fail "start() succeeded under SLICK_PERFMON_DISABLE=1"
ok "SLICK_PERFMON_DISABLE=1 makes start() return false although the segments exist"
"$NATIVE" "$SHM" >"$T/native.out" 2>"$T/native.err" || { cat "$T/native.err"; fail "cxx_native failed"; }
"$SLICK" "$SHM" >"$T/slick.out" 2>"$T/slick.err" || { cat "$T/slick.err"; fail "slick_usage failed"; }
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
"$CSVCHECK" "$T/out.csv" >"$T/sums" || fail "CSV does not parse strictly"

expect() {      # expect POINT STAGE COUNT
	n=$(count_of "$1" "$2" "$T/out.csv")
	[ "$n" = "$3" ] || { cat "$T/sums"; fail "$1/$2: count $n, expected $3"; }
}
clean() {       # clean POINT STAGE: no abandoned, orphan or invalid
	for col in 5 7 8; do
		[ "$(column_sum "$1" "$2" $col "$T/out.csv")" = 0 ] ||
			{ cat "$T/sums"; fail "$1/$2: anomaly column $col is not 0"; }
	done
}

# <perfmon.hpp>
expect rpc decode 500
expect rpc encode 500
expect rpc reply 500
expect rpc total 500
clean rpc total
expect batch value 300
expect guarded decode 100
expect guarded 'step_1->255' 100
expect guarded total 300
expect moved total 150
clean moved total
expect point_20 total 10
ok "<perfmon.hpp>: exact counts, labels from the constexpr name function"

# slick-perfmon source
expect order_path parse 1000
expect order_path risk 1000
expect order_path route 1000
expect order_path sent 1000
expect order_path total 1000
clean order_path total
expect ack_wait total 1600
clean ack_wait total
expect book_update total 350
[ "$(column_sum book_update total 8 "$T/out.csv")" = 0 ] || fail "book_update: orphan ends"
expect point_3 value 500
ok "slick-perfmon usage: exact counts, labels from name_of"
