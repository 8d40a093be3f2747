/*
 * parse_int.h - the parser's state, shared by the statement and expression
 * halves (parse.c, parse_expr.c).  Not public.
 */
#ifndef STRATA_TMPL_PARSE_INT_H
#define STRATA_TMPL_PARSE_INT_H

#include "tmpl/tmpl_int.h"

#define PARSE_MAX_DEPTH 200

struct parser {
	struct tarena *a;
	const struct token *t;
	size_t n, i;
	struct strata_tmpl_err *err;
	int failed;
	int depth;               /* nested expressions and statements */
	int loops;               /* for loops around the statement being parsed */
};

/* A growing array of nodes in the arena. */
struct nvec {
	struct node **v;
	uint32_t n, cap;
};

int nvec_push(struct parser *P, struct nvec *v, struct node *x);

static inline const struct token *pcur(const struct parser *P)
{
	return &P->t[P->i];
}

static inline const struct token *plook(const struct parser *P)
{
	return &P->t[P->i + 1 < P->n ? P->i + 1 : P->i];
}

static inline void pnext(struct parser *P)
{
	if (P->i + 1 < P->n)
		P->i++;
}

static inline int tok_is_name(const struct token *t, const char *name)
{
	return t->type == T_NAME && strcmp(t->s, name) == 0;
}

static inline int tok_is_op(const struct token *t, uint8_t op)
{
	return t->type == T_OP && t->op == op;
}

int pfail(struct parser *P, const struct token *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *tok_describe(const struct token *t, char *buf, size_t n);
struct node *pnode(struct parser *P, int kind, int line);
int pexpect_op(struct parser *P, uint8_t op, const char *what);
const char *pexpect_name(struct parser *P);

/* jinja2's parse_expression / parse_tuple / parse_filter / parse_primary. */
struct node *parse_expression(struct parser *P, int with_condexpr);
struct node *parse_tuple(struct parser *P, int simplified, int with_condexpr,
			 const char *const *extra_end, int explicit_parens);
struct node *parse_filter(struct parser *P, struct node *input, int start_inline);
struct node *parse_primary(struct parser *P);

#endif
