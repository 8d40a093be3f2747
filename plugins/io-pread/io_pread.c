/*
 * io-pread - the portable io backend: each handle owns a small pool of
 * worker threads doing blocking pread()s (positioned ReadFile on Windows),
 * so `depth` reads overlap on any system, with or without direct I/O.
 *
 * [io-pread] keys:
 *   threads = N   worker threads per handle (1..4096; default: the handle's
 *                 depth; more than depth is pointless and is cut to depth).
 *
 * Probe score 100: always usable, the lowest of the in-tree io plugins
 * (io-uring 300, io-direct 200), so it is picked only when they are not.
 *
 * Threading: submit(), reap() and close() come from the one thread that uses
 * the handle; the workers meet it under the handle's mutex.  A request a
 * worker has started is always finished before close() returns (its buffer
 * is written by then); requests still queued at close() are dropped unread.
 */
#include "strata/io_helpers.h" /* first: it sets _GNU_SOURCE */

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef _WIN32
#include <unistd.h>
#endif

#include "strata/plugin.h"

/* The file a handle reads: an fd, or a Windows handle (the SDK's helpers). */
#ifdef _WIN32
typedef HANDLE pr_file;
#define PR_NO_FILE INVALID_HANDLE_VALUE
/* winpthreads times condition waits on the real-time clock alone. */
#define PR_COND_CLOCK CLOCK_REALTIME
#else
typedef int pr_file;
#define PR_NO_FILE (-1)
/* Timeouts on the monotonic clock: a clock step must not stretch a reap. */
#define PR_COND_CLOCK CLOCK_MONOTONIC
#endif

static int pr_open(const struct strata_host *host, const char *path, int direct, pr_file *f)
{
#ifdef _WIN32
	return strata_ioh_win_open(host, path, direct, 0, f);
#else
	int fd = strata_ioh_open_fd(host, path, direct);

	if (fd < 0)
		return fd;
	*f = fd;
	return 0;
#endif
}

static void pr_close_file(pr_file f)
{
#ifdef _WIN32
	CloseHandle(f);
#else
	close(f);
#endif
}

static int32_t pr_read_full(pr_file f, void *buf, uint32_t len, uint64_t off)
{
#ifdef _WIN32
	return strata_ioh_win_read_full(f, buf, len, off);
#else
	return strata_ioh_pread_full(f, buf, len, off);
#endif
}

static int64_t pr_size(pr_file f)
{
#ifdef _WIN32
	return strata_ioh_win_size(f);
#else
	return strata_ioh_fd_size(f);
#endif
}

#define PREAD_SCORE 100
#define WORKER_STACK (256u * 1024u)

struct preader {
	const struct strata_host *host;
	pr_file file;
	uint32_t align; /* 1, or STRATA_IOH_DIRECT_ALIGN for a direct handle */
	uint32_t flags; /* strata_io_caps.flags */
	struct strata_ioh_slots s;
	uint32_t *queue; /* FIFO of slot indices no worker has taken yet */
	uint32_t q_head, q_n;
	uint32_t want;   /* reap() sleeps until this many are ready */
	int stop;
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* workers: the queue has something, or stop */
	pthread_cond_t done_cv; /* reaper: `want` reads are ready */
	int cv_ready;           /* mu and both condvars initialised */
	pthread_t *threads;
	uint32_t n_threads;
};

