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
 * signs on the activations instead.
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

IQ_AI void mm_iq(enum iq_kind kind, const struct strata_mm_args *a)
{
	struct iq_dec dec[MR][SEG];
	const int64_t nb = a->k / STRATA_QK_K;
	const size_t bytes = iq_block_bytes[kind];

	/* A chunk of one token (matmul.c cuts tokens the same way for any
	 * pool, so this choice does not depend on the thread count). */
	if (a->nt == 1) {
		for (int64_t r = 0; r < a->nr; r++)
			a->y[r] = iq_dot_row(kind, a->w + r * a->w_stride, a->x, a->k);
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
