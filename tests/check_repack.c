/*
 * check_repack.c - Q8_0, Q4_K, Q6_K and IQ4_NL weights repacked at load
 * (kernels.h: strata_mat_repack, core/cpu/q8_0_r16.*, q4_k_r16.*, q6_k_r16.*,
 * iq4_nl_r16.*): at each SIMD level (check_repack, .avx2, .avx512) every
 * Q8_0 product over the repacked bytes is bit-equal to the same product over
 * the GGUF rows, for one token, batches, several chunks of blocks, a pool and
 * the gathered rows of strata_matmul_many; every Q4_K and Q6_K product is
 * bit-equal to the AVX2 level's over the GGUF rows (the order q4_k_r16.h
 * documents for every level) and close to the exact dot product; every
 * IQ4_NL product is bit-equal to the scalar level's over the repacked bytes
 * (iq4_nl_r16.h's order) and close to the exact dot and to the GGUF rows'
 * product; rows read back the same; a model's context interleaves its
 * weights at load and computes the same logits as without (the K-quants at
 * AVX-512 and IQ4_NL: to the last bits); and what cannot be repacked says so.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "cpu/types.h"
#include "model/model.h"
#include "testutil.h"

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void)
{
	return tu_rand(&g_rng);
}

static float frnd(void)
{
	return tu_frand(&g_rng);
}

/* Q8_0 rows with the full int8 range (-128 too) and scales over decades. */
static uint8_t *make_q8_0(int64_t rows, int64_t cols)
{
	const size_t rb = strata_type_row_bytes(STRATA_TYPE_Q8_0, cols);
	uint8_t *w = aligned_alloc(64, (rb * (size_t)rows + 63) & ~(size_t)63);

	for (int64_t r = 0; r < rows; r++)
		for (int64_t b = 0; b < cols / 32; b++) {
			uint8_t *blk = w + (size_t)r * rb + (size_t)b * 34;

			strata_store_fp16(blk, ldexpf(frnd(), -(int)(rnd() % 12)));
			for (int i = 0; i < 32; i++)
				blk[2 + i] = (uint8_t)rnd();
		}
	return w;
}

/* Q4_K rows: every scale, min and nibble pattern, d and dmin over decades. */
static uint8_t *make_q4_k(int64_t rows, int64_t cols)
{
	const size_t rb = strata_type_row_bytes(STRATA_TYPE_Q4_K, cols);
	uint8_t *w = aligned_alloc(64, (rb * (size_t)rows + 63) & ~(size_t)63);

	for (int64_t r = 0; r < rows; r++)
		for (int64_t b = 0; b < cols / 256; b++) {
			uint8_t *blk = w + (size_t)r * rb + (size_t)b * 144;

			strata_store_fp16(blk, ldexpf(frnd(), -(int)(rnd() % 12)));
			strata_store_fp16(blk + 2, ldexpf(fabsf(frnd()), -(int)(rnd() % 12)));
			for (int i = 4; i < 144; i++)
				blk[i] = (uint8_t)rnd();
		}
	return w;
}

/* Q6_K rows: every value and scale pattern, d over decades. */
static uint8_t *make_q6_k(int64_t rows, int64_t cols)
{
	const size_t rb = strata_type_row_bytes(STRATA_TYPE_Q6_K, cols);
	uint8_t *w = aligned_alloc(64, (rb * (size_t)rows + 63) & ~(size_t)63);

	for (int64_t r = 0; r < rows; r++)
		for (int64_t b = 0; b < cols / 256; b++) {
			uint8_t *blk = w + (size_t)r * rb + (size_t)b * 210;

			for (int i = 0; i < 208; i++)
				blk[i] = (uint8_t)rnd();
			strata_store_fp16(blk + 208, ldexpf(frnd(), -(int)(rnd() % 12)));
		}
	return w;
}

