#define _GNU_SOURCE /* strcasestr */
/*
 * check_serve_chat.c - the server's chat templates: the built-ins render
 * the formats strata had before templates ran, the choice between the
 * model's template, a built-in, inline Jinja and a file, /apply-template
 * against the same template rendered in-process, and a template that
 * refuses a conversation (400 with its message) or fails (500 naming the
 * line).  That the renderer writes what Python's jinja2 writes is
 * check_tmpl_oracle.c's part.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "serve/chat.h"
#include "serve/serve.h"
#include "strata.h"
#include "serveutil.h"
#include "testutil.h"

static const char *g_model;
static struct test_server g_ts;

/* Start a server on stories260K with extra flags; returns strata_serve_start's rc. */
static int start_server(const char *const *extra, int n_extra)
{
	return test_server_try(&g_ts, g_model, extra, n_extra);
}

static void stop_server(void)
{
	test_server_stop(&g_ts);
}

static cJSON *post_json(const char *path, const char *body, int want_status)
{
	struct resp r;
	cJSON *j;

	http_call(g_ts.port, "POST", path, NULL, body, &r);
	ck_assert_msg(r.status == want_status, "%s: status %d, want %d: %s", path, r.status,
		      want_status, r.body.p ? r.body.p : "");
	j = json_of(&r);
	resp_free(&r);
	return j;
}

/* The built-in templates render what the C formats they replace rendered. */
START_TEST(chat_templates)
{
	static const struct strata_chat_msg m[] = {
		{ "system", "Be brief.", 9 }, { "user", " Hi ", 4 },
		{ "assistant", "Hello.", 6 }, { "user", "Why?", 4 },
	};
	static const struct {
		const char *name;
		const char *want;
	} cases[] = {
		{ "chatml", "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi "
		  "<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWhy?"
		  "<|im_end|>\n<|im_start|>assistant\n" },
		{ "glm4", "[gMASK]<sop><|system|>\nBe brief.<|user|>\n Hi <|assistant|>\n"
		  "Hello.<|user|>\nWhy?<|assistant|>" },
		{ "llama3", "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
		  "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>"
		  "assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user"
		  "<|end_header_id|>\n\nWhy?<|eot_id|><|start_header_id|>assistant"
		  "<|end_header_id|>\n\n" },
		{ "plain", "System: Be brief.\nUser:  Hi \nAssistant: Hello.\nUser: Why?\n"
		  "Assistant:" },
		{ "qwen", "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi "
		  "<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWhy?"
		  "<|im_end|>\n<|im_start|>assistant\n" },
	};
	struct strata_tmpl_err err;
	struct strata_chat *c;
	char *out;
	size_t len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strata_chat_opts o = { .setting = cases[i].name, .bos = "<s>", .eos = "</s>" };

		ck_assert_int_eq(strata_chat_create(&o, &c), 0);
		ck_assert_int_eq(strata_chat_render_msgs(c, m, 4, &out, &len, &err), 0);
		ck_assert_str_eq(out, cases[i].want);
		ck_assert_uint_eq(len, strlen(cases[i].want));
		free(out);
		strata_chat_free(c);
	}
}
END_TEST

