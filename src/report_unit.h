/*
 * report_unit.h - the unit latency figures are reported in: what
 * [output] unit and --unit choose, and what the CSV, summary and
 * Prometheus writers convert to.
 *
 * Flow: shared by the configuration (conf.h) and the reports (report.h),
 * which include nothing of each other.
 */
#ifndef PERFMOND_REPORT_UNIT_H
#define PERFMOND_REPORT_UNIT_H

enum report_unit {
	REPORT_UNIT_NS = 0,
	REPORT_UNIT_US,
	REPORT_UNIT_CYCLES,
};

/* "ns", "us" or "cycles": the config file's spelling and the CSV's. */
static inline const char *report_unit_name(enum report_unit u)
{
	return u == REPORT_UNIT_US ? "us" : u == REPORT_UNIT_CYCLES ? "cycles" : "ns";
}

#endif
