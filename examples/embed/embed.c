/*
 * embed - a program that embeds strata through its application API
 * (include/strata.h, libstrata), built against the installed library only:
 *
 *   cc embed.c $(pkg-config --cflags --libs strata) -o embed
 *   ./embed MODEL.gguf "Once upon a time" run.n_predict=32 run.temp=0
 *
 * Every SECTION.KEY=VALUE argument is a strata.ini setting; the model and
 * prompt are [model] path and [run] prompt.  It prints the prompt and then
 * each token's text as it comes, and one line of timings on stderr; strata's
 * own log lines go through a callback, prefixed with their level.  Any
 * failure prints strata_last_error() and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <strata.h>

static void on_log(void *user, int level, const char *line)
{
	static const char *const names[] = { "error", "warning", "info", "debug", "progress" };

	(void)user;
	if (level >= 0 && level <= 4)
		fprintf(stderr, "embed: strata %s: %s\n", names[level], line);
}

static int on_token(void *user, int32_t id, const char *piece, size_t len)
{
	(void)user;
	(void)id;
	fwrite(piece, 1, len, stdout);
	fflush(stdout);
	return 0; /* non-zero would stop the generation */
}

/* "section.key=value" into p. */
static int set_arg(struct strata_params *p, const char *arg)
{
	char buf[1024], *dot, *eq;

	if (strlen(arg) >= sizeof(buf) || !(eq = strchr(strcpy(buf, arg), '=')) ||
	    !(dot = memchr(buf, '.', (size_t)(eq - buf)))) {
		fprintf(stderr, "embed: '%s': expected SECTION.KEY=VALUE\n", arg);
		return -1;
	}
	*dot = *eq = 0;
	return strata_params_set(p, buf, dot + 1, eq + 1);
}

int main(int argc, char **argv)
{
	struct strata_params *p = NULL;
	struct strata_engine *e = NULL;
	struct strata_gen_params g;
	struct strata_stats st;
	int32_t *ids = NULL;
	int n, rc = 1;

	if (argc < 3) {
		fprintf(stderr, "usage: %s MODEL.gguf PROMPT [SECTION.KEY=VALUE...]\n", argv[0]);
		return 2;
	}
	strata_set_log(on_log, NULL);
	if (strata_params_create(&p) || strata_params_set(p, "model", "path", argv[1]))
		goto out;
	for (int i = 3; i < argc; i++)
		if (set_arg(p, argv[i]))
			goto out;
	if (strata_engine_open(p, &e))
		goto out;
	strata_params_free(p); /* the engine keeps nothing of it */
	p = NULL;
	n = strata_engine_tokenize(e, argv[2], strlen(argv[2]),
				   STRATA_TOKENIZE_ADD_BOS | STRATA_TOKENIZE_PARSE_SPECIAL, &ids);
	if (n < 0)
		goto out;
	strata_engine_gen_defaults(e, &g); /* [run] n_predict, temp, ... as set above */
	fputs(argv[2], stdout);
	if (strata_generate_ex(e, ids, (uint32_t)n, &g, on_token, NULL, &st) < 0)
		goto out;
	printf("\n");
	fprintf(stderr, "embed: strata %s, %s: %u prompt tokens, %u generated in %.1f ms\n",
		strata_version(), strata_engine_model_name(e), st.n_prompt, st.n_gen, st.gen_ms);
	rc = 0;
out:
	if (rc && *strata_last_error())
		fprintf(stderr, "embed: %s\n", strata_last_error());
	strata_free(ids);
	strata_engine_free(e);
	strata_params_free(p);
	return rc;
}
