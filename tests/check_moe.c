/*
 * check_moe.c - expert routing (strata_moe_route, core/model/moe.c) against
 * cases worked out by hand: softmax gating (qwen3moe) and sigmoid gating with
 * a selection bias (glm4moe), top-k order, renormalisation with llama.cpp's
 * clamp of a tiny sum, the weight scale, and the order of the top k among
 * hundreds or thousands of experts with ties.  The expected numbers are the
 * closed forms in the comments, evaluated in double precision.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/moe.h"
#include "testutil.h"

#define TOL 1e-6f

static struct strata_hparams hp(enum strata_gating gating, uint32_t n_expert, uint32_t k,
				int norm, float scale)
{
	struct strata_hparams h;

	memset(&h, 0, sizeof(h));
	h.gating = gating;
	h.n_expert = n_expert;
	h.n_expert_used = k;
	h.expert_weights_norm = norm;
	h.expert_weights_scale = scale;
	return h;
}

/* Route and compare the chosen experts, in order, and their weights. */
static void route(const struct strata_hparams *h, const float *bias, const float *logits_in,
		  const int32_t *want_e, const float *want_w)
{
	float logits[16], w[16];
	int32_t e[16];

	ck_assert(h->n_expert <= 16 && h->n_expert_used <= 16);
	memcpy(logits, logits_in, sizeof(float) * h->n_expert);
	for (uint32_t j = 0; j < h->n_expert_used; j++)
		e[j] = -7, w[j] = NAN;
	strata_moe_route(h, bias, logits, e, w);
	for (uint32_t j = 0; j < h->n_expert_used; j++) {
		ck_assert_msg(e[j] == want_e[j], "choice %u: expert %d, want %d", j, e[j],
			      want_e[j]);
		ck_assert_msg(fabsf(w[j] - want_w[j]) <= TOL * fmaxf(1.0f, fabsf(want_w[j])),
			      "choice %u (expert %d): weight %.9g, want %.9g", j, e[j], w[j],
			      want_w[j]);
	}
}

/* softmax([1, 2, 3, 0]) = e^i / (e + e^2 + e^3 + 1): 0.0871443, 0.2368828, 0.6439143, 0.0320586 */
static const float g_logits4[4] = { 1, 2, 3, 0 };

START_TEST(softmax_top2)
{
	struct strata_hparams h = hp(STRATA_GATING_SOFTMAX, 4, 2, 0, 1.0f);
	const int32_t e[2] = { 2, 1 };
	const float w[2] = { 0.64391426f, 0.23688282f };

	route(&h, NULL, g_logits4, e, w);
}
END_TEST

/* Renormalised over the two chosen: e^3 / (e^3 + e^2) = 1 / (1 + e^-1). */
START_TEST(softmax_top2_norm)
{
	struct strata_hparams h = hp(STRATA_GATING_SOFTMAX, 4, 2, 1, 1.0f);
	const int32_t e[2] = { 2, 1 };
	const float w[2] = { 0.73105858f, 0.26894142f };

	route(&h, NULL, g_logits4, e, w);
}
END_TEST

/* The scale multiplies the (unnormalised) probabilities. */
START_TEST(softmax_scale)
{
	struct strata_hparams h = hp(STRATA_GATING_SOFTMAX, 4, 2, 0, 2.0f);
	const int32_t e[2] = { 2, 1 };
	const float w[2] = { 1.28782852f, 0.47376564f };

	route(&h, NULL, g_logits4, e, w);
}
END_TEST

/* Every expert chosen: all of them, most probable first; the logits are
 * left holding the probabilities. */
START_TEST(softmax_all_in_order)
{
	struct strata_hparams h = hp(STRATA_GATING_SOFTMAX, 5, 5, 0, 1.0f);
	const float in[5] = { 0.5f, -1.0f, 2.0f, 0.25f, 1.5f };
	/* e^(x_i) / sum e^(x_j) */
	const float p[5] = { 0.10867319f, 0.02424827f, 0.48703943f, 0.08463476f, 0.29540435f };
	const int32_t e[5] = { 2, 4, 0, 3, 1 };
	const float w[5] = { p[2], p[4], p[0], p[3], p[1] };
	float logits[5], wo[5];
	int32_t eo[5];

	route(&h, NULL, in, e, w);
	memcpy(logits, in, sizeof(in));
	strata_moe_route(&h, NULL, logits, eo, wo);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(fabsf(logits[i] - p[i]) <= TOL, "logits[%d] = %.9g, want %.9g", i,
			      logits[i], p[i]);
}
END_TEST

