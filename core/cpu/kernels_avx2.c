/*
 * kernels_avx2.c - the AVX2 + FMA + F16C level (built with those -m flags;
 * runs only after strata_simd_detect() said the CPU has them).
 *
 * Same structure as the AVX-512 level with 8-wide vectors and tiles of up to
 * 4 rows x 2 tokens (16 ymm registers hold 8 accumulators plus the row
 * vectors).  Q8_0 weights run in q8_0_r8_avx2.c (rows interleaved eight at
 * a time); this file quantises their activations, which Q4_0, Q5_0 and
 * IQ4_NL share.
 */
#include <string.h>

#include "kernels_impl.h"
#include "iq4_nl_r16.h"
#include "q4_k_r16.h"
#include "q6_k_r16.h"
#include "q8_0_r16.h"
#include "quants.h"
#include "quants_iq.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "vexp.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 4")
#define MR 4 /* tile rows */
#define MT 2 /* tile tokens */
#define PF_DIST 1536 /* GEMV prefetch distance, as in the AVX-512 level */

typedef void (*tile_fn)(const struct strata_mm_args *a, int64_t r0, int64_t t0);

static size_t round64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* [sum a0, sum a1, sum a2, sum a3] */
AI __m128 hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
	__m256 d = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));

	return _mm_add_ps(_mm256_castps256_ps128(d), _mm256_extractf128_ps(d, 1));
}

AI void store_tile(int NR, int NT, __m256 acc[MR][MT],
		   const struct strata_mm_args *a, int64_t r0, int64_t t0)
{
	UNROLL for (int u = 0; u < NT; u++) {
		__m256 s[MR];
		__m128 v;
		float *y = a->y + (t0 + u) * a->ldy + r0;

		UNROLL for (int j = 0; j < MR; j++)
			s[j] = j < NR ? acc[j][u] : _mm256_setzero_ps();
		v = hsum4(s[0], s[1], s[2], s[3]);
		if (NR == 4) {
			_mm_storeu_ps(y, v);
		} else {
			float tmp[4];

			_mm_storeu_ps(tmp, v);
			UNROLL for (int j = 0; j < NR; j++)
				y[j] = tmp[j];
		}
	}
}

/* ---- F32 / F16 / BF16 weights, f32 activations ------------------------------ */

enum { W_F32, W_F16, W_BF16 };

