/*
 * cuda_mm.cu - STRATA_OP_MATMUL and the weight rows of GET_ROWS on the
 * device, for every weight type the CPU backend computes with (the
 * dequantisation is cuda_quant.cuh's, value for value the CPU's).
 *
 * Two ways through a product y[:, t] = W x[:, r(t)]:
 *   - few tokens (n_tok <= MMV_MAX_TOK, decode and MoE experts): a mat-vec
 *     kernel reads W once, dequantising it on the fly in registers, and
 *     sums in float.  One launch per weight type serves every such item of
 *     the op: the item table travels in the kernel's parameters, in batches
 *     of up to MMV_MAX_ITEMS.
 *   - more tokens: W is dequantised to F32 in scratch (tiles of rows, at
 *     most about MM_SCRATCH_CAP bytes), x's columns gathered where they are
 *     not one contiguous matrix, and cublasSgemm multiplies them in F32
 *     (the handle's default math: no TF32).  F32 weights are used in place.
 *     Not F16 inputs with F32 accumulation: rounding x and the dequantised
 *     weights to F16 (2^-11 each) put products up to 4.8e-4 from the exact
 *     ones on an H200, where check_backend_ops allows 1e-5; the F32 GEMM
 *     gives up tensor-core speed on prompts, which the CPU's experts bound
 *     anyway.
 * Activations: where the CPU backend quantises x before its integer dot
 * products (Q8_0 per 32 values for Q8_0, Q4_0, Q5_0, IQ4_NL; the same values
 * with a sum for Q4_1 and Q5_1; Q8_K per 256 for the K-quants and i-quants),
 * both ways here read x rounded the same way, as floats d * q (k_actq), so
 * that a product differs from the CPU's by float rounding only.  With exact
 * activations the device's logits were further from llama.cpp's, which
 * rounds them too: syn-qwen3moe-d256-q8_0 at KL 2.1e-3 where the golden
 * bound for 8-bit types is 2e-3 (the CPU with exact activations gives the
 * same 2.1e-3).
 *
 * Layouts: W row r (ne0 = cols values) starts at w + r * nb[1]; x column t
 * and y column t are contiguous floats with row strides nb[1].  In cuBLAS's
 * column-major terms W is a cols x out matrix with ld = its row stride, x a
 * cols x n_tok one and y out x n_tok, so y = W^T x (transa = T).
 */
#include <cuda_fp16.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"
#include "cuda_quant.cuh"

#define MMV_TOK 8        /* tokens one mat-vec pass keeps in registers */
#define MMV_MAX_TOK 8    /* items with at most this many tokens take the mat-vec */
#define MMV_MAX_ITEMS 32 /* item table entries per mat-vec launch (kernel parameters) */
#define MMV_WARPS 4      /* warps per mat-vec thread block */
#define MMV_ROWS 2       /* output rows per warp (they share the loads of x) */
#define MMV_THREADS (32 * MMV_WARPS)
#define MMV_BLOCK_ROWS (MMV_WARPS * MMV_ROWS)
#define ROWS_THREADS 128 /* threads per row of the dequantising kernel */
#define GATHER_THREADS 256
#define MM_SCRATCH_CAP ((size_t)256 << 20) /* F32 tiles of W: about this much scratch */
#define MM_MIN_TILE 128  /* rows per tile at least, whatever the cap */

/* One validated product (host side). */
struct mm_desc {
	uint32_t type;
	const uint8_t *w;     /* W row 0 */
	const float *x;       /* x column 0 */
	const int32_t *rows;  /* device I32 [n_tok]: the x column of each token, or NULL */
	float *y;             /* y column 0 */
	int64_t w_ld;         /* bytes between W rows */
	int64_t x_ld, y_ld;   /* floats between x / y columns */
	int cols, out, n_tok;
};

/* One entry of the mat-vec item table: tokens t0 .. t0 + nt - 1 of a product. */
struct mmv_item {
	const uint8_t *w;
	const float *x;
	const int32_t *rows;
	float *y;
	int64_t w_ld, x_ld, y_ld;
	int out, cols, t0, nt;
};

