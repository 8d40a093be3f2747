/*
 * check_tmpl.c - the template engine on its own: syntax errors name their
 * line, every limit (steps, output, memory, nesting) ends a hostile
 * template with an error instead of a hang or a crash, raise_exception is
 * told apart, variables' NUL bytes survive, one template renders from
 * several threads at once, and random bytes never crash the compiler.
 * What the engine writes is held against Python's jinja2 in
 * check_tmpl_oracle.c.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "tmpl/tmpl.h"

/* Compile and render src with vars (JSON text or NULL); returns the render's rc. */
static int render(const char *src, const char *vars_json, const struct strata_tmpl_opts *o,
		  char **out, size_t *len, struct strata_tmpl_err *err)
{
	cJSON *vars = vars_json ? cJSON_Parse(vars_json) : NULL;
	struct strata_tmpl *t;
	int rc = strata_tmpl_compile(src, strlen(src), &t, err);

	*out = NULL;
	if (!rc) {
		rc = strata_tmpl_render(t, vars, o, out, len, err);
		strata_tmpl_free(t);
	}
	cJSON_Delete(vars);
	return rc;
}

static void expect(const char *src, const char *vars, const char *want)
{
	struct strata_tmpl_err err;
	char *out;
	size_t len;
	int rc = render(src, vars, NULL, &out, &len, &err);

	ck_assert_msg(rc == 0, "%s: %s (line %d)", src, err.msg, err.line);
	ck_assert_str_eq(out, want);
	free(out);
}

static void expect_error(const char *src, const char *vars, const struct strata_tmpl_opts *o,
			 int line, const char *part)
{
	struct strata_tmpl_err err;
	char *out;
	size_t len;
	int rc = render(src, vars, o, &out, &len, &err);

	ck_assert_msg(rc == -EINVAL, "'%.80s' rendered (rc %d): %.80s", src, rc, rc ? err.msg : out);
	ck_assert_ptr_null(out);
	if (line)
		ck_assert_int_eq(err.line, line);
	ck_assert_msg(strstr(err.msg, part), "'%.80s': message '%s' lacks '%s'", src, err.msg, part);
}

START_TEST(test_basics)
{
	expect("{{ messages[0].content }}!", "{\"messages\":[{\"content\":\"hi\"}]}", "hi!");
	expect("{% for m in xs %}{{ m }}{% if not loop.last %},{% endif %}{% endfor %}",
	       "{\"xs\":[1,2.5,\"a\"]}", "1,2.5,a");
	expect("{{ x | tojson }}", "{\"x\":{\"a\":[true,null]}}", "{\"a\": [true, null]}");
	expect("{{ strftime_now('%Y') }}", NULL, "1970");
	/* The one integer pair whose remainder traps in C. */
	expect("{{ (-9223372036854775807 - 1) is divisibleby(-1) }}", NULL, "True");
	expect("{{ (-9223372036854775807 - 1) % -1 }}", NULL, "0");
}
END_TEST

START_TEST(test_syntax_errors)
{
	expect_error("a\nb\n{% if x %}\nc", NULL, NULL, 4, "endif");
	expect_error("line 1\n{{ 1 + }}", NULL, NULL, 2, "unexpected");
	expect_error("{% frobnicate %}", NULL, NULL, 1, "unknown tag 'frobnicate'");
	expect_error("\n\n{% include 'x' %}", NULL, NULL, 3, "not supported");
	expect_error("{{ 'open", NULL, NULL, 1, "unexpected char");
	expect_error("{# open", NULL, NULL, 1, "comment");
	expect_error("{{ (1 }}", NULL, NULL, 1, "unexpected");
	expect_error("{% for x in y recursive %}{% endfor %}", NULL, NULL, 1, "recursive");
	expect_error("{% continue %}", NULL, NULL, 1, "outside loop");
	expect_error("{{ [1, 2][0:1, 1] }}", NULL, NULL, 1, "only subscript");
	expect_error("{{ x[1, ::2] }}", NULL, NULL, 1, "only subscript");
}
END_TEST

