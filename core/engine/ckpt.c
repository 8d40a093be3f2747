/*
 * ckpt.c - turn checkpoints (see ckpt.h).
 *
 * A checkpoint is a snapshot of the sequence plus a copy of its tokens.  The
 * copy is what a prompt is matched against; the snapshot tells whether the
 * KV rows under it are still those tokens' rows (it goes stale the moment a
 * forward pass writes below its position), so a match is only trusted while
 * the snapshot is restorable.
 */
#include "engine/ckpt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "util/log.h"

struct ckpt {
	struct strata_seq_snapshot *snap; /* NULL until the slot is first used */
	int32_t *tok;                     /* [cap] */
	uint32_t n, cap;                  /* n = 0: the slot is free */
	uint64_t used;                    /* LRU tick of the last save or resume */
};

struct strata_ckpts {
	struct strata_seq *seq;
	int recurrent;
	int reread;
	uint64_t tick;
	uint32_t max;
	struct ckpt v[];
};

int strata_ckpts_create(struct strata_seq *seq, uint32_t max, int reread,
			struct strata_ckpts **out)
{
	struct strata_ckpts *c;

	*out = NULL;
	if (!max)
		return -EINVAL;
	c = calloc(1, sizeof(*c) + (size_t)max * sizeof(c->v[0]));
	if (!c) {
		strata_error("out of memory for %u turn checkpoints", max);
		return -ENOMEM;
	}
	c->seq = seq;
	c->recurrent = strata_seq_recurrent(seq);
	c->reread = reread;
	c->max = max;
	*out = c;
	return 0;
}

void strata_ckpts_free(struct strata_ckpts *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->max; i++) {
		strata_seq_snapshot_free(c->v[i].snap);
		free(c->v[i].tok);
	}
	free(c);
}

uint32_t strata_ckpts_count(const struct strata_ckpts *c)
{
	uint32_t n = 0;

	for (uint32_t i = 0; c && i < c->max; i++)
		n += c->v[i].n > 0;
	return n;
}

/* Length of the common prefix of a and b, at most n. */
static uint32_t common_prefix(const int32_t *a, const int32_t *b, uint32_t n)
{
	uint32_t i = 0;

	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/*
 * Forget checkpoints whose snapshot can no longer be restored.  Re-read mode
 * restores none and reads every prompt from 0, which would make each one
 * stale at once: there they are kept, as the split points they would be.
 */
static void drop_stale(struct strata_ckpts *c)
{
	if (c->reread)
		return;
	for (uint32_t i = 0; i < c->max; i++)
		if (c->v[i].n && strata_seq_snapshot_pos(c->v[i].snap) == UINT32_MAX)
			c->v[i].n = 0;
}

/* The slot a new checkpoint goes to: a free one, else the least recently used. */
static struct ckpt *pick_slot(struct strata_ckpts *c)
{
	struct ckpt *lru = &c->v[0];

	for (uint32_t i = 0; i < c->max; i++) {
		if (!c->v[i].n)
			return &c->v[i];
		if (c->v[i].used < lru->used)
			lru = &c->v[i];
	}
	return lru;
}

int strata_ckpts_save(struct strata_ckpts *c, const int32_t *hist, uint32_t n)
{
	struct ckpt *k = NULL;
	int rc;

	if (!n)
		return 0;
	drop_stale(c);
	for (uint32_t i = 0; i < c->max && !k; i++)
		if (c->v[i].n == n && !memcmp(c->v[i].tok, hist, (size_t)n * sizeof(*hist)))
			k = &c->v[i];
	if (!k)
		k = pick_slot(c);
	k->n = 0; /* free until it holds this state */
	if (!k->snap && (rc = strata_seq_snapshot_create(c->seq, &k->snap)))
		return rc;
	if (k->cap < n) {
		int32_t *t = realloc(k->tok, (size_t)n * sizeof(*t));

		if (!t) {
			strata_error("out of memory for a turn checkpoint of %u tokens", n);
			return -ENOMEM;
		}
		k->tok = t;
		k->cap = n;
	}
	if ((rc = strata_seq_save(c->seq, k->snap)))
		return rc; /* the snapshot was made for this sequence: cannot happen */
	memcpy(k->tok, hist, (size_t)n * sizeof(*hist));
	k->n = n;
	k->used = ++c->tick;
	return 0;
}

/* Tokens checkpoint k lets the prompt keep (0 = none), and whether it ends inside it. */
static uint32_t ckpt_keep(const struct strata_ckpts *c, const struct ckpt *k,
			  const int32_t *prompt, uint32_t n_prompt, uint32_t *split)
{
	uint32_t lim = k->n < n_prompt ? k->n : n_prompt;
	uint32_t l = common_prefix(prompt, k->tok, lim);

	if (l == k->n && k->n < n_prompt && k->n > *split)
		*split = k->n;
	if (c->recurrent)
		return l == k->n && k->n < n_prompt ? k->n : 0;
	return l < n_prompt ? l : n_prompt - 1;
}

/* Tokens the live sequence lets the prompt keep. */
static uint32_t live_keep(const struct strata_ckpts *c, const int32_t *hist, uint32_t n_hist,
			  const int32_t *prompt, uint32_t n_prompt)
{
	uint32_t lim = n_hist < n_prompt ? n_hist : n_prompt, l;

	if (n_hist != strata_seq_pos(c->seq))
		return 0; /* the history does not describe the cache: trust nothing */
	l = common_prefix(prompt, hist, lim);
	if (c->recurrent)
		return l == n_hist && n_hist < n_prompt ? n_hist : 0;
	return l < n_prompt ? l : n_prompt - 1;
}

int strata_ckpts_resume(struct strata_ckpts *c, const int32_t *hist, uint32_t n_hist,
			const int32_t *prompt, uint32_t n_prompt, struct strata_resume *r)
{
	memset(r, 0, sizeof(*r));
	for (;;) {
		uint32_t best = live_keep(c, hist, n_hist, prompt, n_prompt), split = 0;
		struct ckpt *from = NULL;
		int rc;

		drop_stale(c);
		for (uint32_t i = 0; i < c->max; i++) {
			uint32_t k = c->v[i].n ? ckpt_keep(c, &c->v[i], prompt, n_prompt, &split) : 0;

			if (k > best) { /* ties go to the live sequence: no restore needed */
				best = k;
				from = &c->v[i];
			}
		}
		r->split = split;
		if (c->reread || !best)
			return strata_seq_truncate(c->seq, 0);
		if (from) {
			rc = strata_seq_restore(c->seq, from->snap);
			if (rc == -ESTALE) {
				from->n = 0; /* dropped: fall back to a shorter one */
				continue;
			}
			if (rc)
				return rc;
			from->used = ++c->tick;
			r->restored = 1;
		}
		/* Attention-only: cut to the shared prefix; recurrent: best is the position. */
		if ((rc = strata_seq_truncate(c->seq, best)))
			return rc;
		r->keep = best;
		return 0;
	}
}