/* IQ4_NL rows: every nibble, d over decades. */
static uint8_t *make_iq4_nl(int64_t rows, int64_t cols)
{
	const size_t rb = strata_type_row_bytes(STRATA_TYPE_IQ4_NL, cols);
	uint8_t *w = aligned_alloc(64, (rb * (size_t)rows + 63) & ~(size_t)63);

	for (int64_t r = 0; r < rows; r++)
		for (int64_t b = 0; b < cols / 32; b++) {
			uint8_t *blk = w + (size_t)r * rb + (size_t)b * 18;

			strata_store_fp16(blk, ldexpf(frnd(), -(int)(rnd() % 12)));
			for (int i = 2; i < 18; i++)
				blk[i] = (uint8_t)rnd();
		}
	return w;
}

/* The types interleaved at load, Q8_0 first (its reference is exact). */
static const uint32_t g_types[] = { STRATA_TYPE_Q8_0, STRATA_TYPE_Q4_K, STRATA_TYPE_Q6_K };

static uint8_t *make_w(uint32_t type, int64_t rows, int64_t cols)
{
	switch (type) {
	case STRATA_TYPE_Q4_K:
		return make_q4_k(rows, cols);
	case STRATA_TYPE_Q6_K:
		return make_q6_k(rows, cols);
	case STRATA_TYPE_IQ4_NL:
		return make_iq4_nl(rows, cols);
	default:
		return make_q8_0(rows, cols);
	}
}

static float *make_x(int64_t cols, int64_t n)
{
	float *x = malloc(sizeof(float) * (size_t)(cols * n));

	for (int64_t i = 0; i < cols * n; i++)
		x[i] = frnd() * (1 + (float)(rnd() % 4));
	return x;
}

/* m repacked into fresh memory (*rp, to free). */
static void repack(const struct strata_mat *m, struct strata_mat *out, void **rp)
{
	*rp = aligned_alloc(64, (m->row_bytes * (size_t)m->rows + 63) & ~(size_t)63);
	ck_assert_ptr_nonnull(*rp);
	strata_mat_repack(m, 0, m->rows / 16, *rp);
	strata_mat_repacked(m, *rp, out);
}

static int g_lv;

/* Repacked and GGUF rows give the same bits, alone and in batches. */
START_TEST(products_bit_equal)
{
	static const int64_t shape[][2] = { { 16, 64 }, { 48, 1024 }, { 32, 64 * 69 } };
	static const int64_t ntok[] = { 1, 2, 3, 4, 5, 8, 9, 17 };
	struct strata_pool *pool;

	if ((g_lv = tu_simd_level()) < 0)
		return;
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	for (size_t s = 0; s < sizeof(shape) / sizeof(shape[0]); s++) {
		const int64_t rows = shape[s][0], cols = shape[s][1];
		uint8_t *w = make_q8_0(rows, cols);
		float *x = make_x(cols, 17);
		float *y0 = malloc(sizeof(float) * (size_t)(rows * 17));
		float *y1 = malloc(sizeof(float) * (size_t)(rows * 17));
		struct strata_mat m, r;
		void *rp;

		ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q8_0, rows, cols, w), 0);
		repack(&m, &r, &rp);
		for (size_t i = 0; i < sizeof(ntok) / sizeof(ntok[0]); i++)
			for (int p = 0; p < 2; p++) {
				struct strata_pool *pl = p ? pool : NULL;

				strata_matmul(pl, &m, x, cols, ntok[i], y0, rows);
				strata_matmul(pl, &r, x, cols, ntok[i], y1, rows);
				EXPECT(memcmp(y0, y1, sizeof(float) * (size_t)(rows * ntok[i])) == 0,
				       "%s: %lld x %lld, %lld tokens%s: repacked differs",
				       strata_simd_name(g_lv), (long long)rows, (long long)cols,
				       (long long)ntok[i], p ? ", pool" : "");
			}
		free(rp), free(w), free(x), free(y0), free(y1);
	}
	strata_pool_free(pool);
	strata_simd_set(strata_simd_detect());
}
END_TEST

/*
 * Row r of m times token t of x, in double from the dequantised row; *err
 * gets the most that quantising the activations to int8 (half a step of
 * max|x| / 127 per value) can move it.
 */
