/*
 * methods.c - the Python methods of str, list and dict that templates call
 * (s.strip(), s.split(','), d.get('k'), l.append(x), ...), bound to their
 * receiver when looked up.  The sandbox jinja2 renders chat templates in
 * lets lists and dicts be changed in place, so append/pop/update work.
 */
#define _GNU_SOURCE /* memmem */
#include <string.h>

#include "tmpl/tmpl_int.h"
#include "tmpl/filt_int.h"

enum recv { R_STR, R_LIST, R_DICT };

struct method {
	uint8_t recv;
	const char *name;
	tbuiltin_fn fn;
};

static struct tval list_val(struct tlist *l)
{
	struct tval v = { .k = TV_LIST };

	v.u.l = l;
	return v;
}

/* ---- str ---------------------------------------------------------------------- */

static int in_set(uint32_t cp, const struct tstr *chars)
{
	for (size_t i = 0; i < chars->len;) {
		uint32_t x;

		i += (size_t)u8_next(chars->p + i, chars->len - i, &x);
		if (x == cp)
			return 1;
	}
	return 0;
}

struct tval tmpl_strip(struct tctx *c, const struct tstr *s, const struct tstr *chars, int which)
{
	size_t start = 0, end = s->len;

	if (which & 1)
		while (start < end) {
			uint32_t cp;
			int l = u8_next(s->p + start, end - start, &cp);

			if (chars ? !in_set(cp, chars) : !u_isspace(cp))
				break;
			start += (size_t)l;
		}
	if (which & 2)
		while (end > start) {
			size_t k = end - 1;
			uint32_t cp;

			while (k > start && ((unsigned char)s->p[k] & 0xC0) == 0x80)
				k--;
			u8_next(s->p + k, end - k, &cp);
			if (chars ? !in_set(cp, chars) : !u_isspace(cp))
				break;
			end = k;
		}
	return tv_str(c, s->p + start, end - start);
}

static int chars_arg(struct tctx *c, struct targs *a, const struct tstr **chars)
{
	struct tval v;

	*chars = NULL;
	if (!targ(a, 0, "chars", &v) || v.k == TV_NONE)
		return 0;
	if (v.k != TV_STR)
		return terr(c, "strip arg must be None or str");
	*chars = v.u.s;
	return 0;
}

static int m_strip(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	const struct tstr *chars;
	int which = !strcmp(f->name, "lstrip") ? 1 : !strcmp(f->name, "rstrip") ? 2 : 3;

	if (chars_arg(c, a, &chars))
		return -1;
	*out = tmpl_strip(c, f->self->u.s, chars, which);
	return c->failed ? -1 : 0;
}

static int push_str(struct tctx *c, struct tlist *l, const char *p, size_t n)
{
	struct tval v = tv_str(c, p, n);

	return c->failed ? -1 : tl_push(c, l, v);
}

/* The code point ending at s[end) : its start. */
static size_t cp_before(const char *s, size_t end)
{
	size_t k = end - 1;

	while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80 && end - k < 4)
		k--;
	return k;
}

static int space_at(const char *s, size_t i, size_t n)
{
	uint32_t cp;

	u8_next(s + i, n - i, &cp);
	return u_isspace(cp);
}

/*
 * split()/rsplit() with no separator: runs of white space, none empty; after
 * max splits the rest is one item (its inner and far-side white space kept).
 */
