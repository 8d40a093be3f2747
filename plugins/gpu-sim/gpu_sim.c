/*
 * gpu_sim.c - gpu-sim, a simulated compute device (tests and benchmarks).
 *
 * It implements include/strata/backend.h the way a GPU plugin does, so the
 * hybrid path (dense weights and the KV cache on the device, experts that do
 * not fit on the CPU) runs and is tested on a machine without a GPU:
 *
 *   - its own memory, a budget of [gpu-sim] vram_mib; buffer addresses are
 *     "device addresses" the core cannot dereference (they are offset into
 *     non-canonical space: a core that touched one would crash at once);
 *   - a link to the host of link_gbps and latency_us: every copy sleeps for
 *     what it would take, on a copy engine of its own (copy_in) or in the
 *     compute queue (copy_out), so copies overlap compute only where the
 *     core arranged it with events;
 *   - an in-order compute queue run by a device thread with its own kernels
 *     (the CPU kernels, linked in from strata_kernels) on `threads` threads;
 *   - faults for tests: missing_ops / missing_types (supports() says no),
 *     fail_alloc_after, fail_copy_after, fail_run_after (every call from
 *     the N-th on fails, as a device that ran out or broke; copies are
 *     counted from the first op on, so uploads at load do not count; 0 =
 *     never), fail_alloc_nth (the N-th allocation alone fails, as on a
 *     device whose memory is fragmented).
 *
 * Built beside the shipped plugins (plugins/test/), and its probe says 0
 * unless [gpu] plugin names it (or [gpu-sim] auto = true, for tests of the
 * auto path), so `[gpu] plugin = auto` never picks it; name it in [gpu]
 * plugin with --plugin-dir.  Variants built
 * from this file for the loader's refusals: GS_PROBE0, GS_OPS0, GS_NORUN.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "backend/exec.h"
#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "strata/backend.h"
#include "strata/plugin.h"

#ifndef GS_NAME
#define GS_NAME "gpu-sim"
#endif

/* Device addresses: real ones moved into non-canonical space. */
#define GS_BIAS ((uintptr_t)1 << 62)

struct gs_event {
	int done;   /* reached */
	int armed;  /* recorded or given to a copy since */
};

enum gs_kind { GS_OP, GS_OUT, GS_RECORD, GS_WAIT };

#define GS_MAX_T (STRATA_OP_MAX_SRC + 3)

/* A queued item; an op keeps translated copies of everything it points to. */
struct gs_item {
	struct gs_item *next;
	enum gs_kind kind;
	struct gs_event *ev;
	/* GS_OP */
	struct strata_op op;
	struct strata_tensor t[GS_MAX_T];
	struct strata_buf b[GS_MAX_T];
	struct strata_matmul_item *mm;
	struct strata_tensor *mt;
	struct strata_buf *mb;
	/* GS_OUT */
	const void *src;
	void *dst;
	size_t n;
	int *done; /* blocking copy_out: set when it ran */
};

struct gs_queue {
	struct gs_item *head, *tail;
};

struct gs_dev {
	const struct strata_host *host;
	uint64_t vram, used;
	double link_bps;
	uint64_t latency_ns;
	struct strata_pool *pool;
	struct strata_exec *x;
	uint8_t missing_op[STRATA_OP_COUNT], missing_type[STRATA_TYPE_COUNT];
	long fail_alloc_after, fail_copy_after, fail_run_after;
	long fail_alloc_nth; /* only this allocation fails (a device that is fragmented) */
	long n_alloc, n_copy, n_run;
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* work queued, an event reached, work finished */
	struct gs_queue compute, copies;
	int busy_compute, busy_copy;
	int stop;
	int err;                 /* sticky: the first failure since synchronize() */
	pthread_t th_compute, th_copy;
};

static uint64_t cfg_u64(const struct strata_host *h, const char *key, uint64_t def)
{
	const char *v = h->config_get(h, NULL, key);

	return v && *v ? strtoull(v, NULL, 10) : def;
}

static void *dev_ptr(const void *real)
{
	return (void *)((uintptr_t)real + GS_BIAS);
}

static void *real_ptr(const void *dev)
{
	return (void *)((uintptr_t)dev - GS_BIAS);
}

/* Sleep what n bytes take over the link. */
static void link_wait(const struct gs_dev *d, size_t n)
{
	uint64_t ns = d->latency_ns + (uint64_t)((double)n / d->link_bps * 1e9);
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };

	while (ns && nanosleep(&ts, &ts))
		;
}

