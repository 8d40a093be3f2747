/*
 * chat.c - choosing, compiling and rendering the chat template.
 *
 * Templates disagree on what a tool call's "arguments" is: most take an
 * object (and tojson it), some concatenate it as text.  When a template is
 * opened it renders a probe conversation with an object; if the argument
 * does not come out, it gets the JSON text instead (llama.cpp's minja
 * probes templates the same way).
 */
#define _GNU_SOURCE /* strndup */
#include "serve/chat.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

struct strata_chat {
	struct strata_tmpl *t;
	char *source;
	char *origin;
	char *bos, *eos;
	int strip_bos;
	int args_as_text;  /* tool-call arguments go in as JSON text, not an object */
};

static char *read_text(const char *path, int *err)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, r;

	if (!f) {
		*err = errno;
		return NULL;
	}
	do {
		if (len + 65536 + 1 > cap) {
			char *nb = realloc(buf, cap = len + 65536 + 1);

			if (!nb) {
				free(buf);
				fclose(f);
				*err = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + len, 1, 65536, f);
		len += r;
	} while (r > 0);
	*err = ferror(f) ? EIO : 0;
	fclose(f);
	if (*err) {
		free(buf);
		return NULL;
	}
	buf[len] = 0;
	return buf;
}

/* Does the template show a tool call's arguments when given them as JSON text (1) or not (0)? */
static int probe_args_as_text(struct strata_chat *c)
{
	static const char *const msgs =
		"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"content\":\"\","
		"\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":"
		"\"probe_fn\",\"arguments\":{\"probe_arg\":\"probe_value_7\"}}}]},{\"role\":\"tool\","
		"\"tool_call_id\":\"call_1\",\"name\":\"probe_fn\",\"content\":\"ok\"}]";
	cJSON *m = cJSON_Parse(msgs);
	cJSON *tools = cJSON_Parse("[{\"type\":\"function\",\"function\":{\"name\":\"probe_fn\","
				   "\"description\":\"d\",\"parameters\":{\"type\":\"object\","
				   "\"properties\":{\"probe_arg\":{\"type\":\"string\"}}}}}]");
	struct strata_chat_in in = { .messages = m, .tools = tools };
	struct strata_tmpl_err err;
	int as_text = 0;

	for (int attempt = 0; attempt < 2 && m && tools; attempt++) {
		char *out = NULL;
		size_t len;
		int shown;

		c->args_as_text = attempt;
		shown = strata_chat_apply(c, &in, &out, &len, &err) == 0 &&
			strstr(out, "probe_value_7") != NULL;
		free(out);
		if (shown) {
			as_text = attempt;
			break;
		}
	}
	cJSON_Delete(m);
	cJSON_Delete(tools);
	return as_text;
}

static int compile_as(struct strata_chat *c, const char *src, const char *origin)
{
	struct strata_tmpl_err err;
	int rc;

	free(c->source);
	free(c->origin);
	c->source = strdup(src);
	c->origin = strdup(origin);
	if (!c->source || !c->origin)
		return -ENOMEM;
	rc = strata_tmpl_compile(src, strlen(src), &c->t, &err);
	if (rc == -EINVAL)
		strata_error("chat template (%s): line %d: %s", origin, err.line, err.msg);
	return rc;
}

/*
 * The model's template, or the built-in fallback (plain unless the
 * architecture has a known format) when it has none or it does not compile.
 */
static int choose_auto(struct strata_chat *c, const char *model, const char *fallback)
{
	char origin[64];

	struct strata_tmpl_err err;
	int rc;

	if (model && *model) {
		rc = strata_tmpl_compile(model, strlen(model), &c->t, &err);
		if (rc == 0) {
			c->source = strdup(model);
			c->origin = strdup("the model's");
			return c->source && c->origin ? 0 : -ENOMEM;
		}
		if (rc != -EINVAL)
			return rc;
		strata_info("the model's chat template does not compile (line %d: %s): using the "
			    "built-in %s template instead; [serve] chat_template_file sets "
			    "another", err.line, err.msg, fallback ? fallback : "plain");
	}
	if (!fallback || !strata_chat_builtin(fallback))
		fallback = "plain";
	snprintf(origin, sizeof(origin), "built-in %s", fallback);
	return compile_as(c, strata_chat_builtin(fallback), origin);
}

static int choose(struct strata_chat *c, const struct strata_chat_opts *o)
{
	const char *set = o->setting;
	char origin[600];
	int rc, e;

	if (o->file && *o->file) {
		char *text = read_text(o->file, &e);

		if (!text) {
			strata_error("cannot read the chat template file %s: %s", o->file, strerror(e));
			return e == ENOMEM ? -ENOMEM : -ENOENT;
		}
		snprintf(origin, sizeof(origin), "file %s", o->file);
		rc = compile_as(c, text, origin);
		free(text);
		return rc;
	}
	if (!set || !*set || !strcmp(set, "auto"))
		return choose_auto(c, o->model, o->fallback);
	if (strata_chat_builtin(set)) {
		snprintf(origin, sizeof(origin), "built-in %s", set);
		return compile_as(c, strata_chat_builtin(set), origin);
	}
	if (strstr(set, "{{") || strstr(set, "{%"))
		return compile_as(c, set, "[serve] chat_template");
	strata_error("[serve] chat_template: '%s' is not auto, chatml, glm4, llama3, plain, qwen "
		     "or a Jinja template", set);
	return -EINVAL;
}

