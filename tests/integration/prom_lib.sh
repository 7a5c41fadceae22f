# prom_lib.sh - sourced by the Prometheus shell tests after daemon_lib.sh:
# finds promtool and node_exporter, and parses the text exposition.
#
# The tools are required: CI installs them (Debian packages `prometheus`,
# which provides promtool, `prometheus-node-exporter` and `curl`), so a
# missing one is a hard error, not a skip.  A developer without them can set
# PERFMOND_SKIP_PROMETHEUS=1 to skip these tests knowingly.

# need_tool VAR CANDIDATE... : set VAR to the first command found.
need_tool() {
	var=$1
	shift
	eval "found=\${$var:-}"
	if [ -z "$found" ]; then
		for c in "$@"; do
			if command -v "$c" >/dev/null 2>&1; then
				found=$(command -v "$c")
				break
			fi
		done
	fi
	if [ -z "$found" ]; then
		if [ "${PERFMOND_SKIP_PROMETHEUS:-}" = 1 ]; then
			echo "SKIP: $* not installed (PERFMOND_SKIP_PROMETHEUS=1)"
			exit 77
		fi
		echo "ERROR: none of '$*' is installed: apt-get install prometheus curl" \
			"prometheus-node-exporter (or set PERFMOND_SKIP_PROMETHEUS=1 to skip)"
		exit 99
	fi
	eval "$var=\$found"
}

# free_port : print a TCP port on 127.0.0.1 that was free a moment ago
# (callers retry when they lose the race for it).
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_node_exporter DIR LOG : a node_exporter serving the textfiles of
# DIR, textfile collector only, on 127.0.0.1 only; sets NE_PID and NE_PORT
# (empty NE_PID when it did not come up; LOG says why).  Needs CURL,
# CURL_OPTS, NODE_EXPORTER and daemon_lib.sh's wait_for and PIDS.
start_node_exporter() {
	NE_PID=
	for attempt in 1 2 3; do
		NE_PORT=$(free_port)
		"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$NE_PORT" \
			--collector.disable-defaults --collector.textfile \
			--collector.textfile.directory="$1" --web.disable-exporter-metrics \
			>"$2" 2>&1 &
		NE_PID=$!
		PIDS="$PIDS $NE_PID"
		if wait_for "$CURL" $CURL_OPTS -sf -o /dev/null "http://127.0.0.1:$NE_PORT/metrics"; then
			return 0
		fi
		kill "$NE_PID" 2>/dev/null || true
		NE_PID=
	done
}

# expo_query FILE < QUERIES : print the value of each query line, one per
# line ("missing" when no series matches).  A query is a metric name and
# label=value pairs separated by tabs; labels not named are ignored, and
# more than one match is an error.  Values are printed as parsed floats
# ("%.17g") so "1e+09" and "1000000000" compare equal.
expo_query() {
	python3 -c "$EXPO_PY" query "$1"
}

# expo_check FILE INSTANCE : the perfmond_ series of FILE are well formed:
# every one carries perfmond_instance=INSTANCE; each histogram's buckets are
# cumulative, end with +Inf and +Inf equals _count; no label set repeats.
expo_check() {
	python3 -c "$EXPO_PY" check "$1" "$2"
}

EXPO_PY=$(cat <<'PY'
import re, sys

LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')
LINE = re.compile(r'([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')

def unescape(v):
    return re.sub(r'\\(.)', lambda e: '\n' if e.group(1) == 'n' else e.group(1), v)

def parse(text):
    out = []
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        m = LINE.match(line)
        if not m:
            sys.exit('unparsable line: %r' % line)
        labels, rest = {}, m.group(2) or ''
        while rest:
            lm = LABEL.match(rest)
            if not lm:
                sys.exit('bad labels: %r' % line)
            labels[lm.group(1)] = unescape(lm.group(2))
            rest = rest[lm.end():]
        out.append((m.group(1), labels, float(m.group(3))))
    return out

def query(series):
    for q in sys.stdin.read().splitlines():
        parts = q.split('\t')
        want = dict(p.split('=', 1) for p in parts[1:])
        hits = [v for n, l, v in series
                if n == parts[0] and all(l.get(k) == w for k, w in want.items())]
        if len(hits) > 1:
            sys.exit('%d series match %r' % (len(hits), q))
        print('%.17g' % hits[0] if hits else 'missing')

def check(series, instance):
    seen, hists, counts = set(), {}, {}
    for n, l, v in series:
        if not n.startswith('perfmond_'):
            continue
        if l.get('perfmond_instance') != instance:
            sys.exit('%s %r: perfmond_instance is not %r' % (n, l, instance))
        key = (n, tuple(sorted(l.items())))
        if key in seen:
            sys.exit('repeated series %s %r' % key)
        seen.add(key)
        rest = tuple(sorted((k, x) for k, x in l.items() if k != 'le'))
        if n == 'perfmond_latency_seconds_bucket':
            hists.setdefault(rest, []).append((float(l['le']), v))
        elif n == 'perfmond_latency_seconds_count':
            counts[rest] = v
    if not hists:
        sys.exit('no histogram at all')
    for k, b in hists.items():
        b.sort()
        if b[-1][0] != float('inf') or b[-1][1] != counts.get(k):
            sys.exit('%r: +Inf bucket %r, _count %r' % (k, b[-1], counts.get(k)))
        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            sys.exit('%r: buckets not cumulative: %r' % (k, b))
    print('%d series, %d histograms' % (len(seen), len(hists)))

series = parse(open(sys.argv[2], encoding='utf-8').read())
if sys.argv[1] == 'query':
    query(series)
else:
    check(series, sys.argv[3])
PY
)
