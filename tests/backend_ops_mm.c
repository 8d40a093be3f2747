/*
 * backend_ops_mm.c - check_backend_ops's cases of MATMUL and GET_ROWS, one
 * per weight type the CPU supports (backend_ops.h).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"

/* ---- weights ------------------------------------------------------------------------- */

/* Random blocks of a type without a quantiser: re-drawn until finite and moderate. */
static void random_blocks(struct rig *R, uint32_t type, uint8_t *dst, int64_t n)
{
	const uint32_t blk = strata_type_block(type), bb = strata_type_block_bytes(type);
	float v[256];

	ck_assert_int_le(blk, 256);
	for (int64_t b = 0; b < n / blk; b++) {
		uint8_t *q = dst + (size_t)b * bb;
		int ok = 0;

		for (int tries = 0; tries < 1000 && !ok; tries++) {
			for (uint32_t i = 0; i < bb; i++)
				q[i] = (uint8_t)tu_rand(&R->seed);
			strata_dequant(type, q, v, blk);
			ok = 1;
			for (uint32_t i = 0; i < blk; i++)
				ok &= isfinite(v[i]) && fabsf(v[i]) <= 4.0f;
		}
		if (!ok)
			memset(q, 0, bb);
	}
}

/*
 * Weights w (rows of `type`, any ne2) from uniform [-1, 1) floats through
 * strata_quantize, or random valid blocks where the type has no quantiser.
 */
static void make_weights(struct rig *R, const struct strata_tensor *w)
{
	const int64_t n = w->ne[0] * w->ne[1] * w->ne[2];
	float *src = malloc((size_t)n * sizeof(float));

	ck_assert_ptr_nonnull(src);
	for (int64_t i = 0; i < n; i++)
		src[i] = tu_frand(&R->seed);
	if (strata_quantize(w->type, NULL, NULL, 0) == 0)
		ck_assert_int_eq(strata_quantize(w->type, src, strata_tensor_data(w), n),
				 (int64_t)w->nb[3]);
	else
		random_blocks(R, w->type, strata_tensor_data(w), n);
	free(src);
}

/* ---- MATMUL and GET_ROWS, one weight type per case -------------------------------------- */

/*
 * A product's errors are per output, relative to the sum of the absolute
 * products behind it (max |a - b| / sum_k |w_k x_k|, the scale of a dot
 * product's rounding), so that they do not depend on how large a few
 * outputs happen to be.  Two passes per product:
 *  - x uniform in [-1, 1): the CPU rounds activations to int8 per block
 *    (Q8_0/Q8_1: 32 values, Q8_K: 256), each off by at most amax/254 while
 *    the average |x| is about amax/2: even with all errors of one sign its
 *    error against the exact product stays near 2/254 = 7.9e-3 of that sum
 *    (Q8_0's scale rounded to fp16 adds up to 5e-4); 1.4e-3..4.9e-3 seen.
 *    A device summing in float differs from the CPU by that, one that
 *    rounds activations too by up to twice it: B_MM_QUANT.  Float weights
 *    (F32/F16/BF16) take float activations on both: B_MM_FLOAT.
 *  - x on a grid the int8 rounding keeps exactly ({-c, 0, c}, c = 127/128,
 *    every 32 values holding a c: Q8_0's and Q8_1's scale c/127 = 1/128 is
 *    exact in fp16, Q8_K's -127/c = -128 exact): the CPU's products are
 *    then exact but for float sums, and every weight is read (times c or
 *    0): a wrong scale, a dropped block, a misread row all fail B_MM_GRID.
 * A third check pools the first pass over all of a type's products: the
 * device's error against the exact product within twice the CPU's own.
 */
#define B_MM_GRID 1e-5

struct mm_acc {
	uint32_t type;              /* the type pooled */
	double dc[2], cx[2], dx[2]; /* per pass: device vs CPU, CPU vs exact, device vs exact */
	int n;
};

static double mm_bound(uint32_t type, int grid)
{
	if (grid)
		return B_MM_GRID;
	return type == STRATA_TYPE_F32 || type == STRATA_TYPE_F16 || type == STRATA_TYPE_BF16
		       ? B_MM_FLOAT
		       : B_MM_QUANT;
}

