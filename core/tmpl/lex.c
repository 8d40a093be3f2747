/*
 * lex.c - the template's text into tokens, as jinja2's lexer does it
 * (jinja2/lexer.py) with trim_blocks and lstrip_blocks on: newlines
 * normalised to \n and one trailing newline dropped; "{%-"/"-%}" strip all
 * white space (Python's \s) before/after the tag; a block or comment tag
 * alone on its line takes its indentation with it and the newline after
 * "%}" goes; "+" turns either off.  Inside a tag: names, numbers, strings
 * with Python's escapes, and operators, with the closing "%}"/"}}" only
 * recognised while brackets are balanced.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl/tmpl_int.h"

struct lexer {
	struct tarena *a;
	const char *s;
	size_t n, pos;
	int line_starting;       /* the last match ended with a newline */
	struct token *toks;
	size_t nt, cap;
	char balance[256];       /* closing brackets expected */
	int nbal;
	size_t line_pos;         /* line_at's cursor: line_no is the line of line_pos */
	int line_no;
	struct strata_tmpl_err *err;
};

/* Tokens come in order, so the line is counted on from the last one. */
static int line_at(struct lexer *L, size_t pos)
{
	if (pos < L->line_pos) {
		L->line_pos = 0;
		L->line_no = 1;
	}
	for (; L->line_pos < pos && L->line_pos < L->n; L->line_pos++)
		L->line_no += L->s[L->line_pos] == '\n';
	return L->line_no;
}

