/*
 * quants_k_avx512.c - K-quant kernels (Q2_K .. Q6_K x Q8_K) and the Q8_K
 * activation quantiser at the AVX-512 level (F/BW/DQ/VL + VNNI; runs only
 * after strata_simd_detect() said so).
 *
 * A tile is one weight row against up to eight tokens: the row's
 * super-block is unpacked once into four vectors of 64 unsigned bytes in
 * the natural value order (so activations load straight from the shared
 * Q8_K layout) plus two vectors of int16 sub-block scales, and then every
 * token costs, per 256 values, four vpdpbusd (u8 x s8, four products per
 * int32 lane, which fit int16: |w| <= 63, |x| <= 127), two vpackssdw that
 * pair the four-product sums as int16, and two vpdpwssd (pairs x scale,
 * accumulated in int32), so the whole super-block's integer dot, scales
 * included, lands in one int32 vector.  Offsets are folded in through the
 * activations' 16-value sums: Q6_K's -32 and Q3_K's -4 go into the same
 * integer sum (same factor d); the mins of Q2/4/5_K make a second integer
 * vector, packed beside the first one's halves so that one conversion and
 * one FMA against [d x8 | -dmin x8] finish the super-block.
 *
 * Measured (one core of a 2-core Zen 5, 512 x 1024 weights, 64 tokens):
 * row-outer order streamed each tile's activations from L2 once per row and
 * ran Q4_K at 90 GMAC/s; blocking rows by 16 (run_tiles) gave 103, and
 * vpdpbusd + vpackssdw instead of vpmaddubsw + vpdpwssd per 64 values
 * (three multiplier instructions per 128 values instead of four) 115-121.
 * Q6_K went from 97 to 137-146 GMAC/s the same way.  Taking the mins out of
 * the integer vector (their activation sums precomputed per tile as floats,
 * one FMA per token and super-block) gained only 2%: not kept.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "quants_k_r8.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define UNROLL4 _Pragma("GCC unroll 4")
#define NT_MAX 8
#define QK STRATA_QK_K
/* GEMV prefetch distance (bytes ahead of the row being read). */
#define PF_DIST 1536

enum ktype { K2, K3, K4, K5, K6 };

/* One super-block of one row, ready for the token loop. */
struct kblk {
	__m512i w[4];     /* values 64k .. 64k+63 as unsigned bytes */
	__m512i s[2];     /* int16 scales in packs(dot(w[2h]), dot(w[2h+1])) order */
	__m256i corr;     /* int16 per 16 values: offset x scale (Q3_K, Q6_K) */
	__m256i mins;     /* int16 min per 16 values (Q2_K, Q4_K, Q5_K) */
	__m512 d;         /* d, or [d x8 | -dmin x8] for the types with mins */
};

