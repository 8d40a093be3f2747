/*
 * check_draft.c - prompt-lookup drafting on hand-made token sequences: the
 * longest n-gram wins, then the most recent occurrence; drafts stop at the
 * sequence's end and at max; no match, short and empty sequences give none.
 */
#include <check.h>
#include <stdint.h>

#include "sample/draft.h"
#include "testutil.h"

static uint32_t draft(const int32_t *h, uint32_t n, uint32_t gmin, uint32_t gmax, uint32_t max,
		      int32_t *out)
{
	for (uint32_t i = 0; i < 16; i++)
		out[i] = -1;
	return strata_draft_lookup(h, n, gmin, gmax, out, max);
}

START_TEST(repeats_continue)
{
	/* ... 1 2 3 | 4 5 6 ... 1 2 3: the draft is 4 5 6 (then the repeat itself) */
	const int32_t h[] = { 9, 1, 2, 3, 4, 5, 6, 7, 1, 2, 3 };
	int32_t out[16];

	ck_assert_uint_eq(draft(h, 11, 1, 4, 3, out), 3);
	ck_assert(out[0] == 4 && out[1] == 5 && out[2] == 6 && out[3] == -1);
	/* max larger than what follows: up to the end of the sequence */
	ck_assert_uint_eq(draft(h, 11, 1, 4, 16, out), 7);
	ck_assert(out[0] == 4 && out[6] == 3 && out[7] == -1);
}
END_TEST

START_TEST(longest_then_most_recent)
{
	/*
	 * "2 3" occurs twice before the tail "1 2 3"; only the first occurrence
	 * has the 3-gram: it wins over the more recent 2-gram match.
	 */
	const int32_t h[] = { 1, 2, 3, 10, 2, 3, 20, 1, 2, 3 };
	/* among equal n-grams the most recent: "5" was followed by 7, later by 8 */
	const int32_t r[] = { 5, 7, 0, 5, 8, 0, 5 };
	int32_t out[16];

	ck_assert_uint_eq(draft(h, 10, 1, 3, 1, out), 1);
	ck_assert_int_eq(out[0], 10);
	ck_assert_uint_eq(draft(h, 10, 1, 2, 1, out), 1); /* capped at 2-grams: the recent one */
	ck_assert_int_eq(out[0], 20);
	ck_assert_uint_eq(draft(r, 7, 1, 1, 2, out), 2);
	ck_assert(out[0] == 8 && out[1] == 0 && out[2] == -1);
}
END_TEST

START_TEST(no_draft)
{
	const int32_t h[] = { 1, 2, 3, 4, 5, 6 };
	const int32_t p[] = { 4, 4, 4, 4 };
	int32_t out[16];

	ck_assert_uint_eq(draft(h, 6, 1, 4, 4, out), 0); /* nothing repeats */
	ck_assert_int_eq(out[0], -1);
	ck_assert_uint_eq(draft(h, 0, 1, 4, 4, out), 0);
	ck_assert_uint_eq(draft(h, 1, 1, 4, 4, out), 0);
	ck_assert_uint_eq(draft(p, 4, 1, 4, 0, out), 0);  /* max 0 */
	ck_assert_uint_eq(draft(p, 4, 1, 0, 4, out), 0);  /* gmax 0 */
	/* "2 4": the 2-gram needs gmin <= 2 */
	{
		const int32_t q[] = { 2, 4, 8, 3, 2, 4 };

		ck_assert_uint_eq(draft(q, 6, 3, 4, 4, out), 0);
		ck_assert_uint_eq(draft(q, 6, 2, 4, 4, out), 4);
		ck_assert(out[0] == 8 && out[1] == 3 && out[2] == 2 && out[3] == 4);
	}
	/* a run: the tail "4 4 4" occurred one token earlier; the draft is the last 4 */
	ck_assert_uint_eq(draft(p, 4, 1, 8, 4, out), 1);
	ck_assert_int_eq(out[0], 4);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("draft");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, repeats_continue);
	tcase_add_test(tc, longest_then_most_recent);
	tcase_add_test(tc, no_draft);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