static int split_ws(struct tctx *c, const struct tstr *s, int64_t max, int right, struct tlist *l)
{
	int64_t nsplit = 0;

	if (!right) {
		size_t i = 0;

		for (;;) {
			size_t w;
			uint32_t cp;

			while (i < s->len && space_at(s->p, i, s->len))
				i += (size_t)u8_next(s->p + i, s->len - i, &cp);
			if (i >= s->len)
				return 0;
			if (max >= 0 && nsplit == max)
				return push_str(c, l, s->p + i, s->len - i);
			w = i;
			while (i < s->len && !space_at(s->p, i, s->len))
				i += (size_t)u8_next(s->p + i, s->len - i, &cp);
			if (push_str(c, l, s->p + w, i - w))
				return -1;
			nsplit++;
		}
	} else {
		struct tlist *rev = tl_new(c, 0);
		size_t end = s->len;

		if (!rev)
			return -1;
		for (;;) {
			size_t w;

			while (end > 0 && space_at(s->p, cp_before(s->p, end), s->len))
				end = cp_before(s->p, end);
			if (end == 0)
				break;
			if (max >= 0 && nsplit == max) {
				if (push_str(c, rev, s->p, end))
					return -1;
				break;
			}
			w = end;
			while (w > 0 && !space_at(s->p, cp_before(s->p, w), s->len))
				w = cp_before(s->p, w);
			if (push_str(c, rev, s->p + w, end - w))
				return -1;
			end = w;
			nsplit++;
		}
		for (uint32_t k = rev->n; k-- > 0;)
			if (tl_push(c, l, rev->v[k]))
				return -1;
		return 0;
	}
}

static int m_split(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	const struct tstr *s = f->self->u.s, *sep = NULL;
	int right = f->name[0] == 'r';
	struct tval sv;
	int64_t max = -1;
	struct tlist *l = tl_new(c, 0);

	if (!l || farg_int(c, a, 1, "maxsplit", "split", &max))
		return -1;
	if (targ(a, 0, "sep", &sv) && sv.k != TV_NONE) {
		if (sv.k != TV_STR)
			return terr(c, "must be str or None, not %s", tv_typename(sv));
		if (!sv.u.s->len)
			return terr(c, "empty separator");
		sep = sv.u.s;
	}
	if (!sep) {
		if (split_ws(c, s, max, right, l))
			return -1;
	} else if (!right) {
		size_t i = 0;
		int64_t n = 0;

		for (;;) {
			const char *hit = max >= 0 && n >= max ? NULL :
					  memmem(s->p + i, s->len - i, sep->p, sep->len);

			if (!hit) {
				if (push_str(c, l, s->p + i, s->len - i))
					return -1;
				break;
			}
			if (push_str(c, l, s->p + i, (size_t)(hit - (s->p + i))))
				return -1;
			i = (size_t)(hit - s->p) + sep->len;
			n++;
		}
	} else {
		size_t end = s->len;
		int64_t n = 0;
		struct tlist *rev = tl_new(c, 0);

		if (!rev)
			return -1;
		for (;;) {
			size_t k = end >= sep->len ? end - sep->len + 1 : 0, hit = SIZE_MAX;

			while (k-- > 0 && (max < 0 || n < max))
				if (memcmp(s->p + k, sep->p, sep->len) == 0) {
					hit = k;
					break;
				}
			if (hit == SIZE_MAX) {
				if (push_str(c, rev, s->p, end))
					return -1;
				break;
			}
			if (push_str(c, rev, s->p + hit + sep->len, end - hit - sep->len))
				return -1;
			end = hit;
			n++;
		}
		for (uint32_t k = rev->n; k-- > 0;)
			if (tl_push(c, l, rev->v[k]))
				return -1;
	}
	*out = list_val(l);
	return 0;
}

static int m_startswith(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	const struct tstr *s = f->self->u.s;
	int ends = f->name[0] == 'e';
	struct tval p;
	const struct tval *cands;
	uint32_t n;

	if (!targ(a, 0, "prefix", &p) && !targ(a, 0, "suffix", &p))
		return terr(c, "%s() takes at least 1 argument (0 given)", f->name);
	if (a->npos > 1)
		return terr(c, "%s(): start and end are not supported", f->name);
	if (p.k == TV_LIST && p.u.l->tuple) {
		cands = p.u.l->v;
		n = p.u.l->n;
	} else {
		cands = &p;
		n = 1;
	}
	*out = tv_bool(0);
	for (uint32_t i = 0; i < n; i++) {
		const struct tstr *x;

		if (cands[i].k != TV_STR)
			return terr(c, "%s first arg must be str or a tuple of str, not %s", f->name,
				    tv_typename(cands[i]));
		x = cands[i].u.s;
		if (x->len <= s->len &&
		    memcmp(s->p + (ends ? s->len - x->len : 0), x->p, x->len) == 0)
			*out = tv_bool(1);
	}
	return 0;
}