static float ld_fp16(const uint8_t *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	return _cvtsh_ss(h);
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

AI __m512 dm_vec(float d, float dmin)
{
	return _mm512_insertf32x8(_mm512_set1_ps(d), _mm256_set1_ps(-dmin), 1);
}

/*
 * The token loop sums each 64-value chunk with vpdpbusd (int32 lane i = the
 * four products 4i..4i+3) and packs two chunks' sums into int16 with
 * vpackssdw, which interleaves per 128-bit lane: int16 lane 8L + j holds
 * lane 4L + j of the first chunk (j < 4) or lane 4L + j - 4 of the second.
 * These give the scale index of every int16 lane for chunks 2h, 2h + 1.
 * Per-32 scales: chunk c covers sub-blocks 2c (lanes 0-7) and 2c + 1.
 */
AI __m512i scales32(const __m512i src, int h)
{
	const __m512i idx = _mm512_add_epi16(_mm512_set1_epi16((short)(4 * h)),
		_mm512_setr_epi64(0x0000000000000000ll, 0x0002000200020002ll,
				  0x0000000000000000ll, 0x0002000200020002ll,
				  0x0001000100010001ll, 0x0003000300030003ll,
				  0x0001000100010001ll, 0x0003000300030003ll));

	return _mm512_permutexvar_epi16(idx, src);
}

/* Per-16 scales: chunk c covers 16-value groups 4c .. 4c + 3, group L of a
 * chunk is its int32 lanes 4L .. 4L + 3, i.e. 128-bit lane L. */
AI __m512i scales16(const __m512i src, int h)
{
	const __m512i idx = _mm512_add_epi16(_mm512_set1_epi16((short)(8 * h)),
		_mm512_setr_epi64(0x0000000000000000ll, 0x0004000400040004ll,
				  0x0001000100010001ll, 0x0005000500050005ll,
				  0x0002000200020002ll, 0x0006000600060006ll,
				  0x0003000300030003ll, 0x0007000700070007ll));

	return _mm512_permutexvar_epi16(idx, src);
}

/* [v >> a | v >> b] in 16-bit lanes, halves of 256 bits. */
AI __m512i srl2(__m512i v, int a, int b)
{
	return _mm512_srlv_epi16(v, _mm512_inserti64x4(
		_mm512_set1_epi16((short)a), _mm256_set1_epi16((short)b), 1));
}

AI __m512i bcast256(const uint8_t *p)
{
	return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
}

/* 2-bit fields (Q2_K, Q3_K): value 128n + 32j + l is bits 2j of q[32n + l]. */
AI __m512i unpack2(const uint8_t *qs, int k)
{
	const int n = k / 2, j = 2 * (k % 2);

	return _mm512_and_si512(srl2(bcast256(qs + 32 * n), 2 * j, 2 * j + 2),
				_mm512_set1_epi8(3));
}

/* Q4_K / Q5_K: eight 6-bit scales and mins from 12 bytes, as int16
 * [sc0..sc7, m0..m7]. */
AI __m256i q4k_scales(const uint8_t *s)
{
	uint32_t a = ld32(s), b = ld32(s + 4), c = ld32(s + 8);
	uint32_t sc_lo = a & 0x3f3f3f3f;
	uint32_t sc_hi = (c & 0x0f0f0f0f) | ((a >> 2) & 0x30303030);
	uint32_t m_lo = b & 0x3f3f3f3f;
	uint32_t m_hi = ((c >> 4) & 0x0f0f0f0f) | ((b >> 2) & 0x30303030);

	return _mm256_cvtepu8_epi16(_mm_setr_epi32((int)sc_lo, (int)sc_hi,
						   (int)m_lo, (int)m_hi));
}

/* Q3_K: sixteen 6-bit scales, minus 32, as int16. */
AI __m256i q3k_scales(const uint8_t *s)
{
	uint32_t a = ld32(s), b = ld32(s + 4), c = ld32(s + 8), o[4];

	o[0] = (a & 0x0f0f0f0f) | ((c << 4) & 0x30303030);
	o[1] = (b & 0x0f0f0f0f) | ((c << 2) & 0x30303030);
	o[2] = ((a >> 4) & 0x0f0f0f0f) | (c & 0x30303030);
	o[3] = ((b >> 4) & 0x0f0f0f0f) | ((c >> 2) & 0x30303030);
	return _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)o)),
				_mm256_set1_epi16(32));
}

