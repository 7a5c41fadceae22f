/*
 * producer_cxx.cc - <perfmon.h> compiled and used as C++17: the API, the
 * scope guard on normal exit and during exception unwinding, and attach
 * errors.  Stamps go into a ring in private memory.  Prints TAP.
 */
#include <perfmon.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

static int failures, tests;

static void ok(bool cond, const char *what)
{
	++tests;
	if (!cond)
		++failures;
	std::printf("%s %d - %s\n", cond ? "ok" : "not ok", tests, what);
}

static perfmon_slot *slots(perfmon_ring_header *r)
{
	return PERFMON_SUBRING_SLOTS(r, 1, 64, 0);
}

static void guarded(bool do_throw)
{
	PERFMON_SCOPE_SEQ(11, 5);
	if (do_throw)
		throw std::runtime_error("unwind");
}

int main()
{
	const uint64_t cap = 64;
	// Mappings are page-aligned; aligned_alloc wants a multiple of the alignment.
	const size_t bytes = (PERFMON_RING_BYTES(1, cap) + 4095) & ~static_cast<size_t>(4095);
	void *mem = std::aligned_alloc(4096, bytes);
	auto *r = static_cast<perfmon_ring_header *>(mem);
	std::memset(mem, 0, bytes);
	r->capacity = cap;
	r->subrings = 1;
	uint64_t &head = PERFMON_SUBRING(r, 0)->head;

	std::printf("1..7\n");
	ok(perfmon_attach("pmt-cxx-never-created") == -ENOENT, "attach without segments is -ENOENT");
	ok(!perfmon_enabled(), "not enabled after a failed attach");

	/* Point the process state at the private ring, as attach would. */
	perfmon__g.ring = r;
	perfmon__g.hot_bits = static_cast<unsigned>(perfmon__hot_bits(cap, 1));
	perfmon_set_enabled(true);
	perfmon_begin(3, 9);
	perfmon_step(3, 1, 9);
	perfmon_end(3, 9);
	perfmon_value(4, 1234);
	ok(head == 4, "four stamps reserved four slots");
	ok(slots(r)[3].tsc == 1234 && (slots(r)[3].point_event & 0xffffffffu) == 4,
	   "value sample stored as written");

	guarded(false);
	bool caught = false;
	try {
		guarded(true);
	} catch (const std::runtime_error &) {
		caught = true;
	}
	ok(caught && head == 8, "scope guard ends on normal exit and during unwinding");
	uint32_t ev = static_cast<uint32_t>(slots(r)[7].point_event >> 32);
	ok(PERFMON_EVENT_STEP(ev) == PERFMON_END_STEP && PERFMON_EVENT_SEQ(ev) == 5,
	   "unwinding end carries the guard's seq");
	perfmon_set_enabled(false);
	perfmon_value(4, 1);
	ok(head == 8, "disabled stamps write nothing");
	perfmon__g.ring = nullptr;
	std::free(mem);
	return failures ? 1 : 0;
}
