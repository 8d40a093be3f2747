/*
 * exec.c - the op set on host memory: dispatch, the products, and the
 * element-wise, norm, rope and routing ops.  Attention and DeltaNet are in
 * exec_attn.c and exec_dn.c.
 *
 * Every loop here is the one the forward pass ran before there were
 * backends (same kernels, same float order), so a CPU run's logits did not
 * move by a bit when the layer loop moved onto the op set.
 */
#include "backend/exec_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/pool.h"
#include "util/mem.h"

/* "No dependences between iterations" where the compiler takes it (clang has its own). */
#if defined(__clang__)
#define STRATA_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define STRATA_IVDEP _Pragma("GCC ivdep")
#else
#define STRATA_IVDEP
#endif

int strata_exec_grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *q = NULL;

	if (n <= *cap)
		return 0;
	if (size && n > SIZE_MAX / size)
		return -ENOMEM;
	q = strata_aligned_alloc(64, n * size > 0 ? n * size : 64);
	if (!q)
		return -ENOMEM;
	strata_aligned_free(*p);
	*p = q;
	*cap = n;
	return 0;
}

int strata_exec_threads(const struct strata_exec *x)
{
	int n = x->pool ? strata_pool_size(x->pool) : 1;

	return n < EXEC_MAX_THREADS ? n : EXEC_MAX_THREADS;
}

int strata_exec_create(struct strata_pool *pool, struct strata_exec **out)
{
	struct strata_exec *x = calloc(1, sizeof(*x));

	*out = x;
	if (!x)
		return -ENOMEM;
	x->pool = pool;
	return 0;
}

void strata_exec_free(struct strata_exec *x)
{
	if (!x)
		return;
	strata_aligned_free(x->items);
	strata_aligned_free(x->mats);
	strata_aligned_free(x->scores);
	strata_aligned_free(x->dn_xc);
	strata_aligned_free(x->dn_g);
	strata_aligned_free(x->dn_beta);
	strata_aligned_free(x->dn_rule);
	strata_aligned_free(x->dn_kern);
	strata_aligned_free(x->qsa_pooled);
	strata_aligned_free(x->qsa_scratch);
	free(x);
}

static const char *const g_op_names[STRATA_OP_COUNT] = {
	[STRATA_OP_GET_ROWS] = "GET_ROWS", [STRATA_OP_MATMUL] = "MATMUL",
	[STRATA_OP_RMS_NORM] = "RMS_NORM", [STRATA_OP_ROPE] = "ROPE",
	[STRATA_OP_ADD] = "ADD",           [STRATA_OP_SWIGLU] = "SWIGLU",
	[STRATA_OP_SIGMOID_MUL] = "SIGMOID_MUL", [STRATA_OP_COPY] = "COPY",
	[STRATA_OP_FILL] = "FILL",         [STRATA_OP_ATTN] = "ATTN",
	[STRATA_OP_DELTANET] = "DELTANET", [STRATA_OP_MOE_ROUTE] = "MOE_ROUTE",
	[STRATA_OP_MOE_COMBINE] = "MOE_COMBINE", [STRATA_OP_HC_PRE] = "HC_PRE",
	[STRATA_OP_HC_POST] = "HC_POST",   [STRATA_OP_SCALE_SILU] = "SCALE_SILU",
	[STRATA_OP_PLE_GATE] = "PLE_GATE", [STRATA_OP_CONV_SILU] = "CONV_SILU",
	[STRATA_OP_DELTANET_TILED] = "DELTANET_TILED", [STRATA_OP_QSA_SELECT] = "QSA_SELECT",
	[STRATA_OP_ATTN_SPARSE] = "ATTN_SPARSE",
};

const char *strata_op_name(uint32_t code)
{
	return code < STRATA_OP_COUNT && g_op_names[code] ? g_op_names[code] : "?";
}

