#!/bin/sh
# ctl_segments.sh - perfmonctl status, names and remove on segments made
# without a daemon (segtool, a labelling producer): exit codes 0/1/3, the
# csv format, a hostile label kept off the terminal, removal, and read-only
# access for a member of the segments' group.
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
CTL="$top_builddir/src/perfmonctl"
SEGTOOL="$top_builddir/tests/tools/segtool"
PRODUCER="$top_builddir/tests/tools/producer"
SHM="pmt-ctlseg-$$"
T=$(mktemp -d "${TMPDIR:-/tmp}/pmctl.XXXXXX")
trap '"$SEGTOOL" remove "$SHM" >/dev/null 2>&1 || true; rm -rf "$T"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

# expect CODE CMD...: run, keep stdout/stderr in $T/out, $T/err.
expect() {
	want=$1; shift
	rc=0
	"$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" = "$want" ] || { cat "$T/out" "$T/err"; fail "$* exited $rc, expected $want"; }
}

expect 1 "$CTL" status "$SHM"
grep -q "no segments named '$SHM'" "$T/err" || fail "missing segments not explained"
ok "status without segments exits 1"

"$SEGTOOL" create "$SHM" 1024 32
expect 3 "$CTL" status "$SHM" --format csv
[ "$(sed -n 2p "$T/out" | cut -d, -f1-3)" = "$SHM,stopped,0" ] || fail "csv status: $(cat "$T/out")"
SLICK_PERFMON_SHM="$SHM" expect 3 "$CTL" status
ok "status of segments no collector ever ran on exits 3 (also by \$SLICK_PERFMON_SHM)"

# A producer labels point 4 with a terminal escape and a line break.
"$PRODUCER" "$SHM" 4 10 --label "$(printf 'gw\033[2J\nforged,row')" >/dev/null
expect 0 "$CTL" names "$SHM" --format csv
if grep -q "$(printf '\033')" "$T/out"; then fail "escape reached the output"; fi
[ "$(wc -l <"$T/out")" -eq 4 ] || { cat "$T/out"; fail "names: expected a header and 3 rows"; }
grep -q '^4,0,point,"gw?\[2J?forged,row"$' "$T/out" || { cat "$T/out"; fail "label not cleaned/quoted"; }
grep -q '^4,1,stage ending at step 1,' "$T/out" || fail "step label missing"
expect 0 "$CTL" names "$SHM"
grep -q '3 of 32 entries used, 0 conflicts' "$T/out" || fail "names footer: $(cat "$T/out")"
ok "names lists the table with hostile labels made harmless"

# A member of the segments' group may look (the segments are 0660).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	gid=$(stat -c %g "/dev/shm/$SHM.meta")
	as_nobody="setpriv --reuid=65534 --regid=65534"
	if $as_nobody --clear-groups test -x "$CTL"; then
		expect 3 $as_nobody --groups="$gid" "$CTL" status "$SHM"
		expect 1 $as_nobody --clear-groups "$CTL" status "$SHM"
		grep -q "permission denied" "$T/err" || fail "no permission message: $(cat "$T/err")"
		ok "a group member reads the status read-only; an outsider is told why not"
	else
		echo "note: $CTL is not executable by uid 65534; group access checked by check_ctl_status"
	fi
else
	echo "note: not root (or no setpriv): group access is checked by check_ctl_status"
fi

expect 0 "$CTL" remove "$SHM"
[ ! -e "/dev/shm/$SHM" ] && [ ! -e "/dev/shm/$SHM.meta" ] || fail "segments still there"
expect 1 "$CTL" status "$SHM"
expect 1 "$CTL" remove "$SHM"
expect 1 "$CTL" remove
ok "remove deletes both segments; again, or without a name, exits 1"
