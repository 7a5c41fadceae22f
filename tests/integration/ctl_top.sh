#!/bin/sh
# ctl_top.sh - perfmonctl top for real, in an 80x24 tmux pane, while a
# producer keeps stamping: the view appears, fits the width (lines are
# joined back with capture-pane -J, so anything the terminal had to wrap
# shows up as too long), refreshes every interval, re-fits when the window
# shrinks, and quits with exit 0 on 'q'.
. "$top_srcdir/tests/integration/daemon_lib.sh"
CTL="$top_builddir/src/perfmonctl"

command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
SOCK="pmctl-top-$$"
tmx() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap 'tmx kill-server >/dev/null 2>&1 || true; cleanup' EXIT

start_daemon --shm "$SHM" --csv "$T/x.csv" --summary "$T/x_summary.txt" --interval 200ms
"$PRODUCER" "$SHM" 3 200 --steps --label order_gateway --seconds 30 --pause-us 200 >/dev/null &
PIDS="$!"

# The pane keeps top's exit status on screen once it ends.
tmx new-session -d -s top -x 80 -y 24 \
	"'$CTL' top '$SHM'; echo \"top-exit=\$?\"; sleep 60"

screen() { tmx capture-pane -p -J -t top; }
showing_rows() { screen | grep -q '^order_gateway  *total  *[0-9.]*[kM]* '; }
wait_for showing_rows || { screen; fail "top never showed the producer's rows"; }
screen >"$T/screen1"
grep -q "^$SHM: pid $DPID, up " "$T/screen1" || { cat "$T/screen1"; fail "no status line"; }
grep -q '^point  *stage  *count  *rate/s  *p50  *p99  *max  *anom$' "$T/screen1" ||
	{ cat "$T/screen1"; fail "table header missing or cut"; }
grep -q "^order_gateway  *order_gateway\\.s1 " "$T/screen1" || { cat "$T/screen1"; fail "stage rows missing"; }
grep -q '^q: quit' "$T/screen1" || fail "no key help"
awk 'length($0) > 80 {print "too wide: " $0; bad=1} END {exit bad}' "$T/screen1" ||
	fail "top wrote past 80 columns"
ok "top shows every stage of the latest interval within 80 columns"

interval() { screen | grep '^interval ending'; }
first=$(interval)
changed() { [ "$(interval)" != "$first" ]; }
wait_for changed || fail "the view did not refresh: $first"
ok "top refreshes as intervals arrive"

tmx resize-window -t top -x 60 -y 20
narrow() {
	screen >"$T/screen2"
	grep -q '^order_gateway' "$T/screen2" &&
		awk 'length($0) > 60 {bad=1} END {exit bad}' "$T/screen2"
}
wait_for narrow || { cat "$T/screen2"; fail "top did not re-fit a 60-column window"; }
ok "top re-fits when the window shrinks"
# Nothing is cut mid-word at 60 columns: the status lines are made of
# whole pieces, the key line is one of its wordings.
whole() {
	screen >"$T/screen2"
	sed -n 1p "$T/screen2" | grep -Eq "^$SHM: pid $DPID(, up [0-9a-z.]+)?(, [0-9.]+[kMG]? ev/s)?(, dropped [0-9.]+[kMG]?)?(, stalled [0-9.]+[kMG]?)?(, ring [0-9]+%)?\$" &&
	sed -n 2p "$T/screen2" | grep -Eq '^interval ending [0-9:.]+ UTC \([0-9.]+s\)(, dropped [0-9.]+[kMG]?)?(, stalled [0-9.]+[kMG]?)?$' &&
	tail -1 "$T/screen2" | grep -Eq '^q: quit   anom: anomalies in the interval *$'
}
wait_for whole || { cat "$T/screen2"; fail "a line cut mid-word at 60 columns"; }
ok "nothing cut mid-word at 60 columns"

# The producer stops: no newer interval is written, and once the last one
# is two intervals old, top says it is stale instead of showing it as live.
kill "$PIDS"; wait "$PIDS" 2>/dev/null || true; PIDS=
stale() { screen | grep -Eq '^STALE: last interval ended [0-9.a-z]+ ago(, at [0-9:.]+ UTC)?'; }
wait_for stale || { screen; fail "an old interval is not marked stale"; }
screen | grep -E '^order_gateway +total ' | grep -Eq ' - ' || { screen; fail "a stale interval still shows a rate"; }
ok "an interval older than two flush intervals is marked stale"
"$CTL" top "$SHM" --once --format csv >"$T/once.csv" || fail "top --once --format csv failed"
head -1 "$T/once.csv" | grep -q ',anomalies,stale$' || fail "no stale column: $(head -1 "$T/once.csv")"
grep -Eq '^order_gateway,total,[0-9]+,,.*,1$' "$T/once.csv" ||
	fail "top --once CSV does not mark the stale interval: $(cat "$T/once.csv")"
ok "top --once --format csv marks the stale interval and gives it no rate"

tmx send-keys -t top q
quit() { screen | grep -q '^top-exit=0$'; }
wait_for quit || { screen; fail "top did not quit with 0 on q"; }
ok "q quits with exit status 0"
