/*
 * xstore.c - streamed experts: an LRU cache of expert slots filled by an io
 * plugin.
 *
 * A slot holds one expert's gate, up and down matrices, each read as the
 * 4 KiB-aligned span around it (direct I/O wants aligned offsets, lengths
 * and buffers), in pieces of at most 1 MiB so that `depth` reads are in
 * flight.  Slots used by the current fetch are the most recently used, and
 * the cache holds at least one layer's experts, so a fetch never evicts what
 * it is about to return.
 *
 * The reads go through the shared read path (io/aread.h), on its thread:
 * fetch_start() plans them on the engine thread (the cache's bookkeeping
 * never leaves it) and hands the list over; the reader thread touches only
 * the list and the slot bytes being filled; fetch_wait() takes it back.
 *
 * A model split in shards may hold experts in several files: each such file
 * has its own read path (handle and thread), each read knows its file, and
 * a fetch starts one job per file that has reads and waits for them all.
 */
#include "model/xstore.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "io/aread.h"
#include "plat/plat.h"
#include "util/log.h"
#include "util/mem.h"

#define XS_ALIGN 4096u
#define XS_PIECE (1u << 20)
#define XS_NONE UINT32_MAX

static const char *const part_name[3] = { "gate", "up", "down" };

struct xs_slot {
	uint32_t key;        /* layer * n_expert + expert, or XS_NONE */
	uint32_t prev, next; /* LRU list, least recent first */
};

/* One piece of one part of an expert; the reader thread's describe() needs only this. */
struct xs_read {
	struct strata_aread_req req; /* first: the read path hands it back */
	uint32_t key;                /* layer * n_expert + expert */
	uint32_t file;               /* the model file it reads */
	uint8_t part;
};

/* One model file that holds experts, read through its own read path. */
struct xs_file {
	struct strata_xstore *xs;
	uint32_t idx;                /* strata_gguf_file_path() index */
	struct strata_aread *ar;     /* NULL: the file holds no experts */
	uint64_t size;
	struct strata_aread_job job;
	uint32_t next_read;          /* its reader thread's: next of xs->reads to look at */
	int reading;                 /* the started fetch has reads in this file */
};

struct strata_xstore {
	const struct strata_model *m;
	char *path;
	struct strata_xstore_opts o;
	struct xs_file *files;       /* [n_files] */
	uint32_t n_files;
	uint32_t n_expert;
	size_t part_room[3];         /* slot bytes per part */
	size_t slot_bytes;
	uint32_t n_slots;
	uint8_t *mem;                /* n_slots * slot_bytes, mmap'd */
	struct xs_slot *slots;
	uint32_t *slot_of;           /* [n_layer * n_expert]: slot or XS_NONE */
	uint32_t lru, mru;
	struct xs_read *reads;       /* this fetch's reads */
	uint32_t n_reads, cap_reads;
	uint32_t *loading;           /* slots this fetch fills */
	uint32_t n_loading;
	uint8_t *hit;                /* [n_expert]: expert i of the started fetch was resident */
	int started;                 /* fetch_start() without its fetch_wait() yet */
	int reading;                 /* ... and the started fetch has reads on the reader thread */
	struct strata_xstore_stats st;
};

static int open_reads(struct strata_xstore *xs);
static int any_direct(const struct strata_xstore *xs);

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static const struct strata_experts *part_of(const struct strata_layer *L, int p)
{
	return p == 0 ? &L->gate_exps : p == 1 ? &L->up_exps : &L->down_exps;
}

static uint32_t n_moe_layers(const struct strata_model *m)
{
	uint32_t n = 0;

	for (uint32_t l = 0; l < m->hp.n_layer - m->hp.n_nextn; l++)
		n += m->layers[l].moe;
	return n;
}

/* ---- the LRU list ------------------------------------------------------------- */

static void lru_unlink(struct strata_xstore *xs, uint32_t s)
{
	struct xs_slot *e = &xs->slots[s];

	if (e->prev != XS_NONE)
		xs->slots[e->prev].next = e->next;
	else
		xs->lru = e->next;
	if (e->next != XS_NONE)
		xs->slots[e->next].prev = e->prev;
	else
		xs->mru = e->prev;
}

