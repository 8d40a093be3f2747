/*
 * gschema.c - JSON schemas to grammars.  Properties come in the schema's order
 * (required ones always, optional ones maybe); the JSON is compact (at most
 * one space between tokens) so a reply cannot run on in white space;
 * numbers have at most 16 digits.  What a schema asks that the grammar cannot enforce is
 * refused, naming the keyword and where.
 */
#include "serve/grammar_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/gschema_int.h"

static const char *const g_refused[] = {
	"pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"uniqueItems", "contains", "minContains", "maxContains", "patternProperties",
	"propertyNames", "if", "then", "else", "not", "dependentRequired", "dependentSchemas",
	"minProperties", "maxProperties", "unevaluatedProperties", "unevaluatedItems", NULL,
};

/* A keyword the grammar cannot enforce: refused, rather than ignored. */
static int refuse_unknown(struct sc *c, const cJSON *s, const char *path)
{
	for (const char *const *k = g_refused; *k; k++)
		if (cJSON_GetObjectItemCaseSensitive(s, *k)) {
			sc_fail(c, path, "strata cannot constrain a reply by '%s'", *k);
			return -1;
		}
	return 0;
}

static int get_count(struct sc *c, const cJSON *s, const char *key, const char *path, int dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, key);

	if (!v)
		return dflt;
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 10000) {
		sc_fail(c, path, "'%s' must be an integer from 0 to 10000", key);
		return dflt;
	}
	return v->valueint;
}

static uint32_t sc_ref(struct sc *c, const char *ref, const char *path)
{
	const char *name = NULL;
	const cJSON *defs = NULL, *target;
	struct galt a = { 0 };
	uint32_t r;

	for (int i = 0; i < c->n_refs; i++)
		if (!strcmp(c->refs[i].ref, ref))
			return c->refs[i].rule; /* recursion: the rule being made */
	if (!strncmp(ref, "#/$defs/", 8)) {
		defs = cJSON_GetObjectItemCaseSensitive(c->root, "$defs");
		name = ref + 8;
	} else if (!strncmp(ref, "#/definitions/", 14)) {
		defs = cJSON_GetObjectItemCaseSensitive(c->root, "definitions");
		name = ref + 14;
	} else if (!strcmp(ref, "#")) {
		defs = NULL;
	}
	target = name ? cJSON_GetObjectItemCaseSensitive(defs, name) : !strcmp(ref, "#") ? c->root
								       : NULL;
	if (!target)
		return sc_fail(c, path, "'$ref' %.100s: strata follows #, #/$defs/NAME and "
			    "#/definitions/NAME within the schema", ref);
	if (c->n_refs == MAX_REFS)
		return sc_fail(c, path, "more than %d $ref targets", MAX_REFS);
	r = gb_rule(c->g);
	c->refs[c->n_refs].ref = ref;
	c->refs[c->n_refs++].rule = r;
	galt_ref(c->g, &a, sc_schema(c, target, ref));
	gb_alt(c->g, r, &a);
	galt_free(&a);
	return r;
}

/* One rule with an alternative per subschema (anyOf, oneOf, a type list). */
static uint32_t alternatives(struct sc *c, const cJSON *list, const char *key, const char *path)
{
	uint32_t r = gb_rule(c->g);
	struct galt a = { 0 };
	const cJSON *it;
	int i = 0;

	if (!cJSON_IsArray(list) || !cJSON_GetArraySize(list))
		return sc_fail(c, path, "'%s' must be a non-empty array", key);
	cJSON_ArrayForEach(it, list) {
		char p[512];

		snprintf(p, sizeof(p), "%s.%s[%d]", path, key, i++);
		galt_ref(c->g, &a, sc_schema(c, it, p));
		gb_alt(c->g, r, &a);
	}
	galt_free(&a);
	return r;
}

static uint32_t sc_object(struct sc *c, const cJSON *s, const char *path);
static uint32_t sc_array(struct sc *c, const cJSON *s, const char *path);
static uint32_t sc_string(struct sc *c, const cJSON *s, const char *path);

