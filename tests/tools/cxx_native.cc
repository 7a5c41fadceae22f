/*
 * cxx_native.cc - a C++17 producer using <perfmon.hpp>, run against a real
 * perfmond by tests/integration/cxx_daemon.sh, which checks the CSV it leads to.
 *
 *   cxx_native SHM
 *
 * Workload (the test's expected counts):
 *   rpc (10)      500 spans begin -> decode -> encode -> end, keyed by seq,
 *                 plus 100 while runtime-disabled (not recorded)
 *   batch (11)    300 value samples 1..300
 *   guarded (12)  300 scope guards: 100 with a step and a normal exit, 100
 *                 early returns, 100 exits by exception; 20 cancelled
 *   moved (13)    150 spans: 50 guards returned by value, 50 move
 *                 assignments (each ends the overwritten guard's span too)
 *   point 20      10 spans on a plain integer point, left unnamed
 *   point 14      40 spans, named by a lambda that returns a std::string
 *                 (longer than any in-object buffer, so it lives on the heap)
 *   point 15      30 spans, named by a C function returning const char *,
 *                 a null pointer for every key it leaves unnamed
 */
#include <perfmon.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

enum class point : std::uint16_t { rpc = 10, batch = 11, guarded = 12, moved = 13 };
enum class stage : std::uint8_t { decode = 1, encode = 2 };

constexpr std::string_view name_of(std::uint32_t p, std::uint8_t s)
{
	switch (p) {
	case 10:
		return s == 0 ? "rpc" : s == 1 ? "decode" : s == 2 ? "encode" : s == 255 ? "reply" : "";
	case 11:
		return s == 0 ? "batch" : "";
	case 12:
		return s == 0 ? "guarded" : s == 1 ? "decode" : "";
	case 13:
		return s == 0 ? "moved" : "";
	default:
		return {};
	}
}
static_assert(name_of(10, 255) == "reply", "a constexpr name function");

static_assert(!std::is_copy_constructible_v<perfmon::scope>, "scope is not copyable");
static_assert(!std::is_copy_assignable_v<perfmon::scope>, "scope is not copy-assignable");
static_assert(std::is_nothrow_move_constructible_v<perfmon::scope>, "scope moves");
static_assert(std::is_nothrow_move_assignable_v<perfmon::scope>, "scope move-assigns");
static_assert(noexcept(perfmon::begin(point::rpc)) && noexcept(perfmon::value(point::batch, 1)),
	      "stamps never throw");
static_assert(perfmon::to_point(point::moved) == 13, "enum class points need no cast");

/* Names the way a C table does: a null pointer for "unnamed". */
static const char *c_style_name(std::uint32_t p, std::uint8_t s)
{
	return p == 15 && s == 0 ? "c_style" : nullptr;
}

static int failures;
static void check(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "cxx_native: FAIL: %s\n", what);
		failures++;
	}
}

/* Work the optimiser cannot remove; thread-private, so threads share nothing. */
static void work(unsigned n)
{
	volatile unsigned sink = 0;
	for (unsigned i = 0; i < n; i++)
		sink = sink + i;
}

static int guarded(int how)
{
	perfmon::scope g(point::guarded, static_cast<std::uint32_t>(how));
	if (how == 1)
		return 1;
	work(3);
	if (how == 2)
		throw std::runtime_error("unwound");
	g.step(stage::decode);
	return 0;
}

static perfmon::scope make_guard(std::uint32_t seq)
{
	perfmon::scope g(point::moved, seq);
	return g;   /* moved (or elided) out: still exactly one end */
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: cxx_native SHM\n");
		return 64;
	}
	check(perfmon::attach("pmt-cxx-native-absent") == -ENOENT, "absent segments give -ENOENT");
	check(perfmon::attach(std::string(300, 'x')) == -ENAMETOOLONG, "long name refused");
	check(perfmon::attach(std::string(argv[1])) == 0, "attach by std::string");
	check(perfmon::enabled(), "enabled after attach");
	check(perfmon::publish_names(14, name_of) == 0, "names published without conflict");
	check(perfmon::publish_names(14, [](std::uint32_t p, std::uint8_t s) {
		      return name_of(p, s);
	      }) == 0, "republishing the same labels is no conflict");
	const std::string too_long(PERFMON_LABEL_SIZE, 'y');
	check(perfmon::publish_names(21, [&](std::uint32_t p, std::uint8_t s) {
		      return p == 20 && s == 7 ? std::string_view(too_long) : std::string_view();
	      }) == 1, "a label longer than the table's is refused, not truncated");

	/* The label is a temporary std::string: publish_names must keep it
	 * alive while it copies it (a view of a destroyed string reads freed
	 * heap memory). */
	check(perfmon::publish_names(15, [](std::uint32_t p, std::uint8_t s) {
		      return p == 14 && s == 0 ? std::string("owned_by_a_std_string_label")
					       : std::string();
	      }) == 0, "names from a function returning std::string");
	check(perfmon::publish_names(16, c_style_name) == 0,
	      "names from a function returning const char *, nullptr for unnamed");

	for (std::uint32_t i = 0; i < 500; i++) {
		perfmon::begin(point::rpc, i);
		work(2);
		perfmon::step(point::rpc, stage::decode, i);
		work(2);
		perfmon::step(point::rpc, stage::encode, i);
		perfmon::end(point::rpc, i);
	}
	perfmon::set_enabled(false);
	check(!perfmon::enabled(), "disabled");
	for (std::uint32_t i = 0; i < 100; i++) {
		perfmon::begin(point::rpc, i);
		perfmon::end(point::rpc, i);
	}
	perfmon::set_enabled(true);

	for (std::uint64_t v = 1; v <= 300; v++)
		perfmon::value(point::batch, v);

	int thrown = 0;
	for (int i = 0; i < 300; i++) {
		try {
			guarded(i % 3);
		} catch (const std::runtime_error &) {
			thrown++;
		}
	}
	check(thrown == 100, "100 exceptions went through guards");
	for (std::uint32_t i = 0; i < 20; i++) {
		perfmon::scope g(point::guarded, 1000 + i);
		g.cancel();
	}

	for (std::uint32_t i = 0; i < 50; i++) {
		perfmon::scope g = make_guard(i);
		check(g.point() == 13 && g.seq() == i, "a returned guard keeps its key");
	}
	for (std::uint32_t i = 0; i < 50; i++) {
		perfmon::scope a(point::moved, 100 + i);
		perfmon::scope b(point::moved, 200 + i);
		a = std::move(b);   /* ends 100+i now; 200+i when a goes */
	}

	for (int i = 0; i < 10; i++) {
		perfmon::begin(20);
		perfmon::end(20);
	}
	for (int i = 0; i < 40; i++) {
		perfmon::begin(14);
		perfmon::end(14);
	}
	for (int i = 0; i < 30; i++) {
		perfmon::begin(15);
		perfmon::end(15);
	}

	perfmon::detach();
	check(!perfmon::enabled(), "detached");
	perfmon::begin(point::rpc);   /* a no-op now */
	if (failures)
		return 1;
	std::printf("cxx_native: stamped\n");
	return 0;
}
