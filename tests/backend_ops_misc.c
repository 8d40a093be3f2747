/*
 * backend_ops_misc.c - check_backend_ops's cases of the norms, rope, the
 * element-wise ops, copies and fills, MoE routing and combining, and
 * qwen4exp's ops (backend_ops.h).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_ops.h"

/* ---- norms, rope, element-wise ops -------------------------------------------------------- */

START_TEST(rms_norm)
{
	struct rig R;
	static const int64_t ns[3] = { 1, 7, 64 };

	RIG(&R, 1, "norms");
	if (!bo_dev_takes(&R, STRATA_OP_RMS_NORM, STRATA_TYPE_F32))
		goto out;
	for (int j = 0; j < 3; j++) {
		const int64_t n = ns[j];
		struct arena *A = bo_ar_new(&R, 16u << 20, STRATA_BUF_USE_WORK);
		struct strata_tensor x = f32(A, 2048, n), xn = f32(A, 2048, n), w = f32(A, 2048, 1);
		struct strata_tensor q = f32(A, 128 * 32, n), qw = f32(A, 128, 1);
		struct strata_tensor k = f32(A, 256 * 2, n), kw = f32(A, 256, 1);
		struct strata_tensor odd = f32(A, 67, n), o4 = f32(A, 4, 16 * n);
		struct strata_tensor res = f32(A, 64 * 4, n), hxn = f32(A, 64 * 4, n);
		struct strata_tensor hw = f32(A, 64 * 4, 1);
		struct strata_tensor qr = strata_t_f32(q.buf, q.offset, 128, 32 * n);
		struct strata_tensor kr = strata_t_f32(k.buf, k.offset, 256, 2 * n);
		struct strata_op op;

		bo_fill(&R, &x, -3, 3);
		bo_fill(&R, &xn, -1, 1);
		bo_fill(&R, &w, 0.5f, 1.5f);
		bo_fill(&R, &q, -2, 2);
		bo_fill(&R, &qw, 0.5f, 1.5f);
		bo_fill(&R, &k, -2, 2);
		bo_fill(&R, &kw, 0.5f, 1.5f);
		bo_fill(&R, &odd, -1, 1);
		bo_fill(&R, &o4, -1, 1);
		bo_fill(&R, &res, -2, 2);
		bo_fill(&R, &hxn, -1, 1);
		bo_fill(&R, &hw, 0.5f, 1.5f);
		bo_ar_up(&R, A, 1);
		/* the layer norm: x into xn with a weight, eps 1e-6 */
		op = bo_op2(STRATA_OP_RMS_NORM, &xn, &x, &w);
		op.p.norm.eps = 1e-6f;
		bo_both(&R, &op, "x -> xn");
		bo_cmp(&R, STRATA_OP_RMS_NORM, &xn, B_NORM, "[2048, %lld] with weight",
		       (long long)n);
		/* q_norm / k_norm: heads in place, views [head_dim, heads * n] */
		op = bo_op2(STRATA_OP_RMS_NORM, &qr, &qr, &qw);
		op.p.norm.eps = 1e-6f;
		bo_both(&R, &op, "q heads");
		bo_cmp(&R, STRATA_OP_RMS_NORM, &q, B_NORM, "q heads [128, 32 x %lld] in place",
		       (long long)n);
		op = bo_op2(STRATA_OP_RMS_NORM, &kr, &kr, &kw);
		op.p.norm.eps = 1e-5f;
		bo_both(&R, &op, "k heads");
		bo_cmp(&R, STRATA_OP_RMS_NORM, &k, B_NORM, "k heads [256, 2 x %lld] in place",
		       (long long)n);
		/* no weight; odd row lengths */
		op = bo_op2(STRATA_OP_RMS_NORM, &odd, &odd, NULL);
		op.p.norm.eps = 1e-5f;
		bo_both(&R, &op, "odd");
		bo_cmp(&R, STRATA_OP_RMS_NORM, &odd, B_NORM, "[67, %lld] without weight",
		       (long long)n);
		op = bo_op2(STRATA_OP_RMS_NORM, &o4, &o4, NULL);
		bo_both(&R, &op, "rows of 4");
		bo_cmp(&R, STRATA_OP_RMS_NORM, &o4, B_NORM, "[4, 16 x %lld] without weight",
		       (long long)n);
		/* qwen4exp's grouped norm: one stream of each row (a strided view) at a time */
		for (int c = 0; c < 4; c++) {
			struct strata_tensor d = strata_t_cols(&hxn, 0, n),
					     s = strata_t_cols(&res, 0, n);
			struct strata_tensor ws = strata_t_span(&hw, 64 * c, 64);

			d.ne[0] = s.ne[0] = 64;
			d.offset += (size_t)c * 64 * 4;
			s.offset += (size_t)c * 64 * 4;
			op = bo_op2(STRATA_OP_RMS_NORM, &d, &s, &ws);
			op.p.norm.eps = 1e-5f;
			bo_both(&R, &op, "stream");
		}
		bo_cmp(&R, STRATA_OP_RMS_NORM, &hxn, B_NORM, "4 streams of [64 of 256, %lld]",
		       (long long)n);
		bo_ar_drop(&R, 0);
	}
out:
	bo_rig_close(&R);
}
END_TEST

