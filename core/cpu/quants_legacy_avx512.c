/*
 * quants_legacy_avx512.c - the 32-value block types at the AVX-512 level
 * (F/BW/DQ/VL + VNNI): Q4_0, Q5_0 and IQ4_NL x Q8_0, Q4_1 and Q5_1 x Q8_1,
 * their dequantisation, and the Q8_1 activation quantiser.
 *
 * Symmetric types read this level's Q8_0 rows (kernels_avx512.c:
 * corr[k/4] int32 = -128 * sum of each four q, then qs[k] int8, then
 * d[k/32] float).  Their weights are looked up (vpshufb) as value + 128,
 * an unsigned byte, so vpdpbusd started at corr gives sum(value * x)
 * exactly, the same trick as the Q8_0 kernel.  The offset types' values
 * are unsigned already (0..15, 0..31), so vpdpbusd takes them as they are
 * and starts at zero; the offsets add m * s per block, s = d_x * sum(q_x)
 * from the Q8_1 row (whose layout every level shares), as one FMA per 16
 * blocks of m against 16 of s.  Tiles are 4 rows
 * x 4 tokens, two blocks (64 values) per step: each unpacked weight vector
 * serves four tokens and each activation vector four rows.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 4")
#define MR 4
#define MT 4
#define QK 32
#define PF_DIST 1536

enum ltype { L4_0, L5_0, LNL, L4_1, L5_1 };

static size_t lbytes(enum ltype T)
{
	switch (T) {
	case L5_0: return STRATA_Q5_0_BYTES;
	case L4_1: return STRATA_Q4_1_BYTES;
	case L5_1: return STRATA_Q5_1_BYTES;
	default: return STRATA_Q4_0_BYTES;
	}
}

/* Types with a per-block offset m (the fp16 after d): weight = q * d + m. */
AI int loffset(enum ltype T)
{
	return T == L4_1 || T == L5_1;
}

/* Byte offset of a block's fifth-bit word (5-bit types). */
AI size_t lqh(enum ltype T)
{
	return T == L5_1 ? 4 : 2;
}

/* Byte offset of a block's 16 bytes of nibbles. */
AI size_t lqs(enum ltype T)
{
	switch (T) {
	case L5_0: return 6;
	case L4_1: return 4;
	case L5_1: return 8;
	default: return 2;
	}
}

/* value + 128 for each nibble, in every 128-bit lane (symmetric types). */
AI __m512i ltable(enum ltype T)
{
	if (T == LNL)
		return _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106,
							    118, (char)129, (char)141,
							    (char)153, (char)166, (char)181,
							    (char)197, (char)217, (char)241));
	/* Q4_0: q - 8 + 128; Q5_0: low four bits of q - 16 + 128 */
	return _mm512_add_epi8(_mm512_broadcast_i32x4(_mm_setr_epi8(
				       0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)),
			       _mm512_set1_epi8((char)(T == L4_0 ? 120 : 112)));
}

/* [lo nibbles of q0 | hi of q0 | lo of q1 | hi of q1]: two blocks' values
 * in order, as indices 0..15. */
