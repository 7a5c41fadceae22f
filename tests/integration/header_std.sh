#!/bin/sh
# header_std.sh - <perfmon.h> compiles cleanly as C99 (pedantic), C11,
# gnu11 and C++17, enabled, disabled and unfenced; so does each piece under
# include/perfmon/ included alone (the layout also as C89), and <perfmon.h>
# after it; and the pieces the daemon includes carry no process state and
# no load-time code.
set -eu
: "${CC:=cc}" "${CXX:=c++}" "${NM:=nm}" "${OBJDUMP:=objdump}" "${top_srcdir:=.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/t.c" <<'C'
#include <perfmon.h>
static const char *n(uint32_t p, uint8_t s) { (void)p; (void)s; return 0; }
int main(void)
{
	int r = perfmon_attach(0) + perfmon_name(1, 0, "a") + perfmon_publish_names(1, n);
	perfmon_begin(1, 2);
	perfmon_step(1, 3, 2);
	perfmon_end(1, 2);
	perfmon_value(1, 5);
	{
		PERFMON_SCOPE(2);
	}
	perfmon_set_enabled(perfmon_enabled());
	perfmon_detach();
	return r < -1000;
}
C
cp "$tmp/t.c" "$tmp/t.cc"
fail=0
try() {
	if "$@" -I"$top_srcdir/include" -o "$tmp/a.out" 2>"$tmp/err"; then
		echo "ok: $*"
	else
		echo "FAIL: $*"; cat "$tmp/err"; fail=1
	fi
}
for std in "-std=c99 -pedantic" "-std=c11 -pedantic" "-std=gnu11"; do
	for def in "" "-DPERFMON_ENABLED=0" "-DPERFMON_SERIALIZE=0"; do
		# shellcheck disable=SC2086
		try "$CC" $std $def -Wall -Wextra -Werror "$tmp/t.c"
	done
done
try "$CC" -std=c89 -pedantic -Wall -Werror -DPERFMON_ENABLED=0 -Wno-long-long "$tmp/t.c"
for def in "" "-DPERFMON_ENABLED=0"; do
	# shellcheck disable=SC2086
	try "$CXX" -std=c++17 -pedantic $def -Wall -Wextra -Werror "$tmp/t.cc"
done

# ---- the pieces, each alone -------------------------------------------------
# Each program includes one piece and nothing else, and uses it.
piece_body() {  # piece_body NAME: main() using perfmon/NAME.h
	case $1 in
	layout) cat <<'C'
int main(void)
{
	struct perfmon_ring_header r;
	r.magic = PERFMON_RING_MAGIC;
	r.slots_offset = (uint32_t)PERFMON_RING_SLOTS_OFFSET(4);
	return (int)(sizeof(r) != PERFMON_RING_HEADER_SIZE) +
	       (int)(PERFMON_EVENT_STEP(PERFMON_EVENT(PERFMON_END_STEP, 1)) != PERFMON_END_STEP) +
	       (int)(PERFMON_META_BYTES(1) != PERFMON_META_NAMES_OFFSET + 72);
}
C
	;;
	clock) cat <<'C'
int main(void)
{
	uint64_t t0 = perfmon__now_begin(), t1;
	perfmon__relax();
	t1 = perfmon__now_end();
	return (int)(t1 < t0) + (int)(PERFMON_CLOCK != PERFMON_CLOCK_TSC &&
				      PERFMON_CLOCK != PERFMON_CLOCK_MONOTONIC);
}
C
	;;
	stamp) cat <<'C'
static uint64_t ring[PERFMON_RING_BYTES(1, 2) / 8];
int main(void)
{
	struct perfmon_ring_header *r = (struct perfmon_ring_header *)(void *)ring;
	perfmon__publish_sub((char *)ring, perfmon__hot_bits(2, 1), perfmon__cpu(),
			     PERFMON__TS_BEGIN, 0, 1, PERFMON_EVENT(PERFMON_BEGIN_STEP, 0));
	perfmon__publish_to(r, 2, 1, 0, 5, 1, PERFMON_EVENT(PERFMON_VALUE_STEP, 0));
	return (int)(PERFMON_SUBRING(r, 0)->head != 2);
}
C
	;;
	segment) cat <<'C'
