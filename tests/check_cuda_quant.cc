/*
 * check_cuda_quant.cc - the CUDA plugin's dequantisers (plugins/gpu-cuda/
 * cuda_quant.cuh) compiled as host C++ (without __CUDACC__ its CUQ_ macros are
 * plain float operations and loads) against the core's strata_dequant().
 *
 * What it proves: the device decoders are the CPU's, value for value.  For
 * every weight type strata_type_supported() accepts (and cuq_type_ok agrees,
 * with the core's block values and bytes), rows decoded octet by octet with
 * cuq_dq8 (and an F32/F16/BF16 row's tail with cuq_dq1) equal strata_dequant
 * of the same rows, at every SIMD level this CPU has, on: random bytes; random
 * bytes with sane f16 scales; f16 scales that are NaN, infinite, subnormal,
 * zero or the largest; and strata_quantize's bytes where the type has a
 * quantiser.  Floats compare by their bits (the sign of zero, infinities,
 * subnormals), except that NaN equals NaN whatever its sign and payload (a NaN
 * never equals a number): the CPU's own levels differ there (F16C quiets a
 * signalling NaN; which NaN operand a sum keeps sets the sign), and a GPU's
 * float arithmetic gives one canonical NaN.  Each type must show NaNs and
 * infinities among its values, so the special scales are really decoded.
 *
 * What it cannot: that the kernels run on a GPU, or that nvcc makes the same
 * operations of the device path (__fmul_rn and friends for * + -, __ldg loads,
 * denormals kept): check_backend_ops_gpu_cuda tests that where there is a GPU.
 */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "cpu/kernels.h"
#include "cpu/types.h"
#include "testutil.h"
}

#include "cuda_quant.cuh"

enum { ROWS = 4, COLS = 1024, REPS = 32 }; /* F32, F16, BF16 rows: COLS + 0..7 values */
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static uint32_t g_types[STRATA_TYPE_COUNT]; /* strata_type_supported's, from main */
static int g_ntypes;
alignas(64) static uint8_t g_buf[ROWS * (COLS + 7) * 4];
static float g_src[ROWS * (COLS + 7)], g_ref[ROWS * (COLS + 7)], g_got[ROWS * (COLS + 7)];

/* Where a block keeps its f16 scales: byte offsets (-1: IQ1_M's four nibbles; -2: none). */
static int scale_fields(uint32_t t, int off[2])
{
	off[1] = -2;
	switch (t) {
	case STRATA_TYPE_Q4_0: case STRATA_TYPE_Q5_0: case STRATA_TYPE_Q8_0:
	case STRATA_TYPE_IQ4_NL: case STRATA_TYPE_Q4_K: case STRATA_TYPE_Q5_K:
	case STRATA_TYPE_IQ2_XS: case STRATA_TYPE_IQ2_S: case STRATA_TYPE_IQ3_XXS:
	case STRATA_TYPE_IQ3_S: case STRATA_TYPE_Q4_1: case STRATA_TYPE_Q5_1:
		off[0] = 0; /* d first (m or dmin next) */
		if (t == STRATA_TYPE_Q4_1 || t == STRATA_TYPE_Q5_1 || t == STRATA_TYPE_Q4_K ||
		    t == STRATA_TYPE_Q5_K)
			off[1] = 2;
		return 1;
	case STRATA_TYPE_Q2_K:
		off[0] = (int)offsetof(strata_block_q2_k, d);
		off[1] = (int)offsetof(strata_block_q2_k, dmin);
		return 1;
	case STRATA_TYPE_Q3_K: off[0] = (int)offsetof(strata_block_q3_k, d); return 1;
	case STRATA_TYPE_Q6_K: off[0] = (int)offsetof(strata_block_q6_k, d); return 1;
	case STRATA_TYPE_IQ1_M: off[0] = -1; return 1;
	default: return 0; /* F32, F16, BF16 */
	}
}

static void put_scale(uint8_t *blk, int off, uint16_t h)
{
	if (off >= 0) {
		memcpy(blk + off, &h, 2);
		return;
	}
	/* IQ1_M: nibble k of d is the top nibble of scales' u16 k */
	for (int k = 0; k < 4; k++) {
		uint8_t *p = blk + offsetof(strata_block_iq1_m, scales) + 2 * k;
		uint16_t u;

		memcpy(&u, p, 2);
		u = (uint16_t)((u & 0x0fff) | ((h >> (4 * k)) & 0xf) << 12);
		memcpy(p, &u, 2);
	}
}

