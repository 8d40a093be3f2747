/*
 * exec.h - the op set of strata/backend.h executed on host memory with the
 * CPU kernels (core/cpu) and a thread pool.
 *
 * This is the body of the core's CPU backend, and it is linked on its own
 * (the strata_kernels library) into device plugins that compute with the
 * CPU kernels, such as the test device gpu-sim.  Every tensor an op names
 * must have host-addressable data at buf->base + offset.
 *
 * Threading: one op at a time per exec (its scratch is shared by the ops).
 */
#ifndef STRATA_EXEC_H
#define STRATA_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "strata/backend.h"

struct strata_pool;
struct strata_exec;

/*
 * A host buffer flag of the core's own (not in the plugin ABI): its tensors
 * of the types that repack (Q8_0, Q4_K: kernels.h, strata_layout_r16) are
 * interleaved sixteen rows at a time, as place.c repacks them at load.
 * Only the CPU backend's buffers carry it.
 */
#define STRATA_BUF_R16 (1u << 30)

/*
 * An executor on `pool` (borrowed; NULL runs everything on the calling
 * thread).  0 or -ENOMEM; released with strata_exec_free().
 */
int strata_exec_create(struct strata_pool *pool, struct strata_exec **out);
void strata_exec_free(struct strata_exec *x);

/*
 * 1 when strata_exec_run() computes op `code` with weights of `type`
 * (MATMUL's w and GET_ROWS' table; F32 for the other ops).
 */
int strata_exec_supports(uint32_t code, uint32_t type);

/*
 * Run op now, on the pool.  0, -EINVAL for an op it does not know or
 * operands of the wrong type or shape (nothing written), -ENOMEM when its
 * scratch cannot grow.  Nothing is logged: the backend that calls it does.
 */
int strata_exec_run(struct strata_exec *x, const struct strata_op *op);

/* "ATTN", "MATMUL", ...; "?" for an unknown code. */
const char *strata_op_name(uint32_t code);

/* The data of a host tensor. */
static inline void *strata_tensor_data(const struct strata_tensor *t)
{
	return (char *)t->buf->base + t->offset;
}

/*
 * Route one token (STRATA_OP_MOE_ROUTE's rule): probs over n_expert router
 * logits (softmax or sigmoid; overwritten), the top k by probability plus
 * bias (ties to the lower id), their probabilities as weights, renormalised
 * when `norm` (the sum clamped below at 2^-14), times scale.
 */
void strata_route_token(uint32_t gating, uint32_t n_expert, uint32_t k, int norm, float scale,
			const float *bias, float *logits, int32_t *experts, float *weights);

#endif