static double exact_dot(const struct strata_mat *m, const float *x, int64_t r, int64_t t,
			double *err)
{
	float *row = malloc(sizeof(float) * (size_t)m->cols);
	double s = 0, w1 = 0, amax = 0;

	strata_mat_get_row(m, r, row);
	for (int64_t i = 0; i < m->cols; i++) {
		s += (double)row[i] * x[t * m->cols + i];
		w1 += fabs(row[i]);
		amax = fmax(amax, fabs(x[t * m->cols + i]));
	}
	free(row);
	*err = w1 * amax / 254 * 1.01 + 1e-4 * fabs(s);
	return s;
}

/*
 * Q4_K and Q6_K repacked: at every level and batch the bits of the AVX2
 * level's product over GGUF rows (where this CPU has AVX2), and within the
 * activations' quantisation error of the exact dot product.
 */
START_TEST(k_products)
{
	static const int64_t shape[][2] = { { 16, 256 }, { 48, 1024 }, { 32, 256 * 9 } };
	static const int64_t ntok[] = { 1, 2, 3, 4, 5, 8, 9, 17, 33 };
	const int have_avx2 = strata_simd_detect() >= STRATA_SIMD_AVX2;
	const uint32_t type = _i ? STRATA_TYPE_Q6_K : STRATA_TYPE_Q4_K;
	struct strata_pool *pool;

	if ((g_lv = tu_simd_level()) < 0)
		return;
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	for (size_t s = 0; s < sizeof(shape) / sizeof(shape[0]); s++) {
		const int64_t rows = shape[s][0], cols = shape[s][1];
		uint8_t *w = make_w(type, rows, cols);
		float *x = make_x(cols, 33);
		float *y0 = malloc(sizeof(float) * (size_t)(rows * 33));
		float *y1 = malloc(sizeof(float) * (size_t)(rows * 33));
		struct strata_mat m, r;
		void *rp;

		ck_assert_int_eq(strata_mat_init(&m, type, rows, cols, w), 0);
		repack(&m, &r, &rp);
		for (size_t i = 0; i < sizeof(ntok) / sizeof(ntok[0]); i++)
			for (int p = 0; p < 2; p++) {
				struct strata_pool *pl = p ? pool : NULL;
				const int64_t nt = ntok[i];

				strata_simd_set(have_avx2 ? STRATA_SIMD_AVX2 : (enum strata_simd)g_lv);
				strata_matmul(pl, &m, x, cols, nt, y0, rows);
				strata_simd_set((enum strata_simd)g_lv);
				strata_matmul(pl, &r, x, cols, nt, y1, rows);
				EXPECT(!have_avx2 ||
					       memcmp(y0, y1, sizeof(float) * (size_t)(rows * nt)) == 0,
				       "%s: %s %lld x %lld, %lld tokens%s: repacked differs from "
				       "the AVX2 level's GGUF-row product",
				       strata_simd_name(g_lv), strata_type_name(type),
				       (long long)rows, (long long)cols,
				       (long long)nt, p ? ", pool" : "");
				for (int64_t t = 0; t < nt; t += 7)
					for (int64_t j = 0; j < rows; j += 5) {
						double err;
						const double e = exact_dot(&m, x, j, t, &err);

						EXPECT(fabs(y1[t * rows + j] - e) <= err,
						       "%s: %s row %lld token %lld: %g, exact %g (+-%g)",
						       strata_simd_name(g_lv), strata_type_name(type),
						       (long long)j, (long long)t,
						       y1[t * rows + j], e, err);
					}
			}
		free(rp), free(w), free(x), free(y0), free(y1);
	}
	strata_pool_free(pool);
	strata_simd_set(strata_simd_detect());
}
END_TEST

/*
 * Q6_K repacked at the ends of its range: every value 0 or 63 (v - 32 = -32
 * or 31), scales -128 or 127, and activations that quantise to -127
 * everywhere (all equal) or to 127 but for each block's first value (which,
 * of the largest magnitude, takes -127), so the int16 lanes of the kernels'
 * pair sums reach both bounds (+-8 x 32 x 127 = +-32512 for the one-token
 * kernel's four columns).  Bits of the AVX2 level's GGUF-row product and the
 * exact dot product, alone and in a batch.
 */
