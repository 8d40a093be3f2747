/*
 * forward_q4x.c - qwen4exp's layer loop (Qwen3.8-Flash-Next), against the
 * op set of strata/backend.h, as llama.cpp's qwen4exp graph of 2026-09-28
 * computes it.
 *
 * The residual is hc parallel streams per token (hyper-connections); each
 * block reads a gated mean of them (HC_PRE after a per-stream RMSNorm and a
 * low-rank gate) and its output is added back to every stream with a weight
 * of the stream's own (HC_POST).  The mixers are the Gated DeltaNet in
 * qwen4exp's form (DELTANET_TILED) on three layers of four and gated
 * attention on the fourth, sparse (QSA_SELECT + ATTN_SPARSE) where the
 * layer has a compress ratio; the FFN is the MoE with a sigmoid-gated
 * shared expert (moe.c).  Before one DeltaNet layer's mixer the PLE n-gram
 * rows of each token are fused in (PLE_GATE, CONV_SILU).  There is no
 * output norm: a last mixer (hc_head) collapses the streams for the head.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "backend/exec.h"
#include "model/ctx_int.h"
#include "util/log.h"

/* Stream c of hc-wide rows [n_embd * hc, n] as a [n_embd, n] view. */
static struct strata_tensor stream(const struct strata_tensor *t, uint32_t c, int64_t e,
				   uint32_t n)
{
	struct strata_tensor v = strata_t_cols(t, 0, n);

	v.ne[0] = e;
	v.offset += (size_t)c * e * sizeof(float);
	return v;
}

/* RMSNorm of each stream with its own weights (norm: [n_embd * hc]). */
static int grouped_norm(struct strata_ctx *c, struct strata_backend *be,
			struct strata_tensor *dst, const struct strata_tensor *src,
			const struct strata_tensor *norm, uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;
	const int64_t e = hp->n_embd;

	for (uint32_t k = 0; k < hp->q4x.hc; k++) {
		struct strata_tensor d = stream(dst, k, e, n), x = stream(src, k, e, n);
		struct strata_tensor w = strata_t_span(norm, (int64_t)k * e, e);

		RUN(ctx_norm(be, &d, &x, &w, hp->rms_eps));
	}
	return 0;
}

/*
 * A hyper-connection mixer over the streams rows [first, first + n) of res:
 * w->xn[:, 0..n) = the block's input; with an inject tensor, w->hinj its
 * per-stream output weights.
 */
static int hc_mix(struct strata_ctx *c, struct strata_backend *be, const struct strata_tensor *hc,
		  uint32_t first, uint32_t n)
{
	struct ws *w = strata_ctx_ws(c, be);
	const uint32_t k = c->m->hp.q4x.hc;
	struct strata_tensor res = strata_t_cols(&w->res, first, n);
	struct strata_tensor hxn = strata_t_cols(&w->hxn, 0, n), lo = strata_t_cols(&w->hlo, 0, n);
	struct strata_tensor gate = strata_t_cols(&w->hgate, 0, n), xn = strata_t_cols(&w->xn, 0, n);
	struct strata_tensor inj = strata_t_cols(&w->hinj, 0, n);
	struct strata_matmul_item it[2] = { { &hc[1], &hxn, NULL, &lo }, { &hc[3], &hxn, NULL, &inj } };
	struct strata_op pre = { .code = STRATA_OP_HC_PRE, .dst = &xn, .src = { &hxn, &gate },
				 .p.hc.n = k };
	struct strata_op act = { .code = STRATA_OP_SCALE_SILU, .dst = &lo, .src = { &lo },
				 .p.scale.s = 1.0f / (float)k };

	RUN(grouped_norm(c, be, &hxn, &res, &hc[0], n));
	RUN(ctx_matmul(be, it, t_has(&hc[3]) ? 2 : 1));
	RUN(strata_backend_run(be, &act));
	it[0] = (struct strata_matmul_item){ &hc[2], &lo, NULL, &gate };
	RUN(ctx_matmul(be, it, 1));
	return strata_backend_run(be, &pre);
}

/* Every stream += its weight (from w->hinj) x the block's output w->out. */
static int hc_combine(struct strata_ctx *c, struct strata_backend *be, uint32_t n)
{
	struct ws *w = strata_ctx_ws(c, be);
	struct strata_tensor res = strata_t_cols(&w->res, 0, n), out = strata_t_cols(&w->out, 0, n);
	struct strata_tensor inj = strata_t_cols(&w->hinj, 0, n);
	struct strata_op post = { .code = STRATA_OP_HC_POST, .dst = &res,
				  .src = { &res, &out, &inj }, .p.hc.n = c->m->hp.q4x.hc };

	return strata_backend_run(be, &post);
}

