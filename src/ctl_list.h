/*
 * ctl_list.h - `perfmonctl list`: every instance on this host.
 *
 * Flow: the control blocks present in /dev/shm (NAME.meta beside NAME)
 * -> [ctl_list: open each read-only, the collector's status from
 * ctl_status_snapshot(), the live producers from ctl_producers_read()]
 * -> one row per instance (table or JSON).
 */
#ifndef PERFMOND_CTL_LIST_H
#define PERFMOND_CTL_LIST_H

#include <stdio.h>

/* list [--format F]: exit 0, also when there is no instance. */
int ctl_list_cmd(int argc, char **argv, FILE *out, FILE *err);

#endif
