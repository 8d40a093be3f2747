/*
 * parse_expr.c - expressions, with jinja2's grammar and precedence
 * (jinja2/parser.py): conditional, or, and, not, comparisons (chained, in,
 * not in), + -, ~, * / // %, **, unary - +, then primaries with their
 * postfix . [] () and the filters and tests that bind tighter than every
 * binary operator.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tmpl/parse_int.h"

int nvec_push(struct parser *P, struct nvec *v, struct node *x)
{
	if (v->n == v->cap) {
		uint32_t cap = v->cap ? v->cap * 2 : 4;
		struct node **nv = ta_alloc(P->a, cap * sizeof(*nv));

		if (!nv)
			return pfail(P, pcur(P), "out of memory parsing the template");
		if (v->n)
			memcpy(nv, v->v, v->n * sizeof(*nv));
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n++] = x;
	return 0;
}

int pfail(struct parser *P, const struct token *at, const char *fmt, ...)
{
	va_list ap;

	if (P->failed)
		return -1;
	P->failed = 1;
	P->err->line = at ? at->line : 0;
	va_start(ap, fmt);
	vsnprintf(P->err->msg, sizeof(P->err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

const char *tok_describe(const struct token *t, char *buf, size_t n)
{
	static const char *const ops[] = {
		[OP_ADD] = "+", [OP_SUB] = "-", [OP_DIV] = "/", [OP_FLOORDIV] = "//",
		[OP_MUL] = "*", [OP_MOD] = "%", [OP_POW] = "**", [OP_TILDE] = "~",
		[OP_LBRACKET] = "[", [OP_RBRACKET] = "]", [OP_LPAREN] = "(", [OP_RPAREN] = ")",
		[OP_LBRACE] = "{", [OP_RBRACE] = "}", [OP_EQ] = "==", [OP_NE] = "!=",
		[OP_GT] = ">", [OP_GTEQ] = ">=", [OP_LT] = "<", [OP_LTEQ] = "<=",
		[OP_ASSIGN] = "=", [OP_DOT] = ".", [OP_COLON] = ":", [OP_PIPE] = "|",
		[OP_COMMA] = ",", [OP_SEMICOLON] = ";",
	};

	switch (t->type) {
	case T_EOF: return "end of template";
	case T_BLOCK_END: return "end of statement block";
	case T_VAR_END: return "end of print statement";
	case T_BLOCK_BEGIN: return "begin of statement block";
	case T_VAR_BEGIN: return "begin of print statement";
	case T_DATA: return "template data";
	case T_STRING: return "string";
	case T_INT: return "integer";
	case T_FLOAT: return "float";
	case T_NAME:
		snprintf(buf, n, "%s", t->s);
		return buf;
	default:
		return t->op < sizeof(ops) / sizeof(ops[0]) && ops[t->op] ? ops[t->op] : "operator";
	}
}

struct node *pnode(struct parser *P, int kind, int line)
{
	struct node *x = ta_alloc(P->a, sizeof(*x));

	if (!x) {
		pfail(P, pcur(P), "out of memory parsing the template");
		return NULL;
	}
	x->kind = (uint8_t)kind;
	x->line = line;
	return x;
}

int pexpect_op(struct parser *P, uint8_t op, const char *what)
{
	char buf[64];

	if (tok_is_op(pcur(P), op)) {
		pnext(P);
		return 0;
	}
	return pfail(P, pcur(P), "expected token '%s', got '%s'", what,
		     tok_describe(pcur(P), buf, sizeof(buf)));
}

const char *pexpect_name(struct parser *P)
{
	const struct token *t = pcur(P);
	char buf[64];

	if (t->type != T_NAME) {
		pfail(P, t, "expected token 'name', got '%s'", tok_describe(t, buf, sizeof(buf)));
		return NULL;
	}
	pnext(P);
	return t->s;
}

static struct node *parse_unary(struct parser *P, int with_filter);
static struct node *parse_or(struct parser *P);

static struct node *mk2(struct parser *P, int kind, int line, struct node *a, struct node *b)
{
	struct node *x;

	if (!a || !b || !(x = pnode(P, kind, line)))
		return NULL;
	x->a = a;
	x->b = b;
	return x;
}

static struct node *parse_condexpr(struct parser *P)
{
	int line = pcur(P)->line;
	struct node *e1 = parse_or(P);

	while (e1 && tok_is_name(pcur(P), "if")) {
		struct node *x = pnode(P, E_COND, line);

		pnext(P);
		if (!x || !(x->a = parse_or(P)))
			return NULL;
		x->b = e1;
		if (tok_is_name(pcur(P), "else")) {
			pnext(P);
			if (!(x->c = parse_condexpr(P)))
				return NULL;
		}
		e1 = x;
		line = pcur(P)->line;
	}
	return e1;
}

struct node *parse_expression(struct parser *P, int with_condexpr)
{
	struct node *x;

	if (++P->depth > PARSE_MAX_DEPTH) {
		pfail(P, pcur(P), "expression nested too deeply");
		return NULL;
	}
	x = with_condexpr ? parse_condexpr(P) : parse_or(P);
	P->depth--;
	return x;
}

static struct node *parse_not(struct parser *P);
static struct node *parse_compare(struct parser *P);

static struct node *parse_and(struct parser *P)
{
	int line = pcur(P)->line;
	struct node *l = parse_not(P);

	while (l && tok_is_name(pcur(P), "and")) {
		pnext(P);
		l = mk2(P, E_AND, line, l, parse_not(P));
		line = pcur(P)->line;
	}
	return l;
}

static struct node *parse_or(struct parser *P)
{
	int line = pcur(P)->line;
	struct node *l = parse_and(P);

	while (l && tok_is_name(pcur(P), "or")) {
		pnext(P);
		l = mk2(P, E_OR, line, l, parse_and(P));
		line = pcur(P)->line;
	}
	return l;
}

static struct node *parse_not(struct parser *P)
{
	if (tok_is_name(pcur(P), "not")) {
		int line = pcur(P)->line;
		struct node *x;

		pnext(P);
		if (++P->depth > PARSE_MAX_DEPTH) {
			pfail(P, pcur(P), "expression nested too deeply");
			return NULL;
		}
		x = parse_not(P);
		P->depth--;
		if (!x)
			return NULL;
		return mk2(P, E_NOT, line, x, x);
	}
	return parse_compare(P);
}

static struct node *parse_math1(struct parser *P);

static int cmp_op(const struct token *t)
{
	if (t->type != T_OP)
		return 0;
	switch (t->op) {
	case OP_EQ: case OP_NE: case OP_LT: case OP_LTEQ: case OP_GT: case OP_GTEQ:
		return t->op;
	default:
		return 0;
	}
}

static struct node *parse_compare(struct parser *P)
{
	int line = pcur(P)->line;
	struct node *e = parse_math1(P), *x;
	struct nvec kids = { 0 };
	uint8_t ops[64];

	if (!e || nvec_push(P, &kids, e))
		return NULL;
	for (;;) {
		int op = cmp_op(pcur(P));

		if (op) {
			pnext(P);
		} else if (tok_is_name(pcur(P), "in")) {
			op = OP_IN;
			pnext(P);
		} else if (tok_is_name(pcur(P), "not") && tok_is_name(plook(P), "in")) {
			op = OP_NOTIN;
			pnext(P);
			pnext(P);
		} else {
			break;
		}
		if (kids.n == sizeof(ops))
			return pfail(P, pcur(P), "too many chained comparisons"), NULL;
		ops[kids.n] = (uint8_t)op;
		if (!(e = parse_math1(P)) || nvec_push(P, &kids, e))
			return NULL;
		line = pcur(P)->line;
	}
	if (kids.n == 1)
		return kids.v[0];
	if (!(x = pnode(P, E_CMP, line)) || !(x->ops = ta_alloc(P->a, kids.n)))
		return NULL;
	memcpy(x->ops, ops, kids.n);
	x->kids = kids.v;
	x->nkids = kids.n;
	return x;
}

static struct node *parse_concat(struct parser *P);
static struct node *parse_math2(struct parser *P);
static struct node *parse_pow(struct parser *P);

static struct node *binop(struct parser *P, int line, int op, struct node *l, struct node *r)
{
	struct node *x = mk2(P, E_BIN, line, l, r);

	if (x)
		x->op = (uint8_t)op;
	return x;
}

static struct node *parse_math1(struct parser *P)
{
	int line = pcur(P)->line;
	struct node *l = parse_concat(P);

	while (l && (tok_is_op(pcur(P), OP_ADD) || tok_is_op(pcur(P), OP_SUB))) {
		int op = pcur(P)->op;

		pnext(P);
		l = binop(P, line, op, l, parse_concat(P));
		line = pcur(P)->line;
	}
	return l;
}

static struct node *parse_concat(struct parser *P)
{
	int line = pcur(P)->line;
	struct node *e = parse_math2(P), *x;
	struct nvec kids = { 0 };

	if (!e || !tok_is_op(pcur(P), OP_TILDE))
		return e;
	if (nvec_push(P, &kids, e))
		return NULL;
	while (tok_is_op(pcur(P), OP_TILDE)) {
		pnext(P);
		if (!(e = parse_math2(P)) || nvec_push(P, &kids, e))
			return NULL;
	}
	if (!(x = pnode(P, E_CONCAT, line)))
		return NULL;
	x->kids = kids.v;
	x->nkids = kids.n;
	return x;
}

static struct node *parse_math2(struct parser *P)
{
	int line = pcur(P)->line;
	struct node *l = parse_pow(P);

	while (l && pcur(P)->type == T_OP &&
	       (pcur(P)->op == OP_MUL || pcur(P)->op == OP_DIV || pcur(P)->op == OP_FLOORDIV ||
		pcur(P)->op == OP_MOD)) {
		int op = pcur(P)->op;

		pnext(P);
		l = binop(P, line, op, l, parse_pow(P));
		line = pcur(P)->line;
	}
	return l;
}

static struct node *parse_pow(struct parser *P)
{
	int line = pcur(P)->line;
	struct node *l = parse_unary(P, 1);

	while (l && tok_is_op(pcur(P), OP_POW)) {
		pnext(P);
		l = binop(P, line, OP_POW, l, parse_unary(P, 1));
		line = pcur(P)->line;
	}
	return l;
}

static struct node *parse_postfix(struct parser *P, struct node *x);
static struct node *parse_filter_expr(struct parser *P, struct node *x);

static struct node *parse_unary(struct parser *P, int with_filter)
{
	const struct token *t = pcur(P);
	struct node *x;

	if (++P->depth > PARSE_MAX_DEPTH) {
		pfail(P, t, "expression nested too deeply");
		return NULL;
	}
	if (tok_is_op(t, OP_SUB) || tok_is_op(t, OP_ADD)) {
		int kind = t->op == OP_SUB ? E_NEG : E_POS;

		pnext(P);
		x = parse_unary(P, 0);
		x = mk2(P, kind, t->line, x, x);
	} else {
		x = parse_primary(P);
	}
	if (x)
		x = parse_postfix(P, x);
	if (x && with_filter)
		x = parse_filter_expr(P, x);
	P->depth--;
	return x;
}

static struct node *parse_list(struct parser *P, int close, int kind)
{
	struct node *x = pnode(P, kind, pcur(P)->line);
	struct nvec items = { 0 }, vals = { 0 };

	if (!x)
		return NULL;
	pnext(P); /* [ or { */
	while (!tok_is_op(pcur(P), (uint8_t)close)) {
		struct node *e;

		if (items.n && pexpect_op(P, OP_COMMA, ","))
			return NULL;
		if (tok_is_op(pcur(P), (uint8_t)close))
			break;
		if (!(e = parse_expression(P, 1)) || nvec_push(P, &items, e))
			return NULL;
		if (kind == E_DICT) {
			if (pexpect_op(P, OP_COLON, ":") || !(e = parse_expression(P, 1)) ||
			    nvec_push(P, &vals, e))
				return NULL;
		}
	}
	if (pexpect_op(P, (uint8_t)close, close == OP_RBRACKET ? "]" : "}"))
		return NULL;
	x->kids = items.v;
	x->nkids = items.n;
	x->els = vals.v;
	x->nels = vals.n;
	return x;
}

