/*
 * quants.h - private: the legacy (Q4_0 .. Q5_1, IQ4_NL) and K-quant (Q2_K ..
 * Q6_K) weight kernels that the level tables in kernels_scalar.c,
 * kernels_avx2.c and kernels_avx512.c list.  The block layouts are GGUF's
 * (ggml's); the arithmetic is this project's own.
 *
 * Naming: strata_<type>_<what>[_<level>], e.g. strata_q4_k_mm_avx512.
 * _to_float functions must give bit-identical floats at every level (they
 * equal ggml's dequantisation); _mm functions are tile kernels
 * (strata_mm_fn) reading the activation format their table entry names.
 */
#ifndef STRATA_QUANTS_H
#define STRATA_QUANTS_H

#include <stdint.h>

#include "kernels_impl.h"

/* Block sizes in bytes (GGUF). */
#define STRATA_Q4_0_BYTES 18
#define STRATA_Q4_1_BYTES 20
#define STRATA_Q5_0_BYTES 22
#define STRATA_Q5_1_BYTES 24
#define STRATA_IQ4_NL_BYTES 18
#define STRATA_Q2_K_BYTES 84
#define STRATA_Q3_K_BYTES 110
#define STRATA_Q4_K_BYTES 144
#define STRATA_Q5_K_BYTES 176
#define STRATA_Q6_K_BYTES 210

/* The IQ4_NL codebook (ggml's kvalues_iq4nl). */
extern const int8_t strata_iq4nl_values[16];

#define STRATA_DECL_SCALAR(t)                                                \
	void strata_##t##_to_float(const void *src, float *dst, int64_t n);  \
	void strata_##t##_from_float(const float *src, void *dst, int64_t n); \
	void strata_##t##_mm(const struct strata_mm_args *a);
#define STRATA_DECL_MM(t, lv)                                                \
	void strata_##t##_mm_##lv(const struct strata_mm_args *a);
#define STRATA_DECL_TO_FLOAT(t, lv)                                          \
	void strata_##t##_to_float_##lv(const void *src, float *dst, int64_t n);

/* quants_legacy.c */
STRATA_DECL_SCALAR(q4_0)
STRATA_DECL_SCALAR(q4_1)
STRATA_DECL_SCALAR(q5_0)
STRATA_DECL_SCALAR(q5_1)
STRATA_DECL_SCALAR(iq4_nl)
/* q8_0_r16_avx512.c */
STRATA_DECL_MM(q8_0, avx512)
/* quants_legacy_avx512.c */
STRATA_DECL_MM(q4_0, avx512)
STRATA_DECL_MM(q5_0, avx512)
STRATA_DECL_MM(iq4_nl, avx512)
STRATA_DECL_TO_FLOAT(q4_0, avx512)
STRATA_DECL_TO_FLOAT(q5_0, avx512)
STRATA_DECL_TO_FLOAT(iq4_nl, avx512)
STRATA_DECL_MM(q4_1, avx512)
STRATA_DECL_MM(q5_1, avx512)
STRATA_DECL_TO_FLOAT(q4_1, avx512)
STRATA_DECL_TO_FLOAT(q5_1, avx512)
void strata_q8_1_quantize_avx512(const float *x, void *dst, int64_t k);
/* q8_0_r8_avx2.c */
STRATA_DECL_MM(q8_0, avx2)
/* quants_legacy_avx2.c */
STRATA_DECL_MM(q4_0, avx2)
STRATA_DECL_MM(q5_0, avx2)
STRATA_DECL_MM(iq4_nl, avx2)
STRATA_DECL_TO_FLOAT(q4_0, avx2)
STRATA_DECL_TO_FLOAT(q5_0, avx2)
STRATA_DECL_TO_FLOAT(iq4_nl, avx2)
STRATA_DECL_MM(q4_1, avx2)
STRATA_DECL_MM(q5_1, avx2)
STRATA_DECL_TO_FLOAT(q4_1, avx2)
STRATA_DECL_TO_FLOAT(q5_1, avx2)
void strata_q8_1_quantize_avx2(const float *x, void *dst, int64_t k);
/* quants_k.c */
STRATA_DECL_SCALAR(q2_k)
STRATA_DECL_SCALAR(q3_k)
STRATA_DECL_SCALAR(q4_k)
STRATA_DECL_SCALAR(q5_k)
STRATA_DECL_SCALAR(q6_k)
/* quants_k_avx512.c */
STRATA_DECL_MM(q2_k, avx512)
STRATA_DECL_MM(q3_k, avx512)
STRATA_DECL_MM(q4_k, avx512)
STRATA_DECL_MM(q5_k, avx512)
STRATA_DECL_MM(q6_k, avx512)
void strata_q8k_quantize_avx512(const float *x, void *dst, int64_t k);
/* quants_k_avx2.c */
void strata_q8k_quantize_avx2(const float *x, void *dst, int64_t k);
STRATA_DECL_MM(q2_k, avx2)
STRATA_DECL_MM(q3_k, avx2)
STRATA_DECL_MM(q4_k, avx2)
STRATA_DECL_MM(q5_k, avx2)
STRATA_DECL_MM(q6_k, avx2)

#endif
