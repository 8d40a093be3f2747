/*
 * exec_dn.c - STRATA_OP_DELTANET and STRATA_OP_DELTANET_TILED on the CPU:
 * the Gated DeltaNet mixer (qwen3next's and qwen4exp's linear attention)
 * after its input projections.
 *
 * A batch (its input projections qkv, z and b/a already made by the layer
 * loop's MATMUL): the causal conv + SiLU over the qkv channels with q/k L2
 * norms and the per-head decay and beta (parallel over tokens), the delta
 * rule per value head (parallel over heads), and the gated RMSNorm; the
 * output projection is the layer loop's next MATMUL.
 *
 * The state S of a head is [dv][dk].  The chunked form, for the c tokens of
 * a chunk with cumulative log-decay G from the chunk's start state S0 (the
 * WY / UT transform of the recurrence):
 *
 *   T = (I + L)^-1,          L[i][j] = beta_i e^(G_i-G_j) k_i.k_j for j < i
 *   D = T (diag(beta) V - diag(beta e^G) K S0^T)   (row i: token i's delta)
 *   O = diag(e^G) Q S0^T + (e^(G_i-G_j) q_i.k_j for j <= i, else 0) D
 *   S = e^(G_c) S0 + D^T diag(e^(G_c-G)) K
 *
 * Every exponent is <= 0, so nothing overflows however strong the decay.
 * Apart from the c x c triangular inverse, the work is F32 matrix products
 * (strata_matmul on the calling thread), so it runs at the SIMD level in use.
 */
#include "backend/deltanet.h"
#include "backend/exec_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/pool.h"

/* ---- the delta rule, one head ------------------------------------------------ */

/* y[t][r] = sum_k w[r][k] x[t][k]: a small F32 product on the calling thread. */
static void mm(const float *w, int64_t rows, int64_t cols, const float *x, int64_t ldx,
	       int64_t n, float *y, int64_t ldy)
{
	struct strata_mat m;

	strata_mat_init(&m, STRATA_TYPE_F32, rows, cols, w);
	strata_matmul(NULL, &m, x, ldx, n, y, ldy);
}

void strata_dn_rule_recurrent(const float *q, const float *k, const float *v, size_t ldq,
			      size_t ldk, size_t ldv, const float *g, const float *beta,
			      size_t ldg, uint32_t n, uint32_t dk, uint32_t dv, float *S,
			      float *o, size_t ldo, float *scratch)
{
	float *qk = scratch, *sums = qk + 2 * (size_t)dk; /* [q; k], [S q; S k] */

	for (uint32_t t = 0; t < n; t++) {
		const float *restrict kt = k + t * ldk, *vt = v + t * ldv;
		const float eg = expf(g[t * ldg]), b = beta[t * ldg];
		float *ot = o + t * ldo, dot;

		/*
		 * Row c of S is value channel c.  With S' = e^g S: d = b (v - S' k),
		 * S = S' + d k^T, o = S q = S' q + (q.k) d: one product for both
		 * sums, one pass to update.
		 */
		memcpy(qk, q + t * ldq, dk * sizeof(float));
		memcpy(qk + dk, kt, dk * sizeof(float));
		mm(S, dv, dk, qk, dk, 2, sums, dv);
		dot = strata_dot_f32(qk, kt, dk);
		for (uint32_t c = 0; c < dv; c++) {
			float *restrict row = S + (size_t)c * dk;
			const float d = b * (vt[c] - eg * sums[dv + c]);

			ot[c] = eg * sums[c] + dot * d;
			strata_axpby_f32(row, d, kt, eg, dk);
		}
	}
}

size_t strata_dn_rule_scratch(uint32_t dk, uint32_t dv)
{
	const size_t C = STRATA_DN_CHUNK;

	/* G, Kc, Kt, A, T, E, Y, Yt, Dt, Sx (more than the recurrence's 2 dk + 2 dv) */
	return C + 2 * C * dk + 3 * C * C + 3 * C * dv + (size_t)dv * dk;
}

/*
 * T = (I + L)^-1 for the strictly lower L in A (c x c, row stride c), by
 * forward substitution: row i of T is e_i - sum_{j<i} L[i][j] T[j], and T[j]
 * is zero past column j (the row updates are the SIMD level's axpy: as a
 * scalar loop they were half of the chunked rule's own time).
 */