struct node *parse_primary(struct parser *P)
{
	const struct token *t = pcur(P);
	struct node *x;
	char buf[64];

	if (t->type == T_NAME) {
		if (!(x = pnode(P, E_CONST, t->line)))
			return NULL;
		if (!strcmp(t->s, "true") || !strcmp(t->s, "True"))
			x->val = tv_bool(1);
		else if (!strcmp(t->s, "false") || !strcmp(t->s, "False"))
			x->val = tv_bool(0);
		else if (!strcmp(t->s, "none") || !strcmp(t->s, "None"))
			x->val = tv_none();
		else
			x->kind = E_NAME, x->name = t->s;
		pnext(P);
		return x;
	}
	if (t->type == T_STRING) {
		/* Adjacent literals are one string, as in Python. */
		size_t len = 0, o = 0, j;
		struct tstr *s;
		char *p;

		for (j = P->i; P->t[j].type == T_STRING; j++)
			len += P->t[j].len;
		if (!(x = pnode(P, E_CONST, t->line)) || !(s = ta_alloc(P->a, sizeof(*s))) ||
		    !(p = ta_alloc(P->a, len + 1)))
			return pfail(P, t, "out of memory parsing the template"), NULL;
		for (; P->i < j; P->i++) {
			memcpy(p + o, P->t[P->i].s, P->t[P->i].len);
			o += P->t[P->i].len;
		}
		s->p = p;
		s->len = len;
		x->val.k = TV_STR;
		x->val.u.s = s;
		return x;
	}
	if (t->type == T_INT || t->type == T_FLOAT) {
		if (!(x = pnode(P, E_CONST, t->line)))
			return NULL;
		x->val = t->type == T_INT ? tv_int(t->i) : tv_float(t->f);
		pnext(P);
		return x;
	}
	if (tok_is_op(t, OP_LPAREN)) {
		pnext(P);
		x = parse_tuple(P, 0, 1, NULL, 1);
		if (x && pexpect_op(P, OP_RPAREN, ")"))
			return NULL;
		return x;
	}
	if (tok_is_op(t, OP_LBRACKET))
		return parse_list(P, OP_RBRACKET, E_LIST);
	if (tok_is_op(t, OP_LBRACE))
		return parse_list(P, OP_RBRACE, E_DICT);
	pfail(P, t, "unexpected '%s'", tok_describe(t, buf, sizeof(buf)));
	return NULL;
}

