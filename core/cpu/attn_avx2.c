/*
 * attn_avx2.c - attention scores with AVX2 + FMA: 32 positions per pass.
 */
#include "attn.h"
#include "attn_heads.h"

#if defined(__x86_64__)
#include <immintrin.h>

void strata_attn_scores_avx2(const float *q, const float *kt, size_t stride, int hd,
			     uint32_t len, float scale, float *sc)
{
	const __m256 vs = _mm256_set1_ps(scale);
	uint32_t j0 = 0;

	for (; j0 + 32 <= len; j0 += 32) {
		__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;

		for (int d = 0; d < hd; d++) {
			const float *kr = kt + (size_t)d * stride + j0;
			__m256 qd = _mm256_set1_ps(q[d]);

			a0 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kr), a0);
			a1 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kr + 8), a1);
			a2 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kr + 16), a2);
			a3 = _mm256_fmadd_ps(qd, _mm256_loadu_ps(kr + 24), a3);
		}
		_mm256_storeu_ps(sc + j0, _mm256_mul_ps(a0, vs));
		_mm256_storeu_ps(sc + j0 + 8, _mm256_mul_ps(a1, vs));
		_mm256_storeu_ps(sc + j0 + 16, _mm256_mul_ps(a2, vs));
		_mm256_storeu_ps(sc + j0 + 24, _mm256_mul_ps(a3, vs));
	}
	/* The tail reads whole 8-float groups: the cache rows are padded to 16. */
	for (; j0 < len; j0 += 8) {
		__m256 a = _mm256_setzero_ps();
		float tmp[8];

		for (int d = 0; d < hd; d++)
			a = _mm256_fmadd_ps(_mm256_set1_ps(q[d]),
					    _mm256_loadu_ps(kt + (size_t)d * stride + j0), a);
		_mm256_storeu_ps(tmp, _mm256_mul_ps(a, vs));
		for (uint32_t i = 0; i < 8 && j0 + i < len; i++)
			sc[j0 + i] = tmp[i];
	}
}

/* The portable loops, vectorised by the compiler at this level. */
void strata_attn_heads_avx2(STRATA_ATTN_HEADS_ARGS)
{
	attn_heads_portable(q, qstride, G, kt, kstride, hd, v, vstride, hdv, len, scale, o,
			    ostride, sc);
}
#endif
