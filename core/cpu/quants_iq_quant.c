/*
 * quants_iq_quant.c - quantisers for the i-quants (IQ2_XS, IQ2_S, IQ3_XXS,
 * IQ3_S, IQ1_M): floats to the GGUF blocks of quants_iq.h.
 *
 * Every i-quant weight is d * (2 l + 1) * q: d the block's f16 scale, l a
 * small integer per sub-block (4 bits; 3 for IQ1_M) and q a lattice value.
 * The values of a group of 8 (IQ2_*, IQ1_M) or 4 (IQ3_*) weights must
 * together be one entry of the type's codebook, with a sign per value
 * (IQ1_M: q in {-1, 0, 1} plus a shift of +-1/8 per group).  Rounding each
 * value to its nearest level seldom gives an entry (512 of the 6561 IQ2_XS
 * patterns are one), so the search goes:
 *
 *  1. per sub-block, a few trial scales around amax / (top level): at each,
 *     every value is rounded to its nearest level, and a group whose
 *     pattern is no entry takes the best of that pattern's neighbours (the
 *     entries nearest to it, listed once per type); the trial whose
 *     least-squares scale fits best is kept, then tried at that scale;
 *  2. per block, d and every sub-block's l together: a sweep of candidate
 *     d, each sub-block taking its best l, then d refitted by least squares
 *     and rounded to f16;
 *  3. every group chosen again at its sub-block's final scale d (2 l + 1),
 *     kept where that costs less, and step 2 once more.
 *
 * Every fit minimises sum w (x - x')^2 with the weights of kernels.h
 * (strata_quantize).  The fits use the codebooks' real magnitudes (IQ2's
 * levels are 8, 25 and 43 eighths, not 1, 3 and 5).  Plain C with no state
 * beyond the tables: the bytes depend neither on the SIMD level nor on the
 * thread.  Measured against llama.cpp's quantisers: tests/check_iq_quant.c.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "iq_tables.h"
#include "quants_iq.h"

#define QK STRATA_QK_K

/* ---- codebooks and their neighbour tables ----------------------------------- */

/*
 * Neighbours per off-codebook pattern, at most: the search's cost is
 * mostly theirs.  Typical IQ2_XS data lands on patterns with ~57 entries
 * at the nearest level distance; the 16 nearest of those in magnitude lose
 * 0.1% of accuracy and half the time.
 */
#define NB_MAX 16

struct lattice {
	const void *grid;     /* iq_tables.h entries: u64 when gs == 8, else u32 */
	int n_grid, gs, nl;   /* entries, values per entry, levels per value */
	int8_t bytes[8];      /* each level's byte in an entry, ascending */
	float lv[8];          /* each level's magnitude in units of the scale */
	int slack;            /* neighbours: level distance <= the nearest's + slack */
	/* built once: */
	float thr[7];         /* midpoints between consecutive levels */
	int pw[8];            /* nl^i: pattern code = sum level_i nl^i */
	uint8_t *levo;        /* n_grid x gs: i * nl + level of value i */
	int32_t *map;         /* pattern code -> entry, or -1 - offset in nb */
	uint8_t *nb;          /* neighbour lists, see lattice_neighbours */
	int err;
	pthread_once_t once;
};

enum { LAT_IQ2XS, LAT_IQ2S, LAT_IQ3XXS, LAT_IQ3S, LAT_IQ1S, LAT_COUNT };

/*
 * Level magnitudes follow from the dequantisers: IQ2 weights are
 * d (2l+1) / 8 * byte, IQ3_XXS d (2l+1) / 4 * byte, IQ3_S d (2l+1) * byte,
 * IQ1_M d (2l+1) * (byte +- 1/8).  On IQ2's grids level distances are
 * even, so slack 0 is the nearest shell alone.
 */
