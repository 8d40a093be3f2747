/*
 * moe.c - the mixture-of-experts FFN of one layer, on the op set.
 *
 * The router and the top-k run on the layer's backend; the host groups the
 * (token, expert) pairs by expert, the experts the layer's backend holds
 * first.  Each expert then runs once over all of its tokens (a batched
 * product gathering their rows of xn), all of them in two MATMUL ops -
 * gate and up of every expert and the shared expert, then every down - so
 * each expert's weights are streamed from memory once per batch and the
 * CPU's pool wakes twice per layer.
 *
 * With a device the experts its expert cache holds (or copies in this step:
 * vcache.h) run there while the host thread computes the others on the CPU (xn copied out as soon as the router ran;
 * their sum copied back and added): the device's queue and the CPU work at
 * the same time, and only activations cross the link.  Streamed experts
 * (xstore) are the CPU's: their reads start as soon as the layer is routed
 * (on the store's reader thread), the resident ones are computed while the
 * rest load, then those: a miss costs its read only beyond that compute.
 */
#include "model/moe.h"

#include <errno.h>
#include <string.h>

#include "backend/exec.h"
#include "model/ctx_int.h"
#include "model/vcache.h"
#include "model/xstore.h"

void strata_moe_route(const struct strata_hparams *hp, const float *bias, float *logits,
		      int32_t *experts, float *weights)
{
	strata_route_token(hp->gating == STRATA_GATING_SIGMOID ? STRATA_GATING_MODE_SIGMOID
							       : STRATA_GATING_MODE_SOFTMAX,
			   hp->n_expert, hp->n_expert_used, hp->expert_weights_norm,
			   hp->expert_weights_scale, bias, logits, experts, weights);
}

/* One backend's share of a layer's experts. */
struct xpart {
	struct strata_backend *be;
	struct ws *w;
	uint32_t e0, e1; /* c->order[e0..e1): its active experts */
	uint32_t m0, m1; /* their (token, expert) slots */
	int shexp;       /* the shared expert runs here too */
};

/* Router logits -> top-k ids and weights, on the layer's backend. */
static int route(struct strata_ctx *c, uint32_t l, uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct pl_layer *L = &c->L[l];
	struct ws *w = strata_ctx_ws(c, L->be);
	struct strata_tensor xn = strata_t_cols(&w->xn, 0, n), lg = strata_t_cols(&w->logits, 0, n);
	struct strata_tensor ids = strata_t_cols(&w->ids, 0, n), wt = strata_t_cols(&w->w, 0, n);
	struct strata_matmul_item it = { &L->gate_inp, &xn, NULL, &lg };
	struct strata_op mm = { .code = STRATA_OP_MATMUL, .p.mm = { .items = &it, .n_items = 1 } };
	struct strata_op op = {
		.code = STRATA_OP_MOE_ROUTE, .dst = &wt, .aux = &ids,
		.src = { &lg, t_has(&L->exp_probs_b) ? &L->exp_probs_b : NULL },
		.p.route = { .gating = hp->gating == STRATA_GATING_SIGMOID
					       ? STRATA_GATING_MODE_SIGMOID
					       : STRATA_GATING_MODE_SOFTMAX,
			     .k = hp->n_expert_used, .norm = (uint32_t)hp->expert_weights_norm,
			     .scale = hp->expert_weights_scale },
	};

	RUN(strata_backend_run(L->be, &mm));
	return strata_backend_run(L->be, &op);
}

/*
 * Group the n*k (token, expert) pairs by expert into the CPU workspace's
 * tok/tokw (tokens in order within an expert): the experts `be` holds first
 * (all of them on the CPU; on a device, those its expert cache runs there
 * this step), then the rest.  Fills c->count, start, order; *n_be experts
 * and *m_be slots are the first group's.  0 or a cache copy's -errno.
 */
