/*
 * quants_k_avx2.c - K-quant kernels (Q2_K .. Q6_K x Q8_K) at the AVX2 level
 * (AVX2 + FMA + F16C; runs only after strata_simd_detect() said so).
 *
 * The AVX-512 level's scheme (quants_k_avx512.c) in 256-bit vectors: a
 * tile is one weight row against up to four tokens; each 32 values of a
 * super-block are unpacked once into unsigned bytes (natural order) and an
 * int16 scale per byte pair, then per token vpmaddubsw (u8 x s8 -> pairs,
 * no saturation: |w| <= 63, |x| <= 127) and vpmaddwd with the scales give
 * int32 partial dots, summed over the super-block.  Q3_K/Q6_K offsets and
 * Q2/4/5_K mins go through the activations' 16-value sums.
 */
#include <math.h>
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "quants_k_r8.h"
#include "quants_k_x86.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define NT_MAX 4
#define QK STRATA_QK_K
#define PF_DIST 1536

enum ktype { K2, K3, K4, K5, K6 };

/* Per super-block state of one row. */
struct kblk {
	const uint8_t *b;
	__m256i sc;   /* scale source: bytes (K2/K4/K5) or int16 (K3/K6) */
	__m256i corr; /* int16 per 16 values: offset x scale (K3, K6) */
	__m256i mins; /* int16 min per 16 values (K2, K4, K5) */
	__m256i hi;   /* the high-bit bytes (K3 hmask, K5 qh), both lanes */
	float d, dmin;
};

static float ld_fp16(const uint8_t *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	return _cvtsh_ss(h);
}

/* Q3_K: the sixteen 6-bit scales minus 32, as int8. */
AI __m128i q3k_scales(const uint8_t *s)
{
	uint32_t a = strata_k_ld32(s), b = strata_k_ld32(s + 4), c = strata_k_ld32(s + 8);

	return _mm_sub_epi8(_mm_setr_epi32(
		(int)((a & 0x0f0f0f0f) | ((c << 4) & 0x30303030)),
		(int)((b & 0x0f0f0f0f) | ((c << 2) & 0x30303030)),
		(int)(((a >> 4) & 0x0f0f0f0f) | (c & 0x30303030)),
		(int)(((b >> 4) & 0x0f0f0f0f) | ((c >> 2) & 0x30303030))),
		_mm_set1_epi8(32));
}

/* int16 lanes: [src byte i] x8 | [src byte j] x8 (src: the same 16 bytes in
 * both lanes, zero-extended). */
AI __m256i pick_u8(__m256i src, int i, int j)
{
	const __m256i ctl = _mm256_setr_epi8(
		(char)i, -1, (char)i, -1, (char)i, -1, (char)i, -1,
		(char)i, -1, (char)i, -1, (char)i, -1, (char)i, -1,
		(char)j, -1, (char)j, -1, (char)j, -1, (char)j, -1,
		(char)j, -1, (char)j, -1, (char)j, -1, (char)j, -1);

	return _mm256_shuffle_epi8(src, ctl);
}

/* int16 lanes: [src16 element i] x8 | [element j] x8, i, j < 16, of int16
 * source src16 (elements 0..7 in the low lane, 8..15 in the high one). */
AI __m256i pick_i16(__m256i src16, int i, int j)
{
	/* Each immediate a literal: clang wants one before inlining, GCC folds either way. */
	const __m256i lo = i < 8 ? _mm256_permute2x128_si256(src16, src16, 0x00)
				 : _mm256_permute2x128_si256(src16, src16, 0x11);
	const __m256i hi = j < 8 ? _mm256_permute2x128_si256(src16, src16, 0x00)
				 : _mm256_permute2x128_si256(src16, src16, 0x11);
	const __m256i both = _mm256_blend_epi32(lo, hi, 0xf0);
	const int a = 2 * (i % 8), c = 2 * (j % 8);
	const __m256i ctl = _mm256_setr_epi8(
		(char)a, (char)(a + 1), (char)a, (char)(a + 1), (char)a, (char)(a + 1),
		(char)a, (char)(a + 1), (char)a, (char)(a + 1), (char)a, (char)(a + 1),
		(char)a, (char)(a + 1), (char)a, (char)(a + 1),
		(char)c, (char)(c + 1), (char)c, (char)(c + 1), (char)c, (char)(c + 1),
		(char)c, (char)(c + 1), (char)c, (char)(c + 1), (char)c, (char)(c + 1),
		(char)c, (char)(c + 1), (char)c, (char)(c + 1));

	return _mm256_shuffle_epi8(both, ctl);
}

