/*
 * q8_0_r16_avx512.c - Q8_0 weights x Q8_0 activations at the AVX-512 level,
 * on rows interleaved in groups of sixteen (built with the AVX-512 + VNNI
 * flags).
 *
 * The layout is q8_0_r16.h's: one 64-byte vector holds the same four
 * columns of sixteen rows, and one broadcast of the token's four bytes plus
 * one vpdpbusd adds 64 products to sixteen integer sums. vpdpbusd
 * multiplies unsigned by signed bytes, so the weights are flipped to
 * w ^ 0x80 (= w + 128) as they are loaded and each block's sum starts at
 * -128 * (sum of the token's block), kept with the activations
 * (kernels_avx512.c's bsum): the integer dot stays exact.  Weights repacked
 * at load (STRATA_LAYOUT_Q8_0_R16) are read in place; GGUF rows are
 * repacked on the fly, 64 blocks at a time (34 KiB), into a per-thread
 * buffer and reused for every token of the call.
 *
 * The sum is the same for every token count and either source: y = fold
 * over blocks b of fma(float(S_b), d_w(b) * d_x(b), y) from y = 0, S_b the
 * exact integer dot, so one token (gemv below, eight GGUF rows at a time)
 * and any batch give bit-equal outputs.
 */
#include <string.h>

#include "kernels_impl.h"
#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "q8_0_r16.h"
#include "r8_x86.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define GR 16      /* rows per interleaved group */
#define CH 64      /* blocks repacked at a time */
#define TT 8       /* tokens per tile */
#define PF_DIST 4352 /* prefetch distance of a first pass, bytes (4 block pairs) */

static _Thread_local _Alignas(64) uint8_t g_buf[CH / 2 * STRATA_R16_PAIR_BYTES];

/* The activation row's parts: kernels_impl.h's STRATA_Q8_0X_*. */
#define X_QS STRATA_Q8_0X_QS
#define X_D STRATA_Q8_0X_D
#define X_BSUM STRATA_Q8_0X_BSUM

/* Blocks [b0, b0 + nb) of the group's rows into g_buf (q8_0_r16.h's
 * layout; strata_q8_0_r16_pack_blocks' bytes). */
static void repack(const uint8_t *const w[GR], int64_t b0, int nb)
{
	for (int b = 0; b < nb; b++) {
		__m256i lo[8], hi[8];
		uint16_t h[GR];

		UNROLL for (int j = 0; j < 8; j++) {
			const uint8_t *p = w[j] + (b0 + b) * STRATA_Q8_0_BYTES;
			const uint8_t *q = w[j + 8] + (b0 + b) * STRATA_Q8_0_BYTES;

			memcpy(&h[j], p, 2);
			memcpy(&h[j + 8], q, 2);
			lo[j] = _mm256_loadu_si256((const __m256i *)(p + 2));
			hi[j] = _mm256_loadu_si256((const __m256i *)(q + 2));
		}
		strata_r8_transpose(lo);
		strata_r8_transpose(hi);
		UNROLL for (int c = 0; c < 8; c++)
			_mm512_store_si512(g_buf + strata_r16_q_off(b) + 64 * c,
					   _mm512_inserti64x4(_mm512_castsi256_si512(lo[c]), hi[c], 1));
		memcpy(g_buf + strata_r16_d_off(b), h, sizeof(h));
	}
}

/* NT tokens (from t0) against blocks [b0, b0 + nb) of a group, laid out
 * from src (b0 even); acc holds y on entry (zero for the first chunk) and
 * on return. */
