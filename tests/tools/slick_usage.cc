/*
 * slick_usage.cc - a producer written purely against slick-perfmon's API,
 * in the shapes its documentation teaches, compiled as C++20 against
 * perfmond's compatibility headers (include/perfmon/compat) and run
 * against a real perfmond by tests/integration/cxx_daemon.sh, which checks the CSV.
 *
 *   slick_usage SHM           stamp the fixed workload below into perfmond SHM
 *   slick_usage --modes       start() in every unsupported way; prints results
 *   slick_usage --env [MODE]  the session $SLICK_PERFMON_SHM starts by itself:
 *                             prints "before running R enabled E shm NAME
 *                             mode M" and, when running, stamps 120 spans
 *                             on point 7 (named by no one: point_7) without
 *                             calling start(); then start() with a default
 *                             config (empty shm_name) but run_mode MODE
 *                             (local, shared_producer, shared_collector;
 *                             default local): prints "env N mode M" (start()'s
 *                             result, the mode it ran in) and, when started,
 *                             stamps 250 env_start spans
 *   slick_usage --remove SHM  Collector::remove_shm(SHM); prints "remove_shm N"
 *
 * Workload (the test's expected counts):
 *   order_path (0)  1000 pipelines begin -> parse -> risk -> route -> end,
 *                   plus 200 more while runtime-disabled (not recorded)
 *   ack_wait   (1)  600 spans keyed by order id, begun on one thread and
 *                   ended on another, plus 4 threads x 250 overlapping spans
 *                   keyed by thread-unique seqs
 *   book_update(2)  300 scope guards: 100 normal exits, 100 early returns,
 *                   100 exits by exception; 50 more cancelled
 *   queue_depth(3)  500 value samples 0..499 (250 through value(), 250
 *                   through SLICK_PERFMON_VALUE)
 *   env_start  (4)  250 spans, with --env only
 *   raw_stamp  (5)  100 spans stamped event by event with stamp<IsBegin>()
 *                   and make_event(): begin -> 1 ("first") -> end
 *
 * The helpers that need no daemon (make_event, step_of, seq_of, the
 * constants, sample, the configuration macros) are checked at compile time
 * below; run() checks the Collector's accessors against the live daemon and
 * prints the figures it reads from it ("daemon tsc_hz H invariant I
 * overhead O") for the test to compare with perfmonctl status.
 */
#include <slick/perfmon.hpp>
#include <slick/perfmon/collector.hpp>
#include <slick/perfmon/config.hpp>
#include <slick/perfmon/scoped.hpp>
#include <slick/perfmon/stamp_types.hpp>
#include <slick/perfmon/types.hpp>
#include <slick/perfmon/version.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

/* ---- points, declared the documented way ---------------------------------- */

enum class pt : slick::perfmon::point_id {
	order_path = 0,
	ack_wait = 1,
	book_update = 2,
	queue_depth = 3,
	env_start = 4,
	raw_stamp = 5,
	count
};

enum : uint8_t { kParse = 1, kRisk = 2, kRoute = 3 };

constexpr std::string_view pt_name(slick::perfmon::point_id p, uint8_t step) noexcept
{
	using namespace slick::perfmon;
	switch (static_cast<pt>(p)) {
	case pt::order_path:
		switch (step) {
		case kBeginStep: return "order_path";
		case kParse: return "parse";
		case kRisk: return "risk";
		case kRoute: return "route";
		case kEndStep: return "sent";
		default: return {};
		}
	case pt::ack_wait:
		return step == kBeginStep ? "ack_wait" : std::string_view{};
	case pt::book_update:
		return step == kBeginStep ? "book_update" : std::string_view{};
	case pt::env_start:
		return step == kBeginStep ? "env_start" : std::string_view{};
	case pt::raw_stamp:
		return step == kBeginStep ? "raw_stamp" : step == 1 ? "first" : std::string_view{};
	default:
		return {};   /* queue_depth stays unnamed: point_3 */
	}
}
static_assert(pt_name(0, slick::perfmon::kEndStep) == "sent", "usable at compile time");

/* ---- the helpers, the constants and the macros ------------------------------- */

namespace sp = slick::perfmon;
static_assert(sp::to_point(pt::count) == 6 && sp::to_point(7u) == 7, "to_point");
#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
static_assert(sp::point_like<pt> && sp::point_like<int> && !sp::point_like<double>, "point_like");
#endif
static_assert(sp::kBeginStep == 0 && sp::kEndStep == 0xFF && sp::kNoSeq == 0 &&
		      sp::kMaxSeq == 0xFFFFFF && sp::kTotalStagePair == 0,
	      "slick-perfmon's constants");