static void lru_push_mru(struct strata_xstore *xs, uint32_t s)
{
	xs->slots[s].prev = xs->mru;
	xs->slots[s].next = XS_NONE;
	if (xs->mru != XS_NONE)
		xs->slots[xs->mru].next = s;
	else
		xs->lru = s;
	xs->mru = s;
}

static void lru_push_lru(struct strata_xstore *xs, uint32_t s)
{
	xs->slots[s].next = xs->lru;
	xs->slots[s].prev = XS_NONE;
	if (xs->lru != XS_NONE)
		xs->slots[xs->lru].prev = s;
	else
		xs->mru = s;
	xs->lru = s;
}

/* ---- opening ------------------------------------------------------------------ */

/* Half of MemAvailable (the free memory the kernel would hand out). */
static uint64_t auto_cache_bytes(void)
{
	return strata_mem_available() / 2;
}

static int size_cache(struct strata_xstore *xs)
{
	const struct strata_model *m = xs->m;
	uint64_t want = xs->o.cache_bytes ? xs->o.cache_bytes : auto_cache_bytes();
	uint64_t all = (uint64_t)n_moe_layers(m) * xs->n_expert, n;

	for (uint32_t l = 0; l < m->hp.n_layer - m->hp.n_nextn; l++)
		for (int p = 0; m->layers[l].moe && p < 3; p++) {
			size_t room = round_up(part_of(&m->layers[l], p)->stride, XS_ALIGN) + XS_ALIGN;

			if (room > xs->part_room[p])
				xs->part_room[p] = room;
		}
	xs->slot_bytes = xs->part_room[0] + xs->part_room[1] + xs->part_room[2];
	n = want / xs->slot_bytes;
	if (n < xs->n_expert && xs->o.cache_bytes) {
		strata_error("%s: [model] expert_cache = %" PRIu64 " MiB holds %" PRIu64 " experts; "
			     "a layer routes to any of its %u, which needs %" PRIu64 " MiB at least",
			     xs->path, xs->o.cache_bytes >> 20, n, xs->n_expert,
			     ((uint64_t)xs->n_expert * xs->slot_bytes + (1u << 20) - 1) >> 20);
		return -EINVAL;
	}
	if (n < xs->n_expert) {
		strata_warn("%s: half the free memory holds only %" PRIu64 " experts: the cache "
			    "gets one layer's %u anyway", xs->path, n, xs->n_expert);
		n = xs->n_expert;
	}
	xs->n_slots = (uint32_t)(n < all ? n : all);
	return 0;
}

static int alloc_cache(struct strata_xstore *xs)
{
	size_t n_keys = (size_t)xs->m->hp.n_layer * xs->n_expert;
	uint32_t max_reads = 0;

	for (int p = 0; p < 3; p++)
		max_reads += (uint32_t)(xs->part_room[p] / XS_PIECE + 1);
	xs->cap_reads = max_reads * xs->n_expert;
	xs->slots = calloc(xs->n_slots, sizeof(*xs->slots));
	xs->slot_of = malloc(n_keys * sizeof(*xs->slot_of));
	xs->reads = calloc(xs->cap_reads, sizeof(*xs->reads));
	xs->loading = calloc(xs->n_expert, sizeof(*xs->loading));
	xs->hit = calloc(xs->n_expert, sizeof(*xs->hit));
	xs->mem = strata_vm_alloc((size_t)xs->n_slots * xs->slot_bytes);
	if (!xs->slots || !xs->slot_of || !xs->reads || !xs->loading || !xs->hit || !xs->mem) {
		strata_error("%s: out of memory for %u streamed experts (%zu MiB)", xs->path,
			     xs->n_slots, ((size_t)xs->n_slots * xs->slot_bytes) >> 20);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n_keys; k++)
		xs->slot_of[k] = XS_NONE;
	xs->lru = xs->mru = XS_NONE;
	for (uint32_t s = 0; s < xs->n_slots; s++) {
		xs->slots[s].key = XS_NONE;
		lru_push_mru(xs, s);
	}
	return 0;
}

