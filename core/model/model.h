/*
 * model.h - a loaded model: hyperparameters and weights, read in place from
 * the GGUF memory map, and the sequence state that a forward pass extends.
 *
 * strata_model_load() checks the architecture, every hyperparameter and every
 * tensor's type and shape against the metadata before any compute, so the
 * forward pass never has to.
 */
#ifndef STRATA_MODEL_H
#define STRATA_MODEL_H

#include <stdint.h>

#include "cpu/kernels.h"

struct strata_gguf;

enum strata_arch {
	STRATA_ARCH_LLAMA = 1,
	STRATA_ARCH_QWEN3MOE = 2,
	STRATA_ARCH_GLM4MOE = 3,
	STRATA_ARCH_QWEN3NEXT = 4,
	STRATA_ARCH_QWEN4EXP = 5,
};

/* How router logits become expert weights (GGUF expert_gating_func). */
enum strata_gating {
	STRATA_GATING_SOFTMAX = 1,
	STRATA_GATING_SIGMOID = 2,
};

/*
 * A GGUF 3-D expert tensor [cols, rows, n]: n matrices of rows x cols back to
 * back; expert e's matrix is `m` with data advanced by e * stride bytes.
 */
struct strata_experts {
	struct strata_mat m; /* expert 0 */
	size_t stride;       /* bytes between experts */
	uint32_t n;
	uint64_t file_off;   /* where expert 0 starts in its file... */
	uint32_t file;       /* ...the model's file `file` (strata_gguf_file_path; 0 unless split) */
};

static inline struct strata_mat strata_expert(const struct strata_experts *x, uint32_t e)
{
	struct strata_mat m = x->m;

	m.data = (const char *)x->m.data + (size_t)e * x->stride;
	return m;
}



enum strata_rope_type {
	STRATA_ROPE_NORM = 0, /* rotate adjacent pairs (llama's GGUF layout) */
	STRATA_ROPE_NEOX = 2, /* rotate halves */
};

/*
 * A Gated DeltaNet (linear attention) mixer, qwen3next.  With nk = ssm
 * group_count key heads of dk = state_size, nv = time_step_rank value heads of
 * dv = inner_size / nv, and conv_ch = 2*nk*dk + nv*dv channels.
 */
struct strata_deltanet {
	struct strata_mat wqkv;  /* conv_ch x n_embd: q, k, v of every head (attn_qkv) */
	struct strata_mat wz;    /* nv*dv x n_embd: the output gate z (attn_gate) */
	/*
	 * Early conversions fuse both into ssm_in instead: per key head
	 * [q (dk), k (dk), v (r*dv), z (r*dv)] with r = nv/nk.  Then fused = 1,
	 * wqkv and wz are unused and the projection is unpacked after the matmul.
	 */
	int fused;
	struct strata_mat wqkvz; /* (conv_ch + nv*dv) x n_embd (ssm_in) */
	struct strata_mat wba;   /* 2*nv x n_embd: per key head, its value heads' b then a */
	const float *conv;       /* [conv_ch][d_conv] causal depthwise conv kernel */
	const float *dt_bias;    /* [nv] */
	const float *a;          /* [nv] -exp(A_log): the decay's rate */
	const float *norm;       /* [dv] gated RMSNorm weight */
	struct strata_mat wout;  /* n_embd x nv*dv (ssm_out) */
};

/*
 * A hyper-connection module (qwen4exp): the hc residual streams of a token
 * ([n_embd * hc]) normed per stream (norm: [n_embd * hc], stream c's
 * weights at c * n_embd), gated through a low-rank pair (down: lr x
 * n_embd*hc, up: n_embd*hc x lr) and averaged into the block's input;
 * inject (hc x n_embd*hc) weighs the block's output per stream.
 */
struct strata_hc {
	const float *norm;
	struct strata_mat down, up, inject;
};

