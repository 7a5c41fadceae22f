/*
 * <slick/perfmon/collector.hpp> over perfmond: starting a producer session.
 *
 * With perfmond the collector is a daemon (`perfmond@NAME`), never a part of
 * the measured process.  Collector::start() therefore knows one mode,
 * shared_producer: attach to the segments of cfg.shm_name and publish
 * cfg.name_of for cfg.point_count points.  The two in-process modes cannot
 * exist here; start() refuses them with a message on stderr naming the
 * perfmond equivalent, so a program never records nothing without saying
 * so.
 *
 * As with slick-perfmon, $SLICK_PERFMON_SHM starts a session by itself:
 * <perfmon.h> attaches at load time (and, should perfmond start later, as
 * soon as its segments appear), and Collector::instance() takes that
 * session on as if start() had been called with a default configuration:
 * running() and enabled() say whether the process stamps, and a later
 * start() or shutdown() replaces or ends it.
 *
 * The figures the daemon publishes in the control block (the TSC
 * rate, whether it is invariant, the stamp overhead) are read from there.
 * Everything else is read from perfmond's CSV, summary and perfmonctl, not
 * from this object: the calls that would return it (snapshots, reports,
 * StageReport, the collector's own counters, its ring) fail to compile
 * with a message saying where to look.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_COMPAT_SLICK_PERFMON_COLLECTOR_HPP
#define PERFMON_COMPAT_SLICK_PERFMON_COLLECTOR_HPP

#include <slick/perfmon.hpp>
#include <slick/perfmon/config.hpp>
#include <slick/perfmon/types.hpp>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#if SLICK_PERFMON_ENABLED
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

/* How every refusal below ends: where the mapping is written down. */
#define PERFMON__SLICK_GUIDE " (docs/migrating-from-slick-perfmon.md)"

namespace slick::perfmon {

namespace detail {
struct environment_start;

template <typename D>
constexpr int no_stage_report() noexcept
{
	static_assert(unsupported<D>,
		      "slick::perfmon::StageReport is not available with perfmond: the rows are "
		      "built by the perfmond daemon, not in this process; read its CSV (one row "
		      "per stage and interval) and summary, or run perfmonctl top NAME, "
		      "perfmonctl summary NAME, perfmonctl report FILE.csv" PERFMON__SLICK_GUIDE);
	return 0;
}
} /* namespace detail */

/* One row of slick-perfmon's in-process report.  Its fields are kept;
 * constructing one is a compile error naming perfmond's way (see stats). */
struct StageReport {
	point_id point = 0;
	std::uint8_t from = 0;
	std::uint8_t to = 0;
	std::string point_name;
	std::string stage_name;
	stats interval;
	stats cumulative;
	bool anomalies_only = false;
	bool overflow = false;

	template <typename D = void, int = detail::no_stage_report<D>()>
	StageReport() noexcept
	{
	}
};

/* A member that cannot exist with perfmond: a compile error, at the line
 * that calls it, naming what to use instead.  The return type is deduced,
 * so the body (and its static_assert) is instantiated at the call. */
#define PERFMON__SLICK_UNAVAILABLE(fn, instead)                                           \
	template <typename... A>                                                          \
	auto fn(A &&...) const noexcept                                                   \
	{                                                                                 \
		static_assert(detail::unsupported<A...>,                                  \
			      "slick::perfmon::Collector::" #fn                           \
			      "() is not available with perfmond: " instead               \
				      PERFMON__SLICK_GUIDE);                              \
	}

/* Where the in-process statistics went. */
#define PERFMON__SLICK_STATS_ELSEWHERE                                                    \
	"the statistics live in the perfmond daemon; read its CSV and summary, or run "  \
	"perfmonctl top / summary / report"

class Collector {
public:
	Collector() = default;
	Collector(const Collector &) = delete;
	Collector &operator=(const Collector &) = delete;

	~Collector() { shutdown(); }

	/* The process's Collector (set_instance() may point it elsewhere);
	 * every Collector of a process stamps into the one attached ring. */
	static Collector &instance() noexcept
	{
		return *instance_ptr().load(std::memory_order_acquire);
	}

	/* Make instance() return `c` (nullptr: the default one again). */
	static void set_instance(Collector *c) noexcept
	{
		instance_ptr().store(c ? c : &default_instance(), std::memory_order_release);
	}

