/*
 * steer.h - what a request asks of each sampled token, done in the
 * engine's logits hook (strata_gen_params.logits) and the token callback:
 * OpenAI's presence and frequency penalties, logit_bias, a thinking budget
 * that closes the <think> block by forcing its closing tokens, a grammar's
 * token mask (structured output, forced tool calls), and the
 * log-probabilities of each token and its best alternatives.
 */
#ifndef STRATA_SERVE_STEER_H
#define STRATA_SERVE_STEER_H

#include <stddef.h>
#include <stdint.h>

#include "strata.h"

struct strata_api_bias;
struct strata_grammar_run;

#define STRATA_MAX_TOP_LOGPROBS 20

/* One generated token's log-probability and its best alternatives. */
struct strata_lp {
	int32_t id;
	float logprob;
	uint32_t nbytes;       /* the bytes it added to the reply */
	uint8_t n_top;
	int32_t top_id[STRATA_MAX_TOP_LOGPROBS];
	float top_lp[STRATA_MAX_TOP_LOGPROBS];
};

struct strata_steer {
	/* Set before the generation, then read-only. */
	const struct strata_engine *e;
	float presence, frequency;      /* OpenAI's penalties; 0: off */
	const struct strata_api_bias *bias; /* logit_bias (the request's), n_bias of them */
	size_t n_bias;
	int logprobs;                   /* keep each token's log-probability */
	int top_logprobs;               /* and this many alternatives (0..20) */
	int think_budget;               /* reasoning tokens before </think> is forced; -1: none */
	int32_t close_ids[32];          /* the tokens of "</think>\n\n" */
	uint32_t n_close;
	struct strata_grammar_run *grammar; /* what the reply must be (after thinking), or NULL */

	/* Engine thread state. */
	int32_t n_vocab;
	uint32_t *counts;               /* [n_vocab] tokens generated, with penalties on */
	uint32_t think_tokens;          /* reasoning tokens so far */
	uint32_t forcing;               /* close_ids sent so far while closing */
	int closing;                    /* the budget is spent: </think> is being forced */
	const float *cur;               /* this step's logits, as the hook left them */
	float lse;                      /* their log-sum-exp */
	struct strata_lp step;          /* this step's best alternatives */
	int error;                      /* a negative errno that ended the generation */

	/* The tokens' log-probabilities (logprobs): written by the engine thread. */
	struct strata_lp *lp;
	size_t n_lp, cap_lp;
};

/*
 * The logits hook: penalties, the forced closing of a thinking block, then
 * this step's log-sum-exp and best alternatives.
 * in_think says the reply is inside a thinking block.  Returns 0, or
 * non-zero to stop (memory, or the constraint allows no token).
 */
int strata_steer_logits(struct strata_steer *st, float *logits, int32_t n_vocab, int in_think);

/*
 * The token callback's half: count the token, record its log-probability
 * (from the hook's logits, still as it left them).  Returns 0, or non-zero
 * to stop.
 */
int strata_steer_token(struct strata_steer *st, int32_t id, const char *piece, size_t len,
		       int in_think);

void strata_steer_free(struct strata_steer *st);

#endif
