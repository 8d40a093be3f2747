/*
 * quants_k_r8.h - private: the row-interleaved Q4_K / Q6_K kernels of the
 * AVX2 level (quants_k_r8_avx2.c) and of the AVX-512 level
 * (quants_k_r16_avx512.c), and what they share with quants_k_avx2.c and
 * quants_k_avx512.c, which call them from STRATA_K8_MIN_TOKENS and
 * STRATA_K16_MIN_TOKENS tokens.
 */
#ifndef STRATA_QUANTS_K_R8_H
#define STRATA_QUANTS_K_R8_H

#include "kernels_impl.h"

/*
 * Tokens from which the interleaved kernels pay for their repacking
 * (strata-kbench, one thread, 2026-12-02, Intel Xeon): at AVX2 from 4
 * tokens; at AVX-512, whose one-row kernel is already near the multiplier
 * ports' limit, from about 20 (Q4_K 8 tokens: 45 against 64 GMAC/s, 16: 62
 * against 69, 24: 74 against 70, 64: 87 against 72).
 */
#define STRATA_K8_MIN_TOKENS 4
#define STRATA_K16_MIN_TOKENS 20

void strata_q4_k_r8_avx2(const struct strata_mm_args *a);
void strata_q6_k_r8_avx2(const struct strata_mm_args *a);
/* The Q6_K kernel over weights that fill() unpacks: super-block b of rows
 * [r, r + nr) (nr <= 8) into o (struct k8_blk, quants_k_r8_repack.h). */
struct k8_blk;
typedef void (*strata_k8_fill_fn)(const struct strata_mm_args *a, int64_t r, int nr, int64_t b,
				  struct k8_blk *o);
void strata_q6_k_r8_avx2_fill(const struct strata_mm_args *a, strata_k8_fill_fn fill);
/* The AVX-512 level's, sixteen rows at a time (quants_k_r16_avx512.c). */
void strata_q4_k_r16_avx512(const struct strata_mm_args *a);
void strata_q6_k_r16_avx512(const struct strata_mm_args *a);

#endif
