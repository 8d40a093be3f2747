/*
 * cuda_dn.cu - STRATA_OP_DELTANET (qwen3next) and STRATA_OP_DELTANET_TILED
 * (qwen4exp) on CUDA: the Gated DeltaNet mixer after its input projections,
 * the same math as the CPU backend's core/backend/exec_dn.c.
 *
 * Six kernels, queued in this order on the compute stream:
 *   1. dn_conv: the causal depthwise conv of every channel over (conv state,
 *      the batch's qkv), SiLU, into scratch xc [n][ch] (a thread per channel
 *      and token).
 *   2. dn_conv_state: the conv state becomes the last d_conv-1 inputs (a
 *      thread per channel; after 1, which read the old state).
 *   3. dn_qk_norm: the L2 norms of every q and k head of every token in xc,
 *      q also scaled by 1/sqrt(dk) (a warp per head vector).
 *   4. dn_gates: beta = sigmoid(b), g = a * softplus(alpha + dt_bias) per
 *      token and value head into scratch (a thread each).
 *   5. dn_rule: the gated delta rule, token by token, writing o into dst.
 *      Every row of a head's state S (one value channel, dk floats) evolves
 *      on its own given the token's q, k, beta and g, so a warp owns DN_ROWS rows:
 *      lane l keeps columns l, l+32, .. of them in registers for the whole
 *      batch (S is read and written once per op), reads q_t and k_t straight
 *      from xc (coalesced, L1/L2 hits shared by the head's warps; the next
 *      token's are prefetched) and reduces the dot products with shuffles.
 *      No shared memory and no block-wide synchronisation.
 *   6. dn_out_norm: the gated RMSNorm of o per token and value head, in
 *      place in dst (a warp per head vector).
 *
 * Every batch runs the recurrence, which the ABI allows ("n == 1 may run
 * the recurrence, longer batches a chunked form: both within float error of
 * the recurrence"); the CPU takes its chunked (WY) form above
 * STRATA_DN_RECURRENT_MAX tokens.  A chunked form for long prompts (the
 * c x c products on tensor cores) is a later optimisation: the recurrence
 * is sequential in n, one latency-bound step per token (not yet measured).
 *
 * Sums of squares (the L2 norms, the gated RMSNorm) are taken in double as
 * the CPU does; the delta rule's dot products are float (the CPU's are too,
 * in another order).
 */
#include <errno.h>
#include <math.h>

#include "cuda_int.h"

#define DN_FULL 0xffffffffu
#define DN_WARPS 4                  /* warps per block of the warp-per-item kernels */
#define DN_ROWS 4                   /* rows of S per warp in dn_rule */
#define DN_MAX_DK (32 * 8)          /* dn_rule keeps up to 8 columns per lane */
#define DN_THREADS 256              /* threads per block of the element-wise kernels */

/* The op's sizes, passed to the kernels by value. */
struct dn_shape {
	uint32_t n;     /* tokens */
	uint32_t ch;    /* conv channels: 2 nk dk + nv dv */
	uint32_t nk;    /* key heads */
	uint32_t dk;    /* key head size */
	uint32_t nv;    /* value heads */
	uint32_t dv;    /* value head size */
	uint32_t K;     /* conv kernel length */
	uint32_t r;     /* value heads per key head, nv / nk */
	int tiled;      /* DELTANET_TILED: key head h mod nk, b/a layout, sigmoid gate */
	float eps;      /* L2 norms' and gated norm's epsilon */
};

static __device__ __forceinline__ float dn_silu(float x)
{
	return x / (1.0f + expf(-x));
}

/* ggml's threshold, as the CPU: beyond 20 log1p(e^x) == x in float. */
static __device__ __forceinline__ float dn_softplus(float x)
{
	return x > 20.0f ? x : log1pf(expf(x));
}

/* ---- 1, 2: the conv ------------------------------------------------------------ */

/*
 * xc[t][c] = silu(sum_j kern[c][j] * in(t + j - (K-1), c)), where inputs
 * before the batch come from the conv state (row t + j of it) and the others
 * from qkv (row stride ld floats).  Threads over channels, blocks' y over
 * tokens (strided: the grid's y is capped at 65535).
 */