static void unit_lower_inverse(const float *A, uint32_t c, float *T)
{
	memset(T, 0, (size_t)c * c * sizeof(float));
	for (uint32_t i = 0; i < c; i++) {
		float *Ti = T + (size_t)i * c;

		Ti[i] = 1.0f;
		for (uint32_t j = 0; j < i; j++)
			strata_axpy_f32(Ti, -A[(size_t)i * c + j], T + (size_t)j * c, j + 1);
	}
}

/* One chunk of c <= STRATA_DN_CHUNK tokens; see the top of the file. */
static void dn_chunk(const float *q, const float *k, const float *v, size_t ldq, size_t ldk,
		     size_t ldv, const float *g, const float *beta, size_t ldg, uint32_t c,
		     uint32_t dk, uint32_t dv, float *S, float *o, size_t ldo, float *scratch)
{
	const size_t C = STRATA_DN_CHUNK;
	float *G = scratch, *Kc = G + C, *Kt = Kc + C * dk, *A = Kt + C * dk, *T = A + C * C;
	float *E = T + C * C, *Y = E + C * C, *Yt = Y + C * dv, *Dt = Yt + C * dv;
	float *Sx = Dt + C * dv;
	float acc = 0.0f, glast;

	for (uint32_t i = 0; i < c; i++) {
		acc += g[i * ldg];
		G[i] = acc;
		memcpy(Kc + (size_t)i * dk, k + i * ldk, dk * sizeof(float));
	}
	/* the decays e^(G_i-G_j), j <= i, once for both masks below */
	for (uint32_t i = 0; i < c; i++)
		for (uint32_t j = 0; j <= i; j++)
			E[(size_t)i * c + j] = expf(G[i] - G[j]);
	/* L[i][j] = beta_i e^(G_i-G_j) k_i.k_j below the diagonal, and T = (I + L)^-1 */
	mm(Kc, c, dk, Kc, dk, c, A, c);
	for (uint32_t i = 0; i < c; i++)
		for (uint32_t j = 0; j < i; j++)
			A[(size_t)i * c + j] *= beta[i * ldg] * E[(size_t)i * c + j];
	unit_lower_inverse(A, c, T);
	/* D = T (diag(beta) V - diag(beta e^G) K S0^T), built transposed (S is [dv][dk]) */
	mm(S, dv, dk, Kc, dk, c, Y, dv);
	for (uint32_t i = 0; i < c; i++) {
		const float bi = beta[i * ldg], wi = expf(G[i]);
		const float *vi = v + i * ldv, *Yi = Y + (size_t)i * dv;

		for (uint32_t x = 0; x < dv; x++)
			Yt[(size_t)x * c + i] = bi * (vi[x] - wi * Yi[x]);
	}
	mm(T, c, c, Yt, c, dv, Dt, c);
	/* O = diag(e^G) Q S0^T + (masked, decayed Q K^T) D */
	mm(S, dv, dk, q, ldq, c, o, ldo);
	mm(Kc, c, dk, q, ldq, c, A, c);
	for (uint32_t i = 0; i < c; i++) {
		for (uint32_t j = 0; j < c; j++)
			A[(size_t)i * c + j] = j <= i ? A[(size_t)i * c + j] * E[(size_t)i * c + j]
						      : 0.0f;
		strata_scale_mul_f32(o + i * ldo, o + i * ldo, expf(G[i]), NULL, dv);
	}
	mm(Dt, dv, c, A, c, c, Y, dv);
	for (uint32_t i = 0; i < c; i++) /* o + 1 * y: the sum's bits with or without FMA */
		strata_axpy_f32(o + i * ldo, 1.0f, Y + (size_t)i * dv, dv);
	/* S = e^(G_C) S0 + D^T diag(e^(G_C-G)) K, with Kt that K transposed */
	glast = G[c - 1];
	for (uint32_t j = 0; j < c; j++) {
		const float e = expf(glast - G[j]);

		for (uint32_t r = 0; r < dk; r++)
			Kt[(size_t)r * c + j] = e * Kc[(size_t)j * dk + r];
	}
	mm(Kt, dk, c, Dt, c, dv, Sx, dk);
	strata_axpby_f32(S, 1.0f, Sx, expf(glast), (int64_t)dv * dk);
}

