/*
 * check_kernels.c - CPU kernels: dequantisation (also against ggml), the
 * reference quantisers, activation quantisation, matmul at each SIMD level
 * (one per ctest run: check_kernels, .avx2, .avx512) against a
 * double-precision reference and against scalar.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu/kernels.h"
#include "cpu/kernels_impl.h"
#include "cpu/pool.h"
#include "cpu/types.h"
#include "gguf/gguf.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------ */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

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

/*
 * The cases tagged "simd" test the kernels of one level per ctest run
 * (check_kernels: scalar, check_kernels.avx2, check_kernels.avx512; testutil.h),
 * so a level this CPU lacks is a skipped ctest test, not a silent gap.
 */
static int g_lv;
#define SIMD_CASE()                               \
	do {                                      \
		if ((g_lv = tu_simd_level()) < 0) \
			return;                   \
	} while (0)

static uint16_t ld16(const uint8_t *p)
{
	uint16_t h;

	memcpy(&h, p, 2);
	return h;
}

/*
 * Random weights of `type`, rows x cols, stored as the type's rows.  Q8_0
 * blocks use the full int8 range, -128 included (ggml never writes it, but a
 * file may hold it), and a spread of scales (subnormal fp16 ones too).
 */
static void *make_weights(uint32_t type, int64_t rows, int64_t cols)
{
	size_t rb = strata_type_row_bytes(type, cols);
	uint8_t *w = malloc(rb * (size_t)rows);

	for (int64_t r = 0; r < rows; r++) {
		uint8_t *row = w + (size_t)r * rb;

		for (int64_t i = 0; i < cols; i++) {
			float v = frnd();
			uint16_t h;

			switch (type) {
			case STRATA_TYPE_F32:
				memcpy(row + 4 * i, &v, 4);
				break;
			case STRATA_TYPE_F16:
				h = strata_f32_to_fp16(v);
				memcpy(row + 2 * i, &h, 2);
				break;
			case STRATA_TYPE_BF16:
				h = strata_f32_to_bf16(v);
				memcpy(row + 2 * i, &h, 2);
				break;
			}
		}
		if (type == STRATA_TYPE_Q8_0) {
			for (int64_t b = 0; b < cols / 32; b++) {
				uint8_t *blk = row + b * 34;
				uint32_t sel = rnd() % 8;
				uint16_t d = sel == 0 ? 0x0003 /* subnormal */
					   : sel == 1 ? 0x5a00 /* 192 */
					   : (uint16_t)(0x1c00 + rnd() % 0x1000);

				memcpy(blk, &d, 2);
				for (int i = 0; i < 32; i++)
					blk[2 + i] = (uint8_t)rnd();
			}
		}
	}
	return w;
}

/* x[t*ldx + i] with values of mixed magnitude; padding is NaN so a kernel
 * that reads past the row shows it. */
static float *make_input(int64_t cols, int64_t ldx, int64_t n_tok)
{
	float *x = malloc(sizeof(float) * (size_t)(ldx * n_tok));

	for (int64_t t = 0; t < n_tok; t++)
		for (int64_t i = 0; i < ldx; i++)
			x[t * ldx + i] = i < cols ? frnd() * (i % 7 == 0 ? 8.0f : 1.0f)
						  : NAN;
	return x;
}