int strata_chat_create(const struct strata_chat_opts *o, struct strata_chat **out)
{
	struct strata_chat *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->bos = strdup(o->bos ? o->bos : "");
	c->eos = strdup(o->eos ? o->eos : "");
	c->strip_bos = o->tokenizer_adds_bos && o->bos && *o->bos;
	rc = c->bos && c->eos ? choose(c, o) : -ENOMEM;
	if (rc) {
		if (rc == -ENOMEM)
			strata_error("out of memory for the chat template");
		strata_chat_free(c);
		return rc;
	}
	c->args_as_text = probe_args_as_text(c);
	*out = c;
	return 0;
}

void strata_chat_free(struct strata_chat *c)
{
	if (!c)
		return;
	strata_tmpl_free(c->t);
	free(c->source);
	free(c->origin);
	free(c->bos);
	free(c->eos);
	free(c);
}

const char *strata_chat_origin(const struct strata_chat *c)
{
	return c->origin;
}

const char *strata_chat_source(const struct strata_chat *c)
{
	return c->source;
}

int strata_chat_mentions(const struct strata_chat *c, const char *word)
{
	return strstr(c->source, word) != NULL;
}

/* The arguments of each tool call as this template takes them: an object or its JSON text. */
static int shape_arguments(const struct strata_chat *c, cJSON *messages)
{
	cJSON *m, *tc;

	cJSON_ArrayForEach(m, messages) {
		cJSON_ArrayForEach(tc, cJSON_GetObjectItemCaseSensitive(m, "tool_calls")) {
			cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
			cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments"), *repl = NULL;

			if (!args)
				continue;
			if (c->args_as_text && !cJSON_IsString(args)) {
				char *text = cJSON_PrintUnformatted(args);

				repl = text ? cJSON_CreateString(text) : NULL;
				cJSON_free(text);
			} else if (!c->args_as_text && cJSON_IsString(args)) {
				cJSON *parsed = cJSON_Parse(args->valuestring);

				if (cJSON_IsObject(parsed))
					repl = parsed;
				else
					cJSON_Delete(parsed); /* not JSON: the text as it is */
			}
			if (repl && !cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", repl)) {
				cJSON_Delete(repl);
				return -ENOMEM;
			}
		}
	}
	return 0;
}

static cJSON *make_vars(const struct strata_chat *c, const struct strata_chat_in *in)
{
	cJSON *vars = cJSON_CreateObject(), *msgs = cJSON_Duplicate(in->messages, 1), *it;
	int ok = vars && msgs && shape_arguments(c, msgs) == 0;

	if (ok && in->extra)
		cJSON_ArrayForEach(it, in->extra)
			ok = ok && cJSON_AddItemToObject(vars, it->string, cJSON_Duplicate(it, 1));
	if (!ok) {
		cJSON_Delete(vars);
		cJSON_Delete(msgs);
		return NULL;
	}
	/* The conversation wins over a same-named extra variable. */
	cJSON_DeleteItemFromObjectCaseSensitive(vars, "messages");
	cJSON_AddItemToObject(vars, "messages", msgs);
	if (in->tools && cJSON_GetArraySize(in->tools) > 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(vars, "tools");
		ok = cJSON_AddItemToObject(vars, "tools", cJSON_Duplicate(in->tools, 1));
	}
	cJSON_DeleteItemFromObjectCaseSensitive(vars, "add_generation_prompt");
	cJSON_DeleteItemFromObjectCaseSensitive(vars, "bos_token");
	cJSON_DeleteItemFromObjectCaseSensitive(vars, "eos_token");
	ok = ok && cJSON_AddBoolToObject(vars, "add_generation_prompt", in->add_generation_prompt) &&
	     cJSON_AddStringToObject(vars, "bos_token", c->bos) &&
	     cJSON_AddStringToObject(vars, "eos_token", c->eos);
	if (!ok) {
		cJSON_Delete(vars);
		return NULL;
	}
	return vars;
}

int strata_chat_apply(const struct strata_chat *c, const struct strata_chat_in *in, char **out,
		      size_t *len, struct strata_tmpl_err *err)
{
	struct strata_tmpl_opts o = { .now = (int64_t)time(NULL) };
	cJSON *vars = make_vars(c, in);
	size_t bl = strlen(c->bos);
	int rc;

	*out = NULL;
	*len = 0;
	if (!vars) {
		memset(err, 0, sizeof(*err));
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return -ENOMEM;
	}
	rc = strata_tmpl_render(c->t, vars, &o, out, len, err);
	cJSON_Delete(vars);
	/* The tokenizer adds BOS: one the template wrote too would be doubled. */
	if (!rc && c->strip_bos && *len >= bl && memcmp(*out, c->bos, bl) == 0) {
		memmove(*out, *out + bl, *len - bl + 1);
		*len -= bl;
	}
	return rc;
}

int strata_chat_render_msgs(const struct strata_chat *c, const struct strata_chat_msg *msgs,
			    size_t n, char **out, size_t *len, struct strata_tmpl_err *err)
{
	cJSON *arr = cJSON_CreateArray();
	struct strata_chat_in in = { .messages = arr, .add_generation_prompt = 1 };
	int ok = arr != NULL, rc;

	for (size_t i = 0; ok && i < n; i++) {
		cJSON *m = cJSON_CreateObject();
		/* content need not be NUL-terminated: copy len bytes, no strnlen past them */
		char *text = malloc(msgs[i].len + 1);

		if (text) {
			memcpy(text, msgs[i].content, msgs[i].len);
			text[msgs[i].len] = 0;
		}

		ok = m && text && cJSON_AddItemToArray(arr, m) &&
		     cJSON_AddStringToObject(m, "role", msgs[i].role) &&
		     cJSON_AddStringToObject(m, "content", text);
		free(text);
	}
	if (!ok) {
		cJSON_Delete(arr);
		memset(err, 0, sizeof(*err));
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		*out = NULL;
		return -ENOMEM;
	}
	rc = strata_chat_apply(c, &in, out, len, err);
	cJSON_Delete(arr);
	return rc;
}
