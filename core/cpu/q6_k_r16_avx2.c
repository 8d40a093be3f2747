/*
 * q6_k_r16_avx2.c - Q6_K weights repacked at load (q6_k_r16.h) x Q8_K
 * activations at the AVX2 level, any number of tokens (built with -mavx2
 * -mfma -mf16c).
 *
 * Each 32-byte half of a column's three planes is eight rows: four vectors
 * of 6-bit values come out of them (q6_k_r16.h), and per token vpmaddubsw
 * makes the pair sums against the broadcast activations; they add in int16
 * before one vpmaddwd applies the rows' sub-block scales.  One token reads
 * both halves in one pass, a sub-block's four columns from its offsets
 * (one_token()); more take one half at a time, four tokens per tile, two
 * columns (2 x 2 x 63 x 127 fits) with the offset from the bsums.  Float
 * order: the one q6_k_r16.h gives for every level.
 */
#include <string.h>

#include "quants.h"

#if defined(STRATA_KERN_X86)
#include <immintrin.h>

#include "q6_k_r16.h"
#include "quants_k_r8.h"
#include "quants_k_r8_repack.h"

#define TT 4 /* tokens per tile */
#define QK STRATA_QK_K
#define SB STRATA_Q6K_R16_SB
#define PF_DIST 6720 /* a first pass's prefetch distance: two super-blocks */
#define STRATA_Q6K_R16_AVX2_UNPACK 12 /* tokens from which prompts unpack per call */
#define OFF_NB 256 /* one_token's super-blocks at most (k <= 65536; more: tiles) */

/* Pins v to a register here: left free, GCC computes a column's products
 * for every token first and spills them. */
#define KEEP(v) __asm__ volatile("" : "+x"(v))

AI __m256i bcast32(const int8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return _mm256_set1_epi32(v);
}

/*
 * The values of one column (eight rows) out of plane ps (0, 1) and plane 2:
 * *vl gets v_ps, *vh v_{ps+2} (q6_k_r16.h).
 */
AI void unpack(__m256i bp, __m256i b2, int ps, __m256i *vl, __m256i *vh)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);

	*vl = _mm256_and_si256(bp, _mm256_set1_epi8(0x3f));
	*vh = _mm256_or_si256(_mm256_and_si256(ps ? _mm256_srli_epi16(b2, 4) : b2, m4),
			      _mm256_and_si256(_mm256_srli_epi16(bp, 2), m30));
}

/* Rows 8 hf .. 8 hf + 7 of scale planes a and b, interleaved, as int16. */
AI __m256i pairs(const uint8_t *sc, int ka, int kb, int hf)
{
	const __m128i a = _mm_loadl_epi64((const __m128i *)(sc + 16 * ka + 8 * hf));
	const __m128i b = _mm_loadl_epi64((const __m128i *)(sc + 16 * kb + 8 * hf));

	return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
}

/*
 * The -32 offset of the sub-blocks of token x (nb super-blocks), as the pair
 * sums' two int16 lanes of one row lose it: o[16 b + j] holds -32 x (x_4c +
 * x_4c+1) in its low half and -32 x (x_4c+2 + x_4c+3) in its high half, summed
 * over the four columns c of sub-block j of super-block b (|sum| <= 32 x 8 x
 * 127 fits).  Made once per call: they are the same for every row group.
 */
static void offsets(const int8_t *xq, int64_t nb, int32_t *o)
{
	const __m256i k32 = _mm256_set1_epi8(32);
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

	for (int64_t h = 0; h < 2 * nb; h++) { /* 128 values, 8 sub-blocks */
		__m256i p[4];

		UNROLL for (int v = 0; v < 4; v++) { /* sub-blocks 2 v, 2 v + 1: dword 0, 4 */
			p[v] = _mm256_maddubs_epi16(
				k32, _mm256_loadu_si256((const __m256i *)(xq + 128 * h + 32 * v)));
			p[v] = _mm256_add_epi16(p[v], _mm256_srli_si256(p[v], 8));
			p[v] = _mm256_add_epi16(p[v], _mm256_srli_si256(p[v], 4));
		}
		/* dwords 0 and 4 of p[0..3], in sub-block order */
		const __m256i s = _mm256_unpacklo_epi64(_mm256_unpacklo_epi32(p[0], p[1]),
							_mm256_unpacklo_epi32(p[2], p[3]));

		_mm256_storeu_si256((__m256i *)(o + 8 * h),
				    _mm256_sub_epi16(_mm256_setzero_si256(),
						     _mm256_permutevar8x32_epi32(s, order)));
	}
}

/*
 * Column c of half n, plane ps (and plane 2) at col, both halves: its pair
 * sums against token x added into lo[hh] and hi[hh].
 */