static void fail(struct gs_dev *d, int err)
{
	if (!d->err)
		d->err = err;
}

/* ---- the two engines ---------------------------------------------------------- */

static void push(struct gs_queue *q, struct gs_item *it)
{
	it->next = NULL;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
}

static struct gs_item *pop(struct gs_queue *q)
{
	struct gs_item *it = q->head;

	if (it && !(q->head = it->next))
		q->tail = NULL;
	return it;
}

static void item_free(struct gs_item *it)
{
	free(it->mm);
	free(it->mt);
	free(it->mb);
	free(it);
}

static void reach(struct gs_dev *d, struct gs_event *ev)
{
	if (ev)
		ev->done = 1;
	pthread_cond_broadcast(&d->cv);
}

/* Run one compute item (mu held on entry and exit). */
static void run_item(struct gs_dev *d, struct gs_item *it)
{
	int rc = 0;

	switch (it->kind) {
	case GS_WAIT: /* an event never armed (its copy was refused) is not waited for */
		while (it->ev->armed && !it->ev->done && !d->stop)
			pthread_cond_wait(&d->cv, &d->mu);
		return;
	case GS_RECORD:
		reach(d, it->ev);
		return;
	case GS_OP:
		pthread_mutex_unlock(&d->mu);
		if (!d->err)
			rc = strata_exec_run(d->x, &it->op);
		pthread_mutex_lock(&d->mu);
		break;
	case GS_OUT:
		pthread_mutex_unlock(&d->mu);
		if (!d->err) {
			link_wait(d, it->n);
			memcpy(it->dst, it->src, it->n);
		}
		pthread_mutex_lock(&d->mu);
		if (it->done)
			*it->done = 1;
		reach(d, it->ev);
		break;
	}
	if (rc)
		fail(d, rc);
}

