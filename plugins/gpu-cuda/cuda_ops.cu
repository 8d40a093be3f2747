/*
 * cuda_ops.cu - the row and element-wise ops of gpu-cuda: GET_ROWS (around
 * cuda_mm.cu's cu_get_rows), RMS_NORM, ROPE, ADD, SWIGLU, SIGMOID_MUL,
 * COPY, FILL, MOE_ROUTE, MOE_COMBINE, and qwen4exp's SCALE_SILU, HC_PRE,
 * HC_POST, PLE_GATE and CONV_SILU.
 *
 * Each follows the CPU backend's loop (core/backend/exec.c, exec_q4x.c):
 * the same operands checked, rows addressed the same way (byte strides
 * nb[], a dimension of extent 1 broadcasting, core/backend/exec.c's
 * row_at), and the same float expressions.  Products that the CPU rounds
 * before an add are written __fmul_rn/__fadd_rn so that nvcc does not fuse
 * them into an FMA (it does by default), except MOE_COMBINE's y += w x,
 * which the CPU's vector levels (kernels_avx2.c axpy) fuse: fmaf.
 * Where a GPU sums in another order than the CPU, the comment says so:
 * RMS_NORM's sum of squares is in double as the CPU's (the order of the
 * double adds differs), PLE_GATE's dot product is a float tree reduction
 * (the CPU adds in sequence), MOE_ROUTE's softmax sum is sequential as the
 * CPU's.  expf, sinf and cosf are CUDA's accurate ones (within 2 ulp; they
 * overflow and underflow as the CPU's do: silu(-100) is -0, not NaN).
 *
 * Kernels: one block per row for the row ops (RMS_NORM, ROPE, MOE_ROUTE,
 * PLE_GATE, MOE_COMBINE's output columns), grid-stride loops over every
 * element for the element-wise ones.
 */
#include <errno.h>
#include <math.h>

#include "cuda_int.h"

#define OPS_THREADS 256      /* threads per block (a multiple of 32) */
#define OPS_MAX_BLOCKS 32768 /* grid-stride loops cover the rest */
#define OPS_FULL 0xffffffffu
#define ROUTE_MAX_K 2048     /* MOE_ROUTE's picks live in shared memory */

/* A tensor as kernels see it: its first byte, extents and byte strides. */
struct ct {
	char *p;
	int64_t ne[4];
	int64_t nb[4];
};

/* t as a kernel operand; -EINVAL for a missing tensor or buffer. */
static int ct_of(const struct strata_tensor *t, struct ct *o)
{
	if (!t || !t->buf || !t->buf->base)
		return -EINVAL;
	o->p = (char *)cu_ptr(t);
	for (int i = 0; i < 4; i++) {
		o->ne[i] = t->ne[i];
		o->nb[i] = (int64_t)t->nb[i];
	}
	return 0;
}

static int64_t ct_rows(const struct ct *t)
{
	return t->ne[1] * t->ne[2] * t->ne[3];
}

/* Row (i1, i2, i3); a dimension of extent 1 broadcasts (exec.c's row_at). */
__device__ __forceinline__ float *ct_row(const ct &t, int64_t i1, int64_t i2, int64_t i3)
{
	return (float *)(t.p + (t.ne[1] > 1 ? i1 : 0) * t.nb[1] + (t.ne[2] > 1 ? i2 : 0) * t.nb[2] +
			 (t.ne[3] > 1 ? i3 : 0) * t.nb[3]);
}

/* Row r of dst's rows in FOR_ROWS order (i1 fastest) as (i1, i2, i3). */
__device__ __forceinline__ void ct_split(const ct &d, int64_t r, int64_t *i1, int64_t *i2,
					 int64_t *i3)
{
	*i1 = r % d.ne[1];
	*i2 = r / d.ne[1] % d.ne[2];
	*i3 = r / d.ne[1] / d.ne[2];
}

__device__ __forceinline__ float sigmoidf_(float v)
{
	return 1.0f / (1.0f + expf(-v));
}

__device__ __forceinline__ float siluf_(float v)
{
	return v / (1.0f + expf(-v));
}

