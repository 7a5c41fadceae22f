/*
 * perfmon/cxx.hpp - the C++ layer over <perfmon.h>, shared by <perfmon.hpp>
 * and the slick-perfmon compatibility headers.
 *
 * Everything here is in namespace perfmon__cxx (internal, like every
 * perfmon__ name): <perfmon.hpp> re-exports it as namespace perfmon, the
 * compatibility headers as slick::perfmon.  This header declares no global
 * name `perfmon`, and neither does <perfmon.h>, so a program written for
 * slick-perfmon may say `using namespace slick;` and then `perfmon::begin`
 * without an ambiguity.  A program includes <perfmon.hpp> or the
 * compatibility headers, never this one.
 *
 * Every stamp is an always-inline call of the C function with the same
 * arguments, so it compiles to the same instructions; nothing here throws,
 * allocates or locks on the stamp path.  PERFMON_ENABLED=0 turns every
 * function into an empty always-inline body: no timestamp is read and the
 * object file holds no symbol of ours.  Unlike the C macros, a function
 * evaluates its arguments as usual.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PERFMON_CXX_HPP
#define PERFMON_CXX_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "the C++ perfmon headers need C++17 or later; C code includes <perfmon.h>"
#endif

#include <perfmon.h>

#include <cstdint>
#include <string_view>
#include <type_traits>

#if defined(__GNUC__) || defined(__clang__)
#define PERFMON__CXX_INLINE inline __attribute__((always_inline))
#else
#define PERFMON__CXX_INLINE inline
#endif

namespace perfmon__cxx {

/* Whether T can name a point or a step: an integer or any enum. */
template <typename T>
inline constexpr bool is_point_v = std::is_integral_v<T> || std::is_enum_v<T>;

/* An integer or enum point as the 32-bit id the ring carries. */
template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE constexpr std::uint32_t to_point(T p) noexcept
{
	if constexpr (std::is_enum_v<T>)
		return static_cast<std::uint32_t>(static_cast<std::underlying_type_t<T>>(p));
	else
		return static_cast<std::uint32_t>(p);
}

/* A step number: the low 8 bits of an integer or enum. */
template <typename S, std::enable_if_t<is_point_v<S>, int> = 0>
PERFMON__CXX_INLINE constexpr std::uint8_t to_step(S s) noexcept
{
	return static_cast<std::uint8_t>(to_point(s));
}

#if PERFMON_ENABLED

/* Open a span on `point`; pass `seq` when spans on it can overlap. */
template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void begin(T point, std::uint32_t seq = PERFMON_NO_SEQ) noexcept
{
	::perfmon_begin(to_point(point), seq);
}

/* A stage boundary inside the span, `step` in 1..PERFMON_MAX_SPAN_STEP. */
template <typename T, typename S, std::enable_if_t<is_point_v<T> && is_point_v<S>, int> = 0>
PERFMON__CXX_INLINE void step(T point, S step, std::uint32_t seq = PERFMON_NO_SEQ) noexcept
{
	::perfmon_step(to_point(point), to_step(step), seq);
}

/* Close the span. */
template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void end(T point, std::uint32_t seq = PERFMON_NO_SEQ) noexcept
{
	::perfmon_end(to_point(point), seq);
}

/* One value sample (a queue depth, a batch size); no timestamp is read. */
template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void value(T point, std::uint64_t v) noexcept
{
	::perfmon_value(to_point(point), v);
}

/* Attach to the segments of a name that need not be NUL-terminated (a
 * std::string, a view); as perfmon_attach(3). */
inline int attach(std::string_view shm_name) noexcept
{
	char path[PERFMON_NAME_MAX + 1];
	if (shm_name.size() > PERFMON_NAME_MAX)
		return -ENAMETOOLONG;
	if (shm_name.find('\0') != std::string_view::npos)
		return -EINVAL;
	shm_name.copy(path, shm_name.size());
	path[shm_name.size()] = '\0';
	return ::perfmon_attach(path);
}

/*
 * Publish one label for (point, step), as perfmon_name(3).  The label is
 * copied into a stack buffer to terminate it; one that does not fit is
 * handed on unterminated at the table's width, so the C side refuses it
 * with -ENAMETOOLONG and counts the conflict like any other.
 */
template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
inline int name(T point, std::uint8_t step, std::string_view label) noexcept
{
	char buf[PERFMON_LABEL_SIZE + 1];
	std::size_t n = label.size() < PERFMON_LABEL_SIZE ? label.size() : PERFMON_LABEL_SIZE;
	if (label.empty() || label.find('\0') != std::string_view::npos)
		return -EINVAL;
	label.copy(buf, n);
	buf[n] = '\0';
	return ::perfmon_name(to_point(point), step, buf);
}

/*
 * Publish every non-empty name_of(p, s) for p < point_count and all 256
 * steps.  name_of is anything callable as name_of(uint32_t, uint8_t) whose
 * result converts to std::string_view: a constexpr function returning a
 * view, a lambda returning a std::string, a C function returning a const
 * char * (a null pointer is unnamed, like an empty label).  Returns the
 * number of labels refused (conflicts), or -ENOTCONN when not attached.
 */
