/*
 * check_quants_iq.c - the i-quant weight types (IQ2_XS, IQ2_S, IQ3_XXS,
 * IQ3_S, IQ1_M): dequantisation against hand-built blocks and against
 * ggml's own output (golden/dequant), and matmul at each SIMD level (one per
 * ctest run: check_quants_iq, .avx2, .avx512) against
 * double-precision references (from dequantised weights, and exactly from
 * the quantised activations) and against the scalar level.  Their
 * quantisers: check_iq_quant.c.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/kernels_impl.h"
#include "cpu/pool.h"
#include "cpu/quants_iq.h"
#include "cpu/types.h"
#include "gguf/gguf.h"
#include "testutil.h"

/* Only failures go through Check (see check_kernels.c). */
static const uint32_t g_types[] = { STRATA_TYPE_IQ2_XS, STRATA_TYPE_IQ2_S,
				    STRATA_TYPE_IQ3_XXS, STRATA_TYPE_IQ3_S,
				    STRATA_TYPE_IQ1_M };
#define N_TYPES (sizeof(g_types) / sizeof(g_types[0]))

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng >> 16);
}

static float frnd(void)
{
	return (float)(rnd() & 0xffffff) / 8388608.0f - 1.0f;
}

/*
 * The cases tagged "simd" test the kernels of one level per ctest run
 * (check_quants_iq: scalar, .avx2, .avx512; testutil.h).
 */
static int g_lv;
#define SIMD_CASE()                               \
	do {                                      \
		if ((g_lv = tu_simd_level()) < 0) \
			return;                   \
	} while (0)

static uint32_t f_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

/*
 * Random blocks: every byte pattern is a valid i-quant block (all indices
 * hit their grid), so only the f16 block scale is chosen, in a plausible
 * range (2^-9 .. 2^-5) with an occasional subnormal or zero.
 */
static uint16_t rnd_scale(void)
{
	uint32_t sel = rnd() % 16;

	if (sel == 0)
		return 0x0001;
	if (sel == 1)
		return 0;
	return (uint16_t)(0x1800 + rnd() % 0x1000);
}

static void *make_weights(uint32_t type, int64_t rows, int64_t cols)
{
	size_t rb = strata_type_row_bytes(type, cols);
	size_t bytes = strata_type_block_bytes(type);
	uint8_t *w = malloc(rb * (size_t)rows);

	for (size_t i = 0; i < rb * (size_t)rows; i++)
		w[i] = (uint8_t)rnd();
	for (size_t off = 0; off < rb * (size_t)rows; off += bytes) {
		uint16_t h = rnd_scale();

		if (type == STRATA_TYPE_IQ1_M) {
			/* the f16 is spread over the top nibbles of 4 u16s */
			for (int i = 0; i < 4; i++) {
				uint8_t *hi = w + off + 48 + 2 * i + 1;

				*hi = (uint8_t)((*hi & 0x0f) | ((h >> (4 * i)) & 0xf) << 4);
			}
		} else {
			memcpy(w + off, &h, 2);
		}
	}
	return w;
}

/* ---- dequantisation ---------------------------------------------------------- */

/* Scalar's dequantisation into out, and this run's level's equal to it. */
static void dequant_all_levels(uint32_t type, const void *blk, float *out,
			       int64_t n)
{
	float *ref = malloc(sizeof(float) * (size_t)n);

	strata_simd_set(STRATA_SIMD_SCALAR);
	strata_dequant(type, blk, ref, n);
	if (g_lv > STRATA_SIMD_SCALAR) {
		const int l = g_lv;

		ck_assert_int_eq(strata_simd_set(l), 0);
		strata_dequant(type, blk, out, n);
		EXPECT(memcmp(ref, out, sizeof(float) * (size_t)n) == 0,
		       "%s dequant differs at %s", strata_type_name(type),
		       strata_simd_name(l));
	}
	memcpy(out, ref, sizeof(float) * (size_t)n);
	strata_simd_set(strata_simd_detect());
	free(ref);
}