int strata_xstore_open(const struct strata_model *m, const char *path,
		       const struct strata_xstore_opts *o, struct strata_xstore **out)
{
	struct strata_xstore *xs;
	int rc;

	*out = NULL;
	if (!o->ops || !o->host || !o->depth)
		return -EINVAL;
	if (!m->hp.n_expert || !n_moe_layers(m)) {
		strata_error("%s has no MoE experts to stream", path);
		return -EINVAL;
	}
	xs = calloc(1, sizeof(*xs));
	if (!xs || !(xs->path = strdup(path))) {
		free(xs);
		return -ENOMEM;
	}
	xs->m = m;
	xs->o = *o;
	xs->n_expert = m->hp.n_expert;
	if ((rc = size_cache(xs)) || (rc = alloc_cache(xs)) || (rc = open_reads(xs))) {
		strata_xstore_close(xs);
		return rc;
	}
	strata_info("experts streamed from %s%s through %s%s: %u of %" PRIu64 " in a %.1f MiB cache",
		    path, xs->n_files > 1 ? " and its shards" : "", o->io_name,
		    any_direct(xs) ? " (direct)" : "",
		    xs->n_slots, (uint64_t)n_moe_layers(m) * xs->n_expert,
		    (double)xs->n_slots * xs->slot_bytes / 1048576.0);
	*out = xs;
	return 0;
}

void strata_xstore_close(struct strata_xstore *xs)
{
	if (!xs)
		return;
	if (xs->started)
		strata_xstore_fetch_wait(xs); /* its error, if any, is logged there */
	for (uint32_t f = 0; xs->files && f < xs->n_files; f++)
		strata_aread_close(xs->files[f].ar);
	free(xs->files);
	if (xs->st.hits + xs->st.misses)
		strata_info("experts streamed: %" PRIu64 " asked for, %.1f%% cache hits, %" PRIu64
			    " reads (%.1f MiB), %" PRIu64 " repeated, %" PRIu64 " failed fetches",
			    xs->st.hits + xs->st.misses,
			    100.0 * xs->st.hits / (double)(xs->st.hits + xs->st.misses),
			    xs->st.reads, xs->st.bytes / 1048576.0, xs->st.retries, xs->st.failures);
	if (xs->mem)
		strata_vm_free(xs->mem, (size_t)xs->n_slots * xs->slot_bytes);
	free(xs->slots);
	free(xs->slot_of);
	free(xs->reads);
	free(xs->loading);
	free(xs->hit);
	free(xs->path);
	free(xs);
}

void strata_xstore_stats(const struct strata_xstore *xs, struct strata_xstore_stats *st)
{
	*st = xs->st;
	st->slots = xs->n_slots;
}

/* ---- fetching ----------------------------------------------------------------- */

/* Where part p of expert x of layer l starts in the file, and its length. */
static void part_span(const struct strata_xstore *xs, uint32_t key, int p, uint64_t *off,
		      size_t *len)
{
	const struct strata_experts *e =
		part_of(&xs->m->layers[key / xs->n_expert], p);

	*off = e->file_off + (uint64_t)(key % xs->n_expert) * e->stride;
	*len = e->stride;
}

/* The file that holds part p of the experts of key's layer. */
static uint32_t part_file(const struct strata_xstore *xs, uint32_t key, int p)
{
	return part_of(&xs->m->layers[key / xs->n_expert], p)->file;
}

static uint8_t *part_mem(const struct strata_xstore *xs, uint32_t s, int p)
{
	size_t at = (size_t)s * xs->slot_bytes;

	for (int q = 0; q < p; q++)
		at += xs->part_room[q];
	return xs->mem + at;
}