static int group(struct strata_ctx *c, uint32_t l, const int32_t *ids, const float *wts,
		 uint32_t n, uint32_t *n_act, uint32_t *n_be, uint32_t *m_be)
{
	const struct strata_hparams *hp = &c->m->hp;
	const struct pl_layer *L = &c->L[l];
	const uint32_t ne = hp->n_expert, k = hp->n_expert_used;
	int32_t *tok = strata_tensor_data(&c->ws_cpu.tok);
	float *tokw = strata_tensor_data(&c->ws_cpu.tokw);
	uint32_t na = 0, acc = 0;

	memset(c->count, 0, ne * sizeof(*c->count));
	for (uint32_t i = 0; i < n * k; i++)
		c->count[ids[i]]++;
	/* the device's expert cache says which run there (and queues their copies) */
	if (L->be != c->cpu)
		RUN(strata_vcache_plan(c, l, c->count));
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t x = 0; x < ne; x++)
			if (c->count[x] && (L->be == c->cpu || c->run_slot[x] != CTX_NONE) == !pass)
				c->order[na++] = x;
		if (!pass)
			*n_be = na;
	}
	*n_act = na;
	*m_be = 0;
	for (uint32_t i = 0; i < na; i++) {
		c->start[c->order[i]] = acc;
		acc += c->count[c->order[i]];
		c->count[c->order[i]] = 0;
		if (i + 1 == *n_be)
			*m_be = acc;
	}
	for (uint32_t t = 0; t < n; t++)
		for (uint32_t j = 0; j < k; j++) {
			uint32_t x = (uint32_t)ids[t * k + j], slot = c->start[x] + c->count[x]++;

			tok[slot] = (int32_t)t;
			tokw[slot] = wts[t * k + j];
		}
	return 0;
}

/*
 * The weights of part p's experts into c->xw[3i..3i+2] (i: index in
 * c->order).  Streamed experts (the CPU's, with a store): their fetch starts
 * here, and returns at once; those already resident are usable now
 * (strata_xstore_fetch_ready), the rest after part_finish()'s wait.
 */
static int part_begin(struct strata_ctx *c, uint32_t l, const struct xpart *p)
{
	const struct pl_layer *L = &c->L[l];
	int rc;

	if (p->be != c->cpu || !c->xs) {
		for (uint32_t i = p->e0; i < p->e1; i++)
			for (int q = 0; q < 3; q++)
				c->xw[3 * i + q] = p->be != c->cpu
							   ? strata_vcache_tensor(c, l, c->run_slot[c->order[i]], q)
							   : strata_t_expert(&L->xh[q], c->order[i]);
		return 0;
	}
	if (p->e1 == p->e0)
		return 0;
	rc = strata_xstore_fetch_start(c->xs, l, c->order + p->e0, p->e1 - p->e0,
				       c->xmats + 3 * p->e0);
	if (rc)
		return rc;
	for (uint32_t i = p->e0; i < p->e1; i++)
		c->ready[i] = (uint8_t)strata_xstore_fetch_ready(c->xs, i - p->e0);
	for (uint32_t i = 3 * p->e0; i < 3 * p->e1; i++) {
		const struct strata_mat *m = &c->xmats[i];

		/* a view of the store's slots, wrapped once as a CPU buffer */
		c->xw[i] = L->xh[i % 3];
		c->xw[i].n_dims = 2;
		c->xw[i].ne[2] = 1;
		c->xw[i].buf = &c->xs_buf;
		c->xw[i].offset = (size_t)((const char *)m->data - (const char *)c->xs_buf.base);
	}
	return 0;
}

/* part_begin() started a fetch that part_finish() has not waited for. */
static int streaming(const struct strata_ctx *c, const struct xpart *p)
{
	return c->xs && p->be == c->cpu && p->e1 > p->e0;
}

/* Which of a part's experts one products() pass takes. */
enum pass { PASS_ALL, PASS_READY, PASS_REST };

static int in_pass(const struct strata_ctx *c, uint32_t i, enum pass ps)
{
	return ps == PASS_ALL || (ps == PASS_READY) == (c->ready[i] != 0);
}

/*
 * Gate and up of p's experts in this pass (and the shared expert, but in
 * PASS_REST), SwiGLU, then their downs.  Each expert's slots are its own,
 * so the passes may split the experts any way: every product is the same.
 */
static int products(struct strata_ctx *c, uint32_t l, const struct xpart *p, uint32_t n,
		    struct strata_tensor *out, enum pass ps)
{
	const struct pl_layer *L = &c->L[l];
	struct ws *w = p->w;
	const int shexp = p->shexp && ps != PASS_REST;
	struct strata_tensor xn = strata_t_cols(&w->xn, 0, n), gs = strata_t_cols(&w->gs, 0, n);
	struct strata_tensor us = strata_t_cols(&w->us, 0, n), sg = strata_t_cols(&w->sg, 0, n);
	struct strata_tensor g = strata_t_cols(&w->g, p->m0, p->m1 - p->m0);
	struct strata_tensor u = strata_t_cols(&w->u, p->m0, p->m1 - p->m0);
	struct strata_matmul_item *it = c->items;
	struct strata_op mm = { .code = STRATA_OP_MATMUL, .p.mm.items = c->items };
	uint32_t ni = 0;