START_TEST(dequant_hand_blocks)
{
	uint8_t b[110];
	float y[256];

	SIMD_CASE();

	/* IQ2_XS: d = 1, scales 1 and 2 (db 0.375, 0.625) for values 0..31. */
	memset(b, 0, sizeof(b));
	b[1] = 0x3c;
	b[66] = 0x21;
	b[2] = 1;                                 /* entry 1: 43, then 8s */
	b[4] = 0xff, b[5] = 0x01 | (1 << 1);      /* entry 511, sign index 1 */
	b[6] = 0x00, b[7] = 0xfe;                 /* entry 0, sign index 127 */
	dequant_all_levels(STRATA_TYPE_IQ2_XS, b, y, 256);
	ck_assert(y[0] == 16.125f && y[1] == 3.0f && y[7] == 3.0f);
	/* ksigns[1] = 0x81: value 0 and, for even parity, value 7 negated */
	ck_assert(y[8] == -16.125f && y[9] == 16.125f && y[15] == -16.125f);
	ck_assert(y[16] == -5.0f && y[23] == -5.0f && y[24] == 5.0f);
	ck_assert(y[32] == 1.0f && y[255] == 1.0f); /* scale 0: 8 * 0.125 */

	/* IQ3_S: d = 1, sub-block scales 3 (db 7) and 0 (db 1). */
	memset(b, 0, sizeof(b));
	b[1] = 0x3c;
	b[106] = 0x03;
	b[2] = 1;          /* entry 1 = 3,1,1,1 */
	b[3] = 0xff;       /* with qh bit 1: entry 511 = 1,1,15,15 */
	b[66] = 0x02;
	b[74] = 0x81;      /* values 0 and 7 negative */
	dequant_all_levels(STRATA_TYPE_IQ3_S, b, y, 256);
	ck_assert(y[0] == -21.0f && y[1] == 7.0f && y[3] == 7.0f);
	ck_assert(y[4] == 7.0f && y[6] == 105.0f && y[7] == -105.0f);
	ck_assert(y[8] == 7.0f && y[32] == 1.0f);

	/* IQ1_M: d = 1 (0x3c00 in the top nibbles), scales 2 and 1 (dl 5, 3). */
	memset(b, 0, sizeof(b));
	b[48] = 0x02 | (1 << 3);
	b[53] = 0xc0, b[55] = 0x30;
	b[33] = 0x00;
	b[32] = 0x80;      /* group 1: entry qs[1] = 1, delta negative */
	b[1] = 1;
	b[2] = 0xff, b[33] = 0x07; /* group 2: entry 2047 (all 1) */
	dequant_all_levels(STRATA_TYPE_IQ1_M, b, y, 256);
	ck_assert(y[0] == -4.375f && y[7] == -4.375f);   /* 5 * (-1 + 1/8) */
	ck_assert(y[8] == 4.375f && y[9] == -5.625f);    /* 5 * (+-1 - 1/8) */
	ck_assert(y[16] == 3.375f && y[23] == 3.375f);   /* 3 * (1 + 1/8) */
	ck_assert(y[24] == -2.625f);                     /* 3 * (-1 + 1/8) */
}
END_TEST

/* ggml's own dequantisation of the golden models' tensors, bit for bit, at
 * every level; each of the five types must be met at least once. */
START_TEST(dequant_matches_ggml)
{
	static const char *const files[] = { "iq2_xs", "iq3_xxs", "iq3_s", "iq1_m" };
	int seen[STRATA_TYPE_COUNT] = { 0 };

	SIMD_CASE();
	if (!tu_shared("golden/dequant"))
		TU_SKIP("../shared/golden/dequant is absent; dequantisation not compared "
			"with ggml");
	for (size_t f = 0; f < 4; f++) {
		char deq[128], model[128];
		uint8_t *buf;
		size_t len, off = 0;
		struct strata_gguf *g;

		snprintf(deq, sizeof(deq), "golden/dequant/syn-qwen3moe-d256-%s.deq",
			 files[f]);
		snprintf(model, sizeof(model), "models/syn-qwen3moe-d256-%s.gguf",
			 files[f]);
		ck_assert_msg(tu_shared(deq) && tu_shared(model), "../shared/%s or %s is absent",
			      deq, model);
		buf = tu_read_file(tu_shared(deq), &len);
		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(strata_gguf_open(tu_shared(model), &g), 0);
		while (off + 12 <= len) {
			uint32_t nl, type, n;
			char name[256];
			const struct strata_gguf_tensor *t;
			float *got;

			memcpy(&nl, buf + off, 4);
			ck_assert(nl < sizeof(name));
			memcpy(name, buf + off + 4, nl);
			name[nl] = 0;
			memcpy(&type, buf + off + 4 + nl, 4);
			memcpy(&n, buf + off + 8 + nl, 4);
			off += 12 + nl;
			ck_assert(off + 4 * (size_t)n <= len);
			t = strata_gguf_find_tensor(g, name);
			ck_assert_msg(t && t->type == type, "%s: %s", model, name);
			if (type >= STRATA_TYPE_COUNT || !strata_type_supported(type)) {
				off += 4 * (size_t)n;
				continue;
			}
			got = malloc(4 * (size_t)n);
			{
				const int l = g_lv;

				ck_assert_int_eq(strata_simd_set(l), 0);
				strata_dequant(type, t->data, got, n);
				for (uint32_t i = 0; i < n; i++)
					EXPECT(memcmp(got + i, buf + off + 4 * (size_t)i,
						      4) == 0,
					       "%s %s (%s) value %u: %a, ggml %a",
					       strata_simd_name(l), name,
					       strata_type_name(type), i, got[i],
					       ((const float *)(buf + off))[i]);
			}
			seen[type]++;
			free(got);
			off += 4 * (size_t)n;
		}
		strata_gguf_close(g);
		free(buf);
	}
	strata_simd_set(strata_simd_detect());
	for (size_t i = 0; i < N_TYPES; i++)
		ck_assert_msg(seen[g_types[i]] > 0, "no %s tensor compared with ggml",
			      strata_type_name(g_types[i]));
}
END_TEST

