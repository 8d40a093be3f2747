/*
 * anthropic_out.c - the Anthropic Messages API's answers: a message of
 * content blocks (thinking, text, tool_use) with its stop_reason and usage,
 * or the stream of message_start, content_block_start/delta/stop,
 * message_delta and message_stop events; its error shape; and the routes
 * /v1/messages and /v1/messages/count_tokens.
 */
#define _GNU_SOURCE /* strndup */
#include "serve/anthropic.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api_int.h"
#include "serve/dialect.h"
#include "serve/routes.h"
#include "serve/serve_int.h"

enum { B_NONE, B_THINKING, B_TEXT, B_TOOL };

char *strata_anthropic_error_json(unsigned status, const char *message, const char *param)
{
	const char *type = status == 401 ? "authentication_error" : status == 403 ?
			   "permission_error" : status == 404 ? "not_found_error" : status == 413 ?
			   "request_too_large" : status == 503 ? "overloaded_error" :
			   status >= 500 ? "api_error" : "invalid_request_error";
	cJSON *root = cJSON_CreateObject(), *e;
	int ok = root && cJSON_AddStringToObject(root, "type", "error") &&
		 (e = cJSON_AddObjectToObject(root, "error")) &&
		 cJSON_AddStringToObject(e, "type", type) &&
		 cJSON_AddStringToObject(e, "message", message);

	(void)param;
	return strata_json_text(root, ok);
}

/* toolu_ ids for the calls strata names call_ */
static void tool_id(const char *call_id, char *out, size_t n)
{
	snprintf(out, n, "toolu_%s", strncmp(call_id, "call_", 5) ? call_id : call_id + 5);
}

static const char *stop_reason(const struct strata_job *j)
{
	if (j->mp.n_calls)
		return "tool_use";
	if (j->out.matched)
		return "stop_sequence";
	return !strcmp(j->finish, "length") ? "max_tokens" : "end_turn";
}

static int add_stop_sequence(cJSON *o, const struct strata_job *j)
{
	if (j->out.matched && !j->mp.n_calls)
		return cJSON_AddStringToObject(o, "stop_sequence",
					       j->req.stop[j->out.matched - 1]) != NULL;
	return cJSON_AddNullToObject(o, "stop_sequence") != NULL;
}

/* A tool_use block of call c (input: its arguments as an object). */
static cJSON *tool_use(const struct strata_mp_call *c, int empty_input)
{
	cJSON *b = cJSON_CreateObject(), *input = empty_input ? cJSON_CreateObject()
								: cJSON_Parse(c->args);
	char id[48];

	tool_id(c->id, id, sizeof(id));
	if (!b || !input || !cJSON_AddStringToObject(b, "type", "tool_use") ||
	    !cJSON_AddStringToObject(b, "id", id) || !cJSON_AddStringToObject(b, "name", c->name) ||
	    !cJSON_AddItemToObject(b, "input", input)) {
		cJSON_Delete(b);
		cJSON_Delete(input);
		return NULL;
	}
	return b;
}

static int add_block(cJSON *arr, const char *type, const char *key, const char *text, size_t n)
{
	cJSON *b = cJSON_CreateObject();
	char *t = strndup(text ? text : "", n);
	int ok;

	if (b && !cJSON_AddItemToArray(arr, b)) {
		cJSON_Delete(b);
		b = NULL;
	}
	ok = b && t && cJSON_AddStringToObject(b, "type", type) &&
	     cJSON_AddStringToObject(b, key, t) &&
	     (strcmp(type, "thinking") || cJSON_AddStringToObject(b, "signature", ""));
	free(t);
	return ok;
}

