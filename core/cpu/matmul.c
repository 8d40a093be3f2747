/*
 * matmul.c - the matmul driver: how a product (strata_matmul) or a batch of
 * them (strata_matmul_many) is cut into pieces for the pool's threads, and
 * the activations each needs quantised once.
 *
 * The matrices of small models are tiny, so a GEMV of 64x64 runs inline on
 * the caller (no thread wake-up).  Products whose tokens fit one block
 * (decode, short batches) share their row groups by ranges the threads
 * steal from (steal.h); longer prompts are cut into token blocks x row
 * ranges, about four chunks per thread, handed out through an atomic
 * counter so that a worker that wakes late simply takes fewer.  The kernels
 * themselves are the level tables' (kernels.c, kernels_impl.h).
 */
#define _GNU_SOURCE
#include "kernels.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_impl.h"
#include "pool.h"
#include "steal.h"
#include "util/log.h"
#include "util/mem.h"

/* Below this many multiply-adds per thread, another thread costs more than
 * it saves (dispatch ~1 us, a cache line or two of traffic).  A MoE router
 * at one token (64 x 1024 F32: 256 KB read) is worth two. */
#define MM_MIN_MACS_PER_THREAD ((int64_t)1 << 15)
/* Tokens of activations one chunk keeps hot in L2 while rows stream by. */
#define MM_ACT_BLOCK_BYTES ((size_t)256 << 10)
/* Chunks per thread where the counter hands them out (prompts; one token
 * only past STRATA_STEAL_MAX threads or in mixed batches).  One token reads
 * each matrix once, and longer shares keep each thread's rows one stream for
 * the prefetchers (bench-qwen3moe Q4_K_M tg64, 2 threads, AVX-512,
 * alternated: 1 chunk a thread 301-310 tok/s, 2: 301-305, 4: 297-303, 8:
 * 292-297); two leave a share to take over from a thread that falls behind.
 * Stealing (steal.h) keeps the long streams and ends evenly: tg64 +6.5%
 * (AVX-512 Q4_K_M), +5.7% (AVX2 Q4_K_M), +3.3% (AVX2 Q8_0) over two chunks,
 * medians of five alternated pairs, Zen 5. */
#define MM_CHUNKS_PER_THREAD 4
#define MM_CHUNKS_PER_THREAD_1TOK 2

static int64_t chunks_per_thread(int64_t n_tok)
{
	return n_tok == 1 ? MM_CHUNKS_PER_THREAD_1TOK : MM_CHUNKS_PER_THREAD;
}
/* Quantise activations on several threads from this many values up. */
#define MM_PAR_QUANT_VALUES ((int64_t)1 << 15)

/* ---- scratch for callers without a pool ----------------------------------- */

struct tls_scratch {
	void *p;
	size_t n;
};

/* Two per-thread buffers: activations, and strata_matmul_many's plan. */
enum { TLS_ACT, TLS_MANY, TLS_N };

static pthread_key_t g_tls_key[TLS_N];
static pthread_once_t g_tls_once = PTHREAD_ONCE_INIT;

static void tls_free(void *v)
{
	struct tls_scratch *s = v;

	strata_aligned_free(s->p);
	free(s);
}

static void tls_init(void)
{
	for (int i = 0; i < TLS_N; i++)
		pthread_key_create(&g_tls_key[i], tls_free);
}

/* A 64-byte aligned buffer of at least `bytes`, kept per thread and freed
 * when the thread exits; its contents do not survive growth. */
static void *tls_buf(int which, size_t bytes)
{
	struct tls_scratch *s;

	pthread_once(&g_tls_once, tls_init);
	s = pthread_getspecific(g_tls_key[which]);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || pthread_setspecific(g_tls_key[which], s)) {
			free(s);
			return NULL;
		}
	}
	if (bytes > s->n) {
		void *p;

		p = strata_aligned_alloc(64, bytes);
		if (!p)
			return NULL;
		strata_aligned_free(s->p);
		s->p = p;
		s->n = bytes;
	}
	return s->p;
}

static void *tls_scratch(size_t bytes)
{
	return tls_buf(TLS_ACT, bytes);
}

/* ---- matmul ------------------------------------------------------------- */

struct quant_job {
	void (*quantize)(const float *x, void *dst, int64_t k);
	const float *x;
	int64_t ldx, k, n_tok;
	uint8_t *dst;
	size_t stride;
};