static int fail(struct lexer *L, size_t pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct lexer *L, size_t pos, const char *fmt, ...)
{
	va_list ap;

	L->err->line = line_at(L, pos);
	va_start(ap, fmt);
	vsnprintf(L->err->msg, sizeof(L->err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

static struct token *emit(struct lexer *L, int type, size_t at)
{
	struct token *t;

	if (L->nt == L->cap) {
		size_t cap = L->cap ? L->cap * 2 : 256;
		struct token *nt = ta_alloc(L->a, cap * sizeof(*nt));

		if (!nt)
			return NULL;
		if (L->nt)
			memcpy(nt, L->toks, L->nt * sizeof(*nt));
		L->toks = nt;
		L->cap = cap;
	}
	t = &L->toks[L->nt++];
	memset(t, 0, sizeof(*t));
	t->type = (uint8_t)type;
	t->line = line_at(L, at);
	return t;
}

/* Length of the run of Python white space at s[i..). */
static size_t space_run(const struct lexer *L, size_t i)
{
	size_t start = i;

	while (i < L->n) {
		uint32_t cp;
		int l = u8_next(L->s + i, L->n - i, &cp);

		if (!u_isspace(cp))
			break;
		i += (size_t)l;
	}
	return i - start;
}

/* Length of s[0..n) without its trailing Python white space. */
static size_t rstrip_len(const char *s, size_t n)
{
	size_t keep = 0;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		int l = u8_next(s + i, n - i, &cp);

		i += (size_t)l;
		if (!u_isspace(cp))
			keep = i;
	}
	return keep;
}

static int all_space(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp;

		i += (size_t)u8_next(s + i, n - i, &cp);
		if (!u_isspace(cp))
			return 0;
	}
	return 1;
}

/*
 * Template data s[from..to) before a tag whose sign is sign ('-', '+' or 0);
 * lstrip applies before block and comment tags, not before {{.
 */
static int emit_data(struct lexer *L, size_t from, size_t to, char sign, int lstrip)
{
	size_t len = to - from;
	struct token *t;

	if (sign == '-') {
		len = rstrip_len(L->s + from, len);
	} else if (sign != '+' && lstrip) {
		const char *nl = NULL;
		size_t lpos;

		for (size_t i = len; i-- > 0;)
			if (L->s[from + i] == '\n') {
				nl = L->s + from + i;
				break;
			}
		lpos = nl ? (size_t)(nl - (L->s + from)) + 1 : 0;
		if ((lpos > 0 || L->line_starting) && len > lpos &&
		    all_space(L->s + from + lpos, len - lpos))
			len = lpos;
	}
	if (!len)
		return 0;
	if (!(t = emit(L, T_DATA, from)))
		return -1;
	t->s = L->s + from;
	t->len = len;
	return 0;
}

/* After a block or comment's closing: '-' eats white space, '+' nothing, else one \n. */
static void after_close(struct lexer *L, char sign)
{
	if (sign == '-')
		L->pos += space_run(L, L->pos);
	else if (sign != '+' && L->pos < L->n && L->s[L->pos] == '\n')
		L->pos++;
	L->line_starting = L->pos > 0 && L->s[L->pos - 1] == '\n';
}

static int lex_comment(struct lexer *L, size_t open)
{
	const char *end = NULL;
	size_t k;
	char sign = 0;

	for (size_t i = L->pos; i + 1 < L->n; i++)
		if (L->s[i] == '#' && L->s[i + 1] == '}') {
			end = L->s + i;
			break;
		}
	if (!end)
		return fail(L, open, "Missing end of comment tag");
	k = (size_t)(end - L->s);
	if (k > L->pos && (L->s[k - 1] == '-' || L->s[k - 1] == '+'))
		sign = L->s[k - 1];
	L->pos = k + 2;
	after_close(L, sign);
	return 0;
}

/* {% raw %}...{% endraw %}: the text between, verbatim. */
static int match_word_tag(const struct lexer *L, size_t i, const char *word, size_t *after,
			  char *open_sign, char *close_sign)
{
	size_t wl = strlen(word);

	if (i + 2 > L->n || L->s[i] != '{' || L->s[i + 1] != '%')
		return 0;
	i += 2;
	*open_sign = 0;
	if (i < L->n && (L->s[i] == '-' || L->s[i] == '+'))
		*open_sign = L->s[i++];
	i += space_run(L, i);
	if (i + wl > L->n || memcmp(L->s + i, word, wl) != 0)
		return 0;
	i += wl;
	i += space_run(L, i);
	*close_sign = 0;
	if (i + 3 <= L->n && (L->s[i] == '-' || L->s[i] == '+') && L->s[i + 1] == '%' &&
	    L->s[i + 2] == '}') {
		*close_sign = L->s[i];
		i += 3;
	} else if (i + 2 <= L->n && L->s[i] == '%' && L->s[i + 1] == '}') {
		i += 2;
	} else {
		return 0;
	}
	*after = i;
	return 1;
}

static int lex_raw(struct lexer *L, size_t open, size_t after, char close_sign)
{
	size_t i, end_after;
	char os, cs;

	/* The opening tag takes no trailing newline (jinja2's raw_begin rule). */
	L->pos = after;
	if (close_sign == '-')
		L->pos += space_run(L, L->pos);
	for (i = L->pos; i < L->n; i++)
		if (match_word_tag(L, i, "endraw", &end_after, &os, &cs))
			break;
	if (i >= L->n)
		return fail(L, open, "Missing end of raw directive");
	L->line_starting = L->pos > 0 && L->s[L->pos - 1] == '\n';
	if (emit_data(L, L->pos, i, os, 1))
		return -1;
	/* endraw closes like a block: the trim_blocks newline, or '-' white space. */
	L->pos = end_after;
	after_close(L, cs);
	return 0;
}

static int unescape_into(struct lexer *L, size_t at, const char *s, size_t n, char *out,
			 size_t *olen);

static int lex_string(struct lexer *L)
{
	char q = L->s[L->pos];
	size_t i = L->pos + 1, olen = 0;
	struct token *t;
	char *buf;

	while (i < L->n && L->s[i] != q) {
		if (L->s[i] == '\\' && i + 1 < L->n)
			i++;
		i++;
	}
	if (i >= L->n)
		return fail(L, L->pos, "unexpected char '%c' at %zu", q, L->pos);
	/* An escape never makes the text longer, but \x of a non-ASCII byte adds up to 9. */
	buf = ta_alloc(L->a, (i - L->pos) * 10 + 1);
	if (!buf || !(t = emit(L, T_STRING, L->pos)))
		return -ENOMEM;
	if (unescape_into(L, L->pos, L->s + L->pos + 1, i - L->pos - 1, buf, &olen))
		return -1;
	t->s = buf;
	t->len = olen;
	L->pos = i + 1;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 32);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Python's "unicode-escape" decoding of the ASCII-escaped literal. */
static int unescape_into(struct lexer *L, size_t at, const char *s, size_t n, char *out,
			 size_t *olen)
{
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		uint32_t cp;
		int l, digits = 0, v;

		if (s[i] != '\\' || i + 1 >= n) {
			out[o++] = s[i++];
			continue;
		}
		i++;
		switch (s[i]) {
		case '\n': i++; continue;
		case '\\': out[o++] = '\\'; i++; continue;
		case '\'': out[o++] = '\''; i++; continue;
		case '"': out[o++] = '"'; i++; continue;
		case 'a': out[o++] = 7; i++; continue;
		case 'b': out[o++] = 8; i++; continue;
		case 'f': out[o++] = 12; i++; continue;
		case 'n': out[o++] = '\n'; i++; continue;
		case 'r': out[o++] = '\r'; i++; continue;
		case 't': out[o++] = '\t'; i++; continue;
		case 'v': out[o++] = 11; i++; continue;
		case 'x': digits = 2; break;
		case 'u': digits = 4; break;
		case 'U': digits = 8; break;
		case 'N':
			return fail(L, at, "\\N{...} escapes are not supported");
		default:
			break;
		}
		if (digits) {
			cp = 0;
			for (int d = 0; d < digits; d++) {
				if (i + 1 + (size_t)d >= n || (v = hexval(s[i + 1 + d])) < 0)
					return fail(L, at, "truncated \\%c escape", s[i]);
				cp = cp << 4 | (uint32_t)v;
			}
			if (cp > 0x10FFFF)
				return fail(L, at, "illegal Unicode character");
			i += 1 + (size_t)digits;
			o += u8_put(cp, out + o);
			continue;
		}
		if (s[i] >= '0' && s[i] <= '7') {
			cp = 0;
			for (int d = 0; d < 3 && i < n && s[i] >= '0' && s[i] <= '7'; d++)
				cp = cp * 8 + (uint32_t)(s[i++] - '0');
			o += u8_put(cp, out + o);
			continue;
		}
		if ((unsigned char)s[i] >= 0x80) {
			/* Python escaped the character before decoding: "\" + "\xe9" is "\xe9". */
			l = u8_next(s + i, n - i, &cp);
			i += (size_t)l;
			o += (size_t)sprintf(out + o, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ?
					     "\\u%04x" : "\\U%08x", cp);
			continue;
		}
		out[o++] = '\\'; /* an unknown escape stays as written */
	}
	out[o] = 0;
	*olen = o;
	return 0;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* (\d+_)*\d+ at s[i..): its end, or i. */
static size_t digits_us(const struct lexer *L, size_t i)
{
	size_t j = i, last = i;

	while (j < L->n && is_digit(L->s[j])) {
		while (j < L->n && is_digit(L->s[j]))
			j++;
		last = j;
		if (j + 1 < L->n && L->s[j] == '_' && is_digit(L->s[j + 1]))
			j++;
		else
			break;
	}
	return last;
}

/* A float literal at pos: its end, or 0. */
static size_t match_float(const struct lexer *L)
{
	size_t i = L->pos, j, k;

	if (i > 0 && L->s[i - 1] == '.')
		return 0;
	if ((j = digits_us(L, i)) == i)
		return 0;
	k = j;
	if (k < L->n && L->s[k] == '.' && (k + 1) < L->n && is_digit(L->s[k + 1]))
		k = digits_us(L, k + 1);
	if (k < L->n && (L->s[k] | 32) == 'e') {
		size_t e = k + 1, d;

		if (e < L->n && (L->s[e] == '+' || L->s[e] == '-'))
			e++;
		if ((d = digits_us(L, e)) > e)
			return d;
	}
	return k > j ? k : 0;
}

static int lex_number(struct lexer *L)
{
	size_t end = match_float(L), i = L->pos;
	char buf[128];
	size_t o = 0;
	struct token *t;

	if (end) {
		for (size_t k = i; k < end && o + 1 < sizeof(buf); k++)
			if (L->s[k] != '_')
				buf[o++] = L->s[k];
		buf[o] = 0;
		if (!(t = emit(L, T_FLOAT, i)))
			return -ENOMEM;
		t->f = strtod(buf, NULL);
		L->pos = end;
		return 0;
	}
	{
		int base = 10;
		uint64_t v = 0;
		size_t k = i;
		int any = 0;

		if (L->s[k] == '0' && k + 1 < L->n && strchr("bBoOxX", L->s[k + 1]) && L->s[k + 1]) {
			char c = (char)(L->s[k + 1] | 32);

			base = c == 'b' ? 2 : c == 'o' ? 8 : 16;
			k += 2;
		}
		for (; k < L->n; k++) {
			int d = L->s[k] == '_' ? -2 : hexval(L->s[k]);

			if (d == -2 && any && k + 1 < L->n && hexval(L->s[k + 1]) >= 0 &&
			    hexval(L->s[k + 1]) < base)
				continue;
			if (d < 0 || d >= base)
				break;
			/* A decimal literal starting with 0 is 0 alone: "012" is 0 then 12. */
			if (base == 10 && any && v == 0 && L->s[i] == '0' && d != 0)
				break;
			if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base || v * base + d > INT64_MAX)
				return fail(L, i, "integer literal too large");
			v = v * (uint64_t)base + (uint64_t)d;
			any = 1;
		}
		if (!any)
			return fail(L, i, "invalid number literal");
		if (!(t = emit(L, T_INT, i)))
			return -ENOMEM;
		t->i = (int64_t)v;
		L->pos = k;
	}
	return 0;
}