void strata_dn_rule_chunked(const float *q, const float *k, const float *v, size_t ldq,
			    size_t ldk, size_t ldv, const float *g, const float *beta,
			    size_t ldg, uint32_t n, uint32_t dk, uint32_t dv, float *S,
			    float *o, size_t ldo, float *scratch)
{
	for (uint32_t t0 = 0; t0 < n; t0 += STRATA_DN_CHUNK) {
		uint32_t c = n - t0 < STRATA_DN_CHUNK ? n - t0 : STRATA_DN_CHUNK;

		dn_chunk(q + t0 * ldq, k + t0 * ldk, v + t0 * ldv, ldq, ldk, ldv, g + t0 * ldg,
			 beta + t0 * ldg, ldg, c, dk, dv, S, o + t0 * ldo, ldo, scratch);
	}
}

/* ---- the op ------------------------------------------------------------------ */

struct dn_task {
	struct strata_exec *x;
	const struct strata_op *op;
	uint32_t n, ch;
	size_t ld_qkv, ld_z, ld_ba, ld_o;
	int tiled; /* STRATA_OP_DELTANET_TILED: qwen4exp's form */
};

/* The key head value head h reads: repeated (qwen3next) or tiled (qwen4exp). */
static inline uint32_t key_head(const struct dn_task *a, uint32_t h, uint32_t nk, uint32_t r)
{
	return a->tiled ? h % nk : h / r;
}

static inline float softplus(float x)
{
	/* ggml's threshold: beyond 20 log1p(e^x) == x in float */
	return x > 20.0f ? x : log1pf(expf(x));
}

/*
 * x *= scale / max(|x|, eps) (qwen3next), or scale / sqrt(|x|^2 + eps)
 * (qwen4exp: llama.cpp's build_gdn_l2_norm, an RMSNorm rescaled).  The sum
 * of squares in double, as RMSNorm's (a serial double sum was a tenth of a
 * qwen3next prompt's conv step).
 */
static void l2norm(float *x, uint32_t n, float eps, float scale, int tiled)
{
	const double ss = strata_sumsq_f32(x, n);
	float norm;

	if (tiled) {
		scale = (float)(scale / sqrt(ss + eps));
	} else {
		norm = (float)sqrt(ss);
		scale /= norm > eps ? norm : eps;
	}
	strata_scale_mul_f32(x, x, scale, NULL, n);
}

/*
 * Tokens split over the shares: the causal conv of every channel (the input
 * of token t and its d_conv-1 predecessors, the first ones from the state),
 * SiLU, the q and k L2 norms, and each value head's decay and beta.  The
 * kernel is read transposed (x->dn_kern, tap j of every channel together),
 * so each tap is one pass of unit stride over the channels; a token's sums
 * are the same at any batch size.
 */
static void conv_worker(void *arg, int ith, int nth)
{
	const struct dn_task *a = arg;
	const struct strata_op *op = a->op;
	struct strata_exec *x = a->x;
	const uint32_t ch = a->ch, K = op->p.dn.d_conv, nk = op->p.dn.n_group;
	const uint32_t dk = op->p.dn.d_state, nv = op->p.dn.n_head_v, r = nv / nk;
	const float qscale = 1.0f / sqrtf((float)dk), eps = op->p.dn.eps;
	const float *qkv = strata_tensor_data(op->src[0]), *ba0 = strata_tensor_data(op->src[2]);
	const float *state = strata_tensor_data(op->src[3]), *kern = x->dn_kern;
	const float *dt_bias = strata_tensor_data(op->src[6]), *A = strata_tensor_data(op->src[7]);
	long begin, end;

	strata_split((long)a->n, ith, nth, &begin, &end);
	for (long t = begin; t < end; t++) {
		float *y = x->dn_xc + (size_t)t * ch;
		const float *ba = ba0 + (size_t)t * a->ld_ba;

		memset(y, 0, ch * sizeof(float));
		for (uint32_t j = 0; j < K; j++) {
			long src = t + (long)j - (long)(K - 1);
			const float *in = src < 0 ? state + (size_t)(t + j) * ch
						  : qkv + (size_t)src * a->ld_qkv;

			strata_mul_acc_f32(y, kern + (size_t)j * ch, in, ch);
		}
		strata_sigmoid_mul_f32(y, y, y, ch); /* SiLU */
		for (uint32_t h = 0; h < nk; h++) {
			l2norm(y + (size_t)h * dk, dk, eps, qscale, a->tiled);
			l2norm(y + (size_t)(nk + h) * dk, dk, eps, 1.0f, a->tiled);
		}
		/*
		 * ba holds, per key head, the b of its r value heads, then their a;
		 * tiled: the b of every value head, then every a.
		 */
		for (uint32_t h = 0; h < nv; h++) {
			uint32_t gi = h / r, j = h % r;
			float b = a->tiled ? ba[h] : ba[gi * 2 * r + j];
			float al = a->tiled ? ba[nv + h] : ba[gi * 2 * r + r + j];

			x->dn_beta[(size_t)t * nv + h] = 1.0f / (1.0f + expf(-b));
			x->dn_g[(size_t)t * nv + h] = A[h] * softplus(al + dt_bias[h]);
		}
	}
}