/* The kernel's parameters (about 2.5 KB, within the 4 KB every device takes). */
struct mmv_batch {
	int n;                          /* entries */
	int vec;                        /* every x column 16-byte aligned: float4 loads */
	int first[MMV_MAX_ITEMS + 1];   /* first thread block of each entry; [n]: the grid */
	struct mmv_item it[MMV_MAX_ITEMS];
};

/* The weight types, for the launch switches (one template instance each). */
#define CU_MM_TYPES(X)                                                                      \
	X(F32) X(F16) X(BF16) X(Q8_0) X(Q4_0) X(Q4_1) X(Q5_0) X(Q5_1) X(IQ4_NL) X(Q2_K)     \
	X(Q3_K) X(Q4_K) X(Q5_K) X(Q6_K) X(IQ2_XS) X(IQ2_S) X(IQ3_XXS) X(IQ3_S) X(IQ1_M)

/* ---- kernels ------------------------------------------------------------------------ */

/* The sum of v over the warp, in every lane (all 32 lanes take part). */
static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
	for (int m = 16; m; m >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, m);
	return v;
}

/* x[0..7] of one column (p 16-byte aligned when vec). */
static __device__ __forceinline__ void ld_x8(const float *p, int vec, float *x)
{
	if (vec) {
		const float4 a = __ldg((const float4 *)p), b = __ldg((const float4 *)p + 1);

		x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w;
		x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
	} else {
#pragma unroll
		for (int j = 0; j < 8; j++)
			x[j] = __ldg(p + j);
	}
}

static __device__ __forceinline__ float dot8(const float *a, const float *b, float acc)
{
#pragma unroll
	for (int j = 0; j < 8; j++)
		acc += a[j] * b[j];
	return acc;
}

/*
 * The mat-vec over an item table: thread block blockIdx.x belongs to the
 * entry whose [first[i], first[i+1]) holds it; its warp w computes output
 * rows r0 = (block - first[i]) * MMV_BLOCK_ROWS + w * MMV_ROWS and r0 + 1
 * for the entry's nt (<= MMV_TOK) tokens.  Lane l takes octets l, l + 32, ...
 * of the rows (consecutive lanes read consecutive bytes of W and of x), keeps
 * the dequantised octet of each row in registers for all tokens, and the warp
 * sums its lanes with shuffles; lane t stores token t's sums.
 */
template <uint32_t T>
static __global__ void __launch_bounds__(MMV_THREADS)
	k_mmv(const __grid_constant__ struct mmv_batch b)
{
	const int lane = threadIdx.x & 31;
	int i = 0;

	while (i + 1 < b.n && (int)blockIdx.x >= b.first[i + 1])
		i++;
	const struct mmv_item *it = &b.it[i];
	const int r0 = (((int)blockIdx.x - b.first[i]) * MMV_WARPS + (int)(threadIdx.x >> 5)) *
		       MMV_ROWS;
	const int out = it->out, nt = it->nt, cols = it->cols;

	if (r0 >= out)
		return; /* the whole warp: no shuffle below misses a lane */
	const int two = r0 + 1 < out;
	const uint8_t *w0 = it->w + (int64_t)r0 * it->w_ld;
	const uint8_t *w1 = two ? w0 + it->w_ld : w0; /* a missing 2nd row recomputes the 1st */
	const float *xp[MMV_TOK];
	float acc0[MMV_TOK], acc1[MMV_TOK];

#pragma unroll
	for (int t = 0; t < MMV_TOK; t++) {
		const int tt = it->t0 + (t < nt ? t : 0);

		xp[t] = it->x + (int64_t)(it->rows ? it->rows[tt] : tt) * it->x_ld;
		acc0[t] = acc1[t] = 0.0f;
	}
	const int64_t noct = cols >> 3;

	for (int64_t o = lane; o < noct; o += 32) {
		float v0[8], v1[8], x[8];

		cuq_dq8(T, w0, o, v0);
		cuq_dq8(T, w1, o, v1);
#pragma unroll
		for (int t = 0; t < MMV_TOK; t++)
			if (t < nt) {
				ld_x8(xp[t] + 8 * o, b.vec, x);
				acc0[t] = dot8(v0, x, acc0[t]);
				acc1[t] = dot8(v1, x, acc1[t]);
			}
	}
	if (T == STRATA_TYPE_F32 || T == STRATA_TYPE_F16 || T == STRATA_TYPE_BF16) {
		const int64_t c = 8 * noct + lane; /* rows of these need not be octets */

		if (c < cols) {
			const float a = cuq_dq1(T, w0, c), bb = cuq_dq1(T, w1, c);

#pragma unroll
			for (int t = 0; t < MMV_TOK; t++)
				if (t < nt) {
					acc0[t] += a * __ldg(xp[t] + c);
					acc1[t] += bb * __ldg(xp[t] + c);
				}
		}
	}
#pragma unroll
	for (int t = 0; t < MMV_TOK; t++)
		if (t < nt) {
			const float s0 = warp_sum(acc0[t]), s1 = warp_sum(acc1[t]);
			float *y = it->y + (int64_t)(it->t0 + t) * it->y_ld + r0;

			if (lane == t) {
				y[0] = s0;
				if (two)
					y[1] = s1;
			}
		}
}

