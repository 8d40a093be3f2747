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
 * Integer hyperparameters, indices into wcfg.iv.  The qwen3next ones: the
 * shared expert's width, the Gated DeltaNet's conv kernel, k-head size
 * (state_size), k heads (group_count), v heads (time_step_rank), v width
 * (inner_size), and every how many layers one is full attention.
 */
enum {
	W_VOCAB, W_EMBD, W_LAYER, W_HEAD, W_HEAD_KV, W_HEAD_DIM, W_ROT, W_FF, W_CTX,
	W_EXPERT, W_EXPERT_USED, W_FF_EXP, W_SHARED, W_DENSE, W_NEXTN,
	W_FF_SHEXP, W_SSM_CONV, W_SSM_STATE, W_SSM_GROUPS, W_SSM_DT_RANK, W_SSM_INNER,
	W_ATTN_INTERVAL, W_N_INT
};

enum warch { WA_LLAMA = 1, WA_QWEN3MOE, WA_GLM4MOE, WA_QWEN3NEXT };

/*
 * What a tensor holds, which decides its value distribution (and, for
 * K_CONV, that it stays F32 as llama.cpp's quantiser keeps ssm_conv1d).
 */
enum wkind { K_WEIGHT, K_ROUTER, K_NORM, K_BIAS, K_PROBS_B, K_CONV, K_VEC, K_SSM_A };

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
 * All metadata: general.*, the architecture's hyperparameters, and the
 * tokenizer (copied from vocab, or a synthetic SentencePiece byte vocab of
 * n_vocab tokens when vocab is NULL).
 */
int strata_writer_meta(struct strata_gguf_writer *w, const struct wcfg *c,
		       const struct strata_gguf *vocab);

#endif
