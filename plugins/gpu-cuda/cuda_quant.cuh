/*
 * cuda_quant.cuh - private to plugins/gpu-cuda (included by cuda_mm.cu only):
 * dequantisation of every weight type the CPU backend computes with, on the
 * device, giving exactly the float values of the core's strata_dequant()
 * (core/cpu/quants_legacy.c, quants_k.c, quants_iq.c, kernels_scalar.c).
 *
 * The unit is an octet: 8 consecutive values of a row.  Every block size is
 * a multiple of 8 (32 or 256 values), so octet o of a quantised row lies in
 * block o / (block / 8), and a warp whose lanes take consecutive octets reads
 * consecutive bytes of the row (and of the activations it multiplies).
 * cuq_dq8() decodes one octet into 8 floats; F32, F16 and BF16 rows, whose
 * length need not be a multiple of 8, add cuq_dq1() for the tail.
 *
 * Exactness: each value is computed with the CPU's float operations in the
 * CPU's order (the core builds with -ffp-contract=off).  nvcc would fuse a
 * product and a sum into an FMA, which rounds once instead of twice, so the
 * products and sums below are the explicitly rounded intrinsics (CUQ_MUL,
 * CUQ_ADD, CUQ_SUB): no contraction.  Half-floats are converted by bits, as
 * strata_fp16_to_f32 does (subnormals exact, infinities and NaNs kept).
 *
 * Block fields: multi-byte fields of every block lie at even offsets and
 * every block size is even, so with an even row address (cuda_mm.cu checks)
 * they are read as aligned u16s; u32 fields are two u16s.
 *
 * The same source compiles as plain host C++ (no __CUDACC__) so that a unit
 * test can compare these decoders with strata_dequant on the CPU.
 */
#ifndef STRATA_CUDA_QUANT_CUH
#define STRATA_CUDA_QUANT_CUH

#include <stdint.h>
#include <string.h>

#include "strata/quants.h"

#ifdef __CUDACC__
#define CUQ_FN static __device__ __forceinline__
#define CUQ_HD static __host__ __device__ __forceinline__
#define CUQ_TABLE static __device__ const
#define CUQ_LDG(p) __ldg(p)
#define CUQ_MUL(a, b) __fmul_rn((a), (b))
#define CUQ_ADD(a, b) __fadd_rn((a), (b))
#define CUQ_SUB(a, b) __fsub_rn((a), (b))
#define CUQ_POPC(x) __popc(x)
#else /* host C++ (the unit test): build with -ffp-contract=off */
#define CUQ_FN static inline
#define CUQ_HD static inline
#define CUQ_TABLE static const
#define CUQ_LDG(p) (*(p))
#define CUQ_MUL(a, b) ((a) * (b))
#define CUQ_ADD(a, b) ((a) + (b))
#define CUQ_SUB(a, b) ((a) - (b))
#define CUQ_POPC(x) __builtin_popcount(x)
#endif

/* ---- types ------------------------------------------------------------------------ */

/* 1 for the weight types decoded here: those strata_type_supported() accepts. */
CUQ_HD int cuq_type_ok(uint32_t type)
{
	switch (type) {
	case STRATA_TYPE_F32: case STRATA_TYPE_F16: case STRATA_TYPE_BF16:
	case STRATA_TYPE_Q8_0: case STRATA_TYPE_Q4_0: case STRATA_TYPE_Q4_1:
	case STRATA_TYPE_Q5_0: case STRATA_TYPE_Q5_1: case STRATA_TYPE_IQ4_NL:
	case STRATA_TYPE_Q2_K: case STRATA_TYPE_Q3_K: case STRATA_TYPE_Q4_K:
	case STRATA_TYPE_Q5_K: case STRATA_TYPE_Q6_K: case STRATA_TYPE_IQ2_XS:
	case STRATA_TYPE_IQ2_S: case STRATA_TYPE_IQ3_XXS: case STRATA_TYPE_IQ3_S:
	case STRATA_TYPE_IQ1_M:
		return 1;
	default:
		return 0;
	}
}