static void quant_task(void *arg, int ith, int nth)
{
	const struct quant_job *q = arg;
	long b, e;

	strata_split((long)q->n_tok, ith, nth, &b, &e);
	for (long t = b; t < e; t++)
		q->quantize(q->x + t * q->ldx, q->dst + (size_t)t * q->stride, q->k);
}

struct mm_job {
	strata_mm_fn mm;
	struct strata_mm_args base; /* the whole product; chunks narrow it */
	int64_t rows, n_tok;
	int64_t rchunk, tchunk, n_rchunks, n_chunks;
	_Alignas(64) _Atomic int64_t next;
};

#define MM_GROUP 16 /* rows a stolen piece is counted in (every layout's group) */

/* Rows [r0, r1) of a job whose tokens are one block. */
static void mm_rows(const struct mm_job *j, int64_t r0, int64_t r1)
{
	struct strata_mm_args a = j->base;

	a.nr = r1 - r0;
	a.nt = j->n_tok;
	a.w += (size_t)r0 * a.w_stride;
	a.y += r0;
	j->mm(&a);
}

/* Pieces of at least 2^15 multiply-adds (a decode row group of a 2048-wide
 * Q4_K matrix is 18 KB, ~0.5 us): the claim costs no more than that. */
static int64_t steal_min_piece(int64_t k, int64_t n_tok)
{
	const int64_t per = MM_GROUP * k * n_tok;

	return per >= MM_MIN_MACS_PER_THREAD ? 1 : (MM_MIN_MACS_PER_THREAD + per - 1) / per;
}

struct mm_steal_job {
	const struct mm_job *j;
	struct strata_steal st;
};

static void mm_steal_task(void *arg, int ith, int nth)
{
	struct mm_steal_job *sj = arg;
	int64_t g0, g1;

	(void)nth;
	while (strata_steal_next(&sj->st, ith, &g0, &g1))
		mm_rows(sj->j, g0 * MM_GROUP,
			g1 * MM_GROUP < sj->j->rows ? g1 * MM_GROUP : sj->j->rows);
}

static void mm_chunk(const struct mm_job *j, int64_t c)
{
	struct strata_mm_args a = j->base;
	int64_t r0 = (c % j->n_rchunks) * j->rchunk;
	int64_t t0 = (c / j->n_rchunks) * j->tchunk;

	a.nr = j->rows - r0 < j->rchunk ? j->rows - r0 : j->rchunk;
	a.nt = j->n_tok - t0 < j->tchunk ? j->n_tok - t0 : j->tchunk;
	a.w += (size_t)r0 * a.w_stride;
	a.x += (size_t)t0 * a.x_stride;
	a.y += t0 * a.ldy + r0;
	j->mm(&a);
}

static void mm_task(void *arg, int ith, int nth)
{
	struct mm_job *j = arg;

	for (int64_t c = ith; c < j->n_chunks;
	     c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed))
		mm_chunk(j, c);
}

/* Cut rows x tokens into about `want` chunks: token blocks that stay in
 * L2, and row ranges (multiples of 16) for the rest. */
static void mm_plan_n(struct mm_job *j, int64_t want)
{
	int64_t per_block, n_tblocks, rparts;

	/* x_stride is 0 when a single token is passed with ldx = 0 */
	per_block = j->base.x_stride ? (int64_t)(MM_ACT_BLOCK_BYTES / j->base.x_stride)
				     : j->n_tok;
	if (per_block < 4)
		per_block = 4;
	else
		per_block &= ~(int64_t)3;
	j->tchunk = j->n_tok < per_block ? j->n_tok : per_block;
	n_tblocks = (j->n_tok + j->tchunk - 1) / j->tchunk;
	rparts = (want + n_tblocks - 1) / n_tblocks;
	j->rchunk = (j->rows + rparts - 1) / rparts;
	j->rchunk = (j->rchunk + 15) & ~(int64_t)15;
	if (j->rchunk > j->rows)
		j->rchunk = j->rows;
	j->n_rchunks = (j->rows + j->rchunk - 1) / j->rchunk;
	j->n_chunks = j->n_rchunks * n_tblocks;
}

/* Enough chunks that each of nth threads gets several. */
static void mm_plan(struct mm_job *j, int nth)
{
	mm_plan_n(j, nth > 1 ? (int64_t)nth * chunks_per_thread(j->n_tok) : 1);
}

