/*
 * <slick/perfmon.hpp> over perfmond - source compatibility for programs
 * written against slick-perfmon.
 *
 * This directory is installed apart from the real headers (it is found
 * through `pkg-config --cflags perfmon-slick`), so it never shadows an
 * installed slick-perfmon.  The stamps and the guard here are those of
 * <perfmon/cxx.hpp>, the layer <perfmon.hpp> is built on, and so the C
 * stamps of <perfmon.h>: the same instructions, written to a perfmond ring.
 * <perfmon.hpp> itself is not included: its namespace `perfmon` would make
 * `using namespace slick; perfmon::begin(...)` ambiguous.  What changes and
 * what does not is in docs/migrating-from-slick-perfmon.md.
 *
 * Switches, as slick-perfmon spells them:
 *   SLICK_PERFMON_ENABLED=0    every stamp compiles to nothing (PERFMON_ENABLED)
 *   SLICK_PERFMON_SERIALIZE=0  no fences around the timestamp (PERFMON_SERIALIZE)
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_COMPAT_SLICK_PERFMON_HPP
#define PERFMON_COMPAT_SLICK_PERFMON_HPP

/* Each switch may be given under either name; the two must agree. */
#if defined(SLICK_PERFMON_ENABLED) && !defined(PERFMON_ENABLED)
#define PERFMON_ENABLED SLICK_PERFMON_ENABLED
#elif !defined(SLICK_PERFMON_ENABLED) && defined(PERFMON_ENABLED)
#define SLICK_PERFMON_ENABLED PERFMON_ENABLED
#elif !defined(SLICK_PERFMON_ENABLED)
#define SLICK_PERFMON_ENABLED 1
#endif
#if defined(SLICK_PERFMON_SERIALIZE) && !defined(PERFMON_SERIALIZE)
#define PERFMON_SERIALIZE SLICK_PERFMON_SERIALIZE
#elif !defined(SLICK_PERFMON_SERIALIZE) && defined(PERFMON_SERIALIZE)
#define SLICK_PERFMON_SERIALIZE PERFMON_SERIALIZE
#elif !defined(SLICK_PERFMON_SERIALIZE)
#define SLICK_PERFMON_SERIALIZE 1
#endif

#include <perfmon.h>

#if (SLICK_PERFMON_ENABLED != 0) != (PERFMON_ENABLED != 0)
#error "SLICK_PERFMON_ENABLED and PERFMON_ENABLED disagree (was <perfmon.h> included first?)"
#endif
#if (SLICK_PERFMON_SERIALIZE != 0) != (PERFMON_SERIALIZE != 0)
#error "SLICK_PERFMON_SERIALIZE and PERFMON_SERIALIZE disagree (was <perfmon.h> included first?)"
#endif

#include <perfmon/cxx.hpp>

#include <cstdint>
#include <type_traits>

namespace slick::perfmon {

using point_id = std::uint32_t;
using span_seq = std::uint32_t;
using event_id = std::uint32_t;

inline constexpr std::uint8_t kBeginStep = PERFMON_BEGIN_STEP;
inline constexpr std::uint8_t kEndStep = PERFMON_END_STEP;
/* perfmond additions: the step of a value sample, and the last step a span
 * may use (a step above it is not a stage boundary). */
inline constexpr std::uint8_t kValueStep = PERFMON_VALUE_STEP;
inline constexpr std::uint8_t kMaxSpanStep = PERFMON_MAX_SPAN_STEP;
inline constexpr span_seq kNoSeq = PERFMON_NO_SEQ;
inline constexpr span_seq kMaxSeq = PERFMON_MAX_SEQ;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
template <typename T>
concept point_like = std::is_enum_v<T> || std::is_integral_v<T>;
#endif

template <typename T, std::enable_if_t<perfmon__cxx::is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE constexpr point_id to_point(T p) noexcept
{
	return perfmon__cxx::to_point(p);
}

template <typename T, std::enable_if_t<perfmon__cxx::is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void begin(T p, span_seq seq = kNoSeq) noexcept
{
	perfmon__cxx::begin(p, seq);
}

/* n is a stage boundary, 1..kMaxSpanStep. */
template <typename T, std::enable_if_t<perfmon__cxx::is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void step(T p, std::uint8_t n, span_seq seq = kNoSeq) noexcept
{
	perfmon__cxx::step(p, n, seq);
}

template <typename T, std::enable_if_t<perfmon__cxx::is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void end(T p, span_seq seq = kNoSeq) noexcept
{
	perfmon__cxx::end(p, seq);
}

/* perfmond addition: one value sample on point p. */
template <typename T, std::enable_if_t<perfmon__cxx::is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void value(T p, std::uint64_t v) noexcept
{
	perfmon__cxx::value(p, v);
}

/* begin on construction, end on destruction (unwinding included);
 * cancel(), step(n), point(), seq(); movable, not copyable. */
using ScopedSample = perfmon__cxx::scope;
using scoped_sample = ScopedSample;

} /* namespace slick::perfmon */

#define SLICK_PERFMON_CAT_(a, b) a##b
#define SLICK_PERFMON_CAT(a, b) SLICK_PERFMON_CAT_(a, b)

#if SLICK_PERFMON_ENABLED
#define SLICK_PERFMON_BEGIN(...) ::slick::perfmon::begin(__VA_ARGS__)
#define SLICK_PERFMON_STEP(...) ::slick::perfmon::step(__VA_ARGS__)
#define SLICK_PERFMON_END(...) ::slick::perfmon::end(__VA_ARGS__)
#define SLICK_PERFMON_VALUE(...) ::slick::perfmon::value(__VA_ARGS__)
/* SLICK_PERFMON_SCOPE(point) or SLICK_PERFMON_SCOPE(point, seq). */
#define SLICK_PERFMON_SCOPE(...) \
	::slick::perfmon::ScopedSample SLICK_PERFMON_CAT(slick_perfmon_scope_, __LINE__){__VA_ARGS__}
#else
/* Arguments of the macros are not evaluated when compiled out. */
#define SLICK_PERFMON_BEGIN(...) ((void)0)
#define SLICK_PERFMON_STEP(...) ((void)0)
#define SLICK_PERFMON_END(...) ((void)0)
#define SLICK_PERFMON_VALUE(...) ((void)0)
#define SLICK_PERFMON_SCOPE(...) ((void)0)
#endif

#endif /* PERFMON_COMPAT_SLICK_PERFMON_HPP */
