/*
 * attn_avx2.c - attention with AVX2 + FMA: scores one key tile (attn.h) per
 * pass for up to four heads sharing the keys, a vector exp, and values
 * accumulated in registers for up to four heads.
 */
#include "attn.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "vexp.h"

/* scores_ng covers a tile with two 8-float vectors */
_Static_assert(STRATA_KT_TILE == 16, "one key tile is two AVX2 vectors");

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 4")

/* Lanes [0, n) of 8 (n >= 8: all). */
AI __m256i tail_mask(uint32_t n)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);

	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n >= 8 ? 8 : (int)n), idx);
}

/*
 * Software prefetch, as attn_avx512.c gives why: keys the same line of the
 * tile two on, values the rows 16 positions on.  Values are summed in blocks
 * of VBLOCK positions, every 16-dimension slice of a block's rows before the
 * next block: the 4 KiB of rows stay in L1 for the three slices after the
 * first, where whole passes over the cache read it from memory four times.
 */
#define PF_KTILES 2
#define PF_VROWS 16
#define VBLOCK 16

/*
 * sc[g * ls + j] = scale * q[g] . k_j for NG heads: a tile of 16 positions
 * per pass (2 x NG accumulators and two key vectors fit the 16 registers),
 * each key loaded once for every head.  Reads whole tiles (attn.h).
 */
AI void scores_ng(int NG, const float *q, size_t qs, const float *kt, int hd, uint32_t len,
		  float scale, float *sc, size_t ls)
{
	const __m256 vs = _mm256_set1_ps(scale);

	for (uint32_t j0 = 0; j0 < len; j0 += STRATA_KT_TILE) {
		__m256 acc[4][2];

		UNROLL for (int g = 0; g < NG; g++)
			acc[g][0] = acc[g][1] = _mm256_setzero_ps();
		for (int d = 0; d < hd; d++) {
			const float *kr = kt + strata_kt_at(hd, d, j0);
			const __m256 k0 = _mm256_loadu_ps(kr), k1 = _mm256_loadu_ps(kr + 8);

			if (j0 + STRATA_KT_TILE * (PF_KTILES + 1) <= len)
				_mm_prefetch((const char *)(kr + PF_KTILES * strata_kt_tile(hd)),
					     _MM_HINT_T0);

			UNROLL for (int g = 0; g < NG; g++) {
				const __m256 qd = _mm256_broadcast_ss(q + (size_t)g * qs + d);

				acc[g][0] = _mm256_fmadd_ps(qd, k0, acc[g][0]);
				acc[g][1] = _mm256_fmadd_ps(qd, k1, acc[g][1]);
			}
		}
		/* sc rows hold ls = strata_kt_round(len) floats */
		UNROLL for (int g = 0; g < NG; g++) {
			_mm256_storeu_ps(sc + (size_t)g * ls + j0, _mm256_mul_ps(acc[g][0], vs));
			_mm256_storeu_ps(sc + (size_t)g * ls + j0 + 8, _mm256_mul_ps(acc[g][1], vs));
		}
	}
}

