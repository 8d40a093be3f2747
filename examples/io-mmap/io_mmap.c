/*
 * io-mmap - an example io plugin built outside strata's tree, against the
 * installed SDK only:
 *
 *   cc -shared -fPIC $(pkg-config --cflags strata-plugin) -o strata-io-mmap.so io_mmap.c
 *   strata io-check ./strata-io-mmap.so      # the io ABI's conformance suite
 *
 * (or with CMake: find_package(strata-plugin), see CMakeLists.txt here).
 *
 * It maps the file and serves each read with a copy from the mapping: reads
 * go through the page cache, so it takes no STRATA_IO_DIRECT (open says
 * -EINVAL, and the core reads buffered).  submit() asks the kernel to start
 * reading the pages ahead (MADV_WILLNEED), reap() copies (the handle is
 * STRATA_IO_CAP_INLINE).  Useful where the file is mostly cached already;
 * a file truncated under a live mapping makes the copy fault (SIGBUS), which
 * is why strata's own plugins read with pread or io_uring.
 *
 * [io-mmap] keys: depth = N (reads in flight, 1..4096; the core's when unset).
 */
#include "strata/io_helpers.h" /* first: it sets _GNU_SOURCE */

#include <sys/mman.h>

struct mmap_handle {
	const struct strata_host *host;
	int fd;
	const uint8_t *map; /* NULL for an empty file */
	uint64_t size;
	struct strata_ioh_slots s;
	uint32_t *queued; /* FIFO of accepted slots not yet copied */
	uint32_t q_head, n_queued;
};

static const char *const mmap_keys[] = { "depth", NULL };

static int mmap_probe(const struct strata_host *host)
{
	(void)host;
	return 10; /* usable everywhere, never better than a real asynchronous reader */
}

static void mmap_close(void *handle)
{
	struct mmap_handle *h = handle;

	if (!h)
		return;
	if (h->map)
		munmap((void *)h->map, h->size);
	if (h->fd >= 0)
		close(h->fd);
	strata_ioh_slots_free(&h->s);
	free(h->queued);
	free(h);
}

static int mmap_open(const struct strata_host *host, const char *path, uint32_t flags,
		     uint32_t depth, void **handle)
{
	struct mmap_handle *h;
	int64_t size;
	int rc;

	*handle = NULL;
	rc = strata_ioh_depth(host, depth, &depth);
	if (!rc && strata_ioh_key_u32(host, "depth", 1, STRATA_IOH_MAX_DEPTH, &depth) < 0)
		rc = -EINVAL;
	if (rc)
		return rc;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->host = host;
	h->fd = strata_ioh_open_fd(host, path, 0); /* -ENOENT, -EISDIR, ... as the system says */
	if (h->fd < 0) {
		rc = h->fd;
		goto fail;
	}
	if (flags & STRATA_IO_DIRECT) {
		host->log(host, STRATA_LOG_WARN, "%s: io-mmap reads through the page cache, "
			  "not direct; the core reads it buffered", path);
		rc = -EINVAL;
		goto fail;
	}
	size = strata_ioh_fd_size(h->fd);
	if (size < 0) {
		rc = (int)size;
		goto fail;
	}
	h->size = (uint64_t)size;
	if (h->size) {
		void *m = mmap(NULL, h->size, PROT_READ, MAP_SHARED, h->fd, 0);

		if (m == MAP_FAILED) {
			rc = -errno;
			goto fail;
		}
		h->map = m;
	}
	h->queued = calloc(depth, sizeof(*h->queued));
	if (!h->queued || (rc = strata_ioh_slots_init(&h->s, depth))) {
		rc = -ENOMEM;
		goto fail;
	}
	*handle = h;
	return 0;
fail:
	mmap_close(h);
	return rc;
}

static int mmap_caps(void *handle, struct strata_io_caps *caps)
{
	struct mmap_handle *h = handle;

	caps->flags = STRATA_IO_CAP_INLINE;
	caps->depth = h->s.depth;
	caps->buf_align = 1;
	caps->offset_align = 1;
	return 0;
}

static int64_t mmap_size(void *handle)
{
	return (int64_t)((struct mmap_handle *)handle)->size;
}

static int mmap_submit(void *handle, struct strata_io_req *const *reqs, uint32_t n)
{
	struct mmap_handle *h = handle;
	uint32_t i;

	if (n && !reqs[0])
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct strata_io_req *r = reqs[i];
		int ix = strata_ioh_slot_take(&h->s, r);
		int rc;

		if (ix < 0)
			break; /* full: the caller reaps first */
		rc = strata_ioh_check_req(r, 1);
		if (rc) { /* len 0 (1) or a bad request: a completion now, not a failed submit */
			strata_ioh_finish(&h->s, (uint32_t)ix, rc < 0 ? rc : 0);
			continue;
		}
		if (r->offset < h->size) { /* a hint: start reading the pages in */
			uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
			uint64_t a = r->offset & ~(page - 1);
			uint64_t end = r->offset + r->len < h->size ? r->offset + r->len : h->size;

			madvise((void *)(h->map + a), (size_t)(end - a), MADV_WILLNEED);
		}
		h->queued[(h->q_head + h->n_queued++) % h->s.depth] = (uint32_t)ix;
	}
	return (int)i;
}

/* Copy every queued read out of the mapping (short at the end of the file, 0 past it). */
static void mmap_copy_queued(struct mmap_handle *h)
{
	while (h->n_queued) {
		uint32_t ix = h->queued[h->q_head];
		struct strata_io_req *r = h->s.req[ix];
		uint64_t n = 0;

		h->q_head = (h->q_head + 1) % h->s.depth;
		h->n_queued--;
		if (r->offset < h->size) {
			n = h->size - r->offset < r->len ? h->size - r->offset : r->len;
			memcpy(r->buf, h->map + r->offset, (size_t)n);
		}
		strata_ioh_finish(&h->s, ix, (int32_t)n);
	}
}

static int mmap_reap(void *handle, struct strata_io_req **done, uint32_t min_done,
		     uint32_t max_done, int timeout_ms)
{
	struct mmap_handle *h = handle;

	(void)min_done;   /* every queued read is done before returning: min_done always holds */
	(void)timeout_ms; /* copies never wait on anything but the page cache */
	mmap_copy_queued(h);
	return (int)strata_ioh_pop_ready(&h->s, done, max_done);
}

static const struct strata_io_ops mmap_ops = {
	.version = 1,
	.open = mmap_open,
	.close = mmap_close,
	.caps = mmap_caps,
	.size = mmap_size,
	.submit = mmap_submit,
	.reap = mmap_reap,
};

static const struct strata_plugin_desc mmap_desc = {
	.abi = STRATA_PLUGIN_ABI_NEEDS(0), /* io kind, host version 1: loads in every strata 1.x */
	.kind = STRATA_PLUGIN_IO,
	.name = "io-mmap",
	.version = "1.0.0",
	.description = "example: reads copied out of a shared mapping (page cache, no direct I/O)",
	.probe = mmap_probe,
	.ops = &mmap_ops,
	.config_keys = mmap_keys,
};

STRATA_PLUGIN_DEFINE(mmap_desc)
