/*
 * perfmon.hpp - the C++ producer interface of perfmond.
 *
 * A thin layer over <perfmon.h> for C++17 and later: the same stamps, taking
 * enum points (enum class included) without a cast, a scope guard that ends
 * its span on every exit including exception unwinding, and name publishing
 * from a function that returns std::string_view (a constexpr function
 * qualifies).  Every stamp is an always-inline call of the C function with
 * the same arguments, so it compiles to the same instructions; nothing here
 * throws, allocates or locks on the stamp path.  perfmon.hpp(3) documents
 * the interface.
 *
 * The functions and the guard are defined once in <perfmon/cxx.hpp>, which
 * the slick-perfmon compatibility headers share; this header gives them
 * their names in namespace perfmon and adds what only a native program uses.
 *
 * PERFMON_ENABLED=0 turns every function into an empty always-inline body:
 * no timestamp is read and the object file holds no symbol of ours.  Unlike
 * the C macros, a function evaluates its arguments as usual.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_HPP
#define PERFMON_HPP

#include "perfmon/cxx.hpp"

namespace perfmon {

/* Step and sequence constants, as in <perfmon.h>. */
inline constexpr std::uint8_t begin_step = PERFMON_BEGIN_STEP;
inline constexpr std::uint8_t end_step = PERFMON_END_STEP;
inline constexpr std::uint8_t value_step = PERFMON_VALUE_STEP;
inline constexpr std::uint8_t max_span_step = PERFMON_MAX_SPAN_STEP;
inline constexpr std::uint32_t no_seq = PERFMON_NO_SEQ;
inline constexpr std::uint32_t max_seq = PERFMON_MAX_SEQ;

/* Whether T can name a point or a step: an integer or any enum. */
template <typename T>
inline constexpr bool is_point_v = perfmon__cxx::is_point_v<T>;

using perfmon__cxx::to_point;
using perfmon__cxx::to_step;
using perfmon__cxx::begin;
using perfmon__cxx::step;
using perfmon__cxx::end;
using perfmon__cxx::value;
using perfmon__cxx::attach;      /* the std::string_view overload */
using perfmon__cxx::name;
using perfmon__cxx::publish_names;
using scope = perfmon__cxx::scope;

#if PERFMON_ENABLED

/*
 * Attach to the segments of `shm_name` (nullptr: $SLICK_PERFMON_SHM).
 * 0 or a negative errno, as perfmon_attach(3).
 */
inline int attach(const char *shm_name = nullptr) noexcept
{
	return ::perfmon_attach(shm_name);
}

inline void detach() noexcept
{
	::perfmon_detach();
}

inline void set_enabled(bool on) noexcept
{
	::perfmon_set_enabled(on);
}

inline bool enabled() noexcept
{
	return ::perfmon_enabled();
}

#else /* !PERFMON_ENABLED: the same interface, doing nothing */

PERFMON__CXX_INLINE int attach(const char * = nullptr) noexcept { return -ENOTSUP; }
PERFMON__CXX_INLINE void detach() noexcept {}
PERFMON__CXX_INLINE void set_enabled(bool) noexcept {}
PERFMON__CXX_INLINE bool enabled() noexcept { return false; }

#endif /* PERFMON_ENABLED */

} /* namespace perfmon */

#endif /* PERFMON_HPP */
