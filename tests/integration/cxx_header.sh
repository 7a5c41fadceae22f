#!/bin/sh
# cxx_header.sh - the C++ headers compile cleanly, and compile away:
#   - <perfmon.hpp> (tests/tools/cxx_native.cc) as C++17 and C++20, and the
#     slick-perfmon compatibility headers (tests/tools/slick_usage.cc) as C++20
#     and C++17, with -Wall -Wextra -Werror -pedantic: enabled,
#     PERFMON_ENABLED=0 / SLICK_PERFMON_ENABLED=0, unfenced; with $CXX and,
#     when installed, the other of g++ / clang++;
#   - compiled out at -O0 and -O2, a translation unit using every stamp,
#     the guard and the calls of <perfmon.hpp> (and every slick stamp macro
#     and ScopedSample) holds no symbol of ours and no rdtsc, lfence or
#     locked instruction; the same source enabled does, so the check can
#     fail;
#   - the two switch spellings must agree, and the snapshot calls of a
#     slick Collector fail to compile with a message naming perfmond's way;
#   - the compatibility headers declare no global name `perfmon`: a program
#     saying `using namespace slick;` and then `perfmon::begin(...)`, as
#     slick-perfmon allows, compiles (C++17 and 20, enabled and compiled out).
set -eu
: "${CXX:=c++}" "${NM:=nm}" "${OBJDUMP:=objdump}" "${top_srcdir:=.}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inc="-I$top_srcdir/include"
compat="-I$top_srcdir/include/perfmon/compat"
fail=0

compilers=$CXX
for other in g++ clang++; do
	command -v $other >/dev/null 2>&1 || continue
	case " $compilers " in *" $other "*) ;; *) compilers="$compilers $other" ;; esac
done

try() {
	if "$@" -o "$tmp/a.out" 2>"$tmp/err"; then
		echo "ok: $*"
	else
		echo "FAIL: $*"; cat "$tmp/err"; fail=1
	fi
}
warn="-Wall -Wextra -Werror -pedantic"
for cxx in $compilers; do
	for std in c++17 c++20; do
		for def in "" "-DPERFMON_ENABLED=0" "-DPERFMON_SERIALIZE=0"; do
			# shellcheck disable=SC2086
			try $cxx -std=$std $warn $def -O2 $inc "$top_srcdir/tests/tools/cxx_native.cc"
		done
		for def in "" "-DSLICK_PERFMON_ENABLED=0" "-DSLICK_PERFMON_SERIALIZE=0"; do
			# shellcheck disable=SC2086
			try $cxx -std=$std $warn $def -O2 $inc $compat -pthread \
				"$top_srcdir/tests/tools/slick_usage.cc"
		done
	done
done

# ---- `using namespace slick;` ------------------------------------------------------
cat > "$tmp/using.cc" <<'CXX'
#include <slick/perfmon.hpp>
#include <slick/perfmon/collector.hpp>
using namespace slick;
enum class pt : perfmon::point_id { a = 1, b = 2 };
int main()
{
	perfmon::begin(pt::a, 7);
	perfmon::step(pt::a, 1, 7);
	perfmon::end(pt::a, 7);
	perfmon::value(pt::b, 3);
	{
		perfmon::ScopedSample g{pt::b};
		SLICK_PERFMON_SCOPE(pt::a);
	}
	perfmon::config cfg;
	cfg.run_mode = perfmon::mode::shared_producer;
	cfg.shm_name = "pmt-using-none";
	auto &c = perfmon::collector::instance();
	return c.start(cfg) ? 1 : static_cast<int>(perfmon::to_point(pt::a)) - 1;
}
CXX
for cxx in $compilers; do
	for std in c++17 c++20; do
		for def in "" "-DSLICK_PERFMON_ENABLED=0"; do
			# shellcheck disable=SC2086
			try $cxx -std=$std $warn $def -O2 $inc $compat "$tmp/using.cc"
		done
	done
done

