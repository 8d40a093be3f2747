/*
 * check_tokenizer.c - the SentencePiece tokenizer against llama.cpp's vocab
 * test vectors, the golden stories260K prompts, round trips, special tokens,
 * and malformed vocabularies; every vocabulary against llama.cpp's ids on
 * the broad corpus of tests/vocab.
 */
#include "testutil.h"

#include "gguf/gguf.h"
#include "tok/tokenizer.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* detokenize(ids) must give back exactly the text. */
static void assert_round_trip(const struct strata_tokenizer *t, const int32_t *ids, int n,
			      unsigned flags, const char *text, size_t len)
{
	size_t cap = len * 2 + 16;
	char *buf = malloc(cap);
	int k = strata_detokenize(t, ids, (size_t)n, flags, buf, cap);

	ck_assert_msg(k == (int)len && memcmp(buf, text, len) == 0,
		      "round trip of '%.*s' gave %d bytes '%.*s'", (int)len, text, k,
		      k > 0 ? k : 0, buf);
	free(buf);
}

/* ---- llama.cpp vocab test vectors ------------------------------------------- */

/* Every .inp test through the library equals its .out line; detokenising round-trips. */
static void check_vocab(const char *name)
{
	char gguf_rel[256];
	struct strata_tokenizer *t;
	struct tu_vocab_tests v;
	int n;

	snprintf(gguf_rel, sizeof(gguf_rel), "vocab/ggml-vocab-%s.gguf", name);
	t = load(gguf_rel);
	n = tu_vocab_tests_read(name, &v);
	ck_assert_msg(n >= 40, "%s: %d tests", name, n);
	for (int i = 0; i < n; i++) {
		int32_t *ids;
		int k = tok(t, v.v[i].text, v.v[i].len, 0, &ids);

		assert_ids(ids, k, v.v[i].ids, v.v[i].n_ids, name);
		assert_round_trip(t, ids, k, 0, v.v[i].text, v.v[i].len);
		free(ids);
	}
	tu_vocab_tests_free(&v);
	strata_tokenizer_free(t);
}

START_TEST(vocab_llama_spm) { check_vocab("llama-spm"); }
END_TEST

START_TEST(vocab_phi3) { check_vocab("phi-3"); }
END_TEST

/*
 * ---- every vocabulary against llama.cpp on broad text ------------------------
 *
 * tests/vocab/corpus.inp (tools/peer/corpus.pl: every Unicode block, scripts,
 * marks, composed and decomposed forms, Hangul, CJK, emoji, controls, invalid
 * UTF-8, long runs) and llama.cpp's ids for it, corpus.NAME.out, written by
 * tools/peer/tokcmp.sh --write from llama.cpp built by tools/peer/build.sh.  A
 * text llama.cpp throws on has a '#' line: strata must only not fail on it.
 */
static const char *const g_corpus_vocabs[] = {
	"bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2",
	"llama-spm", "mpt", "phi-3", "refact", "starcoder",
};
#define N_CORPUS_VOCABS (int)(sizeof(g_corpus_vocabs) / sizeof(g_corpus_vocabs[0]))

START_TEST(corpus)
{
	const char *name = g_corpus_vocabs[_i];
	char rel[256], out[4096];
	struct strata_tokenizer *t;
	struct tu_vocab_tests v;
	int n, no_ref = 0;

	snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf", name);
	if (!tu_shared(rel))
		TU_SKIP("../shared/%s is absent", rel);
	t = load(rel);
	snprintf(out, sizeof(out), "%s/tests/vocab/corpus.%s.out", STRATA_SRC, name);
	n = tu_vocab_tests_read_files(STRATA_SRC "/tests/vocab/corpus.inp", out, &v);
	ck_assert_msg(n >= 400, "%s: %d texts", name, n);
	for (int i = 0; i < n; i++) {
		char what[96];
		int32_t *ids;
		int k = tok(t, v.v[i].text, v.v[i].len, 0, &ids);

		snprintf(what, sizeof(what), "%s, corpus text %d", name, i);
		if (v.v[i].no_ref)
			no_ref++;
		else
			assert_ids(ids, k, v.v[i].ids, v.v[i].n_ids, what);
		free(ids);
	}
	printf("%s: %d texts of the corpus, %d as llama.cpp's ids, %d it has no answer for\n",
	       name, n, n - no_ref, no_ref);
	ck_assert_int_le(no_ref, 2);
	tu_vocab_tests_free(&v);
	strata_tokenizer_free(t);
}
END_TEST

