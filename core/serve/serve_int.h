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

#include "serve/api.h"
#include "util/strbuf.h"
#include "serve/chat.h"
#include "serve/metrics.h"
#include "serve/serve.h"
#include "serve/textout.h"

struct MHD_Daemon;

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

	pthread_mutex_t lock;          /* guards everything below */
	pthread_cond_t cond;           /* text grew, or done */
	int refs;
	struct strata_buf text;        /* text released to the client so far */
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
	size_t max_body;
	uint32_t queue_max;
	enum strata_chat_fmt fmt;
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
 * Wait until j's text is longer than `seen` bytes or j is done.  Polls the
 * client's socket fd meanwhile: returns 1 when there is something to send,
 * 0 when the client disconnected (j is then cancelled) or the server stops.
 */
int strata_job_wait(struct strata_server *s, struct strata_job *j, size_t seen, int fd);

/* Start and stop the engine thread. */
int strata_worker_start(struct strata_server *s);
void strata_worker_stop(struct strata_server *s);

#endif
