/*
 * check_quants.c - the legacy (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) and K-quant
 * (Q2_K .. Q6_K) weight types: dequantisation against an independent
 * per-value decoding of GGUF's layouts and across SIMD levels, the
 * reference quantisers byte for byte against llama.cpp's own output,
 * round-trip error bounds, the Q8_K / Q8_1 activation formats, and matmul
 * against an exact reference, at each SIMD level (one per ctest run:
 * check_quants, .avx2, .avx512).  (Dequantisation against
 * ggml's own numbers runs in check_kernels' dequant_matches_ggml.)
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/kernels_impl.h"
#include "cpu/pool.h"
#include "cpu/types.h"
#include "gguf/gguf.h"
#include "testutil.h"

static const uint32_t g_types[] = {
	STRATA_TYPE_Q4_0, STRATA_TYPE_Q4_1, STRATA_TYPE_Q5_0, STRATA_TYPE_Q5_1,
	STRATA_TYPE_IQ4_NL, STRATA_TYPE_Q2_K, STRATA_TYPE_Q3_K, STRATA_TYPE_Q4_K,
	STRATA_TYPE_Q5_K, STRATA_TYPE_Q6_K,
};
#define N_TYPES (sizeof(g_types) / sizeof(g_types[0]))

static const int8_t g_iq4nl[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
				    1, 13, 25, 38, 53, 69, 89, 113 };

/* ---- helpers ------------------------------------------------------------ */

static uint64_t g_rng = 0x243f6a8885a308d3ull;

static uint32_t rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng >> 16);
}

/* Uniform in [-1, 1). */
static float frnd(void)
{
	return (float)(rnd() & 0xffffff) / 8388608.0f - 1.0f;
}

/* Roughly normal (sum of four uniforms), like trained weights. */
static float grnd(void)
{
	return (frnd() + frnd() + frnd() + frnd()) * 0.8660254f;
}

static uint16_t ld16(const uint8_t *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	return h;
}

static float h2f(const uint8_t *p)
{
	return strata_fp16_to_f32(ld16(p));
}

static uint32_t f_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

/*
 * The cases tagged "simd" test the kernels of one level per ctest run
 * (check_quants: scalar, check_quants.avx2, check_quants.avx512; testutil.h).
 */
static int g_lv;
#define SIMD_CASE()                               \
	do {                                      \
		if ((g_lv = tu_simd_level()) < 0) \
			return;                   \
	} while (0)

/* Byte offsets of a block's fp16 fields (scale, and min where present). */
static int fp16_fields(uint32_t type, int off[2])
{
	switch (type) {
	case STRATA_TYPE_Q4_1:
	case STRATA_TYPE_Q5_1:
	case STRATA_TYPE_Q4_K:
	case STRATA_TYPE_Q5_K:
		off[0] = 0, off[1] = 2;
		return 2;
	case STRATA_TYPE_Q2_K:
		off[0] = 80, off[1] = 82;
		return 2;
	case STRATA_TYPE_Q3_K:
		off[0] = 108;
		return 1;
	case STRATA_TYPE_Q6_K:
		off[0] = 208;
		return 1;
	default:
		off[0] = 0;
		return 1;
	}
}

/*
 * Random blocks: every bit pattern of the quants and small scales is a
 * valid block, so fill bytes at random, then give the fp16 fields finite
 * values of varied size (negative, zero and subnormal ones included).
 */
static uint8_t *make_blocks(uint32_t type, int64_t n_values)
{
	const size_t bb = strata_type_block_bytes(type);
	const int64_t nb = n_values / strata_type_block(type);
	uint8_t *w = malloc(bb * (size_t)nb + 1);
	int off[2];
	int nf = fp16_fields(type, off);

	for (size_t i = 0; i < bb * (size_t)nb; i++)
		w[i] = (uint8_t)rnd();
	for (int64_t b = 0; b < nb; b++)
		for (int f = 0; f < nf; f++) {
			uint32_t sel = rnd() % 16;
			uint16_t h = sel == 0   ? 0x0000
				     : sel == 1 ? 0x0203 /* subnormal */
				     : (uint16_t)(0x1800 + rnd() % 0x1400);

			if (rnd() & 1)
				h |= 0x8000;
			memcpy(w + (size_t)b * bb + (size_t)off[f], &h, 2);
		}
	return w;
}

/* ---- an independent decoding of GGUF's layouts ------------------------------- */

