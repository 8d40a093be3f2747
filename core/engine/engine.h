/*
 * engine.h - the engine behind strata.h: model, tokenizer, thread pool,
 * plugins, prompt paths, sampler and one sequence, wired from a config.
 */
#ifndef STRATA_ENGINE_H
#define STRATA_ENGINE_H

#include <pthread.h>

#include "strata.h"

#include "config/config.h"
#include "cpu/pool.h"
#include "model/model.h"
#include "tok/tokenizer.h"

struct strata_registry;
struct strata_path_list;
struct strata_sampler;

/*
 * What the engines on one model share (strata_engine_new_sequence): the
 * model, tokenizer, pool, registry, device, context, streamed experts and
 * PLE reader (pointers every engine holds), freed with the last engine.
 */
struct strata_engine_shared {
	struct strata_config cfg;       /* owned; the registry keeps a pointer to it */
	_Atomic int refs;               /* engines on the model */
	pthread_mutex_t run;            /* one generation at a time across them */
};

struct strata_engine {
	struct strata_engine_shared *sh;
	struct strata_config cfg;       /* a copy of sh->cfg: its strings are sh's */
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
	char *arch;                     /* general.architecture ("" when absent) */
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
	float *spec_rows;               /* [window][n_vocab]: a verify pass's logits; NULL: no drafter */
	double spec_ms_one, spec_ms_win; /* decode's ms per token: one-token passes, verify windows */
	uint32_t spec_probe;            /* drafts skipped since windows last cost more */
	int spec_refeed;                /* tests: roll recurrent windows back by feeding again */
	int drafter;                    /* STRATA_DRAFT_*: [spec] drafter with auto resolved */
	float *mtp_hid;                 /* [strata_mtp_width]: the pending row's hidden state */
	float *mtp_logits;              /* [n_vocab]: the MTP block's last row; NULL: no MTP */
	uint32_t mtp_pend;              /* the pending row's position + 1; 0: none (mtp.c) */
	struct strata_xstore *xs;       /* streamed experts ([model] experts = stream), or NULL */
	struct strata_ple_reader *ple;  /* qwen4exp's PLE table reader ([ple]), or NULL */
};

/*
 * What each engine on a model has of its own, made once its sequence
 * exists: prompt paths, checkpoints, sampler, logits and history, drafter.
 * 0 or -errno (logged); strata_engine_free releases what was made.
 */
int strata_engine_seq_parts(struct strata_engine *e);

/*
 * Make an engine from an already-parsed config, which it takes over (the
 * caller must not free it afterwards, even on failure).
 */
int strata_engine_create(struct strata_config *cfg, const char *argv0,
			 struct strata_engine **out);

/*
 * Append n tokens to the sequence and its history; e->logits gets the last
 * one's logits, and rows (when not NULL) all n rows.  With the MTP drafter
 * the block's rows follow (strata_mtp_before/after), except after a pass
 * with rows: a verify window, whose kept rows are known later.  0 or
 * -errno (logged by whoever failed; the engine may have fallen back to the
 * CPU).
 */
int strata_engine_feed(struct strata_engine *e, const int32_t *tokens, uint32_t n, float *rows);

/* ---- decode (decode.c) ---- */

/* One generation's request, as strata_generate() and _ex() put it. */
struct strata_gen_run {
	const int32_t *prompt;
	uint32_t n_prompt;
	int32_t n_predict;
	struct strata_sampler *smp;
	strata_token_fn fn;
	void *user;
	int (*logits)(void *user, float *logits, int32_t n_vocab); /* before sampling, or NULL */
};

/* A generation's decode state. */
struct strata_gen_state {
	struct strata_engine *e;
	const struct strata_gen_run *r;
	uint32_t n_gen, finish; /* tokens generated; enum strata_finish */
};

#define STRATA_SPEC_MAX_WINDOW 8 /* [spec] window's upper bound */

