/*
 * engine.h - the engine behind strata.h: model, tokenizer, thread pool,
 * plugins, prompt paths, sampler and one sequence, wired from a config.
 */
#ifndef STRATA_ENGINE_H
#define STRATA_ENGINE_H

#include "strata.h"

#include "config/config.h"
#include "cpu/pool.h"
#include "model/model.h"
#include "tok/tokenizer.h"

struct strata_registry;
struct strata_path_list;
struct strata_sampler;

struct strata_engine {
	struct strata_config cfg;       /* owned */
	struct strata_model *model;
	struct strata_tokenizer *tok;
	struct strata_pool *pool;
	struct strata_registry *reg;
	struct strata_path_list *paths;
	struct strata_sampler *sampler;
	struct strata_backend *dev;     /* the [gpu] device, or NULL: CPU only */
	struct strata_ctx *ctx;         /* the model on its backends */
	struct strata_seq *seq;
	float *logits;                  /* [n_vocab]: after the last token fed */
	float *dump;                    /* [n_ctx][n_vocab] when --dump-logits */
	int failed;                     /* a forward inside a path plugin failed */
	char *prompt_text;              /* the text strata_engine_prompt_tokens read */
	size_t prompt_len;
	char *model_name;               /* file name without ".gguf" */
	char *chat_template;            /* tokenizer.chat_template, or NULL */
	/*
	 * The tokens in the sequence's cache, in order (n_hist == its position):
	 * what a later request's prompt is compared with to resume from a
	 * shared prefix instead of evaluating it again.
	 */
	int32_t *hist;                  /* [n_ctx] */
	uint32_t n_hist;
	int (*cancel)(void *user);      /* polled before each forward; NULL = never */
	void *cancel_user;
	struct strata_ckpts *ckpts;     /* turn checkpoints; NULL when [serve] checkpoints = 0 */
	int ckpt_reread;                /* STRATA_CKPT_REREAD: checkpoints only split prompts */
	uint32_t window;                /* tokens per decode window: [spec] window, <= max batch */
	struct strata_xstore *xs;       /* streamed experts ([model] experts = stream), or NULL */
	struct strata_ple_reader *ple;  /* qwen4exp's PLE table reader ([ple]), or NULL */
};

/*
 * Make an engine from an already-parsed config, which it takes over (the
 * caller must not free it afterwards, even on failure).
 */
int strata_engine_create(struct strata_config *cfg, const char *argv0,
			 struct strata_engine **out);

/*
 * Make e->ctx for batches of max_batch tokens and sequences of n_ctx
 * positions, on the [gpu] device when one is configured and usable (device.c).
 * 0 or -errno after one logged error.
 */
int strata_engine_make_ctx(struct strata_engine *e, uint32_t max_batch, uint32_t n_ctx);

/*
 * Make e->seq of n_ctx positions on e->ctx; when the device refuses its
 * state, continue on the CPU alone (warned).  0 or -errno after logging.
 */
int strata_engine_make_seq(struct strata_engine *e, uint32_t n_ctx);

/*
 * After the device failed (logged): drop it and continue on the CPU alone,
 * with a fresh sequence and no checkpoints.  0 or -errno.
 */
int strata_engine_fall_back(struct strata_engine *e);

/*
 * Write the .slog file of the last strata_generate() (needs --dump-logits):
 * tokens and every logits row, layout of ../shared/golden/README.md.  Also
 * prints the sha256 of the logits row that chose the first generated token.
 */
int strata_engine_write_dump(struct strata_engine *e, const int32_t *tokens, uint32_t n_prompt,
			     uint32_t n_gen, const char *path);

#endif
