/*
 * ctx.c - a model's execution context: its backends, workspaces and the
 * host scratch of the layer loop; tensor views; the run summary.
 */
#include "model/ctx_int.h"
#include "model/vcache.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/exec.h"
#include "gguf/gguf.h"
#include "model/xstore.h"
#include "util/log.h"

/* ---- tensors ------------------------------------------------------------------- */

struct strata_tensor strata_t_f32(struct strata_buf *buf, size_t off, int64_t ne0, int64_t ne1)
{
	struct strata_tensor t = {
		.type = STRATA_TYPE_F32, .n_dims = 2, .ne = { ne0, ne1, 1, 1 },
		.nb = { 4, 4 * (size_t)ne0, 4 * (size_t)(ne0 * ne1), 4 * (size_t)(ne0 * ne1) },
		.buf = buf, .offset = off,
	};

	return t;
}

struct strata_tensor strata_t_i32(struct strata_buf *buf, size_t off, int64_t ne0, int64_t ne1)
{
	struct strata_tensor t = strata_t_f32(buf, off, ne0, ne1);

	t.type = STRATA_TYPE_I32;
	return t;
}

struct strata_tensor strata_t_span(const struct strata_tensor *t, int64_t i0, int64_t n)
{
	struct strata_tensor v = *t;

	v.offset += (size_t)i0 * t->nb[0];
	v.ne[0] = n;
	v.nb[1] = v.nb[2] = v.nb[3] = t->nb[0] * (size_t)n;
	return v;
}

struct strata_tensor strata_t_cols(const struct strata_tensor *t, int64_t c0, int64_t n)
{
	struct strata_tensor v = *t;

	v.offset += (size_t)c0 * t->nb[1];
	v.ne[1] = n;
	v.nb[2] = v.nb[3] = t->nb[1] * (size_t)n;
	return v;
}

struct strata_tensor strata_t_heads(const struct strata_tensor *t, int64_t ne0, int64_t ne1,
				    int64_t n)
{
	struct strata_tensor v = *t;

	v.n_dims = 3;
	v.ne[0] = ne0;
	v.ne[1] = ne1;
	v.ne[2] = n;
	v.ne[3] = 1;
	v.nb[1] = 4 * (size_t)ne0;
	v.nb[2] = t->nb[1];
	v.nb[3] = t->nb[1] * (size_t)n;
	return v;
}

struct strata_tensor strata_t_expert(const struct strata_tensor *t, uint32_t e)
{
	struct strata_tensor v = *t;

	v.n_dims = 2;
	v.ne[2] = 1;
	v.offset += (size_t)e * t->nb[2];
	v.nb[3] = v.nb[2];
	return v;
}

int strata_op1(struct strata_backend *be, uint32_t code, struct strata_tensor *dst,
	       const struct strata_tensor *a, const struct strata_tensor *b)
{
	struct strata_op op = { .code = code, .dst = dst, .src = { a, b } };

	return strata_backend_run(be, &op);
}

/* ---- workspaces ---------------------------------------------------------------- */

struct arena {
	struct strata_buf *buf; /* NULL while sizing */
	size_t off;
};

/* The next tensor of the arena: 256-byte aligned, as devices like. */
static struct strata_tensor take(struct arena *a, uint32_t type, int64_t ne0, int64_t ne1)
{
	struct strata_tensor t = strata_t_f32(a->buf, a->off, ne0, ne1);

	t.type = type;
	a->off += ((size_t)ne0 * (size_t)ne1 * 4 + 255) & ~(size_t)255;
	return t;
}

/* qwen4exp's own activations (see struct ws). */
static void ws_layout_q4x(const struct strata_model *m, uint32_t B, struct arena *a,
			  struct ws *w)
{
	const struct strata_hparams *hp = &m->hp;
	const int64_t e = hp->n_embd, wide = e * hp->q4x.hc;
	uint32_t rmax = 0;

