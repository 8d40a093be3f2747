/*
 * gjson.c - the grammar of JSON itself: white space, strings (UTF-8 and
 * escapes), numbers, any value, object and array; literals; and the parts
 * schemas and tool calls are made of.
 */
#include "serve/gschema_int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t sc_fail(struct sc *c, const char *path, const char *fmt, ...)
{
	va_list ap;
	size_t l;

	if (c->err)
		return 0;
	c->err = -EINVAL;
	l = (size_t)snprintf(c->why, c->n, "%s: ", path);
	va_start(ap, fmt);
	vsnprintf(c->why + (l < c->n ? l : c->n), l < c->n ? c->n - l : 0, fmt, ap);
	va_end(ap);
	return 0;
}


/* A rule of one alternative made by the caller in a. */
uint32_t sc_one(struct sc *c, struct galt *a)
{
	uint32_t r = gb_rule(c->g);

	gb_alt(c->g, r, a);
	return r;
}

void sc_set_add(uint8_t set[32], unsigned lo, unsigned hi)
{
	for (unsigned b = lo; b <= hi; b++)
		set[b >> 3] |= (uint8_t)(1u << (b & 7));
}

uint32_t sc_range_rule(struct sc *c, unsigned lo, unsigned hi)
{
	struct galt a = { 0 };
	uint32_t r;

	galt_range(c->g, &a, (uint8_t)lo, (uint8_t)hi);
	r = sc_one(c, &a);
	galt_free(&a);
	return r;
}

/* The pieces every JSON grammar uses, made once. */
void sc_basics(struct sc *c)
{
	struct strata_grammar *g = c->g;
	uint8_t ws[32] = { 0 }, plain[32] = { 0 };
	struct galt a = { 0 };
	uint32_t wsc, digit, digits, frac, exp, hex;

	/* White space between tokens: one space at most, so a reply cannot spend itself on it. */
	sc_set_add(ws, ' ', ' ');
	galt_set(g, &a, ws);
	wsc = sc_one(c, &a);
	c->ws = gb_repeat(g, wsc, 0, 1);
	galt_ref(g, &a, c->ws);
	galt_lit(g, &a, ",");
	galt_ref(g, &a, c->ws);
	c->comma = sc_one(c, &a);
	galt_ref(g, &a, c->ws);
	galt_lit(g, &a, ":");
	galt_ref(g, &a, c->ws);
	c->colon = sc_one(c, &a);
	/* a character of a string: plain ASCII, a UTF-8 sequence, or an escape */
	c->chr = gb_rule(g);
	sc_set_add(plain, 0x20, 0x21);
	sc_set_add(plain, 0x23, 0x5B);
	sc_set_add(plain, 0x5D, 0x7F);
	galt_set(g, &a, plain);
	gb_alt(g, c->chr, &a);
	galt_range(g, &a, 0xC2, 0xDF);
	galt_range(g, &a, 0x80, 0xBF);
	gb_alt(g, c->chr, &a);
	galt_range(g, &a, 0xE0, 0xEF);
	galt_range(g, &a, 0x80, 0xBF);
	galt_range(g, &a, 0x80, 0xBF);
	gb_alt(g, c->chr, &a);
	galt_range(g, &a, 0xF0, 0xF4);
	for (int i = 0; i < 3; i++)
		galt_range(g, &a, 0x80, 0xBF);
	gb_alt(g, c->chr, &a);
	{
		uint8_t esc[32] = { 0 }, hx[32] = { 0 };

		sc_set_add(esc, '"', '"');
		sc_set_add(esc, '\\', '\\');
		sc_set_add(esc, '/', '/');
		sc_set_add(esc, 'b', 'b');
		sc_set_add(esc, 'f', 'f');
		sc_set_add(esc, 'n', 'n');
		sc_set_add(esc, 'r', 'r');
		sc_set_add(esc, 't', 't');
		galt_lit(g, &a, "\\");
		galt_set(g, &a, esc);
		gb_alt(g, c->chr, &a);
		sc_set_add(hx, '0', '9');
		sc_set_add(hx, 'a', 'f');
		sc_set_add(hx, 'A', 'F');
		galt_lit(g, &a, "\\u");
		for (int i = 0; i < 4; i++)
			galt_set(g, &a, hx);
		gb_alt(g, c->chr, &a);
		(void)hex;
	}
	galt_lit(g, &a, "\"");
	galt_ref(g, &a, gb_repeat(g, c->chr, 0, -1));
	galt_lit(g, &a, "\"");
	c->str = sc_one(c, &a);
	/* integer ::= "-"? ("0" | [1-9] [0-9]{0,15}) */
	digit = sc_range_rule(c, '0', '9');
	c->integer = gb_rule(g);
	galt_lit(g, &a, "-");
	galt_lit(g, &a, "0");
	gb_alt(g, c->integer, &a);
	galt_lit(g, &a, "0");
	gb_alt(g, c->integer, &a);
	digits = gb_repeat(g, digit, 0, 15);
	galt_lit(g, &a, "-");
	galt_range(g, &a, '1', '9');
	galt_ref(g, &a, digits);
	gb_alt(g, c->integer, &a);
	galt_range(g, &a, '1', '9');
	galt_ref(g, &a, digits);
	gb_alt(g, c->integer, &a);
	/* number ::= integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? */
	galt_lit(g, &a, ".");
	galt_ref(g, &a, gb_repeat(g, digit, 1, 16));
	frac = gb_repeat(g, sc_one(c, &a), 0, 1);
	{
		uint8_t e[32] = { 0 }, sign[32] = { 0 };
		uint32_t sg;

		sc_set_add(e, 'e', 'e');
		sc_set_add(e, 'E', 'E');
		sc_set_add(sign, '+', '+');
		sc_set_add(sign, '-', '-');
		galt_set(g, &a, sign);
		sg = gb_repeat(g, sc_one(c, &a), 0, 1);
		galt_set(g, &a, e);
		galt_ref(g, &a, sg);
		galt_ref(g, &a, gb_repeat(g, digit, 1, 3));
		exp = gb_repeat(g, sc_one(c, &a), 0, 1);
	}
	galt_ref(g, &a, c->integer);
	galt_ref(g, &a, frac);
	galt_ref(g, &a, exp);
	c->number = sc_one(c, &a);
	galt_free(&a);
}