static __global__ void dn_conv(struct dn_shape s, const float *__restrict__ qkv, size_t ld,
			       const float *__restrict__ state, const float *__restrict__ kern,
			       float *__restrict__ xc)
{
	const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;

	if (c >= s.ch)
		return;
	for (uint32_t t = blockIdx.y; t < s.n; t += gridDim.y) {
		float y = 0.0f;

		for (uint32_t j = 0; j < s.K; j++) {
			const long src = (long)t + (long)j - (long)(s.K - 1);
			const float in = src < 0 ? state[(size_t)(t + j) * s.ch + c]
						 : qkv[(size_t)src * ld + c];

			y += kern[(size_t)c * s.K + j] * in;
		}
		xc[(size_t)t * s.ch + c] = dn_silu(y);
	}
}

/*
 * The conv state [K-1][ch] becomes the tail of (state, batch): row i is
 * old row i + n while that exists, else batch row n - (K-1) + i.  A thread
 * per channel walks i upwards, so it reads each old row before any write
 * to it (only its own channel's column).
 */
static __global__ void dn_conv_state(struct dn_shape s, float *__restrict__ state,
				     const float *__restrict__ qkv, size_t ld)
{
	const uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
	const uint32_t keep = s.K - 1, from_state = s.n >= keep ? 0 : keep - s.n;

	if (c >= s.ch)
		return;
	for (uint32_t i = 0; i < keep; i++)
		state[(size_t)i * s.ch + c] = i < from_state
			? state[(size_t)(i + s.n) * s.ch + c]
			: qkv[(size_t)(s.n + i - keep) * ld + c];
}

/* ---- 3, 4: the q/k norms and the gates ------------------------------------------ */

/* The sum of a double over the warp, in every lane. */
static __device__ __forceinline__ double dn_warp_sum(double v)
{
	for (int off = 16; off; off >>= 1)
		v += __shfl_xor_sync(DN_FULL, v, off);
	return v;
}

/*
 * A warp per vector w = t * 2nk + j of xc: token t's q head j (j < nk,
 * scaled by qscale) or k head j - nk.  x *= scale / max(|x|, eps)
 * (qwen3next), or scale / sqrt(|x|^2 + eps) in double (qwen4exp), as the
 * CPU's l2norm().
 */
static __global__ void dn_qk_norm(struct dn_shape s, float *__restrict__ xc, float qscale)
{
	const uint32_t lane = threadIdx.x & 31;
	const size_t w = (size_t)blockIdx.x * DN_WARPS + (threadIdx.x >> 5);
	const uint32_t j = (uint32_t)(w % (2 * s.nk));
	const size_t t = w / (2 * s.nk);
	float *x, scale;
	double ss = 0.0;

	if (t >= s.n) /* warp-uniform */
		return;
	x = xc + t * s.ch + (size_t)j * s.dk;
	for (uint32_t i = lane; i < s.dk; i += 32)
		ss += (double)x[i] * x[i];
	ss = dn_warp_sum(ss);
	scale = j < s.nk ? qscale : 1.0f;
	if (s.tiled) {
		scale = (float)(scale / sqrt(ss + s.eps));
	} else {
		const float norm = (float)sqrt(ss);

		scale /= norm > s.eps ? norm : s.eps;
	}
	for (uint32_t i = lane; i < s.dk; i += 32)
		x[i] *= scale;
}

/*
 * beta and g of token t, value head h (a thread each, i = t * nv + h).  ba
 * holds per key head the b of its r value heads then their a (qwen3next),
 * or (tiled) the b of every value head, then every a.
 */
static __global__ void dn_gates(struct dn_shape s, const float *__restrict__ ba0, size_t ld,
				const float *__restrict__ dt_bias, const float *__restrict__ A,
				float *__restrict__ g, float *__restrict__ beta)
{
	const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	const uint32_t h = (uint32_t)(i % s.nv), gi = h / s.r, j = h % s.r;
	const size_t t = i / s.nv;
	const float *ba = ba0 + t * ld;
	float b, al;

	if (t >= s.n)
		return;
	b = s.tiled ? ba[h] : ba[(size_t)gi * 2 * s.r + j];
	al = s.tiled ? ba[s.nv + h] : ba[(size_t)gi * 2 * s.r + s.r + j];
	beta[i] = 1.0f / (1.0f + expf(-b));
	g[i] = A[h] * dn_softplus(al + dt_bias[h]);
}

