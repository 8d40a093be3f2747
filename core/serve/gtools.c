/*
 * gtools.c - the grammar of a reply that is a tool call, written the way
 * the chat template writes calls (so the reply parser reads it back): a
 * <tool_call> block holding JSON, Qwen's <function=...> XML or GLM's
 * arg_key/arg_value pairs; Mistral's [TOOL_CALLS] JSON array or NAME[ARGS];
 * Llama 3's bare JSON object.  The arguments follow the tool's parameter
 * schema; an XML or GLM string value is raw text (no '<').
 */
#include "serve/gschema_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SUB_JSON, SUB_XML, SUB_GLM };

int strata_grammar_subformat(const char *src)
{
	if (!src)
		return SUB_JSON;
	if (strstr(src, "<function=") && strstr(src, "<parameter="))
		return SUB_XML;
	if (strstr(src, "<arg_key>"))
		return SUB_GLM;
	if (strstr(src, "[ARGS]"))
		return SUB_XML; /* Mistral's NAME[ARGS]{...} form */
	return SUB_JSON;
}

static const cJSON *params_of(const cJSON *tool)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tool, "function"),
						"parameters");
}

static const char *name_of(const cJSON *tool)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(tool, "function"), "name");

	return cJSON_IsString(n) ? n->valuestring : "";
}

/* The arguments as a JSON object: the parameter schema, or {} when there is none. */
static uint32_t json_args(struct sc *c, const cJSON *tool, const char *path)
{
	const cJSON *p = params_of(tool);

	if (!p) {
		struct galt a = { 0 };
		uint32_t r;

		galt_lit(c->g, &a, "{");
		galt_ref(c->g, &a, c->ws);
		galt_lit(c->g, &a, "}");
		r = sc_one(c, &a);
		galt_free(&a);
		return r;
	}
	return sc_schema(c, p, path);
}

/* Raw text for an XML or GLM string value: characters but '<', minLength..maxLength of them. */
static uint32_t raw_text(struct sc *c, const cJSON *schema)
{
	const cJSON *lo = cJSON_GetObjectItemCaseSensitive(schema, "minLength");
	const cJSON *hi = cJSON_GetObjectItemCaseSensitive(schema, "maxLength");
	uint32_t ch = gb_rule(c->g);
	struct galt a = { 0 };

	galt_range(c->g, &a, 0x01, '<' - 1);
	gb_alt(c->g, ch, &a);
	galt_range(c->g, &a, '<' + 1, 0x7F);
	gb_alt(c->g, ch, &a);
	galt_range(c->g, &a, 0xC2, 0xDF);
	galt_range(c->g, &a, 0x80, 0xBF);
	gb_alt(c->g, ch, &a);
	galt_range(c->g, &a, 0xE0, 0xEF);
	galt_range(c->g, &a, 0x80, 0xBF);
	galt_range(c->g, &a, 0x80, 0xBF);
	gb_alt(c->g, ch, &a);
	galt_range(c->g, &a, 0xF0, 0xF4);
	for (int i = 0; i < 3; i++)
		galt_range(c->g, &a, 0x80, 0xBF);
	gb_alt(c->g, ch, &a);
	galt_free(&a);
	return gb_repeat(c->g, ch, cJSON_IsNumber(lo) && lo->valuedouble > 0 ? lo->valueint : 0,
			 cJSON_IsNumber(hi) && hi->valuedouble >= 0 && hi->valuedouble < 10000
				 ? hi->valueint : -1);
}

/*
 * The arguments as XML parameters or GLM pairs: each property's value in
 * its wrapper, in the schema's order, required ones always.
 */
static uint32_t tagged_args(struct sc *c, const cJSON *tool, int sub, const char *path)
{
	const cJSON *p = params_of(tool), *props = cJSON_GetObjectItemCaseSensitive(p, "properties");
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(p, "required"), *it;
	int n = cJSON_GetArraySize(props), i = 0;
	uint32_t *m = calloc((size_t)n + 1, sizeof(*m)), r;
	int *rq = calloc((size_t)n + 1, sizeof(*rq));
	struct galt a = { 0 };

	if (!m || !rq) {
		free(m);
		free(rq);
		c->err = -ENOMEM;
		return 0;
	}
	cJSON_ArrayForEach(it, props) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(it, "type");
		char pp[512];
		uint32_t v;

		snprintf(pp, sizeof(pp), "%s.properties.%s", path, it->string);
		v = cJSON_IsString(type) && !strcmp(type->valuestring, "string") ? raw_text(c, it)
										: sc_schema(c, it, pp);
		if (sub == SUB_XML) {
			galt_lit(c->g, &a, "<parameter=");
			galt_lit(c->g, &a, it->string);
			galt_lit(c->g, &a, ">\n");
			galt_ref(c->g, &a, v);
			galt_lit(c->g, &a, "\n</parameter>\n");
		} else {
			galt_lit(c->g, &a, "\n<arg_key>");
			galt_lit(c->g, &a, it->string);
			galt_lit(c->g, &a, "</arg_key>\n<arg_value>");
			galt_ref(c->g, &a, v);
			galt_lit(c->g, &a, "</arg_value>");
		}
		m[i] = sc_one(c, &a);
		rq[i++] = sc_is_required(req, it->string);
	}
	galt_free(&a);
	r = sc_members(c, m, rq, n, sc_one(c, &a)); /* nothing between members */
	free(m);
	free(rq);
	return r;
}