	/*
	 * Attach to the perfmond instance cfg.shm_name (shared_producer) and
	 * publish the names.  With an empty shm_name, $SLICK_PERFMON_SHM
	 * supplies it and makes the session a producer whatever run_mode says
	 * (slick-perfmon's rule).  Ends the session running before.  Returns false
	 * when $SLICK_PERFMON_DISABLE is set, when no perfmond has created the
	 * segments (quietly: the process then records nothing and every stamp
	 * costs one load and a branch), and, with a message on stderr, for the
	 * local and shared_collector modes and for any other attach failure.
	 */
	bool start(config next = {})
	{
		shutdown();
		cfg_ = std::move(next);
#if SLICK_PERFMON_ENABLED
		config &cfg = cfg_;
		if (env_set("SLICK_PERFMON_DISABLE"))
			return false;
		apply_environment(cfg);
		const char *name = cfg.shm_name.empty() ? "NAME" : cfg.shm_name.c_str();
		if (cfg.run_mode == mode::local) {
			std::fprintf(stderr,
				     "slick::perfmon (perfmond): run_mode local is not available: "
				     "perfmond collects out of process, so this process records "
				     "nothing.  Start the collector with `systemctl start "
				     "perfmond@%s` (or `perfmond --shm %s --csv %s`) and use "
				     "mode::shared_producer with shm_name \"%s\", or set "
				     "SLICK_PERFMON_SHM=%s.\n",
				     name, name, cfg.path.empty() ? "perfmon.csv" : cfg.path.c_str(),
				     name, name);
			return false;
		}
		if (cfg.run_mode == mode::shared_collector) {
			std::fprintf(stderr,
				     "slick::perfmon (perfmond): run_mode shared_collector is not "
				     "available: the collector is the perfmond daemon.  Run "
				     "`systemctl start perfmond@%s` (or `perfmond --shm %s`) "
				     "instead, and start producers with mode::shared_producer; "
				     "this process records nothing.\n",
				     name, name);
			return false;
		}
		if (cfg.shm_name.empty()) {
			std::fprintf(stderr, "slick::perfmon (perfmond): shared_producer needs "
					     "shm_name (or SLICK_PERFMON_SHM): the shm name of the "
					     "perfmond instance; this process records nothing.\n");
			return false;
		}
		if (cfg.shm_name.size() > SLICK_PERFMON_SHM_NAME_MAX) {
			std::fprintf(stderr,
				     "slick::perfmon (perfmond): shm_name \"%s\" is longer than "
				     "SLICK_PERFMON_SHM_NAME_MAX (%d); this process records "
				     "nothing.\n",
				     name, SLICK_PERFMON_SHM_NAME_MAX);
			return false;
		}
		if (cfg.create_if_absent)
			std::fprintf(stderr,
				     "slick::perfmon (perfmond): create_if_absent is ignored: "
				     "segments are created by perfmond; start `perfmond@%s` "
				     "before this producer.\n",
				     name);
		int r = perfmon__cxx::attach(std::string_view(cfg.shm_name));
		if (r == -ENOENT)
			return false;
		if (r < 0) {
			std::fprintf(stderr,
				     "slick::perfmon (perfmond): cannot attach to \"%s\" "
				     "(/dev/shm/%s and /dev/shm/%s.meta): %s; this process "
				     "records nothing.  `perfmonctl status %s` shows the "
				     "instance.\n",
				     name, name, name,
				     r == -EPROTO ? "segment layout from another perfmond version"
						  : std::strerror(-r),
				     name);
			return false;
		}
		conflicts_ = 0;
		if (cfg.name_of) {
			int c = perfmon__cxx::publish_names(cfg.point_count, cfg.name_of);
			conflicts_ = c > 0 ? static_cast<std::uint32_t>(c) : 0;
		}
		session_ = true;
		return true;
#else
		return false;
#endif
	}

	/* End the session: detach, and later stamps of this process are no-ops. */
	void shutdown() noexcept
	{
		if (!session_)
			return;
		perfmon_detach();
		session_ = false;
	}

	/* A session is on and the process is attached to its segments. */
	bool running() const noexcept { return session_ && attached(); }

	/* Live switch; a disabled stamp costs one load and a branch. */
	void set_enabled(bool on) noexcept
	{
		if (session_)
			perfmon_set_enabled(on);
	}

	bool enabled() const noexcept { return session_ && perfmon_enabled(); }

	/* Labels refused when start() published them (first label wins). */
	std::uint32_t name_conflicts() const noexcept { return conflicts_; }

	/* perfmond flushes on its own interval; nothing to do here. */
	void flush() noexcept {}

	/* The configuration of the last start(), with the environment applied. */
	const config &configuration() const noexcept { return cfg_; }

	/* The daemon's TSC rate in Hz, refined over its run; 0 while this
	 * process is not attached. */
	double tsc_hz() const noexcept
	{
		return static_cast<double>(from_meta(&perfmon_meta_header::tsc_hz_milli, 0)) / 1000.0;
	}