/* Q4_K / Q5_K: 6-bit scale or min j (0..7) of the 12 packed bytes. */
static int k4_field(const uint8_t *s, int j, int min)
{
	if (j < 4)
		return s[j + 4 * min] & 63;
	return (min ? s[j + 4] >> 4 : s[j + 4] & 15) | (s[j - 4 + 4 * min] >> 6) << 4;
}

/* Value i of a block, evaluated the way ggml's dequantize_row_* does. */
static float ref_value(uint32_t type, const uint8_t *b, int i)
{
	int q, h, sb;

	switch (type) {
	case STRATA_TYPE_Q4_0:
		q = i < 16 ? b[2 + i] & 15 : b[2 + i - 16] >> 4;
		return (float)(q - 8) * h2f(b);
	case STRATA_TYPE_Q4_1:
		q = i < 16 ? b[4 + i] & 15 : b[4 + i - 16] >> 4;
		return (float)q * h2f(b) + h2f(b + 2);
	case STRATA_TYPE_Q5_0:
	case STRATA_TYPE_Q5_1: {
		int o = type == STRATA_TYPE_Q5_0 ? 6 : 8;
		uint32_t qh;

		memcpy(&qh, b + o - 4, 4);
		q = (i < 16 ? b[o + i] & 15 : b[o + i - 16] >> 4) | ((qh >> i) & 1) << 4;
		if (type == STRATA_TYPE_Q5_0)
			return (float)(q - 16) * h2f(b);
		return (float)q * h2f(b) + h2f(b + 2);
	}
	case STRATA_TYPE_IQ4_NL:
		q = i < 16 ? b[2 + i] & 15 : b[2 + i - 16] >> 4;
		return h2f(b) * (float)g_iq4nl[q];
	case STRATA_TYPE_Q2_K:
		sb = b[i / 16];
		q = (b[16 + 32 * (i / 128) + i % 32] >> (2 * (i % 128 / 32))) & 3;
		return h2f(b + 80) * (float)(sb & 15) * (float)q -
		       h2f(b + 82) * (float)(sb >> 4);
	case STRATA_TYPE_Q3_K: {
		const uint8_t *s = b + 96;
		int g = i / 16, sc;

		sc = (g < 8 ? s[g] & 15 : s[g - 8] >> 4) | ((s[8 + g % 4] >> (2 * (g / 4))) & 3) << 4;
		q = (b[32 + 32 * (i / 128) + i % 32] >> (2 * (i % 128 / 32))) & 3;
		h = (b[i % 32] >> (i / 32)) & 1;
		return h2f(b + 108) * (float)(sc - 32) * (float)(q - (h ? 0 : 4));
	}
	case STRATA_TYPE_Q4_K:
	case STRATA_TYPE_Q5_K: {
		int j = i / 32, qo = type == STRATA_TYPE_Q4_K ? 16 : 48;

		q = b[qo + 32 * (i / 64) + i % 32];
		q = j % 2 ? q >> 4 : q & 15;
		if (type == STRATA_TYPE_Q5_K)
			q |= ((b[16 + i % 32] >> j) & 1) << 4;
		return h2f(b) * (float)k4_field(b + 4, j, 0) * (float)q -
		       h2f(b + 2) * (float)k4_field(b + 4, j, 1);
	}
	case STRATA_TYPE_Q6_K: {
		int half = i / 128, l = i % 128, quarter = l / 32, lo;

		lo = b[64 * half + l % 64];
		lo = quarter >= 2 ? lo >> 4 : lo & 15;
		h = (b[128 + 32 * half + l % 32] >> (2 * quarter)) & 3;
		q = (lo | h << 4) - 32;
		return h2f(b + 208) * (float)(int8_t)b[192 + i / 16] * (float)q;
	}
	}
	return NAN;
}

/* ---- dequantisation ------------------------------------------------------------ */

START_TEST(dequant_matches_layout)
{
	SIMD_CASE();
	for (size_t ti = 0; ti < N_TYPES; ti++) {
		const uint32_t type = g_types[ti];
		const int64_t blk = strata_type_block(type);
		const size_t bb = strata_type_block_bytes(type);

		for (int64_t n = blk; n <= 9 * blk; n += 2 * blk) {
			uint8_t *w = make_blocks(type, n);
			float *ref = malloc(sizeof(float) * (size_t)n);
			float *got = malloc(sizeof(float) * (size_t)n);

			for (int64_t i = 0; i < n; i++)
				ref[i] = ref_value(type, w + (size_t)(i / blk) * bb,
						   (int)(i % blk));
			{
				const int l = g_lv;

				EXPECT_EQ(strata_simd_set(l), 0);
				strata_dequant(type, w, got, n);
				for (int64_t i = 0; i < n; i++)
					EXPECT(f_bits(got[i]) == f_bits(ref[i]),
					       "%s %s: value %lld of %lld = %a, layout says %a",
					       strata_simd_name(l), strata_type_name(type),
					       (long long)i, (long long)n, got[i], ref[i]);
			}
			free(w), free(ref), free(got);
		}
	}
	strata_simd_set(strata_simd_detect());
}
END_TEST

