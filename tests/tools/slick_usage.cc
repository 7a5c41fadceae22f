/*
 * slick_usage.cc - a producer written purely against slick-perfmon's API,
 * in the shapes its documentation teaches, compiled as C++20 against
 * perfmond's compatibility headers (include/perfmon/compat) and run
 * against a real perfmond by tests/integration/cxx_daemon.sh, which checks the CSV.
 *
 *   slick_usage SHM           stamp the fixed workload below into perfmond SHM
 *   slick_usage --modes       start() in every unsupported way; prints results
 *   slick_usage --env         start() with a default config (empty shm_name):
 *                             $SLICK_PERFMON_SHM names the instance; prints
 *                             "env N" (start()'s result) and, when started,
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
 *   queue_depth(3)  500 value samples 0..499 (SLICK_PERFMON_VALUE)
 *   env_start  (4)  250 spans, with --env only
 */
#include <slick/perfmon.hpp>
#include <slick/perfmon/collector.hpp>
#include <slick/perfmon/types.hpp>

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
	default:
		return {};   /* queue_depth stays unnamed: point_3 */
	}
}
static_assert(pt_name(0, slick::perfmon::kEndStep) == "sent", "usable at compile time");

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
	slick::perfmon::end(pt::order_path);
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

/* ---- set-up, the documented shared-producer way -------------------------------- */

static int run(const char *shm)
{
	slick::perfmon::config cfg;
	cfg.point_count = static_cast<slick::perfmon::point_id>(pt::count);
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

	for (uint64_t v = 0; v < 500; v++)
		SLICK_PERFMON_VALUE(pt::queue_depth, v);

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
	local.point_count = static_cast<slick::perfmon::point_id>(pt::count);
	local.name_of = &pt_name;
	local.path = "perfmon.csv";
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

/*
 * The set-up slick-perfmon documents for a process told where to report by
 * its environment: a default config (run_mode local, no shm_name), so
 * $SLICK_PERFMON_SHM supplies the name and makes it a producer.
 */
static int env_start()
{
	slick::perfmon::config cfg;
	cfg.point_count = static_cast<slick::perfmon::point_id>(pt::count);
	cfg.name_of = &pt_name;
	auto &perfmon = slick::perfmon::Collector::instance();
	bool ok = perfmon.start(cfg);

	std::printf("env %d\n", ok);
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
		return env_start();
	if (argc == 3 && std::strcmp(argv[1], "--remove") == 0) {
		std::printf("remove_shm %d\n", slick::perfmon::Collector::remove_shm(argv[2]));
		return 0;
	}
	if (argc == 2)
		return run(argv[1]);
	std::fprintf(stderr, "usage: slick_usage SHM | --modes | --env | --remove SHM\n");
	return 64;
}
