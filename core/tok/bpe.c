/*
 * bpe.c - the byte-level BPE (tokenizer.ggml.model = "gpt2") back end.
 *
 * As GPT-2 and llama.cpp's llm_tokenizer_bpe: the fragment is read as
 * llama.cpp reads UTF-8 (utf8.c: bytes that decode to nothing become U+FFFD,
 * overlong forms their shortest form), the pre-tokenizer named by
 * tokenizer.ggml.pre (pretok.c) cuts it into words; each byte of a
 * word stands for one character of GPT-2's bytes-to-unicode alphabet (the
 * printable Latin-1 bytes for themselves, the others for U+0100 onwards), and
 * the adjacent pair with the lowest merge rank (tokenizer.ggml.merges order)
 * is merged until no pair has a rank, ties going to the leftmost pair.
 *
 * The merges work on token ids: "A B" is kept as (id(A), id(B)) -> (rank,
 * id(AB)) in an open-addressing table, and every merge must name vocabulary
 * tokens (Hugging Face refuses others too).  Short words merge in place in
 * arrays; long ones through a heap, so a huge word stays O(n log n).
 *
 * A byte whose character is not in the vocabulary becomes the unknown token,
 * or is dropped when there is none (llama.cpp and Hugging Face do the same).
 * Detokenising maps each character of a token's text back to its byte.
 * Hugging Face's clean_up_tokenization_spaces is not applied: valid UTF-8
 * comes back byte for byte.
 */
#include "tok/tok_impl.h"

#include "gguf/gguf.h"
#include "util/log.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAGMENT (256u << 20)
#define SMALL_WORD 64 /* words up to this many bytes merge in arrays */
#define NO_RANK INT32_MAX

struct merge_slot {
	uint64_t key;  /* left id << 32 | right id */
	int32_t rank;  /* -1: empty slot */
	int32_t id;    /* the merged token */
};

struct bpe_state {
	struct strata_pretok *pre;
	unsigned flags;
	uint16_t byte_cp[256];  /* GPT-2's bytes_to_unicode */
	int16_t cp_byte[0x144]; /* its inverse; -1 for code points it never produces */
	int32_t byte_tok[256];  /* token of each byte's character, -1 if none */
	struct merge_slot *slot;
	uint64_t mask;
	int32_t n_merges;
};

/* ---- the byte alphabet --------------------------------------------------- */

static void build_byte_map(struct bpe_state *st)
{
	int n = 0;

	memset(st->cp_byte, 0xff, sizeof(st->cp_byte));
	for (int b = 0; b < 256; b++) {
		int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;

		st->byte_cp[b] = (uint16_t)(printable ? b : 256 + n++);
		st->cp_byte[st->byte_cp[b]] = (int16_t)b;
	}
}

/* UTF-8 of a code point below 0x800 (all this alphabet needs); returns the length. */
static int put_cp(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	o[0] = (char)(0xC0 | cp >> 6);
	o[1] = (char)(0x80 | (cp & 63));
	return 2;
}

/* ---- merge table --------------------------------------------------------- */

static uint64_t key_hash(uint64_t k)
{
	k ^= k >> 29;
	k *= 0xbf58476d1ce4e5b9ull;
	return k ^ (k >> 32);
}

static inline const struct merge_slot *pair_find(const struct bpe_state *st, int32_t a,
						 int32_t b)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;

	if (a < 0 || b < 0)
		return NULL;
	for (uint64_t i = key_hash(key) & st->mask;; i = (i + 1) & st->mask) {
		const struct merge_slot *s = &st->slot[i];

		if (s->rank < 0)
			return NULL;
		if (s->key == key)
			return s;
	}
}

/* The first listing of a pair wins, as in llama.cpp's bpe_ranks.emplace. */
static void pair_insert(struct bpe_state *st, int32_t a, int32_t b, int32_t rank, int32_t id)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;

	for (uint64_t i = key_hash(key) & st->mask;; i = (i + 1) & st->mask) {
		struct merge_slot *s = &st->slot[i];

		if (s->rank < 0) {
			*s = (struct merge_slot){ key, rank, id };
			return;
		}
		if (s->key == key)
			return;
	}
}