AI void column(const uint8_t *x, int64_t b, int n, int ps, int c, const uint8_t *col,
	       __m256i lo[2], __m256i hi[2])
{
	const uint8_t *cp3 = col + STRATA_Q6K_R16_COL * c;
	const int8_t *xq = STRATA_Q8K_QS(x) + b * QK + 128 * n + 32 * ps + 4 * c;

	if (!ps)
		for (int l = 0; l < STRATA_Q6K_R16_COL; l += 64)
			_mm_prefetch((const char *)cp3 + PF_DIST + l, _MM_HINT_T0);
	UNROLL for (int hh = 0; hh < 2; hh++) {
		__m256i vl, vh;

		unpack(_mm256_load_si256((const __m256i *)(cp3 + 64 * ps + 32 * hh)),
		       _mm256_load_si256((const __m256i *)(cp3 + 128 + 32 * hh)), ps, &vl, &vh);
		lo[hh] = _mm256_add_epi16(lo[hh], _mm256_maddubs_epi16(vl, bcast32(xq)));
		hi[hh] = _mm256_add_epi16(hi[hh], _mm256_maddubs_epi16(vh, bcast32(xq + 64)));
		KEEP(lo[hh]);
		KEEP(hi[hh]);
	}
}

/*
 * Token 0 against the group at g (all its super-blocks), both halves in one
 * pass (decode streams the group), with off from offsets(): y[hh] gets rows
 * 8 hh .. 8 hh + 7.
 *
 * A sub-block's four columns add their pair sums in int16 from the token's
 * offsets: each lane then holds sum (v - 32) x over eight
 * values, at most 32 x 8 x 127 = 32512 in magnitude, so the wrapping adds of
 * v x (up to 4 x 2 x 63 x 127) come out exact, and one vpmaddwd per
 * sub-block applies its scales.  tile() needs one per two columns and
 * eight more a super-block for the offset: 208 multiplies (vpmaddubsw and
 * vpmaddwd) a super-block against 168 here, which counts where one pipe
 * multiplies (Zen 1).  On Zen 5, one core, rows in L2: 52-58 -> 56-65 GMAC/s
 * with the offsets made per row group, about 7% more made once per call
 * (two threads from memory read as fast as before, at the memory's rate).
 * The tiles of more tokens keep the bsum route: made per tile-half, the
 * offsets had cost 2-4 tokens 4-5%.
 */
static void one_token(const struct strata_mm_args *a, const uint8_t *g, const int32_t *off,
		      __m256 y[2])
{
	const int64_t k = a->k, nb = k / QK;
	const uint8_t *x = a->x;

	y[0] = y[1] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *sb = g + b * SB, *scp = sb + STRATA_Q6K_R16_SC;
		__m256i is[2] = { _mm256_setzero_si256(), _mm256_setzero_si256() };

		for (int l = STRATA_Q6K_R16_SC; l < SB; l += 64)
			_mm_prefetch((const char *)sb + PF_DIST + l, _MM_HINT_T0);
		for (int n = 0; n < 2; n++)
			for (int cb = 0; cb < 2; cb++) /* columns 4 cb .. 4 cb + 3 */
				UNROLL for (int ps = 0; ps < 2; ps++) {
					/* plane ps: qq = ps; with plane 2, qq = ps + 2 */
					const uint8_t *col = sb + STRATA_Q6K_R16_HALF * n;
					const int jl = 8 * n + 2 * ps + cb, jh = jl + 4;
					__m256i lo[2], hi[2];

					lo[0] = lo[1] = _mm256_set1_epi32(off[16 * b + jl]);
					hi[0] = hi[1] = _mm256_set1_epi32(off[16 * b + jh]);
					UNROLL for (int i = 0; i < 4; i++)
						column(x, b, n, ps, 4 * cb + i, col, lo, hi);
					UNROLL for (int hh = 0; hh < 2; hh++)
						is[hh] = _mm256_add_epi32(is[hh], _mm256_add_epi32(
							_mm256_madd_epi16(lo[hh], pairs(scp, jl, jl, hh)),
							_mm256_madd_epi16(hi[hh], pairs(scp, jh, jh, hh))));
				}
		UNROLL for (int hh = 0; hh < 2; hh++) {
			const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(
				(const __m128i *)(sb + STRATA_Q6K_R16_D + 16 * hh)));

			y[hh] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[hh]),
				_mm256_mul_ps(d, _mm256_set1_ps(STRATA_Q8K_D(x, k)[b])), y[hh]);
		}
	}
}

/*
 * NT tokens from t0 against halves [h0, h0 + NH) of the group at g (all its
 * super-blocks), the offset from the bsums; NT x NH <= 4.  y[u][hh] gets the
 * eight rows' outputs of token t0 + u, half h0 + hh.
 */