/* ---- matmul ------------------------------------------------------------------- */

/* Inputs of mixed magnitude; padding NaN so reading past a row shows. */
static float *make_input(int64_t cols, int64_t ldx, int64_t n_tok)
{
	float *x = malloc(sizeof(float) * (size_t)(ldx * n_tok));

	for (int64_t t = 0; t < n_tok; t++)
		for (int64_t i = 0; i < ldx; i++)
			x[t * ldx + i] = i < cols ? frnd() * (i % 7 == 0 ? 8.0f : 1.0f)
						  : NAN;
	return x;
}

/* Bound of what Q8_K activations cost a dot: half a step (amax/127) per
 * value, plus float rounding of the step. */
static double q8k_error(const float *w, const float *x, int64_t k)
{
	double e = 0;

	for (int64_t b = 0; b < k / 256; b++) {
		double amax = 0, sw = 0;

		for (int i = 0; i < 256; i++) {
			amax = fmax(amax, fabs(x[b * 256 + i]));
			sw += fabs(w[b * 256 + i]);
		}
		e += sw * amax / 127.0 * 0.501;
	}
	return e;
}

static void check_shape(struct strata_pool *pool, uint32_t type, int64_t rows,
			int64_t cols, int64_t n_tok)
{
	const int64_t ldx = cols + 3, ldy = rows + 5;
	uint8_t *w = make_weights(type, rows, cols);
	float *x = make_input(cols, ldx, n_tok);
	float *wf = malloc(sizeof(float) * (size_t)(rows * cols));
	float *ys = malloc(sizeof(float) * (size_t)(ldy * n_tok));
	float *y = malloc(sizeof(float) * (size_t)(ldy * n_tok));
	struct strata_mat m;
	/* scalar's output (ys) first, then this run's level's */
	const int levels[2] = { STRATA_SIMD_SCALAR, g_lv };

	EXPECT_EQ(strata_mat_init(&m, type, rows, cols, w), 0);
	strata_dequant(type, w, wf, rows * cols);
	for (int li = 0; li < (g_lv > STRATA_SIMD_SCALAR ? 2 : 1); li++) {
		const int l = levels[li];
		float *out = l == 0 ? ys : y;

		EXPECT_EQ(strata_simd_set(l), 0);
		for (int64_t i = 0; i < ldy * n_tok; i++)
			out[i] = -12345.0f;
		strata_matmul(pool, &m, x, ldx, n_tok, out, ldy);
		for (int64_t t = 0; t < n_tok; t++) {
			for (int64_t r = rows; r < ldy; r++)
				EXPECT(out[t * ldy + r] == -12345.0f, "%s wrote y padding",
				       strata_simd_name(l));
			for (int64_t r = 0; r < rows; r++) {
				const float *wr = wf + r * cols, *xt = x + t * ldx;
				double s = 0, mg = 1e-30, g = out[t * ldy + r];

				for (int64_t i = 0; i < cols; i++) {
					s += (double)wr[i] * xt[i];
					mg += fabs((double)wr[i] * xt[i]);
				}
				EXPECT(fabs(g - s) <= 1e-5 * mg + q8k_error(wr, xt, cols),
				       "%s %s %lldx%lld n_tok %lld: y[%lld][%lld] = %.9g, "
				       "reference %.9g", strata_simd_name(l),
				       strata_type_name(type), (long long)rows,
				       (long long)cols, (long long)n_tok, (long long)t,
				       (long long)r, g, s);
				if (l > 0)
					EXPECT(fabs(g - ys[t * ldy + r]) <= 1e-5 * mg,
					       "%s %s %lldx%lld n_tok %lld: y[%lld][%lld] = "
					       "%.9g, scalar %.9g", strata_simd_name(l),
					       strata_type_name(type), (long long)rows,
					       (long long)cols, (long long)n_tok,
					       (long long)t, (long long)r, g,
					       (double)ys[t * ldy + r]);
			}
		}
	}
	strata_simd_set(strata_simd_detect());
	free(w), free(x), free(wf), free(ys), free(y);
}

