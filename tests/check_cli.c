#define _GNU_SOURCE /* memmem */
/*
 * check_cli.c - the strata command end to end: the main job, --dump-logits
 * against the golden files, and every kind of bad input giving one clear
 * error and a non-zero exit (never a crash or a hang).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slog.h"
#include "testutil.h"

static char g_out[1 << 16];

/* Run `strata ARGS` from the repository root; returns the exit status. */
static int strata(const char *args)
{
	char cmd[16384];

	snprintf(cmd, sizeof(cmd), "%s %s", STRATA_BIN, args);
	return tu_run(cmd, g_out, sizeof(g_out));
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* A refusal: exit 1, exactly one error line, and it mentions `what`. */
static void assert_refused(int rc, const char *what)
{
	ck_assert_msg(rc == 1, "exit %d (want 1); output:\n%s", rc, g_out);
	ck_assert_msg(count(g_out, "error:") == 1, "want one error line, got:\n%s", g_out);
	ck_assert_msg(strstr(g_out, what), "error does not mention '%s':\n%s", what, g_out);
}

START_TEST(main_job)
{
	int rc;

	tu_shared_or_skip("models/stories260K.gguf");
	rc = strata("-c strata.ini -n 40 -t 2");
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, g_out);
	ck_assert_msg(strstr(g_out, "Once upon a time"), "no prompt echo:\n%s", g_out);
	/* strata.ini's prompt is 16 tokens with BOS; 40 tokens unless EOS comes first. */
	ck_assert_msg(strstr(g_out, "prompt 16 tokens in "), "no timing line:\n%s", g_out);
	ck_assert_msg(strstr(g_out, "tok/s); generated "), "timing line layout:\n%s", g_out);
}
END_TEST

START_TEST(seeded_runs_repeat)
{
	char first[sizeof(g_out)];

	tu_shared_or_skip("models/stories260K.gguf");
	/* The text is the same with 1 and 2 threads; the timing line differs. */
	ck_assert_int_eq(strata("-c strata.ini -n 30 --seed 7"), 0);
	ck_assert_ptr_nonnull(strstr(g_out, "\nprompt "));
	*strstr(g_out, "\nprompt ") = 0;
	memcpy(first, g_out, sizeof(first));
	ck_assert_int_eq(strata("-c strata.ini -n 30 --seed 7 -t 1"), 0);
	ck_assert_ptr_nonnull(strstr(g_out, "\nprompt "));
	*strstr(g_out, "\nprompt ") = 0;
	ck_assert_str_eq(first, g_out);
	/* ...and another seed tells another story. */
	ck_assert_int_eq(strata("-c strata.ini -n 30 --seed 8"), 0);
	ck_assert_str_ne(first, g_out);
}
END_TEST

static void compare_dump(const char *model, const char *prompt)
{
	char args[2048], rel[256], *path;
	const char *dir = tu_tmpdir();
	struct slog g, s;
	double worst = 0.0;
	int rc;

	snprintf(rel, sizeof(rel), "golden/%s.%s.slog", model, prompt);
	ck_assert_int_eq(slog_read(tu_shared_or_skip(rel), &g), 0);
	snprintf(rel, sizeof(rel), "models/%s.gguf", model);
	path = strdup(tu_shared_or_skip(rel));
	snprintf(args, sizeof(args), "-m %s -f %s/golden/prompts/%s.txt -n %u -t 2 "
		 "--dump-logits %s/out.slog", path, STRATA_SHARED, prompt, g.n_gen, dir);
	rc = strata(args);
	ck_assert_msg(rc == 0, "exit %d:\n%s", rc, g_out);
	ck_assert_msg(strstr(g_out, "logits sha256 (first generated token): "), "%s", g_out);
	snprintf(rel, sizeof(rel), "%s/out.slog", dir);
	ck_assert_int_eq(slog_read(rel, &s), 0);
	ck_assert_uint_eq(s.n_prompt, g.n_prompt);
	ck_assert_uint_eq(s.n_vocab, g.n_vocab);
	for (uint32_t i = 0; i < g.n_prompt; i++)
		ck_assert_msg(s.tokens[i] == g.tokens[i], "%s.%s: prompt token %u is %d, want %d",
			      model, prompt, i, s.tokens[i], g.tokens[i]);
	/* Greedy tokens must agree unless llama.cpp's own top two were a near tie. */
	for (uint32_t i = g.n_prompt; i < g.n_prompt + g.n_gen && i < s.n_prompt + s.n_gen; i++) {
		float gap = slog_top2_gap(g.logits + (size_t)(i - 1) * g.n_vocab, g.n_vocab);

		if (s.tokens[i] != g.tokens[i]) {
			ck_assert_msg(gap < 1e-3, "%s.%s: generated token %u is %d, want %d (gap %g)",
				      model, prompt, i, s.tokens[i], g.tokens[i], gap);
			printf("%s.%s: near tie at %u (gap %g): stopping the comparison there\n",
			       model, prompt, i, gap);
			break;
		}
		if (i == g.n_prompt + g.n_gen - 1)
			ck_assert_uint_eq(s.n_gen, g.n_gen);
	}
	for (uint32_t r = 0; r < s.n_prompt + s.n_gen && r < g.n_prompt + g.n_gen; r++) {
		if (r > 0 && s.tokens[r] != g.tokens[r])
			break;
		for (uint32_t v = 0; v < g.n_vocab; v++) {
			double d = fabs((double)s.logits[(size_t)r * g.n_vocab + v] -
					g.logits[(size_t)r * g.n_vocab + v]);

			if (!(d <= worst))
				worst = isnan(d) ? INFINITY : d;
		}
	}
	printf("%s.%s via --dump-logits: max |diff| %.2e\n", model, prompt, worst);
	ck_assert_msg(worst <= 1e-3, "%s.%s: max |diff| %g > 1e-3", model, prompt, worst);
	slog_free(&s);
	slog_free(&g);
	free(path);
}

