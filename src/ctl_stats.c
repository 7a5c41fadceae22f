/*
 * ctl_stats.c - medians, spread and the bootstrap for perfmonctl.
 *
 * Medians use quickselect (expected linear time) because the bootstrap
 * takes thousands of them per stage.  The bootstrap is the plain percentile
 * method: it needs no assumption about the shape of the distribution of
 * interval percentiles, which is usually skewed and sometimes bimodal.
 */
#include "build-config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_stats.h"

/* Room for one more element in the growable array *v of n (elements of
 * `size` bytes, *cap of them), doubling from 64.  0 or -ENOMEM. */
static int room(void **v, size_t n, size_t *cap, size_t size)
{
	size_t c = *cap ? *cap * 2 : 64;
	void *p;

	if (n < *cap)
		return 0;
	if (!(p = realloc(*v, c * size)))
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

int ctl_vec_push(struct ctl_vec *s, double x)
{
	if (room((void **)&s->v, s->n, &s->cap, sizeof(*s->v)) < 0)
		return -ENOMEM;
	s->v[s->n++] = x;
	return 0;
}

void ctl_vec_free(struct ctl_vec *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

int ctl_u64vec_push(struct ctl_u64vec *s, uint64_t x)
{
	if (room((void **)&s->v, s->n, &s->cap, sizeof(*s->v)) < 0)
		return -ENOMEM;
	s->v[s->n++] = x;
	return 0;
}

void ctl_u64vec_free(struct ctl_u64vec *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void ctl_u64_sort(uint64_t *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_u64);
}

struct ctl_exact ctl_u64_median_sorted(const uint64_t *s, size_t n)
{
	uint64_t lo = s[(n - 1) / 2], hi = s[n / 2];

	/* lo + (hi - lo) / 2 cannot overflow where (lo + hi) / 2 can. */
	return (struct ctl_exact){ .whole = lo + (hi - lo) / 2, .half = (hi - lo) % 2 != 0 };
}

/* Twice x: every figure and difference of figures fits in 66 bits. */
static __int128 halves(struct ctl_exact x)
{
	return 2 * (__int128)x.whole + x.half;
}

double ctl_exact_double(struct ctl_exact x)
{
	return (double)x.whole + (x.half ? 0.5 : 0.0);
}

double ctl_exact_diff(struct ctl_exact a, struct ctl_exact b)
{
	return (double)(halves(b) - halves(a)) / 2;
}

const char *ctl_exact_text(struct ctl_exact x, char *buf, size_t n)
{
	snprintf(buf, n, "%llu%s", (unsigned long long)x.whole, x.half ? ".5" : "");
	return buf;
}

const char *ctl_exact_diff_text(struct ctl_exact a, struct ctl_exact b, bool plus, char *buf,
				size_t n)
{
	__int128 d = halves(b) - halves(a);
	unsigned __int128 m = d < 0 ? (unsigned __int128)-d : (unsigned __int128)d;
	/* |d| / 2 < 2^64: a difference of two uint64 figures */
	struct ctl_exact mag = { .whole = (uint64_t)(m / 2), .half = m % 2 != 0 };
	char num[32];

	snprintf(buf, n, "%s%s", d > 0 && plus ? "+" : d < 0 ? "-" : "",
		 ctl_exact_text(mag, num, sizeof(num)));
	return buf;
}

int ctl_figvec_push(struct ctl_figvec *s, double x, bool whole, uint64_t exact)
{
	if (ctl_vec_push(&s->d, x) < 0)
		return -ENOMEM;
	if (s->inexact)
		return 0;
	if (!whole) {
		/* one figure with a fraction: the exact copy can never be used */
		s->inexact = true;
		ctl_u64vec_free(&s->u);
		return 0;
	}
	if (ctl_u64vec_push(&s->u, exact) < 0) {
		s->d.n--;
		return -ENOMEM;
	}
	return 0;
}

bool ctl_figvec_exact(const struct ctl_figvec *s)
{
	return !s->inexact && s->u.n > 0 && s->u.n == s->d.n;
}

void ctl_figvec_free(struct ctl_figvec *s)
{
	ctl_vec_free(&s->d);
	ctl_u64vec_free(&s->u);
	s->inexact = false;
}

void ctl_rng_seed(struct ctl_rng *r, uint64_t seed)
{
	r->state = seed;
}

uint64_t ctl_rng_next(struct ctl_rng *r)
{
	uint64_t z = (r->state += UINT64_C(0x9E3779B97F4A7C15));
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

uint64_t ctl_rng_below(struct ctl_rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)ctl_rng_next(r) * n) >> 64);
}

double ctl_rng_unit(struct ctl_rng *r)
{
	return (double)(ctl_rng_next(r) >> 11) * 0x1.0p-53;
}