/*
 * The AVX-512 level has two sets of IQ2_XS / IQ3_XXS / IQ3_S kernels
 * (quants_iq.h: strata_iq_vbmi_set): the "simd" cases test the one every
 * AVX-512 CPU runs (VBMI off), and the "vbmi" cases, a ctest test of their
 * own (check_quants_iq.vbmi), the permute lookups of CPUs that have VBMI.
 * vbmi_case() selects that pair, or skips the case without them.
 */
static void vbmi_off(void)
{
#ifdef STRATA_KERN_X86
	if (g_lv == STRATA_SIMD_AVX512)
		strata_iq_vbmi_set(0);
#endif
}

static void vbmi_default(void)
{
#ifdef STRATA_KERN_X86
	strata_iq_vbmi_set(1); /* -ENOTSUP without VBMI, where it is off anyway */
#endif
}

static int vbmi_case(void)
{
	g_lv = STRATA_SIMD_AVX512;
	if (strata_simd_set(STRATA_SIMD_AVX512) != 0) {
		tu_skip("this CPU lacks avx512");
		return -1;
	}
#ifdef STRATA_KERN_X86
	if (strata_iq_vbmi_set(1) >= 0)
		return 0;
#endif
	tu_skip("this CPU lacks AVX-512 VBMI");
	return -1;
}

/* Every shape of matmul_shapes for `type` at g_lv. */
static void shapes(uint32_t type)
{
	static const int64_t rows[] = { 1, 3, 4, 5, 17, 67 };
	/* 10 blocks: more than one segment of the SIMD kernels */
	static const int64_t cols[] = { 256, 512, 2560 };
	static const int64_t ntok[] = { 1, 2, 3, 5, 8, 17 };
	struct strata_pool *pool;

	EXPECT_EQ(strata_pool_create(2, &pool), 0);
	for (size_t a = 0; a < 6; a++)
		for (size_t b = 0; b < 3; b++)
			for (size_t c = 0; c < 6; c++)
				check_shape(pool, type, rows[a], cols[b], ntok[c]);
	strata_pool_free(pool);
}

START_TEST(matmul_shapes)
{
	SIMD_CASE();
	vbmi_off();
	shapes(g_types[_i]);
	vbmi_default();
}
END_TEST

START_TEST(matmul_shapes_vbmi)
{
	if (vbmi_case() < 0)
		return;
	shapes(g_types[_i]);
	strata_simd_set(strata_simd_detect());
}
END_TEST

/*
 * The integer dot exactly: the reference uses the very activations the
 * kernel sees (Q8_K, read back through peek), so the only error left is
 * float rounding of the per-block products and their sum.
 */