/* The same through `strata tokenize --inp`, byte for byte (stderr included: no noise). */
START_TEST(cli_inp)
{
	static char got[1 << 16];
	const char *names[] = { "llama-spm", "phi-3" };
	char rel[256], gguf[4096], out_path[sizeof(gguf) + 8], cmd[3 * sizeof(gguf)];
	size_t olen;
	int rc;

	rc = tu_run("'" STRATA_BIN "' tokenize --help", got, sizeof(got));
	ck_assert_msg(rc == 0 && strstr(got, "usage: strata tokenize"), "--help: %d %s", rc, got);
	for (int i = 0; i < 2; i++) {
		char *want;

		snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf", names[i]);
		snprintf(gguf, sizeof(gguf), "%s", tu_shared(rel));
		snprintf(cmd, sizeof(cmd), "'%s' tokenize -m '%s' --inp '%s.inp'", STRATA_BIN, gguf,
			 gguf);
		rc = tu_run(cmd, got, sizeof(got));
		snprintf(out_path, sizeof(out_path), "%s.out", gguf);
		want = tu_read_file(out_path, &olen);
		ck_assert(want != NULL);
		ck_assert_msg(rc == 0, "%s: exit %d: %s", names[i], rc, got);
		ck_assert_msg(strlen(got) == olen && memcmp(got, want, olen) == 0,
			      "%s: output differs from the .out file:\n%s", names[i], got);
		free(want);
	}
	snprintf(cmd, sizeof(cmd), "'%s' tokenize -m '%s' -p 'Hello world' --bos", STRATA_BIN, gguf);
	ck_assert_int_eq(tu_run(cmd, got, sizeof(got)), 0);
	ck_assert_str_eq(got, "1 15043 3186\n");
	rc = tu_run("'" STRATA_BIN "' tokenize -m /nonexistent.gguf -p x", got, sizeof(got));
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(got, "/nonexistent.gguf") && strchr(got, '\n') == got + strlen(got) - 1,
		      "want one line naming the file: %s", got);
	ck_assert_int_eq(tu_run("'" STRATA_BIN "' tokenize -p x", got, sizeof(got)), 2);
	ck_assert_int_eq(tu_run("'" STRATA_BIN "' tokenize -m x --bogus", got, sizeof(got)), 2);
}
END_TEST

/* ---- stories260K golden prompts ---------------------------------------------- */

static void check_golden(const char *prompt)
{
	char rel[256];
	size_t slen, plen;
	uint8_t *slog;
	char *text;
	uint32_t hdr[5];
	int32_t *ids;
	struct strata_tokenizer *t = load("models/stories260K.gguf");
	int n;

	snprintf(rel, sizeof(rel), "golden/stories260K.%s.slog", prompt);
	slog = tu_read_file(tu_shared(rel), &slen);
	snprintf(rel, sizeof(rel), "golden/prompts/%s.txt", prompt);
	text = tu_read_file(tu_shared(rel), &plen);
	ck_assert(slog && text && slen >= 20);
	memcpy(hdr, slog, sizeof(hdr));
	ck_assert_uint_eq(hdr[0], 0x474F4C53u);
	ck_assert_uint_eq(hdr[3], (uint32_t)strata_tokenizer_n_vocab(t));
	ck_assert(slen >= 20 + 4 * (size_t)hdr[2]);
	/* The prompt is the file's bytes verbatim: story.txt's final newline is a token (13). */
	n = tok(t, text, plen, STRATA_TOK_ADD_BOS, &ids);
	ck_assert_int_eq(ids[0], strata_tokenizer_bos(t));
	{
		int32_t want[2048];

		ck_assert(hdr[2] <= 2048);
		memcpy(want, slog + 20, 4 * (size_t)hdr[2]);
		assert_ids(ids, n, want, (int)hdr[2], prompt);
	}
	/* After a BOS the text keeps its leading space (llama.cpp's rule). */
	{
		char *buf = malloc(plen + 2);

		ck_assert_int_eq(strata_detokenize(t, ids, (size_t)n, STRATA_DETOK_REMOVE_SPECIAL,
						   buf, plen + 2), (int)plen + 1);
		ck_assert(buf[0] == ' ' && memcmp(buf + 1, text, plen) == 0);
		free(buf);
	}
	assert_round_trip(t, ids + 1, n - 1, 0, text, plen);
	free(ids);
	free(text);
	free(slog);
	strata_tokenizer_free(t);
}