/* qwen4exp's per-layer extras: hyper-connections, the PLE fusion, the QSA indexer. */
struct strata_q4x_layer {
	struct strata_hc hc_attn, hc_ffn;
	uint32_t compress_ratio;   /* QSA block size; 0: dense attention */
	struct strata_mat idx_q;   /* indexer queries: heads*d x n_embd */
	struct strata_mat idx_k;   /* indexer key: d x n_embd */
	const float *idx_q_norm, *idx_k_norm; /* [d] */
	struct strata_mat beta, alpha;        /* DeltaNet b and a: nv x n_embd each */
	int ple;                   /* the PLE fusion runs before this layer's mixer */
	struct strata_mat ple_key;            /* n_embd*hc x n_embd */
	struct strata_mat ple_value;          /* n_embd x n_embd */
	const float *ple_norm_key, *ple_norm_query, *ple_norm_conv; /* [n_embd * hc] */
	const float *ple_conv;                /* [n_embd*hc][kernel] */
};

/* The multi-token-prediction (nextn) layer of glm4moe, qwen3next, qwen4exp: kept for MTP. */
struct strata_nextn {
	struct strata_mat eh_proj;     /* n_embd x 2*n_embd */
	const float *enorm, *hnorm;    /* [n_embd] (qwen4exp's hnorm: [n_embd * hc]) */
	const float *shared_head_norm; /* [n_embd] */
	struct strata_hc hc_head;      /* qwen4exp: the block's own output mixer */
};

struct strata_layer {
	int recurrent;           /* 1: DeltaNet mixer (dn) instead of attention */
	int attn_gated;          /* wq rows are [q, gate] per head; output *= sigmoid(gate) */
	struct strata_deltanet dn;
	const float *attn_norm;  /* [n_embd] */
	struct strata_mat wq;    /* n_head*head_dim x n_embd */
	struct strata_mat wk;    /* n_head_kv*head_dim x n_embd */
	struct strata_mat wv;    /* n_head_kv*head_dim_v x n_embd */
	struct strata_mat wo;    /* n_embd x n_head*head_dim_v */
	const float *bq, *bk, *bv;       /* optional biases (glm4moe) */
	const float *q_norm, *k_norm;    /* optional per-head RMSNorm [head_dim] */
	const float *ffn_norm;   /* [n_embd] (glm4moe: post_attention_norm) */
	int moe;                 /* 1: routed experts below; 0: dense FFN */
	/* dense FFN */
	struct strata_mat w_gate; /* n_ff x n_embd */
	struct strata_mat w_up;   /* n_ff x n_embd */
	struct strata_mat w_down; /* n_embd x n_ff */
	/* mixture of experts */
	struct strata_mat gate_inp;          /* n_expert x n_embd (router) */
	const float *exp_probs_b;            /* [n_expert] selection bias or NULL */
	struct strata_experts gate_exps;     /* n_expert x (n_ff_exp x n_embd) */
	struct strata_experts up_exps;
	struct strata_experts down_exps;     /* n_expert x (n_embd x n_ff_exp) */
	int has_shexp;                       /* shared expert present */
	struct strata_mat gate_shexp, up_shexp, down_shexp;
	int has_shexp_gate;                  /* shared expert scaled by sigmoid(gate_inp_shexp.x) */
	struct strata_mat gate_inp_shexp;    /* 1 x n_embd */
	struct strata_nextn nextn;           /* only in nextn layers */
	struct strata_q4x_layer q4x;         /* qwen4exp only */
};

