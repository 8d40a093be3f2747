/*
 * tests.c - jinja2's tests (`x is defined`, `x is string`, ...), as
 * jinja2/tests.py defines them over Python's types.
 */
#include <string.h>

#include "tmpl/tmpl_int.h"
#include "tmpl/filt_int.h"

static const char *const g_tests[] = {
	"boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even",
	"false", "filter", "float", "ge", "greaterthan", "gt", "in", "integer", "iterable", "le",
	"lessthan", "lower", "lt", "mapping", "ne", "none", "number", "odd", "sameas", "sequence",
	"string", "test", "true", "undefined", "upper", "==", "!=", "<", "<=", ">", ">=", NULL,
};

int tmpl_test_exists(const char *name)
{
	for (const char *const *t = g_tests; *t; t++)
		if (!strcmp(*t, name))
			return 1;
	return 0;
}

/* str(v).islower() / isupper(): a cased character, and none of the other case. */
static int case_test(struct tctx *c, struct tval v, int upper, int *out)
{
	const struct tstr *s;
	int cased = 0;

	if (fstr(c, v, &s))
		return -1;
	*out = 0;
	for (size_t i = 0; i < s->len;) {
		uint32_t cp;
		int l = u8_next(s->p + i, s->len - i, &cp);

		i += (size_t)l;
		if (u_lower(cp) != cp || u_upper(cp) != cp) {
			if ((upper ? u_upper(cp) : u_lower(cp)) != cp)
				return 0;
			cased = 1;
		}
	}
	*out = cased;
	return 0;
}

static int int_arg(struct tctx *c, struct tval v, int64_t *out)
{
	if (v.k == TV_INT || v.k == TV_BOOL) {
		*out = v.k == TV_INT ? v.u.i : v.u.b;
		return 0;
	}
	if (v.k == TV_UNDEF)
		return tmpl_defined(c, v);
	return terr(c, "this test needs an integer, not %s", tv_typename(v));
}

static int compare_test(struct tctx *c, const char *name, struct tval v, struct tval other,
			int *out)
{
	int cmp;

	if (!strcmp(name, "eq") || !strcmp(name, "equalto") || !strcmp(name, "==")) {
		*out = tv_eq(v, other);
		return 0;
	}
	if (!strcmp(name, "ne") || !strcmp(name, "!=")) {
		*out = !tv_eq(v, other);
		return 0;
	}
	if (tv_cmp(c, v, other, &cmp))
		return -1;
	if (!strcmp(name, "lt") || !strcmp(name, "lessthan") || !strcmp(name, "<"))
		*out = cmp < 0;
	else if (!strcmp(name, "le") || !strcmp(name, "<="))
		*out = cmp <= 0;
	else if (!strcmp(name, "gt") || !strcmp(name, "greaterthan") || !strcmp(name, ">"))
		*out = cmp > 0;
	else
		*out = cmp >= 0;
	return 0;
}

static int kind_test(const char *name, struct tval v, int *out)
{
	int k = v.k;

	if (!strcmp(name, "defined"))
		*out = k != TV_UNDEF;
	else if (!strcmp(name, "undefined"))
		*out = k == TV_UNDEF;
	else if (!strcmp(name, "none"))
		*out = k == TV_NONE;
	else if (!strcmp(name, "boolean"))
		*out = k == TV_BOOL;
	else if (!strcmp(name, "true"))
		*out = k == TV_BOOL && v.u.b;
	else if (!strcmp(name, "false"))
		*out = k == TV_BOOL && !v.u.b;
	else if (!strcmp(name, "integer"))
		*out = k == TV_INT;
	else if (!strcmp(name, "float"))
		*out = k == TV_FLOAT;
	else if (!strcmp(name, "number"))
		*out = k == TV_INT || k == TV_FLOAT || k == TV_BOOL;
	else if (!strcmp(name, "string"))
		*out = k == TV_STR;
	else if (!strcmp(name, "mapping"))
		*out = k == TV_DICT && v.u.d->kind == TD_DICT;
	else if (!strcmp(name, "sequence")) /* has len() and [] */
		*out = k == TV_UNDEF || k == TV_STR || (k == TV_LIST && !v.u.l->gen) ||
		       (k == TV_DICT && v.u.d->kind == TD_DICT);
	else if (!strcmp(name, "iterable"))
		*out = k == TV_UNDEF || k == TV_STR || k == TV_LIST ||
		       (k == TV_DICT && v.u.d->kind != TD_NS);
	else if (!strcmp(name, "callable"))
		*out = k == TV_FUNC;
	else if (!strcmp(name, "escaped"))
		*out = 0;
	else
		return 0;
	return 1;
}

int tmpl_test(struct tctx *c, const char *name, struct tval v, struct targs *a, int *out)
{
	struct tval arg;
	int64_t n = 0, d = 0;

	if (kind_test(name, v, out))
		return 0;
	if (!tmpl_test_exists(name))
		return terr(c, "No test named '%s'.", name);
	if (!strcmp(name, "odd") || !strcmp(name, "even")) {
		if (int_arg(c, v, &n))
			return -1;
		*out = (n % 2 != 0) == (name[0] == 'o');
		return 0;
	}
	if (!strcmp(name, "lower") || !strcmp(name, "upper"))
		return case_test(c, v, name[0] == 'u', out);
	if (!targ(a, 0, "num", &arg) && !targ(a, 0, "other", &arg) && !targ(a, 0, "value", &arg) &&
	    !targ(a, 0, "seq", &arg) && !targ(a, 0, "name", &arg))
		return terr(c, "the test '%s' needs an argument", name);
	if (!strcmp(name, "divisibleby")) {
		if (int_arg(c, v, &n) || int_arg(c, arg, &d))
			return -1;
		if (!d)
			return terr(c, "integer division or modulo by zero");
		*out = d == -1 || n % d == 0; /* INT64_MIN % -1 traps */
		return 0;
	}
	if (!strcmp(name, "in"))
		return tmpl_contains(c, arg, v, out);
	if (!strcmp(name, "sameas")) {
		*out = v.k == arg.k && (v.k == TV_LIST ? v.u.l == arg.u.l : v.k == TV_DICT ?
					v.u.d == arg.u.d : tv_eq(v, arg));
		return 0;
	}
	if (!strcmp(name, "filter") || !strcmp(name, "test")) {
		if (arg.k != TV_STR)
			return terr(c, "the '%s' test needs a name", name);
		*out = name[0] == 'f' ? tmpl_find_filter(arg.u.s->p) != NULL :
					tmpl_test_exists(arg.u.s->p);
		return 0;
	}
	return compare_test(c, name, v, arg, out);
}
