/*
 * ple_plan.c - turning a chunk's row ids into page jobs (see ple_int.h).
 *
 * Two passes.  The first walks the positions: out-of-range ids become zero
 * rows, every distinct row id is looked up once in the row cache (a hit is
 * copied out now, because the reads that follow may evict it), and repeats
 * are chained to the first position with that id.  The second walks the
 * miss rows in first-use order and turns every page each one touches into
 * a page job, deduplicated through the page map, so job numbers follow the
 * order in which the chunk first needs each page and the readers, taking
 * jobs in order, complete the early rows first.
 */
#include "ple/ple_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define PREFETCH 16 /* positions ahead: enough to cover a DRAM miss */

/* Grow *p to hold `need` elements (keeping nothing: arrays are rebuilt per chunk). */
static int ensure(void *pp, uint64_t *have, uint64_t need, size_t elem)
{
	void **p = pp;
	void *n;

	if (need <= *have && *p)
		return 0;
	need = need < 64 ? 64 : need + need / 4;
	n = malloc(need * elem);
	if (!n)
		return -ENOMEM;
	free(*p);
	*p = n;
	*have = need;
	return 0;
}

static int map_reserve(struct ple_map *m, uint64_t n)
{
	uint64_t cap = 64;
	int bits = 6;

	while (cap < 2 * n) {
		cap *= 2;
		bits++;
	}
	if (cap > m->alloc) {
		uint32_t *s = malloc(cap * 2 * sizeof(uint32_t));

		if (!s)
			return -ENOMEM;
		free(m->slot);
		m->slot = s;
		m->alloc = cap;
	}
	m->cap = cap;
	m->bits = bits;
	memset(m->slot, 0, cap * 2 * sizeof(uint32_t));
	return 0;
}

static inline uint64_t map_home(const struct ple_map *m, uint32_t key)
{
	return ((uint64_t)key * 0x9E3779B97F4A7C15ull) >> (64 - m->bits);
}

static inline void map_prefetch(const struct ple_map *m, uint32_t key)
{
	__builtin_prefetch(m->slot + 2 * map_home(m, key), 1);
}

/* The value slot of key; *added = 1 when the key was not there before. */
static inline uint32_t *map_get(struct ple_map *m, uint32_t key, int *added)
{
	uint64_t i = map_home(m, key);

	for (;;) {
		uint32_t *s = m->slot + 2 * i;

		if (s[0] == key + 1) {
			*added = 0;
			return s + 1;
		}
		if (s[0] == 0) {
			s[0] = key + 1;
			*added = 1;
			return s + 1;
		}
		i = (i + 1) & (m->cap - 1);
	}
}

void strata_ple_plan_free(struct ple_plan *p)
{
	free(p->rowmap.slot);
	free(p->pagemap.slot);
	free(p->miss_row);
	free(p->miss_pos);
	free(p->miss_bytes);
	free(p->hit_pos);
	free(p->hit_bytes);
	free(p->pos_next);
	free(p->job_page);
	free(p->job_head);
	free(p->job_need);
	free(p->use);
	free((void *)p->grp_left);
	memset(p, 0, sizeof(*p));
}

/* Hits are distinct cached rows: never more than the cache holds. */
static uint64_t max_hits(const struct strata_ple_reader *r, uint64_t n)
{
	uint64_t cap = strata_ple_cache_capacity(&r->cache);

	return n < cap ? n : cap;
}

static int reserve_rows(struct strata_ple_reader *r, uint64_t n)
{
	struct ple_plan *p = &r->plan;

	if (map_reserve(&p->rowmap, n) || ensure(&p->pos_next, &p->c_pos_next, n, 4) ||
	    ensure(&p->miss_row, &p->c_miss_row, n, 4) ||
	    ensure(&p->miss_pos, &p->c_miss_pos, n, 4) ||
	    ensure(&p->hit_pos, &p->c_hit_pos, max_hits(r, n), 4) ||
	    ensure(&p->hit_bytes, &p->c_hit_bytes, max_hits(r, n), r->rb))
		return -ENOMEM;
	return 0;
}

static int reserve_pages(struct strata_ple_reader *r, uint64_t n_miss, uint64_t n_uses)
{
	struct ple_plan *p = &r->plan;

	if (map_reserve(&p->pagemap, n_uses) ||
	    ensure(&p->job_page, &p->c_job_page, n_uses, 4) ||
	    ensure(&p->job_head, &p->c_job_head, n_uses, 4) ||
	    ensure(&p->job_need, &p->c_job_need, n_uses, 4) ||
	    ensure(&p->use, &p->c_use, n_uses, sizeof(struct ple_use)) ||
	    ensure(&p->miss_bytes, &p->c_miss_bytes, n_miss, r->rb) ||
	    ensure((void *)&p->grp_left, &p->c_grp, (n_miss + PLE_GROUP - 1) / PLE_GROUP,
		   sizeof(*p->grp_left)))
		return -ENOMEM;
	return 0;
}

