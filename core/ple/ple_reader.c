/*
 * ple_reader.c - the reader's threads and its request queue.
 *
 * A dispatcher thread takes started chunks in order, plans each one
 * (ple_plan.c), then either hands its page jobs to the reader threads
 * (batched: each reader keeps `depth` reads in flight on its own handle,
 * while the dispatcher decodes the cache hits) or reads them itself on its
 * own handle (one ticket: short chunks, decode, and readers = 0).  The
 * caller only ever blocks in strata_ple_wait().
 */
#define _GNU_SOURCE
#include "ple/ple_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "util/log.h"

void strata_ple_opts_default(struct strata_ple_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->readers = 8;
	o->depth = 32;
	o->row_cache = 262144;
	o->batch_rows = 256 * STRATA_PLE_HEADS;
	o->io = STRATA_PLE_IO_DIRECT;
	o->plugin = "auto";
	o->timeout_ms = PLE_TIMEOUT_MS;
}

void strata_ple_opts_from_config(const struct strata_config *c, struct strata_ple_opts *o)
{
	strata_ple_opts_default(o);
	o->readers = c->ple_readers;
	o->depth = c->ple_depth;
	o->row_cache = c->ple_row_cache;
	o->io = c->ple_io ? STRATA_PLE_IO_MMAP : STRATA_PLE_IO_DIRECT;
	o->plugin = c->ple_plugin ? c->ple_plugin : "auto";
	o->stats = c->ple_stats;
	o->trace = c->ple_trace;
}

static double ms_between(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1e6 : 0.0;
}

/* Read the planned jobs of r->cur; returns when every job is done or the chunk failed. */
static void read_jobs(struct strata_ple_reader *r, struct strata_ple_chunk *c, int batched)
{
	if (!batched) {
		if (r->map)
			strata_ple_worker_run_mmap(&r->main);
		else
			strata_ple_worker_run(&r->main);
		strata_ple_plan_decode_hits(r, c);
		return;
	}
	pthread_mutex_lock(&r->mu);
	r->busy = r->o.readers;
	r->work_gen++;
	pthread_cond_broadcast(&r->cv_work);
	pthread_mutex_unlock(&r->mu);
	/* The hits decode here while the readers wait for the disk. */
	strata_ple_plan_decode_hits(r, c);
	pthread_mutex_lock(&r->mu);
	while (r->busy)
		pthread_cond_wait(&r->cv_idle, &r->mu);
	pthread_mutex_unlock(&r->mu);
}

static void collect_stats(struct strata_ple_reader *r, struct strata_ple_chunk *c, int batched)
{
	struct ple_hist lat = { { 0 }, 0 };
	struct strata_ple_stats *st = &c->st;
	uint64_t t_sub = atomic_load(&r->t_first_sub);

	memset(st, 0, sizeof(*st));
	strata_ple_hist_merge(&lat, &r->main.lat);
	st->reads = r->main.reads;
	st->retries = r->main.retries;
	for (uint32_t i = 0; i < r->o.readers; i++) {
		strata_ple_hist_merge(&lat, &r->workers[i].lat);
		st->reads += r->workers[i].reads;
		st->retries += r->workers[i].retries;
	}
	st->rows = c->n;
	st->hits = r->plan.hits;
	st->zeros = r->plan.zeros;
	st->unique_misses = r->plan.n_miss;
	st->batched = batched;
	c->lat = lat;
	st->read_p50_us = strata_ple_hist_quantile(&lat, 0.50);
	st->read_p99_us = strata_ple_hist_quantile(&lat, 0.99);
	c->t_sub = t_sub ? t_sub : c->t_sub;
	st->submit_ms = ms_between(c->t_start, c->t_sub);
	st->read_ms = ms_between(c->t_start, c->t_done);
}

static void reset_counters(struct ple_worker *w)
{
	memset(&w->lat, 0, sizeof(w->lat));
	w->reads = 0;
	w->retries = 0;
}

/* Everything the dispatcher does for one chunk. */
static void process(struct strata_ple_reader *r, struct strata_ple_chunk *c)
{
	int batched = 0, rc;

	reset_counters(&r->main);
	for (uint32_t i = 0; i < r->o.readers; i++)
		reset_counters(&r->workers[i]);
	atomic_store(&r->failed, 0);
	atomic_store(&r->next_job, 0);
	atomic_store(&r->t_first_sub, 0);
	r->err = 0;
	r->cur = c;
	rc = strata_ple_plan_chunk(r, c);
	c->t_sub = strata_now_ns(); /* until a read is queued: planning is the submit cost */
	if (!rc) {
		batched = r->o.readers > 0 && c->n >= r->o.batch_rows;
		if (r->plan.n_jobs)
			read_jobs(r, c, batched);
		else
			strata_ple_plan_decode_hits(r, c);
		if (atomic_load(&r->failed)) {
			strata_ple_plan_zero_unfinished(r, c);
			rc = r->err;
		}
	} else {
		/* Nothing was read: every row reads as zeros rather than stale floats. */
		memset(c->out, 0, c->n * r->row_len * sizeof(float));
	}
	c->t_done = strata_now_ns();
	collect_stats(r, c, batched);
	c->result = rc;
	r->cur = NULL;
}

