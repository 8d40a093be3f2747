/*
 * gmask.c - from a grammar's state to a token mask: the vocabulary's pieces
 * in a byte trie, walked once per state (a subtree is left as soon as no
 * stack takes its byte), and the masks of states already seen kept by the
 * state's hash.  A run follows the reply's bytes; every so many tokens its
 * stacks are copied to fresh memory, so the states left behind are freed.
 */
#include "serve/grammar_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"

#define CACHE 64
#define COMPACT_EVERY 128

struct vnode {
	uint32_t child, sibling;  /* 0: none (node 0 is the root) */
	int32_t token;            /* a token whose bytes end here, or -1 */
	uint8_t byte;
};

struct strata_vtrie {
	struct vnode *nodes;
	uint32_t n, cap;
	int32_t *tok_next;        /* [n_vocab]: another token with the same bytes, or -1 */
	int32_t n_vocab;
	uint8_t *eog;             /* [n_vocab bits]: the end-of-generation tokens */
};

struct mcache {
	uint64_t key, used;
	uint8_t *bits;            /* n_vocab bits; NULL: empty slot */
};

struct strata_grammar_run {
	const struct strata_grammar *g;
	const struct strata_vtrie *t;
	struct gpool *keep, *scratch;
	struct gstate st;
	struct mcache cache[CACHE];
	uint64_t clock;
	unsigned accepted;        /* tokens since the last compaction */
};

/* ---- the vocabulary trie ---------------------------------------------------------- */

static uint32_t child(struct strata_vtrie *t, uint32_t at, uint8_t b)
{
	uint32_t c;

	for (c = t->nodes[at].child; c; c = t->nodes[c].sibling)
		if (t->nodes[c].byte == b)
			return c;
	if (t->n == t->cap) {
		uint32_t cap = t->cap * 2;
		struct vnode *n = realloc(t->nodes, cap * sizeof(*n));

		if (!n)
			return 0;
		t->nodes = n;
		t->cap = cap;
	}
	c = t->n++;
	t->nodes[c] = (struct vnode){ 0, t->nodes[at].child, -1, b };
	t->nodes[at].child = c;
	return c;
}

static int insert(struct strata_vtrie *t, int32_t id, const char *s, size_t n)
{
	uint32_t at = 0;

	for (size_t i = 0; i < n; i++)
		if (!(at = child(t, at, (uint8_t)s[i])))
			return -ENOMEM;
	t->tok_next[id] = t->nodes[at].token;
	t->nodes[at].token = id;
	return 0;
}

