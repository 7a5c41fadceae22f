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
#     locked instruction; so does one including only the compatibility
#     headers, switched off as SLICK_PERFMON_ENABLED=0 (stamps, stamp<>,
#     macros, guards, event helpers), and with a Collector set-up beside
#     them nothing of the stamping (no perfmon_* symbol) is left; the same
#     sources enabled do stamp, so the checks can fail;
#   - the two switch spellings must agree; what cannot exist over perfmond
#     (the in-process statistics, reports and rows, the collector's own
#     counters and ring, attach(sample_queue *), another label or histogram
#     size, a longer shm name) fails to compile, the first error being a
#     message that names perfmond's way; a smaller SLICK_PERFMON_SHM_NAME_MAX
#     is honoured by start();
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
# A source compiled out: compiled_out WHAT SOURCE SWITCH SYMBOLS, where
# SYMBOLS (an extended regular expression) must match no symbol of the
# object at -O0 or -O2; no timestamp or locked instruction either, and no
# macro argument evaluated.  The same source enabled stamps, so the checks
# can fail.
compiled_out() {
	what=$1 src=$2 switch=$3 symbols=$4
	for cxx in $compilers; do
		for opt in -O0 -O2; do
			$cxx -std=c++17 -Wall -Wextra -Werror $opt "$switch" $inc $compat \
				-c "$src" -o "$tmp/off.o"
			syms=$("$NM" -C "$tmp/off.o")
			if printf '%s\n' "$syms" | grep -E "$symbols"; then
				echo "FAIL ($cxx $opt $switch): $what: a symbol of ours in the object file"; fail=1
			elif printf '%s\n' "$syms" | grep -q side_effect; then
				echo "FAIL ($cxx $opt $switch): $what: a macro argument was evaluated"; fail=1
			elif "$OBJDUMP" -d "$tmp/off.o" | grep -E 'rdtsc|lfence|lock '; then
				echo "FAIL ($cxx $opt $switch): $what: timestamp or atomic instruction"; fail=1
			else
				echo "ok ($cxx $opt $switch): $what compiled out: no symbol matching $symbols, no rdtsc, macro arguments unevaluated"
			fi
		done
		$cxx -std=c++17 -O2 $inc $compat -c "$src" -o "$tmp/on.o"
		if "$NM" "$tmp/on.o" | grep -q perfmon__g && "$OBJDUMP" -d "$tmp/on.o" | grep -q rdtsc &&
		   "$NM" "$tmp/on.o" | grep -q side_effect; then
			echo "ok ($cxx): $what: the enabled build of the same source stamps"
		else
			echo "FAIL ($cxx): $what: the enabled build does not stamp"; fail=1
		fi
	done
}
compiled_out "<perfmon.hpp> and slick spellings" "$tmp/off.cc" -DPERFMON_ENABLED=0 '[Pp][Ee][Rr][Ff][Mm][Oo][Nn]'

