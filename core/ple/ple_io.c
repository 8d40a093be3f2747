/*
 * ple_io.c - one reader's loop: take page jobs, keep `depth` reads in flight
 * on its own io handle, copy each landed page into the rows that use it, and
 * decode a group of rows when its last page lands.
 *
 * Jobs are taken one at a time from a shared counter, so the readers work
 * through the chunk in first-use order and the early groups finish first.
 * A failed or short read is repeated once; a second failure fails the chunk
 * with the file and offset, the reader stops taking jobs and drains what is
 * in flight.  A disk that stops answering altogether fails the chunk after
 * the timeout instead of hanging it.
 */
#define _GNU_SOURCE
#include "ple/ple_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* Record the chunk's first error (logged once, here); later ones are dropped. */
__attribute__((format(printf, 3, 4)))
static void ple_fail(struct strata_ple_reader *r, int err, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&r->err_mu);
	if (!r->err) {
		r->err = err;
		va_start(ap, fmt);
		strata_logv(STRATA_LOG_LVL_ERROR, fmt, ap);
		va_end(ap);
	}
	atomic_store(&r->failed, 1);
	pthread_mutex_unlock(&r->err_mu);
}

int strata_ple_worker_init(struct strata_ple_reader *r, struct ple_worker *w, uint32_t depth)
{
	w->r = r;
	w->depth = depth;
	w->slots = calloc(depth, sizeof(*w->slots));
	w->reqs = calloc(depth, sizeof(*w->reqs));
	w->freel = calloc(depth, sizeof(*w->freel));
	w->backlog = calloc(depth, sizeof(*w->backlog));
	if (!w->slots || !w->reqs || !w->freel || !w->backlog)
		return -ENOMEM;
	if (r->map)
		return 0;
	if (posix_memalign((void **)&w->bufs, STRATA_PLE_PAGE, (size_t)depth * STRATA_PLE_PAGE))
		return -ENOMEM;
	for (uint32_t i = 0; i < depth; i++)
		w->slots[i].req.buf = w->bufs + (size_t)i * STRATA_PLE_PAGE;
	return 0;
}

void strata_ple_worker_free(struct strata_ple_reader *r, struct ple_worker *w)
{
	if (w->handle)
		r->ops->close(w->handle);
	free(w->bufs);
	free(w->slots);
	free(w->reqs);
	free(w->freel);
	free(w->backlog);
	memset(w, 0, sizeof(*w));
}

/* Copy page job j's bytes (src = the page) into its rows; decode finished groups. */
static void copy_uses(struct strata_ple_reader *r, uint32_t j, const uint8_t *src)
{
	struct ple_plan *p = &r->plan;

	for (uint32_t k = p->job_head[j]; k != PLE_NONE; k = p->use[k].next) {
		const struct ple_use *us = &p->use[k];
		uint32_t g = us->u / PLE_GROUP;

		memcpy(p->miss_bytes + (size_t)us->u * r->rb + us->row_off, src + us->page_off,
		       us->len);
		/* acq_rel: the last copier sees every other reader's bytes of the group. */
		if (atomic_fetch_sub_explicit(&p->grp_left[g], 1, memory_order_acq_rel) == 1)
			strata_ple_plan_decode_group(r, r->cur, g);
	}
}

static void note_first_submit(struct strata_ple_reader *r)
{
	uint64_t zero = 0;

	if (atomic_load_explicit(&r->t_first_sub, memory_order_relaxed) == 0)
		atomic_compare_exchange_strong(&r->t_first_sub, &zero, strata_now_ns());
}

/* A reaped read: good -> copy it out; bad -> once more, then fail the chunk. */
static void complete(struct ple_worker *w, struct ple_io_slot *s, uint32_t *n_free,
		     uint32_t *n_bl)
{
	struct strata_ple_reader *r = w->r;
	int32_t res = s->req.result;
	uint32_t need = r->plan.job_need[s->job];

	if (res < 0 || (uint32_t)res < need) {
		if (s->tries == 0 && !atomic_load(&r->failed)) {
			s->tries = 1;
			s->req.result = 0;
			w->retries++;
			w->backlog[(*n_bl)++] = s;
			return;
		}
		if (res < 0)
			ple_fail(r, -EIO, "%s: reading %u bytes at offset %llu failed twice: %s",
				 r->path, s->req.len, (unsigned long long)s->req.offset,
				 strerror(-res));
		else
			ple_fail(r, -EIO, "%s: short read at offset %llu, twice: %d of the %u "
				 "bytes the rows need (did the file shrink?)", r->path,
				 (unsigned long long)s->req.offset, res, need);
		w->freel[(*n_free)++] = s;
		return;
	}
	strata_ple_hist_add(&w->lat, strata_now_ns() - s->t_sub);
	w->reads++;
	copy_uses(r, s->job, s->req.buf);
	w->freel[(*n_free)++] = s;
}