static void *dispatcher(void *arg)
{
	struct strata_ple_reader *r = arg;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		struct strata_ple_chunk *c;

		while (!r->stop && !r->q_head)
			pthread_cond_wait(&r->cv_queue, &r->mu);
		c = r->q_head;
		if (!c)
			break;
		r->q_head = c->next;
		if (!r->q_head)
			r->q_tail = NULL;
		if (r->stop) {
			c->result = -ECANCELED;
		} else {
			c->state = CHUNK_RUNNING;
			pthread_mutex_unlock(&r->mu);
			process(r, c);
			pthread_mutex_lock(&r->mu);
		}
		c->state = CHUNK_DONE;
		pthread_cond_broadcast(&r->cv_done);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static void *reader_thread(void *arg)
{
	struct ple_worker *w = arg;
	struct strata_ple_reader *r = w->r;
	uint64_t seen = 0;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->stop && r->work_gen == seen)
			pthread_cond_wait(&r->cv_work, &r->mu);
		if (r->work_gen == seen)
			break; /* stop, and no work left */
		seen = r->work_gen;
		pthread_mutex_unlock(&r->mu);
		if (r->map)
			strata_ple_worker_run_mmap(w);
		else
			strata_ple_worker_run(w);
		pthread_mutex_lock(&r->mu);
		if (--r->busy == 0)
			pthread_cond_signal(&r->cv_idle);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static int start_threads(struct strata_ple_reader *r)
{
	char name[16];
	int rc;

	for (uint32_t i = 0; i < r->o.readers; i++) {
		rc = pthread_create(&r->workers[i].th, NULL, reader_thread, &r->workers[i]);
		if (rc)
			return -rc;
		r->workers[i].started = 1;
		snprintf(name, sizeof(name), "ple-read%u", i % 1000u);
		pthread_setname_np(r->workers[i].th, name);
	}
	rc = pthread_create(&r->main_th, NULL, dispatcher, r);
	if (rc)
		return -rc;
	r->main_started = 1;
	pthread_setname_np(r->main_th, "ple-main");
	return 0;
}

static void stop_threads(struct strata_ple_reader *r)
{
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_broadcast(&r->cv_queue);
	pthread_cond_broadcast(&r->cv_work);
	pthread_mutex_unlock(&r->mu);
	if (r->main_started)
		pthread_join(r->main_th, NULL);
	for (uint32_t i = 0; r->workers && i < r->o.readers; i++)
		if (r->workers[i].started)
			pthread_join(r->workers[i].th, NULL);
	r->main_started = 0;
}

int strata_ple_reader_open(struct strata_registry *reg, const struct strata_ple_table *t,
			   const struct strata_ple_opts *o, struct strata_ple_reader **out)
{
	struct strata_ple_reader *r = calloc(1, sizeof(*r));
	int rc;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->o = *o;
	if (!r->o.depth)
		r->o.depth = 1;
	if (!r->o.batch_rows)
		r->o.batch_rows = 256 * STRATA_PLE_HEADS;
	if (!r->o.timeout_ms)
		r->o.timeout_ms = PLE_TIMEOUT_MS;
	r->t0 = strata_now_ns();
	pthread_mutex_init(&r->mu, NULL);
	pthread_mutex_init(&r->err_mu, NULL);
	pthread_cond_init(&r->cv_queue, NULL);
	pthread_cond_init(&r->cv_work, NULL);
	pthread_cond_init(&r->cv_idle, NULL);
	pthread_cond_init(&r->cv_done, NULL);
	rc = strata_ple_reader_setup(r, reg, t);
	if (!rc && (rc = start_threads(r)))
		strata_error("%s: cannot start the PLE reader threads: %s", t->path,
			     strerror(-rc));
	if (rc) {
		strata_ple_reader_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

void strata_ple_reader_close(struct strata_ple_reader *r)
{
	if (!r)
		return;
	stop_threads(r);
	strata_ple_reader_teardown(r);
	strata_ple_plan_free(&r->plan);
	pthread_mutex_destroy(&r->mu);
	pthread_mutex_destroy(&r->err_mu);
	pthread_cond_destroy(&r->cv_queue);
	pthread_cond_destroy(&r->cv_work);
	pthread_cond_destroy(&r->cv_idle);
	pthread_cond_destroy(&r->cv_done);
	free(r);
}

const char *strata_ple_reader_describe(const struct strata_ple_reader *r)
{
	return r->desc;
}

const char *strata_ple_reader_io_name(const struct strata_ple_reader *r)
{
	return r->io_name;
}

uint32_t strata_ple_reader_row_len(const struct strata_ple_reader *r)
{
	return r->row_len;
}

uint32_t strata_ple_reader_row_bytes(const struct strata_ple_reader *r)
{
	return r->rb;
}

/* ---- chunks --------------------------------------------------------------------- */

int strata_ple_chunk_create(struct strata_ple_reader *r, struct strata_ple_chunk **out)
{
	struct strata_ple_chunk *c = calloc(1, sizeof(*c));

	*out = c;
	if (!c)
		return -ENOMEM;
	c->r = r;
	c->state = CHUNK_IDLE;
	return 0;
}

void strata_ple_chunk_free(struct strata_ple_chunk *c)
{
	if (!c)
		return;
	free(c->own_rows);
	free(c);
}

int strata_ple_start(struct strata_ple_chunk *c, const uint64_t *rows, size_t n_rows,
		     float *out)
{
	struct strata_ple_reader *r = c->r;

	if (n_rows >= PLE_HIT_BIT) {
		strata_error("a PLE chunk of %zu rows is too large (at most %u)", n_rows,
			     PLE_HIT_BIT - 1);
		return -E2BIG;
	}
	pthread_mutex_lock(&r->mu);
	if (c->state != CHUNK_IDLE) {
		pthread_mutex_unlock(&r->mu);
		return -EBUSY;
	}
	c->rows = rows;
	c->n = n_rows;
	c->out = out;
	c->result = 0;
	c->seq = ++r->seq;
	c->t_start = strata_now_ns();
	c->t_sub = c->t_done = c->t_ask = 0;
	c->next = NULL;
	if (r->q_tail)
		r->q_tail->next = c;
	else
		r->q_head = c;
	r->q_tail = c;
	c->state = CHUNK_QUEUED;
	pthread_cond_signal(&r->cv_queue);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

int strata_ple_start_tokens(struct strata_ple_chunk *c, const struct strata_ple_hash *h,
			    struct strata_ple_hist *st, const int32_t *tokens, size_t n,
			    float *out)
{
	size_t need = n * STRATA_PLE_HEADS;
	int idle;

	pthread_mutex_lock(&c->r->mu);
	idle = c->state == CHUNK_IDLE;
	pthread_mutex_unlock(&c->r->mu);
	if (!idle)
		return -EBUSY; /* before touching st: the history must not move */
	if (need > c->own_cap) {
		uint64_t *p = realloc(c->own_rows, need * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->own_rows = p;
		c->own_cap = need;
	}
	strata_ple_row_ids(h, st, tokens, n, c->own_rows);
	return strata_ple_start(c, c->own_rows, need, out);
}

static void log_chunk(const struct strata_ple_reader *r, const struct strata_ple_chunk *c)
{
	char line[256];

	if (r->o.stats) {
		strata_ple_stats_line(&c->st, line, sizeof(line));
		strata_info("%s", line);
	}
	if (r->o.trace)
		strata_info("ple trace: chunk %u (%zu rows, %s): read started at %.1f ms, "
			    "first read queued +%.2f ms, rows ready +%.2f ms; the consumer asked "
			    "+%.2f ms and waited %.2f ms", c->seq, c->n,
			    c->st.batched ? "batched" : "one ticket", ms_between(r->t0, c->t_start),
			    c->st.submit_ms, c->st.read_ms, c->st.ask_ms, c->st.blocked_ms);
}

int strata_ple_wait(struct strata_ple_chunk *c)
{
	struct strata_ple_reader *r = c->r;
	uint64_t t_ret;
	int rc;

	pthread_mutex_lock(&r->mu);
	if (c->state == CHUNK_IDLE) {
		pthread_mutex_unlock(&r->mu);
		return -EINVAL;
	}
	c->t_ask = strata_now_ns();
	while (c->state != CHUNK_DONE)
		pthread_cond_wait(&r->cv_done, &r->mu);
	c->state = CHUNK_IDLE;
	rc = c->result;
	pthread_mutex_unlock(&r->mu);
	t_ret = strata_now_ns();
	c->st.ask_ms = ms_between(c->t_start, c->t_ask);
	c->st.blocked_ms = ms_between(c->t_ask, t_ret);
	log_chunk(r, c);
	return rc;
}

void strata_ple_chunk_stats(const struct strata_ple_chunk *c, struct strata_ple_stats *s)
{
	*s = c->st;
}
