/*
 * chat.h - the chat template: OpenAI-style messages to one prompt text.
 *
 * The model's GGUF key tokenizer.chat_template is a Jinja program, run by
 * core/tmpl as Python's jinja2 runs it, with the variables chat templates
 * expect: messages, tools, add_generation_prompt, bos_token, eos_token and
 * any the request adds (enable_thinking, reasoning_effort, ...).  [serve]
 * chat_template_file or chat_template replace it; models without one get
 * the built-in "plain" transcript.  The rendered text holds special tokens
 * as text ("<|im_start|>"): the caller tokenizes it with special-token
 * parsing and the vocabulary's BOS rule, so a BOS the template writes at
 * the start is dropped when the tokenizer adds one itself.
 */
#ifndef STRATA_SERVE_CHAT_H
#define STRATA_SERVE_CHAT_H

#include <stddef.h>

#include "tmpl/tmpl.h"

struct cJSON;
struct strata_chat;

struct strata_chat_opts {
	const char *setting;   /* [serve] chat_template: auto, a built-in's name, or Jinja text */
	const char *file;      /* [serve] chat_template_file, or NULL */
	const char *model;     /* the GGUF's tokenizer.chat_template, or NULL */
	const char *fallback;  /* the built-in for a model without one (NULL: plain) */
	const char *bos, *eos; /* the vocabulary's BOS and EOS text ("" when it has none) */
	int tokenizer_adds_bos;/* a rendered leading bos is dropped (the tokenizer adds it) */
};

/*
 * The template opts select, compiled.  A model template that does not
 * compile is logged (with its line) and replaced by the built-in plain
 * transcript; a template the user chose that does not compile, an unknown
 * name or an unreadable file is an error (logged).  Returns 0 and *out
 * (free with strata_chat_free), -EINVAL, -ENOENT or -ENOMEM.
 */
int strata_chat_create(const struct strata_chat_opts *opts, struct strata_chat **out);
void strata_chat_free(struct strata_chat *c);

/* Where the template came from: "the model's", "built-in chatml", "file PATH", "[serve]". */
const char *strata_chat_origin(const struct strata_chat *c);
/* The template's Jinja text (owned by c). */
const char *strata_chat_source(const struct strata_chat *c);
/* 1 when the template's text mentions word (a role, a variable it reads). */
int strata_chat_mentions(const struct strata_chat *c, const char *word);

struct strata_chat_in {
	const struct cJSON *messages; /* an array of message objects, already checked */
	const struct cJSON *tools;    /* an array of tools, or NULL */
	const struct cJSON *extra;    /* more variables (an object: enable_thinking, ...), or NULL */
	int add_generation_prompt;
};

/*
 * Render.  Returns 0 and *out (malloc'd, NUL-terminated, *len bytes), or
 * -EINVAL with *err filled (err->raised: the template refused the
 * conversation with raise_exception; else it failed at err->line), or
 * -ENOMEM.  Nothing is logged.  Thread-safe.
 */
int strata_chat_apply(const struct strata_chat *c, const struct strata_chat_in *in, char **out,
		      size_t *len, struct strata_tmpl_err *err);

/* A message as plain text, for callers without JSON (benchmarks, the fuzzer). */
struct strata_chat_msg {
	const char *role;
	const char *content; /* not NUL-terminated */
	size_t len;
};

/* strata_chat_apply() of n plain messages with the generation prompt. */
int strata_chat_render_msgs(const struct strata_chat *c, const struct strata_chat_msg *msgs,
			    size_t n, char **out, size_t *len, struct strata_tmpl_err *err);

/* The built-in templates' Jinja texts by name (chatml, glm4, llama3, plain, qwen); NULL if none. */
const char *strata_chat_builtin(const char *name);

#endif