/* Values per block of a supported type (1 for F32, F16, BF16). */
CUQ_HD int cuq_block_vals(uint32_t type)
{
	switch (type) {
	case STRATA_TYPE_F32: case STRATA_TYPE_F16: case STRATA_TYPE_BF16:
		return 1;
	case STRATA_TYPE_Q8_0: case STRATA_TYPE_Q4_0: case STRATA_TYPE_Q4_1:
	case STRATA_TYPE_Q5_0: case STRATA_TYPE_Q5_1: case STRATA_TYPE_IQ4_NL:
		return STRATA_QK;
	default:
		return STRATA_QK_K;
	}
}

/* Bytes per block of a supported type (0 for others). */
CUQ_HD int cuq_block_bytes(uint32_t type)
{
	switch (type) {
	case STRATA_TYPE_F32: return 4;
	case STRATA_TYPE_F16: return 2;
	case STRATA_TYPE_BF16: return 2;
	case STRATA_TYPE_Q8_0: return (int)sizeof(struct strata_block_q8_0);
	case STRATA_TYPE_Q4_0: return (int)sizeof(struct strata_block_q4_0);
	case STRATA_TYPE_Q4_1: return (int)sizeof(struct strata_block_q4_1);
	case STRATA_TYPE_Q5_0: return (int)sizeof(struct strata_block_q5_0);
	case STRATA_TYPE_Q5_1: return (int)sizeof(struct strata_block_q5_1);
	case STRATA_TYPE_IQ4_NL: return (int)sizeof(struct strata_block_iq4_nl);
	case STRATA_TYPE_Q2_K: return (int)sizeof(struct strata_block_q2_k);
	case STRATA_TYPE_Q3_K: return (int)sizeof(struct strata_block_q3_k);
	case STRATA_TYPE_Q4_K: return (int)sizeof(struct strata_block_q4_k);
	case STRATA_TYPE_Q5_K: return (int)sizeof(struct strata_block_q5_k);
	case STRATA_TYPE_Q6_K: return (int)sizeof(struct strata_block_q6_k);
	case STRATA_TYPE_IQ2_XS: return (int)sizeof(struct strata_block_iq2_xs);
	case STRATA_TYPE_IQ2_S: return (int)sizeof(struct strata_block_iq2_s);
	case STRATA_TYPE_IQ3_XXS: return (int)sizeof(struct strata_block_iq3_xxs);
	case STRATA_TYPE_IQ3_S: return (int)sizeof(struct strata_block_iq3_s);
	case STRATA_TYPE_IQ1_M: return (int)sizeof(struct strata_block_iq1_m);
	default: return 0;
	}
}

/* The block sizes cuq_dq8 hard-codes (quants.h's; the core checks them too). */
static_assert(sizeof(struct strata_block_q8_0) == 34 && sizeof(struct strata_block_q4_0) == 18 &&
	      sizeof(struct strata_block_q4_1) == 20 && sizeof(struct strata_block_q5_0) == 22 &&
	      sizeof(struct strata_block_q5_1) == 24 && sizeof(struct strata_block_iq4_nl) == 18,
	      "legacy block sizes");
static_assert(sizeof(struct strata_block_q2_k) == 84 && sizeof(struct strata_block_q3_k) == 110 &&
	      sizeof(struct strata_block_q4_k) == 144 && sizeof(struct strata_block_q5_k) == 176 &&
	      sizeof(struct strata_block_q6_k) == 210, "K-quant block sizes");
static_assert(sizeof(struct strata_block_iq2_xs) == 74 &&
	      sizeof(struct strata_block_iq2_s) == 82 &&
	      sizeof(struct strata_block_iq3_xxs) == 98 &&
	      sizeof(struct strata_block_iq3_s) == 110 && sizeof(struct strata_block_iq1_m) == 56,
	      "i-quant block sizes");

/* ---- loads and conversions ---------------------------------------------------------- */

