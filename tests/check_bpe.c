/*
 * check_bpe.c - the byte-level BPE tokenizer ("gpt2") against llama.cpp's
 * vocab test vectors, `strata tokenize --inp`, a naive reference BPE, the
 * pre-tokenizer splits of llama-3 and Qwen2, and synthetic vocabularies for
 * the merge rules, the defaults and the load errors.
 */
#include "testutil.h"

#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "tok/tok_impl.h"
#include "tok/tokenizer.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const bpe_vocabs[] = {
	"gpt-2", "deepseek-coder", "deepseek-llm", "falcon", "mpt", "refact", "starcoder",
};
#define N_BPE_VOCABS (int)(sizeof(bpe_vocabs) / sizeof(bpe_vocabs[0]))

static struct strata_tokenizer *load(const char *rel)
{
	const char *p = tu_shared(rel);
	struct strata_gguf *g = NULL;
	struct strata_tokenizer *t = NULL;

	ck_assert_msg(p != NULL, "missing %s", rel);
	ck_assert_int_eq(strata_gguf_open(p, &g), 0);
	ck_assert_int_eq(strata_tokenizer_load(g, &t), 0);
	strata_gguf_close(g); /* the tokenizer must not need the file any more */
	return t;
}

static struct strata_tokenizer *load_vocab(const char *name)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf", name);
	return load(rel);
}

static int tok(const struct strata_tokenizer *t, const char *s, size_t n, unsigned flags,
	       int32_t **ids)
{
	int r = strata_tokenize(t, s, n, flags, ids);

	ck_assert_msg(r >= 0, "tokenize failed: %d", r);
	return r;
}

static void assert_ids(const int32_t *got, int n, const int32_t *want, int wn, const char *what)
{
	ck_assert_msg(n == wn, "%s: %d ids, expected %d", what, n, wn);
	for (int i = 0; i < n; i++)
		ck_assert_msg(got[i] == want[i], "%s: id %d is %d, expected %d", what, i, got[i],
			      want[i]);
}

static void assert_round_trip(const struct strata_tokenizer *t, const int32_t *ids, int n,
			      const char *text, size_t len)
{
	size_t cap = len * 2 + 16;
	char *buf = malloc(cap);
	int k = strata_detokenize(t, ids, (size_t)n, 0, buf, cap);

	ck_assert_msg(k == (int)len && memcmp(buf, text, len) == 0,
		      "round trip of '%.*s' gave %d bytes '%.*s'", (int)len, text, k,
		      k > 0 ? k : 0, buf);
	free(buf);
}

/* ---- llama.cpp vocab test vectors ------------------------------------------- */

/* Every .inp test gives its .out line exactly, and detokenises back to its text. */
static void check_vocab(const char *name)
{
	struct strata_tokenizer *t = load_vocab(name);
	struct tu_vocab_tests v;
	int n = tu_vocab_tests_read(name, &v);

	ck_assert_msg(n >= 40, "%s: %d tests", name, n);
	ck_assert_str_eq(strata_tokenizer_model(t), "gpt2");
	for (int i = 0; i < n; i++) {
		int32_t *ids;
		int k = tok(t, v.v[i].text, v.v[i].len, 0, &ids);
		char what[64];

		snprintf(what, sizeof(what), "%s test %d", name, i);
		assert_ids(ids, k, v.v[i].ids, v.v[i].n_ids, what);
		assert_round_trip(t, ids, k, v.v[i].text, v.v[i].len);
		free(ids);
	}
	printf("%s: %d tests match\n", name, n);
	tu_vocab_tests_free(&v);
	strata_tokenizer_free(t);
}

START_TEST(vocab_each) { check_vocab(bpe_vocabs[_i]); }
END_TEST