/* ---- 5: the delta rule ---------------------------------------------------------- */

/*
 * Token t's operands for a warp of dn_rule: its lane's NJ columns of q and
 * k (0 past dk), the v of the warp's rows (0 past dv), g and beta.
 */
template <int NJ>
static __device__ __forceinline__ void dn_load(const struct dn_shape &s, const float *xc,
					       const float *gs, const float *bs, uint32_t t,
					       uint32_t h, uint32_t kh, uint32_t row0,
					       uint32_t lane, float *q, float *k, float *v,
					       float *g, float *b)
{
	const float *x = xc + (size_t)t * s.ch;
	const float *xq = x + (size_t)kh * s.dk, *xk = x + (size_t)(s.nk + kh) * s.dk;
	const float *xv = x + (size_t)2 * s.nk * s.dk + (size_t)h * s.dv;

#pragma unroll
	for (int j = 0; j < NJ; j++) {
		const uint32_t col = lane + 32 * j;

		q[j] = col < s.dk ? xq[col] : 0.0f;
		k[j] = col < s.dk ? xk[col] : 0.0f;
	}
#pragma unroll
	for (int r = 0; r < DN_ROWS; r++)
		v[r] = row0 + r < s.dv ? xv[row0 + r] : 0.0f; /* a broadcast load */
	*g = gs[(size_t)t * s.nv + h];
	*b = bs[(size_t)t * s.nv + h];
}

/*
 * The gated delta rule for value head h = blockIdx.y over the batch; warp
 * w of block x owns S rows row0 = (x * DN_WARPS + w) * DN_ROWS .. +
 * DN_ROWS (value channels).  Per token, with S' = e^g S (the CPU's
 * strata_dn_rule_recurrent): d = beta (v - S' k), S = S' + d k^T,
 * o = S q = S' q + (q.k) d.  S: [nv][dv][dk] in place; o into dst at
 * token row stride ld_o.  NJ * 32 >= dk.
 */
