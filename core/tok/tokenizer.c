/*
 * tokenizer.c - the tokenizer's front end: pick the back end named by
 * tokenizer.ggml.model, split text at special tokens, add BOS/EOS, and turn
 * ids back into text.
 *
 * The special-token split is llama.cpp's tokenizer_st_partition: special
 * tokens are taken longest first; each one splits every plain fragment at its
 * leftmost non-overlapping occurrences, so a longer token always wins over a
 * shorter one it contains.  Control and unknown tokens take part only with
 * STRATA_TOK_PARSE_SPECIAL; user-defined ones always do.
 */
#include "tok/tok_impl.h"

#include "gguf/gguf.h"
#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const struct strata_tok_model *const models[] = {
	&strata_tok_model_spm,
	&strata_tok_model_bpe,
	&strata_tok_model_wpm,
};

/* ---- load / free ----------------------------------------------------------- */

static int pick_model(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	struct strata_str s;
	int rc = strata_gguf_get_str(g, "tokenizer.ggml.model", &s);

	if (rc == -ENOENT) {
		strata_error("%s: no tokenizer in this file (tokenizer.ggml.model is missing)",
			     t->path);
		return -ENOENT;
	}
	if (rc < 0) {
		strata_error("%s: tokenizer.ggml.model is not a string", t->path);
		return -EINVAL;
	}
	t->model_name = strndup(s.s, s.len);
	if (!t->model_name)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
		if (strata_str_eq(s, models[i]->name)) {
			t->model = models[i];
			return 0;
		}
	}
	strata_error("%s: tokenizer model '%s' is not supported (supported: llama, gpt2, bert)",
		     t->path, t->model_name);
	return -ENOTSUP;
}

int strata_tokenizer_load(const struct strata_gguf *g, struct strata_tokenizer **out)
{
	struct strata_tokenizer *t = calloc(1, sizeof(*t));
	int rc = -ENOMEM;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->path = strdup(strata_gguf_path(g) ? strata_gguf_path(g) : "(gguf)");
	if (t->path)
		rc = pick_model(t, g);
	if (rc == 0)
		rc = strata_tok_vocab_load(t, g);
	if (rc == 0 && t->model->init)
		rc = t->model->init(t, g);
	if (rc < 0) {
		if (rc == -ENOMEM)
			strata_error("%s: out of memory loading the tokenizer",
				     t->path ? t->path : "(gguf)");
		strata_tokenizer_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void strata_tokenizer_free(struct strata_tokenizer *t)
{
	if (!t)
		return;
	if (t->model && t->model->fini)
		t->model->fini(t);
	free(t->special);
	free(t->slot);
	free(t->eog);
	free(t->attr);
	free(t->score);
	free(t->len);
	free(t->off);
	free(t->pool);
	free(t->model_name);
	free(t->path);
	free(t);
}

/* ---- accessors ------------------------------------------------------------- */

int32_t strata_tokenizer_n_vocab(const struct strata_tokenizer *t) { return t->n_vocab; }
int32_t strata_tokenizer_bos(const struct strata_tokenizer *t) { return t->bos; }
int32_t strata_tokenizer_eos(const struct strata_tokenizer *t) { return t->eos; }
int32_t strata_tokenizer_eot(const struct strata_tokenizer *t) { return t->eot; }
const char *strata_tokenizer_model(const struct strata_tokenizer *t) { return t->model_name; }

int strata_tokenizer_is_eog(const struct strata_tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab && t->eog[id];
}

unsigned strata_token_attr(const struct strata_tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? t->attr[id] : 0;
}

int32_t strata_tokenizer_find(const struct strata_tokenizer *t, const char *text, size_t len)
{
	return strata_tok_lookup(t, text, len);
}

const char *strata_token_text(const struct strata_tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->n_vocab ? strata_tok_text(t, id) : NULL;
}

/* ---- special-token partition ----------------------------------------------- */

struct frag {
	int32_t id; /* -1: plain text */
	size_t off, len;
};

struct frags {
	struct frag *v;
	size_t n, cap;
};

static int frag_push(struct frags *f, int32_t id, size_t off, size_t len)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct frag *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n++] = (struct frag){ id, off, len };
	return 0;
}

