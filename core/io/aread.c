/*
 * aread.c - the submit / reap / retry / timeout / drain loop over one io
 * plugin handle, and the thread that runs it in the background.
 *
 * The loop keeps two lists of at most `depth` requests: the backlog (taken
 * from next() or due for a retry, not yet accepted by submit()) and the
 * reads in flight.  A retry goes to the front of the backlog, so it is
 * submitted before new requests and a transient fault heals early.  The
 * timeout counts from the last read that landed (or the start), not per
 * read: a disk that keeps delivering is slow, not stuck.
 */
#define _GNU_SOURCE
#include "io/aread.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/log.h"

enum { AR_IDLE, AR_QUEUED, AR_RUNNING, AR_DONE };

struct strata_aread {
	struct strata_aread_opts o;  /* its strings point to the copies below */
	char *path, *what, *io_name, *timeout_key;
	void *handle;                /* NULL after a failure closed it */
	uint32_t flags;              /* open() flags in force */
	uint32_t depth;
	uint64_t size;
	void **reg_bufs;             /* strata_aread_register()'s, for a reopened handle */
	size_t *reg_lens;
	uint32_t n_reg;
	struct strata_aread_req **bl;  /* backlog: [0, n_bl) */
	struct strata_aread_req **fly; /* in flight: [0, n_fly) */
	struct strata_io_req **done;
	uint32_t n_bl, n_fly;
	char err[768];
	/* the background thread of start()/wait() */
	pthread_t th;
	int th_state;                /* 0 none, 1 running, -1 could not be started */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state;                   /* AR_*, under mu */
	int stop;
	int rc;
	struct strata_aread_job *job;
};

static void set_err(struct strata_aread *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_err(struct strata_aread *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->err, sizeof(a->err), fmt, ap);
	va_end(ap);
}

static void describe(const struct strata_aread_job *job, const struct strata_aread_req *r,
		     char *buf, size_t n)
{
	buf[0] = 0;
	if (job->describe)
		job->describe(job->user, r, buf, n);
	if (!buf[0])
		snprintf(buf, n, "a read");
}

/* ---- the handle ------------------------------------------------------------------ */

/* Open the handle; on failure the message is in a->err and nothing is left open. */
static int open_handle(struct strata_aread *a)
{
	const struct strata_io_ops *ops = a->o.ops;
	struct strata_io_caps caps = { 0 };
	int64_t size;
	int rc = ops->open(a->o.host, a->path, a->flags, a->o.depth, &a->handle);

	if (rc == -EINVAL && (a->flags & STRATA_IO_DIRECT)) {
		/* Once per aread: a reopen keeps the buffered mode found here. */
		strata_warn("%s: the file system (or io plugin %s) refuses direct I/O: %s are "
			    "read through the page cache", a->path, a->io_name, a->what);
		a->flags &= ~STRATA_IO_DIRECT;
		rc = ops->open(a->o.host, a->path, a->flags, a->o.depth, &a->handle);
	}
	if (rc) {
		a->handle = NULL;
		set_err(a, "io plugin %s cannot open %s for %s: %s", a->io_name, a->path, a->what,
			strerror(-rc));
		return rc;
	}
	if ((rc = ops->caps(a->handle, &caps))) {
		set_err(a, "io plugin %s: caps() failed on %s: %s", a->io_name, a->path,
			strerror(-rc));
		goto fail;
	}
	if (caps.buf_align > a->o.align || caps.offset_align > a->o.align ||
	    (caps.offset_align && a->o.align % caps.offset_align) ||
	    (caps.buf_align && a->o.align % caps.buf_align)) {
		set_err(a, "io plugin %s on %s wants %u-byte aligned reads (buffers: %u); %s are "
			"read in %u-byte aligned pieces", a->io_name, a->path, caps.offset_align,
			caps.buf_align, a->what, a->o.align);
		rc = -EINVAL;
		goto fail;
	}
	size = ops->size(a->handle);
	if (size < 0) {
		set_err(a, "io plugin %s: size() failed on %s: %s", a->io_name, a->path,
			strerror((int)-size));
		rc = (int)size;
		goto fail;
	}
	a->size = (uint64_t)size;
	a->depth = caps.depth && caps.depth < a->o.depth ? caps.depth : a->o.depth;
	if (a->n_reg && (caps.flags & STRATA_IO_CAP_FIXED_BUFFERS) && ops->register_buffers &&
	    (rc = ops->register_buffers(a->handle, a->reg_bufs, a->reg_lens, a->n_reg)))
		strata_debug("io plugin %s: register_buffers on %s: %s", a->io_name, a->path,
			     strerror(-rc)); /* only an optimisation: reads work without */
	return 0;
fail:
	ops->close(a->handle);
	a->handle = NULL;
	return rc;
}

