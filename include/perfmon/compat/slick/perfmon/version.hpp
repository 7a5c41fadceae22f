/*
 * <slick/perfmon/version.hpp> over perfmond: the slick-perfmon release whose
 * interface these compatibility headers provide, for programs that test it
 * before using a call.  perfmond's own version is pkg-config's
 * `--modversion perfmon-slick`.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_COMPAT_SLICK_PERFMON_VERSION_HPP
#define PERFMON_COMPAT_SLICK_PERFMON_VERSION_HPP

#define SLICK_PERFMON_VERSION_MAJOR 0
#define SLICK_PERFMON_VERSION_MINOR 2
#define SLICK_PERFMON_VERSION_PATCH 0
#define SLICK_PERFMON_VERSION "0.2.0"

#endif /* PERFMON_COMPAT_SLICK_PERFMON_VERSION_HPP */
