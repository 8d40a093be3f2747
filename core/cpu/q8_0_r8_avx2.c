/*
 * q8_0_r8_avx2.c - Q8_0 weights x Q8_0 activations at the AVX2 level, on
 * rows interleaved in groups of eight (built with -mavx2 -mfma -mf16c).
 *
 * Why interleave: with one row per vector, every (row, token, block) needs
 * its own int32-to-float conversion, scale product and FMA, and the eight
 * lanes of each row are summed at the end. With eight rows interleaved four
 * bytes at a time, one 32-byte vector holds the same four columns of eight
 * rows; the token's matching four bytes are broadcast, and one
 * sign/maddubs/madd/add step feeds all eight rows' integer sums. Per block
 * the eight sums are converted, scaled and accumulated once for eight rows,
 * and the result is already a vector of eight outputs. This is the layout
 * ik_llama.cpp's -rtr repacks to at load; here a group is repacked on the
 * fly into a per-thread buffer (64 blocks at a time, 18 KiB, L1-resident)
 * and reused for every token of the call.  Weights repacked at load
 * (STRATA_LAYOUT_Q8_0_R16, sixteen rows: q8_0_r16.h) are read in place,
 * each half of a group as one group of eight.
 *
 * The sum is the same for every token count: y = fold over blocks b of
 * fma(float(S_b), d_w(b) * d_x(b), y) from y = 0, S_b the exact integer dot
 * of block b. So decoding one token and a batch of any size give bit-equal
 * outputs (speculative windows rely on it), and a group's chunks carry y
 * through memory without changing it.
 */
#include <string.h>

#include "kernels_impl.h"
#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "q8_0_r16.h"
#include "r8_x86.h"

#define AI static inline __attribute__((always_inline))
#define GR 8       /* rows per interleaved group */
#define CH 64      /* blocks repacked at a time */
#define TT 4       /* tokens per tile */
#define PF_DIST 4352 /* one token's prefetch distance over repacked groups, bytes */
#define UNROLL _Pragma("GCC unroll 8")

struct r8_buf {
	float d[CH][GR];    /* the eight rows' block scales */
	__m256i q[CH][GR];  /* q[b][c]: bytes 4c..4c+3 of block b, rows 0..7 */
};

static _Thread_local struct r8_buf g_buf;

/* Blocks [b0, b0 + nb) of the group's rows into g_buf. */
static void repack(const uint8_t *const w[GR], int64_t b0, int nb)
{
	for (int b = 0; b < nb; b++) {
		__m256i r[GR];
		uint16_t h[GR];

		UNROLL for (int j = 0; j < GR; j++) {
			const uint8_t *p = w[j] + (b0 + b) * STRATA_Q8_0_BYTES;

			memcpy(&h[j], p, 2);
			r[j] = _mm256_loadu_si256((const __m256i *)(p + 2));
		}
		strata_r8_transpose(r);
		UNROLL for (int c = 0; c < GR; c++)
			_mm256_store_si256(&g_buf.q[b][c], r[c]);
		_mm256_store_ps(g_buf.d[b], _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)));
	}
}

/*
 * NT tokens (from t0) against blocks [b0, b0 + nb) of eight rows: g_buf's
 * (R16 0), or half h of a group repacked at load whose chunk starts at src
 * (R16 1, b0 even).  acc holds y on entry (zero for the first chunk) and on
 * return.
 */
