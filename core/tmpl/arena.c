/*
 * arena.c - the bump allocator every compile and render allocates from, and
 * the error the first failure leaves.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tmpl/tmpl_int.h"

#define CHUNK_MIN (64u << 10)

struct tchunk {
	struct tchunk *next;
	size_t size, used;
	_Alignas(16) unsigned char mem[];
};

void ta_init(struct tarena *a, size_t limit)
{
	memset(a, 0, sizeof(*a));
	a->limit = limit;
}

void ta_free(struct tarena *a)
{
	struct tchunk *c = a->head;

	while (c) {
		struct tchunk *next = c->next;

		free(c);
		c = next;
	}
	a->head = NULL;
	a->used = 0;
}

void *ta_alloc(struct tarena *a, size_t n)
{
	struct tchunk *c = a->head;
	size_t need = (n + 15) & ~(size_t)15, size;
	void *p;

	if (need < n)
		goto refuse;
	if (!c || c->size - c->used < need) {
		size = need > CHUNK_MIN ? need : CHUNK_MIN;
		/* Chunks grow with the arena, so a large render makes few of them. */
		if (a->used / 4 > size && a->used / 4 >= need)
			size = a->used / 4;
		if (a->used + size + sizeof(*c) > a->limit || size + sizeof(*c) < size)
			goto refuse;
		c = malloc(sizeof(*c) + size);
		if (!c)
			goto refuse;
		c->size = size;
		c->used = 0;
		c->next = a->head;
		a->head = c;
		a->used += size + sizeof(*c);
	}
	p = c->mem + c->used;
	c->used += need;
	memset(p, 0, n);
	return p;
refuse:
	a->full = 1;
	return NULL;
}

char *ta_strndup(struct tarena *a, const char *s, size_t n)
{
	char *p = n + 1 ? ta_alloc(a, n + 1) : NULL;

	if (p && n)
		memcpy(p, s, n);
	return p;
}

int terr(struct tctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return -1;
	c->failed = 1;
	c->err->line = c->line;
	va_start(ap, fmt);
	vsnprintf(c->err->msg, sizeof(c->err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int toom(struct tctx *c)
{
	return terr(c, "the template used more than %zu MiB of memory", c->a->limit >> 20);
}
