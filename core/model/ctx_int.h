/*
 * ctx_int.h - private to core/model: a context's placement and workspaces
 * (ctx.c, place.c), a sequence's state (seq.c), and what the layer loop
 * (forward.c, moe.c) reads of them.
 */
#ifndef STRATA_CTX_INT_H
#define STRATA_CTX_INT_H

#include "backend/backend.h"
#include "model.h"
#include "ple/ple.h"

#define CTX_NONE UINT32_MAX
#define CTX_LOGIT_ROWS 64 /* rows of logits a device computes per copy back */

/* Return from the calling function when an op or a copy failed (it was logged). */
#define RUN(expr)                      \
	do {                           \
		int rc_ = (expr);      \
		if (rc_)               \
			return rc_;    \
	} while (0)

/* A tensor is absent when it has no buffer (optional weights). */
static inline int t_has(const struct strata_tensor *t)
{
	return t->buf != NULL;
}

/*
 * One layer's weights as tensors on the backend that runs its dense part
 * (`be`): the mixer, the norms, the router, the shared expert, the dense
 * FFN.  Routed experts live on the CPU (xh: the mapping's 3-D tensors) and,
 * while the device's expert cache holds them, in its slots (dev_slot).
 */
struct pl_layer {
	struct strata_backend *be;
	struct strata_tensor attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, ffn_norm;
	struct strata_tensor w_gate, w_up, w_down;
	struct strata_tensor gate_inp, exp_probs_b, gate_shexp, up_shexp, down_shexp,
		gate_inp_shexp;
	struct strata_tensor dn_wqkv, dn_wz, dn_wqkvz, dn_wba, dn_conv, dn_dt_bias, dn_a,
		dn_norm, dn_wout;
	/* qwen4exp: hyper-connections (norm, down, up, inject), indexer, DeltaNet b/a, PLE */
	struct strata_tensor hc_attn[4], hc_ffn[4];
	struct strata_tensor idx_q, idx_k, idx_q_norm, idx_k_norm, dn_beta, dn_alpha;
	struct strata_tensor ple_key, ple_value, ple_nk, ple_nq, ple_nc, ple_conv;
	struct strata_tensor mtp_hc[4], mtp_enorm, mtp_hnorm, mtp_eh; /* its MTP block's own */
	struct strata_tensor mtp_shnorm; /* glm4moe, qwen3next: the block's head norm */
	struct strata_tensor xh[3];  /* gate, up, down experts in the mapping [cols, rows, n] */
	uint32_t *dev_slot;          /* [n_expert]: its expert cache slot (vcache.h) or CTX_NONE */
	struct strata_buf dense_buf; /* the device's copy of the dense part */
	size_t dense_bytes, state_bytes; /* per layer, for placement and the summary */
};

/* One backend's activations for batches of up to B tokens (unused ones: no buffer). */
struct ws {
	struct strata_buf buf;
	struct strata_tensor x, xn, out, xin, q, qg, kb, vb, att, hb, hb2;
	struct strata_tensor logits, ids, w, tok, tokw, g, u, d, gs, us, sg;
	struct strata_tensor qkv, qkvz, z, ba, o;
	struct strata_tensor lg;     /* output logits [n_vocab, CTX_LOGIT_ROWS] (devices) */
	struct strata_tensor inv_freq; /* rope's inverse frequencies [n_rot / 2] */
	/*
	 * qwen4exp: the residual streams [n_embd * hc, B] and the mixers' normed
	 * copy, low rank, gates and injection weights; the indexer's queries,
	 * keys and chosen cells; the PLE rows, key, value, query and gated value.
	 */
	struct strata_tensor res, hxn, hlo, hgate, hinj, iq, ik, sel, pe, pk, pv, pq, pg;
	struct strata_tensor cat;    /* glm4moe, qwen3next: the MTP block's [enorm; hnorm] */
};

