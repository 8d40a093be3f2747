/*
 * wlog.c - a verify window's log: what a recurrent model needs to keep a
 * prefix of the window without feeding it again.
 *
 * A window's rows go through the model in one pass; when a draft is
 * rejected, the DeltaNet states (conv and SSM, and qwen4exp's PLE conv
 * history) must end up where the kept rows alone would have left them.
 * Their ops read inputs they never write, so the pass logs each DeltaNet
 * layer's inputs (conv input, z, [b, a]; the PLE conv's input on its
 * layer) and the tokens (qwen4exp's n-gram history); a rejection restores
 * the states saved before the window and runs those ops alone on the kept
 * rows: no matmul, no expert.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/ctx_int.h"
#include "ple/ple.h"

/* Floats layer l logs a row: its DeltaNet inputs, and its PLE conv input. */
static size_t row_floats(const struct strata_model *m, uint32_t l)
{
	const struct strata_hparams *hp = &m->hp;
	const size_t ch = 2 * (size_t)hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;

	if (!m->layers[l].recurrent)
		return 0;
	return ch + hp->ssm_d_inner + 2 * (size_t)hp->ssm_dt_rank +
	       (m->layers[l].q4x.ple ? (size_t)hp->n_embd * hp->q4x.hc : 0);
}

static size_t total_floats(const struct strata_model *m, uint32_t rows)
{
	size_t n = 0;

	for (uint32_t l = 0; l < m->hp.n_layer - m->hp.n_nextn; l++)
		n += row_floats(m, l) * rows;
	return n;
}

void strata_wlog_views(struct strata_seq *s, uint32_t l, uint32_t n, struct strata_buf *b,
		       struct strata_tensor t[4])
{
	const struct strata_hparams *hp = &s->m->hp;
	const int64_t ch = 2 * (int64_t)hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;
	const uint32_t cap = s->wlog_cap;
	size_t at = 0;

	for (uint32_t i = 0; i < l; i++)
		at += row_floats(s->m, i) * cap;
	*b = (struct strata_buf){ .base = s->wlog, .size = total_floats(s->m, cap) * sizeof(float),
				  .flags = STRATA_BUF_HOST };
	t[0] = strata_t_f32(b, at * sizeof(float), ch, n);
	at += (size_t)cap * ch;
	t[1] = strata_t_f32(b, at * sizeof(float), hp->ssm_d_inner, n);
	at += (size_t)cap * hp->ssm_d_inner;
	t[2] = strata_t_f32(b, at * sizeof(float), 2 * (int64_t)hp->ssm_dt_rank, n);
	at += (size_t)cap * 2 * hp->ssm_dt_rank;
	t[3] = s->m->layers[l].q4x.ple
		       ? strata_t_f32(b, at * sizeof(float), (int64_t)hp->n_embd * hp->q4x.hc, n)
		       : (struct strata_tensor){ 0 };
}

int strata_wlog_put(struct strata_seq *s, struct strata_backend *be, uint32_t l, uint32_t n,
		    const struct strata_tensor *const in[4])
{
	struct strata_tensor t[4];
	struct strata_buf b;
	int rc;

	if (!s->wlog_armed)
		return 0;
	strata_wlog_views(s, l, n, &b, t);
	for (int i = 0; i < 4; i++)
		if (in[i] && (rc = strata_op1(be, STRATA_OP_COPY, &t[i], in[i], NULL)))
			return rc;
	return 0;
}

void strata_wlog_open(struct strata_seq *s, const int32_t *tokens, uint32_t n)
{
	s->wlog_n = 0;
	if (s->wlog_armed && n > s->wlog_cap)
		s->wlog_armed = 0;
	if (!s->wlog_armed)
		return;
	memcpy(s->wlog_tok, tokens, (size_t)n * sizeof(int32_t));
}

void strata_wlog_close(struct strata_seq *s, uint32_t n, int rc)
{
	if (s->wlog_armed && !rc) {
		s->wlog_n = n;
		s->wlog_pos = s->pos;
	}
	s->wlog_armed = 0;
}

int strata_seq_window_begin(struct strata_seq *s, uint32_t rows)
{
	const struct strata_hparams *hp = &s->m->hp;

	s->wlog_armed = 0;
	s->wlog_n = 0;
	if (!s->n_dn || rows == 0 || rows > s->max_batch)
		return -ENOTSUP;
	for (uint32_t l = 0; l < hp->n_layer - hp->n_nextn; l++)
		if (s->m->layers[l].recurrent && !s->L[l].be->is_cpu)
			return -ENOTSUP; /* a device's state: the snapshot and a re-feed */
	if (rows > s->wlog_cap) {
		float *log = realloc(s->wlog, total_floats(s->m, rows) * sizeof(float));
		int32_t *tok;

		if (!log)
			return -ENOMEM;
		s->wlog = log;
		if (!(tok = realloc(s->wlog_tok, rows * sizeof(int32_t))))
			return -ENOMEM;
		s->wlog_tok = tok;
		s->wlog_cap = rows;
	}
	s->wlog_armed = 1;
	return 0;
}

/* qwen4exp's n-gram history past the n kept tokens. */
static void advance_ple(struct strata_seq *s, uint32_t n)
{
	uint64_t rows[16 * STRATA_PLE_HEADS];

	if (!s->c->ple_ids && !s->c->ple_rd) /* no PLE table: the history stays */
		return;
	for (uint32_t i = 0; i < n; i += 16)
		strata_ple_row_ids(&s->c->ple_hash, &s->ple, s->wlog_tok + i, n - i < 16 ? n - i : 16,
				   rows);
}

int strata_seq_window_keep(struct strata_seq *s, const struct strata_seq_snapshot *snap,
			   uint32_t n_keep)
{
	const struct strata_model *m = s->m;
	const uint32_t pos0 = s->wlog_pos;
	int rc;

	if (!s->wlog_n || n_keep == 0 || n_keep > s->wlog_n || s->pos != pos0 + s->wlog_n ||
	    strata_seq_snapshot_pos(snap) != pos0)
		return -EINVAL;
	if ((rc = strata_seq_restore(s, snap)))
		return rc;
	for (uint32_t l = 0; l < m->hp.n_layer - m->hp.n_nextn; l++) {
		struct strata_tensor t[4];
		struct strata_buf b;

		if (!m->layers[l].recurrent)
			continue;
		strata_wlog_views(s, l, n_keep, &b, t);
		rc = m->hp.arch == STRATA_ARCH_QWEN4EXP ? strata_q4x_replay(s, l, t, n_keep)
							: strata_dn_replay(s, l, t, n_keep);
		if (rc)
			return rc;
	}
	if (m->hp.arch == STRATA_ARCH_QWEN4EXP)
		advance_ple(s, n_keep);
	s->pos = pos0 + n_keep;
	s->wlog_n = 0;
	return 0;
}
