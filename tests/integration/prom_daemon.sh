#!/bin/sh
# prom_daemon.sh - the Prometheus textfile of a live perfmond, end to end:
# producers with awkward labels stamp into a running daemon with
# [prometheus] textfile set; the file is read over and over while it is
# being rewritten and is never seen half-written; a real node_exporter
# (textfile collector only, listening on 127.0.0.1 only) serves it without
# a scrape error; `promtool check metrics` passes on the file; and the
# figures scraped with curl equal the daemon's own CSV and summary.  A
# reload that changes the path removes the old file.
. "$top_srcdir/tests/integration/daemon_lib.sh"
. "$top_srcdir/tests/integration/prom_lib.sh"
need_tool PROMTOOL promtool
need_tool NODE_EXPORTER prometheus-node-exporter node_exporter
need_tool CURL curl
# Loopback only, whatever proxy the environment names.
CURL_OPTS="--noproxy 127.0.0.1"

mkdir "$T/textfile"
PROM="$T/textfile/perfmond_$SHM.prom"
write_conf "$T/perfmond.conf" shm.capacity=262144 "prometheus.textfile=$PROM"
start_s=$(date +%s)
start_daemon "$T/perfmond.conf"
wait_for test -s "$PROM" ||
	fail "no $PROM after 10 s: the daemon does not write its Prometheus textfile"
[ "$(stat -c %a "$PROM")" = 644 ] || fail "mode $(stat -c %a "$PROM"), want 644"

# node_exporter on a free loopback port.
start_node_exporter "$T/textfile" "$T/ne.log"
[ -n "$NE_PID" ] || fail "node_exporter did not start: $(cat "$T/ne.log")"
URL="http://127.0.0.1:$NE_PORT/metrics"

"$PRODUCER" "$SHM" 1 3000 --steps --label alpha >/dev/null &
p1=$!
"$PRODUCER" "$SHM" 2 2000 --label 'beta, "quoted" \ ü' >/dev/null &
p2=$!
"$PRODUCER" "$SHM" 3 4000 --values --label depth >/dev/null &
p3=$!

# While the daemon rewrites the file every 100 ms: each read is a whole
# file (it opens with HELP and ends with the flush timestamp line), and at
# least five different versions go by.
python3 - "$PROM" <<'PY' || fail "the textfile was seen incomplete"
import sys, time
path, versions, reads = sys.argv[1], set(), 0
deadline = time.monotonic() + 30
while len(versions) < 5:
    if time.monotonic() > deadline:
        sys.exit("only %d versions in 30 s" % len(versions))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    reads += 1
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    if not text.startswith("# HELP ") or not text.endswith("\n") or \
       not last.startswith("perfmond_last_flush_timestamp_seconds{"):
        sys.exit("read %d: incomplete file ending %r" % (reads, text[-200:]))
    versions.add(text)
print("%d reads, %d versions, all complete" % (reads, len(versions)))
PY
ok "never seen half-written"

# Scrapes during the run: served, with no textfile error.
for i in 1 2 3; do
	"$CURL" $CURL_OPTS -sf "$URL" >"$T/scrape" || fail "scrape $i failed"
	grep -q '^node_textfile_scrape_error 0$' "$T/scrape" ||
		fail "node_exporter reports a textfile error: $(grep textfile "$T/scrape")"
	grep -q '^perfmond_events_drained_total{' "$T/scrape" || fail "scrape $i: no perfmond metrics"
done
wait $p1 $p2 $p3

# A reload that moves the file: the old one goes (the exporter would
# serve its series twice), the new one appears.
OLD="$PROM"
PROM="$T/textfile/perfmond_${SHM}_moved.prom"
sed -i "s|^textfile = .*|textfile = $PROM|" "$T/perfmond.conf"
kill -HUP "$DPID"
wait_for test -s "$PROM" || fail "no $PROM after the reload"
wait_for test ! -e "$OLD" || fail "$OLD is still there after the reload"
ok "reload moves the textfile"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS"
end_s=$(date +%s)
[ "$(ls -A "$T/textfile")" = "$(basename "$PROM")" ] ||
	fail "left behind in the textfile directory: $(ls -A "$T/textfile")"

"$PROMTOOL" check metrics <"$PROM" >"$T/lint" 2>&1 || fail "promtool check metrics: $(cat "$T/lint")"
[ ! -s "$T/lint" ] || fail "promtool check metrics complains: $(cat "$T/lint")"
ok "promtool check metrics: clean"