/* The sum over the block of every thread's v (all threads call it; sh: 32 slots). */
template <typename T> __device__ T block_sum(T v, T *sh)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	for (int o = 16; o; o >>= 1)
		v += __shfl_down_sync(OPS_FULL, v, o);
	if (!lane)
		sh[warp] = v;
	__syncthreads();
	if (!warp) {
		v = lane < (int)(blockDim.x >> 5) ? sh[lane] : (T)0;
		for (int o = 16; o; o >>= 1)
			v += __shfl_down_sync(OPS_FULL, v, o);
		if (!lane)
			sh[0] = v;
	}
	__syncthreads();
	v = sh[0];
	__syncthreads(); /* sh is free again */
	return v;
}

/* Blocks for a grid-stride loop over n items, OPS_THREADS each. */
static unsigned blocks_for(int64_t n)
{
	int64_t b = (n + OPS_THREADS - 1) / OPS_THREADS;

	return (unsigned)(b < 1 ? 1 : b > OPS_MAX_BLOCKS ? OPS_MAX_BLOCKS : b);
}

/* Blocks for one block per row over n rows (grid-stride beyond the cap). */
static unsigned rows_grid(int64_t n)
{
	return (unsigned)(n < 1 ? 1 : n > OPS_MAX_BLOCKS ? OPS_MAX_BLOCKS : n);
}

/* ---- GET_ROWS ------------------------------------------------------------------ */

/* dst[:, i] = row ids[i] of the weights, dequantised by cuda_mm.cu. */
static int op_get_rows(struct cuda_dev *d, const struct strata_op *op)
{
	const struct strata_tensor *w = op->src[0], *ids = op->src[1], *o = op->dst;
	struct ct tw, ti, to;

	if (ct_of(w, &tw) || ct_of(ids, &ti) || ct_of(o, &to) || ids->type != STRATA_TYPE_I32 ||
	    o->ne[0] != w->ne[0] || o->ne[1] < ids->ne[0] || o->nb[1] % sizeof(float))
		return -EINVAL;
	if (!ids->ne[0])
		return 0;
	return cu_get_rows(d, w, (const int32_t *)ti.p, ids->ne[0], (float *)to.p,
			   (int64_t)(o->nb[1] / sizeof(float)));
}

/* ---- RMS_NORM ------------------------------------------------------------------ */

/*
 * One block per row: the sum of squares in double (as strata_sumsq_f32;
 * the adds in a tree, not its eight lanes), then y = x * scale * w.
 * y may be x: every read of the row is before the reduction's barriers.
 */
__global__ void k_rms_norm(ct s, const float *w, ct d, int64_t rows, float eps)
{
	__shared__ double sh[32];
	const int64_t n = d.ne[0];

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t i1, i2, i3;
		double ss = 0.0;
		float scale;

		ct_split(d, r, &i1, &i2, &i3);
		const float *x = ct_row(s, i1, i2, i3);
		float *y = ct_row(d, i1, i2, i3);

		for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
			ss += (double)x[i] * x[i];
		ss = block_sum(ss, sh);
		scale = (float)(1.0 / sqrt(ss / (double)n + eps));
		for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
			y[i] = w ? __fmul_rn(__fmul_rn(x[i], scale), w[i]) : __fmul_rn(x[i], scale);
	}
}

static int op_rms_norm(struct cuda_dev *d, const struct strata_op *op)
{
	const struct strata_tensor *wt = op->src[1];
	struct ct s, o, w = {};
	const int64_t n = op->dst->ne[0];

	if (ct_of(op->src[0], &s) || ct_of(op->dst, &o) || (wt && ct_of(wt, &w)) ||
	    s.ne[0] != n || (wt && wt->ne[0] != n))
		return -EINVAL;
	if (!ct_rows(&o) || !n)
		return 0;
	k_rms_norm<<<rows_grid(ct_rows(&o)), OPS_THREADS, 0, d->compute>>>(
		s, wt ? (const float *)w.p : NULL, o, ct_rows(&o), op->p.norm.eps);
	return cu_check(d, cudaGetLastError(), "rms_norm");
}

/* ---- ROPE ------------------------------------------------------------------------ */

