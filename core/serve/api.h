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
#include "serve/msgparse.h"
#include "serve/steer.h"
#include "strata.h"

struct cJSON;

/* A request that could not be accepted: what the client is told. */
struct strata_api_err {
	unsigned status;    /* HTTP status */
	char message[320];
	char param[64];     /* the offending field ("messages[1].role"), or "" */
};

/* What parsing a request needs to know of the server. */
struct strata_api_ctx {
	const struct strata_chat *tmpl;           /* renders a chat */
	const struct strata_gen_params *defaults; /* the sampling of fields left out */
	int32_t n_vocab;                          /* token ids are below this */
	enum strata_toolfmt toolfmt;              /* how the template's model writes calls */
	int tool_sub;                             /* and their inner format (grammar.h) */
};

struct strata_api_bias {
	int32_t id;
	float bias;
};

/* tool_choice */
enum { STRATA_TOOL_AUTO, STRATA_TOOL_NONE, STRATA_TOOL_REQUIRED, STRATA_TOOL_NAMED };

struct strata_api_req {
	int chat;                     /* 1: /v1/chat/completions, 0: /v1/completions */
	int stream;                   /* "stream": true */
	int32_t max_tokens;           /* "max_tokens"; -1 when not given */
	struct strata_gen_params gp;  /* the defaults with the request's sampling fields */
	char **stop;                  /* "stop": n_stop non-empty strings */
	size_t n_stop;
	char *prompt;                 /* the completion prompt, or the rendered chat */
	size_t prompt_len;
	float presence, frequency;    /* presence_penalty, frequency_penalty ([-2, 2]; 0: off) */
	int logprobs;                 /* logprobs asked for */
	int top_logprobs;             /* and this many alternatives per token (0..20) */
	struct cJSON *tmpl_vars;      /* more template variables (enable_thinking, ...), or NULL */
	int think_budget;             /* thinking_budget: reasoning tokens; -1: none */
	int reasoning_raw;            /* reasoning_format "none": <think> stays in the content */
	struct strata_api_bias *bias; /* logit_bias: n_bias token ids and what is added */
	size_t n_bias;
	int echo;                     /* completions: the prompt comes back before the text */
	int32_t *prompt_ids;          /* completions: a prompt given as token ids, or NULL */
	uint32_t n_prompt_ids;
	struct strata_grammar *grammar; /* what the reply must be (response_format, a forced call) */
	struct cJSON *tools;          /* the chat's tools (NULL: none, or tool_choice none) */
	int tool_choice;              /* STRATA_TOOL_* */
	char *tool_name;              /* STRATA_TOOL_NAMED: the function */
	int parallel_tools;           /* parallel_tool_calls (default true) */
};

/*
 * Parse and validate a request body for a chat (chat != 0) or completion
 * request; a chat is rendered with ctx's template.  Every field must be one
 * strata honours or one that changes nothing; others are refused.  Returns
 * 0 and fills *r (free with strata_api_req_free), or -EINVAL with *err
 * filled (status 400; 500 when the template failed), or -ENOMEM.  Nothing
 * is logged: the error goes to the client.
 */
int strata_api_parse(const char *body, size_t len, int chat, const struct strata_api_ctx *ctx,
		     struct strata_api_req *r, struct strata_api_err *err);
/* The same for a request already in JSON (a dialect's, converted). */
int strata_api_parse_obj(const struct cJSON *root, int chat, const struct strata_api_ctx *ctx,
			 struct strata_api_req *r, struct strata_api_err *err);
/*
 * The body as JSON: one object, nothing after it but white space, no
 * \u0000 in a string.  Returns 0 and *root (cJSON_Delete it), or -EINVAL
 * with *err filled.
 */
int strata_api_body(const char *body, size_t len, struct cJSON **root, struct strata_api_err *err);
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

/*
 * A message, whole or a streamed delta: content (len bytes; NULL is null),
 * reasoning (NULL or empty: none), complete tool calls (in a delta: calls
 * first_call, first_call + 1, ...), a warning (NULL or "": none).
 */
struct strata_api_msg {
	const char *content;
	size_t content_len;
	const char *reasoning;
	size_t reasoning_len;
	const struct strata_mp_call *calls;
	size_t n_calls, first_call;
	const char *warning;
	/* logprobs: e non-NULL when they were asked for (n_lp entries; the first one's
	 * text starts at text_offset of the reply) */
	const struct strata_engine *e;
	const struct strata_lp *lp;
	size_t n_lp, text_offset;
};

/* chat.completion / text_completion with the whole message and its usage. */
char *strata_api_completion_json(const struct strata_api_head *h, const struct strata_api_msg *m,
				 const char *finish, uint32_t n_prompt, uint32_t n_gen);

/*
 * One streamed chunk (chat.completion.chunk / text_completion) with the
 * delta d; role adds "role":"assistant" to a chat delta; finish (NULL: none
 * yet) ends the choice and then usage (n_prompt, n_gen) is added too.
 */
char *strata_api_chunk_json(const struct strata_api_head *h, const struct strata_api_msg *d,
			    int role, const char *finish, uint32_t n_prompt, uint32_t n_gen);

/* The /v1/models list with the one model. */
char *strata_api_models_json(const char *model, uint32_t n_ctx, long long created);

#endif
