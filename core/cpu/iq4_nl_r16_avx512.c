/*
 * iq4_nl_r16_avx512.c - IQ4_NL weights repacked at load (iq4_nl_r16.h) x
 * Q8_0 activations at the AVX-512 level, any number of tokens (built with
 * the AVX-512 + VNNI flags).
 *
 * A 64-byte chunk holds four values of sixteen rows in each nibble (rows
 * 0..7 in its first 32 bytes, 8..15 in the others: one int32 lane a row).
 * The nibbles are split and looked up once per chunk into unsigned bytes,
 * value + 128 (vpdpbusd multiplies unsigned by signed bytes), and every
 * token then costs one vpdpbusd per nibble half against its four matching
 * bytes, broadcast: two instructions per 128 products.  This level's Q8_0
 * row carries -128 times each block's sum of q (kernels_avx512.c), which
 * takes the 128 back out, so each block's integer dot is exact.  Tiles are
 * eight tokens by the group's sixteen rows.  Float order: the one
 * iq4_nl_r16.h gives for every level.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "iq4_nl_r16.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define TT 8 /* tokens per tile */
#define QK 32
#define PF_DIST 2304 /* a first pass's prefetch distance: four pairs of blocks */

AI __m512i bcast32(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm512_set1_epi32(v);
}

/* NT tokens from t0 against the sixteen rows of the group at g; y[u] gets
 * token t0 + u's outputs. */
AI void tile(int NT, const struct strata_mm_args *a, const uint8_t *g, int64_t t0,
	     __m512 y[TT])
{
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	const __m512i lut = _mm512_xor_si512(_mm512_broadcast_i32x4(
		_mm_loadu_si128((const __m128i *)strata_iq4nl_values)), _mm512_set1_epi8((char)0x80));
	const int64_t k = a->k, nb = k / QK;
	const int pf = t0 == 0;
	const int8_t *xq[TT];
	const float *xd[TT];
	const int32_t *xs[TT];

	UNROLL for (int u = 0; u < NT; u++) {
		const uint8_t *row = a->x + (t0 + u) * a->x_stride;

		xq[u] = STRATA_Q8_0X_QS(row, k);
		xd[u] = STRATA_Q8_0X_D(row, k);
		xs[u] = STRATA_Q8_0X_BSUM(row, k);
		y[u] = _mm512_setzero_ps();
	}
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *q = g + strata_iq4nl_r16_q_off(b);
		__m512i s[TT];
		__m512 d;

		if (pf)
			strata_iq4nl_r16_prefetch(g, b, PF_DIST);
		UNROLL for (int u = 0; u < NT; u++)
			s[u] = _mm512_set1_epi32(xs[u][b]);
		UNROLL for (int c = 0; c < 4; c++) {
			const __m512i v = _mm512_loadu_si512(q + 64 * c);
			const __m512i ul = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m4));
			const __m512i uh = _mm512_shuffle_epi8(lut, _mm512_and_si512(
				_mm512_srli_epi16(v, 4), m4));

			UNROLL for (int u = 0; u < NT; u++) {
				const int8_t *x = xq[u] + b * QK + 4 * c;

				s[u] = _mm512_dpbusd_epi32(s[u], ul, bcast32(x));
				s[u] = _mm512_dpbusd_epi32(s[u], uh, bcast32(x + 16));
			}
		}
		d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(g + strata_iq4nl_r16_d_off(b))));
		UNROLL for (int u = 0; u < NT; u++)
			y[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[u]),
					       _mm512_mul_ps(d, _mm512_set1_ps(xd[u][b])), y[u]);
	}
}

#define DEF_TILE(nt)                                                                  \
	static void tile_##nt(const struct strata_mm_args *a, const uint8_t *g, int64_t t0, \
			      __m512 y[TT])                                           \
	{                                                                             \
		tile(nt, a, g, t0, y);                                                \
	}
DEF_TILE(1)
DEF_TILE(2)
DEF_TILE(3)
DEF_TILE(4)
DEF_TILE(5)
DEF_TILE(6)
DEF_TILE(7)
DEF_TILE(8)

typedef void (*tile_fn)(const struct strata_mm_args *, const uint8_t *, int64_t, __m512[TT]);

/* Whole groups: a->nr is a multiple of 16, a->w a group's start. */
void strata_iq4_nl_r16_mm_avx512(const struct strata_mm_args *a)
{
	static tile_fn const tiles[TT] = { tile_1, tile_2, tile_3, tile_4,
					   tile_5, tile_6, tile_7, tile_8 };

	for (int64_t r = 0; r < a->nr; r += STRATA_IQ4NL_R16_ROWS) {
		const uint8_t *g = a->w + r * a->w_stride;
		__m512 y[TT];

		for (int64_t t = 0; t < a->nt; t += TT) {
			const int nt = a->nt - t < TT ? (int)(a->nt - t) : TT;

			tiles[nt - 1](a, g, t, y);
			for (int u = 0; u < nt; u++)
				_mm512_storeu_ps(a->y + (t + u) * a->ldy + r, y[u]);
		}
	}
}

#endif