START_TEST(golden_once) { check_golden("once"); }
END_TEST
START_TEST(golden_story) { check_golden("story"); }
END_TEST
START_TEST(golden_mixed) { check_golden("mixed"); }
END_TEST

/* ---- byte fallback, pieces, special tokens --------------------------------- */

START_TEST(byte_fallback)
{
	struct strata_tokenizer *t = load("models/stories260K.gguf");
	const char *s = "Tom 你好 \xF0\x9F\xA6\x99!"; /* CJK and an emoji: not in a 512-token vocab */
	int32_t *ids;
	int n = tok(t, s, strlen(s), 0, &ids), n_bytes = 0;

	for (int i = 0; i < n; i++) {
		if (strata_token_attr(t, ids[i]) & STRATA_TOKEN_ATTR_BYTE) {
			char c;

			ck_assert_int_eq(strata_token_to_piece(t, ids[i], &c, 1), 1);
			n_bytes++;
		}
	}
	ck_assert_int_eq(n_bytes, 6 + 4); /* every byte of 你好 and of the emoji */
	assert_round_trip(t, ids, n, 0, s, strlen(s));
	free(ids);
	strata_tokenizer_free(t);

	t = load("vocab/ggml-vocab-llama-spm.gguf");
	n = tok(t, "\xF0\x9F\xA6\x99", 4, 0, &ids);
	{
		const int32_t want[] = { 29871, 243, 162, 169, 156 }; /* "▁" then <0xF0>... */

		assert_ids(ids, n, want, 5, "llama emoji");
	}
	free(ids);
	strata_tokenizer_free(t);
}
END_TEST