/*
 * One block per (head, token) row, a thread per rotated pair: theta = pos
 * * inv_freq[i] in float, NORM pairs (2i, 2i+1), NEOX (i, i + n_rot/2).
 */
__global__ void k_rope(ct t, const float *inv, int64_t rows, uint32_t pos, int half, int neox)
{
	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t h, tok, i3;

		ct_split(t, r, &h, &tok, &i3);
		float *x = ct_row(t, h, tok, i3);
		const float p = (float)(pos + (uint32_t)tok);

		for (int i = threadIdx.x; i < half; i += blockDim.x) {
			const float theta = p * inv[i], c = cosf(theta), s = sinf(theta);
			const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
			const float x0 = x[a], x1 = x[b];

			x[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
			x[b] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
		}
	}
}

static int op_rope(struct cuda_dev *d, const struct strata_op *op)
{
	const uint32_t n_rot = op->p.rope.n_rot;
	struct ct t, s, f;

	if (ct_of(op->dst, &t) || ct_of(op->src[0], &s) || ct_of(op->src[1], &f) ||
	    n_rot > (uint64_t)t.ne[0] || n_rot % 2 || s.p != t.p ||
	    op->src[1]->ne[0] < (int64_t)(n_rot / 2))
		return -EINVAL;
	if (!ct_rows(&t) || !n_rot)
		return 0;
	k_rope<<<rows_grid(ct_rows(&t)), n_rot / 2 < OPS_THREADS ? 32 * ((n_rot / 2 + 31) / 32)
								 : OPS_THREADS,
		 0, d->compute>>>(t, (const float *)f.p, ct_rows(&t), op->p.rope.pos,
				  (int)(n_rot / 2), op->p.rope.mode == STRATA_ROPE_MODE_NEOX);
	return cu_check(d, cudaGetLastError(), "rope");
}

/* ---- ADD, SWIGLU, SIGMOID_MUL, COPY, FILL ---------------------------------------- */

enum ew_kind { EW_ADD, EW_SWIGLU, EW_SIGMOID_MUL, EW_COPY, EW_FILL };

/*
 * Every element of dst: a thread per (i0, row), rows in FOR_ROWS order.
 * b broadcasts as the CPU's: a dimension of extent 1, and b->ne[0] == 1
 * (one value per row).  COPY moves 4-byte words (F32 or I32 alike).
 */
__global__ void k_elementwise(int kind, ct a, ct b, ct d, int64_t total, float value)
{
	const int64_t n = d.ne[0];
	const int bscalar = b.ne[0] == 1;

	for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
	     idx += (int64_t)gridDim.x * blockDim.x) {
		const int64_t i = idx % n;
		int64_t i1, i2, i3;

		ct_split(d, idx / n, &i1, &i2, &i3);
		float *o = ct_row(d, i1, i2, i3) + i;

		if (kind == EW_FILL) {
			*o = value;
			continue;
		}
		if (kind == EW_COPY) {
			*(uint32_t *)o = ((const uint32_t *)ct_row(a, i1, i2, i3))[i];
			continue;
		}
		const float x = ct_row(a, i1, i2, i3)[i];
		const float y = ct_row(b, i1, i2, i3)[bscalar ? 0 : i];

		if (kind == EW_ADD)
			*o = x + y;
		else if (kind == EW_SWIGLU)
			*o = x / (1.0f + expf(-x)) * y;
		else
			*o = x / (1.0f + expf(-y));
	}
}

static int op_elementwise(struct cuda_dev *d, const struct strata_op *op)
{
	const int kind = op->code == STRATA_OP_ADD ? EW_ADD
			 : op->code == STRATA_OP_SWIGLU ? EW_SWIGLU
			 : op->code == STRATA_OP_SIGMOID_MUL ? EW_SIGMOID_MUL
			 : op->code == STRATA_OP_COPY ? EW_COPY : EW_FILL;
	struct ct a = {}, b = {}, o;
	int64_t total;

	if (ct_of(op->dst, &o))
		return -EINVAL;
	if (kind != EW_FILL && (ct_of(op->src[0], &a) || a.ne[0] != o.ne[0]))
		return -EINVAL;
	if (kind <= EW_SIGMOID_MUL && (ct_of(op->src[1], &b) || (b.ne[0] != o.ne[0] &&
								  b.ne[0] != 1)))
		return -EINVAL;
	if (kind > EW_SIGMOID_MUL)
		b.ne[0] = o.ne[0]; /* unused */
	total = o.ne[0] * ct_rows(&o);
	if (total <= 0)
		return 0;
	k_elementwise<<<blocks_for(total), OPS_THREADS, 0, d->compute>>>(
		kind, a, b, o, total, op->p.fill.value);
	return cu_check(d, cudaGetLastError(), "element-wise op");
}

