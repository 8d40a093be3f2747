/*
 * forward.c - the layer loop, written once against the op set of
 * strata/backend.h: each layer's ops go to the backend placement gave it
 * (the CPU, or a device), and the residual stream moves between the two
 * where consecutive layers disagree.  Attention (optionally gated, as
 * qwen3next's full-attention layers) or the DeltaNet mixer, then the dense
 * or mixture-of-experts FFN (moe.c), layer by layer; then the output head.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend/exec.h"
#include "model/ctx_int.h"
#include "model/vcache.h"
#include "util/log.h"

/* ---- the blocks ------------------------------------------------------------------- */

static int attention_block(struct strata_ctx *c, struct strata_seq *s, uint32_t l, uint32_t pos,
			   uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *be = L->be;
	struct ws *w = strata_ctx_ws(c, be);
	const int gated = c->m->layers[l].attn_gated;
	const int64_t hd = hp->head_dim, hdv = hp->head_dim_v, nh = hp->n_head, nkv = hp->n_head_kv;
	struct strata_tensor x = strata_t_cols(&w->x, 0, n), xn = strata_t_cols(&w->xn, 0, n);
	struct strata_tensor q = strata_t_cols(&w->q, 0, n), kb = strata_t_cols(&w->kb, 0, n);
	struct strata_tensor vb = strata_t_cols(&w->vb, 0, n), att = strata_t_cols(&w->att, 0, n);
	struct strata_tensor qg = gated ? strata_t_cols(&w->qg, 0, n) : q;
	struct strata_tensor qh = strata_t_heads(&q, hd, nh, n), kh = strata_t_heads(&kb, hd, nkv, n);
	struct strata_tensor vh = strata_t_heads(&vb, hdv, nkv, n);
	struct strata_tensor ah = strata_t_heads(&att, hdv, nh, n);
	struct strata_matmul_item it[3] = {
		{ &L->wq, &xn, NULL, &qg }, { &L->wk, &xn, NULL, &kb }, { &L->wv, &xn, NULL, &vb },
	};
	struct strata_op at = {
		.code = STRATA_OP_ATTN, .dst = &ah,
		.src = { &qh, &kh, &vh, &s->L[l].k, &s->L[l].v },
		.p.attn = { .pos = pos, .scale = 1.0f / sqrtf((float)hd) },
	};

	RUN(ctx_norm(be, &xn, &x, &L->attn_norm, hp->rms_eps));
	RUN(ctx_matmul(be, it, 3));
	if (gated) { /* rows of [q, gate] per head: q out, the gate stays */
		struct strata_tensor qs = ctx_heads_of(&qg, hd, nh, n, 2 * (size_t)hd, 0);

		RUN(strata_op1(be, STRATA_OP_COPY, &qh, &qs, NULL));
	}
	if (t_has(&L->bq))
		RUN(strata_op1(be, STRATA_OP_ADD, &q, &q, &L->bq));
	if (t_has(&L->bk))
		RUN(strata_op1(be, STRATA_OP_ADD, &kb, &kb, &L->bk));
	if (t_has(&L->bv))
		RUN(strata_op1(be, STRATA_OP_ADD, &vb, &vb, &L->bv));
	if (t_has(&L->q_norm)) {
		struct strata_tensor rows = strata_t_f32(q.buf, q.offset, hd, nh * n);

		RUN(ctx_norm(be, &rows, &rows, &L->q_norm, hp->rms_eps));
	}
	if (t_has(&L->k_norm)) {
		struct strata_tensor rows = strata_t_f32(kb.buf, kb.offset, hd, nkv * n);

		RUN(ctx_norm(be, &rows, &rows, &L->k_norm, hp->rms_eps));
	}
	RUN(ctx_rope(be, &qh, hp, &w->inv_freq, pos));
	RUN(ctx_rope(be, &kh, hp, &w->inv_freq, pos));
	RUN(strata_backend_run(be, &at));
	if (gated) { /* qwen3next's output gate: att *= sigmoid(gate) */
		struct strata_tensor gate = ctx_heads_of(&qg, hd, nh, n, 2 * (size_t)hd,
						     (size_t)hd * sizeof(float));

		RUN(strata_op1(be, STRATA_OP_SIGMOID_MUL, &ah, &ah, &gate));
	}
	it[0] = (struct strata_matmul_item){ &L->wo, &att, NULL, &xn };
	RUN(ctx_matmul(be, it, 1));
	return strata_op1(be, STRATA_OP_ADD, &x, &x, &xn);
}

