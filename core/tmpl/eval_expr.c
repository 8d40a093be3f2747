/*
 * eval_expr.c - expressions: names, attribute and item lookup as jinja2's
 * sandbox resolves them, calls, Python's arithmetic and comparisons, and the
 * dispatch to filters and tests.
 */
#define _GNU_SOURCE /* memmem */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tmpl/tmpl_int.h"

int tmpl_step(struct tctx *c)
{
	if (++c->steps > c->max_steps)
		return terr(c, "the template ran for more than %" PRIu64 " steps", c->max_steps);
	return 0;
}

int tmpl_defined(struct tctx *c, struct tval v)
{
	if (v.k != TV_UNDEF)
		return 0;
	return terr(c, "%s", v.u.why ? v.u.why : "undefined value");
}

static struct tval undef_fmt(struct tctx *c, const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(fmt) + strlen(a) + (b ? strlen(b) : 0) + 1;
	char *why = ta_alloc(c->a, n);

	if (why)
		snprintf(why, n, fmt, a, b);
	return tv_undef(why ? why : "undefined value");
}

struct tval tmpl_lookup(struct tctx *c, struct frame *f, const char *name)
{
	for (; f; f = f->up) {
		struct tval *v = td_gets(f->vars, name);

		if (v)
			return *v;
	}
	return undef_fmt(c, "'%s' is undefined", name, NULL);
}

static struct tval no_attr(struct tctx *c, struct tval obj, const char *name)
{
	const char *tn = obj.k == TV_DICT && obj.u.d->kind == TD_DICT ? "dict" : tv_typename(obj);
	char t[48];

	snprintf(t, sizeof(t), "%s", tn);
	return undef_fmt(c, "'%s object' has no attribute '%s'", t, name);
}

int tmpl_getattr(struct tctx *c, struct tval obj, const char *name, struct tval *out)
{
	struct tval *v;

	if (tmpl_defined(c, obj))
		return -1;
	if (name[0] == '_') { /* the sandbox hides every private attribute */
		*out = no_attr(c, obj, name);
		return 0;
	}
	if (obj.k == TV_DICT && obj.u.d->kind != TD_DICT) {
		v = td_gets(obj.u.d, name);
		*out = v ? *v : no_attr(c, obj, name);
		return 0;
	}
	/* Python attributes first (d.items is the method), then the item. */
	if (tmpl_method(c, obj, name, out))
		return c->failed ? -1 : 0;
	if (obj.k == TV_DICT && (v = td_gets(obj.u.d, name))) {
		*out = *v;
		return 0;
	}
	*out = no_attr(c, obj, name);
	return 0;
}

/* Python's slice index rules for a sequence of n items. */
static int slice_bounds(struct tctx *c, const struct tval *parts, int64_t n, int64_t *start,
			int64_t *stop, int64_t *step)
{
	int64_t v[3];

	for (int i = 0; i < 3; i++) {
		if (parts[i].k == TV_NONE || parts[i].k == TV_UNDEF) {
			v[i] = INT64_MIN;
			continue;
		}
		if (parts[i].k != TV_INT && parts[i].k != TV_BOOL)
			return terr(c, "slice indices must be integers or None");
		v[i] = parts[i].k == TV_INT ? parts[i].u.i : parts[i].u.b;
	}
	*step = v[2] == INT64_MIN ? 1 : v[2];
	if (*step == 0)
		return terr(c, "slice step cannot be zero");
	for (int i = 0; i < 2; i++) {
		int64_t *p = i ? stop : start, x = v[i];

		if (x == INT64_MIN) {
			if (i == 0)
				*p = *step > 0 ? 0 : n - 1;
			else
				*p = *step > 0 ? n : -1;
			continue;
		}
		if (x < 0) {
			x += n;
			if (x < 0)
				x = *step < 0 ? -1 : 0;
		} else if (x >= n) {
			x = *step < 0 ? n - 1 : n;
		}
		*p = x;
	}
	return 0;
}