static __device__ __forceinline__ void put1(float *p, float v)
{
	*p = v;
}

/* v[0..7] at p (16-byte aligned when vec). */
static __device__ __forceinline__ void put8(float *p, const float *v, int vec)
{
	if (vec) {
		((float4 *)p)[0] = make_float4(v[0], v[1], v[2], v[3]);
		((float4 *)p)[1] = make_float4(v[4], v[5], v[6], v[7]);
	} else {
#pragma unroll
		for (int j = 0; j < 8; j++)
			p[j] = v[j];
	}
}

/*
 * Dequantise whole rows, one thread block per row: block b writes row
 * ids[b] (or r0 + b without ids) of W, cols values, to dst + b * ld as OUT
 * (F32, for GET_ROWS and the cuBLAS tiles); thread k takes octets k,
 * k + blockDim.x, ... and the F32/F16/BF16 tail past the last octet.
 */
template <uint32_t T, typename OUT>
static __global__ void __launch_bounds__(ROWS_THREADS)
	k_rows(const uint8_t *w, int64_t w_ld, const int32_t *ids, int64_t r0, int cols,
	       OUT *dst, int64_t ld, int vec)
{
	const int64_t r = ids ? (int64_t)ids[blockIdx.x] : r0 + blockIdx.x;
	const uint8_t *row = w + r * w_ld;
	OUT *o = dst + (int64_t)blockIdx.x * ld;
	const int64_t noct = cols >> 3;

	for (int64_t k = threadIdx.x; k < noct; k += blockDim.x) {
		float v[8];

		cuq_dq8(T, row, k, v);
		put8(o + 8 * k, v, vec);
	}
	if (T == STRATA_TYPE_F32 || T == STRATA_TYPE_F16 || T == STRATA_TYPE_BF16) {
		const int64_t c = 8 * noct + threadIdx.x;

		if (c < cols)
			put1(o + c, cuq_dq1(T, row, c));
	}
}

/* Columns rows[t] (or t) of x, cols floats each, to dst column t (ld cols) as OUT;
 * one thread block per column. */
template <typename OUT>
static __global__ void __launch_bounds__(GATHER_THREADS)
	k_gather(const float *x, int64_t x_ld, const int32_t *rows, int cols, OUT *dst)
{
	const int64_t t = blockIdx.x;
	const float *s = x + (rows ? (int64_t)rows[t] : t) * x_ld;
	OUT *o = dst + t * cols;

	for (int c = threadIdx.x; c < cols; c += blockDim.x)
		put1(o + c, s[c]);
}

