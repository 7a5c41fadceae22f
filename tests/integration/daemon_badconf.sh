#!/bin/sh
# daemon_badconf.sh - each bad configuration exits 78 with FILE:LINE and the
# key in the message, creating no segment and no file; a bad command line
# exits 64.
. "$top_srcdir/tests/integration/daemon_lib.sh"

n=0
check() {   # check LINE TEXT: config whose line LINE is bad
	n=$((n + 1))
	f="$T/bad$n.conf"
	printf '%b' "$2" >"$f"
	status=0
	"$PERFMOND" "$f" >/dev/null 2>"$T/err" || status=$?
	[ "$status" = 78 ] || fail "case $n: exit $status, expected 78: $(cat "$T/err")"
	grep -q "$f:$1" "$T/err" || fail "case $n: no $f:$1 in: $(cat "$T/err")"
	[ ! -e "/dev/shm/$SHM" ] && [ ! -e "$T/out.csv" ] || fail "case $n: created something"
}
base="[shm]\nname = $SHM\n[output]\ncsv = $T/out.csv\nsummary = $T/sum.txt\n"
check 6 "$base[nosuch]\n"
check 7 "$base[collector]\nbogus = 1\n"
check 2 "[shm]\ncapacity = 1000\n"
check 2 "[output]\npercentiles = 50, 101\n"
check 2 "[output]\npercentiles = nan\n"
check 2 "[collector]\nflush_interval = 10\n"
check 2 "[collector]\nlock_memory = perhaps\n"
check 2 "[output]\nunit = seconds\n"
check 3 "[shm]\nname = $SHM\nname = other\n"
ok "$n bad configurations refused with FILE:LINE, nothing created"

status=0
"$PERFMOND" "$T/missing.conf" 2>"$T/err" || status=$?
[ "$status" = 78 ] && grep -q missing.conf "$T/err" || fail "unreadable file: exit $status"
status=0
"$PERFMOND" --capacity 1000 2>"$T/err" || status=$?
[ "$status" = 64 ] || fail "bad option value: exit $status, expected 64"
status=0
"$PERFMOND" --no-such-option 2>"$T/err" || status=$?
[ "$status" = 64 ] || fail "unknown option: exit $status"
status=0
"$PERFMOND" --shm "$SHM" --csv '' --summary '' --cpu 1023 2>"$T/err" || status=$?
[ "$status" = 78 ] && grep -q 1023 "$T/err" || fail "cpu outside the allowed set: exit $status: $(cat "$T/err")"
[ ! -e "/dev/shm/$SHM" ] || fail "segments created for a refused cpu"
ok "command-line errors exit 64, an unusable CPU 78"
"$PERFMOND" --check-config --shm "$SHM" >"$T/eff.conf" || fail "--check-config failed"
grep -q "name = $SHM" "$T/eff.conf" && grep -q 'capacity = 65536' "$T/eff.conf" || fail "effective config"
ok "--check-config prints the effective configuration"
