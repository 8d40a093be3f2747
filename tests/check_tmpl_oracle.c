/*
 * check_tmpl_oracle.c - the template engine against Python's jinja2, byte
 * for byte.
 *
 * Every template of the corpus (tests/tmpl/templates: the chat templates of
 * llama.cpp's models/templates, public model metadata; plus the
 * tokenizer.chat_template of each GGUF file in ../shared) is rendered with
 * every scenario of tests/tmpl/scenarios.json (messages, tools, thinking
 * flags), and every snippet of tests/tmpl/snippets.json (the language, one
 * feature at a time), by tests/tmpl/oracle.py under Debian's
 * python3-jinja2 and by core/tmpl.  Each pair must agree: the same bytes, or
 * both refuse (a raise_exception() with the same message).  Exits 77 when
 * /usr/bin/python3 cannot import jinja2.
 */
#define _GNU_SOURCE
#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "testutil.h"
#include "tmpl/tmpl.h"

#define NOW 1767225600 /* 2026-01-01 00:00:00 UTC: strftime_now's time for both */

static char g_dir[4096];

static cJSON *read_json(const char *rel)
{
	char path[4096];
	size_t n;
	char *text;
	cJSON *j;

	snprintf(path, sizeof(path), "%s/%s", STRATA_SRC, rel);
	text = tu_read_file(path, &n);
	ck_assert_msg(text != NULL, "cannot read %s", path);
	j = cJSON_ParseWithLength(text, n);
	free(text);
	ck_assert_msg(j != NULL, "%s is not JSON", path);
	return j;
}

/* A job for the oracle: render template file `path` (or `source`) with vars. */
static void add_job(cJSON *jobs, const char *id, const char *path, const char *source,
		    const cJSON *vars)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "id", id);
	if (path)
		cJSON_AddStringToObject(j, "template", path);
	else
		cJSON_AddStringToObject(j, "source", source);
	cJSON_AddItemToObject(j, "vars", cJSON_Duplicate(vars, 1));
	cJSON_AddNumberToObject(j, "now", NOW);
	cJSON_AddItemToArray(jobs, j);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* The tokenizer.chat_template of each GGUF in ../shared/DIR, written to g_dir. */
static int gguf_templates(cJSON *jobs, const cJSON *scen, const char *dir)
{
	const char *base = tu_shared(dir);
	struct dirent **ents;
	int n, found = 0;
	char root[4096];

	if (!base)
		return 0;
	snprintf(root, sizeof(root), "%s", base);
	n = scandir(root, &ents, NULL, by_name);
	for (int i = 0; i < n; i++) {
		char path[8192], out[8192];
		struct strata_gguf *g;
		struct strata_str t;
		size_t len = strlen(ents[i]->d_name);

		if (len > 5 && !strcmp(ents[i]->d_name + len - 5, ".gguf")) {
			snprintf(path, sizeof(path), "%s/%s", root, ents[i]->d_name);
			if (strata_gguf_open(path, &g) == 0) {
				if (strata_gguf_get_str(g, "tokenizer.chat_template", &t) == 0) {
					const cJSON *s;

					snprintf(out, sizeof(out), "%s/%s.jinja", g_dir, ents[i]->d_name);
					ck_assert_int_eq(tu_write_file(out, t.s, (size_t)t.len), 0);
					cJSON_ArrayForEach(s, scen) {
						char id[512];

						snprintf(id, sizeof(id), "gguf:%s:%s", ents[i]->d_name,
							 cJSON_GetObjectItem(s, "name")->valuestring);
						add_job(jobs, id, out, NULL, cJSON_GetObjectItem(s, "vars"));
					}
					found++;
				}
				strata_gguf_close(g);
			}
		}
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
	return found;
}

/* The corpus templates times the scenarios; returns the number of templates. */
static int corpus_jobs(cJSON *jobs, const cJSON *scen)
{
	char dir[4096];
	struct dirent **ents;
	int n, count = 0;

	snprintf(dir, sizeof(dir), "%s/tests/tmpl/templates", STRATA_SRC);
	n = scandir(dir, &ents, NULL, by_name);
	ck_assert_msg(n > 0, "no templates in %s", dir);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(ents[i]->d_name);
		const cJSON *s;

		if (len > 6 && !strcmp(ents[i]->d_name + len - 6, ".jinja")) {
			char path[8192];

			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			cJSON_ArrayForEach(s, scen) {
				char id[512];

				snprintf(id, sizeof(id), "%s:%s", ents[i]->d_name,
					 cJSON_GetObjectItem(s, "name")->valuestring);
				add_job(jobs, id, path, NULL, cJSON_GetObjectItem(s, "vars"));
			}
			count++;
		}
		free(ents[i]);
	}
	free(ents);
	return count;
}

struct tally {
	int same, refused, raised, mismatch;
};

