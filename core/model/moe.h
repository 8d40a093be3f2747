/*
 * moe.h - routing of the mixture-of-experts FFN (internal to core/model;
 * the MoE block itself is strata_moe_block in ctx_int.h).
 */
#ifndef STRATA_MOE_H
#define STRATA_MOE_H

#include "model.h"

/*
 * Route one token: pick hp->n_expert_used experts from the router logits
 * (n_expert values; overwritten with the probabilities) and their weights,
 * by hp's gating, renormalisation and scale (STRATA_OP_MOE_ROUTE's rule).
 * Exposed for tests.
 */
void strata_moe_route(const struct strata_hparams *hp, const float *bias, float *logits,
		      int32_t *experts, float *weights);

#endif
