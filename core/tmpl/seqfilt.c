/*
 * seqfilt.c - jinja2's filters over sequences: sort, dictsort, unique,
 * min/max, first/last, join, list, items, map, select/reject and their attr
 * forms, sum, reverse; and Python's stable sort.  Those that are
 * generators in jinja2 (map, select, reject, unique, reverse of a list)
 * return lists marked as generators, so |length on them fails as it does
 * in Python.
 */
#include <string.h>

#include "tmpl/tmpl_int.h"
#include "tmpl/filt_int.h"

/* ---- sorting ------------------------------------------------------------------- */

/* Merge sort of idx[0..n) by keys[idx]: stable, and reverse keeps equal items in order. */
static int merge_sort(struct tctx *c, uint32_t *idx, uint32_t *tmp, uint32_t n,
		      const struct tval *keys, int reverse)
{
	uint32_t mid = n / 2, i = 0, j, k = 0;

	if (n < 2)
		return 0;
	if (merge_sort(c, idx, tmp, mid, keys, reverse) ||
	    merge_sort(c, idx + mid, tmp, n - mid, keys, reverse))
		return -1;
	j = mid;
	while (i < mid && j < n) {
		int cmp;

		/* right goes first only when it sorts strictly before left */
		if (reverse ? tv_cmp(c, keys[idx[i]], keys[idx[j]], &cmp) :
			      tv_cmp(c, keys[idx[j]], keys[idx[i]], &cmp))
			return -1;
		tmp[k++] = cmp < 0 ? idx[j++] : idx[i++];
	}
	while (i < mid)
		tmp[k++] = idx[i++];
	while (j < n)
		tmp[k++] = idx[j++];
	memcpy(idx, tmp, n * sizeof(*idx));
	return 0;
}

int tmpl_sort(struct tctx *c, struct tval *v, struct tval *keys, uint32_t n, int reverse)
{
	uint32_t *idx = ta_alloc(c->a, (n + 1) * sizeof(*idx));
	uint32_t *tmp = ta_alloc(c->a, (n + 1) * sizeof(*tmp));
	struct tval *copy = ta_alloc(c->a, (n + 1) * sizeof(*copy));

	if (n == 0) /* an empty list: v may be NULL */
		return 0;
	if (!idx || !tmp || !copy)
		return toom(c);
	for (uint32_t i = 0; i < n; i++)
		idx[i] = i;
	if (merge_sort(c, idx, tmp, n, keys ? keys : v, reverse))
		return -1;
	for (uint32_t i = 0; i < n; i++)
		copy[i] = v[idx[i]];
	memcpy(v, copy, n * sizeof(*v));
	return 0;
}

/* ---- attribute getters ---------------------------------------------------------------- */

/* item.a.b (parts that are digits index): jinja2's make_attrgetter. */
static int get_path(struct tctx *c, struct tval item, const struct tstr *path, struct tval *out)
{
	const char *p = path->p, *end = p + path->len;

	*out = item;
	while (p <= end) {
		const char *dot = memchr(p, '.', (size_t)(end - p));
		size_t n = dot ? (size_t)(dot - p) : (size_t)(end - p);
		struct tval key;
		int digits = n > 0;

		for (size_t i = 0; i < n; i++)
			digits &= p[i] >= '0' && p[i] <= '9';
		if (digits) {
			int64_t x = 0;

			for (size_t i = 0; i < n && x < 1000000000; i++)
				x = x * 10 + (p[i] - '0');
			key = tv_int(x);
		} else {
			key = tv_str(c, p, n);
		}
		if (c->failed || tmpl_getitem(c, *out, key, out))
			return -1;
		if (!dot)
			break;
		p = dot + 1;
	}
	return 0;
}

static int lower_if_str(struct tctx *c, struct tval v, struct tval *out)
{
	if (v.k == TV_STR)
		return tmpl_str_lower(c, v, out);
	*out = v;
	return 0;
}