AI void tile(int NT, int NH, const struct strata_mm_args *a, const uint8_t *g, int h0,
	     int64_t t0, __m256 y[TT][2])
{
	const int64_t k = a->k, nb = k / QK;
	/* the first pass over the group reads it from memory: prefetch */
	const int pf = t0 == 0 && h0 == 0;
	const uint8_t *x[TT];

	UNROLL for (int u = 0; u < NT; u++) {
		x[u] = a->x + (t0 + u) * a->x_stride;
		UNROLL for (int hh = 0; hh < NH; hh++)
			y[u][hh] = _mm256_setzero_ps();
	}
	for (int64_t b = 0; b < nb; b++) {
		const uint8_t *sb = g + b * SB, *scp = sb + STRATA_Q6K_R16_SC;
		__m256i is[TT][2];

		if (pf)
			for (int l = STRATA_Q6K_R16_SC; l < SB; l += 64)
				_mm_prefetch((const char *)sb + PF_DIST + l, _MM_HINT_T0);
		/* the -32 offset: (-32 sc_2p, -32 sc_2p+1) x (bs_2p, bs_2p+1) */
		UNROLL for (int hh = 0; hh < NH; hh++) {
			__m256i mn[8];

			UNROLL for (int p = 0; p < 8; p++)
				mn[p] = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(
					pairs(scp, 2 * p, 2 * p + 1, h0 + hh), 5));
			UNROLL for (int u = 0; u < NT; u++) {
				const int16_t *bs = STRATA_Q8K_BSUMS(x[u], k) + 16 * b;

				is[u][hh] = _mm256_setzero_si256();
				UNROLL for (int p = 0; p < 8; p++) {
					int32_t v;

					memcpy(&v, bs + 2 * p, 4);
					is[u][hh] = _mm256_add_epi32(is[u][hh], _mm256_madd_epi16(
						mn[p], _mm256_set1_epi32(v)));
				}
			}
		}
		for (int n = 0; n < 2; n++)
			for (int cb = 0; cb < 2; cb++) /* columns 4 cb .. 4 cb + 3 */
				UNROLL for (int ps = 0; ps < 2; ps++) {
					/* plane ps: qq = ps; with plane 2, qq = ps + 2 */
					const uint8_t *col = sb + STRATA_Q6K_R16_HALF * n + 32 * h0;
					const int jl = 8 * n + 2 * ps + cb, jh = jl + 4;

					UNROLL for (int cp = 0; cp < 2; cp++) {
						__m256i lo[TT][2], hi[TT][2];

						UNROLL for (int u = 0; u < NT; u++)
							UNROLL for (int hh = 0; hh < NH; hh++)
								lo[u][hh] = hi[u][hh] = _mm256_setzero_si256();
						UNROLL for (int c = 4 * cb + 2 * cp; c < 4 * cb + 2 * cp + 2; c++) {
							const uint8_t *cp3 = col + STRATA_Q6K_R16_COL * c;

							if (pf && !ps)
								for (int l = 0; l < STRATA_Q6K_R16_COL; l += 64)
									_mm_prefetch((const char *)cp3 + PF_DIST + l,
										     _MM_HINT_T0);
							UNROLL for (int hh = 0; hh < NH; hh++) {
								__m256i vl, vh;

								unpack(_mm256_load_si256((const __m256i *)(
									       cp3 + 64 * ps + 32 * hh)),
								       _mm256_load_si256((const __m256i *)(
									       cp3 + 128 + 32 * hh)),
								       ps, &vl, &vh);

								UNROLL for (int u = 0; u < NT; u++) {
									const int8_t *xq = STRATA_Q8K_QS(x[u]) + b * QK +
										128 * n + 32 * ps + 4 * c;

									lo[u][hh] = _mm256_add_epi16(lo[u][hh],
										_mm256_maddubs_epi16(vl, bcast32(xq)));
									hi[u][hh] = _mm256_add_epi16(hi[u][hh],
										_mm256_maddubs_epi16(vh, bcast32(xq + 64)));
									KEEP(lo[u][hh]);
									KEEP(hi[u][hh]);
								}
							}
						}
						UNROLL for (int hh = 0; hh < NH; hh++) {
							const __m256i sl = pairs(scp, jl, jl, h0 + hh);
							const __m256i sh = pairs(scp, jh, jh, h0 + hh);

							UNROLL for (int u = 0; u < NT; u++)
								is[u][hh] = _mm256_add_epi32(is[u][hh],
									_mm256_add_epi32(
										_mm256_madd_epi16(lo[u][hh], sl),
										_mm256_madd_epi16(hi[u][hh], sh)));
						}
					}
				}
		UNROLL for (int hh = 0; hh < NH; hh++) {
			const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(
				(const __m128i *)(sb + STRATA_Q6K_R16_D + 16 * (h0 + hh))));

			UNROLL for (int u = 0; u < NT; u++)
				y[u][hh] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[u][hh]),
					_mm256_mul_ps(d, _mm256_set1_ps(STRATA_Q8K_D(x[u], k)[b])),
					y[u][hh]);
		}
	}
}