CUQ_FN float cuq_u2f(uint32_t u)
{
#ifdef __CUDACC__
	return __uint_as_float(u);
#else
	float f;

	memcpy(&f, &u, 4);
	return f;
#endif
}

CUQ_FN uint32_t cuq_f2u(float f)
{
#ifdef __CUDACC__
	return __float_as_uint(f);
#else
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
#endif
}

/* Byte p[0]. */
CUQ_FN uint32_t ld8(const uint8_t *p)
{
	return CUQ_LDG(p);
}

/* The little-endian u16 at p (p even). */
CUQ_FN uint32_t ld16(const uint8_t *p)
{
	return CUQ_LDG((const unsigned short *)p);
}

/* The little-endian u32 at p (p even). */
CUQ_FN uint32_t ld32(const uint8_t *p)
{
	return ld16(p) | ld16(p + 2) << 16;
}

/* The 8 bytes at p (p even) as two u32s, byte i at bits 8 * (i % 4) of q[i / 4]. */
CUQ_FN void ld64(const uint8_t *p, uint32_t *q)
{
	q[0] = ld32(p);
	q[1] = ld32(p + 4);
}

/* Byte i (a constant after unrolling) of 8 bytes loaded by ld64. */
CUQ_FN uint32_t byte_of(const uint32_t *q, int i)
{
	return (q[i >> 2] >> (8 * (i & 3))) & 0xff;
}

/* strata_fp16_to_f32: exact; the subnormal branch multiplies exactly. */
CUQ_FN float cuq_h2f(uint32_t h)
{
	const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;

	if (exp == 0)
		return cuq_u2f(cuq_f2u(CUQ_MUL((float)man, 1.0f / 16777216.0f)) | sign);
	if (exp == 31)
		return cuq_u2f(sign | 0x7f800000u | man << 13);
	return cuq_u2f(sign | (exp + 112) << 23 | man << 13);
}

/* strata_bf16_to_f32. */
CUQ_FN float cuq_bf2f(uint32_t h)
{
	return cuq_u2f(h << 16);
}

/* ggml's ksigns_iq2xs[i]: 7 sign bits and their parity as bit 7. */
CUQ_FN uint32_t cuq_ksigns(uint32_t i)
{
	return i | (uint32_t)(CUQ_POPC(i) & 1) << 7;
}

/* ---- legacy types: blocks of 32, octets 0..3 ---------------------------------------- */

/* q4_0: octets 0, 1 are low nibbles of qs[0..7], qs[8..15]; 2, 3 their high nibbles. */
CUQ_FN void dq8_q4_0(const uint8_t *b, int o, float *v)
{
	const float d = cuq_h2f(ld16(b));
	const int sh = 4 * (o >> 1);
	uint32_t q[2];

	ld64(b + 2 + 8 * (o & 1), q);
#pragma unroll
	for (int j = 0; j < 8; j++)
		v[j] = CUQ_MUL((float)((int)((byte_of(q, j) >> sh) & 0xf) - 8), d);
}

/* q4_1: q * d - (-m), as the CPU evaluates it. */
CUQ_FN void dq8_q4_1(const uint8_t *b, int o, float *v)
{
	const float d = cuq_h2f(ld16(b)), mneg = -cuq_h2f(ld16(b + 2));
	const int sh = 4 * (o >> 1);
	uint32_t q[2];

	ld64(b + 4 + 8 * (o & 1), q);
#pragma unroll
	for (int j = 0; j < 8; j++)
		v[j] = CUQ_SUB(CUQ_MUL((float)((byte_of(q, j) >> sh) & 0xf), d), mneg);
}

/* q5_0: the fifth bit of value i is bit i of qh, i = 8 * o + j. */
CUQ_FN void dq8_q5_0(const uint8_t *b, int o, float *v)
{
	const float d = cuq_h2f(ld16(b));
	const uint32_t qh = ld32(b + 2) >> (8 * o);
	const int sh = 4 * (o >> 1);
	uint32_t q[2];

	ld64(b + 6 + 8 * (o & 1), q);
#pragma unroll
	for (int j = 0; j < 8; j++) {
		const int n = (int)(((byte_of(q, j) >> sh) & 0xf) | ((qh >> j) & 1) << 4);

		v[j] = CUQ_MUL((float)(n - 16), d);
	}
}

