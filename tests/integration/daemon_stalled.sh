#!/bin/sh
# daemon_stalled.sh - a producer killed between reserve and publish leaves
# a hole: the events behind it are reported in their own interval, and the
# hole is counted as stalled once, after stalled_sample_timeout.
. "$top_srcdir/tests/integration/daemon_lib.sh"

write_conf "$T/p.conf" collector.stalled_sample_timeout=1500ms
start_daemon "$T/p.conf"
"$SEGTOOL" hole "$SHM"
"$PRODUCER" "$SHM" 4 1000 --label behind >/dev/null
# The spans behind the hole show up long before the timeout...
wait_for sh -c "[ \$('$CSVCHECK' '$T/out.csv' | awk -F'\t' '\$1==\"behind\" && \$2==\"total\" {print \$3}') = 1000 ]" \
	|| fail "spans behind the hole not reported"
[ "$(column_sum behind total 6 "$T/out.csv")" = 0 ] || fail "stalled counted too early"
# ... and the hole is stepped over after it.
sleep 2
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
stalled=$("$CSVCHECK" "$T/out.csv" | awk -F'\t' '{s+=$6} END{print s+0}')
# every row of the interval repeats the collector-wide delta: it is in one
# interval only, the `collector` row when nothing else was written then
[ "$(column_sum collector total 6 "$T/out.csv")" = 1 ] || fail "no collector row with stalled=1 (sum $stalled)"
grep -q 'stalled 1' "$T/sum.txt" || fail "summary does not report the stalled slot"
ok "hole stepped over after the timeout, later events not held up"
