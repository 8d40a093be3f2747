/*
 * tok_impl.h - the tokenizer's layout, shared by the vocabulary loader
 * (tok_vocab.c), the generic front end (tokenizer.c) and the per-model
 * back ends (spm.c; later bpe.c, wpm.c).  Not a public header.
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
	/* Model defaults, applied before the file's keys are read. */
	void (*defaults)(struct strata_tokenizer *t);
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
	int add_bos, add_eos, add_space_prefix;

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

/*
 * Fill everything but the model state from g's tokenizer.* keys (t->model
 * already chosen).  Logs one error naming the file on failure.
 */
int strata_tok_vocab_load(struct strata_tokenizer *t, const struct strata_gguf *g);

#endif