template <int NJ>
static __global__ void __launch_bounds__(32 * DN_WARPS)
dn_rule(struct dn_shape s, const float *__restrict__ xc, const float *__restrict__ gs,
	const float *__restrict__ bs, float *__restrict__ ssm, float *__restrict__ o,
	size_t ld_o)
{
	const uint32_t lane = threadIdx.x & 31, h = blockIdx.y;
	const uint32_t row0 = (blockIdx.x * DN_WARPS + (threadIdx.x >> 5)) * DN_ROWS;
	/* value head h reads key head h / r (llama.cpp's repeat-interleave) or h mod nk */
	const uint32_t kh = s.tiled ? h % s.nk : h / s.r;
	float *S = ssm + (size_t)h * s.dv * s.dk;
	float Sr[DN_ROWS][NJ], q[NJ], k[NJ], v[DN_ROWS], g, b;
	/* the next token's (zeroed: the last iteration copies them unread) */
	float nq[NJ] = {}, nk[NJ] = {}, nvv[DN_ROWS] = {}, ng = 0.0f, nb = 0.0f;

	if (row0 >= s.dv) /* warp-uniform: no row of this warp exists */
		return;
#pragma unroll
	for (int r = 0; r < DN_ROWS; r++)
#pragma unroll
		for (int j = 0; j < NJ; j++) {
			const uint32_t col = lane + 32 * j;

			Sr[r][j] = row0 + r < s.dv && col < s.dk
				? S[(size_t)(row0 + r) * s.dk + col] : 0.0f;
		}
	dn_load<NJ>(s, xc, gs, bs, 0, h, kh, row0, lane, q, k, v, &g, &b);
	for (uint32_t t = 0; t < s.n; t++) {
		float red[2 * DN_ROWS + 1], eg;

		/* the next token's operands, loading while this one computes */
		if (t + 1 < s.n)
			dn_load<NJ>(s, xc, gs, bs, t + 1, h, kh, row0, lane, nq, nk, nvv, &ng, &nb);
		eg = expf(g);
		/* red: [S_r . q for each row; S_r . k for each row; q . k], lane sums */
#pragma unroll
		for (int i = 0; i < 2 * DN_ROWS + 1; i++)
			red[i] = 0.0f;
#pragma unroll
		for (int j = 0; j < NJ; j++) {
#pragma unroll
			for (int r = 0; r < DN_ROWS; r++) {
				red[r] += Sr[r][j] * q[j];
				red[DN_ROWS + r] += Sr[r][j] * k[j];
			}
			red[2 * DN_ROWS] += q[j] * k[j];
		}
#pragma unroll
		for (int off = 16; off; off >>= 1)
#pragma unroll
			for (int i = 0; i < 2 * DN_ROWS + 1; i++)
				red[i] += __shfl_xor_sync(DN_FULL, red[i], off);
#pragma unroll
		for (int r = 0; r < DN_ROWS; r++) {
			const float d = b * (v[r] - eg * red[DN_ROWS + r]);
			const float ot = eg * red[r] + red[2 * DN_ROWS] * d;

			/* lane r stores row r's output (every lane holds it) */
			if (lane == (uint32_t)r && row0 + r < s.dv)
				o[(size_t)t * ld_o + (size_t)h * s.dv + row0 + r] = ot;
			/* the CPU's strata_axpby_f32(row, d, k, eg) */
#pragma unroll
			for (int j = 0; j < NJ; j++)
				Sr[r][j] = d * k[j] + eg * Sr[r][j];
		}
#pragma unroll
		for (int j = 0; j < NJ; j++) {
			q[j] = nq[j];
			k[j] = nk[j];
		}
#pragma unroll
		for (int r = 0; r < DN_ROWS; r++)
			v[r] = nvv[r];
		g = ng;
		b = nb;
	}
#pragma unroll
	for (int r = 0; r < DN_ROWS; r++)
#pragma unroll
		for (int j = 0; j < NJ; j++) {
			const uint32_t col = lane + 32 * j;

			if (row0 + r < s.dv && col < s.dk)
				S[(size_t)(row0 + r) * s.dk + col] = Sr[r][j];
		}
}

/* ---- 6: the gated RMSNorm ------------------------------------------------------- */

/*
 * A warp per (token t, value head h), w = t * nv + h: o = o / sqrt(mean(o^2)
 * + eps) * norm * gate(z), gate silu or (tiled) sigmoid, in place in dst,
 * rounding as the CPU's head_worker does.
 */
static __global__ void dn_out_norm(struct dn_shape s, float *__restrict__ o0, size_t ld_o,
				   const float *__restrict__ z0, size_t ld_z,
				   const float *__restrict__ norm)
{
	const uint32_t lane = threadIdx.x & 31;
	const size_t w = (size_t)blockIdx.x * DN_WARPS + (threadIdx.x >> 5);
	const uint32_t h = (uint32_t)(w % s.nv);
	const size_t t = w / s.nv;
	float *o, sc;
	const float *z;
	double ss = 0.0;

	if (t >= s.n) /* warp-uniform */
		return;
	o = o0 + t * ld_o + (size_t)h * s.dv;
	z = z0 + t * ld_z + (size_t)h * s.dv;
	for (uint32_t i = lane; i < s.dv; i += 32)
		ss += (double)o[i] * o[i];
	ss = dn_warp_sum(ss);
	sc = (float)(1.0 / sqrt(ss / s.dv + s.eps));
	for (uint32_t i = lane; i < s.dv; i += 32) {
		if (s.tiled)
			o[i] = o[i] * sc * norm[i] / (1.0f + expf(-z[i]));
		else
			o[i] = o[i] * sc * norm[i] * dn_silu(z[i]);
	}
}

/* ---- the op --------------------------------------------------------------------- */

