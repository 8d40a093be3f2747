/*
 * api_int.h - what the request parsers share (api.c, api_chat.c).  Not
 * public.
 */
#ifndef STRATA_SERVE_API_INT_H
#define STRATA_SERVE_API_INT_H

#include "serve/api.h"

struct cJSON;

/* Fill err (status 400) and return -EINVAL. */
int api_fail(struct strata_api_err *err, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A member of obj; NULL when absent or JSON null. */
const struct cJSON *api_field(const struct cJSON *obj, const char *name);

/* The request's messages, checked, as templates read them (a new array in *out). */
int api_messages(const struct strata_chat *tmpl, const struct cJSON *root, struct cJSON **out,
		 struct strata_api_err *err);
/* Every field known to the endpoint, and the ones that change nothing harmless. */
int api_check_fields(const struct cJSON *root, int chat, struct strata_api_err *err);
/* The JSON text holds a NUL byte or the escape \u0000. */
int api_has_nul(const char *body, size_t len);
int api_logit_bias(const struct cJSON *root, int32_t n_vocab, struct strata_api_req *r,
		   struct strata_api_err *err);
/* A completion's prompt (text or token ids) and echo. */
int api_prompt(const struct cJSON *root, int32_t n_vocab, struct strata_api_req *r,
	       struct strata_api_err *err);
/* choice.logprobs for m (null when m->e is NULL: not asked for). */
int api_add_logprobs(struct cJSON *choice, int chat, const struct strata_api_msg *m);
/* reasoning_effort, enable_thinking, chat_template_kwargs, thinking_budget, reasoning_format. */
int api_thinking(const struct cJSON *root, struct strata_api_req *r, struct strata_api_err *err);
/* tools, tool_choice and parallel_tool_calls into r (a forced call's grammar too). */
int api_tools(const struct cJSON *root, const struct strata_api_ctx *ctx,
	      struct strata_api_req *r, struct strata_api_err *err);
/* response_format: text, json_object or json_schema, compiled into r->grammar. */
int api_response_format(const struct cJSON *root, struct strata_api_req *r,
			struct strata_api_err *err);
/* Render with the template; a refusal is a 400, a failure a 500 naming the line. */
int api_render(const struct strata_chat *tmpl, const struct strata_chat_in *in, char **prompt,
	       size_t *len, struct strata_api_err *err);

#endif
