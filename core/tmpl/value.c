/*
 * value.c - values with Python's rules: truth, ==, ordering, str() and
 * repr() (float repr is the shortest text that reads back the same double,
 * formatted as Python's float_repr_style 'short').
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl/tmpl_int.h"

/* ---- text buffers ------------------------------------------------------------- */

int tb_add(struct tctx *c, struct tbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		if (!(p = ta_alloc(c->a, cap)))
			return toom(c);
		if (b->len)
			memcpy(p, b->p, b->len);
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

int tb_puts(struct tctx *c, struct tbuf *b, const char *s)
{
	return tb_add(c, b, s, strlen(s));
}

/* The buffer as a string value (sharing its bytes). */
struct tval tb_val(struct tctx *c, struct tbuf *b)
{
	struct tstr *s = ta_alloc(c->a, sizeof(*s));
	struct tval v = { .k = TV_STR };

	if (!s) {
		toom(c);
		return tv_undef("out of memory");
	}
	s->p = b->p ? b->p : "";
	s->len = b->len;
	v.u.s = s;
	return v;
}

/* ---- constructors ------------------------------------------------------------- */

struct tval tv_str(struct tctx *c, const char *p, size_t n)
{
	struct tstr *s = ta_alloc(c->a, sizeof(*s));
	char *copy = ta_strndup(c->a, p, n);
	struct tval v = { .k = TV_STR };

	if (!s || !copy) {
		toom(c);
		return tv_undef("out of memory");
	}
	s->p = copy;
	s->len = n;
	v.u.s = s;
	return v;
}

struct tval tv_markup(struct tctx *c, const struct tstr *s)
{
	struct tstr *m = ta_alloc(c->a, sizeof(*m));
	struct tval v = { .k = TV_STR };

	if (!m) {
		toom(c);
		return tv_undef("out of memory");
	}
	*m = *s;
	m->markup = 1;
	v.u.s = m;
	return v;
}

int tmpl_html_escape(struct tctx *c, struct tbuf *b, const struct tstr *s)
{
	if (s->markup)
		return tb_add(c, b, s->p, s->len);
	for (size_t i = 0; i < s->len; i++) {
		const char *e = s->p[i] == '&' ? "&amp;" : s->p[i] == '<' ? "&lt;" :
				s->p[i] == '>' ? "&gt;" : s->p[i] == '"' ? "&#34;" :
				s->p[i] == '\'' ? "&#39;" : NULL;

		if (e ? tb_puts(c, b, e) : tb_add(c, b, s->p + i, 1))
			return -1;
	}
	return 0;
}

struct tval tv_cstr(struct tctx *c, const char *s)
{
	return tv_str(c, s, strlen(s));
}

struct tlist *tl_new(struct tctx *c, uint32_t cap)
{
	struct tlist *l = ta_alloc(c->a, sizeof(*l));

	if (!l) {
		toom(c);
		return NULL;
	}
	if (cap && !(l->v = ta_alloc(c->a, cap * sizeof(*l->v)))) {
		toom(c);
		return NULL;
	}
	l->cap = cap;
	return l;
}

int tl_push(struct tctx *c, struct tlist *l, struct tval v)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 4;
		struct tval *nv;

		if (cap < l->cap || !(nv = ta_alloc(c->a, (size_t)cap * sizeof(*nv))))
			return toom(c);
		if (l->n)
			memcpy(nv, l->v, l->n * sizeof(*nv));
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = v;
	return 0;
}

struct tdict *td_new(struct tctx *c, uint8_t kind)
{
	struct tdict *d = ta_alloc(c->a, sizeof(*d));

	if (!d)
		toom(c);
	else
		d->kind = kind;
	return d;
}

struct tval *td_get(const struct tdict *d, struct tval k)
{
	for (uint32_t i = 0; i < d->n; i++)
		if (tv_eq(d->k[i], k))
			return &d->v[i];
	return NULL;
}

struct tval *td_gets(const struct tdict *d, const char *k)
{
	size_t n = strlen(k);

	for (uint32_t i = 0; i < d->n; i++)
		if (d->k[i].k == TV_STR && d->k[i].u.s->len == n && memcmp(d->k[i].u.s->p, k, n) == 0)
			return &d->v[i];
	return NULL;
}