int strata_ple_plan_reserve(struct strata_ple_reader *r, size_t n_rows)
{
	struct ple_plan *p = &r->plan;
	uint64_t ppr = (r->rb + STRATA_PLE_PAGE - 2) / STRATA_PLE_PAGE + 1; /* pages a row spans */

	if (reserve_rows(r, n_rows) || reserve_pages(r, n_rows, n_rows * ppr))
		return -ENOMEM;
	memset(p->pos_next, 0, p->c_pos_next * 4);
	memset(p->miss_row, 0, p->c_miss_row * 4);
	memset(p->miss_pos, 0, p->c_miss_pos * 4);
	memset(p->hit_pos, 0, p->c_hit_pos * 4);
	memset(p->hit_bytes, 0, p->c_hit_bytes * r->rb);
	memset(p->job_page, 0, p->c_job_page * 4);
	memset(p->job_head, 0, p->c_job_head * 4);
	memset(p->job_need, 0, p->c_job_need * 4);
	memset(p->use, 0, p->c_use * sizeof(struct ple_use));
	memset(p->miss_bytes, 0, p->c_miss_bytes * r->rb);
	memset((void *)p->grp_left, 0, p->c_grp * sizeof(*p->grp_left));
	memset(p->pagemap.slot, 0, p->pagemap.alloc * 2 * sizeof(uint32_t));
	return 0;
}

/* Pass 1: positions -> zeros, hits, miss rows. */
static int plan_rows(struct strata_ple_reader *r, struct strata_ple_chunk *c)
{
	struct ple_plan *p = &r->plan;
	size_t rl = r->row_len, rb = r->rb;
	int added;

	if (reserve_rows(r, c->n))
		return -ENOMEM;
	p->n_miss = p->n_hit = 0;
	p->zeros = p->hits = 0;
	for (size_t i = 0; i < c->n; i++) {
		uint64_t row = c->rows[i];
		uint32_t *v, first;

		if (i + PREFETCH < c->n && c->rows[i + PREFETCH] < r->n_rows) {
			uint32_t ahead = (uint32_t)c->rows[i + PREFETCH];

			map_prefetch(&p->rowmap, ahead);
			ple_cache_prefetch(&r->cache, ahead);
		}
		p->pos_next[i] = PLE_NONE;
		if (row >= r->n_rows) {
			memset(c->out + i * rl, 0, rl * sizeof(float));
			p->zeros++;
			continue;
		}
		v = map_get(&p->rowmap, (uint32_t)row, &added);
		if (added) {
			/* Unlocked: the reader threads are idle while a chunk is planned. */
			if (strata_ple_cache_get(&r->cache, (uint32_t)row, p->hit_bytes + p->n_hit * rb,
						 c->seq, 0)) {
				p->hit_pos[p->n_hit] = (uint32_t)i;
				*v = PLE_HIT_BIT | p->n_hit++;
				p->hits++;
			} else {
				p->miss_row[p->n_miss] = (uint32_t)row;
				p->miss_pos[p->n_miss] = (uint32_t)i;
				*v = p->n_miss++;
			}
			continue;
		}
		if (*v & PLE_HIT_BIT) {
			first = p->hit_pos[*v & ~PLE_HIT_BIT];
			p->hits++;
		} else {
			first = p->miss_pos[*v];
		}
		p->pos_next[i] = p->pos_next[first];
		p->pos_next[first] = (uint32_t)i;
	}
	return 0;
}