/*
 * Sigmoid gating with a selection bias (glm4moe, DeepSeek-V3): sigmoid([0, 1,
 * -1, 2]) = 0.5, 0.7310586, 0.2689414, 0.8807971; plus the bias [0.5, 0, 1,
 * -0.8] the scores are 1.0, 0.7310586, 1.2689414, 0.0807971, so experts 2 and 0
 * are chosen (without the bias: 3 and 1), and weighed by their sigmoids alone.
 */
static const float g_sig_logits[4] = { 0, 1, -1, 2 };
static const float g_bias[4] = { 0.5f, 0, 1.0f, -0.8f };

START_TEST(sigmoid_bias_chooses_not_weighs)
{
	struct strata_hparams h = hp(STRATA_GATING_SIGMOID, 4, 2, 0, 1.0f);
	const int32_t e[2] = { 2, 0 }, e_nobias[2] = { 3, 1 };
	const float w[2] = { 0.26894142f, 0.5f }, w_nobias[2] = { 0.88079708f, 0.73105858f };

	route(&h, g_bias, g_sig_logits, e, w);
	route(&h, NULL, g_sig_logits, e_nobias, w_nobias);
}
END_TEST

/* Normalised: 0.2689414 / 0.7689414 and 0.5 / 0.7689414; then scaled by 2.5. */
START_TEST(sigmoid_norm_scale)
{
	struct strata_hparams h = hp(STRATA_GATING_SIGMOID, 4, 2, 1, 1.0f);
	const int32_t e[2] = { 2, 0 };
	const float w[2] = { 0.34975541f, 0.65024459f };
	const float w_scaled[2] = { 0.87438852f, 1.62561148f };

	route(&h, g_bias, g_sig_logits, e, w);
	h.expert_weights_scale = 2.5f;
	route(&h, g_bias, g_sig_logits, e, w_scaled);
}
END_TEST

/*
 * A sum of chosen weights below 2^-14 is clamped to 2^-14 before dividing,
 * as llama.cpp does, so tiny weights stay tiny instead of becoming ~1:
 * sigmoid(-30) / 2^-14 = 1.5331529e-9, sigmoid(-31) / 2^-14 = 5.6401545e-10.
 */
START_TEST(norm_clamps_tiny_sum)
{
	struct strata_hparams h = hp(STRATA_GATING_SIGMOID, 4, 2, 1, 1.0f);
	const float in[4] = { -40, -30, -50, -31 };
	const int32_t e[2] = { 1, 3 };
	const float w[2] = { 1.5331529e-9f, 5.6401545e-10f };
	float logits[4], wo[2];
	int32_t eo[2];

	memcpy(logits, in, sizeof(in));
	strata_moe_route(&h, NULL, logits, eo, wo);
	ck_assert_int_eq(eo[0], e[0]);
	ck_assert_int_eq(eo[1], e[1]);
	for (int j = 0; j < 2; j++)
		ck_assert_msg(fabsf(wo[j] - w[j]) <= 1e-5f * w[j], "weight %d: %.9g, want %.9g", j,
			      wo[j], w[j]);
}
END_TEST

/* A chosen expert is never chosen twice, whatever the scores. */
START_TEST(distinct_choices)
{
	struct strata_hparams h = hp(STRATA_GATING_SOFTMAX, 8, 8, 1, 1.0f);
	float logits[8];
	float w[8], sum = 0;
	int32_t e[8];
	int seen[8] = { 0 };

	for (int i = 0; i < 8; i++)
		logits[i] = (i % 2) ? 100.0f : -100.0f; /* four near-certain, four near-zero */
	strata_moe_route(&h, NULL, logits, e, w);
	for (int j = 0; j < 8; j++) {
		ck_assert(e[j] >= 0 && e[j] < 8);
		ck_assert_msg(!seen[e[j]]++, "expert %d chosen twice", e[j]);
		ck_assert_msg(j < 4 ? e[j] % 2 == 1 : e[j] % 2 == 0, "choice %d: expert %d", j,
			      e[j]);
		sum += w[j];
	}
	ck_assert(fabsf(sum - 1.0f) <= TOL);
}
END_TEST

