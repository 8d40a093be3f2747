/*
 * format.c - Python's two string formatters as templates reach them:
 * printf style (the format filter, str % args) and str.format ("{}",
 * "{0}", "{name}" with an optional !r/!s and a fill/align/width/precision
 * spec).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl/tmpl_int.h"
#include "tmpl/filt_int.h"

/* Pad text to width code points: align '<' left, '>' right, '^' centre. */
static int pad_into(struct tctx *c, struct tbuf *b, const char *s, size_t n, int64_t width,
		    char align, const char *fill, size_t fill_len)
{
	int64_t len = (int64_t)u8_count(s, n), pad = width > len ? width - len : 0, left;

	left = align == '>' ? pad : align == '^' ? pad / 2 : 0;
	for (int64_t i = 0; i < left; i++)
		if (tb_add(c, b, fill, fill_len))
			return -1;
	if (tb_add(c, b, s, n))
		return -1;
	for (int64_t i = 0; i < pad - left; i++)
		if (tb_add(c, b, fill, fill_len))
			return -1;
	return 0;
}

static int num_arg(struct tctx *c, struct tval v, char conv, int64_t *i, double *d, int want_int)
{
	if (v.k == TV_INT || v.k == TV_BOOL) {
		*i = v.k == TV_INT ? v.u.i : v.u.b;
		*d = (double)*i;
		return 0;
	}
	if (v.k == TV_FLOAT) {
		if (want_int && !isfinite(v.u.f))
			return terr(c, "cannot convert float infinity or NaN to integer");
		*d = v.u.f;
		*i = want_int ? (int64_t)v.u.f : 0;
		return 0;
	}
	return terr(c, "%%%c format: a %s is required, not %s", conv,
		    want_int ? "real number" : "real number", tv_typename(v));
}

/* One %-conversion of v with the parsed flags, width and precision. */
static int convert(struct tctx *c, struct tbuf *b, char conv, const char *flags, int64_t width,
		   int64_t prec, struct tval v)
{
	char spec[32], tmp[512];
	int64_t i = 0;
	double d = 0;
	int n;

	if (conv == 's' || conv == 'r' || conv == 'a') {
		struct tbuf t = { 0 };
		size_t len;

		if (tb_add(c, &t, "", 0) || (conv == 's' ? tv_str_into(c, &t, v) : tv_repr_into(c, &t, v)))
			return -1;
		len = prec >= 0 ? u8_offset(t.p, t.len, (size_t)prec) : t.len;
		return pad_into(c, b, t.p, len, width, strchr(flags, '-') ? '<' : '>', " ", 1);
	}
	if (conv == 'c') {
		char enc[4];

		if (v.k == TV_STR && u8_count(v.u.s->p, v.u.s->len) == 1)
			return pad_into(c, b, v.u.s->p, v.u.s->len, width,
					strchr(flags, '-') ? '<' : '>', " ", 1);
		if (num_arg(c, v, conv, &i, &d, 1))
			return -1;
		if (i < 0 || i > 0x10FFFF)
			return terr(c, "%%c arg not in range(0x110000)");
		return pad_into(c, b, enc, u8_put((uint32_t)i, enc), width,
				strchr(flags, '-') ? '<' : '>', " ", 1);
	}
	if (!strchr("diouxXeEfFgG", conv))
		return terr(c, "unsupported format character '%c'", conv);
	if (num_arg(c, v, conv, &i, &d, strchr("diouxX", conv) != NULL))
		return -1;
	if (width > 400 || prec > 400)
		return terr(c, "the formatted number is too wide");
	if (prec >= 0)
		snprintf(spec, sizeof(spec), "%%%s%d.%d", flags, (int)width, (int)prec);
	else
		snprintf(spec, sizeof(spec), "%%%s%d", flags, (int)width);
	if (strchr("diu", conv)) {
		strcat(spec, PRId64);
		n = snprintf(tmp, sizeof(tmp), spec, i);
	} else if (strchr("oxX", conv)) {
		/* Python prints a negative hex or octal number with a minus sign. */
		size_t sl = strlen(spec);

		snprintf(spec + sl, sizeof(spec) - sl, "ll%c", conv);
		if (strchr(flags, '#') && conv == 'o') {
			/* Python writes 0o17, C writes 017 */
			char *hash = strchr(spec, '#');

			memmove(hash, hash + 1, strlen(hash));
			n = snprintf(tmp, sizeof(tmp), "%s0o", i < 0 ? "-" : "");
			n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, spec,
				      (unsigned long long)(i < 0 ? -i : i));
		} else {
			n = snprintf(tmp, sizeof(tmp), "%s", i < 0 ? "-" : "");
			n += snprintf(tmp + n, sizeof(tmp) - (size_t)n, spec,
				      (unsigned long long)(i < 0 ? -i : i));
		}
	} else {
		size_t sl = strlen(spec);

		spec[sl] = conv;
		spec[sl + 1] = 0;
		n = snprintf(tmp, sizeof(tmp), spec, d);
	}
	return tb_add(c, b, tmp, n > 0 ? (size_t)n : 0);
}

