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

#include "util/strbuf.h"

#define MAX_STOP 16

static int fail(struct strata_api_err *err, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct strata_api_err *err, const char *param, const char *fmt, ...)
{
	va_list ap;

	err->status = 400;
	snprintf(err->param, sizeof(err->param), "%s", param ? param : "");
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A field that is absent or JSON null counts as not given. */
static const cJSON *field(const cJSON *obj, const char *name)
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
	    (rc = get_bool(root, "stream", &r->stream, err)))
		return rc;
	return get_stop(root, r, err);
}

/* A message's content: a string, or an array of {"type":"text","text":...} parts. */
static int get_content(const cJSON *msg, int i, struct strata_buf *text, struct strata_api_err *err)
{
	const cJSON *c = field(msg, "content"), *part;
	char param[64];
	int j = 0;

	snprintf(param, sizeof(param), "messages[%d].content", i);
	if (!c)
		return fail(err, param, "'%s' is required", param);
	if (cJSON_IsString(c)) {
		strata_buf_puts(text, c->valuestring);
		return 0;
	}
	if (!cJSON_IsArray(c))
		return fail(err, param, "'%s' must be a string or an array of text parts", param);
	cJSON_ArrayForEach(part, c) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");

		snprintf(param, sizeof(param), "messages[%d].content[%d]", i, j++);
		if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 ||
		    !cJSON_IsString(t))
			return fail(err, param, "'%s' must be {\"type\": \"text\", \"text\": string}",
				    param);
		strata_buf_puts(text, t->valuestring);
	}
	return 0;
}

static int render_messages(const cJSON *root, enum strata_chat_fmt fmt,
			   struct strata_api_req *r, struct strata_api_err *err)
{
	const cJSON *msgs = field(root, "messages"), *m;
	struct strata_chat_msg *cm = NULL;
	struct strata_buf *texts = NULL;
	int n, i = 0, rc = 0;

	if (!msgs)
		return fail(err, "messages", "'messages' is required");
	if (!cJSON_IsArray(msgs) || (n = cJSON_GetArraySize(msgs)) == 0)
		return fail(err, "messages", "'messages' must be a non-empty array");
	cm = calloc((size_t)n, sizeof(*cm));
	texts = calloc((size_t)n, sizeof(*texts));
	if (!cm || !texts) {
		rc = -ENOMEM;
		goto out;
	}
	cJSON_ArrayForEach(m, msgs) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		char param[64];

		snprintf(param, sizeof(param), "messages[%d].role", i);
		if (!cJSON_IsObject(m)) {
			snprintf(param, sizeof(param), "messages[%d]", i);
			rc = fail(err, param, "'%s' must be an object", param);
			goto out;
		}
		if (!cJSON_IsString(role)) {
			rc = fail(err, param, "'%s' must be a string", param);
			goto out;
		}
		cm[i].role = strcmp(role->valuestring, "developer") == 0 ? "system"
								       : role->valuestring;
		if ((rc = get_content(m, i, &texts[i], err)))
			goto out;
		if (texts[i].oom) {
			rc = -ENOMEM;
			goto out;
		}
		cm[i].content = texts[i].p ? texts[i].p : "";
		cm[i].len = texts[i].len;
		i++;
	}
	rc = strata_chat_render(fmt, cm, (size_t)n, &r->prompt, &r->prompt_len);
	if (rc == -EINVAL) {
		char param[64];

		for (i = 0; i < n; i++)
			if (strcmp(cm[i].role, "system") && strcmp(cm[i].role, "user") &&
			    strcmp(cm[i].role, "assistant"))
				break;
		snprintf(param, sizeof(param), "messages[%d].role", i);
		rc = fail(err, param, "'%s' must be system, user or assistant (got '%s')", param,
			  i < n ? cm[i].role : "?");
	}
out:
	for (i = 0; texts && i < n; i++)
		strata_buf_free(&texts[i]);
	free(texts);
	free(cm);
	return rc;
}

static int get_prompt(const cJSON *root, struct strata_api_req *r, struct strata_api_err *err)
{
	const cJSON *p = field(root, "prompt");

	if (!p)
		return fail(err, "prompt", "'prompt' is required");
	/* An array of one string is what many clients send for a single prompt. */
	if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(p->child))
		p = p->child;
	if (!cJSON_IsString(p))
		return fail(err, "prompt", "'prompt' must be a string");
	r->prompt = strdup(p->valuestring);
	if (!r->prompt)
		return -ENOMEM;
	r->prompt_len = strlen(r->prompt);
	return 0;
}