int strata_vtrie_build(const struct strata_engine *e, const int32_t *marker_ids,
		       const char *const *marker_texts, int n_markers, struct strata_vtrie **out)
{
	struct strata_vtrie *t = calloc(1, sizeof(*t));
	int32_t nv = strata_engine_n_vocab(e);
	int rc = 0;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->n_vocab = nv;
	t->cap = 1024;
	t->n = 1;
	t->nodes = calloc(t->cap, sizeof(*t->nodes));
	t->tok_next = malloc((size_t)nv * sizeof(*t->tok_next));
	t->eog = calloc(((size_t)nv + 7) / 8, 1);
	if (!t->nodes || !t->tok_next || !t->eog)
		rc = -ENOMEM;
	if (!rc)
		t->nodes[0].token = -1;
	for (int32_t id = 0; !rc && id < nv; id++) {
		char buf[512];
		const char *text = buf;
		int len = strata_engine_token_piece(e, id, buf, sizeof(buf));

		t->tok_next[id] = -1;
		if (strata_engine_token_is_eog(e, id)) {
			t->eog[id >> 3] |= (uint8_t)(1u << (id & 7));
			continue;
		}
		for (int m = 0; len == 0 && m < n_markers; m++)
			if (marker_ids[m] == id) {
				text = marker_texts[m];
				len = (int)strlen(text);
			}
		/* A control token with no text can never be part of a constrained reply. */
		if (len > 0 && (size_t)len <= sizeof(buf))
			rc = insert(t, id, text, (size_t)len);
	}
	if (rc) {
		strata_vtrie_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void strata_vtrie_free(struct strata_vtrie *t)
{
	if (!t)
		return;
	free(t->nodes);
	free(t->tok_next);
	free(t->eog);
	free(t);
}

/* ---- runs --------------------------------------------------------------------------- */

int strata_grammar_run_new(const struct strata_grammar *g, const struct strata_vtrie *t,
			   struct strata_grammar_run **out)
{
	struct strata_grammar_run *r = calloc(1, sizeof(*r));
	int rc;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->g = g;
	r->t = t;
	r->keep = gpool_new();
	r->scratch = gpool_new();
	if (!r->keep || !r->scratch)
		rc = -ENOMEM;
	else
		rc = gstate_start(g, r->keep, &r->st);
	if (rc) {
		strata_grammar_run_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void strata_grammar_run_free(struct strata_grammar_run *r)
{
	if (!r)
		return;
	for (int i = 0; i < CACHE; i++)
		free(r->cache[i].bits);
	gpool_free(r->keep);
	gpool_free(r->scratch);
	free(r);
}

int strata_grammar_complete(const struct strata_grammar_run *r)
{
	return r->st.complete;
}

/* Set the bit of every token whose bytes, from trie node at, some stack of st takes. */
static int walk(struct strata_grammar_run *r, uint32_t at, const struct gstate *st,
		uint8_t *bits)
{
	const struct strata_vtrie *t = r->t;

	for (uint32_t c = t->nodes[at].child; c; c = t->nodes[c].sibling) {
		struct gstate next;
		int rc;

		if (!gstate_allows(r->g, st, t->nodes[c].byte))
			continue;
		if ((rc = gstate_advance(r->g, r->scratch, st, t->nodes[c].byte, &next)))
			return rc;
		for (int32_t id = t->nodes[c].token; id >= 0; id = t->tok_next[id])
			bits[id >> 3] |= (uint8_t)(1u << (id & 7));
		if (next.n && (rc = walk(r, c, &next, bits)))
			return rc;
	}
	return 0;
}

/* The mask of the current state: from the cache, or walked and kept. */
static const uint8_t *mask_bits(struct strata_grammar_run *r, int *rc)
{
	uint64_t key = gstate_hash(&r->st);
	struct mcache *slot = &r->cache[0];
	size_t bytes = ((size_t)r->t->n_vocab + 7) / 8;

	*rc = 0;
	for (int i = 0; i < CACHE; i++) {
		if (r->cache[i].bits && r->cache[i].key == key) {
			r->cache[i].used = ++r->clock;
			return r->cache[i].bits;
		}
		if (!r->cache[i].bits || r->cache[i].used < slot->used)
			slot = &r->cache[i];
	}
	if (!slot->bits && !(slot->bits = malloc(bytes))) {
		*rc = -ENOMEM;
		return NULL;
	}
	memset(slot->bits, 0, bytes);
	slot->key = 0;
	*rc = walk(r, 0, &r->st, slot->bits);
	gpool_reset(r->scratch);
	if (*rc)
		return NULL;
	slot->key = key;
	slot->used = ++r->clock;
	return slot->bits;
}

int strata_grammar_mask(struct strata_grammar_run *r, float *logits, int32_t n)
{
	const uint8_t *bits;
	int rc, any = 0;

	if (!(bits = mask_bits(r, &rc)))
		return rc;
	for (int32_t i = 0; i < n; i++) {
		/* the end of the reply only where a stack is complete */
		if (i < r->t->n_vocab && ((bits[i >> 3] >> (i & 7) & 1) ||
					  (r->st.complete && (r->t->eog[i >> 3] >> (i & 7) & 1))))
			any |= logits[i] != -INFINITY;
		else
			logits[i] = -INFINITY;
	}
	return any ? 0 : -EPROTO;
}

/* A stack copied into pool p. */
static struct gnode *copy(struct gpool *p, const struct gnode *n)
{
	struct gnode *c;

	if (!n)
		return NULL;
	if (!(c = gpool_alloc(p, sizeof(*c))))
		return NULL;
	*c = *n;
	if (n->up && !(c->up = copy(p, n->up)))
		return NULL;
	return c;
}

/* The current stacks alone in fresh memory: the states before them go. */
static int compact(struct strata_grammar_run *r)
{
	struct gpool *p = gpool_new();
	struct gnode **tops = p ? gpool_alloc(p, (r->st.n + 1) * sizeof(*tops)) : NULL;

	if (!tops) {
		gpool_free(p);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < r->st.n; i++)
		if (!(tops[i] = copy(p, r->st.tops[i]))) {
			gpool_free(p);
			return -ENOMEM;
		}
	gpool_free(r->keep);
	r->keep = p;
	r->st.tops = tops;
	return 0;
}

int strata_grammar_accept(struct strata_grammar_run *r, const char *bytes, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		struct gstate next;
		int rc = gstate_advance(r->g, r->keep, &r->st, (uint8_t)bytes[i], &next);

		if (rc)
			return rc;
		if (!next.n && !next.complete)
			return -EPROTO;
		r->st = next;
	}
	if (++r->accepted >= COMPACT_EVERY) {
		r->accepted = 0;
		return compact(r);
	}
	return 0;
}
