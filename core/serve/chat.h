/*
 * chat.h - chat templates: OpenAI-style messages to one prompt text.
 *
 * The model's GGUF key tokenizer.chat_template is a Jinja program; rather
 * than run Jinja, the server recognises the few formats it serves (by the
 * markers their templates contain, as llama.cpp's detection does) and
 * renders them in C.  The rendered text holds special tokens as text
 * ("<|im_start|>"): the caller tokenizes it with special-token parsing and
 * the vocabulary's BOS rule, so a template never writes BOS itself.
 */
#ifndef STRATA_SERVE_CHAT_H
#define STRATA_SERVE_CHAT_H

#include <stddef.h>

/* In the order of the [serve] chat_template choices (auto|chatml|glm4|llama3|plain). */
enum strata_chat_fmt {
	STRATA_CHAT_AUTO = 0,
	STRATA_CHAT_CHATML,  /* <|im_start|>role\n...<|im_end|>\n (Qwen, many others) */
	STRATA_CHAT_GLM4,    /* [gMASK]<sop><|role|>\n... (GLM-4, GLM-4.5) */
	STRATA_CHAT_LLAMA3,  /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
	STRATA_CHAT_PLAIN,   /* "User: ...\n" lines, for models without a chat format */
};

struct strata_chat_msg {
	const char *role;    /* "system", "user" or "assistant" */
	const char *content; /* not NUL-terminated */
	size_t len;
};

/* The format a tokenizer.chat_template text is written for; PLAIN for NULL or unknown. */
enum strata_chat_fmt strata_chat_detect(const char *jinja);

/* "chatml", "glm4", "llama3", "plain" or "auto". */
const char *strata_chat_fmt_name(enum strata_chat_fmt fmt);

/*
 * Render n messages in format fmt (not AUTO), followed by the prompt that
 * opens the assistant's turn.  *out is malloc'd and NUL-terminated, *len its
 * length.  Returns 0, -EINVAL for a role other than system, user or
 * assistant (nothing logged: the caller reports it to its client), or
 * -ENOMEM.
 */
int strata_chat_render(enum strata_chat_fmt fmt, const struct strata_chat_msg *msgs, size_t n,
		       char **out, size_t *len);

#endif
