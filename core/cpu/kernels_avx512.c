/*
 * kernels_avx512.c - the AVX-512 level (F/BW/DQ/VL + VNNI; built with those
 * -m flags, so nothing here may run before strata_simd_detect() said yes).
 *
 * Matmul works on tiles of up to 4 rows x 4 tokens: each loaded weight
 * vector is used for 4 tokens and each activation vector for 4 rows, with 16
 * independent accumulators to keep the FMA/VNNI pipes busy.  The tile
 * kernels are written once (always_inline, constant NR/NT) and instantiated
 * for every edge size.
 *
 * The activation row of Q8_0 (used by Q4_0, Q5_0 and IQ4_NL too) carries,
 * besides the int8 values and scales, -128 * the sum of each group of four
 * and of each block: vpdpbusd multiplies unsigned by signed bytes, so the
 * weights are made unsigned by flipping their sign bit (w + 128) and those
 * sums cancel the extra 128 * sum(x), keeping the integer dot exact.  Q8_0
 * weights run in q8_0_r16_avx512.c, on rows interleaved sixteen at a time.
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
#define MT 4 /* tile tokens */
/* GEMV (one token) streams rows from DRAM: fetch this far ahead of each
 * row's read position (measured: +20-25% bandwidth over the hardware
 * prefetcher alone, flat between 1 and 3 KiB). */
#define PF_DIST 1536

typedef void (*tile_fn)(const struct strata_mm_args *a, int64_t r0, int64_t t0);

static size_t round64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* [sum a0, sum a1, sum a2, sum a3] */
AI __m128 hsum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
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

AI void store_rows(float *y, __m128 s, int nr)
{
	if (nr == 4)
		_mm_storeu_ps(y, s);
	else
		_mm_mask_storeu_ps(y, (__mmask8)((1u << nr) - 1), s);
}

/* Reduce acc[0..NR)[u] (+ acc2) for every token and store the outputs. */
AI void store_tile(int NR, int NT, __m512 acc[MR][MT], __m512 acc2[MR][MT],
		   const struct strata_mm_args *a, int64_t r0, int64_t t0)
{
	UNROLL for (int u = 0; u < NT; u++) {
		__m512 s[MR];

		UNROLL for (int j = 0; j < MR; j++)
			s[j] = j < NR ? _mm512_add_ps(acc[j][u], acc2[j][u])
				      : _mm512_setzero_ps();
		store_rows(a->y + (t0 + u) * a->ldy + r0,
			   hsum4(s[0], s[1], s[2], s[3]), NR);
	}
}

/* ---- F32 / F16 / BF16 weights, f32 activations ------------------------------ */

enum { W_F32, W_F16, W_BF16 };

