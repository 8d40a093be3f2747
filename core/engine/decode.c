/*
 * decode.c - decode: a token a forward pass, or verify windows (speculative
 * decoding).
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
 * and, when a draft was rejected, restored; then the DeltaNet ops (and
 * qwen4exp's PLE conv) run again on the kept rows' inputs, logged as the
 * window went through (no matmul, no expert: the ops alone; wlog.c), or,
 * where the log cannot serve (a state on a device), the kept prefix is fed
 * again.
 */
#include "engine.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "backend/deltanet.h"
#include "sample/draft.h"
#include "sample/sampler.h"
#include "tok/tokenizer.h"
#include "util/clock.h"
#include "util/log.h"

/* A window's DeltaNet rows take the one-token rule (deltanet.h): bit for bit one-token decoding. */
_Static_assert(STRATA_SPEC_MAX_WINDOW <= STRATA_DN_RECURRENT_MAX, "windows within the recurrence");

/*
 * Whether a window is worth its cost.  A window of k drafts costs more than
 * a one-token pass (more rows; on a MoE more experts read; a recurrent
 * model's rejected window feeds its kept prefix again; MTP drafts run the
 * block), so it pays only when enough drafts are kept: compared per
 * committed token, the cost of both kinds measured as decode runs (moving
 * averages).  With windows costing r times more, a window still drafts now
 * and then to measure again (the text may have turned repetitive): one
 * costs about r - 1 one-token passes more, so one chance in 50 (r - 1), and
 * at least in 16, keeps that under 2%.  With no one-token figure yet, the
 * next pass makes one.
 */
static int worth_drafting(struct strata_engine *e)
{
	double r;
	uint32_t every;

	if (!e->cfg.spec_adapt || e->spec_ms_win <= 0)
		return 1;
	if (e->spec_ms_one <= 0)
		return 0;
	if (e->spec_ms_win <= e->spec_ms_one)
		return 1;
	r = e->spec_ms_win / e->spec_ms_one;
	every = r > 21 ? 1000 : (uint32_t)ceil(50 * (r - 1));
	return ++e->spec_probe % (every < 16 ? 16 : every) == 0;
}

void strata_spec_note(struct strata_engine *e, double ms, uint32_t n, int window)
{
	double *avg = window ? &e->spec_ms_win : &e->spec_ms_one, per = ms / (n ? n : 1);

	*avg = *avg > 0 ? 0.8 * *avg + 0.2 * per : per;
}

int strata_spec_draft(struct strata_engine *e, int32_t tok, int32_t *draft, uint32_t max)
{
	const struct strata_config *c = &e->cfg;

	if (!e->drafter || max == 0)
		return 0;
	if (!worth_drafting(e)) {
		/* Nor the MTP block's row (a layer a token): the block's keys keep a hole
		 * there, which a later draft may feel; verification keeps the output. */
		e->mtp_pend = 0;
		return 0;
	}
	if (e->drafter == STRATA_DRAFT_MTP)
		return strata_mtp_draft(e, tok, draft, max);
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

	if (!sr->snap || sr->replay) {
		rc = sr->snap ? strata_seq_window_keep(e->seq, sr->snap, n_keep)
			      : strata_seq_truncate(e->seq, pos0 + n_keep);
		if (!rc)
			e->n_hist = pos0 + n_keep;
		return rc;
	}
	if ((rc = strata_seq_restore(e->seq, sr->snap)))
		return rc;
	e->n_hist = pos0;
	sr->refed++;
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
	/* the log, where it serves, spares a rejected window feeding its kept prefix again */
	sr->replay = sr->snap && !e->spec_refeed && strata_seq_window_begin(e->seq, k + 1) == 0;
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
	/* the MTP block's rows of the kept prefix (a re-feed ran them already) */
	if (e->mtp_logits && !(j < k && sr->snap && !sr->replay) &&
	    (rc = strata_mtp_after(e, w, j + 1, pos0)))
		return rc;
	return stop;
}

/* ---- the decode loop -------------------------------------------------------- */

/*
 * A token decode chose (sampled, or a kept draft): the end of generation,
 * or counted and handed to the callback.  Non-zero when generation stops
 * here, with g->finish set; the length budget is the caller's.
 */