int strata_exec_supports(uint32_t code, uint32_t type)
{
	switch (code) {
	case STRATA_OP_GET_ROWS:
	case STRATA_OP_MATMUL:
		return strata_type_supported(type);
	case STRATA_OP_RMS_NORM:
	case STRATA_OP_ROPE:
	case STRATA_OP_ADD:
	case STRATA_OP_SWIGLU:
	case STRATA_OP_SIGMOID_MUL:
	case STRATA_OP_COPY:
	case STRATA_OP_FILL:
	case STRATA_OP_ATTN:
	case STRATA_OP_DELTANET:
	case STRATA_OP_MOE_ROUTE:
	case STRATA_OP_MOE_COMBINE:
	case STRATA_OP_HC_PRE:
	case STRATA_OP_HC_POST:
	case STRATA_OP_SCALE_SILU:
	case STRATA_OP_PLE_GATE:
	case STRATA_OP_CONV_SILU:
	case STRATA_OP_DELTANET_TILED:
	case STRATA_OP_QSA_SELECT:
	case STRATA_OP_ATTN_SPARSE:
		return type == STRATA_TYPE_F32;
	default:
		return 0;
	}
}

/* ---- products ------------------------------------------------------------------ */

/* A weight tensor (2-D, contiguous rows) as the kernels' matrix. */
static int as_mat(const struct strata_tensor *w, struct strata_mat *m)
{
	if (strata_mat_init(m, w->type, w->ne[1], w->ne[0], strata_tensor_data(w)))
		return -EINVAL;
	if (w->buf && (w->buf->flags & STRATA_BUF_R16))
		m->layout = strata_layout_r16(w->type);
	return w->nb[1] == m->row_bytes ? 0 : -EINVAL;
}

static int op_matmul(struct strata_exec *x, const struct strata_op *op)
{
	const uint32_t n = op->p.mm.n_items;
	int rc;

	if ((rc = strata_exec_grow((void **)&x->items, &x->cap_items, n, sizeof(*x->items))) ||
	    (rc = strata_exec_grow((void **)&x->mats, &x->cap_mats, n, sizeof(*x->mats))))
		return rc;
	for (uint32_t i = 0; i < n; i++) {
		const struct strata_matmul_item *it = &op->p.mm.items[i];

		if ((rc = as_mat(it->w, &x->mats[i])) || it->x->ne[0] != it->w->ne[0] ||
		    it->y->ne[0] != it->w->ne[1])
			return rc ? rc : -EINVAL;
		x->items[i] = (struct strata_mm_item){
			.W = &x->mats[i], .x = strata_tensor_data(it->x), .ldx = (int64_t)exec_ld(it->x),
			.n_tok = it->y->ne[1], .y = strata_tensor_data(it->y),
			.ldy = (int64_t)exec_ld(it->y),
			.rows = it->rows ? strata_tensor_data(it->rows) : NULL,
			.n_x = it->x->ne[1],
		};
	}
	if (n == 1 && !x->items[0].rows)
		strata_matmul(x->pool, x->items[0].W, x->items[0].x, x->items[0].ldx,
			      x->items[0].n_tok, x->items[0].y, x->items[0].ldy);
	else
		strata_matmul_many(x->pool, x->items, (int)n);
	return 0;
}

static int op_get_rows(const struct strata_op *op)
{
	const struct strata_tensor *w = op->src[0], *ids = op->src[1];
	const int32_t *id = strata_tensor_data(ids);
	struct strata_mat m;

	if (as_mat(w, &m) || op->dst->ne[0] != w->ne[0])
		return -EINVAL;
	for (int64_t i = 0; i < ids->ne[0]; i++) {
		if (id[i] < 0 || id[i] >= w->ne[1])
			return -EINVAL;
		strata_mat_get_row(&m, id[i],
				   (float *)strata_tensor_data(op->dst) + (size_t)i * exec_ld(op->dst));
	}
	return 0;
}

/* ---- rows of views ---------------------------------------------------------------- */

