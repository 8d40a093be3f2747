/*
 * eval.c - statements and the render: output, if, for (a scope per
 * iteration, as jinja2 has it, so a set inside a loop stays there), set,
 * macros and call blocks (a scope of their own over the one they were
 * defined in), filter blocks; and the public compile/render/free.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl/tmpl_int.h"

#define MAX_CALL_DEPTH 100

int tmpl_eval_filter(struct tctx *c, const struct node *e, struct frame *f,
		     const struct tval *input, struct tval *out);

static struct frame *frame_new(struct tctx *c, struct frame *up)
{
	struct frame *f = ta_alloc(c->a, sizeof(*f));

	if (!f || !(f->vars = td_new(c, TD_DICT))) {
		toom(c);
		return NULL;
	}
	f->up = up;
	return f;
}

int tmpl_iterate(struct tctx *c, struct tval v, struct tlist **out)
{
	struct tlist *l;

	switch (v.k) {
	case TV_UNDEF:
		return (*out = tl_new(c, 0)) ? 0 : -1;
	case TV_LIST:
		/* A copy: the body may append to the list it walks. */
		if (!(l = tl_new(c, v.u.l->n)))
			return -1;
		if (v.u.l->n)
			memcpy(l->v, v.u.l->v, v.u.l->n * sizeof(*l->v));
		l->n = v.u.l->n;
		*out = l;
		return 0;
	case TV_DICT:
		if (v.u.d->kind != TD_DICT)
			break;
		if (!(l = tl_new(c, v.u.d->n)))
			return -1;
		if (v.u.d->n)
			memcpy(l->v, v.u.d->k, v.u.d->n * sizeof(*l->v));
		l->n = v.u.d->n;
		*out = l;
		return 0;
	case TV_STR:
		if (!(l = tl_new(c, 0)))
			return -1;
		for (size_t i = 0; i < v.u.s->len;) {
			uint32_t cp;
			int n = u8_next(v.u.s->p + i, v.u.s->len - i, &cp);

			if (tl_push(c, l, tv_str(c, v.u.s->p + i, (size_t)n)) || c->failed)
				return -1;
			i += (size_t)n;
		}
		*out = l;
		return 0;
	default:
		break;
	}
	return terr(c, "'%s' object is not iterable", tv_typename(v));
}

/* Bind a for/set target (a name or a tuple of names) in vars. */
static int assign(struct tctx *c, const struct node *target, struct tdict *vars, struct tval v)
{
	struct tlist *items;

	if (target->kind == E_NAME)
		return td_sets(c, vars, target->name, v);
	if (tmpl_defined(c, v) || tmpl_iterate(c, v, &items))
		return -1;
	if (items->n < target->nkids)
		return terr(c, "not enough values to unpack (expected %u, got %u)", target->nkids,
			    items->n);
	if (items->n > target->nkids)
		return terr(c, "too many values to unpack (expected %u)", target->nkids);
	for (uint32_t i = 0; i < target->nkids; i++)
		if (td_sets(c, vars, target->kids[i]->name, items->v[i]))
			return -1;
	return 0;
}

static int exec_set(struct tctx *c, const struct node *s, struct frame *f, struct tval v)
{
	const struct node *t = s->a;
	struct tval ns;

	if (t->kind != E_NSREF)
		return assign(c, t, f->vars, v);
	ns = tmpl_lookup(c, f, t->name);
	if (tmpl_defined(c, ns))
		return -1;
	if (ns.k != TV_DICT || ns.u.d->kind != TD_NS)
		return terr(c, "cannot assign attribute on non-namespace object");
	return td_sets(c, ns.u.d, t->attr, v);
}

static const char *const g_loop_names[] = {
	"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth",
	"depth0", "previtem", "nextitem", "cycle",
};

static int loop_cycle(struct tctx *c, const struct tfunc *fn, struct targs *a, struct tval *out)
{
	if (!a->npos)
		return terr(c, "no items for cycling given");
	*out = a->pos[fn->data % a->npos];
	return 0;
}

/* loop.* for item i of the n in items.  The keys are static: a loop allocates only values. */
static struct tval loop_object(struct tctx *c, const struct tlist *items, uint32_t i)
{
	const uint32_t nk = sizeof(g_loop_names) / sizeof(g_loop_names[0]);
	struct tdict *d = td_new(c, TD_LOOP);
	uint32_t n = items->n;
	struct tval v = { .k = TV_DICT }, vals[sizeof(g_loop_names) / sizeof(g_loop_names[0])];
	struct tstr *keys = ta_alloc(c->a, nk * sizeof(*keys));