struct strata_ctx {
	const struct strata_model *m;
	struct strata_pool *pool;
	struct strata_backend *cpu;  /* owned */
	struct strata_backend *dev;  /* borrowed, or NULL */
	struct strata_xstore *xs;
	struct strata_vcache *vc;    /* the device's expert cache (vcache.h), or NULL */
	uint32_t *run_slot;          /* [n_expert] a layer's plan: the slot each runs from, or CTX_NONE */
	uint32_t max_batch;
	struct strata_buf host_map;  /* the mapping's data section, wrapped */
	struct strata_buf rp_buf;    /* Q8_0 products interleaved at load (place.c), or none */
	struct strata_tensor tok_embd, output_norm_h, output_h; /* host */
	struct pl_layer *L;          /* [n_layer - n_nextn] */
	struct strata_backend *out_be;
	struct strata_tensor output_norm, output;   /* on out_be */
	struct strata_buf out_buf;   /* the device's copy of the output head */
	struct ws ws_cpu, ws_dev;
	/* host scratch of the MoE grouping */
	uint32_t *count, *start, *order;
	int32_t *h_ids, *h_tok;
	float *h_w, *h_tokw, *inv_freq;
	struct strata_tensor *xw;    /* [3 * n_expert] expert weight views of one layer */
	struct strata_buf xs_buf;    /* the streamed experts' slots, a CPU buffer (with xs) */
	struct strata_mat *xmats;    /* [3 * n_expert] xstore's answer */
	struct strata_matmul_item *items; /* [2 * n_expert + 3] */
	struct strata_tensor *xt;    /* [4 * n_expert] per active expert: rows, g, u, d views */
	uint8_t *ready;              /* [n_expert] per active expert: streamed and resident now */
	void *ev[3];                 /* device events: xn out, route out, expert output in */
	struct strata_placement_stats st;
	/* qwen4exp */
	struct strata_tensor hc_head[4];   /* the output mixer: norm, down, up, (no inject) */
	struct strata_tensor ple_table;    /* per_layer_token_embd (host) */
	struct strata_ple_hash ple_hash;
	int32_t *ple_ids;                  /* [16 * max_batch] a batch's row ids (mapping path) */
	/* the rows through a reader (strata_ctx_set_ple): ids, decoded rows, its chunk */
	struct strata_ple_reader *ple_rd;  /* borrowed, or NULL: GET_ROWS from the mapping */
	struct strata_ple_chunk *ple_chunk;
	uint64_t *ple_rows;                /* [16 * max_batch] */
	float *ple_out;                    /* [16 * max_batch * row_len] */
	struct strata_buf ple_out_buf;     /* ple_out as a host buffer */
	int ple_started;                   /* the chunk is in flight: wait before anything else */
	double ple_wait_ms;                /* summed blocked time of the waits (strata_ctx_ple_waited) */
	uint64_t ple_chunks;
	uint64_t n_forward;                /* strata_ctx_forwards */
	struct strata_backend *res_at;     /* qwen4exp: where the last pass left its residual */
	uint32_t res_rows;                 /* and how many rows it holds (the MTP block reads them) */
	int res_mtp;                       /* the MTP block left them (not the trunk) */
};

struct seq_layer {
	struct strata_backend *be;   /* where its layer runs */
	struct strata_buf buf;       /* its state: K and V, or conv and ssm */
	struct strata_tensor k, v;   /* attention: caches in the backend's layout */
	struct strata_tensor conv, ssm; /* DeltaNet */
	struct strata_tensor idx;       /* qwen4exp: raw indexer keys [idx_dim, ctx] */
	struct strata_tensor ple_hist;  /* qwen4exp's PLE layer: the conv's last inputs */
};

struct strata_seq {
	struct strata_ctx *c;
	const struct strata_model *m;
	uint32_t n_ctx, max_batch, pos;
	uint32_t stride;             /* cache positions: n_ctx rounded up to 16 */
	uint32_t n_dn;               /* DeltaNet layers */
	struct seq_layer *L;         /* [n_layer - n_nextn] */
	size_t state_floats;         /* conv + ssm floats over all DeltaNet layers */
	struct strata_seq_snapshot *snaps; /* bound snapshots, a list */
	struct strata_ple_hist ple;  /* qwen4exp: the two tokens before pos */
	/* a verify window's log, to keep a prefix without feeding it again (wlog.c) */
	float *wlog;                 /* per DeltaNet layer: wlog_cap rows of each op input */
	int32_t *wlog_tok;           /* [wlog_cap] the pass's tokens */
	uint32_t wlog_cap, wlog_n;   /* rows it holds; rows the last pass logged (0: none) */
	uint32_t wlog_pos;           /* where that pass started */
	int wlog_armed;              /* the next pass logs */
};

/*
 * The log's part for layer l, rows [0, n): t[0] the DeltaNet conv input,
 * t[1] z, t[2] [b, a], t[3] the PLE conv input (its layer only, else empty).
 * The passes copy their rows in while s->wlog_armed.
 */
void strata_wlog_views(struct strata_seq *s, uint32_t l, uint32_t n, struct strata_buf *b,
		       struct strata_tensor t[4]);
