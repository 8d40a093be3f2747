/*
 * attn.h - attention inner loops over a KV cache whose keys are transposed
 * in tiles of 16 positions.
 *
 * The cache keeps, per KV head, the keys of positions 16 t .. 16 t + 15 as
 * one tile of head_dim rows of 16 values (strata_kt_at), so a query's scores
 * for a tile are a sum of head_dim rows scaled by its components, and the
 * tiles a short sequence uses lie together however long the context: with
 * rows of a whole context (one row per dimension, ctx floats long) a decode
 * step near the start read head_dim rows ctx floats apart, every one a cache
 * miss of its own once the weights had gone through the caches (bench-qwen3moe
 * Q4_K_M decoding its first 64 positions, Zen 5, 2 threads: the attention op
 * took 2.6 times as long in a context of 4096 as in one of 64, 4 times in one
 * of 32768; with tiles 1.2 and 1.4 times).  The kernels keep the running
 * sums in registers across all dimensions and write each score once.
 */
#ifndef STRATA_ATTN_H
#define STRATA_ATTN_H

#include <stddef.h>
#include <stdint.h>

/* Positions per key tile.  The kernels' vector splits assume 16. */
#define STRATA_KT_TILE 16

/* Floats in one key tile of a head of hd dimensions. */
static inline size_t strata_kt_tile(int hd)
{
	return (size_t)STRATA_KT_TILE * (size_t)hd;
}

/* n positions rounded up to whole tiles. */
static inline size_t strata_kt_round(size_t n)
{
	return (n + STRATA_KT_TILE - 1) / STRATA_KT_TILE * STRATA_KT_TILE;
}

/* Where position j's key dimension d lies in a KV head's tiles (hd dimensions). */
static inline size_t strata_kt_at(int hd, int d, uint32_t j)
{
	return (size_t)(j / STRATA_KT_TILE) * strata_kt_tile(hd) + (size_t)d * STRATA_KT_TILE +
	       j % STRATA_KT_TILE;
}

/*
 * Attention of the G query heads that share one KV head, over positions
 * [0, len): o[g] = sum_j softmax_j(scale * q[g] . k_j) * v_j.
 *   q   G rows of hd floats, qstride floats apart;
 *   kt  the keys in tiles (strata_kt_at), whole tiles readable
 *       (strata_kt_round(len) positions);
 *   v   the values: len rows of hdv floats, vstride floats apart;
 *   o   G rows of hdv floats, ostride floats apart (written);
 *   sc  scratch for 4 * strata_kt_round(len) floats.
 * Loading each key and value once for all G heads is what makes grouped-query
 * attention cheaper than G separate heads.  len >= 1.
 */
void strata_attn_heads(const float *q, size_t qstride, int G, const float *kt, int hd,
		       const float *v, size_t vstride, int hdv, uint32_t len, float scale, float *o,
		       size_t ostride, float *sc);

/* Level-specific versions (kernels compiled with their own -m flags). */
#define STRATA_ATTN_HEADS_ARGS                                                        \
	const float *q, size_t qstride, int G, const float *kt, int hd,                    \
	const float *v, size_t vstride, int hdv, uint32_t len, float scale, float *o,      \
	size_t ostride, float *sc
void strata_attn_heads_scalar(STRATA_ATTN_HEADS_ARGS);
void strata_attn_heads_avx2(STRATA_ATTN_HEADS_ARGS);
void strata_attn_heads_avx512(STRATA_ATTN_HEADS_ARGS);

#endif
