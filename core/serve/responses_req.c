/*
 * responses_req.c - an OpenAI Responses API request as the chat request
 * strata runs.  Stateless: previous_response_id and store are refused,
 * the conversation comes whole in input (messages, function_call and
 * function_call_output items).  instructions become the system message,
 * reasoning.effort reasoning_effort, max_output_tokens max_tokens, function
 * tools the chat's tools.
 */
#include "serve/responses.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "serve/api_int.h"
#include "util/strbuf.h"

static const char *const g_fields[] = {
	"model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "tools",
	"tool_choice", "parallel_tool_calls", "stream", "reasoning", "text", "metadata", "store",
	"user", "truncation", "service_tier", NULL,
};

static cJSON *msg(cJSON *msgs, const char *role, const char *content)
{
	cJSON *m = cJSON_CreateObject();

	if (m && !cJSON_AddItemToArray(msgs, m)) {
		cJSON_Delete(m);
		return NULL;
	}
	if (!m || !cJSON_AddStringToObject(m, "role", role) ||
	    !cJSON_AddStringToObject(m, "content", content ? content : ""))
		return NULL;
	return m;
}

/* A message item's content: a string or input_text/output_text parts. */
static int item_text(const cJSON *c, const char *param, struct strata_buf *b,
		     struct strata_api_err *err)
{
	const cJSON *p;

	if (cJSON_IsString(c)) {
		strata_buf_puts(b, c->valuestring);
		return 0;
	}
	if (!cJSON_IsArray(c))
		return api_fail(err, param, "'%s' must be a string or an array of text parts", param);
	cJSON_ArrayForEach(p, c) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(p, "text");

		if (!cJSON_IsString(type) || (strcmp(type->valuestring, "input_text") &&
					      strcmp(type->valuestring, "output_text") &&
					      strcmp(type->valuestring, "text")) || !cJSON_IsString(text))
			return api_fail(err, param, "'%s' may hold input_text and output_text parts only",
					param);
		strata_buf_puts(b, text->valuestring);
	}
	return 0;
}

/* A function_call item: a call of the assistant message before it, or a new one. */
static int function_call(const cJSON *it, const char *param, cJSON *msgs,
			 struct strata_api_err *err)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "call_id");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(it, "arguments");
	cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1), *calls, *c, *fn;
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(last, "role");

	if (!cJSON_IsString(id) || !cJSON_IsString(name) || !cJSON_IsString(args))
		return api_fail(err, param, "'%s' must have call_id, name and arguments strings", param);
	if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant") ||
	    cJSON_GetObjectItemCaseSensitive(last, "tool_call_id"))
		last = msg(msgs, "assistant", "");
	if (!last)
		return -ENOMEM;
	calls = cJSON_GetObjectItemCaseSensitive(last, "tool_calls");
	if (!calls && !(calls = cJSON_AddArrayToObject(last, "tool_calls")))
		return -ENOMEM;
	c = cJSON_CreateObject();
	if (c && !cJSON_AddItemToArray(calls, c)) {
		cJSON_Delete(c);
		return -ENOMEM;
	}
	if (!c || !cJSON_AddStringToObject(c, "id", id->valuestring) ||
	    !cJSON_AddStringToObject(c, "type", "function") ||
	    !(fn = cJSON_AddObjectToObject(c, "function")) ||
	    !cJSON_AddStringToObject(fn, "name", name->valuestring) ||
	    !cJSON_AddStringToObject(fn, "arguments", args->valuestring))
		return -ENOMEM;
	return 0;
}

