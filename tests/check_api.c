/*
 * check_api.c - the application API without an argv (core/api/params.c,
 * include/strata.h): parameters with their defaults, checked as strata.ini
 * is; engines made from them, two at once from one strata_params freed
 * before they generate, giving the strata command's tokens; the log
 * callback; strata_last_error() telling of the last call alone; sequences
 * sharing one model (strata_engine_new_sequence), also from two threads.
 *
 * The engine cases need ../shared/models/stories260K.gguf and skip without it.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strata.h"
#include "testutil.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[8192];
static int g_errors;

static void on_log(void *user, int level, const char *line)
{
	(void)user;
	pthread_mutex_lock(&g_mu);
	if (level == 0)
		g_errors++;
	snprintf(g_log + strlen(g_log), sizeof(g_log) - strlen(g_log), "%d %s\n", level, line);
	pthread_mutex_unlock(&g_mu);
}

static void log_reset(void)
{
	g_log[0] = 0;
	g_errors = 0;
}

/* ---- parameters ---------------------------------------------------------------- */

START_TEST(defaults_and_sets)
{
	struct strata_params *p;

	ck_assert_int_eq(strata_params_create(&p), 0);
	ck_assert_str_eq(strata_params_get(p, "run", "temp"), "0.8");
	ck_assert_str_eq(strata_params_get(p, "run", "n_predict"), "128");
	ck_assert_ptr_null(strata_params_get(p, "model", "path"));
	ck_assert_int_eq(strata_params_set(p, "run", "temp", "0"), 0);
	ck_assert_int_eq(strata_params_set(p, "run", "n_predict", "7"), 0);
	ck_assert_int_eq(strata_params_set(p, "model", "path", "/m.gguf"), 0);
	ck_assert_str_eq(strata_params_get(p, "run", "temp"), "0");
	ck_assert_str_eq(strata_params_get(p, "run", "n_predict"), "7");
	ck_assert_str_eq(strata_params_get(p, "model", "path"), "/m.gguf");
	/* A plugin's section takes any key now; the plugin checks it when it loads. */
	ck_assert_int_eq(strata_params_set(p, "io-pread", "threads", "3"), 0);
	ck_assert_str_eq(strata_params_get(p, "io-pread", "threads"), "3");
	ck_assert_str_eq(strata_last_error(), "");
	strata_params_free(p);
	strata_params_free(NULL);
}
END_TEST

START_TEST(bad_keys_and_values)
{
	struct strata_params *p;

	ck_assert_int_eq(strata_params_create(&p), 0);
	strata_set_log(on_log, NULL);
	log_reset();
	ck_assert_int_eq(strata_params_set(p, "run", "tmep", "0"), -EINVAL);
	ck_assert_str_eq(strata_last_error(),
			 "strata_params_set: unknown key 'tmep' in [run] (did you mean 'temp'?)");
	ck_assert_int_eq(strata_params_set(p, "run", "temp", "warm"), -EINVAL);
	ck_assert_msg(strstr(strata_last_error(), "bad value 'warm' for run.temp"), "%s",
		      strata_last_error());
	ck_assert_int_eq(strata_params_set(p, "run", "n_predict", "-5"), -EINVAL);
	ck_assert_int_eq(strata_params_set(p, "run", NULL, "1"), -EINVAL);
	ck_assert_str_eq(strata_last_error(), "strata_params_set: NULL key");
	ck_assert_int_eq(g_errors, 4); /* one line each, through the callback */
	/* A refused set leaves the value as it was; a good call clears the error. */
	ck_assert_str_eq(strata_params_get(p, "run", "temp"), "0.8");
	ck_assert_int_eq(strata_params_set(p, "run", "temp", "0.5"), 0);
	ck_assert_str_eq(strata_last_error(), "");
	strata_set_log(NULL, NULL);
	strata_params_free(p);
}
END_TEST

START_TEST(load_ini)
{
	char dir[] = "/tmp/strata-check-api-XXXXXX", ini[64], bad[64];
	struct strata_params *p;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(ini, sizeof(ini), "%s/a.ini", dir);
	snprintf(bad, sizeof(bad), "%s/b.ini", dir);
	const char *good_text = "[run]\nn_predict = 9\ntemp = 0.25\n", *bad_text = "[run]\nn_predcit = 9\n";

	ck_assert_int_eq(tu_write_file(ini, good_text, strlen(good_text)), 0);
	ck_assert_int_eq(tu_write_file(bad, bad_text, strlen(bad_text)), 0);
	ck_assert_int_eq(strata_params_create(&p), 0);
	ck_assert_int_eq(strata_params_set(p, "run", "n_predict", "3"), 0);
	ck_assert_int_eq(strata_params_load(p, ini), 0); /* later wins */
	ck_assert_str_eq(strata_params_get(p, "run", "n_predict"), "9");
	ck_assert_int_eq(strata_params_set(p, "run", "temp", "0"), 0);
	ck_assert_str_eq(strata_params_get(p, "run", "temp"), "0");
	strata_set_log(on_log, NULL);
	ck_assert_int_eq(strata_params_load(p, bad), -EINVAL);
	ck_assert_msg(strstr(strata_last_error(), "b.ini:2") && strstr(strata_last_error(), "n_predcit"),
		      "%s", strata_last_error());
	ck_assert_int_lt(strata_params_load(p, "/nonexistent/strata.ini"), 0);
	ck_assert_msg(strstr(strata_last_error(), "/nonexistent/strata.ini"), "%s",
		      strata_last_error());
	strata_set_log(NULL, NULL);
	strata_params_free(p);
	unlink(ini);
	unlink(bad);
	rmdir(dir);
}
END_TEST

