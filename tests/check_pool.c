/*
 * check_pool.c - the thread pool: every share runs once, run_n, no lost
 * wake-ups over many runs (spinning and sleeping), scratch, shutdown.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu/pool.h"
#include "testutil.h"

#define MAX_T 64

struct count_arg {
	_Atomic int hits[MAX_T];
	_Atomic int bad_nth;
	int want_nth;
	pthread_t who[MAX_T];
};

static void count_task(void *p, int ith, int nth)
{
	struct count_arg *a = p;

	if (nth != a->want_nth || ith < 0 || ith >= nth)
		atomic_fetch_add(&a->bad_nth, 1);
	else {
		atomic_fetch_add(&a->hits[ith], 1);
		a->who[ith] = pthread_self();
	}
}

static void reset(struct count_arg *a, int want_nth)
{
	memset(a, 0, sizeof(*a));
	a->want_nth = want_nth;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

START_TEST(each_index_once)
{
	struct strata_pool *p;
	struct count_arg a;

	EXPECT_EQ(strata_pool_create(4, &p), 0);
	EXPECT_EQ(strata_pool_size(p), 4);
	for (int rep = 0; rep < 1000; rep++) {
		reset(&a, 4);
		strata_pool_run(p, count_task, &a);
		EXPECT_EQ(a.bad_nth, 0);
		for (int i = 0; i < 4; i++)
			EXPECT_EQ(a.hits[i], 1);
		/* Share 0 is the caller's; the rest go to whoever claims
		 * them first (the caller too, once its share is done). */
		EXPECT_TRUE(pthread_equal(a.who[0], pthread_self()));
	}
	strata_pool_free(p);
}
END_TEST

struct concur_arg {
	_Atomic int others;
	_Atomic int timeouts;
	pthread_t who[4];
};

/* Share 0 (the caller) holds on until another share has started: those
 * can only be running on helpers, concurrently. */
static void concur_task(void *p, int ith, int nth)
{
	struct concur_arg *a = p;

	a->who[ith] = pthread_self();
	if (ith > 0) {
		atomic_fetch_add(&a->others, 1);
		return;
	}
	for (double t0 = now_s(); atomic_load(&a->others) < nth - 1;)
		if (now_s() - t0 > 5.0) {
			atomic_fetch_add(&a->timeouts, 1);
			return;
		}
}

START_TEST(helpers_run_concurrently)
{
	struct strata_pool *p;
	struct concur_arg a;

	EXPECT_EQ(strata_pool_create(4, &p), 0);
	for (int rep = 0; rep < 300; rep++) {
		memset(&a, 0, sizeof(a));
		strata_pool_run(p, concur_task, &a);
		EXPECT_EQ(a.timeouts, 0);
		EXPECT_EQ(a.others, 3);
		for (int i = 1; i < 4; i++)
			EXPECT_TRUE(!pthread_equal(a.who[i], pthread_self()));
		if (rep % 100 == 99)
			usleep(20000); /* let the helpers fall asleep */
	}
	strata_pool_free(p);
}
END_TEST

START_TEST(run_n_exact)
{
	struct strata_pool *p;
	struct count_arg a;

	EXPECT_EQ(strata_pool_create(5, &p), 0);
	for (int rep = 0; rep < 200; rep++) {
		for (int n = -1; n <= 7; n++) {
			int eff = n < 1 ? 1 : n > 5 ? 5 : n;

			reset(&a, eff);
			strata_pool_run_n(p, count_task, &a, n);
			EXPECT_EQ(a.bad_nth, 0);
			for (int i = 0; i < MAX_T; i++)
				EXPECT_EQ(a.hits[i], i < eff ? 1 : 0);
		}
	}
	strata_pool_free(p);
}
END_TEST

static void add_task(void *p, int ith, int nth)
{
	atomic_fetch_add((_Atomic long *)p, ith + 1);
	(void)nth;
}

struct hand_arg {
	_Atomic long sum;
	_Atomic int others;
	_Atomic int timeouts;
	int hand_off;
};

/* Adds ith + 1.  With hand_off, share 0 waits for the others, so the run is
 * handed to the helpers (they must wake), not swallowed by the caller. */
static void hand_task(void *p, int ith, int nth)
{
	struct hand_arg *a = p;

	atomic_fetch_add(&a->sum, ith + 1);
	if (ith > 0) {
		atomic_fetch_add(&a->others, 1);
		return;
	}
	if (!a->hand_off)
		return;
	for (double t0 = now_s(); atomic_load(&a->others) < nth - 1;)
		if (now_s() - t0 > 10.0) {
			atomic_fetch_add(&a->timeouts, 1);
			return;
		}
}

/* Back-to-back runs of varying width, every `hand_every`-th handed to the
 * helpers: a lost wake-up shows as a timeout and a share run twice or never
 * in the sum.  (Not every run is handed off: on a loaded machine each
 * hand-off may wait for a time slice.) */
static void many_runs(int threads, int runs, double gap_us, int hand_every)
{
	struct strata_pool *p;
	struct hand_arg a;
	long want = 0;

	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(strata_pool_create(threads, &p), 0);
	for (int i = 0; i < runs; i++) {
		int n = i % 3 == 2 ? 1 + i % threads : threads;

		atomic_store(&a.others, 0);
		a.hand_off = i % hand_every == 0;
		/* a gap longer than the spin: the helpers go to sleep */
		for (double t0 = now_s(); now_s() - t0 < gap_us * 1e-6;)
			;
		strata_pool_run_n(p, hand_task, &a, n);
		want += (long)n * (n + 1) / 2;
		EXPECT_EQ(atomic_load(&a.sum), want);
		EXPECT_EQ(atomic_load(&a.timeouts), 0);
	}
	strata_pool_free(p);
}