AI __m512i nibbles2(__m128i q0, __m128i q1)
{
	__m512i t = _mm512_inserti64x4(
		_mm512_castsi256_si512(_mm256_broadcastsi128_si256(q0)),
		_mm256_broadcastsi128_si256(q1), 1);

	t = _mm512_srlv_epi16(t, _mm512_setr_epi64(0, 0, 0x0004000400040004ll,
						   0x0004000400040004ll, 0, 0,
						   0x0004000400040004ll,
						   0x0004000400040004ll));
	return _mm512_and_si512(t, _mm512_set1_epi8(0x0f));
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/*
 * Blocks b (and b+1 when `two`) of one row: *w = their 64 values as
 * unsigned bytes (value + 128 for the symmetric types, q for the offset
 * ones), *d = their scales as [d0 x8 | d1 x8] and, for the offset types,
 * *dm = [d0 m0 d1 m1] in its low four lanes.  Without `two`, the upper
 * half repeats block b's values with d1 = m1 = 0.
 */
AI void lunpack(enum ltype T, int two, const uint8_t *p, __m512i *w, __m512 *d,
		__m512 *dm)
{
	const size_t bb = lbytes(T), qo = lqs(T);
	__m128i q0 = _mm_loadu_si128((const __m128i *)(p + qo));
	__m128i q1 = two ? _mm_loadu_si128((const __m128i *)(p + bb + qo)) : q0;

	*w = nibbles2(q0, q1);
	if (!loffset(T))
		*w = _mm512_shuffle_epi8(ltable(T), *w);
	if (T == L5_0 || T == L5_1) {
		uint64_t hb = ld32(p + lqh(T)) |
			      (two ? (uint64_t)ld32(p + bb + lqh(T)) << 32 : 0);

		*w = _mm512_mask_add_epi8(*w, (__mmask64)hb, *w, _mm512_set1_epi8(16));
	}
	if (loffset(T)) {
		/* d and m are adjacent: [d0 m0 d1 m1] from two 32-bit loads */
		uint64_t h = ld32(p) | (two ? (uint64_t)ld32(p + bb) << 32 : 0);

		*dm = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)h)));
		*d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0,
							     2, 2, 2, 2, 2, 2, 2, 2), *dm);
	} else {
		uint16_t h0, h1 = 0;

		memcpy(&h0, p, 2);
		if (two)
			memcpy(&h1, p + bb, 2);
		*d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0,
							     1, 1, 1, 1, 1, 1, 1, 1),
			_mm512_castps128_ps512(_mm_cvtph_ps(
				_mm_cvtsi32_si128((int)(h0 | (uint32_t)h1 << 16)))));
		*dm = _mm512_setzero_ps();
	}
}

/* Two (or, without `two`, one) floats from p as [f0 x8 | f1 x8]. */
AI __m512 bcast2(int two, const float *p)
{
	__m512 v = _mm512_castps128_ps512(two ? _mm_castsi128_ps(
		_mm_loadl_epi64((const __m128i *)p)) : _mm_load_ss(p));

	return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0,
						       1, 1, 1, 1, 1, 1, 1, 1), v);
}

/* Token u's activations for blocks b, b+1: the start of the dot (corr or
 * zero), the values and their scales. */
AI void lact(enum ltype T, int two, const uint8_t *xa, int64_t k, int64_t b,
	     __m512i *c, __m512i *xq, __m512 *xd)
{
	const uint8_t *qs = loffset(T) ? xa + b * 32 : xa + k + b * 32;
	const float *ds = loffset(T) ? STRATA_Q8_1_D(xa, k) + b
				     : (const float *)(xa + 2 * k) + b;

	if (loffset(T))
		*c = _mm512_setzero_si512();
	else
		*c = two ? _mm512_loadu_si512(xa + b * 32)
			 : _mm512_maskz_loadu_epi32(0xff, xa + b * 32);
	*xq = two ? _mm512_loadu_si512(qs) : _mm512_maskz_loadu_epi8(0xffffffffull, qs);
	*xd = bcast2(two, ds);
}

/*
 * Blocks b, b+1 (or b alone) of NR rows against NT tokens.  The offset
 * types also gather the rows' m into lanes `ml` (the blocks' places in a
 * run of 16) of mrun; ltile multiplies a run by its s once, which costs
 * far less than an FMA per block, row and token.
 */
AI void lstep(enum ltype T, int NR, int NT, int two, const uint8_t *const *w,
	      const uint8_t *const *xa, int64_t k, int64_t b, __m512 acc[MR][MT],
	      __m512 mrun[MR], __mmask16 ml)
{
	__m512i wq[MR];
	__m512 wd[MR], dm;

	UNROLL for (int j = 0; j < NR; j++) {
		const uint8_t *p = w[j] + b * lbytes(T);

		if (NT == 1)
			_mm_prefetch((const char *)p + PF_DIST, _MM_HINT_T0);
		lunpack(T, two, p, &wq[j], &wd[j], &dm);
		if (loffset(T)) /* even lanes take m0, odd ones m1 */
			mrun[j] = _mm512_mask_permutexvar_ps(mrun[j], ml, _mm512_setr_epi32(
				1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3, 1, 3), dm);
	}
	UNROLL for (int u = 0; u < NT; u++) {
		__m512i c, xq;
		__m512 xd;

		lact(T, two, xa[u], k, b, &c, &xq, &xd);
		UNROLL for (int j = 0; j < NR; j++) {
			__m512i s = two ? _mm512_dpbusd_epi32(c, wq[j], xq)
					: _mm512_maskz_dpbusd_epi32(0xff, c, wq[j], xq);

			acc[j][u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
						    _mm512_mul_ps(wd[j], xd), acc[j][u]);
		}
	}
}