/*
 * x's columns rounded as the CPU's activation formats round them, written
 * as floats d * q to dst (ld cols): GS 32 is Q8_0's rule (d = fp16(amax /
 * 127), q = rint(x * 127 / amax)), GS 256 Q8_K's (the first value of
 * largest magnitude maps to -127: iscale = -127 / max, q = rint(iscale * x)
 * up to 127, d = 1 / iscale), each operation as the CPU's scalar level does
 * it in float.  Thread blocks of 256 values (blockIdx.y) of one column
 * (blockIdx.x: a prompt's columns may pass the 65535 of a grid's y); for
 * GS 32 each warp is one block of the format, for GS 256 the thread block.
 */
template <int GS>
static __global__ void __launch_bounds__(256)
	k_actq(const float *x, int64_t x_ld, int cols, float *dst)
{
	__shared__ float s_amax[8], s_max;
	__shared__ int s_first[8];
	const int i = blockIdx.y * 256 + threadIdx.x, lane = threadIdx.x & 31;
	const float v = i < cols ? x[(int64_t)blockIdx.x * x_ld + i] : 0.0f;
	float *o = dst + (int64_t)blockIdx.x * cols;
	float a = fabsf(v);

#pragma unroll
	for (int m = 16; m; m >>= 1)
		a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, m));
	if (GS == 32) {
		const float id = a != 0.0f ? __fdiv_rn(127.0f, a) : 0.0f;
		const float d = __half2float(__float2half_rn(__fdiv_rn(a, 127.0f)));

		if (i < cols)
			o[i] = __fmul_rn(d, rintf(__fmul_rn(v, id)));
	} else {
		int first;

		if (lane == 0)
			s_amax[threadIdx.x >> 5] = a;
		__syncthreads();
		a = s_amax[0];
#pragma unroll
		for (int w = 1; w < 8; w++)
			a = fmaxf(a, s_amax[w]);
		first = fabsf(v) == a ? (int)threadIdx.x : 256;
#pragma unroll
		for (int m = 16; m; m >>= 1)
			first = min(first, __shfl_xor_sync(0xffffffffu, first, m));
		if (lane == 0)
			s_first[threadIdx.x >> 5] = first;
		__syncthreads();
		first = s_first[0];
#pragma unroll
		for (int w = 1; w < 8; w++)
			first = min(first, s_first[w]);
		if ((int)threadIdx.x == first)
			s_max = v;
		__syncthreads();
		if (a == 0.0f) {
			o[i] = 0.0f;
		} else {
			const float iscale = __fdiv_rn(-127.0f, s_max);

			o[i] = __fmul_rn(__fdiv_rn(1.0f, iscale),
					 fminf(rintf(__fmul_rn(iscale, v)), 127.0f));
		}
	}
}

/* The CPU's activation format of a weight type: values per block (32: Q8_0 or
 * Q8_1, 256: Q8_K), 0 where it multiplies float activations. */
static int act_block(uint32_t type)
{
	switch (type) {
	case STRATA_TYPE_F32:
	case STRATA_TYPE_F16:
	case STRATA_TYPE_BF16:
		return 0;
	case STRATA_TYPE_Q8_0:
	case STRATA_TYPE_Q4_0:
	case STRATA_TYPE_Q4_1:
	case STRATA_TYPE_Q5_0:
	case STRATA_TYPE_Q5_1:
	case STRATA_TYPE_IQ4_NL:
		return 32;
	default:
		return 256;
	}
}

/* ---- launch helpers --------------------------------------------------------------------- */

typedef void (*mmv_fn)(struct mmv_batch);
typedef void (*rows_f32_fn)(const uint8_t *, int64_t, const int32_t *, int64_t, int, float *,
			    int64_t, int);

/* The mat-vec kernel of a supported type, else NULL. */
static mmv_fn mmv_kernel(uint32_t type)
{
	switch (type) {
#define CASE(t)                   \
	case STRATA_TYPE_##t:     \
		return k_mmv<STRATA_TYPE_##t>;
		CU_MM_TYPES(CASE)
#undef CASE
	default:
		return NULL;
	}
}

