/*
 * quants_iq_avx2.c - the i-quant tile kernels at the AVX2 level (AVX2 + FMA).
 *
 * Same plan as quants_iq_avx512.c: a segment of 8 blocks of up to 4 rows is
 * unpacked once (quants_iq_x86.h) and every token of the call streams past
 * it.  Per block and (row, token): 8 x (vpmaddubsw, vpmaddwd, vpaddd) give
 * the exact int32 dot with the group scales applied, then one FMA with
 * d_w * d_x.  Tiles are 4 rows x 2 tokens: 8 accumulators leave room in
 * the 16 ymm registers for the activations and temporaries.  A call of one
 * token (the decode GEMV) skips the unpacked copy: iq_dot_row puts the
 * signs on the activations instead (IQ1_M: iq1m_row).
 */
#include "kernels_impl.h"
#include "quants_iq.h"

#if defined(STRATA_KERN_X86)
#include "quants_iq_x86.h"

#define MR 4
#define MT 2
#define SEG 8 /* blocks per segment */
#define UNROLL _Pragma("GCC unroll 8")

typedef void (*iq_tile_fn)(const struct strata_mm_args *a,
			   const struct iq_dec (*dec)[SEG], int64_t r0,
			   int64_t t0, int64_t b0, int nbs);

/* [sum a0, sum a1, sum a2, sum a3] */
IQ_AI __m128 hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
	__m256 d = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));

	return _mm_add_ps(_mm256_castps256_ps128(d), _mm256_extractf128_ps(d, 1));
}

/* NR rows x NT tokens over blocks b0 .. b0 + nbs (already unpacked). */
IQ_AI void tile(int NR, int NT, const struct strata_mm_args *a,
		const struct iq_dec (*dec)[SEG], int64_t r0, int64_t t0,
		int64_t b0, int nbs)
{
	const __m256i flip = _mm256_set1_epi8((char)0x80);
	const int8_t *xq[MT];
	const float *xd[MT];
	__m256 acc[MR][MT];

	UNROLL for (int u = 0; u < NT; u++) {
		const uint8_t *row = a->x + (t0 + u) * a->x_stride;

		xq[u] = STRATA_Q8K_QS(row) + b0 * STRATA_QK_K;
		xd[u] = STRATA_Q8K_D(row, a->k) + b0;
	}
	UNROLL for (int j = 0; j < MR; j++)
		UNROLL for (int u = 0; u < MT; u++)
			acc[j][u] = _mm256_setzero_ps();
	for (int b = 0; b < nbs; b++) {
		UNROLL for (int u = 0; u < NT; u++) {
			const int8_t *x = xq[u] + b * STRATA_QK_K;

			UNROLL for (int j = 0; j < NR; j++) {
				const struct iq_dec *o = &dec[j][b];
				__m256i s = _mm256_zextsi128_si256(
					_mm_cvtsi32_si128(o->corr));

				UNROLL for (int h = 0; h < 8; h++) {
					__m256i xu = _mm256_xor_si256(_mm256_loadu_si256(
						(const __m256i *)(x + 32 * h)), flip);

					s = _mm256_add_epi32(s, _mm256_madd_epi16(
						_mm256_maddubs_epi16(xu, _mm256_load_si256(
							(const __m256i *)(o->w + 32 * h))),
						_mm256_loadu_si256(
							(const __m256i *)(o->sc + 16 * h))));
				}
				acc[j][u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s),
					_mm256_set1_ps(o->d * xd[u][b]), acc[j][u]);
			}
		}
	}
	UNROLL for (int u = 0; u < NT; u++) {
		float *y = a->y + (t0 + u) * a->ldy + r0;
		float v[4];

		_mm_storeu_ps(v, hsum4(acc[0][u], acc[1][u], acc[2][u], acc[3][u]));
		UNROLL for (int j = 0; j < NR; j++)
			y[j] = b0 == 0 ? v[j] : y[j] + v[j];
	}
}

#define DEF_TILE(nr, nt)                                                     \
	static void tile_##nr##x##nt(const struct strata_mm_args *a,         \
				     const struct iq_dec (*dec)[SEG],        \
				     int64_t r0, int64_t t0, int64_t b0,     \
				     int nbs)                                \
	{                                                                    \
		tile(nr, nt, a, dec, r0, t0, b0, nbs);                       \
	}
#define DEF_TILES_ROW(nr) DEF_TILE(nr, 1) DEF_TILE(nr, 2)
DEF_TILES_ROW(1)
DEF_TILES_ROW(2)
DEF_TILES_ROW(3)
DEF_TILES_ROW(4)

static iq_tile_fn const g_tiles[MR][MT] = {
	{ tile_1x1, tile_1x2 },
	{ tile_2x1, tile_2x2 },
	{ tile_3x1, tile_3x2 },
	{ tile_4x1, tile_4x2 },
};

/*
 * One IQ1_M row against one token.  The 32 11-bit grid indices of a block
 * and their delta signs are made in vectors (iq_half's byte loop spent more
 * on them than on the loads); per 32 weights four grid loads, w = 8 grid
 * +- 1, and iq_dot_row's arithmetic.
 */
