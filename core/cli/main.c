/*
 * main.c - the strata command: the main job (generate, or serve) and the
 * tools (strata_command), through the application API (strata.h) alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata.h"

/* The tools' lines; the options' help follows from strata_engine_create_args. */
static void usage(const char *prog)
{
	const char *name, *help;

	printf("usage: %s [-c strata.ini] [options]      generate text (see --help)\n", prog);
	for (int i = 0; (name = strata_command_name(i, &help)) != NULL; i++)
		printf("       %s %-10s [args]           %s\n", prog, name, help);
	printf("\n");
}

struct run_state {
	int32_t *tokens; /* prompt, then generated */
	uint32_t n, cap;
	int quiet;       /* --dump-logits: stdout carries the sha256 line only */
};

static int on_token(void *user, int32_t id, const char *piece, size_t len)
{
	struct run_state *st = user;

	if (st->n < st->cap)
		st->tokens[st->n++] = id;
	if (st->quiet)
		return 0;
	fwrite(piece, 1, len, stdout);
	fflush(stdout);
	return 0;
}

static int run(int argc, char **argv)
{
	struct strata_engine *e;
	struct strata_stats st = { 0 };
	struct run_state rs = { 0 };
	int32_t *prompt = NULL;
	const char *dump;
	char line[1024];
	struct strata_gen_params g;
	int rc, n;

	rc = strata_engine_create_args(argc, argv, &e);
	if (rc == 1)
		return 0; /* --help */
	if (rc)
		return 1;
	if (!strcmp(strata_engine_setting(e, "serve", "enabled"), "true")) {
		rc = strata_serve(e);
		strata_engine_free(e);
		return rc < 0 ? 1 : 0;
	}
	n = strata_engine_prompt_tokens(e, &prompt);
	if (n < 0) {
		strata_engine_free(e);
		return 1;
	}
	if ((uint32_t)n > strata_engine_n_ctx(e)) {
		fprintf(stderr, "strata: error: the prompt has %d tokens but the context holds %u "
			"(raise [model] ctx_size or --ctx-size)\n", n, strata_engine_n_ctx(e));
		free(prompt);
		strata_engine_free(e);
		return 1;
	}
	rs.cap = strata_engine_n_ctx(e) + 1;
	rs.tokens = malloc(rs.cap * sizeof(int32_t));
	if (!rs.tokens) {
		free(prompt);
		strata_engine_free(e);
		return 1;
	}
	memcpy(rs.tokens, prompt, (size_t)n * sizeof(int32_t));
	rs.n = (uint32_t)n;
	dump = strata_engine_setting(e, "run", "dump_logits");
	rs.quiet = dump != NULL;
	if (!rs.quiet) {
		size_t len;
		const char *text = strata_engine_prompt_text(e, &len);

		fwrite(text, 1, len, stdout);
	}
	strata_engine_gen_defaults(e, &g); /* [run] n_predict and the sampler's settings */
	rc = strata_generate(e, prompt, (uint32_t)n, g.n_predict, on_token, &rs, &st);
	if (!rs.quiet)
		printf("\n");
	fflush(stdout); /* the timing line on stderr comes after the text */
	if (rc >= 0 && rs.quiet)
		rc = strata_engine_write_dump(e, rs.tokens, (uint32_t)n, st.n_gen, dump);
	if (rc >= 0) {
		fprintf(stderr, "prompt %u tokens in %.2f ms (%.1f tok/s); generated %u tokens in "
			"%.2f ms (%.1f tok/s)\n", st.n_prompt, st.prompt_ms,
			st.prompt_ms > 0 ? st.n_prompt * 1e3 / st.prompt_ms : 0.0, st.n_gen,
			st.gen_ms, st.gen_ms > 0 ? st.n_gen * 1e3 / st.gen_ms : 0.0);
		if (st.n_windows) /* speculative decoding ([spec] drafter) */
			fprintf(stderr, "drafts accepted %u of %u (%.0f%%), %.2f tokens per window\n",
				st.n_accepted, st.n_drafted,
				st.n_drafted ? 100.0 * st.n_accepted / st.n_drafted : 0.0,
				(double)(st.n_windows + st.n_accepted) / st.n_windows);
		if (st.n_chunks && !strcmp(strata_engine_arch(e), "qwen4exp")) /* its PLE reads */
			fprintf(stderr, "prefill %u tokens in %u chunks, %.2f ms (%.1f tok/s); PLE %.2f "
				"ms\n", st.n_prompt - st.n_reused, st.n_chunks, st.prompt_ms,
				st.prompt_ms > 0 ? (st.n_prompt - st.n_reused) * 1e3 / st.prompt_ms
						 : 0.0, st.ple_wait_ms);
		strata_engine_backends(e, line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
	free(prompt);
	free(rs.tokens);
	strata_engine_free(e);
	return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && argv[1][0] != '-') {
		int rc = strata_command(argc - 1, argv + 1);

		return rc == -ENOENT ? 2 : rc < 0 ? 1 : rc; /* (no such tool: usage) */
	}
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(argv[0]);
			break; /* strata_engine_create_args prints the options */
		}
	return run(argc, argv);
}
