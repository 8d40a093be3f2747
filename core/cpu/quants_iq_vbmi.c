/*
 * quants_iq_vbmi.c - IQ2_XS, IQ3_XXS and IQ3_S on AVX-512 cores that also
 * have VBMI (Ice Lake, Zen 4 and later): one-token rows (the decode GEMV),
 * and the unpacking of blocks for quants_iq_avx512.c's prompt tiles.  The
 * codebook is looked up with byte and word permutes instead of one scalar
 * load and insert per grid entry, which bound the rows at 14-21 GMAC/s a
 * core (README.md, "The kernels per type and ISA").
 *
 * Every grid value is one of 8 (IQ3: 3 bits) or 3 (IQ2_XS: 2 bits) values,
 * so an entry is a 12- or 16-bit code: the tables here hold the codes
 * (made once from iq_tables.c's grids), a block's indices pick its entries'
 * codes with vpermi2b/vpermi2w out of tables held in registers, and
 * vpmultishiftqb then spreads each code's fields over the weight bytes, where
 * vpermb turns a field into its grid value.  The rest is iq_dot_row's
 * arithmetic at full width: the signs go onto the activations (one mask
 * register per 64 weights), vpmaddubsw multiplies them by the unsigned
 * magnitudes and vpdpwssd applies the group scales, all exact in int32;
 * one FMA per block with d_w d_x.  Only the float sums' order differs from
 * the AVX2-width rows (quants_iq_x86.h), so outputs agree within rounding.
 *
 * Compiled with the AVX-512 level's flags plus -mavx512vbmi; called only
 * from quants_iq_avx512.c when the CPU has VBMI (strata_iq_vbmi_set).
 */
#include "kernels_impl.h"
#include "quants_iq.h"

#if defined(STRATA_KERN_X86)
#include <pthread.h>

#include "quants_iq_x86.h"

/* The codes of each grid entry, in planes the permutes read. */
static struct {
	_Alignas(64) uint8_t x3_lo[256], x3_hi[256]; /* IQ3_XXS: bits 0-7, 8-11 */
	_Alignas(64) uint8_t s3_lo[512], s3_hi[512]; /* IQ3_S */
	_Alignas(64) uint16_t x2[512];               /* IQ2_XS: 8 x 2 bits */
	_Alignas(64) uint8_t x3_lut[64], s3_lut[64], x2_lut[64]; /* vals_lut */
} g_codes;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The position of v in vals (n of them); the grids hold no other values. */
static unsigned code_of(uint8_t v, const uint8_t *vals, int n)
{
	for (int i = 0; i < n; i++)
		if (vals[i] == v)
			return (unsigned)i;
	return 0;
}

static const uint8_t g_x3_vals[8] = { 4, 12, 20, 28, 36, 44, 52, 62 };
static const uint8_t g_s3_vals[8] = { 1, 3, 5, 7, 9, 11, 13, 15 };
static const uint8_t g_x2_vals[3] = { 8, 25, 43 };

/* A 64-entry lookup table for vpermb of `bits`-bit fields: entry i is
 * vals[i's low bits] (0 past n), so the bits above a field that
 * vpmultishiftqb brings along do not matter. */
static void vals_lut(uint8_t *t, const uint8_t *vals, int n, int bits)
{
	for (int i = 0; i < 64; i++) {
		int f = i & ((1 << bits) - 1);

		t[i] = f < n ? vals[f] : 0;
	}
}

static void codes_init(void)
{
	for (int e = 0; e < 512; e++) {
		unsigned c3 = 0, cs = 0, c2 = 0;

		for (int k = 0; k < 8; k++) {
			if (k < 4 && e < 256)
				c3 |= code_of((uint8_t)(strata_iq3xxs_grid[e] >> 8 * k),
					      g_x3_vals, 8) << 3 * k;
			if (k < 4)
				cs |= code_of((uint8_t)(strata_iq3s_grid[e] >> 8 * k),
					      g_s3_vals, 8) << 3 * k;
			c2 |= code_of((uint8_t)(strata_iq2xs_grid[e] >> 8 * k),
				      g_x2_vals, 3) << 2 * k;
		}
		if (e < 256) {
			g_codes.x3_lo[e] = (uint8_t)c3;
			g_codes.x3_hi[e] = (uint8_t)(c3 >> 8);
		}
		g_codes.s3_lo[e] = (uint8_t)cs;
		g_codes.s3_hi[e] = (uint8_t)(cs >> 8);
		g_codes.x2[e] = (uint16_t)c2;
	}
	vals_lut(g_codes.x3_lut, g_x3_vals, 8, 3);
	vals_lut(g_codes.s3_lut, g_s3_vals, 8, 3);
	vals_lut(g_codes.x2_lut, g_x2_vals, 3, 2);
}

