#!/bin/sh
# cxx_objdump.sh - a C++ stamp is the C stamp: the same functions written
# with <perfmon.h> (compiled as C) and with <perfmon.hpp> (compiled as
# C++: enum-class points and steps, the scope guard) disassemble to the
# same instructions with the same relocations (`objdump -dr`: every global
# loaded and every function called, by name), at -O2 and -O3.
#   - The unwinding path is compared too: a guard over a call that may
#     throw, against the C guard (PERFMON_SCOPE_SEQ, the cleanup attribute)
#     compiled with -fexceptions; both stamp the end in a landing pad,
#     which GCC moves to .text.unlikely, compared as well.
#   - The comparison can fail: begin and end differ, and the C file built
#     to stamp through another global than the header's differs from the
#     C++ one in its relocations alone.
set -eu
: "${CC:=cc}" "${CXX:=c++}" "${OBJDUMP:=objdump}" "${top_srcdir:=.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/c.c" <<'C'
#include <perfmon.h>
void work(void);
void work_may_throw(void);
void s_begin(uint32_t p, uint32_t seq) { perfmon_begin(p, seq); }
void s_step(uint32_t p, uint32_t seq) { perfmon_step(p, 3, seq); }
void s_end(uint32_t p, uint32_t seq) { perfmon_end(p, seq); }
void s_value(uint32_t p, uint64_t v) { perfmon_value(p, v); }
void s_enum(void) { perfmon_begin(7, PERFMON_NO_SEQ); perfmon_step(7, 3, PERFMON_NO_SEQ); perfmon_end(7, PERFMON_NO_SEQ); }
void s_scope(uint32_t p, uint32_t seq) { perfmon_begin(p, seq); work(); perfmon_end(p, seq); }
void s_scope_step(uint32_t p) { perfmon_begin(p, 0); work(); perfmon_step(p, 3, 0); perfmon_end(p, 0); }
void s_scope_unwind(uint32_t p, uint32_t seq) { PERFMON_SCOPE_SEQ(p, seq); work_may_throw(); }
C
cat > "$tmp/cxx.cc" <<'CXX'
#include <perfmon.hpp>
enum class pt : std::uint16_t { seven = 7 };
enum class st : std::uint8_t { three = 3 };
extern "C" {
void work(void) noexcept;
void work_may_throw(void);
void s_begin(uint32_t p, uint32_t seq) { perfmon::begin(p, seq); }
void s_step(uint32_t p, uint32_t seq) { perfmon::step(p, st::three, seq); }
void s_end(uint32_t p, uint32_t seq) { perfmon::end(p, seq); }
void s_value(uint32_t p, uint64_t v) { perfmon::value(p, v); }
void s_enum(void) { perfmon::begin(pt::seven); perfmon::step(pt::seven, st::three); perfmon::end(pt::seven); }
void s_scope(uint32_t p, uint32_t seq) { perfmon::scope g(p, seq); work(); }
void s_scope_step(uint32_t p) { perfmon::scope g(p); work(); g.step(3); }
void s_scope_unwind(uint32_t p, uint32_t seq) { perfmon::scope g(p, seq); work_may_throw(); }
}
CXX