/* The rule of one JSON type name, with s's constraints for it. */
static uint32_t sc_type(struct sc *c, const cJSON *s, const char *type, const char *path)
{
	if (!strcmp(type, "object"))
		return sc_object(c, s, path);
	if (!strcmp(type, "array"))
		return sc_array(c, s, path);
	if (!strcmp(type, "string"))
		return sc_string(c, s, path);
	if (!strcmp(type, "integer"))
		return c->integer;
	if (!strcmp(type, "number"))
		return c->number;
	if (!strcmp(type, "boolean")) {
		uint32_t r = gb_rule(c->g);
		struct galt a = { 0 };

		galt_lit(c->g, &a, "true");
		gb_alt(c->g, r, &a);
		galt_lit(c->g, &a, "false");
		gb_alt(c->g, r, &a);
		galt_free(&a);
		return r;
	}
	if (!strcmp(type, "null"))
		return gb_lit_rule(c->g, "null");
	return sc_fail(c, path, "unknown type '%.40s'", type);
}

uint32_t sc_schema(struct sc *c, const cJSON *s, const char *path)
{
	const cJSON *type, *v;
	uint32_t r;

	if (c->err)
		return 0;
	if (++c->depth > 64) {
		c->depth--;
		return sc_fail(c, path, "schema nested too deeply");
	}
	if (cJSON_IsTrue(s) || (cJSON_IsObject(s) && !s->child)) {
		sc_any_value(c);
		r = c->value;
		goto out;
	}
	if (!cJSON_IsObject(s)) {
		r = sc_fail(c, path, "a schema must be an object (or true)");
		goto out;
	}
	if (refuse_unknown(c, s, path)) {
		r = 0;
		goto out;
	}
	type = cJSON_GetObjectItemCaseSensitive(s, "type");
	if ((v = cJSON_GetObjectItemCaseSensitive(s, "$ref")) && cJSON_IsString(v))
		r = sc_ref(c, v->valuestring, path);
	else if ((v = cJSON_GetObjectItemCaseSensitive(s, "const")))
		r = sc_literal(c, v);
	else if ((v = cJSON_GetObjectItemCaseSensitive(s, "enum"))) {
		struct galt a = { 0 };
		const cJSON *it;

		if (!cJSON_IsArray(v) || !cJSON_GetArraySize(v)) {
			r = sc_fail(c, path, "'enum' must be a non-empty array");
			goto out;
		}
		r = gb_rule(c->g);
		cJSON_ArrayForEach(it, v) {
			galt_ref(c->g, &a, sc_literal(c, it));
			gb_alt(c->g, r, &a);
		}
		galt_free(&a);
	} else if ((v = cJSON_GetObjectItemCaseSensitive(s, "anyOf"))) {
		r = alternatives(c, v, "anyOf", path);
	} else if ((v = cJSON_GetObjectItemCaseSensitive(s, "oneOf"))) {
		r = alternatives(c, v, "oneOf", path);
	} else if ((v = cJSON_GetObjectItemCaseSensitive(s, "allOf"))) {
		if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 1)
			r = sc_fail(c, path, "'allOf' of more than one schema cannot be constrained");
		else
			r = sc_schema(c, v->child, path);
	} else if (cJSON_IsArray(type)) {
		const cJSON *t;
		struct galt a = { 0 };

		r = gb_rule(c->g);
		cJSON_ArrayForEach(t, type) {
			if (!cJSON_IsString(t)) {
				r = sc_fail(c, path, "'type' must name types");
				break;
			}
			galt_ref(c->g, &a, sc_type(c, s, t->valuestring, path));
			gb_alt(c->g, r, &a);
		}
		galt_free(&a);
	} else if (cJSON_IsString(type)) {
		r = sc_type(c, s, type->valuestring, path);
	} else if (cJSON_GetObjectItemCaseSensitive(s, "properties")) {
		r = sc_object(c, s, path);
	} else if (cJSON_GetObjectItemCaseSensitive(s, "items")) {
		r = sc_array(c, s, path);
	} else {
		sc_any_value(c);
		r = c->value;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "nullable")) && !c->err) {
		uint32_t n = gb_rule(c->g);
		struct galt a = { 0 };

		galt_ref(c->g, &a, r);
		gb_alt(c->g, n, &a);
		galt_lit(c->g, &a, "null");
		gb_alt(c->g, n, &a);
		galt_free(&a);
		r = n;
	}
