/*
 * backend_ops_attn.c - check_backend_ops's cases of ATTN, ATTN_SPARSE and
 * QSA_SELECT (backend_ops.h).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"

/* ---- attention --------------------------------------------------------------------------- */

static const struct attn_cfg {
	int hd, hdv, nh, nkv;
} g_attn[] = {
	/* head_dim 64, 128 and 256 in groups of 1 and 4 */
	{ 64, 64, 2, 2 },
	{ 64, 64, 8, 2 },
	{ 128, 128, 2, 2 },
	{ 128, 128, 8, 2 },
	{ 256, 256, 2, 2 },
	{ 256, 256, 8, 2 },
	/* Qwen3-30B-A3B's, Qwen3-Next-80B's, the syn models' */
	{ 128, 128, 32, 4 },
	{ 256, 256, 16, 2 },
	{ 32, 32, 4, 2 },
};
#define N_ATTN (sizeof(g_attn) / sizeof(g_attn[0]))

/* Sequences of (pos, n) calls on one cache: each reads what the earlier ones stored. */
static const uint32_t g_seqs[4][6][2] = {
	{ { 0, 64 }, { 64, 1 }, { 65, 1 }, { 66, 1 } },
	{ { 0, 7 }, { 7, 33 }, { 40, 7 }, { 47, 1 }, { 48, 1 } },
	{ { 0, 40 }, { 40, 64 }, { 104, 1 } },
	{ { 0, 300 }, { 300, 1 } },
};
#define ATTN_CTX 333 /* positions; the cache holds 336 (STRATA_ATTN_CTX_ALIGN) */

/*
 * The selected cells of token t at position P (sparse attention): w entries,
 * most of them distinct cells <= P in random order, some -1, some past P
 * (to be skipped); token 1 of a batch selects nothing valid, token 2 its
 * cells in ascending order.
 */
static void sparse_cells(struct rig *R, int32_t *c, uint32_t w, uint32_t P, uint32_t t,
			 uint32_t stride)
{
	for (uint32_t i = 0; i < w; i++) {
		const uint32_t r = tu_rand(&R->seed) % 100;
		int dup = 1;

		c[i] = -1;
		if (P + 1 < stride && (t == 1 ? r >= 50 : r >= 12 && r < 24)) {
			c[i] = (int32_t)(P + 1 + tu_rand(&R->seed) % (stride - P - 1)); /* future */
			continue;
		}
		if (t == 1 || r < 12)
			continue;
		/* a valid cell not chosen yet (else -1: the indexer never repeats one) */
		for (int tries = 0; tries < 20 && dup; tries++) {
			c[i] = (int32_t)(tu_rand(&R->seed) % (P + 1));
			dup = 0;
			for (uint32_t j = 0; j < i; j++)
				dup |= c[j] == c[i];
		}
		if (dup)
			c[i] = -1;
	}
	if (t == 2) /* ascending */
		for (uint32_t i = 1; i < w; i++)
			for (uint32_t j = i; j > 0 && c[j - 1] > c[j]; j--) {
				int32_t x = c[j];

				c[j] = c[j - 1];
				c[j - 1] = x;
			}
}

