/*
 * utf8.c - UTF-8 as llama.cpp reads it (unicode.cpp: unicode_cpt_from_utf8,
 * unicode_cpts_from_utf8, unicode_cpt_to_utf8).
 *
 * Its decoder checks only that a lead byte has its continuation bytes: an
 * overlong form decodes to its value, an encoded surrogate to the surrogate,
 * F0-F7 leads up to U+1FFFFF; a byte that starts nothing (a stray
 * continuation byte, F8-FF, a lead whose sequence is cut short) reads as
 * U+FFFD and moves one byte.  Byte-level BPE tokenizes the text encoded
 * again from those code points, so strata does the same to match its ids.
 */
#include "tok/tok_impl.h"

#include <stdlib.h>
#include <string.h>

static int cont(const unsigned char *s, size_t n, size_t at)
{
	return at < n && (s[at] & 0xC0) == 0x80;
}

uint32_t strata_tok_utf8_next(const char *text, size_t n, size_t *i)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t k = *i;
	unsigned char b = s[k];

	if (b < 0x80) {
		*i = k + 1;
		return b;
	}
	if ((b & 0xE0) == 0xC0 && cont(s, n, k + 1)) {
		*i = k + 2;
		return (uint32_t)(b & 0x1F) << 6 | (s[k + 1] & 0x3F);
	}
	if ((b & 0xF0) == 0xE0 && cont(s, n, k + 1) && cont(s, n, k + 2)) {
		*i = k + 3;
		return (uint32_t)(b & 0x0F) << 12 | (uint32_t)(s[k + 1] & 0x3F) << 6 |
		       (s[k + 2] & 0x3F);
	}
	if ((b & 0xF8) == 0xF0 && cont(s, n, k + 1) && cont(s, n, k + 2) && cont(s, n, k + 3)) {
		*i = k + 4;
		return (uint32_t)(b & 0x07) << 18 | (uint32_t)(s[k + 1] & 0x3F) << 12 |
		       (uint32_t)(s[k + 2] & 0x3F) << 6 | (s[k + 3] & 0x3F);
	}
	*i = k + 1;
	return 0xFFFD;
}

/* Shortest UTF-8 of cp into o (4 bytes of room); past U+10FFFF, U+FFFD's. */
static size_t put_utf8(char *o, uint32_t cp)
{
	unsigned char *u = (unsigned char *)o;

	if (cp > 0x10FFFF)
		cp = 0xFFFD; /* llama.cpp throws here: no answer to match */
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		u[0] = (unsigned char)(0xC0 | cp >> 6);
		u[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = (unsigned char)(0xE0 | cp >> 12);
		u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		u[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	u[0] = (unsigned char)(0xF0 | cp >> 18);
	u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
	u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
	u[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

int strata_tok_utf8_llama(const char *text, size_t len, const char **out, size_t *out_len,
			  char **copy)
{
	size_t i = 0, k = 0;
	char tmp[4], *c;

	*copy = NULL;
	*out = text;
	*out_len = len;
	/* Most texts read back byte for byte: find the first sequence that does not. */
	while (i < len) {
		size_t at = i;
		uint32_t cp = strata_tok_utf8_next(text, len, &i);
		size_t m = put_utf8(tmp, cp);

		if (m != i - at || memcmp(tmp, text + at, m) != 0) {
			i = at;
			break;
		}
	}
	if (i == len)
		return 0;
	/* Each remaining byte becomes at most 3 (U+FFFD). */
	if (len - i > (SIZE_MAX - i) / 3)
		return -ENOMEM;
	c = malloc(i + 3 * (len - i) + 1);
	if (!c)
		return -ENOMEM;
	memcpy(c, text, i);
	k = i;
	while (i < len)
		k += put_utf8(c + k, strata_tok_utf8_next(text, len, &i));
	c[k] = 0;
	*copy = c;
	*out = c;
	*out_len = k;
	return 0;
}
