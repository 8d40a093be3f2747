/*
 * grammar.c - building grammars, and the pushdown recognizer that follows
 * a reply through one: the stacks of a state, advanced byte by byte.
 */
#include "serve/grammar_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EXPAND_DEPTH 512 /* rule references entered without matching a byte */

/* ---- building ---------------------------------------------------------------------- */

static void *grow(struct strata_grammar *g, void *p, uint32_t *cap, uint32_t n, size_t size)
{
	uint32_t c = *cap ? *cap * 2 : 16;
	void *np;

	if (n < *cap)
		return p;
	if (c < n + 1)
		c = n + 1;
	np = realloc(p, (size_t)c * size);
	if (!np) {
		g->oom = 1;
		return NULL;
	}
	*cap = c;
	return np;
}

uint32_t gb_rule(struct strata_grammar *g)
{
	struct grule *r = grow(g, g->rules, &g->cap_rules, g->n_rules, sizeof(*r));

	if (!r)
		return 0;
	g->rules = r;
	memset(&g->rules[g->n_rules], 0, sizeof(*r));
	return g->n_rules++;
}

static void galt_push(struct strata_grammar *g, struct galt *a, uint8_t type, uint32_t arg)
{
	struct gelem *e = grow(g, a->e, &a->cap, a->n, sizeof(*e));

	if (!e)
		return;
	a->e = e;
	a->e[a->n++] = (struct gelem){ type, arg };
}

/* The index of a set equal to set, added if new. */
static uint32_t set_index(struct strata_grammar *g, const uint8_t set[32])
{
	uint8_t (*s)[32];

	for (uint32_t i = g->n_sets; i-- > 0;)
		if (!memcmp(g->sets[i], set, 32))
			return i;
	if (!(s = grow(g, g->sets, &g->cap_sets, g->n_sets, 32)))
		return 0;
	g->sets = s;
	memcpy(g->sets[g->n_sets], set, 32);
	return g->n_sets++;
}

void galt_set(struct strata_grammar *g, struct galt *a, const uint8_t set[32])
{
	galt_push(g, a, GE_SET, set_index(g, set));
}

void galt_range(struct strata_grammar *g, struct galt *a, uint8_t lo, uint8_t hi)
{
	uint8_t set[32] = { 0 };

	for (unsigned b = lo; b <= hi; b++)
		set[b >> 3] |= (uint8_t)(1u << (b & 7));
	galt_set(g, a, set);
}

void galt_litn(struct strata_grammar *g, struct galt *a, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t b = (uint8_t)s[i];

		if (g->byte_set[b] < 0) {
			uint8_t set[32] = { 0 };

			set[b >> 3] = (uint8_t)(1u << (b & 7));
			g->byte_set[b] = (int32_t)set_index(g, set);
		}
		galt_push(g, a, GE_SET, (uint32_t)g->byte_set[b]);
	}
}

void galt_lit(struct strata_grammar *g, struct galt *a, const char *s)
{
	galt_litn(g, a, s, strlen(s));
}

void galt_ref(struct strata_grammar *g, struct galt *a, uint32_t rule)
{
	galt_push(g, a, GE_RULE, rule);
}

void gb_alt(struct strata_grammar *g, uint32_t rule, struct galt *a)
{
	struct grule *r = &g->rules[rule];
	uint32_t *alts = grow(g, r->alts, &r->cap, r->n_alts, sizeof(*alts));
	struct gelem *e;

	if (!alts || g->oom) {
		a->n = 0;
		return;
	}
	r->alts = alts;
	e = grow(g, g->elems, &g->cap_elems, g->n_elems + a->n, sizeof(*e));
	if (!e) {
		a->n = 0;
		return;
	}
	g->elems = e;
	r->alts[r->n_alts++] = g->n_elems;
	if (a->n)
		memcpy(g->elems + g->n_elems, a->e, a->n * sizeof(*e));
	g->n_elems += a->n;
	g->elems[g->n_elems++] = (struct gelem){ GE_END, 0 };
	a->n = 0;
}

void galt_free(struct galt *a)
{
	free(a->e);
	memset(a, 0, sizeof(*a));
}

uint32_t gb_lit_rule(struct strata_grammar *g, const char *s)
{
	uint32_t r = gb_rule(g);
	struct galt a = { 0 };

	galt_lit(g, &a, s);
	gb_alt(g, r, &a);
	galt_free(&a);
	return r;
}

/* x{min,max}: a chain of optional rules (max < 0: x* after the min). */
uint32_t gb_repeat(struct strata_grammar *g, uint32_t x, int min, int max)
{
	uint32_t rest = gb_rule(g), r = gb_rule(g);
	struct galt a = { 0 };

	if (max < 0) { /* rest ::= x rest | "" */
		galt_ref(g, &a, x);
		galt_ref(g, &a, rest);
		gb_alt(g, rest, &a);
		gb_alt(g, rest, &a);
	} else { /* rest ::= (x (x (...)?)?)? with max - min levels */
		uint32_t next = rest;

		gb_alt(g, rest, &a); /* level 0: nothing */
		for (int i = 0; i < max - min; i++) {
			uint32_t lvl = gb_rule(g);

			galt_ref(g, &a, x);
			galt_ref(g, &a, next);
			gb_alt(g, lvl, &a);
			gb_alt(g, lvl, &a);
			next = lvl;
		}
		rest = next;
	}
	for (int i = 0; i < min; i++)
		galt_ref(g, &a, x);
	galt_ref(g, &a, rest);
	gb_alt(g, r, &a);
	galt_free(&a);
	return r;
}

