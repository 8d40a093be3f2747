/*
 * pool.c - the data-parallel thread pool.
 *
 * Dispatch is one atomic store: the caller publishes (fn, arg), then bumps a
 * 64-bit generation word whose low 16 bits carry nth.  Workers spin on that
 * word with `pause` for a bounded time (the forward pass issues small tasks
 * back to back, and a futex wake costs tens of microseconds), yielding after
 * the first few microseconds, and then sleep on a condition variable.
 *
 * Shares are claimed, not assigned: the caller runs share 0, and shares
 * 1..nth-1 go to whoever takes them first from a counter tagged with the
 * run's serial number, the caller included once its own share is done.  So
 * a helper that is descheduled (a loaded machine, more threads than cores)
 * never holds the run up: the caller does its share.  The tag stops a helper
 * that wakes late from claiming a share of a later run; nth travels in the
 * words themselves, so nobody reads what the caller may be rewriting.
 *
 * Sleep/wake uses the Dekker pattern with sequentially consistent atomics: a
 * sleeper announces itself (n_sleepers++) and then re-reads the word; the
 * waker changes the word and then reads n_sleepers.  At least one of the two
 * sees the other, and the mutex closes the window between the re-read and the
 * wait.  So the common path (everyone spinning) makes no system call.
 * Each side's first write is a read-modify-write: qemu-user (the aarch64
 * tests) runs aarch64's store-release with a barrier before it and its
 * load-acquire with one after, none between, so on an x86 host the load
 * may pass the store: check_pool lost a wake-up twice in about fifty runs
 * under it.  An exchange is a full barrier there, and costs nothing more
 * on x86 (a seq_cst store is an xchg already).
 *
 * Env STRATA_POOL_SPIN_US (default 200) sets the spin time before sleeping.
 */
#define _GNU_SOURCE
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() ((void)0)
#endif

#include "plat/plat.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/mem.h"

#define POOL_MAX_THREADS 4096 /* nth must fit the words' low 16 bits */
#define GEN_NTH_BITS 16
#define GEN_NTH_MASK ((1u << GEN_NTH_BITS) - 1)
#define SERIAL(word) ((word) >> GEN_NTH_BITS)
#define DEFAULT_SPIN_US 200

struct worker {
	struct strata_pool *pool;
	pthread_t tid;
	int ith;
};

struct strata_pool {
	/* serial << 16 | nth; written once per run, read by every worker. */
	_Alignas(64) _Atomic uint64_t gen;
	/* serial << 16 | next unclaimed share. */
	_Alignas(64) _Atomic uint64_t shares;
	/* Shares 1..nth-1 finished in this run. */
	_Alignas(64) _Atomic uint64_t done;
	_Atomic int main_waiting;

	_Alignas(64) strata_task_fn fn; /* valid for the generation published */
	void *arg;
	_Atomic int stop;
	_Atomic int n_sleepers;
	pthread_mutex_t lock;     /* guards the two condition variables */
	pthread_cond_t wake;      /* workers wait here for a new generation */
	pthread_cond_t finished;  /* the caller waits here for `done` */

	int n;                    /* threads in all, caller included */
	int64_t spin_ns;
	struct worker *workers;   /* n - 1 helpers */
	void *scratch;
	size_t scratch_size;
};

/*
 * Spin until *word != val (want_eq = 0) or == val (want_eq = 1), for at most
 * spin_ns; 1 when it happened.  After the first YIELD_AFTER_NS the spinner
 * also yields: on a loaded machine (more runnable threads than cores) the
 * thread it waits for may be queued behind it on its own core.  Not sooner:
 * a yield hands the core to any other runnable process, even a nice 19
 * compile, for up to its time slice, and most of a decode step's waits
 * last a few microseconds (2 us cost 20-40% of decode and prompt speed
 * beside a background build; 50 us as little as never yielding).
 */
#define YIELD_AFTER_NS 50000
static int spin_until(_Atomic uint64_t *word, uint64_t val, int want_eq,
		      int64_t spin_ns)
{
	int64_t start = 0, t;

	for (unsigned i = 1;; i++) {
		uint64_t v = atomic_load_explicit(word, memory_order_acquire);

		if ((v == val) == want_eq)
			return 1;
		cpu_relax();
		if (i & 63)
			continue;
		t = (int64_t)strata_now_ns();
		if (start == 0)
			start = t;
		if (t - start >= spin_ns)
			return 0;
		if (t - start >= YIELD_AFTER_NS)
			sched_yield();
	}
}