/* Row (i1, i2, i3) of an F32 tensor; a dimension of extent 1 broadcasts. */
static inline float *row_at(const struct strata_tensor *t, int64_t i1, int64_t i2, int64_t i3)
{
	return (float *)((char *)strata_tensor_data(t) + (size_t)(t->ne[1] > 1 ? i1 : 0) * t->nb[1] +
			 (size_t)(t->ne[2] > 1 ? i2 : 0) * t->nb[2] +
			 (size_t)(t->ne[3] > 1 ? i3 : 0) * t->nb[3]);
}

#define FOR_ROWS(t, i1, i2, i3)                                 \
	for (int64_t i3 = 0; i3 < (t)->ne[3]; i3++)             \
		for (int64_t i2 = 0; i2 < (t)->ne[2]; i2++)     \
			for (int64_t i1 = 0; i1 < (t)->ne[1]; i1++)

/*
 * The sum of squares and the scaling run at the kernel level (kernels.h):
 * norms run on one thread while the pool's others wait, and as portable
 * loops (one chain of dependent adds at first, then SSE2) they were 1-2% of
 * a decode step.
 */
static int op_rms_norm(const struct strata_op *op)
{
	const struct strata_tensor *s = op->src[0], *wt = op->src[1], *d = op->dst;
	const int64_t n = d->ne[0];
	const float *w = wt ? strata_tensor_data(wt) : NULL;

	if (s->ne[0] != n || (wt && wt->ne[0] != n))
		return -EINVAL;
	FOR_ROWS(d, i1, i2, i3) {
		const float *x = row_at(s, i1, i2, i3);
		float *y = row_at(d, i1, i2, i3), scale;
		scale = (float)(1.0 / sqrt(strata_sumsq_f32(x, n) / (double)n + op->p.norm.eps));
		strata_scale_mul_f32(y, x, scale, w, n);
	}
	return 0;
}

#define ROPE_TABLE 256 /* pairs whose angles are computed once per position */

/* NEOX: the two halves a (x0) and b (x1) of one head turned by the angles
 * whose cosines and sines are c and s (n each, n a multiple of 8), in blocks
 * of eight that -O2 vectorises (the scalar loop was 0.7% of a decode step,
 * on the thread the others wait for). */
static void rope_halves(float *restrict a, float *restrict b, const float *c, const float *s,
			int n)
{
	for (int i = 0; i < n; i += 8)
		STRATA_IVDEP for (int j = i; j < i + 8; j++) {
			const float x0 = a[j], x1 = b[j];

			a[j] = x0 * c[j] - x1 * s[j];
			b[j] = x0 * s[j] + x1 * c[j];
		}
}

static int op_rope(const struct strata_op *op)
{
	const struct strata_tensor *t = op->dst;
	const float *inv_freq = strata_tensor_data(op->src[1]);
	const int n_rot = (int)op->p.rope.n_rot, neox = op->p.rope.mode == STRATA_ROPE_MODE_NEOX;
	const int tab = n_rot / 2 <= ROPE_TABLE, half = n_rot / 2;
	float cos_t[ROPE_TABLE], sin_t[ROPE_TABLE];
	int64_t tab_tok = -1;

	if (n_rot > t->ne[0] || n_rot % 2 || strata_tensor_data(op->src[0]) != strata_tensor_data(t))
		return -EINVAL;
	FOR_ROWS(t, h, tok, i3) {
		float *x = row_at(t, h, tok, i3);
		const float pos = (float)(op->p.rope.pos + (uint32_t)tok);

		/* every head of a position turns by the same angles: sin and
		 * cos once per position, not per head (they were 1-2% of decode) */
		if (tab && tab_tok != tok) {
			for (int i = 0; i < half; i++) {
				const float theta = pos * inv_freq[i];

				cos_t[i] = cosf(theta);
				sin_t[i] = sinf(theta);
			}
			tab_tok = tok;
		}
		if (tab && neox && half % 8 == 0) {
			rope_halves(x, x + half, cos_t, sin_t, half);
			continue;
		}
		for (int i = 0; i < half; i++) {
			const float c = tab ? cos_t[i] : cosf(pos * inv_freq[i]);
			const float s = tab ? sin_t[i] : sinf(pos * inv_freq[i]);
			/* NORM rotates adjacent pairs; NEOX rotates the two halves */
			int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
			float x0 = x[a], x1 = x[b];

			x[a] = x0 * c - x1 * s;
			x[b] = x0 * s + x1 * c;
		}
	}
	return 0;
}

