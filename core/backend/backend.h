/*
 * backend.h - the core's handle on a compute backend (strata/backend.h):
 * the CPU backend, built in, or a device from a plugin of kind gpu.
 *
 * It wraps the ops table with what the core keeps per backend: its name,
 * what it supports (asked once per op and type), the bytes that crossed its
 * link, and the first error of its queued work, turned into one message
 * naming the backend.
 *
 * Threading: one thread at a time per backend, like the model's context.
 */
#ifndef STRATA_BACKEND_INT_H
#define STRATA_BACKEND_INT_H

#include <stddef.h>
#include <stdint.h>

#include "strata/backend.h"

struct strata_pool;
struct strata_plugin;

struct strata_link_stats {
	uint64_t in_bytes, out_bytes; /* host -> backend, backend -> host */
	uint64_t in_copies, out_copies;
};

struct strata_backend {
	const struct strata_backend_ops *ops;
	void *dev;
	char name[64];         /* "cpu", "gpu-sim" */
	int is_cpu;            /* the built-in CPU backend: host memory, no copies */
	struct strata_device_info info;
	uint8_t sup[STRATA_OP_COUNT][STRATA_TYPE_COUNT]; /* 0 unknown, 1 yes, 2 no */
	struct strata_link_stats link;
	int broken;            /* an error was reported: refuse more work */
};

/*
 * The CPU backend on `pool` (borrowed, may be NULL): the core's kernels on
 * host memory, no copies.  0 or -ENOMEM; freed with strata_backend_free().
 */
int strata_backend_cpu_create(struct strata_pool *pool, struct strata_backend **out);

/*
 * A device backend from a loaded plugin of kind gpu (its ops table was
 * checked by the registry): open() it and read its info.  0 or -errno
 * after one logged error naming the plugin.
 */
int strata_backend_device_create(const struct strata_plugin *p, struct strata_backend **out);

/* Wait for its work, close the device, free.  NULL is a no-op. */
void strata_backend_free(struct strata_backend *be);

/* 1 when be runs op `code` with weights of `type` (cached). */
int strata_backend_supports(struct strata_backend *be, uint32_t code, uint32_t type);

/*
 * Buffers.  alloc: -ENOMEM when the backend is full (not logged: placement
 * asks this way); the record must stay put until strata_backend_buf_free().
 */
int strata_backend_buf_alloc(struct strata_backend *be, size_t size, uint32_t usage,
			     struct strata_buf *buf);
void strata_backend_buf_free(struct strata_backend *be, struct strata_buf *buf);
/* A record over host memory the CPU backend computes with in place (no copy). */
int strata_backend_cpu_wrap(struct strata_backend *be, void *host, size_t size,
			    struct strata_buf *buf);

/*
 * Copies, counted in be->link (nothing for the CPU backend, which copies
 * with memcpy).  ev NULL: blocking.  Errors are logged once, naming be.
 */
int strata_backend_copy_in(struct strata_backend *be, struct strata_buf *buf, size_t off,
			   const void *src, size_t n, void *ev);
int strata_backend_copy_out(struct strata_backend *be, const struct strata_buf *buf, size_t off,
			    void *dst, size_t n, void *ev);

/* Queue an op; an error is logged once naming be and the op. */
int strata_backend_run(struct strata_backend *be, const struct strata_op *op);

/* Events and waits; errors logged once naming be. */
int strata_backend_event_create(struct strata_backend *be, void **ev);
void strata_backend_event_free(struct strata_backend *be, void *ev);
int strata_backend_record(struct strata_backend *be, void *ev);
int strata_backend_wait(struct strata_backend *be, void *ev);
int strata_backend_sync_event(struct strata_backend *be, void *ev);
int strata_backend_sync(struct strata_backend *be);


#endif