int td_set(struct tctx *c, struct tdict *d, struct tval k, struct tval v)
{
	struct tval *have = td_get(d, k);

	if (have) {
		*have = v;
		return 0;
	}
	if (d->n == d->cap) {
		uint32_t cap = d->cap ? d->cap * 2 : 4;
		struct tval *nk = ta_alloc(c->a, cap * sizeof(*nk));
		struct tval *nv = ta_alloc(c->a, cap * sizeof(*nv));

		if (!nk || !nv)
			return toom(c);
		if (d->n) {
			memcpy(nk, d->k, d->n * sizeof(*nk));
			memcpy(nv, d->v, d->n * sizeof(*nv));
		}
		d->k = nk;
		d->v = nv;
		d->cap = cap;
	}
	d->k[d->n] = k;
	d->v[d->n] = v;
	d->n++;
	return 0;
}

int td_sets(struct tctx *c, struct tdict *d, const char *k, struct tval v)
{
	struct tval *have = td_gets(d, k);
	struct tval key;

	if (have) {
		*have = v;
		return 0;
	}
	key = tv_cstr(c, k);
	return c->failed ? -1 : td_set(c, d, key, v);
}

int td_del(struct tdict *d, struct tval k)
{
	for (uint32_t i = 0; i < d->n; i++)
		if (tv_eq(d->k[i], k)) {
			memmove(d->k + i, d->k + i + 1, (d->n - i - 1) * sizeof(*d->k));
			memmove(d->v + i, d->v + i + 1, (d->n - i - 1) * sizeof(*d->v));
			d->n--;
			return 1;
		}
	return 0;
}

/* ---- truth, equality, order ------------------------------------------------------ */

int tv_truthy(struct tval v)
{
	switch (v.k) {
	case TV_BOOL: return v.u.b;
	case TV_INT: return v.u.i != 0;
	case TV_FLOAT: return v.u.f != 0;
	case TV_STR: return v.u.s->len != 0;
	case TV_LIST: return v.u.l->n != 0 || v.u.l->gen; /* a generator object is true */
	case TV_DICT: return v.u.d->kind != TD_DICT || v.u.d->n != 0;
	case TV_FUNC: return 1;
	default: return 0;
	}
}

static int is_num(struct tval v)
{
	return v.k == TV_BOOL || v.k == TV_INT || v.k == TV_FLOAT;
}

static double num(struct tval v)
{
	return v.k == TV_FLOAT ? v.u.f : v.k == TV_INT ? (double)v.u.i : v.u.b;
}

static int64_t inum(struct tval v)
{
	return v.k == TV_INT ? v.u.i : v.u.b;
}

int tv_eq(struct tval a, struct tval b)
{
	if (is_num(a) && is_num(b)) {
		if (a.k != TV_FLOAT && b.k != TV_FLOAT)
			return inum(a) == inum(b);
		return num(a) == num(b);
	}
	if (a.k != b.k)
		return 0;
	switch (a.k) {
	case TV_UNDEF:
	case TV_NONE:
		return 1;
	case TV_STR:
		return a.u.s->len == b.u.s->len && memcmp(a.u.s->p, b.u.s->p, a.u.s->len) == 0;
	case TV_LIST:
		if (a.u.l == b.u.l)
			return 1;
		if (a.u.l->tuple != b.u.l->tuple || a.u.l->n != b.u.l->n || a.u.l->gen || b.u.l->gen)
			return 0;
		for (uint32_t i = 0; i < a.u.l->n; i++)
			if (!tv_eq(a.u.l->v[i], b.u.l->v[i]))
				return 0;
		return 1;
	case TV_DICT:
		if (a.u.d == b.u.d)
			return 1;
		if (a.u.d->kind != TD_DICT || b.u.d->kind != TD_DICT || a.u.d->n != b.u.d->n)
			return 0;
		for (uint32_t i = 0; i < a.u.d->n; i++) {
			struct tval *o = td_get(b.u.d, a.u.d->k[i]);

			if (!o || !tv_eq(a.u.d->v[i], *o))
				return 0;
		}
		return 1;
	case TV_FUNC:
		return a.u.fn == b.u.fn;
	default:
		return 0;
	}
}

