/*
 * api.h - the OpenAI API's JSON: requests in, responses and errors out.
 *
 * Requests are validated field by field, so a client learns which field is
 * wrong ("'temperature' must be a number in [0, 2]") with status 400.
 * Every builder returns a malloc'd NUL-terminated JSON text (free()), or
 * NULL when memory ran out.
 */
#ifndef STRATA_SERVE_API_H
#define STRATA_SERVE_API_H

#include <stddef.h>
#include <stdint.h>

#include "serve/chat.h"
#include "strata.h"

/* A request that could not be accepted: what the client is told. */
struct strata_api_err {
	unsigned status;    /* HTTP status */
	char message[320];
	char param[64];     /* the offending field ("messages[1].role"), or "" */
};

struct strata_api_req {
	int chat;                     /* 1: /v1/chat/completions, 0: /v1/completions */
	int stream;                   /* "stream": true */
	int32_t max_tokens;           /* "max_tokens"; -1 when not given */
	struct strata_gen_params gp;  /* the defaults with the request's sampling fields */
	char **stop;                  /* "stop": n_stop non-empty strings */
	size_t n_stop;
	char *prompt;                 /* the completion prompt, or the rendered chat */
	size_t prompt_len;
};

/*
 * Parse and validate a request body for a chat (chat != 0) or completion
 * request; a chat is rendered with format fmt (not AUTO).  defaults are the
 * sampling parameters of fields the request leaves out.  Returns 0 and fills
 * *r (free with strata_api_req_free), or -EINVAL with *err filled (status
 * 400), or -ENOMEM.  Nothing is logged: the error goes to the client.
 */
int strata_api_parse(const char *body, size_t len, int chat, enum strata_chat_fmt fmt,
		     const struct strata_gen_params *defaults, struct strata_api_req *r,
		     struct strata_api_err *err);
void strata_api_req_free(struct strata_api_req *r);

/* {"error":{"message","type","param","code"}}; type follows the status. */
char *strata_api_error_json(unsigned status, const char *message, const char *param);

/* What every response of one request shares. */
struct strata_api_head {
	int chat;
	const char *id;     /* "chatcmpl-..." or "cmpl-..." */
	long long created;  /* Unix seconds */
	const char *model;
};

/* chat.completion / text_completion with the whole text and its usage. */
char *strata_api_completion_json(const struct strata_api_head *h, const char *text,
				 const char *finish, uint32_t n_prompt, uint32_t n_gen);

/*
 * One streamed chunk (chat.completion.chunk / text_completion).  text is
 * the delta (len bytes, may be empty); role adds "role":"assistant" to a
 * chat delta; finish (NULL: none yet) ends the choice and then usage
 * (n_prompt, n_gen) is added too.
 */
char *strata_api_chunk_json(const struct strata_api_head *h, const char *text, size_t len,
			    int role, const char *finish, uint32_t n_prompt, uint32_t n_gen);

/* The /v1/models list with the one model. */
char *strata_api_models_json(const char *model, uint32_t n_ctx, long long created);

#endif
