/*
 * ple_fault_io.h - an in-test io backend for check_ple.c that reads with
 * pread() inside reap() and fails on purpose: one read at g_fault_off can
 * fail once, fail always, come back short, or never come back, and open()
 * can be refused.  Header-only and static, like a plugin's private code.
 */
#ifndef STRATA_PLE_FAULT_IO_H
#define STRATA_PLE_FAULT_IO_H

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strata/plugin.h"

enum fault { F_NONE, F_ONCE, F_ALWAYS, F_SHORT, F_HANG, F_OPEN };

static enum fault g_fault;
static uint64_t g_fault_off;
static atomic_int g_fault_hits;

struct fio {
	int fd;
	uint32_t depth, n;
	struct strata_io_req **q;
};

static int fio_open(const struct strata_host *host, const char *path, uint32_t flags,
		    uint32_t depth, void **out)
{
	struct fio *f;

	(void)host;
	(void)flags;
	if (g_fault == F_OPEN)
		return -EACCES;
	f = calloc(1, sizeof(*f));
	f->fd = open(path, O_RDONLY);
	f->depth = depth;
	f->q = calloc(depth, sizeof(*f->q));
	if (f->fd < 0) {
		free(f->q);
		free(f);
		return -errno;
	}
	*out = f;
	return 0;
}

static void fio_close(void *h)
{
	struct fio *f = h;

	close(f->fd);
	free(f->q);
	free(f);
}

static int fio_caps(void *h, struct strata_io_caps *c)
{
	c->flags = STRATA_IO_CAP_INLINE;
	c->depth = ((struct fio *)h)->depth;
	c->buf_align = 1;
	c->offset_align = 1;
	return 0;
}

static int64_t fio_size(void *h)
{
	struct stat sb;

	return fstat(((struct fio *)h)->fd, &sb) ? -errno : (int64_t)sb.st_size;
}

static int fio_submit(void *h, struct strata_io_req *const *reqs, uint32_t n)
{
	struct fio *f = h;
	uint32_t k = 0;

	while (k < n && f->n < f->depth)
		f->q[f->n++] = reqs[k++];
	return (int)k;
}

static int fio_reap(void *h, struct strata_io_req **done, uint32_t min_done, uint32_t max_done,
		    int timeout_ms)
{
	struct fio *f = h;
	uint32_t k = 0, keep = 0;

	(void)min_done;
	for (uint32_t i = 0; i < f->n; i++) {
		struct strata_io_req *r = f->q[i];
		ssize_t got;

		if (k == max_done || (g_fault == F_HANG && r->offset == g_fault_off)) {
			f->q[keep++] = r;
			continue;
		}
		got = pread(f->fd, r->buf, r->len, (off_t)r->offset);
		r->result = got < 0 ? -errno : (int32_t)got;
		if (r->offset == g_fault_off) {
			int nth = atomic_fetch_add(&g_fault_hits, 1);

			if (g_fault == F_ALWAYS || (g_fault == F_ONCE && nth == 0))
				r->result = -EIO;
			if (g_fault == F_SHORT)
				r->result = 100;
		}
		done[k++] = r;
	}
	f->n = keep;
	if (!k && timeout_ms > 0)
		usleep(10000);
	return (int)k;
}

static const struct strata_io_ops g_fio = {
	1, fio_open, fio_close, fio_caps, fio_size, fio_submit, fio_reap, NULL,
};

#endif
