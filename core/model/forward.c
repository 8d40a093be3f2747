/*
 * forward.c - the forward pass on the CPU: attention (optionally gated, as
 * qwen3next's full-attention layers) or the DeltaNet mixer, then the dense
 * or mixture-of-experts FFN, layer by layer; it extends the sequence state
 * laid out in seq_int.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seq_int.h"
#include "cpu/attn.h"
#include "util/log.h"

/* ---- element-wise pieces ---------------------------------------------------- */

static void rmsnorm(float *out, const float *x, const float *w, int n, float eps)
{
	double ss = 0.0;
	float scale;

	for (int i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	scale = (float)(1.0 / sqrt(ss / n + eps));
	for (int i = 0; i < n; i++)
		out[i] = x[i] * scale * w[i];
}

static void rope(float *v, int n_heads, int head_dim, int n_rot, int type, uint32_t pos,
		 const float *inv_freq)
{
	for (int h = 0; h < n_heads; h++) {
		float *x = v + (size_t)h * head_dim;

		for (int i = 0; i < n_rot / 2; i++) {
			float theta = (float)pos * inv_freq[i];
			float c = cosf(theta), s = sinf(theta);
			/* NORM rotates adjacent pairs; NEOX rotates the two halves */
			int a = type == STRATA_ROPE_NEOX ? i : 2 * i;
			int b = type == STRATA_ROPE_NEOX ? i + n_rot / 2 : 2 * i + 1;
			float x0 = x[a], x1 = x[b];

			x[a] = x0 * c - x1 * s;
			x[b] = x0 * s + x1 * c;
		}
	}
}

static void add_bias(float *rows, const float *bias, uint32_t n, uint32_t dim)
{
	for (uint32_t t = 0; t < n; t++)
		for (uint32_t i = 0; i < dim; i++)
			rows[(size_t)t * dim + i] += bias[i];
}

/* RMSNorm of each of n head vectors in place (qwen3's per-head q/k norm). */
static void head_norm(float *v, const float *w, uint32_t n, uint32_t hd, float eps)
{
	for (uint32_t i = 0; i < n; i++)
		rmsnorm(v + (size_t)i * hd, v + (size_t)i * hd, w, (int)hd, eps);
}

static inline float silu(float x)
{
	return x / (1.0f + expf(-x));
}

/* ---- attention ------------------------------------------------------------------ */

struct attn_task {
	struct strata_seq *s;
	uint32_t layer, n, p0;
};

/* One (token, KV head) pair per work item - all the query heads that share
 * the KV head in one pass - spread over the pool. */
static void attn_worker(void *arg, int ith, int nth)
{
	struct attn_task *a = arg;
	struct strata_seq *s = a->s;
	const struct strata_hparams *hp = &s->m->hp;
	const int hd = (int)hp->head_dim, hdv = (int)hp->head_dim_v;
	const uint32_t group = hp->n_head / hp->n_head_kv;
	const float scale = 1.0f / sqrtf((float)hd);
	const size_t ctx = s->stride;
	const float *kl = s->k + (size_t)s->kv_slot[a->layer] * s->kv_dim * ctx;
	const float *vl = s->v + (size_t)s->kv_slot[a->layer] * s->kv_dim_v * ctx;
	float *sc = s->scores + (size_t)ith * 4 * ctx;
	long begin, end;

	strata_split((long)a->n * hp->n_head_kv, ith, nth, &begin, &end);
	for (long it = begin; it < end; it++) {
		uint32_t t = (uint32_t)(it / hp->n_head_kv), kvh = (uint32_t)(it % hp->n_head_kv);
		size_t h0 = (size_t)t * hp->n_head + (size_t)kvh * group;

		strata_attn_heads(s->q + h0 * hd, (size_t)hd, (int)group,
				  kl + (size_t)kvh * hd * ctx, ctx, hd,
				  vl + (size_t)kvh * hdv * ctx, (size_t)hdv, hdv, a->p0 + t + 1, scale,
				  s->att + h0 * hdv, (size_t)hdv, sc);
	}
}

/* Scatter a batch's key rows [t][kvh*hd + d] into the transposed cache. */
static void cache_store_k(float *cache, const float *rows, uint32_t n, uint32_t n_kv,
			  uint32_t hd, size_t ctx, uint32_t pos)
{
	for (uint32_t t = 0; t < n; t++)
		for (uint32_t c = 0; c < n_kv * hd; c++)
			cache[(size_t)c * ctx + pos + t] = rows[(size_t)t * n_kv * hd + c];
}

/* Copy a batch's value rows [t][kvh*hdv + d] to [kvh][pos + t][d]. */
static void cache_store_v(float *cache, const float *rows, uint32_t n, uint32_t n_kv,
			  uint32_t hdv, size_t ctx, uint32_t pos)
{
	for (uint32_t t = 0; t < n; t++)
		for (uint32_t h = 0; h < n_kv; h++)
			memcpy(cache + ((size_t)h * ctx + pos + t) * hdv,
			       rows + ((size_t)t * n_kv + h) * hdv, hdv * sizeof(float));
}

/* ---- the layer loop --------------------------------------------------------- */

/* Split [q, gate] per head into q (s->q) and gate (kept in place in s->qg). */
static void split_gated_q(struct strata_seq *s, uint32_t n)
{
	const struct strata_hparams *hp = &s->m->hp;
	const size_t hd = hp->head_dim;

	for (uint32_t t = 0; t < n; t++)
		for (uint32_t h = 0; h < hp->n_head; h++) {
			const float *src = s->qg + ((size_t)t * hp->n_head + h) * 2 * hd;

			memcpy(s->q + ((size_t)t * hp->n_head + h) * hd, src, hd * sizeof(float));
		}
}

/* att[t][h] *= sigmoid(gate[t][h]): qwen3next's output gate. */
static void apply_gate(struct strata_seq *s, uint32_t n)
{
	const struct strata_hparams *hp = &s->m->hp;
	const size_t hd = hp->head_dim;

	for (uint32_t t = 0; t < n; t++)
		for (uint32_t h = 0; h < hp->n_head; h++) {
			const float *gate = s->qg + ((size_t)t * hp->n_head + h) * 2 * hd + hd;
			float *o = s->att + ((size_t)t * hp->n_head + h) * hd;

			for (size_t d = 0; d < hd; d++)
				o[d] /= 1.0f + expf(-gate[d]);
		}
}

/* q, k, v of the batch (normed rows in s->xn) into s->q, s->kb, s->vb. */
static void qkv_project(struct strata_seq *s, struct strata_pool *pool,
			const struct strata_layer *L, uint32_t n)
{
	const struct strata_hparams *hp = &s->m->hp;
	const int64_t e = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim;
	struct strata_mm_item it[3] = {
		{ .W = &L->wq, .x = s->xn, .ldx = e, .n_tok = n, .y = L->attn_gated ? s->qg : s->q,
		  .ldy = L->attn_gated ? 2 * qd : qd },
		{ .W = &L->wk, .x = s->xn, .ldx = e, .n_tok = n, .y = s->kb, .ldy = s->kv_dim },
		{ .W = &L->wv, .x = s->xn, .ldx = e, .n_tok = n, .y = s->vb, .ldy = s->kv_dim_v },
	};

	strata_matmul_many(pool, it, 3);
	if (L->attn_gated)
		split_gated_q(s, n);
}

static void attention_block(struct strata_seq *s, struct strata_pool *pool, uint32_t l,
			    uint32_t n)
{
	const struct strata_model *m = s->m;
	const struct strata_hparams *hp = &m->hp;
	const struct strata_layer *L = &m->layers[l];
	const uint32_t e = hp->n_embd, qd = hp->n_head * hp->head_dim;
	float *kc = s->kb, *vc = s->vb;
	const size_t slot = s->kv_slot[l];
	struct attn_task at = { s, l, n, s->pos };
	int nth = strata_pool_size(pool) < SEQ_MAX_THREADS ? strata_pool_size(pool)
							    : SEQ_MAX_THREADS;

	for (uint32_t t = 0; t < n; t++)
		rmsnorm(s->xn + (size_t)t * e, s->x + (size_t)t * e, L->attn_norm, (int)e,
			hp->rms_eps);
	qkv_project(s, pool, L, n);
	if (L->bq)
		add_bias(s->q, L->bq, n, qd);
	if (L->bk)
		add_bias(kc, L->bk, n, s->kv_dim);
	if (L->bv)
		add_bias(vc, L->bv, n, s->kv_dim_v);
	if (L->q_norm)
		head_norm(s->q, L->q_norm, n * hp->n_head, hp->head_dim, hp->rms_eps);
	if (L->k_norm)
		head_norm(kc, L->k_norm, n * hp->n_head_kv, hp->head_dim, hp->rms_eps);
	for (uint32_t t = 0; t < n; t++) {
		rope(s->q + (size_t)t * qd, (int)hp->n_head, (int)hp->head_dim, (int)hp->n_rot,
		     hp->rope_type, s->pos + t, s->inv_freq);
		rope(kc + (size_t)t * s->kv_dim, (int)hp->n_head_kv, (int)hp->head_dim,
		     (int)hp->n_rot, hp->rope_type, s->pos + t, s->inv_freq);
	}
	cache_store_k(s->k + slot * s->kv_dim * s->stride, kc, n, hp->n_head_kv, hp->head_dim,
		      s->stride, s->pos);
	cache_store_v(s->v + slot * s->kv_dim_v * s->stride, vc, n, hp->n_head_kv,
		      hp->head_dim_v, s->stride, s->pos);
	/* A handful of (token, head) pairs is not worth waking the pool. */
	if ((long)n * hp->n_head * (s->pos + n) * hp->head_dim < 32768)
		nth = 1;
	strata_pool_run_n(pool, attn_worker, &at, nth);
	if (L->attn_gated)
		apply_gate(s, n);
	strata_matmul(pool, &L->wo, s->att, hp->n_head * hp->head_dim_v, n, s->xn, e);
	for (size_t i = 0; i < (size_t)n * e; i++)
		s->x[i] += s->xn[i];
}

/* The DeltaNet mixer in place of attention (qwen3next's linear layers). */
static void deltanet_block(struct strata_seq *s, struct strata_pool *pool, uint32_t l,
			   uint32_t n)
{
	const struct strata_hparams *hp = &s->m->hp;
	const struct strata_layer *L = &s->m->layers[l];
	const uint32_t e = hp->n_embd;
	const size_t slot = s->dn_slot[l];

	for (uint32_t t = 0; t < n; t++)
		rmsnorm(s->xn + (size_t)t * e, s->x + (size_t)t * e, L->attn_norm, (int)e,
			hp->rms_eps);
	strata_deltanet(s->dn, pool, hp, L, s->xn, n, s->conv + slot * s->conv_floats,
			s->ssm + slot * s->ssm_floats, s->ffn_out);
	for (size_t i = 0; i < (size_t)n * e; i++)
		s->x[i] += s->ffn_out[i];
}

static int ffn_block(struct strata_seq *s, struct strata_pool *pool, uint32_t l, uint32_t n)
{
	const struct strata_hparams *hp = &s->m->hp;
	const struct strata_layer *L = &s->m->layers[l];
	const uint32_t e = hp->n_embd, f = hp->n_ff;

	for (uint32_t t = 0; t < n; t++)
		rmsnorm(s->xn + (size_t)t * e, s->x + (size_t)t * e, L->ffn_norm, (int)e,
			hp->rms_eps);
	if (L->moe) {
		int rc = strata_moe_ffn(s->moe, pool, hp, L, s->xs, l, s->xn, n, s->ffn_out);

		if (rc)
			return rc;
		for (size_t i = 0; i < (size_t)n * e; i++)
			s->x[i] += s->ffn_out[i];
		return 0;
	}
	strata_matmul(pool, &L->w_gate, s->xn, e, n, s->hb, f);
	strata_matmul(pool, &L->w_up, s->xn, e, n, s->hb2, f);
	for (size_t i = 0; i < (size_t)n * f; i++)
		s->hb[i] = silu(s->hb[i]) * s->hb2[i];
	strata_matmul(pool, &L->w_down, s->hb, f, n, s->xn, e);
	for (size_t i = 0; i < (size_t)n * e; i++)
		s->x[i] += s->xn[i];
	return 0;
}

int strata_forward(struct strata_seq *s, struct strata_pool *pool, const int32_t *tokens,
		   uint32_t n, float *logits, int all_logits)
{
	const struct strata_model *m = s->m;
	const struct strata_hparams *hp = &m->hp;
	const uint32_t e = hp->n_embd;
	uint32_t first;
	int rc;

	if (n == 0)
		return 0;
	if (n > s->max_batch)
		return -EINVAL;
	if ((uint64_t)s->pos + n > s->n_ctx)
		return -ENOSPC;
	for (uint32_t t = 0; t < n; t++) {
		if (tokens[t] < 0 || (uint32_t)tokens[t] >= hp->n_vocab) {
			strata_error("token id %d is out of range (vocabulary of %u)", tokens[t],
				     hp->n_vocab);
			return -EINVAL;
		}
		strata_mat_get_row(&m->tok_embd, tokens[t], s->x + (size_t)t * e);
	}
	/* Trailing nextn (MTP) layers are not part of the main forward pass. */
	strata_seq_note_write(s, s->pos);
	for (uint32_t l = 0; l < hp->n_layer - hp->n_nextn; l++) {
		if (m->layers[l].recurrent)
			deltanet_block(s, pool, l, n);
		else
			attention_block(s, pool, l, n);
		if ((rc = ffn_block(s, pool, l, n)))
			return rc;
	}
	s->pos += n;
	if (!logits)
		return 0;
	first = all_logits ? 0 : n - 1;
	for (uint32_t t = first; t < n; t++)
		rmsnorm(s->xn + (size_t)(t - first) * e, s->x + (size_t)t * e, m->output_norm,
			(int)e, hp->rms_eps);
	strata_matmul(pool, &m->output, s->xn, e, n - first, logits, hp->n_vocab);
	return 0;
}