double ctl_rng_normal(struct ctl_rng *r)
{
	double u = ctl_rng_unit(r), v = ctl_rng_unit(r);
	return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

static void swap(double *a, double *b)
{
	double t = *a;
	*a = *b;
	*b = t;
}

/*
 * The k-th smallest of v[0..n) (Wirth's selection).  On return v[0..k)
 * holds nothing larger and v(k..n) nothing smaller than v[k].
 */
static double select_kth(double *v, size_t n, size_t k)
{
	ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;

	while (lo < hi) {
		double pivot = v[kk];
		ptrdiff_t i = lo, j = hi;
		do {
			while (v[i] < pivot)
				i++;
			while (pivot < v[j])
				j--;
			if (i <= j) {
				swap(&v[i], &v[j]);
				i++;
				j--;
			}
		} while (i <= j);
		if (j < kk)
			lo = i;
		if (kk < i)
			hi = j;
	}
	return v[kk];
}

double ctl_median_inplace(double *v, size_t n)
{
	double hi, lo;

	if (n == 0)
		return NAN;
	hi = select_kth(v, n, n / 2);
	if (n % 2)
		return hi;
	/* After selecting n/2, everything below it is in v[0..n/2). */
	lo = v[0];
	for (size_t i = 1; i < n / 2; i++)
		if (v[i] > lo)
			lo = v[i];
	return (lo + hi) / 2;
}

double ctl_median(const double *v, size_t n)
{
	double *c, m;

	if (n == 0)
		return NAN;
	c = malloc(n * sizeof(*c));
	if (!c)
		return NAN;
	memcpy(c, v, n * sizeof(*c));
	m = ctl_median_inplace(c, n);
	free(c);
	return m;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void ctl_sort(double *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_double);
}

double ctl_quantile_sorted(const double *s, size_t n, double q)
{
	double pos, frac;
	size_t i;

	if (n == 0)
		return NAN;
	if (q <= 0)
		return s[0];
	if (q >= 1)
		return s[n - 1];
	pos = q * (double)(n - 1);
	i = (size_t)pos;
	frac = pos - (double)i;
	return i + 1 < n ? s[i] + (s[i + 1] - s[i]) * frac : s[i];
}

void ctl_mean_sd(const double *v, size_t n, double *ret_mean, double *ret_sd)
{
	double mean = 0, m2 = 0;

	/* Welford: stable for long runs of nearly equal values. */
	for (size_t i = 0; i < n; i++) {
		double d = v[i] - mean;
		mean += d / (double)(i + 1);
		m2 += d * (v[i] - mean);
	}
	*ret_mean = n ? mean : NAN;
	*ret_sd = n > 1 ? sqrt(m2 / (double)(n - 1)) : 0;
}

double ctl_cv(const double *v, size_t n)
{
	double mean, sd;

	if (n < 2)
		return 0;
	ctl_mean_sd(v, n, &mean, &sd);
	if (sd == 0)
		return 0;
	return mean == 0 ? INFINITY : sd / fabs(mean);
}

int ctl_bootstrap_median_diff(const double *base, size_t nb, const double *cur, size_t nc,
			      unsigned resamples, double confidence, uint64_t seed,
			      double *ret_lo, double *ret_hi)
{
	struct ctl_rng rng;
	double *scratch, *diffs, alpha;
	size_t i;

	if (!nb || !nc || !resamples || !(confidence > 0 && confidence < 1))
		return -EINVAL;
	scratch = malloc((nb > nc ? nb : nc) * sizeof(*scratch));
	diffs = malloc(resamples * sizeof(*diffs));
	if (!scratch || !diffs) {
		free(scratch);
		free(diffs);
		return -ENOMEM;
	}
	ctl_rng_seed(&rng, seed);
	for (unsigned b = 0; b < resamples; b++) {
		double mb, mc;
		for (i = 0; i < nb; i++)
			scratch[i] = base[ctl_rng_below(&rng, nb)];
		mb = ctl_median_inplace(scratch, nb);
		for (i = 0; i < nc; i++)
			scratch[i] = cur[ctl_rng_below(&rng, nc)];
		mc = ctl_median_inplace(scratch, nc);
		diffs[b] = mc - mb;
	}
	ctl_sort(diffs, resamples);
	alpha = (1 - confidence) / 2;
	*ret_lo = ctl_quantile_sorted(diffs, resamples, alpha);
	*ret_hi = ctl_quantile_sorted(diffs, resamples, 1 - alpha);
	free(scratch);
	free(diffs);
	return 0;
}

int ctl_grow(void **arr, unsigned *cap, unsigned need, size_t size)
{
	unsigned n = *cap ? *cap : 32;
	char *p;

	if (need < *cap)
		return 0;
	while (n <= need)
		n *= 2;
	p = realloc(*arr, (size_t)n * size);
	if (!p)
		return -ENOMEM;
	memset(p + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
	*arr = p;
	*cap = n;
	return 0;
}
