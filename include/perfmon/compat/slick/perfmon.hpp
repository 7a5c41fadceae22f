/*
 * <slick/perfmon.hpp> over perfmond - source compatibility for programs
 * written against slick-perfmon: the stamps.
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
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_COMPAT_SLICK_PERFMON_HPP
#define PERFMON_COMPAT_SLICK_PERFMON_HPP

#include <slick/perfmon/config.hpp>
#include <slick/perfmon/stamp_types.hpp>

namespace slick::perfmon {

/* begin(p, seq = kNoSeq), step(p, n, seq = kNoSeq), end(p, seq = kNoSeq)
 * on an integer or enum point; n is a stage boundary, 1..kMaxSpanStep.
 * value(p, v) is a perfmond addition: one value sample on point p. */
using perfmon__cxx::begin;
using perfmon__cxx::step;
using perfmon__cxx::end;
using perfmon__cxx::value;

/* Publish one event as given: IsBegin reads the clock the way a begin does,
 * otherwise the way a step or an end does.  The step of `e` decides what
 * the daemon makes of it (a step of kValueStep is a value sample). */
template <bool IsBegin>
PERFMON__CXX_INLINE void stamp(point_id p, event_id e) noexcept
{
#if SLICK_PERFMON_ENABLED
	std::uintptr_t h = __atomic_load_n(&perfmon__g.hot, __ATOMIC_ACQUIRE);
	if (__builtin_expect(h != 0, 0))
		perfmon__publish_hot(h, IsBegin ? PERFMON__TS_BEGIN : PERFMON__TS_END, 0, p, e);
#else
	(void)p;
	(void)e;
#endif
}

/* slick-perfmon's in-process ring.  perfmond has none: the ring is the
 * daemon's segment.  Declared so that signatures naming it still compile. */
class sample_queue;

/* Pointing this module at another module's ring is never needed: every
 * module of a process (executable and shared libraries) stamps into the
 * one attached ring. */
template <typename... A>
auto attach(A &&...) noexcept
{
	static_assert(detail::unsupported<A...>,
		      "slick::perfmon::attach(sample_queue *) is not available with perfmond and "
		      "not needed: every module of a process stamps into the one ring the "
		      "process attached (Collector::start() in shared_producer mode, or "
		      "SLICK_PERFMON_SHM) (docs/migrating-from-slick-perfmon.md)");
}

} /* namespace slick::perfmon */

#include <slick/perfmon/scoped.hpp>

#endif /* PERFMON_COMPAT_SLICK_PERFMON_HPP */
