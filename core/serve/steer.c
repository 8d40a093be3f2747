/*
 * steer.c - the per-token work of a request around the sampler: penalties,
 * the thinking budget, the constraint's mask, log-probabilities.
 */
#include "serve/steer.h"
#include "serve/api.h"
#include "serve/grammar.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


/* OpenAI: logit -= frequency * count + presence * (count > 0), over generated tokens. */
static void penalise(struct strata_steer *st, float *logits, int32_t n)
{
	for (int32_t i = 0; i < n && i < st->n_vocab; i++)
		if (st->counts[i])
			logits[i] -= st->frequency * (float)st->counts[i] + st->presence;
}

/* Only token id may come next. */
static void force(float *logits, int32_t n, int32_t id)
{
	for (int32_t i = 0; i < n; i++)
		if (i != id)
			logits[i] = -INFINITY;
}

/* Log-sum-exp and the best top_logprobs tokens of this step's logits. */
static void measure(struct strata_steer *st, const float *logits, int32_t n)
{
	struct strata_lp *s = &st->step;
	float mx = -INFINITY;
	double sum = 0;
	int k = st->top_logprobs;

	for (int32_t i = 0; i < n; i++)
		mx = logits[i] > mx ? logits[i] : mx;
	for (int32_t i = 0; i < n; i++)
		sum += logits[i] == -INFINITY ? 0 : exp((double)(logits[i] - mx));
	st->lse = mx + (float)log(sum > 0 ? sum : 1);
	s->n_top = 0;
	for (int32_t i = 0; i < n && k > 0; i++) {
		int at;

		if (logits[i] == -INFINITY ||
		    (s->n_top == k && logits[i] <= s->top_lp[s->n_top - 1]))
			continue;
		/* insertion into the sorted best k (ties keep the lower id first) */
		at = s->n_top < k ? s->n_top++ : k - 1;
		while (at > 0 && s->top_lp[at - 1] < logits[i]) {
			s->top_lp[at] = s->top_lp[at - 1];
			s->top_id[at] = s->top_id[at - 1];
			at--;
		}
		s->top_lp[at] = logits[i];
		s->top_id[at] = i;
	}
	for (int i = 0; i < s->n_top; i++)
		s->top_lp[i] -= st->lse;
}

int strata_steer_logits(struct strata_steer *st, float *logits, int32_t n, int in_think)
{
	if (!st->n_vocab) {
		st->n_vocab = n;
		if ((st->presence != 0 || st->frequency != 0) &&
		    !(st->counts = calloc((size_t)n, sizeof(*st->counts)))) {
			st->error = -ENOMEM;
			return 1;
		}
	}
	if (st->counts)
		penalise(st, logits, n);
	/* logit_bias: -100 bans a token outright, as OpenAI's does */
	for (size_t i = 0; i < st->n_bias; i++)
		if (st->bias[i].id < n)
			logits[st->bias[i].id] = st->bias[i].bias <= -100 ? -INFINITY
					       : logits[st->bias[i].id] + st->bias[i].bias;
	/* The budget is spent: the block's closing tokens, one per step. */
	if (!st->closing && in_think && st->think_budget >= 0 &&
	    st->think_tokens >= (uint32_t)st->think_budget && st->n_close)
		st->closing = 1;
	if (st->closing && st->forcing < st->n_close) {
		force(logits, n, st->close_ids[st->forcing++]);
	} else if (st->grammar && !in_think) {
		int rc = strata_grammar_mask(st->grammar, logits, n);

		if (rc) { /* the grammar allows no token the sampler may take */
			st->error = rc;
			return 1;
		}
	}
	st->cur = logits;
	if (st->logprobs)
		measure(st, logits, n);
	return 0;
}

int strata_steer_token(struct strata_steer *st, int32_t id, const char *piece, size_t len,
		       int in_think)
{
	if (st->counts && id >= 0 && id < st->n_vocab)
		st->counts[id]++;
	if (in_think && !st->closing)
		st->think_tokens++;
	if (st->logprobs && st->cur) {
		struct strata_lp *lp;

		if (st->n_lp == st->cap_lp) {
			size_t cap = st->cap_lp ? 2 * st->cap_lp : 64;
			struct strata_lp *nl = realloc(st->lp, cap * sizeof(*nl));

			if (!nl) {
				st->error = -ENOMEM;
				return 1;
			}
			st->lp = nl;
			st->cap_lp = cap;
		}
		lp = &st->lp[st->n_lp++];
		*lp = st->step;
		lp->id = id;
		lp->nbytes = (uint32_t)len;
		lp->logprob = id >= 0 && id < st->n_vocab ? st->cur[id] - st->lse : -INFINITY;
	}
	if (st->grammar && !in_think && (st->error = strata_grammar_accept(st->grammar, piece, len)))
		return 1;
	return 0;
}

void strata_steer_free(struct strata_steer *st)
{
	strata_grammar_run_free(st->grammar);
	st->grammar = NULL;
	free(st->counts);
	free(st->lp);
	st->counts = NULL;
	st->lp = NULL;
	st->n_lp = st->cap_lp = 0;
}