START_TEST(q6_k_extremes)
{
	const int64_t rows = 16, cols = 512;
	const size_t rb = strata_type_row_bytes(STRATA_TYPE_Q6_K, cols);
	const int have_avx2 = strata_simd_detect() >= STRATA_SIMD_AVX2;
	uint8_t *w;
	float *x, y0[16 * 2], y1[16 * 2];

	if ((g_lv = tu_simd_level()) < 0)
		return;
	w = aligned_alloc(64, rb * (size_t)rows);
	x = malloc(sizeof(float) * (size_t)cols * 2);
	ck_assert(w && x);
	for (int c = 0; c < 8; c++) { /* value 0/63, scale sign, activation pattern */
		const int vmax = c & 1, sneg = c >> 1 & 1, xmix = c >> 2;
		struct strata_mat m, r;
		void *rp;

		for (int64_t i = 0; i < rows * cols / 256; i++) {
			uint8_t *blk = w + (size_t)i * 210;

			memset(blk, vmax ? 0xff : 0, 192);
			memset(blk + 192, sneg ? 0x80 : 0x7f, 16);
			strata_store_fp16(blk + 208, 0.5f);
		}
		for (int64_t i = 0; i < cols * 2; i++)
			x[i] = !xmix || i % 256 == 0 ? 1.0f : -0.999f;
		ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q6_K, rows, cols, w), 0);
		repack(&m, &r, &rp);
		for (int64_t nt = 1; nt <= 2; nt++) {
			strata_simd_set(have_avx2 ? STRATA_SIMD_AVX2 : (enum strata_simd)g_lv);
			strata_matmul(NULL, &m, x, cols, nt, y0, rows);
			strata_simd_set((enum strata_simd)g_lv);
			strata_matmul(NULL, &r, x, cols, nt, y1, rows);
			EXPECT(!have_avx2 || memcmp(y0, y1, sizeof(float) * (size_t)(rows * nt)) == 0,
			       "%s: case %d, %lld tokens: repacked differs from the AVX2 level's "
			       "GGUF-row product", strata_simd_name(g_lv), c, (long long)nt);
			for (int64_t j = 0; j < rows * nt; j++) {
				double err;
				const double e = exact_dot(&m, x, j % rows, j / rows, &err);

				EXPECT(fabs(y1[j] - e) <= err, "%s: case %d, output %lld: %g, exact %g",
				       strata_simd_name(g_lv), c, (long long)j, y1[j], e);
			}
		}
		free(rp);
	}
	free(w), free(x);
	strata_simd_set(strata_simd_detect());
}
END_TEST

/*
 * IQ4_NL repacked: at every level, batch and chunking the bits of the
 * scalar level's product over the repacked bytes (the order iq4_nl_r16.h
 * gives every level), within the activations' quantisation error of the
 * exact dot product, and close to the GGUF rows' product at that level.
 */