/* ---- MOE_ROUTE -------------------------------------------------------------------- */

/* The better of two picks: any candidate over none, the higher score, ties the lower id. */
__device__ __forceinline__ void pick_max(float *bs, int *best, float s2, int b2)
{
	if (b2 < 0)
		return;
	if (*best < 0 || s2 > *bs || (!(s2 < *bs) && b2 < *best)) {
		*bs = s2;
		*best = b2;
	}
}

/*
 * One block per token (strata_route_token): probabilities in place in the
 * logits row (softmax's sum in sequence on one thread, as the CPU's), k
 * rounds of a block arg-max over the experts not yet taken (score = prob +
 * bias), then thread 0 weighs, renormalises and scales in the CPU's order.
 */
__global__ void k_route(ct lg, const float *bias, ct wd, ct ids, int ne, int k, int gating,
			int norm, float scale)
{
	extern __shared__ int sel[]; /* k picks */
	__shared__ float shf[32];
	__shared__ int shi[32];
	__shared__ float sum_sh;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	for (int64_t t = blockIdx.x; t < lg.ne[1]; t += gridDim.x) {
		float *l = ct_row(lg, t, 0, 0);

		if (gating == STRATA_GATING_MODE_SIGMOID) {
			for (int e = threadIdx.x; e < ne; e += blockDim.x)
				l[e] = 1.0f / (1.0f + expf(-l[e]));
		} else {
			float mx = -INFINITY;

			for (int e = threadIdx.x; e < ne; e += blockDim.x)
				mx = l[e] > mx ? l[e] : mx;
			for (int o = 16; o; o >>= 1) {
				const float m2 = __shfl_down_sync(OPS_FULL, mx, o);

				mx = m2 > mx ? m2 : mx;
			}
			if (!lane)
				shf[warp] = mx;
			__syncthreads();
			mx = -INFINITY;
			for (int w = 0; w < (int)(blockDim.x >> 5); w++)
				mx = shf[w] > mx ? shf[w] : mx;
			for (int e = threadIdx.x; e < ne; e += blockDim.x)
				l[e] = expf(l[e] - mx);
			__syncthreads();
			if (!threadIdx.x) {
				float s = 0.0f;

				for (int e = 0; e < ne; e++)
					s += l[e];
				sum_sh = s;
			}
			__syncthreads();
			for (int e = threadIdx.x; e < ne; e += blockDim.x)
				l[e] /= sum_sh;
		}
		__syncthreads();
		for (int j = 0; j < k; j++) {
			float bs = -INFINITY;
			int best = -1;

			for (int e = threadIdx.x; e < ne; e += blockDim.x) {
				int taken = 0;

				for (int q = 0; q < j; q++)
					taken |= sel[q] == e;
				if (!taken)
					pick_max(&bs, &best, l[e] + (bias ? bias[e] : 0.0f), e);
			}
			for (int o = 16; o; o >>= 1) {
				const float s2 = __shfl_down_sync(OPS_FULL, bs, o);
				const int b2 = __shfl_down_sync(OPS_FULL, best, o);

				pick_max(&bs, &best, s2, b2);
			}
			if (!lane) {
				shf[warp] = bs;
				shi[warp] = best;
			}
			__syncthreads();
			if (!threadIdx.x) {
				for (int w = 1; w < (int)(blockDim.x >> 5); w++)
					pick_max(&bs, &best, shf[w], shi[w]);
				sel[j] = best;
			}
			__syncthreads();
		}
		if (!threadIdx.x) {
			float *wt = ct_row(wd, t, 0, 0), sum = 0.0f;
			int32_t *id = (int32_t *)ct_row(ids, t, 0, 0);

			for (int j = 0; j < k; j++) {
				id[j] = sel[j];
				wt[j] = l[sel[j]];
				sum += wt[j];
			}
			if (norm) /* llama.cpp's clamp of the sum at 2^-14 */
				for (int j = 0; j < k; j++)
					wt[j] /= sum < 6.103515625e-5f ? 6.103515625e-5f : sum;
			for (int j = 0; j < k; j++)
				wt[j] *= scale;
		}
		__syncthreads(); /* sel and the shared sums are free again */
	}
}

