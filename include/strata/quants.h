/*
 * strata/quants.h - GGUF tensor types and the block layouts of the weight
 * types strata computes with, for backends (a device plugin compiles its
 * kernels against these, as ggml's backends share ggml-common.h).
 *
 * The layouts are GGUF's (ggml's numbering and bytes).  A row of n values
 * of a quantised type is n / block consecutive blocks.  Halves ("f16") are
 * IEEE binary16 stored little-endian as uint16_t; every multi-byte field is
 * little-endian.  The comment on each block gives its value formula; the
 * reference dequantisation every backend is tested against is the core's
 * (strata_host.dequantize, host version 3), bit-identical to ggml's.
 *
 * The core checks at compile time that its kernels agree with these
 * structs (sizes and field offsets), so the header cannot drift.
 */
#ifndef STRATA_QUANTS_PUBLIC_H
#define STRATA_QUANTS_PUBLIC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GGUF tensor types.  Values are the file format's and never change. */
enum strata_type {
	STRATA_TYPE_F32 = 0,
	STRATA_TYPE_F16 = 1,
	STRATA_TYPE_Q4_0 = 2,
	STRATA_TYPE_Q4_1 = 3,
	STRATA_TYPE_Q5_0 = 6,
	STRATA_TYPE_Q5_1 = 7,
	STRATA_TYPE_Q8_0 = 8,
	STRATA_TYPE_Q8_1 = 9,
	STRATA_TYPE_Q2_K = 10,
	STRATA_TYPE_Q3_K = 11,
	STRATA_TYPE_Q4_K = 12,
	STRATA_TYPE_Q5_K = 13,
	STRATA_TYPE_Q6_K = 14,
	STRATA_TYPE_Q8_K = 15,
	STRATA_TYPE_IQ2_XXS = 16,
	STRATA_TYPE_IQ2_XS = 17,
	STRATA_TYPE_IQ3_XXS = 18,
	STRATA_TYPE_IQ1_S = 19,
	STRATA_TYPE_IQ4_NL = 20,
	STRATA_TYPE_IQ3_S = 21,
	STRATA_TYPE_IQ2_S = 22,
	STRATA_TYPE_IQ4_XS = 23,
	STRATA_TYPE_I8 = 24,
	STRATA_TYPE_I16 = 25,
	STRATA_TYPE_I32 = 26,
	STRATA_TYPE_I64 = 27,
	STRATA_TYPE_F64 = 28,
	STRATA_TYPE_IQ1_M = 29,
	STRATA_TYPE_BF16 = 30,
	STRATA_TYPE_COUNT = 31,
};

#define STRATA_QK 32    /* values per block of the legacy types */
#define STRATA_QK_K 256 /* values per super-block of the K- and i-quants */

/* ---- legacy types: blocks of 32 ------------------------------------------ */

/* y = d * (q - 8); q = low nibbles (values 0-15), then high nibbles (16-31). */
struct strata_block_q4_0 {
	uint16_t d;
	uint8_t qs[STRATA_QK / 2];
};

/* y = d * q + m; q as Q4_0 (unsigned). */
struct strata_block_q4_1 {
	uint16_t d, m;
	uint8_t qs[STRATA_QK / 2];
};

/* y = d * (q - 16); q = the Q4_0 nibble | bit j of qh << 4. */
struct strata_block_q5_0 {
	uint16_t d;
	uint8_t qh[4];
	uint8_t qs[STRATA_QK / 2];
};

/* y = d * q + m; q as Q5_0 (unsigned). */
struct strata_block_q5_1 {
	uint16_t d, m;
	uint8_t qh[4];
	uint8_t qs[STRATA_QK / 2];
};

/* y = d * q. */
struct strata_block_q8_0 {
	uint16_t d;
	int8_t qs[STRATA_QK];
};

/* Activations for Q4_1/Q5_1 dot products: y = d * q, s = d * sum(q). */
struct strata_block_q8_1 {
	uint16_t d, s;
	int8_t qs[STRATA_QK];
};

/* y = d * kvalues_iq4nl[q] (a 16-entry non-linear codebook); q as Q4_0. */
struct strata_block_iq4_nl {
	uint16_t d;
	uint8_t qs[STRATA_QK / 2];
};

/* ---- K-quants: super-blocks of 256 ---------------------------------------- */

/*
 * 16 groups of 16: y = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4),
 * q 2-bit, four values per byte of qs (shifts 0, 2, 4, 6 over 32-byte runs).
 */
