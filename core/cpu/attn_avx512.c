/*
 * attn_avx512.c - attention with AVX-512.  Scores: 64 positions (four key
 * tiles, attn.h) per pass, accumulators kept in registers across every
 * dimension of the head, for up to four query heads that share the keys.
 * Softmax: a vector exp.  Values: up to 64 value dimensions x four heads
 * accumulated in registers while the positions pass, each value row loaded
 * once for all of them.
 */
#include "attn.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>

#include "vexp.h"

_Static_assert(STRATA_KT_TILE == 16, "one key tile is one AVX-512 vector");

#define AI static inline __attribute__((always_inline))
/* the head and column loops must unroll: their accumulators are registers */
#define UNROLL _Pragma("GCC unroll 4")

/* exp(x) for x <= 0 (softmax arguments); below -88 the result is ~0. */
AI __m512 exp_neg(__m512 x)
{
	return strata_exp16(_mm512_max_ps(x, _mm512_set1_ps(-88.0f)));
}

AI __mmask16 tail_mask(uint32_t n)
{
	return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

/*
 * Software prefetch distances.  A key tile is one 4 KiB page (hd = 64) and
 * a value row a quarter of one; the hardware's stream prefetchers stop at
 * page ends, so a decode step at depth 4096, its cache cold behind the
 * weights, read keys and values at 21 GB/s on one Zen 5 core where the
 * plain read loop streams 35.  Keys: the same line of the tiles two blocks
 * of 64 positions on; values: the rows 16 positions on.
 */
#define PF_KBLOCKS 2
#define PF_VROWS 16

/* sc[g * ls + j] = scale * q[g] . k_j for NG heads. */
AI void scores_ng(int NG, const float *q, size_t qs, const float *kt, int hd, uint32_t len,
		  float scale, float *sc, size_t ls)
{
	const __m512 vs = _mm512_set1_ps(scale);
	const size_t tile = strata_kt_tile(hd);
	uint32_t j0 = 0;

	for (; j0 + 64 <= len; j0 += 64) {
		__m512 acc[4][4];

		UNROLL for (int g = 0; g < NG; g++)
			UNROLL for (int i = 0; i < 4; i++)
				acc[g][i] = _mm512_setzero_ps();
		for (int d = 0; d < hd; d++) {
			const float *kr = kt + strata_kt_at(hd, d, j0);
			__m512 k[4];

			/* whole tiles exist up to the cache's end (STRATA_ATTN_CTX_ALIGN);
			 * a prefetch past the tiles in use reads nothing it needs */
			if (j0 + 64 * (PF_KBLOCKS + 1) <= len)
				UNROLL for (int i = 0; i < 4; i++)
					_mm_prefetch((const char *)(kr + (4 * PF_KBLOCKS + i) * tile),
						     _MM_HINT_T0);
			UNROLL for (int i = 0; i < 4; i++)
				k[i] = _mm512_loadu_ps(kr + i * tile);
			UNROLL for (int g = 0; g < NG; g++) {
				__m512 qd = _mm512_set1_ps(q[(size_t)g * qs + d]);

				UNROLL for (int i = 0; i < 4; i++)
					acc[g][i] = _mm512_fmadd_ps(qd, k[i], acc[g][i]);
			}
		}
		UNROLL for (int g = 0; g < NG; g++)
			UNROLL for (int i = 0; i < 4; i++)
				_mm512_storeu_ps(sc + (size_t)g * ls + j0 + 16 * i,
						 _mm512_mul_ps(acc[g][i], vs));
	}
	for (; j0 < len; j0 += STRATA_KT_TILE) {
		const __mmask16 m = tail_mask(len - j0);
		__m512 acc[4];

		UNROLL for (int g = 0; g < NG; g++)
			acc[g] = _mm512_setzero_ps();
		for (int d = 0; d < hd; d++) {
			__m512 k = _mm512_maskz_loadu_ps(m, kt + strata_kt_at(hd, d, j0));

			UNROLL for (int g = 0; g < NG; g++)
				acc[g] = _mm512_fmadd_ps(_mm512_set1_ps(q[(size_t)g * qs + d]), k,
							 acc[g]);
		}
		UNROLL for (int g = 0; g < NG; g++)
			_mm512_mask_storeu_ps(sc + (size_t)g * ls + j0, m, _mm512_mul_ps(acc[g], vs));
	}
}

/* Softmax of sc[0..len) in place, unnormalised; returns 1 / the sum. */
static float softmax_row(float *sc, uint32_t len)
{
	__m512 mx = _mm512_set1_ps(-INFINITY), sum = _mm512_setzero_ps();
	float m;

	for (uint32_t j = 0; j < len; j += 16)
		mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY),
							    tail_mask(len - j), sc + j));
	m = _mm512_reduce_max_ps(mx);
	mx = _mm512_set1_ps(m);
	for (uint32_t j = 0; j < len; j += 16) {
		const __mmask16 k = tail_mask(len - j);
		__m512 e = exp_neg(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, sc + j), mx));

		e = _mm512_maskz_mov_ps(k, e);
		_mm512_mask_storeu_ps(sc + j, k, e);
		sum = _mm512_add_ps(sum, e);
	}
	return 1.0f / _mm512_reduce_add_ps(sum);
}

