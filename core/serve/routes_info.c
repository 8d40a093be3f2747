/*
 * routes_info.c - the routes that generate nothing: the model list, health,
 * metrics, /props, /apply-template, /tokenize and /detokenize (llama-server's
 * shapes).
 */
#define _GNU_SOURCE /* strndup */
#include "serve/routes.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api_int.h"
#include "serve/dialect.h"
#include "strata.h"
#include "serve/serve_int.h"

#define JSON_TYPE "application/json"

static enum MHD_Result reply_json(struct strata_server *s, struct MHD_Connection *conn,
				  cJSON *root, int ok)
{
	return strata_reply(s, conn, 200, JSON_TYPE, strata_json_text(root, ok), NULL);
}

/* The body as a JSON object, or the 400 already sent (*sent). */
static cJSON *body_json(struct strata_server *s, struct MHD_Connection *conn, const char *body,
			size_t len, enum MHD_Result *sent)
{
	struct strata_api_err err;
	cJSON *root;

	if (strata_api_body(body, len, &root, &err)) {
		*sent = strata_reply_error(s, conn, err.status, err.message, err.param);
		return NULL;
	}
	return root;
}

/* The prompt a chat request renders to, without generating: {"prompt": text}. */
enum MHD_Result strata_route_apply_template(struct strata_server *s, struct MHD_Connection *conn,
					    const char *body, size_t len, double t_arrival)
{
	struct strata_gen_params defaults;
	struct strata_api_ctx ctx;
	struct strata_api_req req;
	struct strata_api_err err;
	cJSON *root;
	int rc;

	strata_serve_api_ctx(s, &defaults, &ctx);
	rc = strata_api_parse(body, len, 1, &ctx, &req, &err);
	if (rc)
		return strata_reply_error(s, conn, rc == -EINVAL ? err.status : 500,
					  rc == -EINVAL ? err.message : "out of memory", err.param);
	root = cJSON_CreateObject();
	rc = root && cJSON_AddStringToObject(root, "prompt", req.prompt);
	strata_api_req_free(&req);
	return reply_json(s, conn, root, rc);
}

/* {"content", "add_special"?, "parse_special"?, "with_pieces"?} -> {"tokens": [...]} */
enum MHD_Result strata_route_tokenize(struct strata_server *s, struct MHD_Connection *conn,
				      const char *body, size_t len, double t_arrival)
{
	enum MHD_Result sent = MHD_NO;
	cJSON *root = body_json(s, conn, body, len, &sent), *out, *arr;
	const cJSON *c, *add, *parse, *pieces;
	unsigned flags = 0;
	int32_t *ids = NULL;
	int n, ok;

	if (!root)
		return sent;
	c = api_field(root, "content");
	add = api_field(root, "add_special");
	parse = api_field(root, "parse_special");
	pieces = api_field(root, "with_pieces");
	if (!cJSON_IsString(c) || (add && !cJSON_IsBool(add)) || (parse && !cJSON_IsBool(parse)) ||
	    (pieces && !cJSON_IsBool(pieces))) {
		cJSON_Delete(root);
		return strata_reply_error(s, conn, 400, "'content' must be a string; 'add_special', "
					  "'parse_special' and 'with_pieces' true or false", "content");
	}
	if (cJSON_IsTrue(add))
		flags |= STRATA_TOKENIZE_ADD_BOS;
	if (!parse || cJSON_IsTrue(parse))
		flags |= STRATA_TOKENIZE_PARSE_SPECIAL;
	n = strata_engine_tokenize(s->e, c->valuestring, strlen(c->valuestring), flags, &ids);
	if (n < 0) {
		cJSON_Delete(root);
		return strata_reply_error(s, conn, 400, "the content cannot be tokenized", "content");
	}
	out = cJSON_CreateObject();
	ok = out && (arr = cJSON_AddArrayToObject(out, "tokens"));
	for (int i = 0; ok && i < n; i++) {
		if (cJSON_IsTrue(pieces)) {
			char buf[256];
			int l = strata_engine_token_piece(s->e, ids[i], buf, sizeof(buf));
			struct strata_buf text = { 0 };
			cJSON *o = cJSON_CreateObject();

			strata_utf8_sanitize(&text, buf, l > 0 ? ((size_t)l < sizeof(buf) ? (size_t)l
										       : sizeof(buf)) : 0);
			strata_buf_add(&text, "", 0);
			ok = o && cJSON_AddItemToArray(arr, o) && !text.oom &&
			     cJSON_AddNumberToObject(o, "id", ids[i]) &&
			     cJSON_AddStringToObject(o, "piece", text.p);
			strata_buf_free(&text);
		} else {
			ok = cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
		}
	}
	free(ids);
	cJSON_Delete(root);
	return reply_json(s, conn, out, ok);
}

