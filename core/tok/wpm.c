/*
 * wpm.c - the WordPiece (tokenizer.ggml.model = "bert") back end.
 *
 * As llama.cpp's llm_tokenizer_wpm, id for id (tests/vocab/corpus.inp):
 * the text is decoded as llama.cpp decodes UTF-8 (utf8.c), control
 * characters (Unicode Cc, Cf, Co, Cs: not unassigned ones), NUL and U+FFFD
 * are dropped; with strip_accents each character is replaced by the first
 * code point of its canonical decomposition (llama.cpp's NFD table keeps
 * only that, so a Hangul syllable becomes its leading jamo) and marks (Mn,
 * Mc, Me) are dropped; with lowercase it is lowered; whitespace ends a word,
 * and punctuation (Unicode P, or ASCII symbols) and CJK ideographs are words
 * of their own.  Each word, prefixed with "▁" (the GGUF converter writes
 * word-initial pieces as "▁piece" and "##piece" as "piece"), is cut greedily
 * into the longest vocabulary tokens; a word with a position no token matches
 * becomes the unknown token.  (Hugging Face's BertNormalizer decomposes
 * fully and drops only Mn; llama.cpp's simplification is followed so that
 * the ids are llama.cpp's.)
 *
 * Unicode data (categories, decompositions, case) comes from utf8proc.
 */
#include "tok/tok_impl.h"

#include "gguf/gguf.h"
#include "util/log.h"
#include "util/strbuf.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static const char PHANTOM[] = "\xE2\x96\x81"; /* U+2581 */
#define PHANTOM_LEN 3

struct wpm_state {
	int lowercase, strip_accents;
	uint32_t max_len; /* longest token text, bytes */
};

/* Unicode White_Space, as llama.cpp and Rust's char::is_whitespace. */
static int is_space(int32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
	       c == 0x205F || c == 0x3000;
}

