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
	const float *ffn_norm;   /* [n_embd] */
	struct strata_mat w_gate; /* n_ff x n_embd */
	struct strata_mat w_up;   /* n_ff x n_embd */
	struct strata_mat w_down; /* n_embd x n_ff */
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