static int keep(void *user, int32_t tok)
{
	struct strata_gen_state *g = user;
	char piece[256];
	int len;

	if (strata_tokenizer_is_eog(g->e->tok, tok)) {
		g->finish = STRATA_FINISH_EOG;
		return 1;
	}
	strata_sampler_accept(g->r->smp, tok);
	g->n_gen++;
	len = strata_token_to_piece(g->e->tok, tok, piece, sizeof(piece));
	if (len < 0)
		len = 0;
	if (len > (int)sizeof(piece))
		len = (int)sizeof(piece);
	if (g->r->fn && g->r->fn(g->r->user, tok, piece, (size_t)len)) {
		g->finish = STRATA_FINISH_CALLER;
		return 1;
	}
	return 0;
}

/* keep(), and the stop at n_predict tokens (a window's drafts end there too). */
static int keep_in_budget(void *user, int32_t tok)
{
	struct strata_gen_state *g = user;

	if (keep(user, tok))
		return 1;
	if (g->r->n_predict >= 0 && g->n_gen >= (uint32_t)g->r->n_predict) {
		g->finish = STRATA_FINISH_LENGTH;
		return 1;
	}
	return 0;
}

/* The caller's look at a row's logits (the server's steering) before it is verified. */
static int row_hook(void *user, float *logits, int32_t n_vocab)
{
	struct strata_gen_state *g = user;

	if (g->r->logits(g->r->user, logits, n_vocab)) {
		g->finish = STRATA_FINISH_CALLER;
		return 1;
	}
	return 0;
}

/* Drafts for the window after tok: within the context, the budget and the window. */
static int window_drafts(struct strata_gen_state *g, int32_t tok, int32_t *draft)
{
	struct strata_engine *e = g->e;
	uint32_t room = strata_seq_n_ctx(e->seq) - strata_seq_pos(e->seq) - 1, max = e->window - 1;

	if (e->dump) /* the dump's rows are one-token decoding's */
		return 0;
	if (max > room)
		max = room;
	if (g->r->n_predict >= 0 && max > (uint32_t)g->r->n_predict - g->n_gen)
		max = (uint32_t)g->r->n_predict - g->n_gen;
	return strata_spec_draft(e, tok, draft, max);
}

int strata_engine_decode(struct strata_gen_state *g, struct strata_spec_run *sr)
{
	struct strata_engine *e = g->e;
	const struct strata_gen_run *r = g->r;
	uint32_t n_ctx = strata_seq_n_ctx(e->seq);
	const struct strata_spec_hooks h = { r->logits ? row_hook : NULL, keep_in_budget, g };
	int32_t draft[STRATA_SPEC_MAX_WINDOW];

	for (;;) {
		int32_t tok;
		uint32_t kept;
		double t0;
		int rc, k;

		if (r->n_predict >= 0 && g->n_gen >= (uint32_t)r->n_predict)
			return 0;
		if (sr->has_next) {
			tok = sr->next;
			sr->has_next = 0;
		} else {
			if (r->logits && r->logits(r->user, e->logits, (int32_t)e->model->hp.n_vocab)) {
				g->finish = STRATA_FINISH_CALLER;
				return 0;
			}
			tok = strata_sampler_sample(r->smp, e->logits);
		}
		if (keep(g, tok))
			return 0;
		if (strata_seq_pos(e->seq) >= n_ctx) {
			strata_info("context of %u tokens is full: stopping", n_ctx);
			g->finish = STRATA_FINISH_CTX;
			return 0;
		}
		/* The last token is fed only when its logits are wanted (the dump). */
		if (!e->dump && r->n_predict >= 0 && g->n_gen >= (uint32_t)r->n_predict)
			return 0;
		/* the drafting counts in the window's cost (the MTP block is a layer a draft) */
		t0 = strata_now_ns() / 1e6;
		if ((k = window_drafts(g, tok, draft)) < 0)
			return k;
		kept = sr->accepted;
		rc = k ? strata_spec_window(e, sr, tok, draft, (uint32_t)k, &h)
		       : strata_engine_feed(e, &tok, 1, NULL);
		if (rc < 0)
			return rc;
		if (e->spec_rows)
			strata_spec_note(e, strata_now_ns() / 1e6 - t0, 1 + sr->accepted - kept, k > 0);
		if (rc > 0)
			return 0;
	}
}
