/*
 * exec_q4x.c - qwen4exp's ops on the CPU: the hyper-connection mix and
 * combine, the PLE gate and its dilated conv, and the sparse-attention
 * indexer's choice of cells (strata/backend.h says what each computes).
 *
 * These are small per-token loops next to the products around them, so
 * they run on the calling thread, except the indexer, whose cost grows
 * with the context (every query scores every block), split over the pool.
 */
#include "backend/exec_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/pool.h"

static inline float sigmoid(float v)
{
	return 1.0f / (1.0f + expf(-v));
}

static inline float silu(float v)
{
	return v / (1.0f + expf(-v));
}

static inline float *col(const struct strata_tensor *t, int64_t i)
{
	return (float *)((char *)strata_tensor_data(t) + (size_t)i * t->nb[1]);
}

/* ---- hyper-connections ------------------------------------------------------------ */

int strata_exec_hc_pre(const struct strata_op *op)
{
	const struct strata_tensor *xn = op->src[0], *g = op->src[1], *d = op->dst;
	const int64_t e = d->ne[0], hc = op->p.hc.n;

	if (!hc || xn->ne[0] != e * hc || g->ne[0] != e * hc || xn->ne[1] != d->ne[1] ||
	    g->ne[1] != d->ne[1])
		return -EINVAL;
	for (int64_t t = 0; t < d->ne[1]; t++) {
		const float *x = col(xn, t), *gt = col(g, t);
		float *o = col(d, t);

		/* stream 0, then the others added in order, then the mean: ggml's order */
		for (int64_t i = 0; i < e; i++)
			o[i] = x[i] * sigmoid(gt[i]);
		for (int64_t c = 1; c < hc; c++)
			for (int64_t i = 0; i < e; i++)
				o[i] += x[c * e + i] * sigmoid(gt[c * e + i]);
		for (int64_t i = 0; i < e; i++)
			o[i] *= 1.0f / (float)hc;
	}
	return 0;
}

int strata_exec_hc_post(const struct strata_op *op)
{
	const struct strata_tensor *res = op->src[0], *b = op->src[1], *inj = op->src[2];
	const struct strata_tensor *d = op->dst;
	const int64_t e = b->ne[0], hc = op->p.hc.n, n = d->ne[1];

	if (!hc || d->ne[0] != e * hc || res->ne[0] != e * hc || inj->ne[0] != hc ||
	    b->ne[1] != n || inj->ne[1] != n || res->ne[1] != n)
		return -EINVAL;
	for (int64_t t = 0; t < n; t++) {
		const float *r = col(res, t), *bt = col(b, t), *it = col(inj, t);
		float *o = col(d, t);

		for (int64_t c = 0; c < hc; c++) {
			const float w = 2.0f * sigmoid(it[c] * (1.0f / (float)hc));

			for (int64_t i = 0; i < e; i++)
				o[c * e + i] = r[c * e + i] + bt[i] * w;
		}
	}
	return 0;
}

int strata_exec_scale_silu(const struct strata_op *op)
{
	const struct strata_tensor *s = op->src[0], *d = op->dst;
	const float k = op->p.scale.s;

	if (s->ne[0] != d->ne[0] || s->ne[1] != d->ne[1])
		return -EINVAL;
	for (int64_t t = 0; t < d->ne[1]; t++) {
		const float *x = col(s, t);
		float *o = col(d, t);

		for (int64_t i = 0; i < d->ne[0]; i++)
			o[i] = silu(x[i] * k);
	}
	return 0;
}

/* ---- PLE ------------------------------------------------------------------------ */

int strata_exec_ple_gate(const struct strata_op *op)
{
	const struct strata_tensor *k = op->src[0], *q = op->src[1], *v = op->src[2];
	const struct strata_tensor *d = op->dst;
	const int64_t e = v->ne[0], n = d->ne[1];
	int64_t hc;

	if (!e || d->ne[0] % e || k->ne[0] != d->ne[0] || q->ne[0] != d->ne[0] || k->ne[1] != n ||
	    q->ne[1] != n || v->ne[1] != n)
		return -EINVAL;
	hc = d->ne[0] / e;
	for (int64_t t = 0; t < n; t++) {
		const float *kt = col(k, t), *qt = col(q, t), *vt = col(v, t);
		float *o = col(d, t);

		for (int64_t c = 0; c < hc; c++) {
			float s = 0.0f, mag, g;

			for (int64_t i = 0; i < e; i++)
				s += kt[c * e + i] * qt[c * e + i];
			s *= 1.0f / sqrtf((float)e);
			mag = sqrtf(fabsf(s) > 1e-6f ? fabsf(s) : 1e-6f);
			g = sigmoid(s > 0.0f ? mag : s < 0.0f ? -mag : 0.0f);
			for (int64_t i = 0; i < e; i++)
				o[c * e + i] = vt[i] * g;
		}
	}
	return 0;
}