out:
	c->depth--;
	return r;
}

/* "KEY": value, as one rule. */
uint32_t sc_member(struct sc *c, const char *key, uint32_t value)
{
	cJSON *k = cJSON_CreateString(key);
	char *t = k ? cJSON_PrintUnformatted(k) : NULL;
	struct galt a = { 0 };
	uint32_t r;

	cJSON_Delete(k);
	if (!t) {
		c->err = -ENOMEM;
		return 0;
	}
	galt_lit(c->g, &a, t);
	galt_ref(c->g, &a, c->colon);
	galt_ref(c->g, &a, value);
	r = sc_one(c, &a);
	cJSON_free(t);
	galt_free(&a);
	return r;
}

/*
 * Members k.. of n, in order, after `comma` members were written:
 * rest(k, c) = [","] m_k rest(k+1, 1) (| rest(k+1, c) when m_k is optional).
 */
uint32_t sc_members(struct sc *c, const uint32_t *m, const int *req, int n, uint32_t sep)
{
	uint32_t rest[2], next[2];
	struct galt a = { 0 };

	next[0] = next[1] = sc_one(c, &a); /* past the last: nothing */
	for (int k = n - 1; k >= 0; k--) {
		for (int w = 0; w < 2; w++) {
			rest[w] = gb_rule(c->g);
			if (w)
				galt_ref(c->g, &a, sep);
			galt_ref(c->g, &a, m[k]);
			galt_ref(c->g, &a, next[1]);
			gb_alt(c->g, rest[w], &a);
			if (!req[k]) {
				galt_ref(c->g, &a, next[w]);
				gb_alt(c->g, rest[w], &a);
			}
		}
		next[0] = rest[0];
		next[1] = rest[1];
	}
	galt_free(&a);
	return next[0];
}

int sc_is_required(const cJSON *req, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, req)
		if (cJSON_IsString(it) && !strcmp(it->valuestring, name))
			return 1;
	return 0;
}

static uint32_t sc_object(struct sc *c, const cJSON *s, const char *path)
{
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required"), *p;
	const cJSON *ap = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
	int n = cJSON_GetArraySize(props), i = 0;
	uint32_t *m, body, r;
	int *rq;
	struct galt a = { 0 };

	if (!n) {
		if (!cJSON_IsObject(ap) || !ap->child) {
			sc_any_value(c);
			return c->any_obj; /* additionalProperties: true, absent or {} */
		}
		/* { "key": value-of-ap, ... } */
		{
			char pp[512];
			uint32_t kv, more;

			snprintf(pp, sizeof(pp), "%s.additionalProperties", path);
			galt_ref(c->g, &a, c->str);
			galt_ref(c->g, &a, c->colon);
			galt_ref(c->g, &a, sc_schema(c, ap, pp));
			kv = sc_one(c, &a);
			galt_ref(c->g, &a, c->comma);
			galt_ref(c->g, &a, kv);
			more = gb_repeat(c->g, sc_one(c, &a), 0, -1);
			r = gb_rule(c->g);
			galt_lit(c->g, &a, "{");
			galt_ref(c->g, &a, c->ws);
			galt_ref(c->g, &a, kv);
			galt_ref(c->g, &a, more);
			galt_ref(c->g, &a, c->ws);
			galt_lit(c->g, &a, "}");
			gb_alt(c->g, r, &a);
			galt_lit(c->g, &a, "{");
			galt_ref(c->g, &a, c->ws);
			galt_lit(c->g, &a, "}");
			gb_alt(c->g, r, &a);
			galt_free(&a);
			return r;
		}
	}
	m = calloc((size_t)n, sizeof(*m));
	rq = calloc((size_t)n, sizeof(*rq));
	if (!m || !rq) {
		free(m);
		free(rq);
		c->err = -ENOMEM;
		return 0;
	}
	cJSON_ArrayForEach(p, props) {
		char pp[512];

		snprintf(pp, sizeof(pp), "%s.properties.%s", path, p->string);
		m[i] = sc_member(c, p->string, sc_schema(c, p, pp));
		rq[i++] = sc_is_required(req, p->string);
	}
	cJSON_ArrayForEach(p, req)
		if (!cJSON_IsString(p) || !cJSON_GetObjectItemCaseSensitive(props, p->valuestring))
			sc_fail(c, path, "'required' names a property that 'properties' does not have");
	body = sc_members(c, m, rq, n, c->comma);
	free(m);
	free(rq);
	galt_lit(c->g, &a, "{");
	galt_ref(c->g, &a, c->ws);
	galt_ref(c->g, &a, body);
	galt_ref(c->g, &a, c->ws);
	galt_lit(c->g, &a, "}");
	r = sc_one(c, &a);
	galt_free(&a);
	return r;
}

