/*
 * seq.c - the sequence state: its memory, truncation and snapshots.
 *
 * An F32 KV cache for the attention layers (as llama.cpp's reference runs),
 * the conv and recurrent states of the DeltaNet layers, and the scratch of
 * one forward batch.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seq_int.h"
#include "util/log.h"

struct strata_seq_snapshot {
	struct strata_seq *seq;   /* bound sequence; NULL once it is freed */
	struct strata_seq_snapshot *next;
	uint32_t pos;
	int saved;                /* holds a state */
	int stale;                /* KV rows below pos were rewritten since the save */
	float *conv, *ssm;        /* copies of the DeltaNet states (NULL without) */
};

static void *xcalloc(size_t n, size_t size)
{
	/* 64-byte aligned, zeroed: kernels like aligned rows. */
	void *p = NULL;

	if (n && size > SIZE_MAX / n)
		return NULL;
	if (posix_memalign(&p, 64, n * size > 0 ? n * size : 64))
		return NULL;
	memset(p, 0, n * size);
	return p;
}

/* Per-thread attention scratch: 64-byte aligned and NOT cleared, so only
 * the threads that run touch their pages. */
static void *scratch_alloc(size_t n, size_t size)
{
	void *p = NULL;

	if (n && size > SIZE_MAX / n)
		return NULL;
	if (posix_memalign(&p, 64, n * size > 0 ? n * size : 64))
		return NULL;
	return p;
}

/* Give every attention layer a KV slot and every DeltaNet layer a state slot. */
static int assign_slots(struct strata_seq *s)
{
	const struct strata_hparams *hp = &s->m->hp;

	s->kv_slot = calloc(hp->n_layer, sizeof(uint32_t));
	s->dn_slot = calloc(hp->n_layer, sizeof(uint32_t));
	if (!s->kv_slot || !s->dn_slot)
		return -ENOMEM;
	for (uint32_t l = 0; l < hp->n_layer; l++) {
		int rec = s->m->layers[l].recurrent;

		s->kv_slot[l] = rec ? SEQ_NO_SLOT : s->n_kv_layers++;
		s->dn_slot[l] = rec ? s->n_dn_layers++ : SEQ_NO_SLOT;
	}
	return 0;
}

static int alloc_state(struct strata_seq *s)
{
	const struct strata_hparams *hp = &s->m->hp;
	size_t B = s->max_batch, ctx = s->stride;
	int gated = 0, fused = 0;

	for (uint32_t l = 0; l < hp->n_layer; l++) {
		gated |= s->m->layers[l].attn_gated;
		fused |= s->m->layers[l].dn.fused;
	}
	s->k = xcalloc((size_t)s->n_kv_layers * ctx, s->kv_dim * sizeof(float));
	s->v = xcalloc((size_t)s->n_kv_layers * ctx, s->kv_dim_v * sizeof(float));
	s->kb = xcalloc(B, s->kv_dim * sizeof(float));
	s->vb = xcalloc(B, s->kv_dim_v * sizeof(float));
	s->x = xcalloc(B, hp->n_embd * sizeof(float));
	s->xn = xcalloc(B, hp->n_embd * sizeof(float));
	s->q = xcalloc(B, (size_t)hp->n_head * hp->head_dim * sizeof(float));
	s->att = xcalloc(B, (size_t)hp->n_head * hp->head_dim_v * sizeof(float));
	s->hb = xcalloc(B, hp->n_ff * sizeof(float));
	s->hb2 = xcalloc(B, hp->n_ff * sizeof(float));
	s->ffn_out = xcalloc(B, hp->n_embd * sizeof(float));
	s->scores = scratch_alloc(SEQ_MAX_THREADS, 4 * ctx * sizeof(float));
	s->inv_freq = xcalloc(hp->n_rot / 2 + 1, sizeof(float));
	if (!s->k || !s->v || !s->kb || !s->vb || !s->x || !s->xn || !s->q || !s->att ||
	    !s->hb || !s->hb2 || !s->ffn_out || !s->scores || !s->inv_freq)
		return -ENOMEM;
	if (gated && !(s->qg = xcalloc(B, 2 * (size_t)hp->n_head * hp->head_dim * sizeof(float))))
		return -ENOMEM;
	if (hp->n_expert && strata_moe_ws_create(hp, s->max_batch, &s->moe))
		return -ENOMEM;
	if (s->n_dn_layers) {
		s->conv_floats = strata_dn_conv_floats(hp);
		s->ssm_floats = strata_dn_ssm_floats(hp);
		s->conv = xcalloc(s->n_dn_layers, s->conv_floats * sizeof(float));
		s->ssm = xcalloc(s->n_dn_layers, s->ssm_floats * sizeof(float));
		if (!s->conv || !s->ssm || strata_dn_ws_create(hp, s->max_batch, fused, &s->dn))
			return -ENOMEM;
	}
	return 0;
}

int strata_seq_create(const struct strata_model *m, uint32_t n_ctx, uint32_t max_batch,
		      struct strata_seq **out)
{
	const struct strata_hparams *hp = &m->hp;
	struct strata_seq *s;