static struct lattice g_lat[LAT_COUNT] = {
	[LAT_IQ2XS] = { strata_iq2xs_grid, 512, 8, 3, { 8, 25, 43 },
			{ 1.0f, 3.125f, 5.375f }, 0, .once = PTHREAD_ONCE_INIT },
	[LAT_IQ2S] = { strata_iq2s_grid, 1024, 8, 3, { 8, 25, 43 },
		       { 1.0f, 3.125f, 5.375f }, 0, .once = PTHREAD_ONCE_INIT },
	[LAT_IQ3XXS] = { strata_iq3xxs_grid, 256, 4, 8, { 4, 12, 20, 28, 36, 44, 52, 62 },
			 { 1, 3, 5, 7, 9, 11, 13, 15.5f }, 1, .once = PTHREAD_ONCE_INIT },
	[LAT_IQ3S] = { strata_iq3s_grid, 512, 4, 8, { 1, 3, 5, 7, 9, 11, 13, 15 },
		       { 1, 3, 5, 7, 9, 11, 13, 15 }, 2, .once = PTHREAD_ONCE_INIT },
	[LAT_IQ1S] = { strata_iq1s_grid, 2048, 8, 3, { -1, 0, 1 }, { -1, 0, 1 }, 1,
		       .once = PTHREAD_ONCE_INIT },
};

/* Level of value i of pattern code c, and of entry e. */
static int code_level(const struct lattice *L, int c, int i)
{
	return c / L->pw[i] % L->nl;
}

static int entry_level(const struct lattice *L, int e, int i)
{
	return L->levo[e * L->gs + i] - i * L->nl;
}

/* Levels of pattern code packed 2 bits a value (3 levels) or 8 (8 levels). */
static uint32_t pattern_pack(const struct lattice *L, int code)
{
	const int bits = L->nl == 3 ? 2 : 8;
	uint32_t p = 0;

	for (int i = 0; i < L->gs; i++)
		p |= (uint32_t)code_level(L, code, i) << (bits * i);
	return p;
}

/* Levels of every entry (also packed, see pattern_pack), and the map's
 * entries (-1 elsewhere). */
static int lattice_levels(struct lattice *L, int ncode, uint32_t *packed)
{
	for (int c = 0; c < ncode; c++)
		L->map[c] = -1;
	for (int e = 0; e < L->n_grid; e++) {
		const uint64_t g = L->gs == 8 ? ((const uint64_t *)L->grid)[e]
					      : ((const uint32_t *)L->grid)[e];
		int code = 0;

		for (int i = 0; i < L->gs; i++) {
			const int8_t b = (int8_t)(g >> (8 * i));
			int l = 0;

			while (l < L->nl && L->bytes[l] != b)
				l++;
			if (l == L->nl)
				return -EINVAL; /* a byte that is no level: not our table */
			L->levo[e * L->gs + i] = (uint8_t)(i * L->nl + l);
			code += l * L->pw[i];
		}
		if (L->map[code] >= 0)
			return -EINVAL; /* two entries with one pattern */
		L->map[code] = e;
		packed[e] = pattern_pack(L, code);
	}
	return 0;
}

/*
 * Squared level distance of two packed patterns.  With 3 levels (00, 01,
 * 10) two values differ by 1 or 2; by 2 exactly where their xor is 10.
 */
static int pattern_dist(const struct lattice *L, uint32_t a, uint32_t b)
{
	const uint32_t x = a ^ b;
	int d = 0;

	if (L->nl == 3)
		return __builtin_popcount((x | x >> 1) & 0x5555) +
		       3 * __builtin_popcount((x >> 1) & ~x & 0x5555);
	for (int i = 0; i < 32; i += 8) {
		const int u = (int)(a >> i & 0xff) - (int)(b >> i & 0xff);

		d += u * u;
	}
	return d;
}

/*
 * The neighbours of pattern code c into sel[NB_MAX + 1] (returns how
 * many): the entries within slack of its nearest level distance, the
 * NB_MAX nearest of those in magnitude, ties to the lower index.
 */
static int nearest_entries(const struct lattice *L, int c, const uint32_t *packed, int *sel)
{
	const uint32_t pc = pattern_pack(L, c);
	float mag[NB_MAX + 1];
	int dmin = 1 << 30, n = 0;

	for (int e = 0; e < L->n_grid; e++) {
		const int d = pattern_dist(L, pc, packed[e]);

		dmin = d < dmin ? d : dmin;
	}
	for (int e = 0; e < L->n_grid; e++) {
		float m = 0.0f;
		int j;

		if (pattern_dist(L, pc, packed[e]) > dmin + L->slack)
			continue;
		for (int i = 0; i < L->gs; i++) {
			const float u = L->lv[code_level(L, c, i)] - L->lv[entry_level(L, e, i)];

			m += u * u;
		}
		for (j = n < NB_MAX ? n++ : NB_MAX; j > 0 && mag[j - 1] > m; j--) {
			mag[j] = mag[j - 1];
			sel[j] = sel[j - 1];
		}
		mag[j] = m;
		sel[j] = e;
	}
	return n;
}

