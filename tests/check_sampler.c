/*
 * check_sampler.c - the sampling chain against hand-made distributions.
 *
 * Distribution tests draw 20000 tokens with a fixed seed and check that only
 * the ids the filters must keep appear, and that their frequencies match the
 * renormalised probabilities (Pearson chi-square below the 0.1% critical
 * value).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sample/sampler.h"
#include "testutil.h"

#define DRAWS 20000

static struct strata_sampler_params defaults(void)
{
	return (struct strata_sampler_params){
		.temp = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f,
		.repeat_penalty = 1.0f, .repeat_last_n = 64, .seed = 1234,
	};
}

static struct strata_sampler *make(const struct strata_sampler_params *p, int32_t n)
{
	struct strata_sampler *s = NULL;

	ck_assert_int_eq(strata_sampler_create(p, n, &s), 0);
	ck_assert_ptr_nonnull(s);
	return s;
}

/* Logits whose softmax is exactly probs (up to a constant). */
static void logits_of(const double *probs, float *logits, int n)
{
	for (int i = 0; i < n; i++)
		logits[i] = probs[i] > 0 ? (float)log(probs[i]) : -INFINITY;
}

/* chi-square 0.1% critical values for 1..6 degrees of freedom */
static const double chi2_crit[] = { 0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46 };

/*
 * Draw DRAWS tokens and compare with want[] (0 = must never appear; others
 * are renormalised over the allowed set).
 */
static void check_drawn(const struct strata_sampler_params *p, const float *logits, int n,
			const double *want, int32_t draft)
{
	struct strata_sampler *s = make(p, n);
	int counts[64] = { 0 }, allowed = 0, kept = 0;
	double total = 0, chi2 = 0;

	ck_assert_int_le(n, 64);
	for (int i = 0; i < DRAWS; i++) {
		int acc = -1;
		int32_t t = draft < 0 ? strata_sampler_sample(s, logits)
				      : strata_sampler_verify(s, logits, draft, &acc);

		ck_assert_int_ge(t, 0);
		ck_assert_int_lt(t, n);
		ck_assert(draft < 0 || acc == (t == draft));
		kept += acc == 1;
		counts[t]++;
	}
	for (int i = 0; i < n; i++)
		total += want[i];
	if (draft >= 0) { /* kept with probability p(draft): within 5 sigma of it */
		double pd = want[draft] / total, sd = sqrt(DRAWS * pd * (1 - pd));

		ck_assert_msg(fabs(kept - DRAWS * pd) <= 5 * sd + 1e-9,
			      "draft %d kept %d times, expected %.0f", draft, kept, DRAWS * pd);
	}
	for (int i = 0; i < n; i++) {
		double e = DRAWS * want[i] / total;

		if (want[i] == 0) {
			ck_assert_msg(counts[i] == 0, "id %d is filtered out but drawn %d times", i,
				      counts[i]);
			continue;
		}
		ck_assert_msg(counts[i] > 0, "id %d is allowed but never drawn", i);
		chi2 += (counts[i] - e) * (counts[i] - e) / e;
		allowed++;
	}
	ck_assert_int_ge(allowed, 2);
	ck_assert_msg(chi2 < chi2_crit[allowed - 1], "chi-square %.2f >= %.2f (df %d)", chi2,
		      chi2_crit[allowed - 1], allowed - 1);
	strata_sampler_free(s);
}

static void check_distribution(const struct strata_sampler_params *p, const float *logits,
			       int n, const double *want)
{
	check_drawn(p, logits, n, want, -1);
}

START_TEST(greedy_picks_argmax)
{
	struct strata_sampler_params p = defaults();
	float l[8] = { 0.1f, 2.0f, -3.0f, 5.5f, 5.4f, 0, 1, -INFINITY };
	float tie[4] = { 1.0f, 3.0f, 3.0f, 2.0f };
	struct strata_sampler *s;

	p.temp = 0;
	s = make(&p, 8);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(strata_sampler_sample(s, l), 3);
	strata_sampler_free(s);
	s = make(&p, 4);
	ck_assert_int_eq(strata_sampler_sample(s, tie), 1); /* ties -> lowest id */
	strata_sampler_free(s);
	p.temp = -1; /* negative is greedy too */
	s = make(&p, 8);
	ck_assert_int_eq(strata_sampler_sample(s, l), 3);
	strata_sampler_free(s);
}
END_TEST