/* The F32 row kernel of a supported type, else NULL. */
static rows_f32_fn rows_f32_kernel(uint32_t type)
{
	switch (type) {
#define CASE(t)                   \
	case STRATA_TYPE_##t:     \
		return k_rows<STRATA_TYPE_##t, float>;
		CU_MM_TYPES(CASE)
#undef CASE
	default:
		return NULL;
	}
}

/* 0, or -EIO after logging a cuBLAS failure once (recorded as the sticky error). */
static int blas_check(struct cuda_dev *d, cublasStatus_t st, const char *what)
{
	if (st == CUBLAS_STATUS_SUCCESS)
		return 0;
	if (!d->err) {
		cu_log(d, STRATA_LOG_ERROR, "%s: %s", what, cublasGetStatusString(st));
		d->err = -EIO;
	}
	return -EIO;
}

static size_t align256(size_t n)
{
	return (n + 255) & ~(size_t)255;
}

/* ---- validation ------------------------------------------------------------------------- */

/*
 * The rows of weight tensor w: type, length and stride, checked.  Rows must
 * start at even addresses (F32: multiples of 4), which GGUF's block sizes
 * and alignment give, as cuda_quant.cuh reads u16 fields.  0 or -EINVAL.
 */
static int weight_rows(const struct strata_tensor *w, int *cols, int64_t *ld)
{
	uintptr_t a;
	int64_t rb;
	int bv;

	if (!w || !w->buf || !cuq_type_ok(w->type) || w->ne[0] <= 0 || w->ne[0] > INT_MAX ||
	    w->ne[1] < 0 || w->ne[1] > INT_MAX)
		return -EINVAL;
	bv = cuq_block_vals(w->type);
	if (w->ne[0] % bv)
		return -EINVAL;
	rb = w->ne[0] / bv * cuq_block_bytes(w->type);
	*cols = (int)w->ne[0];
	*ld = w->ne[1] > 1 ? (int64_t)w->nb[1] : rb; /* one row: any stride will do */
	if (*ld < rb || *ld > INT_MAX) /* cuBLAS takes ld as an int */
		return -EINVAL;
	a = (uintptr_t)cu_ptr(w) | (uintptr_t)*ld;
	return a % (w->type == STRATA_TYPE_F32 ? 4 : 2) ? -EINVAL : 0;
}

/* An F32 tensor of ne0 values per column: its column stride in floats (*ld), or -EINVAL. */
static int f32_cols(const struct strata_tensor *t, int64_t ne0, int64_t *ld)
{
	if (!t || !t->buf || t->type != STRATA_TYPE_F32 || t->ne[0] != ne0 ||
	    t->nb[0] != sizeof(float) || t->nb[1] % sizeof(float) ||
	    (uintptr_t)cu_ptr(t) % sizeof(float))
		return -EINVAL;
	*ld = (int64_t)(t->nb[1] / sizeof(float));
	return *ld > INT_MAX ? -EINVAL : 0;
}

/* One MATMUL item checked and described.  0 or -EINVAL. */
static int mm_desc_init(const struct strata_matmul_item *it, struct mm_desc *m)
{
	int64_t n_tok;

	memset(m, 0, sizeof(*m));
	if (!it->w || weight_rows(it->w, &m->cols, &m->w_ld) ||
	    f32_cols(it->x, m->cols, &m->x_ld) || !it->y || f32_cols(it->y, it->w->ne[1], &m->y_ld))
		return -EINVAL;
	n_tok = it->y->ne[1];
	if (n_tok < 0 || n_tok > INT_MAX)
		return -EINVAL;
	if (it->rows) {
		if (!it->rows->buf || it->rows->type != STRATA_TYPE_I32 || it->rows->ne[0] < n_tok)
			return -EINVAL;
		m->rows = (const int32_t *)cu_ptr(it->rows);
	} else if (it->x->ne[1] < n_tok) {
		return -EINVAL;
	}
	/* several columns must not overlap (cuBLAS checks ld >= rows too) */
	if (n_tok > 1 && m->y_ld < it->w->ne[1])
		return -EINVAL;
	if (m->y_ld < it->w->ne[1])
		m->y_ld = it->w->ne[1];
	m->type = it->w->type;
	m->w = (const uint8_t *)cu_ptr(it->w);
	m->x = (const float *)cu_ptr(it->x);
	m->y = (float *)cu_ptr(it->y);
	m->out = (int)it->w->ne[1];
	m->n_tok = (int)n_tok;
	return 0;
}

