/*
 * abi_plugin.c - the ABI safety tests' plugins (tests/check_abi.c), one
 * variant per AP_<VARIANT> define, built into STRATA_TEST_PLUGIN_DIR/abi as
 * strata-abi-<variant>.so (see CMakeLists.txt).  AP_NAME is "abi-<variant>".
 *
 * The usable variants are real io plugins (reads with pread() inside
 * reap(), like a plugin with STRATA_IO_CAP_INLINE) or a real path plugin, so
 * the core can be made to read through them:
 *   newer       ABI 1.9, io ops version 3: two slots appended after the
 *               version-1 table, one a function that aborts, one a poison
 *               pointer; the core must use the plugin and call neither
 *   guard       io ops and descriptor of exactly the version-1 size, each
 *               ending where a PROT_NONE page begins: a core that reads one
 *               byte past the declared version faults
 *   guardpath   the same for a path plugin
 * and the rest are refused:
 *   null_<m>    io ops with required method <m> NULL (open, close, caps,
 *               size, submit, reap)
 *   nullentry   strata_plugin_entry() returns NULL
 *   ops0        io ops version 0
 *   noops       no ops table
 *   noprobe     no probe()
 * and, into STRATA_TEST_PLUGIN_DIR/abi-hdr, the plain io plugin built
 * against other headers than the core's (the version rule of plugin.h):
 *   hdr10       strata 1.0's header (tests/plugins/abi-1.0), abi 1.0: loads
 *   next0       the next minor's header (made from the core's at configure
 *               time, a host field appended), STRATA_PLUGIN_ABI_NEEDS(0): loads
 *   next        the same header, STRATA_PLUGIN_ABI (needs the next minor):
 *               refused with the reason
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strata/plugin.h"

/* Every variant compiles every method; each uses only some. */
#define AP_UNUSED __attribute__((unused))

#if defined(AP_NEWER)
#define AP_ABI_VALUE ((uint32_t)((STRATA_PLUGIN_ABI_MAJOR << 16) | 9u))
#elif defined(AP_NEEDS0)
#define AP_ABI_VALUE STRATA_PLUGIN_ABI_NEEDS(0)
#else
#define AP_ABI_VALUE STRATA_PLUGIN_ABI
#endif

/* ---- a minimal inline io backend ------------------------------------------------------ */

struct ap_io {
	int fd;
	uint32_t depth, n;
	struct strata_io_req **q;
};

static AP_UNUSED int ap_probe(const struct strata_host *host)
{
	(void)host;
	return 5;
}

static AP_UNUSED void ap_close(void *h)
{
	struct ap_io *f = h;

	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	free(f->q);
	free(f);
}

static AP_UNUSED int ap_open(const struct strata_host *host, const char *path,
			     uint32_t flags, uint32_t depth, void **out)
{
	struct ap_io *f = calloc(1, sizeof(*f));

	(void)host;
	(void)flags; /* buffered: the test reads through the page cache */
	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->depth = depth ? depth : 8;
	f->q = calloc(f->depth, sizeof(*f->q));
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0 || !f->q) {
		int rc = f->fd < 0 ? -errno : -ENOMEM;

		ap_close(f);
		return rc;
	}
	*out = f;
	return 0;
}

static AP_UNUSED int ap_caps(void *h, struct strata_io_caps *c)
{
	c->flags = STRATA_IO_CAP_INLINE;
	c->depth = ((struct ap_io *)h)->depth;
	c->buf_align = 1;
	c->offset_align = 1;
	return 0;
}

static AP_UNUSED int64_t ap_size(void *h)
{
	struct stat sb;

	return fstat(((struct ap_io *)h)->fd, &sb) ? -errno : (int64_t)sb.st_size;
}

static AP_UNUSED int ap_submit(void *h, struct strata_io_req *const *reqs, uint32_t n)
{
	struct ap_io *f = h;
	uint32_t k = 0;

	if (n && !reqs[0])
		return -EINVAL;
	while (k < n && reqs[k] && f->n < f->depth)
		f->q[f->n++] = reqs[k++];
	return (int)k;
}

static AP_UNUSED int ap_reap(void *h, struct strata_io_req **done, uint32_t min_done,
			     uint32_t max_done, int timeout_ms)
{
	struct ap_io *f = h;
	uint32_t k = 0;

	(void)min_done;
	(void)timeout_ms;
	while (k < max_done && f->n) {
		struct strata_io_req *r = f->q[--f->n];
		ssize_t got = pread(f->fd, r->buf, r->len, (off_t)r->offset);

		r->result = got < 0 ? -errno : (int32_t)got;
		done[k++] = r;
	}
	return (int)k;
}

#define AP_IO_OPS(ver) { .version = (ver), .open = ap_open, .close = ap_close, .caps = ap_caps, \
		   .size = ap_size, .submit = ap_submit, .reap = ap_reap }

/* ---- a minimal path plugin (guardpath) ------------------------------------------------- */

static AP_UNUSED int ap_path_create(const struct strata_host *host, void **state)
{
	(void)host;
	*state = NULL;
	return 0;
}

static AP_UNUSED void ap_path_destroy(void *state)
{
	(void)state;
}

static AP_UNUSED int ap_path_accepts(void *state, const struct strata_part *part)
{
	(void)state;
	return part->n_pictures == 0;
}

static AP_UNUSED int ap_path_run(void *state, const struct strata_part *part,
		       const struct strata_engine_iface *eng)
{
	(void)state;
	return eng->forward_batch(eng->engine, part->tokens, part->n_tokens);
}