/*
 * The fused ssm_in output, per key head [q, k, v of its r value heads, z of
 * them], into the conv input [all q, all k, all v] and z: four strided copies.
 */
static int unpack_qkvz(struct strata_backend *be, const struct strata_hparams *hp,
		       struct ws *w, uint32_t n)
{
	const int64_t nk = hp->ssm_n_group, dk = hp->ssm_d_state, rv = hp->ssm_d_inner / nk;
	const size_t grp = (size_t)(2 * dk + 2 * rv); /* floats per key head in qkvz */
	const struct strata_tensor src = strata_t_cols(&w->qkvz, 0, n);
	const struct strata_tensor qkv = strata_t_cols(&w->qkv, 0, n), z = strata_t_cols(&w->z, 0, n);
	const struct { const struct strata_tensor *dst; size_t dst_at, src_at; int64_t len; } part[4] = {
		{ &qkv, 0, 0, dk },
		{ &qkv, (size_t)(nk * dk), (size_t)dk, dk },
		{ &qkv, (size_t)(2 * nk * dk), (size_t)(2 * dk), rv },
		{ &z, 0, (size_t)(2 * dk + rv), rv },
	};

	for (int i = 0; i < 4; i++) {
		struct strata_tensor from = ctx_heads_of(&src, part[i].len, nk, n, grp,
						     part[i].src_at * sizeof(float));
		struct strata_tensor to = ctx_heads_of(part[i].dst, part[i].len, nk, n,
						   (size_t)part[i].len,
						   part[i].dst_at * sizeof(float));

		RUN(strata_op1(be, STRATA_OP_COPY, &to, &from, NULL));
	}
	return 0;
}

/* The DeltaNet mixer in place of attention (qwen3next's linear layers). */
static int deltanet_block(struct strata_ctx *c, struct strata_seq *s, uint32_t l, uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *be = L->be;
	struct ws *w = strata_ctx_ws(c, be);
	const int fused = c->m->layers[l].dn.fused;
	struct strata_tensor x = strata_t_cols(&w->x, 0, n), xn = strata_t_cols(&w->xn, 0, n);
	struct strata_tensor qkv = strata_t_cols(&w->qkv, 0, n), z = strata_t_cols(&w->z, 0, n);
	struct strata_tensor ba = strata_t_cols(&w->ba, 0, n), o = strata_t_cols(&w->o, 0, n);
	struct strata_tensor qkvz = fused ? strata_t_cols(&w->qkvz, 0, n) : qkv;
	struct strata_tensor out = strata_t_cols(&w->out, 0, n);
	struct strata_matmul_item it[3] = {
		{ &L->dn_wba, &xn, NULL, &ba },
		{ fused ? &L->dn_wqkvz : &L->dn_wqkv, &xn, NULL, fused ? &qkvz : &qkv },
		{ &L->dn_wz, &xn, NULL, &z },
	};
	struct strata_op dn = ctx_dn_op(c, s, l, STRATA_OP_DELTANET, &qkv, &z, &ba, &o);

	RUN(ctx_norm(be, &xn, &x, &L->attn_norm, hp->rms_eps));
	RUN(ctx_matmul(be, it, fused ? 2 : 3));
	if (fused)
		RUN(unpack_qkvz(be, hp, w, n));
	RUN(strata_wlog_put(s, be, l, n, (const struct strata_tensor *[4]){ &qkv, &z, &ba, NULL }));
	RUN(strata_backend_run(be, &dn));
	it[0] = (struct strata_matmul_item){ &L->dn_wout, &o, NULL, &out };
	RUN(ctx_matmul(be, it, 1));
	return strata_op1(be, STRATA_OP_ADD, &x, &x, &out);
}

