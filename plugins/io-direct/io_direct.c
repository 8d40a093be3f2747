/*
 * io-direct - O_DIRECT reads without liburing, in two modes:
 *
 *   async (default)  the kernel's own asynchronous reads: Linux native AIO
 *                    (io_setup / io_submit / io_getevents through syscall(),
 *                    no libaio) or, on Windows, unbuffered overlapped ReadFile
 *                    with one I/O completion port per handle, so `depth` reads
 *                    really overlap.  caps: ASYNC.
 *   inline           inline_submit = true: the reader thread reads itself.
 *                    submit() only queues; reap() performs queued reads one
 *                    after another (pread / synchronous ReadFile) until it can
 *                    return what was asked.  caps: INLINE.
 *
 * Linux AIO overlaps only O_DIRECT reads (buffered ones complete inside
 * io_submit), so there a handle opened without STRATA_IO_DIRECT runs inline,
 * and so does every handle when the kernel refuses io_setup (seccomp,
 * fs.aio-max-nr used up): one warning per process says so.  Windows
 * overlaps buffered reads too, so only inline_submit makes a handle inline.
 *
 * [io-direct] keys:
 *   inline_submit = BOOL   the inline mode (default false).
 *
 * Probe score 200 where the async mode works, between io-uring (300) and
 * io-pread (100); 50 where only the inline mode does, so the thread pool of
 * io-pread is preferred then.  O_DIRECT support is per file system, so the
 * probe cannot know it: open() answers -EINVAL with a warning naming the file
 * when the file system refuses it, and the core falls back.
 */
#include "io_direct.h" /* first: it sets _GNU_SOURCE */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* =========================================================================
 * The ops, the same on every platform
 * ========================================================================= */

/* A read the kernel ended with res (bytes or -errno): finish it, or send its rest back. */
void strata_dio_finish_or_resume_(struct dio *d, uint32_t ix, int32_t res)
{
	struct strata_io_req *r = d->s.req[ix];
	uint32_t *got = &d->s.got[ix];
	int rc;

	if (res < 0) {
		if ((res != -EAGAIN && res != -EINTR) || ++d->s.tries[ix] >= STRATA_IOH_MAX_TRIES) {
			strata_ioh_finish(&d->s, ix, *got ? (int32_t)*got : res);
			return;
		}
		rc = strata_dio_restart_(d, ix);
		if (!rc)
			return;
		strata_ioh_finish(&d->s, ix, *got ? (int32_t)*got : rc > 0 ? 0 : rc);
		return;
	}
	*got += (uint32_t)res;
	if (res > 0 && *got < r->len && (int64_t)(r->offset + *got) < d->size &&
	    strata_dio_restart_(d, ix) == 0)
		return;
	strata_ioh_finish(&d->s, ix, (int32_t)*got);
}

static void direct_close(void *handle)
{
	struct dio *d = handle;

	if (!d)
		return;
	if (!d->inline_mode && d->s.depth)
		strata_dio_drain_(d);
	strata_dio_close_files_(d);
	free(d->queue);
	free(d->cls);
	free(d->ixs);
	free(d->start);
	strata_ioh_slots_free(&d->s);
	free(d);
}

/* Linux AIO unusable here: serve the handle inline, and say so once per process. */
static int fall_back_inline(struct dio *d, int rc)
{
#ifdef _WIN32
	return rc; /* a port that cannot be made is out of memory: no mode would work */
#else
	static int warned;

	if (rc == -ENOMEM)
		return rc;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		d->host->log(d->host, STRATA_LOG_WARN,
			     "Linux AIO is unusable here (io_setup: %s; seccomp or fs.aio-max-nr): "
			     "reads run inline, one at a time per reader",
			     strerror(-rc));
	d->inline_mode = 1;
	return 0;
#endif
}

static int direct_open(const struct strata_host *host, const char *path, uint32_t flags,
		       uint32_t depth, void **handle)
{
	int direct = (flags & STRATA_IO_DIRECT) != 0, inl = 0, rc;
	struct dio *d;

	*handle = NULL;
	if (!host || host->version < 1)
		return -EPROTO;
	if ((rc = strata_ioh_depth(host, depth, &depth)) < 0 ||
	    (rc = strata_ioh_key_bool(host, "inline_submit", &inl)) < 0)
		return rc;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->host = host;
#ifndef _WIN32
	d->fd = -1;
#endif
#ifdef _WIN32
	d->inline_mode = inl; /* overlapped reads overlap through the cache too */
#else
	/* Without O_DIRECT, Linux AIO would read inside io_submit: no overlap to gain. */
	d->inline_mode = inl || !direct;
#endif
	d->queue = calloc(depth, sizeof(*d->queue));
	d->cls = calloc(depth, sizeof(*d->cls));
	d->ixs = calloc(depth, sizeof(*d->ixs));
	d->start = calloc(depth, sizeof(*d->start));
	if (!d->queue || !d->cls || !d->ixs || !d->start ||
	    (rc = strata_ioh_slots_init(&d->s, depth)) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = strata_dio_open_(d, path, direct)) < 0)
		goto fail;
	if (!d->inline_mode && (rc = strata_dio_async_init_(d)) < 0 && (rc = fall_back_inline(d, rc)) < 0)
		goto fail;
	d->align = direct ? STRATA_IOH_DIRECT_ALIGN : 1;
	d->flags = (d->inline_mode ? STRATA_IO_CAP_INLINE : STRATA_IO_CAP_ASYNC) |
		   (direct ? STRATA_IO_CAP_DIRECT : 0);
	*handle = d;
	return 0;