/* Queue the reads that fill slot s with key's three parts. */
static void plan_reads(struct strata_xstore *xs, uint32_t s, uint32_t key)
{
	for (int p = 0; p < 3; p++) {
		uint64_t off, a0, end;
		size_t len;

		uint32_t f = part_file(xs, key, p);
		struct xs_file *xf = &xs->files[f];

		part_span(xs, key, p, &off, &len);
		xf->reading = 1;
		a0 = off / XS_ALIGN * XS_ALIGN;
		end = round_up(off + len, XS_ALIGN);
		for (uint64_t at = a0; at < end; at += XS_PIECE) {
			struct xs_read *r = &xs->reads[xs->n_reads++];
			uint64_t n = end - at < XS_PIECE ? end - at : XS_PIECE;
			uint64_t left = xf->size > at ? xf->size - at : 0;

			*r = (struct xs_read){ .key = key, .file = f, .part = (uint8_t)p };
			r->req.need = (uint32_t)(n < left ? n : left);
			r->req.io = (struct strata_io_req){ .offset = at, .len = (uint32_t)n,
							    .buf = part_mem(xs, s, p) + (at - a0) };
		}
	}
}

/* ---- the read path's callbacks: on the reader thread ------------------------------- */

/* The reads of one file, in plan order: the other files' jobs skip them. */
static uint32_t next_reads(void *user, struct strata_aread_req **reqs, uint32_t n)
{
	struct xs_file *xf = user;
	const struct strata_xstore *xs = xf->xs;
	uint32_t k = 0;

	for (; k < n && xf->next_read < xs->n_reads; xf->next_read++)
		if (xs->reads[xf->next_read].file == xf->idx)
			reqs[k++] = &xs->reads[xf->next_read].req;
	return k;
}

static void describe_read(void *user, const struct strata_aread_req *req, char *buf, size_t n)
{
	const struct strata_xstore *xs = ((const struct xs_file *)user)->xs;
	const struct xs_read *r = (const struct xs_read *)(const void *)req; /* req is first */
	uint32_t layer = r->key / xs->n_expert;

	snprintf(buf, n, "expert %u of layer %u (blk.%u.ffn_%s_exps.weight)",
		 r->key % xs->n_expert, layer, layer, part_name[r->part]);
}

static int any_direct(const struct strata_xstore *xs)
{
	for (uint32_t f = 0; f < xs->n_files; f++)
		if (xs->files[f].ar && strata_aread_direct(xs->files[f].ar))
			return 1;
	return 0;
}

/* Open a read path on every model file that holds experts. */
static int open_reads(struct strata_xstore *xs)
{
	const struct strata_model *m = xs->m;
	struct strata_aread_opts ao = {
		.ops = xs->o.ops, .host = xs->o.host, .io_name = xs->o.io_name,
		.what = "streamed experts", .depth = xs->o.depth, .align = XS_ALIGN,
		.timeout_ms = xs->o.timeout_ms ? xs->o.timeout_ms : 30000,
		.timeout_key = "[io] timeout_ms", .direct = xs->o.direct,
	};
	int rc;

	xs->n_files = strata_gguf_n_files(m->gguf);
	xs->files = calloc(xs->n_files, sizeof(*xs->files));
	if (!xs->files)
		return -ENOMEM;
	for (uint32_t f = 0; f < xs->n_files; f++) {
		xs->files[f].xs = xs;
		xs->files[f].idx = f;
	}
	for (uint32_t l = 0; l < m->hp.n_layer - m->hp.n_nextn; l++)
		for (int p = 0; m->layers[l].moe && p < 3; p++) {
			struct xs_file *xf = &xs->files[part_of(&m->layers[l], p)->file];

			if (xf->ar)
				continue;
			/* One file: the path the caller named (the model's own). */
			ao.path = xs->n_files == 1 ? xs->path : strata_gguf_file_path(m->gguf, xf->idx);
			if ((rc = strata_aread_open(&ao, &xf->ar)))
				return rc; /* logged */
			xf->size = strata_aread_size(xf->ar);
			xf->job = (struct strata_aread_job){ .user = xf, .next = next_reads,
							     .describe = describe_read };
		}
	return 0;
}

/* ---- fetching: on the engine thread ------------------------------------------------- */

