/*
 * spec.c - speculative decoding through verify windows.
 *
 * A window is the token decode has just chosen plus up to S-1 drafts, fed
 * in one forward pass with every row's logits kept.  Row i is what the
 * model says after token i, so draft i+1 is checked against it with
 * speculative sampling's rule (greedy: it must be the argmax): the kept
 * drafts cost one pass together instead of one each, and the first
 * rejected one is replaced by the model's own choice from the same row, so
 * the output is what one-token decoding would give (greedy: the same
 * tokens; sampled: the same distribution).
 *
 * Rollback: attention rows past the kept prefix are cut (appending never
 * rewrote the rows below).  A recurrent state (DeltaNet conv and SSM,
 * qwen4exp's n-gram history) cannot be cut: it is saved before the window
 * and, when a draft was rejected, restored and the kept prefix fed again.
 */
#include "engine.h"

#include <errno.h>
#include <string.h>

#include "sample/draft.h"
#include "sample/sampler.h"
#include "util/log.h"

/*
 * Whether a window is worth its cost.  A window of k drafts costs more than
 * a one-token pass (more rows; on a MoE more experts read), so it pays only
 * when enough drafts are kept: compared per committed token, the cost of
 * both kinds measured as decode runs (moving averages).  With windows
 * costing more, one chance in 16 still drafts to measure again (the text
 * may have turned repetitive); with no one-token figure yet, the next pass
 * makes one.
 */
static int worth_drafting(struct strata_engine *e)
{
	if (!e->cfg.spec_adapt || e->spec_ms_win <= 0)
		return 1;
	if (e->spec_ms_one <= 0)
		return 0;
	if (e->spec_ms_win <= e->spec_ms_one)
		return 1;
	return ++e->spec_probe % 16 == 0;
}

void strata_spec_note(struct strata_engine *e, double ms, uint32_t n, int window)
{
	double *avg = window ? &e->spec_ms_win : &e->spec_ms_one, per = ms / (n ? n : 1);

	*avg = *avg > 0 ? 0.8 * *avg + 0.2 * per : per;
}

uint32_t strata_spec_draft(struct strata_engine *e, int32_t tok, int32_t *draft, uint32_t max)
{
	const struct strata_config *c = &e->cfg;

	if (!e->spec_rows || max == 0 || !worth_drafting(e))
		return 0;
	/* The history has room: the caller checked the context is not full. */
	e->hist[e->n_hist] = tok;
	return strata_draft_lookup(e->hist, e->n_hist + 1, c->spec_ngram_min, c->spec_ngram_max,
				   draft, max);
}

/* Back to n_keep tokens of the window fed at pos0 (w: its tokens). */
static int roll_back(struct strata_engine *e, struct strata_spec_run *sr, uint32_t pos0,
		     const int32_t *w, uint32_t n_keep)
{
	int rc;

	if (!sr->snap) {
		rc = strata_seq_truncate(e->seq, pos0 + n_keep);
		if (!rc)
			e->n_hist = pos0 + n_keep;
		return rc;
	}
	if ((rc = strata_seq_restore(e->seq, sr->snap)))
		return rc;
	e->n_hist = pos0;
	return strata_engine_feed(e, w, n_keep, NULL);
}

int strata_spec_window(struct strata_engine *e, struct strata_spec_run *sr, int32_t tok,
		       const int32_t *draft, uint32_t k, const struct strata_spec_hooks *h)
{
	const int32_t nv = (int32_t)e->model->hp.n_vocab;
	const uint32_t pos0 = strata_seq_pos(e->seq);
	int32_t w[STRATA_SPEC_MAX_WINDOW];
	uint32_t j = 0;
	int rc, stop = 0;

	w[0] = tok;
	memcpy(w + 1, draft, k * sizeof(*w));
	if (sr->snap && (rc = strata_seq_save(e->seq, sr->snap))) {
		strata_error("speculative decoding: cannot save the state before a window: %s",
			     strerror(-rc));
		return rc;
	}
	if ((rc = strata_engine_feed(e, w, k + 1, e->spec_rows)))
		return rc;
	sr->windows++;
	sr->drafted += k;
	while (j < k) {
		float *row = e->spec_rows + (size_t)j * nv;
		int32_t t;
		int acc;

		if (h->row && (stop = h->row(h->user, row, nv)))
			break;
		t = strata_sampler_verify(sr->smp, row, w[j + 1], &acc);
		if (!acc) {
			sr->next = t;
			sr->has_next = 1;
			break;
		}
		sr->accepted++;
		j++;
		if ((stop = h->keep(h->user, t)))
			break;
	}
	if (j < k && (rc = roll_back(e, sr, pos0, w, j + 1))) {
		strata_error("speculative decoding: cannot roll back to position %u: %s", pos0 + j + 1,
			     strerror(-rc));
		return rc;
	}
	return stop;
}
