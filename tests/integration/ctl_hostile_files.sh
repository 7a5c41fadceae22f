#!/bin/sh
# ctl_hostile_files.sh - perfmonctl's file inputs (CSV, outliers file,
# capture) refuse what is not a regular file instead of hanging on it (a
# FIFO nobody writes) or reading it forever (a symbolic link to
# /dev/zero), and refuse a field longer than any perfmond CSV has instead
# of buffering it whole.
. "$top_srcdir/tests/integration/daemon_lib.sh"
CTL="$top_builddir/src/perfmonctl"
command -v timeout >/dev/null 2>&1 || { echo "SKIP: timeout (coreutils) not found"; exit 77; }

mkfifo "$T/fifo.csv"
ln -s /dev/zero "$T/zero.csv"
printf 'timestamp,point,stage,kind,count\n' >"$T/good.csv"

# expect_refused NAME CMD...: a quick non-zero exit saying why.
expect_refused() {
	what=$1; shift
	st=0
	timeout 20 "$@" >"$T/out" 2>"$T/err" </dev/null || st=$?
	[ $st != 124 ] || fail "$what: hung"
	[ $st != 0 ] || fail "$what: accepted"
	grep -q "not a regular file" "$T/err" || fail "$what: $(cat "$T/err")"
}
for f in fifo zero; do
	expect_refused "report $f" "$CTL" report "$T/$f.csv"
	expect_refused "plot $f" "$CTL" plot "$T/$f.csv" -o "$T/x.svg"
	expect_refused "compare $f" "$CTL" compare "$T/$f.csv" "$T/good.csv"
	expect_refused "top $f" "$CTL" top --once --csv "$T/$f.csv"
done
ok "report, plot, compare and top refuse a FIFO and a link to /dev/zero"

# report --outliers reads STEM_outliers.csv; dump and export a capture.
mkfifo "$T/fifo_outliers.csv" "$T/fifo.pmcap"
ln -s /dev/zero "$T/zero_outliers.csv"
ln -s /dev/zero "$T/zero.pmcap"
for f in fifo zero; do
	expect_refused "report --outliers $f" "$CTL" report "$T/$f.csv" --outliers
	expect_refused "dump $f" "$CTL" dump "$T/$f.pmcap"
	expect_refused "export $f" "$CTL" export "$T/$f.pmcap" --format chrome -o "$T/x.json"
done
[ ! -e "$T/x.json" ] || fail "a refused export left its trace"
ok "report --outliers, dump and export refuse a FIFO and a link to /dev/zero"

# A 4 MiB field: refused by length, not buffered and then misread.
{ head -1 "$top_srcdir/tests/data/ctl/report.csv"; printf '2026-01-01T00:00:00.000Z,"'
  head -c 4194304 /dev/zero | tr '\0' 'x'; echo '",total'; } >"$T/long.csv"
st=0
"$CTL" report "$T/long.csv" >"$T/out" 2>"$T/err" || st=$?
[ $st = 4 ] || fail "a 4 MiB field: exit $st: $(cat "$T/err")"
grep -q "a field longer than 65536 bytes" "$T/err" || fail "a 4 MiB field: $(cat "$T/err")"
ok "a field longer than 64 KiB is refused (exit 4)"

{ echo 'timestamp,point,stage,rank,seq,start,duration_ns'; printf '2026-01-01 00:00:00.000,"'
  head -c 4194304 /dev/zero | tr '\0' 'x'; echo '",total,1,1,2026-01-01 00:00:00.000000000,5'
} >"$T/long_outliers.csv"
st=0
timeout 20 "$CTL" report "$T/long.csv" --outliers >"$T/out" 2>"$T/err" || st=$?
[ $st = 4 ] || fail "a 4 MiB field in the outliers file: exit $st: $(cat "$T/err")"
grep -q "a field longer than 65536 bytes" "$T/err" || fail "outliers, 4 MiB field: $(cat "$T/err")"
[ ! -s "$T/out" ] || fail "outliers, 4 MiB field: printed $(wc -c <"$T/out") bytes"
ok "a field longer than 64 KiB in the outliers file is refused (exit 4)"

# A seq that is not a number (JSON says seq is an integer).
printf 'timestamp,point,stage,rank,seq,start,duration_ns\n2026-01-01 00:00:00.000,p,total,1,x1,2026-01-01 00:00:00.000000000,5\n' \
	>"$T/seq_outliers.csv"
st=0
"$CTL" report "$T/seq.csv" --outliers --format json >"$T/out" 2>"$T/err" || st=$?
[ $st = 4 ] && grep -q "line 2: seq is not a number" "$T/err" || fail "seq x1: exit $st: $(cat "$T/err")"
ok "an outliers file whose seq is not a number is refused (exit 4)"
