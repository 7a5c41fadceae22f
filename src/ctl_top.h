/*
 * ctl_top.h - `perfmonctl top [NAME]`: a live terminal view of the latest
 * interval of every stage.
 *
 * Flow: the daemon appends interval rows to its CSV -> [ctl_top follows
 * the file as it grows (and across rotation), keeps each stage's latest
 * row, and reads the collector's status block] -> a refreshed screen:
 * count, rate, p50, p99, max and anomalies per stage, fitted to the
 * terminal (80 columns work).  `q` quits.  With --once (or when stdout is
 * not a terminal) it prints the current view once, in any --format.
 */
#ifndef PERFMOND_CTL_TOP_H
#define PERFMOND_CTL_TOP_H

#include <stdio.h>

/* The command: exit 0 on q or --once, 1 no segments or unreadable CSV, 3
 * no collector running (unless --csv names the file to follow). */
int ctl_top_cmd(int argc, char **argv, FILE *out, FILE *err);

#endif
