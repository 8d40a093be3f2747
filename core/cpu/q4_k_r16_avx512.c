/*
 * q4_k_r16_avx512.c - Q4_K weights repacked at load (q4_k_r16.h) x Q8_K
 * activations at the AVX-512 level, any number of tokens (built with the
 * AVX-512 + VNNI flags).
 *
 * Per 64-byte vector (four values of sixteen rows in each nibble): one AND
 * keeps the low nibbles, one the high ones in place (x16), and per token
 * one vpdpbusd each against the token's four matching bytes, broadcast,
 * sums them into the row's int32 lane.  A sub-block's eight vectors make
 * its exact dot per row (high nibbles: shifted back by 4 once, exactly, as
 * every term is a multiple of 16), and vpmulld applies the row's scale.
 * So a token costs two multiplier instructions per 64 bytes of weights,
 * and decode streams each group once, sequentially.  Float order: the one
 * q4_k_r16.h gives for every level.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "q4_k_r16.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define TT 8 /* tokens per tile */
#define QK STRATA_QK_K
#define SB STRATA_Q4K_R16_SB
#ifndef PF_DIST
#define PF_DIST 4608 /* decode's prefetch distance, bytes */
#endif

/* Pins v to a register here: left free, GCC computes a column's products
 * for every token first and spills them. */
#define KEEP(v) __asm__ volatile("" : "+v"(v))

/* A super-block's scales and mins for sixteen rows, as the tile uses them. */
struct sb_sc {
	__m512i sc[8]; /* int32 per row: sub-block j's scale */
	__m512i mn[4]; /* int16 pairs per row: (m_2p, m_2p+1) */
	__m512 d, dmin;
};

/* 16 bytes (one per row) as int32. */
AI __m512i bytes32(const uint8_t *p)
{
	return _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)p));
}

/* Planes at a and b (16 bytes each, one per row) as int16 pairs per row. */
AI __m512i pairs16(const uint8_t *a, const uint8_t *b)
{
	const __m128i x = _mm_load_si128((const __m128i *)a), y = _mm_load_si128((const __m128i *)b);

	return _mm512_cvtepu8_epi16(_mm256_inserti128_si256(
		_mm256_castsi128_si256(_mm_unpacklo_epi8(x, y)), _mm_unpackhi_epi8(x, y), 1));
}

AI void decode_sc(const uint8_t *sb, struct sb_sc *o)
{
	/* planes 0..3, 4..7, 8..11: GGUF's get_scale_min_k4 on sixteen rows,
	 * through memory (lane extracts need constant lanes under clang) */
	const __m512i A = _mm512_load_si512(sb + STRATA_Q4K_R16_SC);
	const __m512i B = _mm512_load_si512(sb + STRATA_Q4K_R16_SC + 64);
	const __m512i C = _mm512_load_si512(sb + STRATA_Q4K_R16_SC + 128);
	const __m512i m63 = _mm512_set1_epi8(63), m15 = _mm512_set1_epi8(15);
	const __m512i m48 = _mm512_set1_epi8(48);
	_Alignas(64) uint8_t sc[2][64], m[2][64];

	_mm512_store_si512(sc[0], _mm512_and_si512(A, m63));
	_mm512_store_si512(m[0], _mm512_and_si512(B, m63));
	_mm512_store_si512(sc[1], _mm512_or_si512(_mm512_and_si512(C, m15),
						  _mm512_and_si512(_mm512_srli_epi16(A, 2), m48)));
	_mm512_store_si512(m[1], _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(C, 4), m15),
						 _mm512_and_si512(_mm512_srli_epi16(B, 2), m48)));
	UNROLL for (int j = 0; j < 4; j++) {
		o->sc[j] = bytes32(sc[0] + 16 * j);
		o->sc[j + 4] = bytes32(sc[1] + 16 * j);
	}
	o->mn[0] = pairs16(m[0], m[0] + 16);
	o->mn[1] = pairs16(m[0] + 32, m[0] + 48);
	o->mn[2] = pairs16(m[1], m[1] + 16);
	o->mn[3] = pairs16(m[1] + 32, m[1] + 48);
	o->d = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)sb));
	o->dmin = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(sb + 32)));
}

AI __m512i bcast32(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm512_set1_epi32(v);
}

/*
 * NT tokens from t0 against the group at g (all its super-blocks): y[u]
 * gets the sixteen rows' outputs of token t0 + u.
 */