AI __m256i bcast128(__m128i v)
{
	return _mm256_broadcastsi128_si256(v);
}

AI void kblock(enum ktype T, const uint8_t *b, struct kblk *o)
{
	o->b = b;
	o->corr = o->mins = o->hi = _mm256_setzero_si256();
	o->dmin = 0.0f;
	switch (T) {
	case K2: {
		__m128i s = _mm_loadu_si128((const __m128i *)b);

		o->sc = bcast128(_mm_and_si128(s, _mm_set1_epi8(0x0f)));
		o->mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4),
							     _mm_set1_epi8(0x0f)));
		o->d = ld_fp16(b + 80);
		o->dmin = ld_fp16(b + 82);
		break;
	}
	case K3:
		o->sc = _mm256_cvtepi8_epi16(q3k_scales(b + 96));
		o->corr = _mm256_mullo_epi16(o->sc, _mm256_set1_epi16(-4));
		o->hi = _mm256_loadu_si256((const __m256i *)b);
		o->d = ld_fp16(b + 108);
		break;
	case K4:
	case K5:
		o->sc = bcast128(strata_q4k_scales(b + 4));
		o->mins = _mm256_shuffle_epi8(o->sc, _mm256_setr_epi8(
			8, -1, 8, -1, 9, -1, 9, -1, 10, -1, 10, -1, 11, -1, 11, -1,
			12, -1, 12, -1, 13, -1, 13, -1, 14, -1, 14, -1, 15, -1, 15, -1));
		if (T == K5)
			o->hi = _mm256_loadu_si256((const __m256i *)(b + 16));
		o->d = ld_fp16(b);
		o->dmin = ld_fp16(b + 2);
		break;
	case K6:
		o->sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 192)));
		o->corr = _mm256_slli_epi16(_mm256_sub_epi16(_mm256_setzero_si256(), o->sc), 5);
		o->d = ld_fp16(b + 208);
		break;
	}
}

/* Bytes where bit `bit` of hi is set get `add`. */
AI __m256i add_if_bit(__m256i w, __m256i hi, int bit, int add)
{
	const __m256i m = _mm256_set1_epi8((char)(1 << bit));

	return _mm256_add_epi8(w, _mm256_and_si256(
		_mm256_cmpeq_epi8(_mm256_and_si256(hi, m), m), _mm256_set1_epi8((char)add)));
}

/* Values 32c .. 32c+31 as unsigned bytes, and their pair scales. */
AI void kchunk(enum ktype T, const struct kblk *o, int c, __m256i *w, __m256i *s)
{
	const uint8_t *b = o->b;
	const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(3);

	switch (T) {
	case K2:
	case K3: {
		const uint8_t *qs = b + (T == K2 ? 16 : 32) + 32 * (c / 4);
		__m256i q = _mm256_loadu_si256((const __m256i *)qs);

		*w = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (c % 4)), m2);
		if (T == K3) {
			*w = add_if_bit(*w, o->hi, c, 4);
			*s = pick_i16(o->sc, 2 * c, 2 * c + 1);
		} else {
			*s = pick_u8(o->sc, 2 * c, 2 * c + 1);
		}
		break;
	}
	case K4:
	case K5: {
		const uint8_t *qs = b + (T == K4 ? 16 : 48) + 32 * (c / 2);
		__m256i q = _mm256_loadu_si256((const __m256i *)qs);

		*w = _mm256_and_si256(_mm256_srli_epi16(q, 4 * (c % 2)), m4);
		if (T == K5)
			*w = add_if_bit(*w, o->hi, c, 16);
		*s = pick_u8(o->sc, c, c);
		break;
	}
	case K6: {
		const int n = c / 4, qt = c % 4;
		__m256i l = _mm256_loadu_si256((const __m256i *)(b + 64 * n + 32 * (qt % 2)));
		__m256i h = _mm256_loadu_si256((const __m256i *)(b + 128 + 32 * n));

		*w = _mm256_or_si256(
			_mm256_and_si256(_mm256_srli_epi16(l, 4 * (qt / 2)), m4),
			_mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * qt), m2), 4));
		*s = pick_i16(o->sc, 2 * c, 2 * c + 1);
		break;
	}
	}
}

AI float hsum8(__m256 v)
{
	__m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	h = _mm_add_ps(h, _mm_movehl_ps(h, h));
	h = _mm_add_ss(h, _mm_movehdup_ps(h));
	return _mm_cvtss_f32(h);
}

/* The sum of v's eight int32 lanes (exact). */
AI int32_t hsum_i32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	return _mm_cvtsi128_si32(s);
}