/* Softmax of sc[0..len) in place, unnormalised; returns 1 / the sum. */
static float softmax_row(float *sc, uint32_t len)
{
	const __m256 ninf = _mm256_set1_ps(-INFINITY);
	__m256 mx = ninf, sum = _mm256_setzero_ps();
	__m128 h;
	float m;

	for (uint32_t j = 0; j < len; j += 8)
		mx = _mm256_max_ps(mx, _mm256_blendv_ps(ninf, _mm256_loadu_ps(sc + j),
							_mm256_castsi256_ps(tail_mask(len - j))));
	h = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
	h = _mm_max_ps(h, _mm_movehl_ps(h, h));
	m = _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
	mx = _mm256_set1_ps(m);
	for (uint32_t j = 0; j < len; j += 8) {
		const __m256 k = _mm256_castsi256_ps(tail_mask(len - j));
		/* arguments are <= 0; below -87 exp is ~0 (vexp.h's AVX2 range) */
		__m256 e = strata_exp8(_mm256_max_ps(_mm256_sub_ps(_mm256_loadu_ps(sc + j), mx),
						     _mm256_set1_ps(-87.0f)));

		e = _mm256_and_ps(e, k);
		_mm256_storeu_ps(sc + j, e);
		sum = _mm256_add_ps(sum, e);
	}
	h = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
	h = _mm_add_ps(h, _mm_movehl_ps(h, h));
	return 1.0f / _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

/* o[g][c0 .. c0 + 8 NC) += sum_j sc[g][j] v_j over positions [j0, j1) for NG
 * heads: each value row's slice loaded once for every head. */
AI void values_ng(int NG, int NC, const float *sc, size_t ls, const float *v, size_t vs,
		  uint32_t j0, uint32_t j1, int c0, int hdv, float *o, size_t os)
{
	__m256 acc[4][2];
	__m256i m[2];

	UNROLL for (int i = 0; i < NC; i++)
		m[i] = tail_mask((uint32_t)(hdv - c0 - 8 * i));
	UNROLL for (int g = 0; g < NG; g++)
		UNROLL for (int i = 0; i < NC; i++)
			acc[g][i] = _mm256_maskload_ps(o + (size_t)g * os + c0 + 8 * i, m[i]);
	for (uint32_t j = j0; j < j1; j++) {
		const float *vj = v + (size_t)j * vs + c0;
		__m256 x[2];

		UNROLL for (int i = 0; i < NC; i++)
			x[i] = _mm256_maskload_ps(vj + 8 * i, m[i]);
		UNROLL for (int g = 0; g < NG; g++) {
			const __m256 p = _mm256_broadcast_ss(sc + (size_t)g * ls + j);

			UNROLL for (int i = 0; i < NC; i++)
				acc[g][i] = _mm256_fmadd_ps(p, x[i], acc[g][i]);
		}
	}
	UNROLL for (int g = 0; g < NG; g++)
		UNROLL for (int i = 0; i < NC; i++)
			_mm256_maskstore_ps(o + (size_t)g * os + c0 + 8 * i, m[i], acc[g][i]);
}

/* o[g] = inv[g] * sum_j sc[g][j] v_j for NG heads, VBLOCK positions at a time
 * (the top of the file), the sums kept in o's rows between blocks. */
AI void values_all(int NG, const float *sc, size_t ls, const float *v, size_t vs, uint32_t len,
		   int hdv, const float *inv, float *o, size_t os)
{
	for (int g = 0; g < NG; g++)
		for (int c = 0; c < hdv; c++)
			o[(size_t)g * os + c] = 0.0f;
	for (uint32_t j0 = 0; j0 < len; j0 += VBLOCK) {
		const uint32_t j1 = len - j0 < VBLOCK ? len : j0 + VBLOCK;

		for (uint32_t j = j0 + PF_VROWS; j < j1 + PF_VROWS && j < len; j++)
			for (int c = 0; c < hdv; c += 16)
				_mm_prefetch((const char *)(v + (size_t)j * vs + c), _MM_HINT_T0);
		for (int c0 = 0; c0 < hdv; c0 += 16) {
			if (hdv - c0 > 8)
				values_ng(NG, 2, sc, ls, v, vs, j0, j1, c0, hdv, o, os);
			else
				values_ng(NG, 1, sc, ls, v, vs, j0, j1, c0, hdv, o, os);
		}
	}
	for (int g = 0; g < NG; g++)
		for (int c = 0; c < hdv; c++)
			o[(size_t)g * os + c] *= inv[g];
}

#define HEADS(NG)                                                                         \
	static void heads_##NG(const float *q, size_t qs, const float *kt, int hd,        \
			       const float *v, size_t vs, int hdv, uint32_t len,          \
			       float scale, float *o, size_t os, float *sc)               \
	{                                                                                 \
		const size_t ls = strata_kt_round(len);                                   \
		float inv[4];                                                             \
                                                                                          \
		scores_ng(NG, q, qs, kt, hd, len, scale, sc, ls);                         \
		for (int g = 0; g < NG; g++)                                              \
			inv[g] = softmax_row(sc + (size_t)g * ls, len);                   \
		values_all(NG, sc, ls, v, vs, len, hdv, inv, o, os);                      \
	}
HEADS(1)
HEADS(2)
HEADS(3)
HEADS(4)

/*
 * Up to four heads at a time, as the AVX-512 level: scores in registers
 * over the whole head, a vector exp, values accumulated per 16 dimensions
 * while the positions pass.  Each query's result depends only on its own
 * row and the cache, not on the batch.
 */
void strata_attn_heads_avx2(STRATA_ATTN_HEADS_ARGS)
{
	for (int g = 0; g < G; g += 4) {
		const float *qg = q + (size_t)g * qstride;
		float *og = o + (size_t)g * ostride;

		switch (G - g >= 4 ? 4 : G - g) {
		case 1: heads_1(qg, qstride, kt, hd, v, vstride, hdv, len, scale, og, ostride, sc); break;
		case 2: heads_2(qg, qstride, kt, hd, v, vstride, hdv, len, scale, og, ostride, sc); break;
		case 3: heads_3(qg, qstride, kt, hd, v, vstride, hdv, len, scale, og, ostride, sc); break;
		default: heads_4(qg, qstride, kt, hd, v, vstride, hdv, len, scale, og, ostride, sc); break;
		}
	}
}
#endif