static int is_tuple_end(const struct parser *P, const char *const *extra)
{
	const struct token *t = pcur(P);

	if (t->type == T_VAR_END || t->type == T_BLOCK_END || tok_is_op(t, OP_RPAREN))
		return 1;
	for (; extra && *extra; extra++)
		if (tok_is_name(t, *extra))
			return 1;
	return 0;
}

struct node *parse_tuple(struct parser *P, int simplified, int with_condexpr,
			 const char *const *extra_end, int explicit_parens)
{
	int line = pcur(P)->line, is_tuple = 0;
	struct nvec args = { 0 };
	struct node *x;
	char buf[64];

	for (;;) {
		if (args.n && pexpect_op(P, OP_COMMA, ","))
			return NULL;
		if (is_tuple_end(P, extra_end))
			break;
		x = simplified ? parse_primary(P) : parse_expression(P, with_condexpr);
		if (!x || nvec_push(P, &args, x))
			return NULL;
		if (!tok_is_op(pcur(P), OP_COMMA))
			break;
		is_tuple = 1;
		line = pcur(P)->line;
	}
	if (!is_tuple) {
		if (args.n)
			return args.v[0];
		if (!explicit_parens) {
			pfail(P, pcur(P), "Expected an expression, got '%s'",
			      tok_describe(pcur(P), buf, sizeof(buf)));
			return NULL;
		}
	}
	if (!(x = pnode(P, E_TUPLE, line)))
		return NULL;
	x->kids = args.v;
	x->nkids = args.n;
	return x;
}

