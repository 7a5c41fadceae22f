#!/bin/sh
# prom_promtool.sh - promtool on everything the Prometheus side ships: an
# exposition written by the real pairing/report/prom_out code (promgen:
# synthetic events, awkward labels, a label collision, values, anomalies)
# must pass `promtool check metrics` and read back with the right values;
# docs/prometheus must pass `check config`, `check rules` and its own rule
# unit tests (`test rules`).  Bad inputs prove each check can fail.
. "$top_srcdir/tests/integration/daemon_lib.sh"
. "$top_srcdir/tests/integration/prom_lib.sh"
need_tool PROMTOOL promtool
PROMGEN="$top_builddir/tests/tools/promgen"
RULES="$top_srcdir/docs/prometheus"

"$PROMGEN" "$T/gen.prom" || fail "promgen could not write its exposition"
"$PROMTOOL" check metrics <"$T/gen.prom" >"$T/lint" 2>&1 ||
	fail "promtool check metrics: $(cat "$T/lint")"
[ ! -s "$T/lint" ] || fail "promtool check metrics complains: $(cat "$T/lint")"
printf '# HELP perfmond_bad A counter without the suffix.\n# TYPE perfmond_bad counter\nperfmond_bad 1\n' \
	>"$T/bad.prom"
if "$PROMTOOL" check metrics <"$T/bad.prom" >/dev/null 2>&1; then
	fail "promtool check metrics accepts anything: the check above proves nothing"
fi
ok "promtool check metrics: clean"
expo_check "$T/gen.prom" promgen >/dev/null || fail "malformed exposition"

# Figures promgen's events imply (see tests/tools/promgen.c); a tab separates
# the fields of a query.
quote='quote " back \ comma, space ü 日本'
tab=$(printf '\t')
expo_query "$T/gen.prom" >"$T/got" <<QUERIES || fail "cannot parse the exposition"
perfmond_latency_seconds_count${tab}point=alpha#1${tab}stage=total
perfmond_latency_seconds_bucket${tab}point=alpha#1${tab}stage=total${tab}le=+Inf
perfmond_latency_seconds_bucket${tab}point=alpha#1${tab}stage=alpha.s1${tab}le=0.000000128
perfmond_latency_seconds_bucket${tab}point=alpha#1${tab}stage=step_2->255${tab}le=0.000001024
perfmond_latency_seconds_sum${tab}point=alpha#1${tab}stage=step_1->2
perfmond_latency_quantile_seconds${tab}point=alpha#1${tab}stage=step_1->2${tab}quantile=0.999
perfmond_latency_seconds_count${tab}point=${quote}${tab}stage=total${tab}kind=latency
perfmond_latency_seconds_count${tab}point=alpha#4${tab}stage=total
perfmond_value_count${tab}point=depth${tab}stage=value${tab}kind=value
perfmond_value_sum${tab}point=depth
perfmond_value${tab}point=depth${tab}quantile=0.5
perfmond_spans_orphan_total${tab}point=orphans
perfmond_spans_orphan_total${tab}point=alpha#1
perfmond_events_dropped_total${tab}perfmond_instance=promgen
perfmond_slots_stalled_total
perfmond_events_misordered_total
perfmond_last_flush_timestamp_seconds
perfmond_latency_seconds_bucket${tab}point=depth
QUERIES
# 560: samples 100..127 of alpha.s1 (20 each); 24: 1000..1023, the bucket
# holding 1024 straddles the bound and is left out; depth has no histogram.
cat >"$T/want" <<WANT
1000
1000
560
24
0.001
9.9999999999999995e-07
500
10
1000
50500
51
7
0
3
2
4
1700000000.25
missing
WANT
diff "$T/want" "$T/got" >"$T/diff" || fail "exposition values (want/got): $(cat "$T/diff")"
ok "values, escaped labels and the collision suffix read back"

"$PROMTOOL" check config "$RULES/prometheus.yml" >"$T/out" 2>&1 ||
	fail "promtool check config: $(cat "$T/out")"
for f in perfmond-recording.yml perfmond-alerts.yml; do
	"$PROMTOOL" check rules "$RULES/$f" >"$T/out" 2>&1 ||
		fail "promtool check rules $f: $(cat "$T/out")"
done
printf 'groups:\n  - name: bad\n    rules:\n      - record: x:y:z\n        expr: rate(x[5m]\n' \
	>"$T/bad-rules.yml"
if "$PROMTOOL" check rules "$T/bad-rules.yml" >/dev/null 2>&1; then
	fail "promtool check rules accepts a broken expression"
fi
ok "promtool check config and check rules: clean"

"$PROMTOOL" test rules "$RULES/perfmond-rules.test.yml" >"$T/out" 2>&1 ||
	fail "promtool test rules: $(cat "$T/out")"
ok "rule unit tests pass (p99 across hosts, drops, stalls, staleness, regressions)"
