/*
 * seq_int.h - the sequence state's layout, shared by seq.c (lifetime,
 * truncation, snapshots) and forward.c (the forward pass).  Internal to
 * core/model.
 */
#ifndef STRATA_SEQ_INT_H
#define STRATA_SEQ_INT_H

#include "deltanet.h"
#include "model.h"
#include "moe.h"

#define SEQ_MAX_THREADS 256
#define SEQ_NO_SLOT UINT32_MAX

struct strata_seq {
	const struct strata_model *m;
	uint32_t n_ctx, max_batch, pos;
	uint32_t stride;   /* cache row length: n_ctx rounded up to 16 */
	uint32_t kv_dim, kv_dim_v;
	/* Per layer: its KV cache slot (attention) or state slot (DeltaNet), else SEQ_NO_SLOT. */
	uint32_t *kv_slot, *dn_slot;
	uint32_t n_kv_layers, n_dn_layers;
	/*
	 * Keys are stored transposed, [slot][n_head_kv][head_dim][stride]: a
	 * query's scores are then sums of rows over positions, vectorised
	 * however small the head.  Values are [slot][n_head_kv][stride][head_dim_v]:
	 * the output is a sum of value rows weighted by the probabilities,
	 * accumulated in registers for all heads of a KV group at once.
	 */
	float *k, *v;
	/* DeltaNet states, [slot][conv_floats] and [slot][ssm_floats], contiguous. */
	float *conv, *ssm;
	size_t conv_floats, ssm_floats;
	float *kb, *vb;    /* [B][kv_dim]: this batch's keys and values */
	float *x, *xn;     /* [B][n_embd] residual, normed */
	float *q, *att;    /* [B][n_head*head_dim], [B][n_head*head_dim_v] */
	float *qg;         /* [B][2*n_head*head_dim] gated attention's [q, gate] (or NULL) */
	float *hb, *hb2;   /* [B][n_ff] */
	float *ffn_out;    /* [B][n_embd] */
	struct strata_moe_ws *moe; /* NULL for dense models */
	struct strata_xstore *xs;  /* streamed experts, or NULL: mapped */
	struct strata_dn_ws *dn;   /* NULL without DeltaNet layers */
	float *scores;     /* [SEQ_MAX_THREADS][4 * stride] attention scratch */
	float *inv_freq;   /* [n_rot/2] */
	struct strata_seq_snapshot *snaps; /* bound snapshots, a list */
};

/* Rows from position pos on are about to be written: stale the snapshots they break. */
void strata_seq_note_write(struct strata_seq *s, uint32_t pos);

#endif
