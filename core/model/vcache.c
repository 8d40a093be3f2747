/*
 * vcache.c - the device's expert cache (vcache.h): slots, where each
 * routed expert runs, and the copies that fill, lend, refill and swap them.
 *
 * A slot holds any layer's expert: its gate, up and down matrices at the
 * layer's offsets (256-byte aligned), so a slot is as large as the largest
 * expert.  Slots 0..n_slots-1 are the cache, the n_transfer after them take
 * the misses that pcie_frac sends over the link.  The routing counts decay
 * (halved each adaptive round), so the cache follows what is routed now.
 */
#include "model/vcache.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/exec.h"
#include "model/ctx_int.h"
#include "util/clock.h"
#include "util/log.h"

#define VC_CHUNK_BYTES (256ull << 20) /* slots per device buffer: about this much */
#define VC_ALIGN 256u

struct strata_vcache {
	struct strata_vcache_opts o;
	char *save_path;           /* o.profile_save, owned */
	uint32_t n_layer, n_expert;
	size_t slot_bytes;
	size_t (*off)[3];          /* [n_layer]: each part's offset in a slot */
	uint32_t n_slots;          /* the cache */
	uint32_t n_transfer;       /* transfer slots after it */
	int all;                   /* n_slots >= the device layers' experts */
	uint32_t n_used;           /* cache slots [0, n_used) filled once (first use fills in order) */
	struct strata_buf *bufs;   /* [n_bufs], chunk slots each */
	uint32_t n_bufs, chunk;
	uint32_t *key;             /* [n_slots + n_transfer]: l * n_expert + x, or CTX_NONE */
	uint32_t *cnt;             /* [n_layer * n_expert]: decayed routing counts */
	uint64_t *total;           /* [n_layer * n_expert]: every route (the profile to save) */
	uint32_t *lent;            /* [n_slots]: the slots this batched pass borrowed */
	uint32_t *lent_key;        /* [n_slots] by slot: the expert to copy back, or CTX_NONE */
	uint32_t n_lent, lent_used;
	uint32_t *miss;            /* [n_expert] a plan's misses, most tokens first */
	void **ev;                 /* [n_ev] copy events, used round-robin */
	uint32_t n_ev, next_ev;
	uint64_t since_adapt;      /* tokens since the last adaptive round */
	struct strata_vcache_stats st;
	strata_vcache_trace_fn trace;
	void *trace_user;
};

static size_t align_up(size_t v)
{
	return (v + VC_ALIGN - 1) & ~(size_t)(VC_ALIGN - 1);
}

/*
 * Layer l's experts go to the device's cache: its dense part is there, it
 * has experts, and the device multiplies with their weight types.
 */
static int dev_layer(const struct strata_ctx *c, uint32_t l)
{
	const struct pl_layer *L = &c->L[l];

	if (L->be != c->dev || !c->m->layers[l].moe)
		return 0;
	for (int q = 0; q < 3; q++)
		if (!strata_backend_supports(c->dev, STRATA_OP_MATMUL, L->xh[q].type))
			return 0;
	return 1;
}

static struct strata_buf *slot_buf(struct strata_vcache *vc, uint32_t s, size_t *off)
{
	*off = (size_t)(s % vc->chunk) * vc->slot_bytes;
	return &vc->bufs[s / vc->chunk];
}

int strata_vcache_holds_all(const struct strata_ctx *c, uint32_t l)
{
	return c->vc && c->vc->all && l < c->vc->n_layer && dev_layer(c, l);
}

struct strata_tensor strata_vcache_tensor(const struct strata_ctx *c, uint32_t l, uint32_t s,
					  int q)
{
	struct strata_vcache *vc = c->vc;
	struct strata_tensor t = strata_t_expert(&c->L[l].xh[q], 0);
	size_t off;

	t.buf = slot_buf(vc, s, &off);
	t.offset = off + vc->off[l][q];
	return t;
}

/*
 * Queue the copy of expert x of layer l into slot s; compute waits for it.
 * The host bytes are the mapping's (they outlive every copy).
 */
