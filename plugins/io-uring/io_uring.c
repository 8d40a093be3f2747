/*
 * io-uring - the fast io backend: one io_uring per handle (the core opens a
 * handle per reader thread), `depth` reads in flight, O_DIRECT, the file
 * registered with the ring and, when the core registers its buffers,
 * IORING_OP_READ_FIXED for every request whose buffer lies inside one.
 *
 * [io-uring] keys:
 *   depth = N            reads in flight per handle (1..4096); when set it
 *                        wins over the depth the core asks for (default 32
 *                        when neither says).
 *   sqpoll = BOOL        a kernel thread per ring polls the submission queue
 *                        so submit() makes no system call while it is busy
 *                        (default false: it burns a core per reader when the
 *                        disk is the bottleneck anyway).  A kernel or a
 *                        sandbox that refuses it gets a plain ring and a
 *                        warning.
 *   fixed_buffers = BOOL register_buffers() pins the core's buffers
 *                        (default true); false: it answers -ENOTSUP.
 *
 * Probe score 300 when a ring can really be set up here (seccomp profiles
 * and the io_uring_disabled sysctl often forbid it: then 0, and the reason
 * at debug level), so it wins over io-direct (200) and io-pread (100).
 *
 * Reads the kernel ends short before the end of the file, or fails with
 * -EAGAIN / -EINTR, are resubmitted for the rest (a few times at most), so
 * a result is short only at end of file or after a real error.
 */
#include "strata/io_helpers.h" /* first: it sets _GNU_SOURCE */

#include <errno.h>
#include <liburing.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "strata/plugin.h"

#define URING_SCORE 300
#define SQPOLL_IDLE_MS 100u
/* user_data of close()'s cancel-all request; UINT64_MAX is liburing's own timeout tag. */
#define CANCEL_TAG (UINT64_MAX - 1)
#define CQE_BATCH 64u

struct regbuf {
	uintptr_t base;
	size_t len;
	uint32_t index; /* in the ring's registered-buffer table */
};

struct uring {
	const struct strata_host *host;
	struct io_uring ring;
	int ring_ok;
	int fd;
	int fixed_file;   /* fd is registered as file 0 */
	int sqpoll;
	int fixed_ok;     /* [io-uring] fixed_buffers */
	uint32_t align;
	uint32_t flags;   /* strata_io_caps.flags */
	int64_t size;     /* at open: where a short read is the end of the file */
	struct strata_ioh_slots s;
	uint32_t inflight; /* SQEs prepared whose CQE has not come */
	struct regbuf *bufs; /* sorted by base */
	uint32_t n_bufs;
};

/* ---- probe ------------------------------------------------------------------ */

static int uring_probe(const struct strata_host *host)
{
	struct io_uring ring;
	struct io_uring_probe *p;
	int rc, ok;

	rc = io_uring_queue_init(4, &ring, 0);
	if (rc < 0) {
		host->log(host, STRATA_LOG_DEBUG,
			  "io_uring_queue_init failed: %s (a seccomp profile, the "
			  "kernel.io_uring_disabled sysctl or a kernel before 5.1)",
			  strerror(-rc));
		return 0;
	}
	p = io_uring_get_probe_ring(&ring);
	ok = p && io_uring_opcode_supported(p, IORING_OP_READ) &&
	     io_uring_opcode_supported(p, IORING_OP_READ_FIXED);
	if (p)
		io_uring_free_probe(p);
	io_uring_queue_exit(&ring);
	if (!ok) {
		host->log(host, STRATA_LOG_DEBUG,
			  "io_uring here lacks IORING_OP_READ (kernel before 5.6)");
		return 0;
	}
	return URING_SCORE;
}

/* ---- submission ------------------------------------------------------------- */

static int transient(int rc)
{
	return rc == -EAGAIN || rc == -EBUSY || rc == -EINTR;
}

/*
 * Hand prepared SQEs to the kernel.  A transient refusal leaves them in the
 * SQ ring for the next call (reap() calls again), so it is not an error.
 */
static int flush(struct uring *u)
{
	int rc;

	if (!io_uring_sq_ready(&u->ring))
		return 0;
	rc = io_uring_submit(&u->ring);
	return rc < 0 && !transient(rc) ? rc : 0;
}

/*
 * SQEs whose CQE will come.  Without SQPOLL those still in the SQ ring
 * after a failed flush never reach the kernel by themselves; with it the
 * kernel thread takes every one.
 */
static uint32_t coming(const struct uring *u)
{
	uint32_t stuck = u->sqpoll ? 0 : io_uring_sq_ready(&u->ring);

	return u->inflight > stuck ? u->inflight - stuck : 0;
}