START_TEST(rope)
{
	static const struct {
		int hd, heads, n_rot;
		float base;
	} cf[] = {
		{ 64, 8, 64, 10000.0f },   /* llama-like */
		{ 128, 32, 128, 1e6f },    /* qwen3 */
		{ 128, 12, 64, 10000.0f }, /* GLM-4.5: half the head rotates */
		{ 256, 16, 64, 1e7f },     /* qwen3next: a quarter */
		{ 32, 4, 8, 10000.0f },    /* the syn models */
	};
	static const uint32_t poss[3] = { 0, 40, 3000 };
	static const int64_t ns[3] = { 1, 7, 64 };
	struct rig R;

	RIG(&R, 2, "rope");
	if (!bo_dev_takes(&R, STRATA_OP_ROPE, STRATA_TYPE_F32))
		goto out;
	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++)
		for (int mode = 0; mode < 2; mode++)
			for (int j = 0; j < 3; j++) {
				const int64_t n = ns[j], hd = cf[c].hd, nh = cf[c].heads;
				struct arena *A = bo_ar_new(&R, 8u << 20, STRATA_BUF_USE_WORK);
				struct strata_tensor q = f32(A, hd * nh, n),
						     fr = f32(A, cf[c].n_rot / 2, 1);
				struct strata_tensor qh = strata_t_heads(&q, hd, nh, n);
				struct strata_op op = bo_op2(STRATA_OP_ROPE, &qh, &qh, &fr);

				bo_fill(&R, &q, -2, 2);
				bo_inv_freq(&fr, cf[c].n_rot, cf[c].base);
				bo_ar_up(&R, A, 1);
				op.p.rope.pos = poss[j];
				op.p.rope.n_rot = (uint32_t)cf[c].n_rot;
				op.p.rope.mode =
					mode ? STRATA_ROPE_MODE_NEOX : STRATA_ROPE_MODE_NORM;
				bo_both(&R, &op, "rope");
				bo_cmp(&R, STRATA_OP_ROPE, &q, B_ROPE,
				       "%s head_dim %d n_rot %d, %lld heads x %lld at pos %u",
				       mode ? "neox" : "norm", cf[c].hd, cf[c].n_rot, (long long)nh,
				       (long long)n, poss[j]);
				bo_ar_drop(&R, 0);
			}
out:
	bo_rig_close(&R);
}
END_TEST

