#!/bin/sh
# fault_shm_small.sh - /dev/shm too small for the ring: perfmond refuses
# at start, exit 1, with the size it needs and what is free, and leaves no
# segment behind (also when the ring fits and the control block does not).
# A ring that fits starts and stops normally.
#
# /dev/shm is shared by everything on the machine, so the test runs the
# daemon in a private mount namespace (unshare -m) with a 1 MiB tmpfs on
# /dev/shm: exactly what a too-small /dev/shm looks like to it.
. "$top_srcdir/tests/integration/daemon_lib.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for a private mount namespace"; exit 77; }
[ -z "${PERFMOND_PACKAGE_BUILD:-}" ] ||
	{ echo "SKIP: package build: needs root privileges (a mount namespace)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare(1) is not installed"; exit 77; }
if ! unshare --mount --propagation private sh -c \
	'mount -t tmpfs -o size=1m perfmond-test-shm /dev/shm' 2>"$T/unshare.err"; then
	echo "SKIP: cannot mount a tmpfs on /dev/shm in a private mount namespace:" \
		"$(cat "$T/unshare.err")"
	exit 77
fi

# in_small_shm CMD...: run CMD with a fresh 1 MiB /dev/shm of its own; the
# namespace, the mount and every segment in it vanish when CMD returns.
# Prints what is left in that /dev/shm afterwards on fd 3.
in_small_shm() {
	unshare --mount --propagation private sh -c '
		mount -t tmpfs -o size=1m perfmond-test-shm /dev/shm || exit 99
		"$@"; st=$?
		ls -A /dev/shm >&3
		exit $st' sh "$@"
}

# Sized as for a 2-CPU host whatever this one has: two sub-rings.
PERFMOND_CPUS=2
export PERFMOND_CPUS

# capacity 65536: 256 + 2 * 128 + 32 * 65536 = 2097664 bytes, twice what
# there is.
st=0
in_small_shm "$PERFMOND" --shm "$SHM" --capacity 65536 --csv "" --summary "" --duration 5s \
	2>"$T/err" 3>"$T/left" || st=$?
[ "$st" = 1 ] || fail "ring larger than /dev/shm: exit $st, want 1: $(cat "$T/err")"
grep -q '2097664 bytes' "$T/err" || fail "the error does not give the size needed: $(cat "$T/err")"
grep -q "/dev/shm/$SHM" "$T/err" || fail "the error does not name the segment: $(cat "$T/err")"
grep -q 'free' "$T/err" || fail "the error does not say what is free: $(cat "$T/err")"
[ ! -s "$T/left" ] || fail "segments left behind: $(cat "$T/left")"
ok "ring too big for /dev/shm: $(head -n 1 "$T/err")"

# --check-config says so beforehand, as a configuration error.
st=0
in_small_shm "$PERFMOND" --check-config --shm "$SHM" --capacity 65536 --csv "" --summary "" \
	>/dev/null 2>"$T/err" 3>"$T/left" || st=$?
[ "$st" = 78 ] || fail "--check-config, ring larger than /dev/shm: exit $st, want 78: $(cat "$T/err")"
grep -q 'bytes of /dev/shm, which has [0-9]* bytes free' "$T/err" || fail "--check-config message: $(cat "$T/err")"
ok "--check-config: $(head -n 1 "$T/err")"

# The ring fits (524800 bytes) but the control block (4096 + 72 * 8192 =
# 593920 bytes) does not fit beside it: the ring must not stay behind.
st=0
write_conf "$T/names.conf" shm.capacity=16384 shm.max_names=8192 "output.csv=" \
	"output.summary="
in_small_shm "$PERFMOND" "$T/names.conf" --duration 5s 2>"$T/err" 3>"$T/left" || st=$?
[ "$st" = 1 ] || fail "control block larger than what is left: exit $st, want 1: $(cat "$T/err")"
grep -q '593920 bytes' "$T/err" || fail "the error does not give the size needed: $(cat "$T/err")"
grep -q "/dev/shm/$SHM.meta" "$T/err" || fail "the error does not name the control block: $(cat "$T/err")"
[ ! -s "$T/left" ] || fail "segments left behind: $(cat "$T/left")"
ok "control block does not fit beside the ring: refused, nothing left behind"

# A ring that fits: 512 + 32 * 8192 = 262656 bytes.
st=0
in_small_shm "$PERFMOND" --shm "$SHM" --capacity 8192 --csv "" --summary "" --duration 300ms \
	2>"$T/err" 3>"$T/left" || st=$?
[ "$st" = 0 ] || fail "a ring that fits: exit $st: $(cat "$T/err")"
grep -q "^$SHM\$" "$T/left" && grep -q "^$SHM.meta\$" "$T/left" || fail "the segments were not created: $(cat "$T/left")"
ok "a ring that fits starts, runs and stops"
