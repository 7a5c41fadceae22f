/*
 * ctl_text.h - perfmonctl's text handling: making untrusted labels safe to
 * print, measuring what a string occupies on a terminal, and turning
 * figures into short human-readable cells.
 *
 * Flow: labels from a CSV file or the shared name table -> [ctl_text] ->
 * ctl_table cells, top's header, compare's notes.  Every label perfmonctl
 * prints passes through ctl_text_clean() first, so no label can carry a
 * terminal escape, a line break (a forged row) or a bidirectional override.
 */
#ifndef PERFMOND_CTL_TEXT_H
#define PERFMOND_CTL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Copy `src` (at most n - 1 bytes, stopping at a NUL) into `dst` as valid
 * UTF-8 with no control characters (C0, DEL, C1), no invalid sequences and
 * no invisible format characters (bidi overrides and isolates, zero-width
 * characters, BOM): each becomes '?'.  Returns the length written.  `dst`
 * and `src` must not overlap.
 */
size_t ctl_text_clean(char *dst, const char *src, size_t n);

/* A cleaned, heap-allocated copy of the `len` bytes at `src` (embedded NULs
 * become '?'), or NULL when out of memory. */
char *ctl_text_dup_clean(const char *src, size_t len);

/* Terminal columns taken by cleaned UTF-8 text (East Asian wide characters
 * count two). */
unsigned ctl_text_width(const char *s);

/*
 * Bytes of `s` that fit in `cols` terminal columns without splitting a
 * character; the columns they take go to `*ret_cols` (may be NULL).
 */
size_t ctl_text_fit(const char *s, unsigned cols, unsigned *ret_cols);

/*
 * A latency figure `v` in `unit` ("ns", "us", "cycles") as a short cell
 * with three significant digits and a scaled unit: 812ns, 1.23us, 45.6ms,
 * 2.10s; from 1000 s on as ctl_fmt_age() does (16m40s, 3d02h, then
 * 1.00e+31s); cycles as 812cy, 1.23kcy, past 999Gcy 1.00e+04Gcy.
 * Negative values keep their sign (-12m05s); NaN and infinities are "-".
 */
void ctl_fmt_duration(double v, const char *unit, char *buf, size_t n);

/* A plain number (a value sample, a rate) with SI suffixes past 9999:
 * 12.3k, 4.56M, up to E and Z (9.22E for 2^63, 18.4E for 2^64 - 1), past
 * 999Z an exponent (1.00e+06Z).  Integers below 10000 print exactly. */
void ctl_fmt_si(double v, char *buf, size_t n);

/* A duration in seconds for humans: 45s, 12m03s, 3h07m, 2d04h, and from
 * 1e9 s (about 32 years) on 1.00e+09s.  Negative or not finite: "-" (the
 * callers' "unknown"). */
void ctl_fmt_age(double seconds, char *buf, size_t n);

/* Bytes for humans: 512B, 64.0KiB, 1.50GiB, past 1023PiB 1.00e+04PiB;
 * not finite: "-". */
void ctl_fmt_bytes(double bytes, char *buf, size_t n);

/* Factor from `unit` to nanoseconds: 1 for ns, 1000 for us, 0 otherwise
 * (cycles have no fixed length). */
double ctl_unit_ns(const char *unit);

/* `v` in the C locale for machine-readable output: a whole number below
 * 2^64 in magnitude with all its digits and no exponent, anything else with
 * the fewest significant digits that read back as the same double (at
 * most 17). */
void ctl_fmt_exact(double v, char *buf, size_t n);

#endif