/* ADD, SWIGLU, SIGMOID_MUL, SCALE_SILU as the layer loops issue them. */
START_TEST(elementwise)
{
	static const int64_t ns[3] = { 1, 7, 64 };
	struct rig R;

	RIG(&R, 3, "element-wise");
	for (int j = 0; j < 3; j++) {
		const int64_t n = ns[j], hd = 128, nh = 8;
		struct arena *A = bo_ar_new(&R, 32u << 20, STRATA_BUF_USE_WORK);
		struct strata_tensor x = f32(A, 2048, n), xn = f32(A, 2048, n), o = f32(A, 2048, n);
		struct strata_tensor q = f32(A, hd * nh, n), bq = f32(A, hd * nh, 1);
		struct strata_tensor g = f32(A, 768, 8 * n), u = f32(A, 768, 8 * n);
		struct strata_tensor odd = f32(A, 67, n), odd2 = f32(A, 67, n);
		struct strata_tensor att = f32(A, hd * nh, n), qg = f32(A, 2 * hd * nh, n);
		struct strata_tensor sg = f32(A, 1, n), lo = f32(A, 8, n);
		struct strata_tensor ah = strata_t_heads(&att, hd, nh, n);
		struct strata_tensor gate = strata_t_heads(&qg, hd, nh, n);
		struct strata_op op;

		gate.nb[1] = 2 * hd * sizeof(float); /* ctx_heads_of(qg, .., 2 hd, hd floats in) */
		gate.offset += hd * sizeof(float);
		bo_fill(&R, &x, -1, 1);
		bo_fill(&R, &xn, -1, 1);
		bo_fill(&R, &o, -1, 1);
		bo_fill(&R, &q, -1, 1);
		bo_fill(&R, &bq, -1, 1);
		bo_fill(&R, &g, -6, 6);
		bo_fill(&R, &u, -2, 2);
		bo_fill(&R, &odd, -6, 6);
		bo_fill(&R, &odd2, -2, 2);
		bo_fill(&R, &att, -1, 1);
		bo_fill(&R, &qg, -6, 6);
		bo_fill(&R, &sg, -6, 6);
		bo_fill(&R, &lo, -6, 6);
		bo_ar_up(&R, A, 1);
		if (bo_dev_takes(&R, STRATA_OP_ADD, STRATA_TYPE_F32)) {
			op = bo_op2(STRATA_OP_ADD, &o, &x, &xn);
			bo_both(&R, &op, "add");
			bo_cmp(&R, STRATA_OP_ADD, &o, B_EXACT, "[2048, %lld] into another",
			       (long long)n);
			op = bo_op2(STRATA_OP_ADD, &x, &x, &xn);
			bo_both(&R, &op, "add in place");
			bo_cmp(&R, STRATA_OP_ADD, &x, B_EXACT, "[2048, %lld] in place",
			       (long long)n);
			op = bo_op2(STRATA_OP_ADD, &q, &q, &bq);
			bo_both(&R, &op, "bias");
			bo_cmp(&R, STRATA_OP_ADD, &q, B_EXACT, "a bias row [1024, 1] over %lld",
			       (long long)n);
			op = bo_op2(STRATA_OP_ADD, &odd, &odd, &odd2);
			bo_both(&R, &op, "odd");
			bo_cmp(&R, STRATA_OP_ADD, &odd, B_EXACT, "[67, %lld]", (long long)n);
			bo_fill(&R, &odd, -6, 6);
			bo_up(&R, &odd);
		}
		if (bo_dev_takes(&R, STRATA_OP_SWIGLU, STRATA_TYPE_F32)) {
			op = bo_op2(STRATA_OP_SWIGLU, &g, &g, &u);
			bo_both(&R, &op, "swiglu");
			bo_cmp(&R, STRATA_OP_SWIGLU, &g, B_ELEM, "experts' [768, %lld] in place",
			       (long long)(8 * n));
			op = bo_op2(STRATA_OP_SWIGLU, &odd2, &odd, &odd2);
			bo_both(&R, &op, "swiglu odd");
			bo_cmp(&R, STRATA_OP_SWIGLU, &odd2, B_ELEM, "[67, %lld] into the up input",
			       (long long)n);
		}
		if (bo_dev_takes(&R, STRATA_OP_SIGMOID_MUL, STRATA_TYPE_F32)) {
			op = bo_op2(STRATA_OP_SIGMOID_MUL, &ah, &ah, &gate);
			bo_both(&R, &op, "gated attention");
			bo_cmp(&R, STRATA_OP_SIGMOID_MUL, &att, B_ELEM,
			       "attention's output gate, a strided view [128, 8, %lld]",
			       (long long)n);
			op = bo_op2(STRATA_OP_SIGMOID_MUL, &xn, &xn, &sg);
			bo_both(&R, &op, "per-row gate");
			bo_cmp(&R, STRATA_OP_SIGMOID_MUL, &xn, B_ELEM, "a gate per row [1, %lld]",
			       (long long)n);
		}
		if (bo_dev_takes(&R, STRATA_OP_SCALE_SILU, STRATA_TYPE_F32)) {
			op = bo_op2(STRATA_OP_SCALE_SILU, &lo, &lo, NULL);
			op.p.scale.s = 0.25f;
			bo_both(&R, &op, "scale silu");
			bo_cmp(&R, STRATA_OP_SCALE_SILU, &lo, B_ELEM, "[8, %lld] in place, s 1/4",
			       (long long)n);
			op = bo_op2(STRATA_OP_SCALE_SILU, &o, &x, NULL);
			op.p.scale.s = 1.5f;
			bo_both(&R, &op, "scale silu");
			bo_cmp(&R, STRATA_OP_SCALE_SILU, &o, B_ELEM, "[2048, %lld] into another",
			       (long long)n);
		}
		bo_ar_drop(&R, 0);
	}
	bo_rig_close(&R);
}
END_TEST