/* ---- the mixers -------------------------------------------------------------------- */

/*
 * The sparse-attention indexer of layer l: its raw keys into the sequence's
 * cache, its queries normed and rotated, and the cells each token keeps in
 * w->sel.  *sel is that view.
 */
static int indexer(struct strata_ctx *c, struct strata_seq *s, uint32_t l, uint32_t pos,
		   uint32_t n, struct strata_tensor *sel)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *be = L->be;
	struct ws *w = strata_ctx_ws(c, be);
	const int64_t d = hp->q4x.idx_dim, heads = hp->q4x.idx_heads;
	const uint32_t r = c->m->layers[l].q4x.compress_ratio;
	struct strata_tensor xn = strata_t_cols(&w->xn, 0, n), iq = strata_t_cols(&w->iq, 0, n);
	struct strata_tensor ik = strata_t_cols(&w->ik, 0, n);
	struct strata_tensor qh = strata_t_heads(&iq, d, heads, n);
	struct strata_tensor rows = strata_t_f32(iq.buf, iq.offset, d, heads * n);
	struct strata_tensor cache = strata_t_cols(&s->L[l].idx, pos, n);
	struct strata_matmul_item it[2] = { { &L->idx_q, &xn, NULL, &iq },
					    { &L->idx_k, &xn, NULL, &ik } };
	struct strata_op op = {
		.code = STRATA_OP_QSA_SELECT, .dst = sel,
		.src = { &qh, &s->L[l].idx, &L->idx_k_norm, &w->inv_freq },
		.p.qsa = { .pos = pos, .ratio = r, .top_k = hp->q4x.idx_top_k, .n_rot = hp->n_rot,
			   .eps = hp->rms_eps },
	};

	*sel = strata_t_i32(w->sel.buf, w->sel.offset, hp->q4x.idx_top_k + r - 1, n);
	RUN(ctx_matmul(be, it, 2));
	RUN(strata_op1(be, STRATA_OP_COPY, &cache, &ik, NULL));
	RUN(ctx_norm(be, &rows, &rows, &L->idx_q_norm, hp->rms_eps));
	RUN(ctx_rope(be, &qh, hp, &w->inv_freq, pos));
	return strata_backend_run(be, &op);
}

/* Gated attention (q rows [q, gate] per head), sparse where the layer has a ratio. */
static int attention(struct strata_ctx *c, struct strata_seq *s, uint32_t l, uint32_t pos,
		     uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *be = L->be;
	struct ws *w = strata_ctx_ws(c, be);
	const int64_t hd = hp->head_dim, nh = hp->n_head, nkv = hp->n_head_kv;
	struct strata_tensor xn = strata_t_cols(&w->xn, 0, n), q = strata_t_cols(&w->q, 0, n);
	struct strata_tensor kb = strata_t_cols(&w->kb, 0, n), vb = strata_t_cols(&w->vb, 0, n);
	struct strata_tensor att = strata_t_cols(&w->att, 0, n), qg = strata_t_cols(&w->qg, 0, n);
	struct strata_tensor out = strata_t_cols(&w->out, 0, n);
	struct strata_tensor qh = strata_t_heads(&q, hd, nh, n), kh = strata_t_heads(&kb, hd, nkv, n);
	struct strata_tensor vh = strata_t_heads(&vb, hd, nkv, n), ah = strata_t_heads(&att, hd, nh, n);
	struct strata_tensor qs = ctx_heads_of(&qg, hd, nh, n, 2 * (size_t)hd, 0);
	struct strata_tensor gate = ctx_heads_of(&qg, hd, nh, n, 2 * (size_t)hd,
						 (size_t)hd * sizeof(float));
	struct strata_tensor qrows = strata_t_f32(q.buf, q.offset, hd, nh * n);
	struct strata_tensor krows = strata_t_f32(kb.buf, kb.offset, hd, nkv * n);
	struct strata_tensor sel;
	struct strata_matmul_item it[3] = {
		{ &L->wq, &xn, NULL, &qg }, { &L->wk, &xn, NULL, &kb }, { &L->wv, &xn, NULL, &vb },
	};
	struct strata_op at = {
		.code = STRATA_OP_ATTN, .dst = &ah,
		.src = { &qh, &kh, &vh, &s->L[l].k, &s->L[l].v },
		.p.attn = { .pos = pos, .scale = 1.0f / sqrtf((float)hd) },
	};

	if (c->m->layers[l].q4x.compress_ratio) {
		RUN(indexer(c, s, l, pos, n, &sel));
		at.code = STRATA_OP_ATTN_SPARSE;
		at.src[5] = &sel;
	}
	RUN(ctx_matmul(be, it, 3));
	RUN(strata_op1(be, STRATA_OP_COPY, &qh, &qs, NULL));
	RUN(ctx_norm(be, &qrows, &qrows, &L->q_norm, hp->rms_eps));
	RUN(ctx_norm(be, &krows, &krows, &L->k_norm, hp->rms_eps));
	RUN(ctx_rope(be, &qh, hp, &w->inv_freq, pos));
	RUN(ctx_rope(be, &kh, hp, &w->inv_freq, pos));
	RUN(strata_backend_run(be, &at));
	RUN(strata_op1(be, STRATA_OP_SIGMOID_MUL, &ah, &ah, &gate));
	it[0] = (struct strata_matmul_item){ &L->wo, &att, NULL, &out };
	return ctx_matmul(be, it, 1);
}

