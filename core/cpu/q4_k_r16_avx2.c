/*
 * q4_k_r16_avx2.c - Q4_K weights repacked at load (q4_k_r16.h) x Q8_K
 * activations at the AVX2 level, any number of tokens (built with -mavx2
 * -mfma -mf16c).
 *
 * Each 32-byte half of a 64-byte vector is four values of eight rows in
 * each nibble.  The nibbles are split once per half (AND, shift + AND) and
 * every token then costs one vpmaddubsw per nibble half against its four
 * matching bytes, broadcast; the pair sums stay in int16 over a whole
 * 32-value sub-block (8 x 2 x 15 x 127 fits) and one vpmaddwd applies the
 * row's scale.  One token reads both halves in one pass (decode streams the
 * group sequentially); more take one half at a time, four tokens per tile.
 * Float order: the one q4_k_r16.h gives for every level.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "q4_k_r16.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define TT 4 /* tokens per tile */
#define QK STRATA_QK_K
#define SB STRATA_Q4K_R16_SB
#ifndef PF_DIST
#define PF_DIST 4608 /* decode's prefetch distance, bytes */
#endif

/* Pins v to a register here: left free, GCC computes a column's products
 * for every token first and spills them. */
#define KEEP(v) __asm__ volatile("" : "+x"(v))

/* A super-block's scales and mins for sixteen rows, one byte per row:
 * sc[j] at byte 16 j, m[j] at 128 + 16 j. */
struct sb_sc {
	_Alignas(32) uint8_t b[256];
};

AI void decode_sc(const uint8_t *sb, struct sb_sc *o)
{
	const uint8_t *p = sb + STRATA_Q4K_R16_SC;
	const __m256i m63 = _mm256_set1_epi8(63), m15 = _mm256_set1_epi8(15);
	const __m256i m48 = _mm256_set1_epi8(48);

	/* GGUF's get_scale_min_k4 on sixteen rows, two scale bytes at a time */
	UNROLL for (int j = 0; j < 2; j++) {
		const __m256i A = _mm256_load_si256((const __m256i *)(p + 32 * j));
		const __m256i B = _mm256_load_si256((const __m256i *)(p + 64 + 32 * j));
		const __m256i C = _mm256_load_si256((const __m256i *)(p + 128 + 32 * j));

		_mm256_store_si256((__m256i *)(o->b + 32 * j), _mm256_and_si256(A, m63));
		_mm256_store_si256((__m256i *)(o->b + 128 + 32 * j), _mm256_and_si256(B, m63));
		_mm256_store_si256((__m256i *)(o->b + 64 + 32 * j),
				   _mm256_or_si256(_mm256_and_si256(C, m15),
						   _mm256_and_si256(_mm256_srli_epi16(A, 2), m48)));
		_mm256_store_si256((__m256i *)(o->b + 192 + 32 * j),
				   _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(C, 4), m15),
						   _mm256_and_si256(_mm256_srli_epi16(B, 2), m48)));
	}
}

AI __m128i sc_bytes(const struct sb_sc *s, int j)
{
	return _mm_load_si128((const __m128i *)(s->b + 16 * j));
}

/* Rows 8 hf .. 8 hf + 7 of a and b, interleaved, as int16. */
AI __m256i pairs(__m128i a, __m128i b, int hf)
{
	return _mm256_cvtepu8_epi16(hf ? _mm_unpackhi_epi8(a, b) : _mm_unpacklo_epi8(a, b));
}

/* Scale j of rows 8 hf .. 8 hf + 7, each twice, as int16: one byte shuffle
 * of the sixteen rows' bytes in both lanes. */
AI __m256i sc_pairs(const struct sb_sc *s, int j, int hf)
{
	const __m256i ctl = hf ? _mm256_setr_epi8(8, -1, 8, -1, 9, -1, 9, -1, 10, -1, 10, -1, 11, -1,
						  11, -1, 12, -1, 12, -1, 13, -1, 13, -1, 14, -1, 14,
						  -1, 15, -1, 15, -1)
			       : _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3,
						  -1, 4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1,
						  7, -1);

	return _mm256_shuffle_epi8(
		_mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)(s->b + 16 * j))), ctl);
}