/* Hand-made blocks with values worked out by hand. */
START_TEST(dequant_hand_blocks)
{
	uint8_t b[210];
	float y[256];

	/* Q4_0, d = 0.5: nibble j -> (j - 8) / 2; high nibbles are values 16.. */
	memset(b, 0, sizeof(b));
	b[0] = 0x00, b[1] = 0x38;
	for (int j = 0; j < 16; j++)
		b[2 + j] = (uint8_t)(j | (15 - j) << 4);
	strata_dequant(STRATA_TYPE_Q4_0, b, y, 32);
	ck_assert(y[0] == -4.0f && y[15] == 3.5f && y[16] == 3.5f && y[31] == -4.0f);
	/* IQ4_NL with d = -1: codebook negated. */
	b[0] = 0x00, b[1] = 0xbc;
	strata_dequant(STRATA_TYPE_IQ4_NL, b, y, 32);
	ck_assert(y[0] == 127.0f && y[15] == -113.0f && y[16] == -113.0f);
	/* Q5_1: d = 1, m = -16, fifth bit of value 3 and value 20 set. */
	memset(b, 0, sizeof(b));
	b[0] = 0x00, b[1] = 0x3c, b[2] = 0x00, b[3] = 0xcc;
	b[4] = 0x08, b[6] = 0x10;
	b[8 + 3] = 0x02, b[8 + 4] = 0x10;
	strata_dequant(STRATA_TYPE_Q5_1, b, y, 32);
	ck_assert(y[0] == -16.0f && y[3] == 2.0f && y[20] == 1.0f && y[19] == -16.0f);
	/* Q6_K: d = 1, scale 2 for the first 16 values, q = 63 -> 31 * 2. */
	memset(b, 0, sizeof(b));
	b[0] = 0x0f, b[128] = 0x03, b[192] = 2, b[193] = (uint8_t)-1;
	b[208] = 0x00, b[209] = 0x3c;
	strata_dequant(STRATA_TYPE_Q6_K, b, y, 256);
	ck_assert(y[0] == 62.0f && y[1] == -64.0f && y[16] == 32.0f);
	/* Q4_K: d = 1, dmin = 0.5, sub-block 0 scale 3 min 2, value 0 = 7. */
	memset(b, 0, sizeof(b));
	b[1] = 0x3c, b[3] = 0x38, b[4] = 3, b[8] = 2, b[16] = 0x07;
	strata_dequant(STRATA_TYPE_Q4_K, b, y, 256);
	ck_assert(y[0] == 20.0f && y[1] == -1.0f && y[32] == 0.0f);
	strata_simd_set(strata_simd_detect());
}
END_TEST

/* ---- quantisers ------------------------------------------------------------------ */

/*
 * llama.cpp's llama-quantize made the syn-qwen3moe-d256 models from the F32
 * one; tensors quantised without an importance matrix must come out the
 * same byte for byte.  (The q2_k model used one for its weight matrices:
 * only its token embedding, which importance matrices never cover, is
 * compared.)
 */