#define VB_AI static inline __attribute__((always_inline))

/*
 * The sign masks of IQ3_XXS and IQ2_XS (iq_block_signs_v's bytes) with VBMI:
 * seven bits per 8 weights, the eighth their parity.  IQ3_XXS's fields sit
 * at bits 0, 7, 14, 21 of each of the 8 words at 66, so one vpmultishiftqb
 * brings all 32 to bytes; IQ2_XS's are the top 7 bits of its 32 index words.
 * The parity of a 7-bit byte is a 16-entry shuffle of the XOR of its halves.
 */
VB_AI void signs_vbmi(enum iq_kind kind, const uint8_t *p, __m512i Q, uint32_t m[8])
{
	const __m256i par = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0,
					     -128, 0, -128, -128, 0, 0, -128, -128, 0, -128, 0,
					     0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
	__m256i f;

	if (kind == IQ_3XXS)
		f = _mm256_and_si256(_mm256_multishift_epi64_epi8(
			_mm256_set1_epi64x(0x352e2720150e0700ll),
			_mm256_loadu_si256((const __m256i *)(p + 66))), _mm256_set1_epi8(0x7f));
	else
		f = _mm512_cvtepi16_epi8(_mm512_srli_epi16(Q, 9));
	f = _mm256_or_si256(f, _mm256_shuffle_epi8(par, _mm256_and_si256(
		_mm256_xor_si256(f, _mm256_srli_epi16(f, 4)), _mm256_set1_epi8(15))));
	_mm256_storeu_si256((__m256i *)m, f);
}


/*
 * The tables of one kind, in registers for a whole call: IQ3_XXS and IQ3_S
 * keep their codes' low bytes in t[0..7] and high bytes in t[8..15] (IQ3_XXS
 * uses 4 of each), IQ2_XS its 512 codes as words in t[0..15]; lut turns a
 * field into its grid value.
 */
struct vtab {
	__m512i t[16], lut;
};

VB_AI void vtab_load(enum iq_kind kind, struct vtab *T)
{
	pthread_once(&g_once, codes_init);
	switch (kind) {
	case IQ_3XXS:
	case IQ_3S: {
		const int x3 = kind == IQ_3XXS, n = x3 ? 4 : 8;

		for (int i = 0; i < n; i++) {
			T->t[i] = _mm512_load_si512((x3 ? g_codes.x3_lo : g_codes.s3_lo) + 64 * i);
			T->t[8 + i] = _mm512_load_si512((x3 ? g_codes.x3_hi : g_codes.s3_hi) + 64 * i);
		}
		T->lut = _mm512_load_si512(x3 ? g_codes.x3_lut : g_codes.s3_lut);
		break;
	}
	default:
		for (int i = 0; i < 16; i++)
			T->t[i] = _mm512_load_si512(g_codes.x2 + 32 * i);
		T->lut = _mm512_load_si512(g_codes.x2_lut);
		break;
	}
}

/* One block unpacked: weights 64 c .. 64 c + 63 as magnitudes g[c], the
 * sign masks (iq_block_signs_v's bytes) and the 16 group scales as words. */
struct vblk {
	__m512i g[4], S16;
	uint32_t m[8];
};