/* [sum a0, sum a1, sum a2, sum a3] */
AI __m128 hsum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
	__m256 b0 = _mm256_add_ps(_mm512_castps512_ps256(a0), _mm512_extractf32x8_ps(a0, 1));
	__m256 b1 = _mm256_add_ps(_mm512_castps512_ps256(a1), _mm512_extractf32x8_ps(a1, 1));
	__m256 b2 = _mm256_add_ps(_mm512_castps512_ps256(a2), _mm512_extractf32x8_ps(a2, 1));
	__m256 b3 = _mm256_add_ps(_mm512_castps512_ps256(a3), _mm512_extractf32x8_ps(a3, 1));
	__m256 s = _mm256_hadd_ps(_mm256_hadd_ps(b0, b1), _mm256_hadd_ps(b2, b3));

	return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

AI void ltile(enum ltype T, int NR, int NT, const struct strata_mm_args *a,
	      int64_t r0, int64_t t0)
{
	const uint8_t *w[MR], *xa[MT];
	__m512 acc[MR][MT];
	const int64_t nb = a->k / QK;
	int64_t b = 0;

	UNROLL for (int j = 0; j < NR; j++)
		w[j] = a->w + (r0 + j) * a->w_stride;
	UNROLL for (int u = 0; u < NT; u++)
		xa[u] = a->x + (t0 + u) * a->x_stride;
	UNROLL for (int j = 0; j < MR; j++)
		UNROLL for (int u = 0; u < NT; u++)
			acc[j][u] = _mm512_setzero_ps();
	/* Runs of 16 blocks, then the offsets' m . s of the run: acc's lanes
	 * all sum into y, so that product may land in any of them. */
	for (int64_t r = 0; r < nb; r += 16) {
		const int64_t re = nb - r < 16 ? nb : r + 16;
		__m512 mrun[MR];

		UNROLL for (int j = 0; j < NR; j++)
			mrun[j] = _mm512_setzero_ps();
		for (b = r; b + 2 <= re; b += 2)
			lstep(T, NR, NT, 1, w, xa, a->k, b, acc, mrun,
			      (__mmask16)(3u << (b - r)));
		if (b < re)
			lstep(T, NR, NT, 0, w, xa, a->k, b, acc, mrun,
			      (__mmask16)(1u << (b - r)));
		if (!loffset(T))
			continue;
		UNROLL for (int u = 0; u < NT; u++) {
			__m512 s = _mm512_maskz_loadu_ps((__mmask16)((1u << (re - r)) - 1),
							 STRATA_Q8_1_S(xa[u], a->k) + r);

			UNROLL for (int j = 0; j < NR; j++)
				acc[j][u] = _mm512_fmadd_ps(mrun[j], s, acc[j][u]);
		}
	}
	UNROLL for (int u = 0; u < NT; u++) {
		__m128 s = hsum4(acc[0][u], acc[1][u], acc[2][u], acc[3][u]);
		float *y = a->y + (t0 + u) * a->ldy + r0;

		if (NR == 4)
			_mm_storeu_ps(y, s);
		else
			_mm_mask_storeu_ps(y, (__mmask8)((1u << NR) - 1), s);
	}
}

typedef void (*tile_fn)(const struct strata_mm_args *a, int64_t r0, int64_t t0);

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

#define DEF_TILE(fam, T, nr, nt)                                             \
	static void fam##_##nr##x##nt(const struct strata_mm_args *a,        \
				      int64_t r0, int64_t t0)                \
	{                                                                    \
		ltile(T, nr, nt, a, r0, t0);                                 \
	}
#define DEF_TILES_ROW(fam, T, nr)                                            \
	DEF_TILE(fam, T, nr, 1) DEF_TILE(fam, T, nr, 2)                      \
	DEF_TILE(fam, T, nr, 3) DEF_TILE(fam, T, nr, 4)