/* The plugin waits for (or cancels) what is in flight: no buffer is written after. */
static void close_handle(struct strata_aread *a)
{
	if (a->handle)
		a->o.ops->close(a->handle);
	a->handle = NULL;
	a->n_fly = 0;
}

int strata_aread_open(const struct strata_aread_opts *o, struct strata_aread **out)
{
	struct strata_aread *a;
	const struct strata_io_ops *ops = o->ops;
	int rc;

	*out = NULL;
	if (!ops || !ops->open || !ops->close || !ops->caps || !ops->size || !ops->submit ||
	    !ops->reap || !o->host || !o->path || !o->depth || !o->timeout_ms || !o->align ||
	    (o->align & (o->align - 1)))
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->o = *o;
	a->path = strdup(o->path);
	a->what = strdup(o->what ? o->what : "reads");
	a->io_name = strdup(o->io_name ? o->io_name : "io");
	a->timeout_key = o->timeout_key ? strdup(o->timeout_key) : NULL;
	a->bl = calloc(o->depth, sizeof(*a->bl));
	a->fly = calloc(o->depth, sizeof(*a->fly));
	a->done = calloc(o->depth, sizeof(*a->done));
	if (!a->path || !a->what || !a->io_name || !a->bl || !a->fly || !a->done ||
	    (o->timeout_key && !a->timeout_key)) {
		strata_error("%s: out of memory for %s", o->path, o->what ? o->what : "reads");
		rc = -ENOMEM;
		goto fail;
	}
	a->o.path = a->path;
	a->o.what = a->what;
	a->o.io_name = a->io_name;
	a->o.timeout_key = a->timeout_key;
	a->flags = o->direct ? STRATA_IO_DIRECT : 0;
	a->depth = o->depth;
	if ((rc = open_handle(a))) {
		strata_error("%s", a->err);
		goto fail;
	}
	if ((rc = pthread_mutex_init(&a->mu, NULL))) {
		rc = -rc;
		goto fail;
	}
	if ((rc = pthread_cond_init(&a->cv, NULL))) {
		pthread_mutex_destroy(&a->mu);
		rc = -rc;
		goto fail;
	}
	a->err[0] = 0;
	*out = a;
	return 0;
fail:
	close_handle(a);
	free(a->path);
	free(a->what);
	free(a->io_name);
	free(a->timeout_key);
	free(a->bl);
	free(a->fly);
	free(a->done);
	free(a);
	return rc;
}

void strata_aread_close(struct strata_aread *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	while (a->state == AR_QUEUED || a->state == AR_RUNNING)
		pthread_cond_wait(&a->cv, &a->mu);
	a->stop = 1;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	if (a->th_state == 1)
		pthread_join(a->th, NULL);
	close_handle(a);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a->reg_bufs);
	free(a->reg_lens);
	free(a->path);
	free(a->what);
	free(a->io_name);
	free(a->timeout_key);
	free(a->bl);
	free(a->fly);
	free(a->done);
	free(a);
}

uint32_t strata_aread_depth(const struct strata_aread *a)
{
	return a->depth;
}

uint64_t strata_aread_size(const struct strata_aread *a)
{
	return a->size;
}