CUQ_FN void dq8_q5_1(const uint8_t *b, int o, float *v)
{
	const float d = cuq_h2f(ld16(b)), mneg = -cuq_h2f(ld16(b + 2));
	const uint32_t qh = ld32(b + 4) >> (8 * o);
	const int sh = 4 * (o >> 1);
	uint32_t q[2];

	ld64(b + 8 + 8 * (o & 1), q);
#pragma unroll
	for (int j = 0; j < 8; j++) {
		const uint32_t n = ((byte_of(q, j) >> sh) & 0xf) | ((qh >> j) & 1) << 4;

		v[j] = CUQ_SUB(CUQ_MUL((float)n, d), mneg);
	}
}

/* q8_0: d * q (kernels_scalar.c's order). */
CUQ_FN void dq8_q8_0(const uint8_t *b, int o, float *v)
{
	const float d = cuq_h2f(ld16(b));
	uint32_t q[2];

	ld64(b + 2 + 8 * o, q);
#pragma unroll
	for (int j = 0; j < 8; j++)
		v[j] = CUQ_MUL(d, (float)(int8_t)byte_of(q, j));
}

/* ggml's kvalues_iq4nl (strata_iq4nl_values). */
CUQ_TABLE signed char cuq_iq4nl[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
					1,    13,   25,  38,  53,  69,  89,  113 };

CUQ_FN void dq8_iq4_nl(const uint8_t *b, int o, float *v)
{
	const float d = cuq_h2f(ld16(b));
	const int sh = 4 * (o >> 1);
	uint32_t q[2];

	ld64(b + 2 + 8 * (o & 1), q);
#pragma unroll
	for (int j = 0; j < 8; j++)
		v[j] = CUQ_MUL((float)CUQ_LDG(&cuq_iq4nl[(byte_of(q, j) >> sh) & 0xf]), d);
}

/* ---- K-quants: super-blocks of 256, octets 0..31, groups of 16 = octets 2g, 2g+1 ---- */

/* (d * sc) * q - dmin * m for the octet's 8 values (quants_k.c's to_float). */
CUQ_FN void k_out(float d, float dmin, int sc, int m, const int *q, float *v)
{
	const float dl = CUQ_MUL(d, (float)sc), ml = CUQ_MUL(dmin, (float)m);

#pragma unroll
	for (int j = 0; j < 8; j++)
		v[j] = CUQ_SUB(CUQ_MUL(dl, (float)q[j]), ml);
}

/*
 * q2_k: value 128 n + 32 j + l is bits 2j of qs[32 n + l]; octet o is
 * n = o / 16, j = o / 4 % 4, l = 8 (o % 4) + 0..7.  Group o / 2's scale
 * byte: scale | min << 4.
 */
CUQ_FN void dq8_q2_k(const uint8_t *b, int o, float *v)
{
	const int n = o >> 4, j = (o >> 2) & 3, l0 = 8 * (o & 3);
	const uint32_t s = ld8(b + (o >> 1));
	uint32_t q8[2];
	int q[8];

	ld64(b + 16 + 32 * n + l0, q8);
#pragma unroll
	for (int i = 0; i < 8; i++)
		q[i] = (int)((byte_of(q8, i) >> (2 * j)) & 3);
	k_out(cuq_h2f(ld16(b + 80)), cuq_h2f(ld16(b + 82)), (int)(s & 0xf), (int)(s >> 4), q, v);
}

/* q3_k: q2_k's low bits, minus 4 where the hmask bit (4 n + j) of byte l is clear;
 * sixteen 6-bit scales - 32: low nibbles in bytes 0..7, top bits in 8..11. */