static int one_item(const cJSON *it, int i, cJSON *msgs, struct strata_api_err *err)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(it, "type");
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
	const char *t = cJSON_IsString(type) ? type->valuestring : "message";
	char param[48];

	snprintf(param, sizeof(param), "input[%d]", i);
	if (!cJSON_IsObject(it))
		return api_fail(err, param, "'%s' must be an object", param);
	if (!strcmp(t, "message")) {
		struct strata_buf b = { 0 };
		int rc;

		if (!cJSON_IsString(role))
			return api_fail(err, param, "'%s.role' must be a string", param);
		rc = item_text(cJSON_GetObjectItemCaseSensitive(it, "content"), param, &b, err);
		if (!rc && !msg(msgs, role->valuestring, b.p))
			rc = -ENOMEM;
		strata_buf_free(&b);
		return rc;
	}
	if (!strcmp(t, "function_call"))
		return function_call(it, param, msgs, err);
	if (!strcmp(t, "function_call_output")) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "call_id");
		const cJSON *out = cJSON_GetObjectItemCaseSensitive(it, "output");
		cJSON *m;

		if (!cJSON_IsString(id) || !cJSON_IsString(out))
			return api_fail(err, param, "'%s' must have call_id and output strings", param);
		m = msg(msgs, "tool", out->valuestring);
		return m && cJSON_AddStringToObject(m, "tool_call_id", id->valuestring) ? 0 : -ENOMEM;
	}
	if (!strcmp(t, "reasoning"))
		return 0; /* a past reply's reasoning: templates drop it from history anyway */
	return api_fail(err, param, "'%s' is a '%s' item: strata takes messages, function_call "
			"and function_call_output", param, t);
}

static int input(const cJSON *root, cJSON *out, struct strata_api_err *err)
{
	const cJSON *ins = api_field(root, "instructions"), *in = api_field(root, "input"), *it;
	cJSON *msgs = cJSON_AddArrayToObject(out, "messages");
	int i = 0, rc;

	if (!msgs)
		return -ENOMEM;
	if (ins && !cJSON_IsString(ins))
		return api_fail(err, "instructions", "'instructions' must be a string");
	if (ins && !msg(msgs, "system", ins->valuestring))
		return -ENOMEM;
	if (cJSON_IsString(in))
		return msg(msgs, "user", in->valuestring) ? 0 : -ENOMEM;
	if (!cJSON_IsArray(in) || !cJSON_GetArraySize(in))
		return api_fail(err, "input", "'input' must be a string or a non-empty array of items");
	cJSON_ArrayForEach(it, in)
		if ((rc = one_item(it, i++, msgs, err)))
			return rc;
	return 0;
}

static int tools(const cJSON *root, cJSON *out, struct strata_api_err *err)
{
	const cJSON *ts = api_field(root, "tools"), *t, *tc = api_field(root, "tool_choice");
	cJSON *arr;
	int i = 0;

	if (ts && !cJSON_IsArray(ts))
		return api_fail(err, "tools", "'tools' must be an array");
	if (ts && !(arr = cJSON_AddArrayToObject(out, "tools")))
		return -ENOMEM;
	cJSON_ArrayForEach(t, ts) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
		cJSON *o = cJSON_CreateObject(), *fn;
		char param[32];
		static const char *const keys[] = { "name", "description", "parameters", NULL };

		snprintf(param, sizeof(param), "tools[%d]", i++);
		if (!cJSON_IsString(type) || strcmp(type->valuestring, "function")) {
			cJSON_Delete(o);
			return api_fail(err, param, "'%s' is a '%s' tool: strata calls function tools "
					"only", param, cJSON_IsString(type) ? type->valuestring : "?");
		}
		if (o && !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			return -ENOMEM;
		}
		if (!o || !cJSON_AddStringToObject(o, "type", "function") ||
		    !(fn = cJSON_AddObjectToObject(o, "function")))
			return -ENOMEM;
		for (const char *const *k = keys; *k; k++) {
			const cJSON *v = api_field(t, *k);

			if (v && !cJSON_AddItemToObject(fn, *k, cJSON_Duplicate(v, 1)))
				return -ENOMEM;
		}
	}
	if (tc && cJSON_IsObject(tc)) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(tc, "name");
		cJSON *c;

		if (!cJSON_IsString(name))
			return api_fail(err, "tool_choice", "'tool_choice' must be auto, none, required "
					"or {\"type\": \"function\", \"name\": ...}");
		if (!(c = cJSON_AddObjectToObject(out, "tool_choice")) ||
		    !cJSON_AddStringToObject(c, "type", "function") ||
		    !(c = cJSON_AddObjectToObject(c, "function")) ||
		    !cJSON_AddStringToObject(c, "name", name->valuestring))
			return -ENOMEM;
	} else if (tc && !cJSON_AddItemToObject(out, "tool_choice", cJSON_Duplicate(tc, 1))) {
		return -ENOMEM;
	}
	return 0;
}