const char *tv_typename(struct tval v)
{
	switch (v.k) {
	case TV_UNDEF: return "Undefined";
	case TV_NONE: return "NoneType";
	case TV_BOOL: return "bool";
	case TV_INT: return "int";
	case TV_FLOAT: return "float";
	case TV_STR: return "str";
	case TV_LIST: return v.u.l->gen ? "generator" : v.u.l->tuple ? "tuple" : "list";
	case TV_DICT: return v.u.d->kind == TD_NS ? "Namespace" : v.u.d->kind == TD_LOOP ?
			     "LoopContext" : "dict";
	default: return v.u.fn->macro ? "Macro" : "builtin_function_or_method";
	}
}

int tv_cmp(struct tctx *c, struct tval a, struct tval b, int *cmp)
{
	if (is_num(a) && is_num(b)) {
		if (a.k != TV_FLOAT && b.k != TV_FLOAT)
			*cmp = inum(a) < inum(b) ? -1 : inum(a) > inum(b);
		else
			*cmp = num(a) < num(b) ? -1 : num(a) > num(b);
		return 0;
	}
	if (a.k == TV_STR && b.k == TV_STR) {
		/* UTF-8 byte order is code point order. */
		size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
		int r = memcmp(a.u.s->p, b.u.s->p, n);

		*cmp = r ? (r < 0 ? -1 : 1) : a.u.s->len < b.u.s->len ? -1 : a.u.s->len > b.u.s->len;
		return 0;
	}
	if (a.k == TV_LIST && b.k == TV_LIST && a.u.l->tuple == b.u.l->tuple && !a.u.l->gen &&
	    !b.u.l->gen) {
		uint32_t n = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;

		for (uint32_t i = 0; i < n; i++) {
			if (tv_eq(a.u.l->v[i], b.u.l->v[i]))
				continue;
			return tv_cmp(c, a.u.l->v[i], b.u.l->v[i], cmp);
		}
		*cmp = a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
		return 0;
	}
	if (a.k == TV_UNDEF)
		return tmpl_defined(c, a);
	if (b.k == TV_UNDEF)
		return tmpl_defined(c, b);
	return terr(c, "'<' not supported between instances of '%s' and '%s'", tv_typename(a),
		    tv_typename(b));
}

/* ---- str() and repr() ------------------------------------------------------------------ */

void tv_float_repr(double f, char *buf, size_t n)
{
	char tmp[40], digits[24];
	int exp10 = 0, nd = 0, decpt, prec;
	const char *p;
	size_t o = 0;
	char out[64];

	if (isnan(f)) {
		snprintf(buf, n, "nan");
		return;
	}
	if (isinf(f)) {
		snprintf(buf, n, f < 0 ? "-inf" : "inf");
		return;
	}
	/* The fewest significant digits that read back as f. */
	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, f);
		if (strtod(tmp, NULL) == f)
			break;
	}
	p = tmp;
	if (*p == '-')
		out[o++] = '-', p++;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = 0;
	if (*p == 'e')
		exp10 = atoi(p + 1);
	decpt = exp10 + 1;
	if (decpt > -4 && decpt <= 16) {
		if (decpt <= 0) {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "0.");
			for (int i = 0; i < -decpt; i++)
				out[o++] = '0';
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", digits);
		} else if (decpt >= nd) {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", digits);
			for (int i = nd; i < decpt; i++)
				out[o++] = '0';
			o += (size_t)snprintf(out + o, sizeof(out) - o, ".0");
		} else {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%.*s.%s", decpt, digits,
					      digits + decpt);
		}
	} else {
		out[o++] = digits[0];
		if (nd > 1)
			o += (size_t)snprintf(out + o, sizeof(out) - o, ".%s", digits + 1);
		o += (size_t)snprintf(out + o, sizeof(out) - o, "e%c%02d", exp10 < 0 ? '-' : '+',
				      exp10 < 0 ? -exp10 : exp10);
	}
	out[o] = 0;
	snprintf(buf, n, "%s", out);
}

