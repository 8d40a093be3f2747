/*
 * parse.c - statements: the template's body as a tree (jinja2/parser.py's
 * subparse and parse_* for the tags chat templates use).  Tags of template
 * inheritance and includes (extends, block, include, import, from) have no
 * meaning for a template given as one string and are refused by name.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tmpl/parse_int.h"

static int subparse(struct parser *P, const char *const *end, struct nvec *body);

/* %} after a statement's head. */
static int expect_block_end(struct parser *P)
{
	char buf[64];

	if (pcur(P)->type == T_BLOCK_END) {
		pnext(P);
		return 0;
	}
	return pfail(P, pcur(P), "expected token 'end of statement block', got '%s'",
		     tok_describe(pcur(P), buf, sizeof(buf)));
}

/* A body up to one of end (the current token is then that name). */
static int parse_statements(struct parser *P, const char *const *end, int drop_needle,
			    struct nvec *body)
{
	if (tok_is_op(pcur(P), OP_COLON))
		pnext(P);
	if (expect_block_end(P) || subparse(P, end, body))
		return -1;
	if (pcur(P)->type == T_EOF) {
		char want[96] = "";

		for (const char *const *e = end; *e; e++)
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s'%s'",
				 e == end ? "" : " or ", *e);
		return pfail(P, pcur(P), "Unexpected end of template. Jinja was looking for the "
			     "following tags: %s.", want);
	}
	if (drop_needle)
		pnext(P);
	return 0;
}

/* Does the tree under x read the variable name (varargs, kwargs, caller)? */
static int uses_name(const struct node *x, const char *name)
{
	if (!x)
		return 0;
	if (x->kind == N_MACRO)
		return 0; /* a nested macro has its own */
	if (x->kind == E_NAME && strcmp(x->name, name) == 0)
		return 1;
	if (uses_name(x->a, name) || (x->b != x->a && uses_name(x->b, name)) ||
	    uses_name(x->c, name) || uses_name(x->obj, name) || uses_name(x->dyn_args, name) ||
	    uses_name(x->dyn_kwargs, name))
		return 1;
	for (uint32_t i = 0; i < x->nkids; i++)
		if (uses_name(x->kids[i], name))
			return 1;
	for (uint32_t i = 0; i < x->nels; i++)
		if (uses_name(x->els[i], name))
			return 1;
	for (uint32_t i = 0; i < x->nkw; i++)
		if (uses_name(x->kwv[i], name))
			return 1;
	return 0;
}

static void mark_uses(struct node *x)
{
	for (uint32_t i = 0; i < x->nkids; i++) {
		x->uses_varargs |= (uint8_t)uses_name(x->kids[i], "varargs");
		x->uses_kwargs |= (uint8_t)uses_name(x->kids[i], "kwargs");
		x->uses_caller |= (uint8_t)uses_name(x->kids[i], "caller");
	}
}

/* (a, b=default, ...) of a macro or call block into x->kwn / x->kwv. */
static int parse_signature(struct parser *P, struct node *x)
{
	struct nvec defs = { 0 };
	const char **names = NULL;
	int any_default = 0;

	if (pexpect_op(P, OP_LPAREN, "("))
		return -1;
	while (!tok_is_op(pcur(P), OP_RPAREN)) {
		const char *name;
		struct node *d = NULL;

		if (defs.n && pexpect_op(P, OP_COMMA, ","))
			return -1;
		if (!(name = pexpect_name(P)))
			return -1;
		if (tok_is_op(pcur(P), OP_ASSIGN)) {
			pnext(P);
			if (!(d = parse_expression(P, 1)))
				return -1;
			any_default = 1;
		} else if (any_default) {
			return pfail(P, pcur(P), "non-default argument follows default argument");
		}
		if (nvec_push(P, &defs, d))
			return -1;
		if (defs.n > 1 || !names) {
			const char **nn = ta_alloc(P->a, defs.cap * sizeof(*nn));

			if (!nn)
				return pfail(P, pcur(P), "out of memory parsing the template");
			if (names)
				memcpy(nn, names, (defs.n - 1) * sizeof(*nn));
			names = nn;
		}
		names[defs.n - 1] = name;
	}
	pnext(P);
	x->kwn = names;
	x->kwv = defs.v;
	x->nkw = defs.n;
	return 0;
}