/* A view [len, heads, n] of every row's heads (hstride floats each), skip floats in. */
static struct strata_tensor heads_of(const struct strata_tensor *t, int64_t len, int64_t heads,
				     int64_t n, size_t hstride, size_t skip)
{
	struct strata_tensor v = strata_t_heads(t, len, heads, n);

	v.nb[1] = hstride * sizeof(float);
	v.offset += skip * sizeof(float);
	return v;
}

/* COPY between views (forward.c's unpack, the gated q, the indexer's cache, MTP's halves); FILL. */
START_TEST(copy_fill)
{
	static const int64_t ns[3] = { 1, 7, 64 };
	struct rig R;

	RIG(&R, 4, "copies");
	for (int j = 0; j < 3; j++) {
		const int64_t n = ns[j], nk = 4, dk = 32, rv = 64, hd = 64, nh = 4, e = 96;
		const size_t grp = (size_t)(2 * dk + 2 * rv);
		struct arena *A = bo_ar_new(&R, 16u << 20, STRATA_BUF_USE_WORK);
		struct strata_tensor qkvz = f32(A, nk * (int64_t)grp, n);
		struct strata_tensor qkv = f32(A, 2 * nk * dk + nk * rv, n), z = f32(A, nk * rv, n);
		struct strata_tensor qg = f32(A, 2 * hd * nh, n), q = f32(A, hd * nh, n);
		struct strata_tensor cache = f32(A, 16, 336), ik = f32(A, 16, n);
		struct strata_tensor cat = f32(A, 2 * e, n), xn = f32(A, e, n);
		struct strata_tensor st = bo_t3(&A->h, A->used, 16, 16, 8);
		struct strata_op op;

		A->used += st.nb[3];
		bo_fill(&R, &qkvz, -1, 1);
		bo_fill(&R, &qkv, -1, 1);
		bo_fill(&R, &z, -1, 1);
		bo_fill(&R, &qg, -1, 1);
		bo_fill(&R, &q, -1, 1);
		bo_fill(&R, &cache, -1, 1);
		bo_fill(&R, &ik, -1, 1);
		bo_fill(&R, &cat, -1, 1);
		bo_fill(&R, &xn, -1, 1);
		bo_fill(&R, &st, -1, 1);
		bo_ar_up(&R, A, 1);
		if (bo_dev_takes(&R, STRATA_OP_COPY, STRATA_TYPE_F32)) {
			const struct {
				const struct strata_tensor *dst;
				size_t at, from;
				int64_t len;
			} part[4] = {
				{ &qkv, 0, 0, dk },
				{ &qkv, (size_t)(nk * dk), (size_t)dk, dk },
				{ &qkv, (size_t)(2 * nk * dk), (size_t)(2 * dk), rv },
				{ &z, 0, (size_t)(2 * dk + rv), rv },
			};
			struct strata_tensor to, from, qh = strata_t_heads(&q, hd, nh, n);
			struct strata_tensor qs = heads_of(&qg, hd, nh, n, 2 * (size_t)hd, 0);
			struct strata_tensor col = strata_t_cols(&cache, 40, n), lo = cat, hi = cat;

			for (int i = 0; i < 4; i++) {
				from = heads_of(&qkvz, part[i].len, nk, n, grp, part[i].from);
				to = heads_of(part[i].dst, part[i].len, nk, n, (size_t)part[i].len,
					      part[i].at);
				op = bo_op2(STRATA_OP_COPY, &to, &from, NULL);
				bo_both(&R, &op, "unpack");
			}
			bo_cmp(&R, STRATA_OP_COPY, &qkv, B_EXACT,
			       "qwen3next's unpacking into qkv, %lld", (long long)n);
			bo_cmp(&R, STRATA_OP_COPY, &z, B_EXACT,
			       "qwen3next's unpacking into z, %lld", (long long)n);
			op = bo_op2(STRATA_OP_COPY, &qh, &qs, NULL);
			bo_both(&R, &op, "gated q");
			bo_cmp(&R, STRATA_OP_COPY, &q, B_EXACT, "q out of [q, gate] heads, %lld",
			       (long long)n);
			op = bo_op2(STRATA_OP_COPY, &col, &ik, NULL);
			bo_both(&R, &op, "cache columns");
			bo_cmp(&R, STRATA_OP_COPY, &cache, B_EXACT,
			       "%lld columns into a [16, 336] cache at 40", (long long)n);
			lo.ne[0] = hi.ne[0] = e;
			hi.offset += (size_t)e * sizeof(float);
			op = bo_op2(STRATA_OP_COPY, &lo, &xn, NULL);
			bo_both(&R, &op, "lo");
			op = bo_op2(STRATA_OP_COPY, &hi, &xn, NULL);
			bo_both(&R, &op, "hi");
			bo_cmp(&R, STRATA_OP_COPY, &cat, B_EXACT, "both halves of [2 x 96, %lld]",
			       (long long)n);
		}
		if (bo_dev_takes(&R, STRATA_OP_FILL, STRATA_TYPE_F32)) {
			struct strata_tensor mid = strata_t_cols(&cat, n / 2, n - n / 2);

			op = bo_op2(STRATA_OP_FILL, &st, NULL, NULL);
			op.p.fill.value = 0.0f;
			bo_both(&R, &op, "fill state");
			bo_cmp(&R, STRATA_OP_FILL, &st, B_EXACT, "a state [16, 16, 8] with 0");
			op = bo_op2(STRATA_OP_FILL, &mid, NULL, NULL);
			op.p.fill.value = 1.5f;
			bo_both(&R, &op, "fill columns");
			bo_cmp(&R, STRATA_OP_FILL, &cat, B_EXACT,
			       "columns %lld.. of [192, %lld] with 1.5", (long long)(n / 2),
			       (long long)n);
		}
		bo_ar_drop(&R, 0);
	}
	bo_rig_close(&R);
}
END_TEST

