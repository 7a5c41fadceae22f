#!/bin/sh
# multi_tu.sh - a program of two translation units plus a shared library,
# each including <perfmon.h>, stamps into one ring with no extra define and
# no library of ours: once attached explicitly, once from the environment.
set -eu
: "${CC:=cc}" "${top_srcdir:=.}" "${top_builddir:=.}"
src="$top_srcdir/tests/integration/multi_tu"
seg="$top_builddir/tests/tools/segtool"
tmp=$(mktemp -d)
name="pmt-multitu-$$"
trap 'rm -rf "$tmp"; "$seg" remove "$name" >/dev/null 2>&1 || true' EXIT

"$CC" -O2 -fPIC -shared -I"$top_srcdir/include" "$src/lib.c" -o "$tmp/libstamp.so"
"$CC" -O2 -I"$top_srcdir/include" "$src/main.c" "$src/tu2.c" -L"$tmp" -lstamp \
	-Wl,-rpath,"$tmp" -o "$tmp/prog"

expect='read 600 dropped 0 stalled 0
point 1 100
point 2 200
point 3 300'
fail=0
for mode in explicit environment; do
	"$seg" remove "$name" >/dev/null 2>&1 || true
	"$seg" create "$name" 4096
	if [ $mode = explicit ]; then
		env -u SLICK_PERFMON_SHM "$tmp/prog" "$name"
	else
		SLICK_PERFMON_SHM="$name" "$tmp/prog" -
	fi
	got=$("$seg" drain "$name")
	if [ "$got" = "$expect" ]; then
		echo "ok: $mode attach: every unit and the library stamped into one ring"
	else
		echo "FAIL: $mode attach: got"; echo "$got"; fail=1
	fi
done
# One state for the whole process: the executable exports it and the
# library binds to it.
nm -D "$tmp/prog" | grep -q ' perfmon__g$' || { echo "FAIL: perfmon__g not exported"; fail=1; }
exit $fail