/* (args, kw=..., *dyn, **dyn) into x. */
static int parse_call_args(struct parser *P, struct node *x)
{
	struct nvec args = { 0 }, kwv = { 0 };
	const char **kwn = NULL;
	uint32_t kwcap = 0;
	int need_comma = 0, line = pcur(P)->line;

	if (pexpect_op(P, OP_LPAREN, "("))
		return -1;
	while (!tok_is_op(pcur(P), OP_RPAREN)) {
		struct node *e;

		if (need_comma) {
			if (pexpect_op(P, OP_COMMA, ","))
				return -1;
			if (tok_is_op(pcur(P), OP_RPAREN))
				break;
		}
		if (tok_is_op(pcur(P), OP_MUL) || tok_is_op(pcur(P), OP_POW)) {
			int star = pcur(P)->op == OP_MUL;

			if ((star && (x->dyn_args || x->dyn_kwargs)) || (!star && x->dyn_kwargs))
				return pfail(P, pcur(P), "invalid syntax for function call expression");
			pnext(P);
			if (!(e = parse_expression(P, 1)))
				return -1;
			*(star ? &x->dyn_args : &x->dyn_kwargs) = e;
		} else if (pcur(P)->type == T_NAME && tok_is_op(plook(P), OP_ASSIGN)) {
			const char *key = pcur(P)->s;

			if (x->dyn_kwargs)
				return pfail(P, pcur(P), "invalid syntax for function call expression");
			pnext(P);
			pnext(P);
			if (!(e = parse_expression(P, 1)) || nvec_push(P, &kwv, e))
				return -1;
			if (kwv.n > kwcap) {
				const char **nk = ta_alloc(P->a, kwv.cap * sizeof(*nk));

				if (!nk)
					return pfail(P, pcur(P), "out of memory parsing the template");
				if (kwv.n > 1)
					memcpy(nk, kwn, (kwv.n - 1) * sizeof(*nk));
				kwn = nk;
				kwcap = kwv.cap;
			}
			kwn[kwv.n - 1] = key;
		} else {
			if (x->dyn_args || x->dyn_kwargs || kwv.n)
				return pfail(P, pcur(P), "invalid syntax for function call expression");
			if (!(e = parse_expression(P, 1)) || nvec_push(P, &args, e))
				return -1;
		}
		need_comma = 1;
	}
	(void)line;
	if (pexpect_op(P, OP_RPAREN, ")"))
		return -1;
	x->kids = args.v;
	x->nkids = args.n;
	x->kwn = kwn;
	x->kwv = kwv.v;
	x->nkw = kwv.n;
	return 0;
}

