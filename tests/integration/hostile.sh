#!/bin/sh
# hostile.sh - a real perfmond under producers that write adversarial
# events and labels (tests/tools/hostile_producer.c): the daemon stays up, its
# counters say exactly what happened where the input allows it, every CSV
# row parses to the header's width, no label adds a row, and nothing a
# producer wrote reaches perfmonctl's output or the summary as a terminal
# escape or an invisible control, and a forged collector status in the
# control block cannot keep the daemon from starting.
. "$top_srcdir/tests/integration/daemon_lib.sh"

HOSTILE="$top_builddir/tests/tools/hostile_producer"
PERFMONCTL="$top_builddir/src/perfmonctl"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to check the output"; exit 77; }

write_conf "$T/h.conf" shm.capacity=262144 shm.max_names=64 \
	collector.stalled_sample_timeout=2s collector.max_open_spans=256 collector.max_stages=64
start_daemon "$T/h.conf"

# status_field NAME: a field of `segtool status` (drained, dropped, ...).
status_field() {
	"$SEGTOOL" status "$SHM" | awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}'
}

# Wait until the reader has passed every reserved index.
drained_all() {
	[ "$(status_field tail)" = "$(status_field head)" ]
}

# Every "expect POINT STAGE COLUMN VALUE" line holds in the CSV.
expectations_hold() {
	"$CSVCHECK" "$T/out.csv" >"$T/sums" 2>/dev/null || return 1
	while read -r _ point stage col want; do
		label=$(awk -v p="$point" '$1 == p {sub(/^[0-9]+ /, ""); print}' "$T/labels")
		# Point 14's label keeps its bidirectional controls in the CSV
		# (valid UTF-8, not control characters): found by a fragment.
		[ "$point" != 14 ] || label=$(awk -F'\t' '$1 ~ /desrever/ {print $1; exit}' "$T/sums")
		got=$(awk -F'\t' -v p="$label" -v s="$stage" -v c="$col" \
			'$1 == p && $2 == s {v += $c; f = 1} END {print f ? v : 0}' "$T/sums")
		[ "$got" = "$want" ] || { echo "point $point ($label) $stage column $col: $got, want $want"; return 1; }
	done <"$T/expect"
}

# --- perfmonctl must never show what a producer wrote raw ------------------
# clean FILE WHAT: valid UTF-8; no C0 control but the newline, no DEL, no
# C1, no bidirectional or zero-width format character.
clean() {
	python3 - "$1" "$2" <<'PY'
import sys, unicodedata
data = open(sys.argv[1], 'rb').read()
try:
    text = data.decode('utf-8')
except UnicodeDecodeError as e:
    sys.exit('%s: invalid UTF-8 at byte %d' % (sys.argv[2], e.start))
for i, ch in enumerate(text):
    o = ord(ch)
    bad = (o < 0x20 and ch != '\n') or o == 0x7f or 0x80 <= o <= 0x9f
    bad = bad or unicodedata.category(ch) == 'Cf'
    if bad:
        sys.exit('%s: character U+%04X at %d: %r' % (sys.argv[2], o, i, text[max(0, i - 20):i + 20]))
PY
}

# ctl_outputs_clean WHEN: perfmonctl status, names and top (every format)
# succeed and show no raw label bytes, whatever was scribbled on the control
# block (the CSV top follows is the collector's, not the control block's).
ctl_outputs_clean() {
	"$PERFMONCTL" status "$SHM" >"$T/status.txt" 2>&1 || fail "$1: perfmonctl status: the collector is not alive"
	clean "$T/status.txt" "perfmonctl status" || fail "$1: perfmonctl status output is not clean"
	for fmt in live md csv; do
		"$PERFMONCTL" names "$SHM" --format $fmt >"$T/names.$fmt" 2>&1 || fail "$1: perfmonctl names --format $fmt"
		clean "$T/names.$fmt" "perfmonctl names --format $fmt" || fail "$1: names --format $fmt is not clean"
		"$PERFMONCTL" top "$SHM" --once --format $fmt >"$T/top.$fmt" 2>&1 ||
			fail "$1: perfmonctl top --once --format $fmt: $(cat "$T/top.$fmt")"
		clean "$T/top.$fmt" "perfmonctl top --format $fmt" || fail "$1: top --format $fmt is not clean"
	done
}