/* The sort key of item: attribute path(s) "a,b" or the item, lowered unless case_sensitive. */
static int sort_key(struct tctx *c, struct tval item, const struct tstr *attr, int fold,
		    int multi, struct tval *out)
{
	if (attr && multi && memchr(attr->p, ',', attr->len)) {
		struct tlist *l = tl_new(c, 0);
		const char *p = attr->p, *end = p + attr->len;

		if (!l)
			return -1;
		while (p <= end) {
			const char *comma = memchr(p, ',', (size_t)(end - p));
			struct tstr part = { .p = p, .len = comma ? (size_t)(comma - p) : (size_t)(end - p) };
			struct tval v;

			if (get_path(c, item, &part, &v) || (fold && lower_if_str(c, v, &v)) ||
			    tl_push(c, l, v))
				return -1;
			if (!comma)
				break;
			p = comma + 1;
		}
		out->k = TV_LIST;
		out->u.l = l;
		return 0;
	}
	if (attr && get_path(c, item, attr, &item))
		return -1;
	return fold ? lower_if_str(c, item, out) : (*out = item, 0);
}

static struct tval list_val(struct tlist *l)
{
	struct tval v = { .k = TV_LIST };

	v.u.l = l;
	return v;
}

static int items_of(struct tctx *c, struct tval v, struct tlist **out)
{
	return tmpl_iterate(c, v, out);
}

int f_sort(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "reverse", "case_sensitive", "attribute", NULL };
	const struct tstr *attr = NULL;
	struct tlist *l;
	struct tval *keys;
	int fold;

	if (targ_check(c, a, "sort", 3, kw) || farg_str(c, a, 2, "attribute", "sort", &attr) ||
	    items_of(c, v, &l))
		return -1;
	fold = !farg_bool(a, 1, "case_sensitive", 0);
	if (!(keys = ta_alloc(c->a, (l->n + 1) * sizeof(*keys))))
		return toom(c);
	for (uint32_t i = 0; i < l->n; i++)
		if (sort_key(c, l->v[i], attr, fold, 1, &keys[i]))
			return -1;
	if (tmpl_sort(c, l->v, keys, l->n, farg_bool(a, 0, "reverse", 0)))
		return -1;
	*out = list_val(l);
	return 0;
}

int f_dictsort(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "case_sensitive", "by", "reverse", NULL };
	const struct tstr *by = NULL;
	struct tval *keys, pairs;
	struct tlist *l;
	int pos = 0, fold;

	if (targ_check(c, a, "dictsort", 3, kw) || farg_str(c, a, 1, "by", "dictsort", &by))
		return -1;
	if (by && strcmp(by->p, "key") && strcmp(by->p, "value"))
		return terr(c, "You can only sort by either \"key\" or \"value\"");
	pos = by && !strcmp(by->p, "value");
	fold = !farg_bool(a, 0, "case_sensitive", 0);
	if (f_items(c, v, &(struct targs){ 0 }, &pairs))
		return -1;
	l = pairs.u.l;
	l->gen = 0; /* sorted() makes a list */
	if (!(keys = ta_alloc(c->a, (l->n + 1) * sizeof(*keys))))
		return toom(c);
	for (uint32_t i = 0; i < l->n; i++)
		if (sort_key(c, l->v[i].u.l->v[pos], NULL, fold, 0, &keys[i]))
			return -1;
	if (tmpl_sort(c, l->v, keys, l->n, farg_bool(a, 2, "reverse", 0)))
		return -1;
	*out = pairs;
	return 0;
}

int f_items(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	struct tlist *l = tl_new(c, v.k == TV_DICT ? v.u.d->n : 0);

	if (!l)
		return -1;
	if (v.k != TV_UNDEF) {
		if (v.k != TV_DICT || v.u.d->kind != TD_DICT)
			return terr(c, "Can only get item pairs from a mapping.");
		for (uint32_t i = 0; i < v.u.d->n; i++) {
			struct tlist *p = tl_new(c, 2);

			if (!p)
				return -1;
			p->tuple = 1;
			p->v[0] = v.u.d->k[i];
			p->v[1] = v.u.d->v[i];
			p->n = 2;
			l->v[l->n++] = list_val(p);
		}
	}
	l->gen = 1; /* a generator in jinja2 */
	*out = list_val(l);
	return 0;
}

int f_unique(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "case_sensitive", "attribute", NULL };
	const struct tstr *attr = NULL;
	struct tlist *l, *res, *seen;
	int fold;

	if (targ_check(c, a, "unique", 2, kw) || farg_str(c, a, 1, "attribute", "unique", &attr) ||
	    items_of(c, v, &l) || !(res = tl_new(c, 0)) || !(seen = tl_new(c, 0)))
		return -1;
	fold = !farg_bool(a, 0, "case_sensitive", 0);
	for (uint32_t i = 0; i < l->n; i++) {
		struct tval k;
		int dup = 0;

		if (sort_key(c, l->v[i], attr, fold, 0, &k))
			return -1;
		for (uint32_t j = 0; j < seen->n && !dup; j++)
			dup = tv_eq(seen->v[j], k);
		if (!dup && (tl_push(c, seen, k) || tl_push(c, res, l->v[i])))
			return -1;
	}
	res->gen = 1;
	*out = list_val(res);
	return 0;
}

