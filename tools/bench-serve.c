/*
 * bench-serve.c - strata-bench-serve: what a chat server's user waits for,
 * measured through the engine API (strata_generate_ex, as the server's
 * engine thread calls it; no HTTP), on the prompts a server sees:
 *
 *   first-token  "hi" in a chat header, read through the decode windows
 *                (--short-read 64) against batched (--short-read 0);
 *   follow-up    a short turn (a few to a few dozen new tokens) after a
 *                ~5K-token first turn: resumed from the turn checkpoint and
 *                read through the windows, against STRATA_CKPT_REREAD=1
 *                (the whole conversation read again);
 *   long-prompt  an 8K-token prompt with paths = path-window,path-batched
 *                against path-batched alone (windows must not slow it).
 *
 * Latency is from the call to the first token's callback (prompt read plus
 * one sampling).  Configurations alternate round by round, after one
 * warm-up each, so drift of the machine hits both alike; the median and
 * the best of the rounds are printed as a table and written as CSV (-o).
 *
 *   strata-bench-serve -m MODEL [-t THREADS] [-r ROUNDS] [-o FILE.csv]
 *                      [--plugin-dir DIR] [--only first|follow|long]
 */
#define _GNU_SOURCE /* setenv */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/chat.h"
#include "strata.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/strbuf.h"

