/*
 * q4_k_r16.h - private: Q4_K weights repacked at load into groups of
 * sixteen interleaved rows (kernels.h: STRATA_LAYOUT_Q4_K_R16).
 *
 * Why: a GGUF Q4_K row costs its one-token kernel a scale decode, a
 * horizontal sum and a float step per row and super-block, and the AVX-512
 * kernel reached only about 60% of the memory rate with two threads.  With
 * sixteen rows side by side, one vector holds the same four values of every
 * row: vpdpbusd sums them straight into one int32 lane per row, the
 * sub-block scales apply lane by lane, and the result is already a vector
 * of sixteen outputs.  The same bytes serve prompts (the nibbles split once
 * per vector for up to eight tokens), so the per-call repack goes away.
 *
 * A matrix of R rows (a multiple of 16) takes exactly the bytes of its GGUF
 * rows.  Group g (rows 16g .. 16g + 15) starts at data + 16 g row_bytes;
 * its super-blocks (256 columns) follow one another, 2304 bytes each:
 *
 *   0     32 bytes  d, fp16, rows 0..15
 *   32    32 bytes  dmin, fp16, rows 0..15
 *   64   192 bytes  the 12 packed scale bytes, byte k of row r at 64 + 16 k + r
 *   256 2048 bytes  qs: chunk h (0..3) x column c (0..7), 64 bytes each at
 *                   256 + 512 h + 64 c: bytes 32 h + 4 c .. + 3 of rows
 *                   0..7 (4 bytes a row), then of rows 8..15
 *
 * So each 64-byte vector's low nibbles are values 64 h + 4 c .. + 3 of
 * sub-block 2 h and its high nibbles values 64 h + 32 + 4 c .. of sub-block
 * 2 h + 1; the AVX2 kernel reads either 32-byte half as a group of eight.
 *
 * Float order, at every level and batch size: per super-block the exact
 * integer sums S = sum sc_j x dot_j and M = sum m_j x bsum32_j, then
 * y = fma(float(S), d d_x, y) and y = fma(-float(M), dmin d_x, y): the
 * order of the AVX2 level's GGUF-layout Q4_K kernels, so at that level the
 * two layouts give the same bits.
 */
#ifndef STRATA_Q4_K_R16_H
#define STRATA_Q4_K_R16_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_impl.h"

#define STRATA_Q4K_R16_ROWS 16
#define STRATA_Q4K_R16_SB 2304 /* one super-block of sixteen rows */
#define STRATA_Q4K_R16_SC 64   /* offset of the scale planes */
#define STRATA_Q4K_R16_QS 256  /* offset of the values */

/* Row r's super-blocks in GGUF order (sixteen rows w[j]) into the
 * group's bytes at dst, nb super-blocks from 0. */
void strata_q4_k_r16_pack(const uint8_t *const w[STRATA_Q4K_R16_ROWS], int64_t nb, uint8_t *dst);

/* Row r as floats: strata_dequant's values for the GGUF row. */
struct strata_mat;
void strata_q4_k_r16_get_row(const struct strata_mat *m, int64_t r, float *dst);

/* The level tables' entries for repacked weights (Q8_K activations). */
void strata_q4_k_r16_mm_scalar(const struct strata_mm_args *a);
#if defined(STRATA_KERN_X86)
void strata_q4_k_r16_mm_avx2(const struct strata_mm_args *a);
void strata_q4_k_r16_mm_avx512(const struct strata_mm_args *a);
#endif

#endif
