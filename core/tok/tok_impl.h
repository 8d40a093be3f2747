/*
 * tok_impl.h - the tokenizer's layout, shared by the vocabulary loader
 * (tok_vocab.c), the generic front end (tokenizer.c) and the per-model
 * back ends (spm.c, bpe.c with the pre-tokenizers of pretok.c, wpm.c).
 * Not a public header.
 *
 * A back end is one `struct strata_tok_model`: the generic layer loads the
 * vocabulary, splits the text at special tokens and adds BOS/EOS; the back
 * end turns one plain-text fragment into ids and renders normal/byte pieces.
 */
#ifndef STRATA_TOK_IMPL_H
#define STRATA_TOK_IMPL_H

#include "tok/tokenizer.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

struct strata_gguf;

/* A growable id array (the tokenizer's output). */
struct strata_tok_ids {
	int32_t *v;
	size_t n, cap;
};

static inline int strata_tok_ids_reserve(struct strata_tok_ids *o, size_t extra)
{
	size_t want, cap;
	int32_t *v;

	if (o->cap - o->n >= extra)
		return 0;
	if (extra > SIZE_MAX / sizeof(int32_t) / 2 - o->n)
		return -ENOMEM;
	want = o->n + extra;
	cap = o->cap ? o->cap : 64;
	while (cap < want)
		cap *= 2;
	v = realloc(o->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	o->v = v;
	o->cap = cap;
	return 0;
}

static inline int strata_tok_ids_push(struct strata_tok_ids *o, int32_t id)
{
	int rc = strata_tok_ids_reserve(o, 1);

	if (rc == 0)
		o->v[o->n++] = id;
	return rc;
}

struct strata_tok_model {
	const char *name; /* the tokenizer.ggml.model value */
	/*
	 * Model defaults, applied before the file's special-token keys are read
	 * (g is there for keys that choose the defaults, e.g. tokenizer.ggml.pre).
	 * 0 or -errno, logged.
	 */
	int (*defaults)(struct strata_tokenizer *t, const struct strata_gguf *g);
	/* Model state built from the loaded vocabulary (t->model_state); may be NULL. */
	int (*init)(struct strata_tokenizer *t, const struct strata_gguf *g);
	void (*fini)(struct strata_tokenizer *t);
	/*
	 * Append the ids of one plain-text fragment; after_special is 1 for the
	 * first fragment and for one that follows a special token.
	 */
	int (*encode)(const struct strata_tokenizer *t, const char *text, size_t len,
		      int after_special, struct strata_tok_ids *out);
	/*
	 * Render a NORMAL or BYTE token (attr given); snprintf semantics.
	 * Other attributes are handled by the generic layer.
	 */
	int (*piece)(const struct strata_tokenizer *t, int32_t id, unsigned attr,
		     char *buf, size_t cap);
};

extern const struct strata_tok_model strata_tok_model_spm;
extern const struct strata_tok_model strata_tok_model_bpe;
extern const struct strata_tok_model strata_tok_model_wpm;

struct strata_tokenizer {
	const struct strata_tok_model *model;
	void *model_state;
	char *path;       /* the GGUF file, for messages */
	char *model_name; /* tokenizer.ggml.model */

	int32_t n_vocab;
	char *pool;        /* every token's text, each NUL-terminated */
	uint32_t *off;     /* text of id i: pool + off[i], len[i] bytes */
	uint32_t *len;
	float *score;
	uint32_t *attr;    /* STRATA_TOKEN_ATTR_* */
	uint8_t *eog;      /* 1 for end-of-generation ids */

	int32_t *slot;     /* open-addressing text -> id table, -1 empty */
	uint64_t mask;

	/* special ids, -1 when unset */
	int32_t bos, eos, eot, eom, unk, sep, pad, mask_id;
	int32_t fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
	int add_bos, add_eos, add_sep, add_space_prefix; /* add_sep: SEP after EOS (BERT) */

	/* control/user-defined/unknown ids, longest text first (ties: lower id) */
	int32_t *special;
	int32_t n_special;
};

static inline const char *strata_tok_text(const struct strata_tokenizer *t, int32_t id)
{
	return t->pool + t->off[id];
}

/* Exact-text lookup in the vocabulary hash; -1 when absent. */
int32_t strata_tok_lookup(const struct strata_tokenizer *t, const char *s, size_t n);

/* ---- pre-tokenizers (pretok.c) ------------------------------------------------ */

/* A piece of text: bytes [off, off + len) of the fragment being split. */
struct strata_tok_span {
	uint32_t off, len;
};

struct strata_tok_spans {
	struct strata_tok_span *v;
	size_t n, cap;
};

/* Behaviour a pre-tokenizer type brings besides its regexes (llama.cpp's). */
#define STRATA_PRETOK_IGNORE_MERGES 1u /* a word that is a token is taken whole */
#define STRATA_PRETOK_ADD_BOS 2u       /* add_bos defaults to true */

struct strata_pretok;

/*
 * Compile the regex list of the tokenizer.ggml.pre value name[0..len) (NULL:
 * the key is missing, llama.cpp's "default").  Returns 0 and *out (free with
 * strata_pretok_free), -ENOTSUP for an unknown name (not logged: the caller
 * knows the file), -ENOMEM, or -EINVAL if PCRE2 rejects a built-in regex
 * (logged; a bug).
 */
int strata_pretok_open(const char *name, size_t len, struct strata_pretok **out);
void strata_pretok_free(struct strata_pretok *p);
/* STRATA_PRETOK_* flags of the type. */
unsigned strata_pretok_flags(const struct strata_pretok *p);
/* The canonical name of the type ("gpt-2", "llama3", ...). */
const char *strata_pretok_name(const struct strata_pretok *p);

/*
 * Split text[0..len) (len < 4 GiB) into words, appended to out (out->n reset
 * first): each regex of the list splits every piece left by the one before
 * into its matches and the text between them, llama.cpp's
 * unicode_regex_split.  Invalid UTF-8 is never matched, so it stays in the
 * pieces between matches.  Returns the number of words or -errno (-ENOMEM,
 * -E2BIG when PCRE2 hits a match limit, logged).
 */
int strata_pretok_split(const struct strata_pretok *p, const char *text, size_t len,
			struct strata_tok_spans *out);

/*
 * The code point at text[*i] (*i < n) as llama.cpp decodes UTF-8 (utf8.c: a
 * lead byte with its continuation bytes gives its value, overlong or not;
 * anything else is U+FFFD, one byte), and *i moved past it.
 */
uint32_t strata_tok_utf8_next(const char *text, size_t n, size_t *i);

/*
 * text[0..len) decoded that way and encoded again (shortest forms, U+FFFD for
 * what did not decode and for values past U+10FFFF): what llama.cpp's
 * byte-level BPE tokenizes.  *out is text itself when nothing changes, else
 * a malloc'd copy also in *copy (free it; NULL otherwise).  0 or -ENOMEM.
 */
int strata_tok_utf8_llama(const char *text, size_t len, const char **out, size_t *out_len,
			  char **copy);

/*
 * Fill everything but the model state from g's tokenizer.* keys (t->model
 * already chosen).  Logs one error naming the file on failure.
 */
int strata_tok_vocab_load(struct strata_tokenizer *t, const struct strata_gguf *g);

#endif