START_TEST(test_runtime_errors)
{
	expect_error("a\n{{ x.y }}", NULL, NULL, 2, "'x' is undefined");
	expect_error("{{ 1 +\n'a' }}", NULL, NULL, 0, "unsupported operand");
	expect_error("{{ [1]|unknown }}", NULL, NULL, 1, "No filter named 'unknown'");
	expect_error("{{ x is frob }}", NULL, NULL, 1, "No test named 'frob'");
	expect_error("{{ range(200000)|length }}", NULL, NULL, 1, "Range too big");
}
END_TEST

START_TEST(test_raise)
{
	struct strata_tmpl_err err;
	char *out;
	size_t len;

	ck_assert_int_eq(render("x\n\n{{ raise_exception('roles must alternate') }}", NULL, NULL,
				&out, &len, &err), -EINVAL);
	ck_assert_int_eq(err.raised, 1);
	ck_assert_int_eq(err.line, 3);
	ck_assert_str_eq(err.msg, "roles must alternate");
	ck_assert_int_eq(render("{{ 1 / 0 }}", NULL, NULL, &out, &len, &err), -EINVAL);
	ck_assert_int_eq(err.raised, 0);
}
END_TEST

/* Templates that would run long or big: each limit ends them with an error. */
START_TEST(test_limits)
{
	struct strata_tmpl_opts steps = { .max_steps = 100000 }, outl = { .max_out = 1000 };
	struct strata_tmpl_opts mem = { .max_mem = 4u << 20 };
	char *deep = malloc(20000);
	size_t n = 0;

	expect_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
		     "{% endfor %}", NULL, &steps, 1, "steps");
	expect_error("{% for i in range(100000) %}xxxxxxxxxx{% endfor %}", NULL, &outl, 1,
		     "wrote more than");
	expect_error("{% set ns = namespace(s='x') %}{% for i in range(100000) %}"
		     "{% set ns.s = ns.s + ns.s[:1000] + 'y' * 1000 %}{% endfor %}", NULL, &mem, 1,
		     "memory");
	expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, NULL, 1,
		     "recursion");
	expect_error("{{ 'x' * 100000000 }}", NULL, &outl, 1, "limit");
	/* nesting: brackets, expressions and statements far deeper than any template */
	n += (size_t)sprintf(deep, "{{ ");
	for (int i = 0; i < 5000; i++)
		deep[n++] = '(';
	deep[n] = 0;
	expect_error(deep, NULL, NULL, 1, "nested too deeply");
	n = 0;
	n += (size_t)sprintf(deep + n, "{{ ");
	for (int i = 0; i < 3000; i++)
		n += (size_t)sprintf(deep + n, "not ");
	sprintf(deep + n, "1 }}");
	expect_error(deep, NULL, NULL, 1, "nested too deeply");
	n = 0;
	for (int i = 0; i < 1000; i++)
		n += (size_t)sprintf(deep + n, "{%% if 1 %%}");
	expect_error(deep, NULL, NULL, 0, "nested too deeply");
	free(deep);
}
END_TEST

START_TEST(test_nul_bytes)
{
	struct strata_tmpl_err err;
	char *out;
	size_t len;

	ck_assert_int_eq(render("[{{ s }}]", "{\"s\":\"a\\u0000b\"}", NULL, &out, &len, &err), 0);
	/* cJSON stops a string at its NUL: the server refuses such input before it gets here */
	ck_assert_uint_eq(len, 3);
	free(out);
	ck_assert_int_eq(render("[{{ '\\x00' }}]", NULL, NULL, &out, &len, &err), 0);
	ck_assert_uint_eq(len, 3);
	ck_assert_int_eq(out[1], 0);
	free(out);
}
END_TEST

