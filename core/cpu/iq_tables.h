/*
 * iq_tables.h - private: the codebooks of ggml's "i-quant" weight types.
 *
 * IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S and IQ1_M store groups of 8 (or 4) weights
 * as an index into a fixed lattice codebook plus sign bits; the codebooks
 * are part of the GGUF format and equal ggml's tables entry for entry.
 * Each entry packs its 8 (u64) or 4 (u32) magnitudes as bytes, value 0 in
 * the least significant byte:
 *   iq2xs / iq2s grids: 8 bytes from {8, 25, 43}
 *   iq3xxs grid: 4 bytes from {4, 12, ..., 52, 62}
 *   iq3s grid:   4 bytes from {1, 3, ..., 15}
 *   iq1s grid:   8 int8 from {-1, 0, 1} (IQ1_S and IQ1_M share it)
 * ksigns maps 7 sign bits to 8: bit 7 is the parity of the other seven (a
 * group of 8 always has an even number of negative values).
 */
#ifndef STRATA_IQ_TABLES_H
#define STRATA_IQ_TABLES_H

#include <stdint.h>

extern const uint64_t strata_iq2xs_grid[512];
extern const uint64_t strata_iq2s_grid[1024];
extern const uint32_t strata_iq3xxs_grid[256];
extern const uint32_t strata_iq3s_grid[512];
extern const uint64_t strata_iq1s_grid[2048];
extern const uint8_t strata_ksigns_iq2xs[128];

#endif