static void exact(uint32_t type)
{
	const int64_t rows = 21, cols = 256 * 9, n_tok = 7;
	uint8_t *w = make_weights(type, rows, cols);
	float *x = make_input(cols, cols, n_tok);
	float *wf = malloc(sizeof(float) * (size_t)(rows * cols));
	float *y = malloc(sizeof(float) * (size_t)(rows * n_tok));
	float *y1 = malloc(sizeof(float) * (size_t)(rows * n_tok));
	double *ref = malloc(sizeof(double) * (size_t)(rows * n_tok));
	double *mag = malloc(sizeof(double) * (size_t)(rows * n_tok));
	const struct strata_act_ops *ao = &strata_kern_scalar.act[STRATA_ACT_Q8_K];
	void *xq = aligned_alloc(64, ao->row_bytes(cols));
	struct strata_mat m;

	EXPECT_EQ(strata_mat_init(&m, type, rows, cols, w), 0);
	strata_dequant(type, w, wf, rows * cols);
	for (int64_t t = 0; t < n_tok; t++) {
		ao->quantize(x + t * cols, xq, cols);
		for (int64_t r = 0; r < rows; r++) {
			double s = 0, a = 1e-30;

			for (int64_t i = 0; i < cols; i++) {
				int8_t q;
				float d;
				double p;

				ao->peek(xq, cols, i, &q, &d);
				p = (double)wf[r * cols + i] * q * d;
				s += p;
				a += fabs(p);
			}
			ref[t * rows + r] = s;
			mag[t * rows + r] = a;
		}
	}
	EXPECT_EQ(strata_simd_set(g_lv), 0);
	strata_matmul(NULL, &m, x, cols, n_tok, y, rows);
	/* each token alone too: the decode rows */
	for (int64_t t = 0; t < n_tok; t++)
		strata_matmul(NULL, &m, x + t * cols, cols, 1, y1 + t * rows, rows);
	for (int64_t i = 0; i < rows * n_tok; i++) {
		EXPECT(fabs(y[i] - ref[i]) <= 2e-6 * mag[i],
		       "%s %s: y[%lld][%lld] = %.9g, exact %.9g", strata_simd_name(g_lv),
		       strata_type_name(type), (long long)(i / rows), (long long)(i % rows),
		       y[i], ref[i]);
		EXPECT(fabs(y1[i] - ref[i]) <= 2e-6 * mag[i],
		       "%s %s, one token: y[%lld][%lld] = %.9g, exact %.9g",
		       strata_simd_name(g_lv), strata_type_name(type), (long long)(i / rows),
		       (long long)(i % rows), y1[i], ref[i]);
	}
	strata_simd_set(strata_simd_detect());
	free(w), free(x), free(wf), free(y), free(y1), free(ref), free(mag), free(xq);
}

START_TEST(matmul_exact_activations)
{
	SIMD_CASE();
	vbmi_off();
	exact(g_types[_i]);
	vbmi_default();
}
END_TEST

START_TEST(matmul_exact_activations_vbmi)
{
	if (vbmi_case() < 0)
		return;
	exact(g_types[_i]);
}
END_TEST

/* Pool size and chunking do not change a single bit. */
START_TEST(matmul_thread_independent)
{
	const int64_t rows = 203, cols = 1024, n_tok = 40;
	uint32_t type = g_types[_i];
	uint8_t *w = make_weights(type, rows, cols);
	float *x = make_input(cols, cols, n_tok);
	float *y0 = malloc(sizeof(float) * (size_t)(rows * n_tok));
	float *y1 = malloc(sizeof(float) * (size_t)(rows * n_tok));
	struct strata_pool *p3;
	struct strata_mat m;

	EXPECT_EQ(strata_pool_create(3, &p3), 0);
	EXPECT_EQ(strata_mat_init(&m, type, rows, cols, w), 0);
	for (int64_t nt = 1; nt <= n_tok; nt += 13) {
		strata_matmul(NULL, &m, x, cols, nt, y0, rows);
		strata_matmul(p3, &m, x, cols, nt, y1, rows);
		for (int64_t i = 0; i < rows * nt; i++)
			EXPECT(f_bits(y0[i]) == f_bits(y1[i]), "%s n_tok %lld: y[%lld] "
			       "%.9g vs %.9g", strata_type_name(type), (long long)nt,
			       (long long)i, y0[i], y1[i]);
	}
	strata_pool_free(p3);
	free(w), free(x), free(y0), free(y1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quants_iq");
	TCase *tc = tcase_create("core"), *simd = tcase_create("levels");
	TCase *vbmi = tcase_create("vbmi");

	tcase_set_tags(simd, "simd");
	tcase_set_timeout(simd, 300);
	tcase_add_test(simd, dequant_hand_blocks);
	tcase_add_test(simd, dequant_matches_ggml);
	tcase_add_loop_test(simd, matmul_shapes, 0, N_TYPES);
	tcase_add_loop_test(simd, matmul_exact_activations, 0, N_TYPES);
	suite_add_tcase(s, simd);
	tcase_set_tags(vbmi, "vbmi");
	tcase_set_timeout(vbmi, 300);
	tcase_add_loop_test(vbmi, matmul_shapes_vbmi, 0, N_TYPES);
	tcase_add_loop_test(vbmi, matmul_exact_activations_vbmi, 0, N_TYPES);
	suite_add_tcase(s, vbmi);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, matmul_thread_independent, 0, N_TYPES);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