	for (uint32_t i = p->e0; i < p->e1; i++) {
		const uint32_t x = c->order[i], s0 = c->start[x], cnt = c->count[x];
		struct strata_tensor *t = &c->xt[4 * i];

		if (!in_pass(c, i, ps))
			continue;
		t[0] = strata_t_span(&w->tok, s0, cnt);
		t[1] = strata_t_cols(&w->g, s0, cnt);
		t[2] = strata_t_cols(&w->u, s0, cnt);
		t[3] = strata_t_cols(&w->d, s0, cnt);
		it[ni++] = (struct strata_matmul_item){ &c->xw[3 * i], &xn, &t[0], &t[1] };
		it[ni++] = (struct strata_matmul_item){ &c->xw[3 * i + 1], &xn, &t[0], &t[2] };
	}
	if (shexp) {
		it[ni++] = (struct strata_matmul_item){ &L->gate_shexp, &xn, NULL, &gs };
		it[ni++] = (struct strata_matmul_item){ &L->up_shexp, &xn, NULL, &us };
		if (t_has(&L->gate_inp_shexp))
			it[ni++] = (struct strata_matmul_item){ &L->gate_inp_shexp, &xn, NULL, &sg };
	}
	mm.p.mm.n_items = ni;
	if (ni)
		RUN(strata_backend_run(p->be, &mm));
	if (ps == PASS_ALL && p->m1 > p->m0)
		RUN(strata_op1(p->be, STRATA_OP_SWIGLU, &g, &g, &u));
	for (uint32_t i = p->e0; ps != PASS_ALL && i < p->e1; i++)
		if (in_pass(c, i, ps))
			RUN(strata_op1(p->be, STRATA_OP_SWIGLU, &c->xt[4 * i + 1],
				       &c->xt[4 * i + 1], &c->xt[4 * i + 2]));
	if (shexp)
		RUN(strata_op1(p->be, STRATA_OP_SWIGLU, &gs, &gs, &us));
	ni = 0;
	for (uint32_t i = p->e0; i < p->e1; i++)
		if (in_pass(c, i, ps))
			it[ni++] = (struct strata_matmul_item){ &c->xw[3 * i + 2], &c->xt[4 * i + 1],
								NULL, &c->xt[4 * i + 3] };
	if (shexp)
		it[ni++] = (struct strata_matmul_item){ &L->down_shexp, &gs, NULL, out };
	mm.p.mm.n_items = ni;
	if (ni)
		RUN(strata_backend_run(p->be, &mm));
	return 0;
}

/*
 * out = the shared expert (gated) + the weighted sum of p's experts, after
 * part_begin().  Streamed: the resident experts run while the rest load,
 * then those; the sum is made once, over every slot in order, so the result
 * is the mapped model's bit for bit.
 */
static int part_finish(struct strata_ctx *c, uint32_t l, const struct xpart *p, uint32_t n,
		       struct strata_tensor *out)
{
	const struct pl_layer *L = &c->L[l];
	struct ws *w = p->w;
	struct strata_tensor sg = strata_t_cols(&w->sg, 0, n);
	struct strata_tensor d = strata_t_cols(&w->d, p->m0, p->m1 - p->m0);
	struct strata_tensor tok = strata_t_span(&w->tok, p->m0, p->m1 - p->m0);
	struct strata_tensor tokw = strata_t_span(&w->tokw, p->m0, p->m1 - p->m0);
	struct strata_op fill = { .code = STRATA_OP_FILL, .dst = out, .p.fill.value = 0.0f };
	struct strata_op comb = { .code = STRATA_OP_MOE_COMBINE, .dst = out,
				  .src = { &d, &tok, &tokw } };

	if (streaming(c, p)) {
		int rc = products(c, l, p, n, out, PASS_READY);
		int rc2 = strata_xstore_fetch_wait(c->xs); /* waited for even after a failure */

		RUN(rc);
		RUN(rc2);
		RUN(products(c, l, p, n, out, PASS_REST));
	} else {
		RUN(products(c, l, p, n, out, PASS_ALL));
	}
	if (!p->shexp)
		RUN(strata_backend_run(p->be, &fill));
	else if (t_has(&L->gate_inp_shexp))
		RUN(strata_op1(p->be, STRATA_OP_SIGMOID_MUL, out, out, &sg));
	if (p->m1 > p->m0)
		RUN(strata_backend_run(p->be, &comb));
	return 0;
}

