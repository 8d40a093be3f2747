/*
 * gschema_int.h - the JSON-schema compiler's state and the JSON pieces it
 * builds with, shared by gjson.c, gschema.c and gtools.c.  Not public.
 */
#ifndef STRATA_SERVE_GSCHEMA_INT_H
#define STRATA_SERVE_GSCHEMA_INT_H

#include "serve/grammar_int.h"

struct cJSON;

#define MAX_REFS 64

struct sc {
	struct strata_grammar *g;
	const struct cJSON *root;      /* for $ref */
	char *why;
	size_t n;
	int err;
	/* the shared pieces: white space, ", ", ": ", strings, numbers, any value */
	uint32_t ws, comma, colon, str, chr, integer, number, value, any_obj, any_arr;
	struct { const char *ref; uint32_t rule; } refs[MAX_REFS];
	int n_refs, depth;
};

/* Record the first error (at the schema path) and return 0 (a rule id no one uses). */
uint32_t sc_fail(struct sc *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A rule of the one alternative in a (a is emptied). */
uint32_t sc_one(struct sc *c, struct galt *a);
void sc_set_add(uint8_t set[32], unsigned lo, unsigned hi);
uint32_t sc_range_rule(struct sc *c, unsigned lo, unsigned hi);
/* ws, comma, colon, str, chr, integer, number. */
void sc_basics(struct sc *c);
/* value, any_obj, any_arr (made on first use). */
void sc_any_value(struct sc *c);
/* A rule of the JSON text of v. */
uint32_t sc_literal(struct sc *c, const struct cJSON *v);
/* "KEY": value. */
uint32_t sc_member(struct sc *c, const char *key, uint32_t value);
/* Members in order, each required or not, separated by sep. */
uint32_t sc_members(struct sc *c, const uint32_t *m, const int *req, int n, uint32_t sep);
int sc_is_required(const struct cJSON *req, const char *name);

uint32_t sc_schema(struct sc *c, const struct cJSON *s, const char *path);

/* Start a grammar (the shared pieces made), and finish it with root as its start. */
int gschema_begin(struct sc *c, const struct cJSON *root, char *why, size_t n);
int gschema_end(struct sc *c, uint32_t root, struct strata_grammar **out);

#endif