static void draw_seq(uint64_t seed, int32_t *out, int n)
{
	struct strata_sampler_params p = defaults();
	float l[32];
	struct strata_sampler *s;

	for (int i = 0; i < 32; i++)
		l[i] = (float)((i * 7) % 5) * 0.3f;
	p.seed = seed;
	p.top_k = 20;
	p.top_p = 0.98f;
	s = make(&p, 32);
	for (int i = 0; i < n; i++)
		out[i] = strata_sampler_sample(s, l);
	ck_assert_uint_eq(strata_sampler_seed(s), seed);
	strata_sampler_free(s);
}

START_TEST(seed_reproducible)
{
	int32_t a[64], b[64], c[64];

	draw_seq(42, a, 64);
	draw_seq(42, b, 64);
	draw_seq(43, c, 64);
	ck_assert_mem_eq(a, b, sizeof(a));
	ck_assert_msg(memcmp(a, c, sizeof(a)) != 0, "seeds 42 and 43 gave the same 64 tokens");
}
END_TEST

/*
 * The generator is ours, so these ids hold on every machine.  With four equal
 * logits the draw is floor(4u), the top two bits of each xoshiro256** output
 * seeded by splitmix64(7); the list was computed with an independent
 * (Python) implementation of both.
 */
START_TEST(seed_golden_sequence)
{
	static const int32_t want[16] = { 2, 1, 3, 3, 3, 3, 0, 0, 1, 0, 2, 2, 3, 3, 1, 2 };
	struct strata_sampler_params p = defaults();
	double probs[4] = { 0.25, 0.25, 0.25, 0.25 };
	float l[4];
	int32_t got[16], again[16];
	struct strata_sampler *s;

	logits_of(probs, l, 4);
	p.seed = 7;
	s = make(&p, 4);
	for (int i = 0; i < 16; i++)
		got[i] = strata_sampler_sample(s, l);
	strata_sampler_free(s);
	ck_assert_mem_eq(got, want, sizeof(want));
	/* reset() keeps the random state going: not a replay */
	s = make(&p, 4);
	strata_sampler_sample(s, l);
	strata_sampler_reset(s);
	for (int i = 0; i < 16; i++)
		again[i] = strata_sampler_sample(s, l);
	ck_assert_msg(memcmp(got, again, sizeof(got)) != 0, "reset() rewound the generator");
	strata_sampler_free(s);
}
END_TEST

START_TEST(random_seed_is_drawn)
{
	struct strata_sampler_params p = defaults();
	struct strata_sampler *a, *b;

	p.seed = STRATA_SAMPLER_SEED_RANDOM;
	a = make(&p, 10);
	b = make(&p, 10);
	ck_assert_uint_ne(strata_sampler_seed(a), STRATA_SAMPLER_SEED_RANDOM);
	ck_assert_uint_ne(strata_sampler_seed(a), strata_sampler_seed(b));
	strata_sampler_free(a);
	strata_sampler_free(b);
}
END_TEST

START_TEST(top_k1_is_greedy)
{
	struct strata_sampler_params p = defaults(), g = defaults();
	enum { N = 1000 };
	float *l = malloc(N * sizeof(float));
	struct strata_sampler *s, *gs;
	uint64_t x = 99;

	p.top_k = 1;
	p.temp = 1.5f;
	g.temp = 0;
	s = make(&p, N);
	gs = make(&g, N);
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < N; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			l[i] = (float)((x >> 40) % 1000) / 100.0f;
		}
		ck_assert_int_eq(strata_sampler_sample(s, l), strata_sampler_sample(gs, l));
	}
	strata_sampler_free(s);
	strata_sampler_free(gs);
	free(l);
}
END_TEST

START_TEST(top_p_keeps_smallest_set)
{
	/* 0.5 + 0.25 = 0.75 >= 0.7 after two tokens: ids 1 and 4 only. */
	double probs[6] = { 0.07, 0.5, 0.03, 0.15, 0.25, 0 };
	double want[6] = { 0, 0.5, 0, 0, 0.25, 0 };
	struct strata_sampler_params p = defaults();
	float l[6];

	logits_of(probs, l, 6);
	l[5] = -30; /* tiny but finite */
	p.top_p = 0.7f;
	check_distribution(&p, l, 6, want);  /* no top-k: the heap path */
	p.top_k = 5;
	check_distribution(&p, l, 6, want);  /* after top-k: the sorted path */
	p.top_p = 0.8f;                      /* 0.75 < 0.8: the 0.15 joins */
	want[3] = 0.15;
	check_distribution(&p, l, 6, want);
	p.top_k = 0;
	check_distribution(&p, l, 6, want);
}
END_TEST