fail:
	direct_close(d);
	return rc;
}

static int direct_caps(void *handle, struct strata_io_caps *caps)
{
	struct dio *d = handle;

	caps->flags = d->flags;
	caps->depth = d->s.depth;
	caps->buf_align = d->align;
	caps->offset_align = d->align;
	return 0;
}

static int64_t direct_size(void *handle)
{
	return strata_dio_size_(handle);
}

/*
 * Take slots for a prefix of reqs, start the reads, and keep only the
 * prefix the kernel took (plus the requests finished at once before it).
 */
static int direct_submit(void *handle, struct strata_io_req *const *reqs, uint32_t n)
{
	struct dio *d = handle;
	uint32_t taken, m = 0, started, cut, i;

	for (taken = 0; taken < n && reqs[taken]; taken++) {
		int ix = strata_ioh_slot_take(&d->s, reqs[taken]);

		if (ix < 0)
			break;
		d->ixs[taken] = (uint32_t)ix;
		d->cls[taken] = strata_ioh_check_req(reqs[taken], d->align);
	}
	if (!taken)
		return n && !reqs[0] ? -EINVAL : 0;
	if (d->inline_mode) {
		for (i = 0; i < taken; i++) {
			if (d->cls[i]) {
				strata_ioh_finish(&d->s, d->ixs[i], d->cls[i] < 0 ? d->cls[i] : 0);
			} else {
				d->queue[(d->q_head + d->q_n) % d->s.depth] = d->ixs[i];
				d->q_n++;
			}
		}
		return (int)taken;
	}
	for (i = 0; i < taken; i++)
		if (!d->cls[i])
			d->start[m++] = d->ixs[i];
	started = m ? strata_dio_start_(d, d->start, m) : 0;
	cut = taken;
	for (i = 0; started < m && i < taken; i++) {
		if (!d->cls[i] && d->ixs[i] == d->start[started]) {
			cut = i;
			break;
		}
	}
	for (i = 0; i < cut; i++)
		if (d->cls[i])
			strata_ioh_finish(&d->s, d->ixs[i], d->cls[i] < 0 ? d->cls[i] : 0);
	for (i = taken; i > cut; i--)
		strata_ioh_slot_untake(&d->s, d->ixs[i - 1]);
	/* The kernel takes no read at all and none is outstanding: reaping would not help. */
	if (!cut && !strata_ioh_outstanding(&d->s))
		return -EAGAIN;
	return (int)cut;
}

/* Inline: do queued reads until `target` are ready or the time is up (one at least). */
static void inline_reads(struct dio *d, uint32_t target, uint64_t deadline)
{
	while (d->s.n_ready < target && d->q_n) {
		uint32_t ix = d->queue[d->q_head];

		d->q_head = (d->q_head + 1) % d->s.depth;
		d->q_n--;
		strata_ioh_finish(&d->s, ix, strata_dio_read_sync_(d, ix));
		if (!strata_ioh_left_ms(deadline))
			break;
	}
}

static int direct_reap(void *handle, struct strata_io_req **done, uint32_t min_done,
		       uint32_t max_done, int timeout_ms)
{
	struct dio *d = handle;
	uint64_t deadline = strata_ioh_deadline(timeout_ms);
	int err = 0;

	if (min_done > strata_ioh_outstanding(&d->s))
		min_done = strata_ioh_outstanding(&d->s);
	if (min_done > max_done)
		min_done = max_done;
	if (d->inline_mode) {
		/* min_done 0 still reads one: nobody else will. */
		inline_reads(d, min_done ? min_done : (max_done ? 1 : 0), deadline);
		return (int)strata_ioh_pop_ready(&d->s, done, max_done);
	}
	while (d->inflight) {
		uint32_t need = d->s.n_ready < min_done ? min_done - d->s.n_ready : 0;
		uint64_t left = need ? strata_ioh_left_ms(deadline) : 0;
		int n;

		if (!left)
			need = 0;
		n = strata_dio_wait_(d, need, left);
		if (n < 0) {
			err = n;
			break;
		}
		if (d->s.n_ready >= min_done && (uint32_t)n < EV_BATCH)
			break; /* enough, and nothing more waiting */
		if (!need ? (uint32_t)n < EV_BATCH : n == 0)
			break; /* polled dry, or timed out */
	}
	if (err && !d->s.n_ready) {
		d->host->log(d->host, STRATA_LOG_ERROR, "waiting for reads failed: %s",
			     strerror(-err));
		return err;
	}
	return (int)strata_ioh_pop_ready(&d->s, done, max_done);
}

static const struct strata_io_ops direct_ops = {
	.version = 1,
	.open = direct_open,
	.close = direct_close,
	.caps = direct_caps,
	.size = direct_size,
	.submit = direct_submit,
	.reap = direct_reap,
	.register_buffers = NULL, /* AIO and overlapped reads pin per read; nothing to gain */
};

static const char *const direct_keys[] = { "inline_submit", NULL };

static const struct strata_plugin_desc direct_desc = {
	.abi = STRATA_PLUGIN_ABI_NEEDS(0),
	.kind = STRATA_PLUGIN_IO,
	.name = "io-direct",
	.version = "1.0.0",
	.description = "O_DIRECT reads: Linux AIO / Windows completion ports, or inline",
	.probe = strata_dio_probe_,
	.ops = &direct_ops,
	.config_keys = direct_keys,
};

STRATA_PLUGIN_DEFINE(direct_desc)