/*
 * While the log is armed, layer l's op inputs of the pass's n rows into it
 * (in: its t[] slots; NULL ones are left alone): the ops read them and never
 * write them, so they are logged as they go in.  0 or the copy's -errno.
 */
int strata_wlog_put(struct strata_seq *s, struct strata_backend *be, uint32_t l, uint32_t n,
		    const struct strata_tensor *const in[4]);
/* Around a pass of n tokens: the tokens in; then, when it succeeded (rc 0), the rows count. */
void strata_wlog_open(struct strata_seq *s, const int32_t *tokens, uint32_t n);
void strata_wlog_close(struct strata_seq *s, uint32_t n, int rc);
/* Layer l's ops again on the log's n rows t (forward.c, forward_q4x.c). */
int strata_dn_replay(struct strata_seq *s, uint32_t l, struct strata_tensor t[4], uint32_t n);
int strata_q4x_replay(struct strata_seq *s, uint32_t l, struct strata_tensor t[4], uint32_t n);

/* Rows from position pos on are about to be written: stale the snapshots they break. */
void strata_seq_note_write(struct strata_seq *s, uint32_t pos);

/*
 * Layers a context places and a sequence keeps state for: the trunk, and
 * the MTP (nextn) layers, which run on their own (strata_mtp), on the CPU.
 */
static inline uint32_t strata_ctx_layers(const struct strata_model *m)
{
	return m->hp.n_layer;
}

/* The workspace of backend be (the CPU's or the device's). */
static inline struct ws *strata_ctx_ws(struct strata_ctx *c, const struct strata_backend *be)
{
	return be == c->cpu ? &c->ws_cpu : &c->ws_dev;
}

/* ---- ops the layer loops issue ----------------------------------------------------- */

static inline int ctx_norm(struct strata_backend *be, struct strata_tensor *dst,
			   const struct strata_tensor *x, const struct strata_tensor *w, float eps)
{
	struct strata_op op = { .code = STRATA_OP_RMS_NORM, .dst = dst, .src = { x, w },
				.p.norm.eps = eps };

	return strata_backend_run(be, &op);
}

static inline int ctx_matmul(struct strata_backend *be, const struct strata_matmul_item *it,
			     uint32_t n)
{
	struct strata_op op = { .code = STRATA_OP_MATMUL, .p.mm = { .items = it, .n_items = n } };

	return strata_backend_run(be, &op);
}

/*
 * Layer l's DeltaNet op (code: DELTANET, or qwen4exp's DELTANET_TILED): the
 * conv input qkv, z and [b, a] of its tokens into o, its states in s.
 */
static inline struct strata_op ctx_dn_op(struct strata_ctx *c, struct strata_seq *s, uint32_t l,
					 enum strata_op_code code, struct strata_tensor *qkv,
					 struct strata_tensor *z, struct strata_tensor *ba,
					 struct strata_tensor *o)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct pl_layer *L = &c->L[l];
	struct strata_op dn = {
		.code = code, .dst = o,
		.src = { qkv, z, ba, &s->L[l].conv, &s->L[l].ssm, &L->dn_conv, &L->dn_dt_bias,
			 &L->dn_a },
		.p.dn = { .norm = &L->dn_norm, .n_group = hp->ssm_n_group,
			  .d_state = hp->ssm_d_state, .n_head_v = hp->ssm_dt_rank,
			  .d_head_v = hp->ssm_head_v, .d_conv = hp->ssm_d_conv, .eps = hp->rms_eps },
	};

	return dn;
}

/* Rotate t [head_dim, heads, n] in place, token i at position pos + i. */
static inline int ctx_rope(struct strata_backend *be, struct strata_tensor *t,
			   const struct strata_hparams *hp, const struct strata_tensor *inv_freq,
			   uint32_t pos)
{
	struct strata_op op = {
		.code = STRATA_OP_ROPE, .dst = t, .src = { t, inv_freq },
		.p.rope = { .pos = pos, .n_rot = hp->n_rot,
			    .mode = hp->rope_type == STRATA_ROPE_NEOX ? STRATA_ROPE_MODE_NEOX
								      : STRATA_ROPE_MODE_NORM },
	};

	return strata_backend_run(be, &op);
}

/* ---- tensors ------------------------------------------------------------------- */