/* fmt % args: args is the positional list, or a mapping for %(name)s. */
static int printf_format(struct tctx *c, const struct tstr *fmt, const struct tval *args,
			 uint32_t nargs, struct tval *out)
{
	struct tbuf b = { 0 };
	uint32_t next = 0;
	int mapping = nargs == 1 && args[0].k == TV_DICT;

	if (tb_add(c, &b, "", 0))
		return -1;
	for (size_t i = 0; i < fmt->len; i++) {
		char flags[8] = "", conv;
		size_t nf = 0;
		int64_t width = 0, prec = -1;
		struct tval v;

		if (fmt->p[i] != '%') {
			if (tb_add(c, &b, fmt->p + i, 1))
				return -1;
			continue;
		}
		if (++i >= fmt->len)
			return terr(c, "incomplete format");
		if (fmt->p[i] == '%') {
			if (tb_add(c, &b, "%", 1))
				return -1;
			continue;
		}
		v.k = TV_UNDEF;
		if (fmt->p[i] == '(') {
			const char *close = memchr(fmt->p + i, ')', fmt->len - i);
			struct tval *got;

			if (!close)
				return terr(c, "incomplete format key");
			if (!mapping)
				return terr(c, "format requires a mapping");
			got = td_get(args[0].u.d, tv_str(c, fmt->p + i + 1, (size_t)(close - fmt->p) - i - 1));
			if (!got)
				return terr(c, "format: a key is missing from the mapping");
			v = *got;
			i = (size_t)(close - fmt->p) + 1;
		}
		while (i < fmt->len && strchr("-+ #0", fmt->p[i]) && fmt->p[i] && nf < 5)
			flags[nf++] = fmt->p[i++];
		flags[nf] = 0;
		if (i < fmt->len && fmt->p[i] == '*') {
			if (next >= nargs || (args[next].k != TV_INT))
				return terr(c, "* wants int");
			width = args[next++].u.i;
			i++;
		}
		while (i < fmt->len && fmt->p[i] >= '0' && fmt->p[i] <= '9' && width < 100000)
			width = width * 10 + (fmt->p[i++] - '0');
		if (i < fmt->len && fmt->p[i] == '.') {
			prec = 0;
			i++;
			while (i < fmt->len && fmt->p[i] >= '0' && fmt->p[i] <= '9' && prec < 100000)
				prec = prec * 10 + (fmt->p[i++] - '0');
		}
		while (i < fmt->len && strchr("hlL", fmt->p[i]) && fmt->p[i])
			i++;
		if (i >= fmt->len)
			return terr(c, "incomplete format");
		conv = fmt->p[i];
		if (v.k == TV_UNDEF) {
			if (mapping)
				v = args[0];
			else if (next < nargs)
				v = args[next++];
			else
				return terr(c, "not enough arguments for format string");
		}
		if (convert(c, &b, conv, flags, width, prec, v))
			return -1;
	}
	if (!mapping && next < nargs)
		return terr(c, "not all arguments converted during string formatting");
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}

int f_format(struct tctx *c, struct tval v, struct targs *a, struct tval *out)
{
	const struct tstr *fmt;

	if (a->npos && a->nkw)
		return terr(c, "can't handle positional and keyword arguments at the same time");
	if (fstr(c, v, &fmt))
		return -1;
	if (a->nkw) {
		struct tdict *d = td_new(c, TD_DICT);
		struct tval m = { .k = TV_DICT };

		if (!d)
			return -1;
		for (uint32_t k = 0; k < a->nkw; k++)
			if (td_sets(c, d, a->kwn[k], a->kwv[k]))
				return -1;
		m.u.d = d;
		return printf_format(c, fmt, &m, 1, out);
	}
	return printf_format(c, fmt, a->pos, a->npos, out);
}