static_assert(sp::kValueStep == 0xFE && sp::kMaxSpanStep == 0xFD, "perfmond's reserved step");
static_assert(sp::make_event(0) == 0 && sp::make_event(3, 0xABCDEF) == 0xABCDEF03u,
	      "make_event: (seq << 8) | step");
static_assert(sp::step_of(sp::make_event(0x7F, sp::kMaxSeq + 1)) == 0x7F &&
		      sp::seq_of(sp::make_event(0x7F, sp::kMaxSeq + 1)) == 0,
	      "a seq above 24 bits loses its top bits and never touches the step");
static_assert(sp::seq_of(sp::make_event(0xFF, 0xFFFFFFFFu)) == 0xFFFFFF &&
		      sp::step_of(sp::make_event(0xFF, 0xFFFFFFFFu)) == 0xFF,
	      "step_of and seq_of take the event apart");
static_assert(sizeof(sp::sample) == 16 && alignof(sp::sample) == 16, "a 16-byte sample");
static_assert(SLICK_PERFMON_NAME_CAPACITY == 64 && SLICK_PERFMON_HIST_PRECISION == 4 &&
		      SLICK_PERFMON_SHM_NAME_MAX == 200 && SLICK_PERFMON_CACHE_LINE_SIZE == 64 &&
		      sizeof(SLICK_PERFMON_META_SUFFIX) == sizeof(".meta"),
	      "perfmond's limits under slick-perfmon's names");
static_assert(SLICK_PERFMON_VERSION_MAJOR == 0 && SLICK_PERFMON_VERSION_MINOR == 2,
	      "the interface of slick-perfmon 0.2");
struct SLICK_PERFMON_CACHE_ALIGNED padded {
	int SLICK_PERFMON_CAT(field_, 1);
};
static_assert(alignof(padded) == 64 && sizeof(padded{}.field_1) == sizeof(int), "the macros");

/* sample::store and load round-trip every field. */
SLICK_PERFMON_FORCE_INLINE static bool sample_round_trips()
{
	sp::sample slot{};
	slot.store(0x1122334455667788u, 42, sp::make_event(sp::kEndStep, 9));
	const sp::sample copy = slot.load();
	return copy.timestamp == 0x1122334455667788u && copy.point == 42 &&
	       sp::step_of(copy.event) == sp::kEndStep && sp::seq_of(copy.event) == 9;
}

/* ---- the instrumented code -------------------------------------------------- */

/* Work the optimiser cannot remove; thread-private, so threads share nothing. */
static void work(unsigned n)
{
	volatile unsigned sink = 0;
	for (unsigned i = 0; i < n; i++)
		sink = sink + i;
}

static void on_order(unsigned i)
{
	slick::perfmon::begin(pt::order_path);
	work(i % 7);
	slick::perfmon::step(pt::order_path, kParse);
	work(3);
	slick::perfmon::step(pt::order_path, kRisk);
	work(5);
	slick::perfmon::step(pt::order_path, kRoute);
	work(2);
	slick::perfmon::end(pt::order_path, slick::perfmon::kNoSeq);
}

/* A span opened on one thread and closed on another, keyed by order id. */
struct ack_queue {
	std::mutex m;
	std::condition_variable cv;
	std::deque<uint32_t> ids;
	bool done = false;
};

static void send_order(ack_queue &q, uint32_t order_id)
{
	slick::perfmon::begin(pt::ack_wait, order_id);
	std::lock_guard<std::mutex> lock(q.m);
	q.ids.push_back(order_id);
	q.cv.notify_one();
}

static void on_ack(uint32_t order_id)
{
	slick::perfmon::end(pt::ack_wait, order_id);
}

static void ack_thread(ack_queue &q)
{
	std::unique_lock<std::mutex> lock(q.m);
	for (;;) {
		q.cv.wait(lock, [&] { return q.done || !q.ids.empty(); });
		if (q.ids.empty())
			return;
		uint32_t id = q.ids.front();
		q.ids.pop_front();
		on_ack(id);
	}
}

static void overlapping(unsigned thread)
{
	for (unsigned i = 0; i < 250; i++) {
		const slick::perfmon::span_seq seq = 100000 + thread * 1000 + i;
		slick::perfmon::begin(pt::ack_wait, seq);
		work(10);
		slick::perfmon::end(pt::ack_wait, seq);
	}
}

static int book_update(int how)
{
	SLICK_PERFMON_SCOPE(pt::book_update);
	if (how == 1)
		return 1;   /* early return: the guard ends the span */
	work(4);
	if (how == 2)
		throw std::runtime_error("bad book");   /* so does unwinding */
	return 0;
}

static void book_update_cancelled(uint32_t seq)
{
	SLICK_PERFMON_SCOPE(pt::book_update, seq);
	slick::perfmon::ScopedSample g{pt::book_update, seq + 1000};
	g.cancel();   /* this one publishes no end */
}

