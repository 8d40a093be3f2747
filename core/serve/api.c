#define _GNU_SOURCE /* strndup */
/*
 * api.c - parsing OpenAI requests with cJSON, and writing the responses.
 *
 * Field names, types and ranges follow the OpenAI API reference for
 * /v1/chat/completions and /v1/completions; fields this engine has no use
 * for (logprobs, tools, penalties other than repeat_penalty) are ignored, as
 * other OpenAI-compatible servers do, but those it reads are checked.
 */
#include "serve/api.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api_int.h"
#include "serve/grammar.h"
#include "serve/steer.h"
#include "util/strbuf.h"

#define MAX_STOP 16

#define fail api_fail

int api_fail(struct strata_api_err *err, const char *param, const char *fmt, ...)
{
	va_list ap;

	err->status = 400;
	snprintf(err->param, sizeof(err->param), "%s", param ? param : "");
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

#define field api_field

/* A field that is absent or JSON null counts as not given. */
const cJSON *api_field(const cJSON *obj, const char *name)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsNull(f) ? NULL : f;
}

static int get_number(const cJSON *obj, const char *name, double lo, double hi, int lo_open,
		      float *out, struct strata_api_err *err)
{
	const cJSON *f = field(obj, name);
	double d;

	if (!f)
		return 0;
	d = f->valuedouble;
	if (!cJSON_IsNumber(f) || !isfinite(d) || (lo_open ? d <= lo : d < lo) || d > hi)
		return fail(err, name, "'%s' must be a number in %c%g, %g]", name,
			    lo_open ? '(' : '[', lo, hi);
	*out = (float)d;
	return 0;
}

static int get_int(const cJSON *obj, const char *name, double lo, double hi, double *out,
		   struct strata_api_err *err)
{
	const cJSON *f = field(obj, name);
	double d;

	if (!f)
		return 0;
	d = f->valuedouble;
	if (!cJSON_IsNumber(f) || !isfinite(d) || d != floor(d) || d < lo || d > hi)
		return fail(err, name, "'%s' must be an integer in [%.0f, %.0f]", name, lo, hi);
	*out = d;
	return 0;
}

static int get_bool(const cJSON *obj, const char *name, int *out, struct strata_api_err *err)
{
	const cJSON *f = field(obj, name);

	if (!f)
		return 0;
	if (!cJSON_IsBool(f))
		return fail(err, name, "'%s' must be true or false", name);
	*out = cJSON_IsTrue(f);
	return 0;
}

static int add_stop(struct strata_api_req *r, const cJSON *s, const char *param,
		    struct strata_api_err *err)
{
	if (!cJSON_IsString(s) || !s->valuestring[0])
		return fail(err, param, "'%s' must be a non-empty string", param);
	if (r->n_stop == MAX_STOP)
		return fail(err, "stop", "'stop' takes at most %d strings", MAX_STOP);
	r->stop[r->n_stop] = strdup(s->valuestring);
	if (!r->stop[r->n_stop])
		return -ENOMEM;
	r->n_stop++;
	return 0;
}

static int get_stop(const cJSON *obj, struct strata_api_req *r, struct strata_api_err *err)
{
	const cJSON *f = field(obj, "stop"), *s;
	char param[32];
	int i = 0, rc;

	if (!f)
		return 0;
	if (!cJSON_IsString(f) && !cJSON_IsArray(f))
		return fail(err, "stop", "'stop' must be a string or an array of strings");
	r->stop = calloc(MAX_STOP, sizeof(char *));
	if (!r->stop)
		return -ENOMEM;
	if (cJSON_IsString(f))
		return add_stop(r, f, "stop", err);
	cJSON_ArrayForEach(s, f) {
		snprintf(param, sizeof(param), "stop[%d]", i++);
		if ((rc = add_stop(r, s, param, err)))
			return rc;
	}
	return 0;
}

/*
 * Chat: logprobs true/false and top_logprobs 0..20.  Completions (the
 * legacy API): logprobs is the number of alternatives, 0..20 here.
 */
