/*
 * anthropic_req.c - an Anthropic Messages API request as the chat request
 * strata runs: system to a system message, content blocks to messages
 * (text joined, tool_result blocks to tool messages, tool_use blocks to
 * tool_calls, thinking to reasoning_content), tools and tool_choice to
 * OpenAI's, thinking to enable_thinking and a thinking budget,
 * stop_sequences to stop.  Fields it cannot honour are refused by name.
 */
#include "serve/anthropic.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "serve/api_int.h"
#include "util/strbuf.h"

static const char *const g_fields[] = {
	"model", "max_tokens", "messages", "system", "stop_sequences", "stream", "temperature",
	"top_p", "top_k", "tools", "tool_choice", "thinking", "metadata", "service_tier", NULL,
};

/* Text blocks (or a string) into b; 0, or -EINVAL for another block. */
static int text_of(const cJSON *c, const char *param, struct strata_buf *b,
		   struct strata_api_err *err)
{
	const cJSON *blk;

	if (cJSON_IsString(c)) {
		strata_buf_puts(b, c->valuestring);
		return 0;
	}
	if (!cJSON_IsArray(c))
		return api_fail(err, param, "'%s' must be a string or an array of text blocks", param);
	cJSON_ArrayForEach(blk, c) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(blk, "type");
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(blk, "text");

		if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text))
			return api_fail(err, param, "'%s' may hold text blocks only", param);
		strata_buf_puts(b, text->valuestring);
	}
	return 0;
}

static cJSON *message(cJSON *msgs, const char *role, const char *content)
{
	cJSON *m = cJSON_CreateObject();

	if (!m || !cJSON_AddItemToArray(msgs, m) || !cJSON_AddStringToObject(m, "role", role) ||
	    !cJSON_AddStringToObject(m, "content", content ? content : ""))
		return NULL;
	return m;
}

/* A user turn: tool_result blocks become tool messages, then the text, if any. */
static int user_blocks(const cJSON *content, int i, cJSON *msgs, struct strata_api_err *err)
{
	struct strata_buf text = { 0 };
	const cJSON *blk;
	char param[64];
	int k = 0, rc = 0, any_text = 0;

	cJSON_ArrayForEach(blk, content) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(blk, "type");

		snprintf(param, sizeof(param), "messages[%d].content[%d]", i, k++);
		if (cJSON_IsString(type) && !strcmp(type->valuestring, "text") &&
		    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(blk, "text"))) {
			strata_buf_puts(&text, cJSON_GetObjectItemCaseSensitive(blk, "text")->valuestring);
			any_text = 1;
		} else if (cJSON_IsString(type) && !strcmp(type->valuestring, "tool_result")) {
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(blk, "tool_use_id");
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(blk, "content");
			struct strata_buf result = { 0 };
			cJSON *m;

			if (!cJSON_IsString(id)) {
				rc = api_fail(err, param, "'%s.tool_use_id' must be a string", param);
				break;
			}
			if (c && (rc = text_of(c, param, &result, err))) {
				strata_buf_free(&result);
				break;
			}
			m = message(msgs, "tool", result.p);
			strata_buf_free(&result);
			if (!m || !cJSON_AddStringToObject(m, "tool_call_id", id->valuestring)) {
				rc = -ENOMEM;
				break;
			}
		} else {
			rc = api_fail(err, param, "'%s' is a '%s' block: strata takes text and "
				      "tool_result blocks from the user", param,
				      cJSON_IsString(type) ? type->valuestring : "?");
			break;
		}
	}
	if (!rc && any_text && !message(msgs, "user", text.p ? text.p : ""))
		rc = -ENOMEM;
	strata_buf_free(&text);
	return rc;
}