START_TEST(top_k_keeps_k)
{
	double probs[6] = { 0.1, 0.3, 0.05, 0.2, 0.15, 0.2 };
	double want[6] = { 0, 0.3, 0, 0.2, 0, 0.2 };
	struct strata_sampler_params p = defaults();
	float l[6];

	logits_of(probs, l, 6);
	p.top_k = 3;
	check_distribution(&p, l, 6, want);
}
END_TEST

START_TEST(min_p_drops_unlikely)
{
	/* min_p 0.3 of p_max 0.4 = 0.12: 0.1 and 0.05 go. */
	double probs[5] = { 0.1, 0.4, 0.15, 0.05, 0.3 };
	double want[5] = { 0, 0.4, 0.15, 0, 0.3 };
	struct strata_sampler_params p = defaults();
	float l[5];

	logits_of(probs, l, 5);
	p.min_p = 0.3f;
	check_distribution(&p, l, 5, want);
	p.top_k = 4;
	check_distribution(&p, l, 5, want);
}
END_TEST

START_TEST(temperature_sharpens)
{
	/* temp 0.5 squares the probabilities before renormalising. */
	double probs[3] = { 0.5, 0.3, 0.2 };
	double want[3] = { 0.25, 0.09, 0.04 };
	struct strata_sampler_params p = defaults();
	float l[3];

	logits_of(probs, l, 3);
	p.temp = 0.5f;
	check_distribution(&p, l, 3, want);
}
END_TEST

/*
 * Speculative sampling: whatever token was drafted (likely, unlikely, or one
 * the filters drop), verify's tokens follow the chain's distribution and
 * the draft is kept with its probability.
 */
START_TEST(verify_keeps_distribution)
{
	double probs[4] = { 0.4, 0.3, 0.2, 0.1 }, want2[4] = { 0.4, 0.3, 0, 0 };
	struct strata_sampler_params p = defaults();
	float l[4];

	logits_of(probs, l, 4);
	for (int32_t d = 0; d < 4; d++)
		check_drawn(&p, l, 4, probs, d);
	p.top_k = 2;
	check_drawn(&p, l, 4, want2, 1);
	check_drawn(&p, l, 4, want2, 3); /* filtered out: never kept, never drawn */
}
END_TEST

START_TEST(verify_greedy)
{
	const float l[5] = { 0.1f, 2.0f, -1.0f, 2.0f, 0.5f };
	struct strata_sampler_params p = defaults();
	struct strata_sampler *s;
	int acc = -1;

	p.temp = 0.0f;
	s = make(&p, 5);
	for (int32_t d = 0; d < 5; d++) {
		ck_assert_int_eq(strata_sampler_verify(s, l, d, &acc), 1); /* first of the tie */
		ck_assert_int_eq(acc, d == 1);
	}
	strata_sampler_free(s);
}
END_TEST

START_TEST(penalty_changes_argmax)
{
	struct strata_sampler_params p = defaults();
	float pos[4] = { 2.0f, 1.9f, 0.5f, -1.0f };
	float neg[3] = { -1.0f, -1.2f, -5.0f };
	float copy[4];
	struct strata_sampler *s;

	p.temp = 0;
	p.repeat_penalty = 1.5f;
	p.repeat_last_n = 2;
	s = make(&p, 4);
	ck_assert_int_eq(strata_sampler_sample(s, pos), 0);
	strata_sampler_accept(s, 0);
	strata_sampler_accept(s, 0); /* counted once: 2/1.5, not 2/1.5/1.5 */
	memcpy(copy, pos, sizeof(pos));
	ck_assert_int_eq(strata_sampler_sample(s, pos), 1); /* 2/1.5 = 1.33 < 1.9 */
	ck_assert_mem_eq(copy, pos, sizeof(pos));          /* logits untouched */
	strata_sampler_accept(s, 1);                        /* 1.9/1.5 = 1.27 < 1.33 */
	ck_assert_int_eq(strata_sampler_sample(s, pos), 0);
	strata_sampler_accept(s, 2);                        /* window 2: 0 drops out */
	strata_sampler_accept(s, 3);
	ck_assert_int_eq(strata_sampler_sample(s, pos), 0);
	strata_sampler_accept(s, 0);
	strata_sampler_reset(s);                            /* history forgotten */
	ck_assert_int_eq(strata_sampler_sample(s, pos), 0);
	strata_sampler_accept(s, 99);                       /* out of vocab: ignored */
	strata_sampler_accept(s, -1);
	ck_assert_int_eq(strata_sampler_sample(s, pos), 0);
	strata_sampler_free(s);

	s = make(&p, 3); /* negative logits are multiplied: -1 * 1.5 = -1.5 < -1.2 */
	ck_assert_int_eq(strata_sampler_sample(s, neg), 0);
	strata_sampler_accept(s, 0);
	ck_assert_int_eq(strata_sampler_sample(s, neg), 1);
	strata_sampler_free(s);

	p.repeat_penalty = 1.0f; /* off */
	s = make(&p, 4);
	strata_sampler_accept(s, 0);
	ck_assert_int_eq(strata_sampler_sample(s, pos), 0);
	strata_sampler_free(s);
}
END_TEST