struct thread_arg {
	const struct strata_tmpl *t;
	cJSON *vars;
	int ok;
};

static void *render_many(void *p)
{
	struct thread_arg *a = p;

	a->ok = 1;
	for (int i = 0; i < (tu_tsan() ? 20 : 200); i++) {
		struct strata_tmpl_err err;
		char *out;
		size_t len;

		if (strata_tmpl_render(a->t, a->vars, NULL, &out, &len, &err) ||
		    strcmp(out, "<u>a</u><u>b</u><u>c</u>")) {
			a->ok = 0;
			return NULL;
		}
		free(out);
	}
	return NULL;
}

/* One compiled template, rendered by four threads at once. */
START_TEST(test_threads)
{
	const char *src = "{% macro w(x) %}<u>{{ x }}</u>{% endmacro %}"
			  "{% for m in xs %}{{ w(m) }}{% endfor %}";
	struct thread_arg args[4];
	pthread_t th[4];
	struct strata_tmpl *t;
	struct strata_tmpl_err err;
	cJSON *vars = cJSON_Parse("{\"xs\":[\"a\",\"b\",\"c\"]}");

	ck_assert_int_eq(strata_tmpl_compile(src, strlen(src), &t, &err), 0);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ .t = t, .vars = vars };
		ck_assert_int_eq(pthread_create(&th[i], NULL, render_many, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert(args[i].ok);
	}
	strata_tmpl_free(t);
	cJSON_Delete(vars);
}
END_TEST

/* Pieces of template syntax strung at random: an error or a text, never a crash. */
START_TEST(test_random)
{
	static const char *const bits[] = {
		"{%", "%}", "{{", "}}", "{#", "#}", "-", "+", " if ", " for ", " in ", " endif ",
		" endfor ", " set ", "=", "x", "'s'", "\"", "(", ")", "[", "]", "{", "}", "|", "trim",
		"tojson", " is ", " not ", "defined", ".", ",", ":", "1", "2.5", "loop", "macro",
		" endmacro ", "namespace", "\n", " ", "raw", "endraw", "~", "*", "**", "//", "else",
		"elif", "messages", "range(3)", "call", "caller()", "filter", "break", "continue",
	};
	unsigned seed = 12345;
	int n_ok = 0, n_err = 0;
	cJSON *vars = cJSON_Parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
				  "\"x\":[1,{\"a\":null}]}");

	for (int i = 0; i < (tu_tsan() ? 2000 : 20000); i++) {
		char src[512];
		size_t n = 0;
		int parts = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 24;
		struct strata_tmpl_opts o = { .max_steps = 100000, .max_out = 1 << 20 };
		struct strata_tmpl_err err;
		struct strata_tmpl *t;
		char *out;
		size_t len;

		for (int p = 0; p < parts; p++) {
			const char *b = bits[((seed = seed * 1103515245u + 12345u) >> 16) %
					     (sizeof(bits) / sizeof(bits[0]))];

			n += (size_t)snprintf(src + n, sizeof(src) - n, "%s", b);
		}
		if (strata_tmpl_compile(src, n, &t, &err)) {
			n_err++;
			continue;
		}
		if (strata_tmpl_render(t, vars, &o, &out, &len, &err) == 0) {
			ck_assert_uint_eq(strlen(out), len);
			free(out);
			n_ok++;
		} else {
			n_err++;
		}
		strata_tmpl_free(t);
	}
	printf("random templates: %d rendered, %d refused\n", n_ok, n_err);
	ck_assert_int_gt(n_ok, 0);
	cJSON_Delete(vars);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tmpl");
	TCase *tc = tcase_create("tmpl");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_basics);
	tcase_add_test(tc, test_syntax_errors);
	tcase_add_test(tc, test_runtime_errors);
	tcase_add_test(tc, test_raise);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_nul_bytes);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_random);
	suite_add_tcase(s, tc);
	return tu_srunner_run(srunner_create(s));
}