/* The PLE's dilated causal conv of layer l: its normed input pk into pq. */
static struct strata_op ple_conv_op(struct strata_ctx *c, struct strata_seq *s, uint32_t l,
				    struct strata_tensor *pk, struct strata_tensor *pq)
{
	struct strata_op conv = { .code = STRATA_OP_CONV_SILU, .dst = pq,
				  .src = { pk, &s->L[l].ple_hist, &c->L[l].ple_conv },
				  .p.conv.dilation = c->m->hp.q4x.ple_ngram };

	return conv;
}

/* The Gated DeltaNet in qwen4exp's form: separate b and a, tiled key heads. */
static int deltanet(struct strata_ctx *c, struct strata_seq *s, uint32_t l, uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *be = L->be;
	struct ws *w = strata_ctx_ws(c, be);
	const int64_t nv = hp->ssm_dt_rank;
	struct strata_tensor xn = strata_t_cols(&w->xn, 0, n), qkv = strata_t_cols(&w->qkv, 0, n);
	struct strata_tensor z = strata_t_cols(&w->z, 0, n), ba = strata_t_cols(&w->ba, 0, n);
	struct strata_tensor o = strata_t_cols(&w->o, 0, n), out = strata_t_cols(&w->out, 0, n);
	struct strata_tensor b = strata_t_span(&ba, 0, nv), a = strata_t_span(&ba, nv, nv);
	struct strata_matmul_item it[4] = {
		{ &L->dn_wqkv, &xn, NULL, &qkv }, { &L->dn_wz, &xn, NULL, &z },
		{ &L->dn_beta, &xn, NULL, &b }, { &L->dn_alpha, &xn, NULL, &a },
	};
	struct strata_op dn = ctx_dn_op(c, s, l, STRATA_OP_DELTANET_TILED, &qkv, &z, &ba, &o);

	/* b and a are the two halves of each token's row of ba: strided views */
	b.ne[1] = a.ne[1] = n;
	b.nb[1] = a.nb[1] = ba.nb[1];
	RUN(ctx_matmul(be, it, 4));
	RUN(strata_wlog_put(s, be, l, n, (const struct strata_tensor *[4]){ &qkv, &z, &ba, NULL }));
	RUN(strata_backend_run(be, &dn));
	it[0] = (struct strata_matmul_item){ &L->dn_wout, &o, NULL, &out };
	return ctx_matmul(be, it, 1);
}

/*
 * The batch's PLE rows into *pe on be: the reader's (started before layer
 * 0) or gathered from the mapping on the CPU (into `rows`, a view of the
 * CPU's pe), then copied over when be is the device.
 */