/* ---- the variants -------------------------------------------------------------------------- */

static const char *const ap_keys[] AP_UNUSED = { NULL };

#if defined(AP_NEWER)

static void ap_future(void *handle)
{
	(void)handle;
	abort(); /* the core called a method from a version it does not know */
}

static const struct {
	struct strata_io_ops v1;
	void (*v2_method)(void *handle);
	const void *v3_poison;
} ap_ops = {
	.v1 = AP_IO_OPS(3),
	.v2_method = ap_future,
	.v3_poison = (const void *)(uintptr_t)0xdeadbeefu,
};

#elif defined(AP_GUARD) || defined(AP_GUARDPATH)
/* The tables are built at run time at the ends of guarded pages. */
#else

#if defined(AP_NULL_OPEN)
#define AP_OPEN NULL
#else
#define AP_OPEN ap_open
#endif
#if defined(AP_NULL_CLOSE)
#define AP_CLOSE NULL
#else
#define AP_CLOSE ap_close
#endif
#if defined(AP_NULL_CAPS)
#define AP_CAPS NULL
#else
#define AP_CAPS ap_caps
#endif
#if defined(AP_NULL_SIZE)
#define AP_SIZE NULL
#else
#define AP_SIZE ap_size
#endif
#if defined(AP_NULL_SUBMIT)
#define AP_SUBMIT NULL
#else
#define AP_SUBMIT ap_submit
#endif
#if defined(AP_NULL_REAP)
#define AP_REAP NULL
#else
#define AP_REAP ap_reap
#endif
#if defined(AP_OPS0)
#define AP_OPS_VERSION 0
#else
#define AP_OPS_VERSION 1
#endif

static AP_UNUSED const struct strata_io_ops ap_ops = {
	.version = AP_OPS_VERSION,
	.open = AP_OPEN,
	.close = AP_CLOSE,
	.caps = AP_CAPS,
	.size = AP_SIZE,
	.submit = AP_SUBMIT,
	.reap = AP_REAP,
};

#endif

#if defined(AP_GUARD) || defined(AP_GUARDPATH)

/*
 * Version 1 of each table ends with its last version-1 field; the structs
 * in plugin.h may grow, these sizes never do.
 */
#define IO_OPS_V1_SIZE (offsetof(struct strata_io_ops, register_buffers) + sizeof(void *))
#define PATH_OPS_V1_SIZE (offsetof(struct strata_path_ops, run) + sizeof(void *))
#define DESC_1_0_SIZE (offsetof(struct strata_plugin_desc, config_keys) + sizeof(void *))

/*
 * Copy len bytes of src so that they end exactly where a PROT_NONE page
 * starts, read-only; NULL when the system says no.  Never unmapped: the
 * core holds on to the pointers until it unloads the plugin.
 */
static void *at_page_end(const void *src, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *dst;

	if (m == MAP_FAILED || (size_t)pg < len)
		return NULL;
	dst = m + pg - len;
	memcpy(dst, src, len);
	if (mprotect(m, (size_t)pg, PROT_READ) || mprotect(m + pg, (size_t)pg, PROT_NONE))
		return NULL;
	return dst;
}

static const struct strata_plugin_desc *guarded_desc(void)
{
	static const struct strata_plugin_desc *desc;
#if defined(AP_GUARD)
	static const struct strata_io_ops full = AP_IO_OPS(1);
	size_t ops_len = IO_OPS_V1_SIZE;
	uint32_t kind = STRATA_PLUGIN_IO;
#else
	static const struct strata_path_ops full = {
		.version = 1, .create = ap_path_create, .destroy = ap_path_destroy,
		.accepts = ap_path_accepts, .run = ap_path_run,
	};
	size_t ops_len = PATH_OPS_V1_SIZE;
	uint32_t kind = STRATA_PLUGIN_PATH;
#endif
	struct strata_plugin_desc d = {
		.abi = (STRATA_PLUGIN_ABI_MAJOR << 16) | 0u, /* 1.0: the first layout */
		.kind = kind,
		.name = AP_NAME,
		.version = "0.0.1",
		.description = "ABI test plugin: version-1 tables before guard pages",
		.probe = ap_probe,
		.config_keys = ap_keys,
	};

	if (!desc) {
		d.ops = at_page_end(&full, ops_len);
		if (d.ops)
			desc = at_page_end(&d, DESC_1_0_SIZE);
	}
	return desc;
}

#endif

#if !defined(AP_GUARD) && !defined(AP_GUARDPATH)
static AP_UNUSED const struct strata_plugin_desc ap_desc = {
	.abi = AP_ABI_VALUE,
	.kind = STRATA_PLUGIN_IO,
	.name = AP_NAME,
	.version = "0.0.1",
	.description = "ABI test plugin",
#if defined(AP_NOPROBE)
	.probe = NULL,
#else
	.probe = ap_probe,
#endif
#if defined(AP_NOOPS)
	.ops = NULL,
#else
	.ops = &ap_ops,
#endif
	.config_keys = ap_keys,
};
#endif

STRATA_PLUGIN_EXPORT const struct strata_plugin_desc *strata_plugin_entry(void)
{
#if defined(AP_NULLENTRY)
	return NULL;
#elif defined(AP_GUARD) || defined(AP_GUARDPATH)
	return guarded_desc();
#else
	return &ap_desc;
#endif
}