void strata_grammar_free(struct strata_grammar *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; i < g->n_rules; i++)
		free(g->rules[i].alts);
	free(g->rules);
	free(g->elems);
	free(g->sets);
	free(g);
}

/* ---- memory for the recognizer ---------------------------------------------------- */

struct gchunk {
	struct gchunk *next;
	size_t used, size;
	_Alignas(16) unsigned char mem[];
};

struct gpool {
	struct gchunk *head;
};

struct gpool *gpool_new(void)
{
	return calloc(1, sizeof(struct gpool));
}

void *gpool_alloc(struct gpool *p, size_t n)
{
	struct gchunk *c = p->head;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->size - c->used < n) {
		size_t size = n > (256u << 10) ? n : (256u << 10);

		if (!(c = malloc(sizeof(*c) + size)))
			return NULL;
		c->size = size;
		c->used = 0;
		c->next = p->head;
		p->head = c;
	}
	c->used += n;
	return c->mem + c->used - n;
}

void gpool_reset(struct gpool *p)
{
	struct gchunk *c = p->head;

	/* keep the first chunk: a reset pool is used again at once */
	while (c && c->next) {
		struct gchunk *n = c->next;

		c->next = n->next;
		free(n);
	}
	if (c)
		c->used = 0;
}

void gpool_free(struct gpool *p)
{
	while (p && p->head) {
		struct gchunk *n = p->head->next;

		free(p->head);
		p->head = n;
	}
	free(p);
}

/* ---- the recognizer ----------------------------------------------------------------- */

static struct gnode *node(struct gpool *p, uint32_t pos, struct gnode *up)
{
	struct gnode *n = gpool_alloc(p, sizeof(*n));

	if (n) {
		n->pos = pos;
		n->up = up;
		n->hash = ((up ? up->hash : 0x9E3779B97F4A7C15ull) ^ pos) * 0x100000001B3ull + pos;
	}
	return n;
}

/* Add top to s unless a stack equal to it is there. */
static int add_top(struct gpool *p, struct gstate *s, struct gnode *top, uint32_t *cap)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->tops[i]->hash == top->hash && s->tops[i]->pos == top->pos)
			return 0;
	if (s->n == *cap) {
		uint32_t c = *cap ? *cap * 2 : 8;
		struct gnode **t = gpool_alloc(p, c * sizeof(*t));

		if (!t)
			return -ENOMEM;
		if (s->n)
			memcpy(t, s->tops, s->n * sizeof(*t));
		s->tops = t;
		*cap = c;
	}
	s->tops[s->n++] = top;
	return 0;
}

/* The stacks n leads to whose tops are byte sets (or the end: complete). */
static int expand(const struct strata_grammar *g, struct gpool *p, struct gnode *n,
		  struct gstate *s, uint32_t *cap, int depth)
{
	const struct gelem *e;

	if (depth > EXPAND_DEPTH)
		return -ELOOP;
	while (n && g->elems[n->pos].type == GE_END)
		n = n->up; /* the rule is done: go on after it */
	if (!n) {
		s->complete = 1;
		return 0;
	}
	e = &g->elems[n->pos];
	if (e->type == GE_SET)
		return add_top(p, s, n, cap);
	/* A rule: each alternative, with what follows the reference below it. */
	{
		const struct grule *r = &g->rules[e->arg];
		struct gnode *after = node(p, n->pos + 1, n->up);

		if (!after)
			return -ENOMEM;
		for (uint32_t i = 0; i < r->n_alts; i++) {
			struct gnode *alt = node(p, r->alts[i], after);
			int rc;

			if (!alt)
				return -ENOMEM;
			if ((rc = expand(g, p, alt, s, cap, depth + 1)))
				return rc;
		}
	}
	return 0;
}

int gstate_start(const struct strata_grammar *g, struct gpool *p, struct gstate *out)
{
	const struct grule *r = &g->rules[g->root];
	uint32_t cap = 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < r->n_alts; i++) {
		struct gnode *alt = node(p, r->alts[i], NULL);
		int rc;

		if (!alt)
			return out->error = -ENOMEM;
		if ((rc = expand(g, p, alt, out, &cap, 0)))
			return out->error = rc;
	}
	return 0;
}

static int has(const uint8_t set[32], uint8_t b)
{
	return set[b >> 3] >> (b & 7) & 1;
}

int gstate_allows(const struct strata_grammar *g, const struct gstate *s, uint8_t b)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (has(g->sets[g->elems[s->tops[i]->pos].arg], b))
			return 1;
	return 0;
}

int gstate_advance(const struct strata_grammar *g, struct gpool *p, const struct gstate *in,
		   uint8_t b, struct gstate *out)
{
	uint32_t cap = 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < in->n; i++) {
		const struct gnode *t = in->tops[i];
		struct gnode *next;
		int rc;

		if (!has(g->sets[g->elems[t->pos].arg], b))
			continue;
		if (!(next = node(p, t->pos + 1, t->up)))
			return out->error = -ENOMEM;
		if ((rc = expand(g, p, next, out, &cap, 0)))
			return out->error = rc;
	}
	return 0;
}

uint64_t gstate_hash(const struct gstate *s)
{
	uint64_t h = s->complete ? 0x51ED27ull : 0;

	/* order-free: the tops are a set */
	for (uint32_t i = 0; i < s->n; i++)
		h += s->tops[i]->hash * 0x9E3779B97F4A7C15ull + (s->tops[i]->hash >> 29);
	return h ^ ((uint64_t)s->n << 56);
}