/* ---- engines ------------------------------------------------------------------------- */

struct text {
	char s[4096];
	size_t n;
};

static int collect(void *user, int32_t id, const char *piece, size_t len)
{
	struct text *t = user;

	(void)id;
	if (t->n + len < sizeof(t->s)) {
		memcpy(t->s + t->n, piece, len);
		t->n += len;
		t->s[t->n] = 0;
	}
	return 0;
}

static void generate(struct strata_engine *e, const char *prompt, struct text *out)
{
	struct strata_gen_params g;
	struct strata_stats st;
	int32_t *ids = NULL;
	int n = strata_engine_tokenize(e, prompt, strlen(prompt),
				       STRATA_TOKENIZE_ADD_BOS | STRATA_TOKENIZE_PARSE_SPECIAL, &ids);

	ck_assert_int_gt(n, 0);
	strata_engine_gen_defaults(e, &g);
	ck_assert_int_eq(g.n_predict, 24);
	ck_assert(g.temp == 0.0f);
	memset(out, 0, sizeof(*out));
	ck_assert_int_eq(strata_generate_ex(e, ids, (uint32_t)n, &g, collect, out, &st), 24);
	ck_assert_str_eq(strata_last_error(), "");
	strata_free(ids);
}

START_TEST(engines_from_params)
{
	const char *model = tu_shared("models/stories260K.gguf");
	struct strata_engine *a, *b;
	struct strata_params *p;
	struct text ta, tb;
	char cmd[4096], cli[8192];

	if (!model)
		TU_SKIP("../shared/models/stories260K.gguf is absent");
	ck_assert_int_eq(strata_params_create(&p), 0);
	ck_assert_int_eq(strata_params_set(p, "model", "path", model), 0);
	ck_assert_int_eq(strata_params_set(p, "run", "n_predict", "24"), 0);
	ck_assert_int_eq(strata_params_set(p, "run", "temp", "0"), 0);
	ck_assert_int_eq(strata_params_set(p, "plugins", "dir", STRATA_PLUGIN_DIR), 0);
	ck_assert_int_eq(strata_engine_open(p, &a), 0);
	ck_assert_int_eq(strata_engine_open(p, &b), 0);
	strata_params_free(p); /* the engines keep nothing of it */
	ck_assert_str_eq(strata_engine_model_name(a), "stories260K");
	generate(a, "Once upon a time", &ta);
	generate(b, "Once upon a time", &tb);
	ck_assert_str_eq(ta.s, tb.s);
	/* The strata command, same settings, prints the prompt and then the same text. */
	snprintf(cmd, sizeof(cmd), "%s -m %s -p 'Once upon a time' -n 24 --temp 0 2>/dev/null",
		 STRATA_BIN, model);
	ck_assert_int_eq(tu_run(cmd, cli, sizeof(cli)), 0);
	ck_assert_msg(!strncmp(cli, "Once upon a time", 16) && !strncmp(cli + 16, ta.s, ta.n),
		      "command: '%s'\napi: '%s'", cli, ta.s);
	strata_engine_free(a);
	strata_engine_free(b);
}
END_TEST

static struct strata_engine *open_story(const char *model, const char *gpu)
{
	struct strata_engine *e;
	struct strata_params *p;

	ck_assert_int_eq(strata_params_create(&p), 0);
	ck_assert_int_eq(strata_params_set(p, "model", "path", model), 0);
	ck_assert_int_eq(strata_params_set(p, "run", "n_predict", "24"), 0);
	ck_assert_int_eq(strata_params_set(p, "run", "temp", "0"), 0);
	ck_assert_int_eq(strata_params_set(p, "plugins", "dir", STRATA_PLUGIN_DIR), 0);
	if (gpu)
		ck_assert_int_eq(strata_params_set(p, "gpu", "plugin", gpu), 0);
	ck_assert_int_eq(strata_engine_open(p, &e), 0);
	strata_params_free(p);
	return e;
}

struct gen_job {
	struct strata_engine *e;
	const char *prompt;
	struct text out;
};

static void *gen_thread(void *arg)
{
	struct gen_job *j = arg;

	generate(j->e, j->prompt, &j->out);
	return NULL;
}

