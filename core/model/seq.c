/*
 * seq.c - the sequence state: its buffers on the backends that run its
 * layers, truncation and snapshots.
 *
 * An F32 KV cache per attention layer (as llama.cpp's reference runs) and
 * the conv and recurrent states per DeltaNet layer (qwen4exp: plus the raw
 * indexer keys, the PLE conv's history and the n-gram history), each on the
 * backend placement gave the layer, so a device's layers find their state
 * on the device.  Scratch is the context's, not the sequence's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/ctx_int.h"
#include "util/log.h"

struct strata_seq_snapshot {
	struct strata_seq *seq;   /* bound sequence; NULL once it is freed */
	struct strata_seq_snapshot *next;
	uint32_t pos;
	int saved;                /* holds a state */
	int stale;                /* KV rows below pos were rewritten since the save */
	float *state;             /* host copies of the DeltaNet states (NULL without) */
	struct strata_ple_hist ple; /* qwen4exp: the n-gram history at pos */
};

/* A contiguous F32 tensor [ne0, ne1, ne2] at buf + off. */
static struct strata_tensor t3(struct strata_buf *buf, size_t off, int64_t ne0, int64_t ne1,
			       int64_t ne2)
{
	struct strata_tensor t = strata_t_f32(buf, off, ne0, ne1);

	t.n_dims = 3;
	t.ne[2] = ne2;
	t.nb[3] = t.nb[2] * (size_t)ne2;
	return t;
}

static int alloc_layer(struct strata_seq *s, uint32_t l)
{
	const struct strata_hparams *hp = &s->m->hp;
	struct seq_layer *S = &s->L[l];
	const size_t bytes = strata_layer_state_bytes(s->m, l, s->n_ctx);
	int rc;

	S->be = s->c->L[l].be;
	if ((rc = strata_backend_buf_alloc(S->be, bytes, STRATA_BUF_USE_STATE, &S->buf)))
		return rc;
	if (!s->m->layers[l].recurrent) {
		/* [head_dim, ctx, n_kv]: the backend lays the rows out as it likes inside */
		S->k = t3(&S->buf, 0, hp->head_dim, s->stride, hp->n_head_kv);
		S->v = t3(&S->buf, S->k.nb[3], hp->head_dim_v, s->stride, hp->n_head_kv);
		if (s->m->layers[l].q4x.compress_ratio)
			S->idx = strata_t_f32(&S->buf, S->k.nb[3] + S->v.nb[3], hp->q4x.idx_dim,
					      s->stride);
		return 0;
	}
	{
		const int64_t ch = 2 * (int64_t)hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;

		S->conv = strata_t_f32(&S->buf, 0, ch, hp->ssm_d_conv - 1);
		S->ssm = t3(&S->buf, S->conv.nb[2], hp->ssm_d_state, hp->ssm_head_v,
			    hp->ssm_dt_rank);
		if (s->m->layers[l].q4x.ple)
			S->ple_hist = strata_t_f32(&S->buf, S->conv.nb[2] + S->ssm.nb[3],
						   (int64_t)hp->n_embd * hp->q4x.hc,
						   strata_q4x_ple_hist_len(hp));
	}
	s->n_dn++;
	s->state_floats += bytes / sizeof(float);
	/* The CPU's state buffers come zeroed; a device's fresh memory need not. */
	if (S->be->is_cpu)
		return 0;
	if ((rc = strata_op1(S->be, STRATA_OP_FILL, &S->conv, NULL, NULL)) ||
	    (t_has(&S->ple_hist) && (rc = strata_op1(S->be, STRATA_OP_FILL, &S->ple_hist, NULL,
						      NULL))))
		return rc;
	return strata_op1(S->be, STRATA_OP_FILL, &S->ssm, NULL, NULL);
}