/* x's floats (its gaps too): uniform in [-1, 1), or the grid above. */
static void mm_fill_x(struct rig *R, const struct strata_tensor *x, int grid)
{
	const float c = 127.0f / 128.0f;
	float *p = F(x);

	if (!grid) {
		bo_fill(R, x, -1, 1);
		return;
	}
	for (size_t i = 0; i < bo_extent(x) / 4; i++) {
		const uint32_t r = tu_rand(&R->seed) % 3;

		p[i] = r == 0 ? -c : r == 1 ? 0.0f : c;
	}
	for (int64_t t = 0; t < x->ne[1]; t++)
		for (int64_t i = 0; i < x->ne[0]; i += 32)
			((float *)((char *)p + (size_t)t * x->nb[1]))[i] =
				tu_rand(&R->seed) & 1 ? c : -c;
}

/* y_exact[t][r] of an item in double over the dequantised weights, and sum_k |w x| in *l1. */
static double *mm_exact(const struct strata_matmul_item *it, double **l1)
{
	const struct strata_tensor *w = it->w, *x = it->x, *y = it->y;
	const int64_t rows = w->ne[1], cols = w->ne[0], n = y->ne[1];
	float *wf = malloc((size_t)rows * cols * sizeof(float));
	double *out = malloc((size_t)rows * n * sizeof(double));

	*l1 = malloc((size_t)rows * n * sizeof(double));
	ck_assert(wf && out && *l1);
	strata_dequant(w->type, strata_tensor_data(w), wf, rows * cols);
	for (int64_t t = 0; t < n; t++) {
		const int64_t r = it->rows ? I(it->rows)[t] : t;
		const float *xt = (const float *)((const char *)F(x) + (size_t)r * x->nb[1]);

		for (int64_t o = 0; o < rows; o++) {
			const float *wr = wf + (size_t)o * cols;
			double s = 0, a = 0;

			for (int64_t k = 0; k < cols; k++) {
				const double p = (double)wr[k] * xt[k];

				s += p;
				a += fabs(p);
			}
			out[(size_t)t * rows + o] = s;
			(*l1)[(size_t)t * rows + o] = a > 1e-30 ? a : 1e-30;
		}
	}
	free(wf);
	return out;
}

/*
 * max |got - want| / l1 over y's view: got laid out as y (row stride
 * y->nb[1]); want dense, or NULL to compare with the CPU's y; l1 dense.
 */
static double l1_err(const struct strata_tensor *y, const float *got, const double *want,
		     const double *l1)
{
	double e = 0;

	for (int64_t t = 0; t < y->ne[1]; t++)
		for (int64_t r = 0; r < y->ne[0]; r++) {
			const size_t i = (size_t)t * y->ne[0] + r, o = (size_t)t * y->nb[1] / 4 + r;
			const double w = want ? want[i] : F(y)[o], d = fabs(got[o] - w) / l1[i];

			if (isnan(d))
				return INFINITY;
			e = d > e ? d : e;
		}
	return e;
}

/*
 * After `bo_both` ran a MATMUL: item `it` of it on the device against the CPU
 * and both against the exact product; `backing`, y's whole store when y is
 * a view, must be untouched outside y (the same bytes as the CPU's).
 */