/* Pass 2: miss rows -> page jobs and their uses. */
static int plan_pages(struct strata_ple_reader *r)
{
	struct ple_plan *p = &r->plan;
	uint64_t n_uses = 0;
	int added;

	for (uint32_t u = 0; u < p->n_miss; u++) {
		uint64_t off = r->base + (uint64_t)p->miss_row[u] * r->rb;

		n_uses += (off + r->rb - 1) / STRATA_PLE_PAGE - off / STRATA_PLE_PAGE + 1;
	}
	p->n_groups = (p->n_miss + PLE_GROUP - 1) / PLE_GROUP;
	if (reserve_pages(r, p->n_miss, n_uses))
		return -ENOMEM;
	for (uint32_t g = 0; g < p->n_groups; g++)
		atomic_init(&p->grp_left[g], 0);
	p->n_jobs = p->n_uses = 0;
	for (uint32_t u = 0; u < p->n_miss; u++) {
		uint64_t off = r->base + (uint64_t)p->miss_row[u] * r->rb, end = off + r->rb;

		if (u + PREFETCH < p->n_miss)
			map_prefetch(&p->pagemap, (uint32_t)((r->base + (uint64_t)p->miss_row[u + PREFETCH] *
							      r->rb) / STRATA_PLE_PAGE));

		for (uint64_t pg = off / STRATA_PLE_PAGE; pg * STRATA_PLE_PAGE < end; pg++) {
			uint64_t ps = pg * STRATA_PLE_PAGE, pe = ps + STRATA_PLE_PAGE;
			uint64_t s = off > ps ? off : ps, e = end < pe ? end : pe;
			uint32_t *v = map_get(&p->pagemap, (uint32_t)pg, &added), j;
			struct ple_use *us = &p->use[p->n_uses];

			if (added) {
				j = *v = p->n_jobs++;
				p->job_page[j] = (uint32_t)pg;
				p->job_head[j] = PLE_NONE;
				p->job_need[j] = 0;
			}
			j = *v;
			us->u = u;
			us->row_off = (uint32_t)(s - off);
			us->page_off = (uint16_t)(s - ps);
			us->len = (uint16_t)(e - s);
			us->next = p->job_head[j];
			p->job_head[j] = p->n_uses++;
			if (e - ps > p->job_need[j])
				p->job_need[j] = (uint32_t)(e - ps);
			atomic_fetch_add_explicit(&p->grp_left[u / PLE_GROUP], 1,
						  memory_order_relaxed);
		}
	}
	return 0;
}

int strata_ple_plan_chunk(struct strata_ple_reader *r, struct strata_ple_chunk *c)
{
	int rc = plan_rows(r, c);

	if (!rc)
		rc = plan_pages(r);
	if (rc)
		strata_error("%s: out of memory planning the reads of %zu PLE rows", r->path,
			     c->n);
	return rc;
}

/* Copy the row at position `first` to every later position asking for the same row. */
static void fan_out(const struct ple_plan *p, float *out, size_t rl, uint32_t first)
{
	for (uint32_t d = p->pos_next[first]; d != PLE_NONE; d = p->pos_next[d])
		memcpy(out + (size_t)d * rl, out + (size_t)first * rl, rl * sizeof(float));
}

void strata_ple_plan_decode_hits(struct strata_ple_reader *r, struct strata_ple_chunk *c)
{
	struct ple_plan *p = &r->plan;
	size_t rl = r->row_len;

	for (uint32_t h = 0; h < p->n_hit; h++) {
		strata_ple_decode_row(r->type, p->hit_bytes + (size_t)h * r->rb,
				      c->out + (size_t)p->hit_pos[h] * rl, r->row_len);
		fan_out(p, c->out, rl, p->hit_pos[h]);
	}
}

void strata_ple_plan_decode_group(struct strata_ple_reader *r, struct strata_ple_chunk *c,
				  uint32_t g)
{
	struct ple_plan *p = &r->plan;
	uint32_t end = (g + 1) * PLE_GROUP < p->n_miss ? (g + 1) * PLE_GROUP : p->n_miss;
	size_t rl = r->row_len;

	for (uint32_t u = g * PLE_GROUP; u < end; u++) {
		const uint8_t *b = p->miss_bytes + (size_t)u * r->rb;

		strata_ple_decode_row(r->type, b, c->out + (size_t)p->miss_pos[u] * rl, r->row_len);
		fan_out(p, c->out, rl, p->miss_pos[u]);
		strata_ple_cache_put(&r->cache, p->miss_row[u], b, c->seq);
	}
}

void strata_ple_plan_zero_unfinished(struct strata_ple_reader *r, struct strata_ple_chunk *c)
{
	struct ple_plan *p = &r->plan;
	size_t rl = r->row_len;

	for (uint32_t g = 0; g < p->n_groups; g++) {
		uint32_t end = (g + 1) * PLE_GROUP < p->n_miss ? (g + 1) * PLE_GROUP : p->n_miss;

		if (atomic_load(&p->grp_left[g]) == 0)
			continue;
		for (uint32_t u = g * PLE_GROUP; u < end; u++) {
			memset(c->out + (size_t)p->miss_pos[u] * rl, 0, rl * sizeof(float));
			fan_out(p, c->out, rl, p->miss_pos[u]);
		}
	}
}
