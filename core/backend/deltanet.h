/*
 * deltanet.h - the gated delta rule of qwen3next's DeltaNet mixer (the CPU
 * backend's STRATA_OP_DELTANET, exec_dn.c).
 *
 * Per value head h the layer keeps a recurrent state S [dv][dk] and, shared
 * by all heads, the last d_conv-1 inputs of its causal conv.  For each token:
 *
 *   S = exp(g) * S;  d = beta * (v - S k);  S += d k^T;  o = S q
 *
 * with q, k L2-normalised (q also scaled by 1/sqrt(dk)), g = a *
 * softplus(alpha + dt_bias) <= 0 and beta = sigmoid(b).  A prompt batch runs
 * the chunked (WY / UT transform) form of the same rule, 64 tokens per
 * chunk; decode runs the recurrence, and so do batches of up to
 * STRATA_DN_RECURRENT_MAX tokens: a verify window of speculative decoding
 * then sums each token as one-token decoding does, so its rows (and the
 * states a kept prefix leaves) are bit for bit one-token decoding's, which
 * a quantised model's activations would otherwise grow into another greedy
 * text.  Both are exposed so tests can hold them against each other.
 */
#ifndef STRATA_DELTANET_H
#define STRATA_DELTANET_H

#include <stddef.h>
#include <stdint.h>

/* Tokens per chunk of the chunked form. */
#define STRATA_DN_CHUNK 64
/* Batches up to this many tokens take the recurrence ([spec] window's bound). */
#define STRATA_DN_RECURRENT_MAX 8

/*
 * The gated delta rule for one head over n tokens.  Token t reads q, k at
 * q + t*ldq, k + t*ldk (dk floats), v at v + t*ldv (dv floats), g[t*ldg],
 * beta[t*ldg]; writes o at o + t*ldo (dv floats).  S is [dv][dk] (row c:
 * value channel c), updated.  Both need strata_dn_rule_scratch(dk, dv)
 * floats of scratch.
 */
void strata_dn_rule_recurrent(const float *q, const float *k, const float *v, size_t ldq,
			      size_t ldk, size_t ldv, const float *g, const float *beta,
			      size_t ldg, uint32_t n, uint32_t dk, uint32_t dv, float *S,
			      float *o, size_t ldo, float *scratch);
void strata_dn_rule_chunked(const float *q, const float *k, const float *v, size_t ldq,
			    size_t ldk, size_t ldv, const float *g, const float *beta,
			    size_t ldg, uint32_t n, uint32_t dk, uint32_t dv, float *S,
			    float *o, size_t ldo, float *scratch);
size_t strata_dn_rule_scratch(uint32_t dk, uint32_t dv);

#endif
