/*
 * quants_iq_avx512.c - the i-quant tile kernels at the AVX-512 level
 * (F/BW/DQ/VL + VNNI).
 *
 * Work is cut into tiles of up to 4 rows x 4 tokens over segments of 8
 * blocks: the segment's blocks of the 4 rows are unpacked once (see
 * quants_iq_x86.h; ~18 KiB, stays in L1) and then every token of the call
 * streams past them, so a prompt pays the unpacking once per row, not once
 * per token.  Per block and (row, token): 4 x (vpmaddubsw, vpdpwssd) give
 * the exact int32 dot with the group scales applied, then one FMA with
 * d_w * d_x.  Segments are summed into y in a fixed order, so results do
 * not depend on how the driver splits rows.  A call of one token (the
 * decode GEMV) skips the unpacked copy: iq_dot_row puts the signs on the
 * activations instead, or, where the CPU has VBMI, quants_iq_vbmi.c's rows
 * look the codebook up with permutes (IQ2_XS, IQ3_XXS, IQ3_S); IQ1_M's
 * 2048-entry grid is too large for registers: its row (iq1m_row) loads the
 * entries at indices made in vectors.
 */
#include "kernels_impl.h"
#include "quants_iq.h"

#if defined(STRATA_KERN_X86)
#include <errno.h>
#include <stdatomic.h>

#include "quants_iq_x86.h"

#define MR 4
#define MT 4
#define SEG 8 /* blocks per segment */
#define UNROLL _Pragma("GCC unroll 4")

typedef void (*iq_tile_fn)(const struct strata_mm_args *a,
			   const struct iq_dec (*dec)[SEG], int64_t r0,
			   int64_t t0, int64_t b0, int nbs);

/* [sum a0, sum a1, sum a2, sum a3] */
IQ_AI __m128 hsum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
	__m256 b0 = _mm256_add_ps(_mm512_castps512_ps256(a0),
				  _mm512_extractf32x8_ps(a0, 1));
	__m256 b1 = _mm256_add_ps(_mm512_castps512_ps256(a1),
				  _mm512_extractf32x8_ps(a1, 1));
	__m256 b2 = _mm256_add_ps(_mm512_castps512_ps256(a2),
				  _mm512_extractf32x8_ps(a2, 1));
	__m256 b3 = _mm256_add_ps(_mm512_castps512_ps256(a3),
				  _mm512_extractf32x8_ps(a3, 1));
	__m256 d = _mm256_hadd_ps(_mm256_hadd_ps(b0, b1), _mm256_hadd_ps(b2, b3));

	return _mm_add_ps(_mm256_castps256_ps128(d), _mm256_extractf128_ps(d, 1));
}