static int ffn_block(struct strata_ctx *c, uint32_t l, uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *be = L->be;
	struct ws *w = strata_ctx_ws(c, be);
	struct strata_tensor x = strata_t_cols(&w->x, 0, n), xn = strata_t_cols(&w->xn, 0, n);
	struct strata_tensor hb = strata_t_cols(&w->hb, 0, n), hb2 = strata_t_cols(&w->hb2, 0, n);
	struct strata_tensor out = strata_t_cols(&w->out, 0, n);
	struct strata_matmul_item it[2] = { { &L->w_gate, &xn, NULL, &hb },
					    { &L->w_up, &xn, NULL, &hb2 } };

	RUN(ctx_norm(be, &xn, &x, &L->ffn_norm, hp->rms_eps));
	if (c->m->layers[l].moe) {
		RUN(strata_moe_block(c, l, n));
		return strata_op1(be, STRATA_OP_ADD, &x, &x, &out);
	}
	RUN(ctx_matmul(be, it, 2));
	RUN(strata_op1(be, STRATA_OP_SWIGLU, &hb, &hb, &hb2));
	it[0] = (struct strata_matmul_item){ &L->w_down, &hb, NULL, &xn };
	RUN(ctx_matmul(be, it, 1));
	return strata_op1(be, STRATA_OP_ADD, &x, &x, &xn);
}

/* ---- the pass ---------------------------------------------------------------------- */

/* Move the residual stream's n rows to `to`; *at says where it is. */
static int move_x(struct strata_ctx *c, struct strata_backend **at, struct strata_backend *to,
		  uint32_t n)
{
	return strata_ctx_move_rows(c, at, to, offsetof(struct ws, x), n);
}

static int embed(struct strata_ctx *c, const int32_t *tokens, uint32_t n)
{
	struct strata_buf ids_buf = { .base = (void *)tokens, .size = (size_t)n * 4,
				      .flags = STRATA_BUF_HOST };
	struct strata_tensor ids = strata_t_i32(&ids_buf, 0, n, 1);
	struct strata_tensor x = strata_t_cols(&c->ws_cpu.x, 0, n);

	return strata_op1(c->cpu, STRATA_OP_GET_ROWS, &x, &c->tok_embd, &ids);
}

/* Logits of rows [first, n) of the residual stream into out (n_vocab floats per row). */
static int head(struct strata_ctx *c, struct strata_backend **at, uint32_t first, uint32_t n,
		float *out)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct strata_backend *be = c->out_be;
	struct ws *w = strata_ctx_ws(c, be);
	const uint32_t rows = n - first;
	struct strata_tensor x = strata_t_cols(&w->x, first, rows);
	struct strata_tensor xn = strata_t_cols(&w->xn, 0, rows);

	RUN(move_x(c, at, be, n));
	RUN(ctx_norm(be, &xn, &x, &c->output_norm, hp->rms_eps));
	return strata_ctx_logits(c, be, &c->output, &xn, rows, out);
}

static int layers(struct strata_ctx *c, struct strata_seq *s, struct strata_backend **at,
		  uint32_t n)
{
	const struct strata_hparams *hp = &c->m->hp;

	/* Trailing nextn (MTP) layers are not part of the main forward pass. */
	for (uint32_t l = 0; l < hp->n_layer - hp->n_nextn; l++) {
		RUN(move_x(c, at, c->L[l].be, n));
		if (c->m->layers[l].recurrent)
			RUN(deltanet_block(c, s, l, n));
		else
			RUN(attention_block(c, s, l, s->pos, n));
		RUN(ffn_block(c, l, n));
	}
	return 0;
}