template <typename Fn>
inline int publish_names(std::uint32_t point_count, Fn &&name_of) noexcept
{
	using result = decltype(name_of(std::uint32_t{}, std::uint8_t{}));
	static_assert(std::is_convertible_v<result, std::string_view>,
		      "perfmon::publish_names: name_of(point, step) must return something "
		      "std::string_view converts from (a view, a std::string, a const char *)");
	int conflicts = 0;
	for (std::uint32_t p = 0; p < point_count; p++)
		for (unsigned s = 0; s < 256; s++) {
			/* Held for the whole iteration: a returned std::string
			 * must outlive the view taken of it below. */
			auto &&held = name_of(p, static_cast<std::uint8_t>(s));
			if constexpr (std::is_pointer_v<std::decay_t<result>>) {
				if (held == nullptr)
					continue;
			}
			std::string_view label = held;
			if (label.empty())
				continue;
			int r = name(p, static_cast<std::uint8_t>(s), label);
			if (r == -ENOTCONN)
				return r;
			if (r < 0)
				conflicts++;
		}
	return conflicts;
}

/*
 * Scope guard: begin on construction, end on destruction by any path,
 * exception unwinding included.  cancel() leaves the span open (the daemon
 * counts it abandoned when the key is begun again or ages out).  Movable,
 * not copyable: a moved-from guard is disarmed, so exactly one end is
 * published however the guard travels.
 */
class scope {
public:
	template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
	PERFMON__CXX_INLINE explicit scope(T point, std::uint32_t seq = PERFMON_NO_SEQ) noexcept
		: point_(to_point(point)), seq_(seq)
	{
		::perfmon_begin(point_, seq_);
	}

	PERFMON__CXX_INLINE ~scope()
	{
		if (armed_)
			::perfmon_end(point_, seq_);
	}

	scope(const scope &) = delete;
	scope &operator=(const scope &) = delete;

	PERFMON__CXX_INLINE scope(scope &&o) noexcept
		: point_(o.point_), seq_(o.seq_), armed_(o.armed_)
	{
		o.armed_ = false;
	}

	/* Ends the span this guard held, then takes over o's. */
	PERFMON__CXX_INLINE scope &operator=(scope &&o) noexcept
	{
		if (this != &o) {
			if (armed_)
				::perfmon_end(point_, seq_);
			point_ = o.point_;
			seq_ = o.seq_;
			armed_ = o.armed_;
			o.armed_ = false;
		}
		return *this;
	}

	/* A stage boundary inside this guard's span. */
	template <typename S, std::enable_if_t<is_point_v<S>, int> = 0>
	PERFMON__CXX_INLINE void step(S s) noexcept
	{
		::perfmon_step(point_, to_step(s), seq_);
	}

	PERFMON__CXX_INLINE void cancel() noexcept { armed_ = false; }
	std::uint32_t point() const noexcept { return point_; }
	std::uint32_t seq() const noexcept { return seq_; }

private:
	std::uint32_t point_;
	std::uint32_t seq_;
	bool armed_ = true;
};

#else /* !PERFMON_ENABLED: the same interface, doing nothing */

template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void begin(T, std::uint32_t = PERFMON_NO_SEQ) noexcept {}
template <typename T, typename S, std::enable_if_t<is_point_v<T> && is_point_v<S>, int> = 0>
PERFMON__CXX_INLINE void step(T, S, std::uint32_t = PERFMON_NO_SEQ) noexcept {}
template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void end(T, std::uint32_t = PERFMON_NO_SEQ) noexcept {}
template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE void value(T, std::uint64_t) noexcept {}
PERFMON__CXX_INLINE int attach(std::string_view) noexcept { return -ENOTSUP; }
template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
PERFMON__CXX_INLINE int name(T, std::uint8_t, std::string_view) noexcept { return -ENOTCONN; }
template <typename Fn>
PERFMON__CXX_INLINE int publish_names(std::uint32_t, Fn &&) noexcept { return 0; }

class scope {
public:
	template <typename T, std::enable_if_t<is_point_v<T>, int> = 0>
	PERFMON__CXX_INLINE explicit scope(T point, std::uint32_t seq = PERFMON_NO_SEQ) noexcept
		: point_(to_point(point)), seq_(seq) {}
	scope(const scope &) = delete;
	scope &operator=(const scope &) = delete;
	PERFMON__CXX_INLINE scope(scope &&o) noexcept : point_(o.point_), seq_(o.seq_) {}
	PERFMON__CXX_INLINE scope &operator=(scope &&o) noexcept
	{
		point_ = o.point_;
		seq_ = o.seq_;
		return *this;
	}
	template <typename S, std::enable_if_t<is_point_v<S>, int> = 0>
	PERFMON__CXX_INLINE void step(S) noexcept {}
	PERFMON__CXX_INLINE void cancel() noexcept {}
	PERFMON__CXX_INLINE std::uint32_t point() const noexcept { return point_; }
	PERFMON__CXX_INLINE std::uint32_t seq() const noexcept { return seq_; }

private:
	std::uint32_t point_;
	std::uint32_t seq_;
};

#endif /* PERFMON_ENABLED */

} /* namespace perfmon__cxx */

#endif /* PERFMON_CXX_HPP */
