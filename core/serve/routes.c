/*
 * routes.c - generation: a parsed request becomes a job in the queue, and
 * its answer, whole or streamed as Server-Sent Events, in the dialect of the
 * route; OpenAI's chat and completions dialects.  The other routes are in
 * routes_info.c, Anthropic's and the Responses API's in their own files.
 */
#define _GNU_SOURCE /* strndup */
#include "serve/routes.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "serve/dialect.h"
#include "serve/grammar.h"
#include "serve/serve_int.h"
#include "util/log.h"

#define JSON_TYPE "application/json"

enum MHD_Result strata_reply(struct strata_server *s, struct MHD_Connection *conn,
			     unsigned status, const char *type, char *body, const char *allow)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	if (!body) {
		status = 500;
		type = JSON_TYPE;
		body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
			      "\"param\":null,\"code\":500}}");
		if (!body)
			return MHD_NO;
	}
	r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	strata_serve_headers(s, conn, r, status);
	if (status == 401)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	strata_metrics_status(&s->metrics, status);
	return rc;
}

enum MHD_Result strata_reply_error_as(struct strata_server *s, struct MHD_Connection *conn,
				      const struct strata_dialect *d, unsigned status,
				      const char *message, const char *param)
{
	const char *allow = status == 405 ? param : NULL;

	strata_debug("serve: %u: %s", status, message);
	return strata_reply(s, conn, status, JSON_TYPE,
			    (d ? d->error : strata_api_error_json)(status, message,
								   allow ? NULL : param), allow);
}

enum MHD_Result strata_reply_error(struct strata_server *s, struct MHD_Connection *conn,
				   unsigned status, const char *message, const char *param)
{
	return strata_reply_error_as(s, conn, NULL, status, message, param);
}

char *strata_json_text(cJSON *root, int ok)
{
	char *s = root && ok ? cJSON_PrintUnformatted(root) : NULL, *copy = s ? strdup(s) : NULL;

	cJSON_free(s); /* callers free() it; cJSON may use other hooks */
	cJSON_Delete(root);
	return copy;
}

static int conn_fd(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

	return ci ? ci->connect_fd : -1;
}

void strata_job_failure(const struct strata_job *j, unsigned *status, char *msg, size_t n)
{
	if (j->error == -ECANCELED) {
		*status = 503;
		snprintf(msg, n, "the server is shutting down");
	} else {
		*status = 500;
		if (j->why[0])
			snprintf(msg, n, "generation failed: %s", j->why);
		else
			snprintf(msg, n, "generation failed: %s", strerror(-j->error));
	}
}

/* ---- a whole response ---------------------------------------------------------- */

void strata_serve_api_ctx(struct strata_server *s, struct strata_gen_params *defaults,
			  struct strata_api_ctx *ctx)
{
	strata_engine_gen_defaults(s->e, defaults);
	*ctx = (struct strata_api_ctx){ s->chat, defaults, strata_engine_n_vocab(s->e), s->toolfmt,
					s->tool_sub };
}

struct strata_api_msg strata_job_msg(struct strata_server *s, const struct strata_job *j)
{
	return (struct strata_api_msg){
		.content = j->mp.content.p ? j->mp.content.p : "", .content_len = j->mp.content.len,
		.reasoning = j->mp.reasoning.p, .reasoning_len = j->mp.reasoning.len,
		.calls = j->mp.calls, .n_calls = j->mp.n_calls, .warning = j->mp.warning,
		.e = j->req.logprobs ? s->e : NULL, .lp = j->steer.lp, .n_lp = j->steer.n_lp,
	};
}

static enum MHD_Result reply_whole(struct strata_server *s, struct MHD_Connection *conn,
				   struct strata_job *j, const struct strata_dialect *d)
{
	char msg[640], *json = NULL;
	unsigned status = 200;