/* Split merge i, "A B", into its two tokens; 0, -EINVAL (logged) or -ENOMEM. */
static int parse_merge(const struct strata_tokenizer *t, struct strata_str m, uint64_t i,
		       char **buf, size_t *cap, int32_t ids[3])
{
	const char *sp = m.len > 1 ? memchr(m.s + 1, ' ', m.len - 1) : NULL;
	size_t a = sp ? (size_t)(sp - m.s) : 0, b = sp ? m.len - a - 1 : 0;
	const char *what = NULL;

	if (!sp || b == 0 || memchr(sp + 1, ' ', b)) {
		strata_error("%s: tokenizer.ggml.merges[%" PRIu64 "] '%.*s' is malformed "
			     "(want two tokens separated by one space)", t->path, i, (int)m.len, m.s);
		return -EINVAL;
	}
	if (a + b > *cap) {
		char *nb = realloc(*buf, 2 * (a + b));

		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = 2 * (a + b);
	}
	memcpy(*buf, m.s, a);
	memcpy(*buf + a, sp + 1, b);
	ids[0] = strata_tok_lookup(t, m.s, a);
	ids[1] = strata_tok_lookup(t, sp + 1, b);
	ids[2] = strata_tok_lookup(t, *buf, a + b);
	if (ids[0] < 0)
		what = "its left token";
	else if (ids[1] < 0)
		what = "its right token";
	else if (ids[2] < 0)
		what = "the merged token";
	if (what) {
		strata_error("%s: tokenizer.ggml.merges[%" PRIu64 "] '%.*s': %s is not in the "
			     "vocabulary", t->path, i, (int)m.len, m.s, what);
		return -EINVAL;
	}
	return 0;
}

static int load_merges(const struct strata_tokenizer *t, const struct strata_gguf *g,
		       struct bpe_state *st)
{
	const char *key = "tokenizer.ggml.merges";
	int64_t kv = strata_gguf_find_key(g, key);
	enum strata_gguf_vtype et;
	uint64_t n, cap = 16;
	size_t bcap = 0;
	char *buf = NULL;
	int rc = 0;

	if (kv < 0 || strata_gguf_kv_arr(g, kv, &et, &n, NULL) < 0 || et != STRATA_GGUF_STRING) {
		strata_error("%s: %s", t->path, kv < 0 ? "byte-level BPE vocab without "
							 "tokenizer.ggml.merges"
						       : "tokenizer.ggml.merges is not a string array");
		return -EINVAL;
	}
	if (n > INT32_MAX / 4) {
		strata_error("%s: tokenizer.ggml.merges has %" PRIu64 " entries", t->path, n);
		return -EINVAL;
	}
	while (cap < 2 * n)
		cap *= 2;
	st->slot = malloc(cap * sizeof(*st->slot));
	if (!st->slot)
		return -ENOMEM;
	for (uint64_t i = 0; i < cap; i++)
		st->slot[i].rank = -1;
	st->mask = cap - 1;
	st->n_merges = (int32_t)n;
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		int32_t ids[3];

		rc = parse_merge(t, strata_gguf_arr_str(g, kv, i), i, &buf, &bcap, ids);
		if (rc == 0)
			pair_insert(st, ids[0], ids[1], (int32_t)i, ids[2]);
	}
	free(buf);
	return rc;
}

/* ---- merging a word -------------------------------------------------------- */

struct scratch {
	int32_t *ids, *rank, *res; /* small words: pair i is (ids[i], ids[i + 1]) */
	struct hsym *sym;           /* long words */
	struct hent *heap;
	char *enc;                  /* a word in the byte alphabet (ignore_merges) */
	size_t cap;                 /* bytes of word each array is sized for */
};

