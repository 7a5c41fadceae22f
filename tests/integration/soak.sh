#!/bin/sh
# soak.sh - perfmond under steady load for a long time (not part of make
# check: `make soak DURATION=10m`).
#
# Four producer threads in two processes (tests/tools/soak_producer) stamp spans
# (begin, two steps, end) and value samples for DURATION, while the test
# samples the daemon's RSS, open descriptors and counters, asks for a
# summary (SIGUSR2) and reloads the config (SIGHUP) every minute, and the
# CSV rotates by time.  At the end:
#   - drained + dropped + stalled = every stamp the producers made;
#   - the CSV files (current and rotated) count every span and value
#     sample, less at most one per dropped event;
#   - no invalid, stalled or out_of_range anywhere, and orphans plus
#     abandoned spans no more than three per dropped event (what drops can
#     cause);
#   - after warm-up the daemon's RSS stays within max(1 MiB, 2 %) and its
#     open descriptors do not change.
#
# Environment: DURATION (e.g. 600, 30s, 10m, 1h; default 10m), SOAK_RATE
# (spans per second per thread, default 25000), SOAK_DIR (where the CSV,
# summary and samples are kept; default ./soak-results), top_srcdir,
# top_builddir.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
PERFMOND="$top_builddir/src/perfmond"
SEGTOOL="$top_builddir/tests/tools/segtool"
CSVCHECK="$top_builddir/tests/tools/csvcheck"
SOAKPROD="$top_builddir/tests/tools/soak_producer"
for b in "$PERFMOND" "$SEGTOOL" "$CSVCHECK" "$SOAKPROD"; do
	[ -x "$b" ] || { echo "soak: $b is not built (run make soak)"; exit 1; }
done

duration=${DURATION:-10m}
case $duration in
*h) secs=$(( ${duration%h} * 3600 )) ;;
*m) secs=$(( ${duration%m} * 60 )) ;;
*s) secs=${duration%s} ;;
*) secs=$duration ;;
esac
case $secs in ''|*[!0-9]*) echo "soak: DURATION must be N, Ns, Nm or Nh, not '$duration'"; exit 64 ;; esac
[ "$secs" -ge 20 ] || { echo "soak: DURATION must be at least 20s"; exit 64; }
rate=${SOAK_RATE:-25000}
dir=${SOAK_DIR:-soak-results}
rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
SHM=pmsoak-$$
warmup=$(( secs / 10 > 30 ? secs / 10 : 30 ))
[ "$warmup" -lt "$secs" ] || warmup=$(( secs / 2 ))
sample=$(( secs / 120 > 1 ? secs / 120 : 1 ))
[ "$sample" -le 10 ] || sample=10
rotate=$(( secs / 5 > 10 ? secs / 5 : 10 ))
DPID=
PPIDS=

