/*
 * check_iq_quant.c - the i-quant quantisers (core/cpu/quants_iq_quant.c):
 * round trips of seeded Gaussian data and of ../shared's synthetic model
 * against llama.cpp's own quantisation of the same tensors, end to end
 * against the F32 model's golden logits, edge cases, and the same bytes
 * from every thread, SIMD level and first use racing the table build.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "cpu/types.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "model/model.h"
#include "slog.h"
#include "testutil.h"

static const uint32_t g_types[] = { STRATA_TYPE_IQ2_XS, STRATA_TYPE_IQ2_S,
				    STRATA_TYPE_IQ3_XXS, STRATA_TYPE_IQ3_S,
				    STRATA_TYPE_IQ1_M };
#define N_TYPES (sizeof(g_types) / sizeof(g_types[0]))

static uint64_t g_rng;

static float frnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (float)(g_rng >> 40) / 8388608.0f - 1.0f;
}

/* Near-Gaussian, unit variance (sum of four uniforms). */
static float grnd(void)
{
	return (frnd() + frnd() + frnd() + frnd()) * 0.8660254f;
}

/* Quantise n values of x to type and back into y; the row's bytes in *q. */
static void round_trip(uint32_t type, const float *x, float *y, int64_t n, uint8_t **q)
{
	const size_t bytes = strata_type_row_bytes(type, n);

	*q = malloc(bytes);
	ck_assert_int_eq(strata_quantize(type, x, *q, n), (int64_t)bytes);
	strata_dequant(type, *q, y, n);
}

static double rel_rms(const float *x, const float *y, int64_t n)
{
	double se = 0.0, sx = 0.0;

	for (int64_t i = 0; i < n; i++) {
		se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
		sx += (double)x[i] * x[i];
	}
	return sqrt(se / sx);
}

/* ---- seeded Gaussian data ---------------------------------------------------------- */

/*
 * Unit Gaussian blocks, then blocks at 1/100 of that, a block with an
 * outlier (40 sigma) and an all-zero block.  The relative RMS error of
 * both halves stays under `rms`, about 1.02x what strata reaches (against
 * llama.cpp: real_tensors below); no value errs by more than `max` of its
 * block's largest magnitude; the zero block comes back as zeros.
 */
START_TEST(gaussian_round_trip)
{
	static const struct {
		uint32_t type;
		double rms, max;
	} bounds[] = {
		{ STRATA_TYPE_IQ2_XS, 0.292, 0.50 }, { STRATA_TYPE_IQ2_S, 0.242, 0.43 },
		{ STRATA_TYPE_IQ3_XXS, 0.181, 0.42 }, { STRATA_TYPE_IQ3_S, 0.130, 0.21 },
		{ STRATA_TYPE_IQ1_M, 0.417, 0.65 },
	};
	const int64_t n = 256 * (tu_tsan() ? 16 : 64), half = n / 2;
	float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
	const uint32_t type = bounds[_i].type;
	double amax_err = 0.0;
	uint8_t *q;

	g_rng = 0x9e3779b97f4a7c15ull;
	for (int64_t i = 0; i < n; i++)
		x[i] = grnd() * (i < half ? 1.0f : 0.01f);
	for (int64_t i = 0; i < 256; i++) /* a block with an outlier */
		x[half - 512 + i] = i == 17 ? 40.0f : grnd();
	memset(x + half - 256, 0, 256 * sizeof(float)); /* an all-zero block */
	round_trip(type, x, y, n, &q);
	for (int64_t b = 0; b < n / 256; b++) {
		double amax = 0.0;

		for (int64_t i = 256 * b; i < 256 * (b + 1); i++)
			amax = fmax(amax, fabs(x[i]));
		for (int64_t i = 256 * b; i < 256 * (b + 1); i++) {
			EXPECT(isfinite(y[i]), "%s value %lld: %g", strata_type_name(type),
			       (long long)i, y[i]);
			if (amax > 0.0)
				amax_err = fmax(amax_err, fabs(y[i] - x[i]) / amax);
			else
				EXPECT(y[i] == 0.0f, "%s: zero block value %lld = %g",
				       strata_type_name(type), (long long)i, y[i]);
		}
	}
	{
		const double unit = rel_rms(x, y, half - 512), small = rel_rms(x + half, y + half, half);

		printf("%s: relative rms error %.4f (small blocks %.4f), largest error %.3f of "
		       "the block's amax\n", strata_type_name(type), unit, small, amax_err);
		EXPECT(unit <= bounds[_i].rms, "%s: relative rms error %.4f > %.4f",
		       strata_type_name(type), unit, bounds[_i].rms);
		EXPECT(small <= bounds[_i].rms, "%s: small blocks' relative rms error %.4f > %.4f",
		       strata_type_name(type), small, bounds[_i].rms);
		EXPECT(amax_err <= bounds[_i].max, "%s: a value errs by %.3f of its block's amax",
		       strata_type_name(type), amax_err);
	}
	ck_assert_int_eq(strata_quantize(type, x, q, 255), -EINVAL);
	ck_assert_int_eq(strata_quantize(type, NULL, NULL, 0), 0); /* the probe */
	free(q), free(x), free(y);
}
END_TEST

