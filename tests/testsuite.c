/*
 * testsuite.c - the end of every Check suite's main(): run, count the
 * skipped cases, pick the exit status (testutil.h, tu_srunner_run).
 */
#include "testutil.h"

#include <check.h>
#include <stdio.h>

int tu_srunner_run(SRunner *sr)
{
	int run, failed, skipped;

	tu_skips_share();
	srunner_run_all(sr, CK_NORMAL);
	run = srunner_ntests_run(sr);
	failed = srunner_ntests_failed(sr);
	skipped = tu_skipped();
	srunner_free(sr);
	if (skipped)
		printf("%d of %d cases skipped (the SKIP lines above say why)%s\n", skipped, run,
		       failed ? "" : skipped == run ? ": the whole suite, exit 77" : "");
	if (failed)
		return 1;
	if (run == 0) {
		printf("no case ran (CK_RUN_CASE, CK_INCLUDE_TAGS or CK_EXCLUDE_TAGS left none)\n");
		return 1;
	}
	return skipped == run ? STRATA_TEST_SKIP : 0;
}
