/*
 * buf.h - a growable byte buffer for the server's texts.
 *
 * Appends never fail loudly: a failed allocation sets oom and later appends
 * do nothing, so a builder checks once at the end instead of after each call.
 */
#ifndef STRATA_SERVE_BUF_H
#define STRATA_SERVE_BUF_H

#include <stdlib.h>
#include <string.h>

struct strata_buf {
	char *p;     /* NUL-terminated when len > 0 or after any append */
	size_t len;
	size_t cap;
	int oom;     /* an allocation failed: the contents are incomplete */
};

static inline void strata_buf_add(struct strata_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static inline void strata_buf_puts(struct strata_buf *b, const char *s)
{
	strata_buf_add(b, s, strlen(s));
}

/* Drop the first n bytes (n <= len). */
static inline void strata_buf_consume(struct strata_buf *b, size_t n)
{
	if (!n)
		return;
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
	b->p[b->len] = 0;
}

static inline void strata_buf_free(struct strata_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

#endif