/*
 * Per pattern that is no entry, at map's offset in nb: the count of its
 * neighbours, then per neighbour its index (2 bytes), the count of values
 * where it differs from the pattern and those values as i * nl + level,
 * so that its cost is the pattern's plus those values' changes.
 */
static int lattice_neighbours(struct lattice *L, int ncode, const uint32_t *packed)
{
	size_t n = 0, cap = (size_t)ncode * 16;

	if (!(L->nb = malloc(cap)))
		return -ENOMEM;
	for (int c = 0; c < ncode; c++) {
		int sel[NB_MAX + 1], k = L->map[c] < 0 ? nearest_entries(L, c, packed, sel) : 0;

		if (!k)
			continue;
		if (cap - n < 1 + (size_t)k * (3 + 8)) {
			uint8_t *p = realloc(L->nb, 2 * cap);

			if (!p)
				return -ENOMEM;
			L->nb = p;
			cap *= 2;
		}
		L->map[c] = -1 - (int32_t)n;
		L->nb[n++] = (uint8_t)k;
		for (int j = 0; j < k; j++) {
			size_t at = n + 2;

			L->nb[n] = (uint8_t)sel[j];
			L->nb[n + 1] = (uint8_t)(sel[j] >> 8);
			for (int i = 0; i < L->gs; i++)
				if (entry_level(L, sel[j], i) != code_level(L, c, i))
					L->nb[++at] = L->levo[sel[j] * L->gs + i];
			L->nb[n + 2] = (uint8_t)(at - n - 2);
			n = at + 1;
		}
	}
	return 0;
}

static void lattice_build(struct lattice *L)
{
	uint32_t *packed = malloc(sizeof(uint32_t) * (size_t)L->n_grid);
	int ncode = 1;

	for (int i = 0; i < L->gs; i++) {
		L->pw[i] = ncode;
		ncode *= L->nl;
	}
	for (int l = 0; l + 1 < L->nl; l++)
		L->thr[l] = 0.5f * (L->lv[l] + L->lv[l + 1]);
	L->levo = malloc((size_t)L->n_grid * (size_t)L->gs);
	L->map = malloc(sizeof(int32_t) * (size_t)ncode);
	if (!packed || !L->levo || !L->map) {
		L->err = -ENOMEM;
	} else if (!(L->err = lattice_levels(L, ncode, packed))) {
		L->err = lattice_neighbours(L, ncode, packed);
	}
	free(packed);
}

