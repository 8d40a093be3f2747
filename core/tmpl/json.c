/*
 * json.c - values from JSON (the request's messages and tools, from_json)
 * and to JSON as Python's json.dumps writes them (tojson).
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tmpl/tmpl_int.h"

#define JSON_MAX_DEPTH 200

static struct tval from_cjson(struct tctx *c, const cJSON *j, int depth)
{
	const cJSON *it;

	if (depth > JSON_MAX_DEPTH) {
		terr(c, "JSON nested too deeply");
		return tv_undef("too deep");
	}
	if (cJSON_IsNull(j))
		return tv_none();
	if (cJSON_IsBool(j))
		return tv_bool(cJSON_IsTrue(j));
	if (cJSON_IsNumber(j)) {
		double d = j->valuedouble;

		/* JSON does not say int or float: an integral value is an int. */
		if (isfinite(d) && d == floor(d) && fabs(d) < 9007199254740992.0)
			return tv_int((int64_t)d);
		return tv_float(d);
	}
	if (cJSON_IsString(j))
		return tv_cstr(c, j->valuestring ? j->valuestring : "");
	if (cJSON_IsArray(j)) {
		struct tlist *l = tl_new(c, (uint32_t)cJSON_GetArraySize(j));
		struct tval v = { .k = TV_LIST };

		if (!l)
			return tv_undef("out of memory");
		cJSON_ArrayForEach(it, j) {
			struct tval x = from_cjson(c, it, depth + 1);

			if (c->failed || tl_push(c, l, x))
				return tv_undef("error");
		}
		v.u.l = l;
		return v;
	}
	if (cJSON_IsObject(j)) {
		struct tdict *d = td_new(c, TD_DICT);
		struct tval v = { .k = TV_DICT };

		if (!d)
			return tv_undef("out of memory");
		cJSON_ArrayForEach(it, j) {
			struct tval x = from_cjson(c, it, depth + 1);
			struct tval k = tv_cstr(c, it->string ? it->string : "");

			if (c->failed || td_set(c, d, k, x))
				return tv_undef("error");
		}
		v.u.d = d;
		return v;
	}
	return tv_none();
}

struct tval tv_from_cjson(struct tctx *c, const cJSON *j)
{
	return from_cjson(c, j, 0);
}

int tv_parse_json(struct tctx *c, const char *s, size_t n, struct tval *out)
{
	cJSON *j = cJSON_ParseWithLength(s, n);

	if (!j)
		return terr(c, "from_json: the text is not JSON");
	*out = tv_from_cjson(c, j);
	cJSON_Delete(j);
	return c->failed ? -1 : 0;
}

static int json_str(struct tctx *c, struct tbuf *b, const char *s, size_t n, int ascii)
{
	int rc = tb_add(c, b, "\"", 1);

	for (size_t i = 0; i < n && !rc;) {
		uint32_t cp;
		int l = u8_next(s + i, n - i, &cp);
		char esc[16] = "";

		switch (cp) {
		case '"': strcpy(esc, "\\\""); break;
		case '\\': strcpy(esc, "\\\\"); break;
		case '\n': strcpy(esc, "\\n"); break;
		case '\r': strcpy(esc, "\\r"); break;
		case '\t': strcpy(esc, "\\t"); break;
		case '\b': strcpy(esc, "\\b"); break;
		case '\f': strcpy(esc, "\\f"); break;
		default:
			if (cp < 0x20 || (ascii && cp > 0x7E && cp < 0x10000))
				snprintf(esc, sizeof(esc), "\\u%04x", cp);
			else if (ascii && cp >= 0x10000)
				snprintf(esc, sizeof(esc), "\\u%04x\\u%04x",
					 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF));
		}
		rc = esc[0] ? tb_puts(c, b, esc) : tb_add(c, b, s + i, (size_t)l);
		i += (size_t)l;
	}
	return rc ? rc : tb_add(c, b, "\"", 1);
}

static int newline_indent(struct tctx *c, struct tbuf *b, const struct tjson_opts *o, int level)
{
	int rc = tb_add(c, b, "\n", 1);

	for (int i = 0; i < level && !rc; i++) {
		if (o->indent_str)
			rc = tb_puts(c, b, o->indent_str);
		else
			for (int k = 0; k < o->indent && !rc; k++)
				rc = tb_add(c, b, " ", 1);
	}
	return rc;
}

static int pretty(const struct tjson_opts *o)
{
	return o->indent >= 0 || o->indent_str;
}

