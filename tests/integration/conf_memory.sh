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

# The ring's geometry on this host, and what it costs, at the end of the
# printout: 65536 slots are 8 x 8192 on 8 CPUs, 64 x 8192 on 64 (16 MiB).
PERFMOND_CPUS=64 "$PERFMOND" --check-config --shm "$SHM" >"$T/eff" 2>"$T/err" || fail "PERFMOND_CPUS=64 refused: $(cat "$T/err")"
grep -q '^; ring: 64 sub-rings x 8192 slots (64 CPUs: PERFMOND_CPUS)$' "$T/eff" &&
	grep -q '^; /dev/shm: 16.0 MiB (16785664 bytes) for the ring, ' "$T/eff" &&
	grep -Eq '^; memory: [0-9.]+ MiB \([0-9]+ bytes\) for the merge buffers, ' "$T/eff" ||
	fail "no ring geometry in --check-config: $(tail -4 "$T/eff")"
PERFMOND_CPUS=2 "$PERFMOND" --check-config --shm "$SHM" --capacity 1048576 >"$T/eff" 2>&1 || fail "PERFMOND_CPUS=2"
grep -q '^; ring: 2 sub-rings x 524288 slots (2 CPUs: PERFMOND_CPUS)$' "$T/eff" ||
	fail "capacity 1048576 on 2 CPUs: $(tail -4 "$T/eff")"
"$PERFMOND" --check-config --shm "$SHM" >"$T/eff" 2>&1 || fail "defaults"
grep -q "^; ring: [0-9]* sub-rings\{0,1\} x [0-9]* slots ([0-9]* CPUs\{0,1\}: this host's possible CPUs)\$" "$T/eff" ||
	fail "this host's geometry: $(tail -4 "$T/eff")"
ok "--check-config prints the ring's geometry on this host, its /dev/shm and merge-buffer bytes"

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