/* Byte and byte-pair presence in the text: a cheap exact filter. */
struct presence {
	uint64_t byte[4];
	uint64_t pair[65536 / 64];
};

static void presence_build(struct presence *p, const unsigned char *s, size_t n)
{
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < n; i++) {
		p->byte[s[i] >> 6] |= 1ull << (s[i] & 63);
		if (i + 1 < n) {
			unsigned k = (unsigned)s[i] << 8 | s[i + 1];

			p->pair[k >> 6] |= 1ull << (k & 63);
		}
	}
}

static int may_occur(const struct presence *p, const unsigned char *s, size_t n)
{
	if (n == 1)
		return (p->byte[s[0] >> 6] >> (s[0] & 63)) & 1;
	for (size_t i = 0; i + 1 < n; i++) {
		unsigned k = (unsigned)s[i] << 8 | s[i + 1];

		if (!((p->pair[k >> 6] >> (k & 63)) & 1))
			return 0;
	}
	return 1;
}

static const char *find(const char *hay, size_t n, const char *needle, size_t m)
{
	const char *end = hay + n;

	while ((size_t)(end - hay) >= m) {
		const char *c = memchr(hay, needle[0], (size_t)(end - hay) - m + 1);

		if (!c)
			return NULL;
		if (memcmp(c, needle, m) == 0)
			return c;
		hay = c + 1;
	}
	return NULL;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Split one plain fragment at every occurrence of token id into `to`. */
static int split_frag(const struct strata_tokenizer *t, const char *text, struct frag f,
		      int32_t id, struct frags *to)
{
	const char *tok = strata_tok_text(t, id);
	size_t tl = t->len[id];
	unsigned attr = t->attr[id];
	int rc = 0;

	while (rc == 0 && f.len) {
		const char *m = find(text + f.off, f.len, tok, tl);
		size_t at, left, right_off;

		if (!m)
			break;
		at = (size_t)(m - text);
		left = at - f.off;
		if (attr & STRATA_TOKEN_ATTR_LSTRIP)
			while (left && is_space(text[f.off + left - 1]))
				left--;
		if (left)
			rc = frag_push(to, -1, f.off, left);
		if (rc == 0)
			rc = frag_push(to, id, at, tl);
		right_off = at + tl;
		f.len -= right_off - f.off;
		f.off = right_off;
		if (attr & STRATA_TOKEN_ATTR_RSTRIP)
			while (f.len && is_space(text[f.off])) {
				f.off++;
				f.len--;
			}
	}
	if (rc == 0 && f.len)
		rc = frag_push(to, -1, f.off, f.len);
	return rc;
}

static int partition(const struct strata_tokenizer *t, const char *text, size_t len,
		     unsigned flags, struct frags *f)
{
	const unsigned skip = (flags & STRATA_TOK_PARSE_SPECIAL)
				      ? 0
				      : STRATA_TOKEN_ATTR_CONTROL | STRATA_TOKEN_ATTR_UNKNOWN;
	struct presence *p = malloc(sizeof(*p));
	struct frags next = { NULL, 0, 0 };
	int rc = frag_push(f, -1, 0, len);

	if (!p)
		return -ENOMEM;
	presence_build(p, (const unsigned char *)text, len);
	for (int32_t i = 0; i < t->n_special && rc == 0; i++) {
		int32_t id = t->special[i];

		if ((t->attr[id] & skip) || t->len[id] > len ||
		    !may_occur(p, (const unsigned char *)strata_tok_text(t, id), t->len[id]))
			continue;
		next.n = 0;
		for (size_t k = 0; k < f->n && rc == 0; k++)
			rc = f->v[k].id >= 0 ? frag_push(&next, f->v[k].id, f->v[k].off, f->v[k].len)
					     : split_frag(t, text, f->v[k], id, &next);
		if (rc == 0) {
			struct frags tmp = *f;

			*f = next;
			next = tmp;
		}
	}
	free(next.v);
	free(p);
	return rc;
}

/* ---- tokenize ---------------------------------------------------------------- */

int strata_tokenize(const struct strata_tokenizer *t, const char *text, size_t len,
		    unsigned flags, int32_t **ids)
{
	struct strata_tok_ids out = { NULL, 0, 0 };
	struct frags f = { NULL, 0, 0 };
	int after_special = 1; /* the first fragment counts as following one */
	int rc = 0;

	*ids = NULL;
	if ((flags & STRATA_TOK_ADD_BOS) && t->add_bos && t->bos >= 0)
		rc = strata_tok_ids_push(&out, t->bos);
	if (rc == 0 && len)
		rc = partition(t, text, len, flags, &f);
	for (size_t i = 0; i < f.n && rc == 0; i++) {
		if (f.v[i].id >= 0) {
			rc = strata_tok_ids_push(&out, f.v[i].id);
			after_special = 1;
		} else {
			rc = t->model->encode(t, text + f.v[i].off, f.v[i].len, after_special, &out);
			after_special = 0;
		}
	}
	if (rc == 0 && (flags & STRATA_TOK_ADD_BOS) && t->add_eos && t->eos >= 0)
		rc = strata_tok_ids_push(&out, t->eos);
	if (rc == 0 && (flags & STRATA_TOK_ADD_BOS) && t->add_sep && t->sep >= 0)
		rc = strata_tok_ids_push(&out, t->sep);
	free(f.v);
	if (rc == 0 && out.n > INT_MAX)
		rc = -EOVERFLOW;
	if (rc < 0 || out.n == 0) {
		free(out.v);
		return rc;
	}
	*ids = out.v;
	return (int)out.n;
}

/* ---- detokenize -------------------------------------------------------------- */

static int piece(const struct strata_tokenizer *t, int32_t id, int special, char *buf,
		 size_t cap)
{
	unsigned attr;

	if (id < 0 || id >= t->n_vocab)
		return -EINVAL;
	attr = t->attr[id];
	if (!special && (attr & STRATA_TOKEN_ATTR_CONTROL))
		return 0;
	if (attr & (STRATA_TOKEN_ATTR_UNKNOWN | STRATA_TOKEN_ATTR_CONTROL |
		    STRATA_TOKEN_ATTR_USER_DEFINED)) {
		if (cap)
			memcpy(buf, strata_tok_text(t, id), t->len[id] < cap ? t->len[id] : cap);
		return (int)t->len[id];
	}
	if (attr & (STRATA_TOKEN_ATTR_NORMAL | STRATA_TOKEN_ATTR_BYTE))
		return t->model->piece(t, id, attr, buf, cap);
	return 0; /* unused and undefined tokens render as nothing */
}

int strata_token_to_piece(const struct strata_tokenizer *t, int32_t id, char *buf, size_t cap)
{
	return piece(t, id, 0, buf, cap);
}

int strata_detokenize(const struct strata_tokenizer *t, const int32_t *ids, size_t n,
		      unsigned flags, char *buf, size_t cap)
{
	const int special = (flags & STRATA_DETOK_UNPARSE_SPECIAL) != 0;
	int remove_space = t->add_space_prefix;
	char small[256], *p = small;
	size_t pcap = sizeof(small), k = 0;
	int rc = 0;

	if ((flags & STRATA_DETOK_REMOVE_SPECIAL) && t->add_bos && n && ids[0] == t->bos) {
		remove_space = 0;
		ids++;
		n--;
	}
	if ((flags & STRATA_DETOK_REMOVE_SPECIAL) && t->add_eos && n && ids[n - 1] == t->eos)
		n--;
	for (size_t i = 0; i < n && rc >= 0; i++) {
		size_t skip = 0;

		rc = piece(t, ids[i], special, p, pcap);
		if (rc >= 0 && (size_t)rc > pcap) {
			char *big = malloc((size_t)rc);

			if (!big) {
				rc = -ENOMEM;
				break;
			}
			if (p != small)
				free(p);
			p = big;
			pcap = (size_t)rc;
			rc = piece(t, ids[i], special, p, pcap);
		}
		if (rc < 0)
			break;
		if (remove_space && rc > 0 && p[0] == ' ')
			skip = 1;
		remove_space = 0;
		if (k < cap && (size_t)rc > skip)
			memcpy(buf + k, p + skip,
			       (size_t)rc - skip < cap - k ? (size_t)rc - skip : cap - k);
		k += (size_t)rc - skip;
		if (k > INT_MAX)
			rc = -EOVERFLOW;
	}
	if (p != small)
		free(p);
	return rc < 0 ? rc : (int)k;
}