AI void unpack(enum ktype T, const uint8_t *b, struct kblk *o)
{
	const __m512i m4 = _mm512_set1_epi8(0x0f);

	o->corr = o->mins = _mm256_setzero_si256();
	switch (T) {
	case K2: {
		__m128i sm = _mm_loadu_si128((const __m128i *)b);
		__m512i sc = _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(
			_mm_and_si128(sm, _mm_set1_epi8(0x0f))));

		o->mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4),
							     _mm_set1_epi8(0x0f)));
		UNROLL4 for (int k = 0; k < 4; k++)
			o->w[k] = unpack2(b + 16, k);
		o->s[0] = scales16(sc, 0);
		o->s[1] = scales16(sc, 1);
		o->d = dm_vec(ld_fp16(b + 80), ld_fp16(b + 82));
		break;
	}
	case K3: {
		__m256i sc = q3k_scales(b + 96);
		__m512i hm = bcast256(b);

		o->corr = _mm256_mullo_epi16(sc, _mm256_set1_epi16(-4));
		UNROLL4 for (int k = 0; k < 4; k++) {
			const int n = k / 2, j = 2 * (k % 2);
			__m512i bit = _mm512_inserti64x4(
				_mm512_set1_epi8((char)(1 << (4 * n + j))),
				_mm256_set1_epi8((char)(1 << (4 * n + j + 1))), 1);
			__mmask64 hi = _mm512_test_epi8_mask(hm, bit);

			o->w[k] = unpack2(b + 32, k);
			o->w[k] = _mm512_mask_add_epi8(o->w[k], hi, o->w[k], _mm512_set1_epi8(4));
		}
		o->s[0] = scales16(_mm512_zextsi256_si512(sc), 0);
		o->s[1] = scales16(_mm512_zextsi256_si512(sc), 1);
		o->d = _mm512_set1_ps(ld_fp16(b + 108));
		break;
	}
	case K4:
	case K5: {
		const __m256i sm16 = q4k_scales(b + 4);
		const __m512i sm = _mm512_zextsi256_si512(sm16);
		const uint8_t *qs = b + (T == K4 ? 16 : 48);
		__m512i qh = T == K5 ? bcast256(b + 16) : _mm512_setzero_si512();

		o->mins = _mm256_permutexvar_epi16(
			_mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13,
					  14, 14, 15, 15), sm16);
		UNROLL4 for (int k = 0; k < 4; k++) {
			o->w[k] = _mm512_and_si512(srl2(bcast256(qs + 32 * k), 0, 4), m4);
			if (T == K5) {
				__m512i bit = _mm512_inserti64x4(
					_mm512_set1_epi8((char)(1 << (2 * k))),
					_mm256_set1_epi8((char)(1 << (2 * k + 1))), 1);

				o->w[k] = _mm512_mask_add_epi8(o->w[k],
					_mm512_test_epi8_mask(qh, bit), o->w[k],
					_mm512_set1_epi8(16));
			}
		}
		o->s[0] = scales32(sm, 0);
		o->s[1] = scales32(sm, 1);
		o->d = dm_vec(ld_fp16(b), ld_fp16(b + 2));
		break;
	}
	case K6: {
		__m512i sc = _mm512_zextsi256_si512(_mm256_cvtepi8_epi16(
			_mm_loadu_si128((const __m128i *)(b + 192))));
		const __m512i m30 = _mm512_set1_epi8(0x30);

		o->corr = _mm256_slli_epi16(_mm256_sub_epi16(_mm256_setzero_si256(),
							     _mm512_castsi512_si256(sc)), 5);
		UNROLL4 for (int n = 0; n < 2; n++) {
			__m512i l = _mm512_loadu_si512(b + 64 * n);
			__m512i h = bcast256(b + 128 + 32 * n);
			__m512i h0 = _mm512_sllv_epi16(h, _mm512_inserti64x4(
				_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1));

			o->w[2 * n] = _mm512_or_si512(_mm512_and_si512(l, m4),
						      _mm512_and_si512(h0, m30));
			o->w[2 * n + 1] = _mm512_or_si512(
				_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
				_mm512_and_si512(srl2(h, 0, 2), m30));
		}
		o->s[0] = scales16(sc, 0);
		o->s[1] = scales16(sc, 1);
		o->d = _mm512_set1_ps(ld_fp16(b + 208));
		break;
	}
	}
}