AI __m256 load_w(int kind, const uint8_t *w, int64_t i)
{
	__m128i h;

	if (kind == W_F32)
		return _mm256_loadu_ps((const float *)w + i);
	h = _mm_loadu_si128((const __m128i *)(w + 2 * i));
	if (kind == W_F16)
		return _mm256_cvtph_ps(h);
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

AI void tile_float(int kind, int NR, int NT, const struct strata_mm_args *a,
		   int64_t r0, int64_t t0)
{
	const int esize = kind == W_F32 ? 4 : 2;
	const uint8_t *w[MR];
	const float *x[MT];
	__m256 acc[MR][MT];
	const int64_t k = a->k;
	int64_t i = 0;

	UNROLL for (int j = 0; j < NR; j++)
		w[j] = a->w + (r0 + j) * a->w_stride;
	UNROLL for (int u = 0; u < NT; u++)
		x[u] = (const float *)(a->x + (t0 + u) * a->x_stride);
	UNROLL for (int j = 0; j < NR; j++)
		UNROLL for (int u = 0; u < NT; u++)
			acc[j][u] = _mm256_setzero_ps();
	for (; i + 8 <= k; i += 8) {
		__m256 wv[MR];

		UNROLL for (int j = 0; j < NR; j++) {
			if (NT == 1 && (i & 15) == 0)
				_mm_prefetch((const char *)w[j] + i * esize + PF_DIST,
					     _MM_HINT_T0);
			wv[j] = load_w(kind, w[j], i);
		}
		UNROLL for (int u = 0; u < NT; u++) {
			__m256 xv = _mm256_loadu_ps(x[u] + i);

			UNROLL for (int j = 0; j < NR; j++)
				acc[j][u] = _mm256_fmadd_ps(wv[j], xv, acc[j][u]);
		}
	}
	if (i < k) {
		/* Zero-padded copies: no masked 16-bit loads before AVX-512. */
		const size_t rem = (size_t)(k - i);
		uint8_t wb[MR][32];
		float xb[8];
		__m256 wv[MR];

		UNROLL for (int j = 0; j < NR; j++) {
			memset(wb[j], 0, sizeof(wb[j]));
			memcpy(wb[j], w[j] + i * esize, rem * esize);
			wv[j] = load_w(kind, wb[j], 0);
		}
		UNROLL for (int u = 0; u < NT; u++) {
			__m256 xv;

			memset(xb, 0, sizeof(xb));
			memcpy(xb, x[u] + i, rem * sizeof(float));
			xv = _mm256_loadu_ps(xb);
			UNROLL for (int j = 0; j < NR; j++)
				acc[j][u] = _mm256_fmadd_ps(wv[j], xv, acc[j][u]);
		}
	}
	store_tile(NR, NT, acc, a, r0, t0);
}

/* ---- Q8_0 activations -------------------------------------------------------- */

/* Activation row: qs[k] int8, then d[k/32] float (the scalar layout). */
static size_t q8_row_bytes(int64_t k)
{
	return round64((size_t)k + (size_t)(k / STRATA_QK8_0) * sizeof(float));
}

static void q8_quantize(const float *x, void *dst, int64_t k)
{
	int8_t *qs = dst;
	float *ds = (float *)(qs + k);
	const __m256 sign = _mm256_set1_ps(-0.0f);
	const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

	for (int64_t b = 0; b < k / STRATA_QK8_0; b++) {
		__m256 v[4], m;
		__m128 h;
		__m256i iv[4], q;
		float amax, id;

		UNROLL for (int i = 0; i < 4; i++)
			v[i] = _mm256_loadu_ps(x + b * 32 + 8 * i);
		m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]),
						_mm256_andnot_ps(sign, v[1])),
				  _mm256_max_ps(_mm256_andnot_ps(sign, v[2]),
						_mm256_andnot_ps(sign, v[3])));
		h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
		h = _mm_max_ps(h, _mm_movehl_ps(h, h));
		h = _mm_max_ss(h, _mm_movehdup_ps(h));
		amax = _mm_cvtss_f32(h);
		id = amax != 0.0f ? 127.0f / amax : 0.0f;
		ds[b] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, 0));
		UNROLL for (int i = 0; i < 4; i++)
			iv[i] = _mm256_cvtps_epi32(_mm256_round_ps(
				_mm256_mul_ps(v[i], _mm256_set1_ps(id)),
				_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		/* The packs interleave 128-bit lanes; perm restores order. */
		q = _mm256_packs_epi16(_mm256_packs_epi32(iv[0], iv[1]),
				       _mm256_packs_epi32(iv[2], iv[3]));
		_mm256_storeu_si256((__m256i *)(qs + b * 32),
				    _mm256_permutevar8x32_epi32(q, perm));
	}
}

static void q8_peek(const void *row, int64_t k, int64_t i, int8_t *q, float *d)
{
	const uint8_t *p = row;

	*q = (int8_t)p[i];
	memcpy(d, p + k + (i / STRATA_QK8_0) * sizeof(float), sizeof(float));
}

/* ---- tile instantiation and the per-type drivers ---------------------------- */

#define DEF_TILE(fam, call, nr, nt)                                          \
	static void fam##_##nr##x##nt(const struct strata_mm_args *a,        \
				      int64_t r0, int64_t t0)                \
	{                                                                    \
		call(nr, nt, a, r0, t0);                                     \
	}
#define DEF_TILES_ROW(fam, call, nr)                                         \
	DEF_TILE(fam, call, nr, 1) DEF_TILE(fam, call, nr, 2)