/* auto: the model's template (its BOS dropped when the tokenizer adds one), else plain. */
START_TEST(chat_template_choice)
{
	static const struct strata_chat_msg hi = { "user", "hi", 2 };
	struct strata_chat_opts o = { .setting = "auto", .bos = "<s>", .eos = "</s>",
				      .tokenizer_adds_bos = 1,
				      .model = "{{ bos_token }}[{{ messages[0].content }}]" };
	struct strata_tmpl_err err;
	struct strata_chat *c;
	char *out;
	size_t len;

	ck_assert_int_eq(strata_chat_create(&o, &c), 0);
	ck_assert_str_eq(strata_chat_origin(c), "the model's");
	ck_assert_int_eq(strata_chat_render_msgs(c, &hi, 1, &out, &len, &err), 0);
	ck_assert_str_eq(out, "[hi]");
	free(out);
	strata_chat_free(c);
	o.model = "{% if %}"; /* does not compile: plain, with a line in the log */
	ck_assert_int_eq(strata_chat_create(&o, &c), 0);
	ck_assert_str_eq(strata_chat_origin(c), "built-in plain");
	strata_chat_free(c);
	o.model = NULL; /* none, for an architecture with a known format (qwen4exp) */
	o.fallback = "qwen";
	ck_assert_int_eq(strata_chat_create(&o, &c), 0);
	ck_assert_str_eq(strata_chat_origin(c), "built-in qwen");
	strata_chat_free(c);
	o.fallback = NULL;
	o.setting = "{% if %}"; /* chosen by the user: refused */
	tu_log_capture();
	ck_assert_int_eq(strata_chat_create(&o, &c), -EINVAL);
	tu_log_release();
	ck_assert_msg(strstr(tu_log, "line 1"), "%s", tu_log);
	o.setting = "nonsense";
	tu_log_capture();
	ck_assert_int_eq(strata_chat_create(&o, &c), -EINVAL);
	tu_log_release();
	o.setting = NULL;
	o.file = "/nonexistent/template.jinja";
	tu_log_capture();
	ck_assert_int_eq(strata_chat_create(&o, &c), -ENOENT);
	tu_log_release();
	ck_assert_msg(strstr(tu_log, "/nonexistent/template.jinja"), "%s", tu_log);
}
END_TEST

/* /apply-template shows what the chat route tokenizes: the file's template, rendered here too. */
START_TEST(apply_template_file)
{
	static const char *const msgs =
		"[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":"
		"\"Tell me a story about a cat.\"}]";
	char file[4096], body[1024];
	const char *extra[] = { "--chat-template-file", file };
	struct strata_chat_opts o = { .file = file };
	struct strata_chat_in in = { .add_generation_prompt = 1 };
	struct strata_tmpl_err err;
	struct strata_chat *c;
	int32_t *ids = NULL;
	char *want;
	size_t len;
	cJSON *j, *m = cJSON_Parse(msgs);
	int n;

	snprintf(file, sizeof(file), "%s/tests/tmpl/templates/Qwen-Qwen3-0.6B.jinja", STRATA_SRC);
	ck_assert_int_eq(start_server(extra, 2), 0);
	snprintf(body, sizeof(body), "{\"messages\":%s}", msgs);
	j = post_json("/apply-template", body, 200);
	ck_assert_int_eq(strata_chat_create(&o, &c), 0);
	in.messages = m;
	ck_assert_int_eq(strata_chat_apply(c, &in, &want, &len, &err), 0);
	ck_assert_str_eq(str_at(j, AT(j, "prompt"), "prompt"), want);
	ck_assert_ptr_nonnull(strstr(want, "<|im_start|>user\nTell me a story about a cat."
				     "<|im_end|>\n<|im_start|>assistant\n"));
	cJSON_Delete(j);
	/* The chat route reads exactly those tokens. */
	n = strata_engine_tokenize(g_ts.eng, want, len,
				   STRATA_TOKENIZE_ADD_BOS | STRATA_TOKENIZE_PARSE_SPECIAL, &ids);
	snprintf(body, sizeof(body), "{\"messages\":%s,\"max_tokens\":4,\"temperature\":0}", msgs);
	j = post_json("/v1/chat/completions", body, 200);
	ck_assert_int_eq(int_at(j, AT(j, "usage", "prompt_tokens"), "usage"), n);
	cJSON_Delete(j);
	free(ids);
	free(want);
	cJSON_Delete(m);
	strata_chat_free(c);
	stop_server();
}
END_TEST