/* ---- routing ----------------------------------------------------------------------------- */

/*
 * Router logits of one token whose top k + 1 scores (probability + bias,
 * computed in double as the CPU does in float) are apart by 0.1% at least:
 * the choice is then the same under any float rounding.
 */
static void route_logits(struct rig *R, float *lg, const float *bias, uint32_t ne, uint32_t k,
			 int sigmoid, float lo, float hi)
{
	double *s = malloc(ne * sizeof(double));

	ck_assert_ptr_nonnull(s);
	for (int tries = 0;; tries++) {
		double mx = -INFINITY, sum = 0, top[16];
		int ok = 1;

		ck_assert_int_lt(tries, 10000);
		for (uint32_t e = 0; e < ne; e++) {
			lg[e] = bo_frand(R, lo, hi);
			mx = lg[e] > mx ? lg[e] : mx;
		}
		for (uint32_t e = 0; e < ne; e++) {
			s[e] = sigmoid ? 1.0 / (1.0 + exp(-lg[e])) : exp(lg[e] - mx);
			sum += s[e];
		}
		for (uint32_t e = 0; e < ne; e++)
			s[e] = (sigmoid ? s[e] : s[e] / sum) + (bias ? bias[e] : 0);
		/* the k + 1 best, in order */
		for (uint32_t j = 0; j <= k && j < ne; j++) {
			double b = -INFINITY;

			for (uint32_t e = 0; e < ne; e++) {
				int taken = 0;

				for (uint32_t i = 0; i < j; i++)
					taken |= s[e] == top[i];
				if (!taken && s[e] > b)
					b = s[e];
			}
			top[j] = b;
			if (j && !(top[j - 1] - top[j] > 1e-3 * fabs(top[j - 1])))
				ok = 0;
		}
		if (ok)
			break;
	}
	free(s);
}

