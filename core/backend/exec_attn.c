/*
 * exec_attn.c - STRATA_OP_ATTN and ATTN_SPARSE on the CPU: store the batch's
 * keys and values in the layer's cache, then causal grouped-query attention
 * over it (ATTN_SPARSE: over the cells the indexer chose).
 *
 * The cache layout is this backend's own.  Keys are stored transposed in
 * tiles of STRATA_KT_TILE (16) positions, [n_kv][ctx / 16][head_dim][16]
 * (cpu/attn.h): a query's scores are then sums of rows over positions,
 * vectorised however small the head, and the positions in use lie together
 * however large ctx.
 * Values are [n_kv][ctx][head_dim_v]: the output is a sum of value rows
 * weighted by the probabilities, accumulated in registers for all heads of
 * a KV group at once.  ctx (the cache tensor's ne[1]) is a multiple of
 * the tile (the core allocates STRATA_ATTN_CTX_ALIGN): whole tiles, which
 * the score kernels read.
 */
#include "backend/exec_int.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/attn.h"
#include "cpu/pool.h"
#include "util/mem.h"

_Static_assert(STRATA_ATTN_CTX_ALIGN % STRATA_KT_TILE == 0,
	       "the core's caches hold whole key tiles");

struct attn_task {
	struct strata_exec *x;
	const struct strata_op *op;
	uint32_t n, n_head, n_kv, hd, hdv, ctx;
	_Alignas(64) _Atomic int64_t next; /* the next unclaimed work item */
};

/* Token t's keys and values of KV head h into the cache, at position pos + t. */
static void store_head(const struct attn_task *a, uint32_t t, uint32_t h)
{
	const struct strata_op *op = a->op;
	const struct strata_tensor *k = op->src[1], *v = op->src[2];
	float *kt = (float *)strata_tensor_data(op->src[3]) + (size_t)h * a->hd * a->ctx;
	float *vc = strata_tensor_data(op->src[4]);
	const uint32_t p = op->p.attn.pos + t;
	const float *kr = (const float *)((const char *)strata_tensor_data(k) + t * k->nb[2] +
					  h * k->nb[1]);
	const float *vr = (const float *)((const char *)strata_tensor_data(v) + t * v->nb[2] +
					  h * v->nb[1]);

	for (uint32_t d = 0; d < a->hd; d++)
		kt[strata_kt_at((int)a->hd, (int)d, p)] = kr[d];
	memcpy(vc + ((size_t)h * a->ctx + p) * a->hdv, vr, a->hdv * sizeof(float));
}

/* The batch's keys and values into the cache, at positions pos.. */
static void cache_store(const struct attn_task *a)
{
	for (uint32_t t = 0; t < a->n; t++)
		for (uint32_t h = 0; h < a->n_kv; h++)
			store_head(a, t, h);
}

/* One (token, KV head) pair per work item - all the query heads that share
 * the KV head in one pass - claimed one at a time from a counter: a causal
 * batch's later tokens attend to more positions, so contiguous ranges would
 * leave the last thread three times the first one's work at 512 tokens, and
 * a decode step has as few items as KV heads, which a helper that wakes late
 * would hold up if they were dealt round-robin (the caller waited 3.9 us a
 * call for the last of four, bench-qwen3moe, 2 threads). */
static void attn_worker(void *arg, int ith, int nth)
{
	struct attn_task *a = arg;
	const struct strata_op *op = a->op;
	const struct strata_tensor *q = op->src[0], *o = op->dst;
	const uint32_t group = a->n_head / a->n_kv, pos = op->p.attn.pos;
	const float *kc = strata_tensor_data(op->src[3]), *vc = strata_tensor_data(op->src[4]);
	float *sc = a->x->scores + (size_t)ith * a->x->scores_per;

	(void)nth;
	for (int64_t it = atomic_fetch_add_explicit(&a->next, 1, memory_order_relaxed);
	     it < (int64_t)a->n * a->n_kv;
	     it = atomic_fetch_add_explicit(&a->next, 1, memory_order_relaxed)) {
		uint32_t t = (uint32_t)(it / a->n_kv), kvh = (uint32_t)(it % a->n_kv);
		const float *qt = (const float *)((const char *)strata_tensor_data(q) + t * q->nb[2] +
						  (size_t)kvh * group * q->nb[1]);
		float *ot = (float *)((char *)strata_tensor_data(o) + t * o->nb[2] +
				      (size_t)kvh * group * o->nb[1]);

		/* one token reads only its own keys and values: each item
		 * stores its head's (a batch stores all of them first) */
		if (a->n == 1)
			store_head(a, 0, kvh);
		strata_attn_heads(qt, q->nb[1] / sizeof(float), (int)group,
				  kc + (size_t)kvh * a->hd * a->ctx, (int)a->hd,
				  vc + (size_t)kvh * a->hdv * a->ctx, a->hdv, (int)a->hdv,
				  pos + t + 1, op->p.attn.scale, ot, o->nb[1] / sizeof(float), sc);
	}
}