struct hsym {
	int32_t id, prev, next; /* id -1: no token; INT32_MIN: merged away */
};

struct hent {
	int32_t rank, pos, left, right; /* pair at sym[pos] and its successor, by id */
};

static void set_pair(const struct bpe_state *st, struct scratch *w, int32_t i)
{
	const struct merge_slot *m = pair_find(st, w->ids[i], w->ids[i + 1]);

	w->rank[i] = m ? m->rank : NO_RANK;
	w->res[i] = m ? m->id : -1;
}

/* Merge in place; returns the symbol count left in w->ids. */
static int32_t merge_small(const struct bpe_state *st, struct scratch *w, int32_t n)
{
	for (int32_t i = 0; i + 1 < n; i++)
		set_pair(st, w, i);
	while (n > 1) {
		int32_t best = 0;

		for (int32_t i = 1; i + 1 < n; i++)
			if (w->rank[i] < w->rank[best])
				best = i;
		if (w->rank[best] == NO_RANK)
			break;
		w->ids[best] = w->res[best];
		memmove(w->ids + best + 1, w->ids + best + 2, (size_t)(n - best - 2) * sizeof(int32_t));
		memmove(w->rank + best, w->rank + best + 1, (size_t)(n - best - 2) * sizeof(int32_t));
		memmove(w->res + best, w->res + best + 1, (size_t)(n - best - 2) * sizeof(int32_t));
		n--;
		if (best > 0)
			set_pair(st, w, best - 1);
		if (best + 1 < n)
			set_pair(st, w, best);
	}
	return n;
}