/* qwen4exp's hyperparameters (model->hp.q4x). */
struct strata_q4x_hparams {
	uint32_t hc;             /* hyper_connection.count: residual streams */
	uint32_t hc_lr;          /* hyper_connection.low_rank */
	uint32_t idx_heads;      /* attention.indexer.head_count */
	uint32_t idx_dim;        /* attention.indexer.key_length */
	uint32_t idx_top_k;      /* attention.indexer.top_k */
	uint32_t rope_sections[4];
	/* PLE (ple_layer < n_layer when present) */
	uint32_t ple_layer;
	uint32_t ple_ngram;      /* ple.ngram_size: 3 */
	uint32_t ple_heads;      /* rows per token: (ngram - 1) * heads_per_ngram = 16 */
	uint32_t ple_conv_k;     /* ple.conv_kernel */
	uint32_t ple_head_dim;   /* embedding_length_per_layer_input: values per row */
	uint32_t ple_eos;        /* ple.eos_token_id: cuts the n-gram context */
};

struct strata_hparams {
	enum strata_arch arch;
	char arch_name[32];
	uint32_t n_vocab;
	uint32_t n_embd;
	uint32_t n_layer;
	uint32_t n_head;
	uint32_t n_head_kv;
	uint32_t head_dim;   /* key length */
	uint32_t head_dim_v; /* value length */
	uint32_t n_ff;
	uint32_t n_ctx_train;
	uint32_t n_rot;      /* rotary dimensions (<= head_dim) */
	enum strata_rope_type rope_type;
	float rope_base;
	float rope_freq_scale; /* 1 / linear scaling factor */
	float rms_eps;
	/* mixture of experts (0 when dense) */
	uint32_t n_expert;
	uint32_t n_expert_used;
	uint32_t n_ff_exp;       /* expert FFN width */
	uint32_t n_ff_shexp;     /* shared expert FFN width */
	uint32_t n_dense_lead;   /* leading dense layers (glm4moe) */
	uint32_t n_nextn;        /* trailing MTP layers, skipped by the forward pass */
	enum strata_gating gating;
	int expert_weights_norm; /* renormalise the top-k weights */
	float expert_weights_scale;
	/* Gated DeltaNet (qwen3next; 0 otherwise) */
	uint32_t ssm_d_conv;     /* conv kernel length */
	uint32_t ssm_d_state;    /* dk: key head size */
	uint32_t ssm_n_group;    /* nk: key heads */
	uint32_t ssm_dt_rank;    /* nv: value heads (a multiple of nk) */
	uint32_t ssm_d_inner;    /* nv * dv */
	uint32_t ssm_head_v;     /* dv */
	uint32_t full_attn_interval; /* layer i attends fully when (i+1) % interval == 0 */
	struct strata_q4x_hparams q4x; /* qwen4exp */
};

struct strata_model {
	struct strata_gguf *gguf; /* owned */
	struct strata_hparams hp;
	struct strata_mat tok_embd;   /* n_vocab x n_embd */
	const float *output_norm;     /* [n_embd] */
	struct strata_mat output;     /* n_vocab x n_embd (tok_embd when tied) */
	const float *rope_freqs;      /* [n_rot/2] or NULL (llama-3 style factors) */
	struct strata_hc hc_head;     /* qwen4exp: the output mixer (no inject), in place of output_norm */
	struct strata_mat ple_table;  /* qwen4exp: per_layer_token_embd, rows of ple_head_dim */
	struct strata_layer *layers;  /* [n_layer] */
	uint64_t n_params;
	uint64_t weight_bytes;
	unsigned flags;               /* the STRATA_MODEL_* it was loaded with */
};

/*
 * Open `path` and load its weights.  Returns 0 and *out (released with
 * strata_model_free), or a negative errno after one error naming the file:
 * -ENOTSUP for an unsupported architecture or weight type, -EINVAL for
 * missing/ill-shaped tensors or bad hyperparameters.
 */
int strata_model_load(const char *path, struct strata_model **out);

/* strata_model_load() flags */
#define STRATA_MODEL_STREAM_EXPERTS 1u /* experts are read on use (xstore.h): never page them in */

/* strata_model_load() with STRATA_MODEL_* flags. */
int strata_model_load_ex(const char *path, unsigned flags, struct strata_model **out);
void strata_model_free(struct strata_model *m);