START_TEST(quantize_matches_llama_cpp)
{
	static const struct {
		const char *model, *tensor;
		uint32_t type;
	} cases[] = {
		{ "q4_0", "blk.0.ffn_gate_exps.weight", STRATA_TYPE_Q4_0 },
		{ "q4_0", "token_embd.weight", STRATA_TYPE_Q4_0 },
		{ "q4_k_m", "blk.0.ffn_down_exps.weight", STRATA_TYPE_Q4_K },
		{ "q4_k_m", "blk.1.ffn_down_exps.weight", STRATA_TYPE_Q6_K },
		{ "q4_k_m", "blk.0.attn_output.weight", STRATA_TYPE_Q5_K },
		{ "q6_k", "blk.1.ffn_up_exps.weight", STRATA_TYPE_Q6_K },
		{ "iq4_nl", "blk.0.ffn_down_exps.weight", STRATA_TYPE_IQ4_NL },
		{ "iq4_nl", "blk.0.attn_output.weight", STRATA_TYPE_Q5_K },
		{ "q2_k", "token_embd.weight", STRATA_TYPE_Q2_K },
	};
	const char *fp = tu_shared("models/syn-qwen3moe-d256-f32.gguf");
	struct strata_gguf *gf;

	if (!fp)
		TU_SKIP("../shared/models/syn-qwen3moe-d256-f32.gguf is absent; quantisers not "
			"compared with llama.cpp");
	ck_assert_int_eq(strata_gguf_open(fp, &gf), 0);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char rel[128];
		const char *p;
		struct strata_gguf *gq;
		const struct strata_gguf_tensor *tf, *tq;
		uint8_t *q;
		int64_t n;

		snprintf(rel, sizeof(rel), "models/syn-qwen3moe-d256-%s.gguf", cases[c].model);
		p = tu_shared(rel);
		ck_assert_msg(p != NULL, "../shared/%s is absent (its F32 source is not)", rel);
		ck_assert_int_eq(strata_gguf_open(p, &gq), 0);
		tf = strata_gguf_find_tensor(gf, cases[c].tensor);
		tq = strata_gguf_find_tensor(gq, cases[c].tensor);
		ck_assert(tf && tq && tf->type == STRATA_TYPE_F32);
		ck_assert_msg(tq->type == cases[c].type, "%s %s is %s", rel,
			      cases[c].tensor, strata_type_name(tq->type));
		n = (int64_t)(tf->size / 4);
		q = malloc(tq->size);
		EXPECT_EQ(strata_quantize(tq->type, tf->data, q, n), (long long)tq->size);
		for (uint64_t i = 0; i < tq->size; i++)
			if (q[i] != ((const uint8_t *)tq->data)[i]) {
				uint32_t bb = strata_type_block_bytes(tq->type);

				ck_abort_msg("%s %s (%s): byte %llu (block %llu, offset %llu) "
					     "is %#x, llama.cpp wrote %#x", rel, cases[c].tensor,
					     strata_type_name(tq->type), (unsigned long long)i,
					     (unsigned long long)(i / bb),
					     (unsigned long long)(i % bb), q[i],
					     ((const uint8_t *)tq->data)[i]);
			}
		free(q);
		strata_gguf_close(gq);
	}
	strata_gguf_close(gf);
}
END_TEST

/*
 * Quantise normally distributed data, dequantise: the relative RMS error
 * stays under the type's bound (each ~1.3x what llama.cpp's quantiser
 * reaches on this data), and no value errs by more than `max` of its
 * block's largest magnitude (the rounding step's worst case: half a step,
 * or a whole one where the grid clips the side opposite the extreme).
 */
START_TEST(quantize_round_trip)
{
	static const struct {
		uint32_t type;
		double rms, max;
	} bounds[] = {
		{ STRATA_TYPE_Q4_0, 0.12, 0.13 },     { STRATA_TYPE_Q4_1, 0.107, 0.07 },
		{ STRATA_TYPE_Q5_0, 0.067, 0.066 },   { STRATA_TYPE_Q5_1, 0.053, 0.035 },
		{ STRATA_TYPE_IQ4_NL, 0.113, 0.12 },  { STRATA_TYPE_Q2_K, 0.35, 0.45 },
		{ STRATA_TYPE_Q3_K, 0.18, 0.28 },     { STRATA_TYPE_Q4_K, 0.097, 0.11 },
		{ STRATA_TYPE_Q5_K, 0.052, 0.055 },   { STRATA_TYPE_Q6_K, 0.025, 0.022 },
		{ STRATA_TYPE_Q8_0, 0.0086, 0.0045 },
	};
	const int64_t n = 256 * 64;
	float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
	uint8_t *q = malloc((size_t)n * 2);

	for (int64_t i = 0; i < n; i++)
		x[i] = grnd() * (i < n / 2 ? 1.0f : 0.01f);
	for (int64_t i = 0; i < 256; i++) /* a block with an outlier */
		x[1024 + i] = i == 17 ? 40.0f : grnd();
	memset(x + 2048, 0, 256 * sizeof(float)); /* an all-zero block */
	for (size_t c = 0; c < sizeof(bounds) / sizeof(bounds[0]); c++) {
		const uint32_t type = bounds[c].type;
		const int64_t blk = strata_type_block(type);
		double se = 0, sx = 0;

		EXPECT_EQ(strata_quantize(type, x, q, n),
			  (long long)strata_type_row_bytes(type, n));
		strata_dequant(type, q, y, n);
		for (int64_t b = 0; b < n / blk; b++) {
			double bse = 0, bsx = 0, amax = 0;

			for (int64_t i = b * blk; i < (b + 1) * blk; i++) {
				bse += (double)(y[i] - x[i]) * (y[i] - x[i]);
				bsx += (double)x[i] * x[i];
				amax = fmax(amax, fabs(x[i]));
			}
			for (int64_t i = b * blk; i < (b + 1) * blk; i++)
				EXPECT(fabs(y[i] - x[i]) <= bounds[c].max * amax + 1e-30,
				       "%s value %lld: %g -> %g", strata_type_name(type),
				       (long long)i, x[i], y[i]);
			if (b * blk >= n / 2)
				continue; /* the small half is for the bound above */
			se += bse;
			sx += bsx;
		}
		EXPECT(sqrt(se / sx) <= bounds[c].rms, "%s: relative rms error %.4f > %.4f",
		       strata_type_name(type), sqrt(se / sx), bounds[c].rms);
		for (int64_t i = 2048; i < 2048 + 256; i++)
			EXPECT(y[i] == 0.0f, "%s: zero block value %lld = %g",
			       strata_type_name(type), (long long)i, y[i]);
	}
	EXPECT_EQ(strata_quantize(STRATA_TYPE_Q4_K, x, q, 255), -EINVAL);
	EXPECT_EQ(strata_quantize(STRATA_TYPE_Q4_0, x, q, 48), -EINVAL);
	free(x), free(y), free(q);
}
END_TEST