void strata_matmul(struct strata_pool *pool, const struct strata_mat *W,
		   const float *x, int64_t ldx, int64_t n_tok, float *y,
		   int64_t ldy)
{
	const struct strata_kern_level *lv;
	const struct strata_type_ops *to;
	struct mm_job job;
	int64_t macs;
	int nth = strata_pool_size(pool);

	if (n_tok <= 0 || W->rows <= 0)
		return;
	lv = strata_kern_level_for(W->type);
	to = &lv->type[W->type];
	macs = W->rows * W->cols * n_tok;
	if (macs / MM_MIN_MACS_PER_THREAD < nth)
		nth = (int)(macs / MM_MIN_MACS_PER_THREAD);
	if (nth < 1)
		nth = 1;

	memset(&job, 0, sizeof(job));
	job.mm = strata_kern_mm_for(lv, W);
	job.base.w = W->data;
	job.base.w_stride = W->row_bytes;
	job.base.y = y;
	job.base.ldy = ldy;
	job.base.k = W->cols;
	job.rows = W->rows;
	job.n_tok = n_tok;
	if (to->act == STRATA_ACT_F32) {
		job.base.x = (const uint8_t *)x;
		job.base.x_stride = (size_t)ldx * sizeof(float);
	} else {
		const struct strata_act_ops *ao = &lv->act[to->act];
		struct quant_job q = { ao->quantize, x, ldx, W->cols, n_tok, NULL,
				       ao->row_bytes(W->cols) };
		size_t bytes = q.stride * (size_t)n_tok;

		q.dst = pool ? strata_pool_scratch(pool, bytes) : tls_scratch(bytes);
		if (!q.dst) {
			strata_error("matmul %lldx%lld (%s), %lld tokens: out of "
				     "memory for %zu bytes of activations",
				     (long long)W->rows, (long long)W->cols,
				     strata_type_name(W->type), (long long)n_tok,
				     bytes);
			for (int64_t t = 0; t < n_tok; t++)
				for (int64_t r = 0; r < W->rows; r++)
					y[t * ldy + r] = NAN;
			return;
		}
		if (nth > 1 && n_tok > 1 && n_tok * W->cols >= MM_PAR_QUANT_VALUES)
			strata_pool_run_n(pool, quant_task, &q,
					  n_tok < nth ? (int)n_tok : nth);
		else
			quant_task(&q, 0, 1);
		job.base.x = q.dst;
		job.base.x_stride = q.stride;
	}
	mm_plan(&job, nth);
	if (nth > 1 && nth <= STRATA_STEAL_MAX && job.tchunk == n_tok) {
		struct mm_steal_job sj;
		const int64_t groups = (job.rows + MM_GROUP - 1) / MM_GROUP;

		if (groups < nth)
			nth = (int)groups;
		if (nth > 1) {
			sj.j = &job;
			strata_steal_init(&sj.st, groups, nth, steal_min_piece(job.base.k, n_tok));
			strata_pool_run_n(pool, mm_steal_task, &sj, nth);
		} else {
			mm_rows(&job, 0, job.rows);
		}
		return;
	}
	if (job.n_chunks < nth)
		nth = (int)job.n_chunks;
	/* Thread i starts on chunk i; the counter hands out the rest. */
	atomic_init(&job.next, nth);
	if (nth > 1)
		strata_pool_run_n(pool, mm_task, &job, nth);
	else
		mm_task(&job, 0, 1);
}

/* ---- many products in one dispatch ------------------------------------------- */

#define MANY_MAX 1040
#define GATHER_GRAIN 16 /* rows copied per grab of the gather counter */

/* Copy n rows (`rows` of src) into dst, len bytes each. */
struct gather_job {
	const uint8_t *src; /* NULL until the conversion src_q has a buffer */
	int src_q;          /* conversion the rows come from, or -1 (floats) */
	size_t src_stride, len, dst_stride;
	const uint32_t *rows;
	int64_t n;
	uint8_t *dst;
};

struct many_job {
	int n, nq, ng;
	struct mm_job jobs[MANY_MAX];
	int64_t first[MANY_MAX + 1];   /* prefix sums of the items' chunk counts */
	struct quant_job qjobs[MANY_MAX];
	int64_t quant_first[MANY_MAX + 1];
	struct gather_job gjobs[MANY_MAX];
	int64_t gather_first[MANY_MAX + 1];
	const uint8_t *x[MANY_MAX];    /* each item's activations (scratch offset */
	size_t x_stride[MANY_MAX];     /* until the scratch exists), row stride */
	int x_src[MANY_MAX];           /* 0 caller's floats, 1 conversion, 2 gather */
	int x_idx[MANY_MAX];           /* which conversion / gather */
	_Alignas(64) _Atomic int64_t next;
	_Alignas(64) _Atomic int64_t qnext;
	_Alignas(64) _Atomic int64_t gnext;
	int64_t gfirst[MANY_MAX + 1];  /* prefix sums of the items' row groups */
	struct strata_steal st;        /* over those groups, when stealing */
};