AI void tile(int NT, const struct strata_mm_args *a, const uint8_t *g, int64_t t0, __m512 y[TT])
{
	const __m512i m_lo = _mm512_set1_epi8(0x0f), m_hi = _mm512_set1_epi8((char)0xf0);
	const int64_t k = a->k, nb = k / QK;
	/* the first tile over the group reads it from memory: prefetch */
	const int pf = t0 == 0;
	const uint8_t *x[TT];

	UNROLL for (int u = 0; u < NT; u++) {
		x[u] = a->x + (t0 + u) * a->x_stride;
		y[u] = _mm512_setzero_ps();
	}
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *sb = g + b * SB;
		struct sb_sc s;
		__m512i is[TT];

		if (pf)
			UNROLL for (int l = 0; l < STRATA_Q4K_R16_QS; l += 64)
				_mm_prefetch((const char *)sb + PF_DIST + l, _MM_HINT_T0);
		decode_sc(sb, &s);
		UNROLL for (int u = 0; u < NT; u++)
			is[u] = _mm512_setzero_si512();
		for (int h = 0; h < 4; h++) {
			const uint8_t *q = sb + STRATA_Q4K_R16_QS + 512 * h;
			__m512i lo[TT], hi[TT];

			UNROLL for (int u = 0; u < NT; u++)
				lo[u] = hi[u] = _mm512_setzero_si512();
			UNROLL for (int c = 0; c < 8; c++) {
				if (pf)
					_mm_prefetch((const char *)q + PF_DIST + 64 * c, _MM_HINT_T0);
				const __m512i v = _mm512_load_si512(q + 64 * c);
				const __m512i wl = _mm512_and_si512(v, m_lo), wh = _mm512_and_si512(v, m_hi);

				UNROLL for (int u = 0; u < NT; u++) {
					const int8_t *xq = STRATA_Q8K_QS(x[u]) + b * QK + 64 * h + 4 * c;

					lo[u] = _mm512_dpbusd_epi32(lo[u], wl, bcast32(xq));
					hi[u] = _mm512_dpbusd_epi32(hi[u], wh, bcast32(xq + 32));
					KEEP(lo[u]);
					KEEP(hi[u]);
				}
			}
			UNROLL for (int u = 0; u < NT; u++)
				is[u] = _mm512_add_epi32(is[u], _mm512_add_epi32(
					_mm512_mullo_epi32(lo[u], s.sc[2 * h]),
					_mm512_mullo_epi32(_mm512_srai_epi32(hi[u], 4), s.sc[2 * h + 1])));
		}
		UNROLL for (int u = 0; u < NT; u++) {
			const __m256i bs = _mm256_loadu_si256(
				(const __m256i *)(STRATA_Q8K_BSUMS(x[u], k) + 16 * b));
			/* the activations' 32-value sums, in pairs per dword */
			int32_t s32[4];
			const __m512 dx = _mm512_set1_ps(STRATA_Q8K_D(x[u], k)[b]);
			__m512i im = _mm512_setzero_si512();

			_mm_storeu_si128((__m128i *)s32, _mm_hadd_epi16(_mm256_castsi256_si128(bs),
									_mm256_extracti128_si256(bs, 1)));
			UNROLL for (int p = 0; p < 4; p++)
				im = _mm512_dpwssd_epi32(im, s.mn[p], _mm512_set1_epi32(s32[p]));
			y[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[u]), _mm512_mul_ps(s.d, dx), y[u]);
			y[u] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(im), _mm512_mul_ps(s.dmin, dx), y[u]);
		}
	}
}

#define DEF_TILE(nt)                                                                   \
	static void tile_##nt(const struct strata_mm_args *a, const uint8_t *g, int64_t t0, \
			      __m512 y[TT])                                             \
	{                                                                              \
		tile(nt, a, g, t0, y);                                                 \
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
void strata_q4_k_r16_mm_avx512(const struct strata_mm_args *a)
{
	static tile_fn const tiles[TT] = { tile_1, tile_2, tile_3, tile_4,
					   tile_5, tile_6, tile_7, tile_8 };

	for (int64_t r = 0; r < a->nr; r += STRATA_Q4K_R16_ROWS) {
		const uint8_t *g = a->w + r * a->w_stride;

		for (int64_t t = 0; t < a->nt; t += TT) {
			const int nt = a->nt - t < TT ? (int)(a->nt - t) : TT;
			__m512 y[TT];

			tiles[nt - 1](a, g, t, y);
			for (int u = 0; u < nt; u++)
				_mm512_storeu_ps(a->y + (t + u) * a->ldy + r, y[u]);
		}
	}
}

#endif
