/*
 * attn_avx512.c - attention scores with AVX-512: 64 positions per pass, four
 * accumulators kept in registers across every dimension of the head.
 */
#include "attn.h"

#if defined(__x86_64__)
#include <immintrin.h>

void strata_attn_scores_avx512(const float *q, const float *kt, size_t stride, int hd,
			       uint32_t len, float scale, float *sc)
{
	const __m512 vs = _mm512_set1_ps(scale);
	uint32_t j0 = 0;

	for (; j0 + 64 <= len; j0 += 64) {
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;

		for (int d = 0; d < hd; d++) {
			const float *kr = kt + (size_t)d * stride + j0;
			__m512 qd = _mm512_set1_ps(q[d]);

			a0 = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kr), a0);
			a1 = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kr + 16), a1);
			a2 = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kr + 32), a2);
			a3 = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kr + 48), a3);
		}
		_mm512_storeu_ps(sc + j0, _mm512_mul_ps(a0, vs));
		_mm512_storeu_ps(sc + j0 + 16, _mm512_mul_ps(a1, vs));
		_mm512_storeu_ps(sc + j0 + 32, _mm512_mul_ps(a2, vs));
		_mm512_storeu_ps(sc + j0 + 48, _mm512_mul_ps(a3, vs));
	}
	for (; j0 < len; j0 += 16) {
		__mmask16 m = len - j0 >= 16 ? (__mmask16)0xffff
					      : (__mmask16)((1u << (len - j0)) - 1);
		__m512 a = _mm512_setzero_ps();

		for (int d = 0; d < hd; d++)
			a = _mm512_fmadd_ps(_mm512_set1_ps(q[d]),
					    _mm512_maskz_loadu_ps(m, kt + (size_t)d * stride + j0), a);
		_mm512_mask_storeu_ps(sc + j0, m, _mm512_mul_ps(a, vs));
	}
}
#endif
