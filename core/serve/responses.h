/*
 * responses.h - the OpenAI Responses API (POST /v1/responses), stateless:
 * whole answers and the stream of response.* events.  Not public.
 */
#ifndef STRATA_SERVE_RESPONSES_H
#define STRATA_SERVE_RESPONSES_H

#include "serve/api.h"

struct cJSON;

/*
 * A Responses request as the OpenAI chat request strata runs (a new tree
 * in *out).  Returns 0, -EINVAL with *err filled, or -ENOMEM.
 */
int strata_responses_request(const struct cJSON *root, struct cJSON **out,
			     struct strata_api_err *err);

#endif