/*
 * ---- running a model: a context, then sequences ---------------------------
 *
 * A context (strata_ctx) is what a loaded model needs to compute: its
 * backends (the CPU, and a device when one is given), where each weight
 * lives (placement, decided once here), and each backend's workspace for
 * the activations of one forward batch.  A sequence (strata_seq) is one
 * token stream's state: its position, the KV cache of the attention layers
 * and the conv and recurrent states of the DeltaNet layers, each in a
 * buffer of the backend that runs its layer.  One context serves any number
 * of sequences, one forward pass at a time.
 */
struct strata_pool;
struct strata_backend;
struct strata_xstore;
struct strata_ctx;

/*
 * The device's expert cache (model/vcache.h).  Zeroes: as many slots as the
 * budget left holds, filled by first use, no pcie_frac, no adaptive swaps,
 * no lending.
 */
struct strata_vcache_opts {
	uint32_t slots;        /* experts the cache holds; 0 = what the budget left allows */
	uint64_t reserve;      /* device bytes to leave free: fewer slots when less is left */
	double pcie_frac;      /* share of a step's misses run on the device over the link */
	uint32_t adapt_every;  /* tokens between adaptive rounds; 0 = never */
	uint32_t adapt_swaps;  /* experts replaced per round at most */
	uint32_t lend_min;     /* passes of at least this many tokens borrow slots; 0 = never */
	double lend_frac;      /* share of the slots such a pass may borrow */
	uint32_t lend_keep;    /* slots never lent */
	const char *profile;   /* routing profile to fill from at load (borrowed), or NULL */
	const char *profile_save; /* where to write the routes counted, at free, or NULL */
	uint32_t chunk_slots;  /* slots per device buffer; 0 = about 256 MiB's worth */
};

/* Its counters since the context was made. */
struct strata_vcache_stats {
	uint64_t hits, misses;   /* routed (token, expert) pairs of the device's layers */
	uint64_t fills;          /* misses copied into a free slot (first use), then resident */
	uint64_t pcie;           /* misses run on the device through a transfer slot */
	uint64_t lent;           /* misses streamed into borrowed slots by batched passes */
	uint64_t swaps;          /* residents replaced by adaptive rounds */
	uint64_t lends, refills; /* passes that borrowed slots; experts copied back after */
	uint64_t bytes_in;       /* expert bytes copied to the device while running */
	uint64_t refill_bytes;   /* of them refills */
	double refill_ms;        /* time the refills took, their sync included */
	uint32_t slots, transfer; /* cache slots and transfer slots */
	uint32_t used, lent_now; /* slots holding an expert; borrowed now */
};

struct strata_ctx_opts {
	struct strata_pool *pool;      /* the CPU backend's threads (borrowed); NULL: the caller's */
	uint32_t max_batch;            /* tokens one strata_forward() takes at most; 0 = 512 */
	/*
	 * A device (borrowed; NULL: everything on the CPU).  Placement puts on
	 * it, while device_budget bytes allow and the device supports their
	 * ops and weight types: its workspace, then layer by layer the dense
	 * weights with the layer's state for n_seq sequences of n_ctx
	 * positions, then the output head, then experts of those layers.
	 */
	struct strata_backend *device;
	uint64_t device_budget;
	uint32_t n_ctx;                /* positions of the sequences the device must hold (0 = 4096) */
	uint32_t n_seq;                /* sequences whose state lives on the device (0 = 1) */
	struct strata_xstore *xs;      /* streamed experts (borrowed), or NULL: from the mapping */
	struct strata_vcache_opts vc;  /* the device's expert cache */
	/* 1: compute on the file's mapping.  0: without a device, the CPU's
	 * products are copied into huge pages at load when RAM allows, Q8_0
	 * interleaved (place.c; the same size again in RAM while the page
	 * cache keeps the file's pages). */
	int no_repack;
};