/* An assistant turn: text, thinking and tool_use blocks into one message. */
static int assistant_blocks(const cJSON *content, int i, cJSON *msgs, struct strata_api_err *err)
{
	struct strata_buf text = { 0 }, thinking = { 0 };
	cJSON *calls = cJSON_CreateArray(), *m;
	const cJSON *blk;
	char param[64];
	int k = 0, rc = 0;

	cJSON_ArrayForEach(blk, content) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(blk, "type");
		const char *t = cJSON_IsString(type) ? type->valuestring : "?";

		snprintf(param, sizeof(param), "messages[%d].content[%d]", i, k++);
		if (!strcmp(t, "text") && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(blk, "text"))) {
			strata_buf_puts(&text, cJSON_GetObjectItemCaseSensitive(blk, "text")->valuestring);
		} else if (!strcmp(t, "thinking") &&
			   cJSON_IsString(cJSON_GetObjectItemCaseSensitive(blk, "thinking"))) {
			strata_buf_puts(&thinking,
					cJSON_GetObjectItemCaseSensitive(blk, "thinking")->valuestring);
		} else if (!strcmp(t, "redacted_thinking")) {
			continue; /* nothing strata could read */
		} else if (!strcmp(t, "tool_use")) {
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(blk, "id");
			const cJSON *name = cJSON_GetObjectItemCaseSensitive(blk, "name");
			const cJSON *input = cJSON_GetObjectItemCaseSensitive(blk, "input");
			cJSON *c = cJSON_CreateObject(), *fn;

			if (!cJSON_IsString(id) || !cJSON_IsString(name) || !cJSON_IsObject(input)) {
				cJSON_Delete(c);
				rc = api_fail(err, param, "'%s' must be {\"type\": \"tool_use\", \"id\", "
					      "\"name\", \"input\": {...}}", param);
				break;
			}
			if (!c || !cJSON_AddItemToArray(calls, c) ||
			    !cJSON_AddStringToObject(c, "id", id->valuestring) ||
			    !cJSON_AddStringToObject(c, "type", "function") ||
			    !(fn = cJSON_AddObjectToObject(c, "function")) ||
			    !cJSON_AddStringToObject(fn, "name", name->valuestring) ||
			    !cJSON_AddItemToObject(fn, "arguments", cJSON_Duplicate(input, 1))) {
				rc = -ENOMEM;
				break;
			}
		} else {
			rc = api_fail(err, param, "'%s' is a '%s' block: strata takes text, thinking and "
				      "tool_use blocks from the assistant", param, t);
			break;
		}
	}
	if (!rc && !(m = message(msgs, "assistant", text.p)))
		rc = -ENOMEM;
	if (!rc && thinking.len && !cJSON_AddStringToObject(m, "reasoning_content", thinking.p))
		rc = -ENOMEM;
	if (!rc && cJSON_GetArraySize(calls)) {
		rc = cJSON_AddItemToObject(m, "tool_calls", calls) ? 0 : -ENOMEM;
		calls = NULL;
	}
	cJSON_Delete(calls);
	strata_buf_free(&text);
	strata_buf_free(&thinking);
	return rc;
}

static int messages(const cJSON *root, cJSON *out, struct strata_api_err *err)
{
	const cJSON *sys = api_field(root, "system"), *ms = api_field(root, "messages"), *m;
	cJSON *msgs = cJSON_AddArrayToObject(out, "messages");
	int i = 0, rc;

	if (!msgs)
		return -ENOMEM;
	if (sys) {
		struct strata_buf b = { 0 };

		rc = text_of(sys, "system", &b, err);
		if (!rc && !message(msgs, "system", b.p))
			rc = -ENOMEM;
		strata_buf_free(&b);
		if (rc)
			return rc;
	}
	if (!cJSON_IsArray(ms) || !cJSON_GetArraySize(ms))
		return api_fail(err, "messages", "'messages' must be a non-empty array");
	cJSON_ArrayForEach(m, ms) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
		char param[64];

		snprintf(param, sizeof(param), "messages[%d]", i);
		if (!cJSON_IsString(role) || (strcmp(role->valuestring, "user") &&
					      strcmp(role->valuestring, "assistant")))
			return api_fail(err, param, "'%s.role' must be user or assistant", param);
		if (cJSON_IsString(c)) {
			if (!message(msgs, role->valuestring, c->valuestring))
				return -ENOMEM;
		} else if (!cJSON_IsArray(c)) {
			return api_fail(err, param, "'%s.content' must be a string or an array of "
					"blocks", param);
		} else if ((rc = role->valuestring[0] == 'u' ? user_blocks(c, i, msgs, err)
							     : assistant_blocks(c, i, msgs, err))) {
			return rc;
		}
		i++;
	}
	return 0;
}