/*
 * Types that also have a row-interleaved kernel sum as it does: per
 * super-block the exact integer sums S (scales applied) and M (mins), then
 * y = fma(S, d d_x, y) and y = fma(-M, dmin d_x, y), in float, for each row
 * and token.  The others keep eight partial sums per row (one per lane)
 * and add them at the end.
 */
#define BSUM_ORDER(T) ((T) == K4 || (T) == K6)

AI void ktile(enum ktype T, size_t bbytes, int NT, const struct strata_mm_args *a,
	      int64_t r, int64_t t0)
{
	const uint8_t *w = a->w + r * a->w_stride;
	const uint8_t *x[NT_MAX];
	__m256 acc[NT_MAX];
	const int64_t k = a->k, nb = k / QK;
	float sacc[NT_MAX];

	UNROLL for (int u = 0; u < NT; u++) {
		x[u] = a->x + (t0 + u) * a->x_stride;
		acc[u] = _mm256_setzero_ps();
		sacc[u] = 0.0f;
	}
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *blk = w + b * bbytes;
		__m256i is[NT_MAX], bs[NT_MAX];
		struct kblk o;

		if (NT == 1)
			for (size_t p = 0; p < bbytes; p += 64)
				_mm_prefetch((const char *)blk + PF_DIST + p, _MM_HINT_T0);
		kblock(T, blk, &o);
		UNROLL for (int u = 0; u < NT; u++) {
			bs[u] = _mm256_loadu_si256(
				(const __m256i *)(STRATA_Q8K_BSUMS(x[u], k) + b * 16));
			is[u] = T == K3 || T == K6 ? _mm256_madd_epi16(o.corr, bs[u])
						   : _mm256_setzero_si256();
		}
		UNROLL for (int c = 0; c < 8; c++) {
			__m256i wv, sv;

			kchunk(T, &o, c, &wv, &sv);
			UNROLL for (int u = 0; u < NT; u++) {
				__m256i xv = _mm256_loadu_si256((const __m256i *)(
					STRATA_Q8K_QS(x[u]) + b * QK + 32 * c));

				is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(
					_mm256_maddubs_epi16(wv, xv), sv));
			}
		}
		UNROLL for (int u = 0; u < NT; u++) {
			const float dx = STRATA_Q8K_D(x[u], k)[b];

			if (BSUM_ORDER(T)) {
				sacc[u] = fmaf((float)hsum_i32(is[u]), o.d * dx, sacc[u]);
				if (T == K4)
					sacc[u] = fmaf(-(float)hsum_i32(_mm256_madd_epi16(o.mins, bs[u])),
						       o.dmin * dx, sacc[u]);
				continue;
			}
			acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[u]),
						 _mm256_set1_ps(o.d * dx), acc[u]);
			if (T == K2 || T == K4 || T == K5)
				acc[u] = _mm256_fnmadd_ps(
					_mm256_cvtepi32_ps(_mm256_madd_epi16(o.mins, bs[u])),
					_mm256_set1_ps(o.dmin * dx), acc[u]);
		}
	}
	UNROLL for (int u = 0; u < NT; u++)
		a->y[(t0 + u) * a->ldy + r] = BSUM_ORDER(T) ? sacc[u] : hsum8(acc[u]);
}

typedef void (*tile_fn)(const struct strata_mm_args *a, int64_t r, int64_t t0);

/* Rows in blocks of RB so a tile's activations are read from L1 by the
 * whole block (see quants_k_avx512.c). */
#define RB 16

static void run_tiles(tile_fn const tab[NT_MAX], const struct strata_mm_args *a)
{
	for (int64_t r0 = 0; r0 < a->nr; r0 += RB) {
		int64_t r1 = a->nr - r0 < RB ? a->nr : r0 + RB;

		for (int64_t t = 0; t < a->nt; t += NT_MAX) {
			int nt = a->nt - t < NT_MAX ? (int)(a->nt - t) : NT_MAX;

			for (int64_t r = r0; r < r1; r++)
				tab[nt - 1](a, r, t);
		}
	}
}

#define DEF_TILE(name, T, bytes, nt)                                         \
	static void name##_##nt(const struct strata_mm_args *a, int64_t r,   \
				int64_t t0)                                  \
	{                                                                    \
		ktile(T, bytes, nt, a, r, t0);                               \
	}