/* What a context placed where (the run summary; see strata_ctx_describe). */
struct strata_placement_stats {
	uint32_t dev_layers;           /* layers whose dense part runs on the device */
	uint32_t dev_skipped;          /* layers kept on the CPU: the device lacks an op or type */
	uint32_t dev_experts, experts; /* expert cache slots on the device (at most all), routed experts */
	int dev_output;                /* the output head runs on the device */
	uint64_t dev_weight_bytes;     /* weights uploaded to the device */
	uint64_t dev_expert_bytes;     /* of them the expert cache's slots */
	uint64_t dev_state_bytes;      /* state reserved there per sequence x n_seq */
	uint64_t dev_work_bytes;       /* its workspace */
	uint64_t host_weight_bytes;    /* weights computed on the CPU */
	uint64_t host_copied_bytes;    /* of them copied into huge pages at load (no_repack) */
	uint64_t host_repacked_bytes;  /* of those Q8_0, Q4_K, Q6_K, interleaved on the way */
	double host_copy_s;            /* the seconds that took */
	uint64_t dev_need_bytes;       /* the least a device must hold: workspace, layer 0 */
};

/*
 * Make a context for m.  With a device, uploads its share of the weights
 * (counted as link bytes).  0, -ENOMEM, or the device's -errno (logged).
 * When the device cannot take even its workspace and one layer, *out is
 * still made, CPU only, and strata_ctx_placement() says dev_layers = 0
 * (the caller decides whether that is an error).  m (and the borrowed
 * objects) must outlive it; released with strata_ctx_free().
 */
int strata_ctx_create(const struct strata_model *m, const struct strata_ctx_opts *o,
		      struct strata_ctx **out);
void strata_ctx_free(struct strata_ctx *c);
void strata_ctx_placement(const struct strata_ctx *c, struct strata_placement_stats *st);
/* Tokens one forward pass takes at most. */
uint32_t strata_ctx_max_batch(const struct strata_ctx *c);
/* The CPU backend (owned by c) and the device (borrowed, or NULL). */
struct strata_backend *strata_ctx_cpu(const struct strata_ctx *c);
struct strata_backend *strata_ctx_device(const struct strata_ctx *c);
/* Read streamed experts through xs from now on (NULL: the mapping).  xs must outlive c. */
void strata_ctx_set_xstore(struct strata_ctx *c, struct strata_xstore *xs);
/*
 * qwen4exp: read the PLE rows through r (a reader of the model's table,
 * borrowed: it must outlive c) from now on, the chunk's read started before
 * layer 0 and waited for at the PLE layer; NULL: gather them from the
 * mapping.  0, -EINVAL when r's rows are not the model's PLE rows (logged),
 * -ENOMEM.
 */
struct strata_ple_reader;
int strata_ctx_set_ple(struct strata_ctx *c, struct strata_ple_reader *r);
/* Forward passes (strata_forward calls that succeeded) since the context was made. */
uint64_t strata_ctx_forwards(const struct strata_ctx *c);
/* Time the PLE layer waited for rows, summed, and the chunks read since the context was made. */
void strata_ctx_ple_waited(const struct strata_ctx *c, double *ms, uint64_t *chunks);
/*
 * One line per backend: what it holds and the bytes that crossed its link,
 * e.g. "gpu-sim (simulated, 4096 MiB): 16 of 16 layers, 512 of 1024 experts,
 * output; weights 1.2 GiB, state 64 MiB, work 12 MiB; link: 1.3 GiB in,
 * 2.1 MiB out".  Into buf (NUL-terminated); returns the length.
 */
size_t strata_ctx_describe(const struct strata_ctx *c, char *buf, size_t n);
/* The device's expert cache counters (zeroes without one). */
void strata_ctx_expert_cache(const struct strata_ctx *c, struct strata_vcache_stats *st);

/*
 * The state of one sequence.  Owns its memory; the context must outlive it.
 */
struct strata_seq;