/* ---- the synthetic model's tensors, against llama.cpp ------------------------------- */

/*
 * Every tensor that llama.cpp's syn-qwen3moe-d256-{iq2_xs,iq3_xxs,iq3_s,
 * iq1_m}.gguf hold in an i-quant (attn_q and the experts, IQ3_XXS's attn_q
 * in IQ2_S, two token_embd in IQ3_S), quantised by strata from the F32
 * model: the relative RMS error against the F32 values over all tensors of
 * a type stays within `rms` (about 1.01x what strata reaches) and below
 * that of llama.cpp's bytes (`llama`, quantised with an importance matrix).
 * Under TSan (single-threaded work) one tensor in four.
 */
static const char *const g_files[] = { "iq2_xs", "iq3_xxs", "iq3_s", "iq1_m" };

static const struct {
	uint32_t type;
	int tensors;
	double rms, llama;
} g_real[] = {
	{ STRATA_TYPE_IQ2_XS, 8, 0.2915, 0.3064 },
	{ STRATA_TYPE_IQ2_S, 2, 0.2435, 0.2497 },
	{ STRATA_TYPE_IQ3_XXS, 6, 0.1805, 0.1874 },
	{ STRATA_TYPE_IQ3_S, 10, 0.1316, 0.1648 },
	{ STRATA_TYPE_IQ1_M, 8, 0.4225, 0.4659 },
};

/* Add the squared errors of strata's and of llama.cpp's bytes (tensor tq)
 * against F32 tensor tf to se[0], se[1], and its sum of squares to *sx. */
static void tensor_errors(uint32_t type, const struct strata_gguf_tensor *tf,
			  const struct strata_gguf_tensor *tq, double se[2], double *sx)
{
	const int64_t n = (int64_t)(tf->size / 4);
	const float *x = tf->data;
	float *ys = malloc(sizeof(float) * n), *yl = malloc(sizeof(float) * n);
	uint8_t *q;

	round_trip(type, x, ys, n, &q);
	strata_dequant(tq->type, tq->data, yl, n);
	for (int64_t i = 0; i < n; i++) {
		se[0] += ((double)ys[i] - x[i]) * ((double)ys[i] - x[i]);
		se[1] += ((double)yl[i] - x[i]) * ((double)yl[i] - x[i]);
		*sx += (double)x[i] * x[i];
	}
	free(q), free(ys), free(yl);
}

/* The tensors of `type` in llama.cpp's file `file` into se, sx; how many. */
static int file_errors(uint32_t type, const char *file, const struct strata_gguf *gf,
		       double se[2], double *sx)
{
	struct strata_gguf *gq;
	char rel[128];
	int seen = 0;

	snprintf(rel, sizeof(rel), "models/syn-qwen3moe-d256-%s.gguf", file);
	ck_assert_int_eq(strata_gguf_open(tu_shared(rel), &gq), 0);
	for (int64_t i = 0; i < strata_gguf_n_tensors(gq); i++) {
		const struct strata_gguf_tensor *tq = strata_gguf_tensor(gq, i), *tf;
		char name[80];
		int64_t n = 1;

		if (tq->type != type || !tu_tsan_pick((size_t)seen++, 4, 0))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)tq->name.len, tq->name.s);
		tf = strata_gguf_find_tensor(gf, name);
		for (uint32_t d = 0; d < tq->n_dims; d++)
			n *= tq->ne[d];
		ck_assert_msg(tf && tf->type == STRATA_TYPE_F32 && tf->size == 4 * (uint64_t)n,
			      "%s", name);
		tensor_errors(type, tf, tq, se, sx);
	}
	strata_gguf_close(gq);
	return seen;
}