int strata_exec_conv_silu(const struct strata_op *op)
{
	const struct strata_tensor *x = op->src[0], *h = op->src[1], *w = op->src[2];
	const struct strata_tensor *d = op->dst;
	const int64_t C = x->ne[0], n = x->ne[1], K = w->ne[0], dil = op->p.conv.dilation;
	const int64_t hist = (K - 1) * dil;
	float *hs = strata_tensor_data(h);
	const float *kw = strata_tensor_data(w);

	if (!dil || K < 1 || w->ne[1] != C || d->ne[0] != C || d->ne[1] != n ||
	    h->ne[0] != C || h->ne[1] != hist || h->nb[1] != (size_t)C * sizeof(float) ||
	    w->nb[1] != (size_t)K * sizeof(float) || strata_tensor_data(d) == strata_tensor_data(x))
		return -EINVAL;
	for (int64_t t = 0; t < n; t++) {
		float *o = col(d, t);

		for (int64_t c = 0; c < C; c++) {
			float acc = 0.0f;

			/* tap k reads (K-1-k)*dil positions back; the history holds t < 0 */
			for (int64_t k = 0; k < K; k++) {
				const int64_t src = t - (K - 1 - k) * dil;
				const float v = src >= 0 ? col(x, src)[c] : hs[(hist + src) * C + c];

				acc += kw[c * K + k] * v;
			}
			o[c] = silu(acc);
		}
	}
	/* keep the last `hist` inputs: the tail of (history, x) */
	if (n >= hist) {
		for (int64_t i = 0; i < hist; i++)
			memcpy(hs + i * C, col(x, n - hist + i), (size_t)C * sizeof(float));
	} else {
		memmove(hs, hs + n * C, (size_t)(hist - n) * C * sizeof(float));
		for (int64_t i = 0; i < n; i++)
			memcpy(hs + (hist - n + i) * C, col(x, i), (size_t)C * sizeof(float));
	}
	return 0;
}

/* ---- the sparse-attention indexer ------------------------------------------------ */

/*
 * Which cells survive a top-w cut when several share a score depends on the
 * selection algorithm, and the reference is llama.cpp's CPU top-k: libstdc++'s
 * std::partial_sort over the cell indices with comp(a, b) = v[a] > v[b], i.e.
 * a heap of the first w cells (root: the lowest score), each later cell that
 * beats the root replacing it.  The heap operations below follow that
 * algorithm step for step (hole sifting, the odd last child), because the
 * cells kept from a tied block are whatever that order leaves.
 */
#define QSA_LESS(a, b) (v[a] > v[b]) /* the heap's "less": a higher score */

static void heap_push(int32_t *h, const float *v, long hole, long top, int32_t val)
{
	long parent = (hole - 1) / 2;

	while (hole > top && QSA_LESS(h[parent], val)) {
		h[hole] = h[parent];
		hole = parent;
		parent = (hole - 1) / 2;
	}
	h[hole] = val;
}

static void heap_adjust(int32_t *h, const float *v, long hole, long len, int32_t val)
{
	const long top = hole;
	long child = hole;

	while (child < (len - 1) / 2) {
		child = 2 * (child + 1);
		if (QSA_LESS(h[child], h[child - 1]))
			child--;
		h[hole] = h[child];
		hole = child;
	}
	if ((len & 1) == 0 && child == (len - 2) / 2) {
		child = 2 * (child + 1);
		h[hole] = h[child - 1];
		hole = child - 1;
	}
	heap_push(h, v, hole, top, val);
}

/* h[0..w) = the first w of the n cells by score, as partial_sort selects them. */
static void heap_select(int32_t *h, const float *v, long w, long n)
{
	if (w >= 2)
		for (long parent = (w - 2) / 2;; parent--) {
			heap_adjust(h, v, parent, w, h[parent]);
			if (parent == 0)
				break;
		}
	for (long i = w; i < n; i++)
		if (QSA_LESS(h[i], h[0])) {
			int32_t val = h[i];

			h[i] = h[0];
			heap_adjust(h, v, 0, w, val);
		}
}

struct qsa_task {
	const struct strata_op *op;
	const float *pooled; /* [n_blocks + 1][d]: the complete blocks, then the spare one */
	long n_used, n_blocks, width;
	float *scratch;      /* per thread: scores [n_used], cells [n_used] */
};

/*
 * A query's score of every cell, as llama.cpp builds it: a complete block's
 * cells its block score, plus 1e9 when the block starts in the query's
 * incomplete tail; the cells past the last complete block the spare block's
 * score plus 1e9 (they are the tail); future cells -inf.
 */