static int get_logprobs(const cJSON *root, struct strata_api_req *r, struct strata_api_err *err)
{
	const cJSON *lp = field(root, "logprobs");
	double top = 0;
	int rc;

	if (!r->chat) {
		if ((rc = get_int(root, "logprobs", 0, STRATA_MAX_TOP_LOGPROBS, &top, err)))
			return rc;
		r->logprobs = lp != NULL;
		r->top_logprobs = (int)top;
		return 0;
	}
	if ((rc = get_bool(root, "logprobs", &r->logprobs, err)) ||
	    (rc = get_int(root, "top_logprobs", 0, STRATA_MAX_TOP_LOGPROBS, &top, err)))
		return rc;
	if (field(root, "top_logprobs") && !r->logprobs)
		return fail(err, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
	r->top_logprobs = (int)top;
	return 0;
}

/* The sampling and length fields both endpoints share. */
static int get_common(const cJSON *root, struct strata_api_req *r, struct strata_api_err *err)
{
	struct strata_gen_params *p = &r->gp;
	const cJSON *model = field(root, "model");
	double v = -1, seed = -1, n = 1;
	int rc;

	if (model && !cJSON_IsString(model))
		return fail(err, "model", "'model' must be a string");
	if ((rc = get_int(root, "max_tokens", 1, 2147483647.0, &v, err)))
		return rc;
	if (v < 0 && (rc = get_int(root, "max_completion_tokens", 1, 2147483647.0, &v, err)))
		return rc;
	r->max_tokens = (int32_t)v;
	if ((rc = get_number(root, "temperature", 0, 2, 0, &p->temp, err)) ||
	    (rc = get_number(root, "top_p", 0, 1, 1, &p->top_p, err)) ||
	    (rc = get_number(root, "min_p", 0, 1, 0, &p->min_p, err)) ||
	    (rc = get_number(root, "repeat_penalty", 0, 100, 1, &p->repeat_penalty, err)))
		return rc;
	v = p->top_k;
	if ((rc = get_int(root, "top_k", 0, 2147483647.0, &v, err)))
		return rc;
	p->top_k = (int32_t)v;
	/* -1 asks for a fresh seed, as llama.cpp's server has it. */
	if ((rc = get_int(root, "seed", -1, 9007199254740991.0, &seed, err)))
		return rc;
	if (field(root, "seed"))
		p->seed = seed < 0 ? UINT64_MAX : (uint64_t)seed;
	if ((rc = get_int(root, "n", 1, 1, &n, err)) ||
	    (rc = get_bool(root, "stream", &r->stream, err)) ||
	    (rc = get_number(root, "presence_penalty", -2, 2, 0, &r->presence, err)) ||
	    (rc = get_number(root, "frequency_penalty", -2, 2, 0, &r->frequency, err)) ||
	    (rc = get_logprobs(root, r, err)))
		return rc;
	return get_stop(root, r, err);
}

/* The chat: messages checked and rendered by the template. */
static int render_messages(const cJSON *root, const struct strata_api_ctx *ctx,
			   struct strata_api_req *r, struct strata_api_err *err)
{
	const struct strata_chat *tmpl = ctx->tmpl;
	struct strata_chat_in in = { .add_generation_prompt = 1 };
	cJSON *msgs;
	int rc = api_response_format(root, r, err);

	if (rc || (rc = api_tools(root, ctx, r, err)) || (rc = api_thinking(root, r, err)) ||
	    (rc = api_messages(tmpl, root, &msgs, err)))
		return rc;
	in.messages = msgs;
	in.tools = r->tools;
	in.extra = r->tmpl_vars;
	rc = api_render(tmpl, &in, &r->prompt, &r->prompt_len, err);
	cJSON_Delete(msgs);
	return rc;
}

int strata_api_body(const char *body, size_t len, cJSON **out, struct strata_api_err *err)
{
	const char *end = NULL;
	cJSON *root;

	memset(err, 0, sizeof(*err));
	*out = NULL;
	root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	/* Only white space may follow the value. */
	while (root && end < body + len && strchr(" \t\r\n", *end) && *end)
		end++;
	if (!root || end != body + len) {
		size_t at = end && end >= body ? (size_t)(end - body) : 0;

		cJSON_Delete(root);
		return fail(err, NULL, "malformed JSON in the request body near byte %zu", at);
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return fail(err, NULL, "the request body must be a JSON object");
	}
	/* cJSON ends a string at its NUL: the prompt would be cut there without a word. */
	if (api_has_nul(body, len)) {
		cJSON_Delete(root);
		return fail(err, NULL, "a string in the request holds \\u0000 (NUL), which strata "
			    "cannot pass to the model");
	}
	*out = root;
	return 0;
}

int strata_api_parse_obj(const cJSON *root, int chat, const struct strata_api_ctx *ctx,
			 struct strata_api_req *r, struct strata_api_err *err)
{
	int rc;

	memset(r, 0, sizeof(*r));
	memset(err, 0, sizeof(*err));
	r->chat = chat;
	r->max_tokens = -1;
	r->think_budget = -1;
	r->gp = *ctx->defaults;
	if ((rc = api_check_fields(root, chat, err)) || (rc = get_common(root, r, err)) ||
	    (rc = api_logit_bias(root, ctx->n_vocab, r, err)))
		goto out;
	rc = chat ? render_messages(root, ctx, r, err) : api_prompt(root, ctx->n_vocab, r, err);
out:
	if (rc)
		strata_api_req_free(r);
	return rc;
}

int strata_api_parse(const char *body, size_t len, int chat, const struct strata_api_ctx *ctx,
		     struct strata_api_req *r, struct strata_api_err *err)
{
	cJSON *root;
	int rc = strata_api_body(body, len, &root, err);

	memset(r, 0, sizeof(*r));
	if (rc)
		return rc;
	rc = strata_api_parse_obj(root, chat, ctx, r, err);
	cJSON_Delete(root);
	return rc;
}

void strata_api_req_free(struct strata_api_req *r)
{
	for (size_t i = 0; i < r->n_stop; i++)
		free(r->stop[i]);
	free(r->stop);
	free(r->prompt);
	cJSON_Delete(r->tools);
	cJSON_Delete(r->tmpl_vars);
	free(r->tool_name);
	free(r->bias);
	free(r->prompt_ids);
	strata_grammar_free(r->grammar);
	memset(r, 0, sizeof(*r));
}

/* ---- responses ------------------------------------------------------------- */

/* Print and free a tree; NULL when any step ran out of memory. */
static char *finish_json(cJSON *root, int ok)
{
	char *s = NULL, *copy = NULL;

	if (root && ok)
		s = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (s) {
		copy = strdup(s); /* callers free() it; cJSON may use other hooks */
		cJSON_free(s);
	}
	return copy;
}

static const char *error_type(unsigned status)
{
	switch (status) {
	case 401:
		return "authentication_error";
	case 403:
		return "permission_error";
	case 404:
		return "not_found_error";
	case 503:
		return "unavailable_error";
	default:
		return status >= 500 ? "server_error" : "invalid_request_error";
	}
}

char *strata_api_error_json(unsigned status, const char *message, const char *param)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
	int ok = e && cJSON_AddStringToObject(e, "message", message) &&
		 cJSON_AddStringToObject(e, "type", error_type(status)) &&
		 (param && *param ? cJSON_AddStringToObject(e, "param", param) != NULL
				  : cJSON_AddNullToObject(e, "param") != NULL) &&
		 cJSON_AddNumberToObject(e, "code", status);

	return finish_json(root, ok);
}