/* One configuration over the four sequences (sparse: the first three, w cells each). */
static void attn_run(struct rig *R, const struct attn_cfg *a, int sparse)
{
	const uint32_t code = sparse ? STRATA_OP_ATTN_SPARSE : STRATA_OP_ATTN, w = 24;
	const uint32_t stride = (ATTN_CTX + STRATA_ATTN_CTX_ALIGN - 1) & ~(STRATA_ATTN_CTX_ALIGN - 1);

	for (int s = 0; s < (sparse ? 3 : 4); s++) {
		const size_t state = 4 * (size_t)stride * a->nkv * (a->hd + a->hdv);
		struct arena *S = bo_ar_new(R, state + 256, STRATA_BUF_USE_STATE);
		struct arena *A = bo_ar_new(R, 24u << 20, STRATA_BUF_USE_WORK);
		struct strata_tensor kc = bo_t3(&S->h, 0, a->hd, stride, a->nkv);
		struct strata_tensor vc = bo_t3(&S->h, kc.nb[3], a->hdv, stride, a->nkv);
		struct strata_tensor q = f32(A, (int64_t)a->hd * a->nh, 300);
		struct strata_tensor k = f32(A, (int64_t)a->hd * a->nkv, 300);
		struct strata_tensor v = f32(A, (int64_t)a->hdv * a->nkv, 300);
		struct strata_tensor att = f32(A, (int64_t)a->hdv * a->nh, 300);
		struct strata_tensor sel = i32(A, w, 300);

		S->used = state;
		memset(S->h.base, 0, state); /* as the CPU's state buffers come */
		bo_ar_up(R, S, 0);              /* private: never copied */
		bo_ar_up(R, A, 1);
		for (int i = 0; i < 6 && g_seqs[s][i][1]; i++) {
			const uint32_t pos = g_seqs[s][i][0], n = g_seqs[s][i][1];
			struct strata_tensor qn = strata_t_cols(&q, 0, n),
					     kn = strata_t_cols(&k, 0, n);
			struct strata_tensor vn = strata_t_cols(&v, 0, n),
					     an = strata_t_cols(&att, 0, n);
			struct strata_tensor qh = strata_t_heads(&qn, a->hd, a->nh, n);
			struct strata_tensor kh = strata_t_heads(&kn, a->hd, a->nkv, n);
			struct strata_tensor vh = strata_t_heads(&vn, a->hdv, a->nkv, n);
			struct strata_tensor ah = strata_t_heads(&an, a->hdv, a->nh, n);
			struct strata_tensor sn = strata_t_i32(sel.buf, sel.offset, w, n);
			struct strata_op op = {
				.code = code,
				.dst = &ah,
				.src = { &qh, &kh, &vh, &kc, &vc, sparse ? &sn : NULL },
				.p.attn = { .pos = pos, .scale = 1.0f / sqrtf((float)a->hd) },
			};

			bo_fill(R, &qn, -2, 2);
			bo_fill(R, &kn, -2, 2);
			bo_fill(R, &vn, -1, 1);
			bo_fill_const(&an, -7);
			bo_up(R, &qn);
			bo_up(R, &kn);
			bo_up(R, &vn);
			bo_up(R, &an);
			if (sparse) {
				for (uint32_t t = 0; t < n; t++)
					sparse_cells(R, I(&sn) + (size_t)t * w, w, pos + t, t,
						     stride);
				bo_up(R, &sn);
			}
			bo_both(R, &op, "attention");
			bo_cmp(R, code, &an, B_ATTN,
			       "head_dim %d/%d, %d heads on %d, %u tokens at pos %u", a->hd, a->hdv,
			       a->nh, a->nkv, n, pos);
		}
		bo_ar_drop(R, 0);
	}
}

START_TEST(attn)
{
	struct rig R;

	RIG(&R, 200 + _i, "attention %d/%d heads on %d", g_attn[_i].hd, g_attn[_i].nh,
	    g_attn[_i].nkv);
	if (bo_dev_takes(&R, STRATA_OP_ATTN, STRATA_TYPE_F32))
		attn_run(&R, &g_attn[_i], 0);
	bo_rig_close(&R);
}
END_TEST

START_TEST(attn_sparse)
{
	static const struct attn_cfg cf[] = { { 32, 32, 4, 2 },
					      { 128, 128, 16, 2 },
					      { 256, 256, 8, 2 } };
	struct rig R;

	RIG(&R, 7, "sparse attention");
	if (bo_dev_takes(&R, STRATA_OP_ATTN_SPARSE, STRATA_TYPE_F32))
		for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++)
			attn_run(&R, &cf[c], 1);
	bo_rig_close(&R);
}
END_TEST

