/*
 * forward.c - the transformer forward pass on the CPU (arch llama) and the
 * sequence state it extends (an F32 KV cache, as llama.cpp's reference runs).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "moe.h"
#include "cpu/attn.h"
#include "util/log.h"

struct strata_seq {
	const struct strata_model *m;
	uint32_t n_ctx, max_batch, pos;
	uint32_t stride;   /* cache row length: n_ctx rounded up to 16 */
	uint32_t kv_dim, kv_dim_v;
	/*
	 * The cache is stored transposed, [n_layer][n_head_kv][head_dim][stride]:
	 * a query's scores are then sums of rows over positions and its output
	 * head_dim dots over positions, vectorised however small the head.
	 */
	float *k, *v;
	float *kb, *vb;    /* [B][kv_dim]: this batch's keys and values */
	float *x, *xn;     /* [B][n_embd] residual, normed */
	float *q, *att;    /* [B][n_head*head_dim], [B][n_head*head_dim_v] */
	float *hb, *hb2;   /* [B][n_ff] */
	float *ffn_out;    /* [B][n_embd] */
	struct strata_moe_ws *moe; /* NULL for dense models */
	float *scores;     /* [SEQ_MAX_THREADS][stride] */
	float *inv_freq;   /* [n_rot/2] */
};

static void *xcalloc(size_t n, size_t size)
{
	/* 64-byte aligned, zeroed: kernels like aligned rows. */
	void *p = NULL;

	if (n && size > SIZE_MAX / n)
		return NULL;
	if (posix_memalign(&p, 64, n * size > 0 ? n * size : 64))
		return NULL;
	memset(p, 0, n * size);
	return p;
}

#define SEQ_MAX_THREADS 256

int strata_seq_create(const struct strata_model *m, uint32_t n_ctx, uint32_t max_batch,
		      struct strata_seq **out)
{
	const struct strata_hparams *hp = &m->hp;
	struct strata_seq *s;
	size_t B, ctx;

	*out = NULL;
	if (n_ctx == 0)
		n_ctx = hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
	if (max_batch == 0 || max_batch > n_ctx)
		max_batch = n_ctx;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->m = m;
	s->n_ctx = n_ctx;
	s->stride = (n_ctx + 15) & ~15u;
	s->max_batch = max_batch;
	s->kv_dim = hp->n_head_kv * hp->head_dim;
	s->kv_dim_v = hp->n_head_kv * hp->head_dim_v;
	B = max_batch;
	ctx = s->stride;
	s->k = xcalloc((size_t)hp->n_layer * ctx, s->kv_dim * sizeof(float));
	s->v = xcalloc((size_t)hp->n_layer * ctx, s->kv_dim_v * sizeof(float));
	s->kb = xcalloc(B, s->kv_dim * sizeof(float));
	s->vb = xcalloc(B, s->kv_dim_v * sizeof(float));
	s->x = xcalloc(B, hp->n_embd * sizeof(float));
	s->xn = xcalloc(B, hp->n_embd * sizeof(float));
	s->q = xcalloc(B, (size_t)hp->n_head * hp->head_dim * sizeof(float));
	s->att = xcalloc(B, (size_t)hp->n_head * hp->head_dim_v * sizeof(float));
	s->hb = xcalloc(B, hp->n_ff * sizeof(float));
	s->ffn_out = xcalloc(B, hp->n_embd * sizeof(float));
	if (hp->n_expert && strata_moe_ws_create(hp, max_batch, &s->moe))
		s->moe = NULL;
	s->hb2 = xcalloc(B, hp->n_ff * sizeof(float));
	s->scores = xcalloc(SEQ_MAX_THREADS, ctx * sizeof(float));
	s->inv_freq = xcalloc(hp->n_rot / 2 + 1, sizeof(float));
	if (!s->k || !s->v || !s->kb || !s->vb || !s->x || !s->xn || !s->q || !s->att || !s->hb || !s->hb2 || !s->ffn_out || (hp->n_expert && !s->moe) ||
	    !s->scores || !s->inv_freq) {
		strata_error("out of memory for a context of %u tokens (batch %u)", n_ctx, max_batch);
		strata_seq_free(s);
		return -ENOMEM;
	}
	/* theta_i = pos * base^(-2i/n_rot) * freq_scale / freq_factor_i */
	for (uint32_t i = 0; i < hp->n_rot / 2; i++) {
		double f = pow((double)hp->rope_base, -2.0 * i / (double)hp->n_rot);

		f *= hp->rope_freq_scale;
		if (m->rope_freqs)
			f /= m->rope_freqs[i];
		s->inv_freq[i] = (float)f;
	}
	*out = s;
	return 0;
}

