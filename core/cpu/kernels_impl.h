/*
 * kernels_impl.h - private: the per-SIMD-level kernel tables behind kernels.h.
 *
 * A weight type is computed in two steps: the activations (f32 input rows)
 * are first brought into the type's activation format (for Q8_0: int8 blocks
 * with a scale, so the dot product is an integer one), then a tile kernel
 * computes y for a range of rows and tokens.  Every level fills a table of
 * these; adding a weight type means adding its scalar entries (required, and
 * the reference the tests compare against) and, where it pays, SIMD entries.
 * A level whose entry is NULL falls back to the scalar one as a whole
 * (activation layout and kernel), because layouts may differ between levels.
 *
 * Only kernels.c (dispatch), matmul.c (the driver), the level tables and the
 * tests include this header.
 */
#ifndef STRATA_KERNELS_IMPL_H
#define STRATA_KERNELS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

/*
 * Activation formats.  Their quantised values and scales are the same at
 * every level (tests check it, so results agree across levels up to float
 * summation order); the byte layout of a row may differ per level.
 *
 * Q8_0 matches ggml's x86 quantize_row_q8_0: per 32 values amax, scale
 * d = fp16(amax / 127), q = round-to-nearest-even(x * (127 / amax)).  Levels
 * store d already widened back to float.
 *
 * Q8_K (for the K-quants and the 256-block IQ types) matches ggml's
 * quantize_row_q8_K: per 256 values the value of largest magnitude xm,
 * iscale = -127 / xm, q = min(127, round-to-nearest-even(x * iscale)),
 * d = 1 / iscale (a float), and bsums = the sums of each 16 consecutive q.
 * Its row layout is the SAME at every level (see the STRATA_Q8K_* helpers
 * below), so any level's kernels may read any level's Q8_K rows.
 *
 * Q8_1 (for Q4_1 / Q5_1) has Q8_0's values and scales plus, per block,
 * s = d * sum(q) (exact in float); same layout at every level too.
 */
enum strata_act {
	STRATA_ACT_F32 = 0, /* the f32 input is used in place */
	STRATA_ACT_Q8_0 = 1,
	STRATA_ACT_Q8_K = 2,
	STRATA_ACT_Q8_1 = 3,
	STRATA_ACT_COUNT
};

struct strata_act_ops {
	/* Bytes of one token's activations for k inputs; a multiple of 64. */
	size_t (*row_bytes)(int64_t k);
	/* Convert k floats (a multiple of the format's block) into dst. */
	void (*quantize)(const float *x, void *dst, int64_t k);
	/* Read back value i's int8 and its block's scale (tests only). */
	void (*peek)(const void *row, int64_t k, int64_t i, int8_t *q, float *d);
};

/* One tile-kernel call: y[t*ldy + r] for r < nr, t < nt. */
struct strata_mm_args {
	const uint8_t *w;  /* first weight row */
	size_t w_stride;   /* bytes between weight rows */
	const uint8_t *x;  /* first token's activations (f32 or act format) */
	size_t x_stride;   /* bytes between tokens' activations */
	float *y;          /* output of (row 0, token 0) */
	int64_t ldy;       /* floats between tokens' outputs */
	int64_t nr, nt;    /* rows and tokens in this call */
	int64_t k;         /* inputs per row */
};

typedef void (*strata_mm_fn)(const struct strata_mm_args *a);

struct strata_type_ops {
	uint8_t act;    /* enum strata_act */
	strata_mm_fn mm;
	/* n values (multiple of the block) to float, bit-exact at every level. */
	void (*to_float)(const void *src, float *dst, int64_t n);
	/* n floats to the GGUF layout (kernels.h: strata_quantize; scalar
	 * table only: model files must not depend on the CPU). */
	void (*from_float)(const float *src, void *dst, int64_t n);
	/* Tables from_float builds once, thread-safe (0 or -errno); NULL when
	 * it needs none. */
	int (*from_float_init)(void);
};

struct strata_kern_level {
	const char *name;
	struct strata_act_ops act[STRATA_ACT_COUNT];
	struct strata_type_ops type[STRATA_TYPE_COUNT];
	/* Q8_0 weights in STRATA_LAYOUT_Q8_0_R16, with type[Q8_0]'s activations */
	strata_mm_fn q8_0_r16_mm;
	/* Q4_K and Q6_K weights in their R16 layouts, Q8_K activations */
	strata_mm_fn q4_k_r16_mm;
	strata_mm_fn q6_k_r16_mm;
	/* IQ4_NL weights in STRATA_LAYOUT_IQ4_NL_R16, with type[IQ4_NL]'s activations */
	strata_mm_fn iq4_nl_r16_mm;
	float (*dot_f32)(const float *a, const float *b, int64_t n);
	void (*axpy_f32)(float *y, float a, const float *x, int64_t n);
	void (*axpby_f32)(float *y, float a, const float *x, float b, int64_t n);
	void (*mul_acc_f32)(float *y, const float *a, const float *b, int64_t n);
	/* o = g / (1 + exp(-g)) * u and o = x / (1 + exp(-y)); o may be g or x */
	void (*silu_mul_f32)(float *o, const float *g, const float *u, int64_t n);
	void (*sigmoid_mul_f32)(float *o, const float *x, const float *y, int64_t n);
	/* RMSNorm's halves (kernels.h: strata_sumsq_f32, strata_scale_mul_f32) */
	double (*sumsq_f32)(const float *x, int64_t n);
	void (*scale_mul_f32)(float *y, const float *x, float s, const float *w, int64_t n);
};