static int eval_slice(struct tctx *c, const struct node *e, struct frame *f, struct tval *out)
{
	struct tval obj, parts[3] = { tv_none(), tv_none(), tv_none() };
	const struct node *pn[3] = { e->a, e->b, e->c };
	int64_t n, start, stop, step;
	struct tlist *l;

	if (tmpl_eval(c, e->obj, f, &obj) || tmpl_defined(c, obj))
		return -1;
	for (int i = 0; i < 3; i++)
		if (pn[i] && tmpl_eval(c, pn[i], f, &parts[i]))
			return -1;
	if (obj.k == TV_STR) {
		const struct tstr *s = obj.u.s;
		struct tbuf b = { 0 };

		n = (int64_t)u8_count(s->p, s->len);
		if (slice_bounds(c, parts, n, &start, &stop, &step))
			return -1;
		if (tb_add(c, &b, "", 0))
			return -1;
		for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
			size_t at = u8_offset(s->p, s->len, (size_t)i);
			uint32_t cp;
			int len = u8_next(s->p + at, s->len - at, &cp);

			if (tb_add(c, &b, s->p + at, (size_t)len))
				return -1;
		}
		*out = tb_val(c, &b);
		return c->failed ? -1 : 0;
	}
	if (obj.k != TV_LIST || obj.u.l->gen) {
		*out = tv_undef("this value cannot be sliced");
		return 0;
	}
	n = obj.u.l->n;
	if (slice_bounds(c, parts, n, &start, &stop, &step) || !(l = tl_new(c, 0)))
		return -1;
	l->tuple = obj.u.l->tuple;
	for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
		if (tl_push(c, l, obj.u.l->v[i]))
			return -1;
	out->k = TV_LIST;
	out->u.l = l;
	return 0;
}

int tmpl_getitem(struct tctx *c, struct tval obj, struct tval key, struct tval *out)
{
	struct tval *v;

	if (tmpl_defined(c, obj))
		return -1;
	if (obj.k == TV_DICT) {
		if ((v = td_get(obj.u.d, key))) {
			*out = *v;
			return 0;
		}
	} else if ((obj.k == TV_LIST && !obj.u.l->gen) || obj.k == TV_STR) {
		if (key.k == TV_INT || key.k == TV_BOOL) {
			int64_t i = key.k == TV_INT ? key.u.i : key.u.b;
			int64_t n = obj.k == TV_LIST ? obj.u.l->n :
				    (int64_t)u8_count(obj.u.s->p, obj.u.s->len);

			if (i < 0)
				i += n;
			if (i >= 0 && i < n) {
				if (obj.k == TV_LIST) {
					*out = obj.u.l->v[i];
				} else {
					size_t at = u8_offset(obj.u.s->p, obj.u.s->len, (size_t)i);
					uint32_t cp;
					int len = u8_next(obj.u.s->p + at, obj.u.s->len - at, &cp);

					*out = tv_str(c, obj.u.s->p + at, (size_t)len);
				}
				return c->failed ? -1 : 0;
			}
		}
	}
	/* jinja2: a missing item with a string key may be an attribute. */
	if (key.k == TV_STR && memchr(key.u.s->p, 0, key.u.s->len) == NULL)
		return tmpl_getattr(c, obj, key.u.s->p, out);
	*out = tv_undef("no such item");
	return 0;
}

/* ---- calls ------------------------------------------------------------------------ */

static int eval_args(struct tctx *c, const struct node *e, struct frame *f, struct targs *a)
{
	struct tlist *pos = tl_new(c, e->nkids);
	uint32_t nkw = e->nkw;
	struct tval extra = { 0 };

	if (!pos)
		return -1;
	for (uint32_t i = 0; i < e->nkids; i++) {
		struct tval v;

		if (tmpl_eval(c, e->kids[i], f, &v) || tl_push(c, pos, v))
			return -1;
	}
	if (e->dyn_args) {
		struct tlist *items;

		if (tmpl_eval(c, e->dyn_args, f, &extra) || tmpl_iterate(c, extra, &items))
			return -1;
		for (uint32_t i = 0; i < items->n; i++)
			if (tl_push(c, pos, items->v[i]))
				return -1;
	}
	if (e->dyn_kwargs) {
		if (tmpl_eval(c, e->dyn_kwargs, f, &extra) || tmpl_defined(c, extra))
			return -1;
		if (extra.k != TV_DICT || extra.u.d->kind != TD_DICT)
			return terr(c, "argument after ** must be a mapping, not %s",
				    tv_typename(extra));
		nkw += extra.u.d->n;
	}
	a->pos = pos->v;
	a->npos = pos->n;
	a->nkw = 0;
	if (!nkw)
		return 0;
	a->kwn = ta_alloc(c->a, nkw * sizeof(*a->kwn));
	a->kwv = ta_alloc(c->a, nkw * sizeof(*a->kwv));
	if (!a->kwn || !a->kwv)
		return toom(c);
	for (uint32_t i = 0; i < e->nkw; i++) {
		a->kwn[a->nkw] = e->kwn[i];
		if (tmpl_eval(c, e->kwv[i], f, &a->kwv[a->nkw++]))
			return -1;
	}
	for (uint32_t i = 0; e->dyn_kwargs && i < extra.u.d->n; i++) {
		if (extra.u.d->k[i].k != TV_STR)
			return terr(c, "keywords must be strings");
		a->kwn[a->nkw] = extra.u.d->k[i].u.s->p;
		a->kwv[a->nkw++] = extra.u.d->v[i];
	}
	return 0;
}

