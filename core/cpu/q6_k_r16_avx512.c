/*
 * q6_k_r16_avx512.c - Q6_K weights repacked at load (q6_k_r16.h) x Q8_K
 * activations at the AVX-512 level, any number of tokens (built with the
 * AVX-512 + VNNI flags).
 *
 * Per column, a 64-byte vector of plane 0 or 1 and the one of plane 2 make
 * two vectors of 6-bit values (q6_k_r16.h: four of sixteen rows each,
 * unsigned); per token
 * one vpdpbusd each against the token's four matching bytes, broadcast,
 * sums them into the row's int32 lane.  A 16-value sub-block takes four
 * columns, and vpmulld applies its scale; the -32 offset comes in through
 * the activations' 16-value sums (vpdpwssd).  Float order: the one
 * q6_k_r16.h gives for every level.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "q6_k_r16.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define TT 8 /* tokens per tile */
#define QK STRATA_QK_K
#define SB STRATA_Q6K_R16_SB
#define PF_DIST 6720 /* a first pass's prefetch distance: two super-blocks */

/* Pins v to a register here: left free, GCC computes a column's products
 * for every token first and spills them. */
#define KEEP(v) __asm__ volatile("" : "+v"(v))

/* A super-block's scales for sixteen rows. */
struct sb_sc {
	__m512i sc[16]; /* int32 per row: sub-block j's scale */
	__m512i mn[8];  /* int16 pairs per row: (-32 sc_2p, -32 sc_2p+1) */
	__m512 d;
};

AI void decode_sc(const uint8_t *sb, struct sb_sc *o)
{
	const uint8_t *p = sb + STRATA_Q6K_R16_SC;

	UNROLL for (int j = 0; j < 16; j++)
		o->sc[j] = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(p + 16 * j)));
	UNROLL for (int q = 0; q < 8; q++) {
		const __m128i a = _mm_load_si128((const __m128i *)(p + 32 * q));
		const __m128i b = _mm_load_si128((const __m128i *)(p + 32 * q + 16));
		const __m512i v = _mm512_cvtepi8_epi16(_mm256_inserti128_si256(
			_mm256_castsi128_si256(_mm_unpacklo_epi8(a, b)), _mm_unpackhi_epi8(a, b), 1));

		o->mn[q] = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(v, 5));
	}
	o->d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(sb + STRATA_Q6K_R16_D)));
}

AI __m512i bcast32(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm512_set1_epi32(v);
}

/* v_ps and v_{ps+2} of a column out of planes ps and 2 (q6_k_r16.h). */
AI void unpack(__m512i bp, __m512i b2, int ps, __m512i *vl, __m512i *vh)
{
	*vl = _mm512_and_si512(bp, _mm512_set1_epi8(0x3f));
	/* bits 0-3 from b2 (shifted for ps 1), 4-5 from bp's top two: one vpternlogd */
	*vh = _mm512_ternarylogic_epi32(ps ? _mm512_srli_epi16(b2, 4) : b2,
					_mm512_srli_epi16(bp, 2), _mm512_set1_epi8(0x0f),
					0xe4);
	*vh = _mm512_and_si512(*vh, _mm512_set1_epi8(0x3f));
}

/*
 * NT tokens from t0 against the group at g (all its super-blocks): y[u]
 * gets the sixteen rows' outputs of token t0 + u.
 */
AI void tile(int NT, const struct strata_mm_args *a, const uint8_t *g, int64_t t0, __m512 y[TT])
{
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
			for (int l = STRATA_Q6K_R16_SC; l < SB; l += 64)
				_mm_prefetch((const char *)sb + PF_DIST + l, _MM_HINT_T0);
		decode_sc(sb, &s);
		UNROLL for (int u = 0; u < NT; u++) {
			const int16_t *bs = STRATA_Q8K_BSUMS(x[u], k) + 16 * b;

			is[u] = _mm512_setzero_si512();
			UNROLL for (int p = 0; p < 8; p++) {
				int32_t v;

				memcpy(&v, bs + 2 * p, 4);
				is[u] = _mm512_dpwssd_epi32(is[u], s.mn[p], _mm512_set1_epi32(v));
			}
		}
		for (int n = 0; n < 2; n++)
			for (int cb = 0; cb < 2; cb++) /* columns 4 cb .. 4 cb + 3 */
				UNROLL for (int ps = 0; ps < 2; ps++) {
					/* plane ps: qq = ps; with plane 2, qq = ps + 2 */
					const uint8_t *col = sb + STRATA_Q6K_R16_HALF * n;
					__m512i lo[TT], hi[TT];

					UNROLL for (int u = 0; u < NT; u++)
						lo[u] = hi[u] = _mm512_setzero_si512();
					UNROLL for (int c = 4 * cb; c < 4 * cb + 4; c++) {
						const uint8_t *cp3 = col + STRATA_Q6K_R16_COL * c;
						__m512i vl, vh;

						unpack(_mm512_loadu_si512(cp3 + 64 * ps), _mm512_loadu_si512(cp3 + 128),
						       ps, &vl, &vh);
						if (pf && !ps)
							for (int l = 0; l < STRATA_Q6K_R16_COL; l += 64)
								_mm_prefetch((const char *)cp3 + PF_DIST + l, _MM_HINT_T0);
						UNROLL for (int u = 0; u < NT; u++) {
							const int8_t *xq = STRATA_Q8K_QS(x[u]) + b * QK +
									   128 * n + 32 * ps + 4 * c;

							lo[u] = _mm512_dpbusd_epi32(lo[u], vl, bcast32(xq));
							hi[u] = _mm512_dpbusd_epi32(hi[u], vh, bcast32(xq + 64));
							KEEP(lo[u]);
							KEEP(hi[u]);
						}
					}
					UNROLL for (int u = 0; u < NT; u++)
						is[u] = _mm512_add_epi32(is[u], _mm512_add_epi32(
							_mm512_mullo_epi32(lo[u], s.sc[8 * n + 2 * ps + cb]),
							_mm512_mullo_epi32(hi[u], s.sc[8 * n + 2 * (ps + 2) + cb])));
				}
		UNROLL for (int u = 0; u < NT; u++)
			y[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[u]),
					       _mm512_mul_ps(s.d, _mm512_set1_ps(STRATA_Q8K_D(x[u], k)[b])),
					       y[u]);
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
void strata_q6_k_r16_mm_avx512(const struct strata_mm_args *a)
{
	static tile_fn const tiles[TT] = { tile_1, tile_2, tile_3, tile_4,
					   tile_5, tile_6, tile_7, tile_8 };

	for (int64_t r = 0; r < a->nr; r += STRATA_Q6K_R16_ROWS) {
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