	for (uint32_t l = 0; l < hp->n_layer - hp->n_nextn; l++)
		rmax = m->layers[l].q4x.compress_ratio > rmax ? m->layers[l].q4x.compress_ratio : rmax;
	w->res = take(a, STRATA_TYPE_F32, wide, B);
	w->hxn = take(a, STRATA_TYPE_F32, wide, B);
	w->hlo = take(a, STRATA_TYPE_F32, hp->q4x.hc_lr, B);
	w->hgate = take(a, STRATA_TYPE_F32, wide, B);
	w->hinj = take(a, STRATA_TYPE_F32, hp->q4x.hc, B);
	if (rmax) {
		w->iq = take(a, STRATA_TYPE_F32, (int64_t)hp->q4x.idx_heads * hp->q4x.idx_dim, B);
		w->ik = take(a, STRATA_TYPE_F32, hp->q4x.idx_dim, B);
		w->sel = take(a, STRATA_TYPE_I32, hp->q4x.idx_top_k + rmax - 1, B);
	}
	if (hp->q4x.ple_layer != UINT32_MAX) {
		w->pe = take(a, STRATA_TYPE_F32, e, B);
		w->pk = take(a, STRATA_TYPE_F32, wide, B);
		w->pv = take(a, STRATA_TYPE_F32, e, B);
		w->pq = take(a, STRATA_TYPE_F32, wide, B);
		w->pg = take(a, STRATA_TYPE_F32, wide, B);
	}
}

/* Lay out (a->buf NULL: size) the activations of batches of B tokens. */
static void ws_layout(const struct strata_model *m, uint32_t B, int device, struct arena *a,
		      struct ws *w)
{
	const struct strata_hparams *hp = &m->hp;
	const int64_t e = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim;
	const int64_t k = hp->n_expert_used, ch = 2 * (int64_t)hp->ssm_n_group * hp->ssm_d_state +
						  hp->ssm_d_inner;
	int gated = 0, fused = 0, dense = 0, dn = 0;

	for (uint32_t l = 0; l < hp->n_layer - hp->n_nextn; l++) {
		gated |= m->layers[l].attn_gated;
		fused |= m->layers[l].dn.fused;
		dense |= !m->layers[l].moe;
		dn |= m->layers[l].recurrent;
	}
	w->x = take(a, STRATA_TYPE_F32, e, B);
	w->xn = take(a, STRATA_TYPE_F32, e, B);
	w->out = take(a, STRATA_TYPE_F32, e, B);
	w->xin = take(a, STRATA_TYPE_F32, e, B);
	w->q = take(a, STRATA_TYPE_F32, qd, B);
	w->att = take(a, STRATA_TYPE_F32, (int64_t)hp->n_head * hp->head_dim_v, B);
	w->kb = take(a, STRATA_TYPE_F32, (int64_t)hp->n_head_kv * hp->head_dim, B);
	w->vb = take(a, STRATA_TYPE_F32, (int64_t)hp->n_head_kv * hp->head_dim_v, B);
	w->inv_freq = take(a, STRATA_TYPE_F32, hp->n_rot / 2 ? hp->n_rot / 2 : 1, 1);
	if (gated)
		w->qg = take(a, STRATA_TYPE_F32, 2 * qd, B);
	if (dense) {
		w->hb = take(a, STRATA_TYPE_F32, hp->n_ff, B);
		w->hb2 = take(a, STRATA_TYPE_F32, hp->n_ff, B);
	}
	if (hp->n_expert) {
		const int64_t f = hp->n_ff_exp, fs = hp->n_ff_shexp ? hp->n_ff_shexp : 1;

		w->logits = take(a, STRATA_TYPE_F32, hp->n_expert, B);
		w->ids = take(a, STRATA_TYPE_I32, k, B);
		w->w = take(a, STRATA_TYPE_F32, k, B);
		w->tok = take(a, STRATA_TYPE_I32, k * B, 1);
		w->tokw = take(a, STRATA_TYPE_F32, k * B, 1);
		w->g = take(a, STRATA_TYPE_F32, f, k * B);
		w->u = take(a, STRATA_TYPE_F32, f, k * B);
		w->d = take(a, STRATA_TYPE_F32, e, k * B);
		w->gs = take(a, STRATA_TYPE_F32, fs, B);
		w->us = take(a, STRATA_TYPE_F32, fs, B);
		w->sg = take(a, STRATA_TYPE_F32, 1, B);
	}
	if (dn) {
		w->qkv = take(a, STRATA_TYPE_F32, ch, B);
		w->z = take(a, STRATA_TYPE_F32, hp->ssm_d_inner, B);
		w->ba = take(a, STRATA_TYPE_F32, 2 * (int64_t)hp->ssm_dt_rank, B);
		w->o = take(a, STRATA_TYPE_F32, hp->ssm_d_inner, B);
		if (fused)
			w->qkvz = take(a, STRATA_TYPE_F32, ch + hp->ssm_d_inner, B);
	}
	if (device)
		w->lg = take(a, STRATA_TYPE_F32, hp->n_vocab, CTX_LOGIT_ROWS);
	if (hp->arch == STRATA_ARCH_QWEN4EXP)
		ws_layout_q4x(m, B, a, w);
	else if (hp->n_nextn)
		w->cat = take(a, STRATA_TYPE_F32, 2 * e, B);
}

