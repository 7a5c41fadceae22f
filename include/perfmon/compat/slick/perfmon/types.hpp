/*
 * <slick/perfmon/types.hpp> over perfmond: the session configuration, and
 * the statistics type a program cannot have here.
 *
 * Every field slick-perfmon's config has is here with its default, so
 * existing set-up code compiles.  A producer uses run_mode, shm_name,
 * point_count, name_of and create_if_absent; the collector's fields (paths,
 * intervals, capacities, percentiles, unit) are perfmond's configuration
 * instead (perfmond.conf(5)) and are not read here.  See
 * docs/migrating-from-slick-perfmon.md for the mapping.
 *
 * `stats` keeps its fields, but constructing one is a compile error whose
 * message says where perfmond's figures are: they are computed by the
 * daemon, never in the measured process.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_COMPAT_SLICK_PERFMON_TYPES_HPP
#define PERFMON_COMPAT_SLICK_PERFMON_TYPES_HPP

#include <slick/perfmon/config.hpp>
#include <slick/perfmon/stamp_types.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace slick::perfmon {

/* (point, step) -> label; an empty view leaves the key unnamed. */
using name_fn = std::string_view (*)(point_id, std::uint8_t) noexcept;

/* Only shared_producer exists with perfmond; the other two make start()
 * return false with a message naming what to run instead. */
enum class mode { local, shared_producer, shared_collector };

enum class unit { cycles, nanoseconds, microseconds };

struct config {
	mode run_mode = mode::local;
	std::string shm_name;                 /* the perfmond instance's shm name */

	point_id point_count = 0;             /* points whose names are published */
	name_fn name_of = nullptr;

	/* Collector-side; perfmond.conf(5) holds their counterparts. */
	std::uint32_t max_open_spans = 4096;  /* [collector] max_open_spans */
	std::uint32_t max_stages = 1024;      /* [collector] max_stages */
	std::uint32_t max_names = 512;        /* [shm] max_names */
	std::string path = "perfmon.csv";     /* [output] csv, perfmond -o */
	std::string summary_path = "perfmon_summary.txt";  /* [output] summary */
	std::chrono::milliseconds flush_interval{1000};     /* [collector] flush_interval */
	std::chrono::milliseconds poll_interval{1};         /* [collector] poll_interval */
	std::chrono::milliseconds csv_flush_interval{0};    /* [output] csv_flush_interval */
	std::chrono::milliseconds calibration_time{10};     /* measured by perfmond */
	std::chrono::milliseconds stalled_sample_timeout{5000};  /* [collector] */
	std::uint32_t queue_capacity = 1u << 16;  /* [shm] capacity */
	std::vector<double> percentiles = {50.0, 90.0, 99.0, 99.9};  /* [output] */
	unit output_unit = unit::nanoseconds;     /* [output] unit */
	bool subtract_overhead = false;           /* [output] subtract_overhead */

	/* perfmond always creates the segments itself; see Collector::start(). */
	bool create_if_absent = false;
};

namespace detail {
template <typename D>
constexpr int no_stats() noexcept
{
	static_assert(unsupported<D>,
		      "slick::perfmon::stats is not available with perfmond: statistics are "
		      "computed by the perfmond daemon, not in this process; read its CSV (one "
		      "row per stage and interval) and summary, or run perfmonctl top NAME, "
		      "perfmonctl summary NAME, perfmonctl report FILE.csv "
		      "(docs/migrating-from-slick-perfmon.md)");
	return 0;
}
} /* namespace detail */

/* One stage's figures, as slick-perfmon's collector computed them. */
struct stats {
	std::uint64_t count = 0;
	std::uint64_t dropped = 0;
	std::uint64_t invalid = 0;
	std::uint64_t stalled = 0;
	std::uint64_t out_of_range = 0;
	std::uint64_t abandoned = 0;
	std::uint64_t orphan = 0;
	double min = 0.0;
	double max = 0.0;
	double mean = 0.0;
	double stddev = 0.0;
	std::vector<double> percentiles;
	bool invariant_tsc = true;

	/* The refusal sits in a default template argument, so it is
	 * evaluated, and reported, at the line that constructs one. */
	template <typename D = void, int = detail::no_stats<D>()>
	stats() noexcept
	{
	}
};

} /* namespace slick::perfmon */

#endif /* PERFMON_COMPAT_SLICK_PERFMON_TYPES_HPP */