/* Value heads split over the shares: the delta rule, then the gated RMSNorm. */
static void head_worker(void *arg, int ith, int nth)
{
	const struct dn_task *a = arg;
	const struct strata_op *op = a->op;
	struct strata_exec *x = a->x;
	const uint32_t ch = a->ch, nk = op->p.dn.n_group, dk = op->p.dn.d_state;
	const uint32_t nv = op->p.dn.n_head_v, dv = op->p.dn.d_head_v, r = nv / nk;
	const size_t per = strata_dn_rule_scratch(dk, dv);
	const float *norm = strata_tensor_data(op->p.dn.norm), *z0 = strata_tensor_data(op->src[1]);
	float *ssm = strata_tensor_data(op->src[4]), *o0 = strata_tensor_data(op->dst);
	float *scratch = x->dn_rule + (size_t)ith * per;
	long begin, end;

	strata_split((long)nv, ith, nth, &begin, &end);
	for (long h = begin; h < end; h++) {
		/* value head h reads key head h / r (llama.cpp's repeat-interleave) or h mod nk */
		const uint32_t kh = key_head(a, (uint32_t)h, nk, r);
		const float *q = x->dn_xc + (size_t)kh * dk;
		const float *k = x->dn_xc + (size_t)(nk + kh) * dk;
		const float *v = x->dn_xc + (size_t)2 * nk * dk + (size_t)h * dv;
		float *S = ssm + (size_t)h * dk * dv, *o = o0 + (size_t)h * dv;

		if (a->n <= STRATA_DN_RECURRENT_MAX)
			strata_dn_rule_recurrent(q, k, v, ch, ch, ch, x->dn_g + h, x->dn_beta + h, nv,
						 a->n, dk, dv, S, o, a->ld_o, scratch);
		else
			strata_dn_rule_chunked(q, k, v, ch, ch, ch, x->dn_g + h, x->dn_beta + h, nv,
					       a->n, dk, dv, S, o, a->ld_o, scratch);
		for (uint32_t t = 0; t < a->n; t++) {
			float *ot = o + t * a->ld_o;
			const float *zt = z0 + t * a->ld_z + (size_t)h * dv;
			const double ss = strata_sumsq_f32(ot, dv);

			/* RMSNorm(o) * norm, then times sigmoid(z) (tiled) or silu(z) */
			strata_scale_mul_f32(ot, ot, (float)(1.0 / sqrt(ss / dv + op->p.dn.eps)), norm,
					     dv);
			if (a->tiled)
				strata_sigmoid_mul_f32(ot, ot, zt, dv);
			else
				strata_silu_mul_f32(ot, zt, ot, dv);
		}
	}
}

/* Keep the last d_conv-1 conv inputs: the tail of (state, this batch). */
static void conv_state_update(float *conv, const float *qkv, size_t ld, uint32_t n,
			      uint32_t keep, uint32_t ch)
{
	uint32_t from_state = n >= keep ? 0 : keep - n;

	memmove(conv, conv + (size_t)(keep - from_state) * ch,
		(size_t)from_state * ch * sizeof(float));
	for (uint32_t i = from_state; i < keep; i++)
		memcpy(conv + (size_t)i * ch, qkv + (size_t)(n - keep + i) * ld, ch * sizeof(float));
}

