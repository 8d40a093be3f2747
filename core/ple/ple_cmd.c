/*
 * ple_cmd.c - `strata ple-ids`: the 16 PLE row ids of each token.
 *
 * For checking the row-id function against another implementation: token
 * ids come from the arguments or from stdin, the two-token history from
 * --history (default: a fresh sequence), the parameters from a qwen4exp GGUF
 * (-m) or the published defaults.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "ple/ple.h"
#include "util/log.h"

static void ids_usage(FILE *f)
{
	fprintf(f, "usage: strata ple-ids [--history A B] [-m MODEL.gguf] [TOKEN...]\n"
		   "\n"
		   "Prints one line per token: the token and its 16 PLE row ids (heads 0-7\n"
		   "from the bigram, 8-15 from the trigram).  Without TOKEN arguments the\n"
		   "ids are read from stdin, separated by white space.\n"
		   "  --history A B  the two tokens before the first one (A the older);\n"
		   "                 default: the start of a sequence (EOS EOS)\n"
		   "  -m MODEL.gguf  take the hash parameters from a qwen4exp model\n");
}

/* A token id: decimal, 0 .. INT32_MAX. */
static int parse_token(const char *s, int32_t *out)
{
	char *end;
	long long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno || v < 0 || v > INT32_MAX)
		return -EINVAL;
	*out = (int32_t)v;
	return 0;
}

static void print_token(const struct strata_ple_hash *h, struct strata_ple_hist *st,
			int32_t tok)
{
	uint64_t rows[STRATA_PLE_HEADS];

	strata_ple_row_ids(h, st, &tok, 1, rows);
	printf("%d", (int)tok);
	for (int k = 0; k < STRATA_PLE_HEADS; k++)
		printf(" %" PRIu64, rows[k]);
	printf("\n");
}

static int ids_from_stdin(const struct strata_ple_hash *h, struct strata_ple_hist *st)
{
	char word[64];
	int32_t tok;
	int n;

	while ((n = scanf("%63s", word)) == 1) {
		if (parse_token(word, &tok)) {
			strata_error("ple-ids: bad token id '%s' on stdin (expected 0 to %d)", word,
				     INT32_MAX);
			return 1;
		}
		print_token(h, st, tok);
	}
	return 0;
}

int strata_cmd_ple_ids(int argc, char **argv)
{
	struct strata_ple_hash h;
	struct strata_ple_hist st;
	const char *model = NULL;
	int32_t hist[2] = { -1, -1 }, tok;
	int i, first_tok = argc, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			ids_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--history")) {
			if (i + 2 >= argc || parse_token(argv[i + 1], &hist[0]) ||
			    parse_token(argv[i + 2], &hist[1])) {
				strata_error("ple-ids: --history needs two token ids (0 to %d)",
					     INT32_MAX);
				return 2;
			}
			i += 2;
		} else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
			if (++i >= argc) {
				strata_error("ple-ids: %s needs a file", argv[i - 1]);
				return 2;
			}
			model = argv[i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			strata_error("ple-ids: unknown option '%s'", argv[i]);
			ids_usage(stderr);
			return 2;
		} else {
			first_tok = i;
			break;
		}
	}
	strata_ple_hash_default(&h);
	if (model) {
		struct strata_gguf *g;

		if (strata_gguf_open(model, &g))
			return 1;
		rc = strata_ple_hash_from_gguf(g, &h);
		strata_gguf_close(g);
		if (rc)
			return 1;
	}
	strata_ple_hist_init(&h, &st);
	if (hist[0] >= 0) {
		st.prev2 = (uint64_t)hist[0];
		st.prev1 = (uint64_t)hist[1];
	}
	for (i = first_tok; i < argc; i++)
		if (parse_token(argv[i], &tok)) {
			strata_error("ple-ids: bad token id '%s' (expected 0 to %d)", argv[i],
				     INT32_MAX);
			return 2;
		}
	if (first_tok == argc)
		return ids_from_stdin(&h, &st);
	for (i = first_tok; i < argc; i++) {
		parse_token(argv[i], &tok);
		print_token(&h, &st, tok);
	}
	return 0;
}