	if (!strata_job_wait(s, j, UINT_MAX, conn_fd(conn))) {
		strata_job_unref(j);
		if (atomic_load(&s->stopping))
			return strata_reply_error_as(s, conn, d, 503, "the server is shutting down",
						     NULL);
		return MHD_NO; /* the client left: nobody to answer */
	}
	pthread_mutex_lock(&j->lock);
	if (j->error)
		strata_job_failure(j, &status, msg, sizeof(msg));
	else
		json = d->whole(s, j);
	pthread_mutex_unlock(&j->lock);
	strata_job_unref(j);
	if (status != 200)
		return strata_reply_error_as(s, conn, d, status, msg, NULL);
	return strata_reply(s, conn, 200, JSON_TYPE, json, NULL);
}

/* ---- a streamed response ------------------------------------------------------- */

void strata_stream_event(struct strata_stream *st, const char *name, char *json)
{
	if (name) {
		strata_buf_puts(&st->out, "event: ");
		strata_buf_puts(&st->out, name);
		strata_buf_puts(&st->out, "\n");
	}
	strata_buf_puts(&st->out, "data: ");
	strata_buf_puts(&st->out, json ? json : "{\"error\":{\"message\":\"out of memory\"}}");
	strata_buf_puts(&st->out, "\n\n");
	free(json);
}

