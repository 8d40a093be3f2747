/*
 * serve_int.h - what the server's files share: the server, and jobs (one
 * request's generation) with their queue.  Not public.
 */
#ifndef STRATA_SERVE_INT_H
#define STRATA_SERVE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "serve/access.h"
#include "serve/api.h"
#include "util/strbuf.h"
#include "serve/chat.h"
#include "serve/metrics.h"
#include "serve/msgparse.h"
#include "serve/steer.h"
#include "serve/serve.h"
#include "serve/textout.h"

struct MHD_Daemon;
struct MHD_Connection;
enum MHD_Result;

/* A control token whose text the message parser must see ("<|python_tag|>"). */
struct strata_marker {
	int32_t id;
	const char *text;
};

#define STRATA_MAX_MARKERS 8

/* One request's generation, shared by its connection thread and the engine thread. */
struct strata_job {
	struct strata_job *next;       /* in the queue, under the server's lock */
	int queued;                    /* in the queue (server's lock) */

	/* Set before submission, then read-only. */
	struct strata_api_req req;
	int32_t *tokens;
	uint32_t n_tokens;
	int32_t n_predict;             /* max_tokens, or what is left of the context */
	struct strata_api_head head;
	char id[48];
	double t_arrival;              /* ms, CLOCK_MONOTONIC: when the request came */

	atomic_int cancel;             /* the client went away: stop at the next check */

	const struct strata_marker *markers; /* the server's, read-only */
	int n_markers;

	pthread_mutex_t lock;          /* guards everything below */
	pthread_cond_t cond;           /* the message grew, or done */
	int refs;
	struct strata_msgparse mp;     /* the message released to the client so far */
	struct strata_steer steer;     /* penalties, thinking budget, logprobs (lp under lock) */
	unsigned version;              /* bumped whenever mp grows */
	struct strata_buf text;        /* engine thread only: scratch for released text */
	uint32_t n_gen;                /* tokens generated */
	int done;
	int error;                     /* negative errno when the engine failed */
	char why[512];                 /* and its message (strata_last_error), "" when none */
	const char *finish;            /* "stop" or "length" once done */
	struct strata_textout out;     /* engine thread only */
	double t_first;                /* engine thread only: ms of the first token, 0 = none */
	int stopped;                   /* engine thread only: a stop string matched */
};

struct strata_server {
	struct strata_engine *e;
	struct MHD_Daemon *mhd;
	uint16_t port;
	char *api_key;                 /* NULL: no auth */
	struct strata_access access;   /* Host, Origin and CORS */
	char *web_dir;                 /* the web app's files, or NULL */
	size_t max_body;
	uint32_t queue_max;
	struct strata_chat *chat;      /* the chat template */
	enum strata_toolfmt toolfmt;   /* how its model writes tool calls */
	int tool_sub;                  /* and their inner format (grammar.h) */
	struct strata_vtrie *vtrie;    /* the vocabulary for token masks, built on first use */
	pthread_mutex_t vtrie_lock;
	struct strata_marker markers[STRATA_MAX_MARKERS];
	int n_markers;
	long long started;             /* Unix seconds */
	atomic_uint next_id;

	pthread_t worker;
	int worker_started;
	pthread_mutex_t lock;          /* the queue and the flags below */
	pthread_cond_t cond;           /* a job arrived, or stopping */
	struct strata_job *head, *tail;
	uint32_t n_waiting;
	int busy;
	struct strata_job *running;    /* the job the engine thread runs, or NULL */
	atomic_int stopping;

	struct strata_metrics metrics;
};

double strata_serve_now_ms(void);

/* static.c: the web app.  The folder of [serve] web_dir, else web/ beside the executable,
 * else the installed one (../share/strata/web from it). */
char *strata_static_dir(const char *setting);
/* Warn once, at start, when that folder holds no web app. */
void strata_static_check(const struct strata_server *s);
/* Is url one of the web app's (/, /monitor, /static/...)? */
int strata_static_route(const char *url);
enum MHD_Result strata_static_reply(struct strata_server *s, struct MHD_Connection *conn,
				    const char *url, const char *method);

/* The headers every response gets: CORS for an allowed Origin, Retry-After on 503. */
struct MHD_Connection;
struct MHD_Response;
void strata_serve_headers(struct strata_server *s, struct MHD_Connection *conn,
			  struct MHD_Response *r, unsigned status);

/*
 * A job for req (taken over: req is zeroed) and its prompt tokens (taken
 * over), with one reference for the caller.  NULL when out of memory (req
 * and tokens are then freed).
 */
struct strata_job *strata_job_new(struct strata_api_req *req, int32_t *tokens, uint32_t n_tokens);
/* Drop a reference; the last one frees the job. */
void strata_job_unref(struct strata_job *j);

/*
 * Queue j for the engine thread (which takes its own reference).  Returns 0,
 * or -EBUSY when [serve] queue requests already wait, or -ESHUTDOWN while
 * the server stops.
 */
int strata_job_submit(struct strata_server *s, struct strata_job *j);

/*
 * The client of j went away: stop its generation at the next check, or take
 * it out of the queue (then it is done at once).
 */
void strata_job_cancel(struct strata_server *s, struct strata_job *j);

/*
 * Wait until j's version differs from `seen` or j is done (seen UINT_MAX:
 * until done).  Polls the client's
 * socket fd meanwhile: returns 1 when there is something to send, 0 when
 * the client disconnected (j is then cancelled) or the server stops.
 */
int strata_job_wait(struct strata_server *s, struct strata_job *j, unsigned seen, int fd);

/* Start and stop the engine thread. */
int strata_worker_start(struct strata_server *s);
void strata_worker_stop(struct strata_server *s);

#endif
