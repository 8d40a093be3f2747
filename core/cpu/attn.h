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

/* Level-specific versions (kernels compiled with their own -m flags). */
void strata_attn_scores_scalar(const float *q, const float *kt, size_t stride, int hd,
			       uint32_t len, float scale, float *sc);
void strata_attn_scores_avx2(const float *q, const float *kt, size_t stride, int hd,
			     uint32_t len, float scale, float *sc);
void strata_attn_scores_avx512(const float *q, const float *kt, size_t stride, int hd,
			       uint32_t len, float scale, float *sc);

#endif