START_TEST(real_tensors)
{
	const uint32_t type = g_real[_i].type;
	struct strata_gguf *gf;
	double se[2] = { 0, 0 }, sx = 0.0, got, llama;
	int seen = 0;

	for (size_t f = 0; f <= 4; f++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "models/syn-qwen3moe-d256-%s.gguf",
			 f < 4 ? g_files[f] : "f32");
		if (!tu_shared(rel))
			TU_SKIP("../shared/%s is absent", rel);
	}
	/* (tu_shared's buffer now holds the F32 model's path) */
	ck_assert_int_eq(strata_gguf_open(tu_shared("models/syn-qwen3moe-d256-f32.gguf"), &gf), 0);
	for (size_t f = 0; f < 4; f++)
		seen += file_errors(type, g_files[f], gf, se, &sx);
	strata_gguf_close(gf);
	ck_assert_int_eq(seen, g_real[_i].tensors);
	got = sqrt(se[0] / sx);
	llama = sqrt(se[1] / sx);
	printf("%s, %d tensors: relative rms error %.4f, llama.cpp's %.4f\n",
	       strata_type_name(type), seen, got, llama);
	EXPECT(got <= g_real[_i].rms, "%s: relative rms error %.4f > %.4f",
	       strata_type_name(type), got, g_real[_i].rms);
	EXPECT(got < llama, "%s: relative rms error %.4f, llama.cpp's %.4f",
	       strata_type_name(type), got, llama);
	if (!tu_tsan())
		EXPECT(fabs(llama - g_real[_i].llama) < 5e-4, "llama.cpp's error %.4f: "
		       "not the files this test was written for", llama);
}
END_TEST

/* ---- end to end: logits against the F32 model's ------------------------------------ */

static const char *const g_prompts[] = { "once", "story", "mixed" };

/*
 * llama.cpp's mix of file `mix` (its types, tensor by tensor; `type` in
 * place of IQ2_XS when given), every tensor quantised by strata from the
 * F32 model, written to path.
 */
static void write_mix(const char *mix, uint32_t type, const char *path)
{
	struct strata_gguf *gf, *gq;
	struct strata_gguf_writer *w;
	char rel[128];

	snprintf(rel, sizeof(rel), "models/syn-qwen3moe-d256-%s.gguf", mix);
	ck_assert_int_eq(strata_gguf_open(tu_shared(rel), &gq), 0);
	ck_assert_int_eq(strata_gguf_open(tu_shared("models/syn-qwen3moe-d256-f32.gguf"), &gf), 0);
	ck_assert_int_eq(strata_gguf_writer_open(path, &w), 0);
	for (int64_t i = 0; i < strata_gguf_n_kv(gq); i++)
		ck_assert_int_eq(strata_gguf_writer_copy_kv(w, gq, i), 0);
	for (int pass = 0; pass < 2; pass++)
		for (int64_t i = 0; i < strata_gguf_n_tensors(gq); i++) {
			const struct strata_gguf_tensor *t = strata_gguf_tensor(gq, i), *tf;
			const uint32_t ty = type && t->type == STRATA_TYPE_IQ2_XS ? type : t->type;
			const size_t bytes = strata_type_row_bytes(ty, t->ne[0]) *
					     (size_t)(t->ne[1] * t->ne[2]);
			char name[80];
			uint8_t *q;

			snprintf(name, sizeof(name), "%.*s", (int)t->name.len, t->name.s);
			if (pass == 0) {
				ck_assert_int_ge(strata_gguf_writer_add_tensor(w, name, ty, t->n_dims,
									       t->ne), 0);
				continue;
			}
			tf = strata_gguf_find_tensor(gf, name);
			ck_assert(tf && tf->type == STRATA_TYPE_F32);
			q = malloc(bytes);
			ck_assert_int_eq(strata_quantize(ty, tf->data, q, (int64_t)(tf->size / 4)),
					 (int64_t)bytes);
			ck_assert_int_eq(strata_gguf_writer_write(w, q, bytes), 0);
			free(q);
		}
	ck_assert_int_eq(strata_gguf_writer_commit(w), 0);
	strata_gguf_writer_close(w);
	strata_gguf_close(gf);
	strata_gguf_close(gq);
}

