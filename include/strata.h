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

/*
 * What libstrata exports: only the functions declared here (the library is
 * built with hidden visibility otherwise).  An application defines nothing;
 * STRATA_BUILDING_LIB is the library's own.
 */
#if defined(_WIN32)
#if defined(STRATA_BUILDING_LIB)
#define STRATA_API __declspec(dllexport)
#else
#define STRATA_API __declspec(dllimport)
#endif
#else
#define STRATA_API __attribute__((visibility("default")))
#endif

struct strata_engine;

/* Why a generation ended (struct strata_stats.finish). */
enum strata_finish {
	STRATA_FINISH_EOG = 0, /* the model produced an end-of-generation token */
	STRATA_FINISH_LENGTH,  /* n_predict tokens were generated */
	STRATA_FINISH_CTX,     /* the context is full */
	STRATA_FINISH_CALLER,  /* the token callback returned non-zero */
};

/* Timings of one strata_generate() call. */
struct strata_stats {
	uint32_t n_prompt;   /* prompt tokens (n_reused of them resumed, not evaluated) */
	uint32_t n_gen;      /* tokens generated */
	double prompt_ms;    /* wall time of the prompt (of its n_prompt - n_reused tokens read) */
	double gen_ms;       /* wall time of generation (after the prompt) */
	uint32_t n_reused;   /* prompt tokens kept from the sequence, not evaluated again */
	uint32_t finish;     /* enum strata_finish */
	uint32_t n_chunks;   /* forward passes the prompt took */
	double ple_wait_ms;  /* qwen4exp: how long the PLE layer waited for its rows in the prompt */
	/* speculative decoding ([spec] drafter): passes that verified drafts, drafts, kept drafts */
	uint32_t n_windows, n_drafted, n_accepted;
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
STRATA_API int strata_engine_create_args(int argc, char **argv, struct strata_engine **out);
STRATA_API void strata_engine_free(struct strata_engine *e);

/*
 * Tokenize the configured prompt (-p / -f / INI) with the model's rules
 * (BOS per the vocabulary or --bos/--no-bos).  *ids is malloc'd; returns the
 * count or a negative errno.
 */
STRATA_API int strata_engine_prompt_tokens(struct strata_engine *e, int32_t **ids);

/*
 * Bring the engine's sequence to the prompt, then sample up to n_predict
 * tokens (< 0: until EOS or the context is full), calling fn for each.  The
 * sequence resumes from the longest prefix of the prompt it shares with
 * what it holds or with a turn checkpoint ([serve] checkpoints; 0 = never;
 * never while writing --dump-logits), at most all but the prompt's last
 * token; the rest is read through the configured prompt paths, in parts
 * split at the last checkpoint.  A checkpoint is kept at the end of the
 * prompt and of each completed generation.  stats may be NULL; its n_reused
 * counts the resumed tokens.  Returns the number of tokens generated, or a
 * negative errno.
 */
STRATA_API int strata_generate(struct strata_engine *e, const int32_t *prompt, uint32_t n_prompt,
		    int32_t n_predict, strata_token_fn fn, void *user, struct strata_stats *stats);

/*
 * The text strata_engine_prompt_tokens() read (the configured -p, -f or INI
 * prompt), len bytes, not NUL-terminated; "" before that call.  Owned by e.
 */
STRATA_API const char *strata_engine_prompt_text(const struct strata_engine *e, size_t *len);

/*
 * Write the .slog file of the last strata_generate() (made with
 * --dump-logits): the tokens (n_prompt of the prompt, then n_gen generated)
 * and every logits row, in the layout of strata's golden files, and print
 * the sha256 of the row that chose the first generated token.  0 or -errno.
 */
STRATA_API int strata_engine_write_dump(struct strata_engine *e, const int32_t *tokens,
					uint32_t n_prompt, uint32_t n_gen, const char *path);

/*
 * Serve e over HTTP ([serve] host, port, ...: the OpenAI, Anthropic and
 * llama.cpp routes, the web app) until SIGINT or SIGTERM.  0 or -errno.
 */
STRATA_API int strata_serve(struct strata_engine *e);

/* ---- one request at a time: what a server needs --------------------------- */

/* Flags for strata_engine_tokenize(). */
#define STRATA_TOKENIZE_ADD_BOS 1u       /* BOS (and EOS) where the vocabulary asks for them */
#define STRATA_TOKENIZE_PARSE_SPECIAL 2u /* control tokens written in the text become tokens */

/* Length and sampling of one generation (strata_generate_ex). */
struct strata_gen_params {
	int32_t n_predict;      /* tokens to generate at most; < 0: until EOS or a full context */
	float temp;             /* <= 0: greedy */
	int32_t top_k;          /* 0: off */
	float top_p;            /* in (0, 1]; 1: off */
	float min_p;            /* in [0, 1]; 0: off */
	float repeat_penalty;   /* > 0; 1: off */
	int32_t repeat_last_n;  /* >= 0 */
	uint64_t seed;          /* UINT64_MAX: a fresh seed from the OS */
	/*
	 * Polled (with the callback's user pointer) before every forward pass:
	 * each prompt chunk and each generated token.  Non-zero abandons the
	 * call, which returns -ECANCELED without logging.  May be NULL.
	 */
	int (*cancel)(void *user);
	/*
	 * Called (with the callback's user pointer) before each token is
	 * sampled, with the n_vocab logits it is sampled from, which it may
	 * change in place (a mask, penalties); they are the engine's scratch for
	 * this step and stay as left until the token callback has run.
	 * Non-zero ends the generation as a token callback's non-zero does.
	 * May be NULL.
	 */
	int (*logits)(void *user, float *logits, int32_t n_vocab);
};

/* p = the configuration's [run] settings (n_predict, temp, top_k, ..., seed). */
STRATA_API void strata_engine_gen_defaults(const struct strata_engine *e, struct strata_gen_params *p);

/*
 * Tokenize len bytes of text with STRATA_TOKENIZE_* flags.  Safe to call
 * from any thread, also while another thread generates.  *ids is malloc'd
 * (NULL for 0 ids); returns the count or a negative errno (logged).
 */
STRATA_API int strata_engine_tokenize(const struct strata_engine *e, const char *text, size_t len,
			   unsigned flags, int32_t **ids);

/* The model's name: its file name without directories and ".gguf".  Owned by e. */
STRATA_API const char *strata_engine_model_name(const struct strata_engine *e);
/* Positions of the engine's one sequence (prompt + generated tokens fit in it). */
STRATA_API uint32_t strata_engine_n_ctx(const struct strata_engine *e);
/* The GGUF key tokenizer.chat_template (a Jinja text), or NULL.  Owned by e. */
STRATA_API const char *strata_engine_chat_template(const struct strata_engine *e);

/* The model's architecture, its GGUF general.architecture ("llama", "qwen4exp").  Owned by e. */
STRATA_API const char *strata_engine_arch(const struct strata_engine *e);
/*
 * The engine's value of [section] key as text, as strata.ini would spell it
 * (defaults included: "serve", "port" gives "8080"), NULL when unset or
 * unknown.  Owned by e.  What it was made with: a server reads its [serve]
 * settings this way.
 */
STRATA_API const char *strata_engine_setting(const struct strata_engine *e, const char *section,
					     const char *key);

/* Tokens in the vocabulary (ids are 0 .. n - 1). */
STRATA_API int32_t strata_engine_n_vocab(const struct strata_engine *e);
/* The vocabulary's BOS and EOS ids; -1 when it has none. */
STRATA_API int32_t strata_engine_token_bos(const struct strata_engine *e);
STRATA_API int32_t strata_engine_token_eos(const struct strata_engine *e);
/* 1 when token id ends a generation (EOS, end of turn, ...). */
STRATA_API int strata_engine_token_is_eog(const struct strata_engine *e, int32_t id);
/* The text of token id as the vocabulary stores it ("<|im_start|>"); NULL out of range. */
STRATA_API const char *strata_engine_token_text(const struct strata_engine *e, int32_t id);
/*
 * The bytes token id adds to a generated text (what the token callback's
 * piece holds; "" for a control token), at most cap into buf, no NUL;
 * returns the full length like snprintf, or -EINVAL out of range.
 */
STRATA_API int strata_engine_token_piece(const struct strata_engine *e, int32_t id, char *buf, size_t cap);
/*
 * The text of n ids (control tokens written as their text when special is
 * non-zero, else left out) into buf, at most cap bytes and no NUL; returns
 * the full length like snprintf, or -EINVAL for an id out of range.
 */
STRATA_API int strata_engine_detokenize(const struct strata_engine *e, const int32_t *ids, size_t n,
			     int special, char *buf, size_t cap);

/*
 * strata_generate() with per-call parameters: a sampler is made from p for
 * this call (the engine's own sampler and its random state are untouched)
 * and p->cancel is polled.  Never writes --dump-logits rows.  Returns the
 * number of tokens generated, -ECANCELED when p->cancel said so, -EINVAL
 * for parameters out of range (logged), or another negative errno.  One
 * call at a time per engine.
 */
STRATA_API int strata_generate_ex(struct strata_engine *e, const int32_t *prompt, uint32_t n_prompt,
		       const struct strata_gen_params *p, strata_token_fn fn, void *user,
		       struct strata_stats *stats);

/*
 * The message of the last error strata logged on the calling thread (the
 * text of its "strata: error:" line, with file and offset where there are
 * any), "" when none: what to tell the user whose call just failed.  The
 * calls that make, feed or read an engine (strata_engine_open, _create_args,
 * _new_sequence, _prompt_tokens, _tokenize, strata_generate, _ex,
 * strata_params_set, _load)
 * clear it first, so it tells of the last of them alone.  Owned
 * by strata; valid until this thread calls strata again.  A failed
 * generation leaves the engine usable: the next call reads its prompt again
 * where the sequence could not be kept.
 */
STRATA_API const char *strata_last_error(void);

/* Totals of the streamed experts ([model] experts = stream) since the engine was made. */
struct strata_expert_stats {
	uint64_t hits, misses;   /* experts asked for, found in the cache or read */
	uint64_t reads, bytes;   /* reads that landed and their bytes */
	uint64_t retries;        /* reads repeated after a failure or a short count */
	uint64_t failures;       /* forward passes failed by a read */
	uint32_t slots;          /* experts the cache holds */
};

/*
 * Fill *st and return 0, or -ENOENT when the experts are mapped (or the
 * model has none).  Call it from the thread that generates, between calls.
 */
STRATA_API int strata_engine_expert_stats(const struct strata_engine *e, struct strata_expert_stats *st);

/* The device's expert cache ([gpu] expert_cache) since the engine was made. */
struct strata_gpu_cache_stats {
	uint64_t hits, misses;   /* routed (token, expert) pairs resident on the device or not */
	uint64_t fills;          /* misses copied into a free slot (first use) */
	uint64_t swaps;          /* residents replaced by adaptive rounds */
	uint64_t pcie;           /* misses run on the device over the link ([gpu] pcie_frac) */
	uint64_t lent;           /* experts prompt chunks streamed into borrowed slots */
	uint64_t refills;        /* experts copied back into borrowed slots */
	uint64_t bytes_in;       /* expert bytes copied to the device while running */
	uint64_t refill_bytes;   /* of them refills */
	double refill_ms;        /* time the refills took */
	uint32_t slots, used;    /* experts the cache holds; slots holding one now */
};

/*
 * Fill *st and return 0, or -ENOENT when there is no device or it caches no
 * expert.  Call it from the thread that generates, between calls.
 */
STRATA_API int strata_engine_gpu_cache_stats(const struct strata_engine *e,
					     struct strata_gpu_cache_stats *st);

/*
 * One line naming the backends the engine runs on, what each holds and the
 * bytes that crossed a device's link so far ("backends: cpu (avx512): 16 of
 * 16 layers, ..."), into buf (NUL-terminated).  Returns its length.  Call
 * it from the thread that generates, between calls.
 */
STRATA_API size_t strata_engine_backends(const struct strata_engine *e, char *buf, size_t n);

/* ---- embedding without an argv: parameters, logging ------------------------ */

/*
 * Every setting of strata.ini, with its default until set.  Made by
 * strata_params_create, freed by strata_params_free; an engine made from it
 * keeps nothing of it, so it may be freed (or changed and used again) at once.
 */
struct strata_params;

STRATA_API int strata_params_create(struct strata_params **out);
STRATA_API void strata_params_free(struct strata_params *p);

/*
 * Set [section] key to value (text, as in strata.ini: "model", "path",
 * "/models/m.gguf"; "run", "temp", "0").  Checked now with strata.ini's
 * rules: an unknown key of a core section (with the nearest known one) or a
 * bad value is -EINVAL after one error line, and strata_last_error() says
 * which.  A plugin's section takes any key; the plugin checks them when it
 * loads.  The environment (STRATA_*) is not read.
 */
STRATA_API int strata_params_set(struct strata_params *p, const char *section, const char *key,
				 const char *value);
/* Load an INI file as -c does (later sets and loads override it); 0 or -errno (logged). */
STRATA_API int strata_params_load(struct strata_params *p, const char *ini_path);
/* The value of [section] key as text (defaults included), NULL when unset.  Owned by p. */
STRATA_API const char *strata_params_get(const struct strata_params *p, const char *section,
					 const char *key);

/*
 * Make an engine from p: loads the model, tokenizer and plugins (searched
 * in [plugins] dir, STRATA_PLUGIN_PATH, beside the executable, and in
 * strata/ beside libstrata).  Returns 0 and *out (free with
 * strata_engine_free), or a negative errno with strata_last_error() set.
 */
STRATA_API int strata_engine_open(const struct strata_params *p, struct strata_engine **out);

/*
 * Another engine on e's model, loaded once: its own sequence (as many
 * positions as e's), sampler, history and turn checkpoints; the model,
 * tokenizer, plugins, thread pool and streamed-expert cache shared with e
 * and every other engine made this way.  Each is freed with
 * strata_engine_free, in any order (the model goes with the last).  Engines
 * on one model generate one at a time: a second thread's strata_generate
 * waits for the first's.  -ENOTSUP while e runs on a device ([gpu]): the
 * device holds the state of one sequence for now.
 */
STRATA_API int strata_engine_new_sequence(struct strata_engine *e, struct strata_engine **out);

/*
 * Where strata's log lines go: fn(user, level, line) for each (level 0
 * error, 1 warning, 2 info, 3 debug, 4 a progress line that a terminal
 * would redraw; line without "strata: " or a newline), from whichever
 * thread logs, so fn must be thread-safe.  NULL: stderr, the default.
 * Process-wide, like the level below; set it before making an engine.
 */
typedef void (*strata_log_fn)(void *user, int level, const char *line);
STRATA_API void strata_set_log(strata_log_fn fn, void *user);
/* Lines above this level are dropped (default 2: info). */
STRATA_API void strata_set_log_level(int level);

/* libstrata's version ("0.1.0"): the library running, which may be newer than this header. */
STRATA_API const char *strata_version(void);

/* Free what a strata_* call returned malloc'd (token ids): the library's own free(). */
STRATA_API void strata_free(void *p);

/*
 * The strata command's tools, for any program: strata_command(argc, argv)
 * runs the one named argv[0] (info, tokenize, plugins, io-check, ple-ids,
 * ple-bench) with its arguments, as `strata NAME ARGS...` does: its output
 * on stdout, errors through the log.  Returns its exit status (0, 1 after an
 * error, 2 for bad usage), or -ENOENT (logged) when no tool has that name.
 * strata_command_name(i, &help) is the i-th tool's name and one-line help
 * (help may be NULL), NULL past the last.
 */
STRATA_API int strata_command(int argc, char **argv);
STRATA_API const char *strata_command_name(int i, const char **help);

#ifdef __cplusplus
}
#endif

#endif
