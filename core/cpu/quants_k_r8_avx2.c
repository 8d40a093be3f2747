/*
 * quants_k_r8_avx2.c - Q4_K and Q6_K weights x Q8_K activations at the AVX2
 * level for four tokens or more, on rows interleaved eight at a time (built
 * with -mavx2 -mfma -mf16c).
 *
 * As for Q8_0 (q8_0_r8_avx2.c): a group of eight rows is repacked on the
 * fly, a chunk of blocks at a time, into a per-thread buffer in which one
 * 32-byte vector holds the same four values of the eight rows (unpacked to
 * bytes) and one int16 vector a sub-block's scale for each row; a token's
 * four matching bytes are broadcast, and one vpmaddubsw serves eight rows.
 * Sub-block sums stay in int16 as long as they cannot overflow (Q4_K: a
 * whole 32-value sub-block, 8 x 2 x 15 x 127; Q6_K: 8 values, 2 x 2 x 63 x
 * 127) and are scaled with one vpmaddwd, so a 32-value sub-block of eight
 * rows costs about as many instructions as one row did before.
 *
 * The order of the float operations is the one quants_k_avx2.c's 8-row
 * path (strata_k8_*) uses for fewer tokens, so a token's outputs do not
 * depend on the batch: per super-block, the exact integer sums S (scales
 * applied, Q6_K's -32 offset folded in) and M (Q4_K's mins against the
 * activations' sub-block sums), then y = fma(float(S), d * d_x, y) and, for
 * Q4_K, y = y - float(M) * (dmin * d_x) in one fused step.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "quants_k_r8.h"
#include "quants_k_r8_repack.h"

#define CH 8  /* super-blocks repacked at a time */
#define TT 4  /* tokens per tile */
#define QK STRATA_QK_K

static _Thread_local struct k8_blk g_buf[CH];

/* Pins v to a register at this point: left free, GCC schedules a whole
 * sub-block's products first and spills them to the stack. */
#define KEEP(v) __asm__ volatile("" : "+x"(v))

AI __m256i bcast32(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/*
 * NT tokens against repacked super-blocks [b0, b0 + nb): acc holds y on
 * entry and on return.  Q4_K when `six` is 0, Q6_K when 1.
 */
AI void ktile(int six, int NT, const struct strata_mm_args *a, int64_t t0, int64_t b0, int nb,
	      __m256 acc[TT])
{
	const int64_t k = a->k;
	const uint8_t *x[TT];

	UNROLL for (int u = 0; u < NT; u++)
		x[u] = a->x + (t0 + u) * a->x_stride;
	for (int bi = 0; bi < nb; bi++) {
		const struct k8_blk *o = &g_buf[bi];
		const int64_t b = b0 + bi;
		__m256i is[TT], im[TT];

		UNROLL for (int u = 0; u < NT; u++) {
			/* the activations' 16-value sums: per pair of them (Q6_K),
			 * or per 32 values, in pairs (Q4_K) */
			__m256i bs = _mm256_loadu_si256((const __m256i *)(STRATA_Q8K_BSUMS(x[u], k) + 16 * b));

			if (!six) {
				__m128i s = _mm_hadd_epi16(_mm256_castsi256_si128(bs),
							   _mm256_extracti128_si256(bs, 1));
				__m256i s2 = _mm256_broadcastsi128_si256(s);

				im[u] = _mm256_madd_epi16(o->mn[0], _mm256_shuffle_epi32(s2, 0x00));
				im[u] = _mm256_add_epi32(im[u], _mm256_madd_epi16(o->mn[1], _mm256_shuffle_epi32(s2, 0x55)));
				im[u] = _mm256_add_epi32(im[u], _mm256_madd_epi16(o->mn[2], _mm256_shuffle_epi32(s2, 0xaa)));
				im[u] = _mm256_add_epi32(im[u], _mm256_madd_epi16(o->mn[3], _mm256_shuffle_epi32(s2, 0xff)));
				is[u] = _mm256_setzero_si256();
			} else {
				__m256i lo = _mm256_permute4x64_epi64(bs, 0x44), hi = _mm256_permute4x64_epi64(bs, 0xee);

				is[u] = _mm256_madd_epi16(o->mn[0], _mm256_shuffle_epi32(lo, 0x00));
				is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(o->mn[1], _mm256_shuffle_epi32(lo, 0x55)));
				is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(o->mn[2], _mm256_shuffle_epi32(lo, 0xaa)));
				is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(o->mn[3], _mm256_shuffle_epi32(lo, 0xff)));
				is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(o->mn[4], _mm256_shuffle_epi32(hi, 0x00)));
				is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(o->mn[5], _mm256_shuffle_epi32(hi, 0x55)));
				is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(o->mn[6], _mm256_shuffle_epi32(hi, 0xaa)));
				is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(o->mn[7], _mm256_shuffle_epi32(hi, 0xff)));
			}
		}
		for (int g = 0; g < 8; g++) {
			const int8_t *xq[TT];
			__m256i s16[TT];

			UNROLL for (int u = 0; u < NT; u++)
				xq[u] = STRATA_Q8K_QS(x[u]) + b * QK + 32 * g;
			if (!six) {
				UNROLL for (int u = 0; u < NT; u++)
					s16[u] = _mm256_setzero_si256();
				UNROLL for (int c = 0; c < 8; c++) {
					const __m256i q = _mm256_load_si256(&o->q[g][c]);

					UNROLL for (int u = 0; u < NT; u++) {
						s16[u] = _mm256_add_epi16(s16[u], _mm256_maddubs_epi16(q, bcast32(xq[u] + 4 * c)));
						KEEP(s16[u]);
					}
				}
				UNROLL for (int u = 0; u < NT; u++)
					is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(s16[u], o->sc[g]));
			} else {
				UNROLL for (int h = 0; h < 4; h++) { /* 8 values: half a 16-value sub-block */
					const __m256i q0 = _mm256_load_si256(&o->q[g][2 * h]);
					const __m256i q1 = _mm256_load_si256(&o->q[g][2 * h + 1]);
					const __m256i sc = o->sc[2 * g + h / 2];

					UNROLL for (int u = 0; u < NT; u++) {
						is[u] = _mm256_add_epi32(is[u], _mm256_madd_epi16(_mm256_add_epi16(
							_mm256_maddubs_epi16(q0, bcast32(xq[u] + 8 * h)),
							_mm256_maddubs_epi16(q1, bcast32(xq[u] + 8 * h + 4))), sc));
						KEEP(is[u]);
					}
				}
			}
		}
		UNROLL for (int u = 0; u < NT; u++) {
			const __m256 dx = _mm256_set1_ps(STRATA_Q8K_D(x[u], k)[b]);

			acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[u]),
						 _mm256_mul_ps(_mm256_load_ps(o->d), dx), acc[u]);
			if (!six)
				acc[u] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(im[u]),
							  _mm256_mul_ps(_mm256_load_ps(o->dmin), dx), acc[u]);
		}
	}
}