static float bits_f(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint32_t f_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

/* ---- dequantisation --------------------------------------------------------- */

START_TEST(dequant_hand_blocks)
{
	SIMD_CASE();

	/* Q8_0: d = 0.5 (0x3800), q = -128, -1, 0, 1, 127, ...; d = -2 (0xc000). */
	uint8_t q8[2 * 34];
	float out[64];
	uint16_t h[4] = { 0x3c00, 0xc000, 0x0001, 0x7bff }; /* 1, -2, 2^-24, 65504 */
	uint16_t b[3] = { 0x3f80, 0xc0a0, 0x0001 };          /* 1, -5, tiny */

	memset(q8, 0, sizeof(q8));
	q8[0] = 0x00, q8[1] = 0x38;
	q8[2] = 0x80, q8[3] = 0xff, q8[4] = 0x00, q8[5] = 0x01, q8[6] = 0x7f;
	for (int i = 5; i < 32; i++)
		q8[2 + i] = (uint8_t)(i * 3);
	q8[34] = 0x00, q8[35] = 0xc0;
	q8[36] = 0x05, q8[67] = 0xfd;
	{
		const int l = g_lv;

		EXPECT_EQ(strata_simd_set(l), 0);
		strata_dequant(STRATA_TYPE_Q8_0, q8, out, 64);
		EXPECT_TRUE(out[0] == -64.0f && out[1] == -0.5f && out[2] == 0.0f);
		EXPECT_TRUE(out[3] == 0.5f && out[4] == 63.5f);
		for (int i = 5; i < 32; i++)
			EXPECT_TRUE(out[i] == 0.5f * (float)(int8_t)(i * 3));
		EXPECT_TRUE(out[32] == -10.0f && out[63] == 6.0f);
		EXPECT_TRUE(signbit(out[33]) && out[33] == 0.0f); /* -2 * 0 = -0 */
		strata_dequant(STRATA_TYPE_F16, h, out, 4);
		EXPECT_TRUE(out[0] == 1.0f && out[1] == -2.0f);
		EXPECT_TRUE(out[2] == ldexpf(1.0f, -24) && out[3] == 65504.0f);
		strata_dequant(STRATA_TYPE_BF16, b, out, 3);
		EXPECT_TRUE(out[0] == 1.0f && out[1] == -5.0f);
		EXPECT_TRUE(out[2] == bits_f(0x00010000));
	}
	strata_simd_set(strata_simd_detect());
}
END_TEST

/* Dequantisation is bit-identical at every level, for every length. */
START_TEST(dequant_levels_identical)
{
	SIMD_CASE();

	static const uint32_t types[] = { STRATA_TYPE_F32, STRATA_TYPE_F16,
					  STRATA_TYPE_BF16, STRATA_TYPE_Q8_0 };

	for (size_t ti = 0; ti < 4; ti++) {
		uint32_t type = types[ti];
		int64_t blk = strata_type_block(type);

		for (int64_t n = blk; n <= 40 * blk; n += blk) {
			uint8_t *w = make_weights(type, 1, n);
			float *ref = malloc(sizeof(float) * (size_t)n);
			float *got = malloc(sizeof(float) * (size_t)n);

			strata_kern_scalar.type[type].to_float(w, ref, n);
			/* scalar against the formula */
			for (int64_t i = 0; i < n; i++) {
				float want;

				if (type == STRATA_TYPE_F32)
					memcpy(&want, w + 4 * i, 4);
				else if (type == STRATA_TYPE_F16)
					want = strata_fp16_to_f32(ld16(w + 2 * i));
				else if (type == STRATA_TYPE_BF16)
					want = strata_bf16_to_f32(ld16(w + 2 * i));
				else
					want = strata_fp16_to_f32(ld16(w + (i / 32) * 34)) *
					       (float)(int8_t)w[(i / 32) * 34 + 2 + i % 32];
				EXPECT_TRUE(f_bits(ref[i]) == f_bits(want));
			}
			if (g_lv > STRATA_SIMD_SCALAR) {
				const int l = g_lv;

				EXPECT_EQ(strata_simd_set(l), 0);
				strata_dequant(type, w, got, n);
				EXPECT(memcmp(ref, got, sizeof(float) * (size_t)n) == 0,
					      "%s dequant of %lld differs at %s",
					      strata_type_name(type), (long long)n,
					      strata_simd_name(l));
			}
			free(w);
			free(ref);
			free(got);
		}
	}
	strata_simd_set(strata_simd_detect());
}
END_TEST

START_TEST(mat_init_and_get_row)
{
	struct strata_mat m;
	uint8_t *w = make_weights(STRATA_TYPE_Q8_0, 5, 96);
	float row[96], want[96];

	EXPECT_EQ(strata_mat_init(&m, STRATA_TYPE_Q8_0, 5, 33, w), -EINVAL);
	EXPECT_EQ(strata_mat_init(&m, STRATA_TYPE_I32, 5, 32, w), -EINVAL);
	EXPECT_EQ(strata_mat_init(&m, 1000, 5, 32, w), -EINVAL);
	EXPECT_TRUE(!strata_type_supported(STRATA_TYPE_I32));
	EXPECT_TRUE(strata_type_supported(STRATA_TYPE_Q8_0));
	EXPECT_EQ(strata_mat_init(&m, STRATA_TYPE_Q8_0, 5, 96, w), 0);
	EXPECT_EQ(m.row_bytes, 3 * 34);
	strata_mat_get_row(&m, 3, row);
	strata_dequant(STRATA_TYPE_Q8_0, w + 3 * 102, want, 96);
	EXPECT_TRUE(memcmp(row, want, sizeof(row)) == 0);
	free(w);
}
END_TEST

/*
 * ggml's own dequantisation of real model tensors (golden/dequant/MODEL.deq, see
 * golden/README.md): every type must have kernels and match bit for bit at
 * this run's level.  Returns the tensors compared, -1 when the file is absent.
 */
static int check_deq_file(const char *deq_rel, const char *model_rel)
{
	const char *p = tu_shared(deq_rel);
	size_t len, off = 0;
	uint8_t *buf;
	struct strata_gguf *g;
	int compared = 0;

	if (!p)
		return -1;
	buf = tu_read_file(p, &len);
	ck_assert_ptr_nonnull(buf);
	p = tu_shared(model_rel);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(strata_gguf_open(p, &g), 0);
	while (off + 4 <= len) {
		uint32_t nl, type, n;
		char name[256];
		const struct strata_gguf_tensor *t;
		float *got;

		memcpy(&nl, buf + off, 4);
		ck_assert(nl < sizeof(name) && off + 4 + nl + 8 <= len);
		memcpy(name, buf + off + 4, nl);
		name[nl] = 0;
		memcpy(&type, buf + off + 4 + nl, 4);
		memcpy(&n, buf + off + 8 + nl, 4);
		off += 12 + nl;
		ck_assert(off + 4 * (size_t)n <= len);
		t = strata_gguf_find_tensor(g, name);
		ck_assert_msg(t && t->type == type, "%s: tensor %s", model_rel, name);
		ck_assert_msg(strata_type_supported(type), "%s: %s is %s, which has no kernels",
			      model_rel, name, strata_type_name(type));
		got = malloc(4 * (size_t)n);
		{
			const int l = g_lv;

			ck_assert_int_eq(strata_simd_set(l), 0);
			strata_dequant(type, t->data, got, n);
			for (uint32_t i = 0; i < n; i++)
				EXPECT(memcmp(got + i, buf + off + 4 * (size_t)i, 4) == 0,
				       "%s %s (%s) value %u: %a, ggml %a",
				       strata_simd_name(l), name, strata_type_name(type), i,
				       got[i], ((const float *)(buf + off))[i]);
		}
		compared++;
		free(got);
		off += 4 * (size_t)n;
	}
	strata_simd_set(strata_simd_detect());
	strata_gguf_close(g);
	free(buf);
	return compared;
}

START_TEST(dequant_matches_ggml)
{
	static const char *const types[] = { "q8_0", "q4_0", "q4_k_m", "q6_k",
					     "q2_k", "iq4_nl", "iq2_xs",
					     "iq3_xxs", "iq3_s", "iq1_m" };

	SIMD_CASE();
	if (!tu_shared("golden/dequant"))
		TU_SKIP("../shared/golden/dequant is absent; dequantisation not compared "
			"with ggml");
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		char deq[128], model[128];
		int n;

		snprintf(deq, sizeof(deq), "golden/dequant/syn-qwen3moe-d256-%s.deq",
			 types[i]);
		snprintf(model, sizeof(model), "models/syn-qwen3moe-d256-%s.gguf",
			 types[i]);
		n = check_deq_file(deq, model);
		ck_assert_msg(n > 0, "%s: %s", deq, n < 0 ? "absent" : "no tensor compared");
	}
}
END_TEST