static void *worker(void *arg)
{
	struct preader *h = arg;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		struct strata_io_req *req;
		uint32_t ix;
		int32_t r;

		while (!h->stop && !h->q_n)
			pthread_cond_wait(&h->work_cv, &h->mu);
		if (h->stop)
			break;
		ix = h->queue[h->q_head];
		h->q_head = (h->q_head + 1) % h->s.depth;
		h->q_n--;
		req = h->s.req[ix];
		pthread_mutex_unlock(&h->mu);

		r = pr_read_full(h->file, req->buf, req->len, req->offset);

		pthread_mutex_lock(&h->mu);
		strata_ioh_finish(&h->s, ix, r);
		if (h->s.n_ready >= h->want)
			pthread_cond_signal(&h->done_cv);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

static int pread_probe(const struct strata_host *host)
{
	(void)host;
	return PREAD_SCORE;
}

static void pread_close(void *handle)
{
	struct preader *h = handle;
	uint32_t i;

	if (!h)
		return;
	if (h->cv_ready) {
		pthread_mutex_lock(&h->mu);
		h->stop = 1;
		pthread_cond_broadcast(&h->work_cv);
		pthread_mutex_unlock(&h->mu);
		for (i = 0; i < h->n_threads; i++)
			pthread_join(h->threads[i], NULL);
		pthread_cond_destroy(&h->work_cv);
		pthread_cond_destroy(&h->done_cv);
		pthread_mutex_destroy(&h->mu);
	}
	if (h->file != PR_NO_FILE)
		pr_close_file(h->file);
	free(h->threads);
	free(h->queue);
	strata_ioh_slots_free(&h->s);
	free(h);
}

static int init_sync(struct preader *h)
{
	pthread_condattr_t ca;
	int rc;

	if (pthread_condattr_init(&ca))
		return -ENOMEM;
	rc = PR_COND_CLOCK == CLOCK_REALTIME ? 0 : pthread_condattr_setclock(&ca, PR_COND_CLOCK);
	if (!rc)
		rc = pthread_mutex_init(&h->mu, NULL);
	if (!rc && (rc = pthread_cond_init(&h->work_cv, &ca)) != 0)
		pthread_mutex_destroy(&h->mu);
	if (!rc && (rc = pthread_cond_init(&h->done_cv, &ca)) != 0) {
		pthread_cond_destroy(&h->work_cv);
		pthread_mutex_destroy(&h->mu);
	}
	pthread_condattr_destroy(&ca);
	if (rc)
		return -rc;
	h->cv_ready = 1;
	return 0;
}

static int start_workers(struct preader *h, uint32_t n)
{
	pthread_attr_t attr;
	int rc = 0;

	h->threads = calloc(n, sizeof(*h->threads));
	if (!h->threads)
		return -ENOMEM;
	if (pthread_attr_init(&attr))
		return -ENOMEM;
	/* A worker only calls pread(): a small stack keeps 8 handles x 128 threads cheap. */
	pthread_attr_setstacksize(&attr, WORKER_STACK);
	for (; h->n_threads < n; h->n_threads++) {
		rc = pthread_create(&h->threads[h->n_threads], &attr, worker, h);
		if (rc)
			break;
	}
	pthread_attr_destroy(&attr);
	if (rc) {
		h->host->log(h->host, STRATA_LOG_ERROR,
			     "cannot start worker thread %u of %u: %s", (unsigned)h->n_threads + 1,
			     (unsigned)n, strerror(rc));
		return -rc;
	}
	return 0;
}

static int pread_open(const struct strata_host *host, const char *path, uint32_t flags,
		      uint32_t depth, void **handle)
{
	int direct = (flags & STRATA_IO_DIRECT) != 0;
	struct preader *h;
	uint32_t threads;
	int rc;

	*handle = NULL;
	if (!host || host->version < 1)
		return -EPROTO;
	if ((rc = strata_ioh_depth(host, depth, &depth)) < 0)
		return rc;
	threads = depth;
	if ((rc = strata_ioh_key_u32(host, "threads", 1, STRATA_IOH_MAX_DEPTH, &threads)) < 0)
		return rc;
	if (threads > depth)
		threads = depth;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->host = host;
	h->file = PR_NO_FILE;
	if ((rc = pr_open(host, path, direct, &h->file)) < 0)
		goto fail;
	h->align = direct ? STRATA_IOH_DIRECT_ALIGN : 1;
	h->flags = STRATA_IO_CAP_ASYNC | (direct ? STRATA_IO_CAP_DIRECT : 0);
	h->want = 1;
	h->queue = calloc(depth, sizeof(*h->queue));
	if (!h->queue || (rc = strata_ioh_slots_init(&h->s, depth)) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = init_sync(h)) < 0 || (rc = start_workers(h, threads)) < 0)
		goto fail;
	*handle = h;
	return 0;
fail:
	pread_close(h);
	return rc;
}