# --- 1. deterministic abuse: exact counters --------------------------------
"$HOSTILE" "$SHM" exact >"$T/exact.out" || fail "hostile_producer exact failed"
grep '^expect ' "$T/exact.out" >"$T/expect"
[ -s "$T/expect" ] || fail "no expectations printed"
wait_for drained_all || fail "the daemon did not drain the exact phase"
# The labels the hostile points carry in the CSV, as the daemon sanitises
# them: every control byte and every byte of an invalid sequence becomes
# '?'.  Point 15 keeps its spaces; "total" is a legal point label; point
# 14's line is a placeholder (expectations_hold finds it by a fragment).
cat >"$T/labels" <<'EOF'
10 orphans,"quoted"??injected,row,0,0
11 ?]0;pwned??[2J?[31mred
12 bad?? utf8 ?? overlong ??? surrogate
13 c1??31m ?? nel
14 desrever isolate
15   spaces  
16 total
17 LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL
EOF
i=0
until msg=$(expectations_hold); do
	i=$((i + 1))
	[ $i -lt 100 ] || { "$CSVCHECK" "$T/out.csv"; fail "exact counters: $msg"; }
	sleep 0.1
done
ok "exact abuse counted: orphans, invalid, abandoned, aliased seqs, extreme timestamps and values"

# Values 0 and 2^64-1 reach the value row as recorded.
python3 - "$T/out.csv" <<'PY' || fail "value extremes"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='', encoding='utf-8')))
vals = [r for r in rows if r['point'].startswith('c1') and r['stage'] == 'value']
assert vals, 'no value row for point 13'
assert min(float(r['min_ns']) for r in vals) == 0, vals
assert max(float(r['max_ns']) for r in vals) > 1.8e19, vals
PY
ok "values 0 and 2^64-1 recorded as they are"
[ -x "$PERFMONCTL" ] || fail "perfmonctl was not built"
ctl_outputs_clean "after the hostile labels"
grep -q 'desrever' "$T/names.live" || fail "perfmonctl names does not show the labels"
ok "perfmonctl status, names and top show the hostile labels without raw bytes"

