/*
 * moe.c - routed experts and the shared expert, on the CPU.
 */
#include "moe.h"

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
	float *xg;        /* [B][n_embd] gathered inputs of one expert */
	float *g, *u;     /* [B][max(n_ff_exp, n_ff_shexp)] */
	float *d;         /* [B][n_embd] one expert's outputs */
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
	free(ws->xg);
	free(ws->g);
	free(ws->u);
	free(ws->d);
	free(ws);
}

int strata_moe_ws_create(const struct strata_hparams *hp, uint32_t max_batch,
			 struct strata_moe_ws **out)
{
	struct strata_moe_ws *ws = calloc(1, sizeof(*ws));
	size_t B = max_batch, k = hp->n_expert_used, ne = hp->n_expert;
	size_t ff = hp->n_ff_exp > hp->n_ff_shexp ? hp->n_ff_exp : hp->n_ff_shexp;

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
	ws->xg = zalloc(B, hp->n_embd * sizeof(float));
	ws->g = zalloc(B, ff * sizeof(float));
	ws->u = zalloc(B, ff * sizeof(float));
	ws->d = zalloc(B, hp->n_embd * sizeof(float));
	if (!ws->logits || !ws->sel || !ws->w || !ws->count || !ws->start || !ws->tok ||
	    !ws->tokw || !ws->xg || !ws->g || !ws->u || !ws->d) {
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

/* d = down(silu(gate x) * up x) for n rows of x. */
static void swiglu(struct strata_moe_ws *ws, struct strata_pool *pool,
		   const struct strata_mat *gate, const struct strata_mat *up,
		   const struct strata_mat *down, const float *x, uint32_t n, int64_t e, float *d)
{
	int64_t f = gate->rows;

	strata_matmul(pool, gate, x, e, n, ws->g, f);
	strata_matmul(pool, up, x, e, n, ws->u, f);
	for (size_t i = 0; i < (size_t)n * f; i++)
		ws->g[i] = silu(ws->g[i]) * ws->u[i];
	strata_matmul(pool, down, ws->g, f, n, d, e);
}

void strata_moe_ffn(struct strata_moe_ws *ws, struct strata_pool *pool,
		    const struct strata_hparams *hp, const struct strata_layer *L,
		    const float *xn, uint32_t n, float *out)
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
	memset(out, 0, (size_t)n * e * sizeof(float));
	for (uint32_t x = 0; x < ne; x++) {
		uint32_t c = ws->count[x], s0 = ws->start[x];
		struct strata_mat g, u, d;

		if (!c)
			continue;
		for (uint32_t i = 0; i < c; i++)
			memcpy(ws->xg + (size_t)i * e, xn + (size_t)ws->tok[s0 + i] * e,
			       e * sizeof(float));
		g = strata_expert(&L->gate_exps, x);
		u = strata_expert(&L->up_exps, x);
		d = strata_expert(&L->down_exps, x);
		swiglu(ws, pool, &g, &u, &d, ws->xg, c, e, ws->d);
		for (uint32_t i = 0; i < c; i++)
			strata_axpy_f32(out + (size_t)ws->tok[s0 + i] * e, ws->tokw[s0 + i],
					ws->d + (size_t)i * e, e);
	}
	if (L->has_shexp) {
		swiglu(ws, pool, &L->gate_shexp, &L->up_shexp, &L->down_shexp, xn, n, e, ws->d);
		for (size_t i = 0; i < (size_t)n * e; i++)
			out[i] += ws->d[i];
	}
}