/* Registered buffer holding [buf, buf+len), or -1. */
static int find_buf(const struct uring *u, const void *buf, uint32_t len)
{
	uintptr_t p = (uintptr_t)buf;
	uint32_t lo = 0, hi = u->n_bufs;

	while (lo < hi) { /* first entry with base > p */
		uint32_t mid = lo + (hi - lo) / 2;

		if (u->bufs[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	lo--;
	if (p - u->bufs[lo].base + len > u->bufs[lo].len)
		return -1;
	return (int)u->bufs[lo].index;
}

/* Queue (the rest of) the read in slot ix. */
static int prep(struct uring *u, uint32_t ix)
{
	struct strata_io_req *r = u->s.req[ix];
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	uint32_t got = u->s.got[ix];
	char *buf = (char *)r->buf + got;
	int fd = u->fixed_file ? 0 : u->fd, bi;

	if (!sqe) {
		/*
		 * At most depth reads are outstanding, so a plain ring (depth
		 * entries) is full only with SQEs a busy kernel refused.  An SQPOLL
		 * ring has 2 * depth (init_ring) for SQEs the kernel thread has
		 * taken but not yet published its head past, so it is never full.
		 */
		if (u->sqpoll)
			io_uring_sqring_wait(&u->ring);
		else
			flush(u);
		sqe = io_uring_get_sqe(&u->ring);
		if (!sqe)
			return -EBUSY;
	}
	bi = u->n_bufs ? find_buf(u, buf, r->len - got) : -1;
	if (bi >= 0)
		io_uring_prep_read_fixed(sqe, fd, buf, r->len - got, r->offset + got, bi);
	else
		io_uring_prep_read(sqe, fd, buf, r->len - got, r->offset + got);
	if (u->fixed_file)
		sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(sqe, ix);
	u->inflight++;
	return 0;
}

static int uring_submit(void *handle, struct strata_io_req *const *reqs, uint32_t n)
{
	struct uring *u = handle;
	uint32_t i;
	int rc;

	for (i = 0; i < n && reqs[i]; i++) {
		int ix = strata_ioh_slot_take(&u->s, reqs[i]), c;

		if (ix < 0)
			break;
		c = strata_ioh_check_req(reqs[i], u->align);
		if (c) {
			strata_ioh_finish(&u->s, (uint32_t)ix, c < 0 ? c : 0);
			continue;
		}
		if (prep(u, (uint32_t)ix) < 0) {
			strata_ioh_slot_untake(&u->s, (uint32_t)ix);
			break;
		}
	}
	rc = flush(u);
	if (rc < 0 && !i)
		return rc;
	/* A hard flush error after accepting: the SQEs stay queued and reap() reports it. */
	return i == 0 && n && !reqs[0] ? -EINVAL : (int)i;
}

/* ---- completion -------------------------------------------------------------- */

/* One CQE: finish its read, or send the rest of it back to the kernel. */
static void complete(struct uring *u, uint64_t data, int res)
{
	uint32_t ix = (uint32_t)data, *got;
	struct strata_io_req *r;

	if (data >= u->s.depth || !u->s.req[ix])
		return; /* a stray: liburing's own timeout on an old kernel */
	u->inflight--;
	r = u->s.req[ix];
	got = &u->s.got[ix];
	if (res < 0) {
		if ((res == -EAGAIN || res == -EINTR) && ++u->s.tries[ix] < STRATA_IOH_MAX_TRIES &&
		    prep(u, ix) == 0)
			return;
		strata_ioh_finish(&u->s, ix, *got ? (int32_t)*got : res);
		return;
	}
	*got += (uint32_t)res;
	if (res > 0 && *got < r->len && (int64_t)(r->offset + *got) < u->size &&
	    prep(u, ix) == 0)
		return;
	strata_ioh_finish(&u->s, ix, (int32_t)*got);
}

/* Take every CQE that is there. */
static void harvest(struct uring *u)
{
	struct io_uring_cqe *cqes[CQE_BATCH];
	unsigned n, i;

	do {
		n = io_uring_peek_batch_cqe(&u->ring, cqes, CQE_BATCH);
		for (i = 0; i < n; i++)
			complete(u, io_uring_cqe_get_data64(cqes[i]), cqes[i]->res);
		io_uring_cq_advance(&u->ring, n);
	} while (n == CQE_BATCH);
}

static int uring_reap(void *handle, struct strata_io_req **done, uint32_t min_done,
		      uint32_t max_done, int timeout_ms)
{
	struct uring *u = handle;
	uint64_t deadline = strata_ioh_deadline(timeout_ms);
	int err = 0;

	if (min_done > strata_ioh_outstanding(&u->s))
		min_done = strata_ioh_outstanding(&u->s);
	if (min_done > max_done)
		min_done = max_done;
	for (;;) {
		struct __kernel_timespec ts;
		struct io_uring_cqe *cqe;
		uint64_t left;
		uint32_t want;
		int rc;

		harvest(u);
		err = flush(u); /* resubmitted rests, or SQEs a busy kernel refused */
		if (err || u->s.n_ready >= min_done || !coming(u))
			break;
		left = strata_ioh_left_ms(deadline);
		if (!left)
			break;
		ts.tv_sec = (long long)(left / 1000u);
		ts.tv_nsec = (long long)(left % 1000u) * 1000000;
		want = min_done - u->s.n_ready;
		if (want > coming(u))
			want = coming(u);
		rc = io_uring_wait_cqes(&u->ring, &cqe, want, left == UINT64_MAX ? NULL : &ts,
					NULL);
		if (rc == -ETIME)
			deadline = 0; /* take what arrived, then return */
		else if (rc < 0 && rc != -EINTR) {
			err = rc;
			break;
		}
	}
	if (err && !u->s.n_ready) {
		u->host->log(u->host, STRATA_LOG_ERROR, "io_uring_enter failed: %s",
			     strerror(-err));
		return err;
	}
	return (int)strata_ioh_pop_ready(&u->s, done, max_done);
}

/* ---- open / close -------------------------------------------------------------- */

/*
 * Wait out every read the kernel holds, after asking it to cancel them:
 * that drops buffered work still queued; reads already at the disk finish.
 * The cancel request is counted in inflight like a read, so its one CQE
 * (-EINVAL on kernels before 5.19, which lack CANCEL_ANY) ends the count.
 */
static void drain(struct uring *u)
{
	struct io_uring_sqe *sqe;

	if (!u->inflight)
		return;
	sqe = io_uring_get_sqe(&u->ring);
	if (sqe) {
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, CANCEL_TAG);
		u->inflight++;
	}
	flush(u);
	while (coming(u)) {
		struct io_uring_cqe *cqe;
		int rc = io_uring_wait_cqe(&u->ring, &cqe);
		uint64_t data;

		if (rc == -EINTR)
			continue;
		if (rc < 0)
			break; /* the ring is gone: nothing more will land */
		data = cqe->user_data;
		if (data == CANCEL_TAG) {
			u->inflight--;
		} else if (data < u->s.depth && u->s.req[data]) {
			u->inflight--;
			strata_ioh_finish(&u->s, (uint32_t)data, cqe->res);
		}
		io_uring_cqe_seen(&u->ring, cqe);
	}
}

static void uring_close(void *handle)
{
	struct uring *u = handle;

	if (!u)
		return;
	if (u->ring_ok) {
		drain(u);
		io_uring_queue_exit(&u->ring);
	}
	if (u->fd >= 0)
		close(u->fd);
	free(u->bufs);
	strata_ioh_slots_free(&u->s);
	free(u);
}

static int init_ring(struct uring *u, uint32_t depth)
{
	struct io_uring_params p;
	int rc;

	if (u->sqpoll) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_SQPOLL;
		p.sq_thread_idle = SQPOLL_IDLE_MS;
		/*
		 * Twice the reads: SQEs of the batch the kernel thread is working
		 * through stay in the ring (their reads may be done and reaped)
		 * until it publishes its head, and each slot can have one new SQE
		 * queued behind them.  At most depth of each, so never full.
		 */
		rc = io_uring_queue_init_params(2 * depth, &u->ring, &p);
		if (!rc)
			return 0;
		u->host->log(u->host, STRATA_LOG_WARN,
			     "sqpoll refused here (%s): using a plain ring", strerror(-rc));
		u->sqpoll = 0;
	}
	/* Completions are posted when the reader next enters the kernel: no IPIs. */
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	rc = io_uring_queue_init_params(depth, &u->ring, &p);
	if (rc == -EINVAL) { /* a kernel before 5.19 */
		memset(&p, 0, sizeof(p));
		rc = io_uring_queue_init_params(depth, &u->ring, &p);
	}
	if (rc < 0)
		u->host->log(u->host, STRATA_LOG_ERROR,
			     "io_uring_queue_init(%u entries) failed: %s", (unsigned)depth,
			     strerror(-rc));
	return rc;
}

static int read_keys(const struct strata_host *host, uint32_t *depth, int *sqpoll, int *fixed)
{
	int rc;

	if ((rc = strata_ioh_depth(host, *depth, depth)) < 0 ||
	    (rc = strata_ioh_key_u32(host, "depth", 1, STRATA_IOH_MAX_DEPTH, depth)) < 0 ||
	    (rc = strata_ioh_key_bool(host, "sqpoll", sqpoll)) < 0 ||
	    (rc = strata_ioh_key_bool(host, "fixed_buffers", fixed)) < 0)
		return rc;
	return 0;
}

static int uring_open(const struct strata_host *host, const char *path, uint32_t flags,
		      uint32_t depth, void **handle)
{
	int direct = (flags & STRATA_IO_DIRECT) != 0, sqpoll = 0, fixed = 1, rc;
	struct uring *u;

	*handle = NULL;
	if (!host || host->version < 1)
		return -EPROTO;
	if ((rc = read_keys(host, &depth, &sqpoll, &fixed)) < 0)
		return rc;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->host = host;
	u->sqpoll = sqpoll;
	u->fixed_ok = fixed;
	u->fd = strata_ioh_open_fd(host, path, direct);
	if (u->fd < 0) {
		rc = u->fd;
		goto fail;
	}
	u->size = strata_ioh_fd_size(u->fd);
	if (u->size < 0) {
		rc = (int)u->size;
		goto fail;
	}
	if ((rc = strata_ioh_slots_init(&u->s, depth)) < 0 || (rc = init_ring(u, depth)) < 0)
		goto fail;
	u->ring_ok = 1;
	/* A registered file spares the kernel an fget/fput per read. */
	u->fixed_file = io_uring_register_files(&u->ring, &u->fd, 1) == 0;
	u->align = direct ? STRATA_IOH_DIRECT_ALIGN : 1;
	u->flags = STRATA_IO_CAP_ASYNC | (direct ? STRATA_IO_CAP_DIRECT : 0) |
		   (fixed ? STRATA_IO_CAP_FIXED_BUFFERS : 0);
	*handle = u;
	return 0;
fail:
	uring_close(u);
	return rc;
}

static int uring_caps(void *handle, struct strata_io_caps *caps)
{
	struct uring *u = handle;

	caps->flags = u->flags;
	caps->depth = u->s.depth;
	caps->buf_align = u->align;
	caps->offset_align = u->align;
	return 0;
}

static int64_t uring_size(void *handle)
{
	return strata_ioh_fd_size(((struct uring *)handle)->fd);
}

static int cmp_base(const void *a, const void *b)
{
	const struct regbuf *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

/*
 * Pinning is what makes O_DIRECT reads cheap: the kernel maps the pages
 * once instead of per read.  Only with nothing outstanding (-EBUSY
 * otherwise); a new call replaces the set, n = 0 drops it.
 */
static int uring_register_buffers(void *handle, void *const *bufs, const size_t *lens,
				  uint32_t n)
{
	struct uring *u = handle;
	struct iovec *iov;
	uint32_t i;
	int rc;

	if (!u->fixed_ok)
		return -ENOTSUP;
	if (strata_ioh_outstanding(&u->s))
		return -EBUSY;
	if (u->n_bufs) {
		io_uring_unregister_buffers(&u->ring);
		free(u->bufs);
		u->bufs = NULL;
		u->n_bufs = 0;
	}
	if (!n)
		return 0;
	iov = calloc(n, sizeof(*iov));
	u->bufs = calloc(n, sizeof(*u->bufs));
	if (!iov || !u->bufs) {
		free(iov);
		free(u->bufs);
		u->bufs = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		iov[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = lens[i] };
		u->bufs[i] = (struct regbuf){ (uintptr_t)bufs[i], lens[i], i };
	}
	rc = io_uring_register_buffers(&u->ring, iov, n);
	free(iov);
	if (rc < 0) {
		/* Often RLIMIT_MEMLOCK: the handle keeps working with plain reads. */
		u->host->log(u->host, STRATA_LOG_DEBUG,
			     "io_uring_register_buffers(%u buffers) failed: %s", (unsigned)n,
			     strerror(-rc));
		free(u->bufs);
		u->bufs = NULL;
		return rc;
	}
	qsort(u->bufs, n, sizeof(*u->bufs), cmp_base);
	u->n_bufs = n;
	return 0;
}

static const struct strata_io_ops uring_ops = {
	.version = 1,
	.open = uring_open,
	.close = uring_close,
	.caps = uring_caps,
	.size = uring_size,
	.submit = uring_submit,
	.reap = uring_reap,
	.register_buffers = uring_register_buffers,
};

static const char *const uring_keys[] = { "depth", "sqpoll", "fixed_buffers", NULL };

static const struct strata_plugin_desc uring_desc = {
	.abi = STRATA_PLUGIN_ABI_NEEDS(0),
	.kind = STRATA_PLUGIN_IO,
	.name = "io-uring",
	.version = "1.0.0",
	.description = "io_uring reads: one ring per reader, O_DIRECT, registered files and buffers",
	.probe = uring_probe,
	.ops = &uring_ops,
	.config_keys = uring_keys,
};

STRATA_PLUGIN_DEFINE(uring_desc)