AI void tile(int NT, const struct strata_mm_args *a, int64_t t0, int64_t b0, int nb,
	     __m512 acc[TT], const uint8_t *src)
{
	const __m512i flip = _mm512_set1_epi8((char)0x80);
	const int8_t *xq[TT];
	const float *xd[TT];
	const int32_t *xs[TT];
	__m512 y[TT];

	/* locals, not a->... or acc[]: stores to acc would make the compiler
	 * reload every pointer through a each block */
	UNROLL for (int u = 0; u < NT; u++) {
		const uint8_t *x = a->x + (t0 + u) * a->x_stride;

		xq[u] = X_QS(x, a->k) + b0 * 32;
		xd[u] = X_D(x, a->k) + b0;
		xs[u] = X_BSUM(x, a->k) + b0;
		y[u] = acc[u];
	}
	for (int b = 0; b < nb; b++) {
		const uint8_t *qb = src + strata_r16_q_off(b);

		/* the first tile over these blocks reads them from memory */
		if (t0 == 0) {
			if (!(b & 1))
				_mm_prefetch((const char *)src + strata_r16_d_off(b) + PF_DIST, _MM_HINT_T0);
			UNROLL for (int c = 0; c < 8; c++)
				_mm_prefetch((const char *)qb + 64 * c + PF_DIST, _MM_HINT_T0);
		}
		const __m512 dw = _mm512_cvtph_ps(
			_mm256_load_si256((const __m256i *)(src + strata_r16_d_off(b))));
		__m512i si[TT];

		UNROLL for (int u = 0; u < NT; u++)
			si[u] = _mm512_set1_epi32(xs[u][b]);
		UNROLL for (int c = 0; c < 8; c++) {
			const __m512i q = _mm512_xor_si512(
				_mm512_load_si512((const __m512i *)(qb + 64 * c)), flip);

			UNROLL for (int u = 0; u < NT; u++) {
				int32_t v;

				memcpy(&v, xq[u] + b * 32 + 4 * c, 4);
				si[u] = _mm512_dpbusd_epi32(si[u], q, _mm512_set1_epi32(v));
			}
		}
		UNROLL for (int u = 0; u < NT; u++)
			y[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(si[u]),
					       _mm512_mul_ps(dw, _mm512_set1_ps(xd[u][b])), y[u]);
	}
	UNROLL for (int u = 0; u < NT; u++)
		acc[u] = y[u];
}

#define DEF_TILE(nt)                                                             \
	static void tile_##nt(const struct strata_mm_args *a, int64_t t0,        \
			      int64_t b0, int nb, __m512 acc[TT],               \
			      const uint8_t *src)                               \
	{                                                                        \
		tile(nt, a, t0, b0, nb, acc, src);                               \
	}
DEF_TILE(1)
DEF_TILE(2)
DEF_TILE(3)
DEF_TILE(4)
DEF_TILE(5)
DEF_TILE(6)
DEF_TILE(7)
DEF_TILE(8)

typedef void (*tile_fn)(const struct strata_mm_args *, int64_t, int64_t, int, __m512[TT],
			const uint8_t *);
static tile_fn const g_tiles[TT] = { tile_1, tile_2, tile_3, tile_4,
				     tile_5, tile_6, tile_7, tile_8 };

static __mmask16 row_mask(int nr)
{
	return (__mmask16)((1u << nr) - 1);
}

/*
 * One token: eight rows at a time, each row's block against the token in
 * place (no group worth repacking), the rows' lane sums folded into one
 * vector of block sums.  Same S_b, scale product and FMA as tile(), lane by
 * lane.
 */