/* A byte plane's codes for index bytes I (b7, b8: index bits 7 and 8). */
VB_AI __m512i pick4(const __m512i *t, __m512i I, __mmask64 b7, __mmask64 b8, int np)
{
	__m512i r = _mm512_mask_blend_epi8(b7, _mm512_permutex2var_epi8(t[0], I, t[1]),
					   _mm512_permutex2var_epi8(t[2], I, t[3]));

	if (np == 4)
		r = _mm512_mask_blend_epi8(b8, r, _mm512_mask_blend_epi8(
			b7, _mm512_permutex2var_epi8(t[4], I, t[5]),
			_mm512_permutex2var_epi8(t[6], I, t[7])));
	return r;
}

/*
 * A 4-value block (IQ3_XXS, IQ3_S).  The 64 entries' codes land in cl
 * (bits 0-7) and ch (8-11); for weights 64 c .. 64 c + 63 a byte permute
 * puts entries 16 c + 2 q and 16 c + 2 q + 1 at bits 0 and 32 of qword q,
 * and vpmultishiftqb takes the fields at bits 0, 3, 6, 9 of each.
 */
VB_AI void block4(enum iq_kind kind, const struct vtab *T, const uint8_t *w,
		  struct vblk *o)
{
	/* byte i of each qword: the field at bit 0, 3, 6, 9, 32, 35, 38, 41 */
	const __m512i ctrl = _mm512_set1_epi64(0x2926232009060300ll);
	const int np = kind == IQ_3S ? 4 : 2;
	const __m512i I = _mm512_loadu_si512(w + 2);
	const __mmask64 b7 = _mm512_movepi8_mask(I);
	__mmask64 b8 = 0;
	__m512i cl, ch;

	if (kind == IQ_3S)
		memcpy(&b8, w + 66, 8); /* bit e: entry e's index bit 8 */
	cl = pick4(T->t, I, b7, b8, np);
	ch = pick4(T->t + 8, I, b7, b8, np);
	if (kind == IQ_3XXS)
		signs_vbmi(IQ_3XXS, w, I, o->m);
	else
		_mm256_storeu_si256((__m256i *)o->m, iq_block_signs_v(kind, w));
	o->S16 = scales16(kind, w);
	_Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
		/* qword q: bytes 0, 1 from entry 16 c + 2 q's cl, ch (ch is
		 * index 64 on), bytes 4, 5 from the next entry's */
		const __m512i sel = _mm512_add_epi8(_mm512_set1_epi64(0x0000410100004000ll),
						    _mm512_add_epi8(_mm512_set_epi64(
			0x0e0e0e0e0e0e0e0ell, 0x0c0c0c0c0c0c0c0cll, 0x0a0a0a0a0a0a0a0all,
			0x0808080808080808ll, 0x0606060606060606ll, 0x0404040404040404ll,
			0x0202020202020202ll, 0x0000000000000000ll),
						    _mm512_set1_epi8((char)(16 * c))));

		o->g[c] = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(
			ctrl, _mm512_permutex2var_epi8(cl, sel, ch)), T->lut);
	}
}

/*
 * An IQ2_XS block: the 32 9-bit indices as words pick their 16-bit codes
 * from 8 pairs of word tables (bits 6-8 choose the pair), and for weights
 * 64 c .. 64 c + 63 a word permute puts entry 8 c + q at the bottom of
 * qword q, whose 2-bit fields vpmultishiftqb takes.
 */
VB_AI void block_x2(const struct vtab *T, const uint8_t *w, struct vblk *o)
{
	const __m512i ctrl = _mm512_set1_epi64(0x0e0c0a0806040200ll);
	const __m512i Q = _mm512_loadu_si512(w + 2);
	const __mmask32 b6 = _mm512_test_epi16_mask(Q, _mm512_set1_epi16(64));
	const __mmask32 b7 = _mm512_test_epi16_mask(Q, _mm512_set1_epi16(128));
	const __mmask32 b8 = _mm512_test_epi16_mask(Q, _mm512_set1_epi16(256));
	__m512i r[4], C;

	_Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
		r[j] = _mm512_mask_blend_epi16(
			b6, _mm512_permutex2var_epi16(T->t[4 * j], Q, T->t[4 * j + 1]),
			_mm512_permutex2var_epi16(T->t[4 * j + 2], Q, T->t[4 * j + 3]));
	C = _mm512_mask_blend_epi16(b8, _mm512_mask_blend_epi16(b7, r[0], r[1]),
				    _mm512_mask_blend_epi16(b7, r[2], r[3]));
	signs_vbmi(IQ_2XS, w, Q, o->m);
	o->S16 = scales16(IQ_2XS, w);
	_Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
		/* word 4 q: entry 8 c + q; the others: don't care */
		const __m512i sel = _mm512_add_epi16(_mm512_set_epi64(
			7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(8 * c));

		o->g[c] = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(
			ctrl, _mm512_permutexvar_epi16(sel, C)), T->lut);
	}
}

