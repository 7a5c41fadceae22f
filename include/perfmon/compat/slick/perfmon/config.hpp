/*
 * <slick/perfmon/config.hpp> over perfmond: the compile-time switches and
 * the macros slick-perfmon defines, with the values perfmond has.
 *
 * Switches, as slick-perfmon spells them (either name may be given; the
 * two must agree):
 *   SLICK_PERFMON_ENABLED=0    every stamp compiles to nothing (PERFMON_ENABLED)
 *   SLICK_PERFMON_SERIALIZE=0  no fences around the timestamp (PERFMON_SERIALIZE)
 *
 * Limits that are part of perfmond's shared-memory layout or of the
 * daemon cannot be changed by a producer: defining one to another value
 * stops the compilation with a message saying what perfmond has.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_COMPAT_SLICK_PERFMON_CONFIG_HPP
#define PERFMON_COMPAT_SLICK_PERFMON_CONFIG_HPP

#include <slick/perfmon/version.hpp>

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

/* Bytes of a label in the name table, its NUL included. */
#ifndef SLICK_PERFMON_NAME_CAPACITY
#define SLICK_PERFMON_NAME_CAPACITY PERFMON_LABEL_SIZE
#elif SLICK_PERFMON_NAME_CAPACITY != PERFMON_LABEL_SIZE
#error "SLICK_PERFMON_NAME_CAPACITY cannot be changed with perfmond: its name table holds labels of 64 bytes including the NUL (63 characters); leave it undefined"
#endif

/* Sub-bucket bits of the daemon's histograms: 16 per power of two. */
#ifndef SLICK_PERFMON_HIST_PRECISION
#define SLICK_PERFMON_HIST_PRECISION 4
#elif SLICK_PERFMON_HIST_PRECISION != 4
#error "SLICK_PERFMON_HIST_PRECISION cannot be changed with perfmond: the daemon's histograms are fixed at 16 sub-buckets per power of two (at most 1/32 relative error); leave it undefined"
#endif

/* The longest config::shm_name: perfmond's segment names are at most 200
 * characters of [A-Za-z0-9._-].  A smaller value is honoured: start()
 * refuses a longer name. */
#ifndef SLICK_PERFMON_SHM_NAME_MAX
#define SLICK_PERFMON_SHM_NAME_MAX PERFMON_NAME_MAX
#elif SLICK_PERFMON_SHM_NAME_MAX > PERFMON_NAME_MAX
#error "SLICK_PERFMON_SHM_NAME_MAX is above perfmond's limit: segment names are at most 200 characters"
#endif

/* The control block of ring NAME is NAME.meta, with perfmond too. */
#define SLICK_PERFMON_META_SUFFIX ".meta"

#if defined(__has_feature)
#define SLICK_PERFMON_HAS_FEATURE(x) __has_feature(x)
#else
#define SLICK_PERFMON_HAS_FEATURE(x) 0
#endif

#if defined(__SANITIZE_THREAD__) || SLICK_PERFMON_HAS_FEATURE(thread_sanitizer)
#define SLICK_PERFMON_TSAN_ENABLED 1
#else
#define SLICK_PERFMON_TSAN_ENABLED 0
#endif
#if defined(__SANITIZE_ADDRESS__) || SLICK_PERFMON_HAS_FEATURE(address_sanitizer)
#define SLICK_PERFMON_ASAN_ENABLED 1
#else
#define SLICK_PERFMON_ASAN_ENABLED 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SLICK_PERFMON_FORCE_INLINE inline __attribute__((always_inline))
#define SLICK_PERFMON_NO_INLINE __attribute__((noinline))
#else
#define SLICK_PERFMON_FORCE_INLINE inline
#define SLICK_PERFMON_NO_INLINE
#endif

#define SLICK_PERFMON_CACHE_LINE_SIZE 64
#define SLICK_PERFMON_CACHE_ALIGNED alignas(SLICK_PERFMON_CACHE_LINE_SIZE)

/* Whether stamps read the TSC.  Informational: perfmon/clock.h chooses the
 * clock (the TSC on x86, CLOCK_MONOTONIC elsewhere) and the daemon is told
 * which one the ring carries. */
#ifndef SLICK_PERFMON_X86
#if defined(__x86_64__) || defined(__i386__)
#define SLICK_PERFMON_X86 1
#else
#define SLICK_PERFMON_X86 0
#endif
#endif

/* Pastes after expanding, so __LINE__ makes a name unique per line. */
#define SLICK_PERFMON_CAT_(a, b) a##b
#define SLICK_PERFMON_CAT(a, b) SLICK_PERFMON_CAT_(a, b)

#endif /* PERFMON_COMPAT_SLICK_PERFMON_CONFIG_HPP */