IQ_AI float iq1m_row(const uint8_t *w, const uint8_t *x, int64_t k)
{
	const int8_t *xq = STRATA_Q8K_QS(x);
	const float *xd = STRATA_Q8K_D(x, k);
	const __m128i m15 = _mm_set1_epi8(15), pick = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0,
								    1, 1, 1, 1, 1, 1, 1, 1);
	const __m256i bit = _mm256_setr_epi64x(1, 2, 4, 8);
	__m256 acc = _mm256_setzero_ps();
	__m128 r;

	for (int64_t b = 0; b < k / STRATA_QK_K; b++, w += STRATA_IQ1_M_BYTES,
		     xq += STRATA_QK_K) {
		_Alignas(32) uint16_t idx[32];
		const __m128i qh = _mm_loadu_si128((const __m128i *)(w + 32));
		const __m128i lo = _mm_and_si128(qh, m15);
		const __m128i hi = _mm_and_si128(_mm_srli_epi16(qh, 4), m15);
		/* entry e's nibble: byte e / 2, the low one for even e */
		const __m128i n0 = _mm_unpacklo_epi8(lo, hi), n1 = _mm_unpackhi_epi8(lo, hi);
		/* bit e: entry e's delta is -1 (the nibble's bit 3) */
		const uint32_t dneg = (uint32_t)_mm_movemask_epi8(_mm_slli_epi16(n0, 4)) |
				      (uint32_t)_mm_movemask_epi8(_mm_slli_epi16(n1, 4)) << 16;
		const __m128i S = iq_scales(IQ_1M, w);
		__m128i sel = pick;
		__m256i s = _mm256_setzero_si256();

		_mm256_store_si256((__m256i *)idx, _mm256_or_si256(
			_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)w)),
			_mm256_slli_epi16(_mm256_cvtepu8_epi16(
				_mm_and_si128(n0, _mm_set1_epi8(7))), 8)));
		_mm256_store_si256((__m256i *)(idx + 16), _mm256_or_si256(
			_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(w + 16))),
			_mm256_slli_epi16(_mm256_cvtepu8_epi16(
				_mm_and_si128(n1, _mm_set1_epi8(7))), 8)));
		for (int h = 0; h < 8; h++, sel = _mm_add_epi8(sel, _mm_set1_epi8(2))) {
			const uint16_t *e = idx + 4 * h;
			__m256i g = _mm256_setr_epi64x((long long)strata_iq1s_grid[e[0]],
						       (long long)strata_iq1s_grid[e[1]],
						       (long long)strata_iq1s_grid[e[2]],
						       (long long)strata_iq1s_grid[e[3]]);
			/* -1 for the entries whose delta bit is set, else +1 */
			const __m256i dm = _mm256_set1_epi64x((long long)((dneg >> 4 * h) & 15));
			const __m256i delta = _mm256_or_si256(_mm256_cmpeq_epi64(
				_mm256_and_si256(dm, bit), bit), _mm256_set1_epi8(1));
			const __m256i xv = _mm256_loadu_si256((const __m256i *)(xq + 32 * h));
			const __m256i sc = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(S, sel));

			g = _mm256_add_epi8(g, g);
			g = _mm256_add_epi8(g, g);
			g = _mm256_add_epi8(_mm256_add_epi8(g, g), delta);
			s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(
				_mm256_sign_epi8(g, g), _mm256_sign_epi8(xv, g)), sc));
		}
		acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s),
				      _mm256_set1_ps(iq_dscale(IQ_1M, w) * xd[b]), acc);
	}
	r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
	r = _mm_add_ps(r, _mm_movehl_ps(r, r));
	r = _mm_add_ss(r, _mm_movehdup_ps(r));
	return _mm_cvtss_f32(r);
}

IQ_AI void mm_iq(enum iq_kind kind, const struct strata_mm_args *a)
{
	struct iq_dec dec[MR][SEG];
	const int64_t nb = a->k / STRATA_QK_K;
	const size_t bytes = iq_block_bytes[kind];

	/* A chunk of one token (kernels.c cuts tokens the same way for any
	 * pool, so this choice does not depend on the thread count). */
	if (a->nt == 1) {
		for (int64_t r = 0; r < a->nr; r++)
			a->y[r] = kind == IQ_1M ? iq1m_row(a->w + r * a->w_stride, a->x, a->k)
				: iq_dot_row(kind, a->w + r * a->w_stride, a->x, a->k);
		return;
	}
	for (int64_t r = 0; r < a->nr; r += MR) {
		int nr = a->nr - r < MR ? (int)(a->nr - r) : MR;

		for (int64_t b0 = 0; b0 < nb; b0 += SEG) {
			int nbs = nb - b0 < SEG ? (int)(nb - b0) : SEG;

			for (int j = 0; j < nr; j++) {
				const uint8_t *w = a->w + (r + j) * a->w_stride +
						   (size_t)b0 * bytes;

				for (int b = 0; b < nbs; b++)
					iq_decode(kind, w + (size_t)b * bytes, &dec[j][b]);
			}
			for (int64_t t = 0; t < a->nt; t += MT) {
				int nt = a->nt - t < MT ? (int)(a->nt - t) : MT;

				g_tiles[nr - 1][nt - 1](a, dec, r, t, b0, nbs);
			}
		}
	}
}

void strata_iq2_xs_mm_avx2(const struct strata_mm_args *a)
{
	mm_iq(IQ_2XS, a);
}

void strata_iq2_s_mm_avx2(const struct strata_mm_args *a)
{
	mm_iq(IQ_2S, a);
}

void strata_iq3_xxs_mm_avx2(const struct strata_mm_args *a)
{
	mm_iq(IQ_3XXS, a);
}

void strata_iq3_s_mm_avx2(const struct strata_mm_args *a)
{
	mm_iq(IQ_3S, a);
}

void strata_iq1_m_mm_avx2(const struct strata_mm_args *a)
{
	mm_iq(IQ_1M, a);
}

#endif