/* strata_quantize: llama.cpp's reference quantisers, byte for byte. */
START_TEST(quantize_reference)
{
	float x[64], back[64];
	uint8_t q[2 * 34];
	uint16_t h[64];

	for (int i = 0; i < 32; i++)
		x[i] = (float)(i - 16); /* amax 16: d = 16/127, id = 7.9375 */
	for (int i = 32; i < 64; i++)
		x[i] = 0.0f;
	EXPECT_EQ(strata_quantize(STRATA_TYPE_Q8_0, x, q, 64), 68);
	EXPECT_EQ(ld16(q), strata_f32_to_fp16(16.0f / 127.0f));
	EXPECT_EQ((int8_t)q[2], -127);
	EXPECT_EQ((int8_t)q[2 + 8], -64);  /* -63.5: half away from zero */
	EXPECT_EQ((int8_t)q[2 + 24], 64);  /* 63.5 */
	EXPECT_EQ((int8_t)q[2 + 17], 8);   /* 7.9375 */
	EXPECT_EQ(ld16(q + 34), 0);        /* an all-zero block */
	for (int i = 0; i < 32; i++)
		EXPECT_EQ(q[36 + i], 0);
	for (int rep = 0; rep < 100; rep++) {
		for (int i = 0; i < 64; i++)
			x[i] = frnd() * (float)(rep + 1);
		EXPECT_EQ(strata_quantize(STRATA_TYPE_Q8_0, x, q, 64), 68);
		strata_dequant(STRATA_TYPE_Q8_0, q, back, 64);
		for (int b = 0; b < 2; b++) {
			float amax = 0;

			for (int i = 0; i < 32; i++)
				amax = fmaxf(amax, fabsf(x[b * 32 + i]));
			for (int i = 0; i < 32; i++)
				EXPECT(fabsf(back[b * 32 + i] - x[b * 32 + i]) <=
				       amax / 127.0f * 0.57f, "value %d: %g -> %g", i,
				       x[b * 32 + i], back[b * 32 + i]);
		}
		EXPECT_EQ(strata_quantize(STRATA_TYPE_F16, x, h, 64), 128);
		for (int i = 0; i < 64; i++)
			EXPECT_EQ(h[i], strata_f32_to_fp16(x[i]));
		EXPECT_EQ(strata_quantize(STRATA_TYPE_BF16, x, h, 64), 128);
		for (int i = 0; i < 64; i++)
			EXPECT_EQ(h[i], strata_f32_to_bf16(x[i]));
		EXPECT_EQ(strata_quantize(STRATA_TYPE_F32, x, back, 64), 256);
		EXPECT_TRUE(memcmp(back, x, sizeof(x)) == 0);
	}
	EXPECT_EQ(strata_quantize(STRATA_TYPE_Q8_0, x, q, 33), -EINVAL);
	EXPECT_EQ(strata_quantize(STRATA_TYPE_I32, x, q, 32), -ENOTSUP);
	EXPECT_EQ(strata_quantize(1000, x, q, 32), -ENOTSUP);
}
END_TEST

/* ---- activation quantisation --------------------------------------------- */