int strata_aread_direct(const struct strata_aread *a)
{
	return !!(a->flags & STRATA_IO_DIRECT);
}

const char *strata_aread_error(const struct strata_aread *a)
{
	return a->err;
}

int strata_aread_register(struct strata_aread *a, void *const *bufs, const size_t *lens,
			  uint32_t n)
{
	struct strata_io_caps caps = { 0 };
	void **b = n ? malloc(n * sizeof(*b)) : NULL;
	size_t *l = n ? malloc(n * sizeof(*l)) : NULL;
	int rc;

	if (n && (!b || !l)) {
		free(b);
		free(l);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		b[i] = bufs[i];
		l[i] = lens[i];
	}
	free(a->reg_bufs);
	free(a->reg_lens);
	a->reg_bufs = b;
	a->reg_lens = l;
	a->n_reg = n;
	if (a->handle && a->o.ops->register_buffers && !a->o.ops->caps(a->handle, &caps) &&
	    (caps.flags & STRATA_IO_CAP_FIXED_BUFFERS) &&
	    (rc = a->o.ops->register_buffers(a->handle, b, l, n)))
		strata_debug("io plugin %s: register_buffers on %s: %s", a->io_name, a->path,
			     strerror(-rc));
	return 0;
}

/* ---- the loop ---------------------------------------------------------------------- */

/* Move the first k of the backlog in flight (submit() accepted them). */
static void accepted(struct strata_aread *a, uint32_t k, uint64_t t)
{
	for (uint32_t i = 0; i < k; i++) {
		struct strata_aread_req *r = a->bl[i];

		r->tries++;
		r->t_sub = t;
		r->fly = a->n_fly;
		a->fly[a->n_fly++] = r;
	}
	memmove(a->bl, a->bl + k, (a->n_bl - k) * sizeof(*a->bl));
	a->n_bl -= k;
}

/* Submit the backlog; 0, or -errno with the message set (the backlog is then dropped). */
static int submit_backlog(struct strata_aread *a, const struct strata_aread_job *job)
{
	struct strata_io_req *reqs[64];

	while (a->n_bl) {
		uint32_t n = a->n_bl < 64 ? a->n_bl : 64;
		int k;

		for (uint32_t i = 0; i < n; i++)
			reqs[i] = &a->bl[i]->io;
		k = a->o.ops->submit(a->handle, reqs, n);
		if (k == -EAGAIN && a->n_fly)
			return 0; /* full for now: reap first */
		if (k < 0 || (k == 0 && !a->n_fly)) {
			char what[256];

			describe(job, a->bl[0], what, sizeof(what));
			set_err(a, "%s: io plugin %s refused to queue reads (the first: %s, %u bytes "
				"at offset %" PRIu64 "): %s", a->path, a->io_name, what,
				a->bl[0]->io.len, a->bl[0]->io.offset,
				k < 0 ? strerror(-k) : "it took none with none in flight");
			a->n_bl = 0;
			return k < 0 ? k : -EIO;
		}
		if (k == 0)
			return 0;
		accepted(a, (uint32_t)k > n ? n : (uint32_t)k, strata_now_ns());
	}
	return 0;
}

/* The read in flight submitted longest ago (for the timeout message). */
static const struct strata_aread_req *oldest(const struct strata_aread *a)
{
	const struct strata_aread_req *o = NULL;

	for (uint32_t i = 0; i < a->n_fly; i++)
		if (!o || a->fly[i]->t_sub < o->t_sub)
			o = a->fly[i];
	return o;
}

static void timed_out(struct strata_aread *a, const struct strata_aread_job *job)
{
	const struct strata_aread_req *o = oldest(a);
	char what[256];

	describe(job, o, what, sizeof(what));
	set_err(a, "%s: no read landed for %u ms through %s (%u in flight; the oldest: %s, %u "
		"bytes at offset %" PRIu64 "): the disk stopped answering%s%s%s", a->path,
		a->o.timeout_ms, a->io_name, a->n_fly, what, o->io.len, o->io.offset,
		a->timeout_key ? " (" : "", a->timeout_key ? a->timeout_key : "",
		a->timeout_key ? ")" : "");
}