CUQ_FN void dq8_q3_k(const uint8_t *b, int o, float *v)
{
	const int n = o >> 4, j = (o >> 2) & 3, l0 = 8 * (o & 3), g = o >> 1;
	const uint8_t *s = b + 96;
	const int lo = g < 8 ? (int)(ld8(s + g) & 0xf) : (int)(ld8(s + g - 8) >> 4);
	const int hi = (int)((ld8(s + 8 + (g & 3)) >> (2 * (g >> 2))) & 3);
	uint32_t q8[2], h8[2];
	int q[8];

	ld64(b + 32 + 32 * n + l0, q8);
	ld64(b + l0, h8);
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const int low = (int)((byte_of(q8, i) >> (2 * j)) & 3);

		q[i] = low - ((byte_of(h8, i) >> (4 * n + j)) & 1 ? 0 : 4);
	}
	k_out(cuq_h2f(ld16(b + 108)), 0.0f, (lo | hi << 4) - 32, 0, q, v);
}

/* quants_k.c's scale_min_k4: 6-bit scale and min of sub-block s (0..7). */
CUQ_FN void scale_min_k4(const uint8_t *sc, int s, int *d, int *m)
{
	if (s < 4) {
		*d = (int)(ld8(sc + s) & 63);
		*m = (int)(ld8(sc + s + 4) & 63);
	} else {
		const uint32_t a = ld8(sc + s + 4);

		*d = (int)((a & 0xf) | (ld8(sc + s - 4) >> 6) << 4);
		*m = (int)((a >> 4) | (ld8(sc + s) >> 6) << 4);
	}
}

/* q4_k: value 64 j + l is the low nibble of qs[32 j + l], 64 j + 32 + l the high
 * one; octet o: sub-block s = o / 4 (j = s / 2, high = s & 1), l = 8 (o % 4) + i. */
CUQ_FN void dq8_q4_k(const uint8_t *b, int o, float *v)
{
	const int s = o >> 2, l0 = 8 * (o & 3);
	uint32_t q8[2];
	int q[8], sc, m;

	scale_min_k4(b + 4, s, &sc, &m);
	ld64(b + 16 + 32 * (s >> 1) + l0, q8);
#pragma unroll
	for (int i = 0; i < 8; i++)
		q[i] = (int)((byte_of(q8, i) >> (4 * (s & 1))) & 0xf);
	k_out(cuq_h2f(ld16(b)), cuq_h2f(ld16(b + 2)), sc, m, q, v);
}

/* q5_k: q4_k with bit s of qh[l] as the fifth bit. */
CUQ_FN void dq8_q5_k(const uint8_t *b, int o, float *v)
{
	const int s = o >> 2, l0 = 8 * (o & 3);
	uint32_t q8[2], h8[2];
	int q[8], sc, m;

	scale_min_k4(b + 4, s, &sc, &m);
	ld64(b + 48 + 32 * (s >> 1) + l0, q8);
	ld64(b + 16 + l0, h8);
#pragma unroll
	for (int i = 0; i < 8; i++)
		q[i] = (int)(((byte_of(q8, i) >> (4 * (s & 1))) & 0xf) |
			     ((byte_of(h8, i) >> s) & 1) << 4);
	k_out(cuq_h2f(ld16(b)), cuq_h2f(ld16(b + 2)), sc, m, q, v);
}

/*
 * q6_k: value 128 n + 32 k + l is nibble k / 2 of ql[64 n + 32 (k & 1) + l] with
 * bits 2k of qh[32 n + l] on top, minus 32; octet o: n = o / 16, k = o / 4 % 4,
 * l = 8 (o % 4) + i; int8 scale of group o / 2.
 */
CUQ_FN void dq8_q6_k(const uint8_t *b, int o, float *v)
{
	const int n = o >> 4, k = (o >> 2) & 3, l0 = 8 * (o & 3);
	uint32_t l8[2], h8[2];
	int q[8];

	ld64(b + 64 * n + 32 * (k & 1) + l0, l8);
	ld64(b + 128 + 32 * n + l0, h8);
#pragma unroll
	for (int i = 0; i < 8; i++)
		q[i] = (int)(((byte_of(l8, i) >> (4 * (k >> 1))) & 0xf) |
			     ((byte_of(h8, i) >> (2 * k)) & 3) << 4) - 32;
	k_out(cuq_h2f(ld16(b + 208)), 0.0f, (int)(int8_t)ld8(b + 192 + (o >> 1)), 0, q, v);
}