int strata_exec_attn(struct strata_exec *x, const struct strata_op *op)
{
	const struct strata_tensor *q = op->src[0], *k = op->src[1], *v = op->src[2];
	const struct strata_tensor *kc = op->src[3];
	struct attn_task a = {
		.x = x, .op = op, .n = (uint32_t)q->ne[2], .n_head = (uint32_t)q->ne[1],
		.n_kv = (uint32_t)k->ne[1], .hd = (uint32_t)q->ne[0], .hdv = (uint32_t)v->ne[0],
		.ctx = (uint32_t)kc->ne[1],
	};
	int nth = strata_exec_threads(x), rc;

	if (!a.n_kv || a.n_head % a.n_kv || k->ne[0] != q->ne[0] || k->ne[2] != q->ne[2] ||
	    v->ne[1] != k->ne[1] || a.ctx % STRATA_KT_TILE || (uint64_t)op->p.attn.pos + a.n > a.ctx ||
	    (size_t)kc->ne[0] * kc->ne[1] * kc->ne[2] < (size_t)a.n_kv * a.hd * a.ctx ||
	    op->dst->ne[0] != v->ne[0] || op->dst->ne[1] != q->ne[1])
		return -EINVAL;
	if (x->scores_per < 4 * (size_t)a.ctx || x->scores_threads < (size_t)nth) {
		size_t cap = 0;

		strata_aligned_free(x->scores);
		x->scores = NULL;
		x->scores_per = x->scores_threads = 0;
		/* not cleared: only the threads that run touch their pages */
		if ((rc = strata_exec_grow((void **)&x->scores, &cap, 4 * (size_t)a.ctx * nth,
					   sizeof(float))))
			return rc;
		x->scores_per = 4 * (size_t)a.ctx;
		x->scores_threads = (size_t)nth;
	}
	/* a batch's later tokens read the earlier ones' keys and values */
	if (a.n > 1)
		cache_store(&a);
	/* A handful of (token, head) pairs is not worth waking the pool.  Each
	 * item is latency-bound on its cold keys and values even when short
	 * (about 2 us at 32 positions), so the pool pays from 8 positions on
	 * for bench-qwen3moe (16 heads of 64): with the bound at 32768, the
	 * op took about 10% longer over a tg64 from an empty context (TSC per
	 * op, AVX2, 2 threads, three alternated pairs). */
	if ((int64_t)a.n * a.n_head * (op->p.attn.pos + a.n) * a.hd < 8192)
		nth = 1;
	if (x->pool)
		strata_pool_run_n(x->pool, attn_worker, &a, nth);
	else
		attn_worker(&a, 0, 1);
	return 0;
}

/* ---- attention over chosen cells (STRATA_OP_ATTN_SPARSE) ------------------------- */

/*
 * One (token, query head) per work item: scores over the cells src[5]
 * lists for the token, softmax, the weighted sum of their values.  The
 * list is short (the indexer's budget), so plain loops over the cache's
 * layout above.
 */
