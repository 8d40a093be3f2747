/*
 * quants_legacy_avx2.c - the 32-value block types at the AVX2 level (AVX2 +
 * FMA + F16C): Q4_0, Q5_0 and IQ4_NL x Q8_0, Q4_1 and Q5_1 x Q8_1, their
 * dequantisation, and the Q8_1 activation quantiser.
 *
 * The activations are this level's Q8_0 rows (the scalar layout: qs[k]
 * int8, then d[k/32] float) or the Q8_1 rows every level shares (the same,
 * then s[k/32] = d * sum(q)).  A symmetric block's 32 values are looked up
 * (vpshufb) as signed bytes; the dot uses vpmaddubsw on |w| and x * sign(w),
 * which cannot saturate (|w| <= 127, |x| <= 127).  The offset types' values
 * are unsigned (0..31) and go to vpmaddubsw as they are (two products
 * reach at most 2 * 31 * 127 < 2^15), and each block adds m * s.  Tiles are
 * 4 rows x 2 tokens, as for Q8_0 at this level.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 4")
#define MR 4
#define MT 2
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

/* Byte offset of a block's 16 bytes of nibbles; the fifth-bit word of the
 * 5-bit types lies just before them. */
AI size_t lqs(enum ltype T)
{
	switch (T) {
	case L5_0: return 6;
	case L4_1: return 4;
	case L5_1: return 8;
	default: return 2;
	}
}

/* The signed value of each nibble (Q5_0: before its fifth bit). */
AI __m256i ltable(enum ltype T)
{
	if (T == LNL)
		return _mm256_broadcastsi128_si256(_mm_loadu_si128(
			(const __m128i *)strata_iq4nl_values));
	return _mm256_sub_epi8(_mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
						12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6,
						7, 8, 9, 10, 11, 12, 13, 14, 15),
			       _mm256_set1_epi8((char)(T == L4_0 ? 8 : 16)));
}

/* One block's 32 values in order: signed bytes for the symmetric types,
 * q (0..31) for the offset ones. */
AI __m256i lvalues(enum ltype T, const uint8_t *p)
{
	__m128i q = _mm_loadu_si128((const __m128i *)(p + lqs(T)));
	__m256i w = _mm256_and_si256(
		_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));

	if (!loffset(T))
		w = _mm256_shuffle_epi8(ltable(T), w);
	if (T == L5_0 || T == L5_1) {
		/* byte i gets bit i of qh: spread the four qh bytes, test */
		uint32_t qh;
		__m256i bits, sel = _mm256_set1_epi64x((long long)0x8040201008040201ull);

		memcpy(&qh, p + lqs(T) - 4, 4);
		bits = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), _mm256_setr_epi8(
			0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
			2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
		bits = _mm256_cmpeq_epi8(_mm256_and_si256(bits, sel), sel);
		w = _mm256_add_epi8(w, _mm256_and_si256(bits, _mm256_set1_epi8(16)));
	}
	return w;
}

static float ld_fp16(const uint8_t *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	return _cvtsh_ss(h);
}

/* [sum a0, sum a1, sum a2, sum a3] */
AI __m128 hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
	__m256 d = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));

	return _mm_add_ps(_mm256_castps256_ps128(d), _mm256_extractf128_ps(d, 1));
}

/* Row j's block b: its values (and |values| for the symmetric types), d
 * and, for the offset types, [m, 0 x7] (one lane: added once per block). */
AI void lrow(enum ltype T, const uint8_t *p, __m256i *wv, __m256i *aw, float *dw,
	     __m256 *mw)
{
	*dw = ld_fp16(p);
	*wv = lvalues(T, p);
	if (loffset(T)) {
		*mw = _mm256_castps128_ps256(_mm_set_ss(ld_fp16(p + 2)));
		/* the cast leaves the upper lanes undefined: clear them */
		*mw = _mm256_blend_ps(_mm256_setzero_ps(), *mw, 0x01);
	} else {
		*aw = _mm256_abs_epi8(*wv);
	}
}