/* The same through `strata tokenize --inp`, byte for byte (stderr included: no noise). */
START_TEST(cli_inp)
{
	static char got[1 << 16];
	char rel[256], gguf[4096], cmd[3 * sizeof(gguf)];

	for (int i = 0; i < N_BPE_VOCABS; i++) {
		size_t olen;
		char *want;
		int rc;

		snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf", bpe_vocabs[i]);
		snprintf(gguf, sizeof(gguf), "%s", tu_shared(rel));
		snprintf(cmd, sizeof(cmd), "'%s' tokenize -m '%s' --inp '%s.inp'", STRATA_BIN, gguf,
			 gguf);
		rc = tu_run(cmd, got, sizeof(got));
		snprintf(cmd, sizeof(cmd), "%s.out", gguf);
		want = tu_read_file(cmd, &olen);
		ck_assert(want != NULL);
		ck_assert_msg(rc == 0, "%s: exit %d: %s", bpe_vocabs[i], rc, got);
		ck_assert_msg(strlen(got) == olen && memcmp(got, want, olen) == 0,
			      "%s: output differs from the .out file:\n%s", bpe_vocabs[i], got);
		free(want);
	}
	/* gpt-2 has no add_bos_token: --bos adds nothing; --special parses its control token. */
	snprintf(gguf, sizeof(gguf), "%s", tu_shared("vocab/ggml-vocab-gpt-2.gguf"));
	snprintf(cmd, sizeof(cmd), "'%s' tokenize -m '%s' -p 'Hello world<|endoftext|>' --bos --special",
		 STRATA_BIN, gguf);
	ck_assert_int_eq(tu_run(cmd, got, sizeof(got)), 0);
	ck_assert_str_eq(got, "15496 995 50256\n");
}
END_TEST

/* ---- a naive reference BPE over strings --------------------------------------- */

struct ranked {
	const char *s; /* "A B", not NUL-terminated */
	size_t n;
	int32_t rank;
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->s, y->s, n);

	return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* GPT-2's bytes_to_unicode, written out from its definition. */