static void *compute_main(void *arg)
{
	struct gs_dev *d = arg;

	pthread_mutex_lock(&d->mu);
	for (;;) {
		struct gs_item *it = pop(&d->compute);

		if (!it) {
			if (d->stop)
				break;
			pthread_cond_wait(&d->cv, &d->mu);
			continue;
		}
		d->busy_compute = 1;
		run_item(d, it);
		d->busy_compute = 0;
		item_free(it);
		pthread_cond_broadcast(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

static void *copy_main(void *arg)
{
	struct gs_dev *d = arg;

	pthread_mutex_lock(&d->mu);
	for (;;) {
		struct gs_item *it = pop(&d->copies);

		if (!it) {
			if (d->stop)
				break;
			pthread_cond_wait(&d->cv, &d->mu);
			continue;
		}
		d->busy_copy = 1;
		pthread_mutex_unlock(&d->mu);
		link_wait(d, it->n);
		memcpy(it->dst, it->src, it->n);
		pthread_mutex_lock(&d->mu);
		d->busy_copy = 0;
		reach(d, it->ev);
		item_free(it);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* Everything queued is done (mu held). */
static void drain(struct gs_dev *d)
{
	while (d->compute.head || d->copies.head || d->busy_compute || d->busy_copy)
		pthread_cond_wait(&d->cv, &d->mu);
}

/* ---- the ops table ------------------------------------------------------------- */

/*
 * Usable only when [gpu] plugin names it: a simulated device must never be
 * what `[gpu] plugin = auto` finds, even with plugins/test on the search path.
 */
static int gs_probe(const struct strata_host *host)
{
#ifdef GS_PROBE0
	(void)host;
	return 0;
#else
	const char *want, *autop;

	if (!host || host->version < 1)
		return 0;
	want = host->config_get(host, "gpu", "plugin");
	autop = host->config_get(host, NULL, "auto");
	/* [gpu-sim] auto = true: tests of `[gpu] plugin = auto` may find it */
	return (want && !strcmp(want, GS_NAME)) || (autop && !strcmp(autop, "true")) ? 1 : 0;
#endif
}

/* A comma-separated list of names into a flag table. */
static void parse_list(const char *v, uint8_t *flags, int n, const char *(*name)(uint32_t))
{
	char item[32];

	while (v && *v) {
		size_t len = strcspn(v, ", ");

		if (len && len < sizeof(item)) {
			memcpy(item, v, len);
			item[len] = 0;
			for (int i = 0; i < n; i++)
				if (!strcasecmp(item, name((uint32_t)i)))
					flags[i] = 1;
		}
		v += len;
		v += strspn(v, ", ");
	}
}

static const char *type_name(uint32_t t)
{
	return strata_type_name(t);
}

static void gs_close(void *dev);

static int gs_open(const struct strata_host *host, void **out)
{
	struct gs_dev *d = calloc(1, sizeof(*d));
	int threads;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	d->host = host;
	d->vram = cfg_u64(host, "vram_mib", 1024) << 20;
	d->link_bps = (double)cfg_u64(host, "link_gbps", 16) * 1e9;
	d->latency_ns = cfg_u64(host, "latency_us", 10) * 1000;
	d->fail_alloc_after = (long)cfg_u64(host, "fail_alloc_after", 0);
	d->fail_alloc_nth = (long)cfg_u64(host, "fail_alloc_nth", 0);
	d->fail_copy_after = (long)cfg_u64(host, "fail_copy_after", 0);
	d->fail_run_after = (long)cfg_u64(host, "fail_run_after", 0);
	threads = (int)cfg_u64(host, "threads", 1);
	parse_list(host->config_get(host, NULL, "missing_ops"), d->missing_op, STRATA_OP_COUNT,
		   strata_op_name);
	parse_list(host->config_get(host, NULL, "missing_types"), d->missing_type,
		   STRATA_TYPE_COUNT, type_name);
	if (d->link_bps <= 0)
		d->link_bps = 1e9;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	if ((threads > 1 && strata_pool_create(threads, &d->pool)) ||
	    strata_exec_create(d->pool, &d->x) ||
	    pthread_create(&d->th_compute, NULL, compute_main, d)) {
		strata_pool_free(d->pool);
		strata_exec_free(d->x);
		free(d);
		return -ENOMEM;
	}
	if (pthread_create(&d->th_copy, NULL, copy_main, d)) {
		gs_close(d);
		return -ENOMEM;
	}
	host->log(host, STRATA_LOG_INFO, "simulated device: %llu MiB, link %.0f GB/s + %llu us, "
		  "%d thread%s", (unsigned long long)(d->vram >> 20), d->link_bps / 1e9,
		  (unsigned long long)(d->latency_ns / 1000), threads, threads == 1 ? "" : "s");
	*out = d;
	return 0;
}

static void gs_close(void *dev)
{
	struct gs_dev *d = dev;

	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	drain(d);
	d->stop = 1;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->th_compute, NULL);
	if (d->th_copy)
		pthread_join(d->th_copy, NULL);
	strata_exec_free(d->x);
	strata_pool_free(d->pool);
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static int gs_info(void *dev, struct strata_device_info *info)
{
	struct gs_dev *d = dev;

	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s (simulated, %llu MiB)", GS_NAME,
		 (unsigned long long)(d->vram >> 20));
	pthread_mutex_lock(&d->mu);
	info->mem_total = d->vram;
	info->mem_free = d->vram - d->used;
	pthread_mutex_unlock(&d->mu);
	return 0;
}

static int gs_supports(void *dev, uint32_t code, uint32_t type)
{
	struct gs_dev *d = dev;

	if (code >= STRATA_OP_COUNT || type >= STRATA_TYPE_COUNT)
		return 0;
	return strata_exec_supports(code, type) && !d->missing_op[code] && !d->missing_type[type];
}

static int gs_buf_alloc(void *dev, size_t size, uint32_t usage, struct strata_buf *buf)
{
	struct gs_dev *d = dev;
	void *p = NULL;
	int rc = 0;

	memset(buf, 0, sizeof(*buf));
	pthread_mutex_lock(&d->mu);
	d->n_alloc++;
	if ((d->fail_alloc_after && d->n_alloc >= d->fail_alloc_after) ||
	    d->n_alloc == d->fail_alloc_nth || size > d->vram - d->used)
		rc = -ENOMEM;
	else if (posix_memalign(&p, 256, size ? size : 256))
		rc = -ENOMEM;
	else
		d->used += size;
	pthread_mutex_unlock(&d->mu);
	if (rc)
		return rc;
	*buf = (struct strata_buf){ .base = dev_ptr(p), .size = size, .usage = usage, .priv = p };
	return 0;
}

static void gs_buf_free(void *dev, struct strata_buf *buf)
{
	struct gs_dev *d = dev;

	pthread_mutex_lock(&d->mu);
	drain(d); /* queued work may still use it */
	d->used -= buf->size;
	pthread_mutex_unlock(&d->mu);
	free(buf->priv);
	memset(buf, 0, sizeof(*buf));
}

/*
 * A copy's turn in the fault count, which starts with the first op (so a
 * model's uploads at load do not count); -EIO from the N-th copy on.
 */
static int copy_fault(struct gs_dev *d)
{
	d->n_copy += d->n_run > 0;
	return d->fail_copy_after && d->n_copy >= d->fail_copy_after ? -EIO : 0;
}

static int gs_copy_in(void *dev, struct strata_buf *buf, size_t off, const void *src, size_t n,
		      void *ev)
{
	struct gs_dev *d = dev;
	struct gs_item *it;
	struct gs_event *e = ev, own = { 0, 1 };
	int rc;

	if (off > buf->size || n > buf->size - off)
		return -EINVAL;
	if (!(it = calloc(1, sizeof(*it))))
		return -ENOMEM;
	it->src = src;
	it->dst = (char *)buf->priv + off;
	it->n = n;
	pthread_mutex_lock(&d->mu);
	if ((rc = copy_fault(d))) {
		pthread_mutex_unlock(&d->mu);
		free(it);
		return rc;
	}
	if (e) {
		e->done = 0;
		e->armed = 1;
	}
	it->ev = e ? e : &own; /* blocking: an event of its own */
	push(&d->copies, it);
	pthread_cond_broadcast(&d->cv);
	while (!e && !own.done)
		pthread_cond_wait(&d->cv, &d->mu);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

static int gs_copy_out(void *dev, const struct strata_buf *buf, size_t off, void *dst, size_t n,
		       void *ev)
{
	struct gs_dev *d = dev;
	struct gs_item *it;
	struct gs_event *e = ev;
	int done = 0, rc;

	if (off > buf->size || n > buf->size - off)
		return -EINVAL;
	if (!(it = calloc(1, sizeof(*it))))
		return -ENOMEM;
	it->kind = GS_OUT;
	it->src = (const char *)buf->priv + off;
	it->dst = dst;
	it->n = n;
	it->done = e ? NULL : &done;
	pthread_mutex_lock(&d->mu);
	if ((rc = copy_fault(d))) {
		pthread_mutex_unlock(&d->mu);
		free(it);
		return rc;
	}
	if (e) {
		e->done = 0;
		e->armed = 1;
		it->ev = e;
	}
	push(&d->compute, it);
	pthread_cond_broadcast(&d->cv);
	while (!e && !done)
		pthread_cond_wait(&d->cv, &d->mu);
	rc = e ? 0 : d->err;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

/* Copy t into slot k of it, its buffer translated to the real address. */
static const struct strata_tensor *xlate(struct strata_tensor *t, struct strata_buf *b,
					 const struct strata_tensor *src)
{
	if (!src)
		return NULL;
	*t = *src;
	if (src->buf) {
		*b = *src->buf;
		/* a device buffer (priv: the real memory) or host memory the core lent */
		b->base = src->buf->flags & STRATA_BUF_HOST ? src->buf->base : real_ptr(src->buf->base);
		t->buf = b;
	}
	return t;
}

static struct gs_item *op_item(const struct strata_op *op)
{
	struct gs_item *it = calloc(1, sizeof(*it));
	uint32_t n = op->code == STRATA_OP_MATMUL ? op->p.mm.n_items : 0;

	if (!it)
		return NULL;
	it->kind = GS_OP;
	it->op = *op;
	for (int i = 0; i < STRATA_OP_MAX_SRC; i++)
		it->op.src[i] = xlate(&it->t[i], &it->b[i], op->src[i]);
	it->op.dst = (struct strata_tensor *)xlate(&it->t[STRATA_OP_MAX_SRC],
						   &it->b[STRATA_OP_MAX_SRC], op->dst);
	it->op.aux = (struct strata_tensor *)xlate(&it->t[STRATA_OP_MAX_SRC + 1],
						   &it->b[STRATA_OP_MAX_SRC + 1], op->aux);
	if (op->code == STRATA_OP_DELTANET || op->code == STRATA_OP_DELTANET_TILED)
		it->op.p.dn.norm = xlate(&it->t[STRATA_OP_MAX_SRC + 2],
					 &it->b[STRATA_OP_MAX_SRC + 2], op->p.dn.norm);
	if (!n)
		return it;
	it->mm = calloc(n, sizeof(*it->mm));
	it->mt = calloc(4 * (size_t)n, sizeof(*it->mt));
	it->mb = calloc(4 * (size_t)n, sizeof(*it->mb));
	if (!it->mm || !it->mt || !it->mb) {
		item_free(it);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct strata_matmul_item *s = &op->p.mm.items[i];

		it->mm[i].w = xlate(&it->mt[4 * i], &it->mb[4 * i], s->w);
		it->mm[i].x = xlate(&it->mt[4 * i + 1], &it->mb[4 * i + 1], s->x);
		it->mm[i].rows = xlate(&it->mt[4 * i + 2], &it->mb[4 * i + 2], s->rows);
		it->mm[i].y = (struct strata_tensor *)xlate(&it->mt[4 * i + 3], &it->mb[4 * i + 3],
							    s->y);
	}
	it->op.p.mm.items = it->mm;
	return it;
}

#ifdef GS_NORUN
__attribute__((unused))
#endif
static int gs_run(void *dev, const struct strata_op *op)
{
	struct gs_dev *d = dev;
	struct gs_item *it;
	int rc = 0;

	if (op->code >= STRATA_OP_COUNT || d->missing_op[op->code])
		return -ENOTSUP;
	if (!(it = op_item(op)))
		return -ENOMEM;
	pthread_mutex_lock(&d->mu);
	d->n_run++;
	if (d->fail_run_after && d->n_run >= d->fail_run_after)
		rc = -EIO;
	else if (d->err)
		rc = d->err;
	if (rc) {
		pthread_mutex_unlock(&d->mu);
		item_free(it);
		return rc;
	}
	push(&d->compute, it);
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

static int gs_event_create(void *dev, void **ev)
{
	struct gs_event *e = calloc(1, sizeof(*e));

	(void)dev;
	*ev = e;
	return e ? 0 : -ENOMEM;
}

static void gs_event_free(void *dev, void *ev)
{
	struct gs_dev *d = dev;

	pthread_mutex_lock(&d->mu);
	drain(d); /* an item may still signal it */
	pthread_mutex_unlock(&d->mu);
	free(ev);
}

/* Queue a compute item that records or waits for ev. */
static int queue_event(struct gs_dev *d, struct gs_event *e, enum gs_kind kind)
{
	struct gs_item *it = calloc(1, sizeof(*it));

	if (!it)
		return -ENOMEM;
	it->kind = kind;
	it->ev = e;
	pthread_mutex_lock(&d->mu);
	if (kind == GS_RECORD) {
		e->done = 0;
		e->armed = 1;
	}
	push(&d->compute, it);
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

static int gs_record(void *dev, void *ev)
{
	return queue_event(dev, ev, GS_RECORD);
}

static int gs_wait(void *dev, void *ev)
{
	return queue_event(dev, ev, GS_WAIT);
}

static int gs_sync_event(void *dev, void *ev)
{
	struct gs_dev *d = dev;
	struct gs_event *e = ev;
	int rc;

	pthread_mutex_lock(&d->mu);
	while (e->armed && !e->done)
		pthread_cond_wait(&d->cv, &d->mu);
	rc = d->err;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static int gs_synchronize(void *dev)
{
	struct gs_dev *d = dev;
	int rc;

	pthread_mutex_lock(&d->mu);
	drain(d);
	rc = d->err;
	d->err = 0;
	pthread_mutex_unlock(&d->mu);
	return rc;
}

static const struct strata_backend_ops g_ops = {
#ifdef GS_OPS0
	.version = 0,
#else
	.version = STRATA_BACKEND_OPS_VERSION,
#endif
	.open = gs_open,
	.close = gs_close,
	.info = gs_info,
	.supports = gs_supports,
	.buf_alloc = gs_buf_alloc,
	.buf_free = gs_buf_free,
	.copy_in = gs_copy_in,
	.copy_out = gs_copy_out,
#ifndef GS_NORUN
	.run = gs_run,
#endif
	.event_create = gs_event_create,
	.event_free = gs_event_free,
	.record_event = gs_record,
	.wait_event = gs_wait,
	.sync_event = gs_sync_event,
	.synchronize = gs_synchronize,
};

static const char *const g_keys[] = {
	"vram_mib", "link_gbps", "latency_us", "threads", "missing_ops", "missing_types",
	"fail_alloc_after", "fail_alloc_nth", "fail_copy_after", "fail_run_after", "auto", NULL,
};

static const struct strata_plugin_desc g_desc = {
	.abi = STRATA_PLUGIN_ABI_NEEDS(2),
	.kind = STRATA_PLUGIN_GPU,
	.name = GS_NAME,
	.version = "1.0.0",
	.description = "simulated device: own memory and kernels, a timed host link (tests)",
	.probe = gs_probe,
	.ops = &g_ops,
	.config_keys = g_keys,
};

STRATA_PLUGIN_DEFINE(g_desc)
