/*
 * fuzz_text.h - checks the fuzz harnesses apply to whatever text the code
 * under test produced from hostile input: labels, CSV files, summaries.
 *
 * Flow: untrusted bytes -> (ring / name table / CSV file) -> the code under
 * test -> text for a file or a terminal -> [these checks].  A failed check
 * aborts, which libFuzzer reports as a crash with the input that caused it.
 */
#ifndef PERFMOND_FUZZ_TEXT_H
#define PERFMOND_FUZZ_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Abort with `what` when `cond` is false: the harnesses' assertion, kept
 * even when NDEBUG is defined. */
#define FUZZ_CHECK(cond, what) \
	((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, (what)))

void fuzz_fail(const char *file, int line, const char *what) __attribute__((noreturn));

/*
 * True when the `n` bytes at `s` are valid UTF-8 holding no control
 * character (C0, DEL, C1) other than those in `allowed` (e.g. "\n"), no
 * overlong form, surrogate or code point beyond U+10FFFF.
 */
bool fuzz_text_clean(const char *s, size_t n, const char *allowed);

/*
 * Parse `n` bytes of CSV with libcsv in strict mode.  Returns the number
 * of records, or -1 when the text does not parse or a record's width
 * differs from the first record's; `*ret_width` gets the first record's.
 */
long fuzz_csv_records(const char *s, size_t n, size_t *ret_width);

#endif
