/*
 * check_main.h - what every Check suite's main() does: run the suite in
 * the mode CK_FORK and CK_VERBOSITY ask for, and exit non-zero if any
 * test failed.
 */
#ifndef PERFMOND_CHECK_MAIN_H
#define PERFMOND_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