/* KL(p || q) of the softmaxes of two logit rows, in double. */
static double kl_row(const float *ref, const float *got, uint32_t n)
{
	double mr = -INFINITY, mg = -INFINITY, zr = 0, zg = 0, kl = 0;

	for (uint32_t i = 0; i < n; i++) {
		mr = fmax(mr, ref[i]);
		mg = fmax(mg, got[i]);
	}
	for (uint32_t i = 0; i < n; i++) {
		zr += exp(ref[i] - mr);
		zg += exp(got[i] - mg);
	}
	for (uint32_t i = 0; i < n; i++) {
		const double lp = ref[i] - mr - log(zr), lq = got[i] - mg - log(zg);

		kl += exp(lp) * (lp - lq);
	}
	return kl;
}

/* KL sums over one prompt: [0] strata, all rows; [1] strata and [2] llama.cpp
 * on the rows whose tokens llama.cpp's quantised model also read (its
 * greedy continuation departs from the F32 model's); rows in n[0], n[1]. */
struct kl_sums {
	double kl[3];
	uint32_t n[2];
};

static void compare_prompt(struct strata_model *m, const char *mix, const char *prompt,
			   struct kl_sums *k)
{
	struct slog f, l;
	struct strata_seq *s;
	struct strata_pool *pool;
	char rel[128], path[1024];
	uint32_t n, same = 0;
	float *out;

	snprintf(rel, sizeof(rel), "golden/syn-qwen3moe-d256-f32.%s.slog", prompt);
	snprintf(path, sizeof(path), "%s", tu_shared(rel));
	ck_assert_int_eq(slog_read(path, &f), 0);
	snprintf(rel, sizeof(rel), "golden/syn-qwen3moe-d256-%s.%s.slog", mix, prompt);
	ck_assert_int_eq(slog_read(tu_shared(rel), &l), 0);
	n = f.n_prompt + f.n_gen;
	ck_assert(l.n_vocab == f.n_vocab && l.n_prompt + l.n_gen == n);
	while (same < n && f.tokens[same] == l.tokens[same])
		same++;
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	s = tu_seq(m, pool, 0, n);
	out = malloc(sizeof(float) * n * f.n_vocab);
	ck_assert_int_eq(strata_forward(s, f.tokens, n, out, 1), 0);
	for (uint32_t r = 0; r < n; r++) {
		const size_t o = (size_t)r * f.n_vocab;
		const double kl = kl_row(f.logits + o, out + o, f.n_vocab);

		k->kl[0] += kl;
		if (r < same) {
			k->kl[1] += kl;
			k->kl[2] += kl_row(f.logits + o, l.logits + o, f.n_vocab);
		}
	}
	k->n[0] += n;
	k->n[1] += same;
	free(out);
	tu_seq_free(s);
	strata_pool_free(pool);
	slog_free(&f);
	slog_free(&l);
}

/* The files end_to_end reads (1), or a counted skip and 0. */
static int have_mix(const char *mix)
{
	char rel[4][128];

	snprintf(rel[0], sizeof(rel[0]), "models/syn-qwen3moe-d256-%s.gguf", mix);
	snprintf(rel[1], sizeof(rel[1]), "models/syn-qwen3moe-d256-f32.gguf");
	for (size_t p = 0; p < 3; p++) {
		snprintf(rel[2], sizeof(rel[2]), "golden/syn-qwen3moe-d256-f32.%s.slog", g_prompts[p]);
		snprintf(rel[3], sizeof(rel[3]), "golden/syn-qwen3moe-d256-%s.%s.slog", mix,
			 g_prompts[p]);
		for (int i = 0; i < 4; i++)
			if (!tu_shared(rel[i])) {
				tu_skip("../shared/%s is absent", rel[i]);
				return 0;
			}
	}
	return 1;
}

