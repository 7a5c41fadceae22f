/*
 * <slick/perfmon/stamp_types.hpp> over perfmond: the types, constants and
 * event helpers a stamp needs.
 *
 * The event encoding is perfmond's and slick-perfmon's alike: (seq << 8) |
 * step, seq keeping its low 24 bits.  perfmond adds one reserved step,
 * kValueStep (0xFE), which marks a value sample, so a span's intermediate
 * steps run from 1 to kMaxSpanStep (0xFD).
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_COMPAT_SLICK_PERFMON_STAMP_TYPES_HPP
#define PERFMON_COMPAT_SLICK_PERFMON_STAMP_TYPES_HPP

#include <slick/perfmon/config.hpp>

#include <perfmon/cxx.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace slick::perfmon {

using point_id = std::uint32_t;
using event_id = std::uint32_t;   /* (seq << 8) | step */
using span_seq = std::uint32_t;   /* the low 24 bits are kept */

inline constexpr std::uint8_t kBeginStep = PERFMON_BEGIN_STEP;
inline constexpr std::uint8_t kEndStep = PERFMON_END_STEP;
inline constexpr span_seq kNoSeq = PERFMON_NO_SEQ;
inline constexpr span_seq kMaxSeq = PERFMON_MAX_SEQ;
/* perfmond additions: the step of a value sample, and the last step a span
 * may use (a step above it is not a stage boundary). */
inline constexpr std::uint8_t kValueStep = PERFMON_VALUE_STEP;
inline constexpr std::uint8_t kMaxSpanStep = PERFMON_MAX_SPAN_STEP;

/* The (from, to) pair that stands for a span's begin-to-end total: no real
 * transition ends on the begin step, so 0 is free for it. */
inline constexpr std::uint16_t kTotalStagePair = 0x0000;

PERFMON__CXX_INLINE constexpr event_id make_event(std::uint8_t step, span_seq seq = kNoSeq) noexcept
{
	return PERFMON_EVENT(step, seq);
}

PERFMON__CXX_INLINE constexpr std::uint8_t step_of(event_id e) noexcept
{
	return PERFMON_EVENT_STEP(e);
}

PERFMON__CXX_INLINE constexpr span_seq seq_of(event_id e) noexcept
{
	return PERFMON_EVENT_SEQ(e);
}

/*
 * One event as 16 bytes: the raw timestamp, the point and the event.  The
 * same layout as perfmond's struct perfmon_event.  store() and load() touch
 * each field with one relaxed atomic access, so a copy racing with a writer
 * is defined (it may mix two generations of the record, never tear a field).
 */
struct alignas(16) sample {
	std::uint64_t timestamp;
	point_id point;
	event_id event;

	PERFMON__CXX_INLINE void store(std::uint64_t ts, point_id p, event_id e) noexcept
	{
		__atomic_store_n(&timestamp, ts, __ATOMIC_RELAXED);
		__atomic_store_n(&point, p, __ATOMIC_RELAXED);
		__atomic_store_n(&event, e, __ATOMIC_RELAXED);
	}

	PERFMON__CXX_INLINE sample load() noexcept
	{
		sample s;
		s.timestamp = __atomic_load_n(&timestamp, __ATOMIC_RELAXED);
		s.point = __atomic_load_n(&point, __ATOMIC_RELAXED);
		s.event = __atomic_load_n(&event, __ATOMIC_RELAXED);
		return s;
	}
};
static_assert(sizeof(sample) == sizeof(struct perfmon_event) && alignof(sample) == 16,
	      "sample is perfmond's 16-byte event");
static_assert(offsetof(sample, point) == offsetof(struct perfmon_event, point) &&
		      offsetof(sample, event) == offsetof(struct perfmon_event, event),
	      "sample's fields sit where perfmond's event has them");
static_assert(std::is_trivially_copyable_v<sample> && std::is_aggregate_v<sample>,
	      "sample is plain data");

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/* An enum (scoped or not) or an integer: what a point may be given as. */
template <typename T>
concept point_like = std::is_enum_v<T> || std::is_integral_v<T>;
#endif

using perfmon__cxx::to_point;

namespace detail {
/* False, but only once instantiated: a static_assert on it fires where a
 * call that cannot exist with perfmond is made, not where it is declared. */
template <typename...>
inline constexpr bool unsupported = false;
} /* namespace detail */

} /* namespace slick::perfmon */

#endif /* PERFMON_COMPAT_SLICK_PERFMON_STAMP_TYPES_HPP */