static double now_ms(void)
{
	return (double)strata_now_ns() / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct opts {
	const char *model, *plugin_dir, *csv, *only;
	const char *threads;
	int rounds;
};

/* One configuration under test: an engine and what its runs measured. */
struct conf {
	const char *scenario, *name;
	struct strata_engine *e;
	double ms[64];       /* per round: ms to the first token */
	int n;
	uint32_t n_prompt, n_read; /* of the last round */
};

struct first_tok {
	double t0, t_first;
	char *text;      /* the answer's text when non-NULL (cap bytes, NUL-terminated) */
	size_t len, cap;
};

static int on_token(void *user, int32_t id, const char *piece, size_t len)
{
	struct first_tok *f = user;

	(void)id;
	if (f->t_first == 0)
		f->t_first = now_ms();
	if (f->text && f->len + len < f->cap) {
		memcpy(f->text + f->len, piece, len);
		f->len += len;
		f->text[f->len] = 0;
	}
	return 0;
}

static struct strata_engine *make_engine(const struct opts *o, const char *ctx,
					 const char *const *extra, int n_extra, int reread)
{
	const char *argv[32] = { "strata-bench-serve", "-m", o->model, "-t", o->threads,
				 "--ctx-size", ctx };
	struct strata_engine *e = NULL;
	int argc = 7;

	if (o->plugin_dir) {
		argv[argc++] = "--plugin-dir";
		argv[argc++] = o->plugin_dir;
	}
	for (int i = 0; i < n_extra; i++)
		argv[argc++] = extra[i];
	if (reread)
		setenv("STRATA_CKPT_REREAD", "1", 1);
	else
		unsetenv("STRATA_CKPT_REREAD");
	if (strata_engine_create_args(argc, (char **)argv, &e))
		e = NULL;
	unsetenv("STRATA_CKPT_REREAD");
	return e;
}

/*
 * Greedy generation of n_gen tokens; *ms = time to the first token.  The
 * answer's text goes to text (cap bytes) when it is non-NULL.
 */
static int generate(struct strata_engine *e, const int32_t *prompt, uint32_t n, int n_gen,
		    double *ms, struct strata_stats *st, char *text, size_t cap)
{
	struct strata_gen_params p;
	struct first_tok f = { .text = text, .cap = cap };
	int rc;

	if (text)
		text[0] = 0;
	strata_engine_gen_defaults(e, &p);
	p.temp = 0;
	p.n_predict = n_gen;
	f.t0 = now_ms();
	rc = strata_generate_ex(e, prompt, n, &p, on_token, &f, st);
	if (rc < 0)
		return rc;
	*ms = (f.t_first ? f.t_first : now_ms()) - f.t0;
	return rc;
}

static int run_round(struct conf *c, const int32_t *prompt, uint32_t n, int n_gen)
{
	struct strata_stats st;
	double ms;
	int rc = generate(c->e, prompt, n, n_gen, &ms, &st, NULL, 0);

	if (rc < 0)
		return rc;
	if (c->n < 64)
		c->ms[c->n++] = ms;
	c->n_prompt = st.n_prompt;
	c->n_read = st.n_prompt - st.n_reused;
	return 0;
}

static void report(FILE *csv, const struct conf *c)
{
	double s[64], med, best;

	memcpy(s, c->ms, (size_t)c->n * sizeof(double));
	qsort(s, (size_t)c->n, sizeof(double), cmp_double);
	med = c->n % 2 ? s[c->n / 2] : (s[c->n / 2 - 1] + s[c->n / 2]) / 2;
	best = s[0];
	printf("| %-12s | %-38s | %6u | %6u | %4d | %10.1f | %10.1f | %9.1f |\n", c->scenario,
	       c->name, c->n_prompt, c->n_read, c->n, med, best, c->n_read * 1e3 / med);
	if (csv) {
		/* The config names hold commas and quotes: one quoted field, quotes doubled. */
		fprintf(csv, "%s,\"", c->scenario);
		for (const char *p = c->name; *p; p++)
			fprintf(csv, *p == '"' ? "\"\"" : "%c", *p);
		fprintf(csv, "\",%u,%u,%d,%.3f,%.3f,%.1f\n", c->n_prompt, c->n_read, c->n, med, best,
			c->n_read * 1e3 / med);
	}
}

/* ---- prompts ------------------------------------------------------------------------- */

static const char *const sentences[] = {
	"The river runs past the old mill, where the miller counts sacks of grain each morning.",
	"In the second section, the council meets to decide how the bridge will be repaired.",
	"Merchants from the coast bring salt, cloth and news of storms far out at sea.",
	"Children learn their letters in a small school beside the chapel on the hill.",
	"When winter comes, the road over the pass closes and the valley keeps to itself.",
	"A traveller once wrote that the town's bread was the best between here and the sea.",
};

/* Text of at least `want` tokens (the tokenizer decides), malloc'd. */
static char *filler(struct strata_engine *e, int want)
{
	struct strata_buf t = { 0 };
	int n = 0;

	for (int i = 0; !t.oom && n < want; i++) {
		int32_t *ids;

		strata_buf_printf(&t, "%d. %s ", i + 1,
				  sentences[i % (sizeof(sentences) / sizeof(sentences[0]))]);
		if (i % 8 == 7 && (n = strata_engine_tokenize(e, t.p, t.len, 0, &ids)) >= 0)
			free(ids);
	}
	if (t.oom) {
		strata_buf_free(&t);
		return NULL;
	}
	return t.p;
}

/* Render messages with the template and tokenize as the server does. */
static int chat_tokens(struct strata_engine *e, const struct strata_chat *tmpl,
		       const struct strata_chat_msg *m, size_t n, int32_t **ids)
{
	struct strata_tmpl_err err;
	char *text;
	size_t len;
	int rc = strata_chat_render_msgs(tmpl, m, n, &text, &len, &err);

	if (rc) {
		fprintf(stderr, "strata-bench-serve: the chat template failed: %s\n", err.msg);
		return rc;
	}
	rc = strata_engine_tokenize(e, text, len,
				    STRATA_TOKENIZE_ADD_BOS | STRATA_TOKENIZE_PARSE_SPECIAL, ids);
	free(text);
	return rc;
}

/* The server's template for e ("auto": the model's, else plain), or a built-in by name. */
static struct strata_chat *open_chat(struct strata_engine *e, const char *setting)
{
	int32_t bos = strata_engine_token_bos(e), *ids = NULL;
	struct strata_chat_opts o = { .setting = setting, .model = strata_engine_chat_template(e),
				      .bos = bos >= 0 ? strata_engine_token_text(e, bos) : "",
				      .eos = "" };
	struct strata_chat *c;
	int n = strata_engine_tokenize(e, "", 0, STRATA_TOKENIZE_ADD_BOS, &ids);

	o.tokenizer_adds_bos = n > 0 && ids[0] == bos;
	free(ids);
	return strata_chat_create(&o, &c) ? NULL : c;
}

/* ---- scenarios ------------------------------------------------------------------------ */

static int bench_first(const struct opts *o, FILE *csv)
{
	static const char *const win[] = { "--short-read", "64", "--checkpoints", "0" };
	static const char *const bat[] = { "--short-read", "0", "--checkpoints", "0" };
	static const struct strata_chat_msg hi = { "user", "hi", 2 };
	struct conf c[2] = {
		{ .scenario = "first-token", .e = make_engine(o, "1024", win, 4, 0) },
		{ .scenario = "first-token", .e = make_engine(o, "1024", bat, 4, 0) },
	};
	struct strata_chat *tmpls[2] = { NULL, NULL };
	int rc = 0;

	if (!c[0].e || !c[1].e)
		return -EINVAL;
	tmpls[0] = open_chat(c[0].e, "auto");
	tmpls[1] = open_chat(c[0].e, "chatml");
	if (!tmpls[0] || !tmpls[1])
		rc = -EINVAL;
	for (int f = 0; f < 2 && !rc; f++) {
		static char names[4][96];
		int32_t *ids = NULL;
		int n = chat_tokens(c[0].e, tmpls[f], &hi, 1, &ids);
		double ms;
		struct strata_stats st;

		if (n < 0) {
			rc = n;
			break;
		}
		for (int k = 0; k < 2; k++) {
			snprintf(names[2 * f + k], sizeof(names[0]), "\"hi\" %s, short-read %s",
				 strata_chat_origin(tmpls[f]), k ? "0" : "64");
			c[k].name = names[2 * f + k];
			c[k].n = 0;
			generate(c[k].e, ids, (uint32_t)n, 1, &ms, &st, NULL, 0); /* warm-up */
		}
		for (int r = 0; r < o->rounds && !rc; r++)
			for (int k = 0; k < 2 && !rc; k++)
				rc = run_round(&c[k], ids, (uint32_t)n, 1);
		for (int k = 0; k < 2 && !rc; k++)
			report(csv, &c[k]);
		free(ids);
	}
	strata_chat_free(tmpls[0]);
	strata_chat_free(tmpls[1]);
	strata_engine_free(c[0].e);
	strata_engine_free(c[1].e);
	return rc;
}

/*
 * Turn 1: [user: ~5K-token document, assistant, user: question] -> answer;
 * turn 2 (5 messages): those, the answer (its text, as a client sends it
 * back), and a short question.  Only turn 2 is timed.
 */
static int bench_follow(const struct opts *o, FILE *csv)
{
	static const char *const ck[] = { "--short-read", "64", "--checkpoints", "8" };
	static const char *const q2[] = {
		"Why?",
		"Summarise the second section in two sentences, please, and name the river and "
		"the goods.",
	};
	struct conf c[2] = {
		{ .scenario = "follow-up", .e = make_engine(o, "8448", ck, 4, 0) },
		{ .scenario = "follow-up", .e = make_engine(o, "8448", ck, 4, 1) },
	};
	struct strata_chat_msg m[5] = {
		{ "user", NULL, 0 }, { "assistant", "Noted.", 6 },
		{ "user", "What is the document about?", 27 }, { "assistant", NULL, 0 },
		{ "user", NULL, 0 },
	};
	struct strata_chat *fmt;
	char *doc;
	int rc = 0;

	if (!c[0].e || !c[1].e)
		return -EINVAL;
	if (!(fmt = open_chat(c[0].e, "auto")))
		return -EINVAL;
	doc = filler(c[0].e, 5000);
	if (!doc) {
		strata_chat_free(fmt);
		return -ENOMEM;
	}
	m[0].content = doc;
	m[0].len = strlen(doc);
	for (size_t q = 0; q < sizeof(q2) / sizeof(q2[0]) && !rc; q++) {
		static char names[4][80];
		int32_t *t1 = NULL, *t2 = NULL;
		char answer[4096];
		int n1 = chat_tokens(c[0].e, fmt, m, 3, &t1), n2;
		struct strata_stats st;
		double ms;

		if (n1 < 0) {
			rc = n1;
			break;
		}
		/* Turn 1's answer, sent back as a client would (its text, not its tokens). */
		rc = generate(c[0].e, t1, (uint32_t)n1, 8, &ms, &st, answer, sizeof(answer));
		m[3].content = answer;
		m[3].len = strlen(answer);
		m[4].content = q2[q];
		m[4].len = strlen(q2[q]);
		n2 = rc < 0 ? -EINVAL : chat_tokens(c[0].e, fmt, m, 5, &t2);
		if (rc < 0 || n2 < 0) {
			free(t1);
			rc = rc < 0 ? rc : n2;
			break;
		}
		rc = 0;
		for (int k = 0; k < 2; k++) {
			snprintf(names[2 * q + k], sizeof(names[0]), "turn 2 (q%zu), %s", q + 1,
				 k ? "STRATA_CKPT_REREAD=1" : "checkpoint + windows");
			c[k].name = names[2 * q + k];
			c[k].n = 0;
		}
		for (int r = 0; r < o->rounds && !rc; r++)
			for (int k = 0; k < 2 && !rc; k++) {
				/*
				 * Turn 1 as the client saw it, then the timed turn 2.  Turn 1
				 * is re-run every round where it is cheap (resumed); the re-read
				 * engine keeps turn 1's checkpoints as split points anyway.
				 */
				if (k == 0 || r == 0)
					rc = generate(c[k].e, t1, (uint32_t)n1, 8, &ms, &st, NULL, 0);
				if (rc >= 0)
					rc = run_round(&c[k], t2, (uint32_t)n2, 1);
			}
		for (int k = 0; k < 2 && !rc; k++)
			report(csv, &c[k]);
		free(t1);
		free(t2);
	}
	free(doc);
	strata_chat_free(fmt);
	strata_engine_free(c[0].e);
	strata_engine_free(c[1].e);
	return rc;
}

static int bench_long(const struct opts *o, FILE *csv)
{
	static const char *const both[] = { "--paths", "path-window,path-batched", "--short-read",
					    "64", "--checkpoints", "0" };
	static const char *const bat[] = { "--paths", "path-batched", "--checkpoints", "0" };
	struct conf c[2] = {
		{ .scenario = "long-prompt", .name = "8K, paths = path-window,path-batched",
		  .e = make_engine(o, "8448", both, 6, 0) },
		{ .scenario = "long-prompt", .name = "8K, paths = path-batched",
		  .e = make_engine(o, "8448", bat, 4, 0) },
	};
	int32_t *ids = NULL;
	char *doc;
	int n, rc = 0;

	if (!c[0].e || !c[1].e)
		return -EINVAL;
	doc = filler(c[0].e, 8192);
	n = doc ? strata_engine_tokenize(c[0].e, doc, strlen(doc), STRATA_TOKENIZE_ADD_BOS, &ids)
		: -ENOMEM;
	free(doc);
	if (n < 8192) {
		free(ids);
		return n < 0 ? n : -EINVAL;
	}
	for (int r = 0; r < o->rounds && !rc; r++)
		for (int k = 0; k < 2 && !rc; k++)
			rc = run_round(&c[k], ids, 8192, 1);
	for (int k = 0; k < 2 && !rc; k++)
		report(csv, &c[k]);
	free(ids);
	strata_engine_free(c[0].e);
	strata_engine_free(c[1].e);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "plugin-dir", required_argument, NULL, 'P' },
		{ "only", required_argument, NULL, 'O' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .model = "/work/bench-models/bench-qwen3moe-q8_0.gguf",
			  .threads = "2", .rounds = 3 };
	FILE *csv = NULL;
	int ch, rc = 0;

	while ((ch = getopt_long(argc, argv, "m:t:r:o:", lo, NULL)) != -1) {
		switch (ch) {
		case 'm': o.model = optarg; break;
		case 't': o.threads = optarg; break;
		case 'r': o.rounds = atoi(optarg); break;
		case 'o': o.csv = optarg; break;
		case 'P': o.plugin_dir = optarg; break;
		case 'O': o.only = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-m MODEL] [-t THREADS] [-r ROUNDS] [-o CSV] "
				"[--plugin-dir DIR] [--only first|follow|long]\n", argv[0]);
			return 2;
		}
	}
	if (o.rounds < 1 || o.rounds > 64) {
		fprintf(stderr, "%s: -r takes 1 to 64 rounds\n", argv[0]);
		return 2;
	}
	strata_log_set_level(STRATA_LOG_LVL_WARN); /* keep the table readable */
	if (o.csv && !(csv = fopen(o.csv, "w"))) {
		perror(o.csv);
		return 1;
	}
	if (csv)
		fprintf(csv, "scenario,config,prompt_tokens,read_tokens,rounds,median_ms,best_ms,"
			"read_tok_per_s\n");
	printf("model %s, %s threads, %d rounds; ms = call to first token (engine API)\n\n",
	       o.model, o.threads, o.rounds);
	printf("| %-12s | %-38s | %6s | %6s | %4s | %10s | %10s | %9s |\n", "scenario", "config",
	       "prompt", "read", "runs", "median ms", "best ms", "read t/s");
	printf("|--------------|----------------------------------------|--------|--------|------|"
	       "------------|------------|-----------|\n");
	if (!o.only || !strcmp(o.only, "first"))
		rc = bench_first(&o, csv);
	if (!rc && (!o.only || !strcmp(o.only, "follow")))
		rc = bench_follow(&o, csv);
	if (!rc && (!o.only || !strcmp(o.only, "long")))
		rc = bench_long(&o, csv);
	if (csv)
		fclose(csv);
	if (rc)
		fprintf(stderr, "strata-bench-serve: failed: %s\n", strerror(-rc));
	return rc ? 1 : 0;
}
