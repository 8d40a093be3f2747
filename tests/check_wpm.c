/*
 * check_wpm.c - the WordPiece tokenizer ("bert") against llama.cpp's vocab
 * test vectors, `strata tokenize --inp`, [CLS]/[SEP], the normaliser (case,
 * accents, Hangul, control characters) and the normaliser keys.
 */
#include "testutil.h"

#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "tok/tokenizer.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BGE "vocab/ggml-vocab-bert-bge.gguf"

static struct strata_tokenizer *load_path(const char *p)
{
	struct strata_gguf *g = NULL;
	struct strata_tokenizer *t = NULL;

	ck_assert_msg(p != NULL, "missing vocab");
	ck_assert_int_eq(strata_gguf_open(p, &g), 0);
	ck_assert_int_eq(strata_tokenizer_load(g, &t), 0);
	strata_gguf_close(g);
	return t;
}

static void expect(const struct strata_tokenizer *t, const char *s, unsigned flags,
		   const int32_t *want, int wn)
{
	int32_t *ids;
	int n = strata_tokenize(t, s, strlen(s), flags, &ids);

	ck_assert_msg(n == wn, "'%s': %d ids, expected %d", s, n, wn);
	for (int i = 0; i < n; i++)
		ck_assert_msg(ids[i] == want[i], "'%s': id %d is %d, expected %d", s, i, ids[i],
			      want[i]);
	free(ids);
}

/* The id of a vocabulary text, which must exist. */
static int32_t id_of(const struct strata_tokenizer *t, const char *text)
{
	int32_t id = strata_tokenizer_find(t, text, strlen(text));

	ck_assert_msg(id >= 0, "'%s' is not in the vocab", text);
	return id;
}

START_TEST(vocab_bge)
{
	struct strata_tokenizer *t = load_path(tu_shared(BGE));
	struct tu_vocab_tests v;
	int n = tu_vocab_tests_read("bert-bge", &v);

	ck_assert_int_ge(n, 40);
	ck_assert_str_eq(strata_tokenizer_model(t), "bert");
	for (int i = 0; i < n; i++) {
		int32_t *ids;
		int k = strata_tokenize(t, v.v[i].text, v.v[i].len, 0, &ids);

		ck_assert_msg(k == v.v[i].n_ids, "test %d: %d ids, expected %d", i, k, v.v[i].n_ids);
		for (int j = 0; j < k; j++)
			ck_assert_msg(ids[j] == v.v[i].ids[j], "test %d: id %d is %d, expected %d", i,
				      j, ids[j], v.v[i].ids[j]);
		free(ids);
	}
	printf("bert-bge: %d tests match\n", n);
	tu_vocab_tests_free(&v);
	strata_tokenizer_free(t);
}
END_TEST

START_TEST(cli_inp)
{
	static char got[1 << 16];
	char gguf[4096], cmd[3 * sizeof(gguf)];
	size_t olen;
	char *want;
	int rc;

	snprintf(gguf, sizeof(gguf), "%s", tu_shared(BGE));
	snprintf(cmd, sizeof(cmd), "'%s' tokenize -m '%s' --inp '%s.inp'", STRATA_BIN, gguf, gguf);
	rc = tu_run(cmd, got, sizeof(got));
	snprintf(cmd, sizeof(cmd), "%s.out", gguf);
	want = tu_read_file(cmd, &olen);
	ck_assert(want != NULL);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, got);
	ck_assert_msg(strlen(got) == olen && memcmp(got, want, olen) == 0,
		      "output differs from the .out file:\n%s", got);
	free(want);
}
END_TEST

/* [CLS] text [SEP] with ADD_BOS; the normaliser; pieces. */
START_TEST(normaliser)
{
	struct strata_tokenizer *t = load_path(tu_shared(BGE));
	const int32_t hello[] = { 101, id_of(t, "\xE2\x96\x81hello"), id_of(t, "\xE2\x96\x81world"),
				  102 };
	/* A Hangul syllable becomes its leading jamo: llama.cpp's NFD table keeps
	 * only the first code point of a decomposition (Hugging Face keeps all). */
	const int32_t hangul[] = { id_of(t, "\xE2\x96\x81\xE1\x84\x92") };
	const int32_t cafe[] = { id_of(t, "\xE2\x96\x81" "cafe") };
	char buf[32];

	expect(t, "Hello world", STRATA_TOK_ADD_BOS, hello, 4);
	expect(t, "HELLO\tWorld", 0, hello + 1, 2);
	expect(t, "\xED\x95\x9C", 0, hangul, 1);                 /* 한 */
	expect(t, "CAF\xC3\x89", 0, cafe, 1);                     /* CAFÉ */
	expect(t, "ca\xE2\x80\x8D" "f\x01" "e\xCC\x81", 0, cafe, 1); /* ZWJ, \x01, e + U+0301 */
	expect(t, "\xF0\x9F\xA6\x99", 0, (const int32_t[]){ 100 }, 1); /* 🦙: [UNK] */
	expect(t, "   ", 0, NULL, 0);
	ck_assert_int_eq(strata_token_to_piece(t, hello[1], buf, sizeof(buf)), 6);
	ck_assert(memcmp(buf, " hello", 6) == 0);
	ck_assert_int_eq(strata_token_to_piece(t, 101, buf, sizeof(buf)), 0); /* control */
	ck_assert_int_eq(strata_tokenizer_bos(t), 101);
	strata_tokenizer_free(t);
}
END_TEST

/* tokenizer.ggml.normalizer.{lowercase,strip_accents} = false keep case and accents. */
START_TEST(normaliser_keys)
{
	const char *tokens[] = { "[UNK]", "\xE2\x96\x81" "ab", "\xE2\x96\x81" "Ab", "c",
				 "\xE2\x96\x81\xC3\xA9" };
	char dir[2048], path[4096];

	snprintf(dir, sizeof(dir), "%s", tu_tmpdir());
	snprintf(path, sizeof(path), "%s/wpm.gguf", dir);
	for (int keys = 0; keys < 2; keys++) {
		struct strata_gguf_writer *w;
		struct strata_tokenizer *t;

		ck_assert_int_eq(strata_gguf_writer_open(path, &w), 0);
		ck_assert_int_eq(strata_gguf_writer_set_str(w, "tokenizer.ggml.model", "bert"), 0);
		ck_assert_int_eq(strata_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", 5, tokens,
								NULL), 0);
		ck_assert_int_eq(strata_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0), 0);
		if (keys)
			ck_assert_int_eq(strata_gguf_writer_set_bool(w, "tokenizer.ggml.normalizer.lowercase",
								     0), 0);
		ck_assert_int_eq(strata_gguf_writer_commit(w), 0);
		strata_gguf_writer_close(w);
		t = load_path(path);
		unlink(path);
		if (keys) /* strip_accents follows lowercase */
			expect(t, "Ab abc \xC3\xA9", 0, (const int32_t[]){ 2, 1, 3, 4 }, 4);
		else /* "é" loses its accent: "▁e" is no token */
			expect(t, "Ab abc \xC3\xA9", 0, (const int32_t[]){ 1, 1, 3, 0 }, 4);
		strata_tokenizer_free(t);
	}
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wpm");
	TCase *tc = tcase_create("core");

	tu_shared_or_skip(BGE ".out");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, vocab_bge);
	tcase_add_test(tc, cli_inp);
	tcase_add_test(tc, normaliser);
	tcase_add_test(tc, normaliser_keys);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
