/*
 * tokenize.cpp - peer-tokenize: llama.cpp's token ids for each test of a vocab
 * test file, in the layout of llama.cpp's .out files, so that they compare
 * byte for byte with `strata tokenize --inp` (tools/peer/tokcmp.sh).
 *
 *   peer-tokenize [--special] VOCAB.gguf TESTS.inp
 *
 * Each test's text ends at "\n__ggml_vocab_test__\n" (the last may end at the
 * end of the file); each output line is " ID ID ...". Tokenized as
 * tests/test-tokenizer-0.cpp does: no BOS/EOS, special tokens not parsed
 * (with --special: parsed).
 * A text llama.cpp throws on (its WordPiece on a code point past U+10FFFF)
 * gets the line "# llama.cpp: WHAT" instead: it has no reference answer.
 * C++ only to catch that; built by tools/peer/build.sh against the libllama
 * it builds.
 */
#include "llama.h"

#include <exception>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SEP[] = "\n__ggml_vocab_test__\n";

static void quiet(enum ggml_log_level level, const char *text, void *user)
{
	(void)user;
	if (level == GGML_LOG_LEVEL_ERROR)
		fputs(text, stderr);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, k;

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			char *nb = (char *)realloc(buf, cap = cap ? 2 * cap : 1 << 16);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k > 0);
	fclose(f);
	*len = n;
	return buf;
}

static bool g_special;

static int tokenize_one(const struct llama_vocab *vocab, const char *s, size_t n)
{
	int cap = (int)n + 16;
	llama_token *ids = (llama_token *)malloc(sizeof(*ids) * (size_t)cap);
	int k;

	if (!ids)
		return -1;
	try {
		k = llama_tokenize(vocab, s, (int)n, ids, cap, false, g_special);
		if (k < 0) {
			cap = -k;
			free(ids);
			ids = (llama_token *)malloc(sizeof(*ids) * (size_t)cap);
			if (!ids)
				return -1;
			k = llama_tokenize(vocab, s, (int)n, ids, cap, false, g_special);
		}
	} catch (const std::exception &e) {
		printf("# llama.cpp: %s\n", e.what());
		free(ids);
		return 0;
	}
	if (k < 0) {
		free(ids);
		return -1;
	}
	for (int i = 0; i < k; i++)
		printf(" %d", ids[i]);
	putchar('\n');
	free(ids);
	return 0;
}

int main(int argc, char **argv)
{
	struct llama_model_params mp;
	struct llama_model *model;
	const struct llama_vocab *vocab;
	size_t len, pos = 0;
	char *text;
	int rc = 0;

	if (argc == 4 && !strcmp(argv[1], "--special")) {
		g_special = true;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: peer-tokenize [--special] VOCAB.gguf TESTS.inp\n");
		return 2;
	}
	text = slurp(argv[2], &len);
	if (!text) {
		fprintf(stderr, "peer-tokenize: cannot read %s\n", argv[2]);
		return 1;
	}
	llama_log_set(quiet, NULL);
	llama_backend_init();
	mp = llama_model_default_params();
	mp.vocab_only = true;
	model = llama_model_load_from_file(argv[1], mp);
	if (!model) {
		fprintf(stderr, "peer-tokenize: cannot load %s\n", argv[1]);
		free(text);
		return 1;
	}
	vocab = llama_model_get_vocab(model);
	while (pos < len && rc == 0) {
		const char *end = (const char *)memmem(text + pos, len - pos, SEP, sizeof(SEP) - 1);
		size_t n = end ? (size_t)(end - (text + pos)) : len - pos;

		rc = tokenize_one(vocab, text + pos, n);
		pos += n + (end ? sizeof(SEP) - 1 : 0);
	}
	if (rc)
		fprintf(stderr, "peer-tokenize: tokenizing failed\n");
	llama_model_free(model);
	llama_backend_free();
	free(text);
	return rc ? 1 : 0;
}
