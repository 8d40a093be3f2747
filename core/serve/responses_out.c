/*
 * responses_out.c - the Responses API's answers: a response object whose
 * output holds a reasoning item, a message item (output_text) and
 * function_call items; streamed as response.created, output_item.added,
 * content_part.added, output_text.delta ... output_item.done and
 * response.completed, each with its sequence_number; and POST /v1/responses.
 */
#define _GNU_SOURCE /* strndup */
#include "serve/responses.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api_int.h"
#include "serve/dialect.h"
#include "serve/routes.h"
#include "serve/serve_int.h"

enum { I_NONE, I_REASONING, I_MESSAGE };

static int add_strn(cJSON *o, const char *key, const char *s, size_t n)
{
	char *t = strndup(s ? s : "", n);
	int ok = t && cJSON_AddStringToObject(o, key, t);

	free(t);
	return ok;
}

/* Item ids: the response's id with the item's kind and position. */
static void item_id(const struct strata_job *j, const char *kind, int index, char *out, size_t n)
{
	snprintf(out, n, "%s_%s_%d", kind, j->id + 5, index);
}

static cJSON *add_item(cJSON *arr)
{
	cJSON *o = cJSON_CreateObject();

	if (o && !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A reasoning item with text (NULL: none yet). */
static int reasoning_item(cJSON *o, const struct strata_job *j, int index, const char *text,
			  size_t n)
{
	char id[96];
	cJSON *content, *part;

	item_id(j, "rs", index, id, sizeof(id));
	return cJSON_AddStringToObject(o, "type", "reasoning") &&
	       cJSON_AddStringToObject(o, "id", id) && cJSON_AddArrayToObject(o, "summary") &&
	       (content = cJSON_AddArrayToObject(o, "content")) &&
	       (!text || ((part = add_item(content)) &&
			  cJSON_AddStringToObject(part, "type", "reasoning_text") &&
			  add_strn(part, "text", text, n)));
}

/* An output_text part. */
static int text_part(cJSON *p, const char *text, size_t n)
{
	return cJSON_AddStringToObject(p, "type", "output_text") && add_strn(p, "text", text, n) &&
	       cJSON_AddArrayToObject(p, "annotations");
}

/* A message item; text NULL: in progress, no content yet. */
static int message_item(cJSON *o, const struct strata_job *j, int index, const char *text,
			size_t n)
{
	char id[96];
	cJSON *content, *part;

	item_id(j, "msg", index, id, sizeof(id));
	return cJSON_AddStringToObject(o, "type", "message") &&
	       cJSON_AddStringToObject(o, "id", id) &&
	       cJSON_AddStringToObject(o, "status", text ? "completed" : "in_progress") &&
	       cJSON_AddStringToObject(o, "role", "assistant") &&
	       (content = cJSON_AddArrayToObject(o, "content")) &&
	       (!text || ((part = add_item(content)) && text_part(part, text, n)));
}

static int call_item(cJSON *o, const struct strata_job *j, int index,
		     const struct strata_mp_call *c, int done)
{
	char id[96];

	item_id(j, "fc", index, id, sizeof(id));
	return cJSON_AddStringToObject(o, "type", "function_call") &&
	       cJSON_AddStringToObject(o, "id", id) && cJSON_AddStringToObject(o, "call_id", c->id) &&
	       cJSON_AddStringToObject(o, "name", c->name) &&
	       cJSON_AddStringToObject(o, "arguments", done ? c->args : "") &&
	       cJSON_AddStringToObject(o, "status", done ? "completed" : "in_progress");
}

/* The response object; done: with its output and usage, else in progress and empty. */
static cJSON *response(const struct strata_job *j, int done)
{
	const struct strata_msgparse *mp = &j->mp;
	int length = done && !strcmp(j->finish, "length"), n = 0, ok;
	cJSON *r = cJSON_CreateObject(), *out, *u, *o, *fmt;

	ok = r && cJSON_AddStringToObject(r, "id", j->id) &&
	     cJSON_AddStringToObject(r, "object", "response") &&
	     cJSON_AddNumberToObject(r, "created_at", (double)j->head.created) &&
	     cJSON_AddStringToObject(r, "status", !done ? "in_progress" : length ? "incomplete"
								      : "completed") &&
	     cJSON_AddStringToObject(r, "model", j->head.model) &&
	     cJSON_AddNullToObject(r, "error") &&
	     (out = cJSON_AddArrayToObject(r, "output")) &&
	     cJSON_AddBoolToObject(r, "parallel_tool_calls", j->req.parallel_tools) &&
	     cJSON_AddBoolToObject(r, "store", 0) &&
	     (fmt = cJSON_AddObjectToObject(r, "text")) &&
	     (fmt = cJSON_AddObjectToObject(fmt, "format")) &&
	     cJSON_AddStringToObject(fmt, "type", "text");
	if (ok && length)
		ok = (o = cJSON_AddObjectToObject(r, "incomplete_details")) &&
		     cJSON_AddStringToObject(o, "reason", "max_output_tokens");
	else if (ok)
		ok = cJSON_AddNullToObject(r, "incomplete_details") != NULL;
	if (ok && done && mp->reasoning.len)
		ok = (o = add_item(out)) &&
		     reasoning_item(o, j, n++, mp->reasoning.p, mp->reasoning.len);
	if (ok && done && (mp->content.len || !mp->n_calls))
		ok = (o = add_item(out)) && message_item(o, j, n++, mp->content.p ? mp->content.p : "",
							mp->content.len);
	for (size_t i = 0; ok && done && i < mp->n_calls; i++)
		ok = (o = add_item(out)) && call_item(o, j, n++, &mp->calls[i], 1);
	if (ok && done)
		ok = (u = cJSON_AddObjectToObject(r, "usage")) &&
		     cJSON_AddNumberToObject(u, "input_tokens", j->n_tokens) &&
		     cJSON_AddNumberToObject(u, "output_tokens", j->n_gen) &&
		     cJSON_AddNumberToObject(u, "total_tokens", (double)j->n_tokens + j->n_gen);
	if (!ok) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

static char *responses_whole(struct strata_server *s, const struct strata_job *j)
{
	cJSON *r = response(j, 1);

	(void)s;
	return strata_json_text(r, r != NULL);
}

char *strata_responses_error_json(unsigned status, const char *message, const char *param)
{
	return strata_api_error_json(status, message, param);
}

/* ---- the stream --------------------------------------------------------------------- */

/* An event object: type, then sequence_number. */
static cJSON *ev(struct strata_stream *st, const char *type)
{
	cJSON *o = cJSON_CreateObject();

	if (o && (!cJSON_AddStringToObject(o, "type", type) ||
		  !cJSON_AddNumberToObject(o, "sequence_number", st->seq++))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static void emit(struct strata_stream *st, const char *type, cJSON *o, int ok)
{
	strata_stream_event(st, type, strata_json_text(o, ok && o));
}

static void with_response(struct strata_stream *st, const char *type, int done)
{
	cJSON *o = ev(st, type), *r = response(st->j, done);
	int ok = o && r && cJSON_AddItemToObject(o, "response", r);

	if (!ok && r && !cJSON_GetObjectItem(o, "response"))
		cJSON_Delete(r);
	emit(st, type, o, ok);
}

/* output_item.added / .done of item (built by the caller). */
static void item_event(struct strata_stream *st, const char *type, cJSON *item)
{
	cJSON *o = ev(st, type);
	int ok = o && item && cJSON_AddNumberToObject(o, "output_index", st->block) &&
		 cJSON_AddItemToObject(o, "item", item);

	if (!ok && item && !cJSON_GetObjectItem(o, "item"))
		cJSON_Delete(item);
	emit(st, type, o, ok);
}

/* An event about the open item: item_id, output_index (and content_index), then more. */
static cJSON *about_item(struct strata_stream *st, const char *type, const char *kind, int part)
{
	cJSON *o = ev(st, type);
	char id[96];

	item_id(st->j, kind, st->block, id, sizeof(id));
	if (o && (!cJSON_AddStringToObject(o, "item_id", id) ||
		  !cJSON_AddNumberToObject(o, "output_index", st->block) ||
		  (part && !cJSON_AddNumberToObject(o, "content_index", 0)))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static void item_close(struct strata_stream *st)
{
	const struct strata_msgparse *mp = &st->j->mp;
	const char *kind = st->block_kind == I_REASONING ? "rs" : "msg";
	const struct strata_buf *b = st->block_kind == I_REASONING ? &mp->reasoning : &mp->content;
	const char *text = b->p ? b->p + st->mark : "";
	size_t n = b->len - st->mark;
	cJSON *o, *part, *item = cJSON_CreateObject();
	const char *done;
	int ok;

	if (st->block_kind == I_NONE) {
		cJSON_Delete(item);
		return;
	}
	done = st->block_kind == I_REASONING ? "response.reasoning_text.done"
					     : "response.output_text.done";
	o = about_item(st, done, kind, 1);
	emit(st, done, o, o && add_strn(o, "text", text, n));
	if (st->block_kind == I_MESSAGE) {
		o = about_item(st, "response.content_part.done", kind, 1);
		part = cJSON_CreateObject();
		ok = o && part && text_part(part, text, n) && cJSON_AddItemToObject(o, "part", part);
		if (!ok && part && !cJSON_GetObjectItem(o, "part"))
			cJSON_Delete(part);
		emit(st, "response.content_part.done", o, ok);
	}
	ok = item && (st->block_kind == I_REASONING ? reasoning_item(item, st->j, st->block, text, n)
						    : message_item(item, st->j, st->block, text, n));
	item_event(st, "response.output_item.done", ok ? item : NULL);
	if (!ok)
		cJSON_Delete(item);
	st->block++;
	st->block_kind = I_NONE;
}

/* Open an item of kind: output_item.added (and content_part.added for a message). */
static void item_open(struct strata_stream *st, int kind, size_t mark)
{
	cJSON *item = cJSON_CreateObject(), *o, *part;
	int ok;

	item_close(st);
	st->block_kind = kind;
	st->mark = mark;
	ok = item && (kind == I_REASONING ? reasoning_item(item, st->j, st->block, NULL, 0)
					  : message_item(item, st->j, st->block, NULL, 0));
	item_event(st, "response.output_item.added", ok ? item : NULL);
	if (!ok)
		cJSON_Delete(item);
	if (kind == I_MESSAGE) {
		o = about_item(st, "response.content_part.added", "msg", 1);
		part = cJSON_CreateObject();
		ok = o && part && text_part(part, "", 0) && cJSON_AddItemToObject(o, "part", part);
		if (!ok && part && !cJSON_GetObjectItem(o, "part"))
			cJSON_Delete(part);
		emit(st, "response.content_part.added", o, ok);
	}
}

static void text_delta(struct strata_stream *st, const char *type, const char *kind,
		       const char *text, size_t n)
{
	cJSON *o = about_item(st, type, kind, 1);

	emit(st, type, o, o && add_strn(o, "delta", text, n));
}

static void responses_start(struct strata_stream *st)
{
	with_response(st, "response.created", 0);
	with_response(st, "response.in_progress", 0);
}

static void responses_deltas(struct strata_stream *st)
{
	const struct strata_msgparse *mp = &st->j->mp;

	if (mp->reasoning.len > st->reasoning) {
		if (st->block_kind != I_REASONING)
			item_open(st, I_REASONING, st->reasoning);
		text_delta(st, "response.reasoning_text.delta", "rs", mp->reasoning.p + st->reasoning,
			   mp->reasoning.len - st->reasoning);
		st->reasoning = mp->reasoning.len;
	}
	if (mp->content.len > st->content) {
		if (st->block_kind != I_MESSAGE)
			item_open(st, I_MESSAGE, st->content);
		text_delta(st, "response.output_text.delta", "msg", mp->content.p + st->content,
			   mp->content.len - st->content);
		st->content = mp->content.len;
	}
	for (; st->calls < mp->n_calls; st->calls++) {
		const struct strata_mp_call *c = &mp->calls[st->calls];
		cJSON *item = cJSON_CreateObject(), *o;

		item_close(st);
		item_event(st, "response.output_item.added",
			   item && call_item(item, st->j, st->block, c, 0) ? item : (cJSON_Delete(item),
										     NULL));
		o = about_item(st, "response.function_call_arguments.delta", "fc", 0);
		emit(st, "response.function_call_arguments.delta", o,
		     o && cJSON_AddStringToObject(o, "delta", c->args));
		o = about_item(st, "response.function_call_arguments.done", "fc", 0);
		emit(st, "response.function_call_arguments.done", o,
		     o && cJSON_AddStringToObject(o, "arguments", c->args));
		item = cJSON_CreateObject();
		item_event(st, "response.output_item.done",
			   item && call_item(item, st->j, st->block, c, 1) ? item : (cJSON_Delete(item),
										     NULL));
		st->block++;
	}
}

static void responses_finish(struct strata_stream *st, unsigned status, const char *error)
{
	if (error) {
		cJSON *o = ev(st, "error");
		char code[16];

		snprintf(code, sizeof(code), "%u", status);
		emit(st, "error", o, o && cJSON_AddStringToObject(o, "code", code) &&
		     cJSON_AddStringToObject(o, "message", error) && cJSON_AddNullToObject(o, "param"));
		return;
	}
	item_close(st);
	with_response(st, !strcmp(st->j->finish, "length") ? "response.incomplete"
							    : "response.completed", 1);
}

const struct strata_dialect strata_dialect_responses = {
	"resp_", responses_whole, responses_start, responses_deltas, responses_finish,
	strata_responses_error_json,
};

enum MHD_Result strata_route_responses(struct strata_server *s, struct MHD_Connection *conn,
				       const char *body, size_t len, double t_arrival)
{
	const struct strata_dialect *d = &strata_dialect_responses;
	struct strata_gen_params defaults;
	struct strata_api_ctx ctx;
	struct strata_api_req req;
	struct strata_api_err err;
	cJSON *root, *chat;
	int rc = strata_api_body(body, len, &root, &err);

	if (!rc) {
		rc = strata_responses_request(root, &chat, &err);
		cJSON_Delete(root);
	}
	if (!rc) {
		strata_serve_api_ctx(s, &defaults, &ctx);
		rc = strata_api_parse_obj(chat, 1, &ctx, &req, &err);
		cJSON_Delete(chat);
	}
	if (rc)
		return strata_reply_error_as(s, conn, d, rc == -EINVAL ? err.status : 500,
					     rc == -EINVAL ? err.message : "out of memory", err.param);
	return strata_serve_generate(s, conn, &req, t_arrival, d);
}