#define DEF_TILES(fam, call)                                                 \
	DEF_TILES_ROW(fam, call, 1) DEF_TILES_ROW(fam, call, 2)              \
	DEF_TILES_ROW(fam, call, 3) DEF_TILES_ROW(fam, call, 4)              \
	static tile_fn const fam##_tiles[MR][MT] = {                         \
		{ fam##_1x1, fam##_1x2 }, { fam##_2x1, fam##_2x2 },          \
		{ fam##_3x1, fam##_3x2 }, { fam##_4x1, fam##_4x2 },          \
	};                                                                   \
	static void mm_##fam(const struct strata_mm_args *a)                 \
	{                                                                    \
		run_tiles(fam##_tiles, a);                                   \
	}

static void run_tiles(tile_fn const tab[MR][MT], const struct strata_mm_args *a)
{
	for (int64_t r = 0; r < a->nr; r += MR) {
		int nr = a->nr - r < MR ? (int)(a->nr - r) : MR;

		for (int64_t t = 0; t < a->nt; t += MT) {
			int nt = a->nt - t < MT ? (int)(a->nt - t) : MT;

			tab[nr - 1][nt - 1](a, r, t);
		}
	}
}

#define CALL_F32(nr, nt, a, r, t) tile_float(W_F32, nr, nt, a, r, t)
#define CALL_F16(nr, nt, a, r, t) tile_float(W_F16, nr, nt, a, r, t)
#define CALL_BF16(nr, nt, a, r, t) tile_float(W_BF16, nr, nt, a, r, t)

DEF_TILES(f32, CALL_F32)
DEF_TILES(f16, CALL_F16)
DEF_TILES(bf16, CALL_BF16)

/* ---- to_float ------------------------------------------------------------- */

static void f16_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *s = src;
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, load_w(W_F16, s, i));
	for (; i < n; i++) {
		uint16_t h;

		memcpy(&h, s + 2 * i, 2);
		dst[i] = _cvtsh_ss(h);
	}
}

static void bf16_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *s = src;
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, load_w(W_BF16, s, i));
	for (; i < n; i++) {
		uint16_t h;

		memcpy(&h, s + 2 * i, 2);
		dst[i] = strata_bf16_to_f32(h);
	}
}

static void q8_0_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *p = src;

	for (int64_t b = 0; b < n / STRATA_QK8_0; b++, p += STRATA_Q8_0_BYTES) {
		uint16_t h;
		__m256 d;

		memcpy(&h, p, 2);
		d = _mm256_set1_ps(_cvtsh_ss(h));
		UNROLL for (int i = 0; i < 4; i++) {
			__m256i q = _mm256_cvtepi8_epi32(
				_mm_loadl_epi64((const __m128i *)(p + 2 + 8 * i)));

			_mm256_storeu_ps(dst + b * 32 + 8 * i,
					 _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
		}
	}
}

/* ---- vectors ------------------------------------------------------------- */

static const int32_t g_mask_tab[16] = { -1, -1, -1, -1, -1, -1, -1, -1,
					0, 0, 0, 0, 0, 0, 0, 0 };

/* Lanes [0, rem) set, rem in 1..7. */
AI __m256i tail_mask(int64_t rem)
{
	return _mm256_loadu_si256((const __m256i *)(g_mask_tab + 8 - rem));
}

static float dot_f32(const float *a, const float *b, int64_t n)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	__m128 h;
	int64_t i = 0;

	for (; i + 32 <= n; i += 32) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8),
				     _mm256_loadu_ps(b + i + 8), s1);
		s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16),
				     _mm256_loadu_ps(b + i + 16), s2);
		s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24),
				     _mm256_loadu_ps(b + i + 24), s3);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	if (i < n) {
		__m256i m = tail_mask(n - i);

		s2 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m),
				     _mm256_maskload_ps(b + i, m), s2);
	}
	s0 = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
	h = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
	h = _mm_add_ps(h, _mm_movehl_ps(h, h));
	h = _mm_add_ss(h, _mm_movehdup_ps(h));
	return _mm_cvtss_f32(h);
}

/* The scalar level's eight partial double sums, lane for lane: x * x is
 * exact in double, so the FMA rounds as the scalar add does. */
