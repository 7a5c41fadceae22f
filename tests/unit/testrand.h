/*
 * testrand.h - the one random generator of the test suites and of the
 * programs the shell tests drive (tests/tools/): splitmix64 from a seed
 * each test sets, so every run draws the same numbers.  Header-only: each
 * program has its own state.
 */
#ifndef PERFMOND_TESTRAND_H
#define PERFMOND_TESTRAND_H

#include <stdint.h>

static uint64_t rng_state;

static inline void rng_seed(uint64_t s)
{
	rng_state = s;
}

static inline uint64_t rng_next(void)
{
	uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static inline double rng_unit(void)
{
	return ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

#endif /* PERFMOND_TESTRAND_H */