static void mm_judge(struct rig *R, const struct strata_matmul_item *it,
		     const struct strata_tensor *backing, struct mm_acc *acc, int grid,
		     const char *what)
{
	const uint32_t type = it->w->type;
	const struct strata_tensor *y = it->y;
	char *dev_b = bo_down(R, backing);
	const size_t off = y->offset - backing->offset, n = bo_extent(backing) / 4;
	double *l1, *ex = mm_exact(it, &l1), dc, cx, dx;
	uint8_t *in = calloc(n, 1);
	float *dev_y;
	long outside = 0;

	ck_assert_ptr_nonnull(in);
	for (int64_t t = 0; t < y->ne[1]; t++)
		memset(in + (off + (size_t)t * y->nb[1]) / 4, 1, (size_t)y->ne[0]);
	for (size_t i = 0; i < n; i++)
		outside += !in[i] && memcmp(dev_b + 4 * i, (char *)F(backing) + 4 * i, 4);
	dev_y = (float *)(dev_b + off);
	dc = l1_err(y, dev_y, NULL, l1);
	cx = l1_err(y, F(y), ex, l1);
	dx = l1_err(y, dev_y, ex, l1);
	bo_check(R, STRATA_OP_MATMUL, dc, mm_bound(type, grid),
		 "%s %s, %s x (vs exact: device %.2e, CPU %.2e)", strata_type_name(type), what,
		 grid ? "grid" : "random", dx, cx);
	bo_check(R, STRATA_OP_MATMUL, (double)outside, 0, "%s %s: %ld floats written outside y",
		 strata_type_name(type), what, outside);
	if (type == acc->type) { /* a second type of a multi-item op is judged, not pooled */
		acc->dc[grid] = !(dc <= acc->dc[grid]) ? dc : acc->dc[grid];
		acc->cx[grid] = !(cx <= acc->cx[grid]) ? cx : acc->cx[grid];
		acc->dx[grid] = !(dx <= acc->dx[grid]) ? dx : acc->dx[grid];
		acc->n += !grid;
	}
	if (getenv("STRATA_OPS_MMDEBUG"))
		printf("mm %s %s %s: dc %.3e cx %.3e dx %.3e\n", strata_type_name(type), what,
		       grid ? "grid" : "random", dc, cx, dx);
	free(in);
	free(l1);
	free(ex);
	free(dev_b);
}

/*
 * Products of one weight W [cols, rows] (at a nonzero offset) with x
 * [cols, n_tok] for each n_tok of toks[0..nt), both passes; x and y with
 * row strides ldx and ldy (>= cols, rows: strided views when larger).
 */
static void mm_shape(struct rig *R, uint32_t type, int64_t rows, int64_t cols, const int64_t *toks,
		     int nt, int64_t ldx, int64_t ldy, struct mm_acc *acc)
{
	const int keep = R->n_ar;
	const size_t wb = strata_type_row_bytes(type, cols) * (size_t)rows;
	int64_t nmax = 0;

	for (int i = 0; i < nt; i++)
		nmax = toks[i] > nmax ? toks[i] : nmax;
	{
		struct arena *A = bo_ar_new(R, wb + 4096 + ((size_t)ldx + ldy) * nmax * 4,
					    STRATA_BUF_USE_WORK);
		struct strata_tensor pad = f32(A, 8, 1), W = bo_ar_t(A, type, cols, rows, 1);
		struct strata_tensor xb = f32(A, ldx, nmax), yb = f32(A, ldy, nmax);

		(void)pad;
		make_weights(R, &W);
		bo_ar_up(R, A, 1);
		for (int i = 0; i < nt; i++)
			for (int grid = 0; grid < 2; grid++) {
				struct strata_tensor xv = strata_t_cols(&xb, 0, toks[i]);
				struct strata_tensor yv = strata_t_cols(&yb, 0, toks[i]), X = xv,
						     Y = yv;
				struct strata_matmul_item it = { &W, &X, NULL, &Y };
				struct strata_op op = { .code = STRATA_OP_MATMUL,
							.p.mm = { &it, 1 } };
				char what[96];

				X.ne[0] = cols;
				Y.ne[0] = rows;
				mm_fill_x(R, &xv, grid);
				/* the gaps of a strided y must keep these */
				bo_fill(R, &yv, -1, 1);
				bo_up(R, &xv);
				bo_up(R, &yv);
				snprintf(what, sizeof(what), "rows %lld cols %lld n_tok %lld%s%s",
					 (long long)rows, (long long)cols, (long long)toks[i],
					 ldx > cols ? " x strided" : "",
					 ldy > rows ? " y strided" : "");
				bo_both(R, &op, what);
				mm_judge(R, &it, &yv, acc, grid, what);
			}
	}
	bo_ar_drop(R, keep);
}