static int add_head(cJSON *root, const struct strata_api_head *h, const char *object)
{
	return cJSON_AddStringToObject(root, "id", h->id) &&
	       cJSON_AddStringToObject(root, "object", object) &&
	       cJSON_AddNumberToObject(root, "created", (double)h->created) &&
	       cJSON_AddStringToObject(root, "model", h->model);
}

static int add_usage(cJSON *root, uint32_t n_prompt, uint32_t n_gen)
{
	cJSON *u = cJSON_AddObjectToObject(root, "usage");

	return u && cJSON_AddNumberToObject(u, "prompt_tokens", n_prompt) &&
	       cJSON_AddNumberToObject(u, "completion_tokens", n_gen) &&
	       cJSON_AddNumberToObject(u, "total_tokens", (double)n_prompt + n_gen);
}

/* A string member of n bytes (a NUL-terminated copy: cJSON stops at the first NUL). */
static int add_strn(cJSON *o, const char *key, const char *s, size_t n)
{
	char *t = strndup(s ? s : "", n);
	int ok = t && cJSON_AddStringToObject(o, key, t);

	free(t);
	return ok;
}

/* [{"index"?, "id", "type", "function": {"name", "arguments"}}] of m's calls. */
static int add_calls(cJSON *o, const struct strata_api_msg *m, int with_index)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "tool_calls");
	int ok = arr != NULL;

	for (size_t i = 0; ok && i < m->n_calls; i++) {
		const struct strata_mp_call *c = &m->calls[i];
		cJSON *tc = cJSON_CreateObject(), *fn;

		ok = tc && cJSON_AddItemToArray(arr, tc) &&
		     (!with_index || cJSON_AddNumberToObject(tc, "index", (double)(m->first_call + i))) &&
		     cJSON_AddStringToObject(tc, "id", c->id) &&
		     cJSON_AddStringToObject(tc, "type", "function") &&
		     (fn = cJSON_AddObjectToObject(tc, "function")) &&
		     cJSON_AddStringToObject(fn, "name", c->name) &&
		     cJSON_AddStringToObject(fn, "arguments", c->args);
		if (!ok && tc && !tc->next && arr->child != tc)
			cJSON_Delete(tc);
	}
	return ok;
}

