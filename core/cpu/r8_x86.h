/*
 * r8_x86.h - private: the 8 x 8 int32 shuffles behind the row-interleaved
 * Q8_0 kernels (q8_0_r8_avx2.c, q8_0_r16_avx512.c). Included only by files
 * built with at least -mavx2.
 */
#ifndef STRATA_R8_X86_H
#define STRATA_R8_X86_H

#include <string.h>
#include <immintrin.h>

#include "kernels_impl.h"

#define R8_AI static inline __attribute__((always_inline))
#define R8_UNROLL _Pragma("GCC unroll 8")

/* rows[j] transposed as 8 x 8 int32: out[c] = dword c of every row. */
R8_AI void strata_r8_transpose(__m256i r[8])
{
	__m256i t[8], u[8];

	R8_UNROLL for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
	}
	R8_UNROLL for (int i = 0; i < 8; i += 4) {
		u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
		u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
		u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
		u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	R8_UNROLL for (int c = 0; c < 4; c++) {
		r[c] = _mm256_permute2x128_si256(u[c], u[c + 4], 0x20);
		r[c + 4] = _mm256_permute2x128_si256(u[c], u[c + 4], 0x31);
	}
}

/* The sum of each vector's eight int32 lanes: out[j] = sum of p[j]. */
R8_AI __m256i strata_r8_hsum(const __m256i p[8])
{
	__m256i s[4], c[2];

	R8_UNROLL for (int i = 0; i < 4; i++)
		s[i] = _mm256_add_epi32(_mm256_unpacklo_epi32(p[2 * i], p[2 * i + 1]),
					_mm256_unpackhi_epi32(p[2 * i], p[2 * i + 1]));
	R8_UNROLL for (int i = 0; i < 2; i++)
		c[i] = _mm256_add_epi32(_mm256_unpacklo_epi64(s[2 * i], s[2 * i + 1]),
					_mm256_unpackhi_epi64(s[2 * i], s[2 * i + 1]));
	return _mm256_add_epi32(_mm256_permute2x128_si256(c[0], c[1], 0x20),
				_mm256_permute2x128_si256(c[0], c[1], 0x31));
}

/* y of rows [r, r + nr) (nr <= 8) for token t, as one vector: the
 * interleaved kernels' partial sums carried between chunks of blocks. */
static inline __m256 strata_r8_load_y(const struct strata_mm_args *a, int64_t r, int nr,
				      int64_t t)
{
	float tmp[8] = { 0 };

	if (nr == 8)
		return _mm256_loadu_ps(a->y + t * a->ldy + r);
	memcpy(tmp, a->y + t * a->ldy + r, (size_t)nr * sizeof(float));
	return _mm256_loadu_ps(tmp);
}

static inline void strata_r8_store_y(const struct strata_mm_args *a, int64_t r, int nr,
				     int64_t t, __m256 v)
{
	float tmp[8];

	if (nr == 8) {
		_mm256_storeu_ps(a->y + t * a->ldy + r, v);
		return;
	}
	_mm256_storeu_ps(tmp, v);
	memcpy(a->y + t * a->ldy + r, tmp, (size_t)nr * sizeof(float));
}

#endif