/* Turn what the job has now into events; 0, or -1 when the client is gone. */
static int stream_fill(struct strata_stream *st)
{
	struct strata_job *j = st->j;
	char msg[640];
	int done, error;
	unsigned status = 200;

	if (!strata_job_wait(st->s, j, st->seen, st->fd))
		return -1;
	pthread_mutex_lock(&j->lock);
	st->seen = j->version;
	st->d->deltas(st);
	done = j->done;
	error = j->error;
	pthread_mutex_unlock(&j->lock);
	if (!done)
		return 0;
	/* Read after done: the engine thread writes these before it sets done. */
	if (error)
		strata_job_failure(j, &status, msg, sizeof(msg));
	st->d->finish(st, status, status == 200 ? NULL : msg);
	st->ended = 1;
	return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct strata_stream *st = cls;
	size_t n;

	(void)pos;
	while (!st->out.len) {
		if (st->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (stream_fill(st) || st->out.oom)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	n = st->out.len < max ? st->out.len : max;
	memcpy(buf, st->out.p, n);
	strata_buf_consume(&st->out, n);
	return (ssize_t)n;
}

/* The response is gone: sent, or the connection closed under it. */
static void stream_free(void *cls)
{
	struct strata_stream *st = cls;
	int done;

	pthread_mutex_lock(&st->j->lock);
	done = st->j->done;
	pthread_mutex_unlock(&st->j->lock);
	if (!done)
		strata_job_cancel(st->s, st->j);
	strata_job_unref(st->j);
	strata_buf_free(&st->out);
	free(st);
}

static enum MHD_Result reply_stream(struct strata_server *s, struct MHD_Connection *conn,
				    struct strata_job *j, const struct strata_dialect *d)
{
	struct strata_stream *st = calloc(1, sizeof(*st));
	struct MHD_Response *r;
	enum MHD_Result rc;

	if (!st) {
		strata_job_cancel(s, j);
		strata_job_unref(j);
		return MHD_NO;
	}
	st->s = s;
	st->j = j;
	st->d = d;
	st->fd = conn_fd(conn);
	d->start(st);
	/* Unknown size: HTTP/1.1 sends it chunked, each event as it comes. */
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st,
					      stream_free);
	if (!r) {
		stream_free(st);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	strata_serve_headers(s, conn, r, 200);
	rc = MHD_queue_response(conn, 200, r);
	MHD_destroy_response(r);
	strata_metrics_status(&s->metrics, 200);
	return rc;
}

/* ---- OpenAI's dialects ------------------------------------------------------------ */

static char *openai_whole(struct strata_server *s, const struct strata_job *j)
{
	struct strata_api_msg m = strata_job_msg(s, j);

	return strata_api_completion_json(&j->head, &m, j->finish, j->n_tokens, j->n_gen);
}

static void openai_start(struct strata_stream *st)
{
	struct strata_api_msg none = { 0 };

	if (st->j->head.chat) /* the role goes first, alone, as OpenAI's does */
		strata_stream_event(st, NULL, strata_api_chunk_json(&st->j->head, &none, 1, NULL, 0,
								   0));
}

/* Chunks for what the message gained since the last look (caller holds the job's lock). */
static void openai_deltas(struct strata_stream *st)
{
	const struct strata_msgparse *mp = &st->j->mp;
	const struct strata_api_head *h = &st->j->head;
	struct strata_api_msg d = { 0 };

	if (mp->reasoning.len > st->reasoning) {
		d.reasoning = mp->reasoning.p + st->reasoning;
		d.reasoning_len = mp->reasoning.len - st->reasoning;
		strata_stream_event(st, NULL, strata_api_chunk_json(h, &d, 0, NULL, 0, 0));
		st->reasoning = mp->reasoning.len;
		memset(&d, 0, sizeof(d));
	}
	if (mp->content.len > st->content) {
		d.content = mp->content.p + st->content;
		d.content_len = mp->content.len - st->content;
		strata_stream_event(st, NULL, strata_api_chunk_json(h, &d, 0, NULL, 0, 0));
		st->content = mp->content.len;
		memset(&d, 0, sizeof(d));
	}
	/* A call goes out whole (name and arguments) once its block is complete. */
	for (; st->calls < mp->n_calls; st->calls++) {
		d.calls = &mp->calls[st->calls];
		d.n_calls = 1;
		d.first_call = st->calls;
		strata_stream_event(st, NULL, strata_api_chunk_json(h, &d, 0, NULL, 0, 0));
	}
	memset(&d, 0, sizeof(d));
	if (st->j->req.logprobs && st->j->steer.n_lp > st->lp) {
		d.e = st->s->e;
		d.lp = st->j->steer.lp + st->lp;
		d.n_lp = st->j->steer.n_lp - st->lp;
		d.text_offset = st->lp_bytes;
		strata_stream_event(st, NULL, strata_api_chunk_json(h, &d, 0, NULL, 0, 0));
		for (; st->lp < st->j->steer.n_lp; st->lp++)
			st->lp_bytes += st->j->steer.lp[st->lp].nbytes;
	}
}

static void openai_finish(struct strata_stream *st, unsigned status, const char *error)
{
	const struct strata_job *j = st->j;

	if (error) {
		strata_stream_event(st, NULL, strata_api_error_json(status, error, NULL));
	} else {
		struct strata_api_msg end = { .warning = j->mp.warning };

		strata_stream_event(st, NULL, strata_api_chunk_json(&j->head, &end, 0, j->finish,
								   j->n_tokens, j->n_gen));
	}
	strata_buf_puts(&st->out, "data: [DONE]\n\n");
}

const struct strata_dialect strata_dialect_chat = {
	"chatcmpl-", openai_whole, openai_start, openai_deltas, openai_finish, strata_api_error_json,
};
const struct strata_dialect strata_dialect_completion = {
	"cmpl-", openai_whole, openai_start, openai_deltas, openai_finish, strata_api_error_json,
};

/* ---- generation routes ------------------------------------------------------------ */

/* Tokenize the request's prompt and check that it and max_tokens fit the context. */
static int prepare(struct strata_server *s, struct strata_api_req *req, int32_t **ids,
		   int32_t *n_predict, struct strata_api_err *err)
{
	uint32_t n_ctx = strata_engine_n_ctx(s->e);
	const char *param = req->chat ? "messages" : "prompt";
	int n;

	err->status = 400;
	snprintf(err->param, sizeof(err->param), "%s", param);
	if (req->prompt_ids) { /* token ids are read as given: no BOS added */
		n = (int)req->n_prompt_ids;
		if (!(*ids = malloc((size_t)n * sizeof(**ids))))
			return -ENOMEM;
		memcpy(*ids, req->prompt_ids, (size_t)n * sizeof(**ids));
	} else {
		n = strata_engine_tokenize(s->e, req->prompt, req->prompt_len,
					   STRATA_TOKENIZE_ADD_BOS | STRATA_TOKENIZE_PARSE_SPECIAL,
					   ids);
	}
	if (n < 0) {
		snprintf(err->message, sizeof(err->message), "the %s cannot be tokenized: %s",
			 param, strerror(-n));
		return -EINVAL;
	}
	if (n == 0) {
		snprintf(err->message, sizeof(err->message), "the %s is empty", param);
		return -EINVAL;
	}
	if ((uint32_t)n >= n_ctx) {
		snprintf(err->message, sizeof(err->message), "the %s has %d tokens but the context "
			 "holds %u", param, n, n_ctx);
		return -EINVAL;
	}
	if (req->max_tokens > 0 && (uint64_t)n + (uint64_t)req->max_tokens > n_ctx) {
		snprintf(err->param, sizeof(err->param), "max_tokens");
		snprintf(err->message, sizeof(err->message), "the prompt's %d tokens plus max_tokens "
			 "%d are over the context of %u tokens", n, req->max_tokens, n_ctx);
		return -EINVAL;
	}
	*n_predict = req->max_tokens > 0 ? req->max_tokens : (int32_t)(n_ctx - (uint32_t)n);
	return n;
}

/* Does the rendered prompt leave the reply inside an open <think> (DeepSeek-R1, Qwen3-Thinking)? */
static int prompt_opens_think(const char *p, size_t n)
{
	while (n && strchr(" \t\r\n", p[n - 1]))
		n--;
	return n >= 7 && memcmp(p + n - 7, "<think>", 7) == 0;
}

/* The vocabulary trie the token masks walk, built by the first request that needs it. */
static const struct strata_vtrie *vtrie(struct strata_server *s)
{
	pthread_mutex_lock(&s->vtrie_lock);
	if (!s->vtrie) {
		int32_t ids[STRATA_MAX_MARKERS];
		const char *texts[STRATA_MAX_MARKERS];

		for (int i = 0; i < s->n_markers; i++) {
			ids[i] = s->markers[i].id;
			texts[i] = s->markers[i].text;
		}
		(void)strata_vtrie_build(s->e, ids, texts, s->n_markers, &s->vtrie);
	}
	pthread_mutex_unlock(&s->vtrie_lock);
	return s->vtrie;
}

/* What the reply is read for and how each token is steered. */
static int setup_job(struct strata_server *s, struct strata_job *j)
{
	const struct strata_api_req *r = &j->req;
	struct strata_steer *st = &j->steer;
	int rc;

	if (r->grammar) {
		const struct strata_vtrie *t = vtrie(s);

		if (!t)
			return -ENOMEM;
		if ((rc = strata_grammar_run_new(r->grammar, t, &st->grammar)))
			return rc;
		/* the markers of a forced call reach the grammar as text, as they do the parser */
		j->markers = s->markers;
		j->n_markers = s->n_markers;
	}

	st->e = s->e;
	st->presence = r->presence;
	st->frequency = r->frequency;
	st->logprobs = r->logprobs;
	st->top_logprobs = r->top_logprobs;
	st->think_budget = -1;
	st->bias = r->bias;
	st->n_bias = r->n_bias;
	if (r->echo) { /* the prompt as the reply's start: for text prompts, the text itself */
		if (r->prompt) {
			strata_mp_feed(&j->mp, r->prompt, r->prompt_len);
		} else {
			int len = strata_engine_detokenize(s->e, r->prompt_ids, r->n_prompt_ids, 0, NULL, 0);
			char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;

			if (!text)
				return -ENOMEM;
			strata_engine_detokenize(s->e, r->prompt_ids, r->n_prompt_ids, 0, text,
						 (size_t)len);
			strata_mp_feed(&j->mp, text, (size_t)len);
			free(text);
		}
		j->version++;
	}
	if (!r->chat)
		return 0;
	if (r->tools) {
		j->mp.fmt = s->toolfmt;
		j->mp.tools = r->tools;
		j->mp.max_calls = r->parallel_tools ? 0 : 1;
	}
	j->mp.think = !r->reasoning_raw && strata_chat_mentions(s->chat, "<think>");
	j->mp.start_in_think = j->mp.think && prompt_opens_think(r->prompt, r->prompt_len);
	if (j->mp.fmt != STRATA_TOOLS_NONE || j->mp.think || r->grammar) {
		j->markers = s->markers;
		j->n_markers = s->n_markers;
	}
	if (j->mp.think && r->think_budget >= 0) {
		int32_t *ids = NULL;
		int n = strata_engine_tokenize(s->e, "</think>\n\n", 10, STRATA_TOKENIZE_PARSE_SPECIAL,
					       &ids);

		if (n < 0)
			return n;
		if (n > 0 && (size_t)n <= sizeof(st->close_ids) / sizeof(st->close_ids[0])) {
			memcpy(st->close_ids, ids, (size_t)n * sizeof(*ids));
			st->n_close = (uint32_t)n;
			st->think_budget = r->think_budget;
		}
		free(ids);
	}
	return 0;
}

enum MHD_Result strata_serve_generate(struct strata_server *s, struct MHD_Connection *conn,
				struct strata_api_req *req, double t_arrival,
				const struct strata_dialect *d)
{
	struct strata_api_err err = { 0 };
	struct strata_job *j;
	int32_t *ids = NULL, n_predict = 0;
	int n, rc, chat = req->chat;

	n = prepare(s, req, &ids, &n_predict, &err);
	if (n < 0) {
		free(ids);
		strata_api_req_free(req);
		if (n == -ENOMEM)
			return strata_reply_error_as(s, conn, d, 500, "out of memory", NULL);
		return strata_reply_error_as(s, conn, d, err.status, err.message, err.param);
	}
	j = strata_job_new(req, ids, (uint32_t)n);
	if (!j)
		return strata_reply_error_as(s, conn, d, 500, "out of memory", NULL);
	j->n_predict = n_predict;
	j->t_arrival = t_arrival;
	if ((rc = setup_job(s, j))) {
		strata_job_unref(j);
		return strata_reply_error_as(s, conn, d, 500, "out of memory", NULL);
	}
	snprintf(j->id, sizeof(j->id), "%s%llx%06x", d->id_prefix, s->started,
		 atomic_fetch_add(&s->next_id, 1));
	j->head = (struct strata_api_head){ .chat = chat, .id = j->id,
					    .created = (long long)time(NULL),
					    .model = strata_engine_model_name(s->e) };
	rc = strata_job_submit(s, j);
	if (rc) {
		strata_job_unref(j);
		if (rc == -EBUSY)
			snprintf(err.message, sizeof(err.message), "the server is busy: %u requests "
				 "wait already ([serve] queue); try again later", s->queue_max);
		return strata_reply_error_as(s, conn, d, 503, rc == -EBUSY ? err.message :
					     "the server is shutting down", NULL);
	}
	return j->req.stream ? reply_stream(s, conn, j, d) : reply_whole(s, conn, j, d);
}

static enum MHD_Result generate(struct strata_server *s, struct MHD_Connection *conn,
				const char *body, size_t len, double t_arrival, int chat)
{
	struct strata_gen_params defaults;
	struct strata_api_ctx ctx;
	struct strata_api_req req;
	struct strata_api_err err;
	int rc;

	strata_serve_api_ctx(s, &defaults, &ctx);
	rc = strata_api_parse(body, len, chat, &ctx, &req, &err);
	if (rc)
		return strata_reply_error(s, conn, rc == -EINVAL ? err.status : 500,
					  rc == -EINVAL ? err.message : "out of memory", err.param);
	return strata_serve_generate(s, conn, &req, t_arrival,
			       chat ? &strata_dialect_chat : &strata_dialect_completion);
}

enum MHD_Result strata_route_chat(struct strata_server *s, struct MHD_Connection *conn,
				  const char *body, size_t len, double t_arrival)
{
	return generate(s, conn, body, len, t_arrival, 1);
}

enum MHD_Result strata_route_completion(struct strata_server *s, struct MHD_Connection *conn,
					const char *body, size_t len, double t_arrival)
{
	return generate(s, conn, body, len, t_arrival, 0);
}