int strata_forward(struct strata_seq *s, const int32_t *tokens, uint32_t n, float *logits,
		   int all_logits)
{
	struct strata_ctx *c = s->c;
	const struct strata_hparams *hp = &c->m->hp;
	struct strata_backend *at = c->cpu;
	int rc;

	if (n == 0)
		return 0;
	if (n > s->max_batch)
		return -EINVAL;
	if ((uint64_t)s->pos + n > s->n_ctx)
		return -ENOSPC;
	for (uint32_t t = 0; t < n; t++)
		if (tokens[t] < 0 || (uint32_t)tokens[t] >= hp->n_vocab) {
			strata_error("token id %d is out of range (vocabulary of %u)", tokens[t],
				     hp->n_vocab);
			return -EINVAL;
		}
	if ((rc = strata_vcache_pass_begin(c, n)))
		return rc;
	strata_seq_note_write(s, s->pos);
	if (hp->arch == STRATA_ARCH_QWEN4EXP) {
		rc = strata_q4x_forward(s, tokens, n, logits, all_logits);
		if (!rc) {
			c->n_forward++;
			strata_vcache_pass_end(c, n);
		}
		return rc;
	}
	strata_wlog_open(s, tokens, n);
	rc = embed(c, tokens, n);
	if (!rc)
		rc = layers(c, s, &at, n);
	strata_wlog_close(s, n, rc);
	if (!rc && logits)
		rc = head(c, &at, all_logits ? 0 : n - 1, n, logits);
	c->res_at = at; /* the final residual rows, for the MTP block */
	c->res_rows = n;
	c->res_mtp = 0;
	/* Queued device work fails here at the latest, inside this call. */
	if (!rc && c->dev)
		rc = strata_backend_sync(c->dev);
	if (rc)
		return rc;
	s->pos += n;
	c->n_forward++;
	strata_vcache_pass_end(c, n);
	return 0;
}

/* ---- verify windows: a kept prefix from the log (wlog.c) ------------------------- */

int strata_dn_replay(struct strata_seq *s, uint32_t l, struct strata_tensor t[4], uint32_t n)
{
	struct strata_ctx *c = s->c;
	struct strata_tensor o = strata_t_cols(&c->ws_cpu.o, 0, n);
	struct strata_op dn = ctx_dn_op(c, s, l, STRATA_OP_DELTANET, &t[0], &t[1], &t[2], &o);

	return strata_backend_run(c->L[l].be, &dn);
}

/* ---- the MTP (nextn) block ----------------------------------------------------------- */

/*
 * glm4moe's and qwen3next's block is a decoder layer of the trunk's kind
 * fed eh_proj [enorm(embed(next)); hnorm(h)], where h is the final-normed
 * hidden state (the trunk's output_norm, the block's own head norm when it
 * chains on itself); its head norm, then the trunk's output head.  The rows
 * in x are raw residuals: the norm is applied as they are read.
 */
static const struct strata_tensor *hid_norm(const struct strata_ctx *c)
{
	const struct strata_hparams *hp = &c->m->hp;

	return c->res_mtp ? &c->L[hp->n_layer - hp->n_nextn].mtp_shnorm : &c->output_norm_h;
}

