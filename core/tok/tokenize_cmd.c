/*
 * tokenize_cmd.c - `strata tokenize`: print the ids of a text.
 *
 * --inp reads llama.cpp's vocab test files (models/ggml-vocab-*.gguf.inp):
 * each test's text is followed by "\n__ggml_vocab_test__\n", and the output
 * has the layout of the matching .out file (each id preceded by a space, one
 * line per test), so the two can be compared byte for byte.
 */
#include "tok/tokenizer.h"

#include "gguf/gguf.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SEPARATOR[] = "\n__ggml_vocab_test__\n";

static const char USAGE[] =
	"usage: strata tokenize -m MODEL (-p TEXT | -f FILE | --inp FILE) [options]\n"
	"\n"
	"Print the token ids of a text with the vocabulary of a GGUF model.\n"
	"\n"
	"  -m, --model FILE   GGUF file whose tokenizer.* keys are used\n"
	"  -p, --prompt TEXT  tokenize TEXT\n"
	"  -f, --file FILE    tokenize the bytes of FILE (a final newline included)\n"
	"      --inp FILE     llama.cpp vocab test file: tests separated by lines\n"
	"                     __ggml_vocab_test__; prints one line per test in the\n"
	"                     layout of the matching .out file\n"
	"      --bos          add BOS (and EOS) as the vocabulary asks\n"
	"      --special      parse control tokens written in the text (<s>, <|user|>)\n"
	"      --pieces       with -p/-f: one 'ID -> PIECE' line per token\n"
	"  -h, --help         show this help\n"
	"\n"
	"Ids are printed space-separated on one line.\n";

struct opts {
	const char *model, *prompt, *file, *inp;
	unsigned flags;
	int pieces;
};

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "strata tokenize: %s%s%s (see --help)\n", msg, arg ? ": " : "",
		arg ? arg : "");
	return 2;
}

/* 0 ok, 1 help printed, 2 usage error (reported). */
static int parse(int argc, char **argv, struct opts *o)
{
	int sources = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(USAGE, stdout);
			return 1;
		} else if (!strcmp(a, "--bos")) {
			o->flags |= STRATA_TOK_ADD_BOS;
		} else if (!strcmp(a, "--special")) {
			o->flags |= STRATA_TOK_PARSE_SPECIAL;
		} else if (!strcmp(a, "--pieces")) {
			o->pieces = 1;
		} else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
			dst = &o->model;
		} else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
			dst = &o->prompt;
			sources++;
		} else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
			dst = &o->file;
			sources++;
		} else if (!strcmp(a, "--inp")) {
			dst = &o->inp;
			sources++;
		} else {
			return usage_error("unknown option", a);
		}
		if (dst) {
			if (i + 1 >= argc)
				return usage_error("missing value for", a);
			*dst = argv[++i];
		}
	}
	if (!o->model)
		return usage_error("-m MODEL is required", NULL);
	if (sources != 1)
		return usage_error("give exactly one of -p TEXT, -f FILE, --inp FILE", NULL);
	if (o->pieces && o->inp)
		return usage_error("--pieces does not apply to --inp", NULL);
	return 0;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *nb;
	size_t n = 0, cap = 0, r;

	if (!f) {
		strata_error("%s: %s", path, strerror(errno));
		return NULL;
	}
	do {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap);
			if (!nb) {
				strata_error("%s: out of memory", path);
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	if (ferror(f)) {
		strata_error("%s: read error: %s", path, strerror(errno));
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

static int print_ids(const int32_t *ids, int n, int leading_space)
{
	for (int i = 0; i < n; i++)
		printf(leading_space || i ? " %d" : "%d", ids[i]);
	putchar('\n');
	return 0;
}

static void print_pieces(const struct strata_tokenizer *t, const int32_t *ids, int n)
{
	char buf[512];

	for (int i = 0; i < n; i++) {
		int k = strata_token_to_piece(t, ids[i], buf, sizeof(buf));

		if (k > (int)sizeof(buf))
			k = (int)sizeof(buf);
		printf("%6d -> '%.*s'\n", ids[i], k < 0 ? 0 : k, buf);
	}
}

static int tokenize_one(const struct strata_tokenizer *t, const struct opts *o,
			const char *text, size_t len)
{
	int32_t *ids;
	int n = strata_tokenize(t, text, len, o->flags, &ids);

	if (n < 0) {
		if (n == -ENOMEM || n == -EOVERFLOW)
			strata_error("tokenize: %s", strerror(-n));
		return 1;
	}
	if (o->pieces)
		print_pieces(t, ids, n);
	else
		print_ids(ids, n, o->inp != NULL);
	free(ids);
	return 0;
}

/* One line of ids per test; the text after the last separator, if any, is a test too. */
static int run_inp(const struct strata_tokenizer *t, const struct opts *o, const char *data,
		   size_t len)
{
	const size_t sl = sizeof(SEPARATOR) - 1;
	size_t pos = 0;

	while (pos < len) {
		const char *p = data + pos, *end = data + len, *m = NULL;

		for (const char *c = p; (size_t)(end - c) >= sl; c++) {
			c = memchr(c, '\n', (size_t)(end - c) - sl + 1);
			if (!c)
				break;
			if (memcmp(c, SEPARATOR, sl) == 0) {
				m = c;
				break;
			}
		}
		if (!m)
			m = end;
		if (tokenize_one(t, o, p, (size_t)(m - p)))
			return 1;
		pos = (size_t)(m - data) + (m == end ? 0 : sl);
	}
	return 0;
}

int strata_cmd_tokenize(int argc, char **argv)
{
	struct opts o = { 0 };
	struct strata_gguf *g = NULL;
	struct strata_tokenizer *t = NULL;
	char *data = NULL;
	size_t len = 0;
	int rc = parse(argc, argv, &o);

	if (rc)
		return rc == 1 ? 0 : 2;
	if (o.file || o.inp) {
		data = read_all(o.file ? o.file : o.inp, &len);
		if (!data)
			return 1;
	}
	rc = 1;
	if (strata_gguf_open(o.model, &g) == 0 && strata_tokenizer_load(g, &t) == 0) {
		strata_gguf_close(g);
		g = NULL;
		if (o.inp)
			rc = run_inp(t, &o, data, len);
		else if (o.file)
			rc = tokenize_one(t, &o, data, len);
		else
			rc = tokenize_one(t, &o, o.prompt, strlen(o.prompt));
	}
	strata_tokenizer_free(t);
	strata_gguf_close(g);
	free(data);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		strata_error("writing the ids: %s", strerror(errno));
		rc = 1;
	}
	return rc;
}