# The compatibility headers alone, switched off by their own name: every
# stamp, macro, guard and event helper leaves nothing.  The set-up code
# (SETUP) keeps what any program's config has (its strings, the Collector
# object) but nothing of the stamping: no perfmon_* or perfmon__* symbol.
cat > "$tmp/off_slick.cc" <<'CXX'
#include <slick/perfmon.hpp>
#include <slick/perfmon/collector.hpp>
#include <slick/perfmon/scoped.hpp>
#include <slick/perfmon/stamp_types.hpp>
#include <slick/perfmon/types.hpp>
#include <string>
enum class pt : slick::perfmon::point_id { a = 1 };
unsigned side_effect();
int run(unsigned p)
{
	using namespace slick::perfmon;
	begin(pt::a, p);
	step(pt::a, 2, p);
	end(pt::a, p);
	value(pt::a, p);
	stamp<true>(to_point(pt::a), make_event(kBeginStep, p));
	stamp<false>(to_point(pt::a), make_event(kEndStep, p));
	SLICK_PERFMON_BEGIN(pt::a, side_effect());
	SLICK_PERFMON_STEP(pt::a, 1, side_effect());
	SLICK_PERFMON_END(pt::a, side_effect());
	SLICK_PERFMON_VALUE(pt::a, side_effect());
	{
		SLICK_PERFMON_SCOPE(pt::a, side_effect());
		ScopedSample g{pt::a, p};
		g.step(1);
		ScopedSample h{static_cast<ScopedSample &&>(g)};
		h.cancel();
		return static_cast<int>(h.point() + h.seq() + step_of(p) + seq_of(p));
	}
}
#ifdef SETUP
int setup(const std::string &name, unsigned p)
{
	using namespace slick::perfmon;
	config cfg;
	cfg.run_mode = mode::shared_producer;
	cfg.shm_name = name;
	auto &c = collector::instance();
	int r = c.start(cfg) + c.running() + c.enabled() + run(p);
	c.set_enabled(p != 0);
	r += static_cast<int>(c.name_conflicts() + c.overhead_cycles()) + (c.tsc_hz() > 0);
	c.shutdown();
	return r;
}
#endif
CXX
compiled_out "slick stamps alone" "$tmp/off_slick.cc" -DSLICK_PERFMON_ENABLED=0 '[Pp][Ee][Rr][Ff][Mm][Oo][Nn]'
printf '#define SETUP\n#include "off_slick.cc"\n' > "$tmp/setup_slick.cc"
compiled_out "slick stamps and set-up" "$tmp/setup_slick.cc" -DSLICK_PERFMON_ENABLED=0 'perfmon_'

# ---- refusals at compile time -------------------------------------------------------
# What cannot exist over perfmond fails to compile, and the first error is
# a message naming the perfmond way: refuse NAME FLAGS EXPECTED <<BODY,
# where BODY is main()'s body (c: the Collector, a const reference).
refuse() {
	name=$1 flags=$2 want=$3
	{
		printf '#include <slick/perfmon/collector.hpp>\n#include <iostream>\n#include <vector>\n'
		printf 'int main()\n{\n\tconst auto &c = slick::perfmon::collector::instance();\n\t(void)c;\n'
		cat
		printf '\treturn 0;\n}\n'
	} > "$tmp/refuse.cc"
	for cxx in $compilers; do
		for def in "" -DSLICK_PERFMON_ENABLED=0; do
			# shellcheck disable=SC2086
			if $cxx -std=c++20 $def $flags $inc $compat -c "$tmp/refuse.cc" \
				-o "$tmp/refuse.o" 2>"$tmp/err"; then
				echo "FAIL ($cxx $def): $name compiled"; fail=1
			elif grep -m1 'error' "$tmp/err" | grep -q -- "$want"; then
				echo "ok ($cxx $def): $name: the first error is \"...$want...\""
			else
				cat "$tmp/err"
				echo "FAIL ($cxx $def): $name: the first error does not say \"$want\""
				fail=1
			fi
		done
	done
}
stats_msg='the statistics live in the perfmond daemon.*perfmonctl top'
refuse snapshot "" "Collector::snapshot() is not available with perfmond: $stats_msg" <<'CXX'
	auto s = slick::perfmon::collector::instance().snapshot(0u, 0, 1);
CXX
refuse snapshot_total "" "Collector::snapshot_total() is not available with perfmond: $stats_msg" <<'CXX'
	return static_cast<int>(c.snapshot_total(0u).count);
CXX
refuse reports "" "Collector::reports() is not available with perfmond: $stats_msg" <<'CXX'
	for (const auto &r : c.reports())
		std::cout << r.point_name;
CXX
refuse dump_summary "" "Collector::dump_summary() is not available with perfmond: $stats_msg" <<'CXX'
	c.dump_summary(std::cout);
CXX
refuse last_flush_cycles "" "Collector::last_flush_cycles() is not available with perfmond: .*perfmonctl status" <<'CXX'
	return static_cast<int>(c.last_flush_cycles());