/* A chat message (delta: only what it carries) from m. */
static int add_message(cJSON *msg, const struct strata_api_msg *m, int delta)
{
	int ok = 1;

	if (delta) {
		if (m->content && m->content_len)
			ok = add_strn(msg, "content", m->content, m->content_len);
	} else if (m->content && (m->content_len || !m->n_calls)) {
		ok = add_strn(msg, "content", m->content, m->content_len);
	} else {
		ok = cJSON_AddNullToObject(msg, "content") != NULL;
	}
	if (ok && m->reasoning && m->reasoning_len)
		ok = add_strn(msg, "reasoning_content", m->reasoning, m->reasoning_len);
	if (ok && m->n_calls)
		ok = add_calls(msg, m, delta);
	return ok;
}

char *strata_api_completion_json(const struct strata_api_head *h, const struct strata_api_msg *m,
				 const char *finish, uint32_t n_prompt, uint32_t n_gen)
{
	cJSON *root = cJSON_CreateObject(), *choices, *c = NULL, *msg;
	int ok = root && add_head(root, h, h->chat ? "chat.completion" : "text_completion") &&
		 (choices = cJSON_AddArrayToObject(root, "choices")) &&
		 (c = cJSON_CreateObject()) && cJSON_AddItemToArray(choices, c) &&
		 cJSON_AddNumberToObject(c, "index", 0);

	if (ok && h->chat)
		ok = (msg = cJSON_AddObjectToObject(c, "message")) &&
		     cJSON_AddStringToObject(msg, "role", "assistant") && add_message(msg, m, 0) &&
		     api_add_logprobs(c, 1, m);
	else if (ok)
		ok = add_strn(c, "text", m->content, m->content_len) && api_add_logprobs(c, 0, m);
	ok = ok && cJSON_AddStringToObject(c, "finish_reason", finish) &&
	     add_usage(root, n_prompt, n_gen);
	if (ok && m->warning && m->warning[0])
		ok = cJSON_AddStringToObject(root, "warning", m->warning) != NULL;
	return finish_json(root, ok);
}

char *strata_api_chunk_json(const struct strata_api_head *h, const struct strata_api_msg *d,
			    int role, const char *finish, uint32_t n_prompt, uint32_t n_gen)
{
	cJSON *root = cJSON_CreateObject(), *choices, *c = NULL, *delta;
	int ok = root && add_head(root, h, h->chat ? "chat.completion.chunk" : "text_completion") &&
		 (choices = cJSON_AddArrayToObject(root, "choices")) &&
		 (c = cJSON_CreateObject()) && cJSON_AddItemToArray(choices, c) &&
		 cJSON_AddNumberToObject(c, "index", 0);

	if (ok && h->chat) {
		ok = (delta = cJSON_AddObjectToObject(c, "delta")) != NULL;
		if (ok && role)
			ok = cJSON_AddStringToObject(delta, "role", "assistant") &&
			     cJSON_AddStringToObject(delta, "content", "");
		if (ok)
			ok = add_message(delta, d, 1) && (!d->n_lp || api_add_logprobs(c, 1, d));
	} else if (ok) {
		ok = add_strn(c, "text", d->content, d->content_len) && api_add_logprobs(c, 0, d);
	}
	if (ok)
		ok = finish ? cJSON_AddStringToObject(c, "finish_reason", finish) != NULL
			    : cJSON_AddNullToObject(c, "finish_reason") != NULL;
	if (ok && finish)
		ok = add_usage(root, n_prompt, n_gen);
	if (ok && d->warning && d->warning[0])
		ok = cJSON_AddStringToObject(root, "warning", d->warning) != NULL;
	return finish_json(root, ok);
}

char *strata_api_models_json(const char *model, uint32_t n_ctx, long long created)
{
	cJSON *root = cJSON_CreateObject(), *data, *m, *meta;
	int ok = root && cJSON_AddStringToObject(root, "object", "list") &&
		 (data = cJSON_AddArrayToObject(root, "data")) &&
		 (m = cJSON_CreateObject()) && cJSON_AddItemToArray(data, m) &&
		 cJSON_AddStringToObject(m, "id", model) &&
		 cJSON_AddStringToObject(m, "object", "model") &&
		 cJSON_AddNumberToObject(m, "created", (double)created) &&
		 cJSON_AddStringToObject(m, "owned_by", "strata") &&
		 (meta = cJSON_AddObjectToObject(m, "meta")) &&
		 cJSON_AddNumberToObject(meta, "n_ctx", n_ctx);

	return finish_json(root, ok);
}