static int ple_embed(struct strata_ctx *c, struct strata_backend *be, uint32_t n,
		     struct strata_tensor *pe, const struct strata_tensor *rows,
		     const struct strata_tensor *ids)
{
	const size_t bytes = (size_t)n * c->m->hp.n_embd * sizeof(float);
	const float *host = strata_tensor_data(&c->ws_cpu.pe);

	if (c->ple_rd) {
		struct strata_ple_stats st;
		int rc = strata_ple_wait(c->ple_chunk);

		c->ple_started = 0;
		strata_ple_chunk_stats(c->ple_chunk, &st);
		c->ple_wait_ms += st.blocked_ms;
		c->ple_chunks++;
		if (rc)
			return rc;
		host = c->ple_out;
		if (be == c->cpu) { /* read in place */
			*pe = strata_t_f32(&c->ple_out_buf, 0, c->m->hp.n_embd, n);
			return 0;
		}
	} else {
		struct strata_tensor r = *rows;

		r.buf = c->ws_cpu.pe.buf;
		r.offset = c->ws_cpu.pe.offset;
		RUN(strata_op1(c->cpu, STRATA_OP_GET_ROWS, &r, &c->ple_table, ids));
		if (be == c->cpu)
			return 0;
	}
	return strata_backend_copy_in(be, pe->buf, pe->offset, host, bytes, NULL);
}

/*
 * The PLE fusion before layer l's mixer: each token's 16 n-gram rows
 * (c->ple_ids) as a key and a value; a per-stream gate of the key against
 * the streams; the gated value plus a dilated causal conv of it (history
 * in the sequence) added to every stream.
 */
static int ple(struct strata_ctx *c, struct strata_seq *s, uint32_t l, uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *be = L->be;
	struct ws *w = strata_ctx_ws(c, be);
	struct strata_buf ids_buf = { .base = c->ple_ids,
				      .size = (size_t)n * STRATA_PLE_HEADS * sizeof(int32_t),
				      .flags = STRATA_BUF_HOST };
	struct strata_tensor ids = strata_t_i32(&ids_buf, 0, (int64_t)n * STRATA_PLE_HEADS, 1);
	struct strata_tensor pe = strata_t_cols(&w->pe, 0, n), pk = strata_t_cols(&w->pk, 0, n);
	struct strata_tensor pv = strata_t_cols(&w->pv, 0, n), pq = strata_t_cols(&w->pq, 0, n);
	struct strata_tensor pg = strata_t_cols(&w->pg, 0, n), res = strata_t_cols(&w->res, 0, n);
	struct strata_tensor rows = strata_t_f32(pe.buf, pe.offset, hp->q4x.ple_head_dim,
						 (int64_t)n * STRATA_PLE_HEADS);
	struct strata_matmul_item it[2] = { { &L->ple_key, &pe, NULL, &pk },
					    { &L->ple_value, &pe, NULL, &pv } };
	struct strata_op gate = { .code = STRATA_OP_PLE_GATE, .dst = &pg, .src = { &pk, &pq, &pv } };
	struct strata_op conv = ple_conv_op(c, s, l, &pk, &pq);

	RUN(ple_embed(c, be, n, &pe, &rows, &ids));
	RUN(ctx_matmul(be, it, 2));
	RUN(grouped_norm(c, be, &pk, &pk, &L->ple_nk, n));
	RUN(grouped_norm(c, be, &pq, &res, &L->ple_nq, n));
	RUN(strata_backend_run(be, &gate));
	/* the conv reads the gated value normed (into pk), writes pq; then g + conv */
	RUN(grouped_norm(c, be, &pk, &pg, &L->ple_nc, n));
	RUN(strata_wlog_put(s, be, l, n, (const struct strata_tensor *[4]){ NULL, NULL, NULL, &pk }));
	RUN(strata_backend_run(be, &conv));
	RUN(strata_op1(be, STRATA_OP_ADD, &pg, &pg, &pq));
	return strata_op1(be, STRATA_OP_ADD, &res, &res, &pg);
}

/* ---- the pass ---------------------------------------------------------------------- */

/* The embeddings of the n tokens, copied into every stream. */
static int embed(struct strata_ctx *c, const int32_t *tokens, uint32_t n)
{
	struct strata_buf ids_buf = { .base = (void *)tokens, .size = (size_t)n * 4,
				      .flags = STRATA_BUF_HOST };
	struct strata_tensor ids = strata_t_i32(&ids_buf, 0, n, 1);
	struct strata_tensor x = strata_t_cols(&c->ws_cpu.x, 0, n);

	RUN(strata_op1(c->cpu, STRATA_OP_GET_ROWS, &x, &c->tok_embd, &ids));
	for (uint32_t k = 0; k < c->m->hp.q4x.hc; k++) {
		struct strata_tensor d = stream(&c->ws_cpu.res, k, c->m->hp.n_embd, n);

		RUN(strata_op1(c->cpu, STRATA_OP_COPY, &d, &x, NULL));
	}
	return 0;
}

