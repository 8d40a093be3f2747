/*
 * kernels.h - CPU compute kernels: dequantisation, dot products, matmul.
 *
 * Each kernel has a scalar reference and, where it pays, AVX2 and AVX-512
 * versions compiled in separate translation units with their own -m flags; the
 * best one the CPU supports is chosen at run time (strata_simd_detect) and
 * can be forced (tests run every level against scalar; env STRATA_SIMD=
 * scalar|avx2|avx512 caps it).
 *
 * Weights are row-major: a matrix of `rows` rows of `cols` values, each row
 * stored as strata_type_row_bytes(type, cols) bytes (GGUF's ne[0] = cols).
 * Weights are read in place (they live in the model's memory map).
 */
#ifndef STRATA_KERNELS_H
#define STRATA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "types.h"

enum strata_simd {
	STRATA_SIMD_SCALAR = 0,
	STRATA_SIMD_AVX2 = 1,   /* AVX2 + FMA + F16C */
	STRATA_SIMD_AVX512 = 2, /* AVX-512 F/BW/DQ/VL + VNNI (else AVX2 is used) */
};

/* Best level this CPU supports. */
enum strata_simd strata_simd_detect(void);
/* Level in use (initially min(detect, STRATA_SIMD env cap)). */
enum strata_simd strata_simd_get(void);
/* Use `level`; -ENOTSUP when the CPU lacks it.  Not thread-safe vs. kernels. */
int strata_simd_set(enum strata_simd level);
const char *strata_simd_name(enum strata_simd level);

/* 1 when matmul/dequant/get_row support weights of this type. */
int strata_type_supported(uint32_t type);

/* How a matrix's bytes are ordered. */
enum strata_layout {
	STRATA_LAYOUT_ROWS = 0,     /* GGUF: row after row */
	STRATA_LAYOUT_Q8_0_R16 = 1, /* Q8_0, sixteen rows interleaved (strata_mat_repack) */
	STRATA_LAYOUT_Q4_K_R16 = 2, /* Q4_K, the same */
	STRATA_LAYOUT_Q6_K_R16 = 3, /* Q6_K, the same */
	STRATA_LAYOUT_IQ4_NL_R16 = 4 /* IQ4_NL, the same */
};

struct strata_mat {
	uint32_t type;
	int64_t rows;      /* output features */
	int64_t cols;      /* input features (row length) */
	size_t row_bytes;  /* strata_type_row_bytes(type, cols) */
	const void *data;  /* rows * row_bytes bytes */
	uint32_t layout;   /* enum strata_layout */
};

/* Fill m from its parts (in GGUF's row layout); -EINVAL when the type is
 * unsupported or cols is not a multiple of its block. */
int strata_mat_init(struct strata_mat *m, uint32_t type, int64_t rows,
		    int64_t cols, const void *data);

/*
 * Repacking at load: Q8_0, Q4_K, Q6_K and IQ4_NL weights whose rows are a
 * multiple of 16 (Q8_0 and IQ4_NL: and whose columns are a multiple of 64)
 * can be stored sixteen rows interleaved (q8_0_r16.h, q4_k_r16.h,
 * q6_k_r16.h, iq4_nl_r16.h), the layout the AVX2 and AVX-512 kernels
 * otherwise rebuild per call (IQ4_NL's did not: its rows ran one at a
 * time).  Decode then reads one sequential stream per thread and needs no
 * horizontal sums.  The repacked matrix has the same size.  Q8_0 gives the
 * same results, bit for bit, at every SIMD level; Q4_K and Q6_K sum in one
 * order at every level and batch size, the AVX2 level's GGUF-layout order
 * (the AVX-512 level's GGUF-layout kernels for fewer than 20 tokens sum
 * otherwise: the last bits may differ); IQ4_NL sums in Q8_0's order at
 * every level, which its GGUF-layout kernels do not (the last bits may
 * differ).  The scalar level reads them in place.
 *
 * strata_layout_r16() is the layout a type repacks to (STRATA_LAYOUT_ROWS:
 * none).
 *
 * strata_mat_repackable() is 1 when m can be repacked and the current SIMD
 * level has a kernel that gains from it (not the scalar level).
 * strata_mat_repack() writes row groups [g0, g1) (16 rows each) of m into
 * dst, which must hold m->rows * m->row_bytes bytes at 64-byte alignment
 * (the same offsets as m's rows); disjoint ranges may run in parallel.
 * Afterwards *out = m with data = dst and the repacked layout (out may be m).
 */
uint32_t strata_layout_r16(uint32_t type);
int strata_mat_repackable(const struct strata_mat *m);
void strata_mat_repack(const struct strata_mat *m, int64_t g0, int64_t g1, void *dst);
void strata_mat_repacked(const struct strata_mat *m, const void *dst, struct strata_mat *out);

/* Dequantise n values (a multiple of the type's block) starting at src. */
void strata_dequant(uint32_t type, const void *src, float *dst, int64_t n);