/* Any JSON value, object, array (made on first use: they refer to each other). */
void sc_any_value(struct sc *c)
{
	struct strata_grammar *g = c->g;
	struct galt a = { 0 };
	uint32_t kv, more;

	if (c->value)
		return;
	c->value = gb_rule(g);
	c->any_obj = gb_rule(g);
	c->any_arr = gb_rule(g);
	galt_ref(g, &a, c->any_obj);
	gb_alt(g, c->value, &a);
	galt_ref(g, &a, c->any_arr);
	gb_alt(g, c->value, &a);
	galt_ref(g, &a, c->str);
	gb_alt(g, c->value, &a);
	galt_ref(g, &a, c->number);
	gb_alt(g, c->value, &a);
	galt_lit(g, &a, "true");
	gb_alt(g, c->value, &a);
	galt_lit(g, &a, "false");
	gb_alt(g, c->value, &a);
	galt_lit(g, &a, "null");
	gb_alt(g, c->value, &a);
	/* { ws (kv (, kv)*)? ws } */
	galt_ref(g, &a, c->str);
	galt_ref(g, &a, c->colon);
	galt_ref(g, &a, c->value);
	kv = sc_one(c, &a);
	galt_ref(g, &a, c->comma);
	galt_ref(g, &a, kv);
	more = gb_repeat(g, sc_one(c, &a), 0, -1);
	galt_lit(g, &a, "{");
	galt_ref(g, &a, c->ws);
	galt_ref(g, &a, kv);
	galt_ref(g, &a, more);
	galt_ref(g, &a, c->ws);
	galt_lit(g, &a, "}");
	gb_alt(g, c->any_obj, &a);
	galt_lit(g, &a, "{");
	galt_ref(g, &a, c->ws);
	galt_lit(g, &a, "}");
	gb_alt(g, c->any_obj, &a);
	galt_ref(g, &a, c->comma);
	galt_ref(g, &a, c->value);
	more = gb_repeat(g, sc_one(c, &a), 0, -1);
	galt_lit(g, &a, "[");
	galt_ref(g, &a, c->ws);
	galt_ref(g, &a, c->value);
	galt_ref(g, &a, more);
	galt_ref(g, &a, c->ws);
	galt_lit(g, &a, "]");
	gb_alt(g, c->any_arr, &a);
	galt_lit(g, &a, "[");
	galt_ref(g, &a, c->ws);
	galt_lit(g, &a, "]");
	gb_alt(g, c->any_arr, &a);
	galt_free(&a);
}

/* A rule of the JSON text of v (const, enum). */
uint32_t sc_literal(struct sc *c, const cJSON *v)
{
	char *t = cJSON_PrintUnformatted(v);
	uint32_t r;

	if (!t) {
		c->err = -ENOMEM;
		return 0;
	}
	r = gb_lit_rule(c->g, t);
	cJSON_free(t);
	return r;
}

