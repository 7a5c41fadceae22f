#!/bin/sh
# prom_dashboard.sh - the Grafana dashboard and the rules of docs/ against
# a live Prometheus: a real perfmond writes its textfile while producers
# stamp, a real node_exporter serves it, and a real Prometheus server
# scrapes it every second and evaluates docs/prometheus's recording and
# alert rules.  After two scrapes with traffic, tests/integration/prom_dashboard.py
# evaluates every variable and every panel query of
# docs/grafana/perfmond.json (variables substituted, once with "All" and
# once with one value each) and every rule through the HTTP API, and checks
# labels and values against the daemon's own CSV.  Everything listens on
# 127.0.0.1 only; every wait is bounded; everything started is stopped.
. "$top_srcdir/tests/integration/daemon_lib.sh"
. "$top_srcdir/tests/integration/prom_lib.sh"
need_tool PROMETHEUS prometheus
need_tool NODE_EXPORTER prometheus-node-exporter node_exporter
need_tool CURL curl
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is needed to read the rule files"
# Loopback only, whatever proxy the environment names.
CURL_OPTS="--noproxy 127.0.0.1"
export NO_PROXY=127.0.0.1 no_proxy=127.0.0.1

mkdir "$T/textfile"
cat >"$T/perfmond.conf" <<CONF
[shm]
name = $SHM
capacity = 262144
[collector]
flush_interval = 200ms
[output]
csv = $T/out.csv
summary = $T/sum.txt
[prometheus]
textfile = $T/textfile/perfmond_$SHM.prom
CONF
start_daemon "$T/perfmond.conf"
wait_for test -s "$T/textfile/perfmond_$SHM.prom" || fail "no textfile after 10 s"

start_node_exporter "$T/textfile" "$T/ne.log"
[ -n "$NE_PID" ] || fail "node_exporter did not start: $(cat "$T/ne.log")"
HOST="127.0.0.1:$NE_PORT"

# Traffic for the whole run, started well before Prometheus.  rate()
# extrapolates each series toward the start of its window, but never past
# the time its counter would take to fall to zero at the window's rate;
# when that time is under 1.1 scrape intervals it is used as it is, and
# then differs between a histogram's _sum and _count, whose ratio (the
# mean the rules record) is no longer exact.  So the first scrape must find
# several scrape intervals' worth of steady traffic already counted.  Long
# enough for Prometheus to start (three attempts of 20 s at most), the
# wait for two scrapes (60 s at most) and the evaluation; stopped at the
# end.
"$PRODUCER" "$SHM" 1 100 --steps --label alpha --seconds 150 --pause-us 5000 >/dev/null &
PRODUCERS=$!
"$PRODUCER" "$SHM" 2 100 --label beta --seconds 150 --pause-us 5000 >/dev/null &
PRODUCERS="$PRODUCERS $!"
PIDS="$PIDS $PRODUCERS"
# Five seconds of both in the CSV (flushes every 200 ms) before the server.
wait_for sh -c "[ \$(grep -c ',alpha,total,latency,' '$T/out.csv') -ge 25 ] &&
	[ \$(grep -c ',beta,total,latency,' '$T/out.csv') -ge 25 ]" ||
	fail "the producers' traffic did not reach the CSV"

# The server: one job as in docs/prometheus/prometheus.yml, scraping and
# evaluating every second, with the rule files of the repository.
cat >"$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $top_srcdir/docs/prometheus/perfmond-recording.yml
  - $top_srcdir/docs/prometheus/perfmond-alerts.yml
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['$HOST']
YML
PROM_PID=
for attempt in 1 2 3; do
	port=$(free_port)
	# A fresh database each attempt: nothing of a server that did not come
	# up (its lock, half-written blocks) is left for the next one.
	"$PROMETHEUS" --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb$attempt" \
		--web.listen-address="127.0.0.1:$port" --log.level=warn >"$T/prom.log" 2>&1 &
	PROM_PID=$!
	PIDS="$PIDS $PROM_PID"
	# Up to 20 s: a loaded machine starts the TSDB slowly.
	if wait_for "$CURL" $CURL_OPTS -sf -o /dev/null "http://127.0.0.1:$port/-/ready" ||
	   wait_for "$CURL" $CURL_OPTS -sf -o /dev/null "http://127.0.0.1:$port/-/ready"; then
		break
	fi
	kill "$PROM_PID" 2>/dev/null || true
	wait "$PROM_PID" 2>/dev/null || true
	PROM_PID=
done
[ -n "$PROM_PID" ] || fail "prometheus did not start: $(cat "$T/prom.log")"
PROM_URL="http://127.0.0.1:$port"
ok "prometheus on $PROM_URL scrapes node_exporter on $HOST"

python3 "$top_srcdir/tests/integration/prom_dashboard.py" "$PROM_URL" "$HOST" "$SHM" \
	"$top_srcdir/docs/grafana/perfmond.json" "$top_srcdir/docs/prometheus" "$T/out.csv" ||
	fail "the dashboard or the rules do not hold against the live server"

# shellcheck disable=SC2086
kill "$PROM_PID" "$NE_PID" $PRODUCERS 2>/dev/null || true
# shellcheck disable=SC2086
wait "$PROM_PID" "$NE_PID" $PRODUCERS 2>/dev/null || true
ok "every panel and rule evaluated"