static void many_quant_task(void *arg, int ith, int nth)
{
	struct many_job *m = arg;
	int64_t total = m->quant_first[m->nq];
	int i = 0;

	(void)ith;
	(void)nth;
	for (int64_t c = atomic_fetch_add(&m->qnext, 1); c < total;
	     c = atomic_fetch_add(&m->qnext, 1)) {
		const struct quant_job *q;
		int64_t t;

		while (m->quant_first[i + 1] <= c)
			i++;
		q = &m->qjobs[i];
		t = c - m->quant_first[i];
		q->quantize(q->x + t * q->ldx, q->dst + (size_t)t * q->stride, q->k);
	}
}

/* Values the conversions quantise in all. */
static int64_t quant_values(const struct many_job *m)
{
	int64_t v = 0;

	for (int q = 0; q < m->nq; q++)
		v += m->qjobs[q].n_tok * m->qjobs[q].k;
	return v;
}

static void many_gather_task(void *arg, int ith, int nth)
{
	struct many_job *m = arg;
	int64_t total = m->gather_first[m->ng];
	int i = 0;

	(void)ith;
	(void)nth;
	for (int64_t c = atomic_fetch_add(&m->gnext, GATHER_GRAIN); c < total;
	     c = atomic_fetch_add(&m->gnext, GATHER_GRAIN)) {
		int64_t end = c + GATHER_GRAIN < total ? c + GATHER_GRAIN : total;

		for (; c < end; c++) {
			const struct gather_job *g;
			int64_t t;

			while (m->gather_first[i + 1] <= c)
				i++;
			g = &m->gjobs[i];
			t = c - m->gather_first[i];
			memcpy(g->dst + (size_t)t * g->dst_stride,
			       g->src + (size_t)g->rows[t] * g->src_stride, g->len);
		}
	}
}

static void many_mm_task(void *arg, int ith, int nth)
{
	struct many_job *m = arg;
	int64_t total = m->first[m->n];
	int i = 0;

	(void)ith;
	(void)nth;
	for (int64_t c = atomic_fetch_add(&m->next, 1); c < total;
	     c = atomic_fetch_add(&m->next, 1)) {
		while (m->first[i + 1] <= c)
			i++;
		mm_chunk(&m->jobs[i], c - m->first[i]);
	}
}

