/*
 * attn.h - attention inner loops over a transposed KV cache.
 *
 * The cache keeps, per KV head, one row per dimension with one value per
 * position (stride floats between rows), so a query's scores are a sum of
 * head_dim rows scaled by its components.  The kernels keep the running sums
 * in registers across all dimensions and write each score once.
 */
#ifndef STRATA_ATTN_H
#define STRATA_ATTN_H

#include <stddef.h>
#include <stdint.h>

/*
 * sc[j] = scale * sum_{d < hd} q[d] * kt[d*stride + j] for j < len.
 * Reads kt rows up to len rounded up to 16 (the cache is padded so).
 */
void strata_attn_scores(const float *q, const float *kt, size_t stride, int hd, uint32_t len,
			float scale, float *sc);

/*
 * Attention of the G query heads that share one KV head, over positions
 * [0, len): o[g] = sum_j softmax_j(scale * q[g] . k_j) * v_j.
 *   q   G rows of hd floats, qstride floats apart;
 *   kt  the keys transposed: hd rows of positions, kstride floats apart,
 *       readable up to len rounded up to 16 (the cache is padded so);
 *   v   the values: len rows of hdv floats, vstride floats apart;
 *   o   G rows of hdv floats, ostride floats apart (written);
 *   sc  scratch for 4 * (len rounded up to 16) floats.
 * Loading each key and value once for all G heads is what makes grouped-query
 * attention cheaper than G separate heads.  len >= 1.
 */
void strata_attn_heads(const float *q, size_t qstride, int G, const float *kt, size_t kstride,
		       int hd, const float *v, size_t vstride, int hdv, uint32_t len, float scale,
		       float *o, size_t ostride, float *sc);

/* Level-specific versions (kernels compiled with their own -m flags). */
void strata_attn_scores_scalar(const float *q, const float *kt, size_t stride, int hd,
			       uint32_t len, float scale, float *sc);
void strata_attn_scores_avx2(const float *q, const float *kt, size_t stride, int hd,
			     uint32_t len, float scale, float *sc);
void strata_attn_scores_avx512(const float *q, const float *kt, size_t stride, int hd,
			       uint32_t len, float scale, float *sc);

#define STRATA_ATTN_HEADS_ARGS                                                        \
	const float *q, size_t qstride, int G, const float *kt, size_t kstride, int hd,    \
	const float *v, size_t vstride, int hdv, uint32_t len, float scale, float *o,      \
	size_t ostride, float *sc
void strata_attn_heads_scalar(STRATA_ATTN_HEADS_ARGS);
void strata_attn_heads_avx2(STRATA_ATTN_HEADS_ARGS);
void strata_attn_heads_avx512(STRATA_ATTN_HEADS_ARGS);

#endif
