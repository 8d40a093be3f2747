/*
 * xstore.h - MoE experts read on use from the model file through an io
 * plugin into a bounded RAM cache ([model] experts = stream).
 *
 * For a machine whose RAM is short of the experts: only the shared weights
 * stay mapped; each layer asks for the experts its tokens were routed to,
 * hits come from the cache (least recently used evicted), misses are read
 * with direct I/O, many in flight.  A failed or short read is repeated; a
 * read that still fails, or a disk that lets no read land for the timeout,
 * fails the forward pass with one error naming the file, the tensor, the
 * expert and the offset.  The store stays usable: the next fetch reads again.
 *
 * Threading: one thread at a time (the engine's), like a sequence.
 */
#ifndef STRATA_XSTORE_H
#define STRATA_XSTORE_H

#include <stdint.h>

#include "model/model.h"
#include "strata/plugin.h"

struct strata_xstore;

struct strata_xstore_opts {
	const struct strata_io_ops *ops;  /* required: a loaded io plugin's methods */
	const struct strata_host *host;   /* the host table that plugin was given */
	const char *io_name;              /* for messages */
	uint64_t cache_bytes;             /* RAM for experts; 0 = half the free memory */
	uint32_t depth;                   /* reads in flight, >= 1 */
	uint32_t timeout_ms;              /* no read landing for this long fails the fetch */
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
/* Waits for (or cancels) reads in flight, logs the totals, frees.  NULL is a no-op. */
void strata_xstore_close(struct strata_xstore *xs);

/*
 * Make experts ids[0..n) of `layer` resident (n <= the layer's expert count,
 * no duplicates) and set mats[3i], mats[3i+1], mats[3i+2] to expert ids[i]'s
 * gate, up and down matrices.  The pointers stay valid until the next fetch.
 * Returns 0 or -errno after logging one error with file and offset (-EIO,
 * -ETIMEDOUT, ...); the experts being read are then dropped from the cache.
 */
int strata_xstore_fetch(struct strata_xstore *xs, uint32_t layer, const uint32_t *ids,
			uint32_t n, struct strata_mat *mats);

void strata_xstore_stats(const struct strata_xstore *xs, struct strata_xstore_stats *st);

#endif