static uint32_t sc_array(struct sc *c, const cJSON *s, const char *path)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
	const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(s, "prefixItems"), *it;
	int min = get_count(c, s, "minItems", path, 0), max = get_count(c, s, "maxItems", path, -1);
	struct galt a = { 0 };
	uint32_t item, more, r = gb_rule(c->g);
	char pp[512];
	int k = 0;

	if (max >= 0 && max < min)
		return sc_fail(c, path, "'maxItems' is below 'minItems'");
	galt_lit(c->g, &a, "[");
	galt_ref(c->g, &a, c->ws);
	cJSON_ArrayForEach(it, prefix) { /* prefixItems: each, in order */
		snprintf(pp, sizeof(pp), "%s.prefixItems[%d]", path, k);
		if (k++)
			galt_ref(c->g, &a, c->comma);
		galt_ref(c->g, &a, sc_schema(c, it, pp));
	}
	if (!cJSON_IsFalse(items) && (max < 0 || max > k)) {
		snprintf(pp, sizeof(pp), "%s.items", path);
		item = items ? sc_schema(c, items, pp) : (sc_any_value(c), c->value);
		min = min > k ? min - k : 0;
		max = max < 0 ? -1 : max - k;
		if (k) { /* after the prefix: (, item){min,max} */
			struct galt b = { 0 };

			galt_ref(c->g, &b, c->comma);
			galt_ref(c->g, &b, item);
			galt_ref(c->g, &a, gb_repeat(c->g, sc_one(c, &b), min, max));
			galt_free(&b);
		} else if (max != 0) { /* item (, item){min-1,max-1}, all of it optional when min is 0 */
			struct galt b = { 0 };
			uint32_t list;

			galt_ref(c->g, &b, c->comma);
			galt_ref(c->g, &b, item);
			more = gb_repeat(c->g, sc_one(c, &b), min ? min - 1 : 0, max < 0 ? -1 : max - 1);
			galt_ref(c->g, &b, item);
			galt_ref(c->g, &b, more);
			list = sc_one(c, &b);
			galt_ref(c->g, &a, min ? list : gb_repeat(c->g, list, 0, 1));
			galt_free(&b);
		}
	}
	galt_ref(c->g, &a, c->ws);
	galt_lit(c->g, &a, "]");
	gb_alt(c->g, r, &a);
	galt_free(&a);
	return r;
}

/* A run of n digits. */
static void digits(struct sc *c, struct galt *a, int n)
{
	for (int i = 0; i < n; i++)
		galt_range(c->g, a, '0', '9');
}

static void hexes(struct sc *c, struct galt *a, int n)
{
	uint8_t set[32] = { 0 };

	sc_set_add(set, '0', '9');
	sc_set_add(set, 'a', 'f');
	sc_set_add(set, 'A', 'F');
	for (int i = 0; i < n; i++)
		galt_set(c->g, a, set);
}