size_t strata_ws_bytes(const struct strata_model *m, uint32_t b, int device)
{
	struct arena a = { 0 };
	struct ws w;

	memset(&w, 0, sizeof(w));
	ws_layout(m, b, device, &a, &w);
	return a.off;
}

int strata_ws_init(struct strata_ctx *c, struct strata_backend *be, struct ws *w)
{
	const size_t bytes = strata_ws_bytes(c->m, c->max_batch, !be->is_cpu);
	struct arena a;
	int rc;

	memset(w, 0, sizeof(*w));
	if ((rc = strata_backend_buf_alloc(be, bytes, STRATA_BUF_USE_WORK, &w->buf)))
		return rc;
	a = (struct arena){ .buf = &w->buf };
	ws_layout(c->m, c->max_batch, !be->is_cpu, &a, w);
	/* Unused tensors keep a NULL buffer. */
	/* rope's frequencies are constants of the model: written once here */
	return strata_backend_copy_in(be, &w->buf, w->inv_freq.offset, c->inv_freq,
				      (size_t)w->inv_freq.ne[0] * sizeof(float), NULL);
}

void strata_ws_free(struct strata_backend *be, struct ws *w)
{
	if (be)
		strata_backend_buf_free(be, &w->buf);
	memset(w, 0, sizeof(*w));
}

/* ---- the context ---------------------------------------------------------------- */

/* theta_i = pos * base^(-2i/n_rot) * freq_scale / freq_factor_i */
static int make_inv_freq(struct strata_ctx *c)
{
	const struct strata_hparams *hp = &c->m->hp;

	c->inv_freq = calloc(hp->n_rot / 2 + 1, sizeof(float));
	if (!c->inv_freq)
		return -ENOMEM;
	for (uint32_t i = 0; i < hp->n_rot / 2; i++) {
		double f = pow((double)hp->rope_base, -2.0 * i / (double)hp->n_rot);

		f *= hp->rope_freq_scale;
		if (c->m->rope_freqs)
			f /= c->m->rope_freqs[i];
		c->inv_freq[i] = (float)f;
	}
	return 0;
}

