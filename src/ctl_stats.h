/*
 * ctl_stats.h - the statistics perfmonctl applies to CSV samples: growable
 * sample vectors, medians and quantiles, coefficient of variation, and a
 * deterministic bootstrap of the difference between two medians.
 *
 * Flow: CSV rows (ctl_csv) -> per-stage samples -> [ctl_stats] -> report's
 * percentile spread and compare's verdicts.  Everything random here comes
 * from a seeded splitmix64 generator, so the same inputs and seed always
 * print the same numbers.
 */
#ifndef PERFMOND_CTL_STATS_H
#define PERFMOND_CTL_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctl_vec {
	double *v;
	size_t n, cap;
};

/* Append x.  0 or -ENOMEM. */
int ctl_vec_push(struct ctl_vec *s, double x);

/* Release the samples; the vector is empty and usable again. */
void ctl_vec_free(struct ctl_vec *s);

/* Whole-number samples kept exactly (a value row's figures span the whole
 * uint64 range, which a double cannot hold). */
struct ctl_u64vec {
	uint64_t *v;
	size_t n, cap;
};

/* Append x.  0 or -ENOMEM. */
int ctl_u64vec_push(struct ctl_u64vec *s, uint64_t x);

/* Release the samples; the vector is empty and usable again. */
void ctl_u64vec_free(struct ctl_u64vec *s);

/* Sort ascending. */
void ctl_u64_sort(uint64_t *v, size_t n);

/* A figure known exactly: a whole number, plus one half when it is the
 * midpoint of two (the median of an even count). */
struct ctl_exact {
	uint64_t whole;
	bool half;
};

/*
 * Median of sorted s[0..n), n >= 1, exactly: the middle value, or for an
 * even n the midpoint of the two middle values (the same figure as
 * ctl_quantile_sorted(.., 0.5) without rounding to a double).
 */
struct ctl_exact ctl_u64_median_sorted(const uint64_t *s, size_t n);

/* x as a double (nearest). */
double ctl_exact_double(struct ctl_exact x);

/* b - a exactly, as a double (exact while it is below 2^53). */
double ctl_exact_diff(struct ctl_exact a, struct ctl_exact b);

/* x with every digit: "18446744073709551615", "7.5". */
const char *ctl_exact_text(struct ctl_exact x, char *buf, size_t n);

/* b - a with every digit: "191" ("+191" with `plus`), "-0.5", "0". */
const char *ctl_exact_diff_text(struct ctl_exact a, struct ctl_exact b, bool plus, char *buf,
				size_t n);

/* Figures kept as doubles and, as long as every one pushed was a whole
 * number, also exactly (value rows reach 2^64 - 1, past a double's 53
 * bits). */
struct ctl_figvec {
	struct ctl_vec d;          /* every figure */
	struct ctl_u64vec u;       /* the same, exactly, while `inexact` is false */
	bool inexact;              /* one figure was not a whole number */
};

/* Append x; `whole` says whether it is the whole number `exact`.
 * 0 or -ENOMEM. */
int ctl_figvec_push(struct ctl_figvec *s, double x, bool whole, uint64_t exact);

/* Were all figures (at least one) whole numbers, held in s->u? */
bool ctl_figvec_exact(const struct ctl_figvec *s);

/* Release the figures; the vector is empty and usable again. */
void ctl_figvec_free(struct ctl_figvec *s);

/* splitmix64: small, fast, and every seed (0 included) is a good one. */
struct ctl_rng {
	uint64_t state;
};

/* Start the sequence of `seed`. */
void ctl_rng_seed(struct ctl_rng *r, uint64_t seed);
/* The next 64 random bits. */
uint64_t ctl_rng_next(struct ctl_rng *r);
/* Uniform in [0, n) for n >= 1 (multiply-shift; bias below 2^-32 for the
 * sample sizes used here). */
uint64_t ctl_rng_below(struct ctl_rng *r, uint64_t n);
/* Uniform in [0, 1). */
double ctl_rng_unit(struct ctl_rng *r);
/* Standard normal (Box-Muller). */
double ctl_rng_normal(struct ctl_rng *r);

/* Median of v[0..n) (mean of the two middle values when n is even);
 * reorders v.  NaN when n == 0. */
double ctl_median_inplace(double *v, size_t n);

/* Median of a copy of v, leaving v as it was.  NaN when n == 0 or when
 * out of memory. */
double ctl_median(const double *v, size_t n);

/* Quantile q in [0, 1] of sorted s[0..n), linear between order
 * statistics. */
double ctl_quantile_sorted(const double *s, size_t n, double q);

/* Sort ascending. */
void ctl_sort(double *v, size_t n);

/* Mean and sample standard deviation (n - 1; 0 when n < 2). */
void ctl_mean_sd(const double *v, size_t n, double *ret_mean, double *ret_sd);

/* Coefficient of variation sd / |mean|; 0 when n < 2, infinity when the
 * mean is 0 but the samples vary. */
double ctl_cv(const double *v, size_t n);

/*
 * Percentile bootstrap of median(cur) - median(base): `resamples` times,
 * draw len(base) samples from base and len(cur) from cur with replacement
 * and take the difference of their medians; the interval is the central
 * `confidence` part of those differences.  Deterministic for a given
 * `seed`.  0, or -EINVAL for empty samples, -ENOMEM.
 */
int ctl_bootstrap_median_diff(const double *base, size_t nb, const double *cur, size_t nc,
			      unsigned resamples, double confidence, uint64_t seed,
			      double *ret_lo, double *ret_hi);

/* Make the array at *arr (elements of `size` bytes, *cap of them) hold
 * index `need`, doubling from 32; new elements are zeroed.  0 or -ENOMEM,
 * the array untouched on failure. */
int ctl_grow(void **arr, unsigned *cap, unsigned need, size_t size);

#endif