/* developer is system to a template that does not know it; tool results are turns. */
START_TEST(roles)
{
	const char *extra[] = { "--chat-template", "plain" };
	cJSON *j;

	ck_assert_int_eq(start_server(extra, 2), 0);
	j = post_json("/apply-template", "{\"messages\":[{\"role\":\"developer\",\"content\":\"D\"},"
		      "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
		      "{\"type\":\"text\",\"text\":\"b\"}]},{\"role\":\"assistant\",\"content\":null,"
		      "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
		      "\"f\",\"arguments\":\"{\\\"x\\\": 1}\"}}]},{\"role\":\"tool\",\"tool_call_id\":"
		      "\"c1\",\"content\":\"42\"}]}", 200);
	ck_assert_str_eq(str_at(j, AT(j, "prompt"), "prompt"),
			 "System: D\nUser: ab\nAssistant: <tool_call>{\"name\": \"f\", \"arguments\": "
			 "{\"x\": 1}}</tool_call>\nTool: 42\nAssistant:");
	cJSON_Delete(j);
	cJSON_Delete(post_json("/apply-template", "{\"messages\":[{\"role\":\"user\",\"content\":"
			       "[{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]}]}", 400));
	cJSON_Delete(post_json("/apply-template", "{\"messages\":[{\"role\":\"user\",\"content\":"
			       "\"x\",\"tool_calls\":[]}]}", 400));
	cJSON_Delete(post_json("/apply-template", "{\"messages\":[{\"role\":\"assistant\","
			       "\"content\":\"\",\"tool_calls\":[{\"function\":{}}]}]}", 400));
	stop_server();
}
END_TEST

/* A template's raise_exception is the client's 400; a template that breaks, a 500 with its line. */
START_TEST(template_errors)
{
	const char *refuse[] = { "--chat-template",
				 "{% for m in messages %}{% if m.role == 'system' %}\n"
				 "{{ raise_exception('no system messages here') }}{% endif %}"
				 "{{ m.content }}{% endfor %}" };
	const char *broken[] = { "--chat-template", "x\n{{ messages[0].content + 1 }}" };
	const char *bad_syntax[] = { "--chat-template", "{% for m in messages %}" };
	cJSON *j;
	const char *msg;

	ck_assert_int_eq(start_server(refuse, 2), 0);
	j = post_json("/v1/chat/completions", "{\"messages\":[{\"role\":\"system\",\"content\":"
		      "\"s\"},{\"role\":\"user\",\"content\":\"u\"}],\"max_tokens\":2}", 400);
	msg = str_at(j, AT(j, "error", "message"), "message");
	ck_assert_msg(strstr(msg, "no system messages here") && strstr(msg, "line 2"), "%s", msg);
	cJSON_Delete(j);
	cJSON_Delete(post_json("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\","
			       "\"content\":\"Once\"}],\"max_tokens\":2}", 200));
	stop_server();

	ck_assert_int_eq(start_server(broken, 2), 0);
	j = post_json("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":"
		      "\"u\"}],\"max_tokens\":2}", 500);
	msg = str_at(j, AT(j, "error", "message"), "message");
	ck_assert_msg(strstr(msg, "line 2") && strstr(msg, "concatenate"), "%s", msg);
	cJSON_Delete(j);
	stop_server();

	tu_log_capture();
	ck_assert_int_eq(start_server(bad_syntax, 2), -EINVAL);
	tu_log_release();
	ck_assert_msg(strstr(tu_log, "endfor"), "%s", tu_log);
}
END_TEST