int tmpl_macro_call(struct tctx *c, const struct tfunc *fn, struct targs *a, struct tval *out);

int tmpl_call(struct tctx *c, struct tval fn, struct targs *a, struct tval *out)
{
	if (tmpl_defined(c, fn))
		return -1;
	if (fn.k != TV_FUNC)
		return terr(c, "'%s' object is not callable", tv_typename(fn));
	if (fn.u.fn->macro)
		return tmpl_macro_call(c, fn.u.fn, a, out);
	return fn.u.fn->fn(c, fn.u.fn, a, out);
}

/* ---- operators ---------------------------------------------------------------------- */

static int is_num(struct tval v)
{
	return v.k == TV_BOOL || v.k == TV_INT || v.k == TV_FLOAT;
}

static double fnum(struct tval v)
{
	return v.k == TV_FLOAT ? v.u.f : v.k == TV_INT ? (double)v.u.i : v.u.b;
}

static int64_t inum(struct tval v)
{
	return v.k == TV_INT ? v.u.i : v.u.b;
}

static const char *const g_opname[] = {
	[OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/", [OP_FLOORDIV] = "//",
	[OP_MOD] = "%", [OP_POW] = "**",
};

static int bad_operands(struct tctx *c, int op, struct tval a, struct tval b)
{
	if (a.k == TV_UNDEF)
		return tmpl_defined(c, a);
	if (b.k == TV_UNDEF)
		return tmpl_defined(c, b);
	if (op == OP_ADD && a.k == TV_STR)
		return terr(c, "can only concatenate str (not \"%s\") to str", tv_typename(b));
	return terr(c, "unsupported operand type(s) for %s: '%s' and '%s'", g_opname[op],
		    tv_typename(a), tv_typename(b));
}

/* seq * n for a string or a list. */
static int repeat(struct tctx *c, struct tval seq, int64_t n, struct tval *out)
{
	if (n < 0)
		n = 0;
	if (seq.k == TV_STR) {
		struct tbuf b = { 0 };

		if ((uint64_t)n * seq.u.s->len > c->max_out)
			return terr(c, "the repeated string is over the output limit");
		if (tb_add(c, &b, "", 0))
			return -1;
		for (int64_t i = 0; i < n; i++)
			if (tb_add(c, &b, seq.u.s->p, seq.u.s->len))
				return -1;
		*out = tb_val(c, &b);
		return c->failed ? -1 : 0;
	} else {
		struct tlist *l = tl_new(c, 0);

		if (!l || (uint64_t)n * seq.u.l->n > 10000000)
			return l ? terr(c, "the repeated list is too long") : -1;
		l->tuple = seq.u.l->tuple;
		for (int64_t i = 0; i < n; i++)
			for (uint32_t k = 0; k < seq.u.l->n; k++)
				if (tl_push(c, l, seq.u.l->v[k]))
					return -1;
		out->k = TV_LIST;
		out->u.l = l;
		return 0;
	}
}

static int int_arith(struct tctx *c, int op, int64_t x, int64_t y, struct tval *out)
{
	int64_t r;

	switch (op) {
	case OP_ADD:
		if (__builtin_add_overflow(x, y, &r))
			break;
		*out = tv_int(r);
		return 0;
	case OP_SUB:
		if (__builtin_sub_overflow(x, y, &r))
			break;
		*out = tv_int(r);
		return 0;
	case OP_MUL:
		if (__builtin_mul_overflow(x, y, &r))
			break;
		*out = tv_int(r);
		return 0;
	case OP_FLOORDIV:
	case OP_MOD:
		if (y == 0)
			return terr(c, "integer division or modulo by zero");
		if (x == INT64_MIN && y == -1) {
			if (op == OP_FLOORDIV)
				break; /* 2**63: past int64, as Python's ints are not */
			*out = tv_int(0);
			return 0;
		}
		r = x / y;
		if ((x % y != 0) && ((x < 0) != (y < 0)))
			r--; /* Python floors */
		*out = tv_int(op == OP_FLOORDIV ? r : x - r * y);
		return 0;
	case OP_POW:
		if (y < 0) {
			*out = tv_float(pow((double)x, (double)y));
			return 0;
		}
		r = 1;
		for (int64_t i = 0; i < y; i++)
			if (__builtin_mul_overflow(r, x, &r))
				return terr(c, "integer overflow in **");
		*out = tv_int(r);
		return 0;
	}
	return terr(c, "integer overflow");
}

int tmpl_arith(struct tctx *c, int op, struct tval a, struct tval b, struct tval *out)
{
	if (is_num(a) && is_num(b)) {
		double x = fnum(a), y = fnum(b), r;

		if (op == OP_DIV) {
			if (y == 0)
				return terr(c, "division by zero");
			*out = tv_float(x / y);
			return 0;
		}
		if (a.k != TV_FLOAT && b.k != TV_FLOAT)
			return int_arith(c, op, inum(a), inum(b), out);
		switch (op) {
		case OP_ADD: r = x + y; break;
		case OP_SUB: r = x - y; break;
		case OP_MUL: r = x * y; break;
		case OP_POW: r = pow(x, y); break;
		default:
			if (y == 0)
				return terr(c, "float floor division by zero");
			r = floor(x / y);
			if (op == OP_MOD) {
				r = fmod(x, y);
				if (r != 0 && ((r < 0) != (y < 0)))
					r += y;
				else if (r == 0)
					r = copysign(0.0, y);
			}
		}
		*out = tv_float(r);
		return 0;
	}
	if (op == OP_ADD && a.k == TV_STR && b.k == TV_STR) {
		struct tbuf buf = { 0 };
		int markup = a.u.s->markup || b.u.s->markup;

		/* Markup + str escapes the str (markupsafe), even with autoescape off */
		if (markup ? tb_add(c, &buf, "", 0) || tmpl_html_escape(c, &buf, a.u.s) ||
			     tmpl_html_escape(c, &buf, b.u.s)
			   : tb_add(c, &buf, a.u.s->p, a.u.s->len) ||
			     tb_add(c, &buf, b.u.s->p, b.u.s->len))
			return -1;
		*out = tb_val(c, &buf);
		if (!c->failed && markup)
			*out = tv_markup(c, out->u.s);
		return c->failed ? -1 : 0;
	}
	if (op == OP_ADD && a.k == TV_LIST && b.k == TV_LIST && a.u.l->tuple == b.u.l->tuple &&
	    !a.u.l->gen && !b.u.l->gen) {
		struct tlist *l = tl_new(c, a.u.l->n + b.u.l->n);

		if (!l)
			return -1;
		l->tuple = a.u.l->tuple;
		for (uint32_t i = 0; i < a.u.l->n; i++)
			l->v[l->n++] = a.u.l->v[i];
		for (uint32_t i = 0; i < b.u.l->n; i++)
			l->v[l->n++] = b.u.l->v[i];
		out->k = TV_LIST;
		out->u.l = l;
		return 0;
	}
	if (op == OP_MUL && (a.k == TV_STR || (a.k == TV_LIST && !a.u.l->gen)) &&
	    (b.k == TV_INT || b.k == TV_BOOL))
		return repeat(c, a, inum(b), out);
	if (op == OP_MUL && (b.k == TV_STR || (b.k == TV_LIST && !b.u.l->gen)) &&
	    (a.k == TV_INT || a.k == TV_BOOL))
		return repeat(c, b, inum(a), out);
	if (op == OP_MOD && a.k == TV_STR) {
		struct targs args = { 0 };
		struct tval one = b;

		if (b.k == TV_LIST && b.u.l->tuple) {
			args.pos = b.u.l->v;
			args.npos = b.u.l->n;
		} else {
			args.pos = &one;
			args.npos = 1;
		}
		return tmpl_filter(c, "format", a, &args, out);
	}
	return bad_operands(c, op, a, b);
}

int tmpl_contains(struct tctx *c, struct tval hay, struct tval needle, int *out)
{
	struct tlist *items;

	if (hay.k == TV_STR) {
		if (needle.k != TV_STR) {
			if (needle.k == TV_UNDEF)
				return tmpl_defined(c, needle);
			return terr(c, "'in <string>' requires string as left operand, not %s",
				    tv_typename(needle));
		}
		*out = needle.u.s->len == 0 ||
		       memmem(hay.u.s->p, hay.u.s->len, needle.u.s->p, needle.u.s->len) != NULL;
		return 0;
	}
	if (hay.k == TV_DICT && hay.u.d->kind == TD_DICT) {
		*out = td_get(hay.u.d, needle) != NULL;
		return 0;
	}
	if (hay.k != TV_UNDEF && hay.k != TV_LIST)
		return terr(c, "argument of type '%s' is not iterable", tv_typename(hay));
	if (tmpl_iterate(c, hay, &items))
		return -1;
	*out = 0;
	for (uint32_t i = 0; i < items->n && !*out; i++)
		*out = tv_eq(items->v[i], needle);
	return 0;
}

static int compare(struct tctx *c, int op, struct tval a, struct tval b, int *out)
{
	int cmp;

	switch (op) {
	case OP_EQ: *out = tv_eq(a, b); return 0;
	case OP_NE: *out = !tv_eq(a, b); return 0;
	case OP_IN: return tmpl_contains(c, b, a, out);
	case OP_NOTIN:
		if (tmpl_contains(c, b, a, out))
			return -1;
		*out = !*out;
		return 0;
	}
	if (tv_cmp(c, a, b, &cmp))
		return -1;
	*out = op == OP_LT ? cmp < 0 : op == OP_LTEQ ? cmp <= 0 : op == OP_GT ? cmp > 0 : cmp >= 0;
	return 0;
}

static int eval_cmp(struct tctx *c, const struct node *e, struct frame *f, struct tval *out)
{
	struct tval left, right;
	int r = 1;

	if (tmpl_eval(c, e->kids[0], f, &left))
		return -1;
	for (uint32_t i = 1; i < e->nkids && r; i++) {
		if (tmpl_eval(c, e->kids[i], f, &right) || compare(c, e->ops[i], left, right, &r))
			return -1;
		left = right;
	}
	*out = tv_bool(r);
	return 0;
}

static int eval_unary(struct tctx *c, const struct node *e, struct frame *f, struct tval *out)
{
	struct tval v;

	if (tmpl_eval(c, e->a, f, &v) || tmpl_defined(c, v))
		return -1;
	if (!is_num(v))
		return terr(c, "bad operand type for unary %c: '%s'", e->kind == E_NEG ? '-' : '+',
			    tv_typename(v));
	if (e->kind == E_POS)
		*out = v.k == TV_BOOL ? tv_int(v.u.b) : v;
	else if (v.k == TV_FLOAT)
		*out = tv_float(-v.u.f);
	else if (inum(v) == INT64_MIN)
		return terr(c, "integer overflow");
	else
		*out = tv_int(-inum(v));
	return 0;
}

static int eval_seq(struct tctx *c, const struct node *e, struct frame *f, struct tval *out)
{
	if (e->kind == E_DICT) {
		struct tdict *d = td_new(c, TD_DICT);

		if (!d)
			return -1;
		for (uint32_t i = 0; i < e->nkids; i++) {
			struct tval k, v;

			if (tmpl_eval(c, e->kids[i], f, &k) || tmpl_eval(c, e->els[i], f, &v) ||
			    td_set(c, d, k, v))
				return -1;
		}
		out->k = TV_DICT;
		out->u.d = d;
		return 0;
	} else {
		struct tlist *l = tl_new(c, e->nkids);

		if (!l)
			return -1;
		l->tuple = e->kind == E_TUPLE;
		for (uint32_t i = 0; i < e->nkids; i++)
			if (tmpl_eval(c, e->kids[i], f, &l->v[l->n++]))
				return -1;
		out->k = TV_LIST;
		out->u.l = l;
		return 0;
	}
}

/* A filter chain whose innermost input is `input` (filter blocks) or its own operand. */
int tmpl_eval_filter(struct tctx *c, const struct node *e, struct frame *f,
		     const struct tval *input, struct tval *out)
{
	struct targs a;
	struct tval v;

	if (e->a) {
		if (e->a->kind == E_FILTER ? tmpl_eval_filter(c, e->a, f, input, &v) :
					     tmpl_eval(c, e->a, f, &v))
			return -1;
	} else {
		v = *input;
	}
	if (eval_args(c, e, f, &a))
		return -1;
	return tmpl_filter(c, e->name, v, &a, out);
}

static int eval_concat(struct tctx *c, const struct node *e, struct frame *f, struct tval *out)
{
	struct tbuf b = { 0 };

	if (tb_add(c, &b, "", 0))
		return -1;
	for (uint32_t i = 0; i < e->nkids; i++) {
		struct tval v;

		if (tmpl_eval(c, e->kids[i], f, &v) || tv_str_into(c, &b, v))
			return -1;
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

int tmpl_eval(struct tctx *c, const struct node *e, struct frame *f, struct tval *out)
{
	struct tval a, b;
	struct targs args;
	int r;

	if (tmpl_step(c))
		return -1;
	c->line = e->line;
	switch (e->kind) {
	case E_CONST:
		*out = e->val;
		return 0;
	case E_NAME:
		*out = tmpl_lookup(c, f, e->name);
		return c->failed ? -1 : 0;
	case E_ATTR:
		return tmpl_eval(c, e->a, f, &a) || tmpl_getattr(c, a, e->name, out) ? -1 : 0;
	case E_ITEM:
		return tmpl_eval(c, e->a, f, &a) || tmpl_eval(c, e->b, f, &b) ||
		       tmpl_getitem(c, a, b, out) ? -1 : 0;
	case E_SLICE:
		return eval_slice(c, e, f, out);
	case E_CALL:
		if (tmpl_eval(c, e->a, f, &a) || eval_args(c, e, f, &args))
			return -1;
		c->line = e->line;
		return tmpl_call(c, a, &args, out);
	case E_FILTER:
		return tmpl_eval_filter(c, e, f, NULL, out);
	case E_TEST:
		if (tmpl_eval(c, e->a, f, &a) || eval_args(c, e, f, &args) ||
		    tmpl_test(c, e->name, a, &args, &r))
			return -1;
		*out = tv_bool(r);
		return 0;
	case E_NEG:
	case E_POS:
		return eval_unary(c, e, f, out);
	case E_NOT:
		if (tmpl_eval(c, e->a, f, &a))
			return -1;
		*out = tv_bool(!tv_truthy(a));
		return 0;
	case E_AND:
	case E_OR:
		if (tmpl_eval(c, e->a, f, &a))
			return -1;
		if (tv_truthy(a) == (e->kind == E_OR)) {
			*out = a;
			return 0;
		}
		return tmpl_eval(c, e->b, f, out);
	case E_BIN:
		if (tmpl_eval(c, e->a, f, &a) || tmpl_eval(c, e->b, f, &b))
			return -1;
		c->line = e->line;
		return tmpl_arith(c, e->op, a, b, out);
	case E_CMP:
		return eval_cmp(c, e, f, out);
	case E_COND:
		if (tmpl_eval(c, e->a, f, &a))
			return -1;
		if (tv_truthy(a))
			return tmpl_eval(c, e->b, f, out);
		if (e->c)
			return tmpl_eval(c, e->c, f, out);
		*out = tv_undef("the inline if-expression evaluated to false and no else "
				"section was defined");
		return 0;
	case E_LIST:
	case E_TUPLE:
	case E_DICT:
		return eval_seq(c, e, f, out);
	case E_CONCAT:
		return eval_concat(c, e, f, out);
	default:
		return terr(c, "internal error: a statement where an expression belongs");
	}
}
