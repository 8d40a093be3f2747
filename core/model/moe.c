/*
 * moe.c - routed experts and the shared expert, on the CPU.
 */
#include "moe.h"

#include "xstore.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct strata_moe_ws {
	uint32_t max_batch;
	float *logits;    /* [B][n_expert] router logits */
	int32_t *sel;     /* [B][k] chosen experts */
	float *w;         /* [B][k] their weights */
	uint32_t *count;  /* [n_expert] tokens per expert */
	uint32_t *start;  /* [n_expert] offset into the grouped lists */
	uint32_t *tok;    /* [B*k] token of each (expert, slot), grouped by expert */
	float *tokw;      /* [B*k] weight of each */
	float *g, *u;     /* [B*k][n_ff_exp] */
	float *d;         /* [B*k][n_embd] expert outputs, grouped by expert */
	float *gs, *us;   /* [B][n_ff_shexp] shared expert */
	float *sg;        /* [B] shared expert gate logits (qwen3next) */
	struct strata_mm_item *items; /* [2*n_expert + 3] one pass's products */
	struct strata_mat *mats;      /* [3*n_expert] gate, up, down of each active expert */
	uint32_t *ids;                /* [n_expert] the active experts, ascending */
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

void strata_moe_ws_free(struct strata_moe_ws *ws)
{
	if (!ws)
		return;
	free(ws->logits);
	free(ws->sel);
	free(ws->w);
	free(ws->count);
	free(ws->start);
	free(ws->tok);
	free(ws->tokw);
	free(ws->g);
	free(ws->u);
	free(ws->d);
	free(ws->items);
	free(ws->mats);
	free(ws->ids);
	free(ws->gs);
	free(ws->us);
	free(ws->sg);
	free(ws);
}

int strata_moe_ws_create(const struct strata_hparams *hp, uint32_t max_batch,
			 struct strata_moe_ws **out)
{
	struct strata_moe_ws *ws = calloc(1, sizeof(*ws));
	size_t B = max_batch, k = hp->n_expert_used, ne = hp->n_expert;

	*out = NULL;
	if (!ws)
		return -ENOMEM;
	ws->max_batch = max_batch;
	ws->logits = zalloc(B * ne, sizeof(float));
	ws->sel = zalloc(B * k, sizeof(int32_t));
	ws->w = zalloc(B * k, sizeof(float));
	ws->count = zalloc(ne, sizeof(uint32_t));
	ws->start = zalloc(ne, sizeof(uint32_t));
	ws->tok = zalloc(B * k, sizeof(uint32_t));
	ws->tokw = zalloc(B * k, sizeof(float));
	ws->g = zalloc(B * k, hp->n_ff_exp * sizeof(float));
	ws->u = zalloc(B * k, hp->n_ff_exp * sizeof(float));
	ws->d = zalloc(B * k, hp->n_embd * sizeof(float));
	ws->items = zalloc(2 * ne + 3, sizeof(*ws->items));
	ws->mats = zalloc(3 * ne, sizeof(*ws->mats));
	ws->ids = zalloc(ne, sizeof(*ws->ids));
	ws->gs = zalloc(B, (hp->n_ff_shexp ? hp->n_ff_shexp : 1) * sizeof(float));
	ws->us = zalloc(B, (hp->n_ff_shexp ? hp->n_ff_shexp : 1) * sizeof(float));
	ws->sg = zalloc(B, sizeof(float));
	if (!ws->sg || !ws->logits || !ws->sel || !ws->w || !ws->count || !ws->start || !ws->tok ||
	    !ws->tokw || !ws->g || !ws->u || !ws->d || !ws->gs || !ws->us ||
	    !ws->items || !ws->mats || !ws->ids) {
		strata_moe_ws_free(ws);
		return -ENOMEM;
	}
	*out = ws;
	return 0;
}

