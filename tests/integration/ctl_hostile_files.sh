#!/bin/sh
# ctl_hostile_files.sh - perfmonctl's file inputs refuse what is not a
# regular file instead of hanging on it (a FIFO nobody writes) or reading
# it forever (a symbolic link to /dev/zero), and refuse a field longer
# than any perfmond CSV has instead of buffering it whole.
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

# A 4 MiB field: refused by length, not buffered and then misread.
{ head -1 "$top_srcdir/tests/data/ctl/report.csv"; printf '2026-01-01T00:00:00.000Z,"'
  head -c 4194304 /dev/zero | tr '\0' 'x'; echo '",total'; } >"$T/long.csv"
st=0
"$CTL" report "$T/long.csv" >"$T/out" 2>"$T/err" || st=$?
[ $st = 4 ] || fail "a 4 MiB field: exit $st: $(cat "$T/err")"
grep -q "a field longer than 65536 bytes" "$T/err" || fail "a 4 MiB field: $(cat "$T/err")"
ok "a field longer than 64 KiB is refused (exit 4)"