/* date, time, date-time, uuid (RFC 3339 and 4122 shapes), inside the quotes. */
static int format_body(struct sc *c, const char *f, struct galt *a)
{
	int date = !strcmp(f, "date") || !strcmp(f, "date-time");
	int time = !strcmp(f, "time") || !strcmp(f, "date-time");

	if (!strcmp(f, "uuid")) {
		hexes(c, a, 8);
		for (int i = 0; i < 3; i++) {
			galt_lit(c->g, a, "-");
			hexes(c, a, 4);
		}
		galt_lit(c->g, a, "-");
		hexes(c, a, 12);
		return 0;
	}
	if (!date && !time)
		return -1;
	if (date) {
		digits(c, a, 4);
		galt_lit(c->g, a, "-");
		digits(c, a, 2);
		galt_lit(c->g, a, "-");
		digits(c, a, 2);
	}
	if (date && time)
		galt_lit(c->g, a, "T");
	if (time) {
		struct galt b = { 0 };
		uint32_t frac, zone = gb_rule(c->g);

		digits(c, a, 2);
		galt_lit(c->g, a, ":");
		digits(c, a, 2);
		galt_lit(c->g, a, ":");
		digits(c, a, 2);
		galt_lit(c->g, &b, ".");
		galt_ref(c->g, &b, gb_repeat(c->g, sc_range_rule(c, '0', '9'), 1, 9));
		frac = gb_repeat(c->g, sc_one(c, &b), 0, 1);
		galt_lit(c->g, &b, "Z");
		gb_alt(c->g, zone, &b);
		galt_range(c->g, &b, '+', '+');
		digits(c, &b, 2);
		galt_lit(c->g, &b, ":");
		digits(c, &b, 2);
		gb_alt(c->g, zone, &b);
		galt_range(c->g, &b, '-', '-');
		digits(c, &b, 2);
		galt_lit(c->g, &b, ":");
		digits(c, &b, 2);
		gb_alt(c->g, zone, &b);
		galt_ref(c->g, a, frac);
		galt_ref(c->g, a, zone);
		galt_free(&b);
	}
	return 0;
}

static uint32_t sc_string(struct sc *c, const cJSON *s, const char *path)
{
	const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(s, "format");
	int min = get_count(c, s, "minLength", path, 0), max = get_count(c, s, "maxLength", path, -1);
	struct galt a = { 0 };
	uint32_t r;

	if (max >= 0 && max < min)
		return sc_fail(c, path, "'maxLength' is below 'minLength'");
	galt_lit(c->g, &a, "\"");
	if (cJSON_IsString(fmt)) {
		if (format_body(c, fmt->valuestring, &a)) {
			galt_free(&a);
			return sc_fail(c, path, "strata cannot constrain a string to format '%.40s' "
				    "(date, time, date-time and uuid it can)", fmt->valuestring);
		}
	} else if (!min && max < 0) {
		galt_free(&a);
		return c->str;
	} else {
		galt_ref(c->g, &a, gb_repeat(c->g, c->chr, min, max));
	}
	galt_lit(c->g, &a, "\"");
	r = sc_one(c, &a);
	galt_free(&a);
	return r;
}

/* A grammar ready for rules: byte sets unset, and the shared pieces. */
int gschema_begin(struct sc *c, const cJSON *root, char *why, size_t n)
{
	memset(c, 0, sizeof(*c));
	c->g = calloc(1, sizeof(*c->g));
	c->root = root;
	c->why = why;
	c->n = n;
	if (!c->g)
		return -ENOMEM;
	for (int i = 0; i < 256; i++)
		c->g->byte_set[i] = -1;
	sc_basics(c);
	return 0;
}

/* Finish with root as the start. */
int gschema_end(struct sc *c, uint32_t root, struct strata_grammar **out)
{
	c->g->root = root;
	if (c->err || c->g->oom) {
		int rc = c->err ? c->err : -ENOMEM;

		if (rc == -ENOMEM)
			snprintf(c->why, c->n, "out of memory building the grammar");
		strata_grammar_free(c->g);
		return rc;
	}
	*out = c->g;
	return 0;
}

int strata_grammar_json(const cJSON *schema, struct strata_grammar **out, char *why, size_t n)
{
	struct sc c;
	uint32_t root;

	*out = NULL;
	if (gschema_begin(&c, schema, why, n))
		return -ENOMEM;
	if (schema) {
		root = sc_schema(&c, schema, "schema");
	} else {
		sc_any_value(&c);
		root = c.any_obj;
	}
	return gschema_end(&c, root, out);
}