START_TEST(moe_route)
{
	static const struct {
		uint32_t ne, k;
		int sigmoid, bias, norm;
		float scale, lo, hi;
	} cf[] = {
		{ 8, 2, 0, 0, 1, 1.0f, -4, 4 },     /* syn-qwen3moe */
		{ 128, 8, 0, 0, 1, 1.0f, -4, 4 },   /* Qwen3-30B-A3B */
		{ 512, 10, 0, 0, 1, 1.0f, -4, 4 },  /* Qwen3-Next-80B */
		{ 128, 8, 1, 1, 1, 2.5f, -4, 4 },   /* GLM-4.5: sigmoid, bias, scale */
		{ 64, 6, 0, 0, 0, 1.0f, -4, 4 },    /* no renormalisation */
		{ 8, 2, 1, 1, 0, 1.5f, -4, 4 },     /* sigmoid + bias without norm */
		{ 64, 8, 1, 0, 1, 1.0f, -13, -11 }, /* tiny weights: the clamp at 2^-14 */
	};
	static const int64_t ns[3] = { 1, 7, 64 };
	struct rig R;

	RIG(&R, 5, "routing");
	if (!bo_dev_takes(&R, STRATA_OP_MOE_ROUTE, STRATA_TYPE_F32))
		goto out;
	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++)
		for (int j = 0; j < 3; j++) {
			const int64_t n = ns[j];
			const uint32_t ne = cf[c].ne, k = cf[c].k;
			struct arena *A = bo_ar_new(&R, 4u << 20, STRATA_BUF_USE_WORK);
			struct strata_tensor lg = f32(A, ne, n), b = f32(A, ne, 1);
			struct strata_tensor w = f32(A, k, n), ids = i32(A, k, n);
			struct strata_op op = {
				.code = STRATA_OP_MOE_ROUTE,
				.dst = &w,
				.aux = &ids,
				.src = { &lg, cf[c].bias ? &b : NULL },
				.p.route = { .gating = cf[c].sigmoid ? STRATA_GATING_MODE_SIGMOID
								     : STRATA_GATING_MODE_SOFTMAX,
					     .k = k,
					     .norm = (uint32_t)cf[c].norm,
					     .scale = cf[c].scale },
			};
			int32_t *dids;
			int bad = 0, order = 0;

			bo_fill(&R, &b, -0.1f, 0.1f);
			for (int64_t t = 0; t < n; t++)
				route_logits(&R, F(&lg) + t * ne, cf[c].bias ? F(&b) : NULL, ne, k,
					     cf[c].sigmoid, cf[c].lo, cf[c].hi);
			bo_fill_const(&w, -9);
			bo_ar_up(&R, A, 1);
			bo_both(&R, &op, "route");
			dids = bo_down(&R, &ids);
			for (int64_t i = 0; i < k * n; i++)
				bad += dids[i] != I(&ids)[i];
			/* the same set in another order? */
			for (int64_t t = 0; t < n && bad; t++) {
				for (uint32_t a = 0; a < k; a++) {
					int found = 0;

					for (uint32_t x = 0; x < k; x++)
						found |= dids[t * k + a] == I(&ids)[t * k + x];
					order += !found;
				}
			}
			bo_check(&R, STRATA_OP_MOE_ROUTE, bad, 0,
				 "%u experts top %u%s: %d ids differ from the CPU's%s", ne, k,
				 cf[c].sigmoid ? " sigmoid" : " softmax", bad,
				 bad && !order ? " (the same experts in another order)" : "");
			free(dids);
			bo_cmp(&R, STRATA_OP_MOE_ROUTE, &w, B_ROUTE,
			       "%u experts top %u%s%s%s scale %.1f, %lld tokens: weights", ne, k,
			       cf[c].sigmoid ? " sigmoid" : " softmax", cf[c].bias ? " bias" : "",
			       cf[c].norm ? " norm" : "", cf[c].scale, (long long)n);
			bo_cmp(&R, STRATA_OP_MOE_ROUTE, &lg, B_ROUTE,
			       "%u experts, %lld tokens: the probabilities left in src[0]", ne,
			       (long long)n);
			bo_ar_drop(&R, 0);
		}
out:
	bo_rig_close(&R);
}
END_TEST