static int m_replace(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	const struct tstr *s = f->self->u.s;
	struct tval o, n;
	int64_t count = -1, done = 0;
	struct tbuf b = { 0 };
	size_t i = 0;

	if (!targ(a, 0, "old", &o) || !targ(a, 1, "new", &n) || o.k != TV_STR || n.k != TV_STR)
		return terr(c, "replace() takes two strings");
	if (farg_int(c, a, 2, "count", "replace", &count) || tb_add(c, &b, "", 0))
		return -1;
	if (!o.u.s->len) { /* "abc".replace("", "-") is "-a-b-c-" */
		for (;;) {
			uint32_t cp;
			int l;

			if ((count < 0 || done < count) && tb_add(c, &b, n.u.s->p, n.u.s->len))
				return -1;
			done++;
			if (i >= s->len)
				break;
			l = u8_next(s->p + i, s->len - i, &cp);
			if (tb_add(c, &b, s->p + i, (size_t)l))
				return -1;
			i += (size_t)l;
		}
	} else {
		for (;;) {
			const char *hit = count >= 0 && done >= count ? NULL :
					  memmem(s->p + i, s->len - i, o.u.s->p, o.u.s->len);

			if (!hit)
				break;
			if (tb_add(c, &b, s->p + i, (size_t)(hit - (s->p + i))) ||
			    tb_add(c, &b, n.u.s->p, n.u.s->len))
				return -1;
			i = (size_t)(hit - s->p) + o.u.s->len;
			done++;
		}
		if (tb_add(c, &b, s->p + i, s->len - i))
			return -1;
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

static int m_case(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	const struct tstr *s = f->self->u.s;
	struct tbuf b = { 0 };
	int prev_cased = 0;

	if (!strcmp(f->name, "capitalize"))
		return tmpl_capitalize(c, s, out);
	if (!strcmp(f->name, "upper") || !strcmp(f->name, "lower"))
		return tmpl_str_case(c, s, f->name[0] == 'u', out);
	if (tb_add(c, &b, "", 0))
		return -1;
	for (size_t i = 0; i < s->len;) {
		uint32_t cp, r;
		int l = u8_next(s->p + i, s->len - i, &cp);
		char enc[4];

		if (f->name[0] == 'u')
			r = u_upper(cp);
		else if (f->name[0] == 'l')
			r = u_lower(cp);
		else if (f->name[0] == 's')
			r = u_upper(cp) != cp ? u_upper(cp) : u_lower(cp);
		else /* title: a cased letter after an uncased one goes up, the rest down */
			r = prev_cased ? u_lower(cp) : u_upper(cp);
		prev_cased = u_lower(cp) != cp || u_upper(cp) != cp;
		if (tb_add(c, &b, enc, u8_put(r, enc)))
			return -1;
		i += (size_t)l;
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

/* find/rfind/index/rindex/count of sub: code point positions. */
static int m_find(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	const struct tstr *s = f->self->u.s;
	struct tval sub;
	int rev = f->name[0] == 'r', count = f->name[0] == 'c';
	int64_t n = 0, found = -1;

	if (!targ(a, 0, "sub", &sub) || sub.k != TV_STR)
		return terr(c, "%s() needs a string argument", f->name);
	if (a->npos > 1)
		return terr(c, "%s(): start and end are not supported", f->name);
	for (size_t i = 0; i + sub.u.s->len <= s->len;) {
		if (memcmp(s->p + i, sub.u.s->p, sub.u.s->len) == 0) {
			if (found < 0 || rev)
				found = (int64_t)u8_count(s->p, i);
			n++;
			if (count && sub.u.s->len) {
				i += sub.u.s->len;
				continue;
			}
			if (!rev && !count)
				break;
		}
		if (i == s->len)
			break;
		i++;
	}
	if (count) {
		*out = tv_int(sub.u.s->len ? n : (int64_t)u8_count(s->p, s->len) + 1);
		return 0;
	}
	if (found < 0 && strstr(f->name, "index"))
		return terr(c, "substring not found");
	*out = tv_int(found);
	return 0;
}

static int m_join(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	const struct tstr *s = f->self->u.s;
	struct tval it;
	struct tlist *l;
	struct tbuf b = { 0 };

	if (!targ(a, 0, "iterable", &it) || tmpl_iterate(c, it, &l) || tb_add(c, &b, "", 0))
		return c->failed ? -1 : terr(c, "join() takes exactly one argument");
	for (uint32_t i = 0; i < l->n; i++) {
		if (l->v[i].k != TV_STR)
			return terr(c, "sequence item %u: expected str instance, %s found", i,
				    tv_typename(l->v[i]));
		if ((i && tb_add(c, &b, s->p, s->len)) ||
		    tb_add(c, &b, l->v[i].u.s->p, l->v[i].u.s->len))
			return -1;
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

static int m_format(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	return tmpl_str_format(c, f->self->u.s, a, out);
}

int tmpl_splitlines(struct tctx *c, const struct tstr *s, struct tlist **out)
{
	struct tlist *l = tl_new(c, 0);
	size_t start = 0, i = 0;

	if (!l)
		return -1;
	while (i < s->len) {
		uint32_t cp;
		int n = u8_next(s->p + i, s->len - i, &cp);

		if (u_islinebreak(cp)) {
			if (push_str(c, l, s->p + start, i - start))
				return -1;
			i += (size_t)n;
			if (cp == '\r' && i < s->len && s->p[i] == '\n')
				i++;
			start = i;
			continue;
		}
		i += (size_t)n;
	}
	if (start < s->len && push_str(c, l, s->p + start, s->len - start))
		return -1;
	*out = l;
	return 0;
}

static int m_splitlines(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tlist *l;

	if (a->npos || a->nkw)
		return terr(c, "splitlines(keepends) is not supported");
	if (tmpl_splitlines(c, f->self->u.s, &l))
		return -1;
	*out = list_val(l);
	return 0;
}

static int m_is(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	const struct tstr *s = f->self->u.s;
	const char *kind = f->name + 2;
	int all = s->len > 0;

	if (!strcmp(kind, "lower") || !strcmp(kind, "upper"))
		return tmpl_test(c, kind, *f->self, a, &all) ? -1 : (*out = tv_bool(all), 0);
	for (size_t i = 0; i < s->len && all;) {
		uint32_t cp;

		i += (size_t)u8_next(s->p + i, s->len - i, &cp);
		if (!strcmp(kind, "space"))
			all = u_isspace(cp);
		else if (!strcmp(kind, "alpha"))
			all = u_isalpha(cp);
		else if (!strcmp(kind, "alnum"))
			all = u_isalpha(cp) || u_isdigit(cp);
		else
			all = u_isdigit(cp);
	}
	*out = tv_bool(all);
	return 0;
}

/* ---- list ---------------------------------------------------------------------- */

static int m_append(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tlist *l = f->self->u.l;
	struct tval v;

	if (!targ(a, 0, "object", &v))
		return terr(c, "%s() takes exactly one argument", f->name);
	*out = tv_none();
	if (!strcmp(f->name, "append"))
		return tl_push(c, l, v);
	if (!strcmp(f->name, "extend")) {
		struct tlist *items;

		if (tmpl_iterate(c, v, &items))
			return -1;
		for (uint32_t i = 0; i < items->n; i++)
			if (tl_push(c, l, items->v[i]))
				return -1;
		return 0;
	}
	if (!strcmp(f->name, "remove")) {
		for (uint32_t i = 0; i < l->n; i++)
			if (tv_eq(l->v[i], v)) {
				memmove(l->v + i, l->v + i + 1, (l->n - i - 1) * sizeof(*l->v));
				l->n--;
				return 0;
			}
		return terr(c, "list.remove(x): x not in list");
	}
	/* index, count */
	{
		int64_t n = 0, at = -1;

		for (uint32_t i = 0; i < l->n; i++)
			if (tv_eq(l->v[i], v)) {
				n++;
				if (at < 0)
					at = i;
			}
		if (f->name[0] == 'i' && at < 0)
			return terr(c, "the value is not in list");
		*out = tv_int(f->name[0] == 'i' ? at : n);
		return 0;
	}
}

static int m_pop(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tval key;

	if (f->self->k == TV_DICT) {
		struct tval *v;

		if (!targ(a, 0, "key", &key))
			return terr(c, "pop expected at least 1 argument, got 0");
		if ((v = td_get(f->self->u.d, key))) {
			*out = *v;
			td_del(f->self->u.d, key);
			return 0;
		}
		if (targ(a, 1, "default", out))
			return 0;
		return terr(c, "KeyError in dict.pop()");
	} else {
		struct tlist *l = f->self->u.l;
		int64_t i = -1;

		if (farg_int(c, a, 0, "index", "pop", &i))
			return -1;
		if (!l->n)
			return terr(c, "pop from empty list");
		if (i < 0)
			i += l->n;
		if (i < 0 || i >= l->n)
			return terr(c, "pop index out of range");
		*out = l->v[i];
		memmove(l->v + i, l->v + i + 1, (l->n - (uint32_t)i - 1) * sizeof(*l->v));
		l->n--;
		return 0;
	}
}

static int m_insert(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tlist *l = f->self->u.l;
	int64_t i;
	struct tval v;

	if (a->npos != 2 || (a->pos[0].k != TV_INT))
		return terr(c, "insert expected 2 arguments (index, object)");
	i = a->pos[0].u.i;
	v = a->pos[1];
	if (i < 0)
		i = i + l->n < 0 ? 0 : i + l->n;
	if (i > l->n)
		i = l->n;
	if (tl_push(c, l, v))
		return -1;
	memmove(l->v + i + 1, l->v + i, (l->n - 1 - (uint32_t)i) * sizeof(*l->v));
	l->v[i] = v;
	*out = tv_none();
	return 0;
}

static int m_misc(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	if (!strcmp(f->name, "reverse")) {
		struct tlist *l = f->self->u.l;

		for (uint32_t i = 0; i < l->n / 2; i++) {
			struct tval t = l->v[i];

			l->v[i] = l->v[l->n - 1 - i];
			l->v[l->n - 1 - i] = t;
		}
		*out = tv_none();
		return 0;
	}
	if (!strcmp(f->name, "clear")) {
		if (f->self->k == TV_LIST)
			f->self->u.l->n = 0;
		else
			f->self->u.d->n = 0;
		*out = tv_none();
		return 0;
	}
	/* copy */
	if (f->self->k == TV_LIST) {
		struct tlist *l;

		if (tmpl_iterate(c, *f->self, &l))
			return -1;
		*out = list_val(l);
		return 0;
	} else {
		struct tdict *d = td_new(c, TD_DICT);

		if (!d)
			return -1;
		for (uint32_t i = 0; i < f->self->u.d->n; i++)
			if (td_set(c, d, f->self->u.d->k[i], f->self->u.d->v[i]))
				return -1;
		out->k = TV_DICT;
		out->u.d = d;
		return 0;
	}
}

/* ---- dict ----------------------------------------------------------------------- */

static int m_get(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tval key, *v;

	if (!targ(a, 0, "key", &key))
		return terr(c, "get expected at least 1 argument, got 0");
	if ((v = td_get(f->self->u.d, key))) {
		*out = *v;
		return 0;
	}
	if (!targ(a, 1, "default", out))
		*out = tv_none();
	if (!strcmp(f->name, "setdefault"))
		return td_set(c, f->self->u.d, key, *out);
	return 0;
}

static int m_view(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	const struct tdict *d = f->self->u.d;
	struct tlist *l = tl_new(c, d->n);

	if (!l)
		return -1;
	for (uint32_t i = 0; i < d->n; i++) {
		if (f->name[0] == 'k') {
			l->v[l->n++] = d->k[i];
		} else if (f->name[0] == 'v') {
			l->v[l->n++] = d->v[i];
		} else {
			struct tlist *p = tl_new(c, 2);

			if (!p)
				return -1;
			p->tuple = 1;
			p->v[0] = d->k[i];
			p->v[1] = d->v[i];
			p->n = 2;
			l->v[l->n++] = list_val(p);
		}
	}
	*out = list_val(l);
	return 0;
}

static int m_update(struct tctx *c, const struct tfunc *f, struct targs *a, struct tval *out)
{
	struct tdict *d = f->self->u.d;

	if (a->npos > 1)
		return terr(c, "update expected at most 1 argument");
	if (a->npos) {
		struct tval o = a->pos[0];

		if (o.k != TV_DICT)
			return terr(c, "update: the argument must be a mapping");
		for (uint32_t i = 0; i < o.u.d->n; i++)
			if (td_set(c, d, o.u.d->k[i], o.u.d->v[i]))
				return -1;
	}
	for (uint32_t k = 0; k < a->nkw; k++)
		if (td_sets(c, d, a->kwn[k], a->kwv[k]))
			return -1;
	*out = tv_none();
	return 0;
}

static const struct method g_methods[] = {
	{ R_STR, "strip", m_strip }, { R_STR, "lstrip", m_strip }, { R_STR, "rstrip", m_strip },
	{ R_STR, "split", m_split }, { R_STR, "rsplit", m_split },
	{ R_STR, "startswith", m_startswith }, { R_STR, "endswith", m_startswith },
	{ R_STR, "replace", m_replace }, { R_STR, "upper", m_case }, { R_STR, "lower", m_case },
	{ R_STR, "title", m_case }, { R_STR, "capitalize", m_case }, { R_STR, "swapcase", m_case },
	{ R_STR, "find", m_find }, { R_STR, "rfind", m_find }, { R_STR, "index", m_find },
	{ R_STR, "rindex", m_find }, { R_STR, "count", m_find }, { R_STR, "join", m_join },
	{ R_STR, "format", m_format }, { R_STR, "splitlines", m_splitlines },
	{ R_STR, "isdigit", m_is }, { R_STR, "isdecimal", m_is }, { R_STR, "isnumeric", m_is },
	{ R_STR, "isalpha", m_is }, { R_STR, "isalnum", m_is }, { R_STR, "isspace", m_is },
	{ R_STR, "islower", m_is }, { R_STR, "isupper", m_is },
	{ R_LIST, "append", m_append }, { R_LIST, "extend", m_append },
	{ R_LIST, "remove", m_append }, { R_LIST, "index", m_append },
	{ R_LIST, "count", m_append }, { R_LIST, "pop", m_pop }, { R_LIST, "insert", m_insert },
	{ R_LIST, "reverse", m_misc }, { R_LIST, "clear", m_misc }, { R_LIST, "copy", m_misc },
	{ R_DICT, "get", m_get }, { R_DICT, "setdefault", m_get }, { R_DICT, "items", m_view },
	{ R_DICT, "keys", m_view }, { R_DICT, "values", m_view }, { R_DICT, "pop", m_pop },
	{ R_DICT, "update", m_update }, { R_DICT, "clear", m_misc }, { R_DICT, "copy", m_misc },
};

int tmpl_method(struct tctx *c, struct tval obj, const char *name, struct tval *out)
{
	int recv;

	if (obj.k == TV_STR)
		recv = R_STR;
	else if (obj.k == TV_LIST && !obj.u.l->gen && !(obj.u.l->tuple && strcmp(name, "index") &&
							 strcmp(name, "count")))
		recv = R_LIST;
	else if (obj.k == TV_DICT && obj.u.d->kind == TD_DICT)
		recv = R_DICT;
	else
		return 0;
	for (size_t i = 0; i < sizeof(g_methods) / sizeof(g_methods[0]); i++) {
		struct tval *self;

		if (g_methods[i].recv != recv || strcmp(g_methods[i].name, name))
			continue;
		if (!(self = ta_alloc(c->a, sizeof(*self)))) {
			toom(c);
			return 1;
		}
		*self = obj;
		*out = tmpl_builtin(c, g_methods[i].name, g_methods[i].fn, self, 0);
		return 1;
	}
	return 0;
}