/* The fields with a counterpart: sampling, reasoning.effort, text.format (text only here). */
static int fields(const cJSON *root, cJSON *out, struct strata_api_err *err)
{
	static const char *const same[] = { "model", "temperature", "top_p", "stream", "user",
					    "metadata", "parallel_tool_calls", "service_tier", NULL };
	const cJSON *v, *effort, *fmt;

	for (const char *const *k = same; *k; k++)
		if ((v = api_field(root, *k)) && !cJSON_AddItemToObject(out, *k, cJSON_Duplicate(v, 1)))
			return -ENOMEM;
	if ((v = api_field(root, "max_output_tokens")) &&
	    !cJSON_AddItemToObject(out, "max_tokens", cJSON_Duplicate(v, 1)))
		return -ENOMEM;
	if ((v = api_field(root, "store")) && !cJSON_IsFalse(v))
		return api_fail(err, "store", "'store': strata keeps no responses (send false, and the "
				"whole conversation in input)");
	if ((v = api_field(root, "truncation")) &&
	    !(cJSON_IsString(v) && !strcmp(v->valuestring, "disabled")))
		return api_fail(err, "truncation", "'truncation': only \"disabled\"");
	if ((v = api_field(root, "reasoning")) && !cJSON_IsObject(v))
		return api_fail(err, "reasoning", "'reasoning' must be an object");
	effort = cJSON_GetObjectItemCaseSensitive(v, "effort");
	if (effort && !cJSON_IsNull(effort) &&
	    !cJSON_AddItemToObject(out, "reasoning_effort", cJSON_Duplicate(effort, 1)))
		return -ENOMEM;
	fmt = cJSON_GetObjectItemCaseSensitive(api_field(root, "text"), "format");
	if (fmt && !cJSON_IsNull(fmt)) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(fmt, "type");
		const char *t = cJSON_IsString(type) ? type->valuestring : "";
		cJSON *rf, *js;

		if (!strcmp(t, "text"))
			return 0;
		if (strcmp(t, "json_object") && strcmp(t, "json_schema"))
			return api_fail(err, "text.format", "'text.format.type' must be text, "
					"json_object or json_schema");
		/* the chat's response_format: {type, json_schema: {name, schema}} */
		if (!(rf = cJSON_AddObjectToObject(out, "response_format")) ||
		    !cJSON_AddStringToObject(rf, "type", t))
			return -ENOMEM;
		if (!strcmp(t, "json_schema") &&
		    (!(js = cJSON_AddObjectToObject(rf, "json_schema")) ||
		     (cJSON_GetObjectItemCaseSensitive(fmt, "schema") &&
		      !cJSON_AddItemToObject(js, "schema", cJSON_Duplicate(
			      cJSON_GetObjectItemCaseSensitive(fmt, "schema"), 1)))))
			return -ENOMEM;
	}
	return 0;
}

int strata_responses_request(const cJSON *root, cJSON **out, struct strata_api_err *err)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *it;
	int rc;

	*out = NULL;
	memset(err, 0, sizeof(*err));
	if (!o)
		return -ENOMEM;
	cJSON_ArrayForEach(it, root) {
		int known = 0;

		for (const char *const *k = g_fields; *k && !known; k++)
			known = !strcmp(*k, it->string);
		if (!known) {
			cJSON_Delete(o);
			if (!strcmp(it->string, "previous_response_id"))
				return api_fail(err, it->string, "'previous_response_id': strata keeps no "
						"responses; send the whole conversation in input");
			return api_fail(err, it->string, "'%.40s' is not something strata can honour: "
					"leave it out", it->string);
		}
	}
	if ((rc = fields(root, o, err)) || (rc = input(root, o, err)) || (rc = tools(root, o, err))) {
		cJSON_Delete(o);
		return rc;
	}
	*out = o;
	return 0;
}