/* BERT's CJK ranges (0x2B920, not 0x2B820, as in Hugging Face's code). */
static int is_cjk(int32_t c)
{
	return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
	       (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
	       (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
	       (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static int is_punct(int32_t c)
{
	utf8proc_category_t k = utf8proc_category(c);

	if (k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO)
		return 1;
	return c < 0x7F && k >= UTF8PROC_CATEGORY_SM && k <= UTF8PROC_CATEGORY_SO;
}

/* llama.cpp's \p{C} less Cn: control, format, surrogate, private use. */
static int is_control(int32_t c)
{
	return utf8proc_category(c) >= UTF8PROC_CATEGORY_CC;
}

static int is_mark(int32_t c)
{
	utf8proc_category_t k = utf8proc_category(c);

	return k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME;
}

/* Append c to the word (the builder's memory: -ENOMEM once it cannot grow). */
static int word_put(struct strata_buf *w, int32_t c)
{
	int rc = strata_buf_reserve(w, 4);

	if (rc)
		return rc;
	w->len += (size_t)utf8proc_encode_char(c, (utf8proc_uint8_t *)w->p + w->len);
	return 0;
}

/* Longest-match-first over "▁word"; the unknown token when a position matches nothing. */
static int emit_word(const struct strata_tokenizer *t, const struct wpm_state *st,
		     struct strata_buf *w, struct strata_tok_ids *out)
{
	size_t mark = out->n, n = w->len;
	int rc = 0;

	if (n == PHANTOM_LEN)
		return 0; /* an empty word */
	for (size_t i = 0; i < n && rc == 0;) {
		size_t j = n - i > st->max_len ? i + st->max_len : n;
		int32_t id = -1;

		for (; j > i; j--) {
			id = strata_tok_lookup(t, w->p + i, j - i);
			if (id >= 0)
				break;
		}
		if (id < 0) {
			out->n = mark;
			break;
		}
		rc = strata_tok_ids_push(out, id);
		i = j;
	}
	if (rc == 0 && out->n == mark)
		rc = t->unk >= 0 ? strata_tok_ids_push(out, t->unk) : 0;
	w->len = PHANTOM_LEN;
	return rc;
}

/* One normalised character: end the word, join it, or stand alone. */
static int add_char(const struct strata_tokenizer *t, const struct wpm_state *st, int32_t c,
		    struct strata_buf *w, struct strata_tok_ids *out)
{
	int rc;

	if (is_space(c))
		return emit_word(t, st, w, out);
	if (c == 0 || c == 0xFFFD || is_control(c))
		return 0;
	if (st->strip_accents && is_mark(c))
		return 0;
	if (!is_punct(c) && !is_cjk(c))
		return word_put(w, st->lowercase ? utf8proc_tolower(c) : c);
	rc = emit_word(t, st, w, out);
	if (rc == 0)
		rc = word_put(w, st->lowercase ? utf8proc_tolower(c) : c);
	return rc == 0 ? emit_word(t, st, w, out) : rc;
}

static int wpm_encode(const struct strata_tokenizer *t, const char *text, size_t len,
		      int after_special, struct strata_tok_ids *out)
{
	const struct wpm_state *st = t->model_state;
	struct strata_buf w = { 0 };
	int rc = word_put(&w, 0x2581);

	(void)after_special;
	for (size_t i = 0; i < len && rc == 0;) {
		uint32_t u = strata_tok_utf8_next(text, len, &i);
		int32_t c = u > 0x10FFFF ? 0xFFFD : (int32_t)u, d[16];

		/* The first code point of the canonical decomposition, as llama.cpp's table. */
		if (st->strip_accents && c != 0xFFFD &&
		    utf8proc_decompose_char(c, d, 16, UTF8PROC_DECOMPOSE, NULL) >= 1)
			c = d[0];
		rc = add_char(t, st, c, &w, out);
	}
	if (rc == 0)
		rc = emit_word(t, st, &w, out);
	strata_buf_free(&w);
	return rc;
}

/* "▁" back to a space; anything else as stored. */
static int wpm_piece(const struct strata_tokenizer *t, int32_t id, unsigned attr, char *buf,
		     size_t cap)
{
	const char *s = strata_tok_text(t, id);
	uint32_t n = t->len[id];
	size_t k = 0;

	(void)attr;
	for (uint32_t i = 0; i < n;) {
		int ph = n - i >= PHANTOM_LEN && memcmp(s + i, PHANTOM, PHANTOM_LEN) == 0;

		if (k < cap)
			buf[k] = ph ? ' ' : s[i];
		k++;
		i += ph ? PHANTOM_LEN : 1;
	}
	return k > INT_MAX ? -EOVERFLOW : (int)k;
}

static int read_bool(const struct strata_tokenizer *t, const struct strata_gguf *g,
		     const char *key, int *v)
{
	int rc = strata_gguf_get_bool(g, key, v);

	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		strata_error("%s: %s is not a boolean", t->path, key);
	return rc < 0 ? -EINVAL : 0;
}

/* llama.cpp's WordPiece defaults: [CLS] text [SEP], lowercased without accents. */
static int wpm_defaults(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	struct wpm_state *st = calloc(1, sizeof(*st));
	int rc;

	if (!st)
		return -ENOMEM;
	t->model_state = st;
	t->bos = 101;
	t->eos = -1;
	t->unk = 100;
	t->sep = 102;
	t->pad = 0;
	t->mask_id = 103;
	t->add_bos = t->add_sep = 1;
	t->add_eos = t->add_space_prefix = 0;
	st->lowercase = 1;
	rc = read_bool(t, g, "tokenizer.ggml.normalizer.lowercase", &st->lowercase);
	st->strip_accents = st->lowercase;
	if (rc == 0)
		rc = read_bool(t, g, "tokenizer.ggml.normalizer.strip_accents", &st->strip_accents);
	return rc;
}

static int wpm_init(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	struct wpm_state *st = t->model_state;

	(void)g;
	for (int32_t id = 0; id < t->n_vocab; id++)
		if (t->len[id] > st->max_len)
			st->max_len = t->len[id];
	return 0;
}

static void wpm_fini(struct strata_tokenizer *t)
{
	free(t->model_state);
	t->model_state = NULL;
}

const struct strata_tok_model strata_tok_model_wpm = {
	.name = "bert",
	.defaults = wpm_defaults,
	.init = wpm_init,
	.fini = wpm_fini,
	.encode = wpm_encode,
	.piece = wpm_piece,
};