START_TEST(act_quant_levels_identical)
{
	SIMD_CASE();

	const int64_t k = 32 * 9;
	float x[32 * 9];
	const struct strata_act_ops *ref = &strata_kern_scalar.act[STRATA_ACT_Q8_0];
	void *rq = aligned_alloc(64, ref->row_bytes(k));

	for (int rep = 0; rep < 50; rep++) {
		for (int64_t i = 0; i < k; i++)
			x[i] = frnd() * (rep % 5 == 0 ? 1e-6f : 3.0f);
		memset(x + 32, 0, 32 * sizeof(float)); /* an all-zero block */
		x[64] = 2.5f, x[65] = -1.0f;          /* a tie: 2.5/2.5*127 */
		for (int i = 66; i < 96; i++)
			x[i] = 0.0f;
		x[70] = 1.25f; /* 1.25 * 127 / 2.5 = 63.5: ties to even (64) */
		ref->quantize(x, rq, k);
		for (int64_t i = 0; i < k; i++) {
			int8_t q;
			float d, amax = 0;

			ref->peek(rq, k, i, &q, &d);
			for (int j = 0; j < 32; j++)
				amax = fmaxf(amax, fabsf(x[i / 32 * 32 + j]));
			EXPECT_TRUE(f_bits(d) == f_bits(strata_fp16_to_f32(
					strata_f32_to_fp16(amax / 127.0f))));
			EXPECT_TRUE(q != -128);
			EXPECT_TRUE(fabsf((float)q - x[i] * (amax ? 127.0f / amax : 0)) <= 0.5f);
		}
		{
			int8_t q;
			float d;

			ref->peek(rq, k, 70, &q, &d);
			EXPECT_EQ(q, 64);
		}
		if (g_lv > STRATA_SIMD_SCALAR) {
			const int l = g_lv;
			const struct strata_act_ops *ao =
				&strata_kern_level_get(l)->act[STRATA_ACT_Q8_0];
			void *q = aligned_alloc(64, ao->row_bytes(k));

			EXPECT_EQ(ao->row_bytes(k) % 64, 0);
			ao->quantize(x, q, k);
			for (int64_t i = 0; i < k; i++) {
				int8_t q0, q1;
				float d0, d1;

				ref->peek(rq, k, i, &q0, &d0);
				ao->peek(q, k, i, &q1, &d1);
				EXPECT(q0 == q1 && f_bits(d0) == f_bits(d1),
					      "%s: value %lld: q %d/%d d %a/%a",
					      strata_simd_name(l), (long long)i, q0, q1,
					      d0, d1);
			}
			free(q);
		}
	}
	free(rq);
}
END_TEST

/* ---- matmul ---------------------------------------------------------------- */

/*
 * What quantising x to Q8_0 may cost a dot with w: each value moves by at
 * most half a step (amax/127/2) plus the fp16 rounding of the scale
 * (|q| <= 127 times 2^-11 of the step), so 0.57 steps bound it.
 */
static double q8_act_error(const float *w, const float *x, int64_t k)
{
	double e = 0;

	for (int64_t b = 0; b < k / 32; b++) {
		double amax = 0, sw = 0;

		for (int i = 0; i < 32; i++) {
			amax = fmax(amax, fabs(x[b * 32 + i]));
			sw += fabs(w[b * 32 + i]);
		}
		e += sw * amax / 127.0 * 0.57;
	}
	return e;
}

/*
 * One shape at every level: each output within `tol` * sum|w*x| (plus, for
 * Q8_0, the bound of activation quantisation) of the double reference from
 * strata_dequant'ed weights, within 1e-5 * sum|w*x| of what scalar computes
 * (for Q8_0 the activations are quantised the same way at every level, so
 * only summation order differs), and never touching y's padding.
 */
static void check_shape(struct strata_pool *pool, uint32_t type, int64_t rows,
			int64_t cols, int64_t n_tok, double tol)
{
	const int64_t ldx = cols + 3, ldy = rows + 5;
	uint8_t *w = make_weights(type, rows, cols);
	float *x = make_input(cols, ldx, n_tok);
	float *wf = malloc(sizeof(float) * (size_t)(rows * cols));
	float *ys = malloc(sizeof(float) * (size_t)(ldy * n_tok));
	float *y = malloc(sizeof(float) * (size_t)(ldy * n_tok));
	double *ref = malloc(sizeof(double) * (size_t)(rows * n_tok));
	double *mag = malloc(sizeof(double) * (size_t)(rows * n_tok));
	double *qerr = calloc((size_t)(rows * n_tok), sizeof(double));
	struct strata_mat m;
	/* scalar's output (ys) first, then this run's level's */
	const int levels[2] = { STRATA_SIMD_SCALAR, g_lv };

	EXPECT_EQ(strata_mat_init(&m, type, rows, cols, w), 0);
	strata_simd_set(STRATA_SIMD_SCALAR);
	strata_dequant(type, w, wf, rows * cols);
	for (int64_t t = 0; t < n_tok; t++)
		for (int64_t r = 0; r < rows; r++) {
			double s = 0, a = 0;

			for (int64_t i = 0; i < cols; i++) {
				double p = (double)wf[r * cols + i] * x[t * ldx + i];

				s += p;
				a += fabs(p);
			}
			ref[t * rows + r] = s;
			mag[t * rows + r] = a + 1e-30;
			if (type == STRATA_TYPE_Q8_0)
				qerr[t * rows + r] = q8_act_error(wf + r * cols,
								  x + t * ldx, cols);
		}
	for (int li = 0; li < (g_lv > STRATA_SIMD_SCALAR ? 2 : 1); li++) {
		const int l = levels[li];
		float *out = l == 0 ? ys : y;

		EXPECT_EQ(strata_simd_set(l), 0);
		for (int64_t i = 0; i < ldy * n_tok; i++)
			out[i] = -12345.0f;
		strata_matmul(pool, &m, x, ldx, n_tok, out, ldy);
		for (int64_t t = 0; t < n_tok; t++) {
			for (int64_t r = rows; r < ldy; r++)
				EXPECT(out[t * ldy + r] == -12345.0f,
					      "%s wrote y padding", strata_simd_name(l));
			for (int64_t r = 0; r < rows; r++) {
				double e = ref[t * rows + r], g = out[t * ldy + r];
				double mg = mag[t * rows + r];

				EXPECT(fabs(g - e) <= tol * mg + qerr[t * rows + r],
					      "%s %s %lldx%lld n_tok %lld: y[%lld][%lld] = "
					      "%.9g, reference %.9g (|wx| %.3g)",
					      strata_simd_name(l), strata_type_name(type),
					      (long long)rows, (long long)cols,
					      (long long)n_tok, (long long)t, (long long)r,
					      g, e, mg);
				if (l > 0)
					EXPECT(fabs(g - ys[t * ldy + r]) <= 1e-5 * mg,
						      "%s %s %lldx%lld n_tok %lld: y[%lld][%lld]"
						      " = %.9g, scalar %.9g",
						      strata_simd_name(l), strata_type_name(type),
						      (long long)rows, (long long)cols,
						      (long long)n_tok, (long long)t,
						      (long long)r, g, (double)ys[t * ldy + r]);
			}
		}
	}
	strata_simd_set(strata_simd_detect());
	free(w), free(x), free(wf), free(ys), free(y), free(ref), free(mag), free(qerr);
}

