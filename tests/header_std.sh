#!/bin/sh
# header_std.sh - <perfmon.h> compiles cleanly as C99 (pedantic), C11,
# gnu11 and C++17, enabled, disabled and unfenced.
set -eu
: "${CC:=cc}" "${CXX:=c++}" "${top_srcdir:=.}"
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
exit $fail