AI __m512 widen(int kind, __m256i h)
{
	if (kind == W_F16)
		return _mm512_cvtph_ps(h);
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

AI __m512 load_w(int kind, const uint8_t *w, int64_t i)
{
	if (kind == W_F32)
		return _mm512_loadu_ps((const float *)w + i);
	return widen(kind, _mm256_loadu_si256((const __m256i *)(w + 2 * i)));
}

AI __m512 load_w_mask(int kind, const uint8_t *w, int64_t i, __mmask16 m)
{
	if (kind == W_F32)
		return _mm512_maskz_loadu_ps(m, (const float *)w + i);
	return widen(kind, _mm256_maskz_loadu_epi16(m, w + 2 * i));
}

AI void tile_float(int kind, int NR, int NT, const struct strata_mm_args *a,
		   int64_t r0, int64_t t0)
{
	const int esize = kind == W_F32 ? 4 : 2;
	const uint8_t *w[MR];
	const float *x[MT];
	__m512 acc[MR][MT], acc2[MR][MT];
	const int64_t k = a->k;
	int64_t i = 0;

	UNROLL for (int j = 0; j < NR; j++)
		w[j] = a->w + (r0 + j) * a->w_stride;
	UNROLL for (int u = 0; u < NT; u++)
		x[u] = (const float *)(a->x + (t0 + u) * a->x_stride);
	UNROLL for (int j = 0; j < NR; j++)
		UNROLL for (int u = 0; u < NT; u++)
			acc[j][u] = acc2[j][u] = _mm512_setzero_ps();
	/*
	 * Tiles of one or two rows have too few accumulators to cover the FMA
	 * latency: a second set takes the odd vectors.  Decided by the rows
	 * alone, never by the tokens, so that a token's output is the same sum
	 * in the same order in a batch of any size (one-token decode, a verify
	 * window and a prompt chunk agree bit for bit).
	 */
	if (NR <= 2) {
		for (; i + 32 <= k; i += 32) {
			__m512 wa[MR], wb[MR];

			UNROLL for (int j = 0; j < NR; j++) {
				if (NT == 1)
					_mm_prefetch((const char *)w[j] + i * esize + PF_DIST,
						     _MM_HINT_T0);
				wa[j] = load_w(kind, w[j], i);
				wb[j] = load_w(kind, w[j], i + 16);
			}
			UNROLL for (int u = 0; u < NT; u++) {
				__m512 xa = _mm512_loadu_ps(x[u] + i);
				__m512 xb = _mm512_loadu_ps(x[u] + i + 16);

				UNROLL for (int j = 0; j < NR; j++) {
					acc[j][u] = _mm512_fmadd_ps(wa[j], xa, acc[j][u]);
					acc2[j][u] = _mm512_fmadd_ps(wb[j], xb, acc2[j][u]);
				}
			}
		}
	}
	for (; i + 16 <= k; i += 16) {
		__m512 wv[MR];

		UNROLL for (int j = 0; j < NR; j++) {
			if (NT == 1)
				_mm_prefetch((const char *)w[j] + i * esize + PF_DIST,
					     _MM_HINT_T0);
			wv[j] = load_w(kind, w[j], i);
		}
		UNROLL for (int u = 0; u < NT; u++) {
			__m512 xv = _mm512_loadu_ps(x[u] + i);

			UNROLL for (int j = 0; j < NR; j++)
				acc[j][u] = _mm512_fmadd_ps(wv[j], xv, acc[j][u]);
		}
	}
	if (i < k) {
		__mmask16 m = (__mmask16)((1u << (k - i)) - 1);
		__m512 wv[MR];

		UNROLL for (int j = 0; j < NR; j++)
			wv[j] = load_w_mask(kind, w[j], i, m);
		UNROLL for (int u = 0; u < NT; u++) {
			__m512 xv = _mm512_maskz_loadu_ps(m, x[u] + i);

			UNROLL for (int j = 0; j < NR; j++)
				acc2[j][u] = _mm512_fmadd_ps(wv[j], xv, acc2[j][u]);
		}
	}
	store_tile(NR, NT, acc, acc2, a, r0, t0);
}

/* ---- Q8_0 weights x Q8_0 activations ---------------------------------------- */

/*
 * Activation row at this level: corr[k/4] int32 (-128 * sum of each group of
 * four q), qs[k] int8, d[k/32] float, bsum[k/32] int32 (-128 * sum of each
 * block's q, for the row-interleaved Q8_0 kernel).  Tokens start 64-byte
 * aligned.
 */
static size_t q8_row_bytes(int64_t k)
{
	return round64((size_t)k * 2 + (size_t)(k / STRATA_QK8_0) * 8);
}

static void q8_quantize(const float *x, void *dst, int64_t k)
{
	int32_t *corr = dst;
	int8_t *qs = (int8_t *)dst + k;
	float *ds = (float *)((uint8_t *)dst + 2 * k);
	const __m512i k80 = _mm512_set1_epi8((char)0x80);
	int64_t i;

	for (int64_t b = 0; b < k / STRATA_QK8_0; b++) {
		__m512 v0 = _mm512_loadu_ps(x + b * 32);
		__m512 v1 = _mm512_loadu_ps(x + b * 32 + 16);
		float amax = _mm512_reduce_max_ps(
			_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
		__m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
		__m512i i0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, id),
			_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m512i i1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, id),
			_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

		ds[b] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, 0));
		_mm_storeu_si128((__m128i *)(qs + b * 32), _mm512_cvtsepi32_epi8(i0));
		_mm_storeu_si128((__m128i *)(qs + b * 32 + 16), _mm512_cvtsepi32_epi8(i1));
	}
	for (i = 0; i + 64 <= k; i += 64) {
		__m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), k80,
						_mm512_loadu_si512(qs + i));

		_mm512_storeu_si512(corr + i / 4, _mm512_sub_epi32(_mm512_setzero_si512(), s));
	}
	if (i < k) {
		__m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(),
						_mm512_castsi512_si256(k80),
						_mm256_loadu_si256((const __m256i *)(qs + i)));

		_mm256_storeu_si256((__m256i *)(corr + i / 4),
				    _mm256_sub_epi32(_mm256_setzero_si256(), s));
	}
	for (int64_t b = 0; b < k / STRATA_QK8_0; b++) {
		int32_t *bsum = (int32_t *)(ds + k / STRATA_QK8_0), t = 0;

		for (int j = 0; j < 8; j++)
			t += corr[8 * b + j];
		bsum[b] = t;
	}
}