static struct node *parse_call(struct parser *P, struct node *callee)
{
	struct node *x = pnode(P, E_CALL, pcur(P)->line);

	if (!x)
		return NULL;
	x->a = callee;
	return parse_call_args(P, x) ? NULL : x;
}

/* x[...]: an item, a slice, or a tuple of them as the key. */
static struct node *parse_subscribed(struct parser *P)
{
	int line = pcur(P)->line;
	struct node *parts[3] = { NULL, NULL, NULL }, *x;

	if (!tok_is_op(pcur(P), OP_COLON)) {
		if (!(parts[0] = parse_expression(P, 1)))
			return NULL;
		if (!tok_is_op(pcur(P), OP_COLON))
			return parts[0];
	}
	pnext(P); /* : */
	if (!tok_is_op(pcur(P), OP_COLON) && !tok_is_op(pcur(P), OP_RBRACKET) &&
	    !tok_is_op(pcur(P), OP_COMMA) && !(parts[1] = parse_expression(P, 1)))
		return NULL;
	if (tok_is_op(pcur(P), OP_COLON)) {
		pnext(P);
		if (!tok_is_op(pcur(P), OP_RBRACKET) && !tok_is_op(pcur(P), OP_COMMA) &&
		    !(parts[2] = parse_expression(P, 1)))
			return NULL;
	}
	if (!(x = pnode(P, E_SLICE, line)))
		return NULL;
	x->a = parts[0];
	x->b = parts[1];
	x->c = parts[2];
	return x;
}

static struct node *parse_subscript(struct parser *P, struct node *obj)
{
	const struct token *t = pcur(P);
	struct node *x;

	pnext(P);
	if (t->op == OP_DOT) {
		const struct token *at = pcur(P);

		pnext(P);
		if (at->type == T_NAME) {
			if (!(x = pnode(P, E_ATTR, t->line)))
				return NULL;
			x->a = obj;
			x->name = at->s;
			return x;
		}
		if (at->type != T_INT)
			return pfail(P, at, "expected name or number"), NULL;
		if (!(x = pnode(P, E_ITEM, t->line)) || !(x->b = pnode(P, E_CONST, at->line)))
			return NULL;
		x->a = obj;
		x->b->val = tv_int(at->i);
		return x;
	}
	{
		struct nvec args = { 0 };
		struct node *k;

		while (!tok_is_op(pcur(P), OP_RBRACKET)) {
			if (args.n && pexpect_op(P, OP_COMMA, ","))
				return NULL;
			if (!(k = parse_subscribed(P)) || nvec_push(P, &args, k))
				return NULL;
		}
		if (pexpect_op(P, OP_RBRACKET, "]"))
			return NULL;
		if (args.n == 1 && args.v[0]->kind == E_SLICE) {
			args.v[0]->obj = obj;
			return args.v[0];
		}
		/* Python makes x[a:b, c] a tuple of slice objects, which no
		 * sequence or mapping a template sees accepts as a key. */
		for (uint32_t i = 0; i < args.n; i++)
			if (args.v[i]->kind == E_SLICE)
				return pfail(P, t, "a slice must be the only subscript"), NULL;
		if (!(x = pnode(P, E_ITEM, t->line)))
			return NULL;
		x->a = obj;
		if (args.n == 1) {
			x->b = args.v[0];
		} else {
			if (!(x->b = pnode(P, E_TUPLE, t->line)))
				return NULL;
			x->b->kids = args.v;
			x->b->nkids = args.n;
		}
		return x;
	}
}

