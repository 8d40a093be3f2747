/*
 * grammar_int.h - the grammar's form, its builder and its pushdown
 * recognizer, shared by grammar.c, gschema.c and gmask.c.  Not public.
 *
 * A grammar is rules of alternatives; an alternative is a run of elements
 * (a byte set, or a reference to a rule) ended by GE_END, all kept in one
 * array.  A recognizer stack is a persistent list of positions in that
 * array (the element to match next, and below it where to go on after the
 * rule it is in): stacks share their tails, so a step copies nothing.
 */
#ifndef STRATA_SERVE_GRAMMAR_INT_H
#define STRATA_SERVE_GRAMMAR_INT_H

#include <stddef.h>
#include <stdint.h>

#include "serve/grammar.h"

enum { GE_END, GE_SET, GE_RULE };

struct gelem {
	uint8_t type;
	uint32_t arg;            /* GE_SET: the set's index; GE_RULE: the rule's */
};

struct grule {
	uint32_t *alts;          /* the first element of each alternative */
	uint32_t n_alts, cap;
};

struct strata_grammar {
	struct gelem *elems;
	uint32_t n_elems, cap_elems;
	struct grule *rules;
	uint32_t n_rules, cap_rules;
	uint8_t (*sets)[32];     /* 256-bit byte sets */
	uint32_t n_sets, cap_sets;
	int32_t byte_set[256];   /* the set of one byte, or -1 */
	uint32_t root;
	int oom;
};

/* An alternative being written (its elements are copied in when it ends). */
struct galt {
	struct gelem *e;
	uint32_t n, cap;
};

uint32_t gb_rule(struct strata_grammar *g);
void galt_set(struct strata_grammar *g, struct galt *a, const uint8_t set[32]);
void galt_range(struct strata_grammar *g, struct galt *a, uint8_t lo, uint8_t hi);
void galt_lit(struct strata_grammar *g, struct galt *a, const char *s);
void galt_litn(struct strata_grammar *g, struct galt *a, const char *s, size_t n);
void galt_ref(struct strata_grammar *g, struct galt *a, uint32_t rule);
/* End alternative a as one of rule's (a is emptied for reuse). */
void gb_alt(struct strata_grammar *g, uint32_t rule, struct galt *a);
/* A rule of one alternative: the literal s; of x repeated min..max (max < 0: no bound). */
uint32_t gb_lit_rule(struct strata_grammar *g, const char *s);
uint32_t gb_repeat(struct strata_grammar *g, uint32_t x, int min, int max);
void galt_free(struct galt *a);

/* ---- the recognizer ---------------------------------------------------------------- */

struct gnode {
	uint32_t pos;            /* the element to match next */
	struct gnode *up;        /* where to go on after this rule; NULL: the end */
	uint64_t hash;           /* of the whole stack, for comparing states */
};

struct gpool;                /* bump memory for nodes and states */

struct gpool *gpool_new(void);
void gpool_reset(struct gpool *p);
void gpool_free(struct gpool *p);
void *gpool_alloc(struct gpool *p, size_t n);

/* The ways the grammar can go on: stacks whose tops are byte sets. */
struct gstate {
	struct gnode **tops;
	uint32_t n;
	int complete;            /* a stack ended: the reply may end here */
	int error;               /* memory, or a grammar that recurses without progress */
};

/* The state at the start of g. */
int gstate_start(const struct strata_grammar *g, struct gpool *p, struct gstate *out);
/* in after byte b into out (out may be empty: b is not allowed). */
int gstate_advance(const struct strata_grammar *g, struct gpool *p, const struct gstate *in,
		   uint8_t b, struct gstate *out);
/* A hash of the state, the same for the same stacks. */
uint64_t gstate_hash(const struct gstate *s);
/* Can any stack take byte b next? */
int gstate_allows(const struct strata_grammar *g, const struct gstate *s, uint8_t b);

#endif
