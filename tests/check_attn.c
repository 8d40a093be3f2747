/*
 * check_attn.c - attention kernels (core/cpu/attn*.c) at each SIMD level
 * (one per ctest run: check_attn, .avx2, .avx512; testutil.h) against a float64
 * reference: grouped heads, odd lengths and widths, the
 * padded key rows, and a softmax whose scores span a wide range.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu/attn.h"
#include "cpu/kernels.h"
#include "testutil.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

/* Uniform in [-1, 1). */
static float frnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (float)((g_rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

/* The level this run tests (tu_simd_level). */
static int g_lv;

/* One case: G heads of width hd over len positions, values hdv wide. */
static void check_case(int G, int hd, int hdv, uint32_t len, float qscale)
{
	/* whole tiles of 16 positions (attn.h), no more: ASan sees a read past them */
	const size_t nk = strata_kt_round(len) * (size_t)hd;
	const size_t qs = (size_t)hd + 3, vs = (size_t)hdv + 5, os = (size_t)hdv + 7;
	float *q = malloc(sizeof(float) * qs * G), *kt = malloc(sizeof(float) * nk);
	float *v = malloc(sizeof(float) * vs * len), *o = malloc(sizeof(float) * os * G);
	float *sc = malloc(sizeof(float) * 4 * strata_kt_round(len));
	double *ref = malloc(sizeof(double) * (size_t)hdv * G), *p = malloc(sizeof(double) * len);
	const float scale = 1.0f / sqrtf((float)hd);

	for (size_t i = 0; i < qs * G; i++)
		q[i] = frnd() * qscale;
	for (size_t i = 0; i < nk; i++)
		kt[i] = frnd();
	for (size_t i = 0; i < vs * len; i++)
		v[i] = frnd();
	for (int g = 0; g < G; g++) {
		double mx = -INFINITY, sum = 0;

		for (uint32_t j = 0; j < len; j++) {
			double s = 0;

			for (int d = 0; d < hd; d++)
				s += (double)q[g * qs + d] * kt[strata_kt_at(hd, d, j)];
			p[j] = s * scale;
			mx = p[j] > mx ? p[j] : mx;
		}
		for (uint32_t j = 0; j < len; j++)
			sum += (p[j] = exp(p[j] - mx));
		for (int d = 0; d < hdv; d++) {
			double s = 0;

			for (uint32_t j = 0; j < len; j++)
				s += p[j] * v[j * vs + d];
			ref[g * hdv + d] = s / sum;
		}
	}
	{
		const int l = g_lv;

		ck_assert_int_eq(strata_simd_set(l), 0);
		for (size_t i = 0; i < os * G; i++)
			o[i] = -9.0f;
		strata_attn_heads(q, qs, G, kt, hd, v, vs, hdv, len, scale, o, os, sc);
		for (int g = 0; g < G; g++) {
			for (int d = 0; d < hdv; d++)
				ck_assert_msg(fabs(o[g * os + d] - ref[g * hdv + d]) <= 2e-6,
					      "%s G %d hd %d hdv %d len %u: o[%d][%d] = %.9g, "
					      "float64 %.9g", strata_simd_name(l), G, hd, hdv,
					      len, g, d, o[g * os + d], ref[g * hdv + d]);
			for (size_t d = (size_t)hdv; d < os; d++)
				ck_assert_msg(o[g * os + d] == -9.0f, "%s wrote past hdv",
					      strata_simd_name(l));
		}
	}
	strata_simd_set(strata_simd_detect());
	free(q);
	free(kt);
	free(v);
	free(o);
	free(sc);
	free(ref);
	free(p);
}

START_TEST(heads_match_float64)
{
	static const int Gs[] = { 1, 2, 3, 4, 5, 8 };
	static const int dims[] = { 8, 32, 64, 80, 128 };
	static const uint32_t lens[] = { 1, 2, 15, 16, 17, 63, 64, 65, 130, 333 };

	if ((g_lv = tu_simd_level()) < 0)
		return;

	for (size_t a = 0; a < sizeof(Gs) / sizeof(Gs[0]); a++)
		for (size_t b = 0; b < sizeof(dims) / sizeof(dims[0]); b++)
			for (size_t c = 0; c < sizeof(lens) / sizeof(lens[0]); c++)
				check_case(Gs[a], dims[b], dims[(b + c) % 5], lens[c], 1.0f);
}
END_TEST

/* Large scores: the softmax must subtract the max (exp would overflow) and
 * the vector exp must follow expf down to where it underflows. */
START_TEST(heads_wide_scores)
{
	if ((g_lv = tu_simd_level()) < 0)
		return;
	check_case(4, 64, 64, 200, 40.0f);
	check_case(3, 32, 48, 77, 12.0f);
	check_case(1, 128, 128, 1000, 25.0f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("attn");
	TCase *tc = tcase_create("attn");

	tcase_set_tags(tc, "simd");
	tcase_add_test(tc, heads_match_float64);
	tcase_add_test(tc, heads_wide_scores);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