/*
 * llama.cpp's mixes (IQ2_XS, IQ3_XXS, IQ3_S, IQ1_M for attn_q and the
 * experts, K-quants elsewhere) with every tensor quantised by strata
 * instead, teacher-forced over the F32 golden tokens of every prompt: the
 * mean KL from the F32 model's logits stays within `kl` (about 1.05x what
 * strata reaches) and, on the rows llama.cpp's own quantised model read,
 * below llama.cpp's (in `llama`; its files used an importance matrix).
 * IQ2_S replaces IQ2_XS in IQ2_XS's mix and must beat llama.cpp's IQ2_XS.
 * (golden/README.md's bound of 1e-2 is for strata against llama.cpp on
 * the same quantised file; this is the quantisation's own loss.)  Not
 * under TSan: its threads are check_quant_golden's.
 */
START_TEST(end_to_end)
{
	static const struct {
		uint32_t type;
		const char *mix;
		double kl, llama;
	} cases[] = {
		{ STRATA_TYPE_IQ2_XS, "iq2_xs", 0.137, 0.1375 },
		{ STRATA_TYPE_IQ2_S, "iq2_xs", 0.131, 0.1375 },
		{ STRATA_TYPE_IQ3_XXS, "iq3_xxs", 0.049, 0.0564 },
		{ STRATA_TYPE_IQ3_S, "iq3_s", 0.040, 0.0468 },
		{ STRATA_TYPE_IQ1_M, "iq1_m", 0.164, 0.1787 },
	};
	const char *dir;
	char path[2048];
	struct strata_model *m;
	struct kl_sums k = { { 0 }, { 0 } };
	double got, same, llama;

	if (tu_tsan())
		TU_SKIP("end_to_end does not run under TSan (its threads are check_quant_golden's)");
	if (!have_mix(cases[_i].mix))
		return;
	dir = tu_tmpdir();
	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof(path), "%s/mix.gguf", dir);
	write_mix(cases[_i].mix, cases[_i].type == STRATA_TYPE_IQ2_S ? cases[_i].type : 0, path);
	ck_assert_int_eq(strata_model_load(path, &m), 0);
	for (size_t p = 0; p < 3; p++)
		compare_prompt(m, cases[_i].mix, g_prompts[p], &k);
	strata_model_free(m);
	tu_rmtree(dir);
	got = k.kl[0] / k.n[0];
	same = k.kl[1] / k.n[1];
	llama = k.kl[2] / k.n[1];
	printf("%s in %s's mix: mean KL %.4f over %u rows; %.4f over the %u that llama.cpp "
	       "read, where its own file has %.4f\n", strata_type_name(cases[_i].type),
	       cases[_i].mix, got, k.n[0], same, k.n[1], llama);
	EXPECT(got <= cases[_i].kl, "%s: mean KL %.4f > %.4f", strata_type_name(cases[_i].type),
	       got, cases[_i].kl);
	EXPECT(same < llama, "%s: mean KL %.4f, llama.cpp's %.4f",
	       strata_type_name(cases[_i].type), same, llama);
	EXPECT(fabs(llama - cases[_i].llama) < 5e-4, "llama.cpp's KL %.4f: not the files this "
	       "test was written for", llama);
}
END_TEST

/* ---- edge cases ---------------------------------------------------------------------- */

/*
 * Blocks that are constant, one value alone, negative only, at 1e-30 (the
 * f16 scale underflows), at 1e9 (it saturates), subnormal, and +-1 in
 * turn: finite values, the lone value's sign kept, and the others within
 * a tolerance of their block's largest magnitude.  (A constant block is
 * no easy case: the search aims the largest value at the top levels, and
 * IQ3's codebooks hold no group of four equal top levels.)
 */