/*
 * Make a sequence of n_ctx positions (0 = the model's training context, at
 * most 4096).  Returns 0, -ENOMEM after logging when the host is out of
 * memory, or -errno unlogged when the device refused the state (the caller
 * goes on without it or says so).  Snapshots still bound to the sequence
 * when it is freed are detached (they must still be freed).
 */
int strata_seq_create(struct strata_ctx *c, uint32_t n_ctx, struct strata_seq **out);
void strata_seq_free(struct strata_seq *s);
uint32_t strata_seq_pos(const struct strata_seq *s);     /* tokens already in the cache */
struct strata_ctx *strata_seq_ctx(const struct strata_seq *s); /* the context it runs on */
uint32_t strata_seq_n_ctx(const struct strata_seq *s);
/* Tokens one strata_forward() takes: the context's max_batch, at most n_ctx. */
uint32_t strata_seq_max_batch(const struct strata_seq *s);
/* 1 when the model keeps recurrent state (DeltaNet layers), so truncate is limited. */
int strata_seq_recurrent(const struct strata_seq *s);

/*
 * Forget tokens from position pos on.  Exact for attention-only models for
 * any pos <= the current position.  A recurrent state cannot be rewound, so
 * for a recurrent model only pos == the current position (a no-op) and
 * pos == 0 (a reset: KV length 0, conv and recurrent states zeroed) succeed;
 * to go back to another position restore a snapshot saved there.  Returns
 * 0 or -EINVAL (nothing changed, nothing logged: callers probe with it), or
 * a device's -errno when zeroing its states failed (logged).
 */
int strata_seq_truncate(struct strata_seq *s, uint32_t pos);

/*
 * Snapshots: the sequence as it stands at one position, to return to it
 * later (serve-mode turn checkpoints, speculative decoding's rollback).
 *
 * A snapshot is bound to the sequence it was created for.  It holds the
 * position and a host copy of the conv and recurrent states (none for
 * attention-only models), wherever the sequence keeps them; KV rows are not
 * copied, because appending never rewrites rows below the current
 * position.  So a snapshot saved at position p stays restorable until a
 * forward pass writes a row below p, i.e. until the sequence, having gone
 * back below p (truncate or restoring an earlier snapshot), is extended
 * again; from then on it is stale.  The sequence tracks this exactly (the
 * check is per forward call, over its bound snapshots).  A snapshot saved
 * at position 0 never goes stale.
 */
struct strata_seq_snapshot;

/* A snapshot bound to s, sized for its states, holding nothing yet.  0 or -ENOMEM. */
int strata_seq_snapshot_create(struct strata_seq *s, struct strata_seq_snapshot **out);
/* Unbind and release; NULL is a no-op.  May be called before or after strata_seq_free. */
void strata_seq_snapshot_free(struct strata_seq_snapshot *snap);
/*
 * Save the sequence's current position and states into snap (overwriting
 * what it held).  0, -EINVAL when snap is bound to another sequence (or to
 * none: its sequence was freed), or a device's -errno (logged; snap then
 * holds nothing restorable).
 */
int strata_seq_save(struct strata_seq *s, struct strata_seq_snapshot *snap);
/*
 * Return the sequence to the position and states saved in snap; the rows
 * after it are forgotten.  snap is left as it was (restore it again to
 * retry).  0, -EINVAL when snap is bound elsewhere or was never saved,
 * -ESTALE when the KV rows below its position were rewritten since (see
 * above); the sequence is unchanged on those errors.  A device's -errno
 * (logged) leaves the states damaged (truncate to 0 before reuse).
 */
int strata_seq_restore(struct strata_seq *s, const struct strata_seq_snapshot *snap);
/* Position saved in snap, or UINT32_MAX when it holds nothing restorable (never saved, stale). */
uint32_t strata_seq_snapshot_pos(const struct strata_seq_snapshot *snap);

