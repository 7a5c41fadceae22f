#!/bin/sh
# cxx_daemon.sh - C++ producers against a real perfmond, rows checked in
# the CSV with exact counts and the labels their name functions publish:
#   - tests/tools/cxx_native (C++17, <perfmon.hpp>): enum-class points and steps,
#     seq, value samples, the scope guard on normal exit, early return,
#     exception unwinding, cancel() and moves, publish_names from a
#     constexpr function, from one returning std::string and from a C one
#     returning const char * (nullptr: unnamed), set_enabled, attach/detach;
#   - tests/tools/slick_usage (C++20, written against slick-perfmon's API and
#     compiled against the compatibility headers): declared points with a
#     constexpr name_of, a pipeline with steps, seq-keyed spans ended on
#     another thread, scope guards, value samples, spans stamped event by
#     event with stamp<IsBegin>() and make_event(), shared-producer start(),
#     and start() refusing the modes perfmond does not have; the figures the
#     Collector reads from the control block (tsc_hz, invariant_tsc,
#     overhead_cycles) agree with perfmonctl status;
#   - $SLICK_PERFMON_SHM: the session it starts before main() (running()
#     and enabled() true, stamps recorded, no start() called), and start()
#     from a config with no shm_name, a producer whatever its run_mode;
#     $SLICK_PERFMON_CSV alone: a message, no file;
#   - Collector::remove_shm: refused while the collector is alive, the
#     segments removed once it has stopped.
. "$top_srcdir/tests/integration/daemon_lib.sh"
NATIVE="$top_builddir/tests/tools/cxx_native"
SLICK="$top_builddir/tests/tools/slick_usage"

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

# What the Collector read from the control block is what the daemon says.
"$top_builddir/src/perfmonctl" status "$SHM" --format=json >"$T/status.json" ||
	fail "perfmonctl status failed"
figures=$(sed -n 's/^daemon tsc_hz \([0-9]*\) invariant \([01]\) overhead \([0-9]*\)$/\1 \2 \3/p' "$T/slick.out")
read -r got_hz got_inv got_ov <<EOF
$figures
EOF
[ -n "$got_ov" ] || fail "slick_usage printed no daemon figures: $(cat "$T/slick.out")"
hz=$(sed -n 's/.*"tsc_hz":\([0-9.e+]*\).*/\1/p' "$T/status.json")
inv=$(sed -n 's/.*"tsc_invariant":\(true\|false\).*/\1/p' "$T/status.json")
ov=$(sed -n 's/.*"overhead_ticks":\([0-9]*\).*/\1/p' "$T/status.json")
awk -v a="$got_hz" -v b="$hz" 'BEGIN { exit !(b > 0 && a > b * 0.99 && a < b * 1.01) }' ||
	fail "tsc_hz() $got_hz, perfmonctl status $hz"
{ [ "$got_inv" = 1 ] && [ "$inv" = true ]; } || { [ "$got_inv" = 0 ] && [ "$inv" = false ]; } ||
	fail "invariant_tsc() $got_inv, perfmonctl status $inv"
[ "$got_ov" = "$ov" ] || fail "overhead_cycles() $got_ov, perfmonctl status $ov"
ok "tsc_hz(), invariant_tsc(), overhead_cycles() are the daemon's ($got_hz Hz, $inv, $ov ticks)"

# $SLICK_PERFMON_SHM alone starts a session before main(), as with
# slick-perfmon: before any start(), running() and enabled() are true, the
# configuration is a producer's on that name, and what is stamped is
# recorded (point_7 below).  start() with an empty cfg.shm_name then takes
# the name from the variable and is a producer whatever run_mode said.
for m in local shared_collector; do
	SLICK_PERFMON_SHM="$SHM" SLICK_PERFMON_CSV="$T/never.csv" "$SLICK" --env $m \
		>"$T/env-$m.out" 2>"$T/env-$m.err" || { cat "$T/env-$m.err"; fail "slick_usage --env $m failed"; }
	grep -q "^before running 1 enabled 1 shm $SHM mode shared_producer\$" "$T/env-$m.out" ||
		fail "no session from SLICK_PERFMON_SHM before start(): $(cat "$T/env-$m.out")"
	grep -q '^env 1 mode shared_producer$' "$T/env-$m.out" ||
		fail "start() in mode $m ignored SLICK_PERFMON_SHM: $(cat "$T/env-$m.out" "$T/env-$m.err")"
	[ -s "$T/env-$m.err" ] && fail "start() from SLICK_PERFMON_SHM complained: $(cat "$T/env-$m.err")"
done
[ -e "$T/never.csv" ] && fail "a producer wrote the SLICK_PERFMON_CSV file"
ok "SLICK_PERFMON_SHM: a running session before start(); start() with no shm_name is its producer, from local and shared_collector configs alike"
env -u SLICK_PERFMON_SHM "$SLICK" --env >"$T/noenv.out" 2>"$T/noenv.err" ||
	fail "slick_usage --env without the variable failed"