	if (!d || !keys || !(d->k = ta_alloc(c->a, nk * sizeof(*d->k))) ||
	    !(d->v = ta_alloc(c->a, nk * sizeof(*d->v)))) {
		toom(c);
		return tv_undef("out of memory");
	}
	vals[0] = tv_int(i + 1);
	vals[1] = tv_int(i);
	vals[2] = tv_int(n - i);
	vals[3] = tv_int(n - i - 1);
	vals[4] = tv_bool(i == 0);
	vals[5] = tv_bool(i + 1 == n);
	vals[6] = tv_int(n);
	vals[7] = tv_int(1);
	vals[8] = tv_int(0);
	vals[9] = i ? items->v[i - 1] : tv_undef("there is no previous item");
	vals[10] = i + 1 < n ? items->v[i + 1] : tv_undef("there is no next item");
	vals[11] = tmpl_builtin(c, "cycle", loop_cycle, NULL, i);
	for (uint32_t k = 0; k < nk; k++) {
		keys[k].p = g_loop_names[k];
		keys[k].len = strlen(g_loop_names[k]);
		d->k[k].k = TV_STR;
		d->k[k].u.s = &keys[k];
		d->v[k] = vals[k];
	}
	d->n = d->cap = nk;
	v.u.d = d;
	return c->failed ? tv_undef("out of memory") : v;
}

static int exec_for(struct tctx *c, const struct node *s, struct frame *f, struct tbuf *out)
{
	struct tlist *items, *kept;
	struct tval it;

	if (tmpl_eval(c, s->b, f, &it) || tmpl_iterate(c, it, &items))
		return -1;
	kept = items;
	if (s->c) { /* for x in xs if cond: loop.length counts what passes */
		if (!(kept = tl_new(c, items->n)))
			return -1;
		for (uint32_t i = 0; i < items->n; i++) {
			struct frame *tf = frame_new(c, f);
			struct tval ok;

			if (!tf || assign(c, s->a, tf->vars, items->v[i]) ||
			    tmpl_eval(c, s->c, tf, &ok))
				return -1;
			if (tv_truthy(ok))
				kept->v[kept->n++] = items->v[i];
		}
	}
	for (uint32_t i = 0; i < kept->n; i++) {
		struct frame *bf = frame_new(c, f);
		struct tval loop;

		if (!bf || assign(c, s->a, bf->vars, kept->v[i]))
			return -1;
		if (tmpl_step(c))
			return -1;
		loop = loop_object(c, kept, i);
		if (c->failed || td_sets(c, bf->vars, "loop", loop) ||
		    tmpl_exec_body(c, s->kids, s->nkids, bf, out))
			return -1;
		if (c->loop_ctl == LOOP_BREAK) {
			c->loop_ctl = LOOP_NONE;
			break;
		}
		c->loop_ctl = LOOP_NONE;
	}
	if (!kept->n)
		return tmpl_exec_body(c, s->els, s->nels, f, out);
	return 0;
}

static int render_to_value(struct tctx *c, struct node *const *body, uint32_t n, struct frame *f,
			   struct tval *out)
{
	struct tbuf b = { 0 };