struct strata_block_q2_k {
	uint8_t scales[STRATA_QK_K / 16];
	uint8_t qs[STRATA_QK_K / 4];
	uint16_t d, dmin;
};

/*
 * 16 groups of 16: y = d * (s[g] - 32) * (q - 4 * !hbit), q 2-bit as Q2_K,
 * hbit from hmask; s[g] 6-bit, packed in scales[12].
 */
struct strata_block_q3_k {
	uint8_t hmask[STRATA_QK_K / 8];
	uint8_t qs[STRATA_QK_K / 4];
	uint8_t scales[12];
	uint16_t d;
};

/*
 * 8 groups of 32: y = d * sc[g] * q - dmin * m[g], q 4-bit, sc and m
 * 6-bit packed in scales[12].
 */
struct strata_block_q4_k {
	uint16_t d, dmin;
	uint8_t scales[12];
	uint8_t qs[STRATA_QK_K / 2];
};

/* As Q4_K with a fifth bit per value in qh. */
struct strata_block_q5_k {
	uint16_t d, dmin;
	uint8_t scales[12];
	uint8_t qh[STRATA_QK_K / 8];
	uint8_t qs[STRATA_QK_K / 2];
};

/* 16 groups of 16: y = d * scales[g] * (q - 32), q 6-bit = ql nibble | qh 2 bits << 4. */
struct strata_block_q6_k {
	uint8_t ql[STRATA_QK_K / 2];
	uint8_t qh[STRATA_QK_K / 4];
	int8_t scales[STRATA_QK_K / 16];
	uint16_t d;
};

/* Activations for K-quant dot products: y = d * q; bsums = sums of 16. */
struct strata_block_q8_k {
	float d;
	int8_t qs[STRATA_QK_K];
	int16_t bsums[STRATA_QK_K / 16];
};

/* ---- i-quants: super-blocks of 256, values from lattice codebooks --------- */

/*
 * 32 groups of 8: qs[i] = 9-bit index into the 512-entry iq2xs grid | 7-bit
 * sign index << 9; y = d * (0.5 + s) * 0.25 * grid * sign, s the 4-bit
 * scale of the group's half of 16 (scales[g / 2]).
 */
struct strata_block_iq2_xs {
	uint16_t d;
	uint16_t qs[STRATA_QK_K / 8];
	uint8_t scales[STRATA_QK_K / 32];
};

/*
 * 32 groups of 8: 10-bit index into the 1024-entry iq2s grid = qs[i] |
 * 2 bits of qh; the 32 bytes after the indices are explicit sign bytes;
 * scales as IQ2_XS.
 */
struct strata_block_iq2_s {
	uint16_t d;
	uint8_t qs[STRATA_QK_K / 4];
	uint8_t qh[STRATA_QK_K / 32];
	uint8_t scales[STRATA_QK_K / 32];
};

/*
 * 64 groups of 4: qs[0..63] index the 256-entry iq3xxs grid; the last 32
 * bytes are 8 u32s, each four 7-bit sign indices and a 4-bit scale s in its
 * top bits: y = d * (0.5 + s) * 0.5 * grid * sign.
 */
struct strata_block_iq3_xxs {
	uint16_t d;
	uint8_t qs[3 * STRATA_QK_K / 8];
};

/*
 * 64 groups of 4: 9-bit index into the 512-entry iq3s grid = qs[i] | bit
 * of qh; explicit signs; y = d * (1 + 2 * s) * grid * sign, s 4-bit per 32
 * values (two per byte of scales).
 */
struct strata_block_iq3_s {
	uint16_t d;
	uint8_t qs[STRATA_QK_K / 4];
	uint8_t qh[STRATA_QK_K / 32];
	uint8_t signs[STRATA_QK_K / 8];
	uint8_t scales[STRATA_QK_K / 64];
};

/*
 * 32 groups of 8: 11-bit index into the 2048-entry iq1s grid (values -1,
 * 0, 1) = qs[i] | 3 bits of qh, a delta +-1/8 per group from qh's fourth
 * bit; 3-bit scales; the block's f16 scale d is spread over the top
 * nibbles of the four u16s of scales.
 */
struct strata_block_iq1_m {
	uint8_t qs[STRATA_QK_K / 8];
	uint8_t qh[STRATA_QK_K / 16];
	uint8_t scales[STRATA_QK_K / 32];
};

#ifdef __cplusplus
}
#endif

#endif /* STRATA_QUANTS_PUBLIC_H */
