/*
 * quants_k_r8_repack.h - private: Q4_K and Q6_K super-blocks of eight rows
 * repacked for the row-interleaved kernels (quants_k_r8_avx2.c, eight rows
 * per vector; quants_k_r16_avx512.c, two such groups per vector).  Included
 * only by files built with at least -mavx2 -mf16c.
 */
#ifndef STRATA_QUANTS_K_R8_REPACK_H
#define STRATA_QUANTS_K_R8_REPACK_H

#include <string.h>
#include <immintrin.h>

#include "quants.h"
#include "quants_k_x86.h"
#include "r8_x86.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define GR 8  /* rows per group */

/* One super-block of eight rows, repacked.  Q4_K: q[j][c] is values
 * 32j + 4c .. +3 (j < 8); Q6_K: q[j][c] is values 16j + 4c .. +3 stored at
 * [j / 2][4 (j % 2) + c]. */
struct k8_blk {
	__m256i q[8][8];
	__m256i sc[16];  /* int16 (sc, sc) per row: Q4_K 8 sub-blocks, Q6_K 16 */
	__m256i mn[8];   /* int16 pairs per row: Q4_K (m_2p, m_2p+1) x 4;
			  * Q6_K (-32 sc_2p, -32 sc_2p+1) x 8 */
	float d[GR], dmin[GR];
};

/* 8 rows x 16 bytes -> c[i]: byte 2i of rows 0..7, then byte 2i+1. */
AI void transpose_8x16(__m128i r[8], __m128i c[8])
{
	__m128i a[8], b[8];

	UNROLL for (int i = 0; i < 4; i++) {
		a[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
		a[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
	}
	UNROLL for (int h = 0; h < 2; h++) {
		b[4 * h + 0] = _mm_unpacklo_epi16(a[4 * h + 0], a[4 * h + 2]);
		b[4 * h + 1] = _mm_unpackhi_epi16(a[4 * h + 0], a[4 * h + 2]);
		b[4 * h + 2] = _mm_unpacklo_epi16(a[4 * h + 1], a[4 * h + 3]);
		b[4 * h + 3] = _mm_unpackhi_epi16(a[4 * h + 1], a[4 * h + 3]);
	}
	UNROLL for (int i = 0; i < 4; i++) {
		c[2 * i] = _mm_unpacklo_epi32(b[i], b[4 + i]);
		c[2 * i + 1] = _mm_unpackhi_epi32(b[i], b[4 + i]);
	}
}

/* Byte column i (0..15) of the transposed scales, each row's byte twice,
 * as int16: lanes 2r, 2r+1 = row r. */
AI __m256i col_pairs(const __m128i c[8], int i, int sign)
{
	__m128i v = c[i / 2];

	if (i % 2)
		v = _mm_srli_si128(v, 8);
	v = _mm_unpacklo_epi8(v, v);
	return sign ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

/* Columns i and i + 1 (i even) interleaved per row: lanes 2r, 2r+1 =
 * (col i, col i+1) of row r, as int16. */
AI __m256i col_interleave(const __m128i c[8], int i, int sign)
{
	__m128i v = _mm_unpacklo_epi8(c[i / 2], _mm_srli_si128(c[i / 2], 8));

	return sign ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

AI void load_dd(const uint8_t *const w[GR], size_t off, float out[GR])
{
	uint16_t h[GR];

	UNROLL for (int j = 0; j < GR; j++)
		memcpy(&h[j], w[j] + off, 2);
	_mm256_store_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)));
}

/* Super-block b of the group's Q4_K rows into o. */
static inline void repack_q4k(const uint8_t *const w[GR], int64_t b, struct k8_blk *o)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const uint8_t *p[GR];
	__m128i s[GR], c[8];

	UNROLL for (int j = 0; j < GR; j++) {
		p[j] = w[j] + b * STRATA_Q4_K_BYTES;
		s[j] = strata_q4k_scales(p[j] + 4);
	}
	load_dd(p, 0, o->d);
	load_dd(p, 2, o->dmin);
	transpose_8x16(s, c);
	UNROLL for (int j = 0; j < 8; j++)
		o->sc[j] = col_pairs(c, j, 0);
	UNROLL for (int q = 0; q < 4; q++)
		o->mn[q] = col_interleave(c, 8 + 2 * q, 0);
	/* qs bytes 32 h .. 32 h + 31: low nibbles sub-block 2h, high 2h + 1 */
	UNROLL for (int h = 0; h < 4; h++) {
		__m256i r[GR];

		UNROLL for (int j = 0; j < GR; j++)
			r[j] = _mm256_loadu_si256((const __m256i *)(p[j] + 16 + 32 * h));
		strata_r8_transpose(r);
		UNROLL for (int c4 = 0; c4 < 8; c4++) {
			o->q[2 * h][c4] = _mm256_and_si256(r[c4], m4);
			o->q[2 * h + 1][c4] = _mm256_and_si256(_mm256_srli_epi16(r[c4], 4), m4);
		}
	}
}

/* Super-block b of the group's Q6_K rows into o. */
static inline void repack_q6k(const uint8_t *const w[GR], int64_t b, struct k8_blk *o)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);
	const uint8_t *p[GR];
	__m128i s[GR], c[8];

	UNROLL for (int j = 0; j < GR; j++) {
		p[j] = w[j] + b * STRATA_Q6_K_BYTES;
		s[j] = _mm_loadu_si128((const __m128i *)(p[j] + 192));
	}
	load_dd(p, 208, o->d);
	transpose_8x16(s, c);
	UNROLL for (int j = 0; j < 16; j++)
		o->sc[j] = col_pairs(c, j, 1);
	UNROLL for (int q = 0; q < 8; q++)
		o->mn[q] = _mm256_mullo_epi16(col_interleave(c, 2 * q, 1), _mm256_set1_epi16(-32));
	/*
	 * Values 128 n + 32 qt + i (n < 2, qt < 4, i < 32): low 4 bits from
	 * ql[64 n + 32 (qt % 2) + i] >> 4 (qt / 2), high 2 from
	 * qh[32 n + i] >> 2 qt.  That is 32 values = sub-blocks 2 (4 n + qt)
	 * and 2 (4 n + qt) + 1.
	 */
	UNROLL for (int n = 0; n < 2; n++) {
		__m256i h[GR], l0[GR], l1[GR];

		UNROLL for (int j = 0; j < GR; j++) {
			l0[j] = _mm256_loadu_si256((const __m256i *)(p[j] + 64 * n));
			l1[j] = _mm256_loadu_si256((const __m256i *)(p[j] + 64 * n + 32));
			h[j] = _mm256_loadu_si256((const __m256i *)(p[j] + 128 + 32 * n));
		}
		strata_r8_transpose(l0);
		strata_r8_transpose(l1);
		strata_r8_transpose(h);
		UNROLL for (int qt = 0; qt < 4; qt++) {
			const int g = 4 * n + qt; /* 32-value group: q[g][..] */

			UNROLL for (int c4 = 0; c4 < 8; c4++) {
				__m256i l = qt % 2 ? l1[c4] : l0[c4];

				o->q[g][c4] = _mm256_or_si256(
					_mm256_and_si256(_mm256_srli_epi16(l, 4 * (qt / 2)), m4),
					_mm256_slli_epi16(_mm256_and_si256(
						_mm256_srli_epi16(h[c4], 2 * qt), m2), 4));
			}
		}
	}
}

#endif
