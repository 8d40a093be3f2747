/*
 * spm.c - the SentencePiece (tokenizer.ggml.model = "llama") back end.
 *
 * The algorithm is llama.cpp's llm_tokenizer_spm, which reproduces
 * SentencePiece's BPE mode: spaces become U+2581 ("▁"), a fragment that
 * starts the text or follows a special token gets a leading "▁" when the vocab
 * adds a space prefix, the text is split into UTF-8 characters, and the
 * adjacent pair whose concatenation is the best-scoring vocabulary token is
 * merged until no pair is a token (ties go to the leftmost pair).  A symbol
 * left over that is not a token is written as byte tokens <0xNN> (byte
 * fallback), or as the unknown token when the vocab has no byte tokens.
 */
#include "tok/tok_impl.h"

#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char SPACE_MARK[] = "\xE2\x96\x81"; /* U+2581 */
#define SPACE_MARK_LEN 3

/*
 * Merges are local, so text can be cut where no merge can ever cross: between
 * two characters whose concatenation occurs in no vocabulary token.  Each
 * piece then gets its own small queue instead of one queue over the whole
 * text, with the same result.  `pairs` is a one-hash Bloom filter of the
 * adjacent character pairs of all tokens: a false positive only means a cut
 * not taken.
 */
struct spm_state {
	int32_t byte_tok[256]; /* -1: no byte token for that byte */
	uint64_t *pairs;
	uint64_t pair_mask;    /* bit count - 1 */
};

struct sym {
	int32_t prev, next;
	uint32_t off, n; /* bytes of the escaped text; n = 0 once merged away */
};

struct bigram {
	float score;
	int32_t left, right;
	uint32_t size;
};

/* The pair to merge first: best score, then leftmost. */
static int before(const struct bigram *a, const struct bigram *b)
{
	return a->score > b->score || (a->score == b->score && a->left < b->left);
}

struct heap {
	struct bigram *v;
	size_t n;
};

static void heap_push(struct heap *h, struct bigram b)
{
	size_t i = h->n++;

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!before(&b, &h->v[p]))
			break;
		h->v[i] = h->v[p];
		i = p;
	}
	h->v[i] = b;
}

static struct bigram heap_pop(struct heap *h)
{
	struct bigram top = h->v[0], last = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!before(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
	return top;
}

/* Queue the pair (left, right) if their concatenation is a token. */
static void try_pair(const struct strata_tokenizer *t, const char *text, const struct sym *s,
		     struct heap *h, int32_t left, int32_t right)
{
	uint32_t size;
	int32_t id;

	if (left < 0 || right < 0)
		return;
	size = s[left].n + s[right].n;
	id = strata_tok_lookup(t, text + s[left].off, size);
	if (id < 0)
		return;
	heap_push(h, (struct bigram){ t->score[id], left, right, size });
}

/* Escape spaces and add the prefix mark; *n gets the length. */
static char *escape(const char *text, size_t len, int prefix, size_t *n)
{
	size_t spaces = 0, k = 0;
	char *buf;

	for (size_t i = 0; i < len; i++)
		spaces += text[i] == ' ';
	buf = malloc(len + 2 * spaces + SPACE_MARK_LEN + 1);
	if (!buf)
		return NULL;
	if (prefix) {
		memcpy(buf, SPACE_MARK, SPACE_MARK_LEN);
		k = SPACE_MARK_LEN;
	}
	for (size_t i = 0; i < len; i++) {
		if (text[i] == ' ') {
			memcpy(buf + k, SPACE_MARK, SPACE_MARK_LEN);
			k += SPACE_MARK_LEN;
		} else {
			buf[k++] = text[i];
		}
	}
	*n = k;
	return buf;
}

/* Bytes in the UTF-8 sequence led by c (1 for a stray continuation byte). */
static uint32_t utf8_len(unsigned char c)
{
	static const uint8_t by_high_nibble[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };

	return by_high_nibble[c >> 4];
}

static uint64_t pair_hash(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h ^ (h >> 31);
}

static int pair_may_merge(const struct spm_state *st, const char *s, size_t n)
{
	uint64_t b = pair_hash(s, n) & st->pair_mask;

	return (st->pairs[b >> 6] >> (b & 63)) & 1;
}

static int emit_bytes(const struct strata_tokenizer *t, const char *s, uint32_t n,
		      struct strata_tok_ids *out)
{
	const struct spm_state *st = t->model_state;
	int rc = strata_tok_ids_reserve(out, n);

	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < n; i++) {
		int32_t id = st->byte_tok[(unsigned char)s[i]];

		if (id < 0)
			id = t->unk;
		if (id < 0) {
			strata_error("%s: byte 0x%02X has no byte token and the vocab has no "
				     "unknown token", t->path, (unsigned char)s[i]);
			return -EILSEQ;
		}
		out->v[out->n++] = id;
	}
	return 0;
}

