/*
 * <slick/perfmon/types.hpp> over perfmond: the session configuration.
 *
 * Every field slick-perfmon's config has is here with its default, so
 * existing set-up code compiles.  A producer uses run_mode, shm_name,
 * point_count, name_of and create_if_absent; the collector's fields (paths,
 * intervals, capacities, percentiles, unit) are perfmond's configuration
 * instead (perfmond.conf(5)) and are not read here.  See
 * docs/migrating-from-slick-perfmon.md for the mapping.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_COMPAT_SLICK_PERFMON_TYPES_HPP
#define PERFMON_COMPAT_SLICK_PERFMON_TYPES_HPP

#include <slick/perfmon.hpp>

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

} /* namespace slick::perfmon */

#endif /* PERFMON_COMPAT_SLICK_PERFMON_TYPES_HPP */