#define DEF_TILE(name, six, nt)                                                      \
	static void name##_##nt(const struct strata_mm_args *a, int64_t t0, int64_t b0, \
				int nb, __m256 acc[TT])                               \
	{                                                                            \
		ktile(six, nt, a, t0, b0, nb, acc);                                  \
	}
DEF_TILE(q4k, 0, 1)
DEF_TILE(q4k, 0, 2)
DEF_TILE(q4k, 0, 3)
DEF_TILE(q4k, 0, 4)
DEF_TILE(q6k, 1, 1)
DEF_TILE(q6k, 1, 2)
DEF_TILE(q6k, 1, 3)
DEF_TILE(q6k, 1, 4)

typedef void (*tile_fn)(const struct strata_mm_args *, int64_t, int64_t, int, __m256[TT]);

/* Super-block b of GGUF rows [r, r + nr) into o: a short last group repeats
 * its first row; those lanes are dropped. */
/* The group's GGUF rows; past the last row, repeats of the first. */
static void group_rows(const struct strata_mm_args *a, int64_t r, int nr, const uint8_t *w[GR])
{
	for (int j = 0; j < GR; j++)
		w[j] = a->w + (r + (j < nr ? j : 0)) * a->w_stride;
}

static void fill_q4k(const struct strata_mm_args *a, int64_t r, int nr, int64_t b,
		     struct k8_blk *o)
{
	const uint8_t *w[GR];

	group_rows(a, r, nr, w);
	repack_q4k(w, b, o);
}

static void fill_q6k(const struct strata_mm_args *a, int64_t r, int nr, int64_t b,
		     struct k8_blk *o)
{
	const uint8_t *w[GR];

	group_rows(a, r, nr, w);
	repack_q6k(w, b, o);
}

static void run(const struct strata_mm_args *a, strata_k8_fill_fn fill, tile_fn const tiles[TT])
{
	const int64_t nbk = a->k / QK;

	for (int64_t r = 0; r < a->nr; r += GR) {
		const int nr = a->nr - r < GR ? (int)(a->nr - r) : GR;

		for (int64_t b0 = 0; b0 < nbk; b0 += CH) {
			const int nb = nbk - b0 < CH ? (int)(nbk - b0) : CH;

			for (int bi = 0; bi < nb; bi++)
				fill(a, r, nr, b0 + bi, &g_buf[bi]);
			for (int64_t t = 0; t < a->nt; t += TT) {
				const int nt = a->nt - t < TT ? (int)(a->nt - t) : TT;
				__m256 acc[TT];

				for (int u = 0; u < nt; u++)
					acc[u] = b0 ? strata_r8_load_y(a, r, nr, t + u) : _mm256_setzero_ps();
				tiles[nt - 1](a, t, b0, nb, acc);
				for (int u = 0; u < nt; u++)
					strata_r8_store_y(a, r, nr, t + u, acc[u]);
			}
		}
	}
}

void strata_q4_k_r8_avx2(const struct strata_mm_args *a)
{
	static tile_fn const tiles[TT] = { q4k_1, q4k_2, q4k_3, q4k_4 };

	run(a, fill_q4k, tiles);
}

static tile_fn const g_q6k_tiles[TT] = { q6k_1, q6k_2, q6k_3, q6k_4 };

void strata_q6_k_r8_avx2(const struct strata_mm_args *a)
{
	run(a, fill_q6k, g_q6k_tiles);
}

void strata_q6_k_r8_avx2_fill(const struct strata_mm_args *a, strata_k8_fill_fn fill)
{
	run(a, fill, g_q6k_tiles);
}

#endif