double strata_sumsq_f32_avx2(const float *x, int64_t n)
{
	__m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
	double p[8];
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		const __m256 v = _mm256_loadu_ps(x + i);
		const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
		const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));

		a0 = _mm256_fmadd_pd(lo, lo, a0);
		a1 = _mm256_fmadd_pd(hi, hi, a1);
	}
	_mm256_storeu_pd(p, a0);
	_mm256_storeu_pd(p + 4, a1);
	for (; i < n; i++)
		p[0] += (double)x[i] * x[i];
	return ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
}

void strata_scale_mul_f32_avx2(float *y, const float *x, float s, const float *w, int64_t n)
{
	const __m256 sv = _mm256_set1_ps(s);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), sv);

		_mm256_storeu_ps(y + i, w ? _mm256_mul_ps(v, _mm256_loadu_ps(w + i)) : v);
	}
	for (; i < n; i++)
		y[i] = w ? x[i] * s * w[i] : x[i] * s;
}

static void axpy_f32(float *y, float a, const float *x, int64_t n)
{
	const __m256 av = _mm256_set1_ps(a);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i),
							_mm256_loadu_ps(y + i)));
	if (i < n) {
		__m256i m = tail_mask(n - i);

		_mm256_maskstore_ps(y + i, m,
			_mm256_fmadd_ps(av, _mm256_maskload_ps(x + i, m),
					_mm256_maskload_ps(y + i, m)));
	}
}

static void mul_acc_f32(float *y, const float *a, const float *b, int64_t n)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i),
							_mm256_loadu_ps(y + i)));
	if (i < n) {
		__m256i m = tail_mask(n - i);

		_mm256_maskstore_ps(y + i, m,
			_mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m),
					_mm256_maskload_ps(y + i, m)));
	}
}

static void axpby_f32(float *y, float a, const float *x, float b, int64_t n)
{
	const __m256 av = _mm256_set1_ps(a), bv = _mm256_set1_ps(b);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(bv, _mm256_loadu_ps(y + i),
							_mm256_mul_ps(av, _mm256_loadu_ps(x + i))));
	if (i < n) {
		__m256i m = tail_mask(n - i);

		_mm256_maskstore_ps(y + i, m,
			_mm256_fmadd_ps(bv, _mm256_maskload_ps(y + i, m),
					_mm256_mul_ps(av, _mm256_maskload_ps(x + i, m))));
	}
}

/* exp(x) with x clamped to +-87 (strata_exp8's range): NaN passes (max/min
 * return their second operand when one is NaN). */
AI __m256 exp_ps(__m256 x)
{
	return strata_exp8(_mm256_min_ps(_mm256_set1_ps(87.0f),
					 _mm256_max_ps(_mm256_set1_ps(-87.0f), x)));
}

/* x / (1 + exp(-y)) * m: silu(g) * u is (g, g, u); x * sigmoid(y) is (x, y, 1). */
AI __m256 gate(__m256 x, __m256 y, __m256 m)
{
	const __m256 one = _mm256_set1_ps(1.0f);

	return _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(
		_mm256_setzero_ps(), y)))), m);
}

static void silu_mul_f32(float *o, const float *g, const float *u, int64_t n)
{
	int64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 gv = _mm256_loadu_ps(g + i);

		_mm256_storeu_ps(o + i, gate(gv, gv, _mm256_loadu_ps(u + i)));
	}
	if (i < n) {
		__m256i m = tail_mask(n - i);
		__m256 gv = _mm256_maskload_ps(g + i, m);

		_mm256_maskstore_ps(o + i, m, gate(gv, gv, _mm256_maskload_ps(u + i, m)));
	}
}

static void sigmoid_mul_f32(float *o, const float *x, const float *y, int64_t n)
{
	const __m256 one = _mm256_set1_ps(1.0f);
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(o + i, gate(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), one));
	if (i < n) {
		__m256i m = tail_mask(n - i);

		_mm256_maskstore_ps(o + i, m, gate(_mm256_maskload_ps(x + i, m),
						   _mm256_maskload_ps(y + i, m), one));
	}
}