/* The conv kernel [conv_ch][d_conv] (src[5]) as [d_conv][conv_ch] in kt. */
static void conv_kernel_t(const struct strata_op *op, uint32_t ch, float *kt)
{
	const float *kern = strata_tensor_data(op->src[5]);
	const uint32_t K = op->p.dn.d_conv;

	for (uint32_t c = 0; c < ch; c++)
		for (uint32_t j = 0; j < K; j++)
			kt[(size_t)j * ch + c] = kern[(size_t)c * K + j];
}

static int dn_check(const struct strata_op *op, uint32_t n, uint32_t ch)
{
	const uint32_t nk = op->p.dn.n_group, nv = op->p.dn.n_head_v, dv = op->p.dn.d_head_v;
	const uint32_t dk = op->p.dn.d_state, K = op->p.dn.d_conv;

	if (!nk || !nv || nv % nk || !dk || !dv || K < 2 || ch != 2 * nk * dk + nv * dv ||
	    op->src[1]->ne[0] != (int64_t)nv * dv || op->src[2]->ne[0] != 2 * (int64_t)nv ||
	    op->src[3]->ne[0] * op->src[3]->ne[1] != (int64_t)ch * (K - 1) ||
	    op->src[4]->ne[0] * op->src[4]->ne[1] * op->src[4]->ne[2] != (int64_t)dk * dv * nv ||
	    op->src[5]->ne[0] != K || op->src[5]->ne[1] != ch || op->src[6]->ne[0] != nv ||
	    op->src[7]->ne[0] != nv || !op->p.dn.norm || op->p.dn.norm->ne[0] != dv ||
	    op->dst->ne[0] != (int64_t)nv * dv || op->dst->ne[1] != n)
		return -EINVAL;
	return 0;
}

int strata_exec_deltanet(struct strata_exec *x, const struct strata_op *op)
{
	const uint32_t n = (uint32_t)op->src[0]->ne[1], ch = (uint32_t)op->src[0]->ne[0];
	const uint32_t nv = op->p.dn.n_head_v;
	struct dn_task task = {
		.x = x, .op = op, .n = n, .ch = ch, .ld_qkv = exec_ld(op->src[0]),
		.ld_z = exec_ld(op->src[1]), .ld_ba = exec_ld(op->src[2]), .ld_o = exec_ld(op->dst),
		.tiled = op->code == STRATA_OP_DELTANET_TILED,
	};
	const int nth = strata_exec_threads(x);
	const int conv_nth = n < 4 ? 1 : n < (uint32_t)nth ? (int)n : nth;
	const int head_nth = nth < (int)nv ? nth : (int)nv;
	int rc;

	if ((rc = dn_check(op, n, ch)))
		return rc;
	if ((rc = strata_exec_grow((void **)&x->dn_xc, &x->cap_xc, (size_t)n * ch, sizeof(float))) ||
	    (rc = strata_exec_grow((void **)&x->dn_g, &x->cap_g, (size_t)n * nv, sizeof(float))) ||
	    (rc = strata_exec_grow((void **)&x->dn_beta, &x->cap_beta, (size_t)n * nv,
				   sizeof(float))) ||
	    (rc = strata_exec_grow((void **)&x->dn_rule, &x->cap_rule,
				   (size_t)nth * strata_dn_rule_scratch(op->p.dn.d_state,
									op->p.dn.d_head_v),
				   sizeof(float))) ||
	    (rc = strata_exec_grow((void **)&x->dn_kern, &x->cap_kern,
				   (size_t)op->p.dn.d_conv * ch, sizeof(float))))
		return rc;
	conv_kernel_t(op, ch, x->dn_kern);
	/* A token's conv is a few thousand MACs: only batches wake the pool. */
	if (x->pool)
		strata_pool_run_n(x->pool, conv_worker, &task, conv_nth);
	else
		conv_worker(&task, 0, 1);
	conv_state_update(strata_tensor_data(op->src[3]), strata_tensor_data(op->src[0]),
			  task.ld_qkv, n, op->p.dn.d_conv - 1, ch);
	if (x->pool)
		strata_pool_run_n(x->pool, head_worker, &task, head_nth);
	else
		head_worker(&task, 0, 1);
	return 0;
}