static int pread_caps(void *handle, struct strata_io_caps *caps)
{
	struct preader *h = handle;

	caps->flags = h->flags;
	caps->depth = h->s.depth;
	caps->buf_align = h->align;
	caps->offset_align = h->align;
	return 0;
}

static int64_t pread_size(void *handle)
{
	return pr_size(((struct preader *)handle)->file);
}

static int pread_submit(void *handle, struct strata_io_req *const *reqs, uint32_t n)
{
	struct preader *h = handle;
	uint32_t i, queued = 0;

	pthread_mutex_lock(&h->mu);
	for (i = 0; i < n; i++) {
		int ix, c;

		if (!reqs[i])
			break;
		ix = strata_ioh_slot_take(&h->s, reqs[i]);
		if (ix < 0)
			break;
		c = strata_ioh_check_req(reqs[i], h->align);
		if (c) {
			strata_ioh_finish(&h->s, (uint32_t)ix, c < 0 ? c : 0);
			continue;
		}
		h->queue[(h->q_head + h->q_n) % h->s.depth] = (uint32_t)ix;
		h->q_n++;
		queued++;
	}
	if (queued == 1)
		pthread_cond_signal(&h->work_cv);
	else if (queued)
		pthread_cond_broadcast(&h->work_cv);
	pthread_mutex_unlock(&h->mu);
	return i == 0 && n && !reqs[0] ? -EINVAL : (int)i;
}

/* Absolute PR_COND_CLOCK time for a pthread_cond_timedwait ms from now. */
static struct timespec abs_after(uint64_t ms)
{
	struct timespec ts;

	clock_gettime(PR_COND_CLOCK, &ts);
	ts.tv_sec += (time_t)(ms / 1000u);
	ts.tv_nsec += (long)(ms % 1000u) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static int pread_reap(void *handle, struct strata_io_req **done, uint32_t min_done,
		      uint32_t max_done, int timeout_ms)
{
	struct preader *h = handle;
	uint64_t deadline = strata_ioh_deadline(timeout_ms);
	uint32_t n;

	pthread_mutex_lock(&h->mu);
	/* Never wait for reads that were not submitted, nor for more than fit in done[]. */
	if (min_done > strata_ioh_outstanding(&h->s))
		min_done = strata_ioh_outstanding(&h->s);
	if (min_done > max_done)
		min_done = max_done;
	h->want = min_done ? min_done : 1;
	while (h->s.n_ready < min_done) {
		uint64_t left = strata_ioh_left_ms(deadline);

		if (!left)
			break;
		if (left == UINT64_MAX) {
			pthread_cond_wait(&h->done_cv, &h->mu);
		} else {
			struct timespec ts = abs_after(left);

			pthread_cond_timedwait(&h->done_cv, &h->mu, &ts);
		}
	}
	h->want = 1;
	n = strata_ioh_pop_ready(&h->s, done, max_done);
	pthread_mutex_unlock(&h->mu);
	return (int)n;
}

static const struct strata_io_ops pread_ops = {
	.version = 1,
	.open = pread_open,
	.close = pread_close,
	.caps = pread_caps,
	.size = pread_size,
	.submit = pread_submit,
	.reap = pread_reap,
	.register_buffers = NULL, /* plain pread gains nothing from pinned buffers */
};

static const char *const pread_keys[] = { "threads", NULL };

static const struct strata_plugin_desc pread_desc = {
	.abi = STRATA_PLUGIN_ABI_NEEDS(0),
	.kind = STRATA_PLUGIN_IO,
	.name = "io-pread",
	.version = "1.0.0",
	.description = "portable reads: a pool of blocking pread() threads per handle",
	.probe = pread_probe,
	.ops = &pread_ops,
	.config_keys = pread_keys,
};

STRATA_PLUGIN_DEFINE(pread_desc)
