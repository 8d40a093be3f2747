/*
 * testsuite.c - the end of every Check suite's main(): run, count the
 * skipped cases, pick the exit status (testutil.h, tu_srunner_run); and
 * the helpers that assert with Check (tu_expect_model_refused).
 */
#include "testutil.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "model/model.h"

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

/* (testutil.h) here, where every check suite links Check; the fuzz replayers do not */
void tu_expect_model_refused(const char *path, int want, const char *needle)
{
	struct strata_model *m = NULL;
	int rc;

	tu_log_capture();
	rc = strata_model_load(path, &m);
	tu_log_release();
	printf("refused as expected: %s", tu_log);
	ck_assert_int_eq(rc, want);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(tu_log_lines, 1);
	ck_assert_msg(strstr(tu_log, path) && strstr(tu_log, needle),
		      "error '%s' should name the file and '%s'", tu_log, needle);
}
