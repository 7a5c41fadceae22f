#!/bin/sh
# stamp_cpu_no_rseq.sh - with rseq turned off (GLIBC_TUNABLES
# glibc.pthread.rseq=0), a stamp reads CPU 0 wherever its thread runs, with
# the offset hint and without it, and `perfmonctl doctor` warns that every
# producer thread then shares sub-ring 0; with rseq on, it does not warn.
set -u
: "${top_builddir:=.}"
fail() { echo "FAIL: $*"; exit 1; }
PERFMONCTL="$top_builddir/src/perfmonctl"

# Only glibc 2.35+ (x86-64, arm64) has the area and the tunable: elsewhere
# the stamp reads 0 anyway, which check_stamp_cpu already covers.
"$PERFMONCTL" doctor --format csv >"${TMPDIR:-/tmp}/stamp_cpu.$$" 2>&1 ||
	fail "doctor exit $?: $(cat "${TMPDIR:-/tmp}/stamp_cpu.$$")"
on=$(grep '^stamp CPU number,' "${TMPDIR:-/tmp}/stamp_cpu.$$")
rm -f "${TMPDIR:-/tmp}/stamp_cpu.$$"
# (CSV: a field with a comma in it is quoted.)
case "$on" in
"stamp CPU number,WARN,"*"no rseq area"*)
	echo "SKIP: this glibc has no rseq area"; exit 77 ;;
"stamp CPU number,PASS,"*"rseq registered at offset"* | \
"stamp CPU number,WARN,"*"rseq registered at offset"*) ;;
*) fail "doctor with rseq on: '$on'" ;;
esac

GLIBC_TUNABLES=glibc.pthread.rseq=0
export GLIBC_TUNABLES
for t in check_stamp_cpu check_stamp_cpu_unhinted; do
	"$top_builddir/tests/unit/$t" >/dev/null 2>&1 || fail "$t with rseq off"
	echo "ok: $t with rseq off"
done
off=$("$PERFMONCTL" doctor --format csv | grep '^stamp CPU number,')
case "$off" in
"stamp CPU number,WARN,"*"glibc did not register rseq"*"sub-ring 0"*) ;;
*) fail "doctor with rseq off: '$off'" ;;
esac
echo "ok: doctor warns with rseq off"