/* A span stamped event by event, as slick-perfmon's own tests do. */
static void raw_stamps(slick::perfmon::span_seq seq)
{
	using namespace slick::perfmon;
	stamp<true>(to_point(pt::raw_stamp), make_event(kBeginStep, seq));
	work(3);
	stamp<false>(to_point(pt::raw_stamp), make_event(1, seq));
	work(3);
	stamp<false>(to_point(pt::raw_stamp), make_event(kEndStep, seq));
}

/* The Collector's accessors while it is attached; 0 when all agree. */
static int check_accessors(const char *shm)
{
	auto &perfmon = slick::perfmon::collector::instance();
	const slick::perfmon::config &cfg = perfmon.configuration();
	if (cfg.shm_name != shm || cfg.run_mode != slick::perfmon::mode::shared_producer ||
	    cfg.point_count != slick::perfmon::to_point(pt::count) || cfg.name_of != &pt_name)
		return std::fprintf(stderr, "slick_usage: configuration() is not what start() got\n"), 1;

	slick::perfmon::Collector other;
	slick::perfmon::Collector::set_instance(&other);
	const bool redirected = &slick::perfmon::collector::instance() == &other;
	slick::perfmon::Collector::set_instance(nullptr);
	if (!redirected || &slick::perfmon::collector::instance() != &perfmon)
		return std::fprintf(stderr, "slick_usage: set_instance() did not redirect\n"), 1;

	if (!sample_round_trips())
		return std::fprintf(stderr, "slick_usage: sample::store/load\n"), 1;
	if (!(perfmon.tsc_hz() > 0))
		return std::fprintf(stderr, "slick_usage: tsc_hz() %f\n", perfmon.tsc_hz()), 1;
	std::printf("daemon tsc_hz %.0f invariant %d overhead %llu\n", perfmon.tsc_hz(),
		    perfmon.invariant_tsc(),
		    static_cast<unsigned long long>(perfmon.overhead_cycles()));
	return 0;
}

/* ---- set-up, the documented shared-producer way -------------------------------- */

static int run(const char *shm)
{
	slick::perfmon::config cfg;
	cfg.point_count = slick::perfmon::to_point(pt::count);
	cfg.name_of = &pt_name;
	cfg.run_mode = slick::perfmon::mode::shared_producer;
	cfg.shm_name = shm;
	cfg.path = "";
	auto &perfmon = slick::perfmon::collector::instance();
	if (!perfmon.start(cfg)) {
		std::fprintf(stderr, "slick_usage: start() failed for %s\n", shm);
		return 1;
	}
	if (!perfmon.running() || !perfmon.enabled() || perfmon.name_conflicts() != 0) {
		std::fprintf(stderr, "slick_usage: running %d enabled %d conflicts %u\n",
			     perfmon.running(), perfmon.enabled(), perfmon.name_conflicts());
		return 1;
	}
	if (check_accessors(shm))
		return 1;

	for (unsigned i = 0; i < 1000; i++)
		on_order(i);
	perfmon.set_enabled(false);
	if (perfmon.enabled())
		return std::fprintf(stderr, "slick_usage: still enabled\n"), 1;
	for (unsigned i = 0; i < 200; i++)
		on_order(i);
	slick::perfmon::collector::instance().set_enabled(true);

	ack_queue q;
	std::thread acker(ack_thread, std::ref(q));
	for (uint32_t id = 1; id <= 600; id++)
		send_order(q, id);
	{
		std::lock_guard<std::mutex> lock(q.m);
		q.done = true;
		q.cv.notify_one();
	}
	acker.join();
	std::vector<std::thread> threads;
	for (unsigned t = 0; t < 4; t++)
		threads.emplace_back(overlapping, t);
	for (auto &t : threads)
		t.join();

	int thrown = 0;
	for (int i = 0; i < 300; i++) {
		try {
			book_update(i % 3);
		} catch (const std::runtime_error &) {
			thrown++;
		}
	}
	for (uint32_t s = 1; s <= 50; s++)
		book_update_cancelled(5000 + s);

	for (uint64_t v = 0; v < 250; v++)
		slick::perfmon::value(pt::queue_depth, v);
	for (uint64_t v = 250; v < 500; v++)
		SLICK_PERFMON_VALUE(pt::queue_depth, v);
	for (slick::perfmon::span_seq seq = 1; seq <= 100; seq++)
		raw_stamps(seq);

	perfmon.shutdown();
	slick::perfmon::begin(pt::order_path);   /* after shutdown: a no-op */
	slick::perfmon::end(pt::order_path);
	std::printf("slick_usage: stamped; %d exceptions through scope guards\n", thrown);
	return thrown == 100 ? 0 : 1;
}