START_TEST(pieces)
{
	struct strata_tokenizer *t = load("vocab/ggml-vocab-llama-spm.gguf");
	char buf[64];

	ck_assert_int_eq(strata_token_to_piece(t, 15043, buf, sizeof(buf)), 6);
	ck_assert(memcmp(buf, " Hello", 6) == 0);
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(strata_token_to_piece(t, 15043, buf, 2), 6); /* snprintf-like */
	ck_assert(buf[0] == ' ' && buf[1] == 'H' && buf[2] == 'x');
	ck_assert_int_eq(strata_token_to_piece(t, 13, buf, sizeof(buf)), 1); /* <0x0A> */
	ck_assert_int_eq(buf[0], '\n');
	ck_assert_int_eq(strata_token_to_piece(t, 1, buf, sizeof(buf)), 0); /* <s>: control */
	ck_assert_int_eq(strata_token_to_piece(t, -1, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(strata_token_to_piece(t, 32000, buf, sizeof(buf)), -EINVAL);
	ck_assert_str_eq(strata_token_text(t, 15043), "\xE2\x96\x81Hello");
	ck_assert_ptr_null(strata_token_text(t, 32000));
	ck_assert_int_eq(strata_tokenizer_find(t, "\xE2\x96\x81Hello", 8), 15043);
	ck_assert_int_eq(strata_tokenizer_find(t, "no such token", 13), -1);
	ck_assert_int_eq(strata_tokenizer_n_vocab(t), 32000);
	ck_assert_int_eq(strata_tokenizer_bos(t), 1);
	ck_assert_int_eq(strata_tokenizer_eos(t), 2);
	ck_assert_str_eq(strata_tokenizer_model(t), "llama");
	ck_assert(strata_tokenizer_is_eog(t, 2) && !strata_tokenizer_is_eog(t, 1));
	ck_assert(!strata_tokenizer_is_eog(t, -5) && !strata_tokenizer_is_eog(t, 1 << 20));
	strata_tokenizer_free(t);
}
END_TEST

START_TEST(special_llama)
{
	struct strata_tokenizer *t = load("vocab/ggml-vocab-llama-spm.gguf");
	const char *s = "<s>Hello</s>";
	const int32_t want[] = { 1, 15043, 2 }; /* "Hello" after a special gets the space prefix */
	int32_t *ids;
	int n = tok(t, s, strlen(s), STRATA_TOK_PARSE_SPECIAL, &ids);

	assert_ids(ids, n, want, 3, "parsed");
	free(ids);
	n = tok(t, s, strlen(s), 0, &ids);
	for (int i = 0; i < n; i++)
		ck_assert_msg(ids[i] != 1 && ids[i] != 2, "control token parsed without the flag");
	assert_round_trip(t, ids, n, 0, s, strlen(s));
	free(ids);
	/* BOS only when asked; an empty text gives nothing, or just BOS. */
	ck_assert_int_eq(strata_tokenize(t, "", 0, 0, &ids), 0);
	ck_assert_ptr_null(ids);
	n = tok(t, "", 0, STRATA_TOK_ADD_BOS, &ids);
	assert_ids(ids, n, want, 1, "bos only");
	free(ids);
	strata_tokenizer_free(t);
}
END_TEST

/* phi-3's chat tokens swallow the whitespace after them (llama.cpp keys RSTRIP on the name). */
START_TEST(special_phi3)
{
	struct strata_tokenizer *t = load("vocab/ggml-vocab-phi-3.gguf");
	const char *s = "<|user|>\nSYS\nHI<|end|>\n<|assistant|>\n";
	const int32_t want[] = { 1, 32010, 317, 21554, 13, 17628, 32007, 32001 };
	int32_t *ids;
	int n = tok(t, s, strlen(s), STRATA_TOK_ADD_BOS | STRATA_TOK_PARSE_SPECIAL, &ids);

	assert_ids(ids, n, want, 8, "phi-3 chat");
	free(ids);
	n = tok(t, s, strlen(s), STRATA_TOK_ADD_BOS, &ids);
	for (int i = 1; i < n; i++)
		ck_assert_msg(ids[i] < 32000, "special token %d parsed without the flag", ids[i]);
	free(ids);
	/*
	 * "</s>" is user-defined in phi-3's file, but one of llama.cpp's
	 * end-of-generation texts, so control: text without the flag (as llama.cpp
	 * reads it), the token (RSTRIP) with it.
	 */
	n = tok(t, "Hi</s> there", 12, 0, &ids);
	{
		const int32_t want_text[] = { 6324, 829, 29879, 29958, 727 }; /* ▁Hi </ s > ▁there */

		assert_ids(ids, n, want_text, 5, "phi-3 </s> as text");
	}
	free(ids);
	n = tok(t, "Hi</s> there", 12, STRATA_TOK_PARSE_SPECIAL, &ids);
	{
		const int32_t want_tok[] = { 6324, 2, 727 }; /* ▁Hi </s> ▁there */

		assert_ids(ids, n, want_tok, 3, "phi-3 </s> parsed");
	}
	free(ids);
	ck_assert(strata_tokenizer_is_eog(t, 2));
	ck_assert_int_eq(strata_tokenizer_eos(t), 32000);
	ck_assert_int_eq(strata_tokenizer_eot(t), 32007);
	ck_assert(strata_tokenizer_is_eog(t, 32000) && strata_tokenizer_is_eog(t, 32007));
	ck_assert(!strata_tokenizer_is_eog(t, 32001));
	ck_assert(strata_token_attr(t, 32007) & STRATA_TOKEN_ATTR_RSTRIP);
	ck_assert(!(strata_token_attr(t, 32000) & STRATA_TOKEN_ATTR_RSTRIP));
	strata_tokenizer_free(t);
}
END_TEST

/* ---- synthetic vocabularies ------------------------------------------------ */

/* One scratch directory per test; files are unlinked as soon as read. */
static char scratch[1024];

static void rm_scratch(void)
{
	if (scratch[0])
		rmdir(scratch);
	scratch[0] = 0;
}

static const char *tmp_dir(void)
{
	if (!scratch[0]) {
		const char *d = tu_tmpdir();

		ck_assert(d != NULL);
		snprintf(scratch, sizeof(scratch), "%s", d);
	}
	return scratch;
}

struct gw {
	char *buf;
	size_t n, cap;
	uint64_t n_kv;
};

static void put(struct gw *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2 + 256;
		w->buf = realloc(w->buf, w->cap);
		ck_assert(w->buf);
	}
	memcpy(w->buf + w->n, p, n);
	w->n += n;
}

static void put_u32(struct gw *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(struct gw *w, uint64_t v) { put(w, &v, 8); }

static void put_str(struct gw *w, const char *s)
{
	put_u64(w, strlen(s));
	put(w, s, strlen(s));
}

static void kv_str(struct gw *w, const char *key, const char *v)
{
	put_str(w, key);
	put_u32(w, 8);
	put_str(w, v);
	w->n_kv++;
}

static void kv_u32(struct gw *w, const char *key, uint32_t v)
{
	put_str(w, key);
	put_u32(w, 4);
	put_u32(w, v);
	w->n_kv++;
}

static void kv_strs(struct gw *w, const char *key, const char *const *v, uint64_t n)
{
	put_str(w, key);
	put_u32(w, 9);
	put_u32(w, 8);
	put_u64(w, n);
	for (uint64_t i = 0; i < n; i++)
		put_str(w, v[i]);
	w->n_kv++;
}

/* A numeric array of 4-byte elements of GGUF type `type` (6 f32, 5 i32). */
static void kv_arr4(struct gw *w, const char *key, uint32_t type, const void *v, uint64_t n)
{
	put_str(w, key);
	put_u32(w, 9);
	put_u32(w, type);
	put_u64(w, n);
	put(w, v, 4 * n);
	w->n_kv++;
}

static const char *const tiny_tokens[] = {
	"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "aa", ("\xE2\x96\x81" "a"), "ab",
};
static const float tiny_scores[] = { 0, 0, 0, -5, -5, -5, -1, -2, -3 };
static const int32_t tiny_types[] = { 2, 3, 3, 1, 1, 1, 1, 1, 1 };
#define TINY_N 9

enum defect { OK, SHORT_SCORES, SHORT_TYPES, BAD_MODEL, NO_MODEL, BOS_RANGE, BOS_UNSET,
	      DUP_TOKEN, SCORES_I32, BAD_TYPE };

/* Write a tiny "llama" vocab with one defect; returns strata_tokenizer_load's result. */
static int load_tiny(enum defect d, struct strata_tokenizer **t, char *path, size_t cap)
{
	struct gw w = { 0 };
	const char *tokens[TINY_N];
	int32_t types[TINY_N + 1] = { 0 }; /* one spare for SHORT_TYPES' longer array */
	struct strata_gguf *g = NULL;
	int rc;

	memcpy(tokens, tiny_tokens, sizeof(tokens));
	memcpy(types, tiny_types, sizeof(tiny_types));
	if (d == DUP_TOKEN)
		tokens[8] = "aa";
	if (d == BAD_TYPE)
		types[4] = 9;
	put_u32(&w, 0x46554747u);
	put_u32(&w, 3);
	put_u64(&w, 0);
	put_u64(&w, 0); /* n_kv, patched below */
	if (d != NO_MODEL)
		kv_str(&w, "tokenizer.ggml.model", d == BAD_MODEL ? "wordsalad" : "llama");
	kv_strs(&w, "tokenizer.ggml.tokens", tokens, TINY_N);
	if (d == SCORES_I32)
		kv_arr4(&w, "tokenizer.ggml.scores", 5, types, TINY_N);
	else
		kv_arr4(&w, "tokenizer.ggml.scores", 6, tiny_scores, d == SHORT_SCORES ? TINY_N - 1 : TINY_N);
	kv_arr4(&w, "tokenizer.ggml.token_type", 5, types, d == SHORT_TYPES ? TINY_N + 1 : TINY_N);
	if (d == BOS_RANGE || d == BOS_UNSET)
		kv_u32(&w, "tokenizer.ggml.bos_token_id", d == BOS_RANGE ? 99 : 0xFFFFFFFFu);
	memcpy(w.buf + 16, &w.n_kv, 8);
	while (w.n % 32)
		put(&w, "", 1);
	snprintf(path, cap, "%s/tiny-%d.gguf", tmp_dir(), (int)d);
	ck_assert_int_eq(tu_write_file(path, w.buf, w.n), 0);
	free(w.buf);
	ck_assert_int_eq(strata_gguf_open(path, &g), 0);
	rc = strata_tokenizer_load(g, t);
	strata_gguf_close(g);
	unlink(path);
	return rc;
}

START_TEST(tiny_merges)
{
	struct strata_tokenizer *t;
	char path[4096];
	int32_t *ids;
	int n;

	ck_assert_int_eq(load_tiny(OK, &t, path, sizeof(path)), 0);
	/* "▁aaa": "aa" (-1) beats "▁a" (-2); the two "aa" tie and the left one wins. */
	n = tok(t, "aaa", 3, 0, &ids);
	{
		const int32_t want[] = { 3, 6, 4 };

		assert_ids(ids, n, want, 3, "tie goes left");
	}
	free(ids);
	/* "c" is no token and the vocab has no byte tokens: the unknown token. */
	n = tok(t, "ab c", 4, STRATA_TOK_ADD_BOS, &ids);
	{
		const int32_t want[] = { 1, 7, 5, 3, 0 }; /* <s> ▁a b ▁ <unk> */

		assert_ids(ids, n, want, 5, "unknown");
	}
	free(ids);
	strata_tokenizer_free(t);

	ck_assert_int_eq(load_tiny(BOS_UNSET, &t, path, sizeof(path)), 0);
	ck_assert_int_eq(strata_tokenizer_bos(t), 1); /* 0xFFFFFFFF: keep the default */
	strata_tokenizer_free(t);
	rm_scratch();
}
END_TEST

/* Run load_tiny with stderr captured into msg. */
static int load_tiny_msg(enum defect d, char *msg, size_t cap, char *path, size_t pcap)
{
	struct strata_tokenizer *t = NULL;
	char tmp[4096];
	int fd, saved, rc;
	size_t n = 0;
	char *text;

	snprintf(tmp, sizeof(tmp), "%s/stderr", tmp_dir());
	fflush(stderr);
	saved = dup(2);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	rc = load_tiny(d, &t, path, pcap);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ck_assert_ptr_null(t);
	text = tu_read_file(tmp, &n);
	unlink(tmp);
	snprintf(msg, cap, "%s", text ? text : "");
	free(text);
	return rc;
}

START_TEST(bad_vocab)
{
	const struct { enum defect d; int rc; const char *says; } cases[] = {
		{ SHORT_SCORES, -EINVAL, "tokenizer.ggml.scores has 8 entries" },
		{ SHORT_TYPES, -EINVAL, "tokenizer.ggml.token_type has 10 entries" },
		{ BAD_MODEL, -ENOTSUP, "tokenizer model 'wordsalad' is not supported" },
		{ NO_MODEL, -ENOENT, "tokenizer.ggml.model is missing" },
		{ BOS_RANGE, -EINVAL, "bos_token_id = 99 is out of range" },
		{ DUP_TOKEN, -EINVAL, "token 8 duplicates token 6" },
		{ SCORES_I32, -EINVAL, "tokenizer.ggml.scores is not an array of f32" },
		{ BAD_TYPE, -EINVAL, "token 4 has type 9" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char msg[4096], path[4096];
		int rc = load_tiny_msg(cases[i].d, msg, sizeof(msg), path, sizeof(path));

		ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d, expected %d", i, rc, cases[i].rc);
		ck_assert_msg(strstr(msg, cases[i].says) && strstr(msg, path),
			      "case %zu: message should name %s and say '%s': %s", i, path,
			      cases[i].says, msg);
		ck_assert_msg(strchr(msg, '\n') == msg + strlen(msg) - 1, "case %zu: one line: %s", i,
			      msg);
	}
	rm_scratch();
}
END_TEST

int main(void)
{
	const char *need[] = {
		"vocab/ggml-vocab-llama-spm.gguf.out", "vocab/ggml-vocab-phi-3.gguf.out",
		"models/stories260K.gguf", "golden/stories260K.story.slog", "golden/prompts/story.txt",
	};
	Suite *s = suite_create("tokenizer");
	TCase *tc = tcase_create("core");

	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		tu_shared_or_skip(need[i]);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, vocab_llama_spm);
	tcase_add_test(tc, vocab_phi3);
	tcase_add_test(tc, cli_inp);
	tcase_add_test(tc, golden_once);
	tcase_add_test(tc, golden_story);
	tcase_add_test(tc, golden_mixed);
	tcase_add_test(tc, byte_fallback);
	tcase_add_test(tc, pieces);
	tcase_add_test(tc, special_llama);
	tcase_add_test(tc, special_phi3);
	tcase_add_test(tc, tiny_merges);
	tcase_add_test(tc, bad_vocab);
	tcase_add_loop_test(tc, corpus, 0, N_CORPUS_VOCABS);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