static int cmp_i32(const void *a, const void *b)
{
	const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/*
 * QSA_SELECT's cells against the CPU's: per token the same cells (sorted:
 * the order is the backend's), then -1 only.  Returns the tokens that
 * differ; *first the first of them.
 */
static int qsa_diff(const struct strata_tensor *dst, const int32_t *dev, int64_t *first)
{
	const int64_t w = dst->ne[0];
	int32_t *a = malloc((size_t)w * 4), *b = malloc((size_t)w * 4);
	int bad = 0;

	ck_assert(a && b);
	for (int64_t t = 0; t < dst->ne[1]; t++) {
		int64_t na = 0, nb = 0;
		int same = 1;

		memcpy(a, dev + t * w, (size_t)w * 4);
		memcpy(b, I(dst) + t * w, (size_t)w * 4);
		while (na < w && a[na] >= 0)
			na++;
		while (nb < w && b[nb] >= 0)
			nb++;
		for (int64_t i = na; i < w; i++)
			same &= a[i] == -1;
		qsort(a, (size_t)na, 4, cmp_i32);
		qsort(b, (size_t)nb, 4, cmp_i32);
		same &= na == nb && !memcmp(a, b, (size_t)na * 4);
		if (!same && !bad)
			*first = t;
		bad += !same;
	}
	free(a);
	free(b);
	return bad;
}

/*
 * The pooled keys of QSA_SELECT's complete blocks, in double (the mean of a
 * block's r raw keys, RMSNorm with eps times w, NEOX rope at the block's
 * first position): pooled[b * d ..].
 */
static double *qsa_pooled(const struct strata_op *op)
{
	const struct strata_tensor *kc = op->src[1];
	const int64_t d = kc->ne[0], r = op->p.qsa.ratio, half = op->p.qsa.n_rot / 2;
	const int64_t nb = ((int64_t)op->p.qsa.pos + op->src[0]->ne[2]) / r;
	double *pool = calloc((size_t)(nb + 1) * d, sizeof(double));

	ck_assert_ptr_nonnull(pool);
	for (int64_t b = 0; b < nb; b++) {
		double *o = pool + b * d, ss = 0, sc;

		for (int64_t i = 0; i < r; i++)
			for (int64_t x = 0; x < d; x++)
				o[x] += F(kc)[(b * r + i) * (int64_t)(kc->nb[1] / 4) + x] /
					(double)r;
		for (int64_t x = 0; x < d; x++)
			ss += o[x] * o[x];
		sc = 1.0 / sqrt(ss / (double)d + op->p.qsa.eps);
		for (int64_t x = 0; x < d; x++)
			o[x] *= sc * F(op->src[2])[x];
		for (int64_t i = 0; i < half; i++) {
			const double th = (double)(b * r) * F(op->src[3])[i], x0 = o[i],
				     x1 = o[i + half];

			o[i] = x0 * cos(th) - x1 * sin(th);
			o[i + half] = x0 * sin(th) + x1 * cos(th);
		}
	}
	return pool;
}

static int cmp_desc(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;

	return (x < y) - (x > y);
}

/*
 * 1 when token t's choice of cells is clear: the scores of the last cell
 * kept and the first left out (of the complete blocks before the query's
 * own tail; the tail is always kept) are equal (one block, split as
 * partial_sort splits it) or 1e-4 apart, far beyond float rounding.
 */
static int qsa_clear(const struct strata_op *op, const double *pool, int64_t t)
{
	const struct strata_tensor *q = op->src[0];
	const int64_t d = q->ne[0], heads = q->ne[1], r = op->p.qsa.ratio;
	const int64_t P = (int64_t)op->p.qsa.pos + t, tail = (P + 1) / r * r;
	const int64_t keep = (int64_t)op->p.qsa.top_k + r - 1 - (P + 1 - tail);
	double *v = malloc((size_t)(tail + 1) * sizeof(double));
	int ok = 1;

	ck_assert_ptr_nonnull(v);
	for (int64_t b = 0; b < tail / r; b++) {
		double s = 0;

		for (int64_t h = 0; h < heads; h++) {
			const float *qh =
				(const float *)((const char *)F(q) + (size_t)t * q->nb[2] +
						(size_t)h * q->nb[1]);
			double dot = 0;

			for (int64_t x = 0; x < d; x++)
				dot += qh[x] * pool[b * d + x];
			s += dot > 0 ? dot : 0;
		}
		for (int64_t i = 0; i < r; i++)
			v[b * r + i] = s;
	}
	if (keep > 0 && keep < tail) {
		qsort(v, (size_t)tail, sizeof(double), cmp_desc);
		ok = v[keep - 1] == v[keep] ||
		     v[keep - 1] - v[keep] > 1e-4 * (fabs(v[keep - 1]) > 1 ? fabs(v[keep - 1]) : 1);
	}
	free(v);
	return ok;
}

START_TEST(qsa_select)
{
	static const struct {
		int d, heads, r, top_k, n_rot;
	} cf[] = {
		{ 16, 8, 1, 8, 8 },     /* syn-qwen4exp */
		{ 16, 8, 4, 16, 8 },    /* syn-qwen4exp-r4k16 */
		{ 128, 16, 4, 64, 64 }, /* a model's size */
		{ 64, 4, 3, 10, 32 },   /* top_k not a multiple of the ratio: a block cut */
	};
	static const uint32_t calls[5][2] = {
		{ 0, 40 }, { 40, 7 }, { 300, 1 }, { 5, 1 }, { 0, 1 }
	};
	struct rig R;

	RIG(&R, 8, "indexer");
	if (!bo_dev_takes(&R, STRATA_OP_QSA_SELECT, STRATA_TYPE_F32))
		goto out;
	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++)
		for (int i = 0; i < 5; i++) {
			const uint32_t pos = calls[i][0], n = calls[i][1];
			const int64_t d = cf[c].d, wdt = cf[c].top_k + cf[c].r - 1;
			struct arena *A = bo_ar_new(&R, 4u << 20, STRATA_BUF_USE_WORK);
			struct strata_tensor q = f32(A, d * cf[c].heads, n), kc = f32(A, d, 336);
			struct strata_tensor kw = f32(A, d, 1), fr = f32(A, cf[c].n_rot / 2, 1);
			struct strata_tensor dst = i32(A, wdt, n),
					     qh = strata_t_heads(&q, d, cf[c].heads, n);
			struct strata_op op = {
				.code = STRATA_OP_QSA_SELECT,
				.dst = &dst,
				.src = { &qh, &kc, &kw, &fr },
				.p.qsa = { .pos = pos,
					   .ratio = (uint32_t)cf[c].r,
					   .top_k = (uint32_t)cf[c].top_k,
					   .n_rot = (uint32_t)cf[c].n_rot,
					   .eps = 1e-6f },
			};
			int32_t *dev;
			int64_t tt = 0;
			int bad;
			double *pool;

			bo_fill(&R, &q, -1, 1);
			bo_fill(&R, &kc, -2, 2);
			bo_fill(&R, &kw, 0.5f, 1.5f);
			bo_inv_freq(&fr, cf[c].n_rot, 10000.0f);
			memset(I(&dst), 0x7f, bo_extent(&dst));
			/* queries whose choice float rounding cannot change (else drawn again) */
			pool = qsa_pooled(&op);
			for (int64_t t = 0; t < n; t++)
				for (int tries = 0; !qsa_clear(&op, pool, t); tries++) {
					struct strata_tensor qt = strata_t_cols(&q, t, 1);

					ck_assert_int_lt(tries, 1000);
					bo_fill(&R, &qt, -1, 1);
				}
			free(pool);
			bo_ar_up(&R, A, 1);
			bo_both(&R, &op, "qsa");
			dev = bo_down(&R, &dst);
			bad = qsa_diff(&dst, dev, &tt);
			bo_check(&R, STRATA_OP_QSA_SELECT, bad, 0,
				 "d %d x %d heads, ratio %d, top %d, %u tokens at pos %u: "
				 "%d tokens keep other cells (first: token %lld)",
				 cf[c].d, cf[c].heads, cf[c].r, cf[c].top_k, n, pos, bad,
				 (long long)tt);
			free(dev);
			bo_ar_drop(&R, 0);
		}
out:
	bo_rig_close(&R);
}
END_TEST

void bo_attn_cases(TCase *tc)
{
	tcase_add_loop_test(tc, attn, 0, (int)N_ATTN);
	tcase_add_test(tc, attn_sparse);
	tcase_add_test(tc, qsa_select);
}