static int op_route(struct cuda_dev *d, const struct strata_op *op)
{
	const struct strata_tensor *b = op->src[1];
	const uint32_t k = op->p.route.k;
	struct ct lg, bb = {}, wd, ids;

	if (ct_of(op->src[0], &lg) || (b && ct_of(b, &bb)) || ct_of(op->dst, &wd) ||
	    ct_of(op->aux, &ids) || k == 0 || k > (uint64_t)lg.ne[0] || k > ROUTE_MAX_K ||
	    lg.ne[0] > INT32_MAX || wd.ne[0] != k || ids.ne[0] != k ||
	    op->aux->type != STRATA_TYPE_I32 || (b && b->ne[0] < lg.ne[0]) ||
	    (op->p.route.gating != STRATA_GATING_MODE_SOFTMAX &&
	     op->p.route.gating != STRATA_GATING_MODE_SIGMOID))
		return -EINVAL;
	if (!lg.ne[1])
		return 0;
	k_route<<<rows_grid(lg.ne[1]), OPS_THREADS, k * sizeof(int), d->compute>>>(
		lg, b ? (const float *)bb.p : NULL, wd, ids, (int)lg.ne[0], (int)k,
		(int)op->p.route.gating, (int)op->p.route.norm, op->p.route.scale);
	return cu_check(d, cudaGetLastError(), "moe_route");
}

/* ---- MOE_COMBINE ------------------------------------------------------------------- */

/*
 * One block per output column c: the items i with tok[i] == c, found a
 * block of ids at a time and listed in the order of i (a ballot per warp),
 * are added into the column in that order, each element by one thread: the
 * CPU's order, so the sums are deterministic (no atomics).  Ids out of range
 * match no column (the CPU refuses the op; here they are skipped).
 */
__global__ void k_combine(ct src, const int32_t *tok, const float *w, ct dst, int64_t m)
{
	__shared__ int64_t list[OPS_THREADS];
	__shared__ int wcnt[OPS_THREADS / 32];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int64_t n = dst.ne[0];

	for (int64_t c = blockIdx.x; c < dst.ne[1]; c += gridDim.x) {
		float *o = ct_row(dst, c, 0, 0);

		for (int64_t base = 0; base < m; base += blockDim.x) {
			const int64_t i = base + threadIdx.x;
			const int hit = i < m && tok[i] == c;
			const unsigned mask = __ballot_sync(OPS_FULL, hit);
			int at = 0, cnt = 0;

			if (!lane)
				wcnt[warp] = __popc(mask);
			__syncthreads();
			for (int q = 0; q < (int)(blockDim.x >> 5); q++) {
				at += q < warp ? wcnt[q] : 0;
				cnt += wcnt[q];
			}
			if (hit)
				list[at + __popc(mask & ((1u << lane) - 1))] = i;
			__syncthreads();
			for (int64_t e = threadIdx.x; cnt && e < n; e += blockDim.x) {
				float acc = o[e];

				for (int q = 0; q < cnt; q++)
					acc = fmaf(w[list[q]], ct_row(src, list[q], 0, 0)[e], acc);
				o[e] = acc;
			}
			__syncthreads(); /* list and wcnt are free again */
		}
	}
}