static struct node *parse_for(struct parser *P, int line)
{
	static const char *const in_end[] = { "in", NULL };
	static const char *const iter_end[] = { "recursive", NULL };
	static const char *const body_end[] = { "endfor", "else", NULL };
	static const char *const else_end[] = { "endfor", NULL };
	struct node *x = pnode(P, N_FOR, line);
	struct nvec body = { 0 }, els = { 0 };

	if (!x || !(x->a = parse_tuple(P, 1, 1, in_end, 0)))
		return NULL;
	if (x->a->kind != E_NAME && x->a->kind != E_TUPLE)
		return pfail(P, pcur(P), "can't assign to the loop target"), NULL;
	for (uint32_t i = 0; x->a->kind == E_TUPLE && i < x->a->nkids; i++)
		if (x->a->kids[i]->kind != E_NAME)
			return pfail(P, pcur(P), "can't assign to the loop target"), NULL;
	if (!tok_is_name(pcur(P), "in"))
		return pfail(P, pcur(P), "expected token 'in'"), NULL;
	pnext(P);
	if (!(x->b = parse_tuple(P, 0, 0, iter_end, 0)))
		return NULL;
	if (tok_is_name(pcur(P), "if")) {
		pnext(P);
		if (!(x->c = parse_expression(P, 1)))
			return NULL;
	}
	if (tok_is_name(pcur(P), "recursive"))
		return pfail(P, pcur(P), "recursive loops are not supported"), NULL;
	P->loops++;
	if (parse_statements(P, body_end, 0, &body))
		return NULL;
	P->loops--;
	if (tok_is_name(pcur(P), "else")) {
		pnext(P);
		if (parse_statements(P, else_end, 1, &els))
			return NULL;
	} else {
		pnext(P);
	}
	x->kids = body.v;
	x->nkids = body.n;
	x->els = els.v;
	x->nels = els.n;
	return x;
}

static struct node *parse_if(struct parser *P, int line)
{
	static const char *const body_end[] = { "elif", "else", "endif", NULL };
	static const char *const else_end[] = { "endif", NULL };
	struct node *top = NULL, *cur = NULL;

	for (;;) {
		struct node *x = pnode(P, N_IF, line);
		struct nvec body = { 0 };

		if (!x || !(x->a = parse_tuple(P, 0, 0, NULL, 0)) ||
		    parse_statements(P, body_end, 0, &body))
			return NULL;
		x->kids = body.v;
		x->nkids = body.n;
		if (!top) {
			top = x;
		} else {
			/* elif: the else branch of the one before is this if */
			if (!(cur->els = ta_alloc(P->a, sizeof(*cur->els))))
				return pfail(P, pcur(P), "out of memory parsing the template"), NULL;
			cur->els[0] = x;
			cur->nels = 1;
		}
		cur = x;
		line = pcur(P)->line;
		if (tok_is_name(pcur(P), "elif")) {
			pnext(P);
			continue;
		}
		if (tok_is_name(pcur(P), "else")) {
			struct nvec els = { 0 };

			pnext(P);
			if (parse_statements(P, else_end, 1, &els))
				return NULL;
			cur->els = els.v;
			cur->nels = els.n;
		} else {
			pnext(P);
		}
		return top;
	}
}

static struct node *parse_set(struct parser *P, int line)
{
	static const char *const end[] = { "endset", NULL };
	struct node *x = pnode(P, N_SET, line), *target;
	struct nvec body = { 0 };

