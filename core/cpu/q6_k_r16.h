/*
 * q6_k_r16.h - private: Q6_K weights repacked at load into groups of
 * sixteen interleaved rows (kernels.h: STRATA_LAYOUT_Q6_K_R16), for the
 * reasons q4_k_r16.h gives for Q4_K.
 *
 * A matrix of R rows (a multiple of 16) takes exactly the bytes of its GGUF
 * rows.  Group g (rows 16g .. 16g + 15) starts at data + 16 g row_bytes;
 * its super-blocks (256 columns) follow one another, 3360 bytes each (so
 * every other one starts 32 bytes off a 64-byte line):
 *
 *   0    3072 bytes  the 6-bit values: half n (0, 1) x column c (0..7) x
 *                    plane p (0..2), 64 bytes each at 1536 n + 192 c + 64 p:
 *                    four bytes a row, rows 0..7 then 8..15
 *   3072  256 bytes  scales (int8): scale k of row r at 3072 + 16 k + r
 *   3328   32 bytes  d, fp16, rows 0..15
 *
 * Byte i (0..3) of a row in column c of half n holds, with v_qq the 6-bit
 * value of weight 128 n + 32 qq + 4 c + i (GGUF's order; sub-block 8 n +
 * 2 qq + c / 4):
 *   plane 0: v_0 | (v_2 >> 4) << 6     plane 1: v_1 | (v_3 >> 4) << 6
 *   plane 2: (v_2 & 15) | (v_3 & 15) << 4
 * so v_0 and v_1 take one AND each and v_2, v_3 four and five operations
 * (11 a 128 values; GGUF's ql/qh split took 17-18): two whole 6-bit values
 * and two split ones in every three bytes.
 *
 * Float order, at every level and batch size: per super-block the exact
 * integer sum S = sum sc_j (dot_j - 32 bsum_j), then y = fma(float(S),
 * d d_x, y): the AVX2 level's GGUF-layout order.
 */
#ifndef STRATA_Q6_K_R16_H
#define STRATA_Q6_K_R16_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_impl.h"

#define STRATA_Q6K_R16_ROWS 16
#define STRATA_Q6K_R16_SB 3360 /* one super-block of sixteen rows */
#define STRATA_Q6K_R16_HALF 1536 /* bytes of one half's values */
#define STRATA_Q6K_R16_COL 192   /* bytes of one column's three planes */
#define STRATA_Q6K_R16_SC 3072 /* offset of the scale planes */
#define STRATA_Q6K_R16_D 3328  /* offset of the row scales */

/* Sixteen GGUF rows w[j], nb super-blocks from 0, into the group at dst. */
void strata_q6_k_r16_pack(const uint8_t *const w[STRATA_Q6K_R16_ROWS], int64_t nb, uint8_t *dst);

/* Row r as floats: strata_dequant's values for the GGUF row. */
struct strata_mat;
void strata_q6_k_r16_get_row(const struct strata_mat *m, int64_t r, float *dst);

/* The level tables' entries for repacked weights (Q8_K activations). */
void strata_q6_k_r16_mm_scalar(const struct strata_mm_args *a);
#if defined(STRATA_KERN_X86)
void strata_q6_k_r16_mm_avx2(const struct strata_mm_args *a);
void strata_q6_k_r16_mm_avx512(const struct strata_mm_args *a);
#endif

#endif