static void q8_peek(const void *row, int64_t k, int64_t i, int8_t *q, float *d)
{
	const uint8_t *p = row;

	*q = (int8_t)p[k + i];
	memcpy(d, p + 2 * k + (i / STRATA_QK8_0) * sizeof(float), sizeof(float));
}

/* ---- tile instantiation and the per-type drivers ---------------------------- */

#define DEF_TILE(fam, call, nr, nt)                                          \
	static void fam##_##nr##x##nt(const struct strata_mm_args *a,        \
				      int64_t r0, int64_t t0)                \
	{                                                                    \
		call(nr, nt, a, r0, t0);                                     \
	}
#define DEF_TILES_ROW(fam, call, nr)                                         \
	DEF_TILE(fam, call, nr, 1) DEF_TILE(fam, call, nr, 2)                \
	DEF_TILE(fam, call, nr, 3) DEF_TILE(fam, call, nr, 4)
#define DEF_TILES(fam, call)                                                 \
	DEF_TILES_ROW(fam, call, 1) DEF_TILES_ROW(fam, call, 2)              \
	DEF_TILES_ROW(fam, call, 3) DEF_TILES_ROW(fam, call, 4)              \
	static tile_fn const fam##_tiles[MR][MT] = {                         \
		{ fam##_1x1, fam##_1x2, fam##_1x3, fam##_1x4 },              \
		{ fam##_2x1, fam##_2x2, fam##_2x3, fam##_2x4 },              \
		{ fam##_3x1, fam##_3x2, fam##_3x3, fam##_3x4 },              \
		{ fam##_4x1, fam##_4x2, fam##_4x3, fam##_4x4 },              \
	};                                                                   \
	static void mm_##fam(const struct strata_mm_args *a)                 \
	{                                                                    \
		run_tiles(fam##_tiles, a);                                   \
	}

/* Rows outer, tokens inner: a tile's weight rows stay in L1 while all of
 * the chunk's tokens (kept in L2 by the driver's blocking) pass by. */
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

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(dst + i, load_w(W_F16, s, i));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);

		_mm512_mask_storeu_ps(dst + i, m, load_w_mask(W_F16, s, i, m));
	}
}

static void bf16_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *s = src;
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(dst + i, load_w(W_BF16, s, i));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);

		_mm512_mask_storeu_ps(dst + i, m, load_w_mask(W_BF16, s, i, m));
	}
}