	if (!x)
		return NULL;
	if (pcur(P)->type == T_NAME && tok_is_op(plook(P), OP_DOT)) {
		if (!(target = pnode(P, E_NSREF, line)))
			return NULL;
		target->name = pcur(P)->s;
		pnext(P);
		pnext(P);
		if (!(target->attr = pexpect_name(P)))
			return NULL;
	} else if (!(target = parse_tuple(P, 1, 1, NULL, 0))) {
		return NULL;
	}
	if (target->kind != E_NAME && target->kind != E_NSREF && target->kind != E_TUPLE)
		return pfail(P, pcur(P), "can't assign to this target"), NULL;
	for (uint32_t i = 0; target->kind == E_TUPLE && i < target->nkids; i++)
		if (target->kids[i]->kind != E_NAME)
			return pfail(P, pcur(P), "can't assign to this target"), NULL;
	x->a = target;
	if (tok_is_op(pcur(P), OP_ASSIGN)) {
		pnext(P);
		x->b = parse_tuple(P, 0, 1, NULL, 0);
		return x->b ? x : NULL;
	}
	x->kind = N_SETBLOCK;
	if (tok_is_op(pcur(P), OP_PIPE) && !(x->c = parse_filter(P, NULL, 0)))
		return NULL;
	if (parse_statements(P, end, 1, &body))
		return NULL;
	x->kids = body.v;
	x->nkids = body.n;
	return x;
}

static struct node *parse_macro(struct parser *P, int line)
{
	static const char *const end[] = { "endmacro", NULL };
	struct node *x = pnode(P, N_MACRO, line);
	struct nvec body = { 0 };
	int loops = P->loops;

	if (!x || !(x->name = pexpect_name(P)) || parse_signature(P, x))
		return NULL;
	P->loops = 0; /* a loop around the definition is not around the body */
	if (parse_statements(P, end, 1, &body))
		return NULL;
	P->loops = loops;
	x->kids = body.v;
	x->nkids = body.n;
	mark_uses(x);
	return x;
}

static struct node *parse_call_block(struct parser *P, int line)
{
	static const char *const end[] = { "endcall", NULL };
	struct node *x = pnode(P, N_CALLBLOCK, line);
	struct nvec body = { 0 };
	int loops = P->loops;

	if (!x)
		return NULL;
	if (tok_is_op(pcur(P), OP_LPAREN) && parse_signature(P, x))
		return NULL;
	if (!(x->a = parse_expression(P, 1)))
		return NULL;
	if (x->a->kind != E_CALL)
		return pfail(P, pcur(P), "expected call"), NULL;
	P->loops = 0;
	if (parse_statements(P, end, 1, &body))
		return NULL;
	P->loops = loops;
	x->kids = body.v;
	x->nkids = body.n;
	mark_uses(x);
	return x;
}

/* A tag with a body and nothing else: filter, generation. */
static struct node *parse_wrapped(struct parser *P, int line, int kind, const char *endname)
{
	const char *end[] = { endname, NULL };
	struct node *x = pnode(P, kind, line);
	struct nvec body = { 0 };

	if (!x)
		return NULL;
	if (kind == N_FILTERBLOCK && !(x->a = parse_filter(P, NULL, 1)))
		return NULL;
	if (parse_statements(P, end, 1, &body))
		return NULL;
	x->kids = body.v;
	x->nkids = body.n;
	return x;
}

static struct node *parse_print(struct parser *P, int line)
{
	struct node *x = pnode(P, N_OUT, line), *t;
	struct nvec items = { 0 };

	if (!x)
		return NULL;
	while (pcur(P)->type != T_BLOCK_END) {
		if (items.n && pexpect_op(P, OP_COMMA, ","))
			return NULL;
		if (!(t = parse_expression(P, 1)) || nvec_push(P, &items, t))
			return NULL;
	}
	/* print a, b writes each: an N_BODY of outputs */
	x->kind = N_BODY;
	for (uint32_t i = 0; i < items.n; i++) {
		struct node *o = pnode(P, N_OUT, line);

		if (!o)
			return NULL;
		o->a = items.v[i];
		items.v[i] = o;
	}
	x->kids = items.v;
	x->nkids = items.n;
	return x;
}