AI __m256i bcast32(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/*
 * NT tokens from t0 against halves [h0, h0 + NH) of the group at g (all its
 * super-blocks); NT x NH <= 4.  y[u][hh] gets the eight rows' outputs of
 * token t0 + u, half h0 + hh.
 */
AI void tile(int NT, int NH, const struct strata_mm_args *a, const uint8_t *g, int h0,
	     int64_t t0, __m256 y[TT][2])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const int64_t k = a->k, nb = k / QK;
	/* the first pass over the group reads it from memory: prefetch */
	const int pf = t0 == 0 && h0 == 0;
	const uint8_t *x[TT];

	UNROLL for (int u = 0; u < NT; u++) {
		x[u] = a->x + (t0 + u) * a->x_stride;
		UNROLL for (int hh = 0; hh < NH; hh++)
			y[u][hh] = _mm256_setzero_ps();
	}
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *sb = g + b * SB;
		struct sb_sc s;
		__m256i is[TT][2];

		if (pf)
			UNROLL for (int l = 0; l < STRATA_Q4K_R16_QS; l += 64)
				_mm_prefetch((const char *)sb + PF_DIST + l, _MM_HINT_T0);
		decode_sc(sb, &s);
		UNROLL for (int u = 0; u < NT; u++)
			UNROLL for (int hh = 0; hh < NH; hh++)
				is[u][hh] = _mm256_setzero_si256();
		for (int h = 0; h < 4; h++) {
			const uint8_t *q = sb + STRATA_Q4K_R16_QS + 512 * h + 32 * h0;
			__m256i lo[TT][2], hi[TT][2];

			UNROLL for (int u = 0; u < NT; u++)
				UNROLL for (int hh = 0; hh < NH; hh++)
					lo[u][hh] = hi[u][hh] = _mm256_setzero_si256();
			UNROLL for (int c = 0; c < 8; c++) {
				if (pf)
					_mm_prefetch((const char *)q + PF_DIST + 64 * c, _MM_HINT_T0);
				UNROLL for (int hh = 0; hh < NH; hh++) {
					const __m256i v = _mm256_load_si256((const __m256i *)(q + 64 * c + 32 * hh));
					const __m256i wl = _mm256_and_si256(v, m4);
					const __m256i wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);

					UNROLL for (int u = 0; u < NT; u++) {
						const int8_t *xq = STRATA_Q8K_QS(x[u]) + b * QK + 64 * h + 4 * c;

						lo[u][hh] = _mm256_add_epi16(lo[u][hh],
							_mm256_maddubs_epi16(wl, bcast32(xq)));
						hi[u][hh] = _mm256_add_epi16(hi[u][hh],
							_mm256_maddubs_epi16(wh, bcast32(xq + 32)));
						KEEP(lo[u][hh]);
						KEEP(hi[u][hh]);
					}
				}
			}
			UNROLL for (int hh = 0; hh < NH; hh++) {
				const int hf = h0 + hh;
				const __m256i sl = sc_pairs(&s, 2 * h, hf);
				const __m256i sh = sc_pairs(&s, 2 * h + 1, hf);

				UNROLL for (int u = 0; u < NT; u++)
					is[u][hh] = _mm256_add_epi32(is[u][hh], _mm256_add_epi32(
						_mm256_madd_epi16(lo[u][hh], sl),
						_mm256_madd_epi16(hi[u][hh], sh)));
			}
		}
		UNROLL for (int hh = 0; hh < NH; hh++) {
			const int hf = h0 + hh;
			const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sb + 16 * hf)));
			const __m256 dmin = _mm256_cvtph_ps(
				_mm_loadu_si128((const __m128i *)(sb + 32 + 16 * hf)));
			__m256i mn[4];

			UNROLL for (int p = 0; p < 4; p++)
				mn[p] = pairs(sc_bytes(&s, 8 + 2 * p), sc_bytes(&s, 9 + 2 * p), hf);
			UNROLL for (int u = 0; u < NT; u++) {
				const __m256i bs = _mm256_loadu_si256(
					(const __m256i *)(STRATA_Q8K_BSUMS(x[u], k) + 16 * b));
				/* the activations' 32-value sums, in pairs per dword */
				const __m256i s32 = _mm256_broadcastsi128_si256(_mm_hadd_epi16(
					_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
				const __m256 dx = _mm256_set1_ps(STRATA_Q8K_D(x[u], k)[b]);
				__m256i im;

				im = _mm256_madd_epi16(mn[0], _mm256_shuffle_epi32(s32, 0x00));
				im = _mm256_add_epi32(im, _mm256_madd_epi16(mn[1], _mm256_shuffle_epi32(s32, 0x55)));
				im = _mm256_add_epi32(im, _mm256_madd_epi16(mn[2], _mm256_shuffle_epi32(s32, 0xaa)));
				im = _mm256_add_epi32(im, _mm256_madd_epi16(mn[3], _mm256_shuffle_epi32(s32, 0xff)));
				y[u][hh] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[u][hh]),
							   _mm256_mul_ps(d, dx), y[u][hh]);
				y[u][hh] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(im),
							    _mm256_mul_ps(dmin, dx), y[u][hh]);
			}
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

/* Whole groups: a->nr is a multiple of 16, a->w a group's start. */
void strata_q4_k_r16_mm_avx2(const struct strata_mm_args *a)
{
	static tile_fn const tiles[TT] = { tile_1x1, tile_2x1, tile_3x1, tile_4x1 };

	for (int64_t r = 0; r < a->nr; r += STRATA_Q4K_R16_ROWS) {
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