static const int64_t g_ntoks[] = { 1, 2, 3, 5, 8, 17, 64 };

static void check_type(uint32_t type, const int64_t *rows, int nrows,
		       const int64_t *cols, int ncols, double tol)
{
	struct strata_pool *pool;

	EXPECT_EQ(strata_pool_create(2, &pool), 0);
	for (int a = 0; a < nrows; a++)
		for (int b = 0; b < ncols; b++)
			for (size_t c = 0; c < sizeof(g_ntoks) / sizeof(g_ntoks[0]); c++)
				check_shape(pool, type, rows[a], cols[b], g_ntoks[c], tol);
	strata_pool_free(pool);
}

static const int64_t g_rows[] = { 1, 3, 4, 5, 17, 67 };
static const int64_t g_cols_f[] = { 1, 7, 16, 33, 64, 172 };
static const int64_t g_cols_q[] = { 32, 64, 96, 160, 288 };

START_TEST(matmul_f32)
{
	SIMD_CASE();
	check_type(STRATA_TYPE_F32, g_rows, 6, g_cols_f, 6, 1e-5);
}
END_TEST

START_TEST(matmul_f16)
{
	SIMD_CASE();
	check_type(STRATA_TYPE_F16, g_rows, 6, g_cols_f, 6, 1e-5);
}
END_TEST

START_TEST(matmul_bf16)
{
	SIMD_CASE();
	check_type(STRATA_TYPE_BF16, g_rows, 6, g_cols_f, 6, 1e-5);
}
END_TEST

START_TEST(matmul_q8_0)
{
	SIMD_CASE();
	check_type(STRATA_TYPE_Q8_0, g_rows, 6, g_cols_q, 5, 1e-5);
}
END_TEST

/* The Q8_0 integer dot, exactly: against a double reference over the
 * quantised activations, so only float rounding of the block sums remains. */
START_TEST(matmul_q8_0_exact_activations)
{
	SIMD_CASE();

	const int64_t rows = 37, cols = 32 * 13, n_tok = 9;
	uint8_t *w = make_weights(STRATA_TYPE_Q8_0, rows, cols);
	float *x = make_input(cols, cols, n_tok);
	float *y = malloc(sizeof(float) * (size_t)(rows * n_tok));
	struct strata_mat m;

	EXPECT_EQ(strata_mat_init(&m, STRATA_TYPE_Q8_0, rows, cols, w), 0);
	{
		const int l = g_lv;
		const struct strata_act_ops *ao =
			&strata_kern_level_get(l)->act[STRATA_ACT_Q8_0];
		void *xq = aligned_alloc(64, ao->row_bytes(cols));

		EXPECT_EQ(strata_simd_set(l), 0);
		strata_matmul(NULL, &m, x, cols, n_tok, y, rows);
		for (int64_t t = 0; t < n_tok; t++) {
			ao->quantize(x + t * cols, xq, cols);
			for (int64_t r = 0; r < rows; r++) {
				double s = 0, a = 0;

				for (int64_t b = 0; b < cols / 32; b++) {
					const uint8_t *blk = w + r * m.row_bytes + b * 34;
					double dw = strata_fp16_to_f32(ld16(blk));
					long isum = 0;
					float dx = 0;

					for (int i = 0; i < 32; i++) {
						int8_t q;

						ao->peek(xq, cols, b * 32 + i, &q, &dx);
						isum += (long)(int8_t)blk[2 + i] * q;
						a += fabs((double)(int8_t)blk[2 + i] * q * dw * dx);
					}
					s += (double)isum * dw * dx;
				}
				EXPECT(fabs(y[t * rows + r] - s) <= 1e-6 * a + 1e-30,
					      "%s: y[%lld][%lld] = %.9g, exact %.9g",
					      strata_simd_name(l), (long long)t, (long long)r,
					      y[t * rows + r], s);
			}
		}
		free(xq);
	}
	strata_simd_set(strata_simd_detect());
	free(w), free(x), free(y);
}
END_TEST