void strata_seq_free(struct strata_seq *s)
{
	if (!s)
		return;
	free(s->k);
	free(s->v);
	free(s->kb);
	free(s->vb);
	free(s->x);
	free(s->xn);
	free(s->q);
	free(s->att);
	free(s->hb);
	free(s->hb2);
	free(s->ffn_out);
	strata_moe_ws_free(s->moe);
	free(s->scores);
	free(s->inv_freq);
	free(s);
}

uint32_t strata_seq_pos(const struct strata_seq *s) { return s->pos; }
uint32_t strata_seq_n_ctx(const struct strata_seq *s) { return s->n_ctx; }
uint32_t strata_seq_max_batch(const struct strata_seq *s) { return s->max_batch; }

int strata_seq_truncate(struct strata_seq *s, uint32_t pos)
{
	if (pos > s->pos)
		return -EINVAL;
	s->pos = pos;
	return 0;
}

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

/* One (token, head) pair per work item, spread over the pool. */
static void attn_worker(void *arg, int ith, int nth)
{
	struct attn_task *a = arg;
	struct strata_seq *s = a->s;
	const struct strata_hparams *hp = &s->m->hp;
	const int hd = (int)hp->head_dim, hdv = (int)hp->head_dim_v;
	const int group = (int)(hp->n_head / hp->n_head_kv);
	const float scale = 1.0f / sqrtf((float)hd);
	const size_t ctx = s->stride;
	const float *kl = s->k + (size_t)a->layer * s->kv_dim * ctx;
	const float *vl = s->v + (size_t)a->layer * s->kv_dim_v * ctx;
	float *sc = s->scores + (size_t)ith * ctx;
	long begin, end;

	strata_split((long)a->n * hp->n_head, ith, nth, &begin, &end);
	for (long it = begin; it < end; it++) {
		uint32_t t = (uint32_t)(it / hp->n_head), h = (uint32_t)(it % hp->n_head);
		uint32_t kvh = h / (uint32_t)group, len = a->p0 + t + 1;
		const float *q = s->q + ((size_t)t * hp->n_head + h) * hd;
		const float *kt = kl + (size_t)kvh * hd * ctx;
		const float *vt = vl + (size_t)kvh * hdv * ctx;
		float *o = s->att + ((size_t)t * hp->n_head + h) * hdv;
		float mx = -INFINITY, sum = 0.0f, inv;

		strata_attn_scores(q, kt, ctx, hd, len, scale, sc);
		for (uint32_t j = 0; j < len; j++)
			mx = sc[j] > mx ? sc[j] : mx;
		for (uint32_t j = 0; j < len; j++) {
			sc[j] = expf(sc[j] - mx);
			sum += sc[j];
		}
		inv = 1.0f / sum;
		for (int d = 0; d < hdv; d++)
			o[d] = strata_dot_f32(sc, vt + (size_t)d * ctx, len) * inv;
	}
}

/* Scatter a batch's rows [t][kvh*hd + d] into the transposed cache. */
static void cache_store(float *cache, const float *rows, uint32_t n, uint32_t n_kv, uint32_t hd,
			size_t ctx, uint32_t pos)
{
	for (uint32_t t = 0; t < n; t++)
		for (uint32_t c = 0; c < n_kv * hd; c++)
			cache[(size_t)c * ctx + pos + t] = rows[(size_t)t * n_kv * hd + c];
}

