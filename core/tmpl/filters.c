/*
 * filters.c - jinja2's filters on strings and scalars (jinja2/filters.py),
 * the printf-style format filter (Python's % operator), transformers'
 * tojson and llama.cpp's from_json, and the table every filter is found in.
 * The filters on sequences are in seqfilt.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl/tmpl_int.h"
#include "tmpl/filt_int.h"

int targ(const struct targs *a, uint32_t i, const char *name, struct tval *out)
{
	if (i < a->npos) {
		*out = a->pos[i];
		return 1;
	}
	for (uint32_t k = 0; name && k < a->nkw; k++)
		if (strcmp(a->kwn[k], name) == 0) {
			*out = a->kwv[k];
			return 1;
		}
	return 0;
}

int targ_check(struct tctx *c, const struct targs *a, const char *fn, uint32_t maxpos,
	       const char *const *names)
{
	if (a->npos > maxpos)
		return terr(c, "%s() takes at most %u positional argument(s) (%u given)", fn, maxpos,
			    a->npos);
	for (uint32_t k = 0; k < a->nkw; k++) {
		int ok = 0;

		for (const char *const *n = names; n && *n && !ok; n++)
			ok = strcmp(*n, a->kwn[k]) == 0;
		if (!ok)
			return terr(c, "%s() got an unexpected keyword argument '%s'", fn, a->kwn[k]);
	}
	return 0;
}

/* Argument as a string, bool or int, with a default when absent. */
int farg_str(struct tctx *c, const struct targs *a, uint32_t i, const char *name,
	     const char *fn, const struct tstr **out)
{
	struct tval v;

	if (!targ(a, i, name, &v))
		return 0;
	if (v.k != TV_STR)
		return terr(c, "%s(): '%s' must be a string, not %s", fn, name, tv_typename(v));
	*out = v.u.s;
	return 0;
}

int farg_bool(const struct targs *a, uint32_t i, const char *name, int dflt)
{
	struct tval v;

	return targ(a, i, name, &v) ? tv_truthy(v) : dflt;
}

int farg_int(struct tctx *c, const struct targs *a, uint32_t i, const char *name,
	     const char *fn, int64_t *out)
{
	struct tval v;

	if (!targ(a, i, name, &v))
		return 0;
	if (v.k != TV_INT && v.k != TV_BOOL)
		return terr(c, "%s(): '%s' must be an integer, not %s", fn, name, tv_typename(v));
	*out = v.k == TV_INT ? v.u.i : v.u.b;
	return 0;
}

/* str(v) for the filters that take soft_str(value). */
int fstr(struct tctx *c, struct tval v, const struct tstr **out)
{
	struct tval s;

	if (tv_to_str(c, v, &s))
		return -1;
	*out = s.u.s;
	return 0;
}