# --- 2. more points than the tables hold --------------------------------------
before=$(status_field head)
"$HOSTILE" "$SHM" overflow 100 200 >/dev/null || fail "hostile_producer overflow failed"
wait_for drained_all || fail "the daemon did not drain the overflow phase"
# Every one of the 200 spans is either a total row's sample or counted out
# of range (on its point's row or on the overflow row).
overflow_ok() {
	"$CSVCHECK" "$T/out.csv" >"$T/sums" 2>/dev/null || return 1
	got=$(awk -F'\t' '($1 ~ /^point_[0-9]+$/ && substr($1, 7) + 0 >= 100 && substr($1, 7) + 0 < 300 && $2 == "total") {c += $3}
		$1 == "overflow" || ($1 ~ /^point_[0-9]+$/ && substr($1, 7) + 0 >= 100 && substr($1, 7) + 0 < 300) {o += $9}
		END {print c + o}' "$T/sums")
	[ "$got" = 200 ]
}
wait_for overflow_ok || { "$CSVCHECK" "$T/out.csv"; fail "overflow spans not all accounted for"; }
grep -q '^[^,]*,overflow,total,' "$T/out.csv" || fail "no overflow row"
ok "points beyond max_stages: counted in their rows or out of range on the overflow row"

# --- 3. random events through the protocol: exact collector accounting ------
"$HOSTILE" "$SHM" random 12345 200000 >/dev/null &
h1=$!
"$HOSTILE" "$SHM" random 67890 200000 >/dev/null &
h2=$!
wait $h1 || fail "random producer 1 failed"
wait $h2 || fail "random producer 2 failed"
wait_for drained_all || fail "the daemon did not drain the random phase"
# The collector publishes its counters a moment after the read position,
# and an index stepped over as a hole is settled (read, dropped or
# stalled) after the tail has passed it: the sum must reach the head
# exactly, read from one status line, and never pass it.
accounted() {
	set -- $("$SEGTOOL" status "$SHM")
	head=${14} sum=$(( $6 + $8 + ${10} ))
	[ "$sum" -ge "$head" ]
}
wait_for accounted
[ "$sum" = "$head" ] || fail "drained + dropped + stalled = $sum, but $head events were reserved"
kill -0 "$DPID" 2>/dev/null || fail "perfmond died under random events"
ok "400000 random events: drained + dropped + stalled = all $head indices reserved"

# --- 4. raw garbage in the ring and the name table ----------------------------
"$HOSTILE" "$SHM" scribble 4242 3 >/dev/null &
h1=$!
"$HOSTILE" "$SHM" scribble 4343 3 >/dev/null &
h2=$!
"$HOSTILE" "$SHM" random 99 100000 >/dev/null
wait $h1 || fail "scribbler 1 failed"
wait $h2 || fail "scribbler 2 failed"
kill -0 "$DPID" 2>/dev/null || fail "perfmond died under scribbled shared memory"
# Still collecting.  The scribbled head left thousands of indices reserved
# and never published; the reader watches at most RING_MAX_HOLES of them at
# a time, each for stalled_sample_timeout, so it reaches a normal
# producer's events once they have lapped that garbage.  This one writes
# more than two ring lengths on point 16, whose total row exists (random
# points filled the stage table long ago, and the scribblers may have
# renamed any point): spans must be counted again and every index accounted.
totals() {
	"$CSVCHECK" "$T/out.csv" | awk -F'\t' '$2 == "total" {s += $3} END {print s + 0}'
}
base=$(totals)
"$PRODUCER" "$SHM" 16 300000 >/dev/null || fail "a normal producer failed"
wait_for drained_all || fail "the reader does not catch up with the head after the scribbling"
wait_for sh -c "[ \$('$CSVCHECK' '$T/out.csv' | awk -F'\t' '\$2 == \"total\" {s += \$3} END {print s + 0}') -gt $((base + 10000)) ]" \
	|| fail "the daemon stopped collecting after the scribbling"
ok "scribbled ring, head and name table: the daemon is up and still collecting"
ctl_outputs_clean "after the scribbling"
ok "perfmonctl status, names and top after the scribbling: no raw bytes"

stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS after the hostile producers"

# --- 6. the files ---------------------------------------------------------------
"$CSVCHECK" "$T/out.csv" >/dev/null || fail "the CSV does not parse strictly to the header's width"
python3 - "$T/out.csv" <<'PY' || fail "the CSV has a row spread over lines or a control character"
import csv, sys
data = open(sys.argv[1], 'rb').read()
text = data.decode('utf-8')
rows = list(csv.reader(text.splitlines(True)))
lines = text.count('\n')
assert text.endswith('\n'), 'torn last row'
assert len(rows) == lines, 'rows %d, lines %d: a label spans lines' % (len(rows), lines)
width = len(rows[0])
for r in rows:
    assert len(r) == width, r
    for f in r:
        assert not any(ord(c) < 0x20 or ord(c) == 0x7f or 0x80 <= ord(c) <= 0x9f for c in f), repr(f)
print('csv: %d rows' % (len(rows) - 1))
PY
clean "$T/sum.txt" "summary" || fail "the summary holds raw label bytes"
for fmt in live md csv; do
	"$PERFMONCTL" report "$T/out.csv" --format $fmt >"$T/report.$fmt" 2>&1 || fail "perfmonctl report --format $fmt"
	clean "$T/report.$fmt" "perfmonctl report --format $fmt" || fail "report --format $fmt is not clean"
done
python3 - "$T/report.csv" <<'PY' || fail "perfmonctl report --format csv does not parse"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='', encoding='utf-8')))
assert all(len(r) == len(rows[0]) for r in rows), 'ragged rows'
PY
ok "CSV, summary and perfmonctl report: every row whole, no raw label bytes"

# --- 7. a forged collector status does not keep the daemon from restarting ----
# Any producer can write the control block.  Claiming that another process
# (here init, always alive) is collecting must not lock the real daemon out.
"$HOSTILE" "$SHM" claim 1 || fail "hostile_producer claim failed"
"$PERFMOND" "$T/h.conf" >>"$T/daemon.out" 2>>"$T/daemon.err" &
DPID=$!
wait_for sh -c "[ \"\$('$SEGTOOL' status '$SHM' | awk '{print \$2, \$4}')\" = '1 $DPID' ]" ||
	fail "a producer's forged collector status (pid 1, running) keeps perfmond from starting"
stop_daemon TERM
[ "$DSTATUS" = 0 ] || fail "perfmond exited $DSTATUS after a forged collector status"
ok "a forged collector status in the control block does not lock perfmond out"