static struct node *parse_statement(struct parser *P)
{
	const struct token *t = pcur(P);
	char buf[64];

	if (t->type != T_NAME)
		return pfail(P, t, "tag name expected"), NULL;
	pnext(P);
	if (!strcmp(t->s, "for"))
		return parse_for(P, t->line);
	if (!strcmp(t->s, "if"))
		return parse_if(P, t->line);
	if (!strcmp(t->s, "set"))
		return parse_set(P, t->line);
	if (!strcmp(t->s, "macro"))
		return parse_macro(P, t->line);
	if (!strcmp(t->s, "call"))
		return parse_call_block(P, t->line);
	if (!strcmp(t->s, "filter"))
		return parse_wrapped(P, t->line, N_FILTERBLOCK, "endfilter");
	if (!strcmp(t->s, "generation")) /* transformers' assistant-mask marker: a call block */
		return parse_wrapped(P, t->line, N_SCOPE, "endgeneration");
	if (!strcmp(t->s, "print"))
		return parse_print(P, t->line);
	if (!strcmp(t->s, "break") || !strcmp(t->s, "continue")) {
		if (!P->loops)
			return pfail(P, t, "'%s' outside loop", t->s), NULL;
		return pnode(P, t->s[0] == 'b' ? N_BREAK : N_CONTINUE, t->line);
	}
	if (!strcmp(t->s, "extends") || !strcmp(t->s, "block") || !strcmp(t->s, "include") ||
	    !strcmp(t->s, "import") || !strcmp(t->s, "from") || !strcmp(t->s, "with") ||
	    !strcmp(t->s, "autoescape"))
		return pfail(P, t, "the '%s' tag is not supported in chat templates", t->s), NULL;
	return pfail(P, t, "Encountered unknown tag '%s'.", tok_describe(t, buf, sizeof(buf))),
	       NULL;
}

static int subparse(struct parser *P, const char *const *end, struct nvec *body)
{
	char buf[64];

	if (++P->depth > PARSE_MAX_DEPTH)
		return pfail(P, pcur(P), "statements nested too deeply");
	while (pcur(P)->type != T_EOF) {
		const struct token *t = pcur(P);
		struct node *x;

		if (t->type == T_DATA) {
			struct tstr *s = ta_alloc(P->a, sizeof(*s));

			if (!(x = pnode(P, N_TEXT, t->line)) || !s)
				return pfail(P, t, "out of memory parsing the template");
			s->p = t->s;
			s->len = t->len;
			x->val.k = TV_STR;
			x->val.u.s = s;
			pnext(P);
		} else if (t->type == T_VAR_BEGIN) {
			pnext(P);
			if (!(x = pnode(P, N_OUT, t->line)) || !(x->a = parse_tuple(P, 0, 1, NULL, 0)))
				return -1;
			if (pcur(P)->type != T_VAR_END)
				return pfail(P, pcur(P), "expected token 'end of print statement', "
					     "got '%s'", tok_describe(pcur(P), buf, sizeof(buf)));
			pnext(P);
		} else if (t->type == T_BLOCK_BEGIN) {
			pnext(P);
			for (const char *const *e = end; e && *e; e++)
				if (tok_is_name(pcur(P), *e)) {
					P->depth--;
					return 0;
				}
			if (!(x = parse_statement(P)) || expect_block_end(P))
				return -1;
		} else {
			return pfail(P, t, "unexpected '%s'", tok_describe(t, buf, sizeof(buf)));
		}
		if (nvec_push(P, body, x))
			return -1;
	}
	P->depth--;
	return 0;
}

int tmpl_parse(struct strata_tmpl *t, const struct token *toks, size_t n,
	       struct strata_tmpl_err *err)
{
	struct parser P = { .a = &t->arena, .t = toks, .n = n, .err = err };
	struct nvec body = { 0 };

	if (subparse(&P, NULL, &body))
		return -1;
	if (!(t->root = pnode(&P, N_BODY, 1)))
		return -1;
	t->root->kids = body.v;
	t->root->nkids = body.n;
	return 0;
}