	*out = NULL;
	if (n_ctx == 0)
		n_ctx = hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
	if (max_batch == 0 || max_batch > n_ctx)
		max_batch = n_ctx;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->m = m;
	s->n_ctx = n_ctx;
	s->stride = (n_ctx + 15) & ~15u;
	s->max_batch = max_batch;
	s->kv_dim = hp->n_head_kv * hp->head_dim;
	s->kv_dim_v = hp->n_head_kv * hp->head_dim_v;
	if (assign_slots(s) || alloc_state(s)) {
		strata_error("out of memory for a context of %u tokens (batch %u)", n_ctx, max_batch);
		strata_seq_free(s);
		return -ENOMEM;
	}
	/* theta_i = pos * base^(-2i/n_rot) * freq_scale / freq_factor_i */
	for (uint32_t i = 0; i < hp->n_rot / 2; i++) {
		double f = pow((double)hp->rope_base, -2.0 * i / (double)hp->n_rot);

		f *= hp->rope_freq_scale;
		if (m->rope_freqs)
			f /= m->rope_freqs[i];
		s->inv_freq[i] = (float)f;
	}
	*out = s;
	return 0;
}

void strata_seq_free(struct strata_seq *s)
{
	if (!s)
		return;
	for (struct strata_seq_snapshot *p = s->snaps; p; p = p->next)
		p->seq = NULL;
	free(s->kv_slot);
	free(s->dn_slot);
	free(s->k);
	free(s->v);
	free(s->conv);
	free(s->ssm);
	free(s->kb);
	free(s->vb);
	free(s->x);
	free(s->xn);
	free(s->q);
	free(s->att);
	free(s->qg);
	free(s->hb);
	free(s->hb2);
	free(s->ffn_out);
	strata_moe_ws_free(s->moe);
	strata_dn_ws_free(s->dn);
	free(s->scores);
	free(s->inv_freq);
	free(s);
}

uint32_t strata_seq_pos(const struct strata_seq *s) { return s->pos; }
uint32_t strata_seq_n_ctx(const struct strata_seq *s) { return s->n_ctx; }
uint32_t strata_seq_max_batch(const struct strata_seq *s) { return s->max_batch; }
int strata_seq_recurrent(const struct strata_seq *s) { return s->n_dn_layers > 0; }
void strata_seq_set_xstore(struct strata_seq *s, struct strata_xstore *xs) { s->xs = xs; }

int strata_seq_truncate(struct strata_seq *s, uint32_t pos)
{
	if (pos > s->pos || (s->n_dn_layers && pos != 0 && pos != s->pos))
		return -EINVAL;
	if (s->n_dn_layers && pos == 0) {
		memset(s->conv, 0, s->n_dn_layers * s->conv_floats * sizeof(float));
		memset(s->ssm, 0, s->n_dn_layers * s->ssm_floats * sizeof(float));
	}
	s->pos = pos;
	return 0;
}

/* ---- snapshots ------------------------------------------------------------------ */

void strata_seq_note_write(struct strata_seq *s, uint32_t pos)
{
	for (struct strata_seq_snapshot *p = s->snaps; p; p = p->next)
		if (p->saved && p->pos > pos)
			p->stale = 1;
}

int strata_seq_snapshot_create(struct strata_seq *s, struct strata_seq_snapshot **out)
{
	struct strata_seq_snapshot *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	if (s->n_dn_layers) {
		p->conv = xcalloc(s->n_dn_layers, s->conv_floats * sizeof(float));
		p->ssm = xcalloc(s->n_dn_layers, s->ssm_floats * sizeof(float));
		if (!p->conv || !p->ssm) {
			free(p->conv);
			free(p->ssm);
			free(p);
			strata_error("out of memory for a sequence snapshot (%zu MiB)",
				     (s->n_dn_layers * (s->conv_floats + s->ssm_floats) *
				      sizeof(float)) >> 20);
			return -ENOMEM;
		}
	}
	p->seq = s;
	p->next = s->snaps;
	s->snaps = p;
	*out = p;
	return 0;
}

void strata_seq_snapshot_free(struct strata_seq_snapshot *snap)
{
	if (!snap)
		return;
	if (snap->seq) {
		struct strata_seq_snapshot **pp = &snap->seq->snaps;

		while (*pp != snap)
			pp = &(*pp)->next;
		*pp = snap->next;
	}
	free(snap->conv);
	free(snap->ssm);
	free(snap);
}

int strata_seq_save(struct strata_seq *s, struct strata_seq_snapshot *snap)
{
	if (snap->seq != s)
		return -EINVAL;
	if (s->n_dn_layers) {
		memcpy(snap->conv, s->conv, s->n_dn_layers * s->conv_floats * sizeof(float));
		memcpy(snap->ssm, s->ssm, s->n_dn_layers * s->ssm_floats * sizeof(float));
	}
	snap->pos = s->pos;
	snap->saved = 1;
	snap->stale = 0;
	return 0;
}

int strata_seq_restore(struct strata_seq *s, const struct strata_seq_snapshot *snap)
{
	if (snap->seq != s || !snap->saved)
		return -EINVAL;
	if (snap->stale)
		return -ESTALE;
	if (s->n_dn_layers) {
		memcpy(s->conv, snap->conv, s->n_dn_layers * s->conv_floats * sizeof(float));
		memcpy(s->ssm, snap->ssm, s->n_dn_layers * s->ssm_floats * sizeof(float));
	}
	s->pos = snap->pos;
	return 0;
}

uint32_t strata_seq_snapshot_pos(const struct strata_seq_snapshot *snap)
{
	return snap->saved && !snap->stale && snap->seq ? snap->pos : UINT32_MAX;
}
