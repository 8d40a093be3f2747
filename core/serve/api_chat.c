/*
 * api_chat.c - a chat request's messages, checked field by field and put
 * in the shape chat templates read, then rendered by the chat template.
 *
 * What templates get: role (developer becomes system unless the template
 * knows developer), content as one string (text parts joined; null is ""),
 * an assistant's tool_calls (function name and arguments) and
 * reasoning_content, a tool message's tool_call_id, and name.
 */
#include "serve/api.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api_int.h"
#include "util/strbuf.h"

static const char *const g_roles[] = { "system", "developer", "user", "assistant", "tool", NULL };

/* A message's content as one string: a string, text parts, or null ("" then). */
static int content_text(const cJSON *msg, int i, int may_be_absent, struct strata_buf *text,
			struct strata_api_err *err)
{
	const cJSON *c = api_field(msg, "content"), *part;
	char param[64];
	int j = 0;

	snprintf(param, sizeof(param), "messages[%d].content", i);
	if (!c) {
		if (may_be_absent)
			return 0;
		return api_fail(err, param, "'%s' is required", param);
	}
	if (cJSON_IsString(c)) {
		strata_buf_puts(text, c->valuestring);
		return 0;
	}
	if (!cJSON_IsArray(c))
		return api_fail(err, param, "'%s' must be a string or an array of text parts", param);
	cJSON_ArrayForEach(part, c) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");

		snprintf(param, sizeof(param), "messages[%d].content[%d]", i, j++);
		if (cJSON_IsString(type) && strcmp(type->valuestring, "text") &&
		    strcmp(type->valuestring, "input_text"))
			return api_fail(err, param, "'%s' is a '%s' part: strata takes text only",
					param, type->valuestring);
		if (!cJSON_IsString(type) || !cJSON_IsString(t))
			return api_fail(err, param, "'%s' must be {\"type\": \"text\", \"text\": "
					"string}", param);
		strata_buf_puts(text, t->valuestring);
	}
	return 0;
}

/* One tool call of an assistant message, checked, into out (the template's shape). */
static int tool_call(const cJSON *tc, int i, int k, cJSON *out, struct strata_api_err *err)
{
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
	const cJSON *id = api_field(tc, "id"), *type = api_field(tc, "type");
	cJSON *o = cJSON_CreateObject(), *f;
	char param[96];

	snprintf(param, sizeof(param), "messages[%d].tool_calls[%d]", i, k);
	if (!o || !cJSON_AddItemToArray(out, o))
		return (cJSON_Delete(o), -ENOMEM);
	if (!cJSON_IsObject(tc) || !cJSON_IsObject(fn) || !cJSON_IsString(name) ||
	    !name->valuestring[0])
		return api_fail(err, param, "'%s' must be {\"type\": \"function\", \"function\": "
				"{\"name\": string, \"arguments\": string}}", param);
	if (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "function")))
		return api_fail(err, param, "'%s.type' must be \"function\"", param);
	if (id && !cJSON_IsString(id))
		return api_fail(err, param, "'%s.id' must be a string", param);
	if (args && !cJSON_IsString(args) && !cJSON_IsObject(args))
		return api_fail(err, param, "'%s.function.arguments' must be a JSON string", param);
	if (!cJSON_AddStringToObject(o, "id", id ? id->valuestring : "") ||
	    !cJSON_AddStringToObject(o, "type", "function") ||
	    !(f = cJSON_AddObjectToObject(o, "function")) ||
	    !cJSON_AddStringToObject(f, "name", name->valuestring) ||
	    !cJSON_AddItemToObject(f, "arguments", args ? cJSON_Duplicate(args, 1)
							 : cJSON_CreateString("{}")))
		return -ENOMEM;
	return 0;
}

static int optional_string(const cJSON *msg, const char *key, int i, cJSON *out,
			   struct strata_api_err *err)
{
	const cJSON *v = api_field(msg, key);
	char param[96];

	if (!v)
		return 0;
	snprintf(param, sizeof(param), "messages[%d].%s", i, key);
	if (!cJSON_IsString(v))
		return api_fail(err, param, "'%s' must be a string", param);
	return cJSON_AddStringToObject(out, key, v->valuestring) ? 0 : -ENOMEM;
}

/* Message i, checked, as the template will see it. */
static int one_message(const struct strata_chat *tmpl, const cJSON *m, int i, cJSON *out,
		       struct strata_api_err *err)
{
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
	const cJSON *calls = api_field(m, "tool_calls"), *tc;
	struct strata_buf text = { 0 };
	const char *r;
	char param[64];
	int k = 0, rc, known = 0;

	snprintf(param, sizeof(param), "messages[%d]", i);
	if (!cJSON_IsObject(m))
		return api_fail(err, param, "'%s' must be an object", param);
	snprintf(param, sizeof(param), "messages[%d].role", i);
	if (!cJSON_IsString(role))
		return api_fail(err, param, "'%s' must be a string", param);
	for (const char *const *p = g_roles; *p; p++)
		known |= !strcmp(*p, role->valuestring);
	if (!known)
		return api_fail(err, param, "'%s' must be system, developer, user, assistant or tool "
				"(got '%.40s')", param, role->valuestring);
	r = role->valuestring;
	if (!strcmp(r, "developer") && !strata_chat_mentions(tmpl, "developer"))
		r = "system";
	if (calls && strcmp(r, "assistant")) {
		snprintf(param, sizeof(param), "messages[%d].tool_calls", i);
		return api_fail(err, param, "'%s' belongs to assistant messages only", param);
	}
	if ((rc = content_text(m, i, calls != NULL || !strcmp(r, "assistant"), &text, err)))
		goto out;
	rc = -ENOMEM;
	if (text.oom || !cJSON_AddStringToObject(out, "role", r) ||
	    !cJSON_AddStringToObject(out, "content", text.p ? text.p : ""))
		goto out;
	if ((rc = optional_string(m, "name", i, out, err)) ||
	    (rc = optional_string(m, "tool_call_id", i, out, err)) ||
	    (rc = optional_string(m, "reasoning_content", i, out, err)))
		goto out;
	if (calls) {
		cJSON *arr = cJSON_AddArrayToObject(out, "tool_calls");

		snprintf(param, sizeof(param), "messages[%d].tool_calls", i);
		rc = arr ? 0 : -ENOMEM;
		if (!rc && !cJSON_IsArray(calls))
			rc = api_fail(err, param, "'%s' must be an array", param);
		cJSON_ArrayForEach(tc, calls) {
			if (rc || (rc = tool_call(tc, i, k++, arr, err)))
				break;
		}
	}
out:
	strata_buf_free(&text);
	return rc;
}