/* +-2^-11 .. 2^3: finite products of every code */
static uint16_t sane_f16(uint64_t *rng)
{
	const uint32_t r = tu_rand(rng);

	return (uint16_t)((r & 0x83ff) | ((r >> 16) % 14 + 4) << 10);
}

/* f16: zeros, subnormals, the least normal, the largest, infinities, NaNs */
static const uint16_t g_special[] = {
	0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0200, 0x0400, 0x7bff, 0xfbff,
	0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7dff, 0xffff,
};
/* f32 (BF16: their top halves), the same kinds */
static const uint32_t g_special32[] = {
	0x00000000, 0x80000000, 0x00010000, 0x807f0000, 0x00400000, 0x00800000, 0x7f7f0000,
	0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f810000, 0x7fff0000,
};

/* The f16 scales of nb blocks of t sane, or with `special` half of them special; F32,
 * F16 and BF16: about every 8th of nb values special. */
static void put_scales(uint32_t t, int64_t nb, int special, uint64_t *rng)
{
	int off[2];

	if (!scale_fields(t, off)) {
		for (int64_t i = 0; i < nb; i += 1 + tu_rand(rng) % 15) {
			const uint32_t f = g_special32[tu_rand(rng) % N_OF(g_special32)];
			const uint16_t h = t == STRATA_TYPE_F16 ? g_special[tu_rand(rng) % N_OF(g_special)]
								: (uint16_t)(f >> 16);

			if (t == STRATA_TYPE_F32)
				memcpy(g_buf + 4 * i, &f, 4);
			else
				memcpy(g_buf + 2 * i, &h, 2);
		}
		return;
	}
	for (int64_t b = 0; b < nb; b++)
		for (int f = 0; f < 2 && off[f] >= -1; f++) {
			const uint32_t pick = tu_rand(rng);

			put_scale(g_buf + b * cuq_block_bytes(t), off[f],
				  special && pick % 2 ? g_special[pick / 2 % N_OF(g_special)]
						  : sane_f16(rng));
		}
}

/* Filling modes of a buffer of rows. */
enum { RAW, SANE, SPECIAL, QUANTISED, N_MODES };
static const char *const g_mode_name[] = { "random bytes", "random bytes, sane scales",
					   "random bytes, special scales or values", "strata_quantize's" };

static int same(float a, float b)
{
	return (isnan(a) && isnan(b)) || cuq_f2u(a) == cuq_f2u(b);
}

/*
 * Rows of t (ROWS of cols values) in g_buf: decode them with the header, row by row
 * from each row's own start, and compare with strata_dequant at every level.
 */
static void compare(uint32_t t, int64_t cols, int mode, int rep, int64_t *nan, int64_t *inf)
{
	const size_t rb = strata_type_row_bytes(t, cols);
	const int64_t n = ROWS * cols;
	const int saved = strata_simd_get(), top = strata_simd_detect();

	EXPECT(rb > 0 && rb % 2 == 0, "%s: %lld values make %zu bytes", strata_type_name(t),
	       (long long)cols, rb);
	for (int64_t r = 0; r < ROWS; r++) {
		const uint8_t *row = g_buf + r * rb;
		float *y = g_got + r * cols;

		for (int64_t o = 0; o < cols / 8; o++)
			cuq_dq8(t, row, o, y + 8 * o);
		for (int64_t i = cols / 8 * 8; i < cols; i++)
			y[i] = cuq_dq1(t, row, i);
	}
	for (int l = STRATA_SIMD_SCALAR; l <= top; l++) {
		EXPECT_EQ(strata_simd_set((enum strata_simd)l), 0);
		strata_dequant(t, g_buf, g_ref, n);
		for (int64_t i = 0; i < n; i++)
			if (!same(g_got[i], g_ref[i]))
				ck_abort_msg("%s, %s (rep %d), strata_dequant at %s: row %lld value "
					     "%lld (octet %lld): the header gives %a (0x%08x), the "
					     "core %a (0x%08x)", strata_type_name(t), g_mode_name[mode],
					     rep, strata_simd_name((enum strata_simd)l),
					     (long long)(i / cols), (long long)(i % cols),
					     (long long)(i % cols / 8), (double)g_got[i],
					     cuq_f2u(g_got[i]), (double)g_ref[i], cuq_f2u(g_ref[i]));
	}
	strata_simd_set((enum strata_simd)saved);
	for (int64_t i = 0; i < n; i++) {
		*nan += isnan(g_ref[i]) != 0;
		*inf += isinf(g_ref[i]) != 0;
	}
}