/* Every start() that cannot work with perfmond: one result line each. */
static int modes()
{
	slick::perfmon::config local;   /* run_mode local by default */
	local.point_count = slick::perfmon::to_point(pt::count);
	local.name_of = &pt_name;
	local.path = "perfmon.csv";
	/* The collector's settings a local session takes: every field there is. */
	local.max_open_spans = 8192;
	local.max_stages = 2048;
	local.max_names = 1024;
	local.summary_path = "perfmon_summary.txt";
	local.flush_interval = std::chrono::milliseconds(500);
	local.poll_interval = std::chrono::milliseconds(2);
	local.csv_flush_interval = std::chrono::milliseconds(0);
	local.calibration_time = std::chrono::milliseconds(10);
	local.stalled_sample_timeout = std::chrono::milliseconds(5000);
	local.queue_capacity = 1u << 18;
	local.percentiles = {50.0, 99.0, 99.9};
	local.output_unit = slick::perfmon::unit::microseconds;
	local.subtract_overhead = true;
	local.create_if_absent = false;
	std::printf("local %d\n", slick::perfmon::Collector::instance().start(local));

	slick::perfmon::config coll;
	coll.run_mode = slick::perfmon::mode::shared_collector;
	coll.shm_name = "pmt-slick-none";
	std::printf("shared_collector %d\n", slick::perfmon::collector::instance().start(coll));

	slick::perfmon::config absent;
	absent.run_mode = slick::perfmon::mode::shared_producer;
	absent.shm_name = "pmt-slick-none";
	absent.path = "";
	std::printf("absent %d\n", slick::perfmon::collector::instance().start(absent));
	std::printf("running %d enabled %d\n", slick::perfmon::collector::instance().running(),
		    slick::perfmon::collector::instance().enabled());
	return 0;
}

static const char *mode_name(slick::perfmon::mode m)
{
	switch (m) {
	case slick::perfmon::mode::local: return "local";
	case slick::perfmon::mode::shared_producer: return "shared_producer";
	case slick::perfmon::mode::shared_collector: return "shared_collector";
	}
	return "?";
}

/*
 * The set-ups slick-perfmon documents for a process told where to report
 * by its environment: none at all ($SLICK_PERFMON_SHM starts a session
 * before main()), or a config with no shm_name, which the variable
 * supplies, making it a producer whatever its run_mode.
 */
static int env_start(slick::perfmon::mode mode)
{
	auto &perfmon = slick::perfmon::Collector::instance();
	const slick::perfmon::config &before = perfmon.configuration();
	std::printf("before running %d enabled %d shm %s mode %s\n", perfmon.running(),
		    perfmon.enabled(), before.shm_name.empty() ? "-" : before.shm_name.c_str(),
		    mode_name(before.run_mode));
	if (perfmon.running())
		for (uint32_t i = 1; i <= 120; i++) {
			slick::perfmon::begin(7, i);
			work(i % 3);
			slick::perfmon::end(7, i);
		}

	slick::perfmon::config cfg;
	cfg.point_count = slick::perfmon::to_point(pt::count);
	cfg.name_of = &pt_name;
	cfg.run_mode = mode;
	bool ok = perfmon.start(cfg);

	std::printf("env %d mode %s\n", ok, mode_name(perfmon.configuration().run_mode));
	if (!ok)
		return 0;
	if (!perfmon.running() || !perfmon.enabled())
		return std::fprintf(stderr, "slick_usage: started but not running\n"), 1;
	for (uint32_t i = 1; i <= 250; i++) {
		slick::perfmon::begin(pt::env_start, i);
		work(i % 5);
		slick::perfmon::end(pt::env_start, i);
	}
	perfmon.shutdown();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && std::strcmp(argv[1], "--modes") == 0)
		return modes();
	if (argc == 2 && std::strcmp(argv[1], "--env") == 0)
		return env_start(slick::perfmon::mode::local);
	if (argc == 3 && std::strcmp(argv[1], "--env") == 0) {
		for (auto m : {slick::perfmon::mode::local, slick::perfmon::mode::shared_producer,
			       slick::perfmon::mode::shared_collector})
			if (std::strcmp(argv[2], mode_name(m)) == 0)
				return env_start(m);
	}
	if (argc == 3 && std::strcmp(argv[1], "--remove") == 0) {
		std::printf("remove_shm %d\n", slick::perfmon::Collector::remove_shm(argv[2]));
		return 0;
	}
	if (argc == 2)
		return run(argv[1]);
	std::fprintf(stderr, "usage: slick_usage SHM | --modes | --env [MODE] | --remove SHM\n");
	return 64;
}