#define DEF_TILE(nt, nh)                                                              \
	static void tile_##nt##x##nh(const struct strata_mm_args *a, const uint8_t *g, \
				     int h0, int64_t t0, __m256 y[TT][2])               \
	{                                                                             \
		tile(nt, nh, a, g, h0, t0, y);                                        \
	}
DEF_TILE(1, 1)
DEF_TILE(2, 1)
DEF_TILE(3, 1)
DEF_TILE(4, 1)

typedef void (*tile_fn)(const struct strata_mm_args *, const uint8_t *, int, int64_t,
			__m256[TT][2]);

/*
 * Super-block b of rows [r, r + 8) (half of a group) unpacked for the
 * interleaved kernel of quants_k_r8_avx2.c: q[4 n + qq][c] is values
 * 128 n + 32 qq + 4 c .. + 3 of the eight rows.
 */
static void fill_k8(const struct strata_mm_args *a, int64_t r, int nr, int64_t b,
		    struct k8_blk *o)
{
	const int hf = (int)(r % 16) / 8;
	const uint8_t *sb = a->w + (r - r % 16) * a->w_stride + b * SB;
	const uint8_t *scp = sb + STRATA_Q6K_R16_SC;

	(void)nr; /* whole groups */
	UNROLL for (int n = 0; n < 2; n++)
		UNROLL for (int c = 0; c < 8; c++) {
			const uint8_t *cp3 = sb + STRATA_Q6K_R16_HALF * n + STRATA_Q6K_R16_COL * c + 32 * hf;
			const __m256i b2 = _mm256_load_si256((const __m256i *)(cp3 + 128));

			UNROLL for (int ps = 0; ps < 2; ps++)
				unpack(_mm256_load_si256((const __m256i *)(cp3 + 64 * ps)), b2, ps,
				       &o->q[4 * n + ps][c], &o->q[4 * n + ps + 2][c]);
		}
	UNROLL for (int j = 0; j < 16; j++)
		o->sc[j] = pairs(scp, j, j, hf);
	UNROLL for (int p = 0; p < 8; p++)
		o->mn[p] = _mm256_sub_epi16(_mm256_setzero_si256(),
					    _mm256_slli_epi16(pairs(scp, 2 * p, 2 * p + 1, hf), 5));
	_mm256_store_ps(o->d, _mm256_cvtph_ps(_mm_loadu_si128(
		(const __m128i *)(sb + STRATA_Q6K_R16_D + 16 * hf))));
}

/* Whole groups: a->nr is a multiple of 16, a->w a group's start. */
void strata_q6_k_r16_mm_avx2(const struct strata_mm_args *a)
{
	static tile_fn const tiles[TT] = { tile_1x1, tile_2x1, tile_3x1, tile_4x1 };

	/* prompts: the nibbles and bits unpacked once per call, then the
	 * interleaved kernel's tiles (the same sums: 64 tokens 88 against 69
	 * GMAC/s unpacking in the tiles) */
	if (a->nt >= STRATA_Q6K_R16_AVX2_UNPACK) {
		strata_q6_k_r8_avx2_fill(a, fill_k8);
		return;
	}

	const int one = a->nt == 1 && a->k / QK <= OFF_NB;
	int32_t off[16 * OFF_NB];

	if (one)
		offsets(STRATA_Q8K_QS(a->x), a->k / QK, off);
	for (int64_t r = 0; r < a->nr; r += STRATA_Q6K_R16_ROWS) {
		const uint8_t *g = a->w + r * a->w_stride;
		__m256 y[TT][2];

		if (one) {
			one_token(a, g, off, y[0]);
			_mm256_storeu_ps(a->y + r, y[0][0]);
			_mm256_storeu_ps(a->y + r + 8, y[0][1]);
			continue;
		}
		for (int hf = 0; hf < 2; hf++)
			for (int64_t t = 0; t < a->nt; t += TT) {
				const int nt = a->nt - t < TT ? (int)(a->nt - t) : TT;

				tiles[nt - 1](a, g, hf, t, y);
				for (int u = 0; u < nt; u++)
					_mm256_storeu_ps(a->y + (t + u) * a->ldy + r + 8 * hf, y[u][0]);
			}
	}
}

#endif