static int copy_expert(struct strata_ctx *c, uint32_t l, uint32_t x, uint32_t s, int wait)
{
	struct strata_vcache *vc = c->vc;
	size_t off;
	struct strata_buf *b = slot_buf(vc, s, &off);

	for (int q = 0; q < 3; q++) {
		const struct strata_tensor src = strata_t_expert(&c->L[l].xh[q], x);
		void *ev = vc->ev[vc->next_ev];
		int rc;

		vc->next_ev = (vc->next_ev + 1) % vc->n_ev;
		rc = strata_backend_copy_in(c->dev, b, off + vc->off[l][q], strata_tensor_data(&src),
					    c->L[l].xh[q].nb[2], ev);
		if (!rc && wait)
			rc = strata_backend_wait(c->dev, ev);
		if (rc)
			return rc;
		vc->st.bytes_in += c->L[l].xh[q].nb[2];
	}
	return 0;
}

/* Make slot s hold key k (or nothing), keeping the layers' dev_slot in step. */
static void set_slot(struct strata_ctx *c, uint32_t s, uint32_t k)
{
	struct strata_vcache *vc = c->vc;

	if (vc->key[s] != CTX_NONE && s < vc->n_slots)
		c->L[vc->key[s] / vc->n_expert].dev_slot[vc->key[s] % vc->n_expert] = CTX_NONE;
	vc->key[s] = k;
	if (k != CTX_NONE && s < vc->n_slots)
		c->L[k / vc->n_expert].dev_slot[k % vc->n_expert] = s;
}

/* ---- making it ---------------------------------------------------------------- */

static int read_profile(struct strata_ctx *c, const char *path);

/* Slot size and each layer's part offsets; 0 when no device layer has experts. */
static size_t layout(struct strata_ctx *c, struct strata_vcache *vc)
{
	size_t most = 0;

	for (uint32_t l = 0; l < vc->n_layer; l++) {
		const struct pl_layer *L = &c->L[l];
		size_t at = 0;

		if (!dev_layer(c, l))
			continue;
		for (int q = 0; q < 3; q++) {
			vc->off[l][q] = at;
			at += align_up(L->xh[q].nb[2]);
		}
		most = at > most ? at : most;
	}
	return most;
}

/* How many cache slots: asked for or auto, within the budget and the experts there are. */
static uint32_t size_cache(struct strata_ctx *c, struct strata_vcache *vc,
			   const struct strata_vcache_opts *o, uint64_t budget, uint32_t experts)
{
	const uint64_t room = budget / vc->slot_bytes;
	uint64_t want;

	vc->n_transfer = o->pcie_frac > 0 ? c->m->hp.n_expert_used : 0;
	if (room <= vc->n_transfer) {
		vc->n_transfer = 0;
		return 0;
	}
	want = o->slots ? o->slots : room - vc->n_transfer;
	if (want > experts)
		want = experts;
	if (want > room - vc->n_transfer) {
		strata_warn("[gpu] expert_cache = %u slots of %.1f MiB: the budget left holds %" PRIu64,
			    o->slots, vc->slot_bytes / 1048576.0, room - vc->n_transfer);
		want = room - vc->n_transfer;
	}
	return (uint32_t)want;
}

