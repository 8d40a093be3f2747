/*
 * globals.c - the functions every template sees: jinja2's range (the
 * sandbox's, at most 100000 items), namespace, dict and joiner, and
 * transformers' raise_exception and strftime_now.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tmpl/tmpl_int.h"

#define MAX_RANGE 100000

struct tval tmpl_builtin(struct tctx *c, const char *name, tbuiltin_fn fn, struct tval *self,
			 int64_t data)
{
	struct tfunc *f = ta_alloc(c->a, sizeof(*f));
	struct tval v = { .k = TV_FUNC };

	if (!f) {
		toom(c);
		return tv_undef("out of memory");
	}
	f->name = name;
	f->fn = fn;
	f->self = self;
	f->data = data;
	v.u.fn = f;
	return v;
}

static int g_range(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	int64_t v[3] = { 0, 0, 1 };
	struct tlist *l;
	int64_t n;

	if (a->nkw || a->npos < 1 || a->npos > 3)
		return terr(c, "range expected 1 to 3 integer arguments");
	for (uint32_t i = 0; i < a->npos; i++) {
		if (a->pos[i].k != TV_INT && a->pos[i].k != TV_BOOL)
			return terr(c, "'%s' object cannot be interpreted as an integer",
				    tv_typename(a->pos[i]));
		v[a->npos == 1 ? 1 : i] = a->pos[i].k == TV_INT ? a->pos[i].u.i : a->pos[i].u.b;
	}
	if (!v[2])
		return terr(c, "range() arg 3 must not be zero");
	n = v[2] > 0 ? (v[1] > v[0] ? (v[1] - v[0] + v[2] - 1) / v[2] : 0)
		     : (v[0] > v[1] ? (v[0] - v[1] - v[2] - 1) / -v[2] : 0);
	if (n > MAX_RANGE)
		return terr(c, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).",
			    MAX_RANGE);
	if (!(l = tl_new(c, (uint32_t)n)))
		return -1;
	for (int64_t i = 0; i < n; i++)
		l->v[l->n++] = tv_int(v[0] + i * v[2]);
	out->k = TV_LIST;
	out->u.l = l;
	return 0;
}

/* dict(mapping or pairs, **kw) into d. */
static int fill_dict(struct tctx *c, struct tdict *d, struct targs *a, const char *fn)
{
	if (a->npos > 1)
		return terr(c, "%s expected at most 1 argument, got %u", fn, a->npos);
	if (a->npos) {
		struct tval src = a->pos[0];
		struct tlist *items;

		if (src.k == TV_DICT) {
			for (uint32_t i = 0; i < src.u.d->n; i++)
				if (td_set(c, d, src.u.d->k[i], src.u.d->v[i]))
					return -1;
		} else {
			if (tmpl_iterate(c, src, &items))
				return -1;
			for (uint32_t i = 0; i < items->n; i++) {
				struct tval p = items->v[i];

				if (p.k != TV_LIST || p.u.l->n != 2)
					return terr(c, "dictionary update sequence element #%u has the "
						    "wrong length", i);
				if (td_set(c, d, p.u.l->v[0], p.u.l->v[1]))
					return -1;
			}
		}
	}
	for (uint32_t k = 0; k < a->nkw; k++)
		if (td_sets(c, d, a->kwn[k], a->kwv[k]))
			return -1;
	return 0;
}

static int g_namespace(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tdict *d = td_new(c, TD_NS);

	if (!d || fill_dict(c, d, a, "namespace"))
		return -1;
	out->k = TV_DICT;
	out->u.d = d;
	return 0;
}

static int g_dict(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tdict *d = td_new(c, TD_DICT);

	if (!d || fill_dict(c, d, a, "dict"))
		return -1;
	out->k = TV_DICT;
	out->u.d = d;
	return 0;
}

static int g_raise(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tbuf b = { 0 };
	struct tval msg;

	if (!targ(a, 0, "message", &msg))
		msg = tv_str(c, "", 0);
	if (tb_add(c, &b, "", 0) || tv_str_into(c, &b, msg))
		return -1;
	terr(c, "%s", b.p);
	c->err->raised = 1;
	return -1;
}

static int g_strftime(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tval fmt;
	time_t t = (time_t)c->now;
	struct tm tm;
	char buf[512];
	size_t n;

	if (!targ(a, 0, "format", &fmt) || fmt.k != TV_STR)
		return terr(c, "strftime_now() takes a format string");
	if (!gmtime_r(&t, &tm))
		return terr(c, "strftime_now: the time is out of range");
	n = fmt.u.s->len ? strftime(buf, sizeof(buf), fmt.u.s->p, &tm) : 0;
	if (!n && fmt.u.s->len)
		return terr(c, "strftime_now: the formatted date is too long");
	*out = tv_str(c, buf, n);
	return c->failed ? -1 : 0;
}

/* joiner(sep): a function that returns '' the first time, then sep. */
static int joiner_call(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tval *state = f->self; /* [0]: called yet, [1]: the separator */

	if (!state[0].u.b) {
		state[0] = tv_bool(1);
		*out = tv_str(c, "", 0);
		return c->failed ? -1 : 0;
	}
	*out = state[1];
	return 0;
}

static int g_joiner(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tval *state = ta_alloc(c->a, 2 * sizeof(*state));

	if (!state)
		return toom(c);
	state[0] = tv_bool(0);
	if (!targ(a, 0, "sep", &state[1]))
		state[1] = tv_str(c, ", ", 2);
	*out = tmpl_builtin(c, "joiner", joiner_call, state, 0);
	return c->failed ? -1 : 0;
}

int tmpl_globals(struct tctx *c, struct tdict *d)
{
	static const struct {
		const char *name;
		tbuiltin_fn fn;
	} g[] = {
		{ "range", g_range }, { "namespace", g_namespace }, { "dict", g_dict },
		{ "raise_exception", g_raise }, { "strftime_now", g_strftime },
		{ "joiner", g_joiner },
	};

	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
		struct tval v = tmpl_builtin(c, g[i].name, g[i].fn, NULL, 0);

		if (c->failed || td_sets(c, d, g[i].name, v))
			return -1;
	}
	return 0;
}
