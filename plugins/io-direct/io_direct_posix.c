/*
 * io_direct_posix.c - io-direct on POSIX: pread for the inline mode, and
 * Linux native AIO (raw syscalls: no libaio) for the async one.  Other
 * POSIX systems get the inline mode only.  See io_direct.h for the
 * contract of each function.
 */
#ifndef _WIN32
#include "io_direct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_KAIO
#include <sys/syscall.h>
#include <time.h>
#endif

int strata_dio_open_(struct dio *d, const char *path, int direct)
{
	d->fd = strata_ioh_open_fd(d->host, path, direct);
	if (d->fd < 0)
		return d->fd;
	d->size = strata_ioh_fd_size(d->fd);
	return d->size < 0 ? (int)d->size : 0;
}

int64_t strata_dio_size_(struct dio *d)
{
	return strata_ioh_fd_size(d->fd);
}

int32_t strata_dio_read_sync_(struct dio *d, uint32_t ix)
{
	struct strata_io_req *r = d->s.req[ix];

	return strata_ioh_pread_full(d->fd, r->buf, r->len, r->offset);
}

#ifdef HAVE_KAIO
static long k_io_setup(unsigned nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx);
}

static long k_io_destroy(aio_context_t ctx)
{
	return syscall(SYS_io_destroy, ctx);
}

static long k_io_submit(aio_context_t ctx, long n, struct iocb **cbs)
{
	return syscall(SYS_io_submit, ctx, n, cbs);
}

static long k_io_getevents(aio_context_t ctx, long min_nr, long nr, struct io_event *ev,
			   struct timespec *ts)
{
	return syscall(SYS_io_getevents, ctx, min_nr, nr, ev, ts);
}

int strata_dio_async_init_(struct dio *d)
{
	d->cbs = calloc(d->s.depth, sizeof(*d->cbs));
	d->batch = calloc(d->s.depth, sizeof(*d->batch));
	if (!d->cbs || !d->batch)
		return -ENOMEM;
	return k_io_setup(d->s.depth, &d->ctx) ? -errno : 0;
}

static struct iocb *prep_cb(struct dio *d, uint32_t ix)
{
	struct strata_io_req *r = d->s.req[ix];
	struct iocb *cb = &d->cbs[ix];
	uint32_t got = d->s.got[ix];

	memset(cb, 0, sizeof(*cb));
	cb->aio_data = ix;
	cb->aio_lio_opcode = IOCB_CMD_PREAD;
	cb->aio_fildes = (uint32_t)d->fd;
	cb->aio_buf = (uint64_t)(uintptr_t)((char *)r->buf + got);
	cb->aio_nbytes = r->len - got;
	cb->aio_offset = (int64_t)(r->offset + got);
	return cb;
}

/* io_submit() may take a prefix; EAGAIN means no room, any other error is the first iocb's. */
uint32_t strata_dio_start_(struct dio *d, const uint32_t *ix, uint32_t n)
{
	uint32_t i, done = 0;

	for (i = 0; i < n; i++)
		d->batch[i] = prep_cb(d, ix[i]);
	while (done < n) {
		long r = k_io_submit(d->ctx, (long)(n - done), d->batch + done);

		if (r > 0) {
			d->inflight += (uint32_t)r;
			done += (uint32_t)r;
		} else if (r == 0 || errno == EAGAIN) {
			break;
		} else if (errno != EINTR) {
			/* The first iocb is refused: that read fails, the rest go on. */
			strata_ioh_finish(&d->s, ix[done], -errno);
			done++;
		}
	}
	return done;
}

int strata_dio_restart_(struct dio *d, uint32_t ix)
{
	struct iocb *cb = prep_cb(d, ix);
	long r;

	do
		r = k_io_submit(d->ctx, 1, &cb);
	while (r < 0 && errno == EINTR);
	if (r != 1)
		return r < 0 ? -errno : -EAGAIN;
	d->inflight++;
	return 0;
}

int strata_dio_wait_(struct dio *d, uint32_t need, uint64_t left)
{
	uint32_t nr = d->inflight < EV_BATCH ? d->inflight : EV_BATCH, i;
	struct timespec ts = { 0, 0 };
	long n;

	if (need > nr)
		need = nr;
	if (need && left != UINT64_MAX) {
		ts.tv_sec = (time_t)(left / 1000u);
		ts.tv_nsec = (long)(left % 1000u) * 1000000L;
	}
	do /* a signal restarts the wait with the whole time again: bounded, and rare */
		n = k_io_getevents(d->ctx, need, nr, d->ev,
				   need && left == UINT64_MAX ? NULL : &ts);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (i = 0; i < (uint32_t)n; i++) {
		d->inflight--;
		strata_dio_finish_or_resume_(d, (uint32_t)d->ev[i].data, (int32_t)d->ev[i].res);
	}
	return (int)n;
}

/* Regular-file AIO cannot be cancelled: wait for what the kernel holds. */
void strata_dio_drain_(struct dio *d)
{
	while (d->inflight) {
		long n = k_io_getevents(d->ctx, 1, d->inflight < EV_BATCH ? d->inflight : EV_BATCH,
					d->ev, NULL);
		long i;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			d->inflight--;
			strata_ioh_finish(&d->s, (uint32_t)d->ev[i].data, -ECANCELED);
		}
	}
}

int strata_dio_probe_(const struct strata_host *host)
{
	aio_context_t ctx = 0;

	if (k_io_setup(1, &ctx)) {
		host->log(host, STRATA_LOG_DEBUG,
			  "io_setup failed: %s (seccomp or fs.aio-max-nr): only the inline mode "
			  "works here",
			  strerror(errno));
		return INLINE_ONLY_SCORE;
	}
	k_io_destroy(ctx);
	return DIRECT_SCORE;
}
#else /* POSIX without Linux AIO: inline only */
int strata_dio_async_init_(struct dio *d)
{
	(void)d;
	return -ENOSYS;
}

uint32_t strata_dio_start_(struct dio *d, const uint32_t *ix, uint32_t n)
{
	(void)d, (void)ix, (void)n;
	return 0;
}

int strata_dio_restart_(struct dio *d, uint32_t ix)
{
	(void)d, (void)ix;
	return -ENOSYS;
}

int strata_dio_wait_(struct dio *d, uint32_t need, uint64_t left)
{
	(void)d, (void)need, (void)left;
	return -ENOSYS;
}

void strata_dio_drain_(struct dio *d)
{
	(void)d;
}

int strata_dio_probe_(const struct strata_host *host)
{
	(void)host;
	return INLINE_ONLY_SCORE;
}
#endif /* HAVE_KAIO */

void strata_dio_close_files_(struct dio *d)
{
#ifdef HAVE_KAIO
	if (d->ctx)
		k_io_destroy(d->ctx);
	free(d->cbs);
	free(d->batch);
#endif
	if (d->fd >= 0)
		close(d->fd);
}
#endif /* !_WIN32 */