static int cmp_desc(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x < y) - (x > y);
}

/* A 150K vocabulary: every draw must come from the set a full sort gives. */
START_TEST(large_vocab_sets)
{
	enum { N = 151936 };
	float *l = malloc(N * sizeof(float)), *sorted = malloc(N * sizeof(float));
	struct strata_sampler_params p = defaults();
	struct strata_sampler *s;
	uint64_t x = 5;
	double sum = 0, cum = 0, mx;
	float thr_k, thr_p;
	int i;

	for (i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		l[i] = (float)((x >> 33) % 100000) / 10000.0f; /* 0..10, distinct enough */
	}
	memcpy(sorted, l, N * sizeof(float));
	qsort(sorted, N, sizeof(float), cmp_desc);
	thr_k = sorted[39];
	mx = sorted[0];
	for (i = 0; i < N; i++)
		sum += exp(sorted[i] - mx);
	for (i = 0; i < N; i++) {
		cum += exp(sorted[i] - mx);
		if (cum >= 0.5 * sum)
			break;
	}
	thr_p = sorted[i];
	ck_assert_int_gt(i, 1000); /* a wide set: the heap path works for it */

	p.top_k = 40;
	p.min_p = 0;
	s = make(&p, N);
	for (int r = 0; r < 300; r++)
		ck_assert_float_ge(l[strata_sampler_sample(s, l)], thr_k);
	strata_sampler_free(s);

	p.top_k = 0;
	p.top_p = 0.5f;
	s = make(&p, N);
	for (int r = 0; r < 100; r++)
		ck_assert_float_ge(l[strata_sampler_sample(s, l)], thr_p);
	strata_sampler_free(s);
	free(l);
	free(sorted);
}
END_TEST

START_TEST(bad_params)
{
	struct strata_sampler_params p = defaults();
	struct strata_sampler *s = (void *)1;

	ck_assert_int_eq(strata_sampler_create(&p, 0, &s), -EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(strata_sampler_create(&p, -5, &s), -EINVAL);
	p.top_p = 0;
	ck_assert_int_eq(strata_sampler_create(&p, 10, &s), -EINVAL);
	p.top_p = 1.01f;
	ck_assert_int_eq(strata_sampler_create(&p, 10, &s), -EINVAL);
	p = defaults();
	p.min_p = -0.1f;
	ck_assert_int_eq(strata_sampler_create(&p, 10, &s), -EINVAL);
	p = defaults();
	p.top_k = -1;
	ck_assert_int_eq(strata_sampler_create(&p, 10, &s), -EINVAL);
	p = defaults();
	p.repeat_penalty = 0;
	ck_assert_int_eq(strata_sampler_create(&p, 10, &s), -EINVAL);
	p = defaults();
	p.repeat_last_n = -1;
	ck_assert_int_eq(strata_sampler_create(&p, 10, &s), -EINVAL);
	p = defaults();
	p.temp = NAN;
	ck_assert_int_eq(strata_sampler_create(&p, 10, &s), -EINVAL);
	p = defaults();
	ck_assert_int_eq(strata_sampler_create(&p, 1, &s), 0); /* one token is fine */
	strata_sampler_free(s);
	strata_sampler_free(NULL);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("sampler");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, greedy_picks_argmax);
	tcase_add_test(tc, seed_reproducible);
	tcase_add_test(tc, seed_golden_sequence);
	tcase_add_test(tc, random_seed_is_drawn);
	tcase_add_test(tc, top_k1_is_greedy);
	tcase_add_test(tc, top_p_keeps_smallest_set);
	tcase_add_test(tc, top_k_keeps_k);
	tcase_add_test(tc, min_p_drops_unlikely);
	tcase_add_test(tc, temperature_sharpens);
	tcase_add_test(tc, verify_keeps_distribution);
	tcase_add_test(tc, verify_greedy);
	tcase_add_test(tc, penalty_changes_argmax);
	tcase_add_test(tc, large_vocab_sets);
	tcase_add_test(tc, bad_params);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
