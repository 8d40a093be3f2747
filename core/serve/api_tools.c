/*
 * api_tools.c - a chat request's tools, tool_choice and parallel_tool_calls,
 * checked against the OpenAI reference: each tool a function with a name of
 * at most 64 letters, digits, '_' or '-' and an object for parameters;
 * tool_choice "none", "auto", "required" or a function of the list.  A
 * forced call and response_format become the grammar the reply must follow.
 */
#include "serve/api.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api_int.h"
#include "serve/grammar.h"

static int good_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return 0;
	return 1;
}

static int one_tool(const cJSON *t, int i, struct strata_api_err *err)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	const cJSON *params = api_field(fn, "parameters"), *desc = api_field(fn, "description");
	char param[64];

	snprintf(param, sizeof(param), "tools[%d]", i);
	if (!cJSON_IsObject(t))
		return api_fail(err, param, "'%s' must be an object", param);
	if (!cJSON_IsString(type) || strcmp(type->valuestring, "function"))
		return api_fail(err, param, "'%s.type' must be \"function\" (the only kind of tool "
				"strata can call)", param);
	snprintf(param, sizeof(param), "tools[%d].function", i);
	if (!cJSON_IsObject(fn))
		return api_fail(err, param, "'%s' must be an object with a name", param);
	snprintf(param, sizeof(param), "tools[%d].function.name", i);
	if (!cJSON_IsString(name) || !good_name(name->valuestring))
		return api_fail(err, param, "'%s' must be 1 to 64 letters, digits, '_', '-' or '.'",
				param);
	snprintf(param, sizeof(param), "tools[%d].function.parameters", i);
	if (params && !cJSON_IsObject(params))
		return api_fail(err, param, "'%s' must be a JSON schema object", param);
	snprintf(param, sizeof(param), "tools[%d].function.description", i);
	if (desc && !cJSON_IsString(desc))
		return api_fail(err, param, "'%s' must be a string", param);
	return 0;
}

static int has_tool(const cJSON *tools, const char *name)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, tools) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(t, "function"), "name");

		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return 1;
	}
	return 0;
}

static int get_choice(const cJSON *root, const cJSON *tools, struct strata_api_req *r,
		      struct strata_api_err *err)
{
	const cJSON *c = api_field(root, "tool_choice");
	const cJSON *fn, *name;

	r->tool_choice = STRATA_TOOL_AUTO;
	if (!c)
		return 0;
	if (!tools)
		return api_fail(err, "tool_choice", "'tool_choice' needs 'tools'");
	if (cJSON_IsString(c)) {
		if (!strcmp(c->valuestring, "auto"))
			return 0;
		if (!strcmp(c->valuestring, "none"))
			return (r->tool_choice = STRATA_TOOL_NONE), 0;
		if (!strcmp(c->valuestring, "required"))
			return (r->tool_choice = STRATA_TOOL_REQUIRED), 0;
		return api_fail(err, "tool_choice", "'tool_choice' must be \"none\", \"auto\", "
				"\"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
	}
	fn = cJSON_GetObjectItemCaseSensitive(c, "function");
	name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	if (!cJSON_IsObject(c) || !cJSON_IsString(name))
		return api_fail(err, "tool_choice", "'tool_choice' must be \"none\", \"auto\", "
				"\"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
	if (!has_tool(tools, name->valuestring))
		return api_fail(err, "tool_choice", "'tool_choice' names '%.64s', which is not in "
				"'tools'", name->valuestring);
	r->tool_choice = STRATA_TOOL_NAMED;
	r->tool_name = strdup(name->valuestring);
	return r->tool_name ? 0 : -ENOMEM;
}

/* A forced call (tool_choice required or named): the reply is made to be one. */
static int force_call(const struct strata_api_ctx *ctx, struct strata_api_req *r,
		      struct strata_api_err *err)
{
	char why[300];
	int rc;

	if (r->tool_choice != STRATA_TOOL_REQUIRED && r->tool_choice != STRATA_TOOL_NAMED)
		return 0;
	if (r->grammar)
		return api_fail(err, "tool_choice", "a forced tool call and response_format cannot "
				"both shape the reply");
	rc = strata_grammar_tools(r->tools, r->tool_choice == STRATA_TOOL_NAMED ? r->tool_name : NULL,
				  ctx->toolfmt == STRATA_TOOLS_NONE ? STRATA_TOOLS_TAGGED : ctx->toolfmt,
				  ctx->tool_sub, r->parallel_tools, &r->grammar, why, sizeof(why));
	if (rc == -EINVAL)
		return api_fail(err, "tools", "the forced tool call cannot be constrained: %s", why);
	return rc;
}

int api_response_format(const cJSON *root, struct strata_api_req *r, struct strata_api_err *err)
{
	const cJSON *rf = api_field(root, "response_format");
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type"), *js, *schema;
	char why[300];
	int rc;

	if (!rf)
		return 0;
	if (!cJSON_IsObject(rf) || !cJSON_IsString(type))
		return api_fail(err, "response_format", "'response_format' must be {\"type\": \"text\" "
				"| \"json_object\" | \"json_schema\", ...}");
	if (!strcmp(type->valuestring, "text"))
		return 0;
	if (!strcmp(type->valuestring, "json_object")) {
		rc = strata_grammar_json(NULL, &r->grammar, why, sizeof(why));
	} else if (!strcmp(type->valuestring, "json_schema")) {
		js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
		schema = cJSON_GetObjectItemCaseSensitive(js, "schema");
		if (!cJSON_IsObject(js) || !(cJSON_IsObject(schema) || cJSON_IsBool(schema)))
			return api_fail(err, "response_format.json_schema", "'response_format."
					"json_schema' must be {\"name\": ..., \"schema\": {...}}");
		rc = strata_grammar_json(schema, &r->grammar, why, sizeof(why));
	} else {
		return api_fail(err, "response_format", "'response_format.type' must be text, "
				"json_object or json_schema");
	}
	if (rc == -EINVAL)
		return api_fail(err, "response_format", "the schema cannot be constrained: %s", why);
	return rc;
}

int api_tools(const cJSON *root, const struct strata_api_ctx *ctx, struct strata_api_req *r,
	      struct strata_api_err *err)
{
	const cJSON *tools = api_field(root, "tools"), *t, *par = api_field(root,
									    "parallel_tool_calls");
	int i = 0, rc;

	r->parallel_tools = 1;
	if (par && !cJSON_IsBool(par))
		return api_fail(err, "parallel_tool_calls", "'parallel_tool_calls' must be true or "
				"false");
	if (par)
		r->parallel_tools = cJSON_IsTrue(par);
	if (tools && !cJSON_IsArray(tools))
		return api_fail(err, "tools", "'tools' must be an array of functions");
	cJSON_ArrayForEach(t, tools)
		if ((rc = one_tool(t, i++, err)))
			return rc;
	if (tools && !cJSON_GetArraySize(tools))
		tools = NULL; /* [] is no tools */
	if ((rc = get_choice(root, tools, r, err)))
		return rc;
	if (tools && r->tool_choice != STRATA_TOOL_NONE && !(r->tools = cJSON_Duplicate(tools, 1)))
		return -ENOMEM;
	return force_call(ctx, r, err);
}
