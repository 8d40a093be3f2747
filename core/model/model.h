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
};

static inline struct strata_mat strata_expert(const struct strata_experts *x, uint32_t e)
{
	struct strata_mat m = x->m;

	m.data = (const char *)x->m.data + (size_t)e * x->stride;
	return m;
}

/* The glm4moe multi-token-prediction (nextn) layer: loaded and kept for MTP. */
struct strata_nextn {
	struct strata_mat eh_proj;     /* n_embd x 2*n_embd */
	const float *enorm, *hnorm;    /* [n_embd] */
	const float *shared_head_norm; /* [n_embd] */
};

enum strata_rope_type {
	STRATA_ROPE_NORM = 0, /* rotate adjacent pairs (llama's GGUF layout) */
	STRATA_ROPE_NEOX = 2, /* rotate halves */
};

struct strata_layer {
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
	struct strata_nextn nextn;           /* only in nextn layers */
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
};

struct strata_model {
	struct strata_gguf *gguf; /* owned */
	struct strata_hparams hp;
	struct strata_mat tok_embd;   /* n_vocab x n_embd */
	const float *output_norm;     /* [n_embd] */
	struct strata_mat output;     /* n_vocab x n_embd (tok_embd when tied) */
	const float *rope_freqs;      /* [n_rot/2] or NULL (llama-3 style factors) */
	struct strata_layer *layers;  /* [n_layer] */
	uint64_t n_params;
	uint64_t weight_bytes;
};

/*
 * Open `path` and load its weights.  Returns 0 and *out (released with
 * strata_model_free), or a negative errno after one error naming the file:
 * -ENOTSUP for an unsupported architecture or weight type, -EINVAL for
 * missing/ill-shaped tensors or bad hyperparameters.
 */
int strata_model_load(const char *path, struct strata_model **out);
void strata_model_free(struct strata_model *m);

/*
 * The state of one sequence: KV cache and scratch for batches of up to
 * max_batch tokens.  Owns its memory; the model must outlive it.
 */
struct strata_seq;

/*
 * Make a sequence of n_ctx positions (0 = the model's training context).
 * Returns 0 or -ENOMEM / -EINVAL after logging.
 */
int strata_seq_create(const struct strata_model *m, uint32_t n_ctx, uint32_t max_batch,
		      struct strata_seq **out);
void strata_seq_free(struct strata_seq *s);
uint32_t strata_seq_pos(const struct strata_seq *s);     /* tokens already in the cache */
uint32_t strata_seq_n_ctx(const struct strata_seq *s);
uint32_t strata_seq_max_batch(const struct strata_seq *s);
/* Forget tokens from position pos on (pos <= current position). */
int strata_seq_truncate(struct strata_seq *s, uint32_t pos);

/*
 * Append n tokens (n <= max_batch) at the current position and run the
 * forward pass.  When logits is non-NULL it receives n_vocab floats: for
 * every token when all_logits, else for the last token only.  Returns 0,
 * -ENOSPC when the context would overflow, -EINVAL for a token id out of
 * range (logged), without changing the sequence on error.
 */
int strata_forward(struct strata_seq *s, struct strata_pool *pool, const int32_t *tokens,
		   uint32_t n, float *logits, int all_logits);

#endif