static unsigned byte_cp(unsigned b)
{
	unsigned n = 0;

	if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
		return b;
	for (unsigned c = 0; c < b; c++)
		n += !((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
	return 256 + n;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	o[0] = (char)(0xC0 | cp >> 6);
	o[1] = (char)(0x80 | (cp & 63));
	return 2;
}

static int32_t rank_of(const struct ranked *r, size_t nr, const char *a, size_t an,
		       const char *b, size_t bn)
{
	char key[512];
	struct ranked k = { key, an + bn + 1, 0 }, *hit;

	ck_assert(an + bn + 1 <= sizeof(key));
	memcpy(key, a, an);
	key[an] = ' ';
	memcpy(key + an + 1, b, bn);
	hit = bsearch(&k, r, nr, sizeof(*r), cmp_ranked);
	return hit ? hit->rank : -1;
}

/* Lowest rank, leftmost pair first, on strings; the ids of the final symbols. */
static int ref_bpe(const struct strata_tokenizer *t, const struct ranked *r, size_t nr,
		   const unsigned char *word, size_t len, int32_t *ids)
{
	char enc[2048];
	size_t off[1024], sl[1024], n = 0, k = 0;

	ck_assert(len <= 1024);
	for (size_t i = 0; i < len; i++) {
		off[n] = k;
		sl[n] = put_utf8(enc + k, byte_cp(word[i]));
		k += sl[n++];
	}
	for (;;) {
		int32_t best = -1;
		size_t at = 0;

		for (size_t i = 0; i + 1 < n; i++) {
			int32_t rk = rank_of(r, nr, enc + off[i], sl[i], enc + off[i + 1], sl[i + 1]);

			if (rk >= 0 && (best < 0 || rk < best)) {
				best = rk;
				at = i;
			}
		}
		if (best < 0)
			break;
		sl[at] += sl[at + 1];
		memmove(off + at + 1, off + at + 2, (n - at - 2) * sizeof(off[0]));
		memmove(sl + at + 1, sl + at + 2, (n - at - 2) * sizeof(sl[0]));
		n--;
	}
	for (size_t i = 0; i < n; i++) {
		ids[i] = strata_tokenizer_find(t, enc + off[i], sl[i]);
		ck_assert_msg(ids[i] >= 0, "reference symbol '%.*s' is no token", (int)sl[i],
			      enc + off[i]);
	}
	return (int)n;
}

/* Random words, short (array merging) and long (heap merging), against the reference. */
START_TEST(reference_bpe)
{
	const char *path = tu_shared("vocab/ggml-vocab-gpt-2.gguf");
	const char *alpha = "etaoinshrdluETAOIN";
	struct strata_tokenizer *t = load("vocab/ggml-vocab-gpt-2.gguf");
	struct strata_gguf *g;
	int64_t kv;
	uint64_t nr;
	struct ranked *r;
	uint32_t seed = 12345;

	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	kv = strata_gguf_find_key(g, "tokenizer.ggml.merges");
	ck_assert_int_eq(strata_gguf_kv_arr(g, kv, NULL, &nr, NULL), 0);
	r = malloc(nr * sizeof(*r));
	for (uint64_t i = 0; i < nr; i++) {
		struct strata_str s = strata_gguf_arr_str(g, kv, i);

		r[i] = (struct ranked){ s.s, s.len, (int32_t)i };
	}
	qsort(r, nr, sizeof(*r), cmp_ranked);
	for (int w = 0; w < 60; w++) {
		unsigned char word[1024];
		size_t len = w % 3 == 0 ? 300 : w % 3 == 1 ? 100 : 1 + w;
		int32_t want[1024], *ids;
		int wn, n;

		/* Runs of 1-4 letters, so overlapping equal pairs ("eee") are common. */
		word[0] = ' ';
		for (size_t i = 1; i < len;) {
			unsigned char c;

			seed = seed * 1103515245u + 12345u;
			c = (unsigned char)alpha[(seed >> 16) % strlen(alpha)];
			for (unsigned run = 1 + (seed >> 28) % 4; run && i < len; run--)
				word[i++] = c;
		}
		wn = ref_bpe(t, r, nr, word, len, want);
		n = tok(t, (const char *)word, len, 0, &ids);
		assert_ids(ids, n, want, wn, "reference");
		free(ids);
	}
	free(r);
	strata_gguf_close(g);
	strata_tokenizer_free(t);
}
END_TEST

/* ---- pre-tokenizer splits ------------------------------------------------------ */

/* One text with contractions, digit runs, No-category digits, CJK, emoji and whitespace runs. */
static const char TRICKY[] = "I'M here's 1234567 \xC2\xBD\xE5\xB9\xB4 \xE4\xBD\xA0\xE5\xA5\xBD"
			     "\xE4\xB8\x96\xE7\x95\x8C!\n\n\n  \t\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99"
			     " ok?  \r\nEnd   ";

static void check_split(const char *pre, const char *const *want)
{
	struct strata_pretok *p;
	struct strata_tok_spans s = { NULL, 0, 0 };
	int n, wn = 0;

	ck_assert_int_eq(strata_pretok_open(pre, strlen(pre), &p), 0);
	n = strata_pretok_split(p, TRICKY, strlen(TRICKY), &s);
	while (want[wn])
		wn++;
	for (int i = 0; i < n && i < wn; i++)
		ck_assert_msg(s.v[i].len == strlen(want[i]) &&
				      memcmp(TRICKY + s.v[i].off, want[i], s.v[i].len) == 0,
			      "%s: word %d is '%.*s', expected '%s'", pre, i, (int)s.v[i].len,
			      TRICKY + s.v[i].off, want[i]);
	ck_assert_msg(n == wn, "%s: %d words, expected %d", pre, n, wn);
	free(s.v);
	strata_pretok_free(p);
}

/*
 * Derived by hand from the regexes: a space before a digit or No stands
 * alone; [^\r\n\p{L}\p{N}]?\p{L}+ takes one leading space or tab; punctuation
 * takes its newlines; \s+(?!\S) leaves the last blank for the next word.
 */
START_TEST(split_llama3_qwen2)
{
	static const char *const llama3[] = {
		"I", "'M", " here", "'s", " ", "123", "456", "7", " ", "\xC2\xBD", "\xE5\xB9\xB4",
		" \xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C", "!\n\n\n", "  ", "\t",
		"\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99", " ok", "?", "  \r\n", "End", "   ", NULL
	};
	static const char *const qwen2[] = {
		"I", "'M", " here", "'s", " ", "1", "2", "3", "4", "5", "6", "7", " ", "\xC2\xBD",
		"\xE5\xB9\xB4", " \xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C", "!\n\n\n", "  ",
		"\t", "\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99", " ok", "?", "  \r\n", "End", "   ", NULL
	};
	/* GPT-2: case-sensitive contractions, " ?\p{N}+" keeps a space and whole runs. */
	static const char *const gpt2[] = {
		"I", "'", "M", " here", "'s", " 1234567", " \xC2\xBD", "\xE5\xB9\xB4",
		" \xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C", "!", "\n\n\n  ", "\t",
		"\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99", " ok", "?", "  \r", "\n", "End", "   ", NULL
	};
	struct strata_pretok *p;

	check_split("llama-bpe", llama3);
	check_split("llama3", llama3);
	check_split("qwen2", qwen2);
	check_split("gpt-2", gpt2);
	ck_assert_int_eq(strata_pretok_open("qwen2", 5, &p), 0);
	ck_assert_str_eq(strata_pretok_name(p), "qwen2");
	ck_assert_uint_eq(strata_pretok_flags(p), 0);
	strata_pretok_free(p);
	ck_assert_int_eq(strata_pretok_open("llama-bpe", 9, &p), 0);
	ck_assert_str_eq(strata_pretok_name(p), "llama3");
	ck_assert_uint_eq(strata_pretok_flags(p), STRATA_PRETOK_IGNORE_MERGES | STRATA_PRETOK_ADD_BOS);
	strata_pretok_free(p);
	ck_assert_int_eq(strata_pretok_open(NULL, 0, &p), 0);
	ck_assert_str_eq(strata_pretok_name(p), "default");
	strata_pretok_free(p);
	ck_assert_int_eq(strata_pretok_open("klingon", 7, &p), -ENOTSUP);
	ck_assert_ptr_null(p);
}
END_TEST

/* ---- specials, BOS, pieces, bytes --------------------------------------------- */

START_TEST(specials_and_bos)
{
	struct strata_tokenizer *t = load_vocab("gpt-2");
	const char *s = "Hi<|endoftext|>";
	int32_t *ids;
	int n = tok(t, s, strlen(s), STRATA_TOK_PARSE_SPECIAL | STRATA_TOK_ADD_BOS, &ids);
	char buf[16];

	{
		const int32_t want[] = { 17250, 50256 }; /* no add_bos_token: BPE adds none */

		assert_ids(ids, n, want, 2, "gpt-2 special");
	}
	free(ids);
	n = tok(t, s, strlen(s), 0, &ids);
	for (int i = 0; i < n; i++)
		ck_assert_msg(ids[i] != 50256, "control token parsed without the flag");
	assert_round_trip(t, ids, n, s, strlen(s));
	free(ids);
	ck_assert(strata_tokenizer_is_eog(t, 50256));
	ck_assert_int_eq(strata_tokenizer_eot(t), 50256);
	ck_assert_int_eq(strata_token_to_piece(t, 18435, buf, sizeof(buf)), 6); /* "ĠHello" */
	ck_assert(memcmp(buf, " Hello", 6) == 0);
	ck_assert_int_eq(strata_token_to_piece(t, 198, buf, sizeof(buf)), 1); /* "Ċ" */
	ck_assert_int_eq(buf[0], '\n');
	ck_assert_int_eq(strata_token_to_piece(t, 50256, buf, sizeof(buf)), 0);
	strata_tokenizer_free(t);

	/* deepseek-coder asks for BOS. */
	t = load_vocab("deepseek-coder");
	n = tok(t, "Hello world", 11, STRATA_TOK_ADD_BOS, &ids);
	{
		const int32_t want[] = { 32013, 17535, 1835 };

		assert_ids(ids, n, want, 3, "deepseek-coder bos");
	}
	free(ids);
	ck_assert_int_eq(strata_tokenizer_bos(t), 32013);
	strata_tokenizer_free(t);
}
END_TEST

/*
 * Byte-level BPE represents any text: NULs, every ASCII byte, UTF-8 of every
 * length.  Invalid UTF-8 reads as U+FFFD, a byte at a time, as llama.cpp
 * decodes it (tests/vocab/corpus.inp holds many more cases).
 */
START_TEST(every_byte)
{
	static const char bad[] = "\xC3 x\xE4\xBD abc\xF0\x9F\xA6";
	static const char as_read[] = "\xEF\xBF\xBD x\xEF\xBF\xBD\xEF\xBF\xBD abc"
				      "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD";

	for (int v = 0; v < N_BPE_VOCABS; v++) {
		struct strata_tokenizer *t = load_vocab(bpe_vocabs[v]);
		char text[600];
		size_t n = 0;
		int32_t *ids;
		int k;

		/*
		 * A byte whose character is a user-defined token (deepseek's added
		 * "\xC3\xB5" for 0xF5, ...) renders as that text, and one whose
		 * character is no token (falcon's \x03) is dropped, as in llama.cpp
		 * and Hugging Face: those bytes can't come back.
		 */
		for (int b = 0; b < 128; b++) {
			char u[2];
			int32_t id = strata_tokenizer_find(t, u, put_utf8(u, byte_cp((unsigned)b)));

			if (id >= 0 && !(strata_token_attr(t, id) & STRATA_TOKEN_ATTR_USER_DEFINED))
				text[n++] = (char)b;
		}
		ck_assert_int_ge(n, 100);
		memcpy(text + n, "\xC3\xA9 \xE4\xBD\xA0 \xF0\x9F\xA6\x99", 12);
		n += 12;
		k = tok(t, text, n, 0, &ids);
		assert_round_trip(t, ids, k, text, n);
		free(ids);
		k = tok(t, bad, sizeof(bad) - 1, 0, &ids);
		assert_round_trip(t, ids, k, as_read, sizeof(as_read) - 1);
		free(ids);
		strata_tokenizer_free(t);
	}
}
END_TEST

/* falcon has no token for \x03 and no unknown token: the byte is dropped. */
START_TEST(missing_byte)
{
	struct strata_tokenizer *t = load_vocab("falcon");
	const int32_t want[] = { strata_tokenizer_find(t, "a", 1), strata_tokenizer_find(t, "b", 1) };
	int32_t *ids;
	int n = tok(t, "a\x03" "b", 3, 0, &ids);

	ck_assert(want[0] >= 0 && want[1] >= 0);
	assert_ids(ids, n, want, 2, "falcon \\x03");
	free(ids);
	strata_tokenizer_free(t);
}
END_TEST

/* ---- synthetic vocabularies ------------------------------------------------ */

#define N_EXTRA 8
static const char *const extra_tokens[N_EXTRA] = { "ab", "abc", "bc", "abd", "<|eot|>", "zz",
						   "34", "aa" };

struct synth {
	const char *pre;            /* NULL: no tokenizer.ggml.pre */
	const char *const *merges;  /* NULL-terminated; NULL: no merges key */
	int bos;                    /* set bos_token_id to <|eot|> */
};

/* Write a byte-level vocab (the 256 characters, then extra_tokens) and load it. */
static int load_synth(const struct synth *sy, struct strata_tokenizer **t, char *path, size_t cap)
{
	char chars[256][3], dir[2048];
	const char *tokens[256 + N_EXTRA];
	int32_t types[256 + N_EXTRA];
	struct strata_gguf_writer *w;
	struct strata_gguf *g = NULL;
	uint64_t nm = 0;
	int rc;

	for (int b = 0; b < 256; b++) {
		size_t k = put_utf8(chars[b], byte_cp((unsigned)b));

		chars[b][k] = 0;
		tokens[b] = chars[b];
		types[b] = 1;
	}
	for (int i = 0; i < N_EXTRA; i++) {
		tokens[256 + i] = extra_tokens[i];
		types[256 + i] = strcmp(extra_tokens[i], "<|eot|>") == 0 ? 3 : 1;
	}
	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(path, cap, "%s/synth.gguf", dir);
	ck_assert_int_eq(strata_gguf_writer_open(path, &w), 0);
	ck_assert_int_eq(strata_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2"), 0);
	if (sy->pre)
		ck_assert_int_eq(strata_gguf_writer_set_str(w, "tokenizer.ggml.pre", sy->pre), 0);
	ck_assert_int_eq(strata_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", 256 + N_EXTRA,
							tokens, NULL), 0);
	ck_assert_int_eq(strata_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", STRATA_GGUF_I32,
						    256 + N_EXTRA, types), 0);
	while (sy->merges && sy->merges[nm])
		nm++;
	if (sy->merges)
		ck_assert_int_eq(strata_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", nm,
								sy->merges, NULL), 0);
	if (sy->bos)
		ck_assert_int_eq(strata_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 260), 0);
	ck_assert_int_eq(strata_gguf_writer_commit(w), 0);
	strata_gguf_writer_close(w);
	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	rc = strata_tokenizer_load(g, t);
	strata_gguf_close(g);
	unlink(path);
	rmdir(dir);
	return rc;
}

