/*
 * quants_k_r16_avx512.c - Q4_K and Q6_K weights x Q8_K activations at the
 * AVX-512 level for STRATA_K16_MIN_TOKENS tokens or more, on rows
 * interleaved sixteen at a time (built with the AVX-512 + VNNI flags).
 *
 * quants_k_r8_avx2.c's scheme at twice the width: two groups of eight rows
 * are repacked (quants_k_r8_repack.h) and laid side by side, so one 64-byte
 * vector holds the same four values of sixteen rows; a token's four bytes
 * are broadcast, vpmaddubsw makes the pair sums, they are added in int16
 * while they cannot overflow, and vpdpwssd applies each row's sub-block
 * scale into the int32 sum.  Eight tokens share each loaded vector.
 *
 * Float order: per super-block the exact integer sums S and M, then
 * y = fma(S, d d_x, y) and, for Q4_K, y = fma(-M, dmin d_x, y), the same for
 * every batch this kernel takes (quants_k_avx512.c says why smaller ones
 * sum otherwise).
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "quants_k_r8_repack.h"

#define GR16 16 /* rows per group */
#define CH 4    /* super-blocks repacked at a time (23 KiB) */
#define TT 8    /* tokens per tile */
#define QK STRATA_QK_K

struct k16_blk {
	__m512i q[8][8];
	__m512i sc[16];
	__m512i mn[8];
	float d[GR16], dmin[GR16];
};

static _Thread_local struct k16_blk g_buf[CH];

/* Pins v to a register at this point: left free, GCC schedules a whole
 * sub-block's products first and spills them to the stack. */
#define KEEP(v) __asm__ volatile("" : "+v"(v))

AI __m512i join(__m256i lo, __m256i hi)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

typedef void (*repack8_fn)(const uint8_t *const w[GR], int64_t b, struct k8_blk *o);

/* Super-block b of sixteen rows: two groups of eight, side by side. */
static void repack16(const uint8_t *const w[GR16], int64_t b, repack8_fn r8, int n_sc, int n_mn,
		     struct k16_blk *o)
{
	struct k8_blk lo, hi;

	r8(w, b, &lo);
	r8(w + GR, b, &hi);
	for (int g = 0; g < 8; g++)
		UNROLL for (int c = 0; c < 8; c++)
			o->q[g][c] = join(lo.q[g][c], hi.q[g][c]);
	for (int j = 0; j < n_sc; j++)
		o->sc[j] = join(lo.sc[j], hi.sc[j]);
	for (int j = 0; j < n_mn; j++)
		o->mn[j] = join(lo.mn[j], hi.mn[j]);
	memcpy(o->d, lo.d, sizeof(lo.d));
	memcpy(o->d + GR, hi.d, sizeof(hi.d));
	if (r8 == repack_q4k) { /* Q6_K has no dmin */
		memcpy(o->dmin, lo.dmin, sizeof(lo.dmin));
		memcpy(o->dmin + GR, hi.dmin, sizeof(hi.dmin));
	}
}

AI __m512i bcast32(const void *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm512_set1_epi32(v);
}

/*
 * NT tokens against repacked super-blocks [b0, b0 + nb): acc holds y on
 * entry and on return.  Q4_K when `six` is 0, Q6_K when 1.
 */