/*
 * Q8_0 over more than one repacked chunk (64 blocks) and short row groups:
 * right against scalar and the reference, and each token's outputs are the
 * same bits whether it is computed alone or in a batch of any size (the
 * speculative windows compare the two).
 */
START_TEST(matmul_q8_0_long_rows_batch_invariant)
{
	SIMD_CASE();

	const int64_t rows = 37, cols = 32 * 131, n_tok = 11;
	uint8_t *w = make_weights(STRATA_TYPE_Q8_0, rows, cols);
	float *x = make_input(cols, cols, n_tok);
	float *yb = malloc(sizeof(float) * (size_t)(rows * n_tok));
	float *y1 = malloc(sizeof(float) * (size_t)rows);
	struct strata_mat m;
	struct strata_pool *pool;

	check_shape(NULL, STRATA_TYPE_Q8_0, rows, cols, 9, 1e-5);
	EXPECT_EQ(strata_pool_create(2, &pool), 0);
	EXPECT_EQ(strata_mat_init(&m, STRATA_TYPE_Q8_0, rows, cols, w), 0);
	EXPECT_EQ(strata_simd_set(g_lv), 0);
	for (int64_t n = 2; n <= n_tok; n += 3) {
		strata_matmul(pool, &m, x, cols, n, yb, rows);
		for (int64_t t = 0; t < n; t++) {
			strata_matmul(pool, &m, x + t * cols, cols, 1, y1, rows);
			EXPECT(memcmp(y1, yb + t * rows, sizeof(float) * (size_t)rows) == 0,
			       "%s: token %lld of a batch of %lld differs from it alone",
			       strata_simd_name(g_lv), (long long)t, (long long)n);
		}
	}
	strata_simd_set(strata_simd_detect());
	strata_pool_free(pool);
	free(w), free(x), free(yb), free(y1);
}
END_TEST

/* The result does not depend on the pool (chunks align with tiles), and a
 * matmul big enough to be split over threads is right. */
START_TEST(matmul_thread_independent)
{
	static const uint32_t types[] = { STRATA_TYPE_F32, STRATA_TYPE_Q8_0 };
	struct strata_pool *p1, *p2, *p3;

	EXPECT_EQ(strata_pool_create(1, &p1), 0);
	EXPECT_EQ(strata_pool_create(2, &p2), 0);
	EXPECT_EQ(strata_pool_create(3, &p3), 0);
	for (int ti = 0; ti < 2; ti++) {
		const int64_t rows = 301, cols = 512, n_tok = 70;
		uint8_t *w = make_weights(types[ti], rows, cols);
		float *x = make_input(cols, cols, n_tok);
		size_t ny = (size_t)(rows * n_tok);
		float *y0 = malloc(sizeof(float) * ny), *y1 = malloc(sizeof(float) * ny);
		struct strata_mat m;

		EXPECT_EQ(strata_mat_init(&m, types[ti], rows, cols, w), 0);
		for (int64_t nt = 1; nt <= n_tok; nt += 23) {
			strata_matmul(NULL, &m, x, cols, nt, y0, rows);
			strata_matmul(p1, &m, x, cols, nt, y1, rows);
			EXPECT_TRUE(memcmp(y0, y1, sizeof(float) * (size_t)(rows * nt)) == 0);
			strata_matmul(p2, &m, x, cols, nt, y1, rows);
			EXPECT_TRUE(memcmp(y0, y1, sizeof(float) * (size_t)(rows * nt)) == 0);
			strata_matmul(p3, &m, x, cols, nt, y1, rows);
			EXPECT_TRUE(memcmp(y0, y1, sizeof(float) * (size_t)(rows * nt)) == 0);
		}
		free(w), free(x), free(y0), free(y1);
	}
	strata_pool_free(p1);
	strata_pool_free(p2);
	strata_pool_free(p3);
}
END_TEST

/* ---- dot / axpy / axpby / mul_acc ---------------------------------------------------- */

