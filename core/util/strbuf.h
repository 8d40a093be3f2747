/*
 * strbuf.h - the core's string builder.
 *
 * A growable buffer (zero-initialised: struct strata_buf b = { 0 }) or a
 * fixed one over the caller's memory (strata_buf_fixed).  Appends never fail
 * loudly: when a growable buffer cannot grow it sets oom, when a fixed one
 * is full it keeps what fits and sets cut; later appends do nothing, so a
 * builder checks once at the end instead of after each call.  The text is
 * NUL-terminated after any append.
 */
#ifndef STRATA_UTIL_STRBUF_H
#define STRATA_UTIL_STRBUF_H

#include <stddef.h>

struct strata_buf {
	char *p;
	size_t len;
	size_t cap;
	int oom;   /* growable: an allocation failed, the contents are incomplete */
	int cut;   /* fixed: an append did not fit, the contents end where it was cut */
	int fixed; /* p is the caller's cap bytes: never grown or freed */
};

/* A builder writing into buf[0..cap) (cap > 0), starting empty. */
void strata_buf_fixed(struct strata_buf *b, char *buf, size_t cap);

void strata_buf_add(struct strata_buf *b, const void *s, size_t n);
void strata_buf_puts(struct strata_buf *b, const char *s);
void strata_buf_printf(struct strata_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Room for n more bytes (and the NUL) at p + len, to be filled by the caller,
 * who then adds what it wrote to len.  0, or -ENOMEM (oom set) / -ENOSPC (a
 * fixed buffer; cut set).
 */
int strata_buf_reserve(struct strata_buf *b, size_t n);

/* Drop the first n bytes (n <= len). */
void strata_buf_consume(struct strata_buf *b, size_t n);

/* Release a growable buffer's memory and empty it (a fixed one is only emptied). */
void strata_buf_free(struct strata_buf *b);

#endif