/* The slots' buffers; a refusal part way keeps what was allocated, with a warning. */
static int alloc_slots(struct strata_ctx *c, struct strata_vcache *vc, uint64_t *budget_left)
{
	const uint32_t want = vc->n_slots + vc->n_transfer;
	uint32_t got = 0;

	vc->chunk = vc->o.chunk_slots;
	if (!vc->chunk) /* buffers of ~256 MiB: big ones fail on a fragmented device */
		vc->chunk = (uint32_t)(VC_CHUNK_BYTES / vc->slot_bytes ? VC_CHUNK_BYTES / vc->slot_bytes
								 : 1);
	vc->bufs = calloc((want + vc->chunk - 1) / vc->chunk, sizeof(*vc->bufs));
	if (!vc->bufs)
		return -ENOMEM;
	while (got < want) {
		const uint32_t n = want - got < vc->chunk ? want - got : vc->chunk;
		int rc = strata_backend_buf_alloc(c->dev, (size_t)n * vc->slot_bytes,
						  STRATA_BUF_USE_WEIGHTS, &vc->bufs[vc->n_bufs]);

		if (rc == -ENOMEM)
			break;
		if (rc)
			return rc;
		vc->n_bufs++;
		got += n;
	}
	if (got < want) {
		strata_warn("%s refused memory after %u of %u expert slots: the expert cache holds "
			    "%u", c->dev->name, got, want, got > vc->n_transfer ? got - vc->n_transfer : 0);
		if (got <= vc->n_transfer)
			vc->n_transfer = 0;
		vc->n_slots = got - vc->n_transfer;
	}
	*budget_left -= (uint64_t)got * vc->slot_bytes;
	return 0;
}

/* After allocating: free device memory under the reserve gives slots back. */
static void recheck(struct strata_ctx *c, struct strata_vcache *vc, uint64_t *budget_left)
{
	struct strata_device_info info;
	uint32_t before = vc->n_slots;

	if (!vc->o.reserve || c->dev->ops->info(c->dev->dev, &info))
		return;
	while (vc->n_bufs && info.mem_free < vc->o.reserve) {
		struct strata_buf *b = &vc->bufs[--vc->n_bufs];
		const uint32_t n = (uint32_t)(b->size / vc->slot_bytes);

		info.mem_free += b->size;
		*budget_left += b->size;
		strata_backend_buf_free(c->dev, b);
		vc->n_slots = vc->n_slots + vc->n_transfer > n ? vc->n_slots + vc->n_transfer - n : 0;
		vc->n_transfer = vc->n_slots ? vc->n_transfer : 0;
	}
	if (vc->n_slots < before)
		strata_warn("%s: %" PRIu64 " MiB free after the expert cache, under [gpu] "
			    "vram_reserve_mib = %" PRIu64 ": the cache shrank to %u slots",
			    c->dev->name, info.mem_free >> 20, vc->o.reserve >> 20, vc->n_slots);
}

static int alloc_host(struct strata_vcache *vc)
{
	const size_t keys = (size_t)vc->n_layer * vc->n_expert, slots = vc->n_slots + vc->n_transfer;

	vc->key = malloc((slots ? slots : 1) * sizeof(*vc->key));
	vc->cnt = calloc(keys ? keys : 1, sizeof(*vc->cnt));
	vc->total = calloc(keys ? keys : 1, sizeof(*vc->total));
	vc->lent = calloc(vc->n_slots + 1, sizeof(*vc->lent));
	vc->lent_key = malloc((vc->n_slots + 1) * sizeof(*vc->lent_key));
	vc->miss = calloc(vc->n_expert, sizeof(*vc->miss));
	if (!vc->key || !vc->cnt || !vc->total || !vc->lent || !vc->lent_key || !vc->miss)
		return -ENOMEM;
	for (size_t s = 0; s < slots; s++)
		vc->key[s] = CTX_NONE;
	return 0;
}

static int make_events(struct strata_ctx *c, struct strata_vcache *vc)
{
	/* a plan copies at most every expert of a layer, three parts each */
	vc->n_ev = 3 * (vc->n_expert + 1);
	vc->ev = calloc(vc->n_ev, sizeof(*vc->ev));
	if (!vc->ev)
		return -ENOMEM;
	for (uint32_t i = 0; i < vc->n_ev; i++) {
		int rc = strata_backend_event_create(c->dev, &vc->ev[i]);

		if (rc)
			return rc;
	}
	return 0;
}

