/*
 * queue.c - jobs, the bounded wait queue, and the engine thread.
 *
 * The engine has one sequence, so one thread runs every generation, in
 * arrival order.  Connection threads submit jobs and wait on them; a job is
 * freed by whichever of the two lets go of it last.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include "serve/serve_int.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/log.h"

double strata_serve_now_ms(void)
{
	return (double)strata_now_ns() / 1e6;
}

struct strata_job *strata_job_new(struct strata_api_req *req, int32_t *tokens, uint32_t n_tokens)
{
	struct strata_job *j = calloc(1, sizeof(*j));
	pthread_condattr_t ca;

	if (!j) {
		strata_api_req_free(req);
		free(tokens);
		return NULL;
	}
	j->req = *req;
	memset(req, 0, sizeof(*req));
	j->tokens = tokens;
	j->n_tokens = n_tokens;
	j->refs = 1;
	j->out.stop = j->req.stop;
	j->out.n_stop = j->req.n_stop;
	atomic_init(&j->cancel, 0);
	pthread_mutex_init(&j->lock, NULL);
	/* Timed waits on the monotonic clock: a wall-clock step must not stall them. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cond, &ca);
	pthread_condattr_destroy(&ca);
	return j;
}

void strata_job_unref(struct strata_job *j)
{
	int last;

	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->lock);
	if (!last)
		return;
	strata_api_req_free(&j->req);
	strata_textout_free(&j->out);
	strata_mp_free(&j->mp);
	strata_steer_free(&j->steer);
	strata_buf_free(&j->text);
	free(j->tokens);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

/* Mark j finished and wake whoever waits on it. */
static void job_done(struct strata_job *j, const char *finish, int error)
{
	pthread_mutex_lock(&j->lock);
	j->finish = finish;
	j->error = error;
	j->done = 1;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

int strata_job_submit(struct strata_server *s, struct strata_job *j)
{
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	if (atomic_load(&s->stopping)) {
		rc = -ESHUTDOWN;
	} else if (s->n_waiting >= s->queue_max && (s->busy || s->n_waiting)) {
		rc = -EBUSY; /* an idle engine takes a job even with queue = 0 */
	} else {
		pthread_mutex_lock(&j->lock);
		j->refs++; /* the engine thread's */
		pthread_mutex_unlock(&j->lock);
		j->queued = 1;
		if (s->tail)
			s->tail->next = j;
		else
			s->head = j;
		s->tail = j;
		s->n_waiting++;
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Take j out of the queue; 1 when it was there.  Caller holds s->lock. */
static int unlink_job(struct strata_server *s, struct strata_job *j)
{
	struct strata_job **pp = &s->head, *prev = NULL;

	if (!j->queued)
		return 0;
	while (*pp && *pp != j) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return 0;
	*pp = j->next;
	if (s->tail == j)
		s->tail = prev;
	j->next = NULL;
	j->queued = 0;
	s->n_waiting--;
	return 1;
}

void strata_job_cancel(struct strata_server *s, struct strata_job *j)
{
	int was_queued;

	atomic_store(&j->cancel, 1);
	pthread_mutex_lock(&s->lock);
	was_queued = unlink_job(s, j);
	pthread_mutex_unlock(&s->lock);
	if (!was_queued)
		return;
	job_done(j, "cancelled", -ECANCELED);
	strata_metrics_generation(&s->metrics, 0, 0, 0, 0, 0, -1, 1);
	strata_job_unref(j); /* the engine thread's reference */
}

/* 1 when the peer closed its end (or the socket failed). */
static int client_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	if (fd < 0)
		return 0;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

int strata_job_wait(struct strata_server *s, struct strata_job *j, unsigned seen, int fd)
{
	for (;;) {
		struct timespec ts;
		int ready;

		pthread_mutex_lock(&j->lock);
		ready = j->done || (seen != UINT_MAX && j->version != seen);
		if (!ready) {
			/* Wake every 20 ms to look at the socket: no event says it closed. */
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 20 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&j->cond, &j->lock, &ts);
			ready = j->done || (seen != UINT_MAX && j->version != seen);
		}
		pthread_mutex_unlock(&j->lock);
		if (ready)
			return 1;
		if (atomic_load(&s->stopping))
			return 0;
		if (client_gone(fd)) {
			strata_job_cancel(s, j);
			return 0;
		}
	}
}

/* ---- the engine thread --------------------------------------------------------- */

static int job_cancelled(void *user)
{
	struct strata_job *j = user;

	return atomic_load(&j->cancel);
}

/* Released text to the message parser (caller holds j->lock). */
static void to_message(struct strata_job *j)
{
	if (j->text.len) {
		strata_mp_feed(&j->mp, j->text.p, j->text.len);
		j->version++;
	}
	j->text.len = 0;
}

static int on_token(void *user, int32_t id, const char *piece, size_t len)
{
	struct strata_job *j = user;

	if (atomic_load(&j->cancel))
		return 1;
	if (j->t_first == 0)
		j->t_first = strata_serve_now_ms();
	/* A control token that is a marker of the reply's format reaches the parser as text. */
	for (int i = 0; !len && i < j->n_markers; i++)
		if (j->markers[i].id == id) {
			piece = j->markers[i].text;
			len = strlen(piece);
		}
	pthread_mutex_lock(&j->lock);
	j->n_gen++;
	if (strata_steer_token(&j->steer, id, piece, len, strata_mp_in_think(&j->mp)))
		j->stopped = 1;
	j->stopped |= strata_textout_feed(&j->out, piece, len, &j->text);
	to_message(j);
	/* parallel_tool_calls false: one complete call ends the reply */
	if (strata_mp_calls_full(&j->mp))
		j->stopped = 1;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return j->stopped;
}

/* The engine's logits hook: the request's steering of this step. */
static int job_logits(void *user, float *logits, int32_t n_vocab)
{
	struct strata_job *j = user;

	/* mp is written by this thread only: its state is read without the lock */
	return strata_steer_logits(&j->steer, logits, n_vocab, strata_mp_in_think(&j->mp));
}

/* tool_choice required or a name: the reply must have made such a call. */
static const char *forced_call_missing(const struct strata_job *j)
{
	const struct strata_api_req *r = &j->req;

	if (r->tool_choice == STRATA_TOOL_REQUIRED && !j->mp.n_calls)
		return "the model answered without calling a tool, but tool_choice is \"required\"";
	if (r->tool_choice == STRATA_TOOL_NAMED) {
		if (!j->mp.n_calls)
			return "the model answered without calling the function tool_choice names";
		for (size_t i = 0; i < j->mp.n_calls; i++)
			if (strcmp(j->mp.calls[i].name, r->tool_name))
				return "the model called another function than the one tool_choice "
				       "names";
	}
	return NULL;
}

static void run_job(struct strata_server *s, struct strata_job *j)
{
	struct strata_gen_params p = j->req.gp;
	struct strata_stats st = { 0 };
	struct strata_expert_stats xst;
	struct strata_gpu_cache_stats gst;
	const char *finish = "stop";
	int rc, cancelled;

	p.n_predict = j->n_predict;
	p.cancel = job_cancelled;
	p.logits = job_logits;
	strata_log_clear_error();
	rc = strata_generate_ex(s->e, j->tokens, j->n_tokens, &p, on_token, j, &st);
	cancelled = atomic_load(&j->cancel) != 0;
	if (strata_engine_expert_stats(s->e, &xst) == 0)
		strata_metrics_experts(&s->metrics, &xst);
	if (strata_engine_gpu_cache_stats(s->e, &gst) == 0)
		strata_metrics_gpu_cache(&s->metrics, &gst);
	if (rc < 0 && !cancelled) {
		strata_metrics_failed(&s->metrics);
		pthread_mutex_lock(&j->lock);
		snprintf(j->why, sizeof(j->why), "%s", strata_last_error());
		pthread_mutex_unlock(&j->lock);
		strata_info("serve: %s: failed (%s); the next request is served as usual", j->id,
			    strerror(-rc));
	}
	if (rc >= 0 && !cancelled) {
		const char *missing;

		if (st.finish == STRATA_FINISH_LENGTH || st.finish == STRATA_FINISH_CTX)
			finish = "length";
		pthread_mutex_lock(&j->lock);
		if (!j->stopped) /* a partial stop string at the end is text after all */
			strata_textout_flush(&j->out, &j->text);
		to_message(j);
		strata_mp_finish(&j->mp);
		j->version++;
		/* a reply cut by max_tokens is "length" even with calls in it */
		if (j->mp.n_calls && strcmp(finish, "length"))
			finish = "tool_calls";
		if (strata_mp_oom(&j->mp) || j->steer.error == -ENOMEM) {
			rc = -ENOMEM;
		} else if (j->steer.error) {
			rc = j->steer.error;
			snprintf(j->why, sizeof(j->why), "the reply's constraint (response_format or a "
				 "forced tool call) left no token to take (%s)", strerror(-rc));
		} else if ((missing = forced_call_missing(j))) {
			rc = -EPROTO;
			snprintf(j->why, sizeof(j->why), "%s", missing);
		}
		if (j->mp.warning[0])
			strata_info("serve: %s: %s", j->id, j->mp.warning);
		pthread_mutex_unlock(&j->lock);
		/* Resumed tokens (a turn checkpoint) cost nothing: the rate is of those read. */
		strata_info("serve: %s: prompt %u tokens (%u resumed, %.1f tok/s), generated %u "
			    "tokens (%.1f tok/s), finish %s; drafts accepted %u of %u in %u windows",
			    j->id, st.n_prompt, st.n_reused,
			    st.prompt_ms > 0 ? (st.n_prompt - st.n_reused) * 1e3 / st.prompt_ms : 0.0,
			    st.n_gen, st.gen_ms > 0 ? st.n_gen * 1e3 / st.gen_ms : 0.0, finish,
			    st.n_accepted, st.n_drafted, st.n_windows);
		strata_metrics_spec(&s->metrics, st.n_windows, st.n_drafted, st.n_accepted);
	} else if (cancelled) {
		strata_info("serve: %s: stopped after %u tokens: the client went away or the "
			    "server stops", j->id, j->n_gen);
	}
	strata_metrics_generation(&s->metrics, rc >= 0 ? st.n_prompt : 0, j->n_gen,
				  rc >= 0 ? st.prompt_ms : 0, rc >= 0 ? st.gen_ms : 0,
				  rc >= 0 ? st.n_reused : 0,
				  j->t_first > 0 ? (j->t_first - j->t_arrival) / 1e3 : -1, cancelled);
	if (cancelled)
		job_done(j, "cancelled", -ECANCELED);
	else
		job_done(j, finish, rc < 0 ? rc : 0);
}

static void *worker_main(void *arg)
{
	struct strata_server *s = arg;

	for (;;) {
		struct strata_job *j;

		pthread_mutex_lock(&s->lock);
		while (!s->head && !atomic_load(&s->stopping))
			pthread_cond_wait(&s->cond, &s->lock);
		if (atomic_load(&s->stopping)) {
			pthread_mutex_unlock(&s->lock);
			break;
		}
		j = s->head;
		unlink_job(s, j);
		s->busy = 1;
		s->running = j;
		pthread_mutex_unlock(&s->lock);

		run_job(s, j);

		pthread_mutex_lock(&s->lock);
		s->busy = 0;
		s->running = NULL;
		pthread_mutex_unlock(&s->lock);
		strata_job_unref(j);
	}
	return NULL;
}

int strata_worker_start(struct strata_server *s)
{
	int rc = pthread_create(&s->worker, NULL, worker_main, s);

	if (rc) {
		strata_error("serve: cannot start the engine thread: %s", strerror(rc));
		return -rc;
	}
	s->worker_started = 1;
	return 0;
}

void strata_worker_stop(struct strata_server *s)
{
	struct strata_job *j;

	pthread_mutex_lock(&s->lock);
	atomic_store(&s->stopping, 1);
	if (s->running)
		atomic_store(&s->running->cancel, 1);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->worker_started)
		pthread_join(s->worker, NULL);
	s->worker_started = 0;
	/* Jobs still queued never ran: finish them for whoever still holds them. */
	pthread_mutex_lock(&s->lock);
	while ((j = s->head)) {
		unlink_job(s, j);
		pthread_mutex_unlock(&s->lock);
		job_done(j, "cancelled", -ECANCELED);
		strata_job_unref(j);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
}