	/* Whether the daemon found an invariant TSC (true while not attached,
	 * as before a collector has calibrated). */
	bool invariant_tsc() const noexcept
	{
		return from_meta(&perfmon_meta_header::tsc_invariant, 1) != 0;
	}

	/* The cost of one stamp in clock ticks, as the daemon measured it at
	 * its start; 0 while not attached. */
	std::uint64_t overhead_cycles() const noexcept
	{
		return from_meta(&perfmon_meta_header::overhead_ticks, 0);
	}

	/*
	 * Remove the segments of shm_name, as `perfmonctl remove NAME`: refused
	 * (false, with a message) while a perfmond collector is alive on them.
	 * True when neither segment exists afterwards.
	 */
	static bool remove_shm(std::string_view shm_name)
	{
#if SLICK_PERFMON_ENABLED
		/* "/" NAME and "/" NAME ".meta", each with its terminator */
		char ring[PERFMON_NAME_MAX + 2], meta[PERFMON_NAME_MAX + 2 + 5];
		if (!valid_name(shm_name)) {
			std::fprintf(stderr, "slick::perfmon (perfmond): remove_shm: \"%.*s\" is "
					     "not a segment name (1-%d of [A-Za-z0-9._-], not "
					     "starting with '.' nor ending in '.meta')\n",
				     static_cast<int>(shm_name.size()), shm_name.data(),
				     PERFMON_NAME_MAX);
			return false;
		}
		std::snprintf(ring, sizeof(ring), "/%.*s", static_cast<int>(shm_name.size()),
			      shm_name.data());
		std::snprintf(meta, sizeof(meta), "%s.meta", ring);
		pid_t pid = live_collector(meta);
		if (pid > 0) {
			std::fprintf(stderr,
				     "slick::perfmon (perfmond): remove_shm: perfmond (pid %ld) "
				     "is collecting on \"%s\"; stop it first (`systemctl stop "
				     "perfmond@%s`), or use `perfmonctl remove %s --force`\n",
				     static_cast<long>(pid), ring + 1, ring + 1, ring + 1);
			return false;
		}
		bool gone = true;
		if (shm_unlink(ring) < 0 && errno != ENOENT)
			gone = false;
		if (shm_unlink(meta) < 0 && errno != ENOENT)
			gone = false;
		if (!gone)
			std::fprintf(stderr, "slick::perfmon (perfmond): remove_shm: cannot remove "
					     "/dev/shm/%s: %s\n",
				     ring + 1, std::strerror(errno));
		return gone;
#else
		(void)shm_name;
		return false;
#endif
	}

	PERFMON__SLICK_UNAVAILABLE(snapshot, PERFMON__SLICK_STATS_ELSEWHERE)
	PERFMON__SLICK_UNAVAILABLE(snapshot_total, PERFMON__SLICK_STATS_ELSEWHERE)
	PERFMON__SLICK_UNAVAILABLE(reports, PERFMON__SLICK_STATS_ELSEWHERE)
	PERFMON__SLICK_UNAVAILABLE(dump_summary, PERFMON__SLICK_STATS_ELSEWHERE)
	PERFMON__SLICK_UNAVAILABLE(last_flush_cycles,
				   "perfmond does not publish what its flushes cost; perfmonctl "
				   "status NAME shows how the daemon keeps up (events drained, "
				   "ring use, dropped)")
	PERFMON__SLICK_UNAVAILABLE(peak_open_spans,
				   "perfmond keeps the open-span table; perfmonctl status NAME "
				   "shows open_spans (those open now) and [collector] "
				   "max_open_spans sizes the table")
	PERFMON__SLICK_UNAVAILABLE(ring,
				   "the ring is perfmond's segment /dev/shm/NAME, not an object of "
				   "this process; perfmonctl status NAME describes it, and stamps "
				   "reach it once start() has attached")

private:
	friend struct detail::environment_start;

	static Collector &default_instance() noexcept
	{
		static Collector c;
		return c;
	}

	static std::atomic<Collector *> &instance_ptr() noexcept
	{
		static std::atomic<Collector *> p{&default_instance()};
		return p;
	}

	/* A field of the attached control block, written by the daemon; the
	 * lock keeps a concurrent detach from unmapping it under the read. */
	template <typename T>
	PERFMON__CXX_INLINE static T from_meta(T perfmon_meta_header::*field,
					       unsigned absent) noexcept
	{
#if SLICK_PERFMON_ENABLED
		T v = absent;
		perfmon__lock();
		if (perfmon__g.meta)
			v = __atomic_load_n(&(perfmon__g.meta->*field), __ATOMIC_RELAXED);
		perfmon__unlock();
		return v;
#else
		(void)field;
		return absent;
#endif
	}