static const struct {
	const char *s;
	uint8_t op;
} g_ops[] = {
	/* Longest first, as jinja2's operator regex is ordered. */
	{ "//", OP_FLOORDIV }, { "**", OP_POW }, { "==", OP_EQ }, { "!=", OP_NE },
	{ ">=", OP_GTEQ }, { "<=", OP_LTEQ },
	{ "+", OP_ADD }, { "-", OP_SUB }, { "/", OP_DIV }, { "*", OP_MUL }, { "%", OP_MOD },
	{ "~", OP_TILDE }, { "[", OP_LBRACKET }, { "]", OP_RBRACKET }, { "(", OP_LPAREN },
	{ ")", OP_RPAREN }, { "{", OP_LBRACE }, { "}", OP_RBRACE }, { ">", OP_GT },
	{ "<", OP_LT }, { "=", OP_ASSIGN }, { ".", OP_DOT }, { ":", OP_COLON },
	{ "|", OP_PIPE }, { ",", OP_COMMA }, { ";", OP_SEMICOLON },
};

static int lex_operator(struct lexer *L)
{
	for (size_t k = 0; k < sizeof(g_ops) / sizeof(g_ops[0]); k++) {
		size_t l = strlen(g_ops[k].s);
		uint8_t op = g_ops[k].op;
		struct token *t;

		if (L->pos + l > L->n || memcmp(L->s + L->pos, g_ops[k].s, l) != 0)
			continue;
		if (op == OP_LBRACE || op == OP_LPAREN || op == OP_LBRACKET) {
			if (L->nbal == (int)sizeof(L->balance))
				return fail(L, L->pos, "brackets nested too deeply");
			L->balance[L->nbal++] = op == OP_LBRACE ? '}' : op == OP_LPAREN ? ')' : ']';
		} else if (op == OP_RBRACE || op == OP_RPAREN || op == OP_RBRACKET) {
			if (!L->nbal)
				return fail(L, L->pos, "unexpected '%s'", g_ops[k].s);
			if (L->balance[--L->nbal] != g_ops[k].s[0])
				return fail(L, L->pos, "unexpected '%s', expected '%c'", g_ops[k].s,
					    L->balance[L->nbal]);
		}
		if (!(t = emit(L, T_OP, L->pos)))
			return -ENOMEM;
		t->op = op;
		L->pos += l;
		return 0;
	}
	return fail(L, L->pos, "unexpected char '%c' at %zu", L->s[L->pos], L->pos);
}