/* 1 when t is F32 with rows of contiguous floats (any row stride, a multiple of 4). */
static int dn_rows_ok(const struct strata_tensor *t)
{
	return t && t->buf && t->type == STRATA_TYPE_F32 && t->nb[0] == sizeof(float) &&
	       t->nb[1] % sizeof(float) == 0;
}

/* 1 when t is F32 and contiguous (the states and weights the CPU reads flat). */
static int dn_flat_ok(const struct strata_tensor *t)
{
	size_t want = sizeof(float);

	if (!dn_rows_ok(t))
		return 0;
	for (int i = 1; i < 4; i++) {
		want *= (size_t)t->ne[i - 1];
		if (t->ne[i] > 1 && t->nb[i] != want)
			return 0;
	}
	return 1;
}

/* The CPU's dn_check, plus the layouts this file reads and dn_rule's bound on dk. */
static int dn_check(const struct strata_op *op, const struct dn_shape *s)
{
	const struct strata_tensor *const *src = op->src;
	const uint32_t nk = s->nk, nv = s->nv, dv = s->dv, dk = s->dk, K = s->K, ch = s->ch;

	for (int i = 0; i < 3; i++)
		if (!dn_rows_ok(src[i]))
			return -EINVAL;
	for (int i = 3; i < 8; i++)
		if (!dn_flat_ok(src[i]))
			return -EINVAL;
	if (!dn_rows_ok(op->dst) || !dn_flat_ok(op->p.dn.norm))
		return -EINVAL;
	if (!nk || !nv || nv % nk || !dk || !dv || K < 2 || ch != 2 * nk * dk + nv * dv ||
	    src[1]->ne[0] != (int64_t)nv * dv || src[2]->ne[0] != 2 * (int64_t)nv ||
	    src[1]->ne[1] < (int64_t)s->n || src[2]->ne[1] < (int64_t)s->n ||
	    src[3]->ne[0] * src[3]->ne[1] != (int64_t)ch * (K - 1) ||
	    src[4]->ne[0] * src[4]->ne[1] * src[4]->ne[2] != (int64_t)dk * dv * nv ||
	    src[5]->ne[0] != K || src[5]->ne[1] != ch || src[6]->ne[0] != nv ||
	    src[7]->ne[0] != nv || op->p.dn.norm->ne[0] != dv ||
	    op->dst->ne[0] != (int64_t)nv * dv || op->dst->ne[1] != s->n || dk > DN_MAX_DK)
		return -EINVAL;
	return 0;
}

/* Queue dn_rule with the fewest columns per lane that hold dk; 0 or -EIO. */
static int dn_launch_rule(struct cuda_dev *d, const struct dn_shape *s, const float *xc,
			  const float *g, const float *beta, float *ssm, float *o, size_t ld_o)
{
	const uint32_t rows = DN_WARPS * DN_ROWS;
	const dim3 grid((s->dv + rows - 1) / rows, s->nv), block(32 * DN_WARPS);
	cudaStream_t st = d->compute;

	if (s->dk <= 32)
		dn_rule<1><<<grid, block, 0, st>>>(*s, xc, g, beta, ssm, o, ld_o);
	else if (s->dk <= 64)
		dn_rule<2><<<grid, block, 0, st>>>(*s, xc, g, beta, ssm, o, ld_o);
	else if (s->dk <= 128)
		dn_rule<4><<<grid, block, 0, st>>>(*s, xc, g, beta, ssm, o, ld_o);
	else
		dn_rule<8><<<grid, block, 0, st>>>(*s, xc, g, beta, ssm, o, ld_o);
	return cu_check(d, cudaGetLastError(), "deltanet: rule");
}

/*
 * STRATA_OP_DELTANET / DELTANET_TILED (see the top of the file and
 * backend.h): queues the six kernels on d->compute; 0, -EINVAL for operands
 * it does not take (nothing queued), -ENOMEM or -EIO.
 */
