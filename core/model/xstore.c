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
 */
#include "model/xstore.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/log.h"

#define XS_ALIGN 4096u
#define XS_PIECE (1u << 20)
#define XS_TRIES 3 /* a read is tried this often before the fetch fails */
#define XS_NONE UINT32_MAX

static const char *const part_name[3] = { "gate", "up", "down" };

struct xs_slot {
	uint32_t key;        /* layer * n_expert + expert, or XS_NONE */
	uint32_t prev, next; /* LRU list, least recent first */
};

struct xs_read {
	struct strata_io_req req;
	uint32_t slot;
	uint32_t need;       /* bytes that must land (less only at the end of the file) */
	uint8_t part;
	uint8_t tries;
};

struct strata_xstore {
	const struct strata_model *m;
	char *path;
	struct strata_xstore_opts o;
	void *handle;                /* NULL until the first miss, and after a failure */
	uint32_t open_flags;
	uint32_t depth;
	uint64_t file_size;
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
	struct strata_io_req **queue;/* ring of reads to (re)submit, cap_reads long */
	struct strata_io_req **done;
	uint32_t *loading;           /* slots this fetch fills */
	uint32_t n_loading;
	struct strata_xstore_stats st;
};

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

/* Half of MemAvailable (the free memory the kernel would hand out), or 0. */
static uint64_t auto_cache_bytes(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (!kb)
		kb = (unsigned long long)sysconf(_SC_AVPHYS_PAGES) * (sysconf(_SC_PAGESIZE) / 1024);
	return (uint64_t)kb * 1024 / 2;
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
	xs->queue = calloc(xs->cap_reads, sizeof(*xs->queue));
	xs->done = calloc(xs->cap_reads, sizeof(*xs->done));
	xs->loading = calloc(xs->n_expert, sizeof(*xs->loading));
	xs->mem = mmap(NULL, (size_t)xs->n_slots * xs->slot_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (xs->mem == MAP_FAILED)
		xs->mem = NULL;
	if (!xs->slots || !xs->slot_of || !xs->reads || !xs->queue || !xs->done ||
	    !xs->loading || !xs->mem) {
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

/* Open the file through the plugin; direct I/O while the file system takes it. */
static int open_handle(struct strata_xstore *xs)
{
	const struct strata_io_ops *ops = xs->o.ops;
	struct strata_io_caps caps;
	int64_t size;
	int rc = ops->open(xs->o.host, xs->path, xs->open_flags, xs->o.depth, &xs->handle);

	if (rc == -EINVAL && (xs->open_flags & STRATA_IO_DIRECT)) {
		strata_warn("%s: the file system refuses direct I/O: experts are read through "
			    "the page cache", xs->path);
		xs->open_flags &= ~STRATA_IO_DIRECT;
		rc = ops->open(xs->o.host, xs->path, xs->open_flags, xs->o.depth, &xs->handle);
	}
	if (rc) {
		xs->handle = NULL;
		strata_error("io plugin %s cannot open %s to stream experts: %s", xs->o.io_name,
			     xs->path, strerror(-rc));
		return rc;
	}
	if ((rc = ops->caps(xs->handle, &caps))) {
		strata_error("io plugin %s: caps() failed on %s: %s", xs->o.io_name, xs->path,
			     strerror(-rc));
		return rc;
	}
	if (caps.buf_align > XS_ALIGN || caps.offset_align > XS_ALIGN ||
	    (caps.offset_align && XS_ALIGN % caps.offset_align)) {
		strata_error("io plugin %s on %s wants %u-byte aligned reads; expert reads are "
			     "aligned to %u bytes", xs->o.io_name, xs->path, caps.offset_align,
			     XS_ALIGN);
		return -EINVAL;
	}
	xs->depth = caps.depth && caps.depth < xs->o.depth ? caps.depth : xs->o.depth;
	size = ops->size(xs->handle);
	if (size < 0) {
		strata_error("io plugin %s: size() failed on %s: %s", xs->o.io_name, xs->path,
			     strerror((int)-size));
		return (int)size;
	}
	xs->file_size = (uint64_t)size;
	return 0;
}

static void close_handle(struct strata_xstore *xs)
{
	if (xs->handle)
		xs->o.ops->close(xs->handle);
	xs->handle = NULL;
}

int strata_xstore_open(const struct strata_model *m, const char *path,
		       const struct strata_xstore_opts *o, struct strata_xstore **out)
{
	struct strata_xstore *xs;
	int rc;

	*out = NULL;
	if (!o->ops || !o->depth)
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
	xs->open_flags = o->direct ? STRATA_IO_DIRECT : 0;
	if ((rc = size_cache(xs)) || (rc = alloc_cache(xs)) || (rc = open_handle(xs))) {
		strata_xstore_close(xs);
		return rc;
	}
	strata_info("experts streamed from %s through %s%s: %u of %" PRIu64 " in a %.1f MiB cache",
		    path, o->io_name, xs->open_flags & STRATA_IO_DIRECT ? " (direct)" : "",
		    xs->n_slots, (uint64_t)n_moe_layers(m) * xs->n_expert,
		    (double)xs->n_slots * xs->slot_bytes / 1048576.0);
	*out = xs;
	return 0;
}

void strata_xstore_close(struct strata_xstore *xs)
{
	if (!xs)
		return;
	close_handle(xs);
	if (xs->st.hits + xs->st.misses)
		strata_info("experts streamed: %" PRIu64 " asked for, %.1f%% cache hits, %" PRIu64
			    " reads (%.1f MiB), %" PRIu64 " repeated, %" PRIu64 " failed fetches",
			    xs->st.hits + xs->st.misses,
			    100.0 * xs->st.hits / (double)(xs->st.hits + xs->st.misses),
			    xs->st.reads, xs->st.bytes / 1048576.0, xs->st.retries, xs->st.failures);
	if (xs->mem)
		munmap(xs->mem, (size_t)xs->n_slots * xs->slot_bytes);
	free(xs->slots);
	free(xs->slot_of);
	free(xs->reads);
	free(xs->queue);
	free(xs->done);
	free(xs->loading);
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

		part_span(xs, key, p, &off, &len);
		a0 = off / XS_ALIGN * XS_ALIGN;
		end = round_up(off + len, XS_ALIGN);
		for (uint64_t at = a0; at < end; at += XS_PIECE) {
			struct xs_read *r = &xs->reads[xs->n_reads++];
			uint64_t n = end - at < XS_PIECE ? end - at : XS_PIECE;
			uint64_t left = xs->file_size > at ? xs->file_size - at : 0;

			*r = (struct xs_read){ .slot = s, .part = (uint8_t)p,
					       .need = (uint32_t)(n < left ? n : left) };
			r->req = (struct strata_io_req){ .offset = at, .len = (uint32_t)n,
							 .buf = part_mem(xs, s, p) + (at - a0) };
		}
	}
}

/* One clear error for read r that failed for good. */
static int read_failed(struct strata_xstore *xs, const struct xs_read *r)
{
	uint32_t key = xs->slots[r->slot].key;
	int err = r->req.result < 0 ? r->req.result : -EIO;

	strata_error("%s: reading expert %u of layer %u (blk.%u.ffn_%s_exps.weight, %u bytes at "
		     "offset %" PRIu64 ") through %s failed %d times: %s", xs->path,
		     key % xs->n_expert, key / xs->n_expert, key / xs->n_expert,
		     part_name[r->part], r->req.len, r->req.offset, xs->o.io_name, r->tries,
		     r->req.result < 0 ? strerror(-r->req.result) : "short read");
	return err;
}

/* Submit what the queue holds while the depth allows; 0 or -errno. */
static int submit_some(struct strata_xstore *xs, uint32_t *qh, uint32_t *qn,
		       uint32_t *inflight)
{
	while (*qn && *inflight < xs->depth) {
		uint32_t k = *qn < xs->depth - *inflight ? *qn : xs->depth - *inflight;
		int rc;

		if (k > xs->cap_reads - *qh)
			k = xs->cap_reads - *qh; /* up to the ring's end */
		rc = xs->o.ops->submit(xs->handle, &xs->queue[*qh], k);
		if (rc == -EAGAIN && *inflight)
			return 0;
		if (rc < 0) {
			strata_error("%s: io plugin %s refused expert reads: %s", xs->path,
				     xs->o.io_name, strerror(-rc));
			return rc;
		}
		if (rc == 0)
			return 0;
		*qh = (*qh + (uint32_t)rc) % xs->cap_reads;
		*qn -= (uint32_t)rc;
		*inflight += (uint32_t)rc;
	}
	return 0;
}

/*
 * After a failure: wait for the reads still in flight (they write into slots
 * about to be reused).  A handle whose reads do not land in time is closed,
 * which waits for or cancels them; the next fetch opens a fresh one.
 */
static void drain(struct strata_xstore *xs, uint32_t inflight)
{
	while (inflight && xs->handle) {
		int rc = xs->o.ops->reap(xs->handle, xs->done, inflight, xs->depth,
					 (int)xs->o.timeout_ms);

		if (rc <= 0)
			close_handle(xs);
		else
			inflight -= (uint32_t)rc;
	}
}

/* Run this fetch's reads to the end; a failed or short read is repeated. */
static int run_reads(struct strata_xstore *xs)
{
	uint32_t qh = 0, qn = xs->n_reads, inflight = 0, landed = 0;
	int err = 0;

	for (uint32_t i = 0; i < xs->n_reads; i++)
		xs->queue[i] = &xs->reads[i].req;
	while (landed < xs->n_reads && !err) {
		int got;

		if ((err = submit_some(xs, &qh, &qn, &inflight)))
			break;
		got = xs->o.ops->reap(xs->handle, xs->done, 1, xs->depth, (int)xs->o.timeout_ms);
		if (got < 0) {
			strata_error("%s: io plugin %s failed while reading experts: %s", xs->path,
				     xs->o.io_name, strerror(-got));
			close_handle(xs);
			return got;
		}
		if (got == 0) {
			strata_error("%s: no expert read landed for %u ms through %s (%u in flight): "
				     "the disk stopped answering ([io] timeout_ms)", xs->path,
				     xs->o.timeout_ms, xs->o.io_name, inflight);
			close_handle(xs);
			return -ETIMEDOUT;
		}
		inflight -= (uint32_t)got;
		for (int i = 0; i < got; i++) {
			struct xs_read *r = (struct xs_read *)xs->done[i]; /* req is first */

			r->tries++;
			if (r->req.result >= 0 && (uint32_t)r->req.result >= r->need) {
				landed++;
				xs->st.reads++;
				xs->st.bytes += r->need;
			} else if (r->tries >= XS_TRIES) {
				if (!err)
					err = read_failed(xs, r);
			} else if (!err) {
				xs->st.retries++;
				xs->queue[(qh + qn++) % xs->cap_reads] = &r->req;
			}
		}
	}
	if (err)
		drain(xs, inflight);
	return err;
}

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

int strata_xstore_fetch(struct strata_xstore *xs, uint32_t layer, const uint32_t *ids,
			uint32_t n, struct strata_mat *mats)
{
	const struct strata_layer *L = &xs->m->layers[layer];
	int rc = 0;

	if (n > xs->n_expert || !L->moe)
		return -EINVAL;
	xs->n_reads = xs->n_loading = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t key = layer * xs->n_expert + ids[i], s = xs->slot_of[key];

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
	if (!xs->n_reads)
		return 0;
	if (!xs->handle)
		rc = open_handle(xs);
	if (!rc)
		rc = run_reads(xs);
	if (rc)
		drop_loading(xs);
	return rc;
}