static int hent_before(const struct hent *a, const struct hent *b)
{
	return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(struct hent *h, size_t *n, struct hent e)
{
	size_t i = (*n)++;

	while (i > 0 && hent_before(&e, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static struct hent heap_pop(struct hent *h, size_t *n)
{
	struct hent top = h[0], last = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && hent_before(&h[c + 1], &h[c]))
			c++;
		if (!hent_before(&h[c], &last))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
	return top;
}

static void queue_pair(const struct bpe_state *st, struct scratch *w, size_t *hn, int32_t l)
{
	const struct merge_slot *m;
	int32_t r = l >= 0 ? w->sym[l].next : -1;

	if (r < 0)
		return;
	m = pair_find(st, w->sym[l].id, w->sym[r].id);
	if (m)
		heap_push(w->heap, hn, (struct hent){ m->rank, l, w->sym[l].id, w->sym[r].id });
}

/* The same merges through a heap with stale entries skipped; ids rewritten in order. */
static int32_t merge_long(const struct bpe_state *st, struct scratch *w, int32_t n)
{
	size_t hn = 0;
	int32_t k = 0;

	for (int32_t i = 0; i < n; i++)
		w->sym[i] = (struct hsym){ w->ids[i], i - 1, i + 1 < n ? i + 1 : -1 };
	for (int32_t i = 0; i + 1 < n; i++)
		queue_pair(st, w, &hn, i);
	while (hn) {
		struct hent e = heap_pop(w->heap, &hn);
		struct hsym *l = &w->sym[e.pos];
		int32_t r = l->next;

		/* Stale: either side has merged since this pair was queued. */
		if (l->id != e.left || r < 0 || w->sym[r].id != e.right)
			continue;
		l->id = pair_find(st, e.left, e.right)->id;
		l->next = w->sym[r].next;
		if (l->next >= 0)
			w->sym[l->next].prev = e.pos;
		w->sym[r].id = INT32_MIN;
		queue_pair(st, w, &hn, l->prev);
		queue_pair(st, w, &hn, e.pos);
	}
	for (int32_t i = 0; i >= 0; i = w->sym[i].next)
		w->ids[k++] = w->sym[i].id;
	return k;
}

static int scratch_reserve(struct scratch *w, size_t n)
{
	size_t cap = w->cap ? w->cap : SMALL_WORD;
	void *p[6];

	if (n <= w->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	p[0] = realloc(w->ids, cap * sizeof(*w->ids));
	if (p[0])
		w->ids = p[0];
	p[1] = realloc(w->rank, cap * sizeof(*w->rank));
	if (p[1])
		w->rank = p[1];
	p[2] = realloc(w->res, cap * sizeof(*w->res));
	if (p[2])
		w->res = p[2];
	p[3] = realloc(w->sym, cap * sizeof(*w->sym));
	if (p[3])
		w->sym = p[3];
	p[4] = realloc(w->heap, 3 * cap * sizeof(*w->heap)); /* n - 1 pairs + 2 per merge */
	if (p[4])
		w->heap = p[4];
	p[5] = realloc(w->enc, 2 * cap);
	if (p[5])
		w->enc = p[5];
	for (int i = 0; i < 6; i++)
		if (!p[i])
			return -ENOMEM;
	w->cap = cap;
	return 0;
}

static void scratch_free(struct scratch *w)
{
	free(w->ids);
	free(w->rank);
	free(w->res);
	free(w->sym);
	free(w->heap);
	free(w->enc);
}

/*
 * A byte whose character is no token (falcon lacks \x03, \x0B, ...): the
 * unknown token, else nothing, as llama.cpp and Hugging Face drop it.
 */
static int emit_missing(const struct strata_tokenizer *t, unsigned char byte,
			struct strata_tok_ids *out)
{
	if (t->unk >= 0)
		return strata_tok_ids_push(out, t->unk);
	strata_debug("%s: byte 0x%02X has no token and the vocab has no unknown token; dropped",
		     t->path, byte);
	return 0;
}

static int encode_word(const struct strata_tokenizer *t, const struct bpe_state *st,
		       const unsigned char *s, int32_t n, struct scratch *w,
		       struct strata_tok_ids *out)
{
	int rc = scratch_reserve(w, (size_t)n);

	if (rc < 0)
		return rc;
	if (st->flags & STRATA_PRETOK_IGNORE_MERGES) {
		size_t k = 0;
		int32_t id;

		for (int32_t i = 0; i < n; i++)
			k += (size_t)put_cp(w->enc + k, st->byte_cp[s[i]]);
		id = strata_tok_lookup(t, w->enc, k);
		if (id >= 0)
			return strata_tok_ids_push(out, id);
	}
	for (int32_t i = 0; i < n; i++)
		w->ids[i] = st->byte_tok[s[i]];
	n = n <= SMALL_WORD ? merge_small(st, w, n) : merge_long(st, w, n);
	rc = strata_tok_ids_reserve(out, (size_t)n);
	for (int32_t i = 0, b = 0; i < n && rc == 0; i++) {
		if (w->ids[i] >= 0) {
			out->v[out->n++] = w->ids[i];
			continue;
		}
		/* Only single bytes lack a token (merges name tokens), and in order. */
		while (st->byte_tok[s[b]] >= 0)
			b++;
		rc = emit_missing(t, s[b++], out);
	}
	return rc;
}

static int bpe_encode(const struct strata_tokenizer *t, const char *text, size_t len,
		      int after_special, struct strata_tok_ids *out)
{
	const struct bpe_state *st = t->model_state;
	struct strata_tok_spans words = { NULL, 0, 0 };
	struct scratch w = { 0 };
	char *copy;
	int rc;

	(void)after_special;
	if (len > MAX_FRAGMENT)
		return -EOVERFLOW;
	/* Invalid UTF-8 becomes U+FFFD first, as in llama.cpp (utf8.c). */
	rc = strata_tok_utf8_llama(text, len, &text, &len, &copy);
	if (rc == 0 && len > MAX_FRAGMENT)
		rc = -EOVERFLOW;
	if (rc == 0)
		rc = strata_pretok_split(st->pre, text, len, &words);
	for (size_t i = 0; i < words.n && rc >= 0; i++)
		rc = encode_word(t, st, (const unsigned char *)text + words.v[i].off,
				 (int32_t)words.v[i].len, &w, out);
	scratch_free(&w);
	free(words.v);
	free(copy);
	return rc < 0 ? rc : 0;
}

/* ---- pieces ---------------------------------------------------------------- */

static void copy_out(char *buf, size_t cap, size_t *k, const char *s, size_t n)
{
	if (*k < cap)
		memcpy(buf + *k, s, n < cap - *k ? n : cap - *k);
	*k += n;
}

/* Each character of the alphabet back to its byte; anything else as it is. */
static int bpe_piece(const struct strata_tokenizer *t, int32_t id, unsigned attr, char *buf,
		     size_t cap)
{
	const struct bpe_state *st = t->model_state;
	const unsigned char *s = (const unsigned char *)strata_tok_text(t, id);
	uint32_t n = t->len[id];
	size_t k = 0;

	(void)attr;
	for (uint32_t i = 0; i < n;) {
		unsigned cp = s[i];
		uint32_t cl = 1;

		if (cp >= 0xC0 && cp < 0xE0 && i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
			cp = (cp & 0x1F) << 6 | (s[i + 1] & 0x3F);
			cl = 2;
		}
		if (cp < 0x144 && st->cp_byte[cp] >= 0 && (cl == 2 || cp < 0x80)) {
			char c = (char)st->cp_byte[cp];

			copy_out(buf, cap, &k, &c, 1);
		} else {
			copy_out(buf, cap, &k, (const char *)s + i, cl);
		}
		i += cl;
	}
	return k > INT_MAX ? -EOVERFLOW : (int)k;
}

/* ---- load -------------------------------------------------------------------- */

/* llama.cpp's BPE defaults, then the pre-tokenizer the file names. */
static int bpe_defaults(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	struct bpe_state *st;
	struct strata_str pre = { NULL, 0 };
	int rc = strata_gguf_get_str(g, "tokenizer.ggml.pre", &pre);

	t->bos = t->eos = 11;
	t->unk = -1;
	t->add_bos = t->add_eos = t->add_space_prefix = 0;
	if (rc < 0 && rc != -ENOENT) {
		strata_error("%s: tokenizer.ggml.pre is not a string", t->path);
		return -EINVAL;
	}
	if (rc == -ENOENT)
		strata_warn("%s: no tokenizer.ggml.pre; using the 'default' pre-tokenizer, which "
			    "may split text differently from the model's own", t->path);
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	t->model_state = st;
	rc = strata_pretok_open(pre.s, pre.len, &st->pre);
	if (rc == -ENOTSUP)
		strata_error("%s: pre-tokenizer '%.*s' (tokenizer.ggml.pre) is not supported",
			     t->path, (int)pre.len, pre.s);
	if (rc < 0)
		return rc;
	st->flags = strata_pretok_flags(st->pre);
	if (st->flags & STRATA_PRETOK_ADD_BOS)
		t->add_bos = 1;
	return 0;
}

static int bpe_init(struct strata_tokenizer *t, const struct strata_gguf *g)
{
	struct bpe_state *st = t->model_state;

	build_byte_map(st);
	for (int b = 0; b < 256; b++) {
		char u[2];

		st->byte_tok[b] = strata_tok_lookup(t, u, (size_t)put_cp(u, st->byte_cp[b]));
	}
	return load_merges(t, g, st);
}

static void bpe_fini(struct strata_tokenizer *t)
{
	struct bpe_state *st = t->model_state;

	if (st) {
		strata_pretok_free(st->pre);
		free(st->slot);
	}
	free(st);
	t->model_state = NULL;
}

const struct strata_tok_model strata_tok_model_bpe = {
	.name = "gpt2",
	.defaults = bpe_defaults,
	.init = bpe_init,
	.fini = bpe_fini,
	.encode = bpe_encode,
	.piece = bpe_piece,
};
