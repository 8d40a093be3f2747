/*
 * check_types.c - the type table and the fp16 / bf16 conversions
 * (core/cpu/types.h): every half round-trips, f32 -> f16 rounds to nearest
 * even like the F16C hardware (subnormals, overflow, inf, NaN included).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "cpu/types.h"
#include "testutil.h"

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng >> 16);
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

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
/* CPUID.1:ECX.F16C; clang (14) has no __builtin_cpu_supports("f16c"). */
static int have_f16c(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
__attribute__((target("f16c"))) static uint16_t hw_f32_to_fp16(float f)
{
	return (uint16_t)_cvtss_sh(f, 0);
}

__attribute__((target("f16c"))) static float hw_fp16_to_f32(uint16_t h)
{
	return _cvtsh_ss(h);
}
#else
#define have_f16c() 0
static uint16_t hw_f32_to_fp16(float f)
{
	return strata_f32_to_fp16(f);
}

static float hw_fp16_to_f32(uint16_t h)
{
	return strata_fp16_to_f32(h);
}
#endif

START_TEST(fp16_round_trip_all)
{
	for (uint32_t h = 0; h < 65536; h++) {
		float f = strata_fp16_to_f32((uint16_t)h);
		int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);

		if (is_nan) {
			EXPECT(isnan(f), "half %04x should be NaN", h);
			EXPECT_EQ(signbit(f) != 0, (h & 0x8000) != 0);
			EXPECT(isnan(strata_fp16_to_f32(strata_f32_to_fp16(f))),
				      "NaN half %04x did not stay NaN", h);
			continue;
		}
		EXPECT(strata_f32_to_fp16(f) == h,
			      "half %04x -> %a -> %04x", h, f, strata_f32_to_fp16(f));
		if (have_f16c())
			EXPECT(f_bits(hw_fp16_to_f32((uint16_t)h)) == f_bits(f),
				      "half %04x: %a, hardware says %a", h, f,
				      hw_fp16_to_f32((uint16_t)h));
	}
}
END_TEST

START_TEST(fp16_rounding)
{
	static const struct {
		uint32_t f;
		uint16_t h;
	} cases[] = {
		{ 0x3f800000, 0x3c00 }, /* 1 */
		{ 0x80000000, 0x8000 }, /* -0 */
		{ 0x477fe000, 0x7bff }, /* 65504, the largest half */
		{ 0x477fefff, 0x7bff }, /* just below the midpoint to 65536 */
		{ 0x477ff000, 0x7c00 }, /* midpoint: ties to even = 65536 = inf */
		{ 0x7f7fffff, 0x7c00 }, /* FLT_MAX */
		{ 0x7f800000, 0x7c00 }, /* inf */
		{ 0xff800000, 0xfc00 }, /* -inf */
		{ 0x38800000, 0x0400 }, /* 2^-14, the smallest normal */
		{ 0x387fc000, 0x03ff }, /* the largest subnormal */
		{ 0x387fe000, 0x0400 }, /* rounds up into the normals */
		{ 0x33800000, 0x0001 }, /* 2^-24, the smallest subnormal */
		{ 0x33000000, 0x0000 }, /* 2^-25: tie, to even (0) */
		{ 0x33000001, 0x0001 }, /* just above the tie */
		{ 0x33c00000, 0x0002 }, /* 1.5 * 2^-24: tie, to even (2) */
		{ 0x34200000, 0x0002 }, /* 2.5 * 2^-24: tie, to even (2) */
		{ 0xb3c00000, 0x8002 }, /* negative subnormal tie */
		{ 0x2f800000, 0x0000 }, /* far below the subnormals */
		{ 0x3f801000, 0x3c00 }, /* 1 + 2^-11: tie, to even */
		{ 0x3f803000, 0x3c02 }, /* 1 + 3 * 2^-11: tie, to even */
		{ 0x3f801001, 0x3c01 }, /* just above the tie */
	};
	uint16_t n;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		EXPECT(strata_f32_to_fp16(bits_f(cases[i].f)) == cases[i].h,
			      "%08x -> %04x, want %04x", cases[i].f,
			      strata_f32_to_fp16(bits_f(cases[i].f)), cases[i].h);
	n = strata_f32_to_fp16(bits_f(0x7fc00001));
	EXPECT((n & 0x7c00) == 0x7c00 && (n & 0x3ff), "NaN -> %04x", n);
	n = strata_f32_to_fp16(bits_f(0xff800001)); /* signalling, negative */
	EXPECT((n & 0xfc00) == 0xfc00 && (n & 0x3ff), "-sNaN -> %04x", n);
	/* Every non-NaN float against the hardware's conversion (a sample). */
	if (have_f16c()) {
		for (int i = 0; i < 4000000; i++) {
			uint32_t u = rnd() << 16 ^ rnd();
			float f = bits_f(u);

			if (isnan(f))
				continue;
			EXPECT(strata_f32_to_fp16(f) == hw_f32_to_fp16(f),
				      "%08x: %04x, hardware %04x", u,
				      strata_f32_to_fp16(f), hw_f32_to_fp16(f));
		}
	}
}
END_TEST

