/*
 * pretok.c - the pre-tokenizers of byte-level BPE vocabularies: the regex
 * list that tokenizer.ggml.pre names, applied with PCRE2.
 *
 * Which regexes each type uses, and how they chain, is llama.cpp's
 * (llama-vocab.cpp, unicode.cpp): every regex splits each piece left by the
 * previous one into its matches and the unmatched text between them, and a
 * piece is all the next regex sees (lookaheads and `$` stop at its end).
 * Where llama.cpp adapted a Hugging Face pattern (case-insensitive
 * contractions spelled out as '[sS]), its spelling is used.
 *
 * PCRE2 runs in UTF + UCP mode, so \p{L}, \p{N} and \p{P} are Unicode's
 * categories.  \s is not used: llama.cpp's whitespace is Unicode's
 * White_Space property, which PCRE2's \s exceeds by U+180E, so the class is
 * spelled out (WS below).  PCRE2_DOLLAR_ENDONLY makes `$` mean the end of
 * the piece only, as in std::regex; invalid UTF-8 is allowed in the subject
 * and never matched.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tok/tok_impl.h"

#include "util/log.h"

#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unicode White_Space: \t-\r, space, NEL, NBSP, U+1680, U+2000-200A, ... */
#define WS "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define SP "[" WS "]"   /* \s */
#define NSP "[^" WS "]" /* \S */

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
#define RE_GPT2                                                                       \
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|" SP \
	"+(?!" NSP ")|" SP "+"

/* The contractions of llama-3 and Qwen2, case-insensitive. */
#define RE_CONTRACT "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"

/*
 * llama-3: (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+ ; Qwen2 is the same with single digits.
 */
#define RE_LLAMA3_LIKE(digits)                                                          \
	RE_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" digits "| ?[^" WS                \
		    "\\p{L}\\p{N}]+[\\r\\n]*|" SP "*[\\r\\n]+|" SP "+(?!" NSP ")|" SP "+"

/* CJK ideographs, U+0800-4E00 and Hangul, as DeepSeek's tokenizers list them. */
#define RE_DEEPSEEK_CJK "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"

/* DeepSeek-LLM's letters: the cased letters (Lu, Ll, Lt) of its tokenizer.json. */
#define DEEPSEEK_LETTERS                                                                   \
	"A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"            \
	"\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"     \
	"\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"              \
	"\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}"                   \
	"\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"             \
	"\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}"             \
	"\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}"    \
	"\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"     \
	"\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}"             \
	"\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"              \
	"\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}"               \
	"\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}"    \
	"\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}"     \
	"\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"              \
	"\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"             \
	"\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"           \
	"\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"     \
	"\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}"

#define MAX_RES 6

struct pre_type {
	const char *names; /* canonical name first; '|'-separated aliases */
	unsigned flags;
	const char *re[MAX_RES];
};

/* The types llama.cpp gives these regexes; aliases only where it changes nothing else. */
static const struct pre_type types[] = {
	{ "default", 0,
	  { "[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]" } },
	{ "gpt-2|phi-2|olmo|jais|exaone4", 0, { RE_GPT2 } },
	{ "mpt", 0, { RE_GPT2 } },
	{ "starcoder|refact|command-r|smollm|codeshell|exaone|minerva-7b", 0,
	  { "\\p{N}", RE_GPT2 } },
	{ "falcon", 0, { "[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]" } },
	{ "deepseek-llm", 0,
	  { "[\\r\\n]", SP "?[" DEEPSEEK_LETTERS "]+",
	    SP "?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
	    SP "+$", RE_DEEPSEEK_CJK, "\\p{N}+" } },
	{ "deepseek-coder", 0,
	  { "[\\r\\n]", SP "?\\p{L}+", SP "?\\p{P}+", RE_DEEPSEEK_CJK, "\\p{N}" } },
	{ "llama3|llama-v3|llama-bpe|falcon3|pixtral",
	  STRATA_PRETOK_IGNORE_MERGES | STRATA_PRETOK_ADD_BOS, { RE_LLAMA3_LIKE("\\p{N}{1,3}") } },
	{ "dbrx|smaug-bpe", 0, { RE_LLAMA3_LIKE("\\p{N}{1,3}") } },
	{ "qwen2|deepseek-r1-qwen|stablelm2|megrez", 0, { RE_LLAMA3_LIKE("\\p{N}") } },
};

struct strata_pretok {
	const struct pre_type *type;
	char name[32];
	int n;
	pcre2_code *code[MAX_RES];
};

/* 1 when name[0..len) is one of the '|'-separated names. */
static int has_name(const char *names, const char *name, size_t len)
{
	for (const char *p = names;;) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);

		if (n == len && memcmp(p, name, len) == 0)
			return 1;
		if (!bar)
			return 0;
		p = bar + 1;
	}
}