START_TEST(iq4_nl_products)
{
	static const int64_t shape[][2] = { { 16, 64 }, { 48, 1024 }, { 32, 64 * 37 } };
	static const int64_t ntok[] = { 1, 2, 3, 4, 5, 8, 9, 17, 33 };
	struct strata_pool *pool;

	if ((g_lv = tu_simd_level()) < 0)
		return;
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	for (size_t s = 0; s < sizeof(shape) / sizeof(shape[0]); s++) {
		const int64_t rows = shape[s][0], cols = shape[s][1];
		uint8_t *w = make_iq4_nl(rows, cols);
		float *x = make_x(cols, 33);
		float *y0 = malloc(sizeof(float) * (size_t)(rows * 33));
		float *y1 = malloc(sizeof(float) * (size_t)(rows * 33));
		float *yg = malloc(sizeof(float) * (size_t)(rows * 33));
		struct strata_mat m, r;
		void *rp;

		ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_IQ4_NL, rows, cols, w), 0);
		repack(&m, &r, &rp);
		ck_assert_uint_eq(r.layout, STRATA_LAYOUT_IQ4_NL_R16);
		for (size_t i = 0; i < sizeof(ntok) / sizeof(ntok[0]); i++)
			for (int p = 0; p < 2; p++) {
				struct strata_pool *pl = p ? pool : NULL;
				const int64_t nt = ntok[i];

				strata_simd_set(STRATA_SIMD_SCALAR);
				strata_matmul(pl, &r, x, cols, nt, y0, rows);
				strata_simd_set((enum strata_simd)g_lv);
				strata_matmul(pl, &r, x, cols, nt, y1, rows);
				strata_matmul(pl, &m, x, cols, nt, yg, rows);
				EXPECT(memcmp(y0, y1, sizeof(float) * (size_t)(rows * nt)) == 0,
				       "%s: IQ4_NL %lld x %lld, %lld tokens%s: repacked differs from "
				       "the scalar level's", strata_simd_name(g_lv), (long long)rows,
				       (long long)cols, (long long)nt, p ? ", pool" : "");
				for (int64_t t = 0; t < nt; t += 3)
					for (int64_t j = 0; j < rows; j += 3) {
						double err;
						const double e = exact_dot(&m, x, j, t, &err);
						const double v = y1[t * rows + j], g = yg[t * rows + j];

						EXPECT(fabs(v - e) <= err,
						       "%s: IQ4_NL row %lld token %lld: %g, exact %g (+-%g)",
						       strata_simd_name(g_lv), (long long)j, (long long)t, v,
						       e, err);
						/* float rounding only: far below the int8 bound */
						EXPECT(fabs(v - g) <= 1e-2 * err,
						       "%s: IQ4_NL row %lld token %lld: %g, GGUF rows %g",
						       strata_simd_name(g_lv), (long long)j, (long long)t, v, g);
					}
			}
		free(rp), free(w), free(x), free(y0), free(y1), free(yg);
	}
	strata_pool_free(pool);
	strata_simd_set(strata_simd_detect());
}
END_TEST

/* The experts' path: several items, tokens gathered by row index. */
START_TEST(many_gathered_bit_equal)
{
	const int64_t rows = 64, cols = 512, n_x = 7;
	const uint32_t sel[2][4] = { { 6, 0, 3, 3 }, { 5 } };
	const int64_t nsel[2] = { 4, 1 };
	struct strata_pool *pool;
	uint8_t *w[2];
	struct strata_mat m[2], r[2];
	void *rp[2];
	float *x, *y0, *y1;
	struct strata_mm_item it[2];

	if ((g_lv = tu_simd_level()) < 0)
		return;
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	x = make_x(cols, n_x);
	y0 = calloc((size_t)(rows * 8), sizeof(float));
	y1 = calloc((size_t)(rows * 8), sizeof(float));
	for (int q = 0; q < (int)(sizeof g_types / sizeof g_types[0]); q++) {
		const uint32_t type = g_types[q];
		/* the K-quants' reference: the AVX2 level over GGUF rows (k_products) */
		const int ref = q && strata_simd_detect() >= STRATA_SIMD_AVX2 ? STRATA_SIMD_AVX2 : g_lv;

		if (q && ref != STRATA_SIMD_AVX2)
			break;
		for (int e = 0; e < 2; e++) {
			w[e] = make_w(type, rows, cols);
			ck_assert_int_eq(strata_mat_init(&m[e], type, rows, cols, w[e]), 0);
			repack(&m[e], &r[e], &rp[e]);
		}
		for (int v = 0; v < 2; v++) {
			for (int e = 0; e < 2; e++)
				it[e] = (struct strata_mm_item){ v ? &r[e] : &m[e], x, cols, nsel[e],
								 (v ? y1 : y0) + e * 4 * rows, rows,
								 sel[e], n_x };
			strata_simd_set((enum strata_simd)(v ? g_lv : ref));
			strata_matmul_many(pool, it, 2);
		}
		EXPECT(memcmp(y0, y1, sizeof(float) * (size_t)(rows * 8)) == 0,
		       "%s: gathered products over repacked %s experts differ",
		       strata_simd_name(g_lv), strata_type_name(type));
		for (int e = 0; e < 2; e++)
			free(w[e]), free(rp[e]);
	}
	free(x), free(y0), free(y1);
	strata_pool_free(pool);
	strata_simd_set(strata_simd_detect());
}
END_TEST