	static bool attached() noexcept
	{
#if SLICK_PERFMON_ENABLED
		perfmon__lock();
		bool on = perfmon__g.ring != nullptr;
		perfmon__unlock();
		return on;
#else
		return false;
#endif
	}

#if SLICK_PERFMON_ENABLED
	static bool env_set(const char *var)
	{
		const char *v = std::getenv(var);
		return v && v[0] && !(v[0] == '0' && v[1] == '\0');
	}

	/* slick-perfmon's rules: the variables fill in only what the
	 * configuration left at its default, and a name from the environment
	 * makes the session a producer. */
	static void apply_environment(config &cfg)
	{
		const char *shm = std::getenv("SLICK_PERFMON_SHM");
		const char *csv = std::getenv("SLICK_PERFMON_CSV");
		if (cfg.shm_name.empty() && shm && shm[0]) {
			cfg.shm_name = shm;
			cfg.run_mode = mode::shared_producer;
		}
		if (csv && csv[0] && cfg.path == config{}.path)
			cfg.path = csv;
	}

	/*
	 * Before main(): take on the session <perfmon.h>'s load-time attach
	 * opened from $SLICK_PERFMON_SHM (its segment watcher attaches later
	 * if perfmond is not up yet).  $SLICK_PERFMON_CSV alone asked
	 * slick-perfmon for an in-process collector writing that file, which
	 * perfmond cannot be: say so rather than record nothing in silence.
	 */
	void adopt_environment()
	{
		if (session_ || env_set("SLICK_PERFMON_DISABLE"))
			return;
		const char *shm = std::getenv("SLICK_PERFMON_SHM");
		const char *csv = std::getenv("SLICK_PERFMON_CSV");
		if (shm && shm[0]) {
			cfg_ = config{};
			apply_environment(cfg_);
			session_ = true;
		} else if (csv) {
			std::fprintf(stderr,
				     "slick::perfmon (perfmond): SLICK_PERFMON_CSV=%s is not read: "
				     "the CSV is written by the perfmond daemon (`perfmond --shm "
				     "NAME --csv %s`, or `systemctl start perfmond@NAME`).  Set "
				     "SLICK_PERFMON_SHM=NAME to report to it; until then this "
				     "process records nothing.\n",
				     csv, csv[0] ? csv : "PATH");
		}
	}

	static bool valid_name(std::string_view n)
	{
		char buf[PERFMON_NAME_MAX + 2];

		if (n.size() > PERFMON_NAME_MAX)
			return false;
		n.copy(buf, n.size());
		buf[n.size()] = '\0';
		return n.find('\0') == std::string_view::npos &&
		       perfmon__shm_name_check(buf, nullptr) == 0;
	}

	/* The pid of a running collector recorded in the control segment, if
	 * that process is alive; else 0. */
	static pid_t live_collector(const char *meta_path)
	{
		struct stat st;
		pid_t pid = 0;
		int fd = shm_open(meta_path, O_RDONLY, 0);
		if (fd < 0)
			return 0;
		if (fstat(fd, &st) == 0 &&
		    static_cast<size_t>(st.st_size) >= sizeof(struct perfmon_meta_header)) {
			void *p = mmap(nullptr, sizeof(struct perfmon_meta_header), PROT_READ,
				       MAP_SHARED, fd, 0);
			if (p != MAP_FAILED) {
				const auto *m = static_cast<const struct perfmon_meta_header *>(p);
				if (m->magic == PERFMON_META_MAGIC &&
				    m->collector_state == PERFMON_COLLECTOR_RUNNING &&
				    m->collector_pid > 0 &&
				    (kill(static_cast<pid_t>(m->collector_pid), 0) == 0 || errno == EPERM))
					pid = static_cast<pid_t>(m->collector_pid);
				munmap(p, sizeof(struct perfmon_meta_header));
			}
		}
		close(fd);
		return pid;
	}
#endif

	config cfg_;
	bool session_ = false;     /* started, or taken on from the environment */
	std::uint32_t conflicts_ = 0;
};

#undef PERFMON__SLICK_UNAVAILABLE
#undef PERFMON__SLICK_STATS_ELSEWHERE
#undef PERFMON__SLICK_GUIDE

using collector = Collector;

#if SLICK_PERFMON_ENABLED
namespace detail {
/* slick-perfmon starts a session from the environment before main(); so
 * does this, in every program that includes this header. */
struct environment_start {
	environment_start() noexcept
	{
		try {
			Collector::instance().adopt_environment();
		} catch (...) {
			/* out of memory before main(): the program runs unmeasured */
		}
	}
};
inline environment_start g_environment_start;
} /* namespace detail */
#endif

} /* namespace slick::perfmon */

#endif /* PERFMON_COMPAT_SLICK_PERFMON_COLLECTOR_HPP */