static int compile(struct strata_pretok *p, const char *re)
{
	const uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF |
			      PCRE2_DOLLAR_ENDONLY | PCRE2_NO_AUTO_CAPTURE;
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE at;
	int err;
	pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, opts, &err, &at, NULL);

	if (!c) {
		if (err == PCRE2_ERROR_HEAPLIMIT || err == PCRE2_ERROR_NOMEMORY)
			return -ENOMEM;
		pcre2_get_error_message(err, msg, sizeof(msg));
		strata_error("pre-tokenizer '%s': regex %d does not compile at offset %zu: %s",
			     p->name, p->n, (size_t)at, (const char *)msg);
		return -EINVAL;
	}
	/* Without JIT (not built in, or no executable memory) the interpreter runs. */
	(void)pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);
	p->code[p->n++] = c;
	return 0;
}

int strata_pretok_open(const char *name, size_t len, struct strata_pretok **out)
{
	const struct pre_type *type = NULL;
	struct strata_pretok *p;
	int rc = 0;

	*out = NULL;
	if (!name) {
		name = "default";
		len = strlen(name);
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]) && !type; i++)
		if (has_name(types[i].names, name, len))
			type = &types[i];
	if (!type)
		return -ENOTSUP;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->type = type;
	snprintf(p->name, sizeof(p->name), "%.*s", (int)strcspn(type->names, "|"), type->names);
	for (int i = 0; i < MAX_RES && type->re[i] && rc == 0; i++)
		rc = compile(p, type->re[i]);
	if (rc < 0) {
		strata_pretok_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void strata_pretok_free(struct strata_pretok *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++)
		pcre2_code_free(p->code[i]);
	free(p);
}

unsigned strata_pretok_flags(const struct strata_pretok *p) { return p->type->flags; }
const char *strata_pretok_name(const struct strata_pretok *p) { return p->name; }

static int span_push(struct strata_tok_spans *s, size_t off, size_t len)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct strata_tok_span *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = (struct strata_tok_span){ (uint32_t)off, (uint32_t)len };
	return 0;
}

/* What a match call needs; the JIT stack only once the default one is too small. */
struct matcher {
	pcre2_match_data *md;
	pcre2_match_context *mc;
	pcre2_jit_stack *js;
};

static int match(struct matcher *m, const pcre2_code *c, const char *s, size_t n, size_t at)
{
	int rc = pcre2_match(c, (PCRE2_SPTR)s, n, at, PCRE2_NOTEMPTY, m->md, m->mc);

	if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !m->js) {
		m->mc = pcre2_match_context_create(NULL);
		m->js = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, NULL);
		if (!m->mc || !m->js)
			return PCRE2_ERROR_NOMEMORY;
		pcre2_jit_stack_assign(m->mc, NULL, m->js);
		rc = pcre2_match(c, (PCRE2_SPTR)s, n, at, PCRE2_NOTEMPTY, m->md, m->mc);
	}
	return rc;
}

/* Split the piece text[off..off+len) with regex c into `to`. */
static int split_piece(const struct strata_pretok *p, int k, struct matcher *m,
		       const char *text, size_t off, size_t len, struct strata_tok_spans *to)
{
	const char *s = text + off;
	size_t at = 0;
	int rc = 0;

	while (at < len && rc == 0) {
		int r = match(m, p->code[k], s, len, at);
		const PCRE2_SIZE *ov;

		if (r == PCRE2_ERROR_NOMATCH)
			break;
		if (r < 0) {
			PCRE2_UCHAR msg[256];

			if (r == PCRE2_ERROR_NOMEMORY || r == PCRE2_ERROR_HEAPLIMIT)
				return -ENOMEM;
			pcre2_get_error_message(r, msg, sizeof(msg));
			strata_error("pre-tokenizer '%s': regex %d failed on %zu bytes at offset %zu: %s",
				     p->name, k, len, off + at, (const char *)msg);
			return -E2BIG;
		}
		ov = pcre2_get_ovector_pointer(m->md);
		if (ov[0] > at)
			rc = span_push(to, off + at, ov[0] - at);
		if (rc == 0)
			rc = span_push(to, off + ov[0], ov[1] - ov[0]);
		at = ov[1];
	}
	if (rc == 0 && at < len)
		rc = span_push(to, off + at, len - at);
	return rc;
}

int strata_pretok_split(const struct strata_pretok *p, const char *text, size_t len,
			struct strata_tok_spans *out)
{
	struct strata_tok_spans tmp = { NULL, 0, 0 };
	struct matcher m = { pcre2_match_data_create(1, NULL), NULL, NULL };
	int rc = m.md ? 0 : -ENOMEM;

	out->n = 0;
	if (len > UINT32_MAX)
		rc = -EOVERFLOW;
	if (rc == 0 && len)
		rc = span_push(out, 0, len);
	for (int k = 0; k < p->n && rc == 0; k++) {
		struct strata_tok_spans swap;

		tmp.n = 0;
		for (size_t i = 0; i < out->n && rc == 0; i++)
			rc = split_piece(p, k, &m, text, out->v[i].off, out->v[i].len, &tmp);
		swap = *out;
		*out = tmp;
		tmp = swap;
	}
	free(tmp.v);
	pcre2_jit_stack_free(m.js);
	pcre2_match_context_free(m.mc);
	pcre2_match_data_free(m.md);
	if (rc == 0 && out->n > INT32_MAX)
		rc = -EOVERFLOW;
	return rc < 0 ? rc : (int)out->n;
}