int strata_vcache_create(struct strata_ctx *c, const struct strata_vcache_opts *o,
			 uint64_t *budget_left)
{
	const struct strata_hparams *hp = &c->m->hp;
	struct strata_vcache *vc = calloc(1, sizeof(*vc));
	uint32_t experts = 0;
	int rc;

	if (!vc)
		return -ENOMEM;
	c->vc = vc;
	vc->o = *o;
	vc->o.profile = NULL;
	vc->n_layer = hp->n_layer - hp->n_nextn;
	vc->n_expert = hp->n_expert;
	vc->off = calloc(vc->n_layer ? vc->n_layer : 1, sizeof(*vc->off));
	if (!vc->off || (o->profile_save && !(vc->save_path = strdup(o->profile_save))))
		goto nomem;
	vc->slot_bytes = layout(c, vc);
	for (uint32_t l = 0; l < vc->n_layer; l++)
		experts += dev_layer(c, l) ? vc->n_expert : 0;
	if (!vc->slot_bytes || !(vc->n_slots = size_cache(c, vc, o, *budget_left, experts))) {
		strata_vcache_free(c);
		return 0;
	}
	if ((rc = alloc_slots(c, vc, budget_left)))
		goto fail;
	recheck(c, vc, budget_left);
	if (!vc->n_slots) {
		strata_vcache_free(c);
		return 0;
	}
	if ((rc = alloc_host(vc)) || (rc = make_events(c, vc)))
		goto fail;
	vc->st.slots = vc->n_slots;
	vc->all = vc->n_slots >= experts;
	vc->st.transfer = vc->n_transfer;
	if (o->profile && (rc = read_profile(c, o->profile)))
		goto fail;
	return 0;
nomem:
	rc = -ENOMEM;
fail:
	strata_vcache_free(c);
	return rc;
}

void strata_vcache_free(struct strata_ctx *c)
{
	struct strata_vcache *vc = c->vc;

	if (!vc)
		return;
	(void)strata_backend_sync(c->dev);
	if (vc->save_path && vc->total) {
		FILE *f = fopen(vc->save_path, "w");
		int bad = !f;

		if (f) {
			fprintf(f, "# strata routing profile: layer expert routes\n");
			for (uint32_t k = 0; k < vc->n_layer * vc->n_expert; k++)
				if (vc->total[k])
					fprintf(f, "%u %u %" PRIu64 "\n", k / vc->n_expert,
						k % vc->n_expert, vc->total[k]);
			bad = fclose(f) != 0;
		}
		if (bad)
			strata_error("[gpu] profile_save = %s: cannot write it", vc->save_path);
	}
	for (uint32_t i = 0; vc->ev && i < vc->n_ev; i++)
		if (vc->ev[i])
			strata_backend_event_free(c->dev, vc->ev[i]);
	for (uint32_t i = 0; i < vc->n_bufs; i++)
		strata_backend_buf_free(c->dev, &vc->bufs[i]);
	for (uint32_t l = 0; l < vc->n_layer; l++)
		for (uint32_t x = 0; c->L[l].dev_slot && x < vc->n_expert; x++)
			c->L[l].dev_slot[x] = CTX_NONE;
	free(vc->save_path);
	free(vc->off);
	free(vc->bufs);
	free(vc->key);
	free(vc->cnt);
	free(vc->total);
	free(vc->lent);
	free(vc->lent_key);
	free(vc->miss);
	free(vc->ev);
	free(vc);
	c->vc = NULL;
}

/* ---- a routing profile ----------------------------------------------------------- */

struct prof_entry {
	uint64_t n;
	uint32_t key;
};

