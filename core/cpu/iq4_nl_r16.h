/*
 * iq4_nl_r16.h - private: IQ4_NL weights repacked at load into groups of
 * sixteen interleaved rows (kernels.h: STRATA_LAYOUT_IQ4_NL_R16).
 *
 * Why: a GGUF IQ4_NL row costs its one-token kernel a nibble split, a
 * table lookup, an int-to-float step and an FMA per row and 32 values,
 * which held it at 25-30% of the memory rate.  With sixteen rows side by
 * side, one 32-byte vector holds the same eight values of eight rows: the
 * lookups, products and sums serve eight rows at once, and a block's
 * float step is one FMA for eight rows.
 *
 * A matrix of R rows (a multiple of 16, cols a multiple of 64) takes
 * exactly the bytes of its GGUF rows.  Group g (rows 16g .. 16g + 15)
 * starts at data + 16 g row_bytes; its pairs of blocks (64 columns) follow
 * one another, 576 bytes each (so each starts 64-byte aligned where the
 * group does):
 *
 *   0     64 bytes  d, fp16: block 2p's rows 0..15, then block 2p + 1's
 *   64   512 bytes  block 2p's values, then block 2p + 1's: chunk c
 *                   (0..3) at 64 c: bytes 4c .. 4c + 3 of rows 0..7
 *                   (4 bytes a row), then of rows 8..15
 *
 * So a 32-byte half-chunk's low nibbles are values 4c .. 4c + 3 of eight
 * rows and its high nibbles values 16 + 4c .. 16 + 4c + 3.
 *
 * Float order, at every level and batch size: y = fold over blocks b of
 * fma(float(S_b), d_w(b) * d_x(b), y) from y = 0, S_b the exact integer
 * dot of block b (the order of the Q8_0 layouts, q8_0_r16.h).  The GGUF
 * layout's kernels sum otherwise: the last bits may differ.
 */
#ifndef STRATA_IQ4_NL_R16_H
#define STRATA_IQ4_NL_R16_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_impl.h"

#define STRATA_IQ4NL_R16_ROWS 16
#define STRATA_IQ4NL_R16_PAIR 576 /* two blocks of sixteen rows */

/* Byte offsets, in a group, of block b's sixteen fp16 d and of its values. */
static inline size_t strata_iq4nl_r16_d_off(int64_t b)
{
	return (size_t)(b >> 1) * STRATA_IQ4NL_R16_PAIR + 32 * (size_t)(b & 1);
}

static inline size_t strata_iq4nl_r16_q_off(int64_t b)
{
	return (size_t)(b >> 1) * STRATA_IQ4NL_R16_PAIR + 64 + 256 * (size_t)(b & 1);
}

/* A first pass's look-ahead: block b + dist / 288's values and scales
 * (the scales once per pair, where the pair starts). */
static inline void strata_iq4nl_r16_prefetch(const uint8_t *g, int64_t b, size_t dist)
{
	const uint8_t *q = g + strata_iq4nl_r16_q_off(b) + dist;

	for (int l = 0; l < 256; l += 64)
		__builtin_prefetch(q + l, 0, 3);
	if (!(b & 1))
		__builtin_prefetch(g + strata_iq4nl_r16_d_off(b) + dist, 0, 3);
}

/* Sixteen GGUF rows w[j] of nb blocks (nb even) into the group at dst. */
void strata_iq4_nl_r16_pack(const uint8_t *const w[STRATA_IQ4NL_R16_ROWS], int64_t nb,
			    uint8_t *dst);

/* Row r as floats: strata_dequant's values for the GGUF row. */
struct strata_mat;
void strata_iq4_nl_r16_get_row(const struct strata_mat *m, int64_t r, float *dst);

/* The level tables' entries for repacked weights (each level's Q8_0 activations). */
void strata_iq4_nl_r16_mm_scalar(const struct strata_mm_args *a);
#if defined(STRATA_KERN_X86)
void strata_iq4_nl_r16_mm_avx2(const struct strata_mm_args *a);
void strata_iq4_nl_r16_mm_avx512(const struct strata_mm_args *a);
#endif

#endif
