#!/bin/sh
# cxx_objdump.sh - a C++ stamp is the C stamp: the same functions written
# with <perfmon.h> (compiled as C) and with <perfmon.hpp> (compiled as
# C++: enum-class points and steps, the scope guard) disassemble to the
# same instruction sequence, at -O2 and -O3.
set -eu
: "${CC:=cc}" "${CXX:=c++}" "${OBJDUMP:=objdump}" "${top_srcdir:=.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/c.c" <<'C'
#include <perfmon.h>
void work(void);
void s_begin(uint32_t p, uint32_t seq) { perfmon_begin(p, seq); }
void s_step(uint32_t p, uint32_t seq) { perfmon_step(p, 3, seq); }
void s_end(uint32_t p, uint32_t seq) { perfmon_end(p, seq); }
void s_value(uint32_t p, uint64_t v) { perfmon_value(p, v); }
void s_enum(void) { perfmon_begin(7, PERFMON_NO_SEQ); perfmon_step(7, 3, PERFMON_NO_SEQ); perfmon_end(7, PERFMON_NO_SEQ); }
void s_scope(uint32_t p, uint32_t seq) { perfmon_begin(p, seq); work(); perfmon_end(p, seq); }
void s_scope_step(uint32_t p) { perfmon_begin(p, 0); work(); perfmon_step(p, 3, 0); perfmon_end(p, 0); }
C
cat > "$tmp/cxx.cc" <<'CXX'
#include <perfmon.hpp>
enum class pt : std::uint16_t { seven = 7 };
enum class st : std::uint8_t { three = 3 };
extern "C" {
void work(void) noexcept;
void s_begin(uint32_t p, uint32_t seq) { perfmon::begin(p, seq); }
void s_step(uint32_t p, uint32_t seq) { perfmon::step(p, st::three, seq); }
void s_end(uint32_t p, uint32_t seq) { perfmon::end(p, seq); }
void s_value(uint32_t p, uint64_t v) { perfmon::value(p, v); }
void s_enum(void) { perfmon::begin(pt::seven); perfmon::step(pt::seven, st::three); perfmon::end(pt::seven); }
void s_scope(uint32_t p, uint32_t seq) { perfmon::scope g(p, seq); work(); }
void s_scope_step(uint32_t p) { perfmon::scope g(p); work(); g.step(3); }
}
CXX

# The instructions of one function, without addresses or symbol names:
# every function has its own section, so offsets start at 0 in both.
insns() {       # insns OBJECT FUNCTION
	"$OBJDUMP" -d --no-show-raw-insn -j ".text.$2" "$1" |
		sed -n 's/^ *[0-9a-f]*:[[:space:]]*//p' | sed -e 's/ *<[^>]*>//' -e 's/ *#.*//' -e 's/[[:space:]]\{1,\}/ /g'
}
fail=0
for opt in -O2 -O3; do
	"$CC" -std=c11 $opt -ffunction-sections -I"$top_srcdir/include" -c "$tmp/c.c" -o "$tmp/c.o"
	"$CXX" -std=c++17 $opt -ffunction-sections -I"$top_srcdir/include" -c "$tmp/cxx.cc" -o "$tmp/cxx.o"
	for f in s_begin s_step s_end s_value s_enum s_scope s_scope_step; do
		insns "$tmp/c.o" $f > "$tmp/$f.c.s"
		insns "$tmp/cxx.o" $f > "$tmp/$f.cxx.s"
		n=$(grep -c . "$tmp/$f.c.s" || true)
		stamp=rdtsc
		[ $f = s_value ] && stamp='lock xadd'
		if [ "$n" -lt 5 ] || ! grep -q "$stamp" "$tmp/$f.c.s"; then
			echo "FAIL ($opt): $f: the C version has no stamp to compare ($n instructions)"
			fail=1
		elif cmp -s "$tmp/$f.c.s" "$tmp/$f.cxx.s"; then
			echo "ok ($opt): $f: C and C++ give the same $n instructions"
		else
			echo "FAIL ($opt): $f differs (C left, C++ right):"
			diff "$tmp/$f.c.s" "$tmp/$f.cxx.s" || true
			fail=1
		fi
	done
done
# The comparison can tell two stamps apart: begin and end differ.
if cmp -s "$tmp/s_begin.c.s" "$tmp/s_end.cxx.s"; then
	echo "FAIL: begin and end compare equal; the comparison sees nothing"
	fail=1
fi
# Shown for the log: one stamp as both compilers emit it.
echo "--- s_step at -O2, C and C++ alike:"
cat "$tmp/s_step.c.s"
exit $fail