AI void ktile(enum ktype T, size_t bbytes, int NT, const struct strata_mm_args *a,
	      int64_t r, int64_t t0)
{
	const uint8_t *w = a->w + r * a->w_stride;
	const uint8_t *x[NT_MAX];
	__m512 acc[NT_MAX];
	__m512i is[NT_MAX];
	__m256i bs[NT_MAX];
	const int64_t k = a->k, nb = k / QK;

	UNROLL for (int u = 0; u < NT; u++) {
		x[u] = a->x + (t0 + u) * a->x_stride;
		acc[u] = _mm512_setzero_ps();
	}
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *blk = w + b * bbytes;
		struct kblk o;

		if (NT == 1) {
			_mm_prefetch((const char *)blk + PF_DIST, _MM_HINT_T0);
			_mm_prefetch((const char *)blk + PF_DIST + 64, _MM_HINT_T0);
			if (bbytes > 128)
				_mm_prefetch((const char *)blk + PF_DIST + 128, _MM_HINT_T0);
		}
		unpack(T, blk, &o);
		/* Chunk-major, so the tokens' dpwssd chains interleave. */
		UNROLL for (int u = 0; u < NT; u++) {
			bs[u] = _mm256_loadu_si256(
				(const __m256i *)(STRATA_Q8K_BSUMS(x[u], k) + b * 16));
			if (T == K3 || T == K6)
				is[u] = _mm512_zextsi256_si512(_mm256_madd_epi16(o.corr, bs[u]));
			else
				is[u] = _mm512_setzero_si512();
		}
		UNROLL for (int h = 0; h < 2; h++)
			UNROLL for (int u = 0; u < NT; u++) {
				const int8_t *xq = STRATA_Q8K_QS(x[u]) + b * QK + 128 * h;
				__m512i p0 = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
					o.w[2 * h], _mm512_loadu_si512(xq));
				__m512i p1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
					o.w[2 * h + 1], _mm512_loadu_si512(xq + 64));

				is[u] = _mm512_dpwssd_epi32(is[u], _mm512_packs_epi32(p0, p1),
							    o.s[h]);
			}
		UNROLL for (int u = 0; u < NT; u++) {
			const __m512 dx = _mm512_set1_ps(STRATA_Q8K_D(x[u], k)[b]);

			if (T == K3 || T == K6) {
				acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[u]),
							 _mm512_mul_ps(o.d, dx), acc[u]);
			} else {
				/* [8 partial dots | 8 min products] x [d | -dmin] */
				__m256i i8 = _mm256_add_epi32(_mm512_castsi512_si256(is[u]),
							      _mm512_extracti64x4_epi64(is[u], 1));
				__m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(i8),
					_mm256_madd_epi16(o.mins, bs[u]), 1);

				acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v),
							 _mm512_mul_ps(o.d, dx), acc[u]);
			}
		}
	}
	UNROLL for (int u = 0; u < NT; u++)
		a->y[(t0 + u) * a->ldy + r] = _mm512_reduce_add_ps(acc[u]);
}

typedef void (*tile_fn)(const struct strata_mm_args *a, int64_t r, int64_t t0);

/*
 * Rows in blocks of RB, so one tile's activations (8 tokens x ~1.2 KB per
 * 1024 values) are read from L1 by RB rows before the next tile's come in,
 * while the block's rows (RB x 576 bytes of Q4_K at 1024 values) stay in
 * L1 too.  Row-outer order streamed every tile from L2 for every row, and
 * that, not the arithmetic, bounded batches over ~16 tokens.
 */
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
	DEF_TILE(name, T, bytes, 5) DEF_TILE(name, T, bytes, 6)              \
	DEF_TILE(name, T, bytes, 7) DEF_TILE(name, T, bytes, 8)              \
	void strata_##name##_mm_avx512(const struct strata_mm_args *a)       \
	{                                                                    \
		static tile_fn const tab[NT_MAX] = {                         \
			name##_1, name##_2, name##_3, name##_4,              \
			name##_5, name##_6, name##_7, name##_8,              \
		};                                                           \
		run_tiles(tab, a);                                           \
	}

DEF_KTYPE(q2_k, K2, STRATA_Q2_K_BYTES)
DEF_KTYPE(q3_k, K3, STRATA_Q3_K_BYTES)
DEF_KTYPE(q5_k, K5, STRATA_Q5_K_BYTES)