/* Merge the symbols [a, b) among themselves (they form one linked run). */
static void merge_run(const struct strata_tokenizer *t, const char *text, struct sym *s,
		      struct heap *h, int32_t a, int32_t b)
{
	for (int32_t i = a + 1; i < b; i++)
		try_pair(t, text, s, h, i - 1, i);
	while (h->n) {
		struct bigram g = heap_pop(h);
		struct sym *l = &s[g.left], *r = &s[g.right];

		/* Stale: one side was merged since this pair was queued. */
		if (l->n == 0 || r->n == 0 || l->n + r->n != g.size)
			continue;
		l->n += r->n;
		r->n = 0;
		l->next = r->next;
		if (r->next >= 0)
			s[r->next].prev = g.left;
		try_pair(t, text, s, h, l->prev, g.left);
		try_pair(t, text, s, h, g.left, l->next);
	}
}

static int merge_and_emit(const struct strata_tokenizer *t, const char *text, size_t len,
			  struct sym *s, struct heap *h, struct strata_tok_ids *out)
{
	const struct spm_state *st = t->model_state;
	int32_t n = 0, a = 0;
	int rc = 0;

	/* Split into characters, cutting the chain where no merge can cross. */
	for (size_t off = 0; off < len; n++) {
		uint32_t cl = utf8_len((unsigned char)text[off]);

		if (cl > len - off)
			cl = (uint32_t)(len - off);
		s[n] = (struct sym){ n - 1, n + 1, (uint32_t)off, cl };
		if (n > a && !pair_may_merge(st, text + s[n - 1].off, s[n - 1].n + cl)) {
			s[n - 1].next = -1;
			s[n].prev = -1;
		}
		off += cl;
	}
	if (n)
		s[n - 1].next = -1;
	for (int32_t i = 1; i <= n; i++) {
		if (i == n || s[i].prev < 0) {
			merge_run(t, text, s, h, a, i);
			a = i;
		}
	}
	/* Runs start at symbols whose prev is -1; merging never removes a run's first. */
	for (int32_t r = 0; r < n && rc == 0; r++) {
		if (s[r].prev >= 0 || s[r].n == 0)
			continue;
		for (int32_t i = r; i >= 0 && rc == 0; i = s[i].next) {
			int32_t id = strata_tok_lookup(t, text + s[i].off, s[i].n);

			/* Merged symbols are tokens by construction; only single characters miss. */
			rc = id >= 0 ? strata_tok_ids_push(out, id)
				     : emit_bytes(t, text + s[i].off, s[i].n, out);
		}
	}
	return rc;
}

static int spm_encode(const struct strata_tokenizer *t, const char *text, size_t len,
		      int after_special, struct strata_tok_ids *out)
{
	size_t n;
	char *esc;
	struct sym *s = NULL;
	struct heap h = { NULL, 0 };
	int rc = -ENOMEM;

	if (len > (size_t)INT32_MAX / 8)
		return -EOVERFLOW;
	esc = escape(text, len, t->add_space_prefix && after_special, &n);
	if (!esc)
		return -ENOMEM;
	/* n symbols at most; each merge queues at most two pairs. */
	s = malloc((n + 1) * sizeof(*s));
	h.v = malloc((3 * n + 1) * sizeof(*h.v));
	if (s && h.v)
		rc = merge_and_emit(t, esc, n, s, &h, out);
	free(h.v);
	free(s);
	free(esc);
	return rc;
}