START_TEST(dot_axpy_levels)
{
	SIMD_CASE();

	float a[216], b[216], y0[216], y1[216];

	for (int i = 0; i < 216; i++)
		a[i] = frnd(), b[i] = frnd() * 4.0f;
	for (int64_t n = 0; n <= 200; n++) {
		for (int off = 0; off < 3; off++) {
			double ref = 0, mag = 0;

			for (int64_t i = 0; i < n; i++) {
				ref += (double)a[off + i] * b[i];
				mag += fabs((double)a[off + i] * b[i]);
			}
			{
				const int l = g_lv;
				float got;

				EXPECT_EQ(strata_simd_set(l), 0);
				got = strata_dot_f32(a + off, b, n);
				EXPECT(fabs(got - ref) <= 1e-6 * mag + 1e-30,
					      "%s dot n=%lld: %.9g vs %.9g",
					      strata_simd_name(l), (long long)n, got, ref);
				for (int i = 0; i < 216; i++)
					y0[i] = y1[i] = b[i];
				strata_kern_scalar.axpy_f32(y0 + off, 0.75f, a, n);
				strata_axpy_f32(y1 + off, 0.75f, a, n);
				for (int i = 0; i < 216; i++)
					EXPECT(fabsf(y0[i] - y1[i]) <=
					      1e-6f * (fabsf(b[i]) + fabsf(a[i])),
						      "%s axpy n=%lld i=%d: %.9g vs %.9g",
						      strata_simd_name(l), (long long)n, i,
						      y1[i], y0[i]);
				/* y += a * b: within one rounding of each product and sum */
				for (int i = 0; i < 216; i++)
					y1[i] = b[i];
				strata_mul_acc_f32(y1 + off, a, b + 7, n);
				for (int i = 0; i < 216; i++) {
					const int in = i >= off && i < off + n;
					const double p = in ? (double)a[i - off] * b[i - off + 7] : 0;

					EXPECT(in ? fabs(y1[i] - (b[i] + p)) <=
						       1.2e-7 * (fabs(b[i]) + fabs(p)) + 1e-30
						  : y1[i] == b[i],
					       "%s mul_acc n=%lld i=%d: %.9g vs %.9g",
					       strata_simd_name(l), (long long)n, i, y1[i], b[i] + p);
				}
				for (int i = 0; i < 216; i++)
					y0[i] = y1[i] = b[i];
				strata_kern_scalar.axpby_f32(y0 + off, 0.75f, a, -0.9f, n);
				strata_axpby_f32(y1 + off, 0.75f, a, -0.9f, n);
				for (int i = 0; i < 216; i++)
					EXPECT(fabsf(y0[i] - y1[i]) <=
					      1e-6f * (fabsf(b[i]) + fabsf(a[i])) &&
					      (i >= off && i < off + n ? y1[i] != b[i] : y1[i] == b[i]),
						      "%s axpby n=%lld i=%d: %.9g vs %.9g",
						      strata_simd_name(l), (long long)n, i,
						      y1[i], y0[i]);
			}
		}
	}
	strata_simd_set(strata_simd_detect());
}
END_TEST

/* ---- RMSNorm halves ---------------------------------------------------------- */

/*
 * strata_sumsq_f32 and strata_scale_mul_f32 give the scalar level's bits at
 * every level, for every length up to 80 (the tails) and a norm's 2048, from
 * an odd offset, in place, with and without weights; and the sum is the
 * double-precision sum of squares (x * x is exact in double).
 */
START_TEST(norm_levels_identical)
{
	SIMD_CASE();

	enum { N = 2048 + 3 };
	static float x[N], w[N], y0[N], y1[N];

	for (int i = 0; i < N; i++)
		x[i] = frnd() * (i % 7 ? 1.0f : 300.0f), w[i] = 1.0f + 0.5f * frnd();
	EXPECT_EQ(strata_simd_set(g_lv), 0);
	for (int64_t k = 0; k <= 81; k++) {
		const int64_t n = k <= 80 ? k : N - 3; /* every tail, then a norm's 2048 */
		const float *xs = x + 3;
		double ref = 0, got = strata_sumsq_f32(xs, n);

		for (int64_t i = 0; i < n; i++)
			ref += (double)xs[i] * xs[i];
		EXPECT(got == strata_kern_scalar.sumsq_f32(xs, n),
		       "%s sumsq n=%lld: %.17g, scalar %.17g", strata_simd_name(g_lv),
		       (long long)n, got, strata_kern_scalar.sumsq_f32(xs, n));
		EXPECT(fabs(got - ref) <= 1e-15 * ref, "%s sumsq n=%lld: %.17g vs %.17g",
		       strata_simd_name(g_lv), (long long)n, got, ref);
		for (int wt = 0; wt < 2; wt++) {
			const float *ws = wt ? w + 1 : NULL;

			strata_kern_scalar.scale_mul_f32(y0, xs, 0.37f, ws, n);
			strata_scale_mul_f32(y1, xs, 0.37f, ws, n);
			EXPECT(memcmp(y0, y1, sizeof(float) * n) == 0, "%s scale_mul n=%lld w=%d",
			       strata_simd_name(g_lv), (long long)n, wt);
			memcpy(y1, xs, sizeof(float) * n);
			strata_scale_mul_f32(y1, y1, 0.37f, ws, n); /* in place */
			EXPECT(memcmp(y0, y1, sizeof(float) * n) == 0,
			       "%s scale_mul in place n=%lld w=%d", strata_simd_name(g_lv),
			       (long long)n, wt);
		}
	}
	strata_simd_set(strata_simd_detect());
}
END_TEST

/* ---- gates ------------------------------------------------------------------- */

/*
 * silu(g) * u and x * sigmoid(y) against double precision over the whole
 * float range that matters (and past the vector levels' clamp at +-87),
 * every length up to 40 (the tails), in place, and NaN in, NaN out.
 */
