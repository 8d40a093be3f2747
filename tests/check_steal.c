/*
 * check_steal.c - ranges shared by stealing (cpu/steal.h): every unit is
 * taken exactly once, by any number of shares running at once or one after
 * another, an owner's pieces go front to back and shrink, a share that
 * starts late finds its range taken, the edge sizes.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/pool.h"
#include "cpu/steal.h"
#include "testutil.h"

#define UNITS_MAX 100000

struct take_arg {
	struct strata_steal st;
	_Atomic int hits[UNITS_MAX];
	_Atomic int bad;       /* pieces out of [0, n) or empty */
	_Atomic int pieces[STRATA_STEAL_MAX];
	int64_t n;
	int spin;              /* busy work per unit, to let others steal */
};

static struct take_arg g_arg;
static _Thread_local volatile unsigned g_sink; /* busy work the compiler keeps, per thread (wraps) */

static void take_all(struct take_arg *a, int ith)
{
	int64_t u0, u1;

	while (strata_steal_next(&a->st, ith, &u0, &u1)) {
		if (u0 < 0 || u1 > a->n || u0 >= u1) {
			atomic_fetch_add(&a->bad, 1);
			continue;
		}
		atomic_fetch_add(&a->pieces[ith], 1);
		for (int64_t u = u0; u < u1; u++) {
			for (int i = 0; i < a->spin; i++)
				g_sink = g_sink + (unsigned)i;
			atomic_fetch_add(&a->hits[u], 1);
		}
	}
}

static void take_task(void *p, int ith, int nth)
{
	(void)nth;
	take_all(p, ith);
}

static void setup(struct take_arg *a, int64_t n, int nth, int64_t min_piece, int spin)
{
	memset(a, 0, sizeof(*a));
	a->n = n;
	a->spin = spin;
	strata_steal_init(&a->st, n, nth, min_piece);
}

static int each_once(struct take_arg *a)
{
	for (int64_t u = 0; u < a->n; u++)
		if (atomic_load(&a->hits[u]) != 1)
			return 0;
	return atomic_load(&a->bad) == 0;
}

/* Shares run one after another: the first takes everything, the rest find
 * nothing (a pool whose helpers all wake after the caller is done). */
START_TEST(serial_shares_take_everything_once)
{
	const int64_t sizes[] = { 1, 2, 3, 15, 16, 17, 1000, 4097 };
	const int nths[] = { 1, 2, 3, 7, STRATA_STEAL_MAX };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t t = 0; t < sizeof(nths) / sizeof(nths[0]); t++)
			for (int64_t mp = 1; mp <= 5; mp += 4) {
				struct take_arg *a = &g_arg;
				int64_t u0, u1;

				setup(a, sizes[i], nths[t], mp, 0);
				take_all(a, 0);
				for (int s = 1; s < nths[t]; s++)
					ck_assert_int_eq(strata_steal_next(&a->st, s, &u0, &u1), 0);
				ck_assert_msg(each_once(a), "n %lld nth %d min %lld",
					      (long long)sizes[i], nths[t], (long long)mp);
			}
}
END_TEST

/* Many threads at once, with busy work per unit so that ranges end
 * unevenly and get stolen from: still every unit exactly once. */
START_TEST(concurrent_shares_take_everything_once)
{
	struct strata_pool *p;
	const int64_t sizes[] = { 5, 64, 999, 20000 };

	EXPECT_EQ(strata_pool_create(4, &p), 0);
	for (int rep = 0; rep < 50; rep++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			struct take_arg *a = &g_arg;
			const int nth = 2 + rep % 3;

			setup(a, sizes[i], nth, 1 + rep % 2, rep % 4 == 0 ? 0 : 50 * (rep % 5));
			strata_pool_run_n(p, take_task, a, nth);
			ck_assert_msg(each_once(a), "rep %d n %lld nth %d", rep,
				      (long long)sizes[i], nth);
		}
	strata_pool_free(p);
}
END_TEST

/* An owner alone on its range takes it front to back in shrinking pieces
 * no smaller than min_piece (until less is left). */
START_TEST(owner_pieces_in_order_and_shrinking)
{
	struct strata_steal *st = &g_arg.st;
	int64_t u0, u1, next = 500, last = INT64_MAX, n = 0;

	strata_steal_init(st, 1000, 2, 8); /* share 1: [500, 1000) */
	while (strata_steal_next(st, 1, &u0, &u1) && u0 >= 500) {
		ck_assert_int_eq(u0, next);
		ck_assert_int_le(u1 - u0, last);
		ck_assert(u1 - u0 >= 8 || u1 == 1000);
		last = u1 - u0;
		next = u1;
		n++;
		if (u1 == 1000)
			break;
	}
	ck_assert_int_eq(next, 1000);
	ck_assert_int_gt(n, 4); /* pieces, not the range in one go */
}
END_TEST

/* A share done with its range takes the back half of the largest other
 * one, and then pieces of it from the front; the owner keeps the front. */
START_TEST(thief_takes_back_half_of_largest)
{
	struct strata_steal *st = &g_arg.st;
	int64_t u0, u1;

	strata_steal_init(st, 300, 3, 1); /* [0,100) [100,200) [200,300) */
	/* share 2 takes a quarter of its range: 75 left there, 100 in share 1's */
	ck_assert(strata_steal_next(st, 2, &u0, &u1));
	ck_assert_int_eq(u0, 200);
	ck_assert_int_eq(u1, 225);
	/* share 0 empties its own range, then steals from share 1 */
	do
		ck_assert(strata_steal_next(st, 0, &u0, &u1));
	while (u1 < 100);
	ck_assert_int_eq(u1, 100);
	ck_assert(strata_steal_next(st, 0, &u0, &u1));
	ck_assert_int_eq(u0, 150); /* the back half, taken from its front */
	ck_assert_int_lt(u1, 200);
	/* share 1 still owns the front of its range */
	ck_assert(strata_steal_next(st, 1, &u0, &u1));
	ck_assert_int_eq(u0, 100);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("steal");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, serial_shares_take_everything_once);
	tcase_add_test(tc, concurrent_shares_take_everything_once);
	tcase_add_test(tc, owner_pieces_in_order_and_shrinking);
	tcase_add_test(tc, thief_takes_back_half_of_largest);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