/* Quantising what Q8_0 / Q4_0 dequantised gives the same bytes back. */
START_TEST(quantize_stable_on_grid)
{
	static const uint32_t types[] = { STRATA_TYPE_Q8_0, STRATA_TYPE_Q4_0 };
	const int64_t n = 32 * 200;
	float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
	uint8_t *q1 = malloc((size_t)n * 2), *q2 = malloc((size_t)n * 2);

	for (int64_t i = 0; i < n; i++)
		x[i] = grnd() * (float)(1 + i / 320);
	for (int t = 0; t < 2; t++) {
		int64_t bytes = strata_quantize(types[t], x, q1, n);

		strata_dequant(types[t], q1, y, n);
		EXPECT_EQ(strata_quantize(types[t], y, q2, n), bytes);
		EXPECT(memcmp(q1, q2, (size_t)bytes) == 0, "%s: re-quantising its own "
		       "grid changed the bytes", strata_type_name(types[t]));
	}
	free(x), free(y), free(q1), free(q2);
}
END_TEST

/* ---- activation formats ----------------------------------------------------------- */

/* Q8_K: the value of largest magnitude maps to -127, +128 clamps to 127,
 * bsums are the 16-value sums, d = 1/iscale; every level agrees. */
START_TEST(act_q8k)
{
	SIMD_CASE();

	const int64_t k = 256 * 3;
	float x[256 * 3];
	const struct strata_act_ops *ref = &strata_kern_scalar.act[STRATA_ACT_Q8_K];
	uint8_t *rq = aligned_alloc(64, ref->row_bytes(k));

	for (int rep = 0; rep < 40; rep++) {
		for (int64_t i = 0; i < k; i++)
			x[i] = frnd() * (rep % 4 == 0 ? 1e-5f : 2.0f);
		x[5] = -3.0f;  /* block 0: the first value of largest magnitude -> -127 */
		x[9] = 3.0f;   /* as large, later: +127 */
		x[300] = 2.5f; /* block 1: positive max -> -127 */
		memset(x + 512, 0, 256 * sizeof(float)); /* all zero */
		ref->quantize(x, rq, k);
		EXPECT_EQ(STRATA_Q8K_QS(rq)[5], -127);
		EXPECT_EQ(STRATA_Q8K_QS(rq)[9], 127);
		EXPECT_EQ(STRATA_Q8K_QS(rq)[300], -127);
		ck_assert(STRATA_Q8K_D(rq, k)[0] == 1 / (-127.0f / -3.0f));
		ck_assert(STRATA_Q8K_D(rq, k)[2] == 0.0f);
		for (int64_t i = 0; i < k; i++) {
			float d = STRATA_Q8K_D(rq, k)[i / 256];

			if (d != 0.0f)
				EXPECT(fabsf((float)STRATA_Q8K_QS(rq)[i] - x[i] / d) <= 0.5f,
				       "value %lld", (long long)i);
		}
		for (int64_t g = 0; g < k / 16; g++) {
			int s = 0;

			for (int i = 0; i < 16; i++)
				s += STRATA_Q8K_QS(rq)[16 * g + i];
			EXPECT_EQ(STRATA_Q8K_BSUMS(rq, k)[g], s);
		}
		if (g_lv > STRATA_SIMD_SCALAR) {
			const int l = g_lv;
			const struct strata_act_ops *ao =
				&strata_kern_level_get(l)->act[STRATA_ACT_Q8_K];
			uint8_t *q = aligned_alloc(64, ao->row_bytes(k));

			EXPECT_EQ(ao->row_bytes(k), ref->row_bytes(k));
			ao->quantize(x, q, k);
			EXPECT(memcmp(q, rq, k + k / 8 + k / 64) == 0,
			       "%s Q8_K activations differ from scalar", strata_simd_name(l));
			free(q);
		}
	}
	free(rq);
}
END_TEST