static int alloc_host_scratch(struct strata_ctx *c)
{
	const struct strata_hparams *hp = &c->m->hp;
	const size_t ne = hp->n_expert ? hp->n_expert : 1, slots = (size_t)c->max_batch *
								    (hp->n_expert_used ? hp->n_expert_used : 1);

	c->count = calloc(ne, sizeof(*c->count));
	c->start = calloc(ne, sizeof(*c->start));
	c->order = calloc(ne, sizeof(*c->order));
	c->h_ids = calloc(slots, sizeof(*c->h_ids));
	c->h_w = calloc(slots, sizeof(*c->h_w));
	c->h_tok = calloc(slots, sizeof(*c->h_tok));
	c->h_tokw = calloc(slots, sizeof(*c->h_tokw));
	c->xw = calloc(3 * ne, sizeof(*c->xw));
	c->xmats = calloc(3 * ne, sizeof(*c->xmats));
	c->items = calloc(2 * ne + 3, sizeof(*c->items));
	c->xt = calloc(4 * ne, sizeof(*c->xt));
	c->ready = calloc(ne, sizeof(*c->ready));
	c->run_slot = calloc(ne, sizeof(*c->run_slot));
	if (!c->count || !c->start || !c->order || !c->h_ids || !c->h_w || !c->h_tok ||
	    !c->h_tokw || !c->xw || !c->xmats || !c->items || !c->xt || !c->ready || !c->run_slot)
		return -ENOMEM;
	if (hp->arch != STRATA_ARCH_QWEN4EXP || hp->q4x.ple_layer == UINT32_MAX)
		return 0;
	/* the model's own context-cut id (the published model's is <|endoftext|>) */
	if (strata_ple_hash_from_gguf(c->m->gguf, &c->ple_hash))
		return -EINVAL;
	c->ple_hash.eos = hp->q4x.ple_eos;
	c->ple_ids = calloc((size_t)STRATA_PLE_HEADS * c->max_batch, sizeof(*c->ple_ids));
	return c->ple_ids ? 0 : -ENOMEM;
}

int strata_ctx_create(const struct strata_model *m, const struct strata_ctx_opts *o,
		      struct strata_ctx **out)
{
	struct strata_ctx *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->m = m;
	c->pool = o->pool;
	c->xs = NULL;
	c->max_batch = o->max_batch ? o->max_batch : 512;
	if ((rc = strata_backend_cpu_create(o->pool, &c->cpu)) || (rc = make_inv_freq(c)) ||
	    (rc = alloc_host_scratch(c)) || (rc = strata_ws_init(c, c->cpu, &c->ws_cpu)) ||
	    (rc = strata_ctx_place(c, o))) {
		if (rc == -ENOMEM)
			strata_error("out of memory for the model's workspace (batches of %u tokens)",
				     c->max_batch);
		strata_ctx_free(c);
		return rc;
	}
	if (o->xs)
		strata_ctx_set_xstore(c, o->xs);
	*out = c;
	return 0;
}

void strata_ctx_free(struct strata_ctx *c)
{
	if (!c)
		return;
	if (c->dev) {
		(void)strata_backend_sync(c->dev);
		for (int i = 0; i < 3; i++)
			strata_backend_event_free(c->dev, c->ev[i]);
		strata_ws_free(c->dev, &c->ws_dev);
	}
	strata_ctx_set_ple(c, NULL);
	strata_ctx_unplace(c);
	if (c->cpu)
		strata_ws_free(c->cpu, &c->ws_cpu);
	strata_backend_free(c->cpu);
	free(c->inv_freq);
	free(c->count);
	free(c->start);
	free(c->order);
	free(c->h_ids);
	free(c->h_w);
	free(c->h_tok);
	free(c->h_tokw);
	free(c->xw);
	free(c->xmats);
	free(c->items);
	free(c->xt);
	free(c->ready);
	free(c->run_slot);
	free(c->ple_ids);
	free(c);
}

void strata_ctx_placement(const struct strata_ctx *c, struct strata_placement_stats *st)
{
	*st = c->st;
}

void strata_ctx_expert_cache(const struct strata_ctx *c, struct strata_vcache_stats *st)
{
	strata_vcache_stats(c, st);
}

uint32_t strata_ctx_max_batch(const struct strata_ctx *c)
{
	return c->max_batch;
}

struct strata_backend *strata_ctx_cpu(const struct strata_ctx *c)
{
	return c->cpu;
}

struct strata_backend *strata_ctx_device(const struct strata_ctx *c)
{
	return c->dev;
}

void strata_ctx_set_xstore(struct strata_ctx *c, struct strata_xstore *xs)
{
	void *base = NULL;
	size_t size = 0;

	c->xs = xs;
	if (xs)
		strata_xstore_memory(xs, &base, &size);
	(void)strata_backend_cpu_wrap(c->cpu, base, size, &c->xs_buf);
}

