#!/bin/sh
# conf_memory.sh - --check-config says how much memory the configuration
# needs, and refuses (exit 78) what this machine cannot provide, as the
# start does, before creating anything: max_stages = 1M asks for tens of
# GiB, and so does a ring of 2^30 slots (with the daemon's merge buffers).
# The default configuration passes.
. "$top_srcdir/tests/integration/daemon_lib.sh"

"$PERFMOND" --check-config --shm "$SHM" >/dev/null 2>"$T/err" || fail "defaults refused: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "defaults: unexpected messages: $(cat "$T/err")"
ok "defaults pass quietly"

have_kib=$(awk '/^(MemTotal|SwapTotal):/ {s += $2} END {print s}' /proc/meminfo)
if [ "$have_kib" -ge $((40 * 1024 * 1024)) ]; then
	echo "SKIP: this machine has $((have_kib / 1048576)) GiB of memory and swap; max_stages = 1M and a 2^30-slot ring may fit"
	exit 77
fi
printf '[shm]\nname = %s\n[output]\ncsv = %s\nsummary =\n[collector]\nmax_stages = 1048576\n' \
	"$SHM" "$T/out.csv" >"$T/big.conf"
st=0
"$PERFMOND" --check-config "$T/big.conf" >/dev/null 2>"$T/err" || st=$?
[ $st = 78 ] || fail "--check-config with max_stages = 1M exited $st: $(cat "$T/err")"
grep -q "max_stages = 1048576 .* GiB of memory" "$T/err" || fail "message: $(cat "$T/err")"
st=0
"$PERFMOND" "$T/big.conf" >/dev/null 2>"$T/err" || st=$?
[ $st = 78 ] || fail "start with max_stages = 1M exited $st: $(cat "$T/err")"
[ ! -e "/dev/shm/$SHM" ] && [ ! -e "$T/out.csv" ] || fail "the refused start created something"
ok "max_stages = 1M: refused by --check-config and at start (exit 78), nothing created"

st=0
"$PERFMOND" --check-config --shm "$SHM" --capacity 1073741824 >/dev/null 2>"$T/err" || st=$?
[ $st = 78 ] || fail "--check-config with capacity = 2^30 exited $st: $(cat "$T/err")"
grep -q "capacity = 1073741824 (the ring and the daemon's merge buffers)" "$T/err" || fail "message: $(cat "$T/err")"
ok "capacity = 2^30: refused by --check-config (exit 78), the ring's memory counted"