/*
 * Q4_K and Q6_K: rows interleaved sixteen at a time from
 * STRATA_K16_MIN_TOKENS tokens (quants_k_r16_avx512.c), ktile below that.
 * The two sum in other float orders (ktile keeps sixteen partial sums per
 * row to the end, the interleaved kernel folds each super-block first):
 * ktile is faster than either interleaved kernel for 2 to 16 tokens (8
 * tokens: 64 against 45 GMAC/s; 16: 69 against 62), and one token and
 * every speculative window (up to 8) take it, so
 * decoding stays bit-equal to windows; a prompt batch of 20 or more tokens
 * may differ from them in the last bits.
 */
#define DEF_K16(name, T, bytes)                                                      \
	DEF_TILE(name, T, bytes, 1) DEF_TILE(name, T, bytes, 2)                      \
	DEF_TILE(name, T, bytes, 3) DEF_TILE(name, T, bytes, 4)                      \
	DEF_TILE(name, T, bytes, 5) DEF_TILE(name, T, bytes, 6)                      \
	DEF_TILE(name, T, bytes, 7) DEF_TILE(name, T, bytes, 8)                      \
	void strata_##name##_mm_avx512(const struct strata_mm_args *a)               \
	{                                                                            \
		static tile_fn const tab[NT_MAX] = {                                 \
			name##_1, name##_2, name##_3, name##_4,                      \
			name##_5, name##_6, name##_7, name##_8,                      \
		};                                                                   \
		if (a->nt >= STRATA_K16_MIN_TOKENS)                                  \
			strata_##name##_r16_avx512(a);                               \
		else                                                                 \
			run_tiles(tab, a);                                           \
	}

DEF_K16(q4_k, K4, STRATA_Q4_K_BYTES)
DEF_K16(q6_k, K6, STRATA_Q6_K_BYTES)

/* ---- Q8_K activations ------------------------------------------------------- */

/* Same values as strata_q8k_quantize: iscale and d are computed the same
 * scalar way, the products round to nearest even, +128 clamps to 127. */
void strata_q8k_quantize_avx512(const float *x, void *dst, int64_t k)
{
	int8_t *qs = dst;
	int16_t *bsums = (int16_t *)(qs + k);
	float *ds = (float *)((uint8_t *)dst + k + k / 8);
	const __m512i ones = _mm512_set1_epi8(1);

	for (int64_t b = 0; b < k / QK; b++) {
		const float *xb = x + b * QK;
		int8_t *q = qs + b * QK;
		__m512 vmax = _mm512_setzero_ps(), is;
		float amax, max = 0.0f;
		int32_t part[16];

		for (int i = 0; i < QK; i += 16)
			vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(xb + i)));
		amax = _mm512_reduce_max_ps(vmax);
		if (amax == 0.0f) {
			ds[b] = 0.0f;
			memset(q, 0, QK);
			memset(bsums + b * 16, 0, 16 * sizeof(int16_t));
			continue;
		}
		/* the first value of that magnitude decides the sign */
		for (int i = 0; i < QK; i += 16) {
			__mmask16 m = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(xb + i)),
							 _mm512_set1_ps(amax), _CMP_EQ_OQ);

			if (m) {
				max = xb[i + __builtin_ctz(m)];
				break;
			}
		}
		is = _mm512_set1_ps(-127.0f / max);
		for (int i = 0; i < QK; i += 64) {
			__m512i v;
			__m128i q8[4];

			for (int h = 0; h < 4; h++) {
				__m512i qi = _mm512_cvt_roundps_epi32(
					_mm512_mul_ps(_mm512_loadu_ps(xb + i + 16 * h), is),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

				q8[h] = _mm512_cvtsepi32_epi8(_mm512_min_epi32(
					qi, _mm512_set1_epi32(127)));
			}
			v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(q8[1], q8[0])),
					       _mm256_set_m128i(q8[3], q8[2]), 1);
			_mm512_storeu_si512(q + i, v);
			/* sums of four, then of sixteen: lane 4j holds group j */
			v = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, v);
			v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
			v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_BADC));
			_mm512_storeu_si512(part, v);
			for (int j = 0; j < 4; j++)
				bsums[b * 16 + i / 16 + j] = (int16_t)part[4 * j];
		}
		ds[b] = 1 / (-127.0f / max);
	}
}

#endif