/* Tokenize s with a synthetic vocab and compare with the listed token texts. */
static void expect_texts(const struct synth *sy, const char *s, unsigned flags,
			 const char *const *want)
{
	struct strata_tokenizer *t = NULL;
	char path[4096];
	int32_t *ids;
	int n, wn = 0;

	ck_assert_int_eq(load_synth(sy, &t, path, sizeof(path)), 0);
	n = tok(t, s, strlen(s), flags, &ids);
	while (want[wn])
		wn++;
	ck_assert_msg(n == wn, "'%s' (%s): %d ids, expected %d", s, sy->pre, n, wn);
	for (int i = 0; i < n; i++)
		ck_assert_msg(strcmp(strata_token_text(t, ids[i]), want[i]) == 0,
			      "'%s': token %d is '%s', expected '%s'", s, i,
			      strata_token_text(t, ids[i]), want[i]);
	assert_round_trip(t, ids + (flags ? 1 : 0), n - (flags ? 1 : 0), s, strlen(s));
	free(ids);
	strata_tokenizer_free(t);
}

START_TEST(synth_merges)
{
	static const char *const ab_abc[] = { "a b", "ab c", NULL };
	static const char *const bc_first[] = { "b c", "a b", "ab c", NULL };
	static const char *const digits[] = { "a b", "ab c", "3 4", NULL };
	static const char *const a_a[] = { "a a", NULL };
	static char longw[128], want_long[64][4];
	const char *want_l[64];
	const struct synth gpt2 = { "gpt-2", ab_abc, 0 }, bc = { "gpt-2", bc_first, 0 };
	const struct synth llama = { "llama-bpe", ab_abc, 1 }, none = { NULL, digits, 0 };
	const struct synth gpt2_digits = { "gpt-2", digits, 0 }, aa = { "gpt-2", a_a, 0 };

	expect_texts(&gpt2, "abc", 0, (const char *const[]){ "abc", NULL });
	expect_texts(&gpt2, "abd", 0, (const char *const[]){ "ab", "d", NULL });
	/* Both "a b" merge (leftmost first), then both "ab c". */
	expect_texts(&gpt2, "abcabc", 0, (const char *const[]){ "abc", "abc", NULL });
	/* The lower rank wins wherever it is: "b c" before "a b". */
	expect_texts(&bc, "abc", 0, (const char *const[]){ "a", "bc", NULL });
	expect_texts(&gpt2, " ab", 0, (const char *const[]){ "\xC4\xA0", "ab", NULL });
	/* llama-bpe takes a word that is a token whole, and adds BOS by default. */
	expect_texts(&llama, "abd", STRATA_TOK_ADD_BOS,
		     (const char *const[]){ "<|eot|>", "abd", NULL });
	/* No tokenizer.ggml.pre: llama.cpp's default cuts digits in threes, so "3 4" can't merge. */
	expect_texts(&none, "abc12345", 0,
		     (const char *const[]){ "abc", "1", "2", "3", "4", "5", NULL });
	expect_texts(&gpt2_digits, "abc12345", 0,
		     (const char *const[]){ "abc", "1", "2", "34", "5", NULL });
	/* A word past the array path: 50 "ab" then "c" -> 49 x ab, abc (heap path). */
	for (int i = 0; i < 50; i++) {
		memcpy(longw + 2 * i, "ab", 2);
		snprintf(want_long[i], sizeof(want_long[i]), "%s", i < 49 ? "ab" : "abc");
		want_l[i] = want_long[i];
	}
	memcpy(longw + 100, "c", 2);
	want_l[50] = NULL;
	expect_texts(&gpt2, longw, 0, want_l);
	/* Equal ranks (one pair, overlapping) go to the leftmost, in both paths. */
	expect_texts(&aa, "aaa", 0, (const char *const[]){ "aa", "a", NULL });
	memset(longw, 'a', 101);
	longw[101] = 0;
	for (int i = 0; i <= 50; i++)
		want_l[i] = i < 50 ? "aa" : "a";
	want_l[51] = NULL;
	expect_texts(&aa, longw, 0, want_l);
}
END_TEST

