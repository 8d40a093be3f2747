/*
 * check_model.c - the CPU forward pass against llama.cpp's logits
 * (../shared/golden/MODEL.PROMPT.slog), teacher-forced, at every SIMD level, in one
 * batch and token by token, with 1 and 2 threads; and model-load refusals.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu/kernels.h"
#include "model/model.h"
#include "slog.h"
#include "testutil.h"

static const char *const g_models[] = {
	"stories260K", "syn-llama-f32", "syn-qwen3moe-f32", "syn-glm4moe-f32",
	"syn-qwen3moe-d256-f32",
};
#define N_MODELS (sizeof(g_models) / sizeof(g_models[0]))
static const char *const g_prompts[] = { "once", "story", "mixed" };

/*
 * Feed the golden tokens through the model in chunks of `chunk` tokens and
 * return the largest |logit difference| over all rows.
 */
static double max_diff(const char *model, const char *prompt, uint32_t chunk, int threads)
{
	char rel[256];
	struct slog g;
	struct strata_model *m;
	struct strata_seq *s;
	struct strata_pool *pool;
	uint32_t n;
	float *out;
	double worst = 0.0;

	snprintf(rel, sizeof(rel), "golden/%s.%s.slog", model, prompt);
	ck_assert_int_eq(slog_read(tu_shared_or_skip(rel), &g), 0);
	snprintf(rel, sizeof(rel), "models/%s.gguf", model);
	ck_assert_int_eq(strata_model_load(tu_shared_or_skip(rel), &m), 0);
	ck_assert_uint_eq(m->hp.n_vocab, g.n_vocab);
	n = g.n_prompt + g.n_gen;
	ck_assert_int_eq(strata_pool_create(threads, &pool), 0);
	s = tu_seq(m, pool, 0, chunk);
	out = malloc((size_t)n * g.n_vocab * sizeof(float));
	for (uint32_t i = 0; i < n; i += chunk) {
		uint32_t k = n - i < chunk ? n - i : chunk;

		ck_assert_int_eq(strata_forward(s, g.tokens + i, k,
						out + (size_t)i * g.n_vocab, 1), 0);
	}
	ck_assert_uint_eq(strata_seq_pos(s), n);
	for (size_t i = 0; i < (size_t)n * g.n_vocab; i++) {
		double d = fabs((double)out[i] - g.logits[i]);

		if (!(d <= worst)) /* also catches NaN */
			worst = isnan(d) ? INFINITY : d;
	}
	free(out);
	tu_seq_free(s);
	strata_pool_free(pool);
	strata_model_free(m);
	slog_free(&g);
	return worst;
}

/* At the SIMD level of this ctest run (check_model, .avx2, .avx512: testutil.h). */
START_TEST(golden)
{
	int l = tu_simd_level();
	enum strata_simd level = (enum strata_simd)l;

	if (l < 0)
		return;
	for (size_t mi = 0; mi < N_MODELS; mi++)
		for (size_t pi = 0; pi < 3; pi++) {
			if (!tu_tsan_pick(mi + (size_t)level, 3, pi))
				continue; /* TSan: one prompt per model and level */
			double batch = max_diff(g_models[mi], g_prompts[pi], 512, 2);
			double step = max_diff(g_models[mi], g_prompts[pi], 1, 1);
			double odd = max_diff(g_models[mi], g_prompts[pi], 7, 2);

			printf("%s %s.%s: max |diff| batch %.2e, token-by-token %.2e, chunks of 7 "
			       "%.2e\n", strata_simd_name(level), g_models[mi], g_prompts[pi], batch,
			       step, odd);
			ck_assert_msg(batch <= 1e-3 && step <= 1e-3 && odd <= 1e-3,
				      "%s %s.%s exceeds 1e-3", strata_simd_name(level),
				      g_models[mi], g_prompts[pi]);
		}
	strata_simd_set(strata_simd_detect());
}
END_TEST

START_TEST(context_overflow)
{
	struct strata_model *m;
	struct strata_seq *s;
	struct strata_pool *pool;
	int32_t toks[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	float *logits;

	ck_assert_int_eq(strata_model_load(tu_shared_or_skip("models/stories260K.gguf"), &m), 0);
	ck_assert_int_eq(strata_pool_create(1, &pool), 0);
	s = tu_seq(m, pool, 6, 8);
	logits = malloc(m->hp.n_vocab * sizeof(float));
	ck_assert_uint_eq(strata_seq_max_batch(s), 6);
	ck_assert_int_eq(strata_forward(s, toks, 4, logits, 0), 0);
	ck_assert_int_eq(strata_forward(s, toks, 3, logits, 0), -ENOSPC);
	ck_assert_uint_eq(strata_seq_pos(s), 4); /* unchanged by the refusal */
	toks[0] = 512;
	ck_assert_int_eq(strata_forward(s, toks, 1, logits, 0), -EINVAL);
	toks[0] = -1;
	ck_assert_int_eq(strata_forward(s, toks, 1, logits, 0), -EINVAL);
	ck_assert_int_eq(strata_seq_truncate(s, 2), 0);
	ck_assert_int_eq(strata_seq_truncate(s, 3), -EINVAL);
	free(logits);
	tu_seq_free(s);
	strata_pool_free(pool);
	strata_model_free(m);
}
END_TEST

/* A truncated sequence continues exactly as if the tail had never been fed. */
START_TEST(truncate_replays)
{
	struct strata_model *m;
	struct strata_seq *s;
	struct strata_pool *pool;
	int32_t a[5] = { 1, 403, 407, 261, 378 }, b[2] = { 300, 301 };
	float *l1, *l2;

	ck_assert_int_eq(strata_model_load(tu_shared_or_skip("models/stories260K.gguf"), &m), 0);
	ck_assert_int_eq(strata_pool_create(2, &pool), 0);
	s = tu_seq(m, pool, 64, 8);
	l1 = malloc(m->hp.n_vocab * sizeof(float));
	l2 = malloc(m->hp.n_vocab * sizeof(float));
	ck_assert_int_eq(strata_forward(s, a, 5, l1, 0), 0);
	ck_assert_int_eq(strata_forward(s, b, 2, l1, 0), 0);
	ck_assert_int_eq(strata_seq_truncate(s, 5), 0);
	ck_assert_int_eq(strata_forward(s, b, 2, l2, 0), 0);
	for (uint32_t i = 0; i < m->hp.n_vocab; i++)
		ck_assert_float_eq(l1[i], l2[i]);
	free(l1);
	free(l2);
	tu_seq_free(s);
	strata_pool_free(pool);
	strata_model_free(m);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("model");
	TCase *simd = tcase_create("golden"), *tc = tcase_create("seq");

	tcase_set_tags(simd, "simd");
	tcase_set_timeout(simd, 600);
	tcase_add_test(simd, golden);
	suite_add_tcase(su, simd);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, context_overflow);
	tcase_add_test(tc, truncate_replays);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