/* ---- the mat-vec path ------------------------------------------------------------------- */

/* Queue the mat-vec over the table b (n >= 1 entries) of weight type `type`. */
static int mmv_launch(struct cuda_dev *d, uint32_t type, struct mmv_batch *b, int blocks)
{
	b->first[b->n] = blocks;
	mmv_kernel(type)<<<blocks, MMV_THREADS, 0, d->compute>>>(*b);
	return cu_check(d, cudaGetLastError(), "matmul: mat-vec launch");
}

/* Queue the mat-vec for every item of `type` with at most MMV_MAX_TOK tokens,
 * in batches of MMV_MAX_ITEMS entries of up to MMV_TOK tokens. */
static int mmv_type(struct cuda_dev *d, const struct mm_desc *ms, uint32_t n, uint32_t type)
{
	struct mmv_batch b;
	int blocks = 0, rc;

	memset(&b, 0, sizeof(b));
	b.vec = 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct mm_desc m = ms[i];

		if (m.type != type || !m.out || !m.n_tok || m.n_tok > MMV_MAX_TOK)
			continue;
		const int nb = (int)((m.out + (int64_t)MMV_BLOCK_ROWS - 1) / MMV_BLOCK_ROWS);

		for (int t0 = 0; t0 < m.n_tok; t0 += MMV_TOK) {
			struct mmv_item *e;

			/* the table or the grid is full */
			if (b.n == MMV_MAX_ITEMS || blocks > INT_MAX - nb) {
				if ((rc = mmv_launch(d, type, &b, blocks)))
					return rc;
				b.n = 0;
				b.vec = 1;
				blocks = 0;
			}
			e = &b.it[b.n];
			*e = (struct mmv_item){ m.w, m.x, m.rows, m.y, m.w_ld, m.x_ld, m.y_ld,
						m.out, m.cols, t0,
						m.n_tok - t0 < MMV_TOK ? m.n_tok - t0 : MMV_TOK };
			b.vec &= (uintptr_t)m.x % 16 == 0 && m.x_ld % 4 == 0;
			b.first[b.n++] = blocks;
			blocks += nb;
		}
	}
	return b.n ? mmv_launch(d, type, &b, blocks) : 0;
}

/* ---- the cuBLAS path -------------------------------------------------------------------- */

/* Scratch bytes for x's columns gathered (the tokens' rows, or a view
 * narrower than its stride), 0 where cuBLAS reads x in place. */
static size_t gather_bytes(const struct mm_desc *m)
{
	return m->rows || m->x_ld < m->cols
		       ? align256((size_t)m->cols * (size_t)m->n_tok * sizeof(float))
		       : 0;
}

/* Scratch bytes a cuBLAS product needs, and the W rows per F32 tile (*tile). */
static size_t gemm_scratch(const struct mm_desc *m, int *tile)
{
	const size_t row = (size_t)m->cols * sizeof(float);
	const size_t gx = gather_bytes(m);
	size_t t;

	*tile = m->out;
	if (m->type == STRATA_TYPE_F32) /* W in place */
		return gx;
	t = MM_SCRATCH_CAP > gx ? (MM_SCRATCH_CAP - gx) / row : 0;
	t = t < MM_MIN_TILE ? MM_MIN_TILE : t;
	*tile = t < (size_t)m->out ? (int)t : m->out;
	return gx + align256((size_t)*tile * row);
}

/* y rows [r0, r0 + nr) = A^T x for A an F32 cols x nr matrix (ld lda floats)
 * and x cols x n_tok (ld ldx): cublasSgemm, F32 throughout. */