/* n_tok prompt tokens then decode steps; every position's logits into out. */
static void run_model(struct strata_model *m, struct strata_pool *pool, int no_repack,
		      float *out, struct strata_placement_stats *st)
{
	const int32_t toks[6] = { 3, 17, 42, 5, 99, 7 };
	struct strata_ctx_opts o = { .pool = pool, .max_batch = 8, .no_repack = no_repack };
	struct strata_ctx *c;
	struct strata_seq *s;
	const size_t nv = m->hp.n_vocab;

	ck_assert_int_eq(strata_ctx_create(m, &o, &c), 0);
	ck_assert_int_eq(strata_seq_create(c, 16, &s), 0);
	strata_ctx_placement(c, st);
	ck_assert_int_eq(strata_forward(s, toks, 4, out, 1), 0);
	ck_assert_int_eq(strata_forward(s, toks + 4, 1, out + 4 * nv, 0), 0);
	ck_assert_int_eq(strata_forward(s, toks + 5, 1, out + 5 * nv, 0), 0);
	strata_seq_free(s);
	strata_ctx_free(c);
}

/*
 * A context copies its weights at load, Q8_0, Q4_K, Q6_K and IQ4_NL
 * interleaved (at a level with an interleaved kernel; at the scalar level
 * they stay in the mapping), and every logit stays the same bits: at
 * AVX-512 the Q4_K_M model's to the last bits (its GGUF-row kernels for
 * under 20 tokens sum in another order), and the IQ4_NL model's at both
 * vector levels (its GGUF-row kernels sum per lane).
 */
START_TEST(model_logits_bit_equal)
{
	static const char *const files[] = { "models/syn-qwen3moe-d256-q8_0.gguf",
					      "models/syn-qwen3moe-d256-q4_k_m.gguf",
					      "models/syn-qwen3moe-d256-iq4_nl.gguf" };
	struct strata_pool *pool;

	if ((g_lv = tu_simd_level()) < 0)
		return;
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	for (int f = 0; f < 3; f++) {
		struct strata_placement_stats sa, sb;
		struct strata_model *m;
		float *a, *b;
		size_t n;

		ck_assert_int_eq(strata_model_load(tu_shared_or_skip(files[f]), &m), 0);
		n = 6 * (size_t)m->hp.n_vocab;
		a = malloc(n * sizeof(float));
		b = malloc(n * sizeof(float));
		run_model(m, pool, 0, a, &sa);
		run_model(m, pool, 1, b, &sb);
		EXPECT((sa.host_repacked_bytes > 0) == (g_lv != STRATA_SIMD_SCALAR),
		       "%s, %s: %llu bytes interleaved", files[f], strata_simd_name(g_lv),
		       (unsigned long long)sa.host_repacked_bytes);
		EXPECT(g_lv == STRATA_SIMD_SCALAR ? sa.host_copied_bytes < sa.host_weight_bytes / 2
						  : sa.host_copied_bytes > sa.host_weight_bytes / 2,
		       "%s, %s: %llu of %llu bytes copied", files[f], strata_simd_name(g_lv),
		       (unsigned long long)sa.host_copied_bytes,
		       (unsigned long long)sa.host_weight_bytes);
		/* the IQ4_NL model's bulk is IQ4_NL (experts, attn_q): interleaved too */
		EXPECT(f != 2 || g_lv == STRATA_SIMD_SCALAR ||
			       sa.host_repacked_bytes > sa.host_weight_bytes / 2,
		       "%s, %s: only %llu of %llu bytes interleaved", files[f],
		       strata_simd_name(g_lv), (unsigned long long)sa.host_repacked_bytes,
		       (unsigned long long)sa.host_weight_bytes);
		ck_assert_uint_eq(sb.host_copied_bytes, 0);
		if ((f == 1 && g_lv == STRATA_SIMD_AVX512) || (f == 2 && g_lv != STRATA_SIMD_SCALAR)) {
			double worst = 0;

			for (size_t i = 0; i < n; i++) {
				const double d = fabs(a[i] - b[i]) / (fabs(b[i]) + 1e-2);

				worst = d > worst ? d : worst;
			}
			EXPECT(worst < 1e-3, "%s, %s: logits moved by %g (relative) when copied",
			       files[f], strata_simd_name(g_lv), worst);
		} else {
			EXPECT(memcmp(a, b, n * sizeof(float)) == 0,
			       "%s, %s: logits differ when copied", files[f],
			       strata_simd_name(g_lv));
		}
		free(a), free(b);
		strata_model_free(m);
	}
	strata_pool_free(pool);
	strata_simd_set(strata_simd_detect());
}
END_TEST