#define DEF_LTYPE(fam, T)                                                    \
	DEF_TILES_ROW(fam, T, 1) DEF_TILES_ROW(fam, T, 2)                    \
	DEF_TILES_ROW(fam, T, 3) DEF_TILES_ROW(fam, T, 4)                    \
	void strata_##fam##_mm_avx512(const struct strata_mm_args *a)        \
	{                                                                    \
		static tile_fn const tab[MR][MT] = {                         \
			{ fam##_1x1, fam##_1x2, fam##_1x3, fam##_1x4 },      \
			{ fam##_2x1, fam##_2x2, fam##_2x3, fam##_2x4 },      \
			{ fam##_3x1, fam##_3x2, fam##_3x3, fam##_3x4 },      \
			{ fam##_4x1, fam##_4x2, fam##_4x3, fam##_4x4 },      \
		};                                                           \
		run_tiles(tab, a);                                           \
	}

DEF_LTYPE(q4_0, L4_0)
DEF_LTYPE(q5_0, L5_0)
DEF_LTYPE(iq4_nl, LNL)
DEF_LTYPE(q4_1, L4_1)
DEF_LTYPE(q5_1, L5_1)

/* ---- dequantisation: as ggml, value * d (+ m), each a single rounding ---------- */

/* An empty asm the compiler cannot see through: gnu11 builds contract
 * a * b + c into an FMA, which would round q * d + m once instead of twice
 * and differ from the scalar (and ggml's) dequantisation. */
AI __m512 no_fuse(__m512 v)
{
	__asm__("" : "+v"(v));
	return v;
}

AI void lto_float(enum ltype T, const void *src, float *dst, int64_t n)
{
	const uint8_t *p = src;
	const __m512i bias = _mm512_set1_epi32(loffset(T) ? 0 : 128);

	for (int64_t b = 0; b < n / QK; b++, p += lbytes(T), dst += QK) {
		__m512i w;
		__m512 d, m;
		__m128i wq[2];

		lunpack(T, 0, p, &w, &d, &m);
		d = _mm512_permutexvar_ps(_mm512_setzero_si512(), d);
		m = _mm512_permutexvar_ps(_mm512_set1_epi32(1), m);
		wq[0] = _mm512_castsi512_si128(w);
		wq[1] = _mm512_extracti32x4_epi32(w, 1);
		for (int h = 0; h < 2; h++) {
			__m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(
				_mm512_cvtepu8_epi32(wq[h]), bias)), d);

			if (loffset(T))
				v = _mm512_add_ps(no_fuse(v), m);
			_mm512_storeu_ps(dst + 16 * h, v);
		}
	}
}

void strata_q4_0_to_float_avx512(const void *src, float *dst, int64_t n)
{
	lto_float(L4_0, src, dst, n);
}

void strata_q5_0_to_float_avx512(const void *src, float *dst, int64_t n)
{
	lto_float(L5_0, src, dst, n);
}

void strata_iq4_nl_to_float_avx512(const void *src, float *dst, int64_t n)
{
	lto_float(LNL, src, dst, n);
}

void strata_q4_1_to_float_avx512(const void *src, float *dst, int64_t n)
{
	lto_float(L4_1, src, dst, n);
}

void strata_q5_1_to_float_avx512(const void *src, float *dst, int64_t n)
{
	lto_float(L5_1, src, dst, n);
}

/* ---- Q8_1 activations ------------------------------------------------------- */

/*
 * As strata_q8_1_quantize, byte for byte: amax, d = fp16(amax / 127),
 * q = round-to-nearest-even(x * (127 / amax)), s = d * sum(q) (exact: an
 * fp16 times at most 32 * 127 fits a float's mantissa).
 */
void strata_q8_1_quantize_avx512(const float *x, void *dst, int64_t k)
{
	int8_t *qs = dst;
	float *ds = (float *)((uint8_t *)dst + k);
	float *ss = ds + k / QK;

	for (int64_t b = 0; b < k / QK; b++) {
		__m512 v0 = _mm512_loadu_ps(x + b * QK);
		__m512 v1 = _mm512_loadu_ps(x + b * QK + 16);
		float amax = _mm512_reduce_max_ps(
			_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
		__m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
		__m512i i0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, id),
			_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m512i i1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, id),
			_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m128i q0 = _mm512_cvtsepi32_epi8(i0), q1 = _mm512_cvtsepi32_epi8(i1);
		/* |x * id| <= 127 (1 + 2^-23): the saturation never acts */
		int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(
			_mm512_cvtepi8_epi32(q0), _mm512_cvtepi8_epi32(q1)));

		ds[b] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, 0));
		ss[b] = ds[b] * (float)sum;
		_mm_storeu_si128((__m128i *)(qs + b * QK), q0);
		_mm_storeu_si128((__m128i *)(qs + b * QK + 16), q1);
	}
}

#endif