/* One clear message for read r that failed its last try. */
static int read_failed(struct strata_aread *a, const struct strata_aread_job *job,
		       const struct strata_aread_req *r)
{
	char what[256], why[128];

	describe(job, r, what, sizeof(what));
	if (r->io.result < 0)
		snprintf(why, sizeof(why), "%s", strerror(-r->io.result));
	else
		snprintf(why, sizeof(why), "short read (%d of the %u bytes needed; did the file "
			 "shrink?)", r->io.result, r->need);
	set_err(a, "%s: reading %s: %u bytes at offset %" PRIu64 " through %s failed %u times: %s",
		a->path, what, r->io.len, r->io.offset, a->io_name, r->tries, why);
	return r->io.result < 0 ? r->io.result : -EIO;
}

/* Take r out of the reads in flight; 0, or -1 when it was not one of them. */
static int unfly(struct strata_aread *a, struct strata_aread_req *r)
{
	uint32_t i = r->fly;

	if (i >= a->n_fly || a->fly[i] != r)
		return -1;
	a->fly[i] = a->fly[--a->n_fly];
	a->fly[i]->fly = i;
	return 0;
}

/*
 * What the loop does with the reads reap() returned: landed ones go back to
 * the caller (unless the job is stopping), failed ones are retried or fail
 * the job.  0, or -EIO when the plugin returned a request it was not given.
 */
static int completions(struct strata_aread *a, struct strata_aread_job *job, int got,
		       int stopping, int *err)
{
	for (int i = 0; i < got; i++) {
		/* io is the request's first member */
		struct strata_aread_req *r = (struct strata_aread_req *)(void *)a->done[i];

		if (unfly(a, r)) {
			if (!*err)
				set_err(a, "%s: io plugin %s returned a read it was not given "
					"(offset %" PRIu64 ")", a->path, a->io_name, a->done[i]->offset);
			return -EIO;
		}
		stopping |= *err != 0; /* a failure earlier in this batch ends the job too */
		if (r->io.result >= 0 && (uint32_t)r->io.result >= r->need) {
			if (stopping)
				continue; /* drained: the job is over */
			job->reads++;
			job->bytes += r->need;
			if (job->landed)
				job->landed(job->user, r);
		} else if (r->tries < STRATA_AREAD_TRIES && !stopping) {
			job->retries++;
			r->io.result = 0;
			memmove(a->bl + 1, a->bl, a->n_bl * sizeof(*a->bl));
			a->bl[0] = r;
			a->n_bl++;
		} else if (!*err && !stopping) {
			*err = read_failed(a, job, r);
		}
	}
	return 0;
}