AI void ltile(enum ltype T, int NR, int NT, const struct strata_mm_args *a,
	      int64_t r0, int64_t t0)
{
	const uint8_t *w[MR];
	const int8_t *xq[MT];
	const float *xd[MT], *xs[MT];
	__m256 acc[MR][MT];
	const __m256i ones = _mm256_set1_epi16(1);
	const int64_t k = a->k, nb = k / QK;
	const size_t bb = lbytes(T);

	UNROLL for (int j = 0; j < NR; j++)
		w[j] = a->w + (r0 + j) * a->w_stride;
	UNROLL for (int u = 0; u < NT; u++) {
		xq[u] = (const int8_t *)(a->x + (t0 + u) * a->x_stride);
		xd[u] = (const float *)(xq[u] + k);
		xs[u] = loffset(T) ? STRATA_Q8_1_S(xq[u], k) : xd[u];
	}
	UNROLL for (int j = 0; j < MR; j++)
		UNROLL for (int u = 0; u < NT; u++)
			acc[j][u] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		__m256i wv[MR], aw[MR];
		__m256 mw[MR];
		float dw[MR];

		UNROLL for (int j = 0; j < NR; j++) {
			const uint8_t *p = w[j] + b * bb;

			if (NT == 1 && (b & 1) == 0)
				_mm_prefetch((const char *)p + PF_DIST, _MM_HINT_T0);
			lrow(T, p, &wv[j], &aw[j], &dw[j], &mw[j]);
		}
		UNROLL for (int u = 0; u < NT; u++) {
			__m256i xv = _mm256_loadu_si256((const __m256i *)(xq[u] + b * QK));

			UNROLL for (int j = 0; j < NR; j++) {
				__m256i p = loffset(T)
					? _mm256_maddubs_epi16(wv[j], xv)
					: _mm256_maddubs_epi16(aw[j], _mm256_sign_epi8(xv, wv[j]));

				p = _mm256_madd_epi16(p, ones);
				acc[j][u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
					_mm256_set1_ps(dw[j] * xd[u][b]), acc[j][u]);
				if (loffset(T))
					acc[j][u] = _mm256_fmadd_ps(mw[j],
						_mm256_set1_ps(xs[u][b]), acc[j][u]);
			}
		}
	}
	UNROLL for (int u = 0; u < NT; u++) {
		__m128 s = hsum4(acc[0][u], acc[1][u], acc[2][u], acc[3][u]);
		float *y = a->y + (t0 + u) * a->ldy + r0;
		float tmp[4];

		if (NR == 4) {
			_mm_storeu_ps(y, s);
		} else {
			_mm_storeu_ps(tmp, s);
			UNROLL for (int j = 0; j < NR; j++)
				y[j] = tmp[j];
		}
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
#define DEF_TILES_ROW(fam, T, nr) DEF_TILE(fam, T, nr, 1) DEF_TILE(fam, T, nr, 2)
#define DEF_LTYPE(fam, T)                                                    \
	DEF_TILES_ROW(fam, T, 1) DEF_TILES_ROW(fam, T, 2)                    \
	DEF_TILES_ROW(fam, T, 3) DEF_TILES_ROW(fam, T, 4)                    \
	void strata_##fam##_mm_avx2(const struct strata_mm_args *a)          \
	{                                                                    \
		static tile_fn const tab[MR][MT] = {                         \
			{ fam##_1x1, fam##_1x2 }, { fam##_2x1, fam##_2x2 },  \
			{ fam##_3x1, fam##_3x2 }, { fam##_4x1, fam##_4x2 },  \
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
AI __m256 no_fuse(__m256 v)
{
	__asm__("" : "+x"(v));
	return v;
}

AI void lto_float(enum ltype T, const void *src, float *dst, int64_t n)
{
	const uint8_t *p = src;

	for (int64_t b = 0; b < n / QK; b++, p += lbytes(T), dst += QK) {
		const __m256 d = _mm256_set1_ps(ld_fp16(p));
		const __m256 m = _mm256_set1_ps(loffset(T) ? ld_fp16(p + 2) : 0.0f);
		__m256i w = lvalues(T, p);

		UNROLL for (int h = 0; h < 4; h++) {
			__m128i q = h < 2 ? _mm256_castsi256_si128(w)
					  : _mm256_extracti128_si256(w, 1);
			__m256 v;

			if (h % 2)
				q = _mm_srli_si128(q, 8);
			/* the offset types' q <= 31 read the same signed */
			v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
			if (loffset(T))
				v = _mm256_add_ps(no_fuse(v), m);
			_mm256_storeu_ps(dst + 8 * h, v);
		}
	}
}

void strata_q4_0_to_float_avx2(const void *src, float *dst, int64_t n)
{
	lto_float(L4_0, src, dst, n);
}

void strata_q5_0_to_float_avx2(const void *src, float *dst, int64_t n)
{
	lto_float(L5_0, src, dst, n);
}

void strata_iq4_nl_to_float_avx2(const void *src, float *dst, int64_t n)
{
	lto_float(LNL, src, dst, n);
}

void strata_q4_1_to_float_avx2(const void *src, float *dst, int64_t n)
{
	lto_float(L4_1, src, dst, n);
}

void strata_q5_1_to_float_avx2(const void *src, float *dst, int64_t n)
{
	lto_float(L5_1, src, dst, n);
}

/* ---- Q8_1 activations ------------------------------------------------------- */

/*
 * As strata_q8_1_quantize, byte for byte: amax, d = fp16(amax / 127),
 * q = round-to-nearest-even(x * (127 / amax)), s = d * sum(q) (exact: an
 * fp16 times at most 32 * 127 fits a float's mantissa).
 */
void strata_q8_1_quantize_avx2(const float *x, void *dst, int64_t k)
{
	int8_t *qs = dst;
	float *ds = (float *)((uint8_t *)dst + k);
	float *ss = ds + k / QK;
	const __m256 sign = _mm256_set1_ps(-0.0f);
	const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

	for (int64_t b = 0; b < k / QK; b++) {
		__m256 v[4], mx;
		__m128 h;
		__m128i s4;
		__m256i iv[4], q, s;
		float amax, id;

		UNROLL for (int i = 0; i < 4; i++)
			v[i] = _mm256_loadu_ps(x + b * QK + 8 * i);
		mx = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]),
						 _mm256_andnot_ps(sign, v[1])),
				   _mm256_max_ps(_mm256_andnot_ps(sign, v[2]),
						 _mm256_andnot_ps(sign, v[3])));
		h = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
		h = _mm_max_ps(h, _mm_movehl_ps(h, h));
		h = _mm_max_ss(h, _mm_movehdup_ps(h));
		amax = _mm_cvtss_f32(h);
		id = amax != 0.0f ? 127.0f / amax : 0.0f;
		UNROLL for (int i = 0; i < 4; i++)
			iv[i] = _mm256_cvtps_epi32(_mm256_round_ps(
				_mm256_mul_ps(v[i], _mm256_set1_ps(id)),
				_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		/* |x * id| <= 127 (1 + 2^-23): the packs never saturate, so
		 * the int32 sum is the stored bytes' sum */
		s = _mm256_add_epi32(_mm256_add_epi32(iv[0], iv[1]),
				     _mm256_add_epi32(iv[2], iv[3]));
		s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
		s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
		s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
		ds[b] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, 0));
		ss[b] = ds[b] * (float)_mm_cvtsi128_si32(s4);
		/* the packs interleave 128-bit lanes; perm restores order */
		q = _mm256_packs_epi16(_mm256_packs_epi32(iv[0], iv[1]),
				       _mm256_packs_epi32(iv[2], iv[3]));
		_mm256_storeu_si256((__m256i *)(qs + b * QK),
				    _mm256_permutevar8x32_epi32(q, perm));
	}
}

#endif