static void qsa_query(const struct qsa_task *a, long t, float *v, int32_t *cells)
{
	const struct strata_op *op = a->op;
	const struct strata_tensor *q = op->src[0];
	const long d = (long)q->ne[0], heads = (long)q->ne[1], r = op->p.qsa.ratio;
	const long pos = (long)op->p.qsa.pos + t, tail = (pos + 1) / r * r;
	int32_t *out = (int32_t *)((char *)strata_tensor_data(op->dst) + (size_t)t * op->dst->nb[1]);
	float prev = 0.0f;
	long cur = -1;

	for (long j = 0; j < a->n_used; j++) {
		long b = j / r < a->n_blocks ? j / r : a->n_blocks;

		cells[j] = (int32_t)j;
		if (j > pos) {
			v[j] = -INFINITY;
			continue;
		}
		if (b != cur) { /* one score per block */
			const float *kb = a->pooled + (size_t)b * d;
			float s = 0.0f;

			for (long h = 0; h < heads; h++) {
				const float *qh = (const float *)((const char *)strata_tensor_data(q) +
								  (size_t)t * q->nb[2] +
								  (size_t)h * q->nb[1]);
				float dot = strata_dot_f32(qh, kb, d);

				s += dot > 0.0f ? dot : 0.0f;
			}
			if (b == a->n_blocks || b * r >= tail)
				s += 1e9f;
			prev = s;
			cur = b;
		}
		v[j] = prev;
	}
	if (a->n_used > a->width)
		heap_select(cells, v, a->width, a->n_used);
	for (long i = 0, k = 0; i < a->width; i++) {
		int32_t c = i < a->n_used ? cells[i] : -1;

		if (c >= 0 && c <= pos)
			out[k++] = c;
		if (i == a->width - 1)
			for (; k < a->width; k++)
				out[k] = -1;
	}
}

static void qsa_worker(void *arg, int ith, int nth)
{
	const struct qsa_task *a = arg;
	float *v = a->scratch + (size_t)ith * 2 * a->n_used;
	long begin, end;

	strata_split((long)a->op->src[0]->ne[2], ith, nth, &begin, &end);
	for (long t = begin; t < end; t++)
		qsa_query(a, t, v, (int32_t *)(v + a->n_used));
}

/* Pool, norm and rotate block b's keys (cells from `first`, r of them) into out. */
static void qsa_pool(const struct strata_op *op, const float *keys, size_t ld, long first,
		     long r, long rope_pos, float *out)
{
	const long d = (long)op->src[1]->ne[0], half = op->p.qsa.n_rot / 2;
	const float *w = strata_tensor_data(op->src[2]), *inv = strata_tensor_data(op->src[3]);
	double ss = 0.0;
	float sc;

	memcpy(out, keys + (size_t)first * ld, (size_t)d * sizeof(float));
	for (long i = 1; i < r; i++)
		for (long x = 0; x < d; x++)
			out[x] += keys[(size_t)(first + i) * ld + x];
	for (long x = 0; x < d; x++) {
		out[x] *= 1.0f / (float)r;
		ss += (double)out[x] * out[x];
	}
	sc = (float)(1.0 / sqrt(ss / (double)d + op->p.qsa.eps));
	for (long x = 0; x < d; x++)
		out[x] = out[x] * sc * w[x];
	for (long i = 0; i < half; i++) { /* NEOX: the two halves of the rotated part */
		const float th = (float)rope_pos * inv[i], c = cosf(th), s = sinf(th);
		const float x0 = out[i], x1 = out[i + half];

		out[i] = x0 * c - x1 * s;
		out[i + half] = x0 * s + x1 * c;
	}
}

int strata_exec_qsa_select(struct strata_exec *x, const struct strata_op *op)
{
	const struct strata_tensor *q = op->src[0], *kc = op->src[1];
	const long d = (long)q->ne[0], r = op->p.qsa.ratio, n = (long)q->ne[2];
	const long n_used = (long)op->p.qsa.pos + n, width = (long)op->p.qsa.top_k + r - 1;
	const size_t ld = kc->nb[1] / sizeof(float);
	struct qsa_task a = { .op = op, .n_used = n_used, .n_blocks = n_used / r, .width = width };
	const int nth = strata_exec_threads(x);
	int rc;

	if (!r || r > 64 || !op->p.qsa.top_k || kc->ne[0] != d || n_used > kc->ne[1] ||
	    op->src[2]->ne[0] != d || op->p.qsa.n_rot > (uint32_t)d || op->p.qsa.n_rot % 2 ||
	    op->dst->type != STRATA_TYPE_I32 || op->dst->ne[0] != width || op->dst->ne[1] != n)
		return -EINVAL;
	if ((rc = strata_exec_grow((void **)&x->qsa_pooled, &x->cap_qsa_pooled,
				   (size_t)(a.n_blocks + 1) * d, sizeof(float))) ||
	    (rc = strata_exec_grow((void **)&x->qsa_scratch, &x->cap_qsa_scratch,
				   (size_t)nth * 2 * n_used, sizeof(float))))
		return rc;
	for (long b = 0; b < a.n_blocks; b++)
		qsa_pool(op, strata_tensor_data(kc), ld, b * r, r, b * r,
			 x->qsa_pooled + (size_t)b * d);
	/*
	 * The spare block (the cells after the last complete one) is cell 0's
	 * key at position 0 in llama.cpp, its member list never filled; its
	 * score only ever rides on the +1e9 that keeps the tail.
	 */
	qsa_pool(op, strata_tensor_data(kc), ld, 0, 1, 0, x->qsa_pooled + (size_t)a.n_blocks * d);
	a.pooled = x->qsa_pooled;
	a.scratch = x->qsa_scratch;
	if (x->pool && n > 1)
		strata_pool_run_n(x->pool, qsa_worker, &a, nth < n ? nth : (int)n);
	else
		qsa_worker(&a, 0, 1);
	return 0;
}