# The code of one section, relocations included: each instruction without
# its address, and each relocation as its type and symbol (perfmon__g+0x8,
# work_may_throw-0x4).  Every function has its own sections, so offsets
# start at 0 in both objects.  objdump's <symbol+offset> annotations are
# dropped (it names the nearest symbol it finds, which may be a string
# literal), and so are the numbers of local labels (.LC4): the relocation
# lines say what is referenced.
insns() {       # insns OBJECT SECTION
	"$OBJDUMP" -dr --no-show-raw-insn -j "$2" "$1" |
		sed -n 's/^[[:space:]]*[0-9a-f]*:[[:space:]]*//p' |
		sed -e 's/ *<[^>]*>//' -e 's/ *#.*//' -e 's/\.LC[0-9]*/.LC/g' -e 's/[[:space:]]\{1,\}/ /g'
}
has_section() { # has_section OBJECT SECTION
	"$OBJDUMP" -h "$1" | awk -v s="$2" '$2 == s { f = 1 } END { exit !f }'
}
fail=0
for opt in -O2 -O3; do
	"$CC" -std=c11 $opt -fexceptions -ffunction-sections -I"$top_srcdir/include" -c "$tmp/c.c" -o "$tmp/c.o"
	"$CXX" -std=c++17 $opt -ffunction-sections -I"$top_srcdir/include" -c "$tmp/cxx.cc" -o "$tmp/cxx.o"
	for f in s_begin s_step s_end s_value s_enum s_scope s_scope_step s_scope_unwind; do
		for sec in ".text.$f" ".text.unlikely.$f"; do
			if ! has_section "$tmp/c.o" "$sec"; then
				[ "$sec" = ".text.$f" ] && { echo "FAIL ($opt): no section $sec in the C object"; fail=1; }
				has_section "$tmp/cxx.o" "$sec" &&
					{ echo "FAIL ($opt): $sec only in the C++ object"; fail=1; }
				continue
			fi
			insns "$tmp/c.o" "$sec" > "$tmp/$f$sec.c.s"
			insns "$tmp/cxx.o" "$sec" > "$tmp/$f$sec.cxx.s"
			n=$(grep -c . "$tmp/$f$sec.c.s" || true)
			r=$(grep -c 'R_' "$tmp/$f$sec.c.s" || true)
			stamp=rdtsc
			[ $f = s_value ] && stamp='lock xadd'
			if [ "$n" -lt 5 ] || ! grep -q "$stamp" "$tmp/$f$sec.c.s" ||
			   ! grep -q 'R_.*perfmon__g' "$tmp/$f$sec.c.s"; then
				echo "FAIL ($opt): $sec: the C version has no stamp to compare ($n lines)"
				fail=1
			elif cmp -s "$tmp/$f$sec.c.s" "$tmp/$f$sec.cxx.s"; then
				echo "ok ($opt): $sec: C and C++ give the same $n lines ($r relocations)"
			else
				echo "FAIL ($opt): $sec differs (C left, C++ right):"
				diff "$tmp/$f$sec.c.s" "$tmp/$f$sec.cxx.s" || true
				fail=1
			fi
		done
	done
	# The unwinding path exists and ends the span: a landing pad that
	# stamps (a second perfmon__g load) before resuming the unwind.
	cat "$tmp/s_scope_unwind".text*.c.s > "$tmp/unwind.s"
	if grep -q '_Unwind_Resume' "$tmp/unwind.s" &&
	   [ "$(grep -c 'R_.*perfmon__g' "$tmp/unwind.s")" -ge 3 ]; then
		echo "ok ($opt): s_scope_unwind: the end is stamped on the unwinding path too"
	else
		echo "FAIL ($opt): s_scope_unwind has no landing pad that stamps"; fail=1
	fi
done

# The comparison can tell two stamps apart: begin and end differ.
if cmp -s "$tmp/s_begin.text.s_begin.c.s" "$tmp/s_end.text.s_end.cxx.s"; then
	echo "FAIL: begin and end compare equal; the comparison sees nothing"
	fail=1
fi
# ... and what a stamp refers to: the C stamps built on another global
# than the header's are the same instructions, but not the same code.
# (The last objects compared were built at -O3.)
"$CC" -std=c11 -O3 -fexceptions -ffunction-sections -Dperfmon__g=perfmon__g_elsewhere \
	-I"$top_srcdir/include" -c "$tmp/c.c" -o "$tmp/other.o"
insns "$tmp/other.o" .text.s_begin > "$tmp/other.s"
if cmp -s "$tmp/other.s" "$tmp/s_begin.text.s_begin.cxx.s"; then
	echo "FAIL: a stamp through another global compares equal; relocations are not compared"
	fail=1
elif [ "$(grep -v 'R_' "$tmp/other.s")" = "$(grep -v 'R_' "$tmp/s_begin.text.s_begin.cxx.s")" ]; then
	echo "ok: a stamp through another global differs in its relocations alone, and is told apart"
else
	echo "FAIL: the stamp through another global differs in more than its relocations"
	diff "$tmp/other.s" "$tmp/s_begin.text.s_begin.cxx.s" || true
	fail=1
fi
# Shown for the log: one stamp as both compilers emit it.
echo "--- s_step at -O3, C and C++ alike:"
cat "$tmp/s_step.text.s_step.c.s"
exit $fail