"$CURL" $CURL_OPTS -sf "$URL" >"$T/final" || fail "final scrape failed"
kill "$NE_PID"
wait "$NE_PID" 2>/dev/null || true
grep -q '^node_textfile_scrape_error 0$' "$T/final" || fail "textfile error in the final scrape"
expo_check "$T/final" "$SHM" >/dev/null || fail "malformed metrics served"

# Every (point, stage) of the CSV: the same count in the served _count.
tab=$(printf '\t')
"$CSVCHECK" "$T/out.csv" >"$T/sums" || fail "CSV does not parse"
awk -F'\t' 'NF >= 3 && $1 != "rows" { print $3 }' "$T/sums" >"$T/want"
awk -F'\t' -v t="$tab" 'NF >= 3 && $1 != "rows" {
	m = $2 == "value" ? "perfmond_value_count" : "perfmond_latency_seconds_count"
	print m t "point=" $1 t "stage=" $2 }' "$T/sums" |
	expo_query "$T/final" | awk '{ printf "%.0f\n", $1 }' >"$T/got" ||
	fail "cannot query the scrape"
[ "$(wc -l <"$T/want")" -ge 6 ] || fail "too few CSV rows: $(cat "$T/sums")"
diff "$T/want" "$T/got" >"$T/diff" || fail "CSV counts / served counts: $(cat "$T/diff")"
ok "served counts equal the CSV's for $(wc -l <"$T/want") rows"

drained=$(sed -n 's/.*drained \([0-9]*\).*/\1/p' "$T/sum.txt" | head -n 1)
[ -n "$drained" ] || fail "no drained count in the summary"
expo_query "$T/final" >"$T/got" <<QUERIES || fail "cannot query the scrape"
perfmond_latency_seconds_count${tab}point=alpha${tab}stage=total
perfmond_latency_seconds_count${tab}point=alpha${tab}stage=alpha.s1${tab}kind=latency
perfmond_latency_seconds_bucket${tab}point=alpha${tab}stage=total${tab}le=+Inf
perfmond_latency_quantile_seconds_count${tab}point=beta, "quoted" \ ü${tab}stage=total
perfmond_value_count${tab}point=depth${tab}stage=value${tab}kind=value
perfmond_value_sum${tab}point=depth
perfmond_spans_orphan_total${tab}point=alpha
perfmond_events_drained_total
perfmond_events_dropped_total
perfmond_slots_stalled_total
perfmond_flush_interval_seconds
QUERIES
cat >"$T/want" <<WANT
3000
3000
3000
2000
4000
7998000
0
$drained
0
0
0.10000000000000001
WANT
diff "$T/want" "$T/got" >"$T/diff" || fail "served figures (want/got): $(cat "$T/diff")"
[ "$drained" = 20000 ] || fail "the summary says $drained events drained, want 20000"
ok "exact counts, value sum, anomaly and collector counters"

# _sum is in seconds: it agrees with the CSV's count-weighted means; the
# TSC rate and the flush time are plausible.
python3 - "$T/out.csv" "$T/final" "$start_s" "$end_s" <<'PY' || fail "sums, rate or flush time"
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
text = open(sys.argv[2], encoding="utf-8").read()
def served(name, extra=""):
    m = re.search(r"^%s\{[^\n]*%s[^\n]*\} (\S+)$" % (name, extra), text, re.M)
    if not m:
        sys.exit("no %s %s" % (name, extra))
    return float(m.group(1))
alpha = [r for r in rows if r["point"] == "alpha" and r["stage"] == "total"]
want = sum(float(r["mean_ns"]) * int(r["count"]) for r in alpha) / 1e9
# the CSV rounds each mean to 0.1 ns
slack = sum(int(r["count"]) for r in alpha) * 0.05e-9 + 1e-5 * want
got = served("perfmond_latency_seconds_sum", 'point="alpha",stage="total"')
if not abs(got - want) <= slack:
    sys.exit("alpha total _sum %r s, CSV says %r s" % (got, want))
hz = served("perfmond_tsc_frequency_hertz")
if not abs(hz - float(rows[-1]["tsc_hz"])) <= 1e-3 * hz:
    sys.exit("tsc rate %r, CSV %r" % (hz, rows[-1]["tsc_hz"]))
flush = served("perfmond_last_flush_timestamp_seconds")
if not int(sys.argv[3]) - 1 <= flush <= int(sys.argv[4]) + 1:
    sys.exit("last flush %r outside the run [%s, %s]" % (flush, sys.argv[3], sys.argv[4]))
PY
ok "sums in seconds, TSC rate and flush time"