cleanup() {
	for p in $DPID $PPIDS; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	"$SEGTOOL" remove "$SHM" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$dir/soak.conf" <<CONF
[shm]
name = $SHM
capacity = 262144
[collector]
flush_interval = 1s
[output]
csv = $dir/soak.csv
summary = $dir/soak_summary.txt
rotate_interval = ${rotate}s
rotate_keep = 1000
CONF

"$PERFMOND" "$dir/soak.conf" >"$dir/daemon.out" 2>"$dir/daemon.err" &
DPID=$!
"$SEGTOOL" wait-ready "$SHM" 10 || { cat "$dir/daemon.err"; echo "soak: perfmond did not start"; exit 1; }
echo "soak: $secs s, 2 processes x 2 threads x $rate spans/s (+1 value per 16 spans), results in $dir"

"$SOAKPROD" "$SHM" "$secs" 2 1 "$rate" >"$dir/prod1.out" 2>"$dir/prod1.err" &
p1=$!
"$SOAKPROD" "$SHM" "$secs" 2 3 "$rate" >"$dir/prod2.out" 2>"$dir/prod2.err" &
p2=$!
PPIDS="$p1 $p2"

# t rss_kb fds drained dropped stalled
printf 't\trss_kb\tfds\tdrained\tdropped\tstalled\n' >"$dir/samples.tsv"
t0=$(date +%s)
next_signal=60
while kill -0 $p1 2>/dev/null || kill -0 $p2 2>/dev/null; do
	now=$(( $(date +%s) - t0 ))
	kill -0 "$DPID" 2>/dev/null || { cat "$dir/daemon.err"; echo "soak: FAIL: perfmond died after $now s"; exit 1; }
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$DPID/status")
	fds=$(ls "/proc/$DPID/fd" | wc -l)
	st=$("$SEGTOOL" status "$SHM" | awk '{print $6 "\t" $8 "\t" $10}')
	printf '%s\t%s\t%s\t%s\n' "$now" "$rss" "$fds" "$st" >>"$dir/samples.tsv"
	if [ "$now" -ge "$next_signal" ]; then
		kill -USR2 "$DPID"
		kill -HUP "$DPID"
		next_signal=$((next_signal + 60))
	fi
	sleep "$sample"
done
wait $p1 || { cat "$dir/prod1.err"; echo "soak: FAIL: producer 1 failed"; exit 1; }
wait $p2 || { cat "$dir/prod2.err"; echo "soak: FAIL: producer 2 failed"; exit 1; }
PPIDS=
elapsed=$(( $(date +%s) - t0 ))
sleep 2                  # the last interval
kill -TERM "$DPID"
dstatus=0
wait "$DPID" || dstatus=$?
DPID=
fails=
failed() { fails="$fails
  - $*"; }
[ "$dstatus" = 0 ] || failed "perfmond exited $dstatus"

stamps=$(cat "$dir/prod1.out" "$dir/prod2.out" | awk '$1 == "total" {s += $7} END {print s + 0}')
spans=$(cat "$dir/prod1.out" "$dir/prod2.out" | awk '$1 == "total" {s += $3} END {print s + 0}')
values=$(cat "$dir/prod1.out" "$dir/prod2.out" | awk '$1 == "total" {s += $5} END {print s + 0}')
# "stopped: N events drained, D dropped, S stalled"
set -- $(sed -n 's/.*stopped: \([0-9]*\) events drained, \([0-9]*\) dropped, \([0-9]*\) stalled.*/\1 \2 \3/p' "$dir/daemon.err")
drained=${1:-0} dropped=${2:-0} stalled=${3:-0}
[ $((drained + dropped + stalled)) = "$stamps" ] ||
	failed "drained $drained + dropped $dropped + stalled $stalled = $((drained + dropped + stalled)), stamps produced $stamps"

# Every CSV the run wrote, rotated ones first.
files=$(ls "$dir"/soak-*.csv 2>/dev/null; echo "$dir/soak.csv")
# shellcheck disable=SC2086
"$CSVCHECK" $files >"$dir/sums" || failed "the CSV files do not parse"
nfiles=$(echo "$files" | wc -l)
got_spans=$(awk -F'\t' '$1 ~ /^soak[0-9]+$/ && $2 == "total" {s += $3} END {print s + 0}' "$dir/sums")
got_values=$(awk -F'\t' '$1 ~ /^soak[0-9]+\.depth$/ && $2 == "value" {s += $3} END {print s + 0}' "$dir/sums")
if [ "$dropped" = 0 ]; then
	[ "$got_spans" = "$spans" ] || failed "CSV spans $got_spans, produced $spans (nothing dropped)"
	[ "$got_values" = "$values" ] || failed "CSV values $got_values, produced $values (nothing dropped)"
else
	[ "$got_spans" -le "$spans" ] && [ $((spans - got_spans)) -le "$dropped" ] ||
		failed "CSV spans $got_spans of $spans with $dropped dropped"
	[ "$got_values" -le "$values" ] && [ $((values - got_values)) -le "$dropped" ] ||
		failed "CSV values $got_values of $values with $dropped dropped"
fi
# Columns: 5 invalid, 6 stalled, 7 abandoned, 8 orphan, 9 out_of_range.
set -- $(awk -F'\t' 'NF >= 9 {i += $5; st += $6; a += $7; o += $8; r += $9} END {print i + 0, st + 0, a + 0, o + 0, r + 0}' "$dir/sums")
invalid=$1 csv_stalled=$2 abandoned=$3 orphan=$4 oor=$5
[ "$invalid" = 0 ] || failed "invalid $invalid"
[ "$csv_stalled" = 0 ] && [ "$stalled" = 0 ] || failed "stalled $stalled (CSV $csv_stalled)"
[ "$oor" = 0 ] || failed "out_of_range $oor"
[ $((orphan + abandoned)) -le $((3 * dropped)) ] ||
	failed "orphan $orphan + abandoned $abandoned more than 3 x $dropped dropped"

# Flat after warm-up.
set -- $(awk -F'\t' -v w="$warmup" 'NR > 1 && $1 >= w {
		n++; if (n == 1 || $2 < rmin) rmin = $2; if ($2 > rmax) rmax = $2; rsum += $2
		if (n == 1 || $3 < fmin) fmin = $3; if ($3 > fmax) fmax = $3 }
	END {print n + 0, rmin + 0, rmax + 0, (n ? int(rsum / n) : 0), fmin + 0, fmax + 0}' "$dir/samples.tsv")
nsamples=$1 rss_min=$2 rss_max=$3 rss_mean=$4 fd_min=$5 fd_max=$6
allowed=$(( rss_mean / 50 > 1024 ? rss_mean / 50 : 1024 ))
[ "$nsamples" -ge 3 ] || failed "only $nsamples samples after warm-up"
[ $((rss_max - rss_min)) -le "$allowed" ] ||
	failed "RSS after warm-up from $rss_min to $rss_max kB (allowed $allowed kB)"
[ "$fd_min" = "$fd_max" ] || failed "open descriptors after warm-up from $fd_min to $fd_max"
rss_first=$(awk -F'\t' 'NR == 2 {print $2}' "$dir/samples.tsv")
rss_last=$(awk -F'\t' 'END {print $2}' "$dir/samples.tsv")
rotations=$(grep -c 'rotated the CSV' "$dir/daemon.err" || true)
summaries=$(ls "$dir"/soak-*_summary.txt 2>/dev/null | wc -l)

cat <<REPORT | tee "$dir/report.txt"
soak report ($elapsed s of load, warm-up $warmup s, sampled every $sample s)
  stamps produced   $stamps ($spans spans x 4 + $values values)
  drained           $drained  ($(( drained / (elapsed > 0 ? elapsed : 1) )) events/s sustained)
  dropped           $dropped
  stalled           $stalled
  CSV               $nfiles files ($rotations rotations, $summaries rotated summaries): $got_spans spans, $got_values values
  anomalies         invalid $invalid, orphan $orphan, abandoned $abandoned, out_of_range $oor
  RSS kB            first $rss_first, after warm-up min $rss_min max $rss_max mean $rss_mean, last $rss_last
  open fds          after warm-up min $fd_min max $fd_max
REPORT
if [ -n "$fails" ]; then
	echo "soak: FAIL:$fails"
	exit 1
fi
echo "soak: PASS"