/* dst = a + b over rows; b broadcasts along any dimension of extent 1. */
static int op_add(const struct strata_op *op)
{
	const struct strata_tensor *a = op->src[0], *b = op->src[1], *d = op->dst;
	const int64_t n = d->ne[0], bstep = b->ne[0] == 1 ? 0 : 1;

	if (a->ne[0] != n || (b->ne[0] != n && b->ne[0] != 1))
		return -EINVAL;
	FOR_ROWS(d, i1, i2, i3) {
		const float *x = row_at(a, i1, i2, i3), *y = row_at(b, i1, i2, i3);
		float *o = row_at(d, i1, i2, i3);
		int64_t i = 0;

		/* element-wise, o may be x or y itself: blocks of eight (no
		 * dependences between them, ivdep) that -O2 vectorises */
		if (bstep)
			for (; i + 8 <= n; i += 8)
				STRATA_IVDEP for (int j = 0; j < 8; j++)
					o[i + j] = x[i + j] + y[i + j];
		for (; i < n; i++)
			o[i] = x[i] + y[i * bstep];
	}
	return 0;
}

/* SWIGLU / SIGMOID_MUL: one share of the rows (all of them: i3, i2, i1). */
struct gate_task {
	const struct strata_op *op;
	int64_t rows;
};

static void gate_rows(void *arg, int ith, int nth)
{
	const struct gate_task *g = arg;
	const struct strata_op *op = g->op;
	const struct strata_tensor *a = op->src[0], *b = op->src[1], *d = op->dst;
	const int64_t n = d->ne[0];
	long r0, r1;

	strata_split(g->rows, ith, nth, &r0, &r1);
	for (long r = r0; r < r1; r++) {
		const int64_t i1 = r % d->ne[1], i2 = r / d->ne[1] % d->ne[2];
		const int64_t i3 = r / d->ne[1] / d->ne[2];
		const float *x = row_at(a, i1, i2, i3), *y = row_at(b, i1, i2, i3);
		float *o = row_at(d, i1, i2, i3);

		if (b->ne[0] == 1) { /* a per-row gate (qwen3next's shared expert) */
			for (int64_t i = 0; i < n; i++)
				o[i] = op->code == STRATA_OP_SWIGLU
					       ? x[i] / (1.0f + expf(-x[i])) * y[0]
					       : x[i] / (1.0f + expf(-y[0]));
		} else if (op->code == STRATA_OP_SWIGLU) {
			strata_silu_mul_f32(o, x, y, n);
		} else {
			strata_sigmoid_mul_f32(o, x, y, n);
		}
	}
}

/*
 * dst = silu(a) * b or a * sigmoid(b), b broadcasting as in ADD.  A MoE
 * layer's gate is slots x expert_ff values: over 2^15 of them the pool
 * shares the rows, which are independent.
 */
static int op_gate(struct strata_exec *x, const struct strata_op *op)
{
	const struct strata_tensor *a = op->src[0], *b = op->src[1], *d = op->dst;
	const int64_t n = d->ne[0];
	struct gate_task g = { op, d->ne[1] * d->ne[2] * d->ne[3] };
	int nth = strata_exec_threads(x);

	if (a->ne[0] != n || (b->ne[0] != n && b->ne[0] != 1))
		return -EINVAL;
	if (g.rows * n < 32768 || g.rows < nth)
		nth = 1;
	if (nth > 1)
		strata_pool_run_n(x->pool, gate_rows, &g, nth);
	else
		gate_rows(&g, 0, 1);
	return 0;
}