AI void tile(int NT, int R16, const struct strata_mm_args *a, int64_t t0, int64_t b0, int nb,
	     __m256 acc[TT], const uint8_t *src, int h)
{
	const __m256i ones = _mm256_set1_epi16(1);
	const int8_t *xq[TT];
	const float *xd[TT];
	__m256 y[TT];

	/* locals, not a->... or acc[]: stores to acc would make the compiler
	 * reload every pointer through a each block */
	UNROLL for (int u = 0; u < NT; u++) {
		const int8_t *x = (const int8_t *)(a->x + (t0 + u) * a->x_stride);

		xq[u] = x + b0 * 32;
		xd[u] = (const float *)(x + a->k) + b0;
		y[u] = acc[u];
	}
	for (int b = 0; b < nb; b++) {
		const __m256 dw = R16 ? _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(
						src + strata_r16_d_off(b) + 16 * h)))
				      : _mm256_load_ps(g_buf.d[b]);
		__m256i si[TT];

		UNROLL for (int u = 0; u < NT; u++)
			si[u] = _mm256_setzero_si256();
		UNROLL for (int c = 0; c < GR; c++) {
			const __m256i q = R16 ? _mm256_load_si256((const __m256i *)(
							src + strata_r16_q_off(b) + 64 * c + 32 * h))
					      : _mm256_load_si256(&g_buf.q[b][c]);
			const __m256i aq = _mm256_abs_epi8(q);

			UNROLL for (int u = 0; u < NT; u++) {
				int32_t v;
				__m256i xb;

				memcpy(&v, xq[u] + b * 32 + 4 * c, 4);
				xb = _mm256_set1_epi32(v);
				si[u] = _mm256_add_epi32(si[u], _mm256_madd_epi16(
					_mm256_maddubs_epi16(aq, _mm256_sign_epi8(xb, q)), ones));
				/* one column at a time: left free, GCC computes all
				 * 32 products first and spills them to the stack */
				__asm__ volatile("" : "+x"(si[u]));
			}
		}
		UNROLL for (int u = 0; u < NT; u++)
			y[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si[u]),
					       _mm256_mul_ps(dw, _mm256_set1_ps(xd[u][b])), y[u]);
	}
	UNROLL for (int u = 0; u < NT; u++)
		acc[u] = y[u];
}

#define DEF_TILE(nt)                                                             \
	static void tile_##nt(const struct strata_mm_args *a, int64_t t0,        \
			      int64_t b0, int nb, __m256 acc[TT],               \
			      const uint8_t *src, int h)                        \
	{                                                                        \
		tile(nt, 0, a, t0, b0, nb, acc, src, h);                         \
	}                                                                        \
	static void tile16_##nt(const struct strata_mm_args *a, int64_t t0,      \
				int64_t b0, int nb, __m256 acc[TT],             \
				const uint8_t *src, int h)                      \
	{                                                                        \
		tile(nt, 1, a, t0, b0, nb, acc, src, h);                         \
	}
DEF_TILE(1)
DEF_TILE(2)
DEF_TILE(3)
DEF_TILE(4)

typedef void (*tile_fn)(const struct strata_mm_args *, int64_t, int64_t, int, __m256[TT],
			const uint8_t *, int);
static tile_fn const g_tiles[TT] = { tile_1, tile_2, tile_3, tile_4 };
static tile_fn const g_tiles16[TT] = { tile16_1, tile16_2, tile16_3, tile16_4 };

/*
 * One token (decode): nothing to reuse a repacked group for, so each row's
 * block is multiplied in place and the eight rows' lane sums are folded into
 * one vector of block sums: the same S_b, scale and FMA order as tile().
 */
static void gemv(const struct strata_mm_args *a, int64_t r, int nr, const uint8_t *const w[GR])
{
	const __m256i ones = _mm256_set1_epi16(1);
	const int8_t *xq = (const int8_t *)a->x;
	const float *xd = (const float *)(xq + a->k);
	const int64_t nbk = a->k / STRATA_QK8_0;
	__m256 acc = _mm256_setzero_ps();

	for (int64_t b = 0; b < nbk; b++) {
		const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + 32 * b));
		__m256i p[GR];
		uint16_t h[GR];

		UNROLL for (int j = 0; j < GR; j++) {
			const uint8_t *q = w[j] + b * STRATA_Q8_0_BYTES;
			__m256i v;

			/* the same place in the next group's rows: a row
			 * stream's own look-ahead would land in the rows
			 * being read (measured +20% with 2 threads) */
			_mm_prefetch((const char *)q + GR * a->w_stride, _MM_HINT_T0);
			memcpy(&h[j], q, 2);
			v = _mm256_loadu_si256((const __m256i *)(q + 2));
			p[j] = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(v),
							_mm256_sign_epi8(x, v)), ones);
		}
		acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(strata_r8_hsum(p)),
				      _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)),
						    _mm256_set1_ps(xd[b])),
				      acc);
	}
	strata_r8_store_y(a, r, nr, 0, acc);
}

