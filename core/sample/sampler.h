/*
 * sampler.h - choosing the next token from logits.
 *
 * The chain is llama.cpp's default one: repetition penalty over the last
 * repeat_last_n accepted tokens, then top-k, top-p, min-p, then temperature
 * and a draw from the softmax.  temp <= 0 is greedy: the argmax after the
 * penalty (ties go to the lowest id).
 *
 * The random generator is our own (xoshiro256** seeded by splitmix64), so a
 * seed gives the same tokens on every machine and C library.
 *
 * A sampler is not thread-safe: one per sequence.
 */
#ifndef STRATA_SAMPLER_H
#define STRATA_SAMPLER_H

#include <stdint.h>

/* seed value: draw a fresh seed (see strata_sampler_seed()). Same as STRATA_SEED_RANDOM. */
#define STRATA_SAMPLER_SEED_RANDOM UINT64_MAX

struct strata_sampler_params {
	float temp;            /* <= 0: greedy */
	int32_t top_k;         /* 0 or >= n_vocab: off */
	float top_p;           /* in (0, 1]; 1: off */
	float min_p;           /* in [0, 1]; 0: off */
	float repeat_penalty;  /* > 0; 1: off */
	int32_t repeat_last_n; /* >= 0; 0: off */
	uint64_t seed;         /* STRATA_SAMPLER_SEED_RANDOM: from the OS */
};

struct strata_sampler;

/*
 * Make a sampler for a vocabulary of n_vocab tokens.  Every buffer is
 * allocated here, none per token.  Returns 0 and *out (free it with
 * strata_sampler_free()), -EINVAL after logging which parameter is out of
 * range (n_vocab <= 0, top_k < 0, top_p outside (0, 1], min_p outside
 * [0, 1], repeat_penalty <= 0, repeat_last_n < 0, a NaN), or -ENOMEM.
 */
int strata_sampler_create(const struct strata_sampler_params *p, int32_t n_vocab,
			  struct strata_sampler **out);
/* NULL is a no-op. */
void strata_sampler_free(struct strata_sampler *s);

/* Forget the token history (a new sequence); the random state goes on. */
void strata_sampler_reset(struct strata_sampler *s);

/*
 * Record a token of the sequence (prompt or generated) for the repetition
 * penalty; only the last repeat_last_n are kept.  Ids outside the vocabulary
 * are ignored.
 */
void strata_sampler_accept(struct strata_sampler *s, int32_t tok);

/*
 * The next token from n_vocab logits.  The logits are only read.  Does not
 * accept the token: call strata_sampler_accept() with what the caller keeps.
 */
int32_t strata_sampler_sample(struct strata_sampler *s, const float *logits);

/*
 * Speculative sampling's rule for a drafted token (a draft that proposes
 * one token, probability 1): with probability p(draft) under the chain's
 * distribution the draft is kept (*accepted = 1); otherwise the token is
 * drawn from that distribution with the draft left out.  Either way the
 * result is distributed exactly as strata_sampler_sample()'s would be, so
 * verifying drafts never changes what the model generates, only how many
 * forward passes it takes.  Greedy: the argmax, accepted when it is the
 * draft.  Does not accept the token (as strata_sampler_sample()).
 */
int32_t strata_sampler_verify(struct strata_sampler *s, const float *logits, int32_t draft,
			      int *accepted);

/* The seed in use: params.seed, or the one drawn for STRATA_SAMPLER_SEED_RANDOM. */
uint64_t strata_sampler_seed(const struct strata_sampler *s);

#endif