int strata_seq_create(struct strata_ctx *c, uint32_t n_ctx, struct strata_seq **out)
{
	const struct strata_model *m = c->m;
	const uint32_t nl = strata_ctx_layers(m);
	struct strata_seq *s;
	int rc = 0, on_cpu = 1;

	*out = NULL;
	if (n_ctx == 0)
		n_ctx = m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->L = calloc(nl ? nl : 1, sizeof(*s->L)))) {
		free(s);
		strata_error("out of memory for a sequence");
		return -ENOMEM;
	}
	s->c = c;
	s->m = m;
	s->n_ctx = n_ctx;
	s->stride = strata_kv_stride(n_ctx);
	s->max_batch = c->max_batch < n_ctx ? c->max_batch : n_ctx;
	strata_ple_hist_init(&c->ple_hash, &s->ple);
	for (uint32_t l = 0; l < nl && !rc; l++)
		if ((rc = alloc_layer(s, l)))
			on_cpu = s->L[l].be->is_cpu;
	if (rc) {
		/* a device's refusal is its caller's to report: it may go on without it */
		if (rc == -ENOMEM && on_cpu)
			strata_error("out of memory for a context of %u tokens", n_ctx);
		strata_seq_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void strata_seq_free(struct strata_seq *s)
{
	const uint32_t nl = s ? strata_ctx_layers(s->m) : 0;

	if (!s)
		return;
	for (struct strata_seq_snapshot *p = s->snaps; p; p = p->next)
		p->seq = NULL;
	for (uint32_t l = 0; l < nl; l++)
		if (s->L[l].be)
			strata_backend_buf_free(s->L[l].be, &s->L[l].buf);
	free(s->L);
	free(s->wlog);
	free(s->wlog_tok);
	free(s);
}

uint32_t strata_seq_pos(const struct strata_seq *s) { return s->pos; }
uint32_t strata_seq_n_ctx(const struct strata_seq *s) { return s->n_ctx; }
struct strata_ctx *strata_seq_ctx(const struct strata_seq *s) { return s->c; }
uint32_t strata_seq_max_batch(const struct strata_seq *s) { return s->max_batch; }
int strata_seq_recurrent(const struct strata_seq *s) { return s->n_dn > 0; }

/* Zero every DeltaNet state (a reset to position 0). */
static int zero_states(struct strata_seq *s)
{
	const uint32_t nl = s->m->hp.n_layer - s->m->hp.n_nextn;
	int rc = 0;

	for (uint32_t l = 0; l < nl && !rc; l++) {
		struct seq_layer *S = &s->L[l];

		if (!s->m->layers[l].recurrent)
			continue;
		if (S->be->is_cpu) {
			memset(S->buf.base, 0, S->buf.size);
			continue;
		}
		if (!(rc = strata_op1(S->be, STRATA_OP_FILL, &S->conv, NULL, NULL)) &&
		    !(rc = strata_op1(S->be, STRATA_OP_FILL, &S->ssm, NULL, NULL)) &&
		    !(t_has(&S->ple_hist) &&
		      (rc = strata_op1(S->be, STRATA_OP_FILL, &S->ple_hist, NULL, NULL))))
			rc = strata_backend_sync(S->be);
	}
	return rc;
}

int strata_seq_truncate(struct strata_seq *s, uint32_t pos)
{
	int rc;

	if (pos > s->pos || (s->n_dn && pos != 0 && pos != s->pos))
		return -EINVAL;
	if (s->n_dn && pos == 0 && (rc = zero_states(s)))
		return rc;
	if (pos == 0)
		strata_ple_hist_init(&s->c->ple_hash, &s->ple);
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
	if (s->n_dn && !(p->state = malloc(s->state_floats * sizeof(float)))) {
		free(p);
		strata_error("out of memory for a sequence snapshot (%zu MiB)",
			     (s->state_floats * sizeof(float)) >> 20);
		return -ENOMEM;
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
	free(snap->state);
	free(snap);
}

/* Copy every DeltaNet state into (save) or out of (restore) the host array. */
static int copy_states(struct strata_seq *s, float *host, int save)
{
	const uint32_t nl = s->m->hp.n_layer - s->m->hp.n_nextn;
	size_t at = 0;
	int rc;

	for (uint32_t l = 0; l < nl; l++) {
		struct seq_layer *S = &s->L[l];

		if (!s->m->layers[l].recurrent)
			continue;
		/* a copy in is not ordered against queued compute (the states' FILL) */
		if (!save && !S->be->is_cpu && (rc = strata_backend_sync(S->be)))
			return rc;
		rc = save ? strata_backend_copy_out(S->be, &S->buf, 0, host + at, S->buf.size, NULL)
			  : strata_backend_copy_in(S->be, &S->buf, 0, host + at, S->buf.size, NULL);
		if (rc)
			return rc;
		at += S->buf.size / sizeof(float);
	}
	return 0;
}

int strata_seq_save(struct strata_seq *s, struct strata_seq_snapshot *snap)
{
	int rc;

	if (snap->seq != s)
		return -EINVAL;
	snap->saved = 0;
	if (s->n_dn && (rc = copy_states(s, snap->state, 1)))
		return rc;
	snap->pos = s->pos;
	snap->ple = s->ple;
	snap->saved = 1;
	snap->stale = 0;
	return 0;
}

int strata_seq_restore(struct strata_seq *s, const struct strata_seq_snapshot *snap)
{
	int rc;

	if (snap->seq != s || !snap->saved)
		return -EINVAL;
	if (snap->stale)
		return -ESTALE;
	if (s->n_dn && (rc = copy_states(s, snap->state, 0)))
		return rc;
	s->pos = snap->pos;
	s->ple = snap->ple;
	return 0;
}

uint32_t strata_seq_snapshot_pos(const struct strata_seq_snapshot *snap)
{
	return snap->saved && !snap->stale && snap->seq ? snap->pos : UINT32_MAX;
}