static int op_combine(struct cuda_dev *d, const struct strata_op *op)
{
	struct ct s, t, w, o;

	if (ct_of(op->src[0], &s) || ct_of(op->src[1], &t) || ct_of(op->src[2], &w) ||
	    ct_of(op->dst, &o) || s.ne[0] != o.ne[0] || op->src[1]->type != STRATA_TYPE_I32 ||
	    t.ne[0] < s.ne[1] || w.ne[0] < s.ne[1])
		return -EINVAL;
	if (!s.ne[1] || !o.ne[1])
		return 0;
	k_combine<<<rows_grid(o.ne[1]), OPS_THREADS, 0, d->compute>>>(
		s, (const int32_t *)t.p, (const float *)w.p, o, s.ne[1]);
	return cu_check(d, cudaGetLastError(), "moe_combine");
}

/* ---- qwen4exp: SCALE_SILU, HC_PRE, HC_POST ------------------------------------------ */

/* Column t of a 2-D tensor (exec_q4x.c's col: nb[1] only). */
__device__ __forceinline__ float *ct_col(const ct &t, int64_t i)
{
	return (float *)(t.p + i * t.nb[1]);
}

/* dst = silu(s * src), a thread per element. */
__global__ void k_scale_silu(ct x, ct d, float s)
{
	const int64_t e = d.ne[0], total = e * d.ne[1];

	for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
	     idx += (int64_t)gridDim.x * blockDim.x)
		ct_col(d, idx / e)[idx % e] = siluf_(ct_col(x, idx / e)[idx % e] * s);
}

/* dst[i, t] = (sum_c x_c[i] * sigmoid(g_c[i])) * (1/hc), streams added in order. */
__global__ void k_hc_pre(ct x, ct g, ct d, int hc)
{
	const int64_t e = d.ne[0], total = e * d.ne[1];

	for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
	     idx += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = idx / e, i = idx % e;
		const float *xt = ct_col(x, t), *gt = ct_col(g, t);
		float o = __fmul_rn(xt[i], sigmoidf_(gt[i]));

		for (int c = 1; c < hc; c++)
			o = __fadd_rn(o, __fmul_rn(xt[c * e + i], sigmoidf_(gt[c * e + i])));
		ct_col(d, t)[i] = __fmul_rn(o, 1.0f / (float)hc);
	}
}

/* dst[c*e + i, t] = res[c*e + i, t] + b[i, t] * 2 sigmoid(inj[c, t] / hc). */
__global__ void k_hc_post(ct res, ct b, ct inj, ct d, int hc)
{
	const int64_t e = b.ne[0], w = e * hc, total = w * d.ne[1];

	for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
	     idx += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = idx / w, j = idx % w, c = j / e;
		const float g = 2.0f * sigmoidf_(ct_col(inj, t)[c] * (1.0f / (float)hc));

		ct_col(d, t)[j] = __fadd_rn(ct_col(res, t)[j], __fmul_rn(ct_col(b, t)[j % e], g));
	}
}

static int op_q4x_elementwise(struct cuda_dev *d, const struct strata_op *op)
{
	const int64_t hc = op->p.hc.n;
	struct ct a, b, c, o;

	if (ct_of(op->dst, &o) || ct_of(op->src[0], &a))
		return -EINVAL;
	if (op->code == STRATA_OP_SCALE_SILU) {
		if (a.ne[0] != o.ne[0] || a.ne[1] != o.ne[1])
			return -EINVAL;
		if (o.ne[0] * o.ne[1] > 0)
			k_scale_silu<<<blocks_for(o.ne[0] * o.ne[1]), OPS_THREADS, 0, d->compute>>>(
				a, o, op->p.scale.s);
	} else if (op->code == STRATA_OP_HC_PRE) {
		if (ct_of(op->src[1], &b) || !hc || hc > INT32_MAX || a.ne[0] != o.ne[0] * hc ||
		    b.ne[0] != o.ne[0] * hc || a.ne[1] != o.ne[1] || b.ne[1] != o.ne[1])
			return -EINVAL;
		if (o.ne[0] * o.ne[1] > 0)
			k_hc_pre<<<blocks_for(o.ne[0] * o.ne[1]), OPS_THREADS, 0, d->compute>>>(
				a, b, o, (int)hc);
	} else {
		if (ct_of(op->src[1], &b) || ct_of(op->src[2], &c) || !hc || hc > INT32_MAX ||
		    o.ne[0] != b.ne[0] * hc || a.ne[0] != b.ne[0] * hc || c.ne[0] != hc ||
		    b.ne[1] != o.ne[1] || c.ne[1] != o.ne[1] || a.ne[1] != o.ne[1])
			return -EINVAL;
		if (o.ne[0] * o.ne[1] > 0)
			k_hc_post<<<blocks_for(o.ne[0] * o.ne[1]), OPS_THREADS, 0, d->compute>>>(
				a, b, c, o, (int)hc);
	}
	return cu_check(d, cudaGetLastError(), "hyper-connection op");
}

