/*
 * attn.c - attention scores: dispatch and the scalar reference.
 */
#include "attn.h"

#include "attn_heads.h"
#include "kernels.h"

void strata_attn_scores_scalar(const float *q, const float *kt, int hd, uint32_t len,
			       float scale, float *sc)
{
	for (uint32_t j0 = 0; j0 < len; j0 += 16) {
		float acc[16] = { 0 };
		uint32_t w = len - j0 < 16 ? len - j0 : 16;

		for (int d = 0; d < hd; d++) {
			const float *kr = kt + strata_kt_at(hd, d, j0);

			for (uint32_t i = 0; i < w; i++)
				acc[i] += q[d] * kr[i];
		}
		for (uint32_t i = 0; i < w; i++)
			sc[j0 + i] = acc[i] * scale;
	}
}

void strata_attn_scores(const float *q, const float *kt, int hd, uint32_t len, float scale,
			float *sc)
{
#if defined(__x86_64__) && !defined(STRATA_NO_SIMD)
	switch (strata_simd_get()) {
	case STRATA_SIMD_AVX512:
		strata_attn_scores_avx512(q, kt, hd, len, scale, sc);
		return;
	case STRATA_SIMD_AVX2:
		strata_attn_scores_avx2(q, kt, hd, len, scale, sc);
		return;
	default:
		break;
	}
#endif
	strata_attn_scores_scalar(q, kt, hd, len, scale, sc);
}

void strata_attn_heads_scalar(STRATA_ATTN_HEADS_ARGS)
{
	attn_heads_portable(q, qstride, G, kt, hd, v, vstride, hdv, len, scale, o,
			    ostride, sc);
}

void strata_attn_heads(STRATA_ATTN_HEADS_ARGS)
{
#if defined(__x86_64__) && !defined(STRATA_NO_SIMD)
	switch (strata_simd_get()) {
	case STRATA_SIMD_AVX512:
		strata_attn_heads_avx512(q, qstride, G, kt, hd, v, vstride, hdv, len,
					 scale, o, ostride, sc);
		return;
	case STRATA_SIMD_AVX2:
		strata_attn_heads_avx2(q, qstride, G, kt, hd, v, vstride, hdv, len,
				       scale, o, ostride, sc);
		return;
	default:
		break;
	}
#endif
	strata_attn_heads_scalar(q, qstride, G, kt, hd, v, vstride, hdv, len, scale, o,
				 ostride, sc);
}