void strata_moe_route(const struct strata_hparams *hp, const float *bias, float *logits,
		      int32_t *experts, float *weights)
{
	const uint32_t ne = hp->n_expert, k = hp->n_expert_used;
	float sum = 0.0f;

	if (hp->gating == STRATA_GATING_SIGMOID) {
		for (uint32_t e = 0; e < ne; e++)
			logits[e] = 1.0f / (1.0f + expf(-logits[e]));
	} else {
		float mx = -INFINITY, s = 0.0f;

		for (uint32_t e = 0; e < ne; e++)
			mx = logits[e] > mx ? logits[e] : mx;
		for (uint32_t e = 0; e < ne; e++) {
			logits[e] = expf(logits[e] - mx);
			s += logits[e];
		}
		for (uint32_t e = 0; e < ne; e++)
			logits[e] /= s;
	}
	/* Top-k by probability (+ the selection bias, which chooses but never weighs). */
	for (uint32_t j = 0; j < k; j++) {
		int32_t best = -1;
		float bs = -INFINITY;

		for (uint32_t e = 0; e < ne; e++) {
			float score = logits[e] + (bias ? bias[e] : 0.0f);
			int taken = 0;

			for (uint32_t i = 0; i < j; i++)
				taken |= experts[i] == (int32_t)e;
			if (!taken && (best < 0 || score > bs)) {
				best = (int32_t)e;
				bs = score;
			}
		}
		experts[j] = best;
		weights[j] = logits[best];
		sum += weights[j];
	}
	if (hp->expert_weights_norm) {
		/* llama.cpp clamps the sum so that tiny weights do not blow up */
		if (sum < 6.103515625e-5f)
			sum = 6.103515625e-5f;
		for (uint32_t j = 0; j < k; j++)
			weights[j] /= sum;
	}
	for (uint32_t j = 0; j < k; j++)
		weights[j] *= hp->expert_weights_scale;
}

static inline float silu(float x)
{
	return x / (1.0f + expf(-x));
}


/*
 * Every active expert (and the shared one) in two passes over the pool:
 * gate and up of all of them, then down of all of them.  Expert x's tokens
 * are the list tok[start[x]..]: its gate/up products read those rows of xn
 * (converted once, gathered by the matmul) and write rows start[x].. of g
 * and u, so each is a batched matmul over exactly its tokens.  Streamed
 * experts (xs) are fetched first, all of the layer's at once.
 */