static int op_copy_fill(const struct strata_op *op)
{
	const struct strata_tensor *d = op->dst, *s = op->src[0];
	const int64_t n = d->ne[0];

	if (op->code == STRATA_OP_COPY && s->ne[0] != n)
		return -EINVAL;
	FOR_ROWS(d, i1, i2, i3) {
		float *o = row_at(d, i1, i2, i3);

		if (op->code == STRATA_OP_COPY)
			memcpy(o, row_at(s, i1, i2, i3), (size_t)n * sizeof(float));
		else
			for (int64_t i = 0; i < n; i++)
				o[i] = op->p.fill.value;
	}
	return 0;
}

/* ---- routing -------------------------------------------------------------------- */

#define ROUTE_BITMAP_MAX 4096 /* experts up to which the picks are a bitmap */
#define ROUTE_LIST_MAX 64       /* k up to which one pass keeps a sorted list */

/*
 * The top k scores (probability + bias), ties to the lower id, in one pass
 * over the experts: a list of the best so far, best first, which a score
 * enters only past the list's last (strictly, so an equal score with a
 * higher id stays behind).  The same choice as k selection passes, which
 * took 1.6 us of a 64-expert decode step's routing (8 x 64 compares with
 * bitmap tests) on the thread the others wait for.  -1 on a NaN score: the
 * selection passes define what a NaN gets.
 */
static int route_list(uint32_t ne, uint32_t k, const float *probs, const float *bias,
		      int32_t *experts)
{
	float best[ROUTE_LIST_MAX];
	uint32_t n = 0;

	if (k == 0)
		return 0;
	for (uint32_t e = 0; e < ne; e++) {
		const float score = probs[e] + (bias ? bias[e] : 0.0f);
		uint32_t i;

		if (score != score)
			return -1;
		if (n == k && !(score > best[k - 1]))
			continue;
		i = n < k ? n++ : k - 1;
		for (; i > 0 && best[i - 1] < score; i--) {
			best[i] = best[i - 1];
			experts[i] = experts[i - 1];
		}
		best[i] = score;
		experts[i] = (int32_t)e;
	}
	return n == k ? 0 : -1;
}

/* The same choice by k selection passes (any k, and NaN scores). */
static void route_select(uint32_t ne, uint32_t k, const float *probs, const float *bias,
			 int32_t *experts)
{
	uint64_t taken[ROUTE_BITMAP_MAX / 64];
	const int bits = ne <= ROUTE_BITMAP_MAX; /* else the picks are scanned */

	/* The picks so far are one bit each: scanning them per candidate was
	 * most of a decode step's routing (k x ne x k/2 compares). */
	if (bits)
		memset(taken, 0, (ne + 63) / 64 * sizeof(taken[0]));
	for (uint32_t j = 0; j < k; j++) {
		int32_t best = -1;
		float bs = -INFINITY;

		for (uint32_t e = 0; e < ne; e++) {
			float score = probs[e] + (bias ? bias[e] : 0.0f);
			uint64_t t = 0;

			if (bits)
				t = taken[e / 64] >> (e % 64) & 1;
			else
				for (uint32_t i = 0; i < j; i++)
					t |= experts[i] == (int32_t)e;
			if (!t && (best < 0 || score > bs)) {
				best = (int32_t)e;
				bs = score;
			}
		}
		if (bits)
			taken[best / 64] |= (uint64_t)1 << (best % 64);
		experts[j] = best;
	}
}

void strata_route_token(uint32_t gating, uint32_t ne, uint32_t k, int norm, float scale,
			const float *bias, float *logits, int32_t *experts, float *weights)
{
	float sum = 0.0f;

	if (gating == STRATA_GATING_MODE_SIGMOID) {
		for (uint32_t e = 0; e < ne; e++)
			logits[e] = 1.0f / (1.0f + expf(-logits[e]));
	} else {
		float mx = -INFINITY, s = 0.0f;

		for (uint32_t e = 0; e < ne; e++)
			mx = logits[e] > mx ? logits[e] : mx;
		for (uint32_t e = 0; e < ne; e++) {
			logits[e] = expf(logits[e] - mx);
			s += logits[e];
		}
		for (uint32_t e = 0; e < ne; e++)
			logits[e] /= s;
	}
	/* Top-k by probability (+ the selection bias, which chooses but never weighs). */
	if (k > ROUTE_LIST_MAX || route_list(ne, k, logits, bias, experts))
		route_select(ne, k, logits, bias, experts);
	for (uint32_t j = 0; j < k; j++) {
		weights[j] = logits[experts[j]];
		sum += weights[j];
	}
	if (norm) {
		/* llama.cpp clamps the sum so that tiny weights do not blow up */
		if (sum < 6.103515625e-5f)
			sum = 6.103515625e-5f;
		for (uint32_t j = 0; j < k; j++)
			weights[j] /= sum;
	}
	for (uint32_t j = 0; j < k; j++)
		weights[j] *= scale;
}

