/*
 * dialect.h - one generation, answered in the shape of an API: OpenAI's
 * chat and completions, Anthropic's messages, OpenAI's responses.  A
 * dialect turns a finished job into its response body, and a running job
 * into its stream's events; routes.c does the rest (the queue, waiting,
 * the stream's plumbing).  Not public.
 */
#ifndef STRATA_SERVE_DIALECT_H
#define STRATA_SERVE_DIALECT_H

#include <microhttpd.h>
#include <stddef.h>

#include "serve/api.h"
#include "util/strbuf.h"

struct strata_server;
struct strata_job;
struct strata_stream;

struct strata_dialect {
	const char *id_prefix;   /* "chatcmpl-", "cmpl-", "msg_", "resp_" */
	/* The 200 body of a finished job (its lock held): malloc'd JSON, NULL on ENOMEM. */
	char *(*whole)(struct strata_server *s, const struct strata_job *j);
	/* Stream events: the first ones, what the message gained (lock held), the last. */
	void (*start)(struct strata_stream *st);
	void (*deltas)(struct strata_stream *st);
	void (*finish)(struct strata_stream *st, unsigned status, const char *error);
	/* An error body in the dialect's shape (malloc'd). */
	char *(*error)(unsigned status, const char *message, const char *param);
};

/* A streamed response: what was sent of the job's message, and the events to send. */
struct strata_stream {
	struct strata_server *s;
	struct strata_job *j;
	const struct strata_dialect *d;
	int fd;
	unsigned seen;           /* the job's version last looked at */
	size_t content, reasoning, calls; /* of the message, sent */
	size_t lp, lp_bytes;     /* logprobs entries sent, and the reply bytes they cover */
	struct strata_buf out;   /* events not yet handed to libmicrohttpd */
	int ended;               /* the last event is in out */
	/* A dialect's own: its open block (kind and index), event sequence, a mark. */
	int block_kind, block, seq;
	size_t mark;
};

extern const struct strata_dialect strata_dialect_chat, strata_dialect_completion;
extern const struct strata_dialect strata_dialect_anthropic, strata_dialect_responses;

/* "event: NAME\n" (name NULL: none) and "data: JSON\n\n"; json is taken over. */
void strata_stream_event(struct strata_stream *st, const char *name, char *json);
/* A cJSON tree as a malloc'd text (the tree deleted); NULL when ok is 0 or out of memory. */
char *strata_json_text(struct cJSON *root, int ok);

/* Send body (malloc'd, taken over; NULL: out of memory, a 500) with status. */
enum MHD_Result strata_reply(struct strata_server *s, struct MHD_Connection *conn,
			     unsigned status, const char *type, char *body, const char *allow);
/* An error in the dialect's shape (d NULL: OpenAI's), counted in /metrics. */
enum MHD_Result strata_reply_error_as(struct strata_server *s, struct MHD_Connection *conn,
				      const struct strata_dialect *d, unsigned status,
				      const char *message, const char *param);

/*
 * Generate for a parsed request (taken over: freed here) and answer in
 * dialect d, whole or streamed as req->stream says.
 */
enum MHD_Result strata_serve_generate(struct strata_server *s, struct MHD_Connection *conn,
				struct strata_api_req *req, double t_arrival,
				const struct strata_dialect *d);

/* What request parsing needs of the server (defaults is filled, ctx points at it). */
void strata_serve_api_ctx(struct strata_server *s, struct strata_gen_params *defaults,
			  struct strata_api_ctx *ctx);
/* The generated message of j as the builders take it (lock held). */
struct strata_api_msg strata_job_msg(struct strata_server *s, const struct strata_job *j);
/* A finished job's failure: status and message. */
void strata_job_failure(const struct strata_job *j, unsigned *status, char *msg, size_t n);

#endif