START_TEST(moe_combine)
{
	static const struct {
		int64_t e, n;
		uint32_t k;
	} cf[] = {
		{ 64, 1, 2 },   { 64, 7, 2 },    { 2048, 1, 8 },
		{ 2048, 7, 8 }, { 2048, 64, 8 }, { 4096, 3, 10 },
	};
	struct rig R;

	RIG(&R, 6, "combine");
	if (!bo_dev_takes(&R, STRATA_OP_MOE_COMBINE, STRATA_TYPE_F32))
		goto out;
	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++) {
		const int64_t e = cf[c].e, n = cf[c].n, m = n * cf[c].k;
		struct arena *A = bo_ar_new(&R, 32u << 20, STRATA_BUF_USE_WORK);
		struct strata_tensor d = f32(A, e, m), tok = i32(A, m, 1), w = f32(A, m, 1);
		struct strata_tensor out = f32(A, e, n);
		struct strata_op op = { .code = STRATA_OP_MOE_COMBINE,
					.dst = &out,
					.src = { &d, &tok, &w } };
		int64_t s = 0;

		bo_fill(&R, &d, -2, 2);
		bo_fill(&R, &w, 0, 1);
		bo_fill(&R, &out, -1, 1);
		/* slots grouped by expert as moe.c's group() makes them: each token k
		 * times, scattered */
		for (uint32_t j = 0; j < cf[c].k; j++)
			for (int64_t t = 0; t < n; t++)
				I(&tok)[s++] = (int32_t)((t * 7 + j * 3) % n);
		for (int64_t i = m - 1; i > 0; i--) {
			int64_t r = tu_rand(&R.seed) % (i + 1);
			int32_t x = I(&tok)[i];

			I(&tok)[i] = I(&tok)[r];
			I(&tok)[r] = x;
		}
		bo_ar_up(&R, A, 1);
		bo_both(&R, &op, "combine");
		bo_cmp(&R, STRATA_OP_MOE_COMBINE, &out, B_ELEM, "%lld slots into [%lld, %lld]",
		       (long long)m, (long long)e, (long long)n);
		bo_ar_drop(&R, 0);
	}
out:
	bo_rig_close(&R);
}
END_TEST

/* ---- qwen4exp's ops ------------------------------------------------------------------------ */

START_TEST(hyper)
{
	static const int64_t es[2] = { 64, 2048 }, ns[3] = { 1, 7, 64 };
	const int64_t hc = 4;
	struct rig R;

	RIG(&R, 9, "hyper-connections, PLE gate");
	for (int ie = 0; ie < 2; ie++)
		for (int j = 0; j < 3; j++) {
			const int64_t e = es[ie], n = ns[j];
			struct arena *A = bo_ar_new(&R, 16u << 20, STRATA_BUF_USE_WORK);
			struct strata_tensor hxn = f32(A, e * hc, n), gate = f32(A, e * hc, n);
			struct strata_tensor xn = f32(A, e, n), res = f32(A, e * hc, n),
					     out = f32(A, e, n);
			struct strata_tensor inj = f32(A, hc, n), pk = f32(A, e * hc, n);
			struct strata_tensor pq = f32(A, e * hc, n), pv = f32(A, e, n),
					     pg = f32(A, e * hc, n);
			struct strata_op op;

			bo_fill(&R, &hxn, -2, 2);
			bo_fill(&R, &gate, -4, 4);
			bo_fill(&R, &xn, -1, 1);
			bo_fill(&R, &res, -2, 2);
			bo_fill(&R, &out, -2, 2);
			bo_fill(&R, &inj, -4, 4);
			bo_fill(&R, &pk, -1.7f, 1.7f); /* normed: unit variance */
			bo_fill(&R, &pq, -1.7f, 1.7f);
			bo_fill(&R, &pv, -2, 2);
			bo_fill(&R, &pg, -1, 1);
			bo_ar_up(&R, A, 1);
			if (bo_dev_takes(&R, STRATA_OP_HC_PRE, STRATA_TYPE_F32)) {
				op = bo_op2(STRATA_OP_HC_PRE, &xn, &hxn, &gate);
				op.p.hc.n = (uint32_t)hc;
				bo_both(&R, &op, "hc pre");
				bo_cmp(&R, STRATA_OP_HC_PRE, &xn, B_ELEM,
				       "4 streams of %lld, %lld tokens", (long long)e,
				       (long long)n);
			}
			if (bo_dev_takes(&R, STRATA_OP_HC_POST, STRATA_TYPE_F32)) {
				op = (struct strata_op){ .code = STRATA_OP_HC_POST,
							 .dst = &res,
							 .src = { &res, &out, &inj },
							 .p.hc.n = (uint32_t)hc };
				bo_both(&R, &op, "hc post");
				bo_cmp(&R, STRATA_OP_HC_POST, &res, B_ELEM,
				       "4 streams of %lld, %lld tokens", (long long)e,
				       (long long)n);
			}
			if (bo_dev_takes(&R, STRATA_OP_PLE_GATE, STRATA_TYPE_F32)) {
				op = (struct strata_op){ .code = STRATA_OP_PLE_GATE,
							 .dst = &pg,
							 .src = { &pk, &pq, &pv } };
				bo_both(&R, &op, "ple gate");
				bo_cmp(&R, STRATA_OP_PLE_GATE, &pg, B_ELEM,
				       "4 streams of %lld, %lld tokens", (long long)e,
				       (long long)n);
			}
			bo_ar_drop(&R, 0);
		}
	bo_rig_close(&R);
}
END_TEST