static struct node *parse_postfix(struct parser *P, struct node *x)
{
	while (x) {
		const struct token *t = pcur(P);

		if (tok_is_op(t, OP_DOT) || tok_is_op(t, OP_LBRACKET))
			x = parse_subscript(P, x);
		else if (tok_is_op(t, OP_LPAREN))
			x = parse_call(P, x);
		else
			break;
	}
	return x;
}

/* A filter or test name: name(.name)*. */
static const char *dotted_name(struct parser *P)
{
	const char *name = pexpect_name(P);

	while (name && tok_is_op(pcur(P), OP_DOT)) {
		const char *more;
		char *joined;

		pnext(P);
		if (!(more = pexpect_name(P)))
			return NULL;
		joined = ta_alloc(P->a, strlen(name) + strlen(more) + 2);
		if (!joined)
			return pfail(P, pcur(P), "out of memory parsing the template"), NULL;
		sprintf(joined, "%s.%s", name, more);
		name = joined;
	}
	return name;
}

struct node *parse_filter(struct parser *P, struct node *input, int start_inline)
{
	while (tok_is_op(pcur(P), OP_PIPE) || start_inline) {
		struct node *x = pnode(P, E_FILTER, pcur(P)->line);

		if (!start_inline)
			pnext(P);
		if (!x || !(x->name = dotted_name(P)))
			return NULL;
		x->a = input;
		if (tok_is_op(pcur(P), OP_LPAREN) && parse_call_args(P, x))
			return NULL;
		input = x;
		start_inline = 0;
	}
	return input;
}

static struct node *parse_test(struct parser *P, struct node *input)
{
	const struct token *is = pcur(P), *t;
	struct node *x = pnode(P, E_TEST, is->line);
	int negated = 0;

	pnext(P);
	if (tok_is_name(pcur(P), "not")) {
		pnext(P);
		negated = 1;
	}
	if (!x || !(x->name = dotted_name(P)))
		return NULL;
	x->a = input;
	t = pcur(P);
	if (tok_is_op(t, OP_LPAREN)) {
		if (parse_call_args(P, x))
			return NULL;
	} else if ((t->type == T_NAME || t->type == T_STRING || t->type == T_INT ||
		    t->type == T_FLOAT || tok_is_op(t, OP_LBRACKET) || tok_is_op(t, OP_LBRACE)) &&
		   !tok_is_name(t, "else") && !tok_is_name(t, "or") && !tok_is_name(t, "and")) {
		struct node *arg;

		if (tok_is_name(t, "is"))
			return pfail(P, t, "You cannot chain multiple tests with is"), NULL;
		if (!(arg = parse_primary(P)) || !(arg = parse_postfix(P, arg)) ||
		    !(x->kids = ta_alloc(P->a, sizeof(*x->kids))))
			return NULL;
		x->kids[0] = arg;
		x->nkids = 1;
	}
	return negated ? mk2(P, E_NOT, is->line, x, x) : x;
}

static struct node *parse_filter_expr(struct parser *P, struct node *x)
{
	while (x) {
		const struct token *t = pcur(P);

		if (tok_is_op(t, OP_PIPE))
			x = parse_filter(P, x, 0);
		else if (tok_is_name(t, "is"))
			x = parse_test(P, x);
		else if (tok_is_op(t, OP_LPAREN))
			x = parse_call(P, x);
		else
			break;
	}
	return x;
}