/* Move the residual streams' n rows to `to`; *at says where they are. */
static int move_res(struct strata_ctx *c, struct strata_backend **at, struct strata_backend *to,
		    uint32_t n)
{
	return strata_ctx_move_rows(c, at, to, offsetof(struct ws, res), n);
}

/* Logits of rows [first, n): the head mixer collapses their streams, then the output. */
static int head(struct strata_ctx *c, struct strata_backend **at, uint32_t first, uint32_t n,
		float *out)
{
	struct strata_backend *be = c->out_be;
	const uint32_t rows = n - first;
	struct strata_tensor xn = strata_t_cols(&strata_ctx_ws(c, be)->xn, 0, rows);

	RUN(move_res(c, at, be, n));
	RUN(hc_mix(c, be, c->hc_head, first, rows));
	return strata_ctx_logits(c, be, &c->output, &xn, rows, out);
}

static int layers(struct strata_ctx *c, struct strata_seq *s, struct strata_backend **at,
		  uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;

	for (uint32_t l = 0; l < hp->n_layer - hp->n_nextn; l++) {
		struct pl_layer *L = &c->L[l];

		RUN(move_res(c, at, L->be, n));
		if (c->m->layers[l].q4x.ple)
			RUN(ple(c, s, l, n));
		RUN(hc_mix(c, L->be, L->hc_attn, 0, n));
		RUN(c->m->layers[l].recurrent ? deltanet(c, s, l, n) : attention(c, s, l, s->pos, n));
		RUN(hc_combine(c, L->be, n));
		RUN(hc_mix(c, L->be, L->hc_ffn, 0, n));
		RUN(strata_moe_block(c, l, n));
		RUN(hc_combine(c, L->be, n));
	}
	return 0;
}

/*
 * The batch's PLE row ids from the n-gram history *hist (advanced; the
 * sequence's copy moves only when the pass succeeds): started on the reader,
 * or for GET_ROWS from the mapping.
 */
static int ple_rows(struct strata_ctx *c, struct strata_ple_hist *hist, const int32_t *tokens,
		    uint32_t n)
{
	uint64_t rows[64 * STRATA_PLE_HEADS];
	int rc;

	if (c->ple_rd) {
		strata_ple_row_ids(&c->ple_hash, hist, tokens, n, c->ple_rows);
		if ((rc = strata_ple_start(c->ple_chunk, c->ple_rows, (size_t)n * STRATA_PLE_HEADS,
					   c->ple_out)))
			return rc;
		c->ple_started = 1;
		return 0;
	}
	for (uint32_t i = 0; i < n; i += 64) {
		const uint32_t k = n - i < 64 ? n - i : 64;

		strata_ple_row_ids(&c->ple_hash, hist, tokens + i, k, rows);
		for (uint32_t j = 0; j < k * STRATA_PLE_HEADS; j++)
			c->ple_ids[(size_t)i * STRATA_PLE_HEADS + j] = (int32_t)rows[j];
	}
	return 0;
}

int strata_q4x_forward(struct strata_seq *s, const int32_t *tokens, uint32_t n, float *logits,
		       int all_logits)
{
	struct strata_ctx *c = s->c;
	struct strata_ple_hist hist = s->ple;
	struct strata_backend *at = c->cpu;
	int rc = 0;

	strata_wlog_open(s, tokens, n);
	/* the rows first, so that the reads run while layer 0 computes */
	if ((c->ple_ids || c->ple_rd) && (rc = ple_rows(c, &hist, tokens, n)))
		return rc;
	rc = embed(c, tokens, n);
	if (!rc)
		rc = layers(c, s, &at, n);
	if (c->ple_started) { /* failed before the PLE layer: the reads must end first */
		(void)strata_ple_wait(c->ple_chunk);
		c->ple_started = 0;
	}
	strata_wlog_close(s, n, rc);
	if (!rc && logits)
		rc = head(c, &at, all_logits ? 0 : n - 1, n, logits);
	c->res_at = at; /* for the MTP block */
	c->res_rows = n;
	/* queued device work fails here at the latest, inside this call */
	if (!rc && c->dev)
		rc = strata_backend_sync(c->dev);
	if (rc)
		return rc;
	s->pos += n;
	s->ple = hist;
	return 0;
}

/* ---- a verify window's kept prefix from the log (wlog.c) ---------------------------- */

