/*
 * exec_int.h - private to the executor (exec.c, exec_attn.c, exec_dn.c,
 * exec_q4x.c):
 * its scratch and the ops that live in their own files.
 */
#ifndef STRATA_EXEC_INT_H
#define STRATA_EXEC_INT_H

#include "backend/exec.h"
#include "cpu/kernels.h"

#define EXEC_MAX_THREADS 256

struct strata_exec {
	struct strata_pool *pool;
	/* MATMUL: the kernels' item and matrix lists */
	struct strata_mm_item *items;
	struct strata_mat *mats;
	size_t cap_items, cap_mats;
	/* ATTN: 4 * ctx floats of scores per thread */
	float *scores;
	size_t scores_per, scores_threads;
	/* DELTANET: conv output, decay and beta per token, one rule scratch per head
	 * share, the conv kernel transposed ([d_conv][conv_ch]) */
	float *dn_xc, *dn_g, *dn_beta, *dn_rule, *dn_kern;
	size_t cap_xc, cap_g, cap_beta, cap_rule, cap_kern;
	/* QSA_SELECT: pooled block keys; per thread a query's scores and cells */
	float *qsa_pooled, *qsa_scratch;
	size_t cap_qsa_pooled, cap_qsa_scratch;
};

/*
 * Grow *p to hold n elements of size `size` (64-byte aligned, not cleared,
 * contents not kept).  0 or -ENOMEM.
 */
int strata_exec_grow(void **p, size_t *cap, size_t n, size_t size);

/* Threads the pool runs (1 without one). */
int strata_exec_threads(const struct strata_exec *x);

/* A tensor's F32 view: row stride in floats. */
static inline size_t exec_ld(const struct strata_tensor *t)
{
	return t->nb[1] / sizeof(float);
}

int strata_exec_attn(struct strata_exec *x, const struct strata_op *op);
int strata_exec_deltanet(struct strata_exec *x, const struct strata_op *op);
int strata_exec_attn_sparse(struct strata_exec *x, const struct strata_op *op);
/* qwen4exp's ops (exec_q4x.c) */
int strata_exec_hc_pre(const struct strata_op *op);
int strata_exec_hc_post(const struct strata_op *op);
int strata_exec_scale_silu(const struct strata_op *op);
int strata_exec_ple_gate(const struct strata_op *op);
int strata_exec_conv_silu(const struct strata_op *op);
int strata_exec_qsa_select(struct strata_exec *x, const struct strata_op *op);

#endif