void strata_q8_0_mm_avx2(const struct strata_mm_args *a)
{
	const int64_t nbk = a->k / STRATA_QK8_0;

	for (int64_t r = 0; r < a->nr; r += GR) {
		const int nr = a->nr - r < GR ? (int)(a->nr - r) : GR;
		const uint8_t *w[GR];

		/* A short last group repeats its first row; those lanes are dropped. */
		for (int j = 0; j < GR; j++)
			w[j] = a->w + (r + (j < nr ? j : 0)) * a->w_stride;
		if (a->nt == 1) {
			gemv(a, r, nr, w);
			continue;
		}
		for (int64_t b0 = 0; b0 < nbk; b0 += CH) {
			const int nb = nbk - b0 < CH ? (int)(nbk - b0) : CH;

			repack(w, b0, nb);
			for (int64_t t = 0; t < a->nt; t += TT) {
				const int nt = a->nt - t < TT ? (int)(a->nt - t) : TT;
				__m256 acc[TT];

				for (int u = 0; u < nt; u++)
					acc[u] = b0 ? strata_r8_load_y(a, r, nr, t + u) : _mm256_setzero_ps();
				g_tiles[nt - 1](a, t, b0, nb, acc, NULL, 0);
				for (int u = 0; u < nt; u++)
					strata_r8_store_y(a, r, nr, t + u, acc[u]);
			}
		}
	}
}

/*
 * One token against a group repacked at load: both halves in one pass, so
 * the group is read as one sequential stream.  Per half, the same S_b,
 * scale and FMA as tile().
 */
static void gemv16(const struct strata_mm_args *a, int64_t r, const uint8_t *src)
{
	const __m256i ones = _mm256_set1_epi16(1);
	const int8_t *xq = (const int8_t *)a->x;
	const float *xd = (const float *)(xq + a->k);
	const int64_t nbk = a->k / STRATA_QK8_0;
	__m256 acc[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };

	for (int64_t b = 0; b < nbk; b++) {
		const uint8_t *qb = src + strata_r16_q_off(b);
		__m256i si[2] = { _mm256_setzero_si256(), _mm256_setzero_si256() };

		if (!(b & 1))
			_mm_prefetch((const char *)src + strata_r16_d_off(b) + PF_DIST, _MM_HINT_T0);
		UNROLL for (int c = 0; c < GR; c++)
			_mm_prefetch((const char *)qb + 64 * c + PF_DIST, _MM_HINT_T0);

		UNROLL for (int c = 0; c < GR; c++) {
			int32_t v;
			__m256i xb;

			memcpy(&v, xq + b * 32 + 4 * c, 4);
			xb = _mm256_set1_epi32(v);
			UNROLL for (int h = 0; h < 2; h++) {
				const __m256i q = _mm256_load_si256((const __m256i *)(qb + 64 * c + 32 * h));

				si[h] = _mm256_add_epi32(si[h], _mm256_madd_epi16(
					_mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(xb, q)),
					ones));
			}
		}
		UNROLL for (int h = 0; h < 2; h++)
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(si[h]),
				_mm256_mul_ps(_mm256_cvtph_ps(_mm_load_si128((const __m128i *)(
						      src + strata_r16_d_off(b) + 16 * h))),
					      _mm256_set1_ps(xd[b])),
				acc[h]);
	}
	strata_r8_store_y(a, r, 8, 0, acc[0]);
	strata_r8_store_y(a, r + 8, 8, 0, acc[1]);
}

/* Repacked at load: whole groups of sixteen (a->nr is a multiple of 16). */
void strata_q8_0_r16_mm_avx2(const struct strata_mm_args *a)
{
	const int64_t nbk = a->k / STRATA_QK8_0;

	for (int64_t r = 0; r < a->nr; r += STRATA_R16_ROWS) {
		const uint8_t *g = a->w + r * a->w_stride;

		if (a->nt == 1) {
			gemv16(a, r, g);
			continue;
		}
		for (int h = 0; h < 2; h++)
			for (int64_t b0 = 0; b0 < nbk; b0 += CH) {
				const int nb = nbk - b0 < CH ? (int)(nbk - b0) : CH;

				for (int64_t t = 0; t < a->nt; t += TT) {
					const int nt = a->nt - t < TT ? (int)(a->nt - t) : TT;
					__m256 acc[TT];

					for (int u = 0; u < nt; u++)
						acc[u] = b0 ? strata_r8_load_y(a, r + 8 * h, 8, t + u)
							    : _mm256_setzero_ps();
					g_tiles16[nt - 1](a, t, b0, nb, acc, g + strata_r16_d_off(b0), h);
					for (int u = 0; u < nt; u++)
						strata_r8_store_y(a, r + 8 * h, 8, t + u, acc[u]);
				}
			}
	}
}

#endif