/* 1 when a tag's end is at pos (and consumed), 0 when not. */
static int tag_end(struct lexer *L, int block)
{
	const char *p = L->s + L->pos;
	size_t left = L->n - L->pos;
	char c = block ? '%' : '}';

	if (L->nbal)
		return 0;
	if (block && left >= 3 && p[0] == '+' && p[1] == '%' && p[2] == '}') {
		L->pos += 3;
		after_close(L, '+');
		return 1;
	}
	if (left >= 3 && p[0] == '-' && p[1] == c && p[2] == '}') {
		L->pos += 3;
		after_close(L, '-');
		return 1;
	}
	if (left >= 2 && p[0] == c && p[1] == '}') {
		L->pos += 2;
		if (block)
			after_close(L, 0);
		else
			L->line_starting = 0;
		return 1;
	}
	return 0;
}

static int lex_tag(struct lexer *L, int block, size_t open)
{
	L->nbal = 0;
	for (;;) {
		char ch;
		size_t w;
		int rc;

		if (L->pos >= L->n)
			return fail(L, open, "unexpected end of template: the tag opened here "
				    "is never closed");
		if (tag_end(L, block))
			return emit(L, block ? T_BLOCK_END : T_VAR_END, L->pos) ? 0 : -ENOMEM;
		if ((w = space_run(L, L->pos))) {
			L->pos += w;
			continue;
		}
		ch = L->s[L->pos];
		if (is_digit(ch)) {
			rc = lex_number(L);
		} else if (ch == '_' || ((ch | 32) >= 'a' && (ch | 32) <= 'z')) {
			size_t e = L->pos;
			struct token *t;

			while (e < L->n && (L->s[e] == '_' || is_digit(L->s[e]) ||
					    ((L->s[e] | 32) >= 'a' && (L->s[e] | 32) <= 'z')))
				e++;
			if (!(t = emit(L, T_NAME, L->pos)))
				return -ENOMEM;
			t->s = ta_strndup(L->a, L->s + L->pos, e - L->pos);
			t->len = e - L->pos;
			if (!t->s)
				return -ENOMEM;
			L->pos = e;
			rc = 0;
		} else if (ch == '\'' || ch == '"') {
			rc = lex_string(L);
		} else {
			rc = lex_operator(L);
		}
		if (rc)
			return rc;
	}
}