static int op_route(const struct strata_op *op)
{
	const struct strata_tensor *lg = op->src[0], *b = op->src[1];
	const uint32_t ne = (uint32_t)lg->ne[0], k = op->p.route.k;

	if (!op->aux || k == 0 || k > ne || op->dst->ne[0] != k || op->aux->ne[0] != k ||
	    op->aux->type != STRATA_TYPE_I32)
		return -EINVAL;
	for (int64_t t = 0; t < lg->ne[1]; t++)
		strata_route_token(op->p.route.gating, ne, k, (int)op->p.route.norm,
				   op->p.route.scale, b ? strata_tensor_data(b) : NULL,
				   row_at(lg, t, 0, 0), (int32_t *)row_at(op->aux, t, 0, 0),
				   row_at(op->dst, t, 0, 0));
	return 0;
}

static int op_combine(const struct strata_op *op)
{
	const struct strata_tensor *d = op->src[0], *o = op->dst;
	const int32_t *tok = strata_tensor_data(op->src[1]);
	const float *w = strata_tensor_data(op->src[2]);

	if (d->ne[0] != o->ne[0])
		return -EINVAL;
	for (int64_t i = 0; i < d->ne[1]; i++) {
		if (tok[i] < 0 || tok[i] >= o->ne[1])
			return -EINVAL;
		strata_axpy_f32(row_at(o, tok[i], 0, 0), w[i], row_at(d, i, 0, 0), o->ne[0]);
	}
	return 0;
}

int strata_exec_run(struct strata_exec *x, const struct strata_op *op)
{
	switch (op->code) {
	case STRATA_OP_GET_ROWS:
		return op_get_rows(op);
	case STRATA_OP_MATMUL:
		return op_matmul(x, op);
	case STRATA_OP_RMS_NORM:
		return op_rms_norm(op);
	case STRATA_OP_ROPE:
		return op_rope(op);
	case STRATA_OP_ADD:
		return op_add(op);
	case STRATA_OP_SWIGLU:
	case STRATA_OP_SIGMOID_MUL:
		return op_gate(x, op);
	case STRATA_OP_COPY:
	case STRATA_OP_FILL:
		return op_copy_fill(op);
	case STRATA_OP_ATTN:
		return strata_exec_attn(x, op);
	case STRATA_OP_DELTANET:
	case STRATA_OP_DELTANET_TILED:
		return strata_exec_deltanet(x, op);
	case STRATA_OP_MOE_ROUTE:
		return op_route(op);
	case STRATA_OP_MOE_COMBINE:
		return op_combine(op);
	case STRATA_OP_HC_PRE:
		return strata_exec_hc_pre(op);
	case STRATA_OP_HC_POST:
		return strata_exec_hc_post(op);
	case STRATA_OP_SCALE_SILU:
		return strata_exec_scale_silu(op);
	case STRATA_OP_PLE_GATE:
		return strata_exec_ple_gate(op);
	case STRATA_OP_CONV_SILU:
		return strata_exec_conv_silu(op);
	case STRATA_OP_QSA_SELECT:
		return strata_exec_qsa_select(x, op);
	case STRATA_OP_ATTN_SPARSE:
		return strata_exec_attn_sparse(x, op);
	default:
		return -EINVAL;
	}
}
