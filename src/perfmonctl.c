/*
 * perfmonctl.c - the perfmond command-line tool: picks the command and
 * hands it the rest of the command line.
 *
 * Flow: a running instance, through its segments and its control socket
 * (status, names, list, remove, summary, top, record), the files it wrote
 * (report, plot, compare on CSV files; dump, export on captures), or the
 * machine itself (doctor) -> ctl_<command>_cmd -> stdout.  Each command
 * lives in a ctl_*.c module of its own or of its family; this file only
 * dispatches and prints the help.
 */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cli.h"
#include "ctl_compare.h"
#include "ctl_doctor.h"
#include "ctl_plot.h"
#include "ctl_list.h"
#include "ctl_report.h"
#include "ctl_capture.h"
#include "ctl_status.h"
#include "ctl_top.h"
#include "shm_guard.h"

static const struct {
	const char *name;
	ctl_cmd_fn fn;
} commands[] = {
	{ "status", ctl_status_cmd },
	{ "names", ctl_names_cmd },
	{ "list", ctl_list_cmd },
	{ "remove", ctl_remove_cmd },
	{ "summary", ctl_summary_cmd },
	{ "top", ctl_top_cmd },
	{ "report", ctl_report_cmd },
	{ "plot", ctl_plot_cmd },
	{ "compare", ctl_compare_cmd },
	{ "doctor", ctl_doctor_cmd },
	{ "record", ctl_record_cmd },
	{ "dump", ctl_dump_cmd },
	{ "export", ctl_export_cmd },
};

static void usage(FILE *f)
{
	fputs("Usage: perfmonctl COMMAND [OPTIONS] [ARGS]\n"
	      "\n"
	      "Inspect a running perfmond instance:\n"
	      "  status [NAME]            is a collector alive; its counters, ring fill, paths\n"
	      "                           and the producers attached (exit 0 alive, 3 no\n"
	      "                           collector running, 1 no such segments)\n"
	      "  names [NAME]             the name table\n"
	      "  list                     every instance on this host: state, pid, uptime,\n"
	      "                           event rate, dropped, producers attached\n"
	      "  remove NAME [--force]    remove both segments (refused while a collector runs)\n"
	      "  summary [NAME] [--timeout DURATION]\n"
	      "                           ask the daemon for a summary now and print it\n"
	      "  top [NAME] [--csv FILE] [--once]\n"
	      "                           live view of the latest interval per stage; q quits\n"
	      "  record [NAME] [--seconds S] [--max-size SIZE] -o FILE\n"
	      "                           the daemon writes every event it drains for S seconds\n"
	      "                           (default 5) into a new capture FILE (at most SIZE,\n"
	      "                           default 256M); prints events captured and lost\n"
	      "Work with event captures:\n"
	      "  dump FILE [--format live|md|csv|json]\n"
	      "                           every event decoded, with what pairing made of it\n"
	      "  export FILE --format chrome -o OUT.json\n"
	      "                           Chrome Trace Event JSON (Perfetto, chrome://tracing)\n"
	      "Work with CSV files:\n"
	      "  report FILE.csv [--point PATTERN] [--stage PATTERN] [--outliers]\n"
	      "                           per point and stage over the whole file; --outliers:\n"
	      "                           the slowest spans, from FILE_outliers.csv\n"
	      "  plot FILE.csv -o OUT.svg [--point P] [--stage S] [--width PX] [--title T]\n"
	      "                           percentiles over time as a self-contained SVG\n"
	      "  compare BASE.csv CURRENT.csv [--metric M] [--threshold F] [--min-delta D]\n"
	      "          [--max-cv F] [--resamples N] [--seed N] [--fail-on-regression]\n"
	      "          [--junit FILE] [--format json]\n"
	      "                           regression check (exit 0, 1 usage, 4 bad file,\n"
	      "                           5 regression with --fail-on-regression); several\n"
	      "                           runs per side as A1.csv,A2.csv B1.csv,B2.csv\n"
	      "Check the machine:\n"
	      "  doctor                   is this machine fit for trustworthy measurement\n"
	      "\n"
	      "NAME defaults to $SLICK_PERFMON_SHM, else \"perfmon\".\n"
	      "Tables: --format live|md|csv (or $PERFMON_FORMAT); live fits the terminal.\n"
	      "--format json: one JSON document from status, names, list, report, compare\n"
	      "and dump.\n"
	      "See perfmonctl(1).\n", f);
}

int main(int argc, char **argv)
{
	int rc;

	if (argc < 2) {
		usage(stderr);
		return CTL_EXIT_FAILURE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return CTL_EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("perfmonctl (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
		return CTL_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		for (int a = 2; a < argc; a++)
			if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) {
				usage(stdout);
				return CTL_EXIT_OK;
			}
		/* A segment shrunk while we read it gives zeros, not SIGBUS. */
		shm_guard_install();
		rc = commands[i].fn(argc - 1, argv + 1, stdout, stderr);
		if (shm_guard_total())
			fprintf(stderr, "perfmonctl: warning: a segment was shrunk while it was "
				"being read (%llu fault(s) absorbed); figures read from it after "
				"that are zeros\n", (unsigned long long)shm_guard_total());
		return rc;
	}
	fprintf(stderr, "perfmonctl: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return CTL_EXIT_FAILURE;
}