AI void ktile(int six, int NT, const struct strata_mm_args *a, int64_t t0, int64_t b0, int nb,
	      __m512 acc[TT])
{
	const int64_t k = a->k;
	const uint8_t *x[TT];

	UNROLL for (int u = 0; u < NT; u++)
		x[u] = a->x + (t0 + u) * a->x_stride;
	for (int bi = 0; bi < nb; bi++) {
		const struct k16_blk *o = &g_buf[bi];
		const int64_t b = b0 + bi;
		__m512i is[TT];

		UNROLL for (int u = 0; u < NT; u++) {
			is[u] = _mm512_setzero_si512();
			if (six) { /* the -32 offset: (-32 sc_2p, -32 sc_2p+1) x (bs_2p, bs_2p+1) */
				const int16_t *bs = STRATA_Q8K_BSUMS(x[u], k) + 16 * b;

				UNROLL for (int p = 0; p < 8; p++)
					is[u] = _mm512_dpwssd_epi32(is[u], o->mn[p], bcast32(bs + 2 * p));
			}
		}
		for (int g = 0; g < 8; g++) {
			const int8_t *xq[TT];

			UNROLL for (int u = 0; u < NT; u++)
				xq[u] = STRATA_Q8K_QS(x[u]) + b * QK + 32 * g;
			if (!six) {
				__m512i s16[TT];

				UNROLL for (int u = 0; u < NT; u++)
					s16[u] = _mm512_setzero_si512();
				UNROLL for (int c = 0; c < 8; c++) {
					const __m512i q = _mm512_load_si512(&o->q[g][c]);

					UNROLL for (int u = 0; u < NT; u++) {
						s16[u] = _mm512_add_epi16(s16[u],
							_mm512_maddubs_epi16(q, bcast32(xq[u] + 4 * c)));
						KEEP(s16[u]);
					}
				}
				UNROLL for (int u = 0; u < NT; u++)
					is[u] = _mm512_dpwssd_epi32(is[u], s16[u], o->sc[g]);
			} else {
				UNROLL for (int h = 0; h < 4; h++) {
					const __m512i q0 = _mm512_load_si512(&o->q[g][2 * h]);
					const __m512i q1 = _mm512_load_si512(&o->q[g][2 * h + 1]);
					const __m512i sc = o->sc[2 * g + h / 2];

					UNROLL for (int u = 0; u < NT; u++) {
						is[u] = _mm512_dpwssd_epi32(is[u], _mm512_add_epi16(
							_mm512_maddubs_epi16(q0, bcast32(xq[u] + 8 * h)),
							_mm512_maddubs_epi16(q1, bcast32(xq[u] + 8 * h + 4))), sc);
						KEEP(is[u]);
					}
				}
			}
		}
		UNROLL for (int u = 0; u < NT; u++) {
			const __m512 dx = _mm512_set1_ps(STRATA_Q8K_D(x[u], k)[b]);

			acc[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[u]),
						 _mm512_mul_ps(_mm512_load_ps(o->d), dx), acc[u]);
			if (!six) {
				/* mins: (m_2p, m_2p+1) x (xs_2p, xs_2p+1), xs the 32-value sums */
				const __m256i bs = _mm256_loadu_si256(
					(const __m256i *)(STRATA_Q8K_BSUMS(x[u], k) + 16 * b));
				int16_t xs[8];
				__m512i im = _mm512_setzero_si512();

				_mm_storeu_si128((__m128i *)xs, _mm_hadd_epi16(_mm256_castsi256_si128(bs),
									       _mm256_extracti128_si256(bs, 1)));
				UNROLL for (int p = 0; p < 4; p++)
					im = _mm512_dpwssd_epi32(im, o->mn[p], bcast32(xs + 2 * p));
				acc[u] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(im),
							  _mm512_mul_ps(_mm512_load_ps(o->dmin), dx), acc[u]);
			}
		}
	}
}

#define DEF_TILE(name, six, nt)                                                      \
	static void name##_##nt(const struct strata_mm_args *a, int64_t t0, int64_t b0, \
				int nb, __m512 acc[TT])                               \
	{                                                                            \
		ktile(six, nt, a, t0, b0, nb, acc);                                  \
	}
#define DEF_TILES(name, six)                                                         \
	DEF_TILE(name, six, 1) DEF_TILE(name, six, 2) DEF_TILE(name, six, 3)         \
	DEF_TILE(name, six, 4) DEF_TILE(name, six, 5) DEF_TILE(name, six, 6)         \
	DEF_TILE(name, six, 7) DEF_TILE(name, six, 8)
DEF_TILES(q4k, 0)
DEF_TILES(q6k, 1)

typedef void (*tile_fn)(const struct strata_mm_args *, int64_t, int64_t, int, __m512[TT]);

static void run(const struct strata_mm_args *a, repack8_fn r8, int n_sc, int n_mn,
		tile_fn const tiles[TT])
{
	const int64_t nbk = a->k / QK;

	for (int64_t r = 0; r < a->nr; r += GR16) {
		const int nr = a->nr - r < GR16 ? (int)(a->nr - r) : GR16;
		const __mmask16 m = (__mmask16)((1u << nr) - 1);
		const uint8_t *w[GR16];

		/* A short last group repeats its first row; those lanes are dropped. */
		for (int j = 0; j < GR16; j++)
			w[j] = a->w + (r + (j < nr ? j : 0)) * a->w_stride;
		for (int64_t b0 = 0; b0 < nbk; b0 += CH) {
			const int nb = nbk - b0 < CH ? (int)(nbk - b0) : CH;

			for (int bi = 0; bi < nb; bi++)
				repack16(w, b0 + bi, r8, n_sc, n_mn, &g_buf[bi]);
			for (int64_t t = 0; t < a->nt; t += TT) {
				const int nt = a->nt - t < TT ? (int)(a->nt - t) : TT;
				__m512 acc[TT];

				for (int u = 0; u < nt; u++)
					acc[u] = b0 ? _mm512_maskz_loadu_ps(m, a->y + (t + u) * a->ldy + r)
						    : _mm512_setzero_ps();
				tiles[nt - 1](a, t, b0, nb, acc);
				for (int u = 0; u < nt; u++)
					_mm512_mask_storeu_ps(a->y + (t + u) * a->ldy + r, m, acc[u]);
			}
		}
	}
}

void strata_q4_k_r16_avx512(const struct strata_mm_args *a)
{
	static tile_fn const tiles[TT] = { q4k_1, q4k_2, q4k_3, q4k_4, q4k_5, q4k_6, q4k_7, q4k_8 };

	run(a, repack_q4k, 8, 4, tiles);
}

void strata_q6_k_r16_avx512(const struct strata_mm_args *a)
{
	static tile_fn const tiles[TT] = { q6k_1, q6k_2, q6k_3, q6k_4, q6k_5, q6k_6, q6k_7, q6k_8 };

	run(a, repack_q6k, 16, 8, tiles);
}

#endif