/* Most routes first, then the lower key. */
static int prof_cmp(const void *a, const void *b)
{
	const struct prof_entry *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* Parse the file into e[] (one per key, summed); 0 or -EINVAL/-errno (logged). */
static int parse_profile(struct strata_ctx *c, const char *path, struct prof_entry *e)
{
	struct strata_vcache *vc = c->vc;
	FILE *f = fopen(path, "r");
	char line[256];
	unsigned lineno = 0;

	if (!f) {
		int err = errno;

		strata_error("[gpu] profile = %s: %s", path, strerror(err));
		return -err;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned l, x;
		unsigned long long n;
		char extra;
		const char *p = line + strspn(line, " \t");

		lineno++;
		if (*p == '#' || *p == '\n' || !*p)
			continue;
		if (sscanf(p, "%u %u %llu %c", &l, &x, &n, &extra) != 3 || l >= vc->n_layer ||
		    x >= vc->n_expert) {
			strata_error("%s:%u: expected 'layer expert routes' of this model (%u layers, "
				     "%u experts)", path, lineno, vc->n_layer, vc->n_expert);
			fclose(f);
			return -EINVAL;
		}
		e[l * vc->n_expert + x].n += n;
	}
	fclose(f);
	return 0;
}

/* Fill the cache hottest-first from a profile (one sync at the end). */
static int read_profile(struct strata_ctx *c, const char *path)
{
	struct strata_vcache *vc = c->vc;
	const uint32_t keys = vc->n_layer * vc->n_expert;
	struct prof_entry *e = calloc(keys ? keys : 1, sizeof(*e));
	int rc;

	if (!e)
		return -ENOMEM;
	for (uint32_t k = 0; k < keys; k++)
		e[k].key = k;
	if ((rc = parse_profile(c, path, e))) {
		free(e);
		return rc;
	}
	qsort(e, keys, sizeof(*e), prof_cmp);
	for (uint32_t i = 0; i < keys && vc->n_used < vc->n_slots && e[i].n; i++) {
		const uint32_t l = e[i].key / vc->n_expert, x = e[i].key % vc->n_expert;

		if (!dev_layer(c, l))
			continue;
		if ((rc = copy_expert(c, l, x, vc->n_used, 0)))
			break;
		set_slot(c, vc->n_used++, e[i].key);
		vc->cnt[e[i].key] = e[i].n > UINT32_MAX ? UINT32_MAX : (uint32_t)e[i].n;
	}
	free(e);
	vc->st.bytes_in = 0; /* load-time uploads are the link's, not the run's */
	return rc ? rc : strata_backend_sync(c->dev);
}

/* ---- a layer's plan ------------------------------------------------------------------ */

/* Sort the misses: most tokens first, then the lower id (insertion: few, or once a chunk). */
static void sort_misses(uint32_t *m, uint32_t n, const uint32_t *count)
{
	for (uint32_t i = 1; i < n; i++) {
		const uint32_t v = m[i];
		uint32_t j = i;

		while (j && (count[m[j - 1]] < count[v] ||
			     (count[m[j - 1]] == count[v] && m[j - 1] > v))) {
			m[j] = m[j - 1];
			j--;
		}
		m[j] = v;
	}
}

/* Misses m[0..n) to slots: the free cache slots (first use), the borrowed ones, transfers. */
static int place_misses(struct strata_ctx *c, uint32_t l, const uint32_t *m, uint32_t n)
{
	struct strata_vcache *vc = c->vc;
	uint32_t i = 0, pcie, t = 0;
	int rc;

	for (; i < n && !vc->n_lent && vc->n_used < vc->n_slots; i++) {
		const uint32_t s = vc->n_used++;

		if ((rc = copy_expert(c, l, m[i], s, 1)))
			return rc;
		set_slot(c, s, l * vc->n_expert + m[i]);
		c->run_slot[m[i]] = s;
		vc->st.fills++;
	}
	for (; i < n && vc->lent_used < vc->n_lent; i++) {
		const uint32_t s = vc->lent[vc->lent_used++];

		if ((rc = copy_expert(c, l, m[i], s, 1)))
			return rc;
		c->run_slot[m[i]] = s;
		vc->st.lent++;
	}
	/* of what is left, pcie_frac's share over the link (rounded to nearest) */
	pcie = (uint32_t)floor((n - i) * vc->o.pcie_frac + 0.5);
	for (; t < pcie && t < vc->n_transfer; t++, i++) {
		const uint32_t s = vc->n_slots + t;

		if ((rc = copy_expert(c, l, m[i], s, 1)))
			return rc;
		vc->key[s] = CTX_NONE;
		c->run_slot[m[i]] = s;
		vc->st.pcie++;
	}
	return 0;
}

int strata_vcache_plan(struct strata_ctx *c, uint32_t l, const uint32_t *count)
{
	struct strata_vcache *vc = c->vc;
	const uint32_t *slot = c->L[l].dev_slot;
	uint32_t nm = 0;

	for (uint32_t x = 0; x < c->m->hp.n_expert; x++)
		c->run_slot[x] = CTX_NONE;
	if (!vc || l >= vc->n_layer || !dev_layer(c, l))
		return 0; /* the device lacks a weight type of its experts: all on the CPU */
	if (vc->trace)
		vc->trace(vc->trace_user, l, count, vc->n_expert);
	vc->lent_used = 0; /* the layer before is done with the borrowed slots */
	for (uint32_t x = 0; x < vc->n_expert; x++) {
		const uint32_t k = l * vc->n_expert + x;

		if (!count[x])
			continue;
		vc->cnt[k] = vc->cnt[k] > UINT32_MAX - count[x] ? UINT32_MAX : vc->cnt[k] + count[x];
		vc->total[k] += count[x];
		if (slot[x] != CTX_NONE) {
			c->run_slot[x] = slot[x];
			vc->st.hits += count[x];
		} else {
			vc->miss[nm++] = x;
			vc->st.misses += count[x];
		}
	}
	sort_misses(vc->miss, nm, count);
	return place_misses(c, l, vc->miss, nm);
}

/* ---- lending, refilling, adapting ------------------------------------------------ */

struct slot_rank {
	uint32_t cnt, slot;
};

/* Free slots first (count 0 below every resident), then the least routed, then the lower slot. */
static int rank_cmp(const void *a, const void *b)
{
	const struct slot_rank *x = a, *y = b;

	if (x->cnt != y->cnt)
		return x->cnt < y->cnt ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Borrow up to lend_frac of the slots (keeping lend_keep) for a batched pass. */
static int lend(struct strata_ctx *c)
{
	struct strata_vcache *vc = c->vc;
	const uint32_t by_frac = (uint32_t)floor(vc->o.lend_frac * vc->n_slots);
	const uint32_t by_keep = vc->n_slots > vc->o.lend_keep ? vc->n_slots - vc->o.lend_keep : 0;
	const uint32_t n = by_frac < by_keep ? by_frac : by_keep;
	struct slot_rank *r;

	if (!n)
		return 0;
	if (!(r = malloc(vc->n_slots * sizeof(*r))))
		return -ENOMEM;
	for (uint32_t s = 0; s < vc->n_slots; s++)
		r[s] = (struct slot_rank){ vc->key[s] == CTX_NONE ? 0 : vc->cnt[vc->key[s]] + 1, s };
	qsort(r, vc->n_slots, sizeof(*r), rank_cmp);
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t s = r[i].slot;

		vc->lent_key[s] = vc->key[s];
		set_slot(c, s, CTX_NONE);
		vc->lent[i] = s;
	}
	vc->n_lent = n;
	vc->lent_used = 0;
	vc->st.lends++;
	free(r);
	return 0;
}

/* The borrowed slots get their experts back: queued copies, one sync. */
static int refill(struct strata_ctx *c)
{
	struct strata_vcache *vc = c->vc;
	const uint64_t t0 = strata_now_ns(), b0 = vc->st.bytes_in;
	int rc = 0;

	for (uint32_t i = 0; i < vc->n_lent; i++) {
		const uint32_t s = vc->lent[i], k = vc->lent_key[s];

		if (k == CTX_NONE) {
			set_slot(c, s, CTX_NONE);
			continue;
		}
		if (!rc)
			rc = copy_expert(c, k / vc->n_expert, k % vc->n_expert, s, 0);
		set_slot(c, s, k);
		vc->st.refills++;
	}
	vc->n_lent = 0;
	if (!rc)
		rc = strata_backend_sync(c->dev);
	vc->st.refill_bytes += vc->st.bytes_in - b0;
	vc->st.refill_ms += (double)(strata_now_ns() - t0) / 1e6;
	return rc;
}

/* The non-resident expert of a device layer routed most (ties: the lower key), or CTX_NONE. */
static uint32_t best_outside(const struct strata_ctx *c)
{
	const struct strata_vcache *vc = c->vc;
	uint32_t best = CTX_NONE;

	for (uint32_t l = 0; l < vc->n_layer; l++) {
		if (!dev_layer(c, l))
			continue;
		for (uint32_t x = 0; x < vc->n_expert; x++) {
			const uint32_t k = l * vc->n_expert + x;

			if (c->L[l].dev_slot[x] == CTX_NONE && vc->cnt[k] &&
			    (best == CTX_NONE || vc->cnt[k] > vc->cnt[best]))
				best = k;
		}
	}
	return best;
}

/* The cache slot whose expert is routed least (a free slot first; ties: the lower slot). */
static uint32_t worst_inside(const struct strata_vcache *vc, uint32_t *cnt)
{
	uint32_t worst = 0;

	*cnt = UINT32_MAX;
	for (uint32_t s = 0; s < vc->n_slots; s++) {
		const uint32_t n = vc->key[s] == CTX_NONE ? 0 : vc->cnt[vc->key[s]];

		if (vc->key[s] == CTX_NONE && s >= vc->n_used)
			continue; /* never filled: first use fills it */
		if (n < *cnt) {
			*cnt = n;
			worst = s;
		}
	}
	return worst;
}

/*
 * One adaptive round: up to adapt_swaps times, the non-resident expert
 * routed most replaces the resident one routed least, when it was routed
 * more; then the counts are halved.
 */
static int adapt(struct strata_ctx *c)
{
	struct strata_vcache *vc = c->vc;
	int rc;

	for (uint32_t i = 0; i < vc->o.adapt_swaps; i++) {
		const uint32_t k = best_outside(c);
		uint32_t low, s;

		if (k == CTX_NONE)
			break;
		s = worst_inside(vc, &low);
		if (low == UINT32_MAX || vc->cnt[k] <= low)
			break;
		if ((rc = copy_expert(c, k / vc->n_expert, k % vc->n_expert, s, 1)))
			return rc;
		set_slot(c, s, k);
		vc->st.swaps++;
	}
	for (uint32_t k = 0; k < vc->n_layer * vc->n_expert; k++)
		vc->cnt[k] >>= 1;
	return 0;
}

int strata_vcache_pass_begin(struct strata_ctx *c, uint32_t n)
{
	struct strata_vcache *vc = c->vc;

	if (!vc)
		return 0;
	/* a cache that holds every expert has nothing to lend for */
	if (vc->o.lend_min && n >= vc->o.lend_min && !vc->all)
		return vc->n_lent ? 0 : lend(c);
	if (vc->n_lent)
		return refill(c);
	if (vc->o.adapt_every && vc->since_adapt >= vc->o.adapt_every) {
		vc->since_adapt = 0;
		return adapt(c);
	}
	return 0;
}

void strata_vcache_pass_end(struct strata_ctx *c, uint32_t n)
{
	if (c->vc && !c->vc->n_lent)
		c->vc->since_adapt += n;
}

void strata_vcache_stats(const struct strata_ctx *c, struct strata_vcache_stats *st)
{
	if (!c->vc) {
		memset(st, 0, sizeof(*st));
		return;
	}
	*st = c->vc->st;
	st->used = 0;
	for (uint32_t s = 0; s < c->vc->n_slots; s++)
		st->used += c->vc->key[s] != CTX_NONE;
	st->lent_now = c->vc->n_lent;
}

void strata_vcache_set_trace(struct strata_ctx *c, strata_vcache_trace_fn fn, void *user)
{
	if (c->vc) {
		c->vc->trace = fn;
		c->vc->trace_user = user;
	}
}

uint32_t strata_vcache_keys(const struct strata_ctx *c, uint32_t *keys, uint32_t n)
{
	const struct strata_vcache *vc = c->vc;
	uint32_t i = 0;

	for (; vc && i < n && i < vc->n_slots; i++)
		keys[i] = vc->key[i];
	return i;
}