/* ---- the layer loop --------------------------------------------------------- */

static void attention_block(struct strata_seq *s, struct strata_pool *pool, uint32_t l,
			    uint32_t n)
{
	const struct strata_model *m = s->m;
	const struct strata_hparams *hp = &m->hp;
	const struct strata_layer *L = &m->layers[l];
	const uint32_t e = hp->n_embd, qd = hp->n_head * hp->head_dim;
	float *kc = s->kb, *vc = s->vb;
	struct attn_task at = { s, l, n, s->pos };
	int nth = strata_pool_size(pool) < SEQ_MAX_THREADS ? strata_pool_size(pool)
							    : SEQ_MAX_THREADS;

	for (uint32_t t = 0; t < n; t++)
		rmsnorm(s->xn + (size_t)t * e, s->x + (size_t)t * e, L->attn_norm, (int)e,
			hp->rms_eps);
	strata_matmul(pool, &L->wq, s->xn, e, n, s->q, qd);
	strata_matmul(pool, &L->wk, s->xn, e, n, kc, s->kv_dim);
	strata_matmul(pool, &L->wv, s->xn, e, n, vc, s->kv_dim_v);
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
	cache_store(s->k + (size_t)l * s->kv_dim * s->stride, kc, n, hp->n_head_kv, hp->head_dim,
		    s->stride, s->pos);
	cache_store(s->v + (size_t)l * s->kv_dim_v * s->stride, vc, n, hp->n_head_kv,
		    hp->head_dim_v, s->stride, s->pos);
	/* A handful of (token, head) pairs is not worth waking the pool. */
	if ((long)n * hp->n_head * (s->pos + n) * hp->head_dim < 32768)
		nth = 1;
	strata_pool_run_n(pool, attn_worker, &at, nth);
	strata_matmul(pool, &L->wo, s->att, hp->n_head * hp->head_dim_v, n, s->xn, e);
	for (size_t i = 0; i < (size_t)n * e; i++)
		s->x[i] += s->xn[i];
}

static void ffn_block(struct strata_seq *s, struct strata_pool *pool, uint32_t l, uint32_t n)
{
	const struct strata_hparams *hp = &s->m->hp;
	const struct strata_layer *L = &s->m->layers[l];
	const uint32_t e = hp->n_embd, f = hp->n_ff;

	for (uint32_t t = 0; t < n; t++)
		rmsnorm(s->xn + (size_t)t * e, s->x + (size_t)t * e, L->ffn_norm, (int)e,
			hp->rms_eps);
	if (L->moe) {
		strata_moe_ffn(s->moe, pool, hp, L, s->xn, n, s->ffn_out);
		for (size_t i = 0; i < (size_t)n * e; i++)
			s->x[i] += s->ffn_out[i];
		return;
	}
	strata_matmul(pool, &L->w_gate, s->xn, e, n, s->hb, f);
	strata_matmul(pool, &L->w_up, s->xn, e, n, s->hb2, f);
	for (size_t i = 0; i < (size_t)n * f; i++)
		s->hb[i] = silu(s->hb[i]) * s->hb2[i];
	strata_matmul(pool, &L->w_down, s->hb, f, n, s->xn, e);
	for (size_t i = 0; i < (size_t)n * e; i++)
		s->x[i] += s->xn[i];
}

int strata_forward(struct strata_seq *s, struct strata_pool *pool, const int32_t *tokens,
		   uint32_t n, float *logits, int all_logits)
{
	const struct strata_model *m = s->m;
	const struct strata_hparams *hp = &m->hp;
	const uint32_t e = hp->n_embd;
	uint32_t first;

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
	for (uint32_t l = 0; l < hp->n_layer - hp->n_nextn; l++) {
		attention_block(s, pool, l, n);
		ffn_block(s, pool, l, n);
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