/*
 * ---- i-quant codebooks --------------------------------------------------------------
 *
 * The values of the CPU's tables (ggml's iq2xs_grid, iq2s_grid,
 * iq3xxs_grid, iq3s_grid, iq1s_grid), from the same core/cpu/iq..._grid.inc
 * files iq_tables.c includes: the plugin must not link core symbols, so it
 * compiles its own copy of the data.  check_cuda_quant and the backend
 * conformance tests compare the device's values with the CPU's.  Global memory read through the read-only cache: lanes
 * index the grids divergently, which __constant__ memory would serialise.
 */
CUQ_TABLE unsigned long long cuq_iq2xs_grid[512] = {
#include "iq2xs_grid.inc"
};

CUQ_TABLE unsigned long long cuq_iq2s_grid[1024] = {
#include "iq2s_grid.inc"
};

CUQ_TABLE unsigned int cuq_iq3xxs_grid[256] = {
#include "iq3xxs_grid.inc"
};

CUQ_TABLE unsigned int cuq_iq3s_grid[512] = {
#include "iq3s_grid.inc"
};

CUQ_TABLE unsigned long long cuq_iq1s_grid[2048] = {
#include "iq1s_grid.inc"
};


/* ---- i-quants: super-blocks of 256, octets 0..31 (sub-block ib = o / 4, l = o % 4) ---- */

/* Value j of a group: +-v by bit j of the sign byte. */
CUQ_FN float signed_val(float v, uint32_t signs, int j)
{
	return (signs >> j) & 1 ? -v : v;
}

/* iq2_xs: db = d * (0.5 + s) * 0.25, s the nibble of the octet's half (l / 2). */
CUQ_FN void dq8_iq2_xs(const uint8_t *b, int o, float *v)
{
	const int ib = o >> 2, l = o & 3;
	const uint32_t sc = ld8(b + 66 + ib), q = ld16(b + 2 + 2 * o);
	const float s = (float)(l < 2 ? sc & 0xf : sc >> 4);
	const float db = CUQ_MUL(CUQ_MUL(cuq_h2f(ld16(b)), CUQ_ADD(0.5f, s)), 0.25f);
	const unsigned long long g = CUQ_LDG(&cuq_iq2xs_grid[q & 511]);
	const uint32_t signs = cuq_ksigns(q >> 9);

#pragma unroll
	for (int j = 0; j < 8; j++)
		v[j] = signed_val(CUQ_MUL(db, (float)((g >> (8 * j)) & 0xff)), signs, j);
}

/* iq2_s: 10-bit index qs[o] | 2 bits of qh[ib]; explicit sign bytes. */
CUQ_FN void dq8_iq2_s(const uint8_t *b, int o, float *v)
{
	const int ib = o >> 2, l = o & 3;
	const uint32_t sc = ld8(b + 74 + ib), signs = ld8(b + 34 + o);
	const uint32_t idx = ld8(b + 2 + o) | ((ld8(b + 66 + ib) >> (2 * l)) & 3) << 8;
	const float s = (float)(l < 2 ? sc & 0xf : sc >> 4);
	const float db = CUQ_MUL(CUQ_MUL(cuq_h2f(ld16(b)), CUQ_ADD(0.5f, s)), 0.25f);
	const unsigned long long g = CUQ_LDG(&cuq_iq2s_grid[idx]);

#pragma unroll
	for (int j = 0; j < 8; j++)
		v[j] = signed_val(CUQ_MUL(db, (float)((g >> (8 * j)) & 0xff)), signs, j);
}

/* iq3_xxs: two 4-value grid entries qs[2o], qs[2o+1]; the sub-block's u32 holds
 * four 7-bit sign indices and the scale in its top 4 bits: db = d (0.5 + s) 0.5. */
