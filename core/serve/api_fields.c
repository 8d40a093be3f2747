/*
 * api_fields.c - what a request may hold beyond sampling: every field is
 * one strata honours or one that changes nothing (user, metadata, ...);
 * anything else is refused with 400 naming it, never ignored.  Also
 * logit_bias, echo, the token-array prompt, and the body's own checks (JSON,
 * no \u0000 in a string).
 */
#include "serve/api.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api_int.h"

static const char *const g_common[] = {
	"model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed",
	"n", "stream", "stop", "presence_penalty", "frequency_penalty", "logprobs", "logit_bias",
	"user", "metadata", "store", "service_tier", "stream_options", NULL,
};
static const char *const g_chat[] = {
	"messages", "max_completion_tokens", "top_logprobs", "tools", "tool_choice",
	"parallel_tool_calls", "reasoning_effort", "enable_thinking", "chat_template_kwargs",
	"thinking_budget", "reasoning_format", "response_format", NULL,
};
static const char *const g_completion[] = { "prompt", "echo", "suffix", "best_of", NULL };

static int listed(const char *const *list, const char *key)
{
	for (; *list; list++)
		if (!strcmp(*list, key))
			return 1;
	return 0;
}

/* Fields that do nothing here must say nothing: store only false, n and best_of 1, ... */
static int harmless(const cJSON *root, struct strata_api_err *err)
{
	const cJSON *f;

	if ((f = api_field(root, "store")) && !cJSON_IsFalse(f))
		return api_fail(err, "store", "'store': strata keeps no responses (false or leave "
				"it out)");
	if ((f = api_field(root, "n")) && (!cJSON_IsNumber(f) || f->valuedouble != 1))
		return api_fail(err, "n", "'n' must be 1: strata runs one sequence, so it cannot "
				"sample several choices");
	if ((f = api_field(root, "best_of")) && (!cJSON_IsNumber(f) || f->valuedouble != 1))
		return api_fail(err, "best_of", "'best_of' must be 1: strata runs one sequence");
	if ((f = api_field(root, "suffix")) && !(cJSON_IsString(f) && !f->valuestring[0]))
		return api_fail(err, "suffix", "'suffix' (fill in the middle) is not supported");
	if ((f = api_field(root, "user")) && !cJSON_IsString(f))
		return api_fail(err, "user", "'user' must be a string");
	if ((f = api_field(root, "metadata")) && !cJSON_IsObject(f))
		return api_fail(err, "metadata", "'metadata' must be an object");
	if ((f = api_field(root, "service_tier")) && !cJSON_IsString(f))
		return api_fail(err, "service_tier", "'service_tier' must be a string");
	if ((f = api_field(root, "stream_options")) && !cJSON_IsObject(f))
		return api_fail(err, "stream_options", "'stream_options' must be an object");
	return 0;
}

int api_check_fields(const cJSON *root, int chat, struct strata_api_err *err)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, root) {
		if (listed(g_common, it->string) || listed(chat ? g_chat : g_completion, it->string))
			continue;
		return api_fail(err, it->string, "'%.40s' is not something strata can honour for "
				"%s: leave it out", it->string, chat ? "a chat" : "a completion");
	}
	return harmless(root, err);
}

/* Does a JSON string of the text hold the escape \u0000 (cJSON would cut the string there)? */
int api_has_nul(const char *body, size_t len)
{
	if (memchr(body, 0, len))
		return 1;
	for (size_t i = 0; i + 1 < len; i++) {
		if (body[i] != '\\')
			continue;
		if (body[i + 1] == 'u' && i + 5 < len && !memcmp(body + i + 2, "0000", 4))
			return 1;
		i++; /* the escaped character: "\\u0000" is a backslash, then text */
	}
	return 0;
}

int api_logit_bias(const cJSON *root, int32_t n_vocab, struct strata_api_req *r,
		   struct strata_api_err *err)
{
	const cJSON *lb = api_field(root, "logit_bias"), *it;
	size_t n = 0;

	if (!lb)
		return 0;
	if (!cJSON_IsObject(lb))
		return api_fail(err, "logit_bias", "'logit_bias' must map token ids to biases");
	r->bias = calloc((size_t)cJSON_GetArraySize(lb) + 1, sizeof(*r->bias));
	if (!r->bias)
		return -ENOMEM;
	cJSON_ArrayForEach(it, lb) {
		char *end;
		long id = strtol(it->string, &end, 10);

		if (*end || end == it->string || id < 0 || id >= n_vocab)
			return api_fail(err, "logit_bias", "'logit_bias': '%.20s' is not a token id of "
					"this vocabulary (0 to %d)", it->string, (int)n_vocab - 1);
		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < -100 ||
		    it->valuedouble > 100)
			return api_fail(err, "logit_bias", "'logit_bias' values must be numbers in "
					"[-100, 100]");
		r->bias[n].id = (int32_t)id;
		r->bias[n].bias = (float)it->valuedouble;
		n++;
	}
	r->n_bias = n;
	return 0;
}

/* A completion's prompt: text, [text], token ids or [token ids]. */
int api_prompt(const cJSON *root, int32_t n_vocab, struct strata_api_req *r,
	       struct strata_api_err *err)
{
	const cJSON *p = api_field(root, "prompt"), *it, *echo = api_field(root, "echo");
	int i = 0;

	if (echo && !cJSON_IsBool(echo))
		return api_fail(err, "echo", "'echo' must be true or false");
	r->echo = cJSON_IsTrue(echo);
	if (r->echo && r->logprobs)
		return api_fail(err, "echo", "'echo' with 'logprobs': strata has no log-probabilities "
				"of prompt tokens");
	if (!p)
		return api_fail(err, "prompt", "'prompt' is required");
	/* An array of one prompt is what many clients send for a single prompt. */
	if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 &&
	    (cJSON_IsString(p->child) || cJSON_IsArray(p->child)))
		p = p->child;
	else if (cJSON_IsArray(p) && cJSON_GetArraySize(p) > 1 && !cJSON_IsNumber(p->child))
		return api_fail(err, "prompt", "'prompt' holds several prompts: strata runs one "
				"sequence, send them one by one");
	if (cJSON_IsString(p)) {
		if (!(r->prompt = strdup(p->valuestring)))
			return -ENOMEM;
		r->prompt_len = strlen(r->prompt);
		return 0;
	}
	if (!cJSON_IsArray(p) || !cJSON_GetArraySize(p))
		return api_fail(err, "prompt", "'prompt' must be a string or an array of token ids");
	r->prompt_ids = malloc((size_t)cJSON_GetArraySize(p) * sizeof(*r->prompt_ids));
	if (!r->prompt_ids)
		return -ENOMEM;
	cJSON_ArrayForEach(it, p) {
		char param[32];

		snprintf(param, sizeof(param), "prompt[%d]", i);
		if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) ||
		    it->valuedouble < 0 || it->valuedouble >= n_vocab)
			return api_fail(err, param, "'%s' must be a token id of this vocabulary (0 to "
					"%d)", param, (int)n_vocab - 1);
		r->prompt_ids[i++] = (int32_t)it->valuedouble;
	}
	r->n_prompt_ids = (uint32_t)i;
	return 0;
}