/* The message head both the whole answer and message_start carry. */
static cJSON *message_head(const struct strata_job *j)
{
	cJSON *m = cJSON_CreateObject();

	if (!m || !cJSON_AddStringToObject(m, "id", j->id) ||
	    !cJSON_AddStringToObject(m, "type", "message") ||
	    !cJSON_AddStringToObject(m, "role", "assistant") ||
	    !cJSON_AddStringToObject(m, "model", j->head.model)) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

static int add_usage(cJSON *o, uint32_t in, uint32_t out)
{
	cJSON *u = cJSON_AddObjectToObject(o, "usage");

	return u && cJSON_AddNumberToObject(u, "input_tokens", in) &&
	       cJSON_AddNumberToObject(u, "output_tokens", out);
}

static char *anthropic_whole(struct strata_server *s, const struct strata_job *j)
{
	cJSON *m = message_head(j), *content;
	int ok = m && (content = cJSON_AddArrayToObject(m, "content"));

	(void)s;
	if (ok && j->mp.reasoning.len)
		ok = add_block(content, "thinking", "thinking", j->mp.reasoning.p, j->mp.reasoning.len);
	if (ok && (j->mp.content.len || !j->mp.n_calls))
		ok = add_block(content, "text", "text", j->mp.content.p, j->mp.content.len);
	for (size_t i = 0; ok && i < j->mp.n_calls; i++) {
		cJSON *b = tool_use(&j->mp.calls[i], 0);

		ok = b && cJSON_AddItemToArray(content, b);
		if (!ok)
			cJSON_Delete(b);
	}
	ok = ok && cJSON_AddStringToObject(m, "stop_reason", stop_reason(j)) &&
	     add_stop_sequence(m, j) && add_usage(m, j->n_tokens, j->n_gen);
	return strata_json_text(m, ok);
}

/* ---- the stream ------------------------------------------------------------------- */

/* An event's object, its "type" first. */
static cJSON *ev(const char *type)
{
	cJSON *o = cJSON_CreateObject();

	if (o && !cJSON_AddStringToObject(o, "type", type)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static void event(struct strata_stream *st, const char *type, cJSON *o, int ok)
{
	strata_stream_event(st, type, strata_json_text(o, ok && o));
}

static void block_stop(struct strata_stream *st)
{
	cJSON *o;

	if (st->block_kind == B_THINKING) { /* an empty signature: strata signs nothing */
		cJSON *d = cJSON_CreateObject(), *o2 = ev("content_block_delta");
		int ok = d && o2 && cJSON_AddNumberToObject(o2, "index", st->block) &&
			 cJSON_AddStringToObject(d, "type", "signature_delta") &&
			 cJSON_AddStringToObject(d, "signature", "") && cJSON_AddItemToObject(o2, "delta", d);

		if (!ok && !cJSON_GetObjectItem(o2, "delta"))
			cJSON_Delete(d);
		event(st, "content_block_delta", o2, ok);
	}
	o = ev("content_block_stop");
	event(st, "content_block_stop", o, o && cJSON_AddNumberToObject(o, "index", st->block));
	st->block++;
	st->block_kind = B_NONE;
}

/* Open a block of kind (closing the open one); block may be a tool_use block. */
static void block_start(struct strata_stream *st, int kind, cJSON *block)
{
	cJSON *o;
	int ok;

	if (st->block_kind != B_NONE)
		block_stop(st);
	o = ev("content_block_start");
	if (!block && kind == B_TEXT && (block = cJSON_CreateObject()))
		ok = cJSON_AddStringToObject(block, "type", "text") &&
		     cJSON_AddStringToObject(block, "text", "");
	else if (!block && kind == B_THINKING && (block = cJSON_CreateObject()))
		ok = cJSON_AddStringToObject(block, "type", "thinking") &&
		     cJSON_AddStringToObject(block, "thinking", "");
	else
		ok = block != NULL;
	ok = ok && o && cJSON_AddNumberToObject(o, "index", st->block) &&
	     cJSON_AddItemToObject(o, "content_block", block);
	if (!ok && block && !cJSON_GetObjectItem(o, "content_block"))
		cJSON_Delete(block);
	event(st, "content_block_start", o, ok);
	st->block_kind = kind;
}

static void block_delta(struct strata_stream *st, const char *type, const char *key,
			const char *text, size_t n)
{
	cJSON *o = ev("content_block_delta"), *d = cJSON_CreateObject();
	char *t = strndup(text, n);
	int ok = o && d && t && cJSON_AddNumberToObject(o, "index", st->block) &&
		 cJSON_AddStringToObject(d, "type", type) && cJSON_AddStringToObject(d, key, t) &&
		 cJSON_AddItemToObject(o, "delta", d);

	if (!ok && d && !cJSON_GetObjectItem(o, "delta"))
		cJSON_Delete(d);
	free(t);
	event(st, "content_block_delta", o, ok);
}

static void anthropic_start(struct strata_stream *st)
{
	cJSON *o = ev("message_start"), *m = message_head(st->j), *c, *ping = ev("ping");
	int ok = o && m && (c = cJSON_AddArrayToObject(m, "content")) &&
		 cJSON_AddNullToObject(m, "stop_reason") && cJSON_AddNullToObject(m, "stop_sequence") &&
		 add_usage(m, st->j->n_tokens, 0) && cJSON_AddItemToObject(o, "message", m);

	if (!ok && m && !cJSON_GetObjectItem(o, "message"))
		cJSON_Delete(m);
	event(st, "message_start", o, ok);
	event(st, "ping", ping, ping != NULL);
}

static void anthropic_deltas(struct strata_stream *st)
{
	const struct strata_msgparse *mp = &st->j->mp;

	if (mp->reasoning.len > st->reasoning) {
		if (st->block_kind != B_THINKING)
			block_start(st, B_THINKING, NULL);
		block_delta(st, "thinking_delta", "thinking", mp->reasoning.p + st->reasoning,
			    mp->reasoning.len - st->reasoning);
		st->reasoning = mp->reasoning.len;
	}
	if (mp->content.len > st->content) {
		if (st->block_kind != B_TEXT)
			block_start(st, B_TEXT, NULL);
		block_delta(st, "text_delta", "text", mp->content.p + st->content,
			    mp->content.len - st->content);
		st->content = mp->content.len;
	}
	/* Each call: a tool_use block whose input comes as one input_json_delta. */
	for (; st->calls < mp->n_calls; st->calls++) {
		const struct strata_mp_call *c = &mp->calls[st->calls];

		block_start(st, B_TOOL, tool_use(c, 1));
		block_delta(st, "input_json_delta", "partial_json", c->args, strlen(c->args));
		block_stop(st);
	}
}

static void anthropic_finish(struct strata_stream *st, unsigned status, const char *error)
{
	const struct strata_job *j = st->j;
	cJSON *o, *d, *u;
	int ok;

	if (error) {
		char *e = strata_anthropic_error_json(status, error, NULL);

		strata_stream_event(st, "error", e);
		return;
	}
	if (st->block_kind != B_NONE)
		block_stop(st);
	o = ev("message_delta");
	ok = o && (d = cJSON_AddObjectToObject(o, "delta")) &&
	     cJSON_AddStringToObject(d, "stop_reason", stop_reason(j)) && add_stop_sequence(d, j) &&
	     (u = cJSON_AddObjectToObject(o, "usage")) &&
	     cJSON_AddNumberToObject(u, "output_tokens", j->n_gen);
	event(st, "message_delta", o, ok);
	o = ev("message_stop");
	event(st, "message_stop", o, o != NULL);
}

const struct strata_dialect strata_dialect_anthropic = {
	"msg_", anthropic_whole, anthropic_start, anthropic_deltas, anthropic_finish,
	strata_anthropic_error_json,
};

/* ---- routes ------------------------------------------------------------------------- */

/* The request parsed as strata's chat: 0, or the error already sent (*sent). */
static int parse(struct strata_server *s, struct MHD_Connection *conn, const char *body,
		 size_t len, int counting, struct strata_api_req *req, enum MHD_Result *sent)
{
	const struct strata_dialect *d = &strata_dialect_anthropic;
	struct strata_gen_params defaults;
	struct strata_api_ctx ctx;
	struct strata_api_err err;
	cJSON *root, *chat;
	int rc = strata_api_body(body, len, &root, &err);

	if (!rc) {
		rc = strata_anthropic_request(root, counting, &chat, &err);
		cJSON_Delete(root);
	}
	if (!rc) {
		strata_serve_api_ctx(s, &defaults, &ctx);
		rc = strata_api_parse_obj(chat, 1, &ctx, req, &err);
		cJSON_Delete(chat);
	}
	if (rc)
		*sent = strata_reply_error_as(s, conn, d, rc == -EINVAL ? err.status : 500,
					      rc == -EINVAL ? err.message : "out of memory",
					      err.param);
	return rc;
}

enum MHD_Result strata_route_messages(struct strata_server *s, struct MHD_Connection *conn,
				      const char *body, size_t len, double t_arrival)
{
	struct strata_api_req req;
	enum MHD_Result sent = MHD_NO;

	if (parse(s, conn, body, len, 0, &req, &sent))
		return sent;
	return strata_serve_generate(s, conn, &req, t_arrival, &strata_dialect_anthropic);
}

/* {"input_tokens": N}: the rendered conversation's tokens, nothing generated. */
enum MHD_Result strata_route_count_tokens(struct strata_server *s, struct MHD_Connection *conn,
					  const char *body, size_t len, double t_arrival)
{
	struct strata_api_req req;
	enum MHD_Result sent = MHD_NO;
	int32_t *ids = NULL;
	int n;
	char json[64];

	if (parse(s, conn, body, len, 1, &req, &sent))
		return sent;
	n = strata_engine_tokenize(s->e, req.prompt, req.prompt_len,
				   STRATA_TOKENIZE_ADD_BOS | STRATA_TOKENIZE_PARSE_SPECIAL, &ids);
	free(ids);
	strata_api_req_free(&req);
	if (n < 0)
		return strata_reply_error_as(s, conn, &strata_dialect_anthropic, 400,
					     "the messages cannot be tokenized", "messages");
	snprintf(json, sizeof(json), "{\"input_tokens\":%d}", n);
	return strata_reply(s, conn, 200, "application/json", strdup(json), NULL);
}