/* Run a MATMUL of items it[0..n) on both and judge each, in both passes over x (and x2). */
static void mm_items(struct rig *R, struct strata_matmul_item *it, uint32_t n,
		     const struct strata_tensor *const *backing, const struct strata_tensor *x,
		     const struct strata_tensor *x2, struct mm_acc *acc, const char *what)
{
	struct strata_op op = { .code = STRATA_OP_MATMUL, .p.mm = { it, n } };

	for (int grid = 0; grid < 2; grid++) {
		mm_fill_x(R, x, grid);
		bo_up(R, x);
		if (x2) {
			mm_fill_x(R, x2, grid);
			bo_up(R, x2);
		}
		bo_both(R, &op, what);
		for (uint32_t i = 0; i < n; i++)
			mm_judge(R, &it[i], backing && backing[i] ? backing[i] : it[i].y, acc, grid,
				 what);
	}
}

/*
 * A MoE layer's two MATMULs as moe.c issues them, with weights of `type`:
 * gate and up of E experts (views of 3-D tensors, each gathering its
 * tokens' rows of the shared x: repeated and out of order), the shared
 * expert's gate and up in `type2` (a second type in the same op), and its
 * F32 gate of one row; then the experts' downs and the shared down.  And
 * attention's q/k/v: three items of two types sharing a strided x, one y
 * strided.
 */