static void q8_0_to_float(const void *src, float *dst, int64_t n)
{
	const uint8_t *p = src;

	for (int64_t b = 0; b < n / STRATA_QK8_0; b++, p += STRATA_Q8_0_BYTES) {
		uint16_t h;
		__m512 d;

		memcpy(&h, p, 2);
		d = _mm512_set1_ps(_cvtsh_ss(h));
		for (int half = 0; half < 2; half++) {
			__m512i q = _mm512_cvtepi8_epi32(
				_mm_loadu_si128((const __m128i *)(p + 2 + 16 * half)));

			_mm512_storeu_ps(dst + b * 32 + 16 * half,
					 _mm512_mul_ps(d, _mm512_cvtepi32_ps(q)));
		}
	}
}

/* ---- vectors ------------------------------------------------------------- */

static float dot_f32(const float *a, const float *b, int64_t n)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	int64_t i = 0;

	for (; i + 64 <= n; i += 64) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16),
				     _mm512_loadu_ps(b + i + 16), s1);
		s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32),
				     _mm512_loadu_ps(b + i + 32), s2);
		s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48),
				     _mm512_loadu_ps(b + i + 48), s3);
	}
	if (i + 32 <= n) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16),
				     _mm512_loadu_ps(b + i + 16), s1);
		i += 32;
	}
	if (i + 16 <= n) {
		s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s2);
		i += 16;
	}
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);

		s3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i),
				     _mm512_maskz_loadu_ps(m, b + i), s3);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1),
						  _mm512_add_ps(s2, s3)));
}

static void axpy_f32(float *y, float a, const float *x, int64_t n)
{
	const __m512 av = _mm512_set1_ps(a);
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i),
							_mm512_loadu_ps(y + i)));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);

		_mm512_mask_storeu_ps(y + i, m,
			_mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i),
					_mm512_maskz_loadu_ps(m, y + i)));
	}
}

static void mul_acc_f32(float *y, const float *a, const float *b, int64_t n)
{
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i),
							_mm512_loadu_ps(y + i)));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);

		_mm512_mask_storeu_ps(y + i, m,
			_mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i),
					_mm512_maskz_loadu_ps(m, y + i)));
	}
}

static void axpby_f32(float *y, float a, const float *x, float b, int64_t n)
{
	const __m512 av = _mm512_set1_ps(a), bv = _mm512_set1_ps(b);
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_fmadd_ps(bv, _mm512_loadu_ps(y + i),
							_mm512_mul_ps(av, _mm512_loadu_ps(x + i))));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);

		_mm512_mask_storeu_ps(y + i, m,
			_mm512_fmadd_ps(bv, _mm512_maskz_loadu_ps(m, y + i),
					_mm512_mul_ps(av, _mm512_maskz_loadu_ps(m, x + i))));
	}
}

/* exp(x) with x clamped to +-87: NaN passes (max/min return their second
 * operand when one is NaN). */
AI __m512 exp_ps(__m512 x)
{
	return strata_exp16(_mm512_min_ps(_mm512_set1_ps(87.0f),
					  _mm512_max_ps(_mm512_set1_ps(-87.0f), x)));
}

/* x / (1 + exp(-y)) * m: silu(g) * u is (g, g, u); x * sigmoid(y) is (x, y, 1). */
AI __m512 gate(__m512 x, __m512 y, __m512 m)
{
	const __m512 one = _mm512_set1_ps(1.0f);

	return _mm512_mul_ps(_mm512_div_ps(x, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(
		_mm512_setzero_ps(), y)))), m);
}

static void silu_mul_f32(float *o, const float *g, const float *u, int64_t n)
{
	int64_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512 gv = _mm512_loadu_ps(g + i);

		_mm512_storeu_ps(o + i, gate(gv, gv, _mm512_loadu_ps(u + i)));
	}
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		__m512 gv = _mm512_maskz_loadu_ps(m, g + i);

		_mm512_mask_storeu_ps(o + i, m, gate(gv, gv, _mm512_maskz_loadu_ps(m, u + i)));
	}
}

