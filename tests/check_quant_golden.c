/*
 * check_quant_golden.c - quantised models against llama.cpp's logits
 * (../shared/golden/MODEL.PROMPT.slog), teacher-forced over the golden
 * tokens, at every SIMD level: mean KL(reference || strata) over all rows
 * within the model's bound (golden/README.md: 2e-3 for 8- and 6-bit
 * types, 1e-2 for the others), and the same argmax wherever the
 * reference's top two logits are more than 0.25 apart.  One batch per
 * prompt and token by token (the GEMV path), at each SIMD level (one per
 * ctest run: check_quant_golden, .avx2, .avx512; testutil.h).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu/kernels.h"
#include "model/model.h"
#include "slog.h"
#include "testutil.h"

/* One line per model: the file stem under models/ and golden/, and its
 * mean-KL bound. */
static const struct {
	const char *model;
	double kl_max;
} g_models[] = {
	{ "syn-qwen3moe-d256-q8_0", 2e-3 },
	{ "syn-qwen3moe-d256-q6_k", 2e-3 },
	{ "syn-qwen3moe-d256-q4_k_m", 1e-2 },
	{ "syn-qwen3moe-d256-q4_0", 1e-2 },
	{ "syn-qwen3moe-d256-iq4_nl", 1e-2 },
	{ "syn-qwen3moe-d256-q2_k", 1e-2 },
	{ "syn-qwen3moe-d256-iq2_xs", 1e-2 },
	{ "syn-qwen3moe-d256-iq3_xxs", 1e-2 },
	{ "syn-qwen3moe-d256-iq3_s", 1e-2 },
	{ "syn-qwen3moe-d256-iq1_m", 1e-2 },
};
#define N_MODELS (sizeof(g_models) / sizeof(g_models[0]))
static const char *const g_prompts[] = { "once", "story", "mixed" };

struct cmp {
	double mean_kl;
	uint32_t rows, decided, disagree;
};

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
		double lp = ref[i] - mr - log(zr), lq = got[i] - mg - log(zg);

		kl += exp(lp) * (lp - lq);
	}
	return kl;
}

static uint32_t argmax(const float *row, uint32_t n)
{
	uint32_t best = 0;

	for (uint32_t i = 1; i < n; i++)
		if (row[i] > row[best])
			best = i;
	return best;
}

/* Run the golden tokens through `model` in chunks of `chunk` and compare. */
static int compare(const char *model, const char *prompt, uint32_t chunk,
		   struct cmp *c)
{
	char rel[256], gp[1024];
	const char *p, *mp;
	struct slog g;
	struct strata_model *m;
	struct strata_seq *s;
	struct strata_pool *pool;
	float *out;
	uint32_t n;

	/* tu_shared answers in a static buffer: keep the first path */
	snprintf(rel, sizeof(rel), "golden/%s.%s.slog", model, prompt);
	p = tu_shared(rel);
	if (!p)
		return -1;
	snprintf(gp, sizeof(gp), "%s", p);
	snprintf(rel, sizeof(rel), "models/%s.gguf", model);
	mp = tu_shared(rel);
	if (!mp)
		return -1;
	ck_assert_int_eq(slog_read(gp, &g), 0);
	ck_assert_int_eq(strata_model_load(mp, &m), 0);
	ck_assert_uint_eq(m->hp.n_vocab, g.n_vocab);
	n = g.n_prompt + g.n_gen;
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	s = tu_seq(m, pool, 0, chunk);
	out = malloc((size_t)n * g.n_vocab * sizeof(float));
	for (uint32_t i = 0; i < n; i += chunk) {
		uint32_t k = n - i < chunk ? n - i : chunk;

		ck_assert_int_eq(strata_forward(s, g.tokens + i, k,
						out + (size_t)i * g.n_vocab, 1), 0);
	}
	c->mean_kl = 0;
	c->rows = n;
	c->decided = c->disagree = 0;
	for (uint32_t r = 0; r < n; r++) {
		const float *ref = g.logits + (size_t)r * g.n_vocab;
		const float *got = out + (size_t)r * g.n_vocab;
		double kl = kl_row(ref, got, g.n_vocab);

		c->mean_kl += isnan(kl) ? INFINITY : kl / n;
		if (slog_top2_gap(ref, g.n_vocab) > 0.25f) {
			c->decided++;
			c->disagree += argmax(ref, g.n_vocab) != argmax(got, g.n_vocab);
		}
	}
	free(out);
	tu_seq_free(s);
	strata_pool_free(pool);
	strata_model_free(m);
	slog_free(&g);
	return 0;
}

static void check_model_at(size_t mi, enum strata_simd level, uint32_t chunk)
{
	int compared = 0;

	for (size_t pi = 0; pi < 3; pi++) {
		struct cmp c;

		if (!tu_tsan_pick(mi + (size_t)level, 3, pi))
			continue; /* TSan: one prompt per model and level (testutil.h) */

		ck_assert_msg(compare(g_models[mi].model, g_prompts[pi], chunk, &c) == 0,
			      "../shared/golden/%s.%s.slog is absent", g_models[mi].model,
			      g_prompts[pi]);
		compared++;
		printf("%s %s.%s chunk %u: mean KL %.2e (bound %.0e), argmax differs "
		       "on %u of %u decided rows\n", strata_simd_name(level),
		       g_models[mi].model, g_prompts[pi], chunk, c.mean_kl,
		       g_models[mi].kl_max, c.disagree, c.decided);
		ck_assert_msg(c.mean_kl <= g_models[mi].kl_max,
			      "%s %s.%s (chunk %u): mean KL %.3e > %.0e",
			      strata_simd_name(level), g_models[mi].model, g_prompts[pi],
			      chunk, c.mean_kl, g_models[mi].kl_max);
		ck_assert_msg(c.disagree == 0, "%s %s.%s (chunk %u): argmax differs on %u "
			      "rows where the reference is decided",
			      strata_simd_name(level), g_models[mi].model, g_prompts[pi],
			      chunk, c.disagree);
	}
	ck_assert_int_gt(compared, 0);
}

START_TEST(golden_quantised)
{
	const size_t mi = (size_t)_i;
	char rel[256];
	int l = tu_simd_level();

	if (l < 0)
		return;
	snprintf(rel, sizeof(rel), "models/%s.gguf", g_models[mi].model);
	if (!tu_shared(rel))
		TU_SKIP("../shared/%s is absent", rel);
	check_model_at(mi, (enum strata_simd)l, 512);
	check_model_at(mi, (enum strata_simd)l, 1);
	strata_simd_set(strata_simd_detect());
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quant_golden");
	TCase *tc = tcase_create("core");

	if (!tu_shared("models/syn-qwen3moe-d256-f32.gguf")) {
		printf("SKIP: ../shared/models is absent\n");
		return STRATA_TEST_SKIP;
	}
	tcase_set_tags(tc, "simd");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, golden_quantised, 0, (int)N_MODELS);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
