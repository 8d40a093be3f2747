/*
 * backend.c - the CPU backend's ops table, device backends from plugins,
 * and the calls the core makes through either (see backend.h).
 */
#include "backend/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/exec.h"
#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "plat/plat.h"
#include "plugin/registry.h"
#include "util/log.h"
#include "util/mem.h"

/* ---- the CPU backend: host memory, ops run at once ------------------------------ */

static int cpu_info(void *dev, struct strata_device_info *info)
{
	(void)dev;
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "cpu (%s)", strata_simd_name(strata_simd_get()));
	info->mem_total = strata_phys_mem();
	info->mem_free = strata_phys_mem_free();
	info->host_buffers = 1;
	return 0;
}

static int cpu_supports(void *dev, uint32_t code, uint32_t type)
{
	(void)dev;
	return strata_exec_supports(code, type);
}

static int cpu_buf_alloc(void *dev, size_t size, uint32_t usage, struct strata_buf *buf)
{
	void *p = NULL;

	(void)dev;
	memset(buf, 0, sizeof(*buf));
	if (!(p = strata_aligned_alloc(STRATA_ALIGN, size)))
		return -ENOMEM;
	/* States start at zero; activations are written before they are read. */
	if (usage == STRATA_BUF_USE_STATE)
		memset(p, 0, size);
	*buf = (struct strata_buf){ .base = p, .size = size, .flags = STRATA_BUF_HOST,
				    .usage = usage, .priv = p };
	return 0;
}

static int cpu_buf_wrap(void *dev, void *host, size_t size, struct strata_buf *buf)
{
	(void)dev;
	*buf = (struct strata_buf){ .base = host, .size = size, .flags = STRATA_BUF_HOST };
	return 0;
}

static void cpu_buf_free(void *dev, struct strata_buf *buf)
{
	(void)dev;
	strata_aligned_free(buf->priv); /* NULL for wrapped memory */
	memset(buf, 0, sizeof(*buf));
}

static int cpu_copy_in(void *dev, struct strata_buf *buf, size_t off, const void *src, size_t n,
		       void *ev)
{
	(void)dev;
	(void)ev;
	if (off > buf->size || n > buf->size - off)
		return -EINVAL;
	memmove((char *)buf->base + off, src, n);
	return 0;
}

static int cpu_copy_out(void *dev, const struct strata_buf *buf, size_t off, void *dst, size_t n,
			void *ev)
{
	(void)dev;
	(void)ev;
	if (off > buf->size || n > buf->size - off)
		return -EINVAL;
	memmove(dst, (const char *)buf->base + off, n);
	return 0;
}

static int cpu_run(void *dev, const struct strata_op *op)
{
	return strata_exec_run(dev, op);
}

/* Work is done when run() returns: an event is reached as soon as it is recorded. */
static char g_cpu_event;

static int cpu_event_create(void *dev, void **ev)
{
	(void)dev;
	*ev = &g_cpu_event;
	return 0;
}

static void cpu_event_free(void *dev, void *ev)
{
	(void)dev;
	(void)ev;
}

static int cpu_event_nop(void *dev, void *ev)
{
	(void)dev;
	(void)ev;
	return 0;
}

static int cpu_sync(void *dev)
{
	(void)dev;
	return 0;
}

static const struct strata_backend_ops g_cpu_ops = {
	.version = STRATA_BACKEND_OPS_VERSION,
	.info = cpu_info,
	.supports = cpu_supports,
	.buf_alloc = cpu_buf_alloc,
	.buf_wrap = cpu_buf_wrap,
	.buf_free = cpu_buf_free,
	.copy_in = cpu_copy_in,
	.copy_out = cpu_copy_out,
	.run = cpu_run,
	.event_create = cpu_event_create,
	.event_free = cpu_event_free,
	.record_event = cpu_event_nop,
	.wait_event = cpu_event_nop,
	.sync_event = cpu_event_nop,
	.synchronize = cpu_sync,
};

int strata_backend_cpu_create(struct strata_pool *pool, struct strata_backend **out)
{
	struct strata_backend *be = calloc(1, sizeof(*be));
	struct strata_exec *x = NULL;

	*out = NULL;
	if (!be || strata_exec_create(pool, &x)) {
		free(be);
		return -ENOMEM;
	}
	be->ops = &g_cpu_ops;
	be->dev = x;
	be->is_cpu = 1;
	snprintf(be->name, sizeof(be->name), "cpu");
	cpu_info(NULL, &be->info);
	*out = be;
	return 0;
}

/* ---- device backends -------------------------------------------------------------- */