int strata_ctx_set_ple(struct strata_ctx *c, struct strata_ple_reader *r)
{
	const struct strata_hparams *hp = &c->m->hp;
	const size_t rows = (size_t)STRATA_PLE_HEADS * c->max_batch;
	int rc;

	if (c->ple_started) /* a failed pass left its chunk: finish it first */
		(void)strata_ple_wait(c->ple_chunk);
	c->ple_started = 0;
	strata_ple_chunk_free(c->ple_chunk);
	free(c->ple_rows);
	free(c->ple_out);
	c->ple_chunk = NULL;
	c->ple_rows = NULL;
	c->ple_out = NULL;
	c->ple_rd = NULL;
	if (!r)
		return 0;
	if (hp->arch != STRATA_ARCH_QWEN4EXP || hp->q4x.ple_layer == UINT32_MAX ||
	    strata_ple_reader_row_len(r) != hp->q4x.ple_head_dim) {
		strata_error("the PLE reader's rows (%u values) are not this model's PLE rows",
			     strata_ple_reader_row_len(r));
		return -EINVAL;
	}
	c->ple_rows = malloc(rows * sizeof(*c->ple_rows));
	c->ple_out = malloc(rows * hp->q4x.ple_head_dim * sizeof(float));
	rc = c->ple_rows && c->ple_out ? strata_ple_chunk_create(r, &c->ple_chunk) : -ENOMEM;
	if (rc) {
		free(c->ple_rows);
		free(c->ple_out);
		c->ple_rows = NULL;
		c->ple_out = NULL;
		return rc;
	}
	c->ple_out_buf = (struct strata_buf){ .base = c->ple_out,
					      .size = rows * hp->q4x.ple_head_dim * sizeof(float),
					      .flags = STRATA_BUF_HOST };
	c->ple_rd = r;
	return 0;
}

int strata_ctx_move_rows(struct strata_ctx *c, struct strata_backend **at,
			 struct strata_backend *to, size_t field, uint32_t n)
{
	const struct strata_tensor *tc = (const struct strata_tensor *)((char *)&c->ws_cpu + field);
	const struct strata_tensor *td = (const struct strata_tensor *)((char *)&c->ws_dev + field);
	const size_t bytes = (size_t)n * tc->nb[1];
	int rc;

	if (*at == to)
		return 0;
	if (to == c->cpu)
		rc = strata_backend_copy_out(*at, &c->ws_dev.buf, td->offset, strata_tensor_data(tc),
					     bytes, NULL);
	else
		rc = strata_backend_copy_in(to, &c->ws_dev.buf, td->offset, strata_tensor_data(tc),
					    bytes, NULL);
	*at = to;
	return rc;
}

int strata_ctx_logits(struct strata_ctx *c, struct strata_backend *be,
		      const struct strata_tensor *output, const struct strata_tensor *xn,
		      uint32_t rows, float *out)
{
	const uint32_t nv = c->m->hp.n_vocab;
	struct ws *w = strata_ctx_ws(c, be);
	struct strata_buf host = { .base = out, .size = (size_t)rows * nv * sizeof(float),
				   .flags = STRATA_BUF_HOST };
	struct strata_tensor y = strata_t_f32(&host, 0, nv, rows);
	struct strata_matmul_item it = { output, xn, NULL, &y };

	if (be == c->cpu)
		return ctx_matmul(be, &it, 1);
	for (uint32_t r = 0; r < rows; r += CTX_LOGIT_ROWS) {
		const uint32_t k = rows - r < CTX_LOGIT_ROWS ? rows - r : CTX_LOGIT_ROWS;
		struct strata_tensor xr = strata_t_cols(xn, r, k), lg = strata_t_cols(&w->lg, 0, k);

		it = (struct strata_matmul_item){ output, &xr, NULL, &lg };
		RUN(ctx_matmul(be, &it, 1));
		RUN(strata_backend_copy_out(be, &w->buf, w->lg.offset, out + (size_t)r * nv,
					    (size_t)k * nv * sizeof(float), NULL));
	}
	return 0;
}