int api_messages(const struct strata_chat *tmpl, const cJSON *root, cJSON **out,
		 struct strata_api_err *err)
{
	const cJSON *msgs = api_field(root, "messages"), *m;
	cJSON *arr;
	int i = 0, rc;

	*out = NULL;
	if (!msgs)
		return api_fail(err, "messages", "'messages' is required");
	if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
		return api_fail(err, "messages", "'messages' must be a non-empty array");
	if (!(arr = cJSON_CreateArray()))
		return -ENOMEM;
	cJSON_ArrayForEach(m, msgs) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			cJSON_Delete(arr);
			return -ENOMEM;
		}
		if ((rc = one_message(tmpl, m, i++, o, err))) {
			cJSON_Delete(arr);
			return rc;
		}
	}
	*out = arr;
	return 0;
}

int api_render(const struct strata_chat *tmpl, const struct strata_chat_in *in, char **prompt,
	       size_t *len, struct strata_api_err *err)
{
	struct strata_tmpl_err te;
	int rc = strata_chat_apply(tmpl, in, prompt, len, &te);

	if (rc == -EINVAL && te.raised) {
		api_fail(err, "messages", "the chat template (%s) refused the messages: %s "
			 "(template line %d)", strata_chat_origin(tmpl), te.msg, te.line);
	} else if (rc == -EINVAL) {
		api_fail(err, NULL, "the chat template (%s) failed at line %d: %s",
			 strata_chat_origin(tmpl), te.line, te.msg);
		err->status = 500;
	}
	return rc;
}

/* The template's thinking switches from reasoning_effort / enable_thinking / chat_template_kwargs. */
int api_thinking(const cJSON *root, struct strata_api_req *r, struct strata_api_err *err)
{
	static const char *const efforts[] = { "none", "minimal", "low", "medium", "high", NULL };
	const cJSON *effort = api_field(root, "reasoning_effort");
	const cJSON *enable = api_field(root, "enable_thinking");
	const cJSON *kw = api_field(root, "chat_template_kwargs"), *it;
	const cJSON *budget = api_field(root, "thinking_budget");
	const cJSON *format = api_field(root, "reasoning_format");
	cJSON *vars;
	int known = 0;

	if (effort) {
		for (const char *const *e = efforts; cJSON_IsString(effort) && *e; e++)
			known |= !strcmp(*e, effort->valuestring);
		if (!known)
			return api_fail(err, "reasoning_effort", "'reasoning_effort' must be none, "
					"minimal, low, medium or high");
	}
	if (enable && !cJSON_IsBool(enable))
		return api_fail(err, "enable_thinking", "'enable_thinking' must be true or false");
	if (kw && !cJSON_IsObject(kw))
		return api_fail(err, "chat_template_kwargs", "'chat_template_kwargs' must be an "
				"object of template variables");
	if (budget && (!cJSON_IsNumber(budget) || budget->valuedouble < 0 ||
		       budget->valuedouble > 1e9 || budget->valuedouble != (int)budget->valuedouble))
		return api_fail(err, "thinking_budget", "'thinking_budget' must be an integer >= 0 "
				"(reasoning tokens before the thinking block is closed)");
	if (format && (!cJSON_IsString(format) || (strcmp(format->valuestring, "auto") &&
						   strcmp(format->valuestring, "none") &&
						   strcmp(format->valuestring, "deepseek"))))
		return api_fail(err, "reasoning_format", "'reasoning_format' must be auto, deepseek "
				"(reasoning_content) or none (<think> left in the content)");
	r->think_budget = budget ? budget->valueint : -1;
	r->reasoning_raw = format && !strcmp(format->valuestring, "none");
	if (!effort && !enable && !kw)
		return 0;
	if (!(vars = r->tmpl_vars = cJSON_CreateObject()))
		return -ENOMEM;
	if (effort && (!cJSON_AddStringToObject(vars, "reasoning_effort", effort->valuestring) ||
		       !cJSON_AddBoolToObject(vars, "enable_thinking",
					      strcmp(effort->valuestring, "none") != 0)))
		return -ENOMEM;
	if (enable) {
		cJSON_DeleteItemFromObjectCaseSensitive(vars, "enable_thinking");
		if (!cJSON_AddBoolToObject(vars, "enable_thinking", cJSON_IsTrue(enable)))
			return -ENOMEM;
	}
	cJSON_ArrayForEach(it, kw) {
		cJSON_DeleteItemFromObjectCaseSensitive(vars, it->string);
		if (!cJSON_AddItemToObject(vars, it->string, cJSON_Duplicate(it, 1)))
			return -ENOMEM;
	}
	return 0;
}