/* Load errors: rc, one error line naming the file and the culprit. */
START_TEST(synth_errors)
{
	static const char *const unknown_tok[] = { "a b", "a zz2", NULL };
	static const char *const no_space[] = { "abc", NULL };
	static const char *const two_spaces[] = { "a b", "ab c d", NULL };
	static const char *const no_result[] = { "b d", NULL };
	static const char *const ok[] = { "a b", NULL };
	const struct { struct synth sy; int rc; const char *says; } cases[] = {
		{ { "klingon", ok, 0 }, -ENOTSUP, "pre-tokenizer 'klingon' (tokenizer.ggml.pre) is not supported" },
		{ { "gpt-2", unknown_tok, 0 }, -EINVAL, "merges[1] 'a zz2': its right token is not in the vocabulary" },
		{ { "gpt-2", no_space, 0 }, -EINVAL, "merges[0] 'abc' is malformed" },
		{ { "gpt-2", two_spaces, 0 }, -EINVAL, "merges[1] 'ab c d' is malformed" },
		{ { "gpt-2", no_result, 0 }, -EINVAL, "merges[0] 'b d': the merged token is not in" },
		{ { "gpt-2", NULL, 0 }, -EINVAL, "without tokenizer.ggml.merges" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strata_tokenizer *t = NULL;
		char path[4096];
		int rc;

		tu_log_capture();
		rc = load_synth(&cases[i].sy, &t, path, sizeof(path));
		tu_log_release();
		ck_assert_ptr_null(t);
		ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d, expected %d", i, rc, cases[i].rc);
		ck_assert_msg(strstr(tu_log, cases[i].says) && strstr(tu_log, path),
			      "case %zu: message should name %s and say '%s': %s", i, path,
			      cases[i].says, tu_log);
		ck_assert_msg(tu_log_lines == 1, "case %zu: %d error lines: %s", i, tu_log_lines,
			      tu_log);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("bpe");
	TCase *tc = tcase_create("core");

	for (int i = 0; i < N_BPE_VOCABS; i++) {
		char rel[256];

		snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf.out", bpe_vocabs[i]);
		tu_shared_or_skip(rel);
	}
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, vocab_each, 0, N_BPE_VOCABS);
	tcase_add_test(tc, cli_inp);
	tcase_add_test(tc, reference_bpe);
	tcase_add_test(tc, split_llama3_qwen2);
	tcase_add_test(tc, specials_and_bos);
	tcase_add_test(tc, every_byte);
	tcase_add_test(tc, missing_byte);
	tcase_add_test(tc, synth_merges);
	tcase_add_test(tc, synth_errors);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