static void sigmoid_mul_f32(float *o, const float *x, const float *y, int64_t n)
{
	const __m512 one = _mm512_set1_ps(1.0f);
	int64_t i = 0;

	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(o + i, gate(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), one));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);

		_mm512_mask_storeu_ps(o + i, m, gate(_mm512_maskz_loadu_ps(m, x + i),
						     _mm512_maskz_loadu_ps(m, y + i), one));
	}
}

const struct strata_kern_level strata_kern_avx512 = {
	.name = "avx512",
	.q8_0_r16_mm = strata_q8_0_r16_mm_avx512,
	.q4_k_r16_mm = strata_q4_k_r16_mm_avx512,
	.q6_k_r16_mm = strata_q6_k_r16_mm_avx512,
	.iq4_nl_r16_mm = strata_iq4_nl_r16_mm_avx512,
	.act = {
		[STRATA_ACT_Q8_0] = { q8_row_bytes, q8_quantize, q8_peek },
		[STRATA_ACT_Q8_K] = { strata_q8k_row_bytes,
				      strata_q8k_quantize_avx512, strata_q8k_peek },
		[STRATA_ACT_Q8_1] = { strata_q8_1_row_bytes,
				      strata_q8_1_quantize_avx512, strata_q8_1_peek },
	},
	.type = {
		[STRATA_TYPE_F32] = { STRATA_ACT_F32, mm_f32, NULL },
		[STRATA_TYPE_F16] = { STRATA_ACT_F32, mm_f16, f16_to_float },
		[STRATA_TYPE_BF16] = { STRATA_ACT_F32, mm_bf16, bf16_to_float },
		[STRATA_TYPE_Q8_0] = { STRATA_ACT_Q8_0, strata_q8_0_mm_avx512, q8_0_to_float },
		[STRATA_TYPE_Q4_0] = { STRATA_ACT_Q8_0, strata_q4_0_mm_avx512,
				      strata_q4_0_to_float_avx512 },
		[STRATA_TYPE_Q4_1] = { STRATA_ACT_Q8_1, strata_q4_1_mm_avx512,
				      strata_q4_1_to_float_avx512 },
		[STRATA_TYPE_Q5_0] = { STRATA_ACT_Q8_0, strata_q5_0_mm_avx512,
				      strata_q5_0_to_float_avx512 },
		[STRATA_TYPE_Q5_1] = { STRATA_ACT_Q8_1, strata_q5_1_mm_avx512,
				      strata_q5_1_to_float_avx512 },
		[STRATA_TYPE_IQ4_NL] = { STRATA_ACT_Q8_0, strata_iq4_nl_mm_avx512,
				      strata_iq4_nl_to_float_avx512 },
		[STRATA_TYPE_Q2_K] = { STRATA_ACT_Q8_K, strata_q2_k_mm_avx512,
				      NULL },
		[STRATA_TYPE_Q3_K] = { STRATA_ACT_Q8_K, strata_q3_k_mm_avx512,
				      NULL },
		[STRATA_TYPE_Q4_K] = { STRATA_ACT_Q8_K, strata_q4_k_mm_avx512,
				      NULL },
		[STRATA_TYPE_Q5_K] = { STRATA_ACT_Q8_K, strata_q5_k_mm_avx512,
				      NULL },
		[STRATA_TYPE_Q6_K] = { STRATA_ACT_Q8_K, strata_q6_k_mm_avx512,
				      NULL },
		[STRATA_TYPE_IQ2_XS] = { STRATA_ACT_Q8_K,
					 strata_iq2_xs_mm_avx512, NULL },
		[STRATA_TYPE_IQ2_S] = { STRATA_ACT_Q8_K,
					strata_iq2_s_mm_avx512, NULL },
		[STRATA_TYPE_IQ3_XXS] = { STRATA_ACT_Q8_K,
					  strata_iq3_xxs_mm_avx512, NULL },
		[STRATA_TYPE_IQ3_S] = { STRATA_ACT_Q8_K,
					strata_iq3_s_mm_avx512, NULL },
		[STRATA_TYPE_IQ1_M] = { STRATA_ACT_Q8_K,
					strata_iq1_m_mm_avx512, NULL },
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