/* A part begun and not finished (the device failed between): let its fetch end. */
static void part_abandon(struct strata_ctx *c, const struct xpart *p)
{
	if (streaming(c, p))
		(void)strata_xstore_fetch_wait(c->xs);
}

/* The device's lists, then its experts: queued, not waited for. */
static int device_part(struct strata_ctx *c, uint32_t l, const struct xpart *pd, uint32_t n,
		       uint32_t mb, struct strata_tensor *out)
{
	struct ws *wd = &c->ws_dev, *wc = &c->ws_cpu;

	if (mb) {
		RUN(strata_backend_copy_in(pd->be, &wd->buf, wd->tok.offset,
					   strata_tensor_data(&wc->tok), mb * sizeof(int32_t), NULL));
		RUN(strata_backend_copy_in(pd->be, &wd->buf, wd->tokw.offset,
					   strata_tensor_data(&wc->tokw), mb * sizeof(float), NULL));
	}
	RUN(part_begin(c, l, pd));
	return part_finish(c, l, pd, n, out);
}

/* The device holds this layer: its experts there, the others on the CPU, at once. */
static int hybrid(struct strata_ctx *c, uint32_t l, uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;
	const uint32_t k = hp->n_expert_used;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *dev = L->be;
	struct ws *wd = &c->ws_dev, *wc = &c->ws_cpu;
	struct strata_tensor out = strata_t_cols(&wd->out, 0, n), xin = strata_t_cols(&wd->xin, 0, n);
	struct strata_tensor cout = strata_t_cols(&wc->out, 0, n);
	const size_t row = (size_t)hp->n_embd * sizeof(float);
	const int some_cpu = !strata_vcache_holds_all(c, l);
	uint32_t na, nb, mb;

	RUN(route(c, l, n));
	/* the CPU's experts read xn: on its way while the ids come back */
	if (some_cpu)
		RUN(strata_backend_copy_out(dev, &wd->buf, wd->xn.offset, strata_tensor_data(&wc->xn),
					    n * row, c->ev[0]));
	RUN(strata_backend_copy_out(dev, &wd->buf, wd->ids.offset, c->h_ids,
				    (size_t)n * k * sizeof(int32_t), NULL));
	RUN(strata_backend_copy_out(dev, &wd->buf, wd->w.offset, c->h_w,
				    (size_t)n * k * sizeof(float), NULL));
	RUN(group(c, l, c->h_ids, c->h_w, n, &na, &nb, &mb));
	{
		struct xpart pd = { dev, wd, 0, nb, 0, mb, t_has(&L->gate_shexp) };
		struct xpart pc = { c->cpu, wc, nb, na, mb, (uint32_t)n * k, 0 };
		int rc;

		/* the CPU's streamed experts start loading first, behind everything */
		RUN(part_begin(c, l, &pc));
		if ((rc = device_part(c, l, &pd, n, mb, &out)) ||
		    /* xn's copy lands before the host writes its buffer again, used or not */
		    (some_cpu && (rc = strata_backend_sync_event(dev, c->ev[0])))) {
			part_abandon(c, &pc);
			return rc;
		}
		if (na == nb)
			return 0;
		RUN(part_finish(c, l, &pc, n, &cout));
		RUN(strata_backend_copy_in(dev, &wd->buf, wd->xin.offset,
					   strata_tensor_data(&wc->out), n * row, c->ev[2]));
		RUN(strata_backend_wait(dev, c->ev[2]));
		RUN(strata_op1(dev, STRATA_OP_ADD, &out, &out, &xin));
		/* the next layer may overwrite wc->out: the copy must have landed */
		return strata_backend_sync_event(dev, c->ev[2]);
	}
}

int strata_moe_block(struct strata_ctx *c, uint32_t l, uint32_t n)
{
	struct pl_layer *L = &c->L[l];
	struct ws *w = &c->ws_cpu;
	struct strata_tensor out = strata_t_cols(&w->out, 0, n);
	uint32_t na, nb, mb;

	if (L->be != c->cpu)
		return hybrid(c, l, n);
	RUN(route(c, l, n));
	RUN(group(c, l, strata_tensor_data(&w->ids), strata_tensor_data(&w->w), n, &na, &nb, &mb));
	{
		struct xpart p = { c->cpu, w, 0, na, 0, mb, t_has(&L->gate_shexp) };

		RUN(part_begin(c, l, &p));
		return part_finish(c, l, &p, n, &out);
	}
}