static int min_max(struct tctx *c, struct tval v, struct targs *a, struct tval *out, int want)
{
	static const char *const kw[] = { "case_sensitive", "attribute", NULL };
	const struct tstr *attr = NULL;
	struct tval best_key;
	struct tlist *l;
	uint32_t best = 0;
	int fold;

	if (targ_check(c, a, want < 0 ? "min" : "max", 2, kw) ||
	    farg_str(c, a, 1, "attribute", "min/max", &attr) || items_of(c, v, &l))
		return -1;
	if (!l->n) {
		*out = tv_undef("No aggregated item, sequence was empty.");
		return 0;
	}
	fold = !farg_bool(a, 0, "case_sensitive", 0);
	if (sort_key(c, l->v[0], attr, fold, 0, &best_key))
		return -1;
	for (uint32_t i = 1; i < l->n; i++) {
		struct tval k;
		int cmp;

		if (sort_key(c, l->v[i], attr, fold, 0, &k) || tv_cmp(c, k, best_key, &cmp))
			return -1;
		if (cmp == want) {
			best = i;
			best_key = k;
		}
	}
	*out = l->v[best];
	return 0;
}

int f_min(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	return min_max(c, v, a, out, -1);
}

int f_max(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	return min_max(c, v, a, out, 1);
}

int f_first(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	struct tlist *l;

	if (items_of(c, v, &l))
		return -1;
	*out = l->n ? l->v[0] : tv_undef("No first item, sequence was empty.");
	return 0;
}

int f_last(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	struct tlist *l;

	if (v.k == TV_LIST && v.u.l->gen)
		return terr(c, "'generator' object is not reversible");
	if (items_of(c, v, &l))
		return -1;
	*out = l->n ? l->v[l->n - 1] : tv_undef("No last item, sequence was empty.");
	return 0;
}

int f_list(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	struct tlist *l;

	if (items_of(c, v, &l))
		return -1;
	*out = list_val(l);
	return 0;
}

int f_reverse(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	struct tlist *l;

	if (v.k == TV_STR) {
		struct tval sl;
		struct tlist *chars;
		struct tbuf b = { 0 };

		if (tmpl_iterate(c, v, &chars) || tb_add(c, &b, "", 0))
			return -1;
		for (uint32_t i = chars->n; i-- > 0;)
			if (tb_add(c, &b, chars->v[i].u.s->p, chars->v[i].u.s->len))
				return -1;
		sl = tb_val(c, &b);
		*out = sl;
		return c->failed ? -1 : 0;
	}
	if (v.k == TV_LIST && v.u.l->gen)
		return terr(c, "'generator' object is not reversible");
	if (items_of(c, v, &l))
		return -1;
	for (uint32_t i = 0; i < l->n / 2; i++) {
		struct tval t = l->v[i];

		l->v[i] = l->v[l->n - 1 - i];
		l->v[l->n - 1 - i] = t;
	}
	l->gen = 1; /* reversed(list) is an iterator */
	*out = list_val(l);
	return 0;
}