/* NR rows x NT tokens over blocks b0 .. b0 + nbs (already unpacked). */
IQ_AI void tile(int NR, int NT, const struct strata_mm_args *a,
		const struct iq_dec (*dec)[SEG], int64_t r0, int64_t t0,
		int64_t b0, int nbs)
{
	const __m512i flip = _mm512_set1_epi8((char)0x80);
	const int8_t *xq[MT];
	const float *xd[MT];
	__m512 acc[MR][MT];

	UNROLL for (int u = 0; u < NT; u++) {
		const uint8_t *row = a->x + (t0 + u) * a->x_stride;

		xq[u] = STRATA_Q8K_QS(row) + b0 * STRATA_QK_K;
		xd[u] = STRATA_Q8K_D(row, a->k) + b0;
	}
	UNROLL for (int j = 0; j < MR; j++)
		UNROLL for (int u = 0; u < MT; u++)
			acc[j][u] = _mm512_setzero_ps();
	for (int b = 0; b < nbs; b++) {
		UNROLL for (int u = 0; u < NT; u++) {
			const int8_t *x = xq[u] + b * STRATA_QK_K;
			__m512i xu[4];

			UNROLL for (int c = 0; c < 4; c++)
				xu[c] = _mm512_xor_si512(
					_mm512_loadu_si512(x + 64 * c), flip);
			UNROLL for (int j = 0; j < NR; j++) {
				const struct iq_dec *o = &dec[j][b];
				__m512i s = _mm512_zextsi128_si512(
					_mm_cvtsi32_si128(o->corr));

				UNROLL for (int c = 0; c < 4; c++)
					s = _mm512_dpwssd_epi32(s,
						_mm512_maddubs_epi16(xu[c],
							_mm512_load_si512(o->w + 64 * c)),
						_mm512_loadu_si512(o->sc + 32 * c));
				acc[j][u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
					_mm512_set1_ps(o->d * xd[u][b]), acc[j][u]);
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
#define DEF_TILES_ROW(nr)                                                    \
	DEF_TILE(nr, 1) DEF_TILE(nr, 2) DEF_TILE(nr, 3) DEF_TILE(nr, 4)
DEF_TILES_ROW(1)
DEF_TILES_ROW(2)
DEF_TILES_ROW(3)
DEF_TILES_ROW(4)

static iq_tile_fn const g_tiles[MR][MT] = {
	{ tile_1x1, tile_1x2, tile_1x3, tile_1x4 },
	{ tile_2x1, tile_2x2, tile_2x3, tile_2x4 },
	{ tile_3x1, tile_3x2, tile_3x3, tile_3x4 },
	{ tile_4x1, tile_4x2, tile_4x3, tile_4x4 },
};

/*
 * One IQ1_M row against one token at full width: a block's grid indices and
 * delta signs from iq1m_indices, then per 64 weights eight grid loads,
 * w = 8 grid +- 1, and the exact int32 dot as iq_dot_row's: |w| times the
 * activations with w's signs, group scales by vpdpwssd.
 */
IQ_AI float iq1m_row(const uint8_t *w, const uint8_t *x, int64_t k)
{
	const int8_t *xq = STRATA_Q8K_QS(x);
	const float *xd = STRATA_Q8K_D(x, k);
	__m512 acc = _mm512_setzero_ps();

	for (int64_t b = 0; b < k / STRATA_QK_K; b++, w += STRATA_IQ1_M_BYTES,
		     xq += STRATA_QK_K) {
		const __m512i S16 = scales16(IQ_1M, w);
		__m512i s = _mm512_setzero_si512();
		__m256i idx[2];
		uint32_t dneg;

		iq1m_indices(w, idx, &dneg);
		_Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
			const uint64_t e = iq_words4(idx, 2 * c), f = iq_words4(idx, 2 * c + 1);
			const __m512i g = _mm512_inserti64x4(_mm512_castsi256_si512(iq_grid64(
				strata_iq1s_grid, (int)(e & 0xffff), (int)(e >> 16 & 0xffff),
				(int)(e >> 32 & 0xffff), (int)(e >> 48))), iq_grid64(strata_iq1s_grid,
				(int)(f & 0xffff), (int)(f >> 16 & 0xffff), (int)(f >> 32 & 0xffff),
				(int)(f >> 48)), 1);
			/* 8 g (bits carried in from the byte below cleared), +- 1 */
			const __m512i v = _mm512_add_epi8(
				_mm512_and_si512(_mm512_slli_epi64(g, 3), _mm512_set1_epi8((char)0xf8)),
				_mm512_mask_blend_epi64((__mmask8)(dneg >> 8 * c), _mm512_set1_epi8(1),
							_mm512_set1_epi8(-1)));
			const __m512i xv = _mm512_loadu_si512(xq + 64 * c);

			s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(_mm512_abs_epi8(v),
				_mm512_mask_sub_epi8(xv, _mm512_movepi8_mask(v),
						     _mm512_setzero_si512(), xv)),
				pair_scales(S16, c));
		}
		acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
				      _mm512_set1_ps(iq_dscale(IQ_1M, w) * xd[b]), acc);
	}
	return _mm512_reduce_add_ps(acc);
}

/*
 * Whether one-token rows take quants_iq_vbmi.c's permute lookups: -1 until
 * asked, then 1 where the CPU has AVX-512 VBMI (Ice Lake, Zen 4 on; not
 * Skylake-X or Cascade Lake) unless a test turned it off.
 */
static _Atomic int g_vbmi = -1;

static int vbmi_on(void)
{
	int v = atomic_load_explicit(&g_vbmi, memory_order_relaxed);

	if (v < 0) {
		__builtin_cpu_init();
		v = __builtin_cpu_supports("avx512vbmi") ? 1 : 0;
		atomic_store_explicit(&g_vbmi, v, memory_order_relaxed);
	}
	return v;
}

int strata_iq_vbmi_set(int on)
{
	int was = vbmi_on();

	__builtin_cpu_init();
	if (on && !__builtin_cpu_supports("avx512vbmi"))
		return -ENOTSUP;
	atomic_store(&g_vbmi, on ? 1 : 0);
	return was;
}

IQ_AI void mm_iq(enum iq_kind kind, const struct strata_mm_args *a)
{
	struct iq_dec dec[MR][SEG];
	const int64_t nb = a->k / STRATA_QK_K;
	const size_t bytes = iq_block_bytes[kind];
	const int vbmi = vbmi_on();

	/* A chunk of one token (matmul.c cuts tokens the same way for any
	 * pool, so this choice does not depend on the thread count). */
	if (a->nt == 1) {
		if (vbmi && strata_iq_rows_vbmi(kind, a))
			return;
		if (kind == IQ_1M) {
			for (int64_t r = 0; r < a->nr; r++)
				a->y[r] = iq1m_row(a->w + r * a->w_stride, a->x, a->k);
			return;
		}
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

				if (vbmi && strata_iq_decode_vbmi(kind, w, nbs, dec[j]))
					continue;
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

void strata_iq2_xs_mm_avx512(const struct strata_mm_args *a)
{
	mm_iq(IQ_2XS, a);
}

void strata_iq2_s_mm_avx512(const struct strata_mm_args *a)
{
	mm_iq(IQ_2S, a);
}

void strata_iq3_xxs_mm_avx512(const struct strata_mm_args *a)
{
	mm_iq(IQ_3XXS, a);
}

void strata_iq3_s_mm_avx512(const struct strata_mm_args *a)
{
	mm_iq(IQ_3S, a);
}

void strata_iq1_m_mm_avx512(const struct strata_mm_args *a)
{
	mm_iq(IQ_1M, a);
}

#endif