/*
 * Quantise n floats (a multiple of the type's block) into dst, in the GGUF
 * layout of `type`.  Returns the bytes written, -ENOTSUP for a type without
 * a quantiser here (checked first: n = 0 probes a type and writes nothing),
 * -EINVAL when n is not a multiple of the block, or -ENOMEM when an i-quant's
 * search tables cannot be built.  Thread-safe (tables are built once, on
 * first use); the bytes do not depend on the SIMD level or the thread.
 *
 * The legacy and K-quants give llama.cpp's reference quantiser's bytes
 * (round to nearest with the type's scale search; no importance matrix).
 * The i-quants (IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_M) are strata's own
 * search of the same codebooks (quants_iq_quant.c).  ggml weighs their
 * errors by an importance matrix (activation statistics of a calibration
 * run, which strata does not have): its IQ2_XS quantiser asserts one, the
 * others fall back to x^2 (sigma^2 / 4 + x^2 for IQ2_S).  strata weighs
 * each value by sqrt(2 sigma^2 + x^2), sigma^2 the mean square of its
 * 256-value block: ggml's weighting under a matrix whose columns are all
 * equally important.  On ../shared's synthetic model that gives 3-21%
 * less relative RMS error than llama.cpp's files made with a matrix, and
 * 6-21% less KL from the F32 model's logits (tests/check_iq_quant.c; x^2
 * weights would cost 20-48% more KL).  Slower than the other types:
 * 100-200 ns per value.
 */
int64_t strata_quantize(uint32_t type, const float *src, void *dst, int64_t n);

/* Row r of m as floats (embedding lookup): dst has m->cols floats; any
 * layout. */
void strata_mat_get_row(const struct strata_mat *m, int64_t r, float *dst);

/*
 * y[t*ldy + r] = sum_k W[r][k] * x[t*ldx + k] for t < n_tok, r < W->rows.
 * Parallel over the pool; uses the pool's scratch (e.g. activations
 * quantised to the weight type's dot format), so a scratch pointer the
 * caller holds is stale afterwards.  n_tok = 1 is the decode GEMV
 * and must be bandwidth-bound; larger n_tok reuses each loaded weight block
 * across tokens.  pool may be NULL (runs on the caller, with a per-thread
 * scratch); small products run on the caller anyway.  x and y must not
 * overlap.  The result does not depend on the pool (size or NULL).
 */
void strata_matmul(struct strata_pool *pool, const struct strata_mat *W,
		   const float *x, int64_t ldx, int64_t n_tok, float *y,
		   int64_t ldy);

/*
 * One product of strata_matmul_many(): y = W x for n_tok tokens.  Token t
 * is row t of x, or with `rows`, row rows[t] of x (x then has n_x rows and
 * every rows[t] < n_x): the MoE experts read their tokens this way, so x is
 * converted to the activation format once for all experts and only the
 * converted rows are gathered.  Initialisers may leave rows/n_x out.
 */
struct strata_mm_item {
	const struct strata_mat *W;
	const float *x;
	int64_t ldx, n_tok;
	float *y;
	int64_t ldy;
	const uint32_t *rows; /* NULL: token t is row t */
	int64_t n_x;          /* with rows: rows of x */
};

/*
 * Several independent products in one pass over the pool: the activations
 * of every item are converted first (items with the same x, ldx, row count
 * and activation format share one conversion; items with `rows` then copy
 * their converted rows together), then all row/token chunks of all items
 * are handed out from one counter.  This
 * is how the experts of a MoE layer (and q/k/v, gate/up) run: one wake-up of
 * the pool instead of one per matrix.  Items must not write to each other's
 * inputs.  More than 1040 items run one matmul at a time.
 */
void strata_matmul_many(struct strata_pool *pool, const struct strata_mm_item *items, int n);

/* Dot product of two f32 vectors at the current SIMD level. */
float strata_dot_f32(const float *a, const float *b, int64_t n);
/* y += a * x (f32). */
void strata_axpy_f32(float *y, float a, const float *x, int64_t n);
/* y = a * x + b * y (f32): a decaying state's update. */
void strata_axpby_f32(float *y, float a, const float *x, float b, int64_t n);
/* y[i] += a[i] * b[i] (f32; one rounding per element where the level has
 * FMA, two at the scalar level): a causal conv's tap over its channels. */
void strata_mul_acc_f32(float *y, const float *a, const float *b, int64_t n);
/*
 * o[i] = silu(g[i]) * u[i], and o[i] = x[i] * sigmoid(y[i]) (o may alias any
 * input: element i is read before it is written; x * sigmoid(x) is SiLU).
 * The scalar level calls expf; the vector levels use a polynomial exp
 * within 3e-7 relative of it, its argument clamped to +-87 (where the
 * results are already 0, 1 or the identity to float precision).  NaN stays
 * NaN.
 */
void strata_silu_mul_f32(float *o, const float *g, const float *u, int64_t n);
void strata_sigmoid_mul_f32(float *o, const float *x, const float *y, int64_t n);
/*
 * RMSNorm's halves: the sum of x[i]^2 in double, as eight partial sums
 * (element i of the whole blocks of eight into sum i % 8, the rest into sum
 * 0, combined ((0+4)+(1+5)) + ((2+6)+(3+7))), and
 * y[i] = x[i] * s * w[i] (w NULL: x[i] * s; y may be x).  The same bits at
 * every SIMD level.
 */
double strata_sumsq_f32(const float *x, int64_t n);
void strata_scale_mul_f32(float *y, const float *x, float s, const float *w, int64_t n);

#endif
