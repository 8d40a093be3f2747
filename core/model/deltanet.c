/*
 * deltanet.c - the Gated DeltaNet mixer (qwen3next's linear attention) on the CPU.
 *
 * A batch: one pass of the input projections (qkv, z, b/a), the causal conv
 * + SiLU over the qkv channels with q/k L2 norms and the per-head decay and
 * beta (parallel over tokens), the delta rule per value head (parallel over
 * heads), the gated RMSNorm, and the output projection.
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
#include "deltanet.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct strata_dn_ws {
	uint32_t max_batch;
	uint32_t conv_ch;   /* 2*nk*dk + nv*dv */
	float *qkv;         /* [B][conv_ch] the conv's input */
	float *qkvz;        /* [B][conv_ch + nv*dv] fused ssm_in output (or NULL) */
	float *xc;          /* [B][conv_ch] conv + SiLU; q, k normalised */
	float *z;           /* [B][nv*dv] output gate */
	float *ba;          /* [B][2*nv] */
	float *g, *beta;    /* [B][nv] */
	float *o;           /* [B][nv*dv] */
	float *scratch;     /* [nv][scratch_per] one per head share */
	size_t scratch_per;
};

static void *zalloc(size_t n, size_t size)
{
	void *p = NULL;

	if (n && size > SIZE_MAX / n)
		return NULL;
	if (posix_memalign(&p, 64, n * size > 0 ? n * size : 64))
		return NULL;
	memset(p, 0, n * size);
	return p;
}

static uint32_t conv_channels(const struct strata_hparams *hp)
{
	return 2 * hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;
}

size_t strata_dn_conv_floats(const struct strata_hparams *hp)
{
	return (size_t)(hp->ssm_d_conv - 1) * conv_channels(hp);
}

size_t strata_dn_ssm_floats(const struct strata_hparams *hp)
{
	return (size_t)hp->ssm_dt_rank * hp->ssm_d_state * hp->ssm_head_v;
}

void strata_dn_ws_free(struct strata_dn_ws *ws)
{
	if (!ws)
		return;
	free(ws->qkv);
	free(ws->qkvz);
	free(ws->xc);
	free(ws->z);
	free(ws->ba);
	free(ws->g);
	free(ws->beta);
	free(ws->o);
	free(ws->scratch);
	free(ws);
}

int strata_dn_ws_create(const struct strata_hparams *hp, uint32_t max_batch, int fused,
			struct strata_dn_ws **out)
{
	struct strata_dn_ws *ws = calloc(1, sizeof(*ws));
	size_t B = max_batch, nv = hp->ssm_dt_rank;

	*out = NULL;
	if (!ws)
		return -ENOMEM;
	ws->max_batch = max_batch;
	ws->conv_ch = conv_channels(hp);
	ws->scratch_per = strata_dn_rule_scratch(hp->ssm_d_state, hp->ssm_head_v);
	ws->qkv = zalloc(B, ws->conv_ch * sizeof(float));
	ws->xc = zalloc(B, ws->conv_ch * sizeof(float));
	ws->z = zalloc(B, hp->ssm_d_inner * sizeof(float));
	ws->ba = zalloc(B, 2 * nv * sizeof(float));
	ws->g = zalloc(B, nv * sizeof(float));
	ws->beta = zalloc(B, nv * sizeof(float));
	ws->o = zalloc(B, hp->ssm_d_inner * sizeof(float));
	ws->scratch = zalloc(nv, ws->scratch_per * sizeof(float));
	if (fused)
		ws->qkvz = zalloc(B, (ws->conv_ch + hp->ssm_d_inner) * sizeof(float));
	if ((fused && !ws->qkvz) || !ws->qkv || !ws->xc || !ws->z || !ws->ba || !ws->g || !ws->beta || !ws->o ||
	    !ws->scratch) {
		strata_dn_ws_free(ws);
		return -ENOMEM;
	}
	*out = ws;
	return 0;
}

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
			for (uint32_t r = 0; r < dk; r++)
				row[r] = eg * row[r] + d * kt[r];
		}
	}
}