static int mtp_layer(struct strata_seq *s, const int32_t *next, const float *hidden, uint32_t n,
		     uint32_t pos, uint32_t n_out, float *out)
{
	struct strata_ctx *c = s->c;
	const struct strata_hparams *hp = &c->m->hp;
	const uint32_t l = hp->n_layer - hp->n_nextn;
	const int64_t e = hp->n_embd;
	struct pl_layer *L = &c->L[l];
	struct strata_backend *be = c->cpu, *at = c->cpu;
	struct ws *w = &c->ws_cpu;
	struct strata_buf ids_buf = { .base = (void *)next, .size = (size_t)n * 4,
				      .flags = STRATA_BUF_HOST };
	struct strata_tensor ids = strata_t_i32(&ids_buf, 0, n, 1);
	struct strata_tensor x = strata_t_cols(&w->x, 0, n), xn = strata_t_cols(&w->xn, 0, n);
	struct strata_tensor h = strata_t_cols(&w->out, 0, n), cat = strata_t_cols(&w->cat, 0, n);
	struct strata_tensor lo = cat, hi = cat;
	struct strata_matmul_item p = { &L->mtp_eh, &cat, NULL, &x };

	lo.ne[0] = hi.ne[0] = e;
	hi.offset += (size_t)e * sizeof(float);
	if (hidden) {
		memcpy(strata_tensor_data(&h), hidden, (size_t)n * e * sizeof(float));
	} else {
		if (n > c->res_rows)
			return -EINVAL;
		RUN(move_x(c, &c->res_at, be, c->res_rows));
		RUN(ctx_norm(be, &h, &x, hid_norm(c), hp->rms_eps));
	}
	RUN(ctx_norm(be, &h, &h, &L->mtp_hnorm, hp->rms_eps));
	RUN(strata_op1(be, STRATA_OP_GET_ROWS, &xn, &c->tok_embd, &ids));
	RUN(ctx_norm(be, &xn, &xn, &L->mtp_enorm, hp->rms_eps));
	RUN(strata_op1(be, STRATA_OP_COPY, &lo, &xn, NULL));
	RUN(strata_op1(be, STRATA_OP_COPY, &hi, &h, NULL));
	RUN(ctx_matmul(be, &p, 1));
	RUN(move_x(c, &at, L->be, n));
	RUN(attention_block(c, s, l, pos, n));
	RUN(ffn_block(c, l, n));
	RUN(move_x(c, &at, be, n));
	c->res_at = be;
	c->res_rows = n;
	c->res_mtp = 1;
	if (!n_out)
		return 0;
	x = strata_t_cols(&w->x, n - n_out, n_out);
	xn = strata_t_cols(&w->xn, 0, n_out);
	RUN(ctx_norm(be, &xn, &x, &L->mtp_shnorm, hp->rms_eps));
	/* the head from the mapping: the block runs on the CPU wherever the head is */
	return strata_ctx_logits(c, be, &c->output_h, &xn, n_out, out);
}

size_t strata_mtp_width(const struct strata_model *m)
{
	return (size_t)m->hp.n_embd * (m->hp.arch == STRATA_ARCH_QWEN4EXP ? m->hp.q4x.hc : 1);
}

int strata_mtp_check(const struct strata_ctx *c, const char **why)
{
	const struct strata_hparams *hp = &c->m->hp;
	const uint32_t l = hp->n_layer - hp->n_nextn;

	*why = NULL;
	if (!hp->n_nextn)
		*why = "this model has no MTP (nextn) block";
	else if (!t_has(&c->L[l].mtp_eh) || c->m->layers[l].recurrent)
		*why = "the MTP block was not placed";
	else if (c->xs)
		*why = "the MTP block does not run with streamed experts yet";
	return *why ? -ENOTSUP : 0;
}

int strata_mtp_hidden(struct strata_seq *s, uint32_t row, float *dst)
{
	struct strata_ctx *c = s->c;
	const int64_t e = c->m->hp.n_embd;
	struct strata_buf b = { .base = dst, .size = (size_t)e * 4, .flags = STRATA_BUF_HOST };
	struct strata_tensor d = strata_t_f32(&b, 0, e, 1), x;

	if (c->m->hp.arch == STRATA_ARCH_QWEN4EXP)
		return strata_q4x_mtp_hidden(s, row, dst);
	if (row >= c->res_rows)
		return -EINVAL;
	RUN(move_x(c, &c->res_at, c->cpu, c->res_rows));
	x = strata_t_cols(&c->ws_cpu.x, row, 1);
	return ctx_norm(c->cpu, &d, &x, hid_norm(c), c->m->hp.rms_eps);
}

int strata_mtp(struct strata_seq *s, const int32_t *next, const float *hidden, uint32_t n,
	       uint32_t pos, uint32_t n_out, float *out)
{
	const struct strata_hparams *hp = &s->c->m->hp;
	const char *why;

	if (strata_mtp_check(s->c, &why)) {
		strata_error("%s", why);
		return -ENOTSUP;
	}
	if (n == 0 || n > s->max_batch || n_out > n || (uint64_t)pos + n > s->n_ctx)
		return -EINVAL;
	for (uint32_t t = 0; t < n; t++)
		if (next[t] < 0 || (uint32_t)next[t] >= hp->n_vocab)
			return -EINVAL;
	if (hp->arch == STRATA_ARCH_QWEN4EXP)
		return strata_q4x_mtp(s, next, hidden, n, pos, n_out, out);
	return mtp_layer(s, next, hidden, n, pos, n_out, out);
}