int f_join(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "d", "attribute", NULL };
	const struct tstr *attr = NULL;
	struct tval sep = { 0 };
	struct tbuf b = { 0 };
	struct tlist *l;

	if (targ_check(c, a, "join", 2, kw) || farg_str(c, a, 1, "attribute", "join", &attr) ||
	    items_of(c, v, &l) || tb_add(c, &b, "", 0))
		return -1;
	if (targ(a, 0, "d", &sep) && tv_to_str(c, sep, &sep))
		return -1;
	for (uint32_t i = 0; i < l->n; i++) {
		struct tval item = l->v[i];

		if (i && sep.k == TV_STR && tb_add(c, &b, sep.u.s->p, sep.u.s->len))
			return -1;
		if ((attr && get_path(c, item, attr, &item)) || tv_str_into(c, &b, item))
			return -1;
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

int f_sum(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	static const char *const kw[] = { "attribute", "start", NULL };
	const struct tstr *attr = NULL;
	struct tval acc;
	struct tlist *l;

	if (targ_check(c, a, "sum", 2, kw) || farg_str(c, a, 0, "attribute", "sum", &attr) ||
	    items_of(c, v, &l))
		return -1;
	if (!targ(a, 1, "start", &acc))
		acc = tv_int(0);
	for (uint32_t i = 0; i < l->n; i++) {
		struct tval item = l->v[i];

		if (attr && get_path(c, item, attr, &item))
			return -1;
		if (acc.k == TV_STR || item.k == TV_STR)
			return terr(c, "sum() can't sum strings");
		if (tmpl_arith(c, OP_ADD, acc, item, &acc))
			return -1;
	}
	*out = acc;
	return 0;
}

/* map(attribute=..., default=...) or map('filter', args...) */
int f_map(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	struct tval attr = { 0 }, dflt = tv_none();
	struct targs fa = *a;
	struct tlist *l, *res;
	const char *fname = NULL;
	int by_attr = 0;

	if (!tv_truthy(v)) { /* jinja2 walks nothing when the value is false */
		if (!(res = tl_new(c, 0)))
			return -1;
		res->gen = 1;
		*out = list_val(res);
		return 0;
	}
	if (!a->npos && targ(a, 0, "attribute", &attr)) {
		by_attr = 1;
		targ(a, 1, "default", &dflt);
		for (uint32_t k = 0; k < a->nkw; k++)
			if (strcmp(a->kwn[k], "attribute") && strcmp(a->kwn[k], "default"))
				return terr(c, "Unexpected keyword argument '%s'", a->kwn[k]);
		if (attr.k != TV_STR)
			return terr(c, "map: attribute must be a string");
	} else {
		if (!a->npos || a->pos[0].k != TV_STR)
			return terr(c, "map requires a filter argument");
		fname = a->pos[0].u.s->p;
		fa.pos++;
		fa.npos--;
	}
	if (items_of(c, v, &l) || !(res = tl_new(c, l->n)))
		return -1;
	for (uint32_t i = 0; i < l->n; i++) {
		struct tval r;

		if (by_attr) {
			if (get_path(c, l->v[i], attr.u.s, &r))
				return -1;
			if (r.k == TV_UNDEF && dflt.k != TV_NONE)
				r = dflt;
		} else if (tmpl_filter(c, fname, l->v[i], &fa, &r)) {
			return -1;
		}
		res->v[res->n++] = r;
	}
	res->gen = 1;
	*out = list_val(res);
	return 0;
}

/* select/reject (attr: selectattr/rejectattr): keep items whose test is want. */
static int select_impl(struct tctx *c, struct tval v, struct targs *a, struct tval *out,
		       int attr, int want)
{
	struct targs ta = { .kwn = a->kwn, .kwv = a->kwv, .nkw = a->nkw };
	const struct tstr *path = NULL;
	const char *test = NULL;
	struct tlist *l, *res = tl_new(c, 0);
	uint32_t off = 0;

	if (!res)
		return -1;
	res->gen = 1;
	if (!tv_truthy(v)) {
		*out = list_val(res);
		return 0;
	}
	if (attr) {
		if (!a->npos || a->pos[0].k != TV_STR)
			return terr(c, "Missing parameter for attribute name");
		path = a->pos[0].u.s;
		off = 1;
	}
	if (a->npos > off) {
		if (a->pos[off].k != TV_STR)
			return terr(c, "the test name must be a string");
		test = a->pos[off].u.s->p;
		ta.pos = a->pos + off + 1;
		ta.npos = a->npos - off - 1;
	}
	if (items_of(c, v, &l))
		return -1;
	for (uint32_t i = 0; i < l->n; i++) {
		struct tval x = l->v[i];
		int ok;

		if (path && get_path(c, x, path, &x))
			return -1;
		if (test) {
			if (tmpl_test(c, test, x, &ta, &ok))
				return -1;
		} else {
			ok = tv_truthy(x);
		}
		if (!!ok == want && tl_push(c, res, l->v[i]))
			return -1;
	}
	*out = list_val(res);
	return 0;
}

int f_select(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	return select_impl(c, v, a, out, 0, 1);
}

int f_reject(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	return select_impl(c, v, a, out, 0, 0);
}

int f_selectattr(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	return select_impl(c, v, a, out, 1, 1);
}

int f_rejectattr(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	return select_impl(c, v, a, out, 1, 0);
}