START_TEST(many_runs_spinning)
{
	unsetenv("STRATA_POOL_SPIN_US");
	many_runs(2, 100000, 0, 8);
	many_runs(3, 100000, 0, 8);
}
END_TEST

START_TEST(many_runs_sleeping)
{
	/* No spinning: every wait goes through the sleep path. */
	setenv("STRATA_POOL_SPIN_US", "0", 1);
	many_runs(2, 20000, 20, 4);
	many_runs(4, 10000, 20, 4);
	many_runs(3, 20000, 0, 4); /* and racing with the caller */
	unsetenv("STRATA_POOL_SPIN_US");
}
END_TEST

START_TEST(pool_of_one)
{
	struct strata_pool *p;
	struct count_arg a;

	EXPECT_EQ(strata_pool_create(1, &p), 0);
	EXPECT_EQ(strata_pool_size(p), 1);
	for (int n = 1; n <= 3; n++) {
		reset(&a, 1);
		strata_pool_run_n(p, count_task, &a, n);
		EXPECT_EQ(a.bad_nth, 0);
		EXPECT_EQ(a.hits[0], 1);
		EXPECT_TRUE(pthread_equal(a.who[0], pthread_self()));
	}
	reset(&a, 1);
	strata_pool_run(NULL, count_task, &a); /* no pool: inline */
	EXPECT_EQ(a.hits[0], 1);
	strata_pool_free(p);
	strata_pool_free(NULL);
}
END_TEST

START_TEST(create_all_cpus)
{
	struct strata_pool *p;
	struct count_arg a;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	EXPECT_EQ(strata_pool_create(0, &p), 0);
	EXPECT_EQ(strata_pool_size(p), n > 0 ? n : 1);
	if (n <= MAX_T) {
		reset(&a, (int)n);
		strata_pool_run(p, count_task, &a);
		for (int i = 0; i < n; i++)
			EXPECT_EQ(a.hits[i], 1);
	}
	strata_pool_free(p);
	EXPECT_EQ(strata_pool_create(-3, &p), 0);
	EXPECT_EQ(strata_pool_size(p), n > 0 ? n : 1);
	strata_pool_free(p);
}
END_TEST

START_TEST(scratch_grows_aligned)
{
	struct strata_pool *p;
	unsigned char *a, *b, *c;

	EXPECT_EQ(strata_pool_create(2, &p), 0);
	a = strata_pool_scratch(p, 100);
	ck_assert_ptr_nonnull(a);
	EXPECT_EQ((uintptr_t)a % 64, 0);
	memset(a, 1, 100);
	b = strata_pool_scratch(p, 50); /* smaller: the same block */
	ck_assert_ptr_eq(a, b);
	EXPECT_EQ(b[99], 1);
	for (size_t sz = 5000; sz <= (64u << 20); sz = sz * 3 + 1) {
		c = strata_pool_scratch(p, sz);
		ck_assert_ptr_nonnull(c);
		EXPECT_EQ((uintptr_t)c % 64, 0);
		memset(c, 0xab, sz); /* all of it is ours */
		EXPECT_EQ(c[sz - 1], 0xab);
	}
	strata_pool_free(p);
}
END_TEST

START_TEST(free_while_sleeping)
{
	struct strata_pool *p;
	_Atomic long sum = 0;
	double t0;

	setenv("STRATA_POOL_SPIN_US", "1000", 1);
	EXPECT_EQ(strata_pool_create(3, &p), 0);
	unsetenv("STRATA_POOL_SPIN_US");
	strata_pool_run(p, add_task, &sum);
	usleep(50000); /* well past the spin: the helpers are asleep */
	strata_pool_run(p, add_task, &sum); /* and they wake for work */
	EXPECT_EQ(atomic_load(&sum), 12);
	usleep(50000);
	t0 = now_s();
	strata_pool_free(p);
	EXPECT(now_s() - t0 < 1.0, "free took %.3f s", now_s() - t0);
	/* And a pool freed right after creation (helpers maybe not started). */
	EXPECT_EQ(strata_pool_create(4, &p), 0);
	strata_pool_free(p);
}
END_TEST

START_TEST(split_partitions)
{
	for (long n = 0; n < 50; n++)
		for (int nth = 1; nth <= 9; nth++) {
			long next = 0;

			for (int i = 0; i < nth; i++) {
				long b, e;

				strata_split(n, i, nth, &b, &e);
				EXPECT_EQ(b, next);
				EXPECT_TRUE(e >= b && e - b <= n / nth + 1);
				next = e;
			}
			EXPECT_EQ(next, n);
		}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, each_index_once);
	tcase_add_test(tc, helpers_run_concurrently);
	tcase_add_test(tc, run_n_exact);
	tcase_add_test(tc, many_runs_spinning);
	tcase_add_test(tc, many_runs_sleeping);
	tcase_add_test(tc, pool_of_one);
	tcase_add_test(tc, create_all_cpus);
	tcase_add_test(tc, scratch_grows_aligned);
	tcase_add_test(tc, free_while_sleeping);
	tcase_add_test(tc, split_partitions);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