START_TEST(edge_cases)
{
	const uint32_t type = g_types[_i];
	const int nb = 7;
	float x[256 * 7], y[256 * 7], amax[7] = { 0 };
	uint8_t *q;

	g_rng = 0x1234567ull;
	for (int i = 0; i < 256; i++) {
		x[i] = 0.5f;                               /* constant */
		x[256 + i] = i == 100 ? -3.0f : 0.0f;      /* one value */
		x[512 + i] = -fabsf(grnd());               /* negative only */
		x[768 + i] = 1e-30f * grnd();              /* d underflows */
		x[1024 + i] = 1e9f * grnd();               /* d saturates */
		x[1280 + i] = 1e-39f * (float)(i % 7 - 3); /* subnormal */
		x[1536 + i] = i % 2 ? 1.0f : -1.0f;        /* alternating */
	}
	round_trip(type, x, y, 256 * nb, &q);
	for (int i = 0; i < 256 * nb; i++) {
		amax[i / 256] = fmaxf(amax[i / 256], fabsf(x[i]));
		EXPECT(isfinite(y[i]), "%s: block %d value %d = %g", strata_type_name(type),
		       i / 256, i % 256, y[i]);
	}
	EXPECT(y[256 + 100] < -1.5f, "%s: the lone -3 came back as %g", strata_type_name(type),
	       y[356]);
	printf("%s: largest errors of blocks 0, 1, 2, 6:", strata_type_name(type));
	for (int b = 0; b < nb; b++) {
		const double tol = b == 0 || b == 6 ? 0.3 : b == 1 ? 0.25 : 0.4;
		double worst = 0.0;

		if (b == 3 || b == 4 || b == 5)
			continue; /* only finite: f16 cannot scale them */
		for (int i = 256 * b; i < 256 * (b + 1); i++)
			worst = fmax(worst, fabs(y[i] - x[i]) / amax[b]);
		printf(" %.3f", worst);
		EXPECT(worst <= tol, "%s: block %d errs by %.3f of its amax",
		       strata_type_name(type), b, worst);
	}
	printf(" of the block's amax\n");
	free(q);
}
END_TEST

/* ---- the same bytes from every thread and level ------------------------------------ */

struct job {
	const float *x;
	int64_t n;
	int first;                /* the type this thread quantises first */
	uint8_t *out[N_TYPES];
};

static void *quantise_all(void *arg)
{
	struct job *j = arg;

	for (size_t k = 0; k < N_TYPES; k++) {
		const size_t t = ((size_t)j->first + k) % N_TYPES;

		ck_assert_int_eq(strata_quantize(g_types[t], j->x, j->out[t], j->n),
				 (int64_t)strata_type_row_bytes(g_types[t], j->n));
	}
	return NULL;
}

/*
 * Four threads quantise the same rows in every type from the process's
 * first use on (Check forks each test), racing every table's build; then
 * the caller at every SIMD level.  All bytes agree.
 */
START_TEST(threads_and_levels)
{
	enum { NT = 4 };
	const int64_t n = 256 * 8;
	float *x = malloc(sizeof(float) * n);
	struct job jobs[NT + 1];
	pthread_t th[NT];

	g_rng = 0xfeedull;
	for (int64_t i = 0; i < n; i++)
		x[i] = grnd() * (1.0f + (float)(i / 256));
	for (int t = 0; t <= NT; t++) {
		jobs[t] = (struct job){ x, n, t % (int)N_TYPES, { NULL } };
		for (size_t k = 0; k < N_TYPES; k++)
			jobs[t].out[k] = malloc(strata_type_row_bytes(g_types[k], n));
	}
	for (int t = 0; t < NT; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, quantise_all, &jobs[t]), 0);
	for (int t = 0; t < NT; t++)
		ck_assert_int_eq(pthread_join(th[t], NULL), 0);
	for (int l = 0; l <= (int)strata_simd_detect(); l++) {
		ck_assert_int_eq(strata_simd_set(l), 0);
		quantise_all(&jobs[NT]);
		for (int t = 0; t < NT; t++)
			for (size_t k = 0; k < N_TYPES; k++)
				EXPECT(!memcmp(jobs[t].out[k], jobs[NT].out[k],
					       strata_type_row_bytes(g_types[k], n)),
				       "%s: thread %d's bytes differ from %s's",
				       strata_type_name(g_types[k]), t, strata_simd_name(l));
	}
	strata_simd_set(strata_simd_detect());
	for (int t = 0; t <= NT; t++)
		for (size_t k = 0; k < N_TYPES; k++)
			free(jobs[t].out[k]);
	free(x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("iq_quant");
	TCase *tc = tcase_create("core");

	setvbuf(stdout, NULL, _IOLBF, 0); /* a failing test exits without flushing */
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, gaussian_round_trip, 0, N_TYPES);
	tcase_add_loop_test(tc, edge_cases, 0, N_TYPES);
	tcase_add_test(tc, threads_and_levels);
	tcase_add_loop_test(tc, real_tensors, 0, N_TYPES);
	tcase_add_loop_test(tc, end_to_end, 0, N_TYPES);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