uint64_t strata_ctx_forwards(const struct strata_ctx *c)
{
	return c->n_forward;
}

void strata_ctx_ple_waited(const struct strata_ctx *c, double *ms, uint64_t *chunks)
{
	*ms = c->ple_wait_ms;
	*chunks = c->ple_chunks;
}

/* "1.2 GiB", "640 KiB" */
static const char *human(uint64_t b, char *buf, size_t n)
{
	if (b >= (1ull << 30))
		snprintf(buf, n, "%.1f GiB", b / 1073741824.0);
	else if (b >= (1ull << 20))
		snprintf(buf, n, "%.1f MiB", b / 1048576.0);
	else
		snprintf(buf, n, "%.1f KiB", b / 1024.0);
	return buf;
}

/* "3 layers, 12 of 24 experts, the output head" of one backend. */
static int holds(char *buf, size_t n, uint32_t layers, uint32_t experts, uint32_t all_experts,
		 int output)
{
	char x[64] = "";

	if (all_experts)
		snprintf(x, sizeof(x), ", %u of %u experts", experts, all_experts);
	return snprintf(buf, n, "%u layer%s%s%s", layers, layers == 1 ? "" : "s", x,
			output ? ", the output head" : "");
}

/* "; expert cache: 12 slots (12 filled), 80.0% of 1000 routes hit, ..." */
static int describe_cache(const struct strata_ctx *c, char *buf, size_t n)
{
	struct strata_vcache_stats v;
	char a[32], b[32];
	uint64_t routes;

	strata_vcache_stats(c, &v);
	routes = v.hits + v.misses;
	return snprintf(buf, n, "; expert cache: %u slots (%u filled%s), %.1f%% of %" PRIu64
			" routes hit, %" PRIu64 " fills, %" PRIu64 " swaps, %" PRIu64
			" over the link, %" PRIu64 " lent, %s copied in (%s of it refills)",
			v.slots, v.used, v.transfer ? " + transfer slots" : "",
			routes ? 100.0 * (double)v.hits / (double)routes : 0.0, routes, v.fills,
			v.swaps, v.pcie, v.lent, human(v.bytes_in, a, sizeof(a)),
			human(v.refill_bytes, b, sizeof(b)));
}

size_t strata_ctx_describe(const struct strata_ctx *c, char *buf, size_t n)
{
	const struct strata_placement_stats *st = &c->st;
	const uint32_t layers = c->m->hp.n_layer - c->m->hp.n_nextn;
	char a[32], b[32], d[32], e[32], f[32], what[160];
	int k;

	holds(what, sizeof(what), layers - st->dev_layers, st->experts - st->dev_experts,
	      st->experts, !st->dev_output);
	k = snprintf(buf, n, "backends: %s holds %s, %s of weights", c->cpu->info.name, what,
		     human(st->host_weight_bytes, a, sizeof(a)));
	if (st->host_copied_bytes && k >= 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, " (%s copied at load, %s of them interleaved)",
			      human(st->host_copied_bytes, b, sizeof(b)),
			      human(st->host_repacked_bytes, d, sizeof(d)));
	if (c->dev && st->dev_layers && k >= 0 && (size_t)k < n) {
		holds(what, sizeof(what), st->dev_layers, st->dev_experts, st->experts,
		      st->dev_output);
		k += snprintf(buf + k, n - (size_t)k,
			      "; %s holds %s, %s of weights, %s of state, %s of workspace; its link "
			      "so far: %s in, %s out",
			      c->dev->info.name, what, human(st->dev_weight_bytes, b, sizeof(b)),
			      human(st->dev_state_bytes, d, sizeof(d)),
			      human(st->dev_work_bytes, e, sizeof(e)),
			      human(c->dev->link.in_bytes, f, sizeof(f)),
			      human(c->dev->link.out_bytes, a, sizeof(a)));
		if (c->vc && k >= 0 && (size_t)k < n)
			k += describe_cache(c, buf + k, n - (size_t)k);
	}
	return k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
}