static void mm_many(struct rig *R, uint32_t type, uint32_t type2, struct mm_acc *acc)
{
	enum { E = 6, N = 17, MAXC = 12 };
	const uint32_t blk = strata_type_block(type) > 32 ? strata_type_block(type) : 32;
	const uint32_t blk2 = strata_type_block(type2) > 32 ? strata_type_block(type2) : 32;
	const int64_t ff = blk > blk2 ? blk : blk2, cols = 2 * ff, ldx = cols + 16;
	const int keep = R->n_ar;
	struct arena *A = bo_ar_new(R, 40u << 20, STRATA_BUF_USE_WORK);
	struct strata_tensor gate = bo_ar_t(A, type, cols, ff, E);
	struct strata_tensor upw = bo_ar_t(A, type, cols, ff, E);
	struct strata_tensor down = bo_ar_t(A, type, ff, cols, E);
	struct strata_tensor gsh = bo_ar_t(A, type2, cols, ff, 1);
	struct strata_tensor ush = bo_ar_t(A, type2, cols, ff, 1);
	struct strata_tensor dsh = bo_ar_t(A, type2, ff, cols, 1);
	struct strata_tensor ginp = f32(A, cols, 1);
	struct strata_tensor x = f32(A, cols, N), xs = f32(A, ldx, N), xsv = xs;
	struct strata_tensor tok = i32(A, E * MAXC, 1), g = f32(A, ff, E * MAXC);
	struct strata_tensor u = f32(A, ff, E * MAXC), d = f32(A, cols, E * MAXC);
	struct strata_tensor gs = f32(A, ff, N), us = f32(A, ff, N), sg = f32(A, 1, N);
	struct strata_tensor gin = f32(A, ff, E * MAXC), out = f32(A, cols, N);
	struct strata_tensor q = f32(A, ff, N), k = f32(A, ff, N), vb = f32(A, ff + 5, N), v = vb;
	struct strata_tensor we[3 * E], rows[E], ys[4 * E];
	const struct strata_tensor *backing[3] = { NULL, NULL, &vb };
	struct strata_matmul_item it[2 * E + 3];
	uint32_t ni = 0, s0 = 0;
	char what[96];

	make_weights(R, &gate);
	make_weights(R, &upw);
	make_weights(R, &down);
	make_weights(R, &gsh);
	make_weights(R, &ush);
	make_weights(R, &dsh);
	bo_fill(R, &ginp, -1, 1);
	bo_fill(R, &gs, -1, 1);
	for (int e = 0; e < E; e++) {
		/* repeats: cnt > N/E on average */
		const uint32_t cnt = 1 + tu_rand(&R->seed) % MAXC;

		we[3 * e] = strata_t_expert(&gate, (uint32_t)e);
		we[3 * e + 1] = strata_t_expert(&upw, (uint32_t)e);
		we[3 * e + 2] = strata_t_expert(&down, (uint32_t)e);
		rows[e] = strata_t_span(&tok, s0, cnt);
		for (uint32_t j = 0; j < cnt; j++)
			I(&tok)[s0 + j] = (int32_t)(tu_rand(&R->seed) % N);
		ys[4 * e] = strata_t_cols(&g, s0, cnt);
		ys[4 * e + 1] = strata_t_cols(&u, s0, cnt);
		ys[4 * e + 2] = strata_t_cols(&gin, s0, cnt);
		ys[4 * e + 3] = strata_t_cols(&d, s0, cnt);
		it[ni++] = (struct strata_matmul_item){ &we[3 * e], &x, &rows[e], &ys[4 * e] };
		it[ni++] =
			(struct strata_matmul_item){ &we[3 * e + 1], &x, &rows[e], &ys[4 * e + 1] };
		s0 += cnt;
	}
	it[ni++] = (struct strata_matmul_item){ &gsh, &x, NULL, &gs };
	it[ni++] = (struct strata_matmul_item){ &ush, &x, NULL, &us };
	if (strata_backend_supports(R->dev, STRATA_OP_MATMUL, STRATA_TYPE_F32))
		it[ni++] = (struct strata_matmul_item){ &ginp, &x, NULL, &sg };
	bo_ar_up(R, A, 1);
	snprintf(what, sizeof(what), "+ %s: MoE gate/up, %d experts gathering %u rows",
		 strata_type_name(type2), E, s0);
	mm_items(R, it, ni, NULL, &x, NULL, acc, what);
	/* the downs read gin, the shared down gs: both refilled by each pass */
	ni = 0;
	for (int e = 0; e < E; e++)
		it[ni++] = (struct strata_matmul_item){ &we[3 * e + 2], &ys[4 * e + 2], NULL,
							&ys[4 * e + 3] };
	it[ni++] = (struct strata_matmul_item){ &dsh, &gs, NULL, &out };
	snprintf(what, sizeof(what), "+ %s: MoE downs", strata_type_name(type2));
	mm_items(R, it, ni, NULL, &gin, &gs, acc, what);
	/* q, k, v: x strided (ld cols + 16), v's y strided (ld ff + 5) */
	xsv.ne[0] = cols;
	v.ne[0] = ff;
	it[0] = (struct strata_matmul_item){ &gsh, &xsv, NULL, &q };
	it[1] = (struct strata_matmul_item){ &we[3], &xsv, NULL, &k }; /* expert 1's gate */
	it[2] = (struct strata_matmul_item){ &ush, &xsv, NULL, &v };
	snprintf(what, sizeof(what), "+ %s: q/k/v, x and v strided", strata_type_name(type2));
	bo_fill(R, &vb, -1, 1);
	bo_up(R, &vb);
	mm_items(R, it, 3, backing, &xs, NULL, acc, what);
	bo_ar_drop(R, keep);
}

/* GET_ROWS of `type`: a table of 300 rows, ids repeated and out of order, dst strided too. */
static void get_rows_type(struct rig *R, uint32_t type)
{
	const uint32_t blk = strata_type_block(type);
	const int64_t colss[2] = { blk, blk == 1 ? 67 : 3 * (int64_t)blk }, ns[3] = { 1, 7, 64 };

	if (!bo_dev_takes(R, STRATA_OP_GET_ROWS, type))
		return;
	for (int c = 0; c < 2; c++)
		for (int j = 0; j < 3; j++) {
			const int keep = R->n_ar;
			const int64_t cols = colss[c], n = ns[j], ld = j == 2 ? cols + 3 : cols;
			const size_t size =
				strata_type_row_bytes(type, cols) * 300 + 8192 + (size_t)ld * n * 4;
			struct arena *A = bo_ar_new(R, size, STRATA_BUF_USE_WORK);
			struct strata_tensor W = bo_ar_t(A, type, cols, 300, 1), ids = i32(A, n, 1);
			struct strata_tensor db = f32(A, ld, n), dst = db;
			struct strata_op op = bo_op2(STRATA_OP_GET_ROWS, &dst, &W, &ids);

			dst.ne[0] = cols;
			make_weights(R, &W);
			for (int64_t i = 0; i < n; i++) { /* the first and the last row too */
				int32_t id = (int32_t)(tu_rand(&R->seed) % 300);

				I(&ids)[i] = i == 0 ? 299 : i == 1 ? 0 : id;
			}
			bo_fill(R, &db, -1, 1);
			bo_ar_up(R, A, 1);
			bo_both(R, &op, strata_type_name(type));
			bo_cmp(R, STRATA_OP_GET_ROWS, &db, B_ROWS, "%s cols %lld, %lld ids%s",
			       strata_type_name(type), (long long)cols, (long long)n,
			       ld > cols ? ", dst strided" : "");
			bo_ar_drop(R, keep);
		}
	bo_st->type_checked[1][type]++;
}