/* Newlines as \n, and one trailing newline dropped (keep_trailing_newline off). */
static char *normalize(struct tarena *a, const char *src, size_t len, size_t *n)
{
	char *s = ta_alloc(a, len + 1);
	size_t o = 0;

	if (!s)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (src[i] == '\r') {
			s[o++] = '\n';
			if (i + 1 < len && src[i + 1] == '\n')
				i++;
		} else {
			s[o++] = src[i];
		}
	}
	if (o && s[o - 1] == '\n')
		o--;
	s[o] = 0;
	*n = o;
	return s;
}

static int lex_root(struct lexer *L)
{
	while (L->pos < L->n) {
		size_t i = L->pos, after;
		char kind, sign = 0, os, cs;
		int rc;

		while (i + 1 < L->n && !(L->s[i] == '{' && strchr("%{#", L->s[i + 1]) &&
					 L->s[i + 1]))
			i++;
		if (i + 1 >= L->n) /* no tag left: the rest is data */
			return emit_data(L, L->pos, L->n, 0, 0);
		kind = L->s[i + 1];
		if (kind == '%' && match_word_tag(L, i, "raw", &after, &os, &cs)) {
			if (emit_data(L, L->pos, i, os, 1))
				return -1;
			if ((rc = lex_raw(L, i, after, cs)))
				return rc;
			continue;
		}
		if (i + 2 < L->n && (L->s[i + 2] == '-' || L->s[i + 2] == '+'))
			sign = L->s[i + 2];
		if (emit_data(L, L->pos, i, sign, kind != '{'))
			return -1;
		L->pos = i + 2 + (sign ? 1 : 0);
		L->line_starting = 0;
		if (kind == '#') {
			rc = lex_comment(L, i);
		} else {
			if (!emit(L, kind == '%' ? T_BLOCK_BEGIN : T_VAR_BEGIN, i))
				return -ENOMEM;
			rc = lex_tag(L, kind == '%', i);
		}
		if (rc)
			return rc;
	}
	return 0;
}

int tmpl_lex(struct tarena *a, const char *src, size_t len, struct token **out, size_t *n,
	     struct strata_tmpl_err *err)
{
	struct lexer L = { .a = a, .err = err, .line_starting = 1, .line_no = 1 };
	int rc;

	L.s = normalize(a, src, len, &L.n);
	if (!L.s)
		return -ENOMEM;
	rc = lex_root(&L);
	if (!rc && !emit(&L, T_EOF, L.n))
		rc = -ENOMEM;
	if (rc == -ENOMEM || (rc && a->full)) {
		snprintf(err->msg, sizeof(err->msg), "out of memory reading the template");
		return -ENOMEM;
	}
	if (rc)
		return -EINVAL;
	*out = L.toks;
	*n = L.nt;
	return 0;
}
