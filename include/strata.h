/*
 * strata.h - the application API of the strata inference engine.
 *
 * An application makes an engine from the same configuration the `strata`
 * command takes (an INI file, STRATA_* environment variables and llama.cpp
 * style flags), then tokenizes and generates.  All functions return 0 (or a
 * non-negative count) on success and a negative errno on failure, after one
 * error line on stderr that says what went wrong and where.
 */
#ifndef STRATA_H
#define STRATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct strata_engine;

/* Timings of one strata_generate() call. */
struct strata_stats {
	uint32_t n_prompt;   /* prompt tokens evaluated */
	uint32_t n_gen;      /* tokens generated */
	double prompt_ms;    /* wall time of the prompt */
	double gen_ms;       /* wall time of generation (after the prompt) */
};

/*
 * Called for each generated token with its text (not NUL-terminated; may be
 * empty for control tokens or part of a UTF-8 sequence).  Return non-zero to
 * stop generating.
 */
typedef int (*strata_token_fn)(void *user, int32_t id, const char *piece, size_t len);

/*
 * Make an engine from command-line style arguments (argv[0] is the program;
 * "-c FILE" names an INI file).  Loads the model, tokenizer and plugins.
 * Returns 0 and *out (free with strata_engine_free), 1 when --help was
 * printed, or a negative errno.
 */
int strata_engine_create_args(int argc, char **argv, struct strata_engine **out);
void strata_engine_free(struct strata_engine *e);

/*
 * Tokenize the configured prompt (-p / -f / INI) with the model's rules
 * (BOS per the vocabulary or --bos/--no-bos).  *ids is malloc'd; returns the
 * count or a negative errno.
 */
int strata_engine_prompt_tokens(struct strata_engine *e, int32_t **ids);

/*
 * Reset the sequence, read the prompt through the configured prompt paths,
 * then sample up to n_predict tokens (< 0: until EOS or the context is full),
 * calling fn for each.  stats may be NULL.  Returns the number of tokens
 * generated, or a negative errno.
 */
int strata_generate(struct strata_engine *e, const int32_t *prompt, uint32_t n_prompt,
		    int32_t n_predict, strata_token_fn fn, void *user, struct strata_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