extern const struct strata_kern_level strata_kern_scalar;
/* The x86 SIMD levels, unless the build leaves them out (cmake -DSTRATA_SIMD=OFF). */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(STRATA_NO_SIMD)
#define STRATA_KERN_X86 1
extern const struct strata_kern_level strata_kern_avx2;
extern const struct strata_kern_level strata_kern_avx512;
/* the AVX2 level's, which the AVX-512 level shares (norm-sized vectors) */
double strata_sumsq_f32_avx2(const float *x, int64_t n);
void strata_scale_mul_f32_avx2(float *y, const float *x, float s, const float *w, int64_t n);
#endif

/* Table of a level (NULL when not built for this architecture). */
const struct strata_kern_level *strata_kern_level_get(int level);
/* The table that computes `type`: the current level, or scalar where the
 * current level has no entry. */
const struct strata_kern_level *strata_kern_level_for(uint32_t type);
/* The tile kernel for W (its layout) at level lv (strata_kern_level_for(W->type)). */
struct strata_mat;
strata_mm_fn strata_kern_mm_for(const struct strata_kern_level *lv, const struct strata_mat *W);

/* Q8_0 weight block: fp16 scale then 32 int8 values (GGUF layout). */
#define STRATA_Q8_0_BYTES 34
#define STRATA_QK8_0 32

/*
 * Q8_K activation row for k inputs (k a multiple of 256), 64-byte aligned:
 *   int8_t  qs[k]        the quantised values (block b at qs + 256 b)
 *   int16_t bsums[k/16]  sum of qs[16 j .. 16 j + 15]
 *   float   d[k/256]     the block scales
 * then padding to a multiple of 64 bytes.
 */
#define STRATA_QK_K 256
#define STRATA_Q8K_QS(row) ((const int8_t *)(row))
#define STRATA_Q8K_BSUMS(row, k) \
	((const int16_t *)((const uint8_t *)(row) + (k)))
#define STRATA_Q8K_D(row, k) \
	((const float *)((const uint8_t *)(row) + (k) + (k) / 8))
#define STRATA_Q8K_ROW_BYTES(k) \
	(((size_t)(k) + (size_t)(k) / 8 + (size_t)(k) / 64 + 63) & ~(size_t)63)

/*
 * The AVX-512 level's Q8_0 activation row (kernels_avx512.c): int32
 * corr[k/4] (-128 x each group of four q), int8 qs[k], float d[k/32], int32
 * bsum[k/32] (-128 x each block's q).  The other levels' rows are qs[k],
 * d[k/32]: this row from STRATA_Q8_0X_QS on reads as theirs.
 */
#define STRATA_Q8_0X_QS(row, k) ((const int8_t *)(row) + (k))
#define STRATA_Q8_0X_D(row, k) ((const float *)((const uint8_t *)(row) + 2 * (k)))
#define STRATA_Q8_0X_BSUM(row, k) \
	((const int32_t *)(STRATA_Q8_0X_D(row, k) + (k) / STRATA_QK8_0))

/*
 * Q8_1 activation row for k inputs (k a multiple of 32), 64-byte aligned:
 *   int8_t qs[k];  float d[k/32];  float s[k/32] (s = d * sum of the q)
 */
#define STRATA_Q8_1_QS(row) ((const int8_t *)(row))
#define STRATA_Q8_1_D(row, k) ((const float *)((const uint8_t *)(row) + (k)))
#define STRATA_Q8_1_S(row, k) \
	((const float *)((const uint8_t *)(row) + (k) + (k) / 8))
#define STRATA_Q8_1_ROW_BYTES(k) \
	(((size_t)(k) + (size_t)(k) / 4 + 63) & ~(size_t)63)

/* Q8_K / Q8_1 activation quantisers (quants_k.c, quants_legacy.c): the
 * same layout at every level, so every level may list these. */
void strata_q8k_quantize(const float *x, void *dst, int64_t k);
void strata_q8k_peek(const void *row, int64_t k, int64_t i, int8_t *q, float *d);
size_t strata_q8k_row_bytes(int64_t k);
void strata_q8_1_quantize(const float *x, void *dst, int64_t k);
void strata_q8_1_peek(const void *row, int64_t k, int64_t i, int8_t *q, float *d);
size_t strata_q8_1_row_bytes(int64_t k);

#endif