/* Q8_1: Q8_0's values and scales, plus s = d * sum(q); every level's
 * rows are byte for byte the scalar ones. */
START_TEST(act_q8_1)
{
	SIMD_CASE();

	const int64_t k = 32 * 7;
	float x[32 * 7];
	const struct strata_act_ops *q81 = &strata_kern_scalar.act[STRATA_ACT_Q8_1];
	const struct strata_act_ops *q80 = &strata_kern_scalar.act[STRATA_ACT_Q8_0];
	uint8_t *a = aligned_alloc(64, q81->row_bytes(k));
	uint8_t *b = aligned_alloc(64, q80->row_bytes(k));

	for (int64_t i = 0; i < k; i++)
		x[i] = frnd() * 5.0f;
	memset(x + 3 * 32, 0, 32 * sizeof(float)); /* d = 0 */
	for (int i = 0; i < 32; i++) /* amax 127: id = 1, halves tie (to even) */
		x[5 * 32 + i] = i == 7 ? -127.0f : (float)(i - 16) + 0.5f;
	for (int i = 0; i < 32; i++)
		x[6 * 32 + i] *= 1e-6f;
	q81->quantize(x, a, k);
	EXPECT_EQ(STRATA_Q8_1_QS(a)[5 * 32], -16); /* -15.5 */
	EXPECT_EQ(STRATA_Q8_1_QS(a)[5 * 32 + 1], -14); /* -14.5 */
	if (g_lv > STRATA_SIMD_SCALAR) {
		const int l = g_lv;
		const struct strata_act_ops *ao =
			&strata_kern_level_get(l)->act[STRATA_ACT_Q8_1];
		uint8_t *q = aligned_alloc(64, ao->row_bytes(k));

		EXPECT_EQ(ao->row_bytes(k), q81->row_bytes(k));
		ao->quantize(x, q, k);
		EXPECT(memcmp(q, a, k + k / 4) == 0, "%s Q8_1 activations differ from scalar",
		       strata_simd_name(l));
		free(q);
	}
	q80->quantize(x, b, k);
	for (int64_t i = 0; i < k; i++) {
		int8_t qa, qb;
		float da, db;

		q81->peek(a, k, i, &qa, &da);
		q80->peek(b, k, i, &qb, &db);
		EXPECT(qa == qb && da == db, "value %lld", (long long)i);
	}
	for (int64_t blk = 0; blk < k / 32; blk++) {
		int s = 0;

		for (int i = 0; i < 32; i++)
			s += STRATA_Q8_1_QS(a)[32 * blk + i];
		ck_assert(STRATA_Q8_1_S(a, k)[blk] == STRATA_Q8_1_D(a, k)[blk] * (float)s);
	}
	free(a), free(b);
}
END_TEST

/* ---- matmul ------------------------------------------------------------------------ */

/* The 32-value block types have their own kernels and dequantisation at
 * every SIMD level (a missing entry would fall back to scalar, and
 * matmul_types would then compare scalar with itself).  Only the tables are
 * read, so every level is checked whatever this CPU runs. */
START_TEST(legacy_levels_complete)
{
	static const uint32_t legacy[] = { STRATA_TYPE_Q4_0, STRATA_TYPE_Q4_1,
					   STRATA_TYPE_Q5_0, STRATA_TYPE_Q5_1,
					   STRATA_TYPE_IQ4_NL };

#ifdef STRATA_NO_SIMD
	TU_SKIP("a build without the x86 SIMD levels (cmake -DSTRATA_SIMD=OFF)");
#endif
	for (int l = STRATA_SIMD_AVX2; l <= STRATA_SIMD_AVX512; l++) {
		const struct strata_kern_level *lv = strata_kern_level_get(l);

		ck_assert_msg(lv != NULL, "this build has no %s kernels", strata_simd_name(l));
		for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
			const struct strata_type_ops *to = &lv->type[legacy[i]];

			EXPECT(to->mm && to->mm != strata_kern_scalar.type[legacy[i]].mm &&
				       to->to_float,
			       "%s has no %s kernel", strata_simd_name(l),
			       strata_type_name(legacy[i]));
			EXPECT(lv->act[to->act].quantize, "%s: no activation quantiser",
			       strata_simd_name(l));
		}
	}
}
END_TEST