/* Anthropic's tools and tool_choice as OpenAI's. */
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
		const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "input_schema");
		cJSON *o = cJSON_CreateObject(), *fn;
		char param[32];

		snprintf(param, sizeof(param), "tools[%d]", i++);
		if (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "custom"))) {
			cJSON_Delete(o);
			return api_fail(err, param, "'%s' is a server tool ('%s'): strata calls client "
					"tools only", param, cJSON_IsString(type) ? type->valuestring : "?");
		}
		if (!o || !cJSON_AddItemToArray(arr, o) || !cJSON_AddStringToObject(o, "type", "function") ||
		    !(fn = cJSON_AddObjectToObject(o, "function")))
			return -ENOMEM;
		/* The OpenAI checks that follow name the converted fields. */
		if ((cJSON_GetObjectItemCaseSensitive(t, "name") &&
		     !cJSON_AddItemToObject(fn, "name", cJSON_Duplicate(
			     cJSON_GetObjectItemCaseSensitive(t, "name"), 1))) ||
		    (cJSON_GetObjectItemCaseSensitive(t, "description") &&
		     !cJSON_AddItemToObject(fn, "description", cJSON_Duplicate(
			     cJSON_GetObjectItemCaseSensitive(t, "description"), 1))) ||
		    (schema && !cJSON_AddItemToObject(fn, "parameters", cJSON_Duplicate(schema, 1))))
			return -ENOMEM;
	}
	if (tc) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(tc, "type");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(tc, "name");
		const char *t = cJSON_IsString(type) ? type->valuestring : "";
		cJSON *c;

		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tc, "disable_parallel_tool_use")) &&
		    !cJSON_AddFalseToObject(out, "parallel_tool_calls"))
			return -ENOMEM;
		if (!strcmp(t, "auto") || !strcmp(t, "none") || !strcmp(t, "any")) {
			if (!cJSON_AddStringToObject(out, "tool_choice", !strcmp(t, "any") ? "required" : t))
				return -ENOMEM;
		} else if (!strcmp(t, "tool") && cJSON_IsString(name)) {
			if (!(c = cJSON_AddObjectToObject(out, "tool_choice")) ||
			    !cJSON_AddStringToObject(c, "type", "function") ||
			    !(c = cJSON_AddObjectToObject(c, "function")) ||
			    !cJSON_AddStringToObject(c, "name", name->valuestring))
				return -ENOMEM;
		} else {
			return api_fail(err, "tool_choice", "'tool_choice' must be {\"type\": \"auto\" | "
					"\"any\" | \"none\"} or {\"type\": \"tool\", \"name\": ...}");
		}
	}
	return 0;
}

/* thinking: {"type": "enabled", "budget_tokens": N} or {"type": "disabled"}. */
static int thinking(const cJSON *root, cJSON *out, struct strata_api_err *err)
{
	const cJSON *th = api_field(root, "thinking");
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(th, "type");
	const cJSON *budget = cJSON_GetObjectItemCaseSensitive(th, "budget_tokens");

	if (!th)
		return 0;
	if (!cJSON_IsString(type) || (strcmp(type->valuestring, "enabled") &&
				      strcmp(type->valuestring, "disabled")))
		return api_fail(err, "thinking", "'thinking' must be {\"type\": \"enabled\", "
				"\"budget_tokens\": N} or {\"type\": \"disabled\"}");
	if (!cJSON_AddBoolToObject(out, "enable_thinking", type->valuestring[0] == 'e'))
		return -ENOMEM;
	if (type->valuestring[0] == 'e' && budget) {
		if (!cJSON_IsNumber(budget) || budget->valuedouble < 0)
			return api_fail(err, "thinking.budget_tokens", "'thinking.budget_tokens' must "
					"be a number of tokens");
		if (!cJSON_AddNumberToObject(out, "thinking_budget", (double)budget->valueint))
			return -ENOMEM;
	}
	return 0;
}

/* The sampling fields whose names are the same, and stop_sequences. */
static int sampling(const cJSON *root, cJSON *out, int need_max, struct strata_api_err *err)
{
	static const char *const same[] = { "model", "max_tokens", "temperature", "top_p", "top_k",
					    "stream", "metadata", "service_tier", NULL };
	const cJSON *stop = api_field(root, "stop_sequences");
	const cJSON *temp = api_field(root, "temperature");

	if (need_max && !api_field(root, "max_tokens"))
		return api_fail(err, "max_tokens", "'max_tokens' is required");
	if (temp && (!cJSON_IsNumber(temp) || temp->valuedouble < 0 || temp->valuedouble > 1))
		return api_fail(err, "temperature", "'temperature' must be a number in [0, 1]");
	for (const char *const *k = same; *k; k++) {
		const cJSON *v = api_field(root, *k);

		if (v && !cJSON_AddItemToObject(out, *k, cJSON_Duplicate(v, 1)))
			return -ENOMEM;
	}
	if (stop && !cJSON_AddItemToObject(out, "stop", cJSON_Duplicate(stop, 1)))
		return -ENOMEM;
	return 0;
}

int strata_anthropic_request(const cJSON *root, int counting, cJSON **out,
			     struct strata_api_err *err)
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
			return api_fail(err, it->string, "'%.40s' is not something strata can honour: "
					"leave it out", it->string);
		}
	}
	if ((rc = sampling(root, o, !counting, err)) || (rc = messages(root, o, err)) ||
	    (rc = tools(root, o, err)) || (rc = thinking(root, o, err))) {
		cJSON_Delete(o);
		return rc;
	}
	*out = o;
	return 0;
}
