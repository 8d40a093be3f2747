/*
 * pool.h - a fixed thread pool for data-parallel kernels.
 *
 * The calling thread is worker 0, so a pool of n threads starts n-1 helpers.
 * Workers spin briefly between tasks (the forward pass issues thousands of
 * small tasks per second) and then sleep, so an idle pool costs no CPU.
 * One thread at a time may call strata_pool_run() on a given pool.
 */
#ifndef STRATA_POOL_H
#define STRATA_POOL_H

#include <stddef.h>

struct strata_pool;

/*
 * fn runs once for every share ith in [0, nth), on at most nth threads at a
 * time; share 0 runs on the caller.  A helper that is slow to wake may find
 * its share already taken by the caller, so ith names a share of the work,
 * not a particular thread.
 */
typedef void (*strata_task_fn)(void *arg, int ith, int nth);

/*
 * Make a pool of n_threads threads in all (caller included); n_threads <= 0
 * means one per online CPU.  Returns 0 or -errno; *out owned by the caller,
 * released with strata_pool_free().
 */
int strata_pool_create(int n_threads, struct strata_pool **out);
void strata_pool_free(struct strata_pool *pool);
int strata_pool_size(const struct strata_pool *pool);

/* Run fn on all threads and return when every one has finished. */
void strata_pool_run(struct strata_pool *pool, strata_task_fn fn, void *arg);
/*
 * The same on the first nth threads only (1 <= nth <= size; clamped): for
 * work too small to be worth waking everyone.
 */
void strata_pool_run_n(struct strata_pool *pool, strata_task_fn fn, void *arg, int nth);

/*
 * Scratch memory owned by the pool, 64-byte aligned, grown on demand and kept
 * between calls: valid until the next strata_pool_scratch() call or
 * strata_pool_free().  NULL when out of memory.  Not for use inside tasks.
 */
void *strata_pool_scratch(struct strata_pool *pool, size_t bytes);

/* Split [0, n) into nth near-equal ranges; range of worker ith. */
static inline void strata_split(long n, int ith, int nth, long *begin, long *end)
{
	long per = n / nth, rem = n % nth;

	*begin = ith * per + (ith < rem ? ith : rem);
	*end = *begin + per + (ith < rem ? 1 : 0);
}

#endif