/* Wait until the generation differs from `seen`; returns it. */
static uint64_t wait_generation(struct strata_pool *p, uint64_t seen)
{
	uint64_t g;

	if (spin_until(&p->gen, seen, 0, p->spin_ns))
		return atomic_load_explicit(&p->gen, memory_order_acquire);
	pthread_mutex_lock(&p->lock);
	atomic_fetch_add(&p->n_sleepers, 1);
	while ((g = atomic_load(&p->gen)) == seen)
		pthread_cond_wait(&p->wake, &p->lock);
	atomic_fetch_sub(&p->n_sleepers, 1);
	pthread_mutex_unlock(&p->lock);
	return g;
}

/* Claim the next share of run g (a generation word); -1 when none is left
 * or the counter already belongs to a later run. */
static int claim(struct strata_pool *p, uint64_t g)
{
	uint64_t s = atomic_load_explicit(&p->shares, memory_order_acquire);

	for (;;) {
		if (SERIAL(s) != SERIAL(g) || (s & GEN_NTH_MASK) >= (g & GEN_NTH_MASK))
			return -1;
		if (atomic_compare_exchange_weak_explicit(&p->shares, &s, s + 1,
				memory_order_acq_rel, memory_order_acquire))
			return (int)(s & GEN_NTH_MASK);
	}
}