size_t strata_dn_rule_scratch(uint32_t dk, uint32_t dv)
{
	const size_t C = STRATA_DN_CHUNK;

	/* G, Kc, Kt, A, T, Y, Yt, Dt, Sx (more than the recurrence's 2 dk + 2 dv) */
	return C + 2 * C * dk + 2 * C * C + 3 * C * dv + (size_t)dv * dk;
}

/*
 * T = (I + L)^-1 for the strictly lower L in A (c x c, row stride c), by
 * forward substitution: row i of T is e_i - sum_{j<i} L[i][j] T[j], and T[j]
 * is zero past column j.
 */
static void unit_lower_inverse(const float *A, uint32_t c, float *T)
{
	memset(T, 0, (size_t)c * c * sizeof(float));
	for (uint32_t i = 0; i < c; i++) {
		float *restrict Ti = T + (size_t)i * c;

		Ti[i] = 1.0f;
		for (uint32_t j = 0; j < i; j++) {
			const float *restrict Tj = T + (size_t)j * c;
			const float l = A[(size_t)i * c + j];

			for (uint32_t x = 0; x <= j; x++)
				Ti[x] -= l * Tj[x];
		}
	}
}

/* One chunk of c <= STRATA_DN_CHUNK tokens; see the top of the file. */
static void dn_chunk(const float *q, const float *k, const float *v, size_t ldq, size_t ldk,
		     size_t ldv, const float *g, const float *beta, size_t ldg, uint32_t c,
		     uint32_t dk, uint32_t dv, float *S, float *o, size_t ldo, float *scratch)
{
	const size_t C = STRATA_DN_CHUNK;
	float *G = scratch, *Kc = G + C, *Kt = Kc + C * dk, *A = Kt + C * dk, *T = A + C * C;
	float *Y = T + C * C, *Yt = Y + C * dv, *Dt = Yt + C * dv, *Sx = Dt + C * dv;
	float acc = 0.0f, glast;

	for (uint32_t i = 0; i < c; i++) {
		acc += g[i * ldg];
		G[i] = acc;
		memcpy(Kc + (size_t)i * dk, k + i * ldk, dk * sizeof(float));
	}
	/* L[i][j] = beta_i e^(G_i-G_j) k_i.k_j below the diagonal, and T = (I + L)^-1 */
	mm(Kc, c, dk, Kc, dk, c, A, c);
	for (uint32_t i = 0; i < c; i++)
		for (uint32_t j = 0; j < i; j++)
			A[(size_t)i * c + j] *= beta[i * ldg] * expf(G[i] - G[j]);
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
		const float gi = expf(G[i]);

		for (uint32_t j = 0; j < c; j++)
			A[(size_t)i * c + j] = j <= i ? A[(size_t)i * c + j] * expf(G[i] - G[j]) : 0.0f;
		for (uint32_t x = 0; x < dv; x++)
			o[i * ldo + x] *= gi;
	}
	mm(Dt, dv, c, A, c, c, Y, dv);
	for (uint32_t i = 0; i < c; i++)
		for (uint32_t x = 0; x < dv; x++)
			o[i * ldo + x] += Y[(size_t)i * dv + x];
	/* S = e^(G_C) S0 + D^T diag(e^(G_C-G)) K, with Kt that K transposed */
	glast = G[c - 1];
	for (uint32_t j = 0; j < c; j++) {
		const float e = expf(glast - G[j]);

		for (uint32_t r = 0; r < dk; r++)
			Kt[(size_t)r * c + j] = e * Kc[(size_t)j * dk + r];
	}
	mm(Kt, dk, c, Dt, c, dv, Sx, dk);
	{
		const float e = expf(glast);

		for (size_t x = 0; x < (size_t)dv * dk; x++)
			S[x] = e * S[x] + Sx[x];
	}
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

/* ---- the layer ------------------------------------------------------------------ */

struct dn_task {
	struct strata_dn_ws *ws;
	const struct strata_hparams *hp;
	const struct strata_layer *L;
	uint32_t n;
	const float *conv;   /* state before the batch */
	float *ssm;
};

static inline float silu(float x)
{
	return x / (1.0f + expf(-x));
}

static inline float softplus(float x)
{
	/* ggml's threshold: beyond 20 log1p(e^x) == x in float */
	return x > 20.0f ? x : log1pf(expf(x));
}