/* The table that computes `type` at level l (scalar where l has no entry). */
static const struct strata_kern_level *table_for(int l, uint32_t type)
{
	const struct strata_kern_level *lv = strata_kern_level_get(l);

	return lv->type[type].mm ? lv : &strata_kern_scalar;
}

/*
 * rows x cols weights of `type` times n_tok tokens at every level, against
 * the exact dot of the dequantised weights with the activations as the
 * level quantised them (so only float rounding remains: 2e-6 of sum|w x|),
 * and against scalar (which may round activations identically but sums in
 * another order: 1e-5 of sum|w x| plus the activation rounding's bound).
 */
static void check_mm(struct strata_pool *pool, uint32_t type, int64_t rows,
		     int64_t cols, int64_t n_tok)
{
	const int64_t ldx = cols + 5, ldy = rows + 3;
	uint8_t *w = make_blocks(type, rows * cols);
	float *x = malloc(sizeof(float) * (size_t)(ldx * n_tok));
	float *wf = malloc(sizeof(float) * (size_t)(rows * cols));
	float *y = malloc(sizeof(float) * (size_t)(ldy * n_tok));
	float *ys = malloc(sizeof(float) * (size_t)(ldy * n_tok));
	struct strata_mat m;
	/* scalar's output (ys) first, then this run's level's */
	const int levels[2] = { STRATA_SIMD_SCALAR, g_lv };

	for (int64_t i = 0; i < ldx * n_tok; i++)
		x[i] = i % ldx < cols ? frnd() * (i % 11 == 0 ? 6.0f : 1.0f) : NAN;
	EXPECT_EQ(strata_mat_init(&m, type, rows, cols, w), 0);
	strata_simd_set(STRATA_SIMD_SCALAR);
	strata_dequant(type, w, wf, rows * cols);
	for (int li = 0; li < (g_lv > STRATA_SIMD_SCALAR ? 2 : 1); li++) {
		const int l = levels[li];
		const struct strata_kern_level *tab = table_for(l, type);
		const struct strata_act_ops *ao = &tab->act[tab->type[type].act];
		uint8_t *xq = aligned_alloc(64, ao->row_bytes(cols));
		float *out = l == 0 ? ys : y;

		EXPECT_EQ(strata_simd_set(l), 0);
		for (int64_t i = 0; i < ldy * n_tok; i++)
			out[i] = -7.0f;
		strata_matmul(pool, &m, x, ldx, n_tok, out, ldy);
		for (int64_t t = 0; t < n_tok; t++) {
			ao->quantize(x + t * ldx, xq, cols);
			for (int64_t r = 0; r < rows; r++) {
				double s = 0, mag = 0, g = out[t * ldy + r];

				for (int64_t i = 0; i < cols; i++) {
					int8_t q;
					float d;
					double p;

					ao->peek(xq, cols, i, &q, &d);
					p = (double)wf[r * cols + i] * ((double)q * d);
					s += p;
					mag += fabs(p);
				}
				EXPECT(fabs(g - s) <= 2e-6 * mag + 1e-30,
				       "%s %s %lldx%lld n_tok %lld: y[%lld][%lld] = %.9g, "
				       "exact %.9g (|wx| %.3g)", strata_simd_name(l),
				       strata_type_name(type), (long long)rows,
				       (long long)cols, (long long)n_tok, (long long)t,
				       (long long)r, g, s, mag);
				if (l > 0)
					EXPECT(fabs(g - ys[t * ldy + r]) <= 1e-5 * mag + 1e-30,
					       "%s %s: y[%lld][%lld] = %.9g, scalar %.9g",
					       strata_simd_name(l), strata_type_name(type),
					       (long long)t, (long long)r, g,
					       (double)ys[t * ldy + r]);
			}
			for (int64_t r = rows; r < ldy; r++)
				EXPECT(out[t * ldy + r] == -7.0f, "%s %s wrote y padding",
				       strata_simd_name(l), strata_type_name(type));
		}
		free(xq);
	}
	strata_simd_set(strata_simd_detect());
	free(w), free(x), free(wf), free(y), free(ys);
}