/* A dict key as json.dumps converts it: str, or int/float/bool/None as text. */
static int json_key(struct tctx *c, struct tbuf *b, struct tval k, const struct tjson_opts *o)
{
	char tmp[64];

	switch (k.k) {
	case TV_STR:
		return json_str(c, b, k.u.s->p, k.u.s->len, o->ensure_ascii);
	case TV_INT:
		snprintf(tmp, sizeof(tmp), "\"%" PRId64 "\"", k.u.i);
		return tb_puts(c, b, tmp);
	case TV_FLOAT:
		tmp[0] = '"';
		tv_float_repr(k.u.f, tmp + 1, sizeof(tmp) - 2);
		strcat(tmp, "\"");
		return tb_puts(c, b, tmp);
	case TV_BOOL:
		return tb_puts(c, b, k.u.b ? "\"true\"" : "\"false\"");
	case TV_NONE:
		return tb_puts(c, b, "\"null\"");
	default:
		return terr(c, "keys must be str, int, float, bool or None, not %s", tv_typename(k));
	}
}

static int to_json(struct tctx *c, struct tbuf *b, struct tval v, const struct tjson_opts *o,
		   int level);

static int json_dict(struct tctx *c, struct tbuf *b, const struct tdict *d,
		     const struct tjson_opts *o, int level)
{
	uint32_t *order = NULL;
	int rc;

	if (d->kind != TD_DICT)
		return terr(c, "Object of type %s is not JSON serializable",
			    d->kind == TD_NS ? "Namespace" : "LoopContext");
	if (!d->n)
		return tb_puts(c, b, "{}");
	if (o->sort_keys) {
		struct tval *keys = ta_alloc(c->a, d->n * sizeof(*keys));
		struct tval *idx = ta_alloc(c->a, d->n * sizeof(*idx));

		order = ta_alloc(c->a, d->n * sizeof(*order));
		if (!keys || !idx || !order)
			return toom(c);
		for (uint32_t i = 0; i < d->n; i++) {
			keys[i] = d->k[i];
			idx[i] = tv_int(i);
		}
		if (tmpl_sort(c, idx, keys, d->n, 0))
			return -1;
		for (uint32_t i = 0; i < d->n; i++)
			order[i] = (uint32_t)idx[i].u.i;
	}
	rc = tb_puts(c, b, "{");
	for (uint32_t n = 0; n < d->n && !rc; n++) {
		uint32_t i = order ? order[n] : n;

		if (n)
			rc = tb_puts(c, b, o->item_sep);
		if (!rc && pretty(o))
			rc = newline_indent(c, b, o, level + 1);
		if (!rc)
			rc = json_key(c, b, d->k[i], o);
		if (!rc)
			rc = tb_puts(c, b, o->key_sep);
		if (!rc)
			rc = to_json(c, b, d->v[i], o, level + 1);
	}
	if (!rc && pretty(o))
		rc = newline_indent(c, b, o, level);
	return rc ? rc : tb_puts(c, b, "}");
}

static int to_json(struct tctx *c, struct tbuf *b, struct tval v, const struct tjson_opts *o,
		   int level)
{
	char tmp[64];
	int rc;

	if (level > JSON_MAX_DEPTH)
		return terr(c, "Circular reference detected");
	switch (v.k) {
	case TV_NONE:
		return tb_puts(c, b, "null");
	case TV_BOOL:
		return tb_puts(c, b, v.u.b ? "true" : "false");
	case TV_INT:
		snprintf(tmp, sizeof(tmp), "%" PRId64, v.u.i);
		return tb_puts(c, b, tmp);
	case TV_FLOAT:
		if (isnan(v.u.f))
			return tb_puts(c, b, "NaN");
		if (isinf(v.u.f))
			return tb_puts(c, b, v.u.f < 0 ? "-Infinity" : "Infinity");
		tv_float_repr(v.u.f, tmp, sizeof(tmp));
		return tb_puts(c, b, tmp);
	case TV_STR:
		return json_str(c, b, v.u.s->p, v.u.s->len, o->ensure_ascii);
	case TV_LIST:
		if (v.u.l->gen)
			break;
		if (!v.u.l->n)
			return tb_puts(c, b, "[]");
		rc = tb_puts(c, b, "[");
		for (uint32_t i = 0; i < v.u.l->n && !rc; i++) {
			if (i)
				rc = tb_puts(c, b, o->item_sep);
			if (!rc && pretty(o))
				rc = newline_indent(c, b, o, level + 1);
			if (!rc)
				rc = to_json(c, b, v.u.l->v[i], o, level + 1);
		}
		if (!rc && pretty(o))
			rc = newline_indent(c, b, o, level);
		return rc ? rc : tb_puts(c, b, "]");
	case TV_DICT:
		return json_dict(c, b, v.u.d, o, level);
	default:
		break;
	}
	return terr(c, "Object of type %s is not JSON serializable", tv_typename(v));
}

int tv_to_json(struct tctx *c, struct tbuf *b, struct tval v, const struct tjson_opts *o)
{
	return to_json(c, b, v, o, 0);
}
