/*
 * csv_out.h - the CSV time series and the outliers file (docs/csv.md).
 *
 * Flow: report (one interval's rows) -> [csv_out] -> the CSV file.  Runs
 * on the reporter thread only.  The file is opened O_APPEND without
 * following symlinks; an existing file must carry exactly this session's
 * header, and a last line cut short by a crash is removed so the file
 * stays parseable.  Numbers are formatted in the C locale whatever the
 * environment says; labels are RFC 4180 quoted with libcsv when needed.
 */
#ifndef PERFMOND_CSV_OUT_H
#define PERFMOND_CSV_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

struct csv_out;

/*
 * Open (create, or append to) `path` for reports made with `s`.  An
 * existing non-empty file whose header differs is refused (-EEXIST) with a
 * message naming both headers; the file is not modified.  Returns 0 or a
 * negative errno with `err` filled; `*ret` untouched on failure.
 */
int csv_out_open(struct csv_out **ret, const char *path, const struct report_settings *s,
		 char *err, size_t errlen);

/*
 * The same for the slowest-spans file (`<stem>_outliers.csv`, see
 * csv_out_outliers_path()): header
 * `timestamp,point,stage,rank,seq,start,duration_<unit>`, and for each
 * report row with outliers one line per slow sample, slowest (rank 1)
 * first, `start` in UTC to the nanosecond.  Everything else (appending,
 * schema check, backlog, rotation, reopen) works as for the series.
 */
int csv_out_open_outliers(struct csv_out **ret, const char *path,
			  const struct report_settings *s, char *err, size_t errlen);

/* The files that go with a CSV, live or rotated: STEM.csv has
 * STEM_summary.txt and STEM_outliers.csv beside it. */
#define CSV_SUMMARY_SUFFIX  "_summary.txt"
#define CSV_OUTLIERS_SUFFIX "_outliers.csv"

/* The companion `suffix` of the CSV `csv_path`: its name without ".csv",
 * then the suffix.  0 or -ENAMETOOLONG. */
int csv_out_companion_path(const char *csv_path, const char *suffix, char *buf, size_t n);

/* The outliers file beside the CSV `csv_path`. */
int csv_out_outliers_path(const char *csv_path, char *buf, size_t n);

/* The configured path. */
const char *csv_out_path(const struct csv_out *c);

/* The header line this session writes (without the newline). */
const char *csv_out_header(const struct csv_out *c);

/*
 * What the last open, reopen or rotation repaired or could not tidy up
 * without failing (a torn last line removed, an old rotated file that
 * would not go), for the log.  Copies it to `buf` and clears it; false
 * when there is nothing to say.
 */
bool csv_out_take_notice(struct csv_out *c, char *buf, size_t n);

/*
 * Append one interval's rows.  Rows are buffered and pushed to the file
 * when `push` is true (csv_flush_interval).  Returns 0 or a negative errno
 * (e.g. -ENOSPC); after a failure the rows not written are kept and
 * retried, in order, on the next call, so nothing is lost or duplicated
 * once space returns (up to a bounded backlog; what had to be discarded is
 * counted in csv_out_lost()).
 */
int csv_out_write(struct csv_out *c, const struct report *r, int push);

/* Push buffered rows to the file.  0 or negative errno. */
int csv_out_flush(struct csv_out *c);

/* Bytes in the current file (for size rotation). */
uint64_t csv_out_size(const struct csv_out *c);

/* Rows discarded because the backlog overflowed while writes failed. */
uint64_t csv_out_lost(const struct csv_out *c);

/*
 * Close the current file and open the configured path again (SIGUSR1,
 * after an external rename): a new file gets the header.  Buffered rows
 * are pushed to the old file first.  0 or negative errno with `err`.
 */
int csv_out_reopen(struct csv_out *c, char *err, size_t errlen);

/*
 * Rotate: push, rename the current file to `<stem>-YYYYmmddTHHMMSSZ.csv`
 * (UTC `when`; `-1`, `-2`... appended rather than replace an existing
 * name), start a fresh file with a header, and delete the oldest rotated
 * files beyond `keep` (the one just rotated always counts among those kept;
 * 0: every rotated file goes) together with their companions `<rotated name
 * without .csv>_summary.txt` and `..._outliers.csv`.  Only regular files owned by this user with
 * names of that exact pattern are considered; symlinks are never followed
 * or deleted.  A second rotation within the same second takes the suffix
 * above the highest one on disk (-1, -2, ...), never a freed lower one.  The rotated name is returned in
 * `ret_path`.  If the file being written is no longer at the configured
 * path (moved by someone else), the path is reopened instead and -ESTALE
 * returned.  0 or negative errno with `err`.
 */
int csv_out_rotate(struct csv_out *c, uint64_t when_realtime_ns, unsigned keep,
		   char *ret_path, size_t pathlen, char *err, size_t errlen);

/*
 * Rotate a companion file with the CSV: push, rename it to the outliers
 * name of `rotated_csv` (what csv_out_rotate() returned: `<stem>-TS.csv`
 * gives `<stem>-TS_outliers.csv`, never replacing a file), and start a
 * fresh file with a header; with `keep` 0 the rotated file goes at once,
 * as csv_out_rotate() does.  0 or negative errno with `err`.
 */
int csv_out_rotate_beside(struct csv_out *c, const char *rotated_csv, unsigned keep, char *err,
			  size_t errlen);

/* Push and close.  NULL is accepted. */
void csv_out_close(struct csv_out *c);

/* Close, and remove the file if this writer created it and wrote nothing
 * but its header: a start or reload refused after the CSV was opened
 * leaves nothing behind.  NULL is accepted. */
void csv_out_discard(struct csv_out *c);

/* "YYYY-MM-DD HH:MM:SS.mmm" in UTC. */
void csv_format_timestamp(uint64_t realtime_ns, char *buf, size_t n);

#endif
