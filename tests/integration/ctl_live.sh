#!/bin/sh
# ctl_live.sh - perfmonctl against a running perfmond and a producer:
# status (alive, counters, paths), names, summary on request, top --once,
# report/plot/compare on the CSV it writes, remove refused while it runs,
# and status/remove after it stopped.
. "$top_srcdir/tests/integration/daemon_lib.sh"
CTL="$top_builddir/src/perfmonctl"

expect() {
	want=$1; shift
	rc=0
	"$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" = "$want" ] || { cat "$T/out" "$T/err"; fail "$* exited $rc, expected $want"; }
}

# A ring larger than the run (80000 events), so no event can be lapped even
# when the machine is busy: the counts below are exact.
start_daemon --shm "$SHM" --csv "$T/x.csv" --summary "$T/x_summary.txt" --interval 100ms \
	--capacity 262144
"$PRODUCER" "$SHM" 7 20000 --steps --label 'gw, "main"' >/dev/null

expect 0 "$CTL" status "$SHM" --format csv
line=$(sed -n 2p "$T/out")
[ "$(echo "$line" | cut -d, -f2-4)" = "alive,1,$DPID" ] || fail "status: $line"
echo "$line" | grep -q ",$T/x.csv,$T/x_summary.txt,0\$" || fail "status paths (then 0 producers): $line"
expect 0 "$CTL" status "$SHM"
grep -q "alive, pid $DPID" "$T/out" || fail "live status: $(cat "$T/out")"
ok "status: alive, pid and output paths"

# Every event (4 per span) is drained, and the status block says so.
drained() { "$CTL" status "$SHM" --format csv | awk -F, 'NR == 2 {print $8}'; }
drained_all() { [ "$(drained)" -eq 80000 ]; }
wait_for drained_all || fail "events_drained stuck at $(drained)"
ok "status counts the drained events"

expect 0 "$CTL" names "$SHM" --format csv
grep -q '^7,0,point,"gw, ""main"""$' "$T/out" || fail "names: $(cat "$T/out")"
ok "names shows the producer's labels"

# The CSV is written each interval; wait for the whole run to be in it.
total_count() {
	"$CTL" report --format csv --stage total "$T/x.csv" 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
print(sum(int(r["count"]) for r in rows if r["point"] == "gw, \"main\""))'
}
all_counted() { [ "$(total_count)" = 20000 ]; }
wait_for all_counted || fail "report counts $(total_count) spans, not 20000"
ok "report over the live CSV counts every span"

expect 0 "$CTL" summary "$SHM" --timeout 5s
grep -q 'perfmond summary' "$T/out" || fail "summary: $(cat "$T/out")"
grep -q 'gw, "main"' "$T/out" || fail "summary lacks the label"
ok "summary asked for and printed"

COLUMNS=80 expect 0 "$CTL" top "$SHM" --once
grep -q "^$SHM: pid $DPID" "$T/out" || fail "top header: $(cat "$T/out")"
grep -q '^gw, "main"' "$T/out" || fail "top rows: $(cat "$T/out")"
awk 'length($0) > 80 {bad=1} END {exit bad}' "$T/out" || fail "top wider than 80 columns"
ok "top --once shows the latest interval in 80 columns"

expect 0 "$CTL" plot "$T/x.csv" -o "$T/x.svg"
grep -q 'class="series p50"' "$T/x.svg" || fail "plot has no p50 line"
if command -v xmllint >/dev/null 2>&1; then
	xmllint --noout "$T/x.svg" || fail "plot is not well-formed XML"
fi
expect 0 "$CTL" compare --fail-on-regression "$T/x.csv" "$T/x.csv"
grep -q 'result: no regression' "$T/out" || fail "compare with itself: $(cat "$T/out")"
ok "plot and compare read the daemon's CSV"

expect 1 "$CTL" remove "$SHM"
grep -q "is running on" "$T/err" || fail "remove refusal not explained"
[ -e "/dev/shm/$SHM" ] || fail "remove removed a live instance"
ok "remove refuses while the collector runs"

stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
expect 3 "$CTL" status "$SHM"
grep -q "no process holds the collector lock" "$T/out" || fail "stopped status: $(cat "$T/out")"
expect 3 "$CTL" summary "$SHM"
expect 0 "$CTL" remove "$SHM"
[ ! -e "/dev/shm/$SHM" ] || fail "segments left after remove"
ok "after stop: status and summary exit 3, remove works"
