/*
 * vexp.h - exp(x) on a vector of floats, for the x86 kernel files built with
 * the matching -m flags (AVX-512 F, or AVX2 + FMA).
 *
 * 2^n * p(r): n = round(x log2 e), r = x - n ln 2 (ln 2 in two parts, so
 * |r| <= 0.35 exactly enough), p the degree-6 Taylor polynomial of exp:
 * within 3e-7 of expf, relative.  The caller clamps x: to [-88, 88] for the
 * AVX-512 form (scalef takes any n), to [-87, 87] for the AVX2 one (2^n is
 * built in the exponent field, which needs n in [-126, 127]).  NaN stays NaN.
 */
#ifndef STRATA_CPU_VEXP_H
#define STRATA_CPU_VEXP_H

#include <immintrin.h>

#define STRATA_EXP_POLY(pre, x, n, r, p)                                            \
	do {                                                                        \
		r = pre##_fnmadd_ps(n, pre##_set1_ps(0.693145751953125f), x);       \
		r = pre##_fnmadd_ps(n, pre##_set1_ps(1.42860682030941723e-6f), r);  \
		p = pre##_set1_ps(1.0f / 720.0f);                                   \
		p = pre##_fmadd_ps(p, r, pre##_set1_ps(1.0f / 120.0f));             \
		p = pre##_fmadd_ps(p, r, pre##_set1_ps(1.0f / 24.0f));              \
		p = pre##_fmadd_ps(p, r, pre##_set1_ps(1.0f / 6.0f));               \
		p = pre##_fmadd_ps(p, r, pre##_set1_ps(0.5f));                      \
		p = pre##_fmadd_ps(p, r, pre##_set1_ps(1.0f));                      \
		p = pre##_fmadd_ps(p, r, pre##_set1_ps(1.0f));                      \
	} while (0)

#ifdef __AVX512F__
static inline __attribute__((always_inline)) __m512 strata_exp16(__m512 x)
{
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r, p;

	STRATA_EXP_POLY(_mm512, x, n, r, p);
	return _mm512_scalef_ps(p, n);
}
#endif

#ifdef __AVX2__
static inline __attribute__((always_inline)) __m256 strata_exp8(__m256 x)
{
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
				   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
						       _mm256_set1_epi32(127)), 23);
	__m256 r, p;

	STRATA_EXP_POLY(_mm256, x, n, r, p);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
#endif

#endif
