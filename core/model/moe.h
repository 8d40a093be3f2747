/*
 * moe.h - the mixture-of-experts FFN (internal to core/model).
 *
 * For a batch, tokens are routed, grouped by expert, and each expert runs
 * once over all of its tokens (a batched matmul), so each expert's weights
 * are streamed from memory once per batch.
 */
#ifndef STRATA_MOE_H
#define STRATA_MOE_H

#include "model.h"

struct strata_moe_ws;

/* Scratch for batches of up to max_batch tokens.  0 or -ENOMEM. */
int strata_moe_ws_create(const struct strata_hparams *hp, uint32_t max_batch,
			 struct strata_moe_ws **out);
void strata_moe_ws_free(struct strata_moe_ws *ws);

struct strata_xstore;

/*
 * out[t] = routed experts (+ shared expert) of layer `layer` (L) applied to
 * xn[t], t < n; rows of n_embd floats.  out must not alias xn.  Experts
 * come from the mapping, or from xs when it is not NULL: then a failed
 * read returns its -errno (logged by the store) and out is not written.
 */
int strata_moe_ffn(struct strata_moe_ws *ws, struct strata_pool *pool,
		   const struct strata_hparams *hp, const struct strata_layer *L,
		   struct strata_xstore *xs, uint32_t layer, const float *xn, uint32_t n,
		   float *out);

/*
 * Route one token: pick hp->n_expert_used experts from the router logits
 * (n_expert values; overwritten) and their weights.  Exposed for tests.
 */
void strata_moe_route(const struct strata_hparams *hp, const float *bias, float *logits,
		      int32_t *experts, float *weights);

#endif