/* ---- PLE_GATE -------------------------------------------------------------------- */

/*
 * One block per (stream c, token t): s = <key_c, query_c> (a float tree
 * reduction; the CPU adds in sequence) / sqrt(e), then dst_c = value *
 * sigmoid(sign(s) sqrt(max(|s|, 1e-6))).  dst may be key: the block reads
 * its stream before the reduction's barriers and writes it after.
 */
__global__ void k_ple_gate(ct k, ct q, ct v, ct d, int64_t hc)
{
	__shared__ float sh[32];
	const int64_t e = v.ne[0], pairs = hc * d.ne[1];

	for (int64_t r = blockIdx.x; r < pairs; r += gridDim.x) {
		const int64_t t = r / hc, c = r % hc;
		const float *kt = ct_col(k, t) + c * e, *qt = ct_col(q, t) + c * e;
		const float *vt = ct_col(v, t);
		float *o = ct_col(d, t) + c * e, s = 0.0f, mag, g;

		for (int64_t i = threadIdx.x; i < e; i += blockDim.x)
			s = __fadd_rn(s, __fmul_rn(kt[i], qt[i]));
		s = block_sum(s, sh);
		s *= 1.0f / sqrtf((float)e);
		mag = sqrtf(fabsf(s) > 1e-6f ? fabsf(s) : 1e-6f);
		g = sigmoidf_(s > 0.0f ? mag : s < 0.0f ? -mag : 0.0f);
		for (int64_t i = threadIdx.x; i < e; i += blockDim.x)
			o[i] = vt[i] * g;
	}
}

static int op_ple_gate(struct cuda_dev *d, const struct strata_op *op)
{
	struct ct k, q, v, o;
	int64_t n;

	if (ct_of(op->src[0], &k) || ct_of(op->src[1], &q) || ct_of(op->src[2], &v) ||
	    ct_of(op->dst, &o))
		return -EINVAL;
	n = o.ne[1];
	if (!v.ne[0] || o.ne[0] % v.ne[0] || k.ne[0] != o.ne[0] || q.ne[0] != o.ne[0] ||
	    k.ne[1] != n || q.ne[1] != n || v.ne[1] != n)
		return -EINVAL;
	if (!n || !o.ne[0])
		return 0;
	k_ple_gate<<<rows_grid(o.ne[0] / v.ne[0] * n), OPS_THREADS, 0, d->compute>>>(
		k, q, v, o, o.ne[0] / v.ne[0]);
	return cu_check(d, cudaGetLastError(), "ple_gate");
}

/* ---- CONV_SILU ---------------------------------------------------------------------- */

/*
 * dst[c, t] = silu(sum_k w[k, c] x[c, t - (K-1-k) dil]), reading the
 * history (hist = (K-1) dil rows of C, oldest first) before t = 0; a
 * thread per (c, t).
 */
__global__ void k_conv_silu(ct x, const float *hs, const float *kw, ct d, int64_t K,
			    int64_t dil)
{
	const int64_t C = x.ne[0], n = x.ne[1], hist = (K - 1) * dil, total = C * n;

	for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
	     idx += (int64_t)gridDim.x * blockDim.x) {
		const int64_t t = idx / C, c = idx % C;
		float acc = 0.0f;

		for (int64_t k = 0; k < K; k++) {
			const int64_t src = t - (K - 1 - k) * dil;
			const float v = src >= 0 ? ct_col(x, src)[c] : hs[(hist + src) * C + c];

			acc = __fadd_rn(acc, __fmul_rn(kw[c * K + k], v));
		}
		ct_col(d, t)[c] = siluf_(acc);
	}
}

