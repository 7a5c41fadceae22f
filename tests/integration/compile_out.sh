#!/bin/sh
# compile_out.sh - with PERFMON_ENABLED=0 every call compiles to nothing:
# arguments are not evaluated, no TSC is read, and the object file holds
# no symbol of ours.
set -eu
: "${CC:=cc}" "${NM:=nm}" "${OBJDUMP:=objdump}" "${top_srcdir:=.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/user.c" <<'C'
#include <perfmon.h>
int evaluated;
int side_effect(void);
static const char *names(uint32_t p, uint8_t s) { (void)p; (void)s; return "n"; }
int run(unsigned p)
{
	int r = perfmon_attach("x");
	r += perfmon_name(p, 0, "label");
	r += perfmon_publish_names(4, names);
	perfmon_begin(p, side_effect());
	perfmon_step(p, 1, side_effect());
	perfmon_end(p, ++evaluated);
	perfmon_value(p, side_effect());
	perfmon_set_enabled(side_effect());
	if (perfmon_enabled())
		r++;
	{
		PERFMON_SCOPE(side_effect());
		PERFMON_SCOPE_SEQ(p, side_effect());
	}
	perfmon_detach();
	return r + evaluated;
}
C
fail=0
for opt in -O0 -O2; do
	"$CC" -std=c11 -Wall -Wextra -Werror -Wno-unused-function $opt -DPERFMON_ENABLED=0 \
		-I"$top_srcdir/include" -c "$tmp/user.c" -o "$tmp/user.o"
	syms=$("$NM" "$tmp/user.o")
	if printf '%s\n' "$syms" | grep -i perfmon; then
		echo "FAIL ($opt): perfmon symbol in the object file"; fail=1
	fi
	if printf '%s\n' "$syms" | grep -q side_effect; then
		echo "FAIL ($opt): an argument was evaluated (side_effect referenced)"; fail=1
	fi
	if "$OBJDUMP" -d "$tmp/user.o" | grep -E -q 'rdtsc|lfence|lock'; then
		echo "FAIL ($opt): timestamp or atomic instruction in the object"; fail=1
	fi
	echo "ok ($opt): no perfmon symbol, no argument evaluated, no rdtsc"
done

# The same source with the switch on really does reference our state, so
# the checks above can fail.
"$CC" -std=c11 -O2 -Wno-unused-function -I"$top_srcdir/include" -c "$tmp/user.c" -o "$tmp/on.o"
"$NM" "$tmp/on.o" | grep -q perfmon__g || { echo "FAIL: enabled build has no perfmon__g"; fail=1; }
"$OBJDUMP" -d "$tmp/on.o" | grep -q rdtsc || { echo "FAIL: enabled build has no rdtsc"; fail=1; }
"$NM" "$tmp/on.o" | grep -q side_effect || { echo "FAIL: enabled build does not call side_effect"; fail=1; }
echo "ok: the enabled build of the same source stamps"
exit $fail