#define DEF_KTYPE(name, T, bytes)                                            \
	DEF_TILE(name, T, bytes, 1) DEF_TILE(name, T, bytes, 2)              \
	DEF_TILE(name, T, bytes, 3) DEF_TILE(name, T, bytes, 4)              \
	void strata_##name##_mm_avx2(const struct strata_mm_args *a)         \
	{                                                                    \
		static tile_fn const tab[NT_MAX] = {                         \
			name##_1, name##_2, name##_3, name##_4,              \
		};                                                           \
		run_tiles(tab, a);                                           \
	}

DEF_KTYPE(q2_k, K2, STRATA_Q2_K_BYTES)
DEF_KTYPE(q3_k, K3, STRATA_Q3_K_BYTES)
DEF_KTYPE(q5_k, K5, STRATA_Q5_K_BYTES)

/*
 * Q4_K and Q6_K: from STRATA_K8_MIN_TOKENS tokens on, rows interleaved
 * eight at a time (quants_k_r8_avx2.c); below, ktile, one row at a time,
 * in the same float order (see BSUM_ORDER), so a token's outputs do not
 * depend on the batch.
 */
#define DEF_K8(name, T, bytes)                                                       \
	DEF_TILE(name, T, bytes, 1) DEF_TILE(name, T, bytes, 2)                      \
	DEF_TILE(name, T, bytes, 3) DEF_TILE(name, T, bytes, 4)                      \
	void strata_##name##_mm_avx2(const struct strata_mm_args *a)                 \
	{                                                                            \
		static tile_fn const tab[NT_MAX] = {                                 \
			name##_1, name##_2, name##_3, name##_4,                      \
		};                                                                   \
		if (a->nt >= STRATA_K8_MIN_TOKENS)                                   \
			strata_##name##_r8_avx2(a);                                  \
		else                                                                 \
			run_tiles(tab, a);                                           \
	}

DEF_K8(q4_k, K4, STRATA_Q4_K_BYTES)
DEF_K8(q6_k, K6, STRATA_Q6_K_BYTES)

/* ---- Q8_K activations ------------------------------------------------------- */

/* Same values as strata_q8k_quantize (quants_k_avx512.c's, at AVX2): iscale
 * and d computed the same scalar way, the products rounded to nearest even
 * (the default MXCSR mode of vcvtps2dq), +128 clamped to 127. */
void strata_q8k_quantize_avx2(const float *x, void *dst, int64_t k)
{
	int8_t *qs = dst;
	int16_t *bsums = (int16_t *)(qs + k);
	float *ds = (float *)((uint8_t *)dst + k + k / 8);
	const __m256 sign = _mm256_set1_ps(-0.0f);
	const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
	const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);

	for (int64_t b = 0; b < k / QK; b++) {
		const float *xb = x + b * QK;
		int8_t *q = qs + b * QK;
		__m256 vmax = _mm256_setzero_ps(), is;
		__m128 m4;
		float amax, max = 0.0f;

		for (int i = 0; i < QK; i += 8)
			vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + i)));
		m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
		m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
		m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
		amax = _mm_cvtss_f32(m4);
		if (amax == 0.0f) {
			ds[b] = 0.0f;
			memset(q, 0, QK);
			memset(bsums + b * 16, 0, 16 * sizeof(int16_t));
			continue;
		}
		/* the first value of that magnitude decides the sign */
		for (int i = 0; i < QK; i += 8) {
			const int m = _mm256_movemask_ps(_mm256_cmp_ps(
				_mm256_andnot_ps(sign, _mm256_loadu_ps(xb + i)), _mm256_set1_ps(amax),
				_CMP_EQ_OQ));

			if (m) {
				max = xb[i + __builtin_ctz((unsigned)m)];
				break;
			}
		}
		is = _mm256_set1_ps(-127.0f / max);
		for (int i = 0; i < QK; i += 32) {
			__m256i v[4], p, s;
			int32_t part[8];

			for (int h = 0; h < 4; h++)
				v[h] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(
					_mm256_loadu_ps(xb + i + 8 * h), is)), _mm256_set1_epi32(127));
			p = _mm256_permutevar8x32_epi32(
				_mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]),
						   _mm256_packs_epi32(v[2], v[3])), perm);
			_mm256_storeu_si256((__m256i *)(q + i), p);
			/* sums of two, four, then sixteen: lanes 0 and 4 hold the two groups */
			s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, p), ones16);
			s = _mm256_hadd_epi32(s, s);
			s = _mm256_hadd_epi32(s, s);
			_mm256_storeu_si256((__m256i *)part, s);
			bsums[b * 16 + i / 16] = (int16_t)part[0];
			bsums[b * 16 + i / 16 + 1] = (int16_t)part[4];
		}
		ds[b] = 1 / (-127.0f / max);
	}
}

#endif