static int repr_str(struct tctx *c, struct tbuf *b, const struct tstr *s)
{
	int has_sq = memchr(s->p, '\'', s->len) != NULL, has_dq = memchr(s->p, '"', s->len) != NULL;
	char q = has_sq && !has_dq ? '"' : '\'';
	int rc = tb_add(c, b, &q, 1);

	for (size_t i = 0; i < s->len && !rc;) {
		uint32_t cp;
		int l = u8_next(s->p + i, s->len - i, &cp);
		char esc[16];

		if (cp == (uint32_t)q || cp == '\\')
			snprintf(esc, sizeof(esc), "\\%c", (char)cp);
		else if (cp == '\n' || cp == '\r' || cp == '\t')
			snprintf(esc, sizeof(esc), "\\%c", cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't');
		else if (u_isprint(cp))
			esc[0] = 0;
		else
			snprintf(esc, sizeof(esc), cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" :
				 "\\U%08x", cp);
		rc = esc[0] ? tb_puts(c, b, esc) : tb_add(c, b, s->p + i, (size_t)l);
		i += (size_t)l;
	}
	return rc ? rc : tb_add(c, b, &q, 1);
}

static int repr_depth(struct tctx *c, struct tbuf *b, struct tval v, int depth);

static int str_depth(struct tctx *c, struct tbuf *b, struct tval v, int depth)
{
	char tmp[64];

	switch (v.k) {
	case TV_UNDEF:
		return 0;
	case TV_NONE:
		return tb_puts(c, b, "None");
	case TV_BOOL:
		return tb_puts(c, b, v.u.b ? "True" : "False");
	case TV_INT:
		snprintf(tmp, sizeof(tmp), "%" PRId64, v.u.i);
		return tb_puts(c, b, tmp);
	case TV_FLOAT:
		tv_float_repr(v.u.f, tmp, sizeof(tmp));
		return tb_puts(c, b, tmp);
	case TV_STR:
		return tb_add(c, b, v.u.s->p, v.u.s->len);
	default:
		return repr_depth(c, b, v, depth);
	}
}

static int repr_depth(struct tctx *c, struct tbuf *b, struct tval v, int depth)
{
	int rc = 0;

	if (depth > 100)
		return terr(c, "maximum recursion depth exceeded while getting the repr of an object");
	switch (v.k) {
	case TV_UNDEF:
		return tb_puts(c, b, "Undefined");
	case TV_STR:
		return repr_str(c, b, v.u.s);
	case TV_LIST:
		if (v.u.l->gen)
			return tb_puts(c, b, "<generator object>");
		rc = tb_puts(c, b, v.u.l->tuple ? "(" : "[");
		for (uint32_t i = 0; i < v.u.l->n && !rc; i++) {
			if (i)
				rc = tb_puts(c, b, ", ");
			if (!rc)
				rc = repr_depth(c, b, v.u.l->v[i], depth + 1);
		}
		if (!rc && v.u.l->tuple && v.u.l->n == 1)
			rc = tb_puts(c, b, ",");
		return rc ? rc : tb_puts(c, b, v.u.l->tuple ? ")" : "]");
	case TV_DICT:
		if (v.u.d->kind == TD_LOOP)
			return tb_puts(c, b, "<LoopContext>");
		if (v.u.d->kind == TD_NS)
			rc = tb_puts(c, b, "<Namespace ");
		rc = rc ? rc : tb_puts(c, b, "{");
		for (uint32_t i = 0; i < v.u.d->n && !rc; i++) {
			if (i)
				rc = tb_puts(c, b, ", ");
			if (!rc)
				rc = repr_depth(c, b, v.u.d->k[i], depth + 1);
			if (!rc)
				rc = tb_puts(c, b, ": ");
			if (!rc)
				rc = repr_depth(c, b, v.u.d->v[i], depth + 1);
		}
		rc = rc ? rc : tb_puts(c, b, "}");
		return rc || v.u.d->kind != TD_NS ? rc : tb_puts(c, b, ">");
	case TV_FUNC:
		if (v.u.fn->macro)
			return tb_puts(c, b, "<Macro>") ;
		return tb_puts(c, b, "<built-in function>");
	default:
		return str_depth(c, b, v, depth);
	}
}

int tv_str_into(struct tctx *c, struct tbuf *b, struct tval v)
{
	return str_depth(c, b, v, 0);
}

int tv_repr_into(struct tctx *c, struct tbuf *b, struct tval v)
{
	return repr_depth(c, b, v, 0);
}

int tv_to_str(struct tctx *c, struct tval v, struct tval *out)
{
	struct tbuf b = { 0 };

	if (v.k == TV_STR) {
		*out = v;
		return 0;
	}
	if (tv_str_into(c, &b, v))
		return -1;
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}