static int gemm_f32(struct cuda_dev *d, const struct mm_desc *m, const float *A, int64_t lda,
		    const float *x, int64_t ldx, int r0, int nr)
{
	const float one = 1.0f, zero = 0.0f;

	return blas_check(d, cublasSgemm(d->blas, CUBLAS_OP_T, CUBLAS_OP_N, nr, m->n_tok,
					 m->cols, &one, A, (int)lda, x, (int)ldx, &zero,
					 m->y + r0, (int)m->y_ld),
			  "matmul: cublasSgemm");
}

/* Queue one product through cuBLAS (scratch: gemm_scratch(m) bytes). */
static int mm_gemm(struct cuda_dev *d, const struct mm_desc *m, void *scratch)
{
	const float *x = m->x;
	int64_t ldx = m->x_ld;
	const size_t gx = gather_bytes(m);
	float *w32;
	int tile, rc;

	gemm_scratch(m, &tile);
	if (gx) {
		k_gather<float><<<m->n_tok, GATHER_THREADS, 0, d->compute>>>(
			m->x, m->x_ld, m->rows, m->cols, (float *)scratch);
		if ((rc = cu_check(d, cudaGetLastError(), "matmul: gather launch")))
			return rc;
		x = (const float *)scratch;
		ldx = m->cols;
	}
	if (m->type == STRATA_TYPE_F32)
		return gemm_f32(d, m, (const float *)m->w, m->w_ld / 4, x, ldx, 0, m->out);
	w32 = (float *)((char *)scratch + gx);
	for (int r0 = 0; r0 < m->out; r0 += tile) {
		const int nr = m->out - r0 < tile ? m->out - r0 : tile;

		/* the stream orders this tile's writes after the previous GEMM's reads */
		rows_f32_kernel(m->type)<<<nr, ROWS_THREADS, 0, d->compute>>>(
			m->w, m->w_ld, (const int32_t *)NULL, r0, m->cols, w32, m->cols,
			m->cols % 8 == 0);
		if ((rc = cu_check(d, cudaGetLastError(), "matmul: dequant launch")) ||
		    (rc = gemm_f32(d, m, w32, m->cols, x, ldx, r0, nr)))
			return rc;
	}
	return 0;
}

/* ---- entry points ----------------------------------------------------------------------- */

int cu_mm_supports(uint32_t type)
{
	return cuq_type_ok(type);
}

/* One x an op's items read, rounded once to an activation format (act_block). */
struct act_src {
	const float *x;
	int64_t ld;
	int cols, n_col, gs;
	size_t off; /* of its rounded copy in the op's scratch */
};

/*
 * The rounded copy of item m's x (every column of its tensor it), shared by
 * the items that read the same columns in the same format; *bytes grows by
 * each new copy.  Returns the source's index.
 */
static uint32_t act_source(struct act_src *src, uint32_t *n_src, const struct mm_desc *m,
			   const struct strata_tensor *it, int gs, size_t *bytes)
{
	struct act_src *a;

	for (uint32_t j = 0; j < *n_src; j++)
		if (src[j].x == m->x && src[j].ld == m->x_ld && src[j].cols == m->cols &&
		    src[j].n_col == (int)it->ne[1] && src[j].gs == gs)
			return j;
	a = &src[*n_src];
	*a = (struct act_src){ m->x, m->x_ld, m->cols, (int)it->ne[1], gs, *bytes };
	*bytes += align256((size_t)m->cols * (size_t)it->ne[1] * sizeof(float));
	return (*n_src)++;
}

