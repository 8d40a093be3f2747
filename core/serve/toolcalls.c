/*
 * toolcalls.c - one complete tool-call text into calls: JSON objects
 * ({"name", "arguments"|"parameters"}), Qwen's <function=...> XML, GLM's
 * <arg_key>/<arg_value> pairs, Mistral's [TOOL_CALLS] forms.  A value
 * written as text (XML, GLM) is JSON when it reads as JSON and its
 * parameter is not a string in the tool's schema, else a string.
 */
#define _GNU_SOURCE /* memmem, strndup */
#include "serve/msgparse.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const char g_alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

static void new_id(struct strata_msgparse *mp, char *id, size_t n)
{
	unsigned char r[24];

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		for (size_t i = 0; i < sizeof(r); i++)
			r[i] = (unsigned char)((mp->seq++ * 2654435761u + i * 40503u) >> 7);
	memcpy(id, "call_", 5);
	for (size_t i = 0; i < sizeof(r) && 5 + i + 1 < n; i++)
		id[5 + i] = g_alnum[r[i] % (sizeof(g_alnum) - 1)];
	id[5 + sizeof(r) < n ? 5 + sizeof(r) : n - 1] = 0;
}

/* Append a call with name and args (JSON text, taken over); 1, or 0 when memory ran out. */
static int add_call(struct strata_msgparse *mp, const char *name, size_t name_len, char *args)
{
	struct strata_mp_call *c = realloc(mp->calls, (mp->n_calls + 1) * sizeof(*c));
	char *nm = strndup(name, name_len);

	if (c)
		mp->calls = c;
	if (!c || !nm || !args) {
		free(nm);
		free(args);
		mp->content.oom = 1;
		return 0;
	}
	c = &mp->calls[mp->n_calls++];
	memset(c, 0, sizeof(*c));
	new_id(mp, c->id, sizeof(c->id));
	c->name = nm;
	c->args = args;
	return 1;
}

static char *print_json(const cJSON *j)
{
	char *s = cJSON_PrintUnformatted(j), *copy = s ? strdup(s) : NULL;

	cJSON_free(s);
	return copy;
}

/* {"name": ..., "arguments"|"parameters": {...} or "{...}"} into a call; 1, or 0. */
static int json_call(struct strata_msgparse *mp, const cJSON *o)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "arguments");
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(o, "function");

	if (!name && cJSON_IsObject(fn)) /* {"type": "function", "function": {...}} */
		return json_call(mp, fn);
	if (!args)
		args = cJSON_GetObjectItemCaseSensitive(o, "parameters");
	if (!cJSON_IsString(name) || !name->valuestring[0])
		return 0;
	if (!args)
		return add_call(mp, name->valuestring, strlen(name->valuestring), strdup("{}"));
	if (cJSON_IsString(args)) {
		cJSON *parsed = cJSON_Parse(args->valuestring);
		int ok = cJSON_IsObject(parsed);

		cJSON_Delete(parsed);
		return ok ? add_call(mp, name->valuestring, strlen(name->valuestring),
				     strdup(args->valuestring)) : 0;
	}
	if (!cJSON_IsObject(args))
		return 0;
	return add_call(mp, name->valuestring, strlen(name->valuestring), print_json(args));
}

/* Is parameter `param` of tool `name` a string in the tool's schema? */
static int param_is_string(const struct strata_msgparse *mp, const char *name, const char *param)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, mp->tools) {
		const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(fn, "name");
		const cJSON *props, *p, *type;

		if (!cJSON_IsString(n) || strcmp(n->valuestring, name))
			continue;
		props = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(fn, "parameters"), "properties");
		p = cJSON_GetObjectItemCaseSensitive(props, param);
		type = cJSON_GetObjectItemCaseSensitive(p, "type");
		return cJSON_IsString(type) && !strcmp(type->valuestring, "string");
	}
	return 0;
}

/* A value written as text: JSON unless the schema says string (or it is not JSON). */
static cJSON *text_value(const struct strata_msgparse *mp, const char *fn, const char *param,
			 const char *v, size_t n)
{
	char *s = strndup(v, n);
	cJSON *j = NULL;

	if (!s)
		return NULL;
	if (!param_is_string(mp, fn, param))
		j = cJSON_ParseWithLength(s, n);
	if (!j)
		j = cJSON_CreateString(s);
	free(s);
	return j;
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && strchr(" \t\r\n", *p) && *p)
		p++;
	return p;
}

/* After tag at p (skipping white space first): the position after it, or NULL. */
static const char *expect_tag(const char *p, const char *end, const char *tag)
{
	size_t n = strlen(tag);

	p = skip_ws(p, end);
	return (size_t)(end - p) >= n && memcmp(p, tag, n) == 0 ? p + n : NULL;
}

/* The text from p up to close (not included); *after past close; NULL when absent. */
static const char *until(const char *p, const char *end, const char *close, const char **after)
{
	const char *hit = memmem(p, (size_t)(end - p), close, strlen(close));

	if (hit)
		*after = hit + strlen(close);
	return hit;
}

