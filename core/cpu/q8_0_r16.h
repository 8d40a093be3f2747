/*
 * q8_0_r16.h - private: Q8_0 weights repacked at load into groups of
 * sixteen interleaved rows (kernels.h: STRATA_LAYOUT_Q8_0_R16), the layout
 * the interleaved kernels (q8_0_r8_avx2.c, q8_0_r16_avx512.c) otherwise
 * rebuild per call in a small buffer.
 *
 * A matrix of R rows (a multiple of 16) and K columns (a multiple of 64)
 * takes exactly the bytes of its GGUF rows.  Group g (rows 16g .. 16g + 15)
 * starts at data + 16 g row_bytes; within a group, blocks (32 columns) go
 * in pairs of 1088 bytes, so every vector load is aligned to its width:
 *
 *   64 bytes   fp16 scales: block 2p's sixteen rows, then block 2p + 1's
 *   512 bytes  block 2p's values, 8 x 64 bytes: chunk c holds bytes
 *              4c .. 4c + 3 of rows 0..7 (32 bytes), then of rows 8..15
 *   512 bytes  block 2p + 1's values, the same way
 *
 * The values stay signed (GGUF's); the AVX-512 kernel flips them to
 * unsigned per load.  The AVX2 kernel reads either half of a chunk as its
 * eight-row group.
 */
#ifndef STRATA_Q8_0_R16_H
#define STRATA_Q8_0_R16_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_impl.h"

#define STRATA_R16_ROWS 16
#define STRATA_R16_PAIR_BYTES 1088 /* two blocks of sixteen rows */

/* Offsets of block b's scales and values from its group's start. */
static inline size_t strata_r16_d_off(int64_t b)
{
	return (size_t)(b >> 1) * STRATA_R16_PAIR_BYTES + 32 * (size_t)(b & 1);
}

static inline size_t strata_r16_q_off(int64_t b)
{
	return (size_t)(b >> 1) * STRATA_R16_PAIR_BYTES + 64 + 512 * (size_t)(b & 1);
}

/*
 * Blocks [b0, b0 + nb) of sixteen GGUF rows (w[j]: row j) into dst, laid
 * out as a group's blocks from b0 (b0 even).  Portable; the kernels' own
 * per-call repacks write the same bytes.
 */
void strata_q8_0_r16_pack_blocks(const uint8_t *const w[STRATA_R16_ROWS], int64_t b0, int nb,
				 uint8_t *dst);

/* Row r as floats: strata_dequant's values for the GGUF row. */
struct strata_mat;
void strata_q8_0_r16_get_row(const struct strata_mat *m, int64_t r, float *dst);

/* The level tables' entries for repacked weights (same activations as the
 * level's Q8_0). */
void strata_q8_0_r16_mm_scalar(const struct strata_mm_args *a);
#if defined(STRATA_KERN_X86)
void strata_q8_0_r16_mm_avx2(const struct strata_mm_args *a);
void strata_q8_0_r16_mm_avx512(const struct strata_mm_args *a);
#endif

#endif
