/*
 * anthropic.h - the Anthropic Messages API: POST /v1/messages (whole and
 * streamed with its events) and /v1/messages/count_tokens.  Not public.
 */
#ifndef STRATA_SERVE_ANTHROPIC_H
#define STRATA_SERVE_ANTHROPIC_H

#include "serve/api.h"

struct cJSON;

/*
 * An Anthropic request as the OpenAI chat request strata runs (a new tree
 * in *out).  counting: for count_tokens (max_tokens not required).  Returns
 * 0, -EINVAL with *err filled (Anthropic's field names), or -ENOMEM.
 */
int strata_anthropic_request(const struct cJSON *root, int counting, struct cJSON **out,
			     struct strata_api_err *err);

/* {"type": "error", "error": {"type", "message"}} */
char *strata_anthropic_error_json(unsigned status, const char *message, const char *param);

#endif
