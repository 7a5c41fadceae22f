#!/bin/sh
# ctl_capture_hostile.sh - perfmonctl dump and export of captures nobody
# trusts: labels with escapes, newlines, quotes, invalid UTF-8 and line
# separators come out escaped (tables clean them, JSON escapes them, no raw
# control byte reaches the output); hostile events (orphans, re-begins,
# time going back, extreme seqs and values, a second ring) get the right
# outcome, in a version 2 capture and a version 1 one; corrupt, empty, truncated and missing files are refused with
# exit 4 and a message, a capture cut short is decoded with a warning.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
CTL="$top_builddir/src/perfmonctl"
T=$(mktemp -d "${TMPDIR:-/tmp}/pmcap.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

python3 - "$T" <<'PY'
import struct, sys
d = sys.argv[1]
def name(point, step, label):
    return struct.pack('<IBB', point, step, len(label)) + label
names = [
    name(1, 0, b'a\x1b[31mred\n"q",</script>\xff\xfe'),
    name(1, 1, b'\xe2\x80\xa8sep\x07'),
    name(1, 2, b'total'),                 # a reserved label: never a stage's
    name(2, 0, b'tab\there\rcr'),
]
def ev(tsc, point, step, seq, ring=0):
    return struct.pack('<QIIHH', tsc, point, (seq << 8) | step, ring, 0)
events = [
    ev(1000, 1, 0, 5), ev(1100, 1, 1, 5), ev(1300, 1, 2, 5), ev(1600, 1, 255, 5),  # paired
    ev(1700, 3, 1, 0xFFFFFF),                                  # orphan, largest seq
    ev(2**64 - 1, 2, 0xFE, 0),                                 # value, largest
    ev(1800, 1, 0, 6), ev(1900, 1, 0, 6), ev(2000, 1, 255, 6), # abandoned, then paired
    ev(2100, 1, 0, 7), ev(2050, 1, 0xFD, 7, ring=1),           # another ring, earlier:
                                                               # an orphan, the begin open
    ev(2200, 4, 0, 8),                                         # open at the end
]
# version 2: the daemon's settings, an age sweep of 400 ticks and flushes
# of 100: a span begun before the start is swept by 1500
def header(nnames, rings=2, version=2):
    fixed = struct.pack('<IIQQQIII', version, 64 if version == 1 else 128, 2_000_000_000_000,
                        1000, 1_700_000_000_000_000_000, nnames, 1, rings)
    if version == 1:
        return b'PMCAPTUR' + fixed + b'\0' * 12
    return (b'PMCAPTUR' + fixed + struct.pack('<IIIQQQ', 4096, 1024, 0, 400, 100, 0) +
            b'\0' * 40)
trailer = b'PMCAPEND' + struct.pack('<QQQQQII', len(events), 2, 1, 4, 2300, 1, 0) + b'\0' * 8
body = header(len(names)) + b''.join(names) + b''.join(events)
open(f'{d}/hostile', 'wb').write(body + trailer)
open(f'{d}/hostile_v1', 'wb').write(header(len(names), version=1) + b''.join(names) +
                                    b''.join(events) + trailer)
open(f'{d}/cut', 'wb').write(body[:-7])
open(f'{d}/empty', 'wb').write(b'')
open(f'{d}/notcap', 'wb').write(b'timestamp,point,stage\n' * 10)
bad = bytearray(body + trailer); bad[-64 + 8] = 99          # trailer counts 99 events
open(f'{d}/badcount', 'wb').write(bad)
bad = bytearray(body + trailer); bad[128 + 5] = 200          # a label longer than the file
open(f'{d}/badname', 'wb').write(bad)
bad = bytearray(body + trailer); bad[8] = 7                  # unknown version
open(f'{d}/badversion', 'wb').write(bad)
PY

for f in live md csv json; do
	"$CTL" dump "$T/hostile" --format $f >"$T/out.$f" 2>"$T/err.$f" || fail "dump --format $f"
done
"$CTL" export "$T/hostile" --format chrome -o "$T/trace.json" >/dev/null || fail "export"
"$CTL" dump "$T/hostile_v1" --format csv >"$T/v1.csv" || fail "dump of a version 1 capture"
python3 - "$T" <<'PY' || fail "hostile capture not escaped or misread"
import csv, json, sys
d = sys.argv[1]
for f in ('out.live', 'out.md', 'out.csv', 'out.json', 'trace.json'):
    raw = open(f'{d}/{f}', 'rb').read()
    bad = [b for b in raw if (b < 0x20 and b not in (0x0a,)) or b == 0x7f]
    assert not bad, (f, 'raw control bytes', bad[:5])
    assert '\u2028'.encode() not in raw, (f, 'raw line separator')
    raw.decode('utf-8')                      # valid UTF-8 throughout
rows = list(csv.reader(open(f'{d}/out.csv', newline='', encoding='utf-8')))
assert len(rows) == 13, len(rows)
for r in rows:
    assert len(r) == len(rows[0]) and all('\n' not in x for x in r), r
outcome = [r[6] for r in rows[1:]]
# spans in timestamp order across the rings, as the daemon merges them
assert outcome == ['begin', 'paired', 'paired', 'paired', 'orphan', 'value', 'abandoned',
                   'begin', 'paired', 'orphan', 'open', 'open'], outcome
doc = json.load(open(f'{d}/out.json', encoding='utf-8'))
ev = doc['events']
assert doc['capture']['lost'] == 3 and doc['capture']['dropped'] == 4, doc['capture']
assert doc['capture']['rings'] == 2 and ev[9]['ring'] == 1 and ev[9]['time_ns'] < ev[10]['time_ns']
assert ev[0]['label'] == 'a\x1b[31mred\n"q",</script>\ufffd\ufffd', ev[0]['label']
assert ev[1]['stage'] == '\u2028sep\x07', ev[1]['stage']
assert ev[2]['stage'] == 'step_1->2', ev[2]['stage']       # 'total' is reserved
assert ev[3]['stage'] == 'step_2->255' and abs(ev[3]['total_ns'] - 300) < 1e-6, ev[3]
assert ev[1]['duration_ns'] == 50 and ev[1]['time_ns'] == 1_700_000_000_000_000_050
assert ev[4]['seq'] == 0xFFFFFF and ev[4]['outcome'] == 'orphan'
assert ev[5]['value'] == 2**64 - 1 and 'time_ns' not in ev[5]
assert ev[8]['stage'] == 'total' and ev[8]['duration_ns'] == 50
# a version 1 capture has no settings: with no sweep known, a step or end
# with no begin may be of a span begun before the recording
rows = list(csv.reader(open(f'{d}/v1.csv', newline='', encoding='utf-8')))
assert [r[6] for r in rows[1:]] == [x if x != 'orphan' else 'before_start'
                                    for x in outcome], rows
tr = json.load(open(f'{d}/trace.json', encoding='utf-8'))
x = [e for e in tr['traceEvents'] if e['ph'] == 'X']
assert sorted((e['name'], e['args']['seq']) for e in x) == sorted([
    ('\u2028sep\x07', 5), ('step_1->2', 5), ('step_2->255', 5), ('total', 5), ('total', 6)]), x
c = [e for e in tr['traceEvents'] if e['ph'] == 'C']
assert c[0]['args']['value'] == 2**64 - 1 and c[0]['name'] == 'tab\there\rcr'
PY
ok "hostile labels and events: escaped in every format, outcomes right"

"$CTL" dump "$T/cut" --format csv >"$T/cut.csv" 2>"$T/cut.err" || fail "a cut-short capture was refused"
grep -q 'cut short; 11 whole events decoded, a cut last record ignored' "$T/cut.err" ||
	{ cat "$T/cut.err"; fail "no warning for a cut-short capture"; }
[ "$(wc -l < "$T/cut.csv")" = 12 ] || fail "cut-short capture: rows"
ok "a capture cut short is decoded up to its last whole event, with a warning"

refused() {
	rc=0
	if [ "$1" = export ]; then set -- "$@" -o "$T/x.json"; else set -- "$@"; fi
	"$CTL" "$1" "$T/$2" --format "$3" ${5:+"$5"} ${6:+"$6"} >"$T/r.out" 2>"$T/r.err" || rc=$?
	[ $rc = 4 ] || fail "$1 $2: exit $rc, not 4"
	grep -q "$4" "$T/r.err" || { cat "$T/r.err"; fail "$1 $2: message lacks '$4'"; }
	[ ! -e "$T/x.json" ] || fail "$1 $2 left a file"
}
for cmd in dump export; do
	[ $cmd = dump ] && fmt=json || fmt=chrome
	refused $cmd empty $fmt 'not a perfmond capture'
	refused $cmd notcap $fmt 'not a perfmond capture'
	refused $cmd badcount $fmt 'corrupt capture: the trailer counts 99 events'
	refused $cmd badname $fmt 'corrupt capture: name 1 has length 200 at offset 133'
	refused $cmd badversion $fmt 'version 7'
	refused $cmd missing $fmt 'No such file'
done
rc=0; "$CTL" dump "$T" >/dev/null 2>&1 || rc=$?
[ $rc = 4 ] || fail "dump of a directory: exit $rc"
rc=0; "$CTL" export "$T/hostile" --format json -o "$T/x.json" >/dev/null 2>&1 || rc=$?
[ $rc = 1 ] || fail "export --format json: exit $rc"
ok "corrupt, empty, foreign and missing captures refused with exit 4"