/* The item holding row group g: the last i with gfirst[i] <= g. */
static int many_item_of(const struct many_job *m, int64_t g)
{
	int lo = 0, hi = m->n - 1;

	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;

		if (m->gfirst[mid] <= g)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static void many_steal_task(void *arg, int ith, int nth)
{
	struct many_job *m = arg;
	int64_t g0, g1;

	(void)nth;
	while (strata_steal_next(&m->st, ith, &g0, &g1))
		for (int i = many_item_of(m, g0); g0 < g1; i++) {
			const struct mm_job *j = &m->jobs[i];
			const int64_t e = g1 < m->gfirst[i + 1] ? g1 : m->gfirst[i + 1];
			const int64_t r1 = (e - m->gfirst[i]) * MM_GROUP;

			mm_rows(j, (g0 - m->gfirst[i]) * MM_GROUP, r1 < j->rows ? r1 : j->rows);
			g0 = e;
		}
}

/* Whether the items can share row groups by stealing: one token block
 * each, all with the same tokens (so that a group costs the same anywhere). */
static int many_can_steal(const struct many_job *m, int nth)
{
	if (nth < 2 || nth > STRATA_STEAL_MAX)
		return 0;
	for (int i = 0; i < m->n; i++)
		if (m->jobs[i].tchunk != m->jobs[i].n_tok || m->jobs[i].n_tok != m->jobs[0].n_tok ||
		    m->jobs[i].base.k != m->jobs[0].base.k)
			return 0;
	return 1;
}

static size_t align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

/* The conversion of x (n_src rows) that item `it` needs, made if new;
 * *bytes grows by the scratch it takes. */
static int many_conversion(struct many_job *m, const struct strata_mm_item *it,
			   const struct strata_act_ops *ao, int64_t n_src, size_t *bytes)
{
	struct quant_job *q;

	for (int j = m->nq - 1; j >= 0; j--) {
		q = &m->qjobs[j];
		if (q->x == it->x && q->ldx == it->ldx && q->n_tok == n_src &&
		    q->k == it->W->cols && q->quantize == ao->quantize)
			return j;
	}
	q = &m->qjobs[m->nq];
	q->quantize = ao->quantize;
	q->x = it->x;
	q->ldx = it->ldx;
	q->k = it->W->cols;
	q->n_tok = n_src;
	q->stride = ao->row_bytes(it->W->cols);
	q->dst = (uint8_t *)(uintptr_t)*bytes; /* an offset until the scratch exists */
	*bytes += align64(q->stride * (size_t)n_src);
	return m->nq++;
}

/* A gather of it->rows into a new scratch region of len-byte rows. */
static int many_gather(struct many_job *m, const struct strata_mm_item *it, int src_q,
		       size_t src_stride, size_t len, size_t *bytes)
{
	struct gather_job *g = &m->gjobs[m->ng];

	g->src = src_q < 0 ? (const uint8_t *)it->x : NULL;
	g->src_q = src_q;
	g->src_stride = src_stride;
	g->len = len;
	g->dst_stride = len;
	g->rows = it->rows;
	g->n = it->n_tok;
	g->dst = (uint8_t *)(uintptr_t)*bytes;
	*bytes += align64(len * (size_t)it->n_tok);
	return m->ng++;
}

/* Whether an item's rows are the first n_tok of its x in order (decode's
 * one token routed to every expert): then no gather is needed. */
static int rows_identity(const struct strata_mm_item *it)
{
	for (int64_t t = 0; t < it->n_tok; t++)
		if (it->rows[t] != (uint32_t)t)
			return 0;
	return 1;
}

/* Decide where each item's activations come from; returns scratch bytes. */
static size_t many_plan_inputs(struct many_job *m, const struct strata_mm_item *items,
			       int n, int64_t *macs)
{
	size_t bytes = 0;

	for (int i = 0; i < n; i++) {
		const struct strata_mm_item *it = &items[i];
		const struct strata_kern_level *lv = strata_kern_level_for(it->W->type);
		const struct strata_type_ops *to = &lv->type[it->W->type];
		const int64_t cols = it->W->cols;

		*macs += it->W->rows * cols * it->n_tok;
		if (to->act == STRATA_ACT_F32 && !it->rows) {
			m->x_src[i] = 0;
			m->x[i] = (const uint8_t *)it->x;
			m->x_stride[i] = (size_t)it->ldx * sizeof(float);
		} else if (to->act == STRATA_ACT_F32) {
			m->x_src[i] = 2;
			m->x_idx[i] = many_gather(m, it, -1, (size_t)it->ldx * sizeof(float),
						  (size_t)cols * sizeof(float), &bytes);
			m->x_stride[i] = (size_t)cols * sizeof(float);
		} else {
			const struct strata_act_ops *ao = &lv->act[to->act];
			int q = many_conversion(m, it, ao, it->rows ? it->n_x : it->n_tok,
						&bytes);

			m->x_stride[i] = m->qjobs[q].stride;
			if (it->rows && !rows_identity(it)) {
				m->x_src[i] = 2;
				m->x_idx[i] = many_gather(m, it, q, m->qjobs[q].stride,
							  m->qjobs[q].stride, &bytes);
			} else {
				m->x_src[i] = 1;
				m->x_idx[i] = q;
			}
		}
	}
	return bytes;
}

static void many_fallback(struct strata_pool *pool, const struct strata_mm_item *items, int n)
{
	for (int i = 0; i < n; i++) {
		const struct strata_mm_item *it = &items[i];

		if (!it->rows) {
			strata_matmul(pool, it->W, it->x, it->ldx, it->n_tok, it->y, it->ldy);
			continue;
		}
		for (int64_t t = 0; t < it->n_tok; t++)
			strata_matmul(pool, it->W, it->x + (size_t)it->rows[t] * it->ldx, it->ldx,
				      1, it->y + t * it->ldy, it->ldy);
	}
}

/* Run phase fn over the pool when there is more than one unit of work. */
static void many_phase(struct strata_pool *pool, strata_task_fn fn, struct many_job *m,
		       int nth, int64_t units)
{
	if (nth > 1 && units > 1)
		strata_pool_run_n(pool, fn, m, units < nth ? (int)units : nth);
	else
		fn(m, 0, 1);
}

void strata_matmul_many(struct strata_pool *pool, const struct strata_mm_item *items, int n)
{
	struct many_job *m = n <= MANY_MAX ? tls_buf(TLS_MANY, sizeof(*m)) : NULL;
	int nth = strata_pool_size(pool);
	int64_t macs = 0;
	uint8_t *scratch = NULL;
	size_t bytes;

	if (n <= 0)
		return;
	if (!m) {
		many_fallback(pool, items, n);
		return;
	}
	/* Every other field is written before it is read: clearing the ~400 KB
	 * struct per call would cost decode more than the products it runs. */
	m->n = n;
	m->nq = m->ng = 0;
	m->first[0] = m->quant_first[0] = m->gather_first[0] = m->gfirst[0] = 0;
	bytes = many_plan_inputs(m, items, n, &macs);
	if (bytes) {
		scratch = pool ? strata_pool_scratch(pool, bytes) : tls_scratch(bytes);
		if (!scratch) {
			many_fallback(pool, items, n);
			return;
		}
	}
	for (int q = 0; q < m->nq; q++) {
		m->qjobs[q].dst = scratch + (uintptr_t)m->qjobs[q].dst;
		m->quant_first[q + 1] = m->quant_first[q] + m->qjobs[q].n_tok;
	}
	for (int g = 0; g < m->ng; g++) {
		struct gather_job *gj = &m->gjobs[g];

		gj->dst = scratch + (uintptr_t)gj->dst;
		if (gj->src_q >= 0)
			gj->src = m->qjobs[gj->src_q].dst;
		m->gather_first[g + 1] = m->gather_first[g] + gj->n;
	}
	if (macs / MM_MIN_MACS_PER_THREAD < nth)
		nth = (int)(macs / MM_MIN_MACS_PER_THREAD);
	if (nth < 1)
		nth = 1;
	atomic_init(&m->qnext, 0);
	atomic_init(&m->gnext, 0);
	if (m->nq)
		/* a few decode rows (the experts' down inputs) cost less than a
		 * pool run's hand-off: quantised here, as strata_matmul does */
		many_phase(pool, many_quant_task, m, quant_values(m) < MM_PAR_QUANT_VALUES ? 1 : nth,
			   m->quant_first[m->nq]);
	if (m->ng)
		many_phase(pool, many_gather_task, m, nth,
			   (m->gather_first[m->ng] + GATHER_GRAIN - 1) / GATHER_GRAIN);
	for (int i = 0; i < n; i++) {
		const struct strata_mm_item *it = &items[i];
		struct mm_job *j = &m->jobs[i];

		j->mm = strata_kern_mm_for(strata_kern_level_for(it->W->type), it->W);
		j->base.w = it->W->data;
		j->base.w_stride = it->W->row_bytes;
		j->base.y = it->y;
		j->base.ldy = it->ldy;
		j->base.k = it->W->cols;
		j->rows = it->W->rows;
		j->n_tok = it->n_tok;
		j->base.x = m->x_src[i] == 0 ? m->x[i]
			  : m->x_src[i] == 1 ? m->qjobs[m->x_idx[i]].dst
					     : m->gjobs[m->x_idx[i]].dst;
		j->base.x_stride = m->x_stride[i];
		/* Each item's share of the pool's chunks by its MACs: many equal
		 * items (experts) take one each, a few unequal ones (q beside k
		 * and v) are cut so that no thread waits on one big chunk. */
		mm_plan_n(j, nth > 1 ? (j->rows * it->W->cols * j->n_tok * nth *
					chunks_per_thread(j->n_tok) + macs - 1) / macs : 1);
		m->first[i + 1] = m->first[i] + j->n_chunks;
		m->gfirst[i + 1] = m->gfirst[i] + (j->rows + MM_GROUP - 1) / MM_GROUP;
	}
	if (many_can_steal(m, nth) && m->gfirst[n] >= nth) {
		strata_steal_init(&m->st, m->gfirst[n], nth,
				  steal_min_piece(m->jobs[0].base.k, m->jobs[0].n_tok));
		strata_pool_run_n(pool, many_steal_task, m, nth);
		return;
	}
	atomic_init(&m->next, 0);
	many_phase(pool, many_mm_task, m, nth, m->first[n]);
}