static int moe_experts(struct strata_moe_ws *ws, struct strata_pool *pool,
		       const struct strata_hparams *hp, const struct strata_layer *L,
		       struct strata_xstore *xs, uint32_t layer, const float *xn, uint32_t n,
		       float *out)
{
	const int64_t e = hp->n_embd, f = hp->n_ff_exp, fs = hp->n_ff_shexp;
	const size_t slots = (size_t)n * hp->n_expert_used;
	struct strata_mm_item *it = ws->items;
	struct strata_mat *mats = ws->mats;
	uint32_t na = 0;
	int ni = 0, rc;

	for (uint32_t x = 0; x < hp->n_expert; x++)
		if (ws->count[x])
			ws->ids[na++] = x;
	if (xs && (rc = strata_xstore_fetch(xs, layer, ws->ids, na, mats)))
		return rc;
	for (uint32_t i = 0; i < na; i++) {
		uint32_t x = ws->ids[i], c = ws->count[x], s0 = ws->start[x];

		if (!xs) {
			mats[3 * i] = strata_expert(&L->gate_exps, x);
			mats[3 * i + 1] = strata_expert(&L->up_exps, x);
			mats[3 * i + 2] = strata_expert(&L->down_exps, x);
		}
		/* xn is converted once for all experts; each gathers its rows */
		it[ni++] = (struct strata_mm_item){ .W = &mats[3 * i], .x = xn, .ldx = e,
						    .n_tok = c, .y = ws->g + (size_t)s0 * f,
						    .ldy = f, .rows = ws->tok + s0, .n_x = n };
		it[ni++] = (struct strata_mm_item){ .W = &mats[3 * i + 1], .x = xn, .ldx = e,
						    .n_tok = c, .y = ws->u + (size_t)s0 * f,
						    .ldy = f, .rows = ws->tok + s0, .n_x = n };
	}
	if (L->has_shexp) {
		it[ni++] = (struct strata_mm_item){ .W = &L->gate_shexp, .x = xn, .ldx = e,
						    .n_tok = n, .y = ws->gs, .ldy = fs };
		it[ni++] = (struct strata_mm_item){ .W = &L->up_shexp, .x = xn, .ldx = e,
						    .n_tok = n, .y = ws->us, .ldy = fs };
		if (L->has_shexp_gate)
			it[ni++] = (struct strata_mm_item){ .W = &L->gate_inp_shexp, .x = xn,
							    .ldx = e, .n_tok = n, .y = ws->sg,
							    .ldy = 1 };
	}
	strata_matmul_many(pool, it, ni);
	for (size_t i = 0; i < slots * f; i++)
		ws->g[i] = silu(ws->g[i]) * ws->u[i];
	for (size_t i = 0; L->has_shexp && i < (size_t)n * fs; i++)
		ws->gs[i] = silu(ws->gs[i]) * ws->us[i];
	ni = 0;
	for (uint32_t i = 0; i < na; i++) {
		uint32_t x = ws->ids[i], c = ws->count[x], s0 = ws->start[x];

		it[ni++] = (struct strata_mm_item){ .W = &mats[3 * i + 2],
						    .x = ws->g + (size_t)s0 * f, .ldx = f,
						    .n_tok = c, .y = ws->d + (size_t)s0 * e,
						    .ldy = e };
	}
	if (L->has_shexp)
		it[ni++] = (struct strata_mm_item){ .W = &L->down_shexp, .x = ws->gs, .ldx = fs,
						    .n_tok = n, .y = out, .ldy = e };
	strata_matmul_many(pool, it, ni);
	if (!L->has_shexp)
		memset(out, 0, (size_t)n * e * sizeof(float));
	for (uint32_t t = 0; L->has_shexp_gate && t < n; t++) {
		float g = 1.0f / (1.0f + expf(-ws->sg[t]));

		for (int64_t i = 0; i < e; i++)
			out[(size_t)t * e + i] *= g;
	}
	for (size_t i = 0; i < slots; i++)
		strata_axpy_f32(out + (size_t)ws->tok[i] * e, ws->tokw[i], ws->d + i * e, e);
	return 0;
}

int strata_moe_ffn(struct strata_moe_ws *ws, struct strata_pool *pool,
		   const struct strata_hparams *hp, const struct strata_layer *L,
		   struct strata_xstore *xs, uint32_t layer, const float *xn, uint32_t n,
		   float *out)
{
	const uint32_t ne = hp->n_expert, k = hp->n_expert_used;
	const int64_t e = hp->n_embd;

	strata_matmul(pool, &L->gate_inp, xn, e, n, ws->logits, ne);
	memset(ws->count, 0, ne * sizeof(uint32_t));
	for (uint32_t t = 0; t < n; t++) {
		strata_moe_route(hp, L->exp_probs_b, ws->logits + (size_t)t * ne,
				 ws->sel + (size_t)t * k, ws->w + (size_t)t * k);
		for (uint32_t j = 0; j < k; j++)
			ws->count[ws->sel[(size_t)t * k + j]]++;
	}
	/* Group (token, weight) pairs by expert, tokens in order within each. */
	for (uint32_t x = 0, acc = 0; x < ne; x++) {
		ws->start[x] = acc;
		acc += ws->count[x];
		ws->count[x] = 0;
	}
	for (uint32_t t = 0; t < n; t++)
		for (uint32_t j = 0; j < k; j++) {
			uint32_t x = (uint32_t)ws->sel[(size_t)t * k + j];
			uint32_t slot = ws->start[x] + ws->count[x]++;

			ws->tok[slot] = t;
			ws->tokw[slot] = ws->w[(size_t)t * k + j];
		}
	return moe_experts(ws, pool, hp, L, xs, layer, xn, n, out);
}