int strata_api_parse(const char *body, size_t len, int chat, enum strata_chat_fmt fmt,
		     const struct strata_gen_params *defaults, struct strata_api_req *r,
		     struct strata_api_err *err)
{
	const char *end = NULL;
	cJSON *root;
	int rc;

	memset(r, 0, sizeof(*r));
	memset(err, 0, sizeof(*err));
	r->chat = chat;
	r->max_tokens = -1;
	r->gp = *defaults;
	root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	/* Only white space may follow the value. */
	while (root && end < body + len && strchr(" \t\r\n", *end) && *end)
		end++;
	if (!root || end != body + len) {
		size_t at = end && end >= body ? (size_t)(end - body) : 0;

		cJSON_Delete(root);
		return fail(err, NULL, "malformed JSON in the request body near byte %zu", at);
	}
	if (!cJSON_IsObject(root))
		rc = fail(err, NULL, "the request body must be a JSON object");
	else if ((rc = get_common(root, r, err)) == 0)
		rc = chat ? render_messages(root, fmt, r, err) : get_prompt(root, r, err);
	cJSON_Delete(root);
	if (rc)
		strata_api_req_free(r);
	return rc;
}

void strata_api_req_free(struct strata_api_req *r)
{
	for (size_t i = 0; i < r->n_stop; i++)
		free(r->stop[i]);
	free(r->stop);
	free(r->prompt);
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

char *strata_api_completion_json(const struct strata_api_head *h, const char *text,
				 const char *finish, uint32_t n_prompt, uint32_t n_gen)
{
	cJSON *root = cJSON_CreateObject(), *choices, *c = NULL, *msg;
	int ok = root && add_head(root, h, h->chat ? "chat.completion" : "text_completion") &&
		 (choices = cJSON_AddArrayToObject(root, "choices")) &&
		 (c = cJSON_CreateObject()) && cJSON_AddItemToArray(choices, c) &&
		 cJSON_AddNumberToObject(c, "index", 0);

	if (ok && h->chat)
		ok = (msg = cJSON_AddObjectToObject(c, "message")) &&
		     cJSON_AddStringToObject(msg, "role", "assistant") &&
		     cJSON_AddStringToObject(msg, "content", text);
	else if (ok)
		ok = cJSON_AddStringToObject(c, "text", text) && cJSON_AddNullToObject(c, "logprobs");
	ok = ok && cJSON_AddStringToObject(c, "finish_reason", finish) &&
	     add_usage(root, n_prompt, n_gen);
	return finish_json(root, ok);
}

char *strata_api_chunk_json(const struct strata_api_head *h, const char *text, size_t len,
			    int role, const char *finish, uint32_t n_prompt, uint32_t n_gen)
{
	cJSON *root = cJSON_CreateObject(), *choices, *c = NULL, *delta;
	char *t = strndup(text ? text : "", len);
	int ok = t && root && add_head(root, h, h->chat ? "chat.completion.chunk" : "text_completion") &&
		 (choices = cJSON_AddArrayToObject(root, "choices")) &&
		 (c = cJSON_CreateObject()) && cJSON_AddItemToArray(choices, c) &&
		 cJSON_AddNumberToObject(c, "index", 0);

	if (ok && h->chat) {
		ok = (delta = cJSON_AddObjectToObject(c, "delta")) != NULL;
		if (ok && role)
			ok = cJSON_AddStringToObject(delta, "role", "assistant") != NULL;
		/* The closing chunk's delta is empty, as OpenAI's is. */
		if (ok && (!finish || len))
			ok = cJSON_AddStringToObject(delta, "content", t) != NULL;
	} else if (ok) {
		ok = cJSON_AddStringToObject(c, "text", t) && cJSON_AddNullToObject(c, "logprobs");
	}
	if (ok)
		ok = finish ? cJSON_AddStringToObject(c, "finish_reason", finish) != NULL
			    : cJSON_AddNullToObject(c, "finish_reason") != NULL;
	if (ok && finish)
		ok = add_usage(root, n_prompt, n_gen);
	free(t);
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