	if (tb_add(c, &b, "", 0) || tmpl_exec_body(c, body, n, f, &b))
		return -1;
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

/* Bind a call's arguments to the parameters of macro (or call block) m in frame mf. */
static int bind_params(struct tctx *c, const struct tfunc *fn, struct targs *a, struct frame *mf)
{
	const struct node *m = fn->macro;
	const char *name = fn->name;
	struct tlist *extra = NULL;
	struct tdict *kw = NULL, *given = td_new(c, TD_DICT);
	uint32_t i;

	if (!given)
		return -1;
	if (a->npos > m->nkw && !m->uses_varargs)
		return terr(c, "macro '%s' takes not more than %u argument(s)", name, m->nkw);
	for (i = 0; i < a->npos && i < m->nkw; i++)
		if (td_sets(c, mf->vars, m->kwn[i], a->pos[i]) ||
		    td_sets(c, given, m->kwn[i], tv_bool(1)))
			return -1;
	if (m->uses_varargs) {
		if (!(extra = tl_new(c, 0)))
			return -1;
		extra->tuple = 1;
		for (; i < a->npos; i++)
			if (tl_push(c, extra, a->pos[i]))
				return -1;
	}
	if (m->uses_kwargs && !(kw = td_new(c, TD_DICT)))
		return -1;
	for (uint32_t k = 0; k < a->nkw; k++) {
		const char *key = a->kwn[k];
		int param = 0;

		for (uint32_t p = 0; p < m->nkw && !param; p++)
			param = strcmp(m->kwn[p], key) == 0;
		if (param && td_gets(given, key))
			return terr(c, "macro '%s' got multiple values for argument '%s'", name, key);
		if (param || (!strcmp(key, "caller") && m->uses_caller)) {
			if (td_sets(c, mf->vars, key, a->kwv[k]) || td_sets(c, given, key, tv_bool(1)))
				return -1;
		} else if (kw) {
			if (td_sets(c, kw, key, a->kwv[k]))
				return -1;
		} else {
			return terr(c, "macro '%s' takes no keyword argument '%s'", name, key);
		}
	}
	/* Defaults are evaluated in the macro's scope: b=a+1 sees a. */
	for (uint32_t p = 0; p < m->nkw; p++) {
		struct tval v;

		if (td_gets(given, m->kwn[p]))
			continue;
		if (m->kwv[p]) {
			if (tmpl_eval(c, m->kwv[p], mf, &v))
				return -1;
		} else {
			char *why = ta_alloc(c->a, strlen(m->kwn[p]) + 48);

			if (why)
				sprintf(why, "parameter '%s' was not provided", m->kwn[p]);
			v = tv_undef(why ? why : "parameter was not provided");
		}
		if (td_sets(c, mf->vars, m->kwn[p], v))
			return -1;
	}
	if (extra) {
		struct tval v = { .k = TV_LIST };

		v.u.l = extra;
		if (td_sets(c, mf->vars, "varargs", v))
			return -1;
	}
	if (kw) {
		struct tval v = { .k = TV_DICT };

		v.u.d = kw;
		if (td_sets(c, mf->vars, "kwargs", v))
			return -1;
	}
	return 0;
}

int tmpl_macro_call(struct tctx *c, const struct tfunc *fn, struct targs *a, struct tval *out)
{
	struct frame *mf;
	int rc, line = c->line;

	if (c->depth >= MAX_CALL_DEPTH)
		return terr(c, "maximum recursion depth exceeded (macros call each other %d deep)",
			    MAX_CALL_DEPTH);
	if (!(mf = frame_new(c, fn->closure)) || bind_params(c, fn, a, mf))
		return -1;
	c->depth++;
	rc = render_to_value(c, fn->macro->kids, fn->macro->nkids, mf, out);
	c->depth--;
	c->line = line;
	return rc;
}

static int exec_callblock(struct tctx *c, const struct node *s, struct frame *f, struct tbuf *out)
{
	const struct node *call = s->a;
	struct tfunc *caller = ta_alloc(c->a, sizeof(*caller));
	struct tval fn, res, cv = { .k = TV_FUNC };
	struct targs a = { 0 };
	struct node tmp;

	if (!caller)
		return toom(c);
	caller->name = "caller";
	caller->macro = s;
	caller->closure = f;
	cv.u.fn = caller;
	if (tmpl_eval(c, call->a, f, &fn))
		return -1;
	/* The call's own arguments, then caller=... */
	tmp = *call;
	tmp.kind = E_LIST;
	{
		struct tval pos;

		if (tmpl_eval(c, &tmp, f, &pos))
			return -1;
		a.pos = pos.u.l->v;
		a.npos = pos.u.l->n;
	}
	a.kwn = ta_alloc(c->a, (call->nkw + 1) * sizeof(*a.kwn));
	a.kwv = ta_alloc(c->a, (call->nkw + 1) * sizeof(*a.kwv));
	if (!a.kwn || !a.kwv)
		return toom(c);
	for (uint32_t i = 0; i < call->nkw; i++) {
		a.kwn[a.nkw] = call->kwn[i];
		if (tmpl_eval(c, call->kwv[i], f, &a.kwv[a.nkw++]))
			return -1;
	}
	a.kwn[a.nkw] = "caller";
	a.kwv[a.nkw++] = cv;
	if (tmpl_call(c, fn, &a, &res))
		return -1;
	return tv_str_into(c, out, res);
}

static int exec_one(struct tctx *c, const struct node *s, struct frame *f, struct tbuf *out)
{
	struct tval v;

	c->line = s->line;
	switch (s->kind) {
	case N_TEXT:
		return tb_add(c, out, s->val.u.s->p, s->val.u.s->len);
	case N_OUT:
		return tmpl_eval(c, s->a, f, &v) || tv_str_into(c, out, v) ? -1 : 0;
	case N_IF:
		if (tmpl_eval(c, s->a, f, &v))
			return -1;
		if (tv_truthy(v))
			return tmpl_exec_body(c, s->kids, s->nkids, f, out);
		return tmpl_exec_body(c, s->els, s->nels, f, out);
	case N_FOR:
		return exec_for(c, s, f, out);
	case N_SET:
		return tmpl_eval(c, s->b, f, &v) || exec_set(c, s, f, v) ? -1 : 0;
	case N_SETBLOCK:
		if (render_to_value(c, s->kids, s->nkids, f, &v))
			return -1;
		if (s->c && tmpl_eval_filter(c, s->c, f, &v, &v))
			return -1;
		return exec_set(c, s, f, v);
	case N_MACRO: {
		struct tfunc *fn = ta_alloc(c->a, sizeof(*fn));
		struct tval mv = { .k = TV_FUNC };

		if (!fn)
			return toom(c);
		fn->name = s->name;
		fn->macro = s;
		fn->closure = f;
		mv.u.fn = fn;
		return td_sets(c, f->vars, s->name, mv);
	}
	case N_CALLBLOCK:
		return exec_callblock(c, s, f, out);
	case N_FILTERBLOCK:
		if (render_to_value(c, s->kids, s->nkids, f, &v) ||
		    tmpl_eval_filter(c, s->a, f, &v, &v))
			return -1;
		return tv_str_into(c, out, v);
	case N_BREAK:
		c->loop_ctl = LOOP_BREAK;
		return 0;
	case N_CONTINUE:
		c->loop_ctl = LOOP_CONTINUE;
		return 0;
	case N_BODY:
		return tmpl_exec_body(c, s->kids, s->nkids, f, out);
	case N_SCOPE: { /* a body with its own variables, as a call block's */
		struct frame *sf = frame_new(c, f);

		return sf ? tmpl_exec_body(c, s->kids, s->nkids, sf, out) : -1;
	}
	default:
		return terr(c, "internal error: an expression where a statement belongs");
	}
}

int tmpl_exec_body(struct tctx *c, struct node *const *body, uint32_t n, struct frame *f,
		   struct tbuf *out)
{
	for (uint32_t i = 0; i < n && !c->loop_ctl; i++) {
		if (tmpl_step(c) || exec_one(c, body[i], f, out))
			return -1;
		if (out->len > c->max_out)
			return terr(c, "the template wrote more than %zu bytes", c->max_out);
	}
	return 0;
}

/* ---- the public API ---------------------------------------------------------------- */

int strata_tmpl_compile(const char *src, size_t len, struct strata_tmpl **out,
			struct strata_tmpl_err *err)
{
	struct strata_tmpl *t = calloc(1, sizeof(*t));
	struct token *toks;
	size_t n;
	int rc;