const struct strata_kern_level strata_kern_avx2 = {
	.name = "avx2",
	.q8_0_r16_mm = strata_q8_0_r16_mm_avx2,
	.q4_k_r16_mm = strata_q4_k_r16_mm_avx2,
	.q6_k_r16_mm = strata_q6_k_r16_mm_avx2,
	.iq4_nl_r16_mm = strata_iq4_nl_r16_mm_avx2,
	.act = {
		[STRATA_ACT_Q8_0] = { q8_row_bytes, q8_quantize, q8_peek },
		[STRATA_ACT_Q8_K] = { strata_q8k_row_bytes, strata_q8k_quantize_avx2,
				      strata_q8k_peek },
		[STRATA_ACT_Q8_1] = { strata_q8_1_row_bytes,
				      strata_q8_1_quantize_avx2, strata_q8_1_peek },
	},
	.type = {
		[STRATA_TYPE_F32] = { STRATA_ACT_F32, mm_f32, NULL },
		[STRATA_TYPE_F16] = { STRATA_ACT_F32, mm_f16, f16_to_float },
		[STRATA_TYPE_BF16] = { STRATA_ACT_F32, mm_bf16, bf16_to_float },
		[STRATA_TYPE_Q8_0] = { STRATA_ACT_Q8_0, strata_q8_0_mm_avx2, q8_0_to_float },
		[STRATA_TYPE_Q4_0] = { STRATA_ACT_Q8_0, strata_q4_0_mm_avx2,
				      strata_q4_0_to_float_avx2 },
		[STRATA_TYPE_Q4_1] = { STRATA_ACT_Q8_1, strata_q4_1_mm_avx2,
				      strata_q4_1_to_float_avx2 },
		[STRATA_TYPE_Q5_0] = { STRATA_ACT_Q8_0, strata_q5_0_mm_avx2,
				      strata_q5_0_to_float_avx2 },
		[STRATA_TYPE_Q5_1] = { STRATA_ACT_Q8_1, strata_q5_1_mm_avx2,
				      strata_q5_1_to_float_avx2 },
		[STRATA_TYPE_IQ4_NL] = { STRATA_ACT_Q8_0, strata_iq4_nl_mm_avx2,
				      strata_iq4_nl_to_float_avx2 },
		[STRATA_TYPE_Q2_K] = { STRATA_ACT_Q8_K, strata_q2_k_mm_avx2,
				      NULL },
		[STRATA_TYPE_Q3_K] = { STRATA_ACT_Q8_K, strata_q3_k_mm_avx2,
				      NULL },
		[STRATA_TYPE_Q4_K] = { STRATA_ACT_Q8_K, strata_q4_k_mm_avx2,
				      NULL },
		[STRATA_TYPE_Q5_K] = { STRATA_ACT_Q8_K, strata_q5_k_mm_avx2,
				      NULL },
		[STRATA_TYPE_Q6_K] = { STRATA_ACT_Q8_K, strata_q6_k_mm_avx2,
				      NULL },
		[STRATA_TYPE_IQ2_XS] = { STRATA_ACT_Q8_K,
					 strata_iq2_xs_mm_avx2, NULL },
		[STRATA_TYPE_IQ2_S] = { STRATA_ACT_Q8_K,
					strata_iq2_s_mm_avx2, NULL },
		[STRATA_TYPE_IQ3_XXS] = { STRATA_ACT_Q8_K,
					  strata_iq3_xxs_mm_avx2, NULL },
		[STRATA_TYPE_IQ3_S] = { STRATA_ACT_Q8_K,
					strata_iq3_s_mm_avx2, NULL },
		[STRATA_TYPE_IQ1_M] = { STRATA_ACT_Q8_K,
					strata_iq1_m_mm_avx2, NULL },
	},
	.dot_f32 = dot_f32,
	.axpy_f32 = axpy_f32,
	.mul_acc_f32 = mul_acc_f32,
	.axpby_f32 = axpby_f32,
	.silu_mul_f32 = silu_mul_f32,
	.sigmoid_mul_f32 = sigmoid_mul_f32,
	.sumsq_f32 = strata_sumsq_f32_avx2,
	.scale_mul_f32 = strata_scale_mul_f32_avx2,
};

#endif
