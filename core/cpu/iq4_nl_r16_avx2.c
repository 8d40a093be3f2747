/*
 * iq4_nl_r16_avx2.c - IQ4_NL weights repacked at load (iq4_nl_r16.h) x
 * Q8_0 activations at the AVX2 level, any number of tokens (built with
 * -mavx2 -mfma -mf16c).
 *
 * Each 32-byte half of a chunk is four values of eight rows in each
 * nibble.  The nibbles are split and looked up once per half (vpshufb into
 * the 16 values and into their magnitudes), and every token then costs,
 * per nibble half, a vpsignb of its four matching bytes (broadcast) by the
 * values, one vpmaddubsw on the magnitudes (|w| <= 127, |x| <= 127: no
 * saturation) and one vpmaddwd into the eight rows' int32 sums.  One token
 * reads both halves in one pass (decode streams the group sequentially);
 * more take one half at a time, four tokens per tile.  Float order: the
 * one iq4_nl_r16.h gives for every level.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "iq4_nl_r16.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define TT 4 /* tokens per tile */
#define QK 32
#define PF_DIST 2304 /* decode's prefetch distance: four pairs of blocks */

/* Pins v to a register here: left free, GCC computes a column's products
 * for every token first and spills them. */
#define KEEP(v) __asm__ volatile("" : "+x"(v))

AI __m256i bcast32(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/* The int32 sums of w (signed values, |w| the magnitudes) times x, in pairs. */
AI __m256i dot(__m256i s, __m256i w, __m256i aw, __m256i x)
{
	return _mm256_add_epi32(s, _mm256_madd_epi16(
		_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w)), _mm256_set1_epi16(1)));
}

/*
 * NT tokens from t0 against halves [h0, h0 + NH) of the group at g (all its
 * blocks); NT x NH <= 4.  y[u][hh] gets the eight rows' outputs of token
 * t0 + u, half h0 + hh.
 */
AI void tile(int NT, int NH, const struct strata_mm_args *a, const uint8_t *g, int h0,
	     int64_t t0, __m256 y[TT][2])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const __m256i lut = _mm256_broadcastsi128_si256(
		_mm_loadu_si128((const __m128i *)strata_iq4nl_values));
	const __m256i alut = _mm256_abs_epi8(lut);
	const int64_t k = a->k, nb = k / QK;
	/* the first pass over the group reads it from memory: prefetch */
	const int pf = t0 == 0 && h0 == 0;
	const int8_t *xq[TT];
	const float *xd[TT];

	UNROLL for (int u = 0; u < NT; u++) {
		xq[u] = (const int8_t *)(a->x + (t0 + u) * a->x_stride);
		xd[u] = (const float *)(xq[u] + k);
		UNROLL for (int hh = 0; hh < NH; hh++)
			y[u][hh] = _mm256_setzero_ps();
	}
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *q = g + strata_iq4nl_r16_q_off(b) + 32 * h0;
		__m256i s[TT][2];

		if (pf)
			strata_iq4nl_r16_prefetch(g, b, PF_DIST);
		UNROLL for (int u = 0; u < NT; u++)
			UNROLL for (int hh = 0; hh < NH; hh++)
				s[u][hh] = _mm256_setzero_si256();
		UNROLL for (int c = 0; c < 4; c++) {
			UNROLL for (int hh = 0; hh < NH; hh++) {
				const __m256i v = _mm256_loadu_si256((const __m256i *)(q + 64 * c + 32 * hh));
				const __m256i nl = _mm256_and_si256(v, m4);
				const __m256i nh = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
				const __m256i wl = _mm256_shuffle_epi8(lut, nl);
				const __m256i al = _mm256_shuffle_epi8(alut, nl);
				const __m256i wh = _mm256_shuffle_epi8(lut, nh);
				const __m256i ah = _mm256_shuffle_epi8(alut, nh);

				UNROLL for (int u = 0; u < NT; u++) {
					const int8_t *x = xq[u] + b * QK + 4 * c;

					s[u][hh] = dot(s[u][hh], wl, al, bcast32(x));
					s[u][hh] = dot(s[u][hh], wh, ah, bcast32(x + 16));
					KEEP(s[u][hh]);
				}
			}
		}
		UNROLL for (int hh = 0; hh < NH; hh++) {
			const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(
				g + strata_iq4nl_r16_d_off(b) + 16 * (h0 + hh))));

			UNROLL for (int u = 0; u < NT; u++)
				y[u][hh] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[u][hh]),
							   _mm256_mul_ps(d, _mm256_set1_ps(xd[u][b])),
							   y[u][hh]);
		}
	}
}

#define DEF_TILE(nt, nh)                                                              \
	static void tile_##nt##x##nh(const struct strata_mm_args *a, const uint8_t *g, \
				     int h0, int64_t t0, __m256 y[TT][2])               \
	{                                                                             \
		tile(nt, nh, a, g, h0, t0, y);                                        \
	}
DEF_TILE(1, 2)
DEF_TILE(1, 1)
DEF_TILE(2, 1)
DEF_TILE(3, 1)
DEF_TILE(4, 1)

typedef void (*tile_fn)(const struct strata_mm_args *, const uint8_t *, int, int64_t,
			__m256[TT][2]);

/* Whole groups: a->nr is a multiple of 16, a->w a group's start.  The
 * activation row: qs[k] int8, then d[k/32] float. */
void strata_iq4_nl_r16_mm_avx2(const struct strata_mm_args *a)
{
	static tile_fn const tiles[TT] = { tile_1x1, tile_2x1, tile_3x1, tile_4x1 };

	for (int64_t r = 0; r < a->nr; r += STRATA_IQ4NL_R16_ROWS) {
		const uint8_t *g = a->w + r * a->w_stride;
		__m256 y[TT][2];

		if (a->nt == 1) {
			tile_1x2(a, g, 0, 0, y);
			_mm256_storeu_ps(a->y + r, y[0][0]);
			_mm256_storeu_ps(a->y + r + 8, y[0][1]);
			continue;
		}
		for (int hf = 0; hf < 2; hf++)
			for (int64_t t = 0; t < a->nt; t += TT) {
				const int nt = a->nt - t < TT ? (int)(a->nt - t) : TT;

				tiles[nt - 1](a, g, hf, t, y);
				for (int u = 0; u < nt; u++)
					_mm256_storeu_ps(a->y + (t + u) * a->ldy + r + 8 * hf, y[u][0]);
			}
	}
}

#endif