/* [spec] drafter's values, in the order of its choices (config schema). */
enum { STRATA_DRAFT_NONE, STRATA_DRAFT_LOOKUP, STRATA_DRAFT_MTP, STRATA_DRAFT_AUTO };

/* What one generation's decode loop carries across windows. */
struct strata_spec_run {
	struct strata_sampler *smp;
	struct strata_seq_snapshot *snap; /* recurrent models: the state before a window */
	int32_t next;                     /* a token already chosen (a rejected draft's replacement) */
	int has_next;
	int replay;                       /* this window's DeltaNet inputs are logged */
	uint32_t windows, drafted, accepted;
	uint32_t refed;                   /* windows whose kept prefix was fed again */
};

/*
 * Drafts for the window that starts with tok (sampled, kept, not yet fed):
 * at most max tokens into draft; 0 when the engine drafts nothing, or when
 * windows have been costing more per committed token than one-token passes
 * (then a few opportunities still draft, to measure again; decode.c).  The
 * count, or the MTP block's -errno (logged).
 */
int strata_spec_draft(struct strata_engine *e, int32_t tok, int32_t *draft, uint32_t max);

/* ---- the MTP drafter (mtp.c): the block's rows follow every trunk pass ---- */

/* Its buffers (e->mtp_hid, e->mtp_logits), once strata_mtp_check said yes.  0 or -ENOMEM. */
int strata_mtp_setup(struct strata_engine *e);
void strata_mtp_release(struct strata_engine *e);

/* Before a trunk pass at pos whose first token is first: the pending row, fed first. */
int strata_mtp_before(struct strata_engine *e, int32_t first, uint32_t pos);

/*
 * After a trunk pass at pos whose first n rows (tokens) are kept and still
 * in the workspace: rows 0..n-2 run, row n-1 becomes the pending one.
 */
int strata_mtp_after(struct strata_engine *e, const int32_t *tokens, uint32_t n, uint32_t pos);

/*
 * Up to max drafts after tok from the pending row and the block chained on
 * its own output, ending early below [spec] min_p.  The count (0 when no
 * row is pending), or -errno (logged).
 */
int strata_mtp_draft(struct strata_engine *e, int32_t tok, int32_t *draft, uint32_t max);

/* A decode pass took ms and committed n tokens (window: it verified drafts). */
void strata_spec_note(struct strata_engine *e, double ms, uint32_t n, int window);

/* What the decode loop does with a verify window's rows and kept drafts. */
struct strata_spec_hooks {
	int (*row)(void *user, float *logits, int32_t n_vocab); /* before a row is verified (may
								 * change it); non-zero stops */
	int (*keep)(void *user, int32_t t); /* a kept draft; non-zero stops */
	void *user;
};

/*
 * Feed [tok, draft[0..k)) in one pass and verify the drafts in order with
 * the sampler (strata_sampler_verify), each against its row as h->row left
 * it; h->keep is called for each kept draft.  A rejected draft's
 * replacement goes to sr->next.  The rows after the kept ones are rolled
 * back: cut for attention; for recurrent states the snapshot restored and
 * the DeltaNet ops run again on the kept rows' logged inputs
 * (strata_seq_window_keep), or, where the log cannot serve (a state on a
 * device), the kept prefix fed again.  Returns 1 when a hook
 * stopped, 0 to go on, or -errno (logged).
 */
int strata_spec_window(struct strata_engine *e, struct strata_spec_run *sr, int32_t tok,
		       const int32_t *draft, uint32_t k, const struct strata_spec_hooks *h);

/*
 * Decode after the prompt (e->logits hold its last row) until the budget,
 * an end-of-generation token, a full context or a callback stops it:
 * g->n_gen and g->finish say which.  Drafts when the engine has a drafter
 * (sr carries the windows' state and figures).  0 or -errno (logged).
 */
int strata_engine_decode(struct strata_gen_state *g, struct strata_spec_run *sr);

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


#endif