/* Every product shape of one type; then the multi-item ops; then the pooled check. */
static void matmul_type(struct rig *R, uint32_t type)
{
	static const int64_t rowss[4] = { 1, 7, 33, 256 }, toks[7] = { 1, 2, 3, 8, 17, 64, 300 };
	static const int64_t toks2[4] = { 1, 3, 17, 300 }, big[2] = { 1, 64 };
	static const int64_t t17[1] = { 17 }, t64[1] = { 64 };
	const uint32_t blk = strata_type_block(type);
	const int64_t c1 = blk, c2 = blk == 1 ? 257 : blk == 32 ? 9 * 32 : 3 * (int64_t)blk;
	struct mm_acc acc = { .type = type };
	uint32_t type2 = type;

	if (!bo_dev_takes(R, STRATA_OP_MATMUL, type))
		return;
	for (int r = 0; r < 4; r++) {
		mm_shape(R, type, rowss[r], c1, toks, 7, c1, rowss[r], &acc);
		mm_shape(R, type, rowss[r], c2, toks2, 4, c2, rowss[r], &acc);
	}
	/* a model's size: 2048 columns, an odd number of rows; strided views */
	mm_shape(R, type, 1030, 2048, big, 2, 2048, 1030, &acc);
	mm_shape(R, type, 33, c2, t17, 1, c2, 40, &acc);
	mm_shape(R, type, 7, c2, t64, 1, c2 + 8, 9, &acc);
	/* the next type the device takes for the second type of the multi-item ops */
	for (int i = 1; i <= bo_n_types; i++) {
		uint32_t t2 = bo_types[(size_t)(i + (int)(type % 7)) % (size_t)bo_n_types];

		if (t2 != type && strata_backend_supports(R->dev, STRATA_OP_MATMUL, t2)) {
			type2 = t2;
			break;
		}
	}
	mm_many(R, type, type2, &acc);
	bo_check(R, STRATA_OP_MATMUL, acc.dx[0], 2 * acc.cx[0] + B_MM_EXACT_SLACK,
		 "%s, all %d products against the exact ones (the CPU's own error %.2e)",
		 strata_type_name(type), acc.n, acc.cx[0]);
	printf("MATMUL %-7s %3d products x 2: device vs CPU <= %.2e random x (bound %.0e), "
	       "%.2e grid x (bound %.0e); vs exact: device %.2e and %.2e, CPU %.2e and %.2e\n",
	       strata_type_name(type), acc.n, acc.dc[0], mm_bound(type, 0), acc.dc[1], B_MM_GRID,
	       acc.dx[0], acc.dx[1], acc.cx[0], acc.cx[1]);
	bo_st->type_checked[0][type]++;
}

START_TEST(weights)
{
	struct rig R;
	const uint32_t type = bo_types[_i];

	RIG(&R, 100 + type, "%s", strata_type_name(type));
	get_rows_type(&R, type);
	matmul_type(&R, type);
	bo_rig_close(&R);
}
END_TEST

void bo_mm_cases(TCase *tc)
{
	tcase_add_loop_test(tc, weights, 0, bo_n_types);
}
