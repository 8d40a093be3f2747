/*
 * ustr.c - UTF-8 and the Unicode rules of Python's str methods (isspace,
 * isprintable, case mapping, line boundaries), with utf8proc's tables.
 */
#include <utf8proc.h>

#include "tmpl/tmpl_int.h"

int u8_next(const char *s, size_t n, uint32_t *cp)
{
	utf8proc_int32_t c;
	utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)s,
					      n > 4 ? 4 : (utf8proc_ssize_t)n, &c);

	if (l <= 0) {
		*cp = 0xFFFD;
		return 1;
	}
	*cp = (uint32_t)c;
	return (int)l;
}

size_t u8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

size_t u8_count(const char *s, size_t n)
{
	size_t count = 0;

	for (size_t i = 0; i < n;) {
		uint32_t cp;

		if ((unsigned char)s[i] < 0x80) {
			i++;
		} else {
			i += (size_t)u8_next(s + i, n - i, &cp);
		}
		count++;
	}
	return count;
}

size_t u8_offset(const char *s, size_t n, size_t idx)
{
	size_t i = 0;

	while (idx-- && i < n) {
		uint32_t cp;

		i += (unsigned char)s[i] < 0x80 ? 1 : (size_t)u8_next(s + i, n - i, &cp);
	}
	return i;
}

/* Python's str.isspace(): bidirectional class WS, B or S, or category Zs. */
int u_isspace(uint32_t cp)
{
	if (cp < 0x80)
		return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
	return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Python's str.isprintable(): not Other (Cc, Cf, Cs, Co, Cn) nor Separator but space. */
int u_isprint(uint32_t cp)
{
	utf8proc_category_t cat;

	if (cp < 0x80)
		return cp >= 0x20 && cp < 0x7F;
	if (cp > 0x10FFFF)
		return 0;
	cat = utf8proc_category((utf8proc_int32_t)cp);
	switch (cat) {
	case UTF8PROC_CATEGORY_CC:
	case UTF8PROC_CATEGORY_CF:
	case UTF8PROC_CATEGORY_CS:
	case UTF8PROC_CATEGORY_CO:
	case UTF8PROC_CATEGORY_CN:
	case UTF8PROC_CATEGORY_ZL:
	case UTF8PROC_CATEGORY_ZP:
	case UTF8PROC_CATEGORY_ZS:
		return 0;
	default:
		return 1;
	}
}

uint32_t u_upper(uint32_t cp)
{
	if (cp < 0x80)
		return cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
	return cp > 0x10FFFF ? cp : (uint32_t)utf8proc_toupper((utf8proc_int32_t)cp);
}

uint32_t u_lower(uint32_t cp)
{
	if (cp < 0x80)
		return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
	return cp > 0x10FFFF ? cp : (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
}

/*
 * Python's full case mapping where it differs from the one-to-one one
 * (SpecialCasing.txt, unconditional entries of the Latin and ligature
 * blocks): "ß".upper() is "SS".  Writes 1 to 3 code points; returns how many.
 */
int u_case_full(uint32_t cp, int upper, uint32_t out[3])
{
	static const struct {
		uint32_t cp, to[3];
	} up[] = {
		{ 0x00DF, { 'S', 'S', 0 } }, { 0x0149, { 0x02BC, 'N', 0 } },
		{ 0x01F0, { 'J', 0x030C, 0 } }, { 0x1E96, { 'H', 0x0331, 0 } },
		{ 0x1E97, { 'T', 0x0308, 0 } }, { 0x1E98, { 'W', 0x030A, 0 } },
		{ 0x1E99, { 'Y', 0x030A, 0 } }, { 0x1E9A, { 'A', 0x02BE, 0 } },
		{ 0xFB00, { 'F', 'F', 0 } }, { 0xFB01, { 'F', 'I', 0 } }, { 0xFB02, { 'F', 'L', 0 } },
		{ 0xFB03, { 'F', 'F', 'I' } }, { 0xFB04, { 'F', 'F', 'L' } },
		{ 0xFB05, { 'S', 'T', 0 } }, { 0xFB06, { 'S', 'T', 0 } },
	};

	if (upper) {
		for (size_t i = 0; cp >= 0xDF && i < sizeof(up) / sizeof(up[0]); i++)
			if (up[i].cp == cp) {
				int n = 0;

				while (n < 3 && up[i].to[n])
					out[n] = up[i].to[n], n++;
				return n;
			}
		out[0] = u_upper(cp);
		return 1;
	}
	if (cp == 0x0130) { /* İ: i and a combining dot */
		out[0] = 'i';
		out[1] = 0x0307;
		return 2;
	}
	out[0] = u_lower(cp);
	return 1;
}

int u_isalpha(uint32_t cp)
{
	utf8proc_category_t cat;

	if (cp < 0x80)
		return (cp | 32) >= 'a' && (cp | 32) <= 'z';
	if (cp > 0x10FFFF)
		return 0;
	cat = utf8proc_category((utf8proc_int32_t)cp);
	return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
	       cat == UTF8PROC_CATEGORY_LT || cat == UTF8PROC_CATEGORY_LM ||
	       cat == UTF8PROC_CATEGORY_LO;
}

int u_isdigit(uint32_t cp)
{
	if (cp < 0x80)
		return cp >= '0' && cp <= '9';
	return cp <= 0x10FFFF && utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_ND;
}

/* The line boundaries of str.splitlines() (a \r\n pair is handled by the caller). */
int u_islinebreak(uint32_t cp)
{
	return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
	       cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}
