/*
 * xstore.h - MoE experts read on use from the model file through an io
 * plugin into a bounded RAM cache ([model] experts = stream).
 *
 * For a machine whose RAM is short of the experts: only the shared weights
 * stay mapped; each layer asks for the experts its tokens were routed to,
 * hits come from the cache (least recently used evicted), misses are read
 * with direct I/O, many in flight, through the shared read path
 * (io/aread.h): a failed or short read is repeated (STRATA_AREAD_TRIES
 * tries); a read that still fails, or a disk that lets no read land for the
 * timeout, fails the forward pass with one error naming the file, the
 * tensor, the expert and the offset.  The store stays usable: the next fetch
 * reads again (on a fresh handle after a timeout).
 *
 * The reads run on the store's reader thread: fetch_start() returns once
 * they are planned, so the layer loop can compute with the experts that
 * were resident while the rest load, and fetch_wait() joins them.
 *
 * Threading: the store is used by one thread at a time (the engine's), like
 * a sequence; its reader thread only fills the slots a started fetch asked
 * for.
 */
#ifndef STRATA_XSTORE_H
#define STRATA_XSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "strata/plugin.h"

struct strata_xstore;

struct strata_xstore_opts {
	const struct strata_io_ops *ops;  /* required: a loaded io plugin's methods */
	const struct strata_host *host;   /* required: the host table that plugin was given */
	const char *io_name;              /* for messages */
	uint64_t cache_bytes;             /* RAM for experts; 0 = half the free memory */
	uint32_t depth;                   /* reads in flight, >= 1 */
	uint32_t timeout_ms;              /* no read landing for this long fails the fetch;
					   * 0 = 30 s */
	int direct;                       /* ask for direct I/O (falls back when refused) */
};

struct strata_xstore_stats {
	uint64_t hits, misses;   /* experts asked for */
	uint64_t reads, bytes;   /* reads that landed, bytes they brought */
	uint64_t retries;        /* reads repeated after a failure or a short count */
	uint64_t failures;       /* fetches that failed */
	uint32_t slots;          /* experts the cache holds */
};

/*
 * Open m's model file at `path` through o->ops.  -EINVAL (logged) when the
 * model has no MoE experts, the cache cannot hold one layer's experts, or
 * the io plugin wants alignments over 4096 bytes; the plugin's -errno when
 * it cannot open the file (logged); -ENOMEM.  Released with
 * strata_xstore_close(); m must outlive it.
 */
int strata_xstore_open(const struct strata_model *m, const char *path,
		       const struct strata_xstore_opts *o, struct strata_xstore **out);
/*
 * Waits for a started fetch (logging its error, if any), stops the reader
 * thread, closes the file, logs the totals, frees.  NULL is a no-op.
 */
void strata_xstore_close(struct strata_xstore *xs);

/*
 * Start making experts ids[0..n) of `layer` resident; returns at once (0, or
 * -errno for bad arguments).  mats[3i..3i+2] are set now; their bytes are
 * valid after fetch_wait() returns 0.  One fetch in flight at a time.
 *
 * n <= the layer's expert count, no duplicates; mats[3i], mats[3i+1],
 * mats[3i+2] are expert ids[i]'s gate, up and down matrices, whose pointers
 * stay valid until the next fetch starts.  The experts that were resident
 * (hits) may be used at once; the others are being read.  -EBUSY while a
 * started fetch was not waited for, -EINVAL for a layer without experts or
 * an id out of range (nothing logged: a caller's mistake).
 */
int strata_xstore_fetch_start(struct strata_xstore *xs, uint32_t layer, const uint32_t *ids,
			      uint32_t n, struct strata_mat *mats);
/*
 * Block until the started fetch is done: 0 or -errno after logging one error.
 *
 * The error names the file, the tensor, the expert and the offset (-EIO or
 * the read's own error after the last try, -ETIMEDOUT when no read landed
 * for the timeout); the experts being read are then dropped from the cache.
 * -EINVAL (not logged) when no fetch was started.
 */
int strata_xstore_fetch_wait(struct strata_xstore *xs);

/*
 * 1 when expert ids[i] of the started fetch was resident when it started:
 * its mats are valid now, before fetch_wait() (the fetch keeps it from
 * being evicted), so a caller can compute with it while the rest load.
 */
int strata_xstore_fetch_ready(const struct strata_xstore *xs, uint32_t i);

/* fetch_start() then fetch_wait(): the experts resident when it returns 0. */
int strata_xstore_fetch(struct strata_xstore *xs, uint32_t layer, const uint32_t *ids,
			uint32_t n, struct strata_mat *mats);

/*
 * The cache's slot memory, every expert's bytes lie in it: page-aligned
 * anonymous memory of *size bytes, owned by xs and valid until
 * strata_xstore_close(), so a backend can wrap it once as a host buffer
 * (buf_wrap) and address experts by their offset from *base.
 */
void strata_xstore_memory(const struct strata_xstore *xs, void **base, size_t *size);

void strata_xstore_stats(const struct strata_xstore *xs, struct strata_xstore_stats *st);

#endif
