/*
 * ple_open.c - checking a PLE table and its io backend before any compute.
 *
 * Every problem with the input is found here and reported once, with the
 * file: a type that cannot be decoded, a missing or unreadable file, one
 * shorter than its declared rows, an io plugin that does not load or cannot
 * open the file.  After a successful open the only errors left are the
 * disk's own.
 */
#define _GNU_SOURCE
#include "ple/ple_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu/types.h"
#include "plat/plat.h"
#include "plugin/registry.h"
#include "util/log.h"
#include "util/mem.h"

/* ---- the host table lent to ops given directly (tests) ------------------------------ */

static void own_log(const struct strata_host *host, int level, const char *fmt, ...)
{
	va_list ap;

	(void)host;
	va_start(ap, fmt);
	strata_logv(level, fmt, ap);
	va_end(ap);
}

static const char *own_config_get(const struct strata_host *host, const char *section,
				  const char *key)
{
	(void)host;
	(void)section;
	(void)key;
	return NULL;
}

/* ---- the table ------------------------------------------------------------------------ */

static int check_table(struct strata_ple_reader *r, const struct strata_ple_table *t)
{
	struct stat sb;
	uint64_t need;
	int fd;

	if (!t->path || !*t->path) {
		strata_error("PLE table: no file given");
		return -EINVAL;
	}
	r->rb = (uint32_t)strata_type_row_bytes(t->type, t->row_len);
	if (!strata_ple_type_ok(t->type) || !t->row_len || !r->rb) {
		strata_error("%s: PLE rows of %u %s values cannot be decoded (IQ4_NL, Q4_0, "
			     "Q5_0, Q5_1, Q8_0, BF16, F16 or F32 rows of a whole number of "
			     "blocks can)", t->path, t->row_len, strata_type_name(t->type));
		return -EINVAL;
	}
	if (t->n_rows == 0 || t->n_rows >= UINT32_MAX) {
		strata_error("%s: a PLE table of %llu rows is not supported (1 to %u)", t->path,
			     (unsigned long long)t->n_rows, UINT32_MAX - 1);
		return -EINVAL;
	}
	r->path = strdup(t->path);
	if (!r->path)
		return -ENOMEM;
	r->base = t->base;
	r->n_rows = t->n_rows;
	r->type = t->type;
	r->row_len = t->row_len;
	fd = open(t->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb)) {
		int e = errno;

		strata_error("cannot read the PLE table %s: %s", t->path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	close(fd);
	if (!S_ISREG(sb.st_mode)) {
		strata_error("cannot read the PLE table %s: not a regular file", t->path);
		return -EISDIR;
	}
	r->file_size = (uint64_t)sb.st_size;
	need = t->base + t->n_rows * r->rb;
	if (need > r->file_size) {
		strata_error("%s: the PLE table needs %llu bytes (%llu rows of %u bytes from "
			     "offset %llu) but the file has %llu: truncated?", t->path,
			     (unsigned long long)need, (unsigned long long)t->n_rows, r->rb,
			     (unsigned long long)t->base, (unsigned long long)r->file_size);
		return -EINVAL;
	}
	if (need / STRATA_PLE_PAGE >= UINT32_MAX) {
		strata_error("%s: PLE tables beyond 16 TiB are not supported", t->path);
		return -EFBIG;
	}
	return 0;
}

static int map_table(struct strata_ple_reader *r)
{
	int fd = open(r->path, O_RDONLY | O_CLOEXEC), rc;
	void *m;

	if (fd < 0) {
		strata_error("cannot read the PLE table %s: %s", r->path, strerror(errno));
		return -errno;
	}
	rc = strata_map_file(fd, r->file_size, 1, &m);
	close(fd);
	if (rc) {
		strata_error("cannot map the PLE table %s: %s", r->path, strerror(-rc));
		return rc;
	}
	/* Rows are scattered: read-ahead would only fetch pages nobody asked for. */
	strata_vm_advise(m, r->file_size, STRATA_VM_RANDOM);
	r->map = m;
	r->map_len = r->file_size;
	return 0;
}

/* ---- the io plugin ---------------------------------------------------------------------- */

static int load_io(struct strata_ple_reader *r, struct strata_registry *reg, const char **name)
{
	struct strata_plugin *pl;
	int rc;

	if (r->o.io_ops) {
		r->ops = r->o.io_ops;
		r->host = r->o.io_host ? r->o.io_host : &r->own_host;
		*name = r->o.io_name ? r->o.io_name : "custom io";
		return 0;
	}
	if (!reg) {
		strata_error("%s: direct PLE reads need an io plugin, and no plugin registry "
			     "was given", r->path);
		return -EINVAL;
	}
	rc = strata_registry_pick_io(reg, r->o.plugin, "direct PLE reads (or --ple-io mmap)",
				     &pl);
	if (rc)
		return rc; /* the registry said why */
	r->ops = pl->desc->ops;
	r->host = &pl->host;
	*name = pl->desc->name;
	return 0;
}

static int check_ops(const struct strata_ple_reader *r, const char *name)
{
	const struct strata_io_ops *o = r->ops;

	if (!o || o->version < 1 || !o->open || !o->close || !o->caps || !o->size ||
	    !o->submit || !o->reap) {
		strata_error("io plugin %s lacks a required io method (open, close, caps, "
			     "size, submit, reap)", name);
		return -EBADMSG;
	}
	return 0;
}

/*
 * Open w's read path on the table.  The first one (the dispatcher's) finds
 * out whether the file system takes direct I/O; the readers after it open
 * the same way, so a refusal is warned about once.
 */
static int open_reads(struct strata_ple_reader *r, struct ple_worker *w, const char *name,
		      int direct)
{
	struct strata_aread_opts ao = {
		.ops = r->ops, .host = r->host, .io_name = name, .path = r->path,
		.what = "PLE rows", .depth = w->depth, .align = STRATA_PLE_PAGE,
		.timeout_ms = r->o.timeout_ms, .direct = direct,
	};
	void **bufs;
	size_t *lens;
	uint64_t need = r->base + r->n_rows * r->rb;
	int rc = strata_aread_open(&ao, &w->ar);

	if (rc)
		return rc; /* logged */
	if (strata_aread_size(w->ar) < need) {
		strata_error("io plugin %s sees %llu bytes in %s, fewer than the PLE table needs "
			     "(%llu)", name, (unsigned long long)strata_aread_size(w->ar), r->path,
			     (unsigned long long)need);
		return -EINVAL;
	}
	w->depth = strata_aread_depth(w->ar);
	bufs = malloc(w->depth * sizeof(*bufs));
	lens = malloc(w->depth * sizeof(*lens));
	for (uint32_t i = 0; bufs && lens && i < w->depth; i++) {
		bufs[i] = w->slots[i].req.io.buf;
		lens[i] = STRATA_PLE_PAGE;
	}
	/* Only an optimisation: reads work without it. */
	if (bufs && lens)
		strata_aread_register(w->ar, bufs, lens, w->depth);
	free(bufs);
	free(lens);
	return 0;
}

static int setup_workers(struct strata_ple_reader *r, const char *name)
{
	uint32_t n = r->o.readers;
	int rc;

	r->workers = calloc(n ? n : 1, sizeof(*r->workers));
	if (!r->workers)
		return -ENOMEM;
	/* The dispatcher's first: the readers open the way it could. */
	for (uint32_t i = 0; i <= n; i++) {
		struct ple_worker *w = i == 0 ? &r->main : &r->workers[i - 1];

		if ((rc = strata_ple_worker_init(r, w, r->o.depth))) {
			strata_error("%s: out of memory for the PLE readers", r->path);
			return rc;
		}
		if (!r->map &&
		    (rc = open_reads(r, w, name, i == 0 || strata_aread_direct(r->main.ar))))
			return rc;
	}
	return 0;
}

int strata_ple_reader_setup(struct strata_ple_reader *r, struct strata_registry *reg,
			    const struct strata_ple_table *t)
{
	const char *name = "mmap";
	uint64_t cache_rows;
	int rc;

	r->own_host = (struct strata_host){ .version = 1, .log = own_log,
					    .config_get = own_config_get,
					    .aligned_alloc = strata_aligned_alloc,
					    .aligned_free = strata_aligned_free };
	if ((rc = check_table(r, t)))
		return rc;
	if (r->o.io == STRATA_PLE_IO_MMAP) {
		rc = map_table(r);
	} else {
		if (!(rc = load_io(r, reg, &name)))
			rc = check_ops(r, name);
	}
	if (rc || (rc = setup_workers(r, name)))
		return rc;
	if ((rc = strata_ple_cache_init(&r->cache, r->o.row_cache, r->rb))) {
		strata_error("%s: out of memory for a PLE row cache of %u rows (%llu MB)",
			     r->path, r->o.row_cache,
			     (unsigned long long)r->o.row_cache * r->rb / 1000000);
		return rc;
	}
	if (r->o.chunk_rows_hint && (rc = strata_ple_plan_reserve(r, r->o.chunk_rows_hint))) {
		strata_error("%s: out of memory for PLE chunks of %u rows", r->path,
			     r->o.chunk_rows_hint);
		return rc;
	}
	snprintf(r->io_name, sizeof(r->io_name), "%s", name);
	cache_rows = strata_ple_cache_capacity(&r->cache);
	snprintf(r->desc, sizeof(r->desc), "%s%s, %u readers x %u in flight, row cache %llu rows",
		 name, r->map ? "" : strata_aread_direct(r->main.ar) ? " (direct)" : " (buffered)",
		 r->o.readers, r->map ? 1 : r->main.depth, (unsigned long long)cache_rows);
	return 0;
}

void strata_ple_reader_teardown(struct strata_ple_reader *r)
{
	for (uint32_t i = 0; r->workers && i < r->o.readers; i++)
		strata_ple_worker_free(r, &r->workers[i]);
	strata_ple_worker_free(r, &r->main);
	free(r->workers);
	r->workers = NULL;
	if (r->map)
		strata_unmap_file((void *)r->map, r->map_len);
	r->map = NULL;
	strata_ple_cache_free(&r->cache);
	free(r->path);
	r->path = NULL;
}
