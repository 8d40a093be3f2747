/*
 * quants_iq.h - private: the i-quant weight types IQ2_XS, IQ2_S, IQ3_XXS,
 * IQ3_S and IQ1_M (ggml's lattice-codebook quants, 256 values per block),
 * as listed by the level tables in kernels_scalar.c, kernels_avx2.c and
 * kernels_avx512.c.
 *
 * Block layouts (GGUF, little-endian), offsets in bytes:
 *   IQ2_XS  74: d f16 @0, qs u16[32] @2 (9-bit grid index | 7 sign bits),
 *               scales u8[8] @66 (a 4-bit scale per 16 values)
 *   IQ2_S   82: d f16 @0, qs u8[32] @2 (grid index low 8 bits), signs
 *               u8[32] @34, qh u8[8] @66 (2 high index bits per 8 values),
 *               scales u8[8] @74 (4 bits per 16 values)
 *   IQ3_XXS 98: d f16 @0, qs u8[64] @2 (grid index per 4 values), then per
 *               32 values a u32 @66: 4 x 7 sign bits, 4-bit scale on top
 *   IQ3_S  110: d f16 @0, qs u8[64] @2, qh u8[8] @66 (index bit 8), signs
 *               u8[32] @74 (one bit per value), scales u8[4] @106 (4 bits
 *               per 32 values)
 *   IQ1_M   56: qs u8[32] @0 (grid index low 8 bits per 8 values), qh
 *               u8[16] @32 (per 8 values: 3 high index bits + a delta sign
 *               bit), scales u16[4] @48 (3-bit scale per 16 values; the top
 *               nibbles of the four u16 together are the f16 block scale)
 *
 * The arithmetic is this project's own.  Weights are computed against Q8_K
 * activations (kernels_impl.h) with exact integer sums per block: every
 * i-quant weight is (block scale) x (small integer scale) x (grid value,
 * signed) up to a constant power of two, so a block's dot product is an
 * int32 and only the per-block float products round.
 *
 * The quantisers (_from_float, quants_iq_quant.c) search each type's
 * codebook through neighbour tables that _quant_init builds once (0, or
 * -ENOMEM); strata_quantize calls it before the first block.
 *
 * Naming as in quants.h: strata_<type>_<what>[_<level>].  _to_float is
 * bit-identical to ggml's dequantisation (the SIMD levels use the scalar
 * one); _mm are tile kernels (strata_mm_fn) reading Q8_K activations.
 */
#ifndef STRATA_QUANTS_IQ_H
#define STRATA_QUANTS_IQ_H

#include <stdint.h>

#include "kernels_impl.h"

#define STRATA_IQ2_XS_BYTES 74
#define STRATA_IQ2_S_BYTES 82
#define STRATA_IQ3_XXS_BYTES 98
#define STRATA_IQ3_S_BYTES 110
#define STRATA_IQ1_M_BYTES 56

#define STRATA_IQ_DECL(t)                                                    \
	void strata_##t##_to_float(const void *src, float *dst, int64_t n);  \
	void strata_##t##_from_float(const float *src, void *dst, int64_t n); \
	int strata_##t##_quant_init(void);                                   \
	void strata_##t##_mm(const struct strata_mm_args *a);                \
	void strata_##t##_mm_avx2(const struct strata_mm_args *a);           \
	void strata_##t##_mm_avx512(const struct strata_mm_args *a);

/*
 * The AVX-512 level's one-token rows of IQ2_XS, IQ3_XXS and IQ3_S look the
 * codebook up with VBMI permutes where the CPU has them (the default there)
 * or with scalar loads as the AVX2 level does (on = 0; tests compare both).
 * Returns the setting before, or -ENOTSUP for on = 1 without VBMI.  Built
 * with the x86 levels only.
 */
int strata_iq_vbmi_set(int on);

STRATA_IQ_DECL(iq2_xs)
STRATA_IQ_DECL(iq2_s)
STRATA_IQ_DECL(iq3_xxs)
STRATA_IQ_DECL(iq3_s)
STRATA_IQ_DECL(iq1_m)

#endif