	memset(err, 0, sizeof(*err));
	*out = NULL;
	if (!t) {
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return -ENOMEM;
	}
	/* Tokens and tree take a few times the text; the bound only stops runaways. */
	ta_init(&t->arena, (64u << 20) + (len < (SIZE_MAX >> 8) ? len * 64 : SIZE_MAX >> 2));
	rc = tmpl_lex(&t->arena, src, len, &toks, &n, err);
	if (!rc && tmpl_parse(t, toks, n, err))
		rc = t->arena.full ? -ENOMEM : -EINVAL;
	if (rc) {
		strata_tmpl_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void strata_tmpl_free(struct strata_tmpl *t)
{
	if (!t)
		return;
	ta_free(&t->arena);
	free(t);
}

static int render_vars(struct tctx *c, const cJSON *vars, struct tdict *globals)
{
	const cJSON *it;

	if (tmpl_globals(c, globals))
		return -1;
	if (!vars)
		return 0;
	cJSON_ArrayForEach(it, vars) {
		struct tval v = tv_from_cjson(c, it);

		if (c->failed || !it->string || td_sets(c, globals, it->string, v))
			return -1;
	}
	return 0;
}

int strata_tmpl_render(const struct strata_tmpl *t, const cJSON *vars,
		       const struct strata_tmpl_opts *opts, char **out, size_t *len,
		       struct strata_tmpl_err *err)
{
	struct strata_tmpl_opts o = opts ? *opts : (struct strata_tmpl_opts){ 0 };
	struct tarena arena;
	struct tctx c = { .a = &arena, .err = err };
	struct frame *globals, *root;
	struct tbuf b = { 0 };
	int rc = 0;

	memset(err, 0, sizeof(*err));
	*out = NULL;
	*len = 0;
	ta_init(&arena, o.max_mem ? o.max_mem : 256u << 20);
	c.max_out = o.max_out ? o.max_out : 64u << 20;
	c.max_steps = o.max_steps ? o.max_steps : 50000000u;
	c.now = o.now;
	if (!(globals = frame_new(&c, NULL)) || !(root = frame_new(&c, globals)) ||
	    render_vars(&c, vars, globals->vars) || tb_add(&c, &b, "", 0) ||
	    tmpl_exec_body(&c, t->root->kids, t->root->nkids, root, &b))
		rc = -1;
	if (!rc) {
		*out = malloc(b.len + 1);
		if (*out) {
			memcpy(*out, b.p, b.len + 1);
			*len = b.len;
		} else {
			snprintf(err->msg, sizeof(err->msg), "out of memory");
			rc = -ENOMEM;
		}
	} else {
		if (!c.failed)
			toom(&c);
		rc = -EINVAL;
	}
	ta_free(&arena);
	return rc;
}