/* o[g][c0 .. c0 + 16 NC) = inv[g] * sum_j sc[g][j] v_j, NG heads. */
AI void values_ng(int NG, int NC, const float *sc, size_t ls, const float *v, size_t vs,
		  uint32_t len, int c0, int hdv, const float *inv, float *o, size_t os)
{
	__m512 acc[4][4];
	__mmask16 m[4];

	UNROLL for (int i = 0; i < NC; i++)
		m[i] = tail_mask((uint32_t)(hdv - c0 - 16 * i));
	UNROLL for (int g = 0; g < NG; g++)
		UNROLL for (int i = 0; i < NC; i++)
			acc[g][i] = _mm512_setzero_ps();
	for (uint32_t j = 0; j < len; j++) {
		const float *vj = v + (size_t)j * vs + c0;
		__m512 x[4];

		if (j + PF_VROWS < len)
			UNROLL for (int i = 0; i < NC; i++)
				_mm_prefetch((const char *)(vj + PF_VROWS * vs + 16 * i), _MM_HINT_T0);
		UNROLL for (int i = 0; i < NC; i++)
			x[i] = _mm512_maskz_loadu_ps(m[i], vj + 16 * i);
		UNROLL for (int g = 0; g < NG; g++) {
			__m512 p = _mm512_set1_ps(sc[(size_t)g * ls + j]);

			UNROLL for (int i = 0; i < NC; i++)
				acc[g][i] = _mm512_fmadd_ps(p, x[i], acc[g][i]);
		}
	}
	UNROLL for (int g = 0; g < NG; g++)
		UNROLL for (int i = 0; i < NC; i++)
			_mm512_mask_storeu_ps(o + (size_t)g * os + c0 + 16 * i, m[i],
					      _mm512_mul_ps(acc[g][i], _mm512_set1_ps(inv[g])));
}

#define VALUES_NC(NG)                                                                     \
	static void values_##NG(int nc, const float *sc, size_t ls, const float *v,       \
				size_t vs, uint32_t len, int c0, int hdv, const float *inv, \
				float *o, size_t os)                                      \
	{                                                                                 \
		switch (nc) {                                                             \
		case 1: values_ng(NG, 1, sc, ls, v, vs, len, c0, hdv, inv, o, os); break; \
		case 2: values_ng(NG, 2, sc, ls, v, vs, len, c0, hdv, inv, o, os); break; \
		case 3: values_ng(NG, 3, sc, ls, v, vs, len, c0, hdv, inv, o, os); break; \
		default: values_ng(NG, 4, sc, ls, v, vs, len, c0, hdv, inv, o, os); break; \
		}                                                                         \
	}                                                                                 \
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
		for (int c0 = 0; c0 < hdv; c0 += 64) {                                    \
			int nc = (hdv - c0 + 15) / 16;                                    \
                                                                                          \
			values_##NG(nc > 4 ? 4 : nc, sc, ls, v, vs, len, c0, hdv, inv,    \
				    o, os);                                               \
		}                                                                         \
	}
VALUES_NC(1)
VALUES_NC(2)
VALUES_NC(3)
VALUES_NC(4)

void strata_attn_heads_avx512(STRATA_ATTN_HEADS_ARGS)
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