static void l2norm(float *x, uint32_t n, float eps, float scale)
{
	double ss = 0.0;
	float norm;

	for (uint32_t i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	norm = (float)sqrt(ss);
	scale /= norm > eps ? norm : eps;
	for (uint32_t i = 0; i < n; i++)
		x[i] *= scale;
}

/*
 * Tokens split over the shares: the causal conv of every channel (the input
 * of token t and its d_conv-1 predecessors, the first ones from the state),
 * SiLU, the q and k L2 norms, and each value head's decay and beta.
 */
static void conv_worker(void *arg, int ith, int nth)
{
	struct dn_task *a = arg;
	const struct strata_hparams *hp = a->hp;
	const struct strata_deltanet *dn = &a->L->dn;
	struct strata_dn_ws *ws = a->ws;
	const uint32_t ch = ws->conv_ch, K = hp->ssm_d_conv, nk = hp->ssm_n_group;
	const uint32_t dk = hp->ssm_d_state, nv = hp->ssm_dt_rank, r = nv / nk;
	const float qscale = 1.0f / sqrtf((float)dk);
	long begin, end;

	strata_split((long)a->n, ith, nth, &begin, &end);
	for (long t = begin; t < end; t++) {
		float *y = ws->xc + (size_t)t * ch;
		const float *ba = ws->ba + (size_t)t * 2 * nv;

		memset(y, 0, ch * sizeof(float));
		for (uint32_t j = 0; j < K; j++) {
			long src = t + (long)j - (long)(K - 1);
			const float *x = src < 0 ? a->conv + (size_t)(t + j) * ch
						 : ws->qkv + (size_t)src * ch;

			for (uint32_t c = 0; c < ch; c++)
				y[c] += dn->conv[(size_t)c * K + j] * x[c];
		}
		for (uint32_t c = 0; c < ch; c++)
			y[c] = silu(y[c]);
		for (uint32_t h = 0; h < nk; h++) {
			l2norm(y + (size_t)h * dk, dk, hp->rms_eps, qscale);
			l2norm(y + (size_t)(nk + h) * dk, dk, hp->rms_eps, 1.0f);
		}
		/* ssm_ba holds, per key head, the b of its r value heads, then their a. */
		for (uint32_t h = 0; h < nv; h++) {
			uint32_t gi = h / r, j = h % r;
			float b = ba[gi * 2 * r + j], al = ba[gi * 2 * r + r + j];

			ws->beta[(size_t)t * nv + h] = 1.0f / (1.0f + expf(-b));
			ws->g[(size_t)t * nv + h] = dn->a[h] * softplus(al + dn->dt_bias[h]);
		}
	}
}

/* Value heads split over the shares: the delta rule, then the gated RMSNorm. */
static void head_worker(void *arg, int ith, int nth)
{
	struct dn_task *a = arg;
	const struct strata_hparams *hp = a->hp;
	const struct strata_deltanet *dn = &a->L->dn;
	struct strata_dn_ws *ws = a->ws;
	const uint32_t ch = ws->conv_ch, nk = hp->ssm_n_group, dk = hp->ssm_d_state;
	const uint32_t nv = hp->ssm_dt_rank, dv = hp->ssm_head_v, r = nv / nk;
	const size_t ldo = (size_t)nv * dv;
	float *scratch = ws->scratch + (size_t)ith * ws->scratch_per;
	long begin, end;

	strata_split((long)nv, ith, nth, &begin, &end);
	for (long h = begin; h < end; h++) {
		/* value head h reads key head h / r (llama.cpp's repeat-interleave) */
		const float *q = ws->xc + (size_t)(h / r) * dk;
		const float *k = ws->xc + (size_t)(nk + h / r) * dk;
		const float *v = ws->xc + (size_t)2 * nk * dk + (size_t)h * dv;
		float *S = a->ssm + (size_t)h * dk * dv, *o = ws->o + (size_t)h * dv;

		if (a->n == 1)
			strata_dn_rule_recurrent(q, k, v, ch, ch, ch, ws->g + h, ws->beta + h, nv,
						 a->n, dk, dv, S, o, ldo, scratch);
		else
			strata_dn_rule_chunked(q, k, v, ch, ch, ch, ws->g + h, ws->beta + h, nv,
					       a->n, dk, dv, S, o, ldo, scratch);
		for (uint32_t t = 0; t < a->n; t++) {
			float *ot = o + t * ldo;
			const float *zt = ws->z + t * ldo + (size_t)h * dv;
			double ss = 0.0;
			float sc;

			for (uint32_t x = 0; x < dv; x++)
				ss += (double)ot[x] * ot[x];
			sc = (float)(1.0 / sqrt(ss / dv + hp->rms_eps));
			for (uint32_t x = 0; x < dv; x++)
				ot[x] = ot[x] * sc * dn->norm[x] * silu(zt[x]);
		}
	}
}

/* Keep the last d_conv-1 conv inputs: the tail of (state, this batch). */
static void conv_state_update(float *conv, const float *qkv, uint32_t n, uint32_t keep,
			      uint32_t ch)
{
	if (n >= keep) {
		memcpy(conv, qkv + (size_t)(n - keep) * ch, (size_t)keep * ch * sizeof(float));
		return;
	}
	memmove(conv, conv + (size_t)n * ch, (size_t)(keep - n) * ch * sizeof(float));
	memcpy(conv + (size_t)(keep - n) * ch, qkv, (size_t)n * ch * sizeof(float));
}

/*
 * The fused ssm_in output, per key head [q, k, v of its r value heads, z of
 * them], into the conv input [all q, all k, all v] and z.
 */
static void unpack_qkvz(struct strata_dn_ws *ws, const struct strata_hparams *hp, uint32_t n)
{
	const size_t nk = hp->ssm_n_group, dk = hp->ssm_d_state;
	const size_t rv = (size_t)hp->ssm_d_inner / nk; /* r * dv */
	const size_t ch = ws->conv_ch, in = ch + hp->ssm_d_inner;

	for (size_t t = 0; t < n; t++)
		for (size_t g = 0; g < nk; g++) {
			const float *src = ws->qkvz + t * in + g * (2 * dk + 2 * rv);
			float *qkv = ws->qkv + t * ch;

			memcpy(qkv + g * dk, src, dk * sizeof(float));
			memcpy(qkv + (nk + g) * dk, src + dk, dk * sizeof(float));
			memcpy(qkv + 2 * nk * dk + g * rv, src + 2 * dk, rv * sizeof(float));
			memcpy(ws->z + t * hp->ssm_d_inner + g * rv, src + 2 * dk + rv,
			       rv * sizeof(float));
		}
}

void strata_deltanet(struct strata_dn_ws *ws, struct strata_pool *pool,
		     const struct strata_hparams *hp, const struct strata_layer *L,
		     const float *xn, uint32_t n, float *conv, float *ssm, float *out)
{
	const struct strata_deltanet *dn = &L->dn;
	const int64_t e = hp->n_embd, nv = hp->ssm_dt_rank, vd = hp->ssm_d_inner;
	struct strata_mm_item it[3] = {
		{ .W = &dn->wba, .x = xn, .ldx = e, .n_tok = n, .y = ws->ba, .ldy = 2 * nv },
		{ .W = &dn->wqkv, .x = xn, .ldx = e, .n_tok = n, .y = ws->qkv, .ldy = ws->conv_ch },
		{ .W = &dn->wz, .x = xn, .ldx = e, .n_tok = n, .y = ws->z, .ldy = vd },
	};
	struct dn_task task = { ws, hp, L, n, conv, ssm };
	const int nth = strata_pool_size(pool);
	const int conv_nth = n < 4 ? 1 : n < (uint32_t)nth ? (int)n : nth;

	if (dn->fused)
		it[1] = (struct strata_mm_item){ .W = &dn->wqkvz, .x = xn, .ldx = e, .n_tok = n,
						 .y = ws->qkvz, .ldy = ws->conv_ch + vd };
	strata_matmul_many(pool, it, dn->fused ? 2 : 3);
	if (dn->fused)
		unpack_qkvz(ws, hp, n);
	/* A token's conv is a few thousand MACs: only batches wake the pool. */
	strata_pool_run_n(pool, conv_worker, &task, conv_nth);
	conv_state_update(conv, ws->qkv, n, hp->ssm_d_conv - 1, ws->conv_ch);
	strata_pool_run_n(pool, head_worker, &task, nth < nv ? nth : (int)nv);
	strata_matmul(pool, &dn->wout, ws->o, vd, n, out, e);
}
