/*
 * writer_plan.h - strata-writer's model description: the configuration from
 * the command line, the tensor plan (names, shapes, types) for an
 * architecture, and its metadata.  Internal to the strata-writer tool.
 */
#ifndef STRATA_WRITER_PLAN_H
#define STRATA_WRITER_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "gguf/gguf_write.h"

/*
 * Integer hyperparameters, indices into wcfg.iv.  The qwen3next ones (and
 * qwen4exp's): the shared expert's width, the Gated DeltaNet's conv kernel,
 * k-head size (state_size), k heads (group_count), v heads (time_step_rank),
 * v width (inner_size), and every how many layers one is full attention.
 * qwen4exp's own: hyper-connection streams and their low rank, the sparse
 * attention indexer's heads, head size, top_k and block (compress ratio),
 * and the PLE table's rows per head (the first of 16 consecutive primes).
 */
enum {
	W_VOCAB, W_EMBD, W_LAYER, W_HEAD, W_HEAD_KV, W_HEAD_DIM, W_ROT, W_FF, W_CTX,
	W_EXPERT, W_EXPERT_USED, W_FF_EXP, W_SHARED, W_DENSE, W_NEXTN,
	W_FF_SHEXP, W_SSM_CONV, W_SSM_STATE, W_SSM_GROUPS, W_SSM_DT_RANK, W_SSM_INNER,
	W_ATTN_INTERVAL, W_HC, W_HC_RANK, W_IDX_HEADS, W_IDX_DIM, W_IDX_TOP_K, W_COMPRESS,
	W_PLE_ROWS, W_N_INT
};

enum warch { WA_LLAMA = 1, WA_QWEN3MOE, WA_GLM4MOE, WA_QWEN3NEXT, WA_QWEN4EXP };

/* qwen4exp's PLE n-gram table: 16 heads (8 bigram, 8 trigram) of one row each. */
#define W_PLE_HEADS 16
#define W_PLE_TENSOR "per_layer_token_embd.weight"

/*
 * What a tensor holds, which decides its value distribution (and, for
 * K_CONV, that it stays F32 as llama.cpp's quantiser keeps ssm_conv1d;
 * K_HC, qwen4exp's hyper-connection mixers, stay F32 too; K_PLE is the PLE
 * table, in a type the PLE reader decodes).
 */
enum wkind { K_WEIGHT, K_ROUTER, K_NORM, K_BIAS, K_PROBS_B, K_CONV, K_VEC, K_SSM_A, K_HC,
	     K_PLE };

struct wcfg {
	const char *arch_name;
	enum warch arch;
	int64_t iv[W_N_INT];  /* -1 = not given; resolved values after strata_writer_resolve */
	float rope_base, rms_eps, exp_scale; /* 0 = not given */
	uint64_t seed;
	int vocab_file;       /* n_vocab comes from a --vocab file */
	const char *name;     /* general.name; NULL = synthetic-ARCH-sSEED */
	char name_buf[80];
	uint32_t type;        /* the weight type (Q4_K for the Q4_K_M mix) */
	int mix_q4_k_m;       /* llama.cpp's Q4_K_M mix */
	const char *type_label;
	uint32_t file_type;   /* general.file_type (llama_ftype) */
	const char *ple_type_name; /* --ple-type, or NULL */
	uint32_t ple_type;    /* resolved from it ... */
	int ple_type_set;     /* ... when given */
	uint64_t ple_mult[3]; /* qwen4exp.ple.layer_multipliers; all 0 = the syn files' */
	uint64_t ple_size[W_PLE_HEADS], ple_off[W_PLE_HEADS]; /* resolved head ranges */
	uint64_t ple_rows;    /* the table's rows: the heads' padded to a multiple of 128 */
};

struct wtensor {
	char name[STRATA_GGUF_MAX_NAME + 1];
	uint32_t n_dims;
	int64_t ne[STRATA_GGUF_MAX_DIMS];
	enum wkind kind;
	int layer;            /* block index, -1 for the global tensors */
	uint32_t type;
};

struct wplan {
	struct wtensor *t;
	size_t n, cap;
	uint64_t n_params;
	size_t n_fallback;          /* matrices stored in a fallback type */
	size_t first_fallback;      /* index of the first of them */
};

/*
 * Fill in the defaults of the architecture (a 64-wide test model), check
 * that the hyperparameters make a model strata and llama.cpp can load, and
 * parse the type name.  -EINVAL after logging which flag is wrong.
 */
int strata_writer_resolve(struct wcfg *c, const char *type_name);

/*
 * Open a GGUF vocab file (its tokenizer.* keys are copied into the model)
 * and set c->iv[W_VOCAB] from its token count.  *out is closed by the caller
 * with strata_gguf_close.  -EINVAL/-ENOENT after logging.
 */
int strata_writer_vocab_open(const char *path, struct wcfg *c, struct strata_gguf **out);

/*
 * The tensors of the model in file order, with their types chosen (pure or
 * the Q4_K_M mix, then llama.cpp's fallback for rows that are not whole
 * blocks).  p is emptied first; release with strata_writer_plan_free.
 * -EINVAL (logged) when a tensor cannot be stored in the type.
 */
int strata_writer_plan(const struct wcfg *c, struct wplan *p);
void strata_writer_plan_free(struct wplan *p);

/*
 * Apply preset `name` (writer_presets.c): its architecture and the shape
 * values the command line left unset (cfg->iv < 0), its vocab when *vocab
 * is NULL, *split_ple when it ships the PLE table in a shard of its own.
 * -EINVAL after logging for an unknown name, an --arch that disagrees, or
 * a preset vocab that is not there.
 */
int strata_writer_preset(const char *name, struct wcfg *cfg, const char **vocab, int *split_ple);

/* qwen3next, qwen4exp: layer i is full attention (else a Gated DeltaNet). */
int strata_writer_full_attn(const struct wcfg *c, int i);

/*
 * All metadata (writer_meta.c): general.*, the architecture's hyperparameters, and the
 * tokenizer (copied from vocab, or a synthetic SentencePiece byte vocab of
 * n_vocab tokens when vocab is NULL).
 */
int strata_writer_meta(struct strata_gguf_writer *w, const struct wcfg *c,
		       const struct strata_gguf *vocab);

/*
 * Which shard each tensor of p goes to (shard[p->n]) and how many there
 * are: with split_ple the PLE table alone in the last (qwen4exp only, else
 * -EINVAL logged); the others in plan order, a new shard when the current
 * one holds max_tensors (> 0) or the next tensor's bytes, padded to 32,
 * would take it past max_bytes (> 0; a larger tensor gets a shard alone):
 * gguf-split's --split-max-tensors and --split-max-size.
 */
int strata_writer_shards(const struct wcfg *c, const struct wplan *p, int split_ple,
			 uint64_t max_tensors, uint64_t max_bytes, uint32_t *shard,
			 uint32_t *n_shards);

/*
 * The path of shard k of n for --out `out`: its trailing ".gguf" dropped,
 * then "-%05d-of-%05d.gguf" (llama.cpp's llama_split_path).  Caller frees;
 * NULL when out of memory.
 */
char *strata_writer_shard_path(const char *out, uint32_t k, uint32_t n);

/*
 * Declare shard k of n in w: all metadata when k == 0; the split keys when
 * shard is not NULL; the plan's tensors of shard k (all when shard is NULL),
 * in plan order.
 */
int strata_writer_shard_header(struct strata_gguf_writer *w, const struct wcfg *c,
			       const struct strata_gguf *vocab, const struct wplan *p,
			       const uint32_t *shard, uint32_t k, uint32_t n);

#endif
