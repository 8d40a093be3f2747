/*
 * ple_io.c - one reader's work: take page jobs, read them through its own
 * read path (io/aread.h: `depth` reads in flight on its own io handle, the
 * retries, the timeout and the messages are the read path's), copy each
 * landed page into the rows that use it, and decode a group of rows when its
 * last page lands.
 *
 * Jobs are taken one at a time from a shared counter, so the readers work
 * through the chunk in first-use order and the early groups finish first.
 * The first reader whose read fails for good (or whose disk stops
 * answering) fails the chunk with the read path's message; the others see
 * it, stop taking jobs and drain what they have in flight.
 */
#define _GNU_SOURCE
#include "ple/ple_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/mem.h"

/*
 * Record the chunk's first error (logged once, here: several readers may
 * fail the same chunk); later ones are dropped.
 */
static void __attribute__((format(printf, 3, 4)))
ple_fail(struct strata_ple_reader *r, int err, const char *fmt, ...)
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
	w->freel = calloc(depth, sizeof(*w->freel));
	if (!w->slots || !w->freel)
		return -ENOMEM;
	if (r->map)
		return 0;
	w->bufs = strata_aligned_alloc(STRATA_PLE_PAGE, (size_t)depth * STRATA_PLE_PAGE);
	if (!w->bufs)
		return -ENOMEM;
	for (uint32_t i = 0; i < depth; i++)
		w->slots[i].req.io.buf = w->bufs + (size_t)i * STRATA_PLE_PAGE;
	return 0;
}

void strata_ple_worker_free(struct strata_ple_reader *r, struct ple_worker *w)
{
	(void)r;
	strata_aread_close(w->ar);
	strata_aligned_free(w->bufs);
	free(w->slots);
	free(w->freel);
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

/* ---- the read path's callbacks ---------------------------------------------------- */

/*
 * The next page jobs of the chunk, into free slots.  There are always n free
 * ones: the read path asks for depth minus the reads it holds, and every
 * slot it does not hold is on the free list; so 0 means no job is left.
 */
static uint32_t next_pages(void *user, struct strata_aread_req **reqs, uint32_t n)
{
	struct ple_worker *w = user;
	struct strata_ple_reader *r = w->r;
	struct ple_plan *p = &r->plan;
	uint32_t k = 0;

	while (k < n && w->n_free && !w->exhausted) {
		uint32_t j = atomic_fetch_add_explicit(&r->next_job, 1, memory_order_relaxed);
		struct ple_io_slot *s;

		if (j >= p->n_jobs) {
			w->exhausted = 1;
			break;
		}
		s = w->freel[--w->n_free];
		s->job = j;
		s->req.io.offset = (uint64_t)p->job_page[j] * STRATA_PLE_PAGE;
		s->req.io.len = STRATA_PLE_PAGE;
		s->req.need = p->job_need[j];
		reqs[k++] = &s->req;
	}
	if (k)
		note_first_submit(r);
	return k;
}

static void page_landed(void *user, struct strata_aread_req *req)
{
	struct ple_worker *w = user;
	struct ple_io_slot *s = (struct ple_io_slot *)(void *)req; /* req is first */

	strata_ple_hist_add(&w->lat, strata_now_ns() - req->t_sub);
	w->reads++;
	copy_uses(w->r, s->job, req->io.buf);
	w->freel[w->n_free++] = s;
}

/* "PLE rows 744-781": the rows whose bytes lie in the page. */
static void describe_page(void *user, const struct strata_aread_req *req, char *buf, size_t n)
{
	const struct strata_ple_reader *r = ((const struct ple_worker *)user)->r;
	uint64_t a = req->io.offset, b = a + STRATA_PLE_PAGE; /* [a, b) */
	uint64_t lo = a > r->base ? (a - r->base) / r->rb : 0;
	uint64_t hi = b > r->base ? (b - 1 - r->base) / r->rb : 0;

	if (hi >= r->n_rows)
		hi = r->n_rows - 1;
	snprintf(buf, n, "PLE rows %llu-%llu", (unsigned long long)lo, (unsigned long long)hi);
}

static int chunk_failed(void *user)
{
	return atomic_load_explicit(&((struct ple_worker *)user)->r->failed, memory_order_relaxed);
}

void strata_ple_worker_run(struct ple_worker *w)
{
	struct strata_aread_job job = {
		.user = w, .next = next_pages, .landed = page_landed, .describe = describe_page,
		.cancelled = chunk_failed,
	};
	int rc;

	w->n_free = 0;
	w->exhausted = 0;
	for (uint32_t i = 0; i < w->depth; i++)
		w->freel[w->n_free++] = &w->slots[i];
	rc = strata_aread_run(w->ar, &job);
	w->retries += job.retries;
	if (rc && rc != -ECANCELED)
		ple_fail(w->r, rc, "%s", strata_aread_error(w->ar));
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