START_TEST(bf16_conversions)
{
	static const struct {
		uint32_t f;
		uint16_t h;
	} cases[] = {
		{ 0x3f800000, 0x3f80 }, { 0x3f808000, 0x3f80 }, /* tie to even */
		{ 0x3f818000, 0x3f82 }, { 0x3f808001, 0x3f81 },
		{ 0x7f7fffff, 0x7f80 }, /* rounds to inf */
		{ 0xff800000, 0xff80 }, { 0x00000001, 0x0000 }, /* denormals kept */
		{ 0x00018000, 0x0002 }, { 0x80000000, 0x8000 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		EXPECT(strata_f32_to_bf16(bits_f(cases[i].f)) == cases[i].h,
			      "%08x -> %04x, want %04x", cases[i].f,
			      strata_f32_to_bf16(bits_f(cases[i].f)), cases[i].h);
	EXPECT_TRUE(isnan(strata_bf16_to_f32(strata_f32_to_bf16(bits_f(0x7f800001)))));
	EXPECT_TRUE(isnan(strata_bf16_to_f32(strata_f32_to_bf16(bits_f(0xffc00000)))));
	for (uint32_t h = 0; h < 65536; h++) {
		float f = strata_bf16_to_f32((uint16_t)h);

		EXPECT_EQ(f_bits(f), h << 16);
		if (!isnan(f))
			EXPECT_EQ(strata_f32_to_bf16(f), h);
	}
}
END_TEST

START_TEST(type_table)
{
	EXPECT_EQ(strata_type_block(STRATA_TYPE_Q8_0), 32);
	EXPECT_EQ(strata_type_block_bytes(STRATA_TYPE_Q8_0), 34);
	EXPECT_EQ(strata_type_block(STRATA_TYPE_Q4_K), 256);
	EXPECT_EQ(strata_type_block_bytes(STRATA_TYPE_Q4_K), 144);
	EXPECT_EQ(strata_type_block_bytes(STRATA_TYPE_IQ1_M), 56);
	EXPECT_EQ(strata_type_block_bytes(STRATA_TYPE_BF16), 2);
	EXPECT_EQ(strata_type_row_bytes(STRATA_TYPE_Q8_0, 4096), 128 * 34);
	EXPECT_EQ(strata_type_row_bytes(STRATA_TYPE_Q8_0, 100), 0);
	EXPECT_EQ(strata_type_row_bytes(STRATA_TYPE_F16, 7), 14);
	EXPECT_EQ(strata_type_row_bytes(4 /* removed Q4_2 */, 32), 0);
	EXPECT_EQ(strata_type_row_bytes(STRATA_TYPE_COUNT, 32), 0);
	EXPECT_EQ(strata_type_block(999), 0);
	ck_assert_str_eq(strata_type_name(STRATA_TYPE_IQ4_NL), "IQ4_NL");
	ck_assert_str_eq(strata_type_name(4), "?");
	ck_assert_str_eq(strata_type_name(12345), "?");
	EXPECT_EQ(strata_type_from_name("q8_0"), STRATA_TYPE_Q8_0);
	EXPECT_EQ(strata_type_from_name("BF16"), STRATA_TYPE_BF16);
	EXPECT_EQ(strata_type_from_name("Q4_2"), -1);
	for (int t = 0; t < STRATA_TYPE_COUNT; t++)
		if (strata_type_block(t))
			EXPECT_EQ(strata_type_from_name(strata_type_name(t)), t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("types");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, type_table);
	tcase_add_test(tc, fp16_round_trip_all);
	tcase_add_test(tc, fp16_rounding);
	tcase_add_test(tc, bf16_conversions);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