/* s.upper() / s.lower() with Python's full case mapping. */
static int map_case(struct tctx *c, const struct tstr *s, int upper, struct tval *out)
{
	struct tbuf b = { 0 };

	if (tb_add(c, &b, "", 0))
		return -1;
	for (size_t i = 0; i < s->len;) {
		uint32_t cp, to[3];
		int l = u8_next(s->p + i, s->len - i, &cp), n = u_case_full(cp, upper, to);
		char enc[4];

		for (int k = 0; k < n; k++)
			if (tb_add(c, &b, enc, u8_put(to[k], enc)))
				return -1;
		i += (size_t)l;
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

int tmpl_str_case(struct tctx *c, const struct tstr *s, int upper, struct tval *out)
{
	return map_case(c, s, upper, out);
}

int tmpl_str_lower(struct tctx *c, struct tval s, struct tval *out)
{
	return map_case(c, s.u.s, 0, out);
}

static int f_upper(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	const struct tstr *s;

	return fstr(c, v, &s) || map_case(c, s, 1, out) ? -1 : 0;
}

static int f_lower(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	const struct tstr *s;

	return fstr(c, v, &s) || map_case(c, s, 0, out) ? -1 : 0;
}

/* First character upper case, the rest lower (str.capitalize). */
int tmpl_capitalize(struct tctx *c, const struct tstr *s, struct tval *out)
{
	struct tbuf b = { 0 };

	if (tb_add(c, &b, "", 0))
		return -1;
	for (size_t i = 0; i < s->len;) {
		uint32_t cp;
		int l = u8_next(s->p + i, s->len - i, &cp);
		char enc[4];

		if (tb_add(c, &b, enc, u8_put(i ? u_lower(cp) : u_upper(cp), enc)))
			return -1;
		i += (size_t)l;
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

static int f_capitalize(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	const struct tstr *s;

	return fstr(c, v, &s) || tmpl_capitalize(c, s, out) ? -1 : 0;
}

/* jinja2's title: each run after [-\s({[<]+ gets its first letter up, the rest down. */
static int f_title(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	const struct tstr *s;
	struct tbuf b = { 0 };
	int start = 1;

	if (fstr(c, v, &s) || tb_add(c, &b, "", 0))
		return -1;
	for (size_t i = 0; i < s->len;) {
		uint32_t cp;
		int l = u8_next(s->p + i, s->len - i, &cp), sep;
		char enc[4];

		sep = u_isspace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
		if (tb_add(c, &b, enc, u8_put(sep ? cp : start ? u_upper(cp) : u_lower(cp), enc)))
			return -1;
		start = sep;
		i += (size_t)l;
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

static int f_trim(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "chars", NULL };
	const struct tstr *s, *chars = NULL;

	if (targ_check(c, a, "trim", 1, kw) || fstr(c, v, &s) ||
	    farg_str(c, a, 0, "chars", "trim", &chars))
		return -1;
	*out = tmpl_strip(c, s, chars, 3);
	return c->failed ? -1 : 0;
}

static int f_string(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	if (v.k == TV_LIST && v.u.l->gen)
		return terr(c, "string: a generator has no text (use |list first)");
	return tv_to_str(c, v, out);
}

static int f_safe(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	const struct tstr *s;

	if (fstr(c, v, &s))
		return -1;
	*out = tv_markup(c, s);
	return c->failed ? -1 : 0;
}

static int f_escape(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	const struct tstr *s;
	struct tbuf b = { 0 };

	if (fstr(c, v, &s) || tb_add(c, &b, "", 0) || tmpl_html_escape(c, &b, s))
		return -1;
	*out = tb_val(c, &b);
	if (c->failed)
		return -1;
	*out = tv_markup(c, out->u.s);
	return c->failed ? -1 : 0;
}

static int f_default(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "default_value", "boolean", NULL };
	struct tval d;

	if (targ_check(c, a, "default", 2, kw))
		return -1;
	if (!targ(a, 0, "default_value", &d))
		d = tv_str(c, "", 0);
	if (v.k == TV_UNDEF || (farg_bool(a, 1, "boolean", 0) && !tv_truthy(v)))
		*out = d;
	else
		*out = v;
	return c->failed ? -1 : 0;
}

static int f_length(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	switch (v.k) {
	case TV_UNDEF: *out = tv_int(0); return 0;
	case TV_STR: *out = tv_int((int64_t)u8_count(v.u.s->p, v.u.s->len)); return 0;
	case TV_LIST:
		if (v.u.l->gen)
			break;
		*out = tv_int(v.u.l->n);
		return 0;
	case TV_DICT:
		if (v.u.d->kind != TD_DICT)
			break;
		*out = tv_int(v.u.d->n);
		return 0;
	default:
		break;
	}
	return terr(c, "object of type '%s' has no len()", tv_typename(v));
}

/* Python's float(str): white space around, inf/nan, underscores between digits. */
int tmpl_parse_float(const struct tstr *s, double *out)
{
	char buf[128], *end;
	size_t o = 0, i = 0, n = s->len;

	while (i < n && strchr(" \t\n\r\f\v", s->p[i]) && s->p[i])
		i++;
	while (n > i && strchr(" \t\n\r\f\v", s->p[n - 1]) && s->p[n - 1])
		n--;
	if (i == n || n - i >= sizeof(buf))
		return -1;
	for (; i < n; i++) {
		if (s->p[i] == '_') {
			if (!o || i + 1 >= n || !strchr("0123456789", s->p[i + 1]) ||
			    !strchr("0123456789", buf[o - 1]))
				return -1;
			continue;
		}
		if (s->p[i] == 'x' || s->p[i] == 'X' || s->p[i] == 'p' || s->p[i] == 'P')
			return -1; /* strtod reads hex floats; Python does not */
		buf[o++] = s->p[i];
	}
	buf[o] = 0;
	*out = strtod(buf, &end);
	return *end ? -1 : 0;
}

/* Python's int(str, base). */
static int parse_int(const struct tstr *s, int base, int64_t *out)
{
	size_t i = 0, n = s->len;
	int neg = 0, any = 0;
	uint64_t v = 0;

	while (i < n && strchr(" \t\n\r\f\v", s->p[i]) && s->p[i])
		i++;
	while (n > i && strchr(" \t\n\r\f\v", s->p[n - 1]) && s->p[n - 1])
		n--;
	if (i < n && (s->p[i] == '+' || s->p[i] == '-'))
		neg = s->p[i++] == '-';
	/* a prefix that names the base (or base 0: the prefix decides) */
	if (i + 1 < n && s->p[i] == '0' && strchr("xXoObB", s->p[i + 1]) && s->p[i + 1]) {
		int pb = (s->p[i + 1] | 32) == 'x' ? 16 : (s->p[i + 1] | 32) == 'o' ? 8 : 2;

		if (base == 0 || base == pb) {
			base = pb;
			i += 2;
		}
	}
	if (base == 0)
		base = 10;
	for (; i < n; i++) {
		int d = s->p[i] >= '0' && s->p[i] <= '9' ? s->p[i] - '0' :
			(s->p[i] | 32) >= 'a' && (s->p[i] | 32) <= 'z' ? (s->p[i] | 32) - 'a' + 10 : -1;

		if (s->p[i] == '_' && any && i + 1 < n)
			continue;
		if (d < 0 || d >= base)
			return -1;
		if (v > (uint64_t)INT64_MAX / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + (uint64_t)d;
		any = 1;
	}
	if (!any || v > (uint64_t)INT64_MAX)
		return -1;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

static int f_int(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "default", "base", NULL };
	int64_t base = 10, i;
	double d;
	struct tval dflt;

	if (targ_check(c, a, "int", 2, kw) || farg_int(c, a, 1, "base", "int", &base))
		return -1;
	if (!targ(a, 0, "default", &dflt))
		dflt = tv_int(0);
	switch (v.k) {
	case TV_INT: *out = v; return 0;
	case TV_BOOL: *out = tv_int(v.u.b); return 0;
	case TV_FLOAT:
		if (!isfinite(v.u.f) || fabs(v.u.f) >= 9.2e18)
			return terr(c, "cannot convert float %g to integer", v.u.f);
		*out = tv_int((int64_t)v.u.f);
		return 0;
	case TV_STR:
		if ((base == 0 || (base >= 2 && base <= 36)) && parse_int(v.u.s, (int)base, &i) == 0) {
			*out = tv_int(i);
			return 0;
		}
		/* "42.23"|int is 42: jinja2 tries int(float(value)) next */
		if (tmpl_parse_float(v.u.s, &d) == 0 && isfinite(d) && fabs(d) < 9.2e18) {
			*out = tv_int((int64_t)d);
			return 0;
		}
		break;
	default:
		break;
	}
	*out = dflt;
	return 0;
}

static int f_float(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "default", NULL };
	struct tval dflt;
	double d;

	if (targ_check(c, a, "float", 1, kw))
		return -1;
	if (!targ(a, 0, "default", &dflt))
		dflt = tv_float(0);
	if (v.k == TV_FLOAT || v.k == TV_INT || v.k == TV_BOOL)
		*out = tv_float(v.k == TV_FLOAT ? v.u.f : v.k == TV_INT ? (double)v.u.i : v.u.b);
	else if (v.k == TV_STR && tmpl_parse_float(v.u.s, &d) == 0)
		*out = tv_float(d);
	else
		*out = dflt;
	return 0;
}

static int f_abs(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	if (v.k == TV_FLOAT)
		*out = tv_float(fabs(v.u.f));
	else if (v.k == TV_INT && v.u.i != INT64_MIN)
		*out = tv_int(v.u.i < 0 ? -v.u.i : v.u.i);
	else if (v.k == TV_BOOL)
		*out = tv_int(v.u.b);
	else
		return terr(c, "bad operand type for abs(): '%s'", tv_typename(v));
	return 0;
}

static int f_round(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "precision", "method", NULL };
	const struct tstr *method = NULL;
	int64_t prec = 0;
	double x, m;
	char buf[400];

	if (targ_check(c, a, "round", 2, kw) || farg_int(c, a, 0, "precision", "round", &prec) ||
	    farg_str(c, a, 1, "method", "round", &method))
		return -1;
	if (v.k != TV_FLOAT && v.k != TV_INT && v.k != TV_BOOL)
		return terr(c, "round: '%s' is not a number", tv_typename(v));
	x = v.k == TV_FLOAT ? v.u.f : v.k == TV_INT ? (double)v.u.i : v.u.b;
	if (prec < -300 || prec > 300)
		return terr(c, "round: precision out of range");
	if (!method || !strcmp(method->p, "common")) {
		if (v.k != TV_FLOAT) { /* Python's round(int, n) is an int */
			*out = v.k == TV_BOOL ? tv_int(v.u.b) : v;
			return 0;
		}
		/* Python rounds the exact binary value half to even, as printf does. */
		if (prec >= 0 && isfinite(x)) {
			snprintf(buf, sizeof(buf), "%.*f", (int)prec, x);
			*out = tv_float(strtod(buf, NULL));
		} else {
			m = pow(10, (double)-prec);
			*out = tv_float(nearbyint(x / m) * m);
		}
		return 0;
	}
	m = pow(10, (double)prec);
	if (!strcmp(method->p, "ceil"))
		*out = tv_float(ceil(x * m) / m);
	else if (!strcmp(method->p, "floor"))
		*out = tv_float(floor(x * m) / m);
	else
		return terr(c, "method must be common, ceil or floor");
	return 0;
}

static int f_replace(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "old", "new", "count", NULL };
	struct tval args[3];
	struct targs ma = { .pos = args, .npos = 2 };
	const struct tstr *s;

	if (targ_check(c, a, "replace", 3, kw) || fstr(c, v, &s))
		return -1;
	if (!targ(a, 0, "old", &args[0]) || !targ(a, 1, "new", &args[1]))
		return terr(c, "replace() needs old and new");
	if (targ(a, 2, "count", &args[2]) && args[2].k != TV_NONE)
		ma.npos = 3;
	{
		struct tval sv = { .k = TV_STR }, m;

		sv.u.s = s;
		for (int i = 0; i < 2; i++)
			if (args[i].k != TV_STR && tv_to_str(c, args[i], &args[i]))
				return -1;
		return tmpl_method(c, sv, "replace", &m) && !c->failed ? tmpl_call(c, m, &ma, out)
								       : -1;
	}
}

/* jinja2's indent: every line but the first (first=True: it too), blank ones only if blank. */
static int f_indent(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "width", "first", "blank", NULL };
	const struct tstr *s, *ind = NULL;
	struct tval w, sv = { .k = TV_STR };
	struct tbuf b = { 0 }, pad = { 0 };
	struct tlist *lines;
	int first, blank;

	if (targ_check(c, a, "indent", 3, kw) || fstr(c, v, &s))
		return -1;
	first = farg_bool(a, 1, "first", 0);
	blank = farg_bool(a, 2, "blank", 0);
	if (!targ(a, 0, "width", &w))
		w = tv_int(4);
	if (w.k == TV_STR) {
		ind = w.u.s;
	} else {
		if (w.k != TV_INT && w.k != TV_BOOL)
			return terr(c, "indent: width must be an integer or a string");
		if (tb_add(c, &pad, "", 0))
			return -1;
		for (int64_t i = 0; i < (w.k == TV_INT ? w.u.i : w.u.b) && i < 4096; i++)
			if (tb_add(c, &pad, " ", 1))
				return -1;
		ind = tb_val(c, &pad).u.s;
	}
	/* s += "\n" then splitlines(), as jinja2 does. */
	if (tb_add(c, &b, s->p, s->len) || tb_add(c, &b, "\n", 1))
		return -1;
	sv = tb_val(c, &b);
	if (c->failed || tmpl_splitlines(c, sv.u.s, &lines))
		return -1;
	memset(&b, 0, sizeof(b));
	if (tb_add(c, &b, "", 0) || (first && tb_add(c, &b, ind->p, ind->len)))
		return -1;
	for (uint32_t i = 0; i < lines->n; i++) {
		const struct tstr *l = lines->v[i].u.s;

		if (i && (tb_add(c, &b, "\n", 1) ||
			  ((blank || l->len) && tb_add(c, &b, ind->p, ind->len))))
			return -1;
		if (tb_add(c, &b, l->p, l->len))
			return -1;
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

static int f_center(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	const struct tstr *s;
	int64_t width = 80, len, marg, left;
	struct tbuf b = { 0 };

	if (fstr(c, v, &s) || farg_int(c, a, 0, "width", "center", &width) || tb_add(c, &b, "", 0))
		return -1;
	len = (int64_t)u8_count(s->p, s->len);
	marg = width - len;
	left = marg > 0 ? marg / 2 + (marg & width & 1) : 0;
	for (int64_t i = 0; i < left; i++)
		if (tb_add(c, &b, " ", 1))
			return -1;
	if (tb_add(c, &b, s->p, s->len))
		return -1;
	for (int64_t i = 0; marg > 0 && i < marg - left; i++)
		if (tb_add(c, &b, " ", 1))
			return -1;
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

static int f_wordcount(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	const struct tstr *s;
	int64_t n = 0;
	int in = 0;

	if (fstr(c, v, &s))
		return -1;
	for (size_t i = 0; i < s->len;) {
		uint32_t cp;
		int l = u8_next(s->p + i, s->len - i, &cp), w = u_isalpha(cp) || u_isdigit(cp) ||
								cp == '_';

		n += w && !in;
		in = w;
		i += (size_t)l;
	}
	*out = tv_int(n);
	return 0;
}

static int f_truncate(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "length", "killwords", "end", "leeway", NULL };
	const struct tstr *s, *end = NULL;
	int64_t length = 255, leeway = 5, n, endn, cut;
	struct tbuf b = { 0 };
	size_t at;

	if (targ_check(c, a, "truncate", 4, kw) || fstr(c, v, &s) ||
	    farg_int(c, a, 0, "length", "truncate", &length) ||
	    farg_str(c, a, 2, "end", "truncate", &end) ||
	    farg_int(c, a, 3, "leeway", "truncate", &leeway))
		return -1;
	endn = end ? (int64_t)u8_count(end->p, end->len) : 3;
	if (length < endn || leeway < 0)
		return terr(c, "truncate: expected length >= %" PRId64, endn);
	n = (int64_t)u8_count(s->p, s->len);
	if (n <= length + leeway) {
		out->k = TV_STR;
		out->u.s = s;
		return 0;
	}
	cut = length - endn;
	at = u8_offset(s->p, s->len, (size_t)cut);
	if (!farg_bool(a, 1, "killwords", 0)) {
		size_t sp = at;

		while (sp > 0 && s->p[sp - 1] != ' ')
			sp--;
		if (sp > 0)
			at = sp - 1;
	}
	if (tb_add(c, &b, s->p, at) || tb_add(c, &b, end ? end->p : "...", end ? end->len : 3))
		return -1;
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

static int f_tojson(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "ensure_ascii", "indent", "separators", "sort_keys",
					  NULL };
	struct tjson_opts o = { .indent = -1 };
	struct tval ind, sep;
	struct tbuf b = { 0 };

	if (targ_check(c, a, "tojson", 4, kw))
		return -1;
	o.ensure_ascii = farg_bool(a, 0, "ensure_ascii", 0);
	o.sort_keys = farg_bool(a, 3, "sort_keys", 0);
	if (targ(a, 1, "indent", &ind) && ind.k != TV_NONE) {
		if (ind.k == TV_STR)
			o.indent_str = ind.u.s->p;
		else if (ind.k == TV_INT || ind.k == TV_BOOL)
			o.indent = ind.k == TV_INT ? (int)(ind.u.i < 0 ? 0 : ind.u.i > 64 ? 64 : ind.u.i)
						   : ind.u.b;
		else
			return terr(c, "tojson: indent must be an integer or a string");
	}
	o.item_sep = o.indent >= 0 || o.indent_str ? "," : ", ";
	o.key_sep = ": ";
	if (targ(a, 2, "separators", &sep) && sep.k != TV_NONE) {
		if (sep.k != TV_LIST || sep.u.l->n != 2 || sep.u.l->v[0].k != TV_STR ||
		    sep.u.l->v[1].k != TV_STR)
			return terr(c, "tojson: separators must be a pair of strings");
		o.item_sep = sep.u.l->v[0].u.s->p;
		o.key_sep = sep.u.l->v[1].u.s->p;
	}
	if (tb_add(c, &b, "", 0) || tv_to_json(c, &b, v, &o))
		return -1;
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

static int f_from_json(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	if (tmpl_defined(c, v))
		return -1;
	if (v.k != TV_STR)
		return terr(c, "from_json: the JSON object must be str, not %s", tv_typename(v));
	return tv_parse_json(c, v.u.s->p, v.u.s->len, out);
}

static int f_attr(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	struct tval name;

	if (!targ(a, 0, "name", &name) || name.k != TV_STR)
		return terr(c, "attr: the attribute name must be a string");
	/* getattr() alone: a dict's keys are not its attributes */
	if (v.k == TV_DICT && v.u.d->kind != TD_DICT) {
		struct tval *x = td_gets(v.u.d, name.u.s->p);

		*out = x ? *x : tv_undef("no such attribute");
		return 0;
	}
	if (name.u.s->p[0] != '_' && tmpl_method(c, v, name.u.s->p, out))
		return c->failed ? -1 : 0;
	*out = tv_undef("no such attribute");
	return 0;
}

static const struct filter g_filters[] = {
	{ "abs", f_abs },
	{ "attr", f_attr },
	{ "capitalize", f_capitalize },
	{ "center", f_center },
	{ "count", f_length },
	{ "d", f_default },
	{ "default", f_default },
	{ "dictsort", f_dictsort },
	{ "e", f_escape },
	{ "escape", f_escape },
	{ "first", f_first },
	{ "float", f_float },
	{ "forceescape", f_escape },
	{ "format", f_format },
	{ "from_json", f_from_json },
	{ "indent", f_indent },
	{ "int", f_int },
	{ "items", f_items },
	{ "join", f_join },
	{ "last", f_last },
	{ "length", f_length },
	{ "list", f_list },
	{ "lower", f_lower },
	{ "map", f_map },
	{ "max", f_max },
	{ "min", f_min },
	{ "reject", f_reject },
	{ "rejectattr", f_rejectattr },
	{ "replace", f_replace },
	{ "reverse", f_reverse },
	{ "round", f_round },
	{ "safe", f_safe },
	{ "select", f_select },
	{ "selectattr", f_selectattr },
	{ "sort", f_sort },
	{ "string", f_string },
	{ "sum", f_sum },
	{ "title", f_title },
	{ "tojson", f_tojson },
	{ "trim", f_trim },
	{ "truncate", f_truncate },
	{ "unique", f_unique },
	{ "upper", f_upper },
	{ "wordcount", f_wordcount },
};

const struct filter *tmpl_find_filter(const char *name)
{
	for (size_t i = 0; i < sizeof(g_filters) / sizeof(g_filters[0]); i++)
		if (!strcmp(g_filters[i].name, name))
			return &g_filters[i];
	return NULL;
}

int tmpl_filter(struct tctx *c, const char *name, struct tval v, struct targs *a,
		struct tval *out)
{
	const struct filter *f = tmpl_find_filter(name);

	if (!f)
		return terr(c, "No filter named '%s'.", name);
	/* Filters that do not take undefined pass it to str() as '' (jinja2's soft_str). */
	return f->fn(c, v, a, out);
}