/* One {field!conv:spec}: the value, converted and laid out. */
static int format_field(struct tctx *c, struct tbuf *b, const char *f, size_t n,
			struct targs *a, uint32_t *auto_idx)
{
	const char *bang = memchr(f, '!', n), *colon = memchr(f, ':', n);
	size_t name_len = bang ? (size_t)(bang - f) : colon ? (size_t)(colon - f) : n;
	const char *spec = colon ? colon + 1 : NULL;
	size_t spec_len = colon ? n - (size_t)(colon - f) - 1 : 0;
	struct tval v;
	struct tbuf t = { 0 };
	char conv = bang && (!colon || bang < colon) ? bang[1] : 's';

	if (name_len == 0) {
		if (*auto_idx >= a->npos)
			return terr(c, "Replacement index %u out of range for positional args tuple",
				    *auto_idx);
		v = a->pos[(*auto_idx)++];
	} else if (f[0] >= '0' && f[0] <= '9') {
		uint32_t idx = (uint32_t)strtoul(f, NULL, 10);

		if (idx >= a->npos)
			return terr(c, "Replacement index %u out of range for positional args tuple",
				    idx);
		v = a->pos[idx];
	} else {
		char key[128];

		snprintf(key, sizeof(key), "%.*s", (int)(name_len < 127 ? name_len : 127), f);
		if (!targ(&(struct targs){ .kwn = a->kwn, .kwv = a->kwv, .nkw = a->nkw }, UINT32_MAX,
			  key, &v))
			return terr(c, "KeyError: '%s'", key);
	}
	if (tb_add(c, &t, "", 0) || (conv == 'r' ? tv_repr_into(c, &t, v) : tv_str_into(c, &t, v)))
		return -1;
	if (!spec_len)
		return tb_add(c, b, t.p, t.len);
	{
		/* [[fill]align][width][.precision] on the text */
		char align = v.k == TV_INT || v.k == TV_FLOAT ? '>' : '<', fill[4] = " ";
		size_t fl = 1, i = 0;
		int64_t width = 0, prec = -1;
		uint32_t cp;
		int l = u8_next(spec, spec_len, &cp);

		if ((size_t)l < spec_len && strchr("<>^", spec[l]) && spec[l]) {
			memcpy(fill, spec, (size_t)l);
			fl = (size_t)l;
			align = spec[l];
			i = (size_t)l + 1;
		} else if (strchr("<>^", spec[0]) && spec[0]) {
			align = spec[0];
			i = 1;
		}
		while (i < spec_len && spec[i] >= '0' && spec[i] <= '9' && width < 100000)
			width = width * 10 + (spec[i++] - '0');
		if (i < spec_len && spec[i] == '.') {
			prec = 0;
			for (i++; i < spec_len && spec[i] >= '0' && spec[i] <= '9' && prec < 100000; i++)
				prec = prec * 10 + (spec[i] - '0');
		}
		if (i < spec_len && spec[i] == 'f' && i + 1 == spec_len &&
		    (v.k == TV_FLOAT || v.k == TV_INT)) {
			char num[400];

			snprintf(num, sizeof(num), "%.*f", (int)(prec < 0 ? 6 : prec > 300 ? 300 : prec),
				 v.k == TV_FLOAT ? v.u.f : (double)v.u.i);
			return pad_into(c, b, num, strlen(num), width, align, fill, fl);
		}
		if (i < spec_len && !(spec[i] == 's' && i + 1 == spec_len))
			return terr(c, "the format spec '%.*s' is not supported", (int)spec_len, spec);
		return pad_into(c, b, t.p, prec >= 0 ? u8_offset(t.p, t.len, (size_t)prec) : t.len,
				width, align, fill, fl);
	}
}

int tmpl_str_format(struct tctx *c, const struct tstr *fmt, struct targs *a, struct tval *out)
{
	struct tbuf b = { 0 };
	uint32_t auto_idx = 0;

	if (tb_add(c, &b, "", 0))
		return -1;
	for (size_t i = 0; i < fmt->len; i++) {
		char ch = fmt->p[i];
		const char *close;

		if ((ch == '{' || ch == '}') && i + 1 < fmt->len && fmt->p[i + 1] == ch) {
			if (tb_add(c, &b, &ch, 1))
				return -1;
			i++;
			continue;
		}
		if (ch == '}')
			return terr(c, "Single '}' encountered in format string");
		if (ch != '{') {
			if (tb_add(c, &b, &ch, 1))
				return -1;
			continue;
		}
		close = memchr(fmt->p + i, '}', fmt->len - i);
		if (!close)
			return terr(c, "Single '{' encountered in format string");
		if (format_field(c, &b, fmt->p + i + 1, (size_t)(close - fmt->p) - i - 1, a, &auto_idx))
			return -1;
		i = (size_t)(close - fmt->p);
	}
	*out = tb_val(c, &b);
	return c->failed ? -1 : 0;
}