/* Queue the backlog; returns -1 when the chunk failed here. */
static int submit_backlog(struct ple_worker *w, uint32_t *n_bl, uint32_t *inflight)
{
	struct strata_ple_reader *r = w->r;
	uint64_t t = strata_now_ns();
	int k;

	for (uint32_t i = 0; i < *n_bl; i++) {
		w->reqs[i] = &w->backlog[i]->req;
		w->backlog[i]->t_sub = t;
	}
	k = r->ops->submit(w->handle, w->reqs, *n_bl);
	if (k < 0 || (k == 0 && *inflight == 0)) {
		ple_fail(r, k < 0 ? k : -EIO, "%s: the io plugin refused to queue reads at "
			 "offset %llu: %s", r->path,
			 (unsigned long long)w->backlog[0]->req.offset,
			 k < 0 ? strerror(-k) : "nothing accepted with nothing in flight");
		return -1;
	}
	if ((uint32_t)k > *n_bl)
		k = (int)*n_bl;
	note_first_submit(r);
	for (int i = 0; i < k; i++)
		w->backlog[i]->flying = 1;
	memmove(w->backlog, w->backlog + k, (*n_bl - (uint32_t)k) * sizeof(*w->backlog));
	*n_bl -= (uint32_t)k;
	*inflight += (uint32_t)k;
	return 0;
}

/* The oldest read in flight, for the timeout message. */
static uint64_t oldest_offset(const struct ple_worker *w)
{
	uint64_t best_t = UINT64_MAX, off = 0;

	for (uint32_t i = 0; i < w->depth; i++)
		if (w->slots[i].flying && w->slots[i].t_sub < best_t) {
			best_t = w->slots[i].t_sub;
			off = w->slots[i].req.offset;
		}
	return off;
}

void strata_ple_worker_run(struct ple_worker *w)
{
	struct strata_ple_reader *r = w->r;
	struct ple_plan *p = &r->plan;
	uint32_t n_free = w->depth, n_bl = 0, inflight = 0, tmo = r->o.timeout_ms;
	uint64_t last = strata_now_ns();
	int exhausted = 0;

	for (uint32_t i = 0; i < w->depth; i++) {
		w->freel[i] = &w->slots[i];
		w->slots[i].flying = 0;
	}
	for (;;) {
		int failed = atomic_load_explicit(&r->failed, memory_order_relaxed);
		int n;

		while (!exhausted && !failed && n_free > 0) {
			uint32_t j = atomic_fetch_add_explicit(&r->next_job, 1, memory_order_relaxed);
			struct ple_io_slot *s;

			if (j >= p->n_jobs) {
				exhausted = 1;
				break;
			}
			s = w->freel[--n_free];
			s->job = j;
			s->tries = 0;
			s->req.offset = (uint64_t)p->job_page[j] * STRATA_PLE_PAGE;
			s->req.len = STRATA_PLE_PAGE;
			s->req.result = 0;
			w->backlog[n_bl++] = s;
		}
		if (failed)
			while (n_bl)
				w->freel[n_free++] = w->backlog[--n_bl];
		if (n_bl && submit_backlog(w, &n_bl, &inflight)) {
			while (n_bl)
				w->freel[n_free++] = w->backlog[--n_bl];
			continue; /* drain what is in flight */
		}
		if (inflight == 0) {
			if (n_bl == 0 && (exhausted || failed))
				break;
			continue;
		}
		n = r->ops->reap(w->handle, w->reqs, 1, w->depth, 100);
		if (n < 0) {
			ple_fail(r, n, "%s: the io plugin failed while reading: %s", r->path,
				 strerror(-n));
			r->broken = 1;
			break;
		}
		if (n == 0) {
			if (strata_now_ns() - last > (uint64_t)tmo * 1000000ull) {
				ple_fail(r, -ETIMEDOUT, "%s: no read finished in %u ms (the oldest "
					 "is at offset %llu): the disk stopped answering", r->path,
					 tmo, (unsigned long long)oldest_offset(w));
				r->broken = 1;
				break;
			}
			continue;
		}
		last = strata_now_ns();
		for (int i = 0; i < n; i++) {
			/* req is the slot's first member. */
			struct ple_io_slot *s = (struct ple_io_slot *)(void *)w->reqs[i];

			inflight--;
			s->flying = 0;
			complete(w, s, &n_free, &n_bl);
		}
	}
}

void strata_ple_worker_run_mmap(struct ple_worker *w)
{
	struct strata_ple_reader *r = w->r;
	struct ple_plan *p = &r->plan;

	note_first_submit(r);
	for (;;) {
		uint32_t j = atomic_fetch_add_explicit(&r->next_job, 1, memory_order_relaxed);
		uint64_t t = strata_now_ns();

		if (j >= p->n_jobs)
			break;
		copy_uses(r, j, r->map + (uint64_t)p->job_page[j] * STRATA_PLE_PAGE);
		strata_ple_hist_add(&w->lat, strata_now_ns() - t);
		w->reads++;
	}
}