grep -q '^before running 0 enabled 0 shm - mode local$' "$T/noenv.out" &&
	grep -q '^env 0 mode local$' "$T/noenv.out" ||
	fail "start() without a name: $(cat "$T/noenv.out")"
grep -q 'run_mode local is not available' "$T/noenv.err" ||
	fail "no message for a local config without SLICK_PERFMON_SHM: $(cat "$T/noenv.err")"
SLICK_PERFMON_SHM="pmt-slick-none-$$" "$SLICK" --env >"$T/absent.out" 2>"$T/absent.err" ||
	fail "slick_usage --env on absent segments failed"
grep -q "^before running 0 enabled 0 shm pmt-slick-none-$$ mode shared_producer\$" "$T/absent.out" &&
	grep -q '^env 0 mode shared_producer$' "$T/absent.out" ||
	fail "SLICK_PERFMON_SHM on absent segments: $(cat "$T/absent.out")"
[ -s "$T/absent.err" ] && fail "absent segments are not quiet: $(cat "$T/absent.err")"
ok "without SLICK_PERFMON_SHM no session and a message for local; absent segments: not running, quietly false"
# SLICK_PERFMON_CSV alone asked slick-perfmon for an in-process collector:
# said to be unavailable at load time, and no file appears.
env -u SLICK_PERFMON_SHM SLICK_PERFMON_CSV="$T/never.csv" "$SLICK" --remove "pmt-slick-none-$$" \
	>"$T/csv.out" 2>"$T/csv.err" || fail "slick_usage with SLICK_PERFMON_CSV failed"
grep -q "SLICK_PERFMON_CSV=$T/never.csv is not read: the CSV is written by the perfmond daemon" "$T/csv.err" ||
	fail "SLICK_PERFMON_CSV alone is silent: $(cat "$T/csv.err")"
[ -e "$T/never.csv" ] && fail "SLICK_PERFMON_CSV created a file"
ok "SLICK_PERFMON_CSV alone: a message naming the daemon's --csv"

# remove_shm while the collector is alive: refused, naming it; nothing removed.
"$SLICK" --remove "$SHM" >"$T/rm1.out" 2>"$T/rm1.err" || fail "slick_usage --remove failed"
grep -q '^remove_shm 0$' "$T/rm1.out" || fail "remove_shm under a live collector: $(cat "$T/rm1.out")"
grep -q "perfmond (pid $DPID) is collecting on \"$SHM\"" "$T/rm1.err" ||
	fail "remove_shm refusal does not name the collector: $(cat "$T/rm1.err")"
[ -e "/dev/shm/$SHM" ] && [ -e "/dev/shm/$SHM.meta" ] || fail "remove_shm removed a live collector's segments"
"$SEGTOOL" status "$SHM" >/dev/null 2>&1 || fail "the collector's segments are unusable after a refused remove_shm"
ok "remove_shm refused while perfmond is alive, segments untouched"

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
expect owned_by_a_std_string_label total 40
expect c_style total 30
ok "<perfmon.hpp>: exact counts, labels from the constexpr name function, a std::string and a const char * one"

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
expect raw_stamp first 100
expect raw_stamp 'step_1->255' 100
expect raw_stamp total 100
clean raw_stamp total
ok "slick-perfmon usage: exact counts, labels from name_of; stamp<IsBegin>() and make_event() spans"
expect env_start total 500
clean env_start total
expect point_7 total 240
clean point_7 total
ok "SLICK_PERFMON_SHM: 240 spans before start(), 500 after it under the label name_of gave"

# remove_shm once the collector has stopped: both segments gone; again:
# nothing left to remove, still true.
"$SLICK" --remove "$SHM" >"$T/rm2.out" 2>"$T/rm2.err" || fail "slick_usage --remove failed"
grep -q '^remove_shm 1$' "$T/rm2.out" || fail "remove_shm after stop: $(cat "$T/rm2.out" "$T/rm2.err")"
[ -e "/dev/shm/$SHM" ] || [ -e "/dev/shm/$SHM.meta" ] && fail "remove_shm left a segment behind"
"$SLICK" --remove "$SHM" >"$T/rm3.out" 2>&1 || fail "slick_usage --remove failed"
grep -q '^remove_shm 1$' "$T/rm3.out" || fail "remove_shm of absent segments: $(cat "$T/rm3.out")"
"$SLICK" --remove "../etc" >"$T/rm4.out" 2>"$T/rm4.err" || fail "slick_usage --remove failed"
grep -q '^remove_shm 0$' "$T/rm4.out" && grep -q 'not a segment name' "$T/rm4.err" ||
	fail "remove_shm of a bad name: $(cat "$T/rm4.out" "$T/rm4.err")"
ok "remove_shm after perfmond stopped: both segments removed; absent ones and bad names handled"