/* "<0xNN>" -> NN, else -1. */
static int byte_of_text(const char *s, uint32_t n)
{
	int v = 0;

	if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
		return -1;
	for (int i = 3; i < 5; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else
			return -1;
	}
	return v;
}

static void copy_out(char *buf, size_t cap, size_t *k, const char *s, size_t n)
{
	if (*k < cap)
		memcpy(buf + *k, s, n < cap - *k ? n : cap - *k);
	*k += n;
}

static int spm_piece(const struct strata_tokenizer *t, int32_t id, unsigned attr, char *buf,
		     size_t cap)
{
	const char *s = strata_tok_text(t, id);
	uint32_t n = t->len[id];
	size_t k = 0;

	if (attr & STRATA_TOKEN_ATTR_BYTE) {
		int b = byte_of_text(s, n);

		if (b >= 0) {
			char c = (char)b;

			copy_out(buf, cap, &k, &c, 1);
			return 1;
		}
	}
	for (uint32_t i = 0; i < n;) {
		if (n - i >= SPACE_MARK_LEN && memcmp(s + i, SPACE_MARK, SPACE_MARK_LEN) == 0) {
			copy_out(buf, cap, &k, " ", 1);
			i += SPACE_MARK_LEN;
		} else {
			copy_out(buf, cap, &k, s + i, 1);
			i++;
		}
	}
	return k > INT_MAX ? -EOVERFLOW : (int)k;
}

static int spm_defaults(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	(void)g;
	t->bos = 1;
	t->eos = 2;
	t->unk = 0;
	t->add_bos = 1;
	t->add_eos = 0;
	t->add_space_prefix = 1;
	return 0;
}

static int build_pairs(const struct strata_tokenizer *t, struct spm_state *st)
{
	uint64_t chars = 0, bits = 1u << 16;

	for (int32_t id = 0; id < t->n_vocab; id++)
		chars += t->len[id];
	/* ~16 bits per pair keeps false positives near 6%; at most 16 MiB. */
	while (bits < chars * 16 && bits < (1ull << 27))
		bits *= 2;
	st->pairs = calloc(bits / 64, sizeof(uint64_t));
	if (!st->pairs)
		return -ENOMEM;
	st->pair_mask = bits - 1;
	for (int32_t id = 0; id < t->n_vocab; id++) {
		const char *s = strata_tok_text(t, id);
		uint32_t n = t->len[id], prev = 0, prev_len = 0;

		for (uint32_t off = 0; off < n;) {
			uint32_t cl = utf8_len((unsigned char)s[off]);

			if (cl > n - off)
				cl = n - off;
			if (prev_len) {
				uint64_t b = pair_hash(s + prev, prev_len + cl) & st->pair_mask;

				st->pairs[b >> 6] |= 1ull << (b & 63);
			}
			prev = off;
			prev_len = cl;
			off += cl;
		}
	}
	return 0;
}

/* Byte fallback: "<0xNN>" first, then the one-byte text itself (as llama.cpp). */
static int spm_init(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	struct spm_state *st = calloc(1, sizeof(*st));
	static const char hex[] = "0123456789ABCDEF";

	(void)g;
	if (!st)
		return -ENOMEM;
	t->model_state = st;
	for (int b = 0; b < 256; b++) {
		char name[7] = { '<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0 };
		char one = (char)b;
		int32_t id = strata_tok_lookup(t, name, 6);

		st->byte_tok[b] = id >= 0 ? id : strata_tok_lookup(t, &one, 1);
	}
	return build_pairs(t, st);
}

static void spm_fini(struct strata_tokenizer *t)
{
	struct spm_state *st = t->model_state;

	if (st)
		free(st->pairs);
	free(st);
	t->model_state = NULL;
}

const struct strata_tok_model strata_tok_model_spm = {
	.name = "llama",
	.defaults = spm_defaults,
	.init = spm_init,
	.fini = spm_fini,
	.encode = spm_encode,
	.piece = spm_piece,
};