/* A contiguous F32 tensor [ne0, ne1] at buf + off. */
struct strata_tensor strata_t_f32(struct strata_buf *buf, size_t off, int64_t ne0, int64_t ne1);
/* The same with type I32. */
struct strata_tensor strata_t_i32(struct strata_buf *buf, size_t off, int64_t ne0, int64_t ne1);
/* Values [i0, i0 + n) of a 1-D tensor [ne0, 1]. */
struct strata_tensor strata_t_span(const struct strata_tensor *t, int64_t i0, int64_t n);
/* Columns [c0, c0 + n) of a 2-D tensor (a view: rows c0.. of the batch). */
struct strata_tensor strata_t_cols(const struct strata_tensor *t, int64_t c0, int64_t n);
/* A 3-D view [ne0, ne1, n] of a 2-D F32 tensor's first n rows: row = ne0 * ne1 values. */
struct strata_tensor strata_t_heads(const struct strata_tensor *t, int64_t ne0, int64_t ne1,
				    int64_t n);
/* A view [ne0, heads, n] of every row's heads, `skip` bytes into heads of `hstride` floats. */
static inline struct strata_tensor ctx_heads_of(const struct strata_tensor *t, int64_t ne0,
						int64_t heads, int64_t n, size_t hstride,
						size_t skip)
{
	struct strata_tensor v = strata_t_heads(t, ne0, heads, n);

	v.nb[1] = hstride * sizeof(float);
	v.offset += skip;
	return v;
}
/* Expert e of a 3-D expert tensor, as a 2-D matrix. */
struct strata_tensor strata_t_expert(const struct strata_tensor *t, uint32_t e);

/* ---- context internals ---------------------------------------------------------- */

/* Placement (place.c): fill c->L[*].be, the device copies and c->st.  0 or -errno. */
int strata_ctx_place(struct strata_ctx *c, const struct strata_ctx_opts *o);
/* Free what placement allocated on the device. */
void strata_ctx_unplace(struct strata_ctx *c);
/* Bytes of one layer's state for n_ctx positions (KV, or DeltaNet states). */
size_t strata_layer_state_bytes(const struct strata_model *m, uint32_t l, uint32_t n_ctx);
/* Positions a KV cache holds for n_ctx: whole tiles (backend.h, STRATA_OP_ATTN). */
static inline uint32_t strata_kv_stride(uint32_t n_ctx)
{
	return (n_ctx + STRATA_ATTN_CTX_ALIGN - 1) & ~(STRATA_ATTN_CTX_ALIGN - 1);
}
/* Bytes of a workspace for batches of b tokens (device: with the logits rows). */
size_t strata_ws_bytes(const struct strata_model *m, uint32_t b, int device);
/* Allocate and lay out a workspace on be.  0 or -ENOMEM. */
int strata_ws_init(struct strata_ctx *c, struct strata_backend *be, struct ws *w);
void strata_ws_free(struct strata_backend *be, struct ws *w);

/* qwen4exp's forward pass (forward_q4x.c), as strata_forward's. */
int strata_q4x_forward(struct strata_seq *s, const int32_t *tokens, uint32_t n, float *logits,
		       int all_logits);
/* qwen4exp's PLE conv history: (K - 1) * dilation positions. */
static inline uint32_t strata_q4x_ple_hist_len(const struct strata_hparams *hp)
{
	return (hp->q4x.ple_conv_k - 1) * hp->q4x.ple_ngram;
}

/*
 * Move the first n rows of the workspace tensor at `field` (the same one in
 * both workspaces, e.g. offsetof(struct ws, x)) to backend `to`; *at says
 * where they are and is updated.  A move to the CPU blocks (ordered after
 * the device's last op).  0 or the copy's -errno.
 */
int strata_ctx_move_rows(struct strata_ctx *c, struct strata_backend **at,
			 struct strata_backend *to, size_t field, uint32_t n);
/*
 * Logits of `rows` normed rows xn (on be) into host memory out, n_vocab
 * floats a row: straight into out on the CPU, through the device's logits
 * rows and copies back on a device.
 */
int strata_ctx_logits(struct strata_ctx *c, struct strata_backend *be,
		      const struct strata_tensor *output, const struct strata_tensor *xn,
		      uint32_t rows, float *out);

/* The MoE FFN of layer l (moe.c): out = experts(xn); x untouched.  0 or -errno. */
int strata_moe_block(struct strata_ctx *c, uint32_t l, uint32_t n);

/* Issue one op on be (logging through the backend on failure). */
int strata_op1(struct strata_backend *be, uint32_t code, struct strata_tensor *dst,
	       const struct strata_tensor *a, const struct strata_tensor *b);

#endif