int cu_op_deltanet(struct cuda_dev *d, const struct strata_op *op)
{
	const struct strata_tensor *qkv = op->src[0];
	struct dn_shape s;
	size_t ld_qkv, ld_z, ld_ba, ld_o, warps;
	float *xc, *g, *beta, *o;
	void *scratch;
	uint32_t ty;
	int rc;

	if (!qkv || !op->dst || !op->p.dn.norm || qkv->ne[1] < 0 || qkv->ne[1] > UINT32_MAX / 2)
		return -EINVAL;
	s.n = (uint32_t)qkv->ne[1];
	s.ch = (uint32_t)qkv->ne[0];
	s.nk = op->p.dn.n_group;
	s.dk = op->p.dn.d_state;
	s.nv = op->p.dn.n_head_v;
	s.dv = op->p.dn.d_head_v;
	s.K = op->p.dn.d_conv;
	s.r = s.nk ? s.nv / s.nk : 0;
	s.tiled = op->code == STRATA_OP_DELTANET_TILED;
	s.eps = op->p.dn.eps;
	if ((op->code != STRATA_OP_DELTANET && !s.tiled) || (rc = dn_check(op, &s)))
		return -EINVAL;
	if (!s.n)
		return 0;
	ld_qkv = qkv->nb[1] / sizeof(float);
	ld_z = op->src[1]->nb[1] / sizeof(float);
	ld_ba = op->src[2]->nb[1] / sizeof(float);
	ld_o = op->dst->nb[1] / sizeof(float);
	o = (float *)cu_ptr(op->dst);
	/* scratch: the conv output xc [n][ch], then g and beta [n][nv] */
	if ((rc = cu_scratch(d, ((size_t)s.ch + 2 * (size_t)s.nv) * s.n * sizeof(float), &scratch)))
		return rc;
	xc = (float *)scratch;
	g = xc + (size_t)s.n * s.ch;
	beta = g + (size_t)s.n * s.nv;

	ty = s.n < 65535 ? s.n : 65535;
	dn_conv<<<dim3((s.ch + DN_THREADS - 1) / DN_THREADS, ty), DN_THREADS, 0, d->compute>>>(
		s, (const float *)cu_ptr(qkv), ld_qkv, (const float *)cu_ptr(op->src[3]),
		(const float *)cu_ptr(op->src[5]), xc);
	if ((rc = cu_check(d, cudaGetLastError(), "deltanet: conv")))
		return rc;
	/* the state update follows the conv on the stream: the conv read the old state */
	dn_conv_state<<<(s.ch + DN_THREADS - 1) / DN_THREADS, DN_THREADS, 0, d->compute>>>(
		s, (float *)cu_ptr(op->src[3]), (const float *)cu_ptr(qkv), ld_qkv);
	if ((rc = cu_check(d, cudaGetLastError(), "deltanet: conv state")))
		return rc;
	warps = (size_t)s.n * 2 * s.nk;
	dn_qk_norm<<<(unsigned)((warps + DN_WARPS - 1) / DN_WARPS), 32 * DN_WARPS, 0,
		     d->compute>>>(s, xc, 1.0f / sqrtf((float)s.dk));
	if ((rc = cu_check(d, cudaGetLastError(), "deltanet: q/k norms")))
		return rc;
	dn_gates<<<(unsigned)(((size_t)s.n * s.nv + DN_THREADS - 1) / DN_THREADS), DN_THREADS, 0,
		   d->compute>>>(s, (const float *)cu_ptr(op->src[2]), ld_ba,
				 (const float *)cu_ptr(op->src[6]),
				 (const float *)cu_ptr(op->src[7]), g, beta);
	if ((rc = cu_check(d, cudaGetLastError(), "deltanet: gates")))
		return rc;
	if ((rc = dn_launch_rule(d, &s, xc, g, beta, (float *)cu_ptr(op->src[4]), o, ld_o)))
		return rc;
	warps = (size_t)s.n * s.nv;
	dn_out_norm<<<(unsigned)((warps + DN_WARPS - 1) / DN_WARPS), 32 * DN_WARPS, 0,
		      d->compute>>>(s, o, ld_o, (const float *)cu_ptr(op->src[1]), ld_z,
				    (const float *)cu_ptr(op->p.dn.norm));
	return cu_check(d, cudaGetLastError(), "deltanet: gated norm");
}
