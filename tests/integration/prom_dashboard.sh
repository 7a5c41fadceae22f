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
	"$PROMETHEUS" --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
		--web.listen-address="127.0.0.1:$port" --log.level=warn >"$T/prom.log" 2>&1 &
	PROM_PID=$!
	PIDS="$PIDS $PROM_PID"
	# Up to 20 s: a loaded machine starts the TSDB slowly.
	if wait_for "$CURL" $CURL_OPTS -sf -o /dev/null "http://127.0.0.1:$port/-/ready" ||
	   wait_for "$CURL" $CURL_OPTS -sf -o /dev/null "http://127.0.0.1:$port/-/ready"; then
		break
	fi
	kill "$PROM_PID" 2>/dev/null || true
	PROM_PID=
done
[ -n "$PROM_PID" ] || fail "prometheus did not start: $(cat "$T/prom.log")"
PROM_URL="http://127.0.0.1:$port"
ok "prometheus on $PROM_URL scrapes node_exporter on $HOST"

# Traffic for the whole evaluation: two points, one with steps.
"$PRODUCER" "$SHM" 1 100 --steps --label alpha --seconds 40 --pause-us 5000 >/dev/null &
PIDS="$PIDS $!"
"$PRODUCER" "$SHM" 2 100 --label beta --seconds 40 --pause-us 5000 >/dev/null &
PIDS="$PIDS $!"

python3 "$top_srcdir/tests/integration/prom_dashboard.py" "$PROM_URL" "$HOST" "$SHM" \
	"$top_srcdir/docs/grafana/perfmond.json" "$top_srcdir/docs/prometheus" "$T/out.csv" ||
	fail "the dashboard or the rules do not hold against the live server"

kill "$PROM_PID" "$NE_PID"
wait "$PROM_PID" "$NE_PID" 2>/dev/null || true
ok "every panel and rule evaluated"