int strata_backend_device_create(const struct strata_plugin *p, struct strata_backend **out)
{
	struct strata_backend *be = calloc(1, sizeof(*be));
	int rc;

	*out = NULL;
	if (!be)
		return -ENOMEM;
	be->ops = p->desc->ops;
	snprintf(be->name, sizeof(be->name), "%s", p->desc->name);
	rc = be->ops->open(&p->host, &be->dev);
	if (rc) {
		strata_error("gpu plugin %s (%s): cannot open the device: %s", be->name, p->path,
			     strerror(-rc));
		free(be);
		return rc;
	}
	rc = be->ops->info(be->dev, &be->info);
	if (rc) {
		strata_error("gpu plugin %s: info() failed: %s", be->name, strerror(-rc));
		strata_backend_free(be);
		return rc;
	}
	be->info.name[sizeof(be->info.name) - 1] = 0;
	*out = be;
	return 0;
}

void strata_backend_free(struct strata_backend *be)
{
	if (!be)
		return;
	if (be->is_cpu) {
		strata_exec_free(be->dev);
	} else if (be->dev) {
		(void)be->ops->synchronize(be->dev);
		be->ops->close(be->dev);
	}
	free(be);
}

int strata_backend_supports(struct strata_backend *be, uint32_t code, uint32_t type)
{
	uint8_t *s;

	if (code >= STRATA_OP_COUNT || type >= STRATA_TYPE_COUNT)
		return 0;
	s = &be->sup[code][type];
	if (!*s)
		*s = be->ops->supports(be->dev, code, type) > 0 ? 1 : 2;
	return *s == 1;
}

/* The first failure of a device: one message, then the device refuses work. */
static int failed(struct strata_backend *be, int rc, const char *what)
{
	if (!be->broken)
		strata_error("%s failed %s: %s", be->name, what, strerror(-rc));
	be->broken = 1;
	return rc;
}

int strata_backend_buf_alloc(struct strata_backend *be, size_t size, uint32_t usage,
			     struct strata_buf *buf)
{
	memset(buf, 0, sizeof(*buf));
	return be->ops->buf_alloc(be->dev, size, usage, buf);
}

void strata_backend_buf_free(struct strata_backend *be, struct strata_buf *buf)
{
	if (buf->base || buf->priv)
		be->ops->buf_free(be->dev, buf);
	memset(buf, 0, sizeof(*buf));
}

int strata_backend_cpu_wrap(struct strata_backend *be, void *host, size_t size,
			    struct strata_buf *buf)
{
	return be->ops->buf_wrap(be->dev, host, size, buf);
}

int strata_backend_copy_in(struct strata_backend *be, struct strata_buf *buf, size_t off,
			   const void *src, size_t n, void *ev)
{
	int rc;

	if (be->broken)
		return -EIO;
	if ((rc = be->ops->copy_in(be->dev, buf, off, src, n, ev)))
		return failed(be, rc, "copying to the device");
	be->link.in_bytes += be->is_cpu ? 0 : n;
	be->link.in_copies += !be->is_cpu;
	return 0;
}

int strata_backend_copy_out(struct strata_backend *be, const struct strata_buf *buf, size_t off,
			    void *dst, size_t n, void *ev)
{
	int rc;

	if (be->broken)
		return -EIO;
	if ((rc = be->ops->copy_out(be->dev, buf, off, dst, n, ev)))
		return failed(be, rc, "copying from the device");
	be->link.out_bytes += be->is_cpu ? 0 : n;
	be->link.out_copies += !be->is_cpu;
	return 0;
}

int strata_backend_run(struct strata_backend *be, const struct strata_op *op)
{
	char what[64];
	int rc;

	if (be->broken)
		return -EIO;
	rc = be->ops->run(be->dev, op);
	if (!rc)
		return 0;
	/* an error of earlier queued work may surface here: say when we learned it */
	snprintf(what, sizeof(what), "queueing op %s", strata_op_name(op->code));
	return failed(be, rc, what);
}

int strata_backend_event_create(struct strata_backend *be, void **ev)
{
	int rc = be->ops->event_create(be->dev, ev);

	return rc ? failed(be, rc, "creating an event") : 0;
}

void strata_backend_event_free(struct strata_backend *be, void *ev)
{
	if (ev)
		be->ops->event_free(be->dev, ev);
}

int strata_backend_record(struct strata_backend *be, void *ev)
{
	int rc = be->broken ? -EIO : be->ops->record_event(be->dev, ev);

	return rc ? failed(be, rc, "recording an event") : 0;
}

int strata_backend_wait(struct strata_backend *be, void *ev)
{
	int rc = be->broken ? -EIO : be->ops->wait_event(be->dev, ev);

	return rc ? failed(be, rc, "waiting for an event") : 0;
}

int strata_backend_sync_event(struct strata_backend *be, void *ev)
{
	int rc = be->broken ? -EIO : be->ops->sync_event(be->dev, ev);

	return rc ? failed(be, rc, "in queued work") : 0;
}

int strata_backend_sync(struct strata_backend *be)
{
	int rc = be->ops->synchronize(be->dev);

	return rc ? failed(be, rc, "in queued work") : be->broken ? -EIO : 0;
}