VB_AI void vblock(enum iq_kind kind, const struct vtab *T, const uint8_t *w,
		  struct vblk *o)
{
	if (kind == IQ_2XS)
		block_x2(T, w, o);
	else
		block4(kind, T, w, o);
}

/* One row against one token's Q8_K activations x. */
VB_AI float vrow(enum iq_kind kind, const struct vtab *T, const uint8_t *w,
		 const uint8_t *x, int64_t k)
{
	const size_t bytes = iq_block_bytes[kind];
	const int8_t *xq = STRATA_Q8K_QS(x);
	const float *xd = STRATA_Q8K_D(x, k);
	__m512 acc = _mm512_setzero_ps();

	for (int64_t b = 0; b < k / STRATA_QK_K; b++, w += bytes, xq += STRATA_QK_K) {
		__m512i s = _mm512_setzero_si512();
		struct vblk o;

		vblock(kind, T, w, &o);
		_Pragma("GCC unroll 4") for (int c = 0; c < 4; c++)
			s = dot64(s, o.g[c], xq + 64 * c, o.m + 2 * c, pair_scales(o.S16, c));
		acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s),
				      _mm512_set1_ps(iq_dscale(kind, w) * xd[b]), acc);
	}
	return _mm512_reduce_add_ps(acc);
}

/* iq_decode's struct iq_dec for n consecutive blocks from w. */
VB_AI void vdecode(enum iq_kind kind, const struct vtab *T, const uint8_t *w, int n,
		   struct iq_dec *dec)
{
	const size_t bytes = iq_block_bytes[kind];

	for (int b = 0; b < n; b++, w += bytes) {
		struct iq_dec *o = dec + b;
		__m512i cv = _mm512_setzero_si512();
		struct vblk v;

		vblock(kind, T, w, &v);
		_Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) {
			__mmask64 neg;
			__m512i ws, sc = pair_scales(v.S16, c);

			memcpy(&neg, v.m + 2 * c, 8);
			ws = _mm512_mask_sub_epi8(v.g[c], neg, _mm512_setzero_si512(), v.g[c]);
			_mm512_store_si512(o->w + 64 * c, ws);
			_mm512_storeu_si512(o->sc + 32 * c, sc);
			cv = _mm512_dpwssd_epi32(cv, _mm512_maddubs_epi16(
				_mm512_set1_epi8((char)0x80), ws), sc);
		}
		o->corr = -_mm512_reduce_add_epi32(cv);
		o->d = iq_dscale(kind, w);
	}
}

#define VB_KINDS(X) X(IQ_3XXS) X(IQ_3S) X(IQ_2XS)

int strata_iq_rows_vbmi(enum iq_kind kind, const struct strata_mm_args *a)
{
	struct vtab T;

	switch (kind) {
#define ROWS(K)                                                                  \
	case K:                                                                  \
		vtab_load(K, &T);                                                \
		for (int64_t r = 0; r < a->nr; r++)                              \
			a->y[r] = vrow(K, &T, a->w + r * a->w_stride, a->x, a->k); \
		return 1;
	VB_KINDS(ROWS)
#undef ROWS
	default:
		return 0;
	}
}

int strata_iq_decode_vbmi(enum iq_kind kind, const uint8_t *w, int n, struct iq_dec *dec)
{
	struct vtab T;

	switch (kind) {
#define DECODE(K)                                                                \
	case K:                                                                  \
		vtab_load(K, &T);                                                \
		vdecode(K, &T, w, n, dec);                                       \
		return 1;
	VB_KINDS(DECODE)
#undef DECODE
	default:
		return 0;
	}
}

#endif