/*
 * Many experts (qwen3next has 512; past 4096 the chosen ones are not kept
 * as bits): the top k, in order, are the k best scores with ties to the
 * lower index, as a plain selection over the scores finds them.
 */
static void wide(uint32_t ne, uint32_t k, enum strata_gating gating, int with_bias)
{
	struct strata_hparams h = hp(gating, ne, k, 0, 1.0f);
	float *logits = malloc(sizeof(float) * ne), *score = malloc(sizeof(float) * ne);
	float *bias = malloc(sizeof(float) * ne), w[80];
	int32_t e[80];
	uint32_t seed = 12345u + ne;

	ck_assert(logits && score && bias && k <= 80);
	for (uint32_t i = 0; i < ne; i++) {
		seed = seed * 1664525u + 1013904223u;
		logits[i] = (float)(seed >> 24) / 32.0f; /* 256 levels: many ties */
		bias[i] = (i % 3) ? 0.0f : 0.25f;
	}
	strata_moe_route(&h, with_bias ? bias : NULL, logits, e, w);
	/* logits now hold the probabilities the choice was made on */
	for (uint32_t i = 0; i < ne; i++)
		score[i] = logits[i] + (with_bias ? bias[i] : 0.0f);
	for (uint32_t j = 0; j < k; j++) {
		uint32_t best = 0;

		for (uint32_t i = 1; i < ne; i++)
			if (score[i] > score[best])
				best = i;
		ck_assert_msg(e[j] == (int32_t)best, "%u experts, choice %u: %d, want %u", ne, j,
			      e[j], best);
		score[best] = -INFINITY;
	}
	free(logits);
	free(score);
	free(bias);
}

/*
 * A NaN router logit (a broken model) is passed over unless it is the first
 * candidate of a pick: sigmoid([1, NaN, 3, 2]) chooses 2 then 3, and with
 * the NaN first, the NaN expert 0 first.  The choice stays defined and
 * distinct (the one-pass list hands NaN scores to the selection passes).
 */
START_TEST(nan_logit_choice)
{
	struct strata_hparams h = hp(STRATA_GATING_SIGMOID, 4, 2, 0, 1.0f);
	float a[4] = { 1.0f, NAN, 3.0f, 2.0f }, b[4] = { NAN, 1.0f, 3.0f, 2.0f }, w[2];
	int32_t e[2];

	strata_moe_route(&h, NULL, a, e, w);
	ck_assert_int_eq(e[0], 2);
	ck_assert_int_eq(e[1], 3);
	strata_moe_route(&h, NULL, b, e, w);
	ck_assert_int_eq(e[0], 0);
	ck_assert_int_eq(e[1], 2);
}
END_TEST

START_TEST(wide_routing_in_order)
{
	wide(64, 8, STRATA_GATING_SOFTMAX, 0);
	wide(65, 8, STRATA_GATING_SOFTMAX, 0);
	wide(512, 10, STRATA_GATING_SOFTMAX, 0);
	wide(512, 8, STRATA_GATING_SIGMOID, 1);
	wide(4096, 16, STRATA_GATING_SIGMOID, 1);
	wide(5000, 8, STRATA_GATING_SOFTMAX, 0);
	wide(200, 70, STRATA_GATING_SIGMOID, 1); /* past one pass's list of 64 */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("moe");
	TCase *tc = tcase_create("route");

	tcase_add_test(tc, softmax_top2);
	tcase_add_test(tc, softmax_top2_norm);
	tcase_add_test(tc, softmax_scale);
	tcase_add_test(tc, softmax_all_in_order);
	tcase_add_test(tc, sigmoid_bias_chooses_not_weighs);
	tcase_add_test(tc, sigmoid_norm_scale);
	tcase_add_test(tc, norm_clamps_tiny_sum);
	tcase_add_test(tc, distinct_choices);
	tcase_add_test(tc, wide_routing_in_order);
	tcase_add_test(tc, nan_logit_choice);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