int strata_q4x_replay(struct strata_seq *s, uint32_t l, struct strata_tensor t[4], uint32_t n)
{
	struct strata_ctx *c = s->c;
	struct strata_tensor o = strata_t_cols(&c->ws_cpu.o, 0, n);
	struct strata_tensor pq = strata_t_cols(&c->ws_cpu.pq, 0, n);
	struct strata_op dn = ctx_dn_op(c, s, l, STRATA_OP_DELTANET_TILED, &t[0], &t[1], &t[2], &o);

	if (c->m->layers[l].q4x.ple) {
		struct strata_op conv = ple_conv_op(c, s, l, &t[3], &pq);

		RUN(strata_backend_run(c->L[l].be, &conv));
	}
	return strata_backend_run(c->L[l].be, &dn);
}

/* ---- the MTP block ------------------------------------------------------------------ */

int strata_q4x_mtp_hidden(struct strata_seq *s, uint32_t row, float *dst)
{
	struct strata_ctx *c = s->c;
	const struct strata_tensor *res = &c->ws_cpu.res;

	if (row >= c->res_rows)
		return -EINVAL;
	if (c->res_at && c->res_at != c->cpu) /* the trunk ended on the device */
		RUN(move_res(c, &c->res_at, c->cpu, c->res_rows));
	memcpy(dst, (const char *)strata_tensor_data(res) + (size_t)row * res->nb[1],
	       strata_mtp_width(c->m) * sizeof(float));
	return 0;
}

int strata_q4x_mtp(struct strata_seq *s, const int32_t *next, const float *hidden, uint32_t n,
		   uint32_t pos, uint32_t n_out, float *out)
{
	struct strata_ctx *c = s->c;
	const struct strata_hparams *hp = &c->m->hp;
	const uint32_t l = hp->n_layer - 1, k = hp->q4x.hc;
	const int64_t e = hp->n_embd;
	struct ws *w = &c->ws_cpu;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *be = c->cpu;
	struct strata_buf ids_buf = { .base = (void *)next, .size = (size_t)n * 4,
				      .flags = STRATA_BUF_HOST };
	struct strata_tensor ids = strata_t_i32(&ids_buf, 0, n, 1);
	struct strata_tensor x = strata_t_cols(&w->x, 0, n), hxn = strata_t_cols(&w->hxn, 0, n);
	struct strata_tensor res = strata_t_cols(&w->res, 0, n);
	struct strata_tensor cat = strata_t_f32(w->hgate.buf, w->hgate.offset, 2 * e, n);
	struct strata_tensor xn = strata_t_cols(&w->xn, 0, n_out);

	if (hidden) {
		memcpy(strata_tensor_data(&res), hidden, (size_t)n * strata_mtp_width(c->m) * 4);
		c->res_at = be;
	} else if (n > c->res_rows) {
		return -EINVAL;
	} else if (c->res_at && c->res_at != be) { /* the trunk ended on the device */
		RUN(move_res(c, &c->res_at, be, n));
	}
	c->res_rows = n; /* the block's own output rows, from here on */
	/* each stream c: eh_proj [enorm(embed(next)); hnorm_c(residual_c)] */
	RUN(strata_op1(be, STRATA_OP_GET_ROWS, &x, &c->tok_embd, &ids));
	RUN(ctx_norm(be, &x, &x, &L->mtp_enorm, hp->rms_eps));
	RUN(grouped_norm(c, be, &hxn, &res, &L->mtp_hnorm, n));
	for (uint32_t i = 0; i < k; i++) {
		struct strata_tensor lo = stream(&cat, 0, e, n), hi = stream(&cat, 1, e, n);
		struct strata_tensor h = stream(&hxn, i, e, n), dst = stream(&res, i, e, n);
		struct strata_matmul_item p = { &L->mtp_eh, &cat, NULL, &dst };

		RUN(strata_op1(be, STRATA_OP_COPY, &lo, &x, NULL));
		RUN(strata_op1(be, STRATA_OP_COPY, &hi, &h, NULL));
		RUN(ctx_matmul(be, &p, 1));
	}
	RUN(hc_mix(c, be, L->hc_attn, 0, n));
	RUN(attention(c, s, l, pos, n));
	RUN(hc_combine(c, be, n));
	RUN(hc_mix(c, be, L->hc_ffn, 0, n));
	RUN(strata_moe_block(c, l, n));
	RUN(hc_combine(c, be, n));
	if (!n_out)
		return 0;
	RUN(hc_mix(c, be, L->mtp_hc, n - n_out, n_out));
	/* the shared head from the mapping: the block runs on the CPU wherever the head is */
	return strata_ctx_logits(c, be, &c->output_h, &xn, n_out, out);
}
