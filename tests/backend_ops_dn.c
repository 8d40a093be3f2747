/*
 * backend_ops_dn.c - check_backend_ops's cases of DELTANET and
 * DELTANET_TILED (backend_ops.h).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>

#include "backend_ops.h"

/* ---- DeltaNet ---------------------------------------------------------------------------- */

static const struct dn_cfg {
	uint32_t code, nk, dk, nv, dv, K;
} g_dn[] = {
	{ STRATA_OP_DELTANET, 2, 16, 4, 16, 4 },       /* syn-qwen3next */
	{ STRATA_OP_DELTANET, 16, 128, 32, 128, 4 },   /* Qwen3-Next-80B */
	{ STRATA_OP_DELTANET, 4, 32, 4, 32, 4 },       /* one value head per key head */
	{ STRATA_OP_DELTANET_TILED, 2, 16, 4, 16, 4 }, /* syn-qwen4exp */
	{ STRATA_OP_DELTANET_TILED, 8, 128, 16, 128, 4 },
};
#define N_DN (sizeof(g_dn) / sizeof(g_dn[0]))

/*
 * One configuration from random states: one token at a time four times,
 * then 16 and 70 tokens (the CPU's chunked form, across a chunk's end),
 * then one more: the output and both states after every call.
 */
START_TEST(deltanet)
{
	static const uint32_t steps[7] = { 1, 1, 1, 1, 16, 70, 1 };
	const struct dn_cfg *c = &g_dn[_i];
	const int64_t ch = 2 * (int64_t)c->nk * c->dk + (int64_t)c->nv * c->dv, nmax = 70;
	struct rig R;

	RIG(&R, 300 + _i, "deltanet %u/%u", c->nk, c->nv);
	if (bo_dev_takes(&R, c->code, STRATA_TYPE_F32)) {
		struct arena *S = bo_ar_new(
			&R, 4 * ((size_t)ch * (c->K - 1) + (size_t)c->dk * c->dv * c->nv) + 1024,
			STRATA_BUF_USE_STATE);
		struct arena *A = bo_ar_new(&R, 48u << 20, STRATA_BUF_USE_WORK);
		struct strata_tensor conv = f32(S, ch, c->K - 1);
		struct strata_tensor ssm = bo_t3(&S->h, S->used, c->dk, c->dv, c->nv);
		struct strata_tensor qkv = f32(A, ch, nmax),
				     z = f32(A, (int64_t)c->nv * c->dv, nmax);
		struct strata_tensor ba = f32(A, 2 * (int64_t)c->nv, nmax);
		struct strata_tensor o = f32(A, (int64_t)c->nv * c->dv, nmax);
		struct strata_tensor kern = f32(A, c->K, ch), dtb = f32(A, c->nv, 1);
		struct strata_tensor al = f32(A, c->nv, 1), nw = f32(A, c->dv, 1);

		S->used += ssm.nb[3];
		bo_fill(&R, &conv, -1, 1);
		bo_fill(&R, &ssm, -0.5f, 0.5f);
		bo_fill(&R, &kern, -0.5f, 0.5f);
		bo_fill(&R, &dtb, -1, 1);
		for (uint32_t h = 0; h < c->nv; h++)
			F(&al)[h] = -expf(bo_frand(&R, -2, 1)); /* -exp(A_log) */
		bo_fill(&R, &nw, 0.5f, 1.5f);
		bo_ar_up(&R, S, 1); /* the states' layouts are public */
		bo_ar_up(&R, A, 1);
		for (int i = 0; i < 7; i++) {
			const uint32_t n = steps[i];
			struct strata_tensor qn = strata_t_cols(&qkv, 0, n),
					     zn = strata_t_cols(&z, 0, n);
			struct strata_tensor bn = strata_t_cols(&ba, 0, n),
					     on = strata_t_cols(&o, 0, n);
			struct strata_op op = {
				.code = c->code,
				.dst = &on,
				.src = { &qn, &zn, &bn, &conv, &ssm, &kern, &dtb, &al },
				.p.dn = { .norm = &nw,
					  .n_group = c->nk,
					  .d_state = c->dk,
					  .n_head_v = c->nv,
					  .d_head_v = c->dv,
					  .d_conv = c->K,
					  .eps = 1e-6f },
			};
			const char *name = strata_op_name(c->code);

			bo_fill(&R, &qn, -2, 2);
			bo_fill(&R, &zn, -2, 2);
			bo_fill(&R, &bn, -3, 3);
			bo_fill_const(&on, -7);
			bo_up(&R, &qn);
			bo_up(&R, &zn);
			bo_up(&R, &bn);
			bo_up(&R, &on);
			bo_both(&R, &op, name);
			bo_cmp(&R, c->code, &on, B_DN,
			       "nk %u dk %u nv %u dv %u, call %d (%u tokens): output", c->nk, c->dk,
			       c->nv, c->dv, i, n);
			bo_cmp(&R, c->code, &conv, B_EXACT, "call %d (%u tokens): conv state",
			       i, n);
			bo_cmp(&R, c->code, &ssm, B_DN, "call %d (%u tokens): recurrent state",
			       i, n);
		}
	}
	bo_rig_close(&R);
}
END_TEST

void bo_dn_cases(TCase *tc)
{
	tcase_add_loop_test(tc, deltanet, 0, (int)N_DN);
}