/*
 * Sequences on one model: each generates what an engine of its own does,
 * whatever the others did before; the model outlives the engine it came
 * from; two threads generating at once each get their own text.
 */
START_TEST(sequences_share_a_model)
{
	const char *model = tu_shared("models/stories260K.gguf");
	static const char *const prompts[2] = { "Once upon a time", "Lily and Tom went to" };
	struct strata_engine *a, *s1, *s2, *fresh;
	struct text want[2], got;
	struct gen_job jobs[2];
	pthread_t t[2];

	if (!model)
		TU_SKIP("../shared/models/stories260K.gguf is absent");
	for (int i = 0; i < 2; i++) {
		fresh = open_story(model, NULL);
		generate(fresh, prompts[i], &want[i]);
		strata_engine_free(fresh);
	}
	a = open_story(model, NULL);
	ck_assert_int_eq(strata_engine_new_sequence(a, &s1), 0);
	ck_assert_int_eq(strata_engine_new_sequence(s1, &s2), 0);
	ck_assert_str_eq(strata_engine_model_name(s2), "stories260K");
	ck_assert_uint_eq(strata_engine_n_ctx(s2), strata_engine_n_ctx(a));
	generate(a, prompts[0], &got);
	ck_assert_str_eq(got.s, want[0].s);
	generate(s1, prompts[1], &got);
	ck_assert_str_eq(got.s, want[1].s);
	generate(s2, prompts[0], &got);
	ck_assert_str_eq(got.s, want[0].s);
	generate(a, prompts[1], &got); /* a's sequence moves on from its own history */
	ck_assert_str_eq(got.s, want[1].s);
	strata_engine_free(a); /* the model stays: s1 and s2 are on it */
	for (int i = 0; i < 2; i++) {
		jobs[i].e = i ? s2 : s1;
		jobs[i].prompt = prompts[i];
		ck_assert_int_eq(pthread_create(&t[i], NULL, gen_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++)
		ck_assert_str_eq(jobs[i].out.s, want[i].s);
	strata_engine_free(s2);
	strata_engine_free(s1);
}
END_TEST

/* On a device the state of one sequence is all placement kept room for: refused, saying so. */
START_TEST(sequence_on_a_device)
{
	const char *model = tu_shared("models/stories260K.gguf");
	struct strata_engine *a, *s = (struct strata_engine *)1;

	if (!model)
		TU_SKIP("../shared/models/stories260K.gguf is absent");
	setenv("STRATA_PLUGIN_PATH", STRATA_PLUGIN_DIR "/test", 1);
	a = open_story(model, "gpu-sim");
	strata_set_log(on_log, NULL);
	ck_assert_int_eq(strata_engine_new_sequence(a, &s), -ENOTSUP);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(strata_last_error(), "[gpu] plugin = none"), "%s", strata_last_error());
	strata_set_log(NULL, NULL);
	strata_engine_free(a);
	unsetenv("STRATA_PLUGIN_PATH");
}
END_TEST

START_TEST(open_errors)
{
	const char *model = tu_shared("models/stories260K.gguf");
	struct strata_engine *e = (struct strata_engine *)1;
	struct strata_params *p;

	strata_set_log(on_log, NULL);
	log_reset();
	ck_assert_int_eq(strata_engine_open(NULL, &e), -EINVAL);
	ck_assert_ptr_null(e);
	ck_assert_int_eq(strata_params_create(&p), 0);
	ck_assert_int_eq(strata_params_set(p, "model", "path", "/nonexistent/m.gguf"), 0);
	ck_assert_int_lt(strata_engine_open(p, &e), 0);
	ck_assert_ptr_null(e);
	ck_assert_msg(strstr(strata_last_error(), "/nonexistent/m.gguf"), "%s", strata_last_error());
	ck_assert_msg(!strncmp(g_log, "0 strata_engine_open: NULL params\n", 34) &&
			      strstr(g_log, "/nonexistent/m.gguf") && g_errors == 2,
		      "%d errors:\n%s", g_errors, g_log);
	if (model) { /* a key the plugin does not take fails when it loads, naming it */
		ck_assert_int_eq(strata_params_set(p, "model", "path", model), 0);
		ck_assert_int_eq(strata_params_set(p, "plugins", "dir", STRATA_PLUGIN_DIR), 0);
		ck_assert_int_eq(strata_params_set(p, "path-batched", "chunk_size", "4"), 0);
		ck_assert_int_eq(strata_engine_open(p, &e), -EINVAL);
		ck_assert_msg(strstr(strata_last_error(), "unknown key 'chunk_size' in [path-batched]"),
			      "%s", strata_last_error());
	}
	strata_set_log(NULL, NULL);
	strata_params_free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("params");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, defaults_and_sets);
	tcase_add_test(tc, bad_keys_and_values);
	tcase_add_test(tc, load_ini);
	tcase_add_test(tc, engines_from_params);
	tcase_add_test(tc, sequences_share_a_model);
	tcase_add_test(tc, sequence_on_a_device);
	tcase_add_test(tc, open_errors);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