/* One call of tool in format f / sub. */
static uint32_t one_call(struct sc *c, const cJSON *tool, enum strata_toolfmt f, int sub,
			 const char *path)
{
	const char *name = name_of(tool);
	struct galt a = { 0 };
	uint32_t r;

	if (f == STRATA_TOOLS_TAGGED && sub != SUB_JSON) {
		galt_lit(c->g, &a, "<tool_call>");
		if (sub == SUB_XML) {
			galt_lit(c->g, &a, "\n<function=");
			galt_lit(c->g, &a, name);
			galt_lit(c->g, &a, ">\n");
			galt_ref(c->g, &a, tagged_args(c, tool, sub, path));
			galt_lit(c->g, &a, "</function>\n</tool_call>");
		} else {
			galt_lit(c->g, &a, name);
			galt_ref(c->g, &a, tagged_args(c, tool, sub, path));
			galt_lit(c->g, &a, "\n</tool_call>");
		}
	} else if (f == STRATA_TOOLS_MISTRAL && sub == SUB_XML) { /* [TOOL_CALLS]NAME[ARGS]{...} */
		galt_lit(c->g, &a, "[TOOL_CALLS]");
		galt_lit(c->g, &a, name);
		galt_lit(c->g, &a, "[ARGS]");
		galt_ref(c->g, &a, json_args(c, tool, path));
	} else {
		if (f == STRATA_TOOLS_TAGGED)
			galt_lit(c->g, &a, "<tool_call>\n");
		galt_lit(c->g, &a, "{\"name\": \"");
		galt_lit(c->g, &a, name);
		galt_lit(c->g, &a, f == STRATA_TOOLS_LLAMA3 ? "\", \"parameters\": "
							    : "\", \"arguments\": ");
		galt_ref(c->g, &a, json_args(c, tool, path));
		galt_lit(c->g, &a, "}");
		if (f == STRATA_TOOLS_TAGGED)
			galt_lit(c->g, &a, "\n</tool_call>");
	}
	r = sc_one(c, &a);
	galt_free(&a);
	return r;
}

int strata_grammar_tools(const cJSON *tools, const char *name, enum strata_toolfmt f, int sub,
			 int many, struct strata_grammar **out, char *why, size_t n)
{
	const cJSON *t;
	struct sc c;
	struct galt a = { 0 };
	uint32_t call, root;
	int i = 0, any = 0;

	*out = NULL;
	if (gschema_begin(&c, NULL, why, n))
		return -ENOMEM;
	call = gb_rule(c.g);
	cJSON_ArrayForEach(t, tools) {
		char path[96];

		snprintf(path, sizeof(path), "tools[%d].function.parameters", i++);
		if (name && strcmp(name_of(t), name))
			continue;
		/* $ref in parameters points into the parameters schema itself */
		c.root = params_of(t);
		c.n_refs = 0;
		galt_ref(c.g, &a, one_call(&c, t, f, sub, path));
		gb_alt(c.g, call, &a);
		any = 1;
	}
	if (!any)
		sc_fail(&c, "tool_choice", "no tool of that name");
	if (f == STRATA_TOOLS_MISTRAL && sub == SUB_JSON) { /* [TOOL_CALLS][call, call] */
		galt_lit(c.g, &a, "[TOOL_CALLS][");
		galt_ref(c.g, &a, call);
		if (many) {
			struct galt b = { 0 };

			galt_ref(c.g, &b, c.comma);
			galt_ref(c.g, &b, call);
			galt_ref(c.g, &a, gb_repeat(c.g, sc_one(&c, &b), 0, -1));
			galt_free(&b);
		}
		galt_lit(c.g, &a, "]");
		root = sc_one(&c, &a);
	} else if (many) { /* one or more, a newline between */
		struct galt b = { 0 };

		galt_lit(c.g, &b, "\n");
		galt_ref(c.g, &b, call);
		galt_ref(c.g, &a, call);
		galt_ref(c.g, &a, gb_repeat(c.g, sc_one(&c, &b), 0, -1));
		root = sc_one(&c, &a);
		galt_free(&b);
	} else {
		root = call;
	}
	galt_free(&a);
	return gschema_end(&c, root, out);
}
