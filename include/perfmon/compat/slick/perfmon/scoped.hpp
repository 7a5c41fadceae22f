/*
 * <slick/perfmon/scoped.hpp> over perfmond: the scope guard and the stamp
 * macros.
 *
 * ScopedSample is <perfmon/cxx.hpp>'s guard (also <perfmon.hpp>'s
 * perfmon::scope): begin on construction, end on destruction by any path,
 * exception unwinding included; step(n), cancel(), point(), seq(); movable,
 * not copyable.  With SLICK_PERFMON_ENABLED=0 the macros expand to nothing
 * and do not evaluate their arguments.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_COMPAT_SLICK_PERFMON_SCOPED_HPP
#define PERFMON_COMPAT_SLICK_PERFMON_SCOPED_HPP

#include <slick/perfmon/config.hpp>
#include <slick/perfmon/stamp_types.hpp>

namespace slick::perfmon {

using ScopedSample = perfmon__cxx::scope;
using scoped_sample = ScopedSample;

} /* namespace slick::perfmon */

#if SLICK_PERFMON_ENABLED
#define SLICK_PERFMON_BEGIN(...) ::perfmon__cxx::begin(__VA_ARGS__)
#define SLICK_PERFMON_STEP(...) ::perfmon__cxx::step(__VA_ARGS__)
#define SLICK_PERFMON_END(...) ::perfmon__cxx::end(__VA_ARGS__)
/* perfmond addition: SLICK_PERFMON_VALUE(point, v). */
#define SLICK_PERFMON_VALUE(...) ::perfmon__cxx::value(__VA_ARGS__)
/* SLICK_PERFMON_SCOPE(point) or SLICK_PERFMON_SCOPE(point, seq). */
#define SLICK_PERFMON_SCOPE(...) \
	::slick::perfmon::ScopedSample SLICK_PERFMON_CAT(slick_perfmon_scope_, __LINE__){__VA_ARGS__}
#else
#define SLICK_PERFMON_BEGIN(...) ((void)0)
#define SLICK_PERFMON_STEP(...) ((void)0)
#define SLICK_PERFMON_END(...) ((void)0)
#define SLICK_PERFMON_VALUE(...) ((void)0)
#define SLICK_PERFMON_SCOPE(...) ((void)0)
#endif

#endif /* PERFMON_COMPAT_SLICK_PERFMON_SCOPED_HPP */