/*
 * The history becomes the last hist inputs of (history, x), a thread per
 * channel moving its column upwards in order (row i reads row i + n, not
 * yet written), after k_conv_silu read the old one.
 */
__global__ void k_conv_history(ct x, float *hs, int64_t hist)
{
	const int64_t C = x.ne[0], n = x.ne[1];

	for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C;
	     c += (int64_t)gridDim.x * blockDim.x)
		for (int64_t i = 0; i < hist; i++)
			hs[i * C + c] = i < hist - n ? hs[(i + n) * C + c]
						     : ct_col(x, n - hist + i)[c];
}

static int op_conv_silu(struct cuda_dev *d, const struct strata_op *op)
{
	const int64_t dil = op->p.conv.dilation;
	struct ct x, h, w, o;
	int64_t C, n, K, hist;
	int rc;

	if (ct_of(op->src[0], &x) || ct_of(op->src[1], &h) || ct_of(op->src[2], &w) ||
	    ct_of(op->dst, &o))
		return -EINVAL;
	C = x.ne[0];
	n = x.ne[1];
	K = w.ne[0];
	hist = (K - 1) * dil;
	if (!dil || K < 1 || w.ne[1] != C || o.ne[0] != C || o.ne[1] != n || h.ne[0] != C ||
	    h.ne[1] != hist || h.nb[1] != C * (int64_t)sizeof(float) ||
	    w.nb[1] != K * (int64_t)sizeof(float) || o.p == x.p)
		return -EINVAL;
	if (!C || !n)
		return 0;
	k_conv_silu<<<blocks_for(C * n), OPS_THREADS, 0, d->compute>>>(
		x, (const float *)h.p, (const float *)w.p, o, K, dil);
	if ((rc = cu_check(d, cudaGetLastError(), "conv_silu")) || !hist)
		return rc;
	k_conv_history<<<blocks_for(C), OPS_THREADS, 0, d->compute>>>(x, (float *)h.p, hist);
	return cu_check(d, cudaGetLastError(), "conv_silu: history");
}

/* ---- dispatch -------------------------------------------------------------------------- */

int cu_simple_supports(uint32_t code)
{
	switch (code) {
	case STRATA_OP_GET_ROWS:
	case STRATA_OP_RMS_NORM:
	case STRATA_OP_ROPE:
	case STRATA_OP_ADD:
	case STRATA_OP_SWIGLU:
	case STRATA_OP_SIGMOID_MUL:
	case STRATA_OP_COPY:
	case STRATA_OP_FILL:
	case STRATA_OP_MOE_ROUTE:
	case STRATA_OP_MOE_COMBINE:
	case STRATA_OP_SCALE_SILU:
	case STRATA_OP_HC_PRE:
	case STRATA_OP_HC_POST:
	case STRATA_OP_PLE_GATE:
	case STRATA_OP_CONV_SILU:
		return 1;
	default:
		return 0;
	}
}

int cu_op_simple(struct cuda_dev *d, const struct strata_op *op)
{
	switch (op->code) {
	case STRATA_OP_GET_ROWS:
		return op_get_rows(d, op);
	case STRATA_OP_RMS_NORM:
		return op_rms_norm(d, op);
	case STRATA_OP_ROPE:
		return op_rope(d, op);
	case STRATA_OP_ADD:
	case STRATA_OP_SWIGLU:
	case STRATA_OP_SIGMOID_MUL:
	case STRATA_OP_COPY:
	case STRATA_OP_FILL:
		return op_elementwise(d, op);
	case STRATA_OP_MOE_ROUTE:
		return op_route(d, op);
	case STRATA_OP_MOE_COMBINE:
		return op_combine(d, op);
	case STRATA_OP_SCALE_SILU:
	case STRATA_OP_HC_PRE:
	case STRATA_OP_HC_POST:
		return op_q4x_elementwise(d, op);
	case STRATA_OP_PLE_GATE:
		return op_ple_gate(d, op);
	case STRATA_OP_CONV_SILU:
		return op_conv_silu(d, op);
	default:
		return -EINVAL;
	}
}