START_TEST(dump_logits_golden)
{
	static const char *const models[] = { "stories260K", "syn-llama-f32", "syn-qwen3moe-f32",
					      "syn-glm4moe-f32" };
	static const char *const prompts[] = { "once", "story", "mixed" };

	for (int m = 0; m < 4; m++)
		for (int p = 0; p < 3; p++)
			compare_dump(models[m], prompts[p]);
}
END_TEST

START_TEST(bad_model_files)
{
	const char *dir = tu_tmpdir();
	char args[8192], path[4096];
	size_t len;
	char *buf;

	assert_refused(strata("-m /nonexistent/model.gguf -p hi"), "/nonexistent/model.gguf");
	snprintf(args, sizeof(args), "-m %s -p hi", dir);
	assert_refused(strata(args), dir);
	snprintf(path, sizeof(path), "%s/empty.gguf", dir);
	ck_assert_int_eq(tu_write_file(path, "", 0), 0);
	snprintf(args, sizeof(args), "-m %s -p hi", path);
	assert_refused(strata(args), "empty.gguf");

	buf = tu_read_file(tu_shared_or_skip("models/stories260K.gguf"), &len);
	ck_assert_ptr_nonnull(buf);
	snprintf(path, sizeof(path), "%s/trunc.gguf", dir);
	ck_assert_int_eq(tu_write_file(path, buf, len / 2), 0);
	snprintf(args, sizeof(args), "-m %s -p hi", path);
	assert_refused(strata(args), "trunc.gguf");

	/* Same file, architecture renamed: a well-formed GGUF strata cannot run. */
	{
		char *p = memmem(buf, len, "llama", 5);

		while (p && (p[-1] != 0 || p[-8] != 5)) /* the value, after its u64 length 5 */
			p = memmem(p + 1, len - (size_t)(p + 1 - buf), "llama", 5);
		ck_assert_ptr_nonnull(p);
		memcpy(p, "gpt-j", 5);
		snprintf(path, sizeof(path), "%s/arch.gguf", dir);
		ck_assert_int_eq(tu_write_file(path, buf, len), 0);
		snprintf(args, sizeof(args), "-m %s -p hi", path);
		assert_refused(strata(args), "gpt-j");
		memcpy(p, "llama", 5);
	}
	/* token_embd.weight retyped to I16: valid GGUF, a type strata cannot compute with. */
	{
		char *p = memmem(buf, len, "token_embd.weight", 17);
		uint32_t i16 = 25;

		ck_assert_ptr_nonnull(p);
		/* name, u32 n_dims = 2, 2 x u64 dims, then the u32 type */
		memcpy(p + 17 + 4 + 16, &i16, 4);
		snprintf(path, sizeof(path), "%s/type.gguf", dir);
		ck_assert_int_eq(tu_write_file(path, buf, len), 0);
		snprintf(args, sizeof(args), "-m %s -p hi", path);
		assert_refused(strata(args), "I16");
	}
	free(buf);
}
END_TEST

START_TEST(bad_config_and_prompt)
{
	const char *dir = tu_tmpdir();
	char path[4096], args[8192], ini[4096];

	tu_shared_or_skip("models/stories260K.gguf");
	snprintf(ini, sizeof(ini), "[model]\npath = %s/models/stories260K.gguf\n[run]\n"
		 "threads = lots\n", STRATA_SHARED);
	snprintf(path, sizeof(path), "%s/bad.ini", dir);
	ck_assert_int_eq(tu_write_file(path, ini, strlen(ini)), 0);
	snprintf(args, sizeof(args), "-c %s", path);
	assert_refused(strata(args), "bad.ini:4");

	assert_refused(strata("-c strata.ini --temp warm"), "--temp");
	assert_refused(strata("-c strata.ini --no-such-flag"), "--no-such-flag");
	assert_refused(strata("-c /nonexistent.ini"), "/nonexistent.ini");

	/* A prompt longer than the context. */
	snprintf(args, sizeof(args), "-c strata.ini --ctx-size 16 -f %s/golden/prompts/story.txt",
		 STRATA_SHARED);
	assert_refused(strata(args), "context");
}
END_TEST

START_TEST(subcommands)
{
	ck_assert_int_eq(strata("--help"), 0);
	ck_assert_msg(strstr(g_out, "--prefill"), "%s", g_out);
	ck_assert_int_eq(strata("no-such-command"), 2);
	ck_assert_msg(strstr(g_out, "no-such-command"), "%s", g_out);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, main_job);
	tcase_add_test(tc, seeded_runs_repeat);
	tcase_add_test(tc, dump_logits_golden);
	tcase_add_test(tc, bad_model_files);
	tcase_add_test(tc, bad_config_and_prompt);
	tcase_add_test(tc, subcommands);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