static void check_type(uint32_t type)
{
	static const int64_t rows[] = { 1, 3, 5, 17, 66 };
	static const int64_t ntok[] = { 1, 2, 3, 5, 8, 9, 17, 40 };
	const int64_t blk = strata_type_block(type);
	/* 41 blocks: an odd block left over after runs of 16 (avx512); 19
	 * super-blocks: the interleaved K kernels' chunks of 8 and a rest */
	const int64_t cols[] = { blk, 2 * blk, 5 * blk, blk == 32 ? 41 * blk : 19 * blk };
	struct strata_pool *pool;

	EXPECT_EQ(strata_pool_create(2, &pool), 0);
	for (size_t a = 0; a < sizeof(rows) / sizeof(rows[0]); a++)
		for (size_t b = 0; b < sizeof(cols) / sizeof(cols[0]); b++)
			for (size_t c = 0; c < sizeof(ntok) / sizeof(ntok[0]); c++)
				check_mm(pool, type, rows[a], cols[b], ntok[c]);
	strata_pool_free(pool);
}

/*
 * A token's outputs are the same bits alone and in a batch of 2 to 9
 * tokens (speculative windows, up to 8, compare them with one-token
 * decoding), at every level, over rows that end in a short group and
 * columns over several of the interleaved kernels' chunks.  (AVX-512
 * Q4_K/Q6_K batches of 20 tokens or more sum in another order:
 * quants_k_avx512.c.)
 */
START_TEST(matmul_batch_invariant)
{
	SIMD_CASE();

	const uint32_t type = g_types[_i];
	const int64_t rows = 21, blk = strata_type_block(type);
	const int64_t cols = blk == 32 ? 67 * blk : 19 * blk, n_tok = 9;
	uint8_t *w = make_blocks(type, rows * cols);
	float *x = malloc(sizeof(float) * (size_t)(cols * n_tok));
	float *yb = malloc(sizeof(float) * (size_t)(rows * n_tok));
	float *y1 = malloc(sizeof(float) * (size_t)rows);
	struct strata_pool *pool;
	struct strata_mat m;

	for (int64_t i = 0; i < cols * n_tok; i++)
		x[i] = frnd() * (i % 11 == 0 ? 6.0f : 1.0f);
	EXPECT_EQ(strata_pool_create(2, &pool), 0);
	EXPECT_EQ(strata_mat_init(&m, type, rows, cols, w), 0);
	EXPECT_EQ(strata_simd_set(g_lv), 0);
	for (int64_t n = 2; n <= n_tok; n++) {
		strata_matmul(pool, &m, x, cols, n, yb, rows);
		for (int64_t t = 0; t < n; t++) {
			strata_matmul(pool, &m, x + t * cols, cols, 1, y1, rows);
			EXPECT(memcmp(y1, yb + t * rows, sizeof(float) * (size_t)rows) == 0,
			       "%s %s: token %lld of a batch of %lld differs from it alone",
			       strata_simd_name(g_lv), strata_type_name(type), (long long)t,
			       (long long)n);
		}
	}
	strata_simd_set(strata_simd_detect());
	strata_pool_free(pool);
	free(w), free(x), free(yb), free(y1);
}
END_TEST

START_TEST(matmul_types)
{
	SIMD_CASE();
	check_type(g_types[_i]);
}
END_TEST

/* Matrices whose row length is not a multiple of the block are refused. */
START_TEST(mat_init_rejects)
{
	struct strata_mat m;
	uint8_t w[256];

	for (size_t ti = 0; ti < N_TYPES; ti++) {
		const int64_t blk = strata_type_block(g_types[ti]);

		ck_assert(strata_type_supported(g_types[ti]));
		EXPECT_EQ(strata_mat_init(&m, g_types[ti], 2, blk + blk / 2, w), -EINVAL);
		EXPECT_EQ(strata_mat_init(&m, g_types[ti], 2, 3 * blk, w), 0);
		EXPECT_EQ(m.row_bytes, 3 * strata_type_block_bytes(g_types[ti]));
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quants");
	TCase *tc = tcase_create("core"), *simd = tcase_create("levels");

	tcase_set_tags(simd, "simd");
	tcase_set_timeout(simd, 300);
	tcase_add_test(simd, dequant_matches_layout);
	tcase_add_test(simd, act_q8k);
	tcase_add_test(simd, act_q8_1);
	tcase_add_loop_test(simd, matmul_types, 0, (int)N_TYPES);
	tcase_add_loop_test(simd, matmul_batch_invariant, 0, (int)N_TYPES);
	suite_add_tcase(s, simd);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, dequant_hand_blocks);
	tcase_add_test(tc, quantize_matches_llama_cpp);
	tcase_add_test(tc, quantize_round_trip);
	tcase_add_test(tc, quantize_stable_on_grid);
	tcase_add_test(tc, legacy_levels_complete);
	tcase_add_test(tc, mat_init_rejects);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
