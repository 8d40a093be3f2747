/*
 * ckpt.h - turn checkpoints: where a follow-up prompt resumes from.
 *
 * At the end of a prompt and of each completed generation the engine keeps
 * the sequence as it stands (a strata_seq snapshot: the KV length and the
 * conv and recurrent states) with the tokens that led there.  A later prompt
 * then resumes from the longest token prefix it shares with the sequence or
 * a checkpoint, instead of reading the whole conversation again:
 *
 *  - attention-only models keep any prefix of the current sequence by
 *    truncation, and of a checkpoint whose KV rows are still intact;
 *  - recurrent models (DeltaNet layers) cannot rewind a state, so only a
 *    checkpoint position (or the current position) whose every token
 *    matches can be resumed: restore the snapshot, read the rest;
 *  - a snapshot gone stale (its KV rows rewritten, -ESTALE) is dropped and
 *    the next shorter candidate is taken, down to position 0.
 *
 * At most `max` checkpoints are kept; the least recently used one is
 * replaced.  In re-read mode (STRATA_CKPT_REREAD=1) nothing is resumed, but
 * the checkpoints (their tokens; snapshots are not needed) still mark where
 * the prompt's last part begins, as they would when resuming.
 */
#ifndef STRATA_ENGINE_CKPT_H
#define STRATA_ENGINE_CKPT_H

#include <stdint.h>

struct strata_seq;
struct strata_ckpts;

/* What strata_ckpts_resume() decided. */
struct strata_resume {
	uint32_t keep;  /* prompt tokens already in the sequence (not read again) */
	uint32_t split; /* the last checkpoint inside the prompt: parts [keep, split), [split, n) */
	int restored;   /* 1 when a snapshot was restored (else the live sequence was cut) */
};

/*
 * Checkpoints for seq (which must outlive them), at most max (>= 1).
 * reread: never resume (compare runs).  0 or -ENOMEM (logged).
 */
int strata_ckpts_create(struct strata_seq *seq, uint32_t max, int reread,
			struct strata_ckpts **out);
/* Release every snapshot and the set; NULL is a no-op. */
void strata_ckpts_free(struct strata_ckpts *c);

/*
 * Keep the sequence's current state; hist[0..n) are its tokens (n = its
 * position).  An identical checkpoint is refreshed instead of duplicated;
 * otherwise a free slot or the least recently used one is taken.  n = 0 is
 * a no-op.  0 or -ENOMEM (logged; the set stays usable).
 */
int strata_ckpts_save(struct strata_ckpts *c, const int32_t *hist, uint32_t n);

/*
 * Bring the sequence to the longest prefix of prompt[0..n_prompt) it can
 * resume from (at most n_prompt - 1 tokens, so the prompt's last token is
 * always read and gives fresh logits): the current sequence, whose tokens
 * are hist[0..n_hist), or a checkpoint; else position 0.  Fills *r.
 * 0, or a negative errno from the sequence (logged).
 */
int strata_ckpts_resume(struct strata_ckpts *c, const int32_t *hist, uint32_t n_hist,
			const int32_t *prompt, uint32_t n_prompt, struct strata_resume *r);

/* Checkpoints held now (stale ones not yet dropped included). */
uint32_t strata_ckpts_count(const struct strata_ckpts *c);

#endif