/* Qwen: <function=NAME> (<parameter=P>\nVALUE\n</parameter>)* </function> */
static int qwen_xml_call(struct strata_msgparse *mp, const char *p, const char *end)
{
	const char *name_end, *after, *q;
	char *name;
	cJSON *args = cJSON_CreateObject();
	int ok = 0;

	if (!args || !(p = expect_tag(p, end, "<function=")) || !(name_end = until(p, end, ">", &after)))
		goto out;
	if (!(name = strndup(p, (size_t)(name_end - p))))
		goto out;
	p = after;
	while ((q = expect_tag(p, end, "<parameter="))) {
		const char *pend = until(q, end, ">", &after), *v, *vend;
		char *param;
		cJSON *val;

		if (!pend || !(param = strndup(q, (size_t)(pend - q))))
			break;
		v = after;
		if (!(vend = until(v, end, "</parameter>", &after))) {
			free(param);
			break;
		}
		/* the template writes one newline on each side of a value */
		if (v < vend && *v == '\n')
			v++;
		if (vend > v && vend[-1] == '\n')
			vend--;
		val = text_value(mp, name, param, v, (size_t)(vend - v));
		if (!val || !cJSON_AddItemToObject(args, param, val)) {
			cJSON_Delete(val);
			free(param);
			break;
		}
		free(param);
		p = after;
	}
	if (expect_tag(p, end, "</function>") && skip_ws(expect_tag(p, end, "</function>"), end) == end)
		ok = add_call(mp, name, strlen(name), print_json(args));
	free(name);
out:
	cJSON_Delete(args);
	return ok;
}

/* GLM: NAME (<arg_key>K</arg_key><arg_value>V</arg_value>)* */
static int glm_call(struct strata_msgparse *mp, const char *p, const char *end)
{
	const char *name_end, *after, *k;
	cJSON *args = cJSON_CreateObject();
	char *name = NULL;
	int ok = 0;

	p = skip_ws(p, end);
	name_end = p;
	while (name_end < end && *name_end != '<' && *name_end != '\n')
		name_end++;
	while (name_end > p && strchr(" \t\r", name_end[-1]))
		name_end--;
	if (!args || name_end == p || !(name = strndup(p, (size_t)(name_end - p))))
		goto out;
	p = name_end;
	while ((k = expect_tag(p, end, "<arg_key>"))) {
		const char *kend = until(k, end, "</arg_key>", &after), *v, *vend;
		char *key;
		cJSON *val;

		if (!kend || !(v = expect_tag(after, end, "<arg_value>")) ||
		    !(vend = until(v, end, "</arg_value>", &after)) ||
		    !(key = strndup(k, (size_t)(kend - k))))
			goto out;
		val = text_value(mp, name, key, v, (size_t)(vend - v));
		if (!val || !cJSON_AddItemToObject(args, key, val)) {
			cJSON_Delete(val);
			free(key);
			goto out;
		}
		free(key);
		p = after;
	}
	if (skip_ws(p, end) == end)
		ok = add_call(mp, name, strlen(name), print_json(args));
out:
	free(name);
	cJSON_Delete(args);
	return ok;
}

/* One or more JSON objects (or an array of them), separated by white space or ';'. */
static int json_calls(struct strata_msgparse *mp, const char *p, const char *end)
{
	int added = 0;

	p = skip_ws(p, end);
	while (p < end) {
		const char *stop = NULL;
		cJSON *j = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &stop, 0), *it;
		int ok = 1;

		if (!j)
			return 0;
		if (cJSON_IsArray(j)) {
			cJSON_ArrayForEach(it, j)
				ok = ok && json_call(mp, it);
		} else {
			ok = json_call(mp, j);
		}
		cJSON_Delete(j);
		if (!ok)
			return 0;
		added = 1;
		p = skip_ws(stop, end);
		if (p < end && *p == ';')
			p = skip_ws(p + 1, end);
	}
	return added;
}

/* Mistral after [TOOL_CALLS]: a JSON array, or NAME[ARGS]{...} ([TOOL_CALLS] between). */
static int mistral_calls(struct strata_msgparse *mp, const char *p, const char *end)
{
	static const char sep[] = "[TOOL_CALLS]", args_tag[] = "[ARGS]";

	p = skip_ws(p, end);
	if (p < end && (*p == '[' || *p == '{'))
		return json_calls(mp, p, end);
	while (p < end) {
		const char *next = memmem(p, (size_t)(end - p), sep, sizeof(sep) - 1);
		const char *stop = next ? next : end, *a = memmem(p, (size_t)(stop - p), args_tag,
								  sizeof(args_tag) - 1);
		cJSON *j;
		int ok;

		if (!a)
			return 0;
		j = cJSON_ParseWithLength(a + sizeof(args_tag) - 1, (size_t)(stop - a) -
					  (sizeof(args_tag) - 1));
		ok = cJSON_IsObject(j) && a > p &&
		     add_call(mp, p, (size_t)(a - p), print_json(j));
		cJSON_Delete(j);
		if (!ok)
			return 0;
		p = next ? skip_ws(next + sizeof(sep) - 1, end) : end;
	}
	return 1;
}

int strata_mp_parse_calls(struct strata_msgparse *mp, enum strata_toolfmt f, const char *text,
			  size_t len)
{
	const char *p = skip_ws(text, text + len), *end = text + len;
	size_t before = mp->n_calls;
	int ok;

	while (end > p && strchr(" \t\r\n", end[-1]))
		end--;
	if (f == STRATA_TOOLS_MISTRAL)
		ok = mistral_calls(mp, p, end);
	else if (f == STRATA_TOOLS_LLAMA3 || (p < end && (*p == '{' || *p == '[')))
		ok = json_calls(mp, p, end);
	else if (end - p > 10 && !memcmp(p, "<function=", 10))
		ok = qwen_xml_call(mp, p, end);
	else
		ok = glm_call(mp, p, end);
	if (!ok) {
		/* all of the text or none of it: drop the calls this text added */
		for (size_t i = before; i < mp->n_calls; i++) {
			free(mp->calls[i].name);
			free(mp->calls[i].args);
		}
		mp->n_calls = before;
		return 0;
	}
	return (int)(mp->n_calls - before);
}