/* Run every share of run g this thread can claim. */
static void run_shares(struct strata_pool *p, uint64_t g)
{
	int nth = (int)(g & GEN_NTH_MASK), s;

	while ((s = claim(p, g)) >= 0) {
		/* fn and arg are those of run g: the caller cannot move on
		 * before this share is counted done. */
		p->fn(p->arg, s, nth);
		if (atomic_fetch_add(&p->done, 1) + 1 == (uint64_t)nth - 1 &&
		    atomic_load(&p->main_waiting)) {
			pthread_mutex_lock(&p->lock);
			pthread_cond_signal(&p->finished);
			pthread_mutex_unlock(&p->lock);
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct strata_pool *p = w->pool;
	uint64_t seen = 0;

	for (;;) {
		uint64_t g = wait_generation(p, seen);

		seen = g;
		if (atomic_load_explicit(&p->stop, memory_order_acquire))
			break;
		/* run_n(k): only the first k threads join in, the rest sleep on */
		if (w->ith < (int)(g & GEN_NTH_MASK))
			run_shares(p, g);
	}
	return NULL;
}

/* Start run `nth` (0: shutdown): reset the counters, publish the generation
 * and wake sleepers if there are any.  Returns the generation word. */
static uint64_t publish(struct strata_pool *p, int nth)
{
	uint64_t g = atomic_load_explicit(&p->gen, memory_order_relaxed);

	g = (SERIAL(g) + 1) << GEN_NTH_BITS | (uint64_t)nth;
	atomic_store_explicit(&p->done, 0, memory_order_relaxed);
	atomic_store_explicit(&p->shares, (g & ~(uint64_t)GEN_NTH_MASK) | 1,
			      memory_order_relaxed);
	/* An exchange, not a store: see "Dekker" at the top. */
	atomic_exchange(&p->gen, g);
	if (atomic_load(&p->n_sleepers) > 0) {
		pthread_mutex_lock(&p->lock);
		pthread_cond_broadcast(&p->wake);
		pthread_mutex_unlock(&p->lock);
	}
	return g;
}

static void wait_done(struct strata_pool *p, int helpers)
{
	if (spin_until(&p->done, (uint64_t)helpers, 1, p->spin_ns))
		return;
	pthread_mutex_lock(&p->lock);
	atomic_exchange(&p->main_waiting, 1);
	while (atomic_load(&p->done) != (uint64_t)helpers)
		pthread_cond_wait(&p->finished, &p->lock);
	atomic_store(&p->main_waiting, 0);
	pthread_mutex_unlock(&p->lock);
}

static int64_t spin_ns_from_env(void)
{
	const char *s = getenv("STRATA_POOL_SPIN_US");
	char *end;
	long v;

	if (!s || !*s)
		return (int64_t)DEFAULT_SPIN_US * 1000;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 10000000) {
		strata_warn("STRATA_POOL_SPIN_US=%s is not a number of microseconds "
			    "in [0, 10000000]; using %d", s, DEFAULT_SPIN_US);
		return (int64_t)DEFAULT_SPIN_US * 1000;
	}
	return (int64_t)v * 1000;
}

static void stop_workers(struct strata_pool *p, int started)
{
	atomic_store(&p->stop, 1);
	publish(p, 0);
	for (int i = 0; i < started; i++)
		pthread_join(p->workers[i].tid, NULL);
}

int strata_pool_create(int n_threads, struct strata_pool **out)
{
	struct strata_pool *p;
	struct strata_sigmask old;
	int rc = 0, started = 0;

	*out = NULL;
	if (n_threads <= 0) {
		n_threads = strata_cpu_count();
	}
	if (n_threads > POOL_MAX_THREADS)
		n_threads = POOL_MAX_THREADS;
	p = strata_zalloc_aligned(1, sizeof(*p)); /* its hot fields on their own lines */
	if (!p)
		return -ENOMEM;
	p->n = n_threads;
	p->spin_ns = spin_ns_from_env();
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->finished, NULL);
	if (n_threads > 1) {
		p->workers = calloc((size_t)n_threads - 1, sizeof(*p->workers));
		if (!p->workers) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	/* Helpers must not take the process's signals (SIGINT for the server). */
	strata_threads_signals_block(&old);
	for (int i = 0; i < n_threads - 1; i++) {
		struct worker *w = &p->workers[i];

		w->pool = p;
		w->ith = i + 1;
		rc = -pthread_create(&w->tid, NULL, worker_main, w);
		if (rc)
			break;
		started++;
	}
	strata_threads_signals_restore(&old);
	if (rc) {
		strata_error("thread pool: cannot start thread %d of %d: %s",
			     started + 1, n_threads, strerror(-rc));
		stop_workers(p, started);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	free(p->workers);
	pthread_cond_destroy(&p->finished);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	strata_aligned_free(p);
	return rc;
}

void strata_pool_free(struct strata_pool *pool)
{
	if (!pool)
		return;
	stop_workers(pool, pool->n - 1);
	free(pool->workers);
	strata_aligned_free(pool->scratch);
	pthread_cond_destroy(&pool->finished);
	pthread_cond_destroy(&pool->wake);
	pthread_mutex_destroy(&pool->lock);
	strata_aligned_free(pool);
}

int strata_pool_size(const struct strata_pool *pool)
{
	return pool ? pool->n : 1;
}

void strata_pool_run_n(struct strata_pool *pool, strata_task_fn fn, void *arg,
		       int nth)
{
	uint64_t g;

	if (!pool) {
		fn(arg, 0, 1);
		return;
	}
	if (nth > pool->n)
		nth = pool->n;
	if (nth <= 1) {
		fn(arg, 0, 1);
		return;
	}
	pool->fn = fn;
	pool->arg = arg;
	g = publish(pool, nth);
	fn(arg, 0, nth);
	run_shares(pool, g); /* those no helper has taken yet */
	wait_done(pool, nth - 1);
}

void strata_pool_run(struct strata_pool *pool, strata_task_fn fn, void *arg)
{
	strata_pool_run_n(pool, fn, arg, pool ? pool->n : 1);
}

void *strata_pool_scratch(struct strata_pool *pool, size_t bytes)
{
	void *p;
	size_t want;

	if (bytes <= pool->scratch_size)
		return pool->scratch;
	/* Grow by at least half again so a slowly rising need reallocates rarely. */
	want = pool->scratch_size + pool->scratch_size / 2;
	if (want < bytes)
		want = bytes;
	want = (want + 4095) & ~(size_t)4095;
	p = strata_aligned_alloc(64, want);
	if (!p) {
		p = strata_aligned_alloc(64, bytes);
		if (!p)
			return NULL;
		want = bytes;
	}
	strata_aligned_free(pool->scratch);
	pool->scratch = p;
	pool->scratch_size = want;
	return p;
}