int strata_aread_run(struct strata_aread *a, struct strata_aread_job *job)
{
	const uint64_t tmo = (uint64_t)a->o.timeout_ms * 1000000ull;
	uint64_t last;
	int err = 0, cancelled = 0, exhausted = 0;

	a->err[0] = 0;
	a->n_bl = a->n_fly = 0;
	if (!a->handle && (err = open_handle(a)))
		return err;
	last = strata_now_ns();
	for (;;) {
		int stopping, got;
		uint64_t t, left;

		if (!cancelled && job->cancelled && job->cancelled(job->user))
			cancelled = 1;
		stopping = err || cancelled;
		if (stopping) {
			a->n_bl = 0; /* never submitted: nothing to drain */
		} else if (!exhausted && a->n_bl + a->n_fly < a->depth) {
			uint32_t k = job->next(job->user, a->bl + a->n_bl,
					       a->depth - a->n_bl - a->n_fly);

			for (uint32_t i = 0; i < k; i++) {
				a->bl[a->n_bl + i]->tries = 0;
				a->bl[a->n_bl + i]->io.result = 0;
			}
			a->n_bl += k;
			exhausted = k == 0;
		}
		if (a->n_bl && (err = submit_backlog(a, job)))
			continue; /* drain what is in flight */
		if (!a->n_fly) {
			if (!a->n_bl && (exhausted || stopping))
				break;
			continue;
		}
		t = strata_now_ns();
		left = last + tmo > t ? (last + tmo - t + 999999) / 1000000 : 0; /* ms, rounded up */
		got = a->o.ops->reap(a->handle, a->done, 1, a->depth,
				     left > INT_MAX ? INT_MAX : (int)left);
		if (got < 0) {
			if (!err) {
				const struct strata_aread_req *o = oldest(a);
				char what[256];

				describe(job, o, what, sizeof(what));
				set_err(a, "%s: io plugin %s failed while reading %s (%u bytes at "
					"offset %" PRIu64 "; %u reads in flight): %s", a->path,
					a->io_name, what, o->io.len, o->io.offset, a->n_fly,
					strerror(-got));
				err = got;
			}
			close_handle(a);
			break;
		}
		if (got == 0) {
			if (strata_now_ns() - last < tmo)
				continue;
			if (!err) {
				timed_out(a, job);
				err = -ETIMEDOUT;
			}
			close_handle(a);
			break;
		}
		last = strata_now_ns();
		if (completions(a, job, got > (int)a->depth ? (int)a->depth : got, stopping, &err)) {
			err = err ? err : -EIO;
			close_handle(a);
			break;
		}
	}
	if (!err && cancelled)
		return -ECANCELED;
	return err;
}

/* ---- the background thread ---------------------------------------------------------- */

static void *aread_thread(void *arg)
{
	struct strata_aread *a = arg;
	int rc;

	pthread_mutex_lock(&a->mu);
	for (;;) {
		while (!a->stop && a->state != AR_QUEUED)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->state != AR_QUEUED)
			break; /* stop, nothing queued */
		a->state = AR_RUNNING;
		pthread_mutex_unlock(&a->mu);
		rc = strata_aread_run(a, a->job);
		pthread_mutex_lock(&a->mu);
		a->rc = rc;
		a->state = AR_DONE;
		pthread_cond_broadcast(&a->cv);
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

int strata_aread_start(struct strata_aread *a, struct strata_aread_job *job)
{
	int rc;

	pthread_mutex_lock(&a->mu);
	if (a->state != AR_IDLE) {
		pthread_mutex_unlock(&a->mu);
		return -EBUSY;
	}
	a->job = job;
	if (a->th_state == 0) {
		rc = pthread_create(&a->th, NULL, aread_thread, a);
		if (rc) { /* wait() runs the jobs then */
			strata_warn("%s: cannot start a reader thread (%s): %s are read when "
				    "waited for", a->path, strerror(rc), a->what);
			a->th_state = -1;
		} else {
			a->th_state = 1;
			pthread_setname_np(a->th, "strata-aread");
		}
	}
	a->state = AR_QUEUED;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return 0;
}

int strata_aread_wait(struct strata_aread *a)
{
	int rc;

	pthread_mutex_lock(&a->mu);
	if (a->state == AR_IDLE) {
		pthread_mutex_unlock(&a->mu);
		return -EINVAL;
	}
	if (a->state == AR_QUEUED) {
		/*
		 * The thread has not taken it yet (a wait right after start, or a
		 * busy machine): run it here instead of waiting for two wake-ups.
		 */
		a->state = AR_RUNNING;
		pthread_mutex_unlock(&a->mu);
		rc = strata_aread_run(a, a->job);
		pthread_mutex_lock(&a->mu);
		a->rc = rc;
		a->state = AR_DONE;
	}
	while (a->state != AR_DONE)
		pthread_cond_wait(&a->cv, &a->mu);
	a->state = AR_IDLE;
	rc = a->rc;
	a->job = NULL;
	pthread_mutex_unlock(&a->mu);
	return rc;
}
