#define _GNU_SOURCE /* memmem */
/*
 * fuzz_tokenizer.c - tokenize and detokenize any bytes with real vocabularies.
 *
 * Input: byte 0 picks the vocabulary (../shared/vocab: SentencePiece llama
 * and phi-3, byte-level BPE gpt-2 and deepseek-coder, WordPiece bert), byte
 * 1 the flags (bit 0 ADD_BOS, bit 1 PARSE_SPECIAL, bits 2-3 the detokenize
 * flags); the rest is the text.  Every id must be in the vocabulary, the
 * detokenized length must not depend on the buffer (snprintf-like), and where
 * tokenizer.h promises it the text must come back byte for byte: gpt-2 has
 * a character for every byte and no user-defined tokens, for valid UTF-8
 * (invalid bytes read as U+FFFD, as llama.cpp decodes them); llama's
 * SentencePiece falls back to byte tokens, for valid UTF-8 (a byte that is
 * not splits the text as llama.cpp does, by its lead bits, and can take a
 * space's U+2581 into byte tokens) without U+2581 "▁" of its own (that
 * stands for a space and comes back as one).
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "gguf/gguf.h"
#include "testutil.h"
#include "tok/tokenizer.h"

enum { RT_NONE, RT_UTF8, RT_SPM };

static const struct {
	const char *name;
	int round_trip;
} vocabs[] = {
	{ "llama-spm", RT_SPM },
	{ "phi-3", RT_NONE },
	{ "gpt-2", RT_UTF8 },
	{ "deepseek-coder", RT_NONE },
	{ "bert-bge", RT_NONE },
};
#define N_VOCABS (sizeof(vocabs) / sizeof(vocabs[0]))

static struct strata_tokenizer *toks[N_VOCABS];

int fuzz_target_init(void)
{
	for (size_t i = 0; i < N_VOCABS; i++) {
		char rel[128];
		const char *path;
		struct strata_gguf *g;

		snprintf(rel, sizeof(rel), "vocab/ggml-vocab-%s.gguf", vocabs[i].name);
		if (!(path = tu_shared(rel))) {
			printf("SKIP: test data ../shared/%s is absent\n", rel);
			return 77;
		}
		if (strata_gguf_open(path, &g) || strata_tokenizer_load(g, &toks[i])) {
			fprintf(stderr, "fuzz_tokenizer: cannot load %s\n", path);
			abort();
		}
		strata_gguf_close(g);
	}
	fuzz_quiet(); /* after loading: a broken vocab should be heard */
	return 0;
}

static int round_trips(int rule, const uint8_t *text, size_t len)
{
	if (rule == RT_UTF8)
		return fuzz_utf8_valid(text, len);
	return rule == RT_SPM && fuzz_utf8_valid(text, len) &&
	       !memmem(text, len, "\xE2\x96\x81", 3);
}

/* Detokenize into exactly-sized buffers: the length must not depend on cap. */
static void detok(const struct strata_tokenizer *t, const int32_t *ids, int n, unsigned flags,
		  const uint8_t *text, size_t len, int must_round_trip)
{
	int full = strata_detokenize(t, ids, (size_t)n, flags, NULL, 0), k;
	char *buf;

	FUZZ_CHECK(full >= 0);
	buf = malloc((size_t)full + 1);
	FUZZ_CHECK(buf != NULL);
	k = strata_detokenize(t, ids, (size_t)n, flags, buf, (size_t)full);
	FUZZ_CHECK(k == full);
	if (full > 0) {
		/* One byte short: same answer, and ASan sees any write past cap. */
		char *shrt = malloc((size_t)full - 1 + 1);

		FUZZ_CHECK(shrt != NULL);
		FUZZ_CHECK(strata_detokenize(t, ids, (size_t)n, flags, shrt, (size_t)full - 1) ==
			   full);
		FUZZ_CHECK(memcmp(shrt, buf, (size_t)full - 1) == 0);
		free(shrt);
	}
	if (must_round_trip) {
		if ((size_t)full != len || memcmp(buf, text, len) != 0)
			fprintf(stderr, "round trip: %zu bytes in, %d out: '%.*s'\n", len, full,
				full, buf);
		FUZZ_CHECK((size_t)full == len && memcmp(buf, text, len) == 0);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct strata_tokenizer *t;
	unsigned flags, dflags;
	const uint8_t *text;
	int32_t *ids = NULL;
	size_t len;
	int v, n;

	if (size < 2)
		return 0;
	v = data[0] % N_VOCABS;
	t = toks[v];
	flags = data[1] & 3u;
	dflags = (data[1] >> 2) & 3u;
	text = data + 2;
	len = size - 2;
	n = strata_tokenize(t, (const char *)text, len, flags, &ids);
	if (n < 0) {
		FUZZ_CHECK(n == -ENOMEM || n == -EOVERFLOW || n == -EILSEQ || n == -E2BIG);
		FUZZ_CHECK(ids == NULL);
		return 0;
	}
	FUZZ_CHECK(n == 0 || ids != NULL);
	for (int i = 0; i < n; i++) {
		char piece[4];

		FUZZ_CHECK(ids[i] >= 0 && ids[i] < strata_tokenizer_n_vocab(t));
		FUZZ_CHECK(strata_token_to_piece(t, ids[i], piece, sizeof(piece)) >= 0);
	}
	detok(t, ids, n, dflags, text, len,
	      flags == 0 && dflags == 0 && round_trips(vocabs[v].round_trip, text, len));
	free(ids);
	return 0;
}
