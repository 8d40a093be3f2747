/*
 * textout.c - holding back text that may start a stop string, and UTF-8.
 */
#define _GNU_SOURCE /* memmem */
#include "serve/textout.h"

#include <stdint.h>
#include <string.h>

#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

/*
 * The UTF-8 sequence at s[0..n): its length when valid and complete, 0 when
 * invalid (overlong, surrogate, past U+10FFFF, a stray continuation byte),
 * -1 when the bytes so far are a valid start of a sequence that n cuts off.
 */
static int utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	int len;
	uint32_t cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, cp = c & 0x1F, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, cp = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
		/* Reject as soon as the prefix fixes an overlong or surrogate form. */
		if (i == 1 && ((len == 3 && c == 0xE0 && s[1] < 0xA0) ||
			       (len == 3 && c == 0xED && s[1] > 0x9F) ||
			       (len == 4 && c == 0xF0 && s[1] < 0x90) ||
			       (len == 4 && c == 0xF4 && s[1] > 0x8F)))
			return 0;
	}
	return cp >= min ? len : 0;
}

/* Append s[0..n) to out with every invalid byte as U+FFFD. */
void strata_utf8_sanitize(struct strata_buf *out, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0;

	if (!n)
		return;
	while (i < n) {
		int l = utf8_seq(u + i, n - i);

		if (l > 0) {
			i += (size_t)l;
			continue;
		}
		strata_buf_add(out, s + run, i - run);
		strata_buf_puts(out, REPLACEMENT);
		i++;
		run = i;
	}
	strata_buf_add(out, s + run, n - run);
}

/* Bytes at the end of s[0..n) that begin a character the next piece may finish. */
static size_t utf8_open_tail(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = u[n - back];

		if ((c & 0xC0) == 0x80)
			continue; /* a continuation byte: look further back */
		return utf8_seq(u + n - back, back) < 0 ? back : 0;
	}
	return 0;
}

/* Longest k < len(stop) such that s ends with the first k bytes of a stop string. */
static size_t stop_open_tail(const struct strata_textout *t, const char *s, size_t n)
{
	size_t best = 0;

	for (size_t i = 0; i < t->n_stop; i++) {
		size_t sl = strlen(t->stop[i]);

		for (size_t k = sl - 1 < n ? sl - 1 : n; k > best; k--)
			if (memcmp(s + n - k, t->stop[i], k) == 0) {
				best = k;
				break;
			}
	}
	return best;
}

int strata_textout_feed(struct strata_textout *t, const char *piece, size_t len,
			struct strata_buf *out)
{
	struct strata_buf *p = &t->pending;
	const char *first = NULL;
	size_t hold, a, b;

	strata_buf_add(p, piece, len);
	for (size_t i = 0; i < t->n_stop; i++) {
		const char *m = memmem(p->p, p->len, t->stop[i], strlen(t->stop[i]));

		if (m && (!first || m < first)) {
			first = m;
			t->matched = (int)i + 1;
		}
	}
	if (first) {
		strata_utf8_sanitize(out, p->p, (size_t)(first - p->p));
		strata_buf_free(p);
		return 1;
	}
	a = stop_open_tail(t, p->p, p->len);
	b = utf8_open_tail(p->p, p->len);
	hold = a > b ? a : b;
	/* A stop string's bytes need not be UTF-8: one that begins with a
	 * continuation byte must not cut a character (both halves would go out
	 * as U+FFFD), so hold back to the character's first byte. */
	for (int k = 0; k < 3 && hold < p->len &&
			((unsigned char)p->p[p->len - hold] & 0xC0) == 0x80; k++)
		hold++;
	strata_utf8_sanitize(out, p->p, p->len - hold);
	strata_buf_consume(p, p->len - hold);
	return 0;
}

void strata_textout_flush(struct strata_textout *t, struct strata_buf *out)
{
	strata_utf8_sanitize(out, t->pending.p, t->pending.len);
	strata_buf_free(&t->pending);
}

void strata_textout_free(struct strata_textout *t)
{
	strata_buf_free(&t->pending);
}