/* A failed fetch: forget the slots it was filling. */
static void drop_loading(struct strata_xstore *xs)
{
	for (uint32_t i = 0; i < xs->n_loading; i++) {
		uint32_t s = xs->loading[i];

		xs->slot_of[xs->slots[s].key] = XS_NONE;
		xs->slots[s].key = XS_NONE;
		lru_unlink(xs, s);
		lru_push_lru(xs, s);
	}
	xs->st.failures++;
}

int strata_xstore_fetch_start(struct strata_xstore *xs, uint32_t layer, const uint32_t *ids,
			      uint32_t n, struct strata_mat *mats)
{
	const struct strata_layer *L;
	int rc;

	if (xs->started)
		return -EBUSY;
	if (layer >= xs->m->hp.n_layer || n > xs->n_expert || !xs->m->layers[layer].moe ||
	    (n && (!ids || !mats)))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] >= xs->n_expert)
			return -EINVAL;
	L = &xs->m->layers[layer];
	xs->n_reads = xs->n_loading = 0;
	for (uint32_t f = 0; f < xs->n_files; f++)
		xs->files[f].reading = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t key = layer * xs->n_expert + ids[i], s = xs->slot_of[key];

		xs->hit[i] = s != XS_NONE;
		if (s != XS_NONE) {
			xs->st.hits++;
		} else {
			xs->st.misses++;
			s = xs->lru; /* not used by this fetch: those are the most recent */
			if (xs->slots[s].key != XS_NONE)
				xs->slot_of[xs->slots[s].key] = XS_NONE;
			xs->slots[s].key = key;
			xs->slot_of[key] = s;
			xs->loading[xs->n_loading++] = s;
			plan_reads(xs, s, key);
		}
		lru_unlink(xs, s);
		lru_push_mru(xs, s);
		for (int p = 0; p < 3; p++) {
			uint64_t off;
			size_t len;

			part_span(xs, key, p, &off, &len);
			mats[3 * i + p] = part_of(L, p)->m;
			mats[3 * i + p].data = part_mem(xs, s, p) + (off % XS_ALIGN);
		}
	}
	xs->started = 1;
	xs->reading = xs->n_reads > 0;
	for (uint32_t f = 0; f < xs->n_files; f++) {
		struct xs_file *xf = &xs->files[f];

		if (!xf->reading)
			continue;
		xf->next_read = 0;
		xf->job.reads = xf->job.bytes = xf->job.retries = 0;
		rc = strata_aread_start(xf->ar, &xf->job);
		if (rc) { /* cannot happen: each file's path runs one job at a time */
			xf->reading = 0;
			/* join the files started before; their slots were never filled */
			if (strata_xstore_fetch_wait(xs) == 0)
				drop_loading(xs);
			return rc;
		}
	}
	return 0;
}

int strata_xstore_fetch_ready(const struct strata_xstore *xs, uint32_t i)
{
	return xs->started && i < xs->n_expert && xs->hit[i];
}

int strata_xstore_fetch_wait(struct strata_xstore *xs)
{
	int rc;

	if (!xs->started)
		return -EINVAL;
	xs->started = 0;
	if (!xs->reading)
		return 0;
	xs->reading = 0;
	rc = 0;
	for (uint32_t f = 0; f < xs->n_files; f++) {
		struct xs_file *xf = &xs->files[f];
		int frc;

		if (!xf->reading)
			continue;
		xf->reading = 0;
		frc = strata_aread_wait(xf->ar);
		xs->st.reads += xf->job.reads;
		xs->st.bytes += xf->job.bytes;
		xs->st.retries += xf->job.retries;
		if (frc && !rc) {
			strata_error("%s", strata_aread_error(xf->ar));
			rc = frc;
		}
	}
	if (rc)
		drop_loading(xs);
	return rc;
}

int strata_xstore_fetch(struct strata_xstore *xs, uint32_t layer, const uint32_t *ids,
			uint32_t n, struct strata_mat *mats)
{
	int rc = strata_xstore_fetch_start(xs, layer, ids, n, mats);

	return rc ? rc : strata_xstore_fetch_wait(xs);
}

void strata_xstore_memory(const struct strata_xstore *xs, void **base, size_t *size)
{
	*base = xs->mem;
	*size = (size_t)xs->n_slots * xs->slot_bytes;
}