#define TOOLS "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":" \
	"\"Weather in a city\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":" \
	"{\"type\":\"string\"}},\"required\":[\"city\"]}}}]"
#define ASK "[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}]"

/* tools go through the template; tool_choice none leaves them out. */
START_TEST(tools_rendered)
{
	const char *extra[] = { "--chat-template", "chatml" };
	cJSON *j;
	const char *p;

	ck_assert_int_eq(start_server(extra, 2), 0);
	j = post_json("/apply-template", "{\"messages\":" ASK ",\"tools\":" TOOLS "}", 200);
	p = str_at(j, AT(j, "prompt"), "prompt");
	ck_assert_msg(strstr(p, "<|im_start|>system\n# Tools\n") &&
		      strstr(p, "<tools>\n{\"type\": \"function\", \"function\": {\"name\": "
			     "\"get_weather\"") && strstr(p, "<|im_start|>user\nWeather in Paris?"),
		      "%s", p);
	cJSON_Delete(j);
	j = post_json("/apply-template", "{\"messages\":" ASK ",\"tools\":" TOOLS
		      ",\"tool_choice\":\"none\"}", 200);
	ck_assert_ptr_null(strstr(str_at(j, AT(j, "prompt"), "prompt"), "<tools>"));
	cJSON_Delete(j);
	stop_server();
}
END_TEST

static void expect_400(const char *body, const char *param)
{
	cJSON *j = post_json("/v1/chat/completions", body, 400);

	ck_assert_str_eq(str_at(j, AT(j, "error", "param"), "param"), param);
	cJSON_Delete(j);
}

START_TEST(bad_tools)
{
	ck_assert_int_eq(start_server(NULL, 0), 0);
	expect_400("{\"messages\":" ASK ",\"tools\":{}}", "tools");
	expect_400("{\"messages\":" ASK ",\"tools\":[{\"type\":\"retrieval\"}]}", "tools[0]");
	expect_400("{\"messages\":" ASK ",\"tools\":[{\"type\":\"function\",\"function\":"
		   "{\"name\":\"bad name!\"}}]}", "tools[0].function.name");
	expect_400("{\"messages\":" ASK ",\"tools\":[{\"type\":\"function\",\"function\":"
		   "{\"name\":\"f\",\"parameters\":[]}}]}", "tools[0].function.parameters");
	expect_400("{\"messages\":" ASK ",\"tool_choice\":\"auto\"}", "tool_choice");
	expect_400("{\"messages\":" ASK ",\"tools\":" TOOLS ",\"tool_choice\":\"always\"}",
		   "tool_choice");
	expect_400("{\"messages\":" ASK ",\"tools\":" TOOLS ",\"tool_choice\":{\"type\":"
		   "\"function\",\"function\":{\"name\":\"nope\"}}}", "tool_choice");
	expect_400("{\"messages\":" ASK ",\"tools\":" TOOLS ",\"parallel_tool_calls\":1}",
		   "parallel_tool_calls");
	stop_server();
}
END_TEST

/*
 * enable_thinking, reasoning_effort and chat_template_kwargs reach Qwen3's
 * template and the built-in qwen one (qwen4exp's, which also writes an
 * earlier turn's reasoning_content in its block).
 */
static void thinking_flags_with(const char *flag, const char *arg)
{
	const char *extra[] = { flag, arg };
	static const char *const off[] = {
		",\"enable_thinking\":false", ",\"reasoning_effort\":\"none\"",
		",\"chat_template_kwargs\":{\"enable_thinking\":false}",
	};

	ck_assert_int_eq(start_server(extra, 2), 0);
	for (size_t i = 0; i < 3; i++) {
		static const char tail[] = "assistant\n<think>\n\n</think>\n\n";
		char body[512];
		cJSON *j;
		const char *p;

		snprintf(body, sizeof(body), "{\"messages\":" ASK "%s}", off[i]);
		j = post_json("/apply-template", body, 200);
		p = str_at(j, AT(j, "prompt"), "prompt");
		ck_assert_msg(strlen(p) > strlen(tail) && !strcmp(p + strlen(p) - strlen(tail), tail),
			      "%s: %s", off[i], p);
		cJSON_Delete(j);
	}
	cJSON_Delete(post_json("/apply-template", "{\"messages\":" ASK ",\"reasoning_effort\":"
			       "\"extreme\"}", 400));
	if (strcmp(arg, "qwen") == 0) {
		cJSON *j = post_json("/apply-template", "{\"messages\":[{\"role\":\"user\","
				     "\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":"
				     "\"Hello.\",\"reasoning_content\":\" greet \"},{\"role\":"
				     "\"user\",\"content\":\"Why?\"}]}", 200);
		const char *p = str_at(j, AT(j, "prompt"), "prompt");

		ck_assert_str_eq(p, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
				 "<think>\ngreet\n</think>\n\nHello.<|im_end|>\n<|im_start|>user\n"
				 "Why?<|im_end|>\n<|im_start|>assistant\n");
		cJSON_Delete(j);
	}
	stop_server();
}

START_TEST(thinking_flags)
{
	char file[4096];

	snprintf(file, sizeof(file), "%s/tests/tmpl/templates/Qwen-Qwen3-0.6B.jinja", STRATA_SRC);
	thinking_flags_with("--chat-template-file", file);
	thinking_flags_with("--chat-template", "qwen");
}
END_TEST

/*
 * A reply that starts inside <think> (the prompt opened it): reasoning_content,
 * then the budget closes the block by forcing "</think>", and the rest is content.
 */
START_TEST(thinking_budget)
{
	const char *extra[] = { "--chat-template", "{% for m in messages %}{{ m.role }}: "
				"{{ m.content }}\n{% endfor %}assistant: <think>\n" };
	cJSON *j;
	const char *reasoning, *content;
	struct resp r;

	ck_assert_int_eq(start_server(extra, 2), 0);
	j = post_json("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":"
		      "\"Once upon a time\"}],\"max_tokens\":40,\"temperature\":0,"
		      "\"thinking_budget\":6}", 200);
	reasoning = str_at(j, AT(j, "choices", "0", "message", "reasoning_content"), "reasoning");
	content = str_at(j, AT(j, "choices", "0", "message", "content"), "content");
	ck_assert_msg(*reasoning && *content && !strstr(content, "think>"), "'%s' / '%s'",
		      reasoning, content);
	ck_assert_int_eq(int_at(j, AT(j, "usage", "completion_tokens"), "usage"), 40);
	cJSON_Delete(j);
	/* streamed: the same split, reasoning deltas first */
	http_call(g_ts.port, "POST", "/v1/chat/completions", NULL, "{\"messages\":[{\"role\":"
		  "\"user\",\"content\":\"Once upon a time\"}],\"max_tokens\":40,"
		  "\"temperature\":0,\"thinking_budget\":6,\"stream\":true}", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body.p, "\"reasoning_content\":"));
	ck_assert_ptr_nonnull(strstr(r.body.p, "\"content\":"));
	ck_assert_ptr_null(strstr(r.body.p, "think>"));
	resp_free(&r);
	/* reasoning_format none: the block stays in the content, as written */
	j = post_json("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":"
		      "\"Once\"}],\"max_tokens\":20,\"temperature\":0,\"thinking_budget\":2,"
		      "\"reasoning_format\":\"none\"}", 200);
	ck_assert_ptr_null(AT(j, "choices", "0", "message", "reasoning_content"));
	cJSON_Delete(j);
	stop_server();
}
END_TEST

int main(void)
{
	Suite *su = suite_create("serve_chat");
	TCase *unit = tcase_create("unit"), *tc = tcase_create("server");
	int failed;

	g_model = test_server_model(); /* a copy; NULL after a SKIP line */
	tcase_add_test(unit, chat_templates);
	tcase_add_test(unit, chat_template_choice);
	suite_add_tcase(su, unit);
	if (g_model) {
		tcase_set_timeout(tc, 300);
		tcase_add_test(tc, apply_template_file);
		tcase_add_test(tc, roles);
		tcase_add_test(tc, template_errors);
		tcase_add_test(tc, tools_rendered);
		tcase_add_test(tc, bad_tools);
		tcase_add_test(tc, thinking_flags);
		tcase_add_test(tc, thinking_budget);
		suite_add_tcase(su, tc);
	}
	if ((failed = tu_srunner_run(srunner_create(su))))
		return failed;
	return g_model ? 0 : STRATA_TEST_SKIP;
}
