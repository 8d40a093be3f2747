/*
 * strbuf.c - the string builder (strbuf.h).
 */
#include "util/strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strata_buf_fixed(struct strata_buf *b, char *buf, size_t cap)
{
	memset(b, 0, sizeof(*b));
	b->p = buf;
	b->cap = cap;
	b->fixed = 1;
	if (cap)
		buf[0] = 0;
	else
		b->cut = 1;
}

int strata_buf_reserve(struct strata_buf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom || b->cut)
		return b->oom ? -ENOMEM : -ENOSPC;
	if (b->cap > b->len && n < b->cap - b->len)
		return 0; /* n bytes and the NUL fit */
	if (b->fixed) {
		b->cut = 1;
		return -ENOSPC;
	}
	if (n > SIZE_MAX / 4 - b->len) {
		b->oom = 1;
		return -ENOMEM;
	}
	for (cap = b->cap ? b->cap : 256; cap < b->len + n + 1;)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -ENOMEM;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void strata_buf_add(struct strata_buf *b, const void *s, size_t n)
{
	if (b->oom || b->cut)
		return;
	if (strata_buf_reserve(b, n)) {
		if (!b->fixed)
			return;
		n = b->cap - 1 - b->len; /* the part that fits; cut is set */
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void strata_buf_puts(struct strata_buf *b, const char *s)
{
	strata_buf_add(b, s, strlen(s));
}

void strata_buf_printf(struct strata_buf *b, const char *fmt, ...)
{
	char tmp[256], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(tmp)) {
		big = malloc((size_t)n + 1);
		if (!big) {
			b->oom = !b->fixed;
			b->cut = b->fixed;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	strata_buf_add(b, big ? big : tmp, (size_t)n);
	free(big);
}

void strata_buf_consume(struct strata_buf *b, size_t n)
{
	if (!n)
		return;
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
	b->p[b->len] = 0;
}

void strata_buf_free(struct strata_buf *b)
{
	if (b->fixed) {
		strata_buf_fixed(b, b->p, b->cap);
		return;
	}
	free(b->p);
	memset(b, 0, sizeof(*b));
}
