/*
 * quants_k_x86.h - private: K-quant block fields that the AVX2 one-row
 * kernels (quants_k_avx2.c) and the row-interleaved repacking
 * (quants_k_r8_repack.h) both decode.  Included only by files built with
 * at least -mavx2.
 */
#ifndef STRATA_QUANTS_K_X86_H
#define STRATA_QUANTS_K_X86_H

#include <stdint.h>
#include <string.h>
#include <immintrin.h>

static inline uint32_t strata_k_ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Q4_K / Q5_K: the 12 packed bytes as sc0..sc7, m0..m7 (6 bits each). */
static inline __attribute__((always_inline)) __m128i strata_q4k_scales(const uint8_t *s)
{
	uint32_t a = strata_k_ld32(s), b = strata_k_ld32(s + 4), c = strata_k_ld32(s + 8);

	return _mm_setr_epi32((int)(a & 0x3f3f3f3f),
			      (int)((c & 0x0f0f0f0f) | ((a >> 2) & 0x30303030)),
			      (int)(b & 0x3f3f3f3f),
			      (int)(((c >> 4) & 0x0f0f0f0f) | ((b >> 2) & 0x30303030)));
}

#endif
