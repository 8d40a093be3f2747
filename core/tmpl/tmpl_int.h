/*
 * tmpl_int.h - what the template engine's files share: the arena, values,
 * tokens, the syntax tree and the evaluation state.  Not public.
 *
 * Every value of a render lives in the render's arena and is freed with it,
 * so values are passed by copy with no reference counts (lists and dicts
 * are shared by pointer, as Python shares them, and may form cycles).
 */
#ifndef STRATA_TMPL_INT_H
#define STRATA_TMPL_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tmpl/tmpl.h"

/* ---- arena ---------------------------------------------------------------- */

struct tchunk;

struct tarena {
	struct tchunk *head;
	size_t used, limit;      /* bytes taken from malloc, and the most allowed */
	int full;                /* an allocation was refused */
};

void ta_init(struct tarena *a, size_t limit);
void ta_free(struct tarena *a);
/* n bytes aligned to 16, zeroed; NULL when the limit or malloc refuses. */
void *ta_alloc(struct tarena *a, size_t n);
/* A copy of s[0..n) with a NUL after it; NULL as ta_alloc. */
char *ta_strndup(struct tarena *a, const char *s, size_t n);

/* ---- values ----------------------------------------------------------------- */

enum tv_kind { TV_UNDEF, TV_NONE, TV_BOOL, TV_INT, TV_FLOAT, TV_STR, TV_LIST, TV_DICT, TV_FUNC };

struct tstr {
	size_t len;
	const char *p;           /* NUL-terminated; may hold NULs */
	uint8_t markup;          /* markupsafe's Markup (|safe, |escape): + escapes the other side */
};

struct tval;

struct tlist {
	struct tval *v;
	uint32_t n, cap;
	uint8_t tuple;           /* a tuple: printed (a, b) */
	uint8_t gen;             /* select/map's result: a generator to Python, which has no len */
};

enum { TD_DICT, TD_NS, TD_LOOP };

struct tdict {
	struct tval *k, *v;      /* in insertion order */
	uint32_t n, cap;
	uint8_t kind;            /* TD_*: a namespace takes attribute assignment */
};

struct tctx;
struct targs;
struct tfunc;
struct node;
struct frame;

typedef int (*tbuiltin_fn)(struct tctx *c, const struct tfunc *f, struct targs *a,
			   struct tval *out);

struct tfunc {
	const char *name;
	tbuiltin_fn fn;          /* a builtin or a bound method; NULL for a macro */
	const struct node *macro; /* a macro or a call block's caller */
	struct frame *closure;   /* where the macro was defined */
	struct tval *self;       /* the bound object (a method), or NULL */
	int64_t data;            /* a builtin's own word (loop.cycle's index) */
};

struct tval {
	uint8_t k;               /* enum tv_kind */
	union {
		int b;
		int64_t i;
		double f;
		const struct tstr *s;
		struct tlist *l;
		struct tdict *d;
		const struct tfunc *fn;
		const char *why;     /* TV_UNDEF: what was missing, for its error */
	} u;
};

static inline struct tval tv_undef(const char *why)
{
	struct tval v = { .k = TV_UNDEF };

	v.u.why = why;
	return v;
}

static inline struct tval tv_none(void)
{
	return (struct tval){ .k = TV_NONE };
}

static inline struct tval tv_bool(int b)
{
	struct tval v = { .k = TV_BOOL };

	v.u.b = !!b;
	return v;
}

static inline struct tval tv_int(int64_t i)
{
	struct tval v = { .k = TV_INT };

	v.u.i = i;
	return v;
}

static inline struct tval tv_float(double f)
{
	struct tval v = { .k = TV_FLOAT };

	v.u.f = f;
	return v;
}

/* ---- evaluation state -------------------------------------------------------- */

struct targs {
	struct tval *pos;
	uint32_t npos;
	const char **kwn;
	struct tval *kwv;
	uint32_t nkw;
};