/* {"tokens": [ids]} -> {"content": text} */
enum MHD_Result strata_route_detokenize(struct strata_server *s, struct MHD_Connection *conn,
					const char *body, size_t len, double t_arrival)
{
	enum MHD_Result sent = MHD_NO;
	cJSON *root = body_json(s, conn, body, len, &sent), *out;
	const cJSON *t, *it;
	int32_t *ids, nv = strata_engine_n_vocab(s->e);
	struct strata_buf text = { 0 };
	size_t n = 0;
	int l, ok;

	if (!root)
		return sent;
	t = api_field(root, "tokens");
	if (!cJSON_IsArray(t) || !(ids = malloc(((size_t)cJSON_GetArraySize(t) + 1) * sizeof(*ids)))) {
		cJSON_Delete(root);
		return strata_reply_error(s, conn, 400, "'tokens' must be an array of token ids",
					  "tokens");
	}
	cJSON_ArrayForEach(it, t) {
		if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble >= nv ||
		    it->valuedouble != (int32_t)it->valuedouble) {
			free(ids);
			cJSON_Delete(root);
			return strata_reply_error(s, conn, 400, "'tokens' must hold token ids of this "
						  "vocabulary", "tokens");
		}
		ids[n++] = (int32_t)it->valuedouble;
	}
	l = strata_engine_detokenize(s->e, ids, n, 1, NULL, 0);
	if (l > 0) {
		char *raw = malloc((size_t)l);

		if (raw && strata_engine_detokenize(s->e, ids, n, 1, raw, (size_t)l) == l)
			strata_utf8_sanitize(&text, raw, (size_t)l);
		else
			text.oom = 1;
		free(raw);
	}
	strata_buf_add(&text, "", 0);
	free(ids);
	cJSON_Delete(root);
	out = cJSON_CreateObject();
	ok = out && !text.oom && cJSON_AddStringToObject(out, "content", text.p);
	strata_buf_free(&text);
	return reply_json(s, conn, out, ok);
}

/* The server's settings, llama-server's /props shape. */
enum MHD_Result strata_route_props(struct strata_server *s, struct MHD_Connection *conn,
				   const char *body, size_t len, double t_arrival)
{
	struct strata_gen_params p;
	cJSON *root = cJSON_CreateObject(), *dgs, *params;
	int32_t bos = strata_engine_token_bos(s->e), eos = strata_engine_token_eos(s->e);
	const char *bt = bos >= 0 ? strata_engine_token_text(s->e, bos) : NULL;
	const char *et = eos >= 0 ? strata_engine_token_text(s->e, eos) : NULL;
	int ok;

	strata_engine_gen_defaults(s->e, &p);
	ok = root && (dgs = cJSON_AddObjectToObject(root, "default_generation_settings")) &&
	     cJSON_AddNumberToObject(dgs, "n_ctx", strata_engine_n_ctx(s->e)) &&
	     (params = cJSON_AddObjectToObject(dgs, "params")) &&
	     cJSON_AddNumberToObject(params, "n_predict", p.n_predict) &&
	     cJSON_AddNumberToObject(params, "temperature", p.temp) &&
	     cJSON_AddNumberToObject(params, "top_k", p.top_k) &&
	     cJSON_AddNumberToObject(params, "top_p", p.top_p) &&
	     cJSON_AddNumberToObject(params, "min_p", p.min_p) &&
	     cJSON_AddNumberToObject(params, "repeat_penalty", p.repeat_penalty) &&
	     cJSON_AddNumberToObject(params, "repeat_last_n", p.repeat_last_n) &&
	     cJSON_AddNumberToObject(root, "total_slots", 1) &&
	     cJSON_AddStringToObject(root, "model_alias", strata_engine_model_name(s->e)) &&
	     cJSON_AddStringToObject(root, "model_path", strata_engine_setting(s->e, "model", "path")) &&
	     cJSON_AddStringToObject(root, "chat_template", strata_chat_source(s->chat)) &&
	     cJSON_AddStringToObject(root, "chat_template_origin", strata_chat_origin(s->chat)) &&
	     cJSON_AddStringToObject(root, "tool_call_format", strata_toolfmt_name(s->toolfmt)) &&
	     cJSON_AddStringToObject(root, "bos_token", bt ? bt : "") &&
	     cJSON_AddStringToObject(root, "eos_token", et ? et : "") &&
	     cJSON_AddNumberToObject(root, "n_vocab", strata_engine_n_vocab(s->e)) &&
	     cJSON_AddStringToObject(root, "build_info", "strata");
	return reply_json(s, conn, root, ok);
}

enum MHD_Result strata_route_models(struct strata_server *s, struct MHD_Connection *conn,
				    const char *body, size_t len, double t_arrival)
{
	return strata_reply(s, conn, 200, JSON_TYPE,
			    strata_api_models_json(strata_engine_model_name(s->e),
						   strata_engine_n_ctx(s->e), s->started), NULL);
}

static void queue_state(struct strata_server *s, unsigned *waiting, int *busy)
{
	pthread_mutex_lock(&s->lock);
	*waiting = s->n_waiting;
	*busy = s->busy;
	pthread_mutex_unlock(&s->lock);
}

enum MHD_Result strata_route_health(struct strata_server *s, struct MHD_Connection *conn,
				    const char *body, size_t len, double t_arrival)
{
	char buf[128];
	unsigned waiting;
	int busy;

	queue_state(s, &waiting, &busy);
	snprintf(buf, sizeof(buf), "{\"status\":\"ok\",\"busy\":%s,\"queued\":%u}",
		 busy ? "true" : "false", waiting);
	return strata_reply(s, conn, 200, JSON_TYPE, strdup(buf), NULL);
}

enum MHD_Result strata_route_metrics(struct strata_server *s, struct MHD_Connection *conn,
				     const char *body, size_t len, double t_arrival)
{
	struct strata_buf out = { 0 };
	unsigned waiting;
	int busy;

	queue_state(s, &waiting, &busy);
	strata_metrics_render(&s->metrics, waiting, busy, &out);
	if (out.oom)
		strata_buf_free(&out);
	return strata_reply(s, conn, 200, "text/plain; version=0.0.4; charset=utf-8", out.p, NULL);
}