START_TEST(gate_levels)
{
	SIMD_CASE();

	enum { N = 4096 };
	float *g = malloc(N * sizeof(float)), *u = malloc(N * sizeof(float));
	float *o = malloc(N * sizeof(float)), *p = malloc(N * sizeof(float));
	const int l = g_lv;
	double worst = 0;

	ck_assert(g && u && o && p);
	for (int i = 0; i < N; i++) {
		g[i] = -100.0f + 200.0f * (float)i / N; /* every binade the exps meet */
		u[i] = frnd() * 3.0f;
	}
	g[0] = 0.0f, g[1] = -0.0f, g[2] = 1e-30f, g[3] = -87.5f, g[4] = 88.5f, g[5] = 16.0f;
	EXPECT_EQ(strata_simd_set(l), 0);
	for (int kind = 0; kind < 2; kind++) {
		if (kind == 0)
			strata_silu_mul_f32(o, g, u, N);
		else
			strata_sigmoid_mul_f32(o, u, g, N);
		for (int i = 0; i < N; i++) {
			double s = 1.0 / (1.0 + exp(-(double)g[i]));
			double ref = kind == 0 ? (double)g[i] * s * u[i] : (double)u[i] * s;
			double err = fabs(o[i] - ref) / (fabs(ref) + 1e-37);

			EXPECT(err <= 1e-6 || fabs(o[i] - ref) <= 1e-30,
			       "%s %s(%.9g, %.9g) = %.9g, not %.9g", strata_simd_name(l),
			       kind ? "sigmoid_mul" : "silu_mul", g[i], u[i], o[i], ref);
			if (fabs(ref) > 1e-30 && err > worst)
				worst = err;
		}
	}
	for (int n = 0; n <= 40; n++) { /* tails, and o aliasing g */
		memcpy(p, g + 2000, N / 2 * sizeof(float));
		for (int i = 0; i < 48; i++)
			o[i] = -7.0f;
		strata_silu_mul_f32(o, p, u, n);
		strata_silu_mul_f32(p, p, u, n);
		for (int i = 0; i < 48; i++)
			EXPECT(i < n ? o[i] == p[i] : o[i] == -7.0f && p[i] == g[2000 + i],
			       "%s silu_mul n=%d lane %d", strata_simd_name(l), n, i);
	}
	g[7] = NAN, u[9] = NAN;
	strata_silu_mul_f32(o, g, u, 16);
	EXPECT(isnan(o[7]) && isnan(o[9]) && !isnan(o[8]), "%s silu_mul lost a NaN",
	       strata_simd_name(l));
	strata_sigmoid_mul_f32(o, u, g, 16);
	EXPECT(isnan(o[7]) && isnan(o[9]) && !isnan(o[8]), "%s sigmoid_mul lost a NaN",
	       strata_simd_name(l));
	printf("gate %s: worst relative error %.2g\n", strata_simd_name(l), worst);
	strata_simd_set(strata_simd_detect());
	free(g), free(u), free(o), free(p);
}
END_TEST

/* ---- level selection ---------------------------------------------------------- */

START_TEST(simd_select)
{
	enum strata_simd best = strata_simd_detect();
	pid_t pid;
	int st;

	EXPECT_EQ(strata_simd_set((enum strata_simd)7), -EINVAL);
	for (int l = 0; l <= STRATA_SIMD_AVX512; l++) {
		EXPECT_EQ(strata_simd_set(l), l <= (int)best ? 0 : -ENOTSUP);
		if (l <= (int)best)
			EXPECT_EQ(strata_simd_get(), l);
	}
	ck_assert_str_eq(strata_simd_name(STRATA_SIMD_AVX2), "avx2");
	strata_simd_set(best);
	/* The env cap is read once, at first use: check it in a fresh child. */
	pid = fork();
	EXPECT_TRUE(pid >= 0);
	if (pid == 0) {
		/* This process has used the kernels already: re-exec, and the
		 * fresh image reports through its exit status (see main). */
		setenv("STRATA_SIMD", "scalar", 1);
		setenv("CHECK_KERNELS_PROBE", "1", 1);
		tu_exec_self();
		_exit(99);
	}
	EXPECT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "with STRATA_SIMD=scalar the level was not capped (status %d)",
		      WEXITSTATUS(st));
}
END_TEST

int main(void)
{
	Suite *s;
	TCase *tc, *simd;

	/* Child of simd_select: report the level chosen under STRATA_SIMD
	 * (before any allocation: LeakSanitizer checks this exit too). */
	if (getenv("CHECK_KERNELS_PROBE"))
		return strata_simd_get() == STRATA_SIMD_SCALAR ? 0 : 1;

	s = suite_create("kernels");
	simd = tcase_create("levels");
	tcase_set_tags(simd, "simd");
	tcase_set_timeout(simd, 300);
	tcase_add_test(simd, dequant_hand_blocks);
	tcase_add_test(simd, dequant_levels_identical);
	tcase_add_test(simd, dequant_matches_ggml);
	tcase_add_test(simd, act_quant_levels_identical);
	tcase_add_test(simd, matmul_f32);
	tcase_add_test(simd, matmul_f16);
	tcase_add_test(simd, matmul_bf16);
	tcase_add_test(simd, matmul_q8_0);
	tcase_add_test(simd, matmul_q8_0_exact_activations);
	tcase_add_test(simd, matmul_q8_0_long_rows_batch_invariant);
	tcase_add_test(simd, dot_axpy_levels);
	tcase_add_test(simd, norm_levels_identical);
	tcase_add_test(simd, gate_levels);
	suite_add_tcase(s, simd);
	tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, mat_init_and_get_row);
	tcase_add_test(tc, quantize_reference);
	tcase_add_test(tc, matmul_thread_independent);
	tcase_add_test(tc, simd_select);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