/* A scope: a block of variables and the scope around it. */
struct frame {
	struct tdict *vars;
	struct frame *up;
};

/* A growing text in the arena. */
struct tbuf {
	char *p;
	size_t len, cap;
};

struct tctx {
	struct tarena *a;
	struct strata_tmpl_err *err;
	int failed;              /* err is filled: unwind */
	int line;                /* the line being evaluated */
	uint64_t steps, max_steps;
	size_t max_out;
	int depth;               /* macro calls and nested renders in progress */
	int64_t now;
	int loop_ctl;            /* LOOP_BREAK / LOOP_CONTINUE on the way out of a body */
	struct frame *root;      /* the template's own variables (top-level set) */
};

enum { LOOP_NONE, LOOP_BREAK, LOOP_CONTINUE };

/* Record the first error at the current line; returns -1 for `return terr(...)`. */
int terr(struct tctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Out of arena memory (limit or malloc). */
int toom(struct tctx *c);

/* ---- values: value.c ------------------------------------------------------------- */

struct tval tv_str(struct tctx *c, const char *s, size_t n); /* TV_UNDEF on oom (c->failed) */
struct tval tv_cstr(struct tctx *c, const char *s);
struct tlist *tl_new(struct tctx *c, uint32_t cap);
int tl_push(struct tctx *c, struct tlist *l, struct tval v);
struct tdict *td_new(struct tctx *c, uint8_t kind);
/* The value of key k, or NULL. */
struct tval *td_get(const struct tdict *d, struct tval k);
struct tval *td_gets(const struct tdict *d, const char *k);
int td_set(struct tctx *c, struct tdict *d, struct tval k, struct tval v);
int td_sets(struct tctx *c, struct tdict *d, const char *k, struct tval v);
int td_del(struct tdict *d, struct tval k);

int tv_truthy(struct tval v);
/* Python's ==. */
int tv_eq(struct tval a, struct tval b);
/* Python's <, as -1/0/1 in *cmp; -1 (error set) for unorderable types. */
int tv_cmp(struct tctx *c, struct tval a, struct tval b, int *cmp);
const char *tv_typename(struct tval v);

/* Python's str() and repr() of v appended to b. */
int tv_str_into(struct tctx *c, struct tbuf *b, struct tval v);
int tv_repr_into(struct tctx *c, struct tbuf *b, struct tval v);
/* str(v) as a value (a string stays itself). */
int tv_to_str(struct tctx *c, struct tval v, struct tval *out);
/* Python's repr of a float, shortest round trip. */
void tv_float_repr(double f, char *buf, size_t n);

int tb_add(struct tctx *c, struct tbuf *b, const char *s, size_t n);
int tb_puts(struct tctx *c, struct tbuf *b, const char *s);
struct tval tb_val(struct tctx *c, struct tbuf *b);

/* A Markup copy of s (the same bytes). */
struct tval tv_markup(struct tctx *c, const struct tstr *s);
/* markupsafe.escape(s) into b: & < > " ' as entities. */
int tmpl_html_escape(struct tctx *c, struct tbuf *b, const struct tstr *s);

/* ---- JSON: json.c ------------------------------------------------------------------- */

struct cJSON;
struct tval tv_from_cjson(struct tctx *c, const struct cJSON *j);
struct tjson_opts {
	int ensure_ascii;
	int indent;              /* -1: none */
	const char *indent_str;  /* when given as a string */
	const char *item_sep, *key_sep;
	int sort_keys;
};
int tv_to_json(struct tctx *c, struct tbuf *b, struct tval v, const struct tjson_opts *o);
/* json.loads of s into *out. */
int tv_parse_json(struct tctx *c, const char *s, size_t n, struct tval *out);

/* ---- UTF-8 and Python's string rules: ustr.c ------------------------------------------ */

/* Decode one code point at s[0..n): its length, *cp set (a bad byte: 1 and U+FFFD). */
int u8_next(const char *s, size_t n, uint32_t *cp);
size_t u8_put(uint32_t cp, char *out);
size_t u8_count(const char *s, size_t n);
/* Byte offset of code point i (i <= count). */
size_t u8_offset(const char *s, size_t n, size_t i);
int u_isspace(uint32_t cp);
/* str.isprintable() of one code point. */
int u_isprint(uint32_t cp);
uint32_t u_upper(uint32_t cp);
uint32_t u_lower(uint32_t cp);
int u_case_full(uint32_t cp, int upper, uint32_t out[3]);
int u_isalpha(uint32_t cp);
int u_isdigit(uint32_t cp);
int u_islinebreak(uint32_t cp);

/* ---- tokens and the syntax tree ------------------------------------------------------- */

enum tok_type {
	T_EOF, T_DATA, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END,
	T_NAME, T_STRING, T_INT, T_FLOAT, T_OP,
};

enum op {
	OP_ADD = 1, OP_SUB, OP_DIV, OP_FLOORDIV, OP_MUL, OP_MOD, OP_POW, OP_TILDE,
	OP_LBRACKET, OP_RBRACKET, OP_LPAREN, OP_RPAREN, OP_LBRACE, OP_RBRACE,
	OP_EQ, OP_NE, OP_GT, OP_GTEQ, OP_LT, OP_LTEQ, OP_ASSIGN, OP_DOT, OP_COLON,
	OP_PIPE, OP_COMMA, OP_SEMICOLON,
	/* comparisons that are words */
	OP_IN, OP_NOTIN,
};

struct token {
	uint8_t type;            /* enum tok_type */
	uint8_t op;              /* enum op for T_OP */
	int line;
	const char *s;           /* T_DATA, T_NAME, T_STRING: the text (NUL-terminated) */
	size_t len;
	int64_t i;               /* T_INT */
	double f;                /* T_FLOAT */
};

/* Tokens of src into an arena array ending with T_EOF; -1 with err filled. */
int tmpl_lex(struct tarena *a, const char *src, size_t len, struct token **out, size_t *n,
	     struct strata_tmpl_err *err);

enum node_kind {
	/* statements */
	N_TEXT, N_OUT, N_IF, N_FOR, N_SET, N_SETBLOCK, N_MACRO, N_CALLBLOCK, N_FILTERBLOCK,
	N_BREAK, N_CONTINUE, N_BODY, N_SCOPE,
	/* expressions */
	E_CONST, E_NAME, E_ATTR, E_ITEM, E_SLICE, E_CALL, E_FILTER, E_TEST, E_NEG, E_POS,
	E_NOT, E_AND, E_OR, E_BIN, E_CMP, E_COND, E_LIST, E_TUPLE, E_DICT, E_CONCAT, E_NSREF,
};

struct node {
	uint8_t kind;            /* enum node_kind */
	uint8_t op;              /* E_BIN: the operator; E_CMP: unused (ops[]) */
	uint8_t uses_varargs, uses_kwargs, uses_caller; /* N_MACRO, N_CALLBLOCK */
	int line;
	const char *name;        /* E_NAME, E_ATTR, E_FILTER, E_TEST, E_NSREF (the name), N_MACRO */
	const char *attr;        /* E_NSREF: the attribute */
	struct tval val;         /* E_CONST (a string points into the template's arena) */
	struct node *a, *b, *c;  /* operands; N_FOR: target, iter, filter; E_SLICE: obj + a/b/c */
	struct node *obj;        /* E_SLICE: the sliced value */
	struct node **kids;      /* items, positional args, body statements, E_CONCAT parts */
	uint32_t nkids;
	struct node **els;       /* N_IF / N_FOR: else body */
	uint32_t nels;
	const char **kwn;        /* E_CALL / E_FILTER / E_TEST keyword args; N_MACRO params */
	struct node **kwv;       /* their values; N_MACRO: defaults (NULL: none) */
	uint32_t nkw;
	struct node *dyn_args, *dyn_kwargs; /* *args and **kwargs of a call */
	uint8_t *ops;            /* E_CMP: the operator of each operand in kids */
};

/* The compiled template. */
struct strata_tmpl {
	struct tarena arena;
	struct node *root;       /* N_BODY */
};

/* Parse tokens into t->root; -1 with err filled. */
int tmpl_parse(struct strata_tmpl *t, const struct token *toks, size_t n,
	       struct strata_tmpl_err *err);

/* ---- evaluation: eval.c, eval_expr.c ---------------------------------------------------- */

int tmpl_eval(struct tctx *c, const struct node *e, struct frame *f, struct tval *out);
int tmpl_exec_body(struct tctx *c, struct node *const *body, uint32_t n, struct frame *f,
		   struct tbuf *out);
struct tval tmpl_lookup(struct tctx *c, struct frame *f, const char *name);
/* Call a function value with arguments. */
int tmpl_call(struct tctx *c, struct tval fn, struct targs *a, struct tval *out);
/* obj.name / obj[key], as the sandboxed environment resolves them. */
int tmpl_getattr(struct tctx *c, struct tval obj, const char *name, struct tval *out);
int tmpl_getitem(struct tctx *c, struct tval obj, struct tval key, struct tval *out);
/* The items of an iterable (list, tuple, dict keys, string characters, undefined = none). */
int tmpl_iterate(struct tctx *c, struct tval v, struct tlist **out);
/* A value that must not be undefined: the undefined's own error. */
int tmpl_defined(struct tctx *c, struct tval v);
/* a OP b with Python's rules (OP_ADD ... OP_POW). */
int tmpl_arith(struct tctx *c, int op, struct tval a, struct tval b, struct tval *out);
/* needle in hay. */
int tmpl_contains(struct tctx *c, struct tval hay, struct tval needle, int *out);
/* Count a step against the budget. */
int tmpl_step(struct tctx *c);

/* ---- the library: filters.c, filters2.c, tests.c, methods.c, globals.c ------------------ */

/* Argument i (positional) or `name` (keyword): 1 and *out when given, 0 when not. */
int targ(const struct targs *a, uint32_t i, const char *name, struct tval *out);
/* An error unless every keyword is one of names (NULL-terminated) and npos <= maxpos. */
int targ_check(struct tctx *c, const struct targs *a, const char *fn, uint32_t maxpos,
	       const char *const *names);

int tmpl_filter(struct tctx *c, const char *name, struct tval v, struct targs *a,
		struct tval *out);
int tmpl_test(struct tctx *c, const char *name, struct tval v, struct targs *a, int *out);
int tmpl_test_exists(const char *name);
/* The bound method obj.name, or 0 when obj's type has no such method. */
int tmpl_method(struct tctx *c, struct tval obj, const char *name, struct tval *out);
/* The builtin globals (range, namespace, ...) into d. */
int tmpl_globals(struct tctx *c, struct tdict *d);
/* A builtin function value. */
struct tval tmpl_builtin(struct tctx *c, const char *name, tbuiltin_fn fn, struct tval *self,
			 int64_t data);

/* Sorting with Python's rules (stable); key may be NULL (the values themselves). */
int tmpl_sort(struct tctx *c, struct tval *v, struct tval *keys, uint32_t n, int reverse);
/* s.lower() of a string value. */
int tmpl_str_lower(struct tctx *c, struct tval s, struct tval *out);
/* str.strip(chars) family: which = 1 left, 2 right, 3 both; chars NULL: white space. */
struct tval tmpl_strip(struct tctx *c, const struct tstr *s, const struct tstr *chars, int which);
/* str.splitlines() */
int tmpl_splitlines(struct tctx *c, const struct tstr *s, struct tlist **out);

#endif