CUQ_FN void dq8_iq3_xxs(const uint8_t *b, int o, float *v)
{
	const int ib = o >> 2, l = o & 3;
	const uint32_t aux = ld32(b + 66 + 4 * ib), qq = ld16(b + 2 + 2 * o);
	const float db = CUQ_MUL(CUQ_MUL(cuq_h2f(ld16(b)), CUQ_ADD(0.5f, (float)(aux >> 28))),
				 0.5f);
	const uint32_t signs = cuq_ksigns((aux >> (7 * l)) & 127);
	const uint32_t g0 = CUQ_LDG(&cuq_iq3xxs_grid[qq & 0xff]);
	const uint32_t g1 = CUQ_LDG(&cuq_iq3xxs_grid[qq >> 8]);

#pragma unroll
	for (int j = 0; j < 4; j++) {
		v[j] = signed_val(CUQ_MUL(db, (float)((g0 >> (8 * j)) & 0xff)), signs, j);
		v[j + 4] = signed_val(CUQ_MUL(db, (float)((g1 >> (8 * j)) & 0xff)), signs, j + 4);
	}
}

/* iq3_s: 9-bit indices qs[2o + i] | bit 2l + i of qh[ib]; db = d (1 + 2 s). */
CUQ_FN void dq8_iq3_s(const uint8_t *b, int o, float *v)
{
	const int ib = o >> 2, l = o & 3;
	const uint32_t qq = ld16(b + 2 + 2 * o), qh = ld8(b + 66 + ib) >> (2 * l);
	const uint32_t signs = ld8(b + 74 + o);
	const int sc = (int)((ld8(b + 106 + (ib >> 1)) >> (4 * (ib & 1))) & 0xf);
	const float db = CUQ_MUL(cuq_h2f(ld16(b)), (float)(1 + 2 * sc));
	const uint32_t g0 = CUQ_LDG(&cuq_iq3s_grid[(qq & 0xff) | (qh & 1) << 8]);
	const uint32_t g1 = CUQ_LDG(&cuq_iq3s_grid[(qq >> 8) | ((qh >> 1) & 1) << 8]);

#pragma unroll
	for (int j = 0; j < 4; j++) {
		v[j] = signed_val(CUQ_MUL(db, (float)((g0 >> (8 * j)) & 0xff)), signs, j);
		v[j + 4] = signed_val(CUQ_MUL(db, (float)((g1 >> (8 * j)) & 0xff)), signs, j + 4);
	}
}

/* iq1_m's f16 block scale, spread over the top nibbles of its four scale u16s. */
CUQ_FN float iq1m_scale(const uint8_t *b)
{
	const uint32_t h = (ld16(b + 48) >> 12) | ((ld16(b + 50) >> 8) & 0x00f0) |
			   ((ld16(b + 52) >> 4) & 0x0f00) | (ld16(b + 54) & 0xf000);

	return cuq_h2f(h);
}

/* iq1_m: 11-bit index qs[o] | 3 bits of the octet's qh nibble, whose bit 3 picks
 * the delta -+1/8; y = dl * (grid + delta), dl = d * (2 ls + 1), ls 3-bit. */
CUQ_FN void dq8_iq1_m(const uint8_t *b, int o, float *v)
{
	const int ib = o >> 2, l = o & 3;
	const uint32_t sc = ld16(b + 48 + 2 * (ib >> 1));
	const uint32_t h = ld8(b + 32 + 2 * ib + (l >> 1)) >> (4 * (l & 1));
	const unsigned long long g = CUQ_LDG(&cuq_iq1s_grid[ld8(b + o) | (h & 7) << 8]);
	const float delta = h & 8 ? -0.125f : 0.125f;
	const int ls = (int)((sc >> (6 * (ib & 1) + 3 * (l >> 1))) & 7);
	const float dl = CUQ_MUL(iq1m_scale(b), (float)(2 * ls + 1));

#pragma unroll
	for (int j = 0; j < 8; j++)
		v[j] = CUQ_MUL(dl, CUQ_ADD((float)(int8_t)((g >> (8 * j)) & 0xff), delta));
}