static void gemv(const struct strata_mm_args *a, int64_t r, int nr)
{
	const __m256i flip = _mm256_set1_epi8((char)0x80);
	const int64_t nbk = a->k / STRATA_QK8_0;
	const int8_t *xq = X_QS(a->x, a->k);
	const float *xd = X_D(a->x, a->k);
	const int32_t *bsum = X_BSUM(a->x, a->k);

	for (int64_t r8 = 0; r8 < nr; r8 += 8) {
		const int n8 = nr - r8 < 8 ? (int)(nr - r8) : 8;
		const uint8_t *w[8];
		__m256 acc = _mm256_setzero_ps();

		UNROLL for (int j = 0; j < 8; j++)
			w[j] = a->w + (r + r8 + (j < n8 ? j : 0)) * a->w_stride;
		for (int64_t b = 0; b < nbk; b++) {
			const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + 32 * b));
			__m256i p[8];
			uint16_t h[8];

			UNROLL for (int j = 0; j < 8; j++) {
				const uint8_t *q = w[j] + b * STRATA_Q8_0_BYTES;

				/* the same place in the next group's rows: a row
				 * stream's own look-ahead would land in the rows
				 * being read (measured +20% with 2 threads) */
				_mm_prefetch((const char *)q + 8 * a->w_stride, _MM_HINT_T0);
				memcpy(&h[j], q, 2);
				p[j] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_xor_si256(
					_mm256_loadu_si256((const __m256i *)(q + 2)), flip), x);
			}
			acc = _mm256_fmadd_ps(
				_mm256_cvtepi32_ps(_mm256_add_epi32(strata_r8_hsum(p),
								    _mm256_set1_epi32(bsum[b]))),
				_mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)),
					      _mm256_set1_ps(xd[b])),
				acc);
		}
		_mm256_mask_storeu_ps(a->y + r + r8, (__mmask8)((1u << n8) - 1), acc);
	}
}

/*
 * Every token tile against one group of rows [r, r + nr), chunk by chunk:
 * the chunk's blocks are read in place from rp (a group repacked at load)
 * or, without it, repacked from the GGUF rows w[] into g_buf first.
 */
static void group_tiles(const struct strata_mm_args *a, int64_t r, int nr,
			const uint8_t *const w[GR], const uint8_t *rp)
{
	const int64_t nbk = a->k / STRATA_QK8_0;
	const __mmask16 m = row_mask(nr);

	for (int64_t b0 = 0; b0 < nbk; b0 += CH) {
		const int nb = nbk - b0 < CH ? (int)(nbk - b0) : CH;
		const uint8_t *src = g_buf;

		if (rp)
			src = rp + strata_r16_d_off(b0);
		else
			repack(w, b0, nb);
		for (int64_t t = 0; t < a->nt; t += TT) {
			const int nt = a->nt - t < TT ? (int)(a->nt - t) : TT;
			__m512 acc[TT];

			for (int u = 0; u < nt; u++)
				acc[u] = b0 ? _mm512_maskz_loadu_ps(m, a->y + (t + u) * a->ldy + r)
					    : _mm512_setzero_ps();
			g_tiles[nt - 1](a, t, b0, nb, acc, src);
			for (int u = 0; u < nt; u++)
				_mm512_mask_storeu_ps(a->y + (t + u) * a->ldy + r, m, acc[u]);
		}
	}
}

void strata_q8_0_mm_avx512(const struct strata_mm_args *a)
{
	for (int64_t r = 0; r < a->nr; r += GR) {
		const int nr = a->nr - r < GR ? (int)(a->nr - r) : GR;
		const uint8_t *w[GR];

		if (a->nt == 1) {
			gemv(a, r, nr);
			continue;
		}
		/* A short last group repeats its first row; those lanes are dropped. */
		UNROLL for (int j = 0; j < GR; j++)
			w[j] = a->w + (r + (j < nr ? j : 0)) * a->w_stride;
		group_tiles(a, r, nr, w, NULL);
	}
}

/* Repacked at load: whole groups (a->nr is a multiple of 16), in place. */
void strata_q8_0_r16_mm_avx512(const struct strata_mm_args *a)
{
	/* One token: the AVX2 level's kernel on the same bytes, which sums the
	 * same way (bit-equal y) and ran 23-26 -> 30-33 GMAC/s on one Zen 4
	 * core: tile_1's chain of eight dependent vpdpbusd per block left the
	 * loads waiting.  Its activation row is qs[k] then d[k/32]: this
	 * level's from X_QS on (X_D follows k bytes later). */
	if (a->nt == 1) {
		struct strata_mm_args b = *a;

		b.x = (const uint8_t *)X_QS(a->x, a->k);
		strata_q8_0_r16_mm_avx2(&b);
		return;
	}
	for (int64_t r = 0; r < a->nr; r += GR)
		group_tiles(a, r, GR, NULL, a->w + r * a->w_stride);
}

#endif