# ---- compiled out ---------------------------------------------------------------
cat > "$tmp/off.cc" <<'CXX'
#include <perfmon.hpp>
#include <slick/perfmon.hpp>
#include <string_view>
enum class pt : unsigned { a = 1 };
enum class st : unsigned char { s = 2 };
constexpr std::string_view names(std::uint32_t, std::uint8_t) { return "n"; }
unsigned side_effect();
int run(unsigned p)
{
	int r = perfmon::attach("x") + perfmon::attach(std::string_view("y"));
	r += perfmon::publish_names(4, names);
	r += perfmon::name(p, 0, "label");
	perfmon::begin(pt::a, p);
	perfmon::step(pt::a, st::s, p);
	perfmon::end(pt::a, p);
	perfmon::value(p, p);
	perfmon::set_enabled(p != 0);
	if (perfmon::enabled())
		r++;
	{
		perfmon::scope g(pt::a, p);
		g.step(st::s);
		perfmon::scope h(static_cast<perfmon::scope &&>(g));
		h.cancel();
		r += static_cast<int>(h.point() + h.seq());
	}
	perfmon::detach();
	/* slick spellings; macro arguments are never evaluated */
	slick::perfmon::begin(pt::a, p);
	slick::perfmon::step(pt::a, 3, p);
	slick::perfmon::end(pt::a);
	slick::perfmon::value(pt::a, 5);
	SLICK_PERFMON_BEGIN(pt::a, side_effect());
	SLICK_PERFMON_STEP(pt::a, 1, side_effect());
	SLICK_PERFMON_END(pt::a, side_effect());
	SLICK_PERFMON_VALUE(pt::a, side_effect());
	{
		SLICK_PERFMON_SCOPE(pt::a, side_effect());
		slick::perfmon::ScopedSample s{pt::a, p};
		s.cancel();
	}
	return r;
}
CXX
for cxx in $compilers; do
	for opt in -O0 -O2; do
		$cxx -std=c++17 -Wall -Wextra -Werror $opt -DPERFMON_ENABLED=0 $inc $compat \
			-c "$tmp/off.cc" -o "$tmp/off.o"
		syms=$("$NM" -C "$tmp/off.o")
		if printf '%s\n' "$syms" | grep -i 'perfmon'; then
			echo "FAIL ($cxx $opt): a perfmon symbol in the object file"; fail=1
		elif printf '%s\n' "$syms" | grep -q side_effect; then
			echo "FAIL ($cxx $opt): a macro argument was evaluated"; fail=1
		elif "$OBJDUMP" -d "$tmp/off.o" | grep -E 'rdtsc|lfence|lock '; then
			echo "FAIL ($cxx $opt): timestamp or atomic instruction in the object"; fail=1
		else
			echo "ok ($cxx $opt): compiled out: no perfmon symbol, no rdtsc, macro arguments unevaluated"
		fi
	done
	# The same source enabled stamps, so the checks above can fail.
	$cxx -std=c++17 -O2 $inc $compat -c "$tmp/off.cc" -o "$tmp/on.o"
	if "$NM" "$tmp/on.o" | grep -q perfmon__g && "$OBJDUMP" -d "$tmp/on.o" | grep -q rdtsc &&
	   "$NM" "$tmp/on.o" | grep -q side_effect; then
		echo "ok ($cxx): the enabled build of the same source stamps"
	else
		echo "FAIL ($cxx): the enabled build does not stamp"; fail=1
	fi
done

# ---- refusals at compile time -------------------------------------------------------
printf '#include <slick/perfmon/collector.hpp>\nint main() { slick::perfmon::collector::instance().snapshot_total(0u); }\n' > "$tmp/snap.cc"
if $CXX -std=c++20 $inc $compat -c "$tmp/snap.cc" -o "$tmp/snap.o" 2>"$tmp/err"; then
	echo "FAIL: Collector::snapshot_total compiled"; fail=1
elif grep -q 'snapshot_total is not available with perfmond.*perfmonctl' "$tmp/err"; then
	echo "ok: Collector::snapshot_total is a compile error naming perfmonctl"
else
	cat "$tmp/err"; echo "FAIL: snapshot_total error does not say what to use"; fail=1
fi
printf '#include <perfmon.h>\n#include <slick/perfmon.hpp>\n' > "$tmp/clash.cc"
if $CXX -std=c++20 -DSLICK_PERFMON_ENABLED=0 $inc $compat -c "$tmp/clash.cc" -o "$tmp/clash.o" 2>"$tmp/err"; then
	echo "FAIL: SLICK_PERFMON_ENABLED=0 after <perfmon.h> enabled was accepted"; fail=1
else
	grep -q 'disagree' "$tmp/err" && echo "ok: disagreeing switches are an error" ||
		{ cat "$tmp/err"; echo "FAIL: no clear error for disagreeing switches"; fail=1; }
fi
exit $fail