/* Queue the rounding of every source into the scratch at base. */
static int act_round(struct cuda_dev *d, const struct act_src *src, uint32_t n_src, char *base)
{
	for (uint32_t j = 0; j < n_src; j++) {
		const dim3 grid((unsigned)src[j].n_col, (unsigned)((src[j].cols + 255) / 256));
		float *dst = (float *)(base + src[j].off);

		if (src[j].gs == 32)
			k_actq<32><<<grid, 256, 0, d->compute>>>(src[j].x, src[j].ld, src[j].cols,
								  dst);
		else
			k_actq<256><<<grid, 256, 0, d->compute>>>(src[j].x, src[j].ld,
								   src[j].cols, dst);
	}
	return n_src ? cu_check(d, cudaGetLastError(), "matmul: activation launch") : 0;
}

/*
 * Every item is checked before anything is queued (-EINVAL: nothing ran).
 * Then the activations rounded as the CPU rounds them (one copy per x and
 * format), one mat-vec launch per weight type (per MMV_MAX_ITEMS entries)
 * for the items of few tokens, and cuBLAS for each other item; items are
 * independent, so their order does not matter.
 */
int cu_op_matmul(struct cuda_dev *d, const struct strata_op *op)
{
	const struct strata_matmul_item *items = op->p.mm.items;
	const uint32_t n = op->p.mm.n_items;
	uint32_t types = 0, n_src = 0, *which = NULL;
	size_t need = 0, act = 0;
	struct mm_desc *ms = NULL;
	struct act_src *src = NULL;
	void *scratch = NULL;
	int rc = 0, tile;

	if (n && !items)
		return -EINVAL;
	if (!n)
		return 0;
	ms = (struct mm_desc *)calloc(n, sizeof(*ms));
	src = (struct act_src *)calloc(n, sizeof(*src));
	which = (uint32_t *)calloc(n, sizeof(*which));
	if (!ms || !src || !which) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct mm_desc *m = &ms[i];
		const int gs = act_block(items[i].w ? items[i].w->type : 0);

		if ((rc = mm_desc_init(&items[i], m)))
			goto out;
		which[i] = UINT32_MAX;
		if (!m->out || !m->n_tok)
			continue;
		if (gs && (items[i].x->ne[1] > INT_MAX || m->cols % gs)) {
			rc = -EINVAL;
			goto out;
		}
		if (gs)
			which[i] = act_source(src, &n_src, m, items[i].x, gs, &act);
		if (m->n_tok <= MMV_MAX_TOK) {
			types |= 1u << m->type;
		} else {
			size_t s = gemm_scratch(m, &tile);

			need = s > need ? s : need;
		}
	}
	if ((need || act) && (rc = cu_scratch(d, act + need, &scratch)))
		goto out;
	if ((rc = act_round(d, src, n_src, (char *)scratch)))
		goto out;
	for (uint32_t i = 0; i < n; i++)
		if (which[i] != UINT32_MAX) {
			ms[i].x = (const float *)((char *)scratch + src[which[i]].off);
			ms[i].x_ld = ms[i].cols;
		}
	for (uint32_t t = 0; t < 32 && !rc; t++)
		if (types >> t & 1)
			rc = mmv_type(d, ms, n, t);
	for (uint32_t i = 0; i < n && !rc; i++)
		if (ms[i].out && ms[i].n_tok > MMV_MAX_TOK)
			rc = mm_gemm(d, &ms[i], (char *)scratch + act);
out:
	free(which);
	free(src);
	free(ms);
	return rc;
}

int cu_get_rows(struct cuda_dev *d, const struct strata_tensor *w, const int32_t *ids,
		int64_t n, float *dst, int64_t ld)
{
	int64_t w_ld;
	int cols, vec;

	if (weight_rows(w, &cols, &w_ld) || n < 0 || n > INT_MAX || (n > 1 && ld < cols) ||
	    (n && (!ids || !dst)))
		return -EINVAL;
	if (!n)
		return 0;
	vec = (uintptr_t)dst % 16 == 0 && ld % 4 == 0 && cols % 8 == 0;
	rows_f32_kernel(w->type)<<<(unsigned)n, ROWS_THREADS, 0, d->compute>>>(
		(const uint8_t *)cu_ptr(w), w_ld, ids, 0, cols, dst, ld, vec);
	return cu_check(d, cudaGetLastError(), "get_rows: launch");
}