static void sparse_worker(void *arg, int ith, int nth)
{
	const struct attn_task *a = arg;
	const struct strata_op *op = a->op;
	const struct strata_tensor *q = op->src[0], *o = op->dst, *sel = op->src[5];
	const uint32_t group = a->n_head / a->n_kv, w = (uint32_t)sel->ne[0];
	const float *kc = strata_tensor_data(op->src[3]), *vc = strata_tensor_data(op->src[4]);
	float *sc = a->x->scores + (size_t)ith * a->x->scores_per;
	long begin, end;

	strata_split((long)a->n * a->n_head, ith, nth, &begin, &end);
	for (long it = begin; it < end; it++) {
		const uint32_t t = (uint32_t)(it / a->n_head), h = (uint32_t)(it % a->n_head);
		const uint32_t kvh = h / group, last = op->p.attn.pos + t;
		const int32_t *cells = (const int32_t *)((const char *)strata_tensor_data(sel) +
							 t * sel->nb[1]);
		const float *qt = (const float *)((const char *)strata_tensor_data(q) + t * q->nb[2] +
						  h * q->nb[1]);
		float *ot = (float *)((char *)strata_tensor_data(o) + t * o->nb[2] + h * o->nb[1]);
		const float *kt = kc + (size_t)kvh * a->hd * a->ctx;
		const float *vt = vc + (size_t)kvh * a->ctx * a->hdv;
		float mx = -INFINITY, sum = 0.0f;

		for (uint32_t i = 0; i < w; i++) {
			const int32_t c = cells[i];
			float s = 0.0f;

			if (c < 0 || (uint32_t)c > last) {
				sc[i] = -INFINITY;
				continue;
			}
			for (uint32_t d = 0; d < a->hd; d++)
				s += qt[d] * kt[strata_kt_at((int)a->hd, (int)d, (uint32_t)c)];
			sc[i] = s * op->p.attn.scale;
			mx = sc[i] > mx ? sc[i] : mx;
		}
		memset(ot, 0, a->hdv * sizeof(float));
		if (mx == -INFINITY)
			continue;
		for (uint32_t i = 0; i < w; i++) {
			sc[i] = sc[i] == -INFINITY ? 0.0f : expf(sc[i] - mx);
			sum += sc[i];
		}
		for (uint32_t i = 0; i < w; i++)
			if (sc[i] > 0.0f)
				strata_axpy_f32(ot, sc[i] / sum, vt + (size_t)cells[i] * a->hdv, a->hdv);
	}
}

int strata_exec_attn_sparse(struct strata_exec *x, const struct strata_op *op)
{
	const struct strata_tensor *q = op->src[0], *k = op->src[1], *v = op->src[2];
	const struct strata_tensor *kc = op->src[3], *sel = op->src[5];
	struct attn_task a = {
		.x = x, .op = op, .n = (uint32_t)q->ne[2], .n_head = (uint32_t)q->ne[1],
		.n_kv = (uint32_t)k->ne[1], .hd = (uint32_t)q->ne[0], .hdv = (uint32_t)v->ne[0],
		.ctx = (uint32_t)kc->ne[1],
	};
	int nth = strata_exec_threads(x), rc;

	if (!sel || sel->type != STRATA_TYPE_I32 || sel->ne[1] != q->ne[2] || !a.n_kv ||
	    a.n_head % a.n_kv || k->ne[0] != q->ne[0] || k->ne[2] != q->ne[2] ||
	    v->ne[1] != k->ne[1] || a.ctx % STRATA_KT_TILE || (uint64_t)op->p.attn.pos + a.n > a.ctx ||
	    (size_t)kc->ne[0] * kc->ne[1] * kc->ne[2] < (size_t)a.n_kv * a.hd * a.ctx ||
	    op->dst->ne[0] != v->ne[0] || op->dst->ne[1] != q->ne[1])
		return -EINVAL;
	if (x->scores_per < (size_t)sel->ne[0] || x->scores_threads < (size_t)nth) {
		size_t cap = 0, per = (size_t)sel->ne[0] > 4 * (size_t)a.ctx ? (size_t)sel->ne[0]
									     : 4 * (size_t)a.ctx;

		strata_aligned_free(x->scores);
		x->scores = NULL;
		x->scores_per = x->scores_threads = 0;
		if ((rc = strata_exec_grow((void **)&x->scores, &cap, per * nth, sizeof(float))))
			return rc;
		x->scores_per = per;
		x->scores_threads = (size_t)nth;
	}
	cache_store(&a);
	if ((int64_t)a.n * a.n_head * sel->ne[0] * a.hd < 32768)
		nth = 1;
	if (x->pool)
		strata_pool_run_n(x->pool, sparse_worker, &a, nth);
	else
		sparse_worker(&a, 0, 1);
	return 0;
}