/* Each type's tables, built on first use by whichever thread comes first. */
#define LATTICE_INIT(t, lat)                                                       \
	static void build_##t(void) { lattice_build(&g_lat[lat]); }                  \
	int strata_##t##_quant_init(void)                                            \
	{                                                                           \
		pthread_once(&g_lat[lat].once, build_##t);                           \
		return g_lat[lat].err;                                               \
	}

LATTICE_INIT(iq2_xs, LAT_IQ2XS)
LATTICE_INIT(iq2_s, LAT_IQ2S)
LATTICE_INIT(iq3_xxs, LAT_IQ3XXS)
LATTICE_INIT(iq3_s, LAT_IQ3S)
LATTICE_INIT(iq1_m, LAT_IQ1S)

/* ---- one group: the entry that fits targets t at scale s ---------------------- */

/*
 * The cheapest neighbour (list p, see lattice_neighbours) of the rounded
 * pattern `lev` for targets t with weights w at scale s.
 */
static int best_neighbour(const struct lattice *L, const uint8_t *p, const int *lev,
			  const float *t, const float *w, float s)
{
	float delta[64], best = INFINITY;
	const int n = *p++;
	int e = p[0] | p[1] << 8;

	for (int i = 0; i < L->gs; i++) {
		const float d0 = s * L->lv[lev[i]] - t[i];

		for (int l = 0; l < L->nl; l++) {
			const float d = s * L->lv[l] - t[i];

			delta[i * L->nl + l] = w[i] * (d * d - d0 * d0);
		}
	}
	for (int j = 0; j < n; j++, p += 3 + p[2]) {
		float c = 0.0f;

		for (int m = 0; m < p[2]; m++)
			c += delta[p[3 + m]];
		if (c < best) {
			best = c;
			e = p[0] | p[1] << 8;
		}
	}
	return e;
}

/* The nearest pattern when it is an entry, else the best of its neighbours. */
static int choose(const struct lattice *L, const float *t, const float *w, float s)
{
	const float is = 1.0f / s;
	int code = 0, m, lev[8];

	for (int i = 0; i < L->gs; i++) {
		const float v = t[i] * is;
		int l = 0;

		for (int k = 0; k + 1 < L->nl; k++)
			l += v > L->thr[k];
		lev[i] = l;
		code += l * L->pw[i];
	}
	m = L->map[code];
	return m >= 0 ? m : best_neighbour(L, L->nb + (-1 - m), lev, t, w, s);
}

/* sum w t q and sum w q^2 of entry e against targets t. */
static void entry_sums(const struct lattice *L, int e, const float *t, const float *w,
		       float *b, float *c)
{
	for (int i = 0; i < L->gs; i++) {
		const float q = L->lv[entry_level(L, e, i)];

		*b += w[i] * t[i] * q;
		*c += w[i] * q * q;
	}
}

/* sum w (s q - t)^2 of entry e against targets t. */
static float entry_cost(const struct lattice *L, int e, const float *t, const float *w,
			float s)
{
	float c = 0.0f;

	for (int i = 0; i < L->gs; i++) {
		const float d = s * L->lv[entry_level(L, e, i)] - t[i];

		c += w[i] * d * d;
	}
	return c;
}

/* ---- a sub-block: the entries of its groups ------------------------------------- */

/*
 * A sub-block's choice: an entry per group and the sums that give its
 * weighted error at any scale s, sum w t^2 - 2 s b + s^2 c.
 */
struct choice {
	uint16_t e[8];
	uint8_t neg; /* IQ1_M: bit g set when group g's shift is -1/8 */
	float b, c;  /* sum w t q and sum w q^2 */
};

/* a fits better than `than`, each at its least-squares scale: larger b^2 / c. */
static int fits_better(const struct choice *a, const struct choice *than)
{
	if (!(a->b > 0.0f && a->c > 0.0f))
		return 0;
	if (!(than->b > 0.0f && than->c > 0.0f))
		return 1;
	return (double)a->b * a->b * than->c > (double)than->b * than->b * a->c;
}

/* Every group's entry at scale s. */
static void fit(const struct lattice *L, int n, const float *t, const float *w, float s,
		struct choice *ch)
{
	ch->b = ch->c = 0.0f;
	for (int o = 0, g = 0; o < n; o += L->gs, g++) {
		ch->e[g] = (uint16_t)choose(L, t + o, w + o, s);
		entry_sums(L, ch->e[g], t + o, w + o, &ch->b, &ch->c);
	}
}

/* Each group chosen again at scale s, kept where it costs less there. */
static void refit(const struct lattice *L, int n, const float *t, const float *w, float s,
		  struct choice *ch)
{
	ch->b = ch->c = 0.0f;
	for (int o = 0, g = 0; o < n; o += L->gs, g++) {
		const int e = choose(L, t + o, w + o, s);

		if (e != ch->e[g] && entry_cost(L, e, t + o, w + o, s) <
				     entry_cost(L, ch->e[g], t + o, w + o, s))
			ch->e[g] = (uint16_t)e;
		entry_sums(L, ch->e[g], t + o, w + o, &ch->b, &ch->c);
	}
}

/* How a type searches: its lattice, sub-block size, signs, trial scales. */
struct kind {
	int lat;
	int sub;        /* values per sub-block scale */
	int parity;     /* an even count of negative signs per 8 values */
	int trials;     /* amax / (top level x f), f from f_lo to f_hi */
	float f_lo, f_hi;
};

/* More trials gain < 0.1% (IQ2) and 0.2% (IQ3) of accuracy: step 1 only
 * needs a start that step 3 can correct. */
static const struct kind K_IQ2XS = { LAT_IQ2XS, 16, 1, 5, 0.84f, 1.16f };
static const struct kind K_IQ2S = { LAT_IQ2S, 16, 0, 5, 0.84f, 1.16f };
static const struct kind K_IQ3XXS = { LAT_IQ3XXS, 32, 1, 7, 0.8f, 1.2f };
static const struct kind K_IQ3S = { LAT_IQ3S, 32, 0, 7, 0.8f, 1.2f };

/* Step 1 (see the top) for targets t. */
static void search(const struct kind *K, const float *t, const float *w, struct choice *best)
{
	const struct lattice *L = &g_lat[K->lat];
	float amax = 0.0f;
	struct choice cur;

	for (int i = 0; i < K->sub; i++)
		amax = t[i] > amax ? t[i] : amax;
	if (!(amax > 1e-30f)) {
		fit(L, K->sub, t, w, 1.0f, best); /* zeros: any scale, b = 0 */
		return;
	}
	for (int k = 0; k < K->trials; k++) {
		const float f = K->f_lo + (K->f_hi - K->f_lo) * (float)k / (float)(K->trials - 1);

		fit(L, K->sub, t, w, amax / (f * L->lv[L->nl - 1]), k ? &cur : best);
		if (k && fits_better(&cur, best))
			*best = cur;
	}
	if (best->b > 0.0f && best->c > 0.0f) {
		fit(L, K->sub, t, w, best->b / best->c, &cur);
		if (fits_better(&cur, best))
			*best = cur;
	}
}

/* ---- a block: d and the sub-block scales -------------------------------------- */

/* The l whose odd multiple 2l+1 is nearest b / (c d): the best for sums b, c. */
static int best_l(const struct choice *ch, float d, int lmax)
{
	const float v = 0.5f * (ch->b / (ch->c * d) - 1.0f);

	if (!(ch->b > 0.0f && ch->c > 0.0f && d > 0.0f && v > 0.0f))
		return 0;
	return v >= (float)lmax ? lmax : (int)(v + 0.5f);
}

/* The block's weighted error, less its constant sum w t^2, at scale d with
 * each sub-block's best l (stored in l when given). */
static double block_err(const struct choice *ch, int n, float d, int lmax, uint8_t *l)
{
	double e = 0.0;

	for (int j = 0; j < n; j++) {
		const int lj = best_l(&ch[j], d, lmax);
		const double s = (double)d * (2 * lj + 1);

		if (l)
			l[j] = (uint8_t)lj;
		e += ch[j].c * s * s - 2.0 * ch[j].b * s;
	}
	return e;
}

/* Candidates for d: the largest sub-block scale over (2 lmax + 1) times
 * D_LO .. D_HI; a small l rounds coarsely, so the best d is often lower. */
#define D_STEPS 24
#define D_LO 0.7f
#define D_HI 1.05f

/* Step 2: d (rounded to f16) and each sub-block's l for fixed choices. */
static float fit_block(const struct choice *ch, int n, int lmax, uint8_t *l)
{
	float smax = 0.0f, d = 0.0f;
	double best = INFINITY, num = 0.0, den = 0.0;

	for (int j = 0; j < n; j++)
		if (ch[j].b > 0.0f && ch[j].c > 0.0f && ch[j].b / ch[j].c > smax)
			smax = ch[j].b / ch[j].c;
	if (!(smax > 0.0f)) {
		memset(l, 0, (size_t)n);
		return 0.0f;
	}
	for (int k = 0; k < D_STEPS; k++) {
		const float dk = smax / (float)(2 * lmax + 1) *
				 (D_LO + (D_HI - D_LO) * (float)k / (float)(D_STEPS - 1));
		const double e = block_err(ch, n, dk, lmax, NULL);

		if (e < best) {
			best = e;
			d = dk;
		}
	}
	block_err(ch, n, d, lmax, l);
	for (int j = 0; j < n; j++) {
		const double m = 2 * l[j] + 1;

		num += ch[j].b * m;
		den += ch[j].c * m * m;
	}
	if (num > 0.0 && den > 0.0)
		d = (float)(num / den);
	d = strata_fp16_to_f32(strata_f32_to_fp16(d < 65504.0f ? d : 65504.0f));
	block_err(ch, n, d, lmax, l);
	return d;
}

/* ---- weights and signs ------------------------------------------------------------ */

/*
 * The weight of each value in every fit: sqrt(2 sigma^2 + x^2), sigma^2 the
 * block's mean square, over sigma.  This is ggml's weighting under an
 * importance matrix whose columns all count alike (strata has no
 * activation statistics).  Mean KL from the F32 model's logits on ../shared's
 * synthetic model (check_iq_quant.c's end_to_end): x^2, ggml's fallback,
 * costs 20-48% more, sigma^2 + x^2 4-12% more; w = 1 is within 5% either
 * way there, where the weights are Gaussian, but trained models' large
 * weights matter more than their share of the squared error.
 */
static void weights(const float *x, float *w)
{
	float s2 = 0.0f;

	for (int i = 0; i < QK; i++)
		s2 += x[i] * x[i];
	s2 /= QK;
	for (int i = 0; i < QK; i++)
		w[i] = sqrtf(2.0f + (s2 > 0.0f ? x[i] * x[i] / s2 : 0.0f));
}

/*
 * Targets |x| and a sign byte per 8 values.  With parity (IQ2_XS and
 * IQ3_XXS store 7 signs; the 8th makes the count of negatives even), a
 * group of 8 with an odd count gives its value of least w x^2, the
 * cheapest to get wrong, the other sign: its target becomes -|x|, which
 * the search meets with the smallest level.
 */
static void targets(const float *x, const float *w, int parity, float *t, uint8_t *signs)
{
	for (int g = 0; g < QK / 8; g++) {
		const float *xg = x + 8 * g, *wg = w + 8 * g;
		float *tg = t + 8 * g;
		unsigned s = 0;
		int imin = 0;

		for (int i = 0; i < 8; i++) {
			tg[i] = fabsf(xg[i]);
			s |= (unsigned)(xg[i] < 0.0f) << i;
			if (wg[i] * xg[i] * xg[i] < wg[imin] * xg[imin] * xg[imin])
				imin = i;
		}
		if (parity && __builtin_parity(s)) {
			s ^= 1u << imin;
			tg[imin] = -tg[imin];
		}
		signs[g] = (uint8_t)s;
	}
}

/* A block of the four sign-and-magnitude types: entries, signs, l, d. */
struct iq_block {
	struct choice ch[16];
	uint8_t l[16];
	uint8_t signs[QK / 8];
	float d;
};

static void quantise_block(const struct kind *K, const float *x, struct iq_block *q)
{
	const struct lattice *L = &g_lat[K->lat];
	const int ns = QK / K->sub;
	float w[QK], t[QK];

	weights(x, w);
	targets(x, w, K->parity, t, q->signs);
	for (int j = 0; j < ns; j++)
		search(K, t + j * K->sub, w + j * K->sub, &q->ch[j]);
	q->d = fit_block(q->ch, ns, 15, q->l);
	if (q->d > 0.0f) {
		for (int j = 0; j < ns; j++)
			refit(L, K->sub, t + j * K->sub, w + j * K->sub,
			      q->d * (float)(2 * q->l[j] + 1), &q->ch[j]);
		q->d = fit_block(q->ch, ns, 15, q->l);
	}
}

/* ---- the four packers (layouts: quants_iq.h) ------------------------------------------ */

static void wr16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* Groups of 8 values are numbered g = 2 j + k in sub-block j (IQ2_*); a
 * sub-block's l takes the low nibble for even j. */
static void pack_iq2_xs(const struct iq_block *q, uint8_t *blk)
{
	memset(blk, 0, STRATA_IQ2_XS_BYTES);
	wr16(blk, strata_f32_to_fp16(q->d));
	for (int j = 0; j < 16; j++) {
		for (int k = 0; k < 2; k++)
			wr16(blk + 2 + 2 * (2 * j + k),
			     q->ch[j].e[k] | (unsigned)(q->signs[2 * j + k] & 127) << 9);
		blk[66 + j / 2] |= (uint8_t)(q->l[j] << (4 * (j & 1)));
	}
}

static void pack_iq2_s(const struct iq_block *q, uint8_t *blk)
{
	memset(blk, 0, STRATA_IQ2_S_BYTES);
	wr16(blk, strata_f32_to_fp16(q->d));
	for (int j = 0; j < 16; j++) {
		for (int k = 0; k < 2; k++) {
			const int g = 2 * j + k, e = q->ch[j].e[k];

			blk[2 + g] = (uint8_t)e;
			blk[34 + g] = q->signs[g];
			blk[66 + g / 4] |= (uint8_t)((e >> 8) << (2 * (g % 4)));
		}
		blk[74 + j / 2] |= (uint8_t)(q->l[j] << (4 * (j & 1)));
	}
}

/* Groups of 4 are 8 j + k in sub-block j; signs per 8 values, 4 j + k. */
static void pack_iq3_xxs(const struct iq_block *q, uint8_t *blk)
{
	memset(blk, 0, STRATA_IQ3_XXS_BYTES);
	wr16(blk, strata_f32_to_fp16(q->d));
	for (int j = 0; j < 8; j++) {
		uint32_t aux = (uint32_t)q->l[j] << 28;

		for (int k = 0; k < 8; k++)
			blk[2 + 8 * j + k] = (uint8_t)q->ch[j].e[k];
		for (int k = 0; k < 4; k++)
			aux |= (uint32_t)(q->signs[4 * j + k] & 127) << (7 * k);
		wr16(blk + 66 + 4 * j, aux & 0xffff);
		wr16(blk + 68 + 4 * j, aux >> 16);
	}
}

static void pack_iq3_s(const struct iq_block *q, uint8_t *blk)
{
	memset(blk, 0, STRATA_IQ3_S_BYTES);
	wr16(blk, strata_f32_to_fp16(q->d));
	for (int j = 0; j < 8; j++) {
		for (int k = 0; k < 8; k++) {
			blk[2 + 8 * j + k] = (uint8_t)q->ch[j].e[k];
			blk[66 + j] |= (uint8_t)((q->ch[j].e[k] >> 8) << k);
		}
		for (int k = 0; k < 4; k++)
			blk[74 + 4 * j + k] = q->signs[4 * j + k];
		blk[106 + j / 2] |= (uint8_t)(q->l[j] << (4 * (j & 1)));
	}
}

/* ---- IQ1_M: three levels and a shift per group ------------------------------------ */

#define IQ1_SHIFT 0.125f

/* A group of 8 with shift +1/8 (neg = 0) or -1/8 at scale s: as a
 * lattice group, its targets are x - s shift. */
static void iq1_targets(const float *x, int neg, float s, float *t)
{
	for (int i = 0; i < 8; i++)
		t[i] = x[i] - s * (neg ? -IQ1_SHIFT : IQ1_SHIFT);
}

/*
 * Both groups at scale s, each the cheaper of its best entries with either
 * shift (with `keep`, only where that costs less than what it holds); then
 * the sums, q = level + shift.
 */
static void iq1_fit(const float *x, const float *w, float s, struct choice *ch, int keep)
{
	const struct lattice *L = &g_lat[LAT_IQ1S];

	ch->b = ch->c = 0.0f;
	if (!keep)
		ch->neg = 0;
	for (int g = 0; g < 2; g++) {
		const float *xg = x + 8 * g, *wg = w + 8 * g;
		float t[8], best = INFINITY, sh;

		if (keep) {
			iq1_targets(xg, (ch->neg >> g) & 1, s, t);
			best = entry_cost(L, ch->e[g], t, wg, s);
		} else {
			ch->e[g] = 0;
		}
		for (int n = 0; n < 2; n++) {
			int e;
			float c;

			iq1_targets(xg, n, s, t);
			e = choose(L, t, wg, s);
			c = entry_cost(L, e, t, wg, s);
			if (c < best) {
				best = c;
				ch->e[g] = (uint16_t)e;
				ch->neg = (uint8_t)((ch->neg & ~(1 << g)) | n << g);
			}
		}
		sh = (ch->neg >> g) & 1 ? -IQ1_SHIFT : IQ1_SHIFT;
		for (int i = 0; i < 8; i++) {
			const float q = L->lv[entry_level(L, ch->e[g], i)] + sh;

			ch->b += wg[i] * xg[i] * q;
			ch->c += wg[i] * q * q;
		}
	}
}

/* Step 1 for IQ1_M: trial scales from amax / (1 + 1/8), the top value,
 * down to about half of it (three levels clip hard), then the best
 * trial's own scale. */
static void iq1_search(const float *x, const float *w, struct choice *best)
{
	static const float f[5] = { 0.55f, 0.7f, 0.85f, 1.0f, 1.15f };
	float amax = 0.0f;
	struct choice cur;

	for (int i = 0; i < 16; i++)
		amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
	if (!(amax > 1e-30f)) {
		iq1_fit(x, w, 1.0f, best, 0); /* zeros: any scale, b = 0 */
		return;
	}
	for (int k = 0; k < 5; k++) {
		iq1_fit(x, w, amax / (1.0f + IQ1_SHIFT) * f[k], k ? &cur : best, 0);
		if (k && fits_better(&cur, best))
			*best = cur;
	}
	if (best->b > 0.0f && best->c > 0.0f) {
		iq1_fit(x, w, best->b / best->c, &cur, 0);
		if (fits_better(&cur, best))
			*best = cur;
	}
}

/* Sub-block j (16 values) holds groups 2 j and 2 j + 1; its 3-bit l sits
 * in u16 j / 4 at bit 3 (j % 4); d's f16 in the four u16s' top nibbles. */
static void iq1_m_block(const float *x, uint8_t *blk)
{
	float w[QK], d;
	struct choice ch[16];
	uint8_t l[16];
	uint16_t sc[4] = { 0 }, h;

	weights(x, w);
	for (int j = 0; j < 16; j++)
		iq1_search(x + 16 * j, w + 16 * j, &ch[j]);
	d = fit_block(ch, 16, 7, l);
	if (d > 0.0f) {
		for (int j = 0; j < 16; j++)
			iq1_fit(x + 16 * j, w + 16 * j, d * (float)(2 * l[j] + 1), &ch[j], 1);
		d = fit_block(ch, 16, 7, l);
	}
	memset(blk, 0, STRATA_IQ1_M_BYTES);
	for (int j = 0; j < 16; j++) {
		for (int k = 0; k < 2; k++) {
			const int g = 2 * j + k, e = ch[j].e[k];

			blk[g] = (uint8_t)e;
			blk[32 + g / 2] |= (uint8_t)(((e >> 8) | ((ch[j].neg >> k) & 1) << 3)
						     << (4 * (g & 1)));
		}
		sc[j / 4] |= (uint16_t)(l[j] << (3 * (j % 4)));
	}
	h = strata_f32_to_fp16(d);
	for (int i = 0; i < 4; i++)
		wr16(blk + 48 + 2 * i, sc[i] | (unsigned)((h >> (4 * i)) & 0xf) << 12);
}

/* ---- exported entries ---------------------------------------------------------------- */

#define IQ_FROM_FLOAT(t, K, bytes)                                                  \
	void strata_##t##_from_float(const float *src, void *dst, int64_t n)        \
	{                                                                           \
		uint8_t *blk = dst;                                                 \
		struct iq_block q;                                                  \
		for (int64_t b = 0; b < n / QK; b++, blk += (bytes)) {              \
			quantise_block(&(K), src + b * QK, &q);                      \
			pack_##t(&q, blk);                                          \
		}                                                                   \
	}

IQ_FROM_FLOAT(iq2_xs, K_IQ2XS, STRATA_IQ2_XS_BYTES)
IQ_FROM_FLOAT(iq2_s, K_IQ2S, STRATA_IQ2_S_BYTES)
IQ_FROM_FLOAT(iq3_xxs, K_IQ3XXS, STRATA_IQ3_XXS_BYTES)
IQ_FROM_FLOAT(iq3_s, K_IQ3S, STRATA_IQ3_S_BYTES)

void strata_iq1_m_from_float(const float *src, void *dst, int64_t n)
{
	uint8_t *blk = dst;

	for (int64_t b = 0; b < n / QK; b++, blk += STRATA_IQ1_M_BYTES)
		iq1_m_block(src + b * QK, blk);
}
