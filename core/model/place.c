/*
 * place.c - which backend holds each weight, decided once per context.
 *
 * Without a device, the CPU's products are copied into huge pages at load
 * (place_repack: Q8_0, Q4_K, Q6_K and IQ4_NL interleaved, when RAM allows and opts->no_repack is
 * 0), everything else is a view of the model's mapping, computed by the CPU
 * backend in place.  With a device, in this order while
 * the budget lasts: its workspace; then layer by layer (the first layers
 * while they fit) the dense part - mixer, norms, router, shared expert,
 * dense FFN - together with the layer's state for n_seq sequences; then the
 * output head; then the expert cache (vcache.h): slots for the routed
 * experts of the layers it holds, filled at run time.  A layer whose ops
 * or weight types the device does not support stays on the CPU (the layers
 * after it may still go); experts of a type it does not support too.
 * Experts the device does not hold are computed on the CPU each step; the
 * layer loop moves activations between the two.
 */
#include "model/ctx_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/exec.h"
#include "model/vcache.h"
#include "gguf/gguf.h"
#include "plat/plat.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/mem.h"

#define ALIGN 256

static size_t align_up(size_t v)
{
	return (v + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

/* ---- host views of the model ---------------------------------------------------- */

static struct strata_tensor h_mat(struct strata_ctx *c, const struct strata_mat *m)
{
	struct strata_tensor t = { 0 };

	if (!m->data)
		return t;
	t.type = m->type;
	t.n_dims = 2;
	t.ne[0] = m->cols;
	t.ne[1] = m->rows;
	t.ne[2] = t.ne[3] = 1;
	t.nb[0] = strata_type_block_bytes(m->type);
	t.nb[1] = m->row_bytes;
	t.nb[2] = t.nb[3] = m->row_bytes * (size_t)m->rows;
	t.buf = &c->host_map;
	t.offset = (size_t)((const char *)m->data - (const char *)c->host_map.base);
	return t;
}

static struct strata_tensor h_f32(struct strata_ctx *c, const float *p, int64_t ne0, int64_t ne1)
{
	struct strata_tensor t = { 0 };

	if (!p)
		return t;
	t = strata_t_f32(&c->host_map, (size_t)((const char *)p - (const char *)c->host_map.base),
			 ne0, ne1);
	return t;
}

static struct strata_tensor h_exps(struct strata_ctx *c, const struct strata_experts *x)
{
	struct strata_tensor t = h_mat(c, &x->m);

	if (!t.buf)
		return t;
	t.n_dims = 3;
	t.ne[2] = x->n;
	t.nb[2] = x->stride;
	t.nb[3] = x->stride * x->n;
	return t;
}

static size_t t_bytes(const struct strata_tensor *t)
{
	return t->nb[1] * (size_t)t->ne[1] * (size_t)t->ne[2];
}

/* The dense tensors of a layer, for uploads and byte counts. */
#define N_DENSE 49
static void dense_list(struct pl_layer *L, struct strata_tensor **v)
{
	struct strata_tensor *all[N_DENSE] = {
		&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->bq, &L->bk, &L->bv,
		&L->q_norm, &L->k_norm, &L->ffn_norm, &L->w_gate, &L->w_up, &L->w_down,
		&L->gate_inp, &L->exp_probs_b, &L->gate_shexp, &L->up_shexp, &L->down_shexp,
		&L->gate_inp_shexp, &L->dn_wqkv, &L->dn_wz, &L->dn_wqkvz, &L->dn_wba, &L->dn_conv,
		&L->dn_dt_bias, &L->dn_a, &L->dn_norm, &L->dn_wout,
		/* qwen4exp */
		&L->hc_attn[0], &L->hc_attn[1], &L->hc_attn[2], &L->hc_attn[3], &L->hc_ffn[0],
		&L->hc_ffn[1], &L->hc_ffn[2], &L->hc_ffn[3], &L->idx_q, &L->idx_k, &L->idx_q_norm,
		&L->idx_k_norm, &L->dn_beta, &L->dn_alpha, &L->ple_key, &L->ple_value, &L->ple_nk,
		&L->ple_nq, &L->ple_nc, &L->ple_conv,
	};

	memcpy(v, all, sizeof(all));
}

/* 1 for the entries of dense_list that are MATMUL weights (the rest are F32 operands). */
static const uint8_t g_product[N_DENSE] = {
	0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1,
	0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0,
};

/* A hyper-connection module's tensors: norm, down, up, inject. */
static void h_hc(struct strata_ctx *c, const struct strata_hc *hc, struct strata_tensor *t)
{
	const struct strata_hparams *hp = &c->m->hp;

	t[0] = h_f32(c, hc->norm, (int64_t)hp->n_embd * hp->q4x.hc, 1);
	t[1] = h_mat(c, &hc->down);
	t[2] = h_mat(c, &hc->up);
	if (hc->inject.data)
		t[3] = h_mat(c, &hc->inject);
}

/* qwen4exp's own tensors of layer l. */
static void host_layer_q4x(struct strata_ctx *c, uint32_t l)
{
	const struct strata_hparams *hp = &c->m->hp;
	const struct strata_q4x_layer *X = &c->m->layers[l].q4x;
	struct pl_layer *L = &c->L[l];
	const int64_t wide = (int64_t)hp->n_embd * hp->q4x.hc;

	h_hc(c, &X->hc_attn, L->hc_attn);
	h_hc(c, &X->hc_ffn, L->hc_ffn);
	L->idx_q = h_mat(c, &X->idx_q);
	L->idx_k = h_mat(c, &X->idx_k);
	L->idx_q_norm = h_f32(c, X->idx_q_norm, hp->q4x.idx_dim, 1);
	L->idx_k_norm = h_f32(c, X->idx_k_norm, hp->q4x.idx_dim, 1);
	L->dn_beta = h_mat(c, &X->beta);
	L->dn_alpha = h_mat(c, &X->alpha);
	if (l >= hp->n_layer - hp->n_nextn) { /* the MTP block */
		const struct strata_nextn *N = &c->m->layers[l].nextn;

		h_hc(c, &N->hc_head, L->mtp_hc);
		L->mtp_enorm = h_f32(c, N->enorm, hp->n_embd, 1);
		L->mtp_hnorm = h_f32(c, N->hnorm, wide, 1);
		L->mtp_eh = h_mat(c, &N->eh_proj);
	}
	if (!X->ple)
		return;
	L->ple_key = h_mat(c, &X->ple_key);
	L->ple_value = h_mat(c, &X->ple_value);
	L->ple_nk = h_f32(c, X->ple_norm_key, wide, 1);
	L->ple_nq = h_f32(c, X->ple_norm_query, wide, 1);
	L->ple_nc = h_f32(c, X->ple_norm_conv, wide, 1);
	L->ple_conv = h_f32(c, X->ple_conv, hp->q4x.ple_conv_k, wide);
}

static void host_layer(struct strata_ctx *c, uint32_t l)
{
	const struct strata_hparams *hp = &c->m->hp;
	const struct strata_layer *M = &c->m->layers[l];
	struct pl_layer *L = &c->L[l];
	const int64_t ch = 2 * (int64_t)hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;
	struct strata_tensor *v[N_DENSE];

	L->be = c->cpu;
	L->attn_norm = h_f32(c, M->attn_norm, hp->n_embd, 1);
	L->ffn_norm = h_f32(c, M->ffn_norm, hp->n_embd, 1);
	if (M->recurrent) {
		L->dn_wqkv = h_mat(c, &M->dn.wqkv);
		L->dn_wz = h_mat(c, &M->dn.wz);
		L->dn_wqkvz = h_mat(c, &M->dn.wqkvz);
		L->dn_wba = h_mat(c, &M->dn.wba);
		L->dn_conv = h_f32(c, M->dn.conv, hp->ssm_d_conv, ch);
		L->dn_dt_bias = h_f32(c, M->dn.dt_bias, hp->ssm_dt_rank, 1);
		L->dn_a = h_f32(c, M->dn.a, hp->ssm_dt_rank, 1);
		L->dn_norm = h_f32(c, M->dn.norm, hp->ssm_head_v, 1);
		L->dn_wout = h_mat(c, &M->dn.wout);
	} else {
		L->wq = h_mat(c, &M->wq);
		L->wk = h_mat(c, &M->wk);
		L->wv = h_mat(c, &M->wv);
		L->wo = h_mat(c, &M->wo);
		L->bq = h_f32(c, M->bq, (int64_t)hp->n_head * hp->head_dim, 1);
		L->bk = h_f32(c, M->bk, (int64_t)hp->n_head_kv * hp->head_dim, 1);
		L->bv = h_f32(c, M->bv, (int64_t)hp->n_head_kv * hp->head_dim_v, 1);
		L->q_norm = h_f32(c, M->q_norm, hp->head_dim, 1);
		L->k_norm = h_f32(c, M->k_norm, hp->head_dim, 1);
	}
	if (M->moe) {
		L->gate_inp = h_mat(c, &M->gate_inp);
		L->exp_probs_b = h_f32(c, M->exp_probs_b, hp->n_expert, 1);
		L->xh[0] = h_exps(c, &M->gate_exps);
		L->xh[1] = h_exps(c, &M->up_exps);
		L->xh[2] = h_exps(c, &M->down_exps);
		if (M->has_shexp) {
			L->gate_shexp = h_mat(c, &M->gate_shexp);
			L->up_shexp = h_mat(c, &M->up_shexp);
			L->down_shexp = h_mat(c, &M->down_shexp);
		}
		if (M->has_shexp_gate)
			L->gate_inp_shexp = h_mat(c, &M->gate_inp_shexp);
	} else {
		L->w_gate = h_mat(c, &M->w_gate);
		L->w_up = h_mat(c, &M->w_up);
		L->w_down = h_mat(c, &M->w_down);
	}
	if (hp->arch == STRATA_ARCH_QWEN4EXP) {
		host_layer_q4x(c, l);
	} else if (l >= hp->n_layer - hp->n_nextn) { /* an MTP block: its head norm or the trunk's */
		L->mtp_enorm = h_f32(c, M->nextn.enorm, hp->n_embd, 1);
		L->mtp_hnorm = h_f32(c, M->nextn.hnorm, hp->n_embd, 1);
		L->mtp_eh = h_mat(c, &M->nextn.eh_proj);
		L->mtp_shnorm = h_f32(c, M->nextn.shared_head_norm ? M->nextn.shared_head_norm
								: c->m->output_norm, hp->n_embd, 1);
	}
	dense_list(L, v);
	for (int i = 0; i < N_DENSE; i++)
		L->dense_bytes += v[i]->buf ? align_up(t_bytes(v[i])) : 0;
	for (int p = 0; M->moe && p < 3; p++)
		c->st.host_weight_bytes += t_bytes(&L->xh[p]);
	c->st.host_weight_bytes += L->dense_bytes;
	/* the placement's figures count the trunk's experts; an MTP block's stay here */
	c->st.experts += M->moe && l < hp->n_layer - hp->n_nextn ? hp->n_expert : 0;
}

size_t strata_layer_state_bytes(const struct strata_model *m, uint32_t l, uint32_t n_ctx)
{
	const struct strata_hparams *hp = &m->hp;
	const size_t stride = strata_kv_stride(n_ctx);

	if (m->layers[l].recurrent) {
		const size_t ch = 2 * (size_t)hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;
		/* qwen4exp's PLE layer keeps its conv's history too */
		const size_t ple = m->layers[l].q4x.ple ? (size_t)strata_q4x_ple_hist_len(hp) *
								  hp->n_embd * hp->q4x.hc : 0;

		return 4 * ((hp->ssm_d_conv - 1) * ch +
			    (size_t)hp->ssm_dt_rank * hp->ssm_d_state * hp->ssm_head_v + ple);
	}
	/* qwen4exp's sparse-attention layers keep every position's raw indexer key */
	return 4 * stride * (hp->n_head_kv * ((size_t)hp->head_dim + hp->head_dim_v) +
			     (m->layers[l].q4x.compress_ratio ? hp->q4x.idx_dim : 0));
}

/* ---- the device's share ----------------------------------------------------------- */

struct budget {
	uint64_t left;
	uint64_t left0; /* what was left for the expert cache */
	int full; /* the device refused an allocation the budget allowed */
};

/* qwen4exp's own ops of layer M, on be. */
static int q4x_supported(struct strata_backend *be, const struct strata_layer *M)
{
	uint32_t ops[8], n = 0;

	ops[n++] = STRATA_OP_HC_PRE;
	ops[n++] = STRATA_OP_HC_POST;
	ops[n++] = STRATA_OP_SCALE_SILU;
	if (M->recurrent)
		ops[n++] = STRATA_OP_DELTANET_TILED;
	if (M->q4x.compress_ratio) {
		ops[n++] = STRATA_OP_QSA_SELECT;
		ops[n++] = STRATA_OP_ATTN_SPARSE;
	}
	if (M->q4x.ple) {
		ops[n++] = STRATA_OP_PLE_GATE;
		ops[n++] = STRATA_OP_CONV_SILU;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!strata_backend_supports(be, ops[i], STRATA_TYPE_F32))
			return 0;
	return 1;
}

/* Every op and weight type layer l needs, on be. */
static int layer_supported(struct strata_backend *be, const struct strata_model *m, uint32_t l,
			   struct pl_layer *L)
{
	static const uint32_t attn_ops[] = { STRATA_OP_RMS_NORM, STRATA_OP_ADD, STRATA_OP_ROPE,
					     STRATA_OP_ATTN, STRATA_OP_COPY, STRATA_OP_SIGMOID_MUL };
	static const uint32_t dn_ops[] = { STRATA_OP_RMS_NORM, STRATA_OP_ADD, STRATA_OP_COPY,
					   STRATA_OP_DELTANET };
	static const uint32_t moe_ops[] = { STRATA_OP_MOE_ROUTE, STRATA_OP_SWIGLU, STRATA_OP_FILL,
					    STRATA_OP_MOE_COMBINE, STRATA_OP_SIGMOID_MUL };
	const int rec = m->layers[l].recurrent, moe = m->layers[l].moe;
	const uint32_t *ops = rec ? dn_ops : attn_ops;
	const size_t n_ops = rec ? sizeof(dn_ops) / sizeof(*dn_ops)
				 : sizeof(attn_ops) / sizeof(*attn_ops);
	struct strata_tensor *v[N_DENSE];

	for (size_t i = 0; i < n_ops; i++)
		if (!strata_backend_supports(be, ops[i], STRATA_TYPE_F32))
			return 0;
	if (m->hp.arch == STRATA_ARCH_QWEN4EXP && !q4x_supported(be, &m->layers[l]))
		return 0;
	for (size_t i = 0; moe && i < sizeof(moe_ops) / sizeof(*moe_ops); i++)
		if (!strata_backend_supports(be, moe_ops[i], STRATA_TYPE_F32))
			return 0;
	if (!moe && !strata_backend_supports(be, STRATA_OP_SWIGLU, STRATA_TYPE_F32))
		return 0;
	dense_list(L, v);
	for (int i = 0; i < N_DENSE; i++)
		if (v[i]->buf && g_product[i] &&
		    !strata_backend_supports(be, STRATA_OP_MATMUL, v[i]->type))
			return 0;
	return 1;
}

/* Allocate within the budget; a refusal by the device ends placement quietly. */
static int alloc_in(struct strata_backend *be, struct budget *b, size_t bytes, uint32_t usage,
		    struct strata_buf *buf)
{
	int rc;

	if (b->full || bytes > b->left)
		return -ENOSPC;
	rc = strata_backend_buf_alloc(be, bytes, usage, buf);
	if (rc == -ENOMEM) {
		strata_warn("%s: the device refused %zu MiB with %" PRIu64 " MiB of the budget left: "
			    "what did not fit stays on the CPU", be->name, bytes >> 20,
			    b->left >> 20);
		b->full = 1;
		return -ENOSPC;
	}
	if (rc)
		return rc;
	b->left -= bytes;
	return 0;
}

/* Copy tensors v[0..n) into buf back to back (aligned), re-pointing them there. */
static int upload(struct strata_backend *be, struct strata_buf *buf, struct strata_tensor **v,
		  int n)
{
	size_t off = 0;
	int rc;

	for (int i = 0; i < n; i++) {
		const size_t bytes = t_bytes(v[i]);

		if (!v[i]->buf)
			continue;
		if ((rc = strata_backend_copy_in(be, buf, off, strata_tensor_data(v[i]), bytes,
						 NULL)))
			return rc;
		v[i]->buf = buf;
		v[i]->offset = off;
		off += align_up(bytes);
	}
	return 0;
}

static int place_layer(struct strata_ctx *c, struct budget *b, uint32_t l, uint64_t state)
{
	struct pl_layer *L = &c->L[l];
	struct strata_tensor *v[N_DENSE];
	int rc;

	if (!layer_supported(c->dev, c->m, l, L))
		return -ENOTSUP;
	if (L->dense_bytes + state > b->left || b->full)
		return -ENOSPC;
	if ((rc = alloc_in(c->dev, b, L->dense_bytes, STRATA_BUF_USE_WEIGHTS, &L->dense_buf)))
		return rc;
	dense_list(L, v);
	if ((rc = upload(c->dev, &L->dense_buf, v, N_DENSE)))
		return rc;
	b->left -= state;
	L->be = c->dev;
	c->st.dev_layers++;
	c->st.dev_weight_bytes += L->dense_bytes;
	c->st.host_weight_bytes -= L->dense_bytes;
	c->st.dev_state_bytes += state;
	return 0;
}

static int place_output(struct strata_ctx *c, struct budget *b)
{
	/* qwen4exp's head is its last mixer (hc_head) in place of the norm */
	const int q4x = c->m->hp.arch == STRATA_ARCH_QWEN4EXP;
	struct strata_tensor *v[4] = { &c->output, q4x ? &c->hc_head[0] : &c->output_norm,
				       &c->hc_head[1], &c->hc_head[2] };
	const int nv = q4x ? 4 : 2;
	size_t bytes = 0;
	int rc;

	for (int i = 0; i < nv; i++)
		bytes += align_up(t_bytes(v[i]));
	if (!strata_backend_supports(c->dev, STRATA_OP_RMS_NORM, STRATA_TYPE_F32) ||
	    !strata_backend_supports(c->dev, STRATA_OP_MATMUL, c->output.type) ||
	    (q4x && (!strata_backend_supports(c->dev, STRATA_OP_HC_PRE, STRATA_TYPE_F32) ||
		     !strata_backend_supports(c->dev, STRATA_OP_SCALE_SILU, STRATA_TYPE_F32) ||
		     !strata_backend_supports(c->dev, STRATA_OP_MATMUL, c->hc_head[1].type) ||
		     !strata_backend_supports(c->dev, STRATA_OP_MATMUL, c->hc_head[2].type))))
		return 0;
	if ((rc = alloc_in(c->dev, b, bytes, STRATA_BUF_USE_WEIGHTS, &c->out_buf)))
		return rc == -ENOSPC ? 0 : rc;
	if ((rc = upload(c->dev, &c->out_buf, v, nv)))
		return rc;
	c->out_be = c->dev;
	c->st.dev_output = 1;
	c->st.dev_weight_bytes += bytes;
	return 0;
}

static int place_device(struct strata_ctx *c, const struct strata_ctx_opts *o)
{
	const struct strata_hparams *hp = &c->m->hp;
	const uint32_t nl = hp->n_layer - hp->n_nextn;
	const uint32_t n_ctx = o->n_ctx ? o->n_ctx : 4096, n_seq = o->n_seq ? o->n_seq : 1;
	struct budget b = { .left = o->device_budget };
	int rc;

	c->dev = o->device;
	c->st.dev_work_bytes = strata_ws_bytes(c->m, c->max_batch, 1);
	c->st.dev_need_bytes = c->st.dev_work_bytes + c->L[0].dense_bytes +
			       (uint64_t)strata_layer_state_bytes(c->m, 0, n_ctx) * n_seq;
	if (c->st.dev_work_bytes > b.left)
		goto none;
	if ((rc = strata_ws_init(c, c->dev, &c->ws_dev))) {
		if (rc != -ENOMEM)
			return rc;
		goto none;
	}
	b.left -= c->st.dev_work_bytes;
	for (uint32_t l = 0; l < nl; l++) {
		uint64_t state = (uint64_t)strata_layer_state_bytes(c->m, l, n_ctx) * n_seq;

		rc = place_layer(c, &b, l, state);
		if (rc == -ENOSPC)
			break; /* the layers after it stay on the CPU too */
		if (rc && rc != -ENOTSUP)
			return rc;
		if (rc)
			c->st.dev_skipped++;
	}
	if (!c->st.dev_layers) {
		strata_ws_free(c->dev, &c->ws_dev);
		goto none;
	}
	if ((rc = place_output(c, &b)))
		return rc;
	b.left0 = b.left;
	if ((rc = strata_vcache_create(c, &o->vc, &b.left)))
		return rc;
	if (c->vc) {
		struct strata_vcache_stats vs;

		strata_vcache_stats(c, &vs);
		c->st.dev_experts = vs.slots < c->st.experts ? vs.slots : c->st.experts;
		c->st.dev_expert_bytes = b.left0 - b.left;
		c->st.dev_weight_bytes += c->st.dev_expert_bytes;
	}
	for (int i = 0; i < 3; i++)
		if ((rc = strata_backend_event_create(c->dev, &c->ev[i])))
			return rc;
	return 0;
none:
	c->dev = NULL;
	c->st.dev_work_bytes = 0;
	return 0;
}

/* ---- the CPU's weights in huge pages, Q8_0, Q4_K, Q6_K and IQ4_NL interleaved (CPU only) ---- */

#define RP_MAX 4096     /* tensors one context copies at most (else: the rest stay) */
#define RP_ROWS 2048    /* rows per grab of the counter (a multiple of 16) */
#define RP_MARGIN (512ull << 20) /* memory left to everything else */

struct rp_job {
	int n;
	struct strata_tensor *t[RP_MAX];
	struct strata_mat m[RP_MAX];  /* each as one matrix of all its rows */
	size_t off[RP_MAX];           /* where each goes in the arena */
	int64_t first[RP_MAX + 1];    /* prefix sums of their units of RP_ROWS rows */
	uint8_t *arena;
	_Atomic int64_t next;
};

/* t as one matrix of all its rows (experts stacked), when it can move: a
 * weight type of the kernels, in the mapping, rows contiguous. */
static int rp_mat(const struct strata_ctx *c, const struct strata_tensor *t, struct strata_mat *m)
{
	const int64_t n = t->n_dims > 2 ? t->ne[2] : 1;

	return t->buf == &c->host_map &&
	       !strata_mat_init(m, t->type, t->ne[1] * n, t->ne[0], strata_tensor_data(t)) &&
	       m->rows > 0 && t->nb[1] == m->row_bytes &&
	       (n == 1 || t->nb[2] == m->row_bytes * (size_t)t->ne[1]);
}

/* The whole pages of [p, p + n) out of the process: a read-only file
 * mapping's pages come back from the page cache if read again. */
static void rp_drop(const void *p, size_t n)
{
	const uintptr_t page = (uintptr_t)strata_page_size();
	uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), e = ((uintptr_t)p + n) & ~(page - 1);

	if (e > a)
		strata_vm_advise((void *)a, e - a, STRATA_VM_DONTNEED);
}

static void rp_task(void *arg, int ith, int nth)
{
	struct rp_job *j = arg;
	const int64_t total = j->first[j->n];
	int i = 0;

	(void)ith;
	(void)nth;
	for (int64_t u = atomic_fetch_add(&j->next, 1); u < total; u = atomic_fetch_add(&j->next, 1)) {
		const struct strata_mat *m;
		int64_t r0, r1;

		while (j->first[i + 1] <= u)
			i++;
		m = &j->m[i];
		r0 = (u - j->first[i]) * RP_ROWS;
		r1 = r0 + RP_ROWS < m->rows ? r0 + RP_ROWS : m->rows;
		if (strata_layout_r16(m->type) != STRATA_LAYOUT_ROWS)
			strata_mat_repack(m, r0 / 16, r1 / 16, j->arena + j->off[i]);
		else
			memcpy(j->arena + j->off[i] + (size_t)r0 * m->row_bytes,
			       (const uint8_t *)m->data + (size_t)r0 * m->row_bytes,
			       (size_t)(r1 - r0) * m->row_bytes);
		/* the loader paged the file in: drop what is copied as we go, so
		 * RSS holds the file or its copy, not both */
		rp_drop((const uint8_t *)m->data + (size_t)r0 * m->row_bytes,
			(size_t)(r1 - r0) * m->row_bytes);
	}
}

static void rp_add(struct strata_ctx *c, struct rp_job *j, struct strata_tensor *t, size_t *bytes)
{
	struct strata_mat *m = &j->m[j->n];

	/* the arena's flag says its Q8_0, Q4_K, Q6_K and IQ4_NL are interleaved: those that
	 * cannot be stay mapped */
	if (j->n == RP_MAX || !rp_mat(c, t, m) ||
	    (strata_layout_r16(m->type) != STRATA_LAYOUT_ROWS && !strata_mat_repackable(m)))
		return;
	j->t[j->n] = t;
	j->off[j->n] = *bytes;
	j->first[j->n + 1] = j->first[j->n] + (m->rows + RP_ROWS - 1) / RP_ROWS;
	*bytes += ((size_t)m->rows * m->row_bytes + 4095) & ~(size_t)4095;
	j->n++;
}

/* The CPU's products, unless they are the embedding rows too, or the
 * experts are streamed (their slots are read in the file's layout). */
static void rp_collect(struct strata_ctx *c, const struct strata_ctx_opts *o, struct rp_job *j,
		       size_t *bytes)
{
	const uint32_t nl = strata_ctx_layers(c->m);
	const int streamed = o->xs || (c->m->flags & STRATA_MODEL_STREAM_EXPERTS);

	for (uint32_t l = 0; l < nl; l++) {
		struct strata_tensor *v[N_DENSE];

		dense_list(&c->L[l], v);
		for (int i = 0; i < N_DENSE; i++)
			if (g_product[i])
				rp_add(c, j, v[i], bytes);
		for (int p = 0; p < 3 && !streamed; p++)
			rp_add(c, j, &c->L[l].xh[p], bytes);
	}
	if (c->output.buf == &c->host_map && c->output.offset != c->tok_embd.offset)
		rp_add(c, j, &c->output, bytes);
}

/*
 * Without a device, the CPU's products are copied at load into anonymous
 * memory in huge pages when RAM allows, Q8_0, Q4_K, Q6_K and IQ4_NL interleaved sixteen rows at a
 * time on the way (kernels.h: strata_mat_repack): decode streams them with
 * few TLB misses (a file mapping has 4 KiB pages), those as one sequential
 * stream per thread.  The same bytes and results.  The mapping's pages
 * behind them are dropped (the page cache keeps them while it can).
 */
static int place_repack(struct strata_ctx *c, const struct strata_ctx_opts *o)
{
	struct rp_job *j = calloc(1, sizeof(*j));
	const uint64_t t0 = strata_now_ns();
	unsigned long long avail;
	size_t bytes = 0;
	int nth;

	if (!j)
		return -ENOMEM;
	rp_collect(c, o, j, &bytes);
	avail = strata_mem_available();
	if (!j->n || bytes + RP_MARGIN > avail) {
		if (j->n)
			strata_info("weights stay in the file's mapping: copying %.0f MiB of them "
				    "needs that much more RAM, %.0f MiB is available",
				    bytes / 1048576.0, avail / 1048576.0);
		free(j);
		return 0;
	}
	j->arena = strata_vm_alloc(bytes);
	if (!j->arena) {
		strata_info("weights stay in the file's mapping: no %.0f MiB to copy them to",
			    bytes / 1048576.0);
		free(j);
		return 0;
	}
	strata_vm_advise(j->arena, bytes, STRATA_VM_HUGEPAGE);
	atomic_init(&j->next, 0);
	nth = c->pool ? strata_pool_size(c->pool) : 1;
	if (nth > 1)
		strata_pool_run_n(c->pool, rp_task, j, nth);
	else
		rp_task(j, 0, 1);
	c->rp_buf = (struct strata_buf){ .base = j->arena, .size = bytes,
					 .flags = STRATA_BUF_HOST | STRATA_BUF_R16 };
	c->st.host_repacked_bytes = 0;
	for (int i = 0; i < j->n; i++) {
		struct strata_tensor *t = j->t[i];

		/* the pages the units shared at their edges */
		rp_drop(j->m[i].data, (size_t)j->m[i].rows * j->m[i].row_bytes);
		t->buf = &c->rp_buf;
		t->offset = j->off[i];
		if (strata_layout_r16(j->m[i].type) != STRATA_LAYOUT_ROWS)
			c->st.host_repacked_bytes += j->m[i].rows * j->m[i].row_bytes;
	}
	c->st.host_copied_bytes = bytes;
	c->st.host_copy_s = (double)(strata_now_ns() - t0) / 1e9;
	/* the run summary's placement line reports it (strata_ctx_describe) */
	strata_debug("copied %d weight tensors (%.0f MiB, %.0f MiB of them interleaved) for "
		     "the CPU in %.2f s", j->n, bytes / 1048576.0,
		     c->st.host_repacked_bytes / 1048576.0, c->st.host_copy_s);
	free(j);
	return 0;
}

int strata_ctx_place(struct strata_ctx *c, const struct strata_ctx_opts *o)
{
	const struct strata_hparams *hp = &c->m->hp;
	const uint32_t nl = strata_ctx_layers(c->m);
	const void *data;
	uint64_t data_size;
	int rc;

	/* Every weight is a view of the mapping's data section (all shards' in a row). */
	strata_gguf_data_span(c->m->gguf, &data, &data_size);
	c->host_map = (struct strata_buf){
		.base = (void *)data,
		.size = data_size,
		.flags = STRATA_BUF_HOST,
	};
	c->tok_embd = h_mat(c, &c->m->tok_embd);
	c->output_norm = c->output_norm_h = h_f32(c, c->m->output_norm, hp->n_embd, 1);
	c->output = c->output_h = h_mat(c, &c->m->output);
	c->out_be = c->cpu;
	c->st.host_weight_bytes = t_bytes(&c->tok_embd) + t_bytes(&c->output);
	c->L = calloc(nl ? nl : 1, sizeof(*c->L));
	if (!c->L)
		return -ENOMEM;
	for (uint32_t l = 0; l < nl; l++) {
		c->L[l].dev_slot = malloc((hp->n_expert ? hp->n_expert : 1) * sizeof(uint32_t));
		if (!c->L[l].dev_slot)
			return -ENOMEM;
		for (uint32_t e = 0; e < hp->n_expert; e++)
			c->L[l].dev_slot[e] = CTX_NONE;
		host_layer(c, l);
	}
	if (hp->arch == STRATA_ARCH_QWEN4EXP) {
		h_hc(c, &c->m->hc_head, c->hc_head);
		c->ple_table = h_mat(c, &c->m->ple_table);
		c->st.host_weight_bytes += t_bytes(&c->hc_head[1]) + t_bytes(&c->hc_head[2]);
	}
	if (o->device && (rc = place_device(c, o)))
		return rc;
	return c->dev || o->no_repack ? 0 : place_repack(c, o);
}

void strata_ctx_unplace(struct strata_ctx *c)
{
	const uint32_t nl = strata_ctx_layers(c->m);

	if (c->L)
		strata_vcache_free(c);
	for (uint32_t l = 0; c->L && l < nl; l++) {
		if (c->dev)
			strata_backend_buf_free(c->dev, &c->L[l].dense_buf);
		free(c->L[l].dev_slot);
	}
	if (c->dev)
		strata_backend_buf_free(c->dev, &c->out_buf);
	if (c->rp_buf.base)
		strata_vm_free(c->rp_buf.base, c->rp_buf.size);
	c->rp_buf.base = NULL;
	free(c->L);
	c->L = NULL;
}