/*
 * Append n tokens (n <= strata_seq_max_batch) at the current position and
 * run the forward pass on the context's backends.  When logits is non-NULL
 * it receives n_vocab floats: for every token when all_logits, else for
 * the last token only.  Returns 0, -ENOSPC when the context would
 * overflow, -EINVAL for a token id out of range (logged), without changing
 * the sequence.  A failure part-way (a streamed expert's read, a device's
 * op or copy: logged once by whoever failed) returns its -errno with the
 * position unchanged, the KV rows from it on garbage to be overwritten,
 * and a recurrent model's state damaged (strata_seq_truncate(s, 0) before
 * using it again).
 */
int strata_forward(struct strata_seq *s, const int32_t *tokens, uint32_t n, float *logits,
		   int all_logits);

/*
 * Verify windows on a recurrent model without feeding the kept prefix
 * again (wlog.c): strata_seq_window_begin arms the next strata_forward
 * of at most `rows` tokens to log each DeltaNet layer's inputs; after it,
 * strata_seq_window_keep restores snap (saved right before that pass) and
 * runs each DeltaNet layer's op again on the first n_keep rows of the log,
 * leaving the sequence at position snap's + n_keep as feeding those n_keep
 * tokens again would, bit for bit (attention keys as the window wrote them;
 * windows of up to 8 rows take DeltaNet's one-token rule, backend/deltanet.h).
 * window_begin: 0, -ENOTSUP where the log cannot serve (a DeltaNet state
 * on a device, no DeltaNet layer: roll back another way),
 * -ENOMEM.  window_keep: 0, -EINVAL when the last pass was not a logged
 * window right after snap or n_keep exceeds it, or an op's -errno.
 */
int strata_seq_window_begin(struct strata_seq *s, uint32_t rows);
int strata_seq_window_keep(struct strata_seq *s, const struct strata_seq_snapshot *snap,
			   uint32_t n_keep);

/*
 * The model's MTP (nextn) block (forward.c), right after a strata_forward
 * (or an earlier call of its own) whose rows it reads, or fed hidden: row
 * t is fed next[t] and hidden row t (n rows of strata_mtp_width floats;
 * NULL: the workspace's rows 0..n-1 of the last pass), attends over its
 * own rows at positions pos.. (their keys kept in the sequence, rows below
 * pos as earlier calls left them), and leaves its own output rows in the
 * workspace (what a chained call reads through strata_mtp_hidden).  The
 * logits of its last n_out rows (n_vocab floats a row) go to out; n_out 0
 * skips the head.  The hidden state is qwen4exp's 4-stream residual before
 * the head; glm4moe's and qwen3next's (their first nextn layer) the
 * final-normed one: the trunk's output_norm of its rows, or the block's
 * own head norm of its rows when chained.  0, -ENOTSUP when
 * strata_mtp_check refuses (logged), -EINVAL for bad arguments, or an op's
 * -errno.
 */
int strata_mtp(struct strata_seq *s, const int32_t *next, const float *hidden, uint32_t n,
	       uint32_t pos, uint32_t n_out, float *out);

/* strata_mtp for qwen4exp (forward_q4x.c), its arguments checked. */
int strata_q4x_mtp(struct strata_seq *s, const int32_t *next, const float *hidden, uint32_t n,
		   uint32_t pos, uint32_t n_out, float *out);

/* strata_mtp_hidden for qwen4exp (forward_q4x.c). */
int strata_q4x_mtp_hidden(struct strata_seq *s, uint32_t row, float *dst);

/* 0 when strata_mtp can run on c; -ENOTSUP with *why set (a static text) when not. */
int strata_mtp_check(const struct strata_ctx *c, const char **why);

/* The floats of one row of the hidden state the MTP block reads. */
size_t strata_mtp_width(const struct strata_model *m);

/*
 * Copy row `row` of the workspace's hidden state (the last forward's or MTP
 * call's residual) to dst (strata_mtp_width floats).  0 or -EINVAL.
 */
int strata_mtp_hidden(struct strata_seq *s, uint32_t row, float *dst);

#endif