/* The PLE conv over calls that continue its history: fewer tokens than it holds, as many, more. */
START_TEST(conv_silu)
{
	static const struct {
		int64_t C;
		uint32_t K, dil;
	} cf[] = { { 256, 4, 3 }, { 8192, 4, 3 }, { 96, 3, 1 } };
	static const int64_t steps[7] = { 1, 1, 1, 2, 9, 20, 1 };
	struct rig R;

	RIG(&R, 10, "PLE conv");
	if (!bo_dev_takes(&R, STRATA_OP_CONV_SILU, STRATA_TYPE_F32))
		goto out;
	for (size_t c = 0; c < sizeof(cf) / sizeof(cf[0]); c++) {
		const int64_t C = cf[c].C, hist = (int64_t)(cf[c].K - 1) * cf[c].dil;
		struct arena *S = bo_ar_new(&R, (size_t)C * hist * 4 + 256, STRATA_BUF_USE_STATE);
		struct arena *A = bo_ar_new(&R, 8u << 20, STRATA_BUF_USE_WORK);
		struct strata_tensor h = f32(S, C, hist), x = f32(A, C, 20), d = f32(A, C, 20);
		struct strata_tensor w = f32(A, cf[c].K, C);

		bo_fill(&R, &h, -1, 1);
		bo_fill(&R, &w, -0.7f, 0.7f);
		bo_ar_up(&R, S, 1); /* the history's layout is public */
		bo_ar_up(&R, A, 1);
		for (int i = 0; i < 7; i++) {
			const int64_t n = steps[i];
			struct strata_tensor xn = strata_t_cols(&x, 0, n),
					     dn = strata_t_cols(&d, 0, n);
			struct strata_op op = { .code = STRATA_OP_CONV_SILU,
						.dst = &dn,
						.src = { &xn, &h, &w },
						.p.conv.dilation = cf[c].dil };

			bo_fill(&R, &xn, -2, 2);
			bo_fill_const(&dn, -7);
			bo_up(&R, &xn);
			bo_up(&R, &dn);
			bo_both(&R, &op, "conv");
			bo_cmp(&R, STRATA_OP_CONV_SILU, &dn, B_ELEM,
			       "[%lld] K %u dilation %u, call %d (%lld tokens)", (long long)C,
			       cf[c].K, cf[c].dil, i, (long long)n);
			bo_cmp(&R, STRATA_OP_CONV_SILU, &h, B_EXACT, "call %d: history", i);
		}
		bo_ar_drop(&R, 0);
	}
out:
	bo_rig_close(&R);
}
END_TEST

void bo_misc_cases(TCase *tc)
{
	tcase_add_test(tc, rms_norm);
	tcase_add_test(tc, rope);
	tcase_add_test(tc, elementwise);
	tcase_add_test(tc, copy_fill);
	tcase_add_test(tc, moe_route);
	tcase_add_test(tc, moe_combine);
}

void bo_qwen4exp_cases(TCase *tc)
{
	tcase_add_test(tc, hyper);
	tcase_add_test(tc, conv_silu);
}
