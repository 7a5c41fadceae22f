#!/bin/sh
# ctl_top_stale.sh - perfmonctl top judges an interval by the collector's
# own settings: a rate is a count over the flush interval, also right
# after a gap of idle intervals (whose rows are not written), and a
# collector that writes the CSV every csv_flush_interval = 3s while its
# intervals last 100ms is not taken for a stale one between two writes.
. "$top_srcdir/tests/integration/daemon_lib.sh"
CTL="$top_builddir/src/perfmonctl"

# top_row POINT: the CSV row of POINT's total in `top --once` (empty if none).
top_row() {
	"$CTL" top "$SHM" --once --format csv | awk -F, -v p="$1" '$1 == p && $2 == "total"'
}

# A gap between two bursts: the second burst's rate is its count over the
# 500 ms interval, not over the 3 s since the first burst's row.
start_daemon --shm "$SHM" --csv "$T/gap.csv" --summary "" --interval 500ms
"$PRODUCER" "$SHM" 5 100 --label burst >/dev/null || fail "first burst"
wait_for sh -c "[ \$(awk -F, '\$2 == \"burst\"' '$T/gap.csv' | wc -l) -ge 1 ]" || fail "no row for the first burst"
sleep 3
"$PRODUCER" "$SHM" 5 50 --label burst >/dev/null || fail "second burst"
second() { [ "$(count_of burst total "$T/gap.csv")" = 150 ]; }
wait_for second || fail "the second burst did not arrive: $(count_of burst total "$T/gap.csv")"
row=$(top_row burst)
echo "$row" | awk -F, '$9 == 0 && $3 > 0 && ($4 - $3 / 0.5) ^ 2 < 0.000001 {ok = 1} END {exit !ok}' ||
	fail "rate after a gap is not count / 0.5s (point,stage,count,rate,...,stale): $row"
ok "after a gap of idle intervals the rate is over the interval's length: $row"
stop_daemon TERM

# csv_flush_interval = 3s, intervals of 100ms: rows arrive in batches 3 s
# apart, so the newest is up to about 3.1 s old before the next batch.
cat >"$T/push.conf" <<CONF
[shm]
name = $SHM
[collector]
flush_interval = 100ms
[output]
csv = $T/push.csv
summary =
csv_flush_interval = 3s
CONF
start_daemon "$T/push.conf"
"$PRODUCER" "$SHM" 6 100 --label steady --seconds 15 --pause-us 2000 >/dev/null &
PIDS=$!
rows() { [ "$(count_of steady total "$T/push.csv")" -gt 0 ]; }
wait_for rows || fail "the first batch of rows never came"
# Look every 0.25 s through more than a whole batch period.
i=0
while [ $i -lt 16 ]; do
	row=$(top_row steady)
	[ -n "$row" ] || fail "no row for the steady producer"
	echo "$row" | awk -F, '$9 == 0 && $4 != "" {ok = 1} END {exit !ok}' ||
		fail "a collector writing every 3s is shown stale: $row"
	sleep 0.25
	i=$((i + 1))
done
ok "csv_flush_interval = 3s with 100ms intervals: never stale between two writes"
kill "$PIDS"; wait "$PIDS" 2>/dev/null || true; PIDS=
stop_daemon TERM
