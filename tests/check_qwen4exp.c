/*
 * check_qwen4exp.c - the qwen4exp forward pass (hyper-connections, Gated
 * DeltaNet in its tiled form, gated attention with the QSA indexer, MoE
 * with a gated shared expert, the PLE n-gram fusion) against llama.cpp's
 * logits, in one batch, in chunks and token by token; turns through a
 * snapshot; and the load-time refusals of a malformed model.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "model/model.h"
#include "slog.h"
#include "testutil.h"

static const char *const g_models[] = { "syn-qwen4exp-f32", "syn-qwen4exp-r4k16-f32",
					 "syn-qwen4exp-mtp-f32" };
static const char *const g_prompts[] = { "once", "story", "mixed" };

struct rig {
	struct strata_model *m;
	struct strata_seq *s;
	struct strata_pool *pool;
};

static void rig_open(struct rig *r, const char *model, uint32_t max_batch, int threads)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "models/%s.gguf", model);
	ck_assert_int_eq(strata_model_load(tu_shared_or_skip(rel), &r->m), 0);
	ck_assert_int_eq(strata_pool_create(threads, &r->pool), 0);
	r->s = tu_seq(r->m, r->pool, 0, max_batch);
}

static void rig_close(struct rig *r)
{
	tu_seq_free(r->s);
	strata_pool_free(r->pool);
	strata_model_free(r->m);
}

/* Feed n tokens in pieces of `chunk`, every row's logits into out (n x n_vocab). */
static void feed(struct rig *r, const int32_t *tok, uint32_t n, uint32_t chunk, float *out)
{
	for (uint32_t i = 0; i < n; i += chunk) {
		uint32_t k = n - i < chunk ? n - i : chunk;

		ck_assert_int_eq(strata_forward(r->s, tok + i, k,
						out + (size_t)i * r->m->hp.n_vocab, 1), 0);
	}
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
	double worst = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);

		if (!(d <= worst)) /* also catches NaN */
			worst = isnan(d) ? INFINITY : d;
	}
	return worst;
}

static void read_golden(const char *model, const char *prompt, struct slog *g)
{
	char rel[160];

	snprintf(rel, sizeof(rel), "golden/%s.%s.slog", model, prompt);
	ck_assert_int_eq(slog_read(tu_shared_or_skip(rel), g), 0);
}

/* ---- (1) golden logits ----------------------------------------------------------- */

static double golden_diff(const char *model, const char *prompt, uint32_t chunk, int threads)
{
	struct slog g;
	struct rig r;
	uint32_t n;
	float *out;
	double d;

	read_golden(model, prompt, &g);
	rig_open(&r, model, chunk, threads);
	ck_assert_uint_eq(r.m->hp.n_vocab, g.n_vocab);
	n = g.n_prompt + g.n_gen;
	out = malloc((size_t)n * g.n_vocab * sizeof(float));
	feed(&r, g.tokens, n, chunk, out);
	ck_assert_uint_eq(strata_seq_pos(r.s), n);
	d = max_abs_diff(out, g.logits, (size_t)n * g.n_vocab);
	free(out);
	rig_close(&r);
	slog_free(&g);
	return d;
}

/* At the SIMD level of this ctest run (check_qwen4exp, .avx2, .avx512: testutil.h). */
START_TEST(golden)
{
	int l = tu_simd_level();
	enum strata_simd level = (enum strata_simd)l;

	if (l < 0)
		return;
	for (size_t mi = 0; mi < sizeof(g_models) / sizeof(*g_models); mi++)
		for (size_t pi = 0; pi < 3; pi++) {
			double batch = golden_diff(g_models[mi], g_prompts[pi], 512, 2);
			double step = golden_diff(g_models[mi], g_prompts[pi], 1, 1);
			double odd = golden_diff(g_models[mi], g_prompts[pi], 7, 2);

			printf("%s %s.%s: max |diff| batch %.2e, token-by-token %.2e, chunks of 7 "
			       "%.2e\n", strata_simd_name(level), g_models[mi], g_prompts[pi], batch,
			       step, odd);
			ck_assert_msg(batch <= 1e-3 && step <= 1e-3 && odd <= 1e-3,
				      "%s %s.%s exceeds 1e-3", strata_simd_name(level), g_models[mi],
				      g_prompts[pi]);
		}
	strata_simd_set(strata_simd_detect());
}
END_TEST

int main(void)
{
	Suite *su = suite_create("qwen4exp");
	TCase *tc = tcase_create("qwen4exp"), *simd = tcase_create("golden");

	tcase_set_tags(simd, "simd");
	tcase_set_timeout(simd, 600);
	tcase_add_test(simd, golden);
	suite_add_tcase(su, simd);
	tcase_set_timeout(tc, 600);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