/* Every type of the core is the header's, with the same blocks; the others decode to NaN. */
START_TEST(types_agree)
{
	float v[8];

	for (uint32_t t = 0; t < STRATA_TYPE_COUNT + 8; t++) {
		EXPECT(cuq_type_ok(t) == strata_type_supported(t), "type %u (%s): header %d, core %d",
		       t, strata_type_name(t), cuq_type_ok(t), strata_type_supported(t));
		if (!cuq_type_ok(t)) {
			cuq_dq8(t, g_buf, 0, v);
			for (int j = 0; j < 8; j++)
				EXPECT(isnan(v[j]), "type %u: value %d is %a", t, j, (double)v[j]);
			continue;
		}
		EXPECT_EQ(cuq_block_vals(t), strata_type_block(t));
		EXPECT_EQ(cuq_block_bytes(t), strata_type_block_bytes(t));
	}
	ck_assert_int_ge(g_ntypes, 19); /* F32 .. IQ1_M when this was written */
}
END_TEST

START_TEST(decoders_match)
{
	const uint32_t t = g_types[_i];
	const int plain = cuq_block_vals(t) == 1;
	const int64_t quant = strata_quantize(t, NULL, NULL, 0); /* 0: a quantiser, -ENOTSUP: none */
	uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)t << 32;
	int64_t nan = 0, inf = 0, runs[N_MODES] = { 0 };

	for (int rep = 0; rep < REPS; rep++) {
		int mode = rep % N_MODES;
		const int64_t cols = plain ? COLS + rep % 8 : COLS;
		const int64_t n = ROWS * cols;

		if (mode == SANE && plain)
			mode = RAW; /* no scales */
		if (mode == QUANTISED && quant < 0)
			mode = SPECIAL;
		for (size_t i = 0; i < sizeof(g_buf); i += 4) {
			const uint32_t r = tu_rand(&rng);

			memcpy(g_buf + i, &r, 4);
		}
		if (mode == SANE || mode == SPECIAL)
			put_scales(t, n / cuq_block_vals(t), mode == SPECIAL, &rng);
		if (mode == QUANTISED) {
			/* rows of other magnitudes; now and then a zero block, a spike */
			const float scale[] = { 1.0f, 100.0f, 1e-3f, 3e4f };

			for (int64_t i = 0; i < n; i++)
				g_src[i] = tu_frand(&rng) * scale[rep / N_MODES % 4];
			for (int64_t i = 0; i + 256 <= n; i += 1024) {
				memset(g_src + i, 0, 256 * sizeof(float));
				g_src[i + 300] = 40.0f * scale[rep / N_MODES % 4];
			}
			EXPECT_EQ(strata_quantize(t, g_src, g_buf, n), (int64_t)strata_type_row_bytes(t, n));
		}
		compare(t, cols, mode, rep, &nan, &inf);
		runs[mode]++;
	}
	printf("%-7s %lld random, %lld sane-scaled, %lld special-scaled, %lld quantised buffers of "
	       "%d rows: %lld NaNs, %lld infinities, all equal at scalar..%s\n", strata_type_name(t),
	       (long long)runs[RAW], (long long)runs[SANE], (long long)runs[SPECIAL],
	       (long long)runs[QUANTISED], ROWS, (long long)nan, (long long)inf,
	       strata_simd_name(strata_simd_detect()));
	EXPECT(nan > 0 && inf > 0, "%s: %lld NaNs, %lld infinities: special scales not decoded",
	       strata_type_name(t), (long long)nan, (long long)inf);
	ck_assert_int_eq(runs[QUANTISED] > 0, quant >= 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cuda_quant");
	TCase *tc = tcase_create("core");

	for (uint32_t t = 0; t < STRATA_TYPE_COUNT; t++)
		if (strata_type_supported(t))
			g_types[g_ntypes++] = t;
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, types_agree);
	tcase_add_loop_test(tc, decoders_match, 0, g_ntypes);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
