/*
 * slog_compare.c - compare a --dump-logits file with a ../shared/golden
 * reference (F32 models), as check_cli's dump_logits_golden does on Linux:
 * the prompt's tokens equal, the greedy tokens equal (unless llama.cpp's own
 * top two were a near tie: the comparison stops there), every compared row
 * within 1e-3.  Built for the Windows build's tests and run under Wine, so
 * the check runs where the numbers were made.
 *   slog_compare GOLDEN.slog OUT.slog      exit 0 when they agree, 1 if not
 */
#include <math.h>
#include <stdio.h>

#include "../slog.h"

static int compare(const struct slog *g, const struct slog *s)
{
	uint32_t rows = g->n_prompt + g->n_gen, i;
	double worst = 0.0;

	if (s->n_prompt != g->n_prompt || s->n_vocab != g->n_vocab) {
		printf("shape: %u prompt tokens x %u, want %u x %u\n", s->n_prompt, s->n_vocab,
		       g->n_prompt, g->n_vocab);
		return 1;
	}
	for (i = 0; i < g->n_prompt; i++)
		if (s->tokens[i] != g->tokens[i]) {
			printf("prompt token %u is %d, want %d\n", i, s->tokens[i], g->tokens[i]);
			return 1;
		}
	for (i = g->n_prompt; i < rows; i++) {
		float gap = slog_top2_gap(g->logits + (size_t)(i - 1) * g->n_vocab, g->n_vocab);

		if (i >= s->n_prompt + s->n_gen) {
			printf("generated %u tokens, want %u\n", s->n_gen, g->n_gen);
			return 1;
		}
		if (s->tokens[i] != g->tokens[i]) {
			if (gap >= 1e-3f) {
				printf("generated token %u is %d, want %d (gap %g)\n", i,
				       s->tokens[i], g->tokens[i], gap);
				return 1;
			}
			printf("near tie at %u (gap %g): comparing up to there\n", i, gap);
			rows = i;
			break;
		}
	}
	for (uint32_t r = 0; r < rows; r++)
		for (uint32_t v = 0; v < g->n_vocab; v++) {
			double d = fabs((double)s->logits[(size_t)r * g->n_vocab + v] -
					g->logits[(size_t)r * g->n_vocab + v]);

			if (!(d <= worst))
				worst = isnan(d) ? INFINITY : d;
		}
	printf("%u tokens agree; logits max |diff| %.2e over %u rows\n", rows, worst, rows);
	if (worst > 1e-3) {
		printf("max |diff| %g > 1e-3\n", worst);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct slog g, s;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: slog_compare GOLDEN.slog OUT.slog\n");
		return 2;
	}
	if (slog_read(argv[1], &g)) {
		fprintf(stderr, "slog_compare: cannot read %s as a .slog file\n", argv[1]);
		return 2;
	}
	if (slog_read(argv[2], &s)) {
		fprintf(stderr, "slog_compare: cannot read %s as a .slog file\n", argv[2]);
		slog_free(&g);
		return 2;
	}
	rc = compare(&g, &s);
	slog_free(&s);
	slog_free(&g);
	return rc;
}