/* ---- rows --------------------------------------------------------------------------- */

/*
 * Values 8 o .. 8 o + 7 of a row of `type` starting at `row` (even address) into
 * v[0..7].  For F32, F16 and BF16 the octet must lie inside the row (cuq_dq1 takes
 * a tail of fewer than 8).  With `type` a compile-time constant the switch folds.
 */
CUQ_FN void cuq_dq8(uint32_t type, const uint8_t *row, int64_t o, float *v)
{
	const int64_t bo = o >> 5; /* super-block of the 256-value types */
	const int ko = (int)(o & 31);
	const int64_t lb = o >> 2; /* block of the 32-value types */
	const int lo = (int)(o & 3);

	switch (type) {
	case STRATA_TYPE_F32:
#pragma unroll
		for (int j = 0; j < 8; j++)
			v[j] = CUQ_LDG((const float *)row + 8 * o + j);
		break;
	case STRATA_TYPE_F16:
#pragma unroll
		for (int j = 0; j < 8; j++)
			v[j] = cuq_h2f(ld16(row + 2 * (8 * o + j)));
		break;
	case STRATA_TYPE_BF16:
#pragma unroll
		for (int j = 0; j < 8; j++)
			v[j] = cuq_bf2f(ld16(row + 2 * (8 * o + j)));
		break;
	case STRATA_TYPE_Q8_0: dq8_q8_0(row + lb * 34, lo, v); break;
	case STRATA_TYPE_Q4_0: dq8_q4_0(row + lb * 18, lo, v); break;
	case STRATA_TYPE_Q4_1: dq8_q4_1(row + lb * 20, lo, v); break;
	case STRATA_TYPE_Q5_0: dq8_q5_0(row + lb * 22, lo, v); break;
	case STRATA_TYPE_Q5_1: dq8_q5_1(row + lb * 24, lo, v); break;
	case STRATA_TYPE_IQ4_NL: dq8_iq4_nl(row + lb * 18, lo, v); break;
	case STRATA_TYPE_Q2_K: dq8_q2_k(row + bo * 84, ko, v); break;
	case STRATA_TYPE_Q3_K: dq8_q3_k(row + bo * 110, ko, v); break;
	case STRATA_TYPE_Q4_K: dq8_q4_k(row + bo * 144, ko, v); break;
	case STRATA_TYPE_Q5_K: dq8_q5_k(row + bo * 176, ko, v); break;
	case STRATA_TYPE_Q6_K: dq8_q6_k(row + bo * 210, ko, v); break;
	case STRATA_TYPE_IQ2_XS: dq8_iq2_xs(row + bo * 74, ko, v); break;
	case STRATA_TYPE_IQ2_S: dq8_iq2_s(row + bo * 82, ko, v); break;
	case STRATA_TYPE_IQ3_XXS: dq8_iq3_xxs(row + bo * 98, ko, v); break;
	case STRATA_TYPE_IQ3_S: dq8_iq3_s(row + bo * 110, ko, v); break;
	case STRATA_TYPE_IQ1_M: dq8_iq1_m(row + bo * 56, ko, v); break;
	default:
#pragma unroll
		for (int j = 0; j < 8; j++)
			v[j] = cuq_u2f(0x7fc00000u); /* unsupported: NaN, as strata_dequant */
		break;
	}
}

/* Value i of an F32, F16 or BF16 row (the tail past the last whole octet). */
CUQ_FN float cuq_dq1(uint32_t type, const uint8_t *row, int64_t i)
{
	if (type == STRATA_TYPE_F32)
		return CUQ_LDG((const float *)row + i);
	if (type == STRATA_TYPE_F16)
		return cuq_h2f(ld16(row + 2 * i));
	return cuq_bf2f(ld16(row + 2 * i));
}

#endif /* STRATA_CUDA_QUANT_CUH */
