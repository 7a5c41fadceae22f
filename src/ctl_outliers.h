/*
 * ctl_outliers.h - `perfmonctl report --outliers`: the slowest spans of a
 * run, read back from the `<stem>_outliers.csv` the daemon writes beside
 * its CSV with `[output] outliers` set (format in perfmond(8)).
 *
 * Flow: FILE.csv -> its outliers file -> [the N slowest per point and
 * stage over the whole file] -> table or JSON.
 */
#ifndef PERFMOND_CTL_OUTLIERS_H
#define PERFMOND_CTL_OUTLIERS_H

#include <stddef.h>
#include <stdio.h>

#include "ctl_report.h"
#include "ctl_table.h"

/*
 * Print, per point and stage of `csv_path`'s outliers file (filtered by
 * `filter`), its N slowest spans over the whole file, slowest first, N
 * being the most any interval listed, as a table or (CTL_FORMAT_JSON) one
 * JSON document.  0, or a negative errno with `err` filled (the file is
 * missing, not a regular file, unreadable or not an outliers file).
 */
int ctl_outliers_report(const char *csv_path, const struct ctl_filter *filter, FILE *out,
			enum ctl_format fmt, unsigned width, char *err, size_t errlen);

#endif
