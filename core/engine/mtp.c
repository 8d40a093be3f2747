/*
 * mtp.c - the model's own MTP (nextn) block as decode's drafter.
 *
 * The block's row for position p is fed the token at p + 1 and the trunk's
 * hidden state of row p, and predicts the token at p + 2; it attends over
 * its own rows, whose keys live in the sequence like a layer's.  So every
 * committed position needs its row, in order, and a row can run only once
 * the token after it is known:
 *
 *   - after a trunk pass of n kept tokens, rows 0..n-2 run at once (their
 *     next tokens are the pass's own); row n-1 waits, its hidden state
 *     saved (the "pending" row), for the token after it;
 *   - that token arrives either as the first token of the next pass (the
 *     next prompt chunk, or a decode step that drafts nothing: the row runs
 *     just before that pass) or as the token decode just chose, when
 *     drafting: the pending row then gives the first draft, and each
 *     further draft chains the block on its own previous output.
 *
 * Chained rows sit at positions the verify window then writes again with
 * the trunk's hidden states, so nothing needs rolling back: the block's
 * keys are rows at positions, and every row below a call's position is the
 * committed one by then.  Where a row is missing (a prompt resumed from a
 * checkpoint), its keys are stale: that changes what is proposed, never
 * what is output (each draft is verified).
 */
#include "engine.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int strata_mtp_setup(struct strata_engine *e)
{
	size_t n_vocab = e->model->hp.n_vocab;

	e->mtp_hid = malloc(strata_mtp_width(e->model) * sizeof(float));
	e->mtp_logits = malloc(n_vocab * sizeof(float));
	if (!e->mtp_hid || !e->mtp_logits) {
		strata_error("out of memory for the MTP drafter");
		return -ENOMEM;
	}
	e->mtp_pend = 0;
	return 0;
}

void strata_mtp_release(struct strata_engine *e)
{
	free(e->mtp_hid);
	free(e->mtp_logits);
	e->mtp_hid = e->mtp_logits = NULL;
}

int strata_mtp_before(struct strata_engine *e, int32_t first, uint32_t pos)
{
	uint32_t pend = e->mtp_pend;

	e->mtp_pend = 0;
	if (!pend || pend != pos)
		return 0; /* no row waits for this token (a resumed prefix) */
	return strata_mtp(e->seq, &first, e->mtp_hid, 1, pos - 1, 0, NULL);
}

int strata_mtp_after(struct strata_engine *e, const int32_t *tokens, uint32_t n, uint32_t pos)
{
	int rc;

	e->mtp_pend = 0;
	if (n == 0)
		return 0;
	/* saved first: the rows below are the block's input, then its output */
	if ((rc = strata_mtp_hidden(e->seq, n - 1, e->mtp_hid)))
		return rc;
	if (n > 1 && (rc = strata_mtp(e->seq, tokens + 1, NULL, n - 1, pos, 0, NULL)))
		return rc;
	e->mtp_pend = pos + n;
	return 0;
}

/* The argmax of logits, and its softmax probability when want_p. */
static int32_t top1(const float *logits, uint32_t n, int want_p, float *p)
{
	int32_t best = 0;
	double sum = 0;

	for (uint32_t i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = (int32_t)i;
	*p = 1.0f;
	if (!want_p)
		return best;
	for (uint32_t i = 0; i < n; i++)
		sum += exp((double)logits[i] - logits[best]);
	*p = (float)(1.0 / sum);
	return best;
}

int strata_mtp_draft(struct strata_engine *e, int32_t tok, int32_t *draft, uint32_t max)
{
	const uint32_t pos = strata_seq_pos(e->seq), nv = e->model->hp.n_vocab;
	const float min_p = e->cfg.spec_min_p;
	uint32_t n = 0;
	int rc;

	if (e->mtp_pend != pos || pos == 0)
		return 0; /* the row before tok is missing: the feed runs nothing either */
	e->mtp_pend = 0;
	/* the pending row, fed tok: its logits propose the token after tok */
	rc = strata_mtp(e->seq, &tok, e->mtp_hid, 1, pos - 1, 1, e->mtp_logits);
	while (!rc) {
		float p;
		int32_t d = top1(e->mtp_logits, nv, min_p > 0, &p);

		if (p < min_p)
			break;
		draft[n++] = d;
		if (n == max)
			break;
		/* chained: the block's own output row is the next row's hidden state */
		rc = strata_mtp(e->seq, &d, NULL, 1, pos + n - 1, 1, e->mtp_logits);
	}
	if (rc) {
		strata_error("MTP drafter: the block failed at position %u: %s", pos + n - 1,
			     strerror(-rc));
		return rc;
	}
	return (int)n;
}