/* Row reads (and so dequantisation) see the same values. */
START_TEST(rows_read_back)
{
	static const uint32_t types[] = { STRATA_TYPE_Q8_0, STRATA_TYPE_Q4_K, STRATA_TYPE_Q6_K,
					  STRATA_TYPE_IQ4_NL };
	const int64_t rows = 32, cols = 768;
	float a[768], b[768];

	for (int q = 0; q < (int)(sizeof types / sizeof types[0]); q++) {
		const uint32_t type = types[q];
		uint8_t *w = make_w(type, rows, cols);
		struct strata_mat m, r;
		void *rp;

		ck_assert_int_eq(strata_mat_init(&m, type, rows, cols, w), 0);
		repack(&m, &r, &rp);
		for (int64_t i = 0; i < rows; i++) {
			strata_mat_get_row(&m, i, a);
			strata_mat_get_row(&r, i, b);
			EXPECT(memcmp(a, b, sizeof(a)) == 0, "%s row %lld reads back different values",
			       strata_type_name(type), (long long)i);
		}
		free(rp), free(w);
	}
}
END_TEST

/* Only Q8_0, Q4_K, Q6_K and IQ4_NL in rows, 16-row groups and (Q8_0,
 * IQ4_NL) 64-column pairs of blocks, at a level with an interleaved kernel. */
START_TEST(repackable_rules)
{
	static float f[64 * 16];
	static uint8_t q[210 * 17];
	struct strata_mat m;
	const enum strata_simd best = strata_simd_detect();

	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q8_0, 16, 64, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), best != STRATA_SIMD_SCALAR);
	ck_assert_int_eq(strata_simd_set(STRATA_SIMD_SCALAR), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	strata_simd_set(best);
	m.layout = STRATA_LAYOUT_Q8_0_R16;
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q8_0, 17, 64, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q8_0, 16, 96, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_F32, 16, 64, f), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q4_K, 16, 256, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), best != STRATA_SIMD_SCALAR);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q4_K, 17, 256, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q6_K, 16, 256, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), best != STRATA_SIMD_SCALAR);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q5_K, 16, 256, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_IQ4_NL, 16, 64, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), best != STRATA_SIMD_SCALAR);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_IQ4_NL, 16, 96, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_IQ4_NL, 24, 64, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	ck_assert_int_eq(strata_mat_init(&m, STRATA_TYPE_Q4_0, 16, 64, q), 0);
	ck_assert_int_eq(strata_mat_repackable(&m), 0);
	ck_assert_uint_eq(strata_layout_r16(STRATA_TYPE_Q4_K), STRATA_LAYOUT_Q4_K_R16);
	ck_assert_uint_eq(strata_layout_r16(STRATA_TYPE_Q8_0), STRATA_LAYOUT_Q8_0_R16);
	ck_assert_uint_eq(strata_layout_r16(STRATA_TYPE_Q6_K), STRATA_LAYOUT_Q6_K_R16);
	ck_assert_uint_eq(strata_layout_r16(STRATA_TYPE_IQ4_NL), STRATA_LAYOUT_IQ4_NL_R16);
	ck_assert_uint_eq(strata_layout_r16(STRATA_TYPE_Q5_K), STRATA_LAYOUT_ROWS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("repack");
	TCase *simd = tcase_create("levels"), *tc = tcase_create("core");

	tcase_set_tags(simd, "simd");
	tcase_set_timeout(simd, 300);
	tcase_add_test(simd, products_bit_equal);
	tcase_add_loop_test(simd, k_products, 0, 2);
	tcase_add_test(simd, q6_k_extremes);
	tcase_add_test(simd, iq4_nl_products);
	tcase_add_test(simd, many_gathered_bit_equal);
	tcase_add_test(simd, model_logits_bit_equal);
	suite_add_tcase(s, simd);
	tcase_add_test(tc, rows_read_back);
	tcase_add_test(tc, repackable_rules);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
