/*
 * iq_tables.c - the codebooks of ggml's IQ weight types (see iq_tables.h).
 *
 * Generated data: ggml's iq2xs_grid, iq2s_grid, iq3xxs_grid, iq3s_grid and
 * iq1s_grid, entry for entry (a lattice codebook is part of the file
 * format: the same index must give the same 8 or 4 bytes as in ggml).
 * Entry i holds its values in bytes 0.. (little-endian), value 0 first.
 */
#include "iq_tables.h"


const uint64_t strata_iq2xs_grid[512] = {
#include "iq2xs_grid.inc"
};

const uint64_t strata_iq2s_grid[1024] = {
#include "iq2s_grid.inc"
};

const uint32_t strata_iq3xxs_grid[256] = {
#include "iq3xxs_grid.inc"
};

const uint32_t strata_iq3s_grid[512] = {
#include "iq3s_grid.inc"
};

const uint64_t strata_iq1s_grid[2048] = {
#include "iq1s_grid.inc"
};

/* Bit 7 makes the number of set bits even (ggml's ksigns_iq2xs). */
const uint8_t strata_ksigns_iq2xs[128] = {
	  0, 129, 130,   3, 132,   5,   6, 135, 136,   9,  10, 139,
	 12, 141, 142,  15, 144,  17,  18, 147,  20, 149, 150,  23,
	 24, 153, 154,  27, 156,  29,  30, 159, 160,  33,  34, 163,
	 36, 165, 166,  39,  40, 169, 170,  43, 172,  45,  46, 175,
	 48, 177, 178,  51, 180,  53,  54, 183, 184,  57,  58, 187,
	 60, 189, 190,  63, 192,  65,  66, 195,  68, 197, 198,  71,
	 72, 201, 202,  75, 204,  77,  78, 207,  80, 209, 210,  83,
	212,  85,  86, 215, 216,  89,  90, 219,  92, 221, 222,  95,
	 96, 225, 226,  99, 228, 101, 102, 231, 232, 105, 106, 235,
	108, 237, 238, 111, 240, 113, 114, 243, 116, 245, 246, 119,
	120, 249, 250, 123, 252, 125, 126, 255,
};