CXX
refuse peak_open_spans "" "Collector::peak_open_spans() is not available with perfmond: .*open_spans" <<'CXX'
	return static_cast<int>(c.peak_open_spans());
CXX
refuse ring "" "Collector::ring() is not available with perfmond: the ring is perfmond's segment" <<'CXX'
	slick::perfmon::sample_queue *q = c.ring();
	(void)q;
CXX
refuse 'attach(sample_queue *)' "" "attach(sample_queue \*) is not available with perfmond and not needed" <<'CXX'
	slick::perfmon::sample_queue *q = nullptr;
	slick::perfmon::attach(q);
CXX
refuse stats "" "stats is not available with perfmond: statistics are computed by the perfmond daemon.*perfmonctl" <<'CXX'
	slick::perfmon::stats s;
	return static_cast<int>(s.count);
CXX
refuse StageReport "" "StageReport is not available with perfmond: the rows are built by the perfmond daemon.*perfmonctl" <<'CXX'
	std::vector<slick::perfmon::StageReport> rows(1);
	return static_cast<int>(rows[0].cumulative.count);
CXX
refuse SLICK_PERFMON_NAME_CAPACITY -DSLICK_PERFMON_NAME_CAPACITY=128 "NAME_CAPACITY cannot be changed with perfmond: .*64 bytes" </dev/null
refuse SLICK_PERFMON_HIST_PRECISION -DSLICK_PERFMON_HIST_PRECISION=5 "HIST_PRECISION cannot be changed with perfmond: .*16 sub-buckets" </dev/null
refuse SLICK_PERFMON_SHM_NAME_MAX -DSLICK_PERFMON_SHM_NAME_MAX=249 "SHM_NAME_MAX is above perfmond's limit" </dev/null

# A smaller SLICK_PERFMON_SHM_NAME_MAX is honoured: start() refuses a
# longer name, with a message, before looking for segments.
cat > "$tmp/namemax.cc" <<'CXX'
#include <slick/perfmon/collector.hpp>
#include <cstdio>
int main()
{
	slick::perfmon::config cfg;
	cfg.run_mode = slick::perfmon::mode::shared_producer;
	cfg.shm_name = "pmt-too-long";
	std::printf("start %d\n", slick::perfmon::Collector::instance().start(cfg));
	return 0;
}
CXX
if $CXX -std=c++20 -DSLICK_PERFMON_SHM_NAME_MAX=8 $inc $compat -pthread -o "$tmp/namemax" \
	"$tmp/namemax.cc" 2>"$tmp/err" &&
   env -u SLICK_PERFMON_SHM "$tmp/namemax" >"$tmp/out" 2>"$tmp/err" &&
   grep -q '^start 0$' "$tmp/out" &&
   grep -q 'shm_name "pmt-too-long" is longer than SLICK_PERFMON_SHM_NAME_MAX (8)' "$tmp/err"; then
	echo "ok: SLICK_PERFMON_SHM_NAME_MAX=8 makes start() refuse a 12-character name"
else
	cat "$tmp/out" "$tmp/err"; echo "FAIL: SLICK_PERFMON_SHM_NAME_MAX=8 not honoured"; fail=1
fi
printf '#include <perfmon.h>\n#include <slick/perfmon.hpp>\n' > "$tmp/clash.cc"
if $CXX -std=c++20 -DSLICK_PERFMON_ENABLED=0 $inc $compat -c "$tmp/clash.cc" -o "$tmp/clash.o" 2>"$tmp/err"; then
	echo "FAIL: SLICK_PERFMON_ENABLED=0 after <perfmon.h> enabled was accepted"; fail=1
else
	grep -q 'disagree' "$tmp/err" && echo "ok: disagreeing switches are an error" ||
		{ cat "$tmp/err"; echo "FAIL: no clear error for disagreeing switches"; fail=1; }
fi
exit $fail