int main(void)
{
	char path[PERFMON_NAME_MAX + 8];
	return perfmon__shm_path("x", ".meta", path, sizeof(path)) != 0 || path[0] != '/';
}
C
	;;
	esac
}
pieces="layout clock stamp segment"
for h in $pieces; do
	[ -f "$top_srcdir/include/perfmon/$h.h" ] || { echo "FAIL: include/perfmon/$h.h missing"; fail=1; continue; }
	{ echo "#include <perfmon/$h.h>"; piece_body $h; } > "$tmp/$h.c"
	cp "$tmp/$h.c" "$tmp/$h.cc"
	# The piece first, then <perfmon.h>: the two agree.
	{ echo "#include <perfmon/$h.h>"; cat "$tmp/t.c"; } > "$tmp/then_$h.c"
	cp "$tmp/then_$h.c" "$tmp/then_$h.cc"
	for std in "-std=c99 -pedantic" "-std=c11 -pedantic" "-std=gnu11"; do
		for def in "" "-DPERFMON_SERIALIZE=0"; do
			# shellcheck disable=SC2086
			try "$CC" $std $def -Wall -Wextra -Werror "$tmp/$h.c"
		done
	done
	for std in c++11 c++17; do
		try "$CXX" -std=$std -pedantic -Wall -Wextra -Werror "$tmp/$h.cc"
	done
	try "$CC" -std=c11 -pedantic -Wall -Wextra -Werror "$tmp/then_$h.c"
	try "$CXX" -std=c++17 -pedantic -Wall -Wextra -Werror "$tmp/then_$h.cc"
done
# Declarations only: the layout compiles wherever <stdint.h> does.
try "$CC" -std=c89 -pedantic -Wall -Wextra -Werror -Wno-long-long "$tmp/layout.c"

# ---- no attach code in the pieces -------------------------------------------
# A program built on every piece defines no perfmon object of its own and
# runs nothing at load time; the same program on <perfmon.h> does both, so
# the check can tell.
{
	for h in $pieces; do echo "#include <perfmon/$h.h>"; done
	piece_body stamp
	echo "int names(void);"
	piece_body segment | sed 's/^int main(void)$/int names(void)/'
} > "$tmp/pieces.c"
sed -e 's|^#include <perfmon/layout.h>$|#include <perfmon.h>|' -e '/^#include <perfmon\//d' \
	"$tmp/pieces.c" > "$tmp/whole.c"
for opt in -O0 -O2; do
	"$CC" -std=c11 $opt -Wall -Werror -I"$top_srcdir/include" -c "$tmp/pieces.c" -o "$tmp/pieces.o"
	"$CC" -std=c11 $opt -Wall -Werror -I"$top_srcdir/include" -c "$tmp/whole.c" -o "$tmp/whole.o"
	if "$NM" -g "$tmp/pieces.o" | grep perfmon; then
		echo "FAIL ($opt): the pieces define a perfmon symbol"; fail=1
	elif "$OBJDUMP" -h "$tmp/pieces.o" | grep -E -q '\.(init_array|ctors)'; then
		echo "FAIL ($opt): the pieces run code at load time"; fail=1
	elif ! "$NM" -g "$tmp/whole.o" | grep -q ' perfmon__g$' ||
	     ! "$OBJDUMP" -h "$tmp/whole.o" | grep -E -q '\.(init_array|ctors)'; then
		echo "FAIL ($opt): <perfmon.h> shows no state or load-time attach; the check sees nothing"
		fail=1
	else
		echo "ok ($opt): the pieces carry no state and no load-time attach"
	fi
done
exit $fail