/* Render one job in C and compare with the oracle's result. */
static void compare(const cJSON *job, const cJSON *res, struct tally *t)
{
	const cJSON *path = cJSON_GetObjectItem(job, "template");
	const cJSON *src = cJSON_GetObjectItem(job, "source");
	const char *id = cJSON_GetObjectItem(job, "id")->valuestring;
	struct strata_tmpl_opts o = { .now = NOW };
	struct strata_tmpl_err err;
	struct strata_tmpl *tm = NULL;
	char *text = NULL, *out = NULL;
	size_t n = 0, olen = 0;
	int rc, py_ok = cJSON_IsTrue(cJSON_GetObjectItem(res, "ok"));
	int py_raised = cJSON_IsTrue(cJSON_GetObjectItem(res, "raised"));
	const cJSON *py_out = cJSON_GetObjectItem(res, "out");
	const cJSON *py_err = cJSON_GetObjectItem(res, "error");

	if (path) {
		text = tu_read_file(path->valuestring, &n);
		ck_assert_ptr_nonnull(text);
	} else {
		text = strdup(src->valuestring);
		n = strlen(text);
	}
	rc = strata_tmpl_compile(text, n, &tm, &err);
	if (!rc)
		rc = strata_tmpl_render(tm, cJSON_GetObjectItem(job, "vars"), &o, &out, &olen, &err);
	if (py_ok && !rc && olen == strlen(py_out->valuestring) &&
	    memcmp(out, py_out->valuestring, olen) == 0) {
		t->same++;
	} else if (!py_ok && rc && !py_raised) {
		t->refused++;
	} else if (!py_ok && rc && py_raised && err.raised &&
		   !strcmp(err.msg, py_err->valuestring)) {
		t->raised++;
	} else {
		t->mismatch++;
		fprintf(stderr, "MISMATCH %s\n  jinja2: %s\n  strata: %s%s\n", id,
			py_ok ? py_out->valuestring : py_err->valuestring,
			rc ? "error: " : "", rc ? err.msg : out);
	}
	free(out);
	free(text);
	strata_tmpl_free(tm);
}

START_TEST(test_oracle)
{
	cJSON *scen = read_json("tests/tmpl/scenarios.json");
	cJSON *snippets = read_json("tests/tmpl/snippets.json");
	cJSON *jobs = cJSON_CreateArray(), *res, *s;
	char jobs_path[4200], res_path[4200], cmd[9000], log[8192];
	int n_tmpl, n_gguf, i = 0, rc;
	struct tally t = { 0 }, ts = { 0 };
	char *text;
	size_t n;

	snprintf(g_dir, sizeof(g_dir), "%s", tu_tmpdir());
	n_tmpl = corpus_jobs(jobs, scen);
	n_gguf = gguf_templates(jobs, scen, "models");
	n_gguf += gguf_templates(jobs, scen, "vocab");
	cJSON_ArrayForEach(s, snippets) {
		char id[64];

		snprintf(id, sizeof(id), "snippet-%d", i++);
		add_job(jobs, id, NULL, cJSON_GetObjectItem(s, "source")->valuestring,
			cJSON_GetObjectItem(s, "vars"));
	}
	snprintf(jobs_path, sizeof(jobs_path), "%s/jobs.json", g_dir);
	snprintf(res_path, sizeof(res_path), "%s/results.json", g_dir);
	text = cJSON_PrintUnformatted(jobs);
	ck_assert_int_eq(tu_write_file(jobs_path, text, strlen(text)), 0);
	free(text);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/tmpl/oracle.py %s %s", STRATA_SRC,
		 jobs_path, res_path);
	rc = tu_run(cmd, log, sizeof(log));
	ck_assert_msg(rc == 0, "the oracle failed (%d): %s", rc, log);
	text = tu_read_file(res_path, &n);
	ck_assert_ptr_nonnull(text);
	res = cJSON_ParseWithLength(text, n);
	free(text);
	ck_assert_int_eq(cJSON_GetArraySize(res), cJSON_GetArraySize(jobs));
	for (i = 0; i < cJSON_GetArraySize(jobs); i++) {
		const cJSON *job = cJSON_GetArrayItem(jobs, i);
		int snippet = cJSON_GetObjectItem(job, "source") != NULL;

		compare(job, cJSON_GetArrayItem(res, i), snippet ? &ts : &t);
	}
	printf("oracle: %d corpus templates + %d from GGUF files x %d scenarios: %d byte-identical, "
	       "%d refused by both (%d by raise_exception, same message), %d mismatches\n",
	       n_tmpl, n_gguf, cJSON_GetArraySize(scen), t.same, t.refused + t.raised, t.raised,
	       t.mismatch);
	printf("oracle: %d snippets: %d byte-identical, %d refused by both (%d raised), "
	       "%d mismatches\n", cJSON_GetArraySize(snippets), ts.same, ts.refused + ts.raised,
	       ts.raised, ts.mismatch);
	ck_assert_int_eq(t.mismatch + ts.mismatch, 0);
	ck_assert_int_gt(t.same, 0);
	cJSON_Delete(res);
	cJSON_Delete(jobs);
	cJSON_Delete(scen);
	cJSON_Delete(snippets);
	tu_rmtree(g_dir);
}
END_TEST

int main(void)
{
	char out[512];
	Suite *s;
	TCase *tc;

	if (tu_run("/usr/bin/python3 -c 'import jinja2'", out, sizeof(out)) != 0) {
		printf("SKIP: the oracle needs /usr/bin/python3 with jinja2 (Debian python3-jinja2; "
		       "tools/deps.sh installs it)\n");
		return STRATA_TEST_SKIP;
	}
	s = suite_create("tmpl_oracle");
	tc = tcase_create("oracle");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_oracle);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
