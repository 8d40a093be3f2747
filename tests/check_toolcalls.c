/*
 * check_toolcalls.c - the reply parser (core/serve/msgparse.c,
 * toolcalls.c) on scripted model output: each tool-call format the chat
 * templates write, thinking blocks, text around calls, calls that do not
 * parse (content with a warning), a stop after the first call; and every
 * reply fed whole, byte by byte and in random pieces gives the same message.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api.h"
#include "serve/msgparse.h"
#include "testutil.h"

static cJSON *g_tools;

struct want {
	const char *content, *reasoning;
	int n_calls;
	const char *name[3], *args[3];
	int warned;
};

/* Feed text in pieces of `step` bytes (0: random 1..7), finish, return the parser. */
static void parse(struct strata_msgparse *mp, enum strata_toolfmt f, int think, int in_think,
		  const char *text, size_t step, unsigned *seed)
{
	size_t n = strlen(text);

	memset(mp, 0, sizeof(*mp));
	mp->fmt = f;
	mp->think = think;
	mp->start_in_think = in_think;
	mp->tools = g_tools;
	for (size_t i = 0; i < n;) {
		size_t k = step ? step : 1 + (*seed = *seed * 1103515245u + 12345u) / 65536 % 7;

		if (k > n - i)
			k = n - i;
		strata_mp_feed(mp, text + i, k);
		i += k;
	}
	strata_mp_finish(mp);
}

/* Arguments compared as JSON values, not texts. */
static int same_json(const char *a, const char *b)
{
	cJSON *x = cJSON_Parse(a), *y = cJSON_Parse(b);
	int same = x && y && cJSON_Compare(x, y, 1);

	cJSON_Delete(x);
	cJSON_Delete(y);
	return same;
}

static void check_one(enum strata_toolfmt f, int think, int in_think, const char *text,
		      const struct want *w)
{
	unsigned seed = 7;

	for (size_t step = 0; step <= 3; step++) {
		size_t steps[] = { strlen(text) + 1, 1, 0, 3 };
		struct strata_msgparse mp;

		parse(&mp, f, think, in_think, text, steps[step], &seed);
		ck_assert_msg(!strata_mp_oom(&mp), "oom");
		ck_assert_msg(!strcmp(mp.content.p ? mp.content.p : "", w->content),
			      "%s (step %zu): content '%s', want '%s'", text, steps[step],
			      mp.content.p ? mp.content.p : "", w->content);
		ck_assert_msg(!strcmp(mp.reasoning.p ? mp.reasoning.p : "",
				      w->reasoning ? w->reasoning : ""),
			      "%s: reasoning '%s'", text, mp.reasoning.p ? mp.reasoning.p : "");
		ck_assert_msg(mp.n_calls == (size_t)w->n_calls, "%s (step %zu): %zu calls, want %d",
			      text, steps[step], mp.n_calls, w->n_calls);
		for (int i = 0; i < w->n_calls; i++) {
			ck_assert_str_eq(mp.calls[i].name, w->name[i]);
			ck_assert_msg(same_json(mp.calls[i].args, w->args[i]), "%s: args %s, want %s",
				      text, mp.calls[i].args, w->args[i]);
			ck_assert_int_eq(strncmp(mp.calls[i].id, "call_", 5), 0);
			ck_assert_uint_eq(strlen(mp.calls[i].id), 29);
		}
		ck_assert_int_eq(mp.warning[0] != 0, w->warned);
		strata_mp_free(&mp);
	}
}

START_TEST(hermes_json)
{
	struct want w = { .content = "Let me check.", .n_calls = 2,
			  .name = { "get_weather", "search" },
			  .args = { "{\"location\":\"Paris\",\"unit\":\"celsius\"}",
				    "{\"query\":\"a <b> c\"}" } };
	struct want plain = { .content = "No tools <needed> here, <tool_ not quite." };

	check_one(STRATA_TOOLS_TAGGED, 0, 0, "Let me check.<tool_call>\n{\"name\": \"get_weather\", "
		  "\"arguments\": {\"location\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\n"
		  "<tool_call>\n{\"name\": \"search\", \"arguments\": \"{\\\"query\\\": \\\"a <b> c"
		  "\\\"}\"}\n</tool_call>", &w);
	check_one(STRATA_TOOLS_TAGGED, 0, 0, plain.content, &plain);
}
END_TEST

START_TEST(qwen_xml_and_glm)
{
	struct want w = { .content = "", .n_calls = 1, .name = { "get_weather" },
			  .args = { "{\"location\":\"New York\",\"unit\":\"celsius\"}" } };
	struct want n = { .content = "", .n_calls = 1, .name = { "search" },
			  .args = { "{\"query\":\"42\",\"max_results\":3}" } };

	check_one(STRATA_TOOLS_TAGGED, 0, 0, "<tool_call>\n<function=get_weather>\n<parameter="
		  "location>\nNew York\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n"
		  "</function>\n</tool_call>", &w);
	/* the schema says query is a string: "42" stays one; max_results is a number */
	check_one(STRATA_TOOLS_TAGGED, 0, 0, "<tool_call>search\n<arg_key>query</arg_key>\n"
		  "<arg_value>42</arg_value>\n<arg_key>max_results</arg_key>\n<arg_value>3"
		  "</arg_value>\n</tool_call>", &n);
	check_one(STRATA_TOOLS_TAGGED, 0, 0, "<tool_call>search<arg_key>query</arg_key><arg_value>"
		  "42</arg_value><arg_key>max_results</arg_key><arg_value>3</arg_value></tool_call>",
		  &n);
}
END_TEST

START_TEST(mistral_and_llama)
{
	struct want w = { .content = "", .n_calls = 2, .name = { "get_weather", "search" },
			  .args = { "{\"location\":\"Paris\"}", "{\"query\":\"x\"}" } };
	struct want one = { .content = "", .n_calls = 1, .name = { "get_weather" },
			    .args = { "{\"location\":\"Paris\"}" } };
	struct want text = { .content = "{not a call} at all", .warned = 1 };

	check_one(STRATA_TOOLS_MISTRAL, 0, 0, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\":"
		  " {\"location\": \"Paris\"}}, {\"name\": \"search\", \"arguments\": {\"query\": "
		  "\"x\"}}]", &w);
	check_one(STRATA_TOOLS_MISTRAL, 0, 0, "[TOOL_CALLS]get_weather[ARGS]{\"location\": \"Paris\"}"
		  "[TOOL_CALLS]search[ARGS]{\"query\": \"x\"}", &w);
	check_one(STRATA_TOOLS_LLAMA3, 0, 0, "{\"name\": \"get_weather\", \"parameters\": "
		  "{\"location\": \"Paris\"}}", &one);
	check_one(STRATA_TOOLS_LLAMA3, 0, 0, "<|python_tag|>{\"name\": \"get_weather\", "
		  "\"parameters\": {\"location\": \"Paris\"}}", &one);
	check_one(STRATA_TOOLS_LLAMA3, 0, 0, text.content, &text);
}
END_TEST

START_TEST(thinking)
{
	struct want w = { .content = "The answer is 2.", .reasoning = "x+1=3, so x=2." };
	struct want call = { .content = "", .reasoning = "I need <tool_call> the weather.",
			     .n_calls = 1, .name = { "get_weather" },
			     .args = { "{\"location\":\"Paris\"}" } };
	struct want open = { .content = "", .reasoning = "still thinking" };

	check_one(STRATA_TOOLS_NONE, 1, 0, "<think>x+1=3, so x=2.</think>\n\nThe answer is 2.", &w);
	/* the prompt opened <think> (DeepSeek-R1, Qwen3 thinking templates) */
	check_one(STRATA_TOOLS_NONE, 1, 1, "x+1=3, so x=2.</think>\n\nThe answer is 2.", &w);
	check_one(STRATA_TOOLS_TAGGED, 1, 0, "<think>I need <tool_call> the weather.</think>\n"
		  "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}"
		  "</tool_call>", &call);
	check_one(STRATA_TOOLS_NONE, 1, 0, "<think>still thinking", &open);
}
END_TEST

START_TEST(bad_calls)
{
	struct want w = { .content = "Here: <tool_call>{\"name\": \"get_weather\", \"arguments\": "
			  "{\"location\": }</tool_call> done", .warned = 1 };
	struct want unclosed = { .content = "<tool_call>{\"name\": \"get_wea", .warned = 1 };
	struct want noname = { .content = "<tool_call>{\"arguments\": {}}</tool_call>", .warned = 1 };

	check_one(STRATA_TOOLS_TAGGED, 0, 0, "Here: <tool_call>{\"name\": \"get_weather\", "
		  "\"arguments\": {\"location\": }</tool_call> done", &w);
	check_one(STRATA_TOOLS_TAGGED, 0, 0, unclosed.content, &unclosed);
	check_one(STRATA_TOOLS_TAGGED, 0, 0, noname.content, &noname);
}
END_TEST

/* parallel_tool_calls false: the first complete call ends the reply. */
START_TEST(first_call_only)
{
	struct strata_msgparse mp = { .fmt = STRATA_TOOLS_TAGGED, .max_calls = 1 };
	const char *text = "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>"
			   "{\"name\": \"b\", \"arguments\": {}}</tool_call>";

	strata_mp_feed(&mp, text, 53);
	ck_assert(strata_mp_calls_full(&mp));
	strata_mp_feed(&mp, text + 53, strlen(text) - 53);
	strata_mp_finish(&mp);
	ck_assert_uint_eq(mp.n_calls, 1);
	ck_assert_str_eq(mp.calls[0].name, "a");
	strata_mp_free(&mp);
}
END_TEST

/* A streamed call is one delta with its index, id, name and arguments. */
START_TEST(call_chunks)
{
	struct strata_mp_call c = { .id = "call_x", .name = "f", .args = "{\"a\":1}" };
	struct strata_api_head h = { .chat = 1, .id = "chatcmpl-1", .created = 1, .model = "m" };
	struct strata_api_msg d = { .calls = &c, .n_calls = 1, .first_call = 2 };
	struct strata_api_msg whole = { .content = "", .calls = &c, .n_calls = 1 };
	char *s = strata_api_chunk_json(&h, &d, 0, NULL, 0, 0);
	cJSON *j = cJSON_Parse(s);
	const cJSON *tc = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0), "delta"), "tool_calls"), 0);

	ck_assert_int_eq(cJSON_GetObjectItem(tc, "index")->valueint, 2);
	ck_assert_str_eq(cJSON_GetObjectItem(tc, "id")->valuestring, "call_x");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(tc, "function"), "arguments")
				 ->valuestring, "{\"a\":1}");
	cJSON_Delete(j);
	free(s);
	s = strata_api_completion_json(&h, &whole, "tool_calls", 1, 1);
	j = cJSON_Parse(s);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(j, "choices"), 0), "message"), "content")));
	cJSON_Delete(j);
	free(s);
}
END_TEST

START_TEST(formats_of_templates)
{
	ck_assert_int_eq(strata_toolfmt_of("{{ '<tool_call>\\n' }}"), STRATA_TOOLS_TAGGED);
	ck_assert_int_eq(strata_toolfmt_of("[TOOL_CALLS]{{ x }}"), STRATA_TOOLS_MISTRAL);
	ck_assert_int_eq(strata_toolfmt_of("<|start_header_id|>ipython"), STRATA_TOOLS_LLAMA3);
	ck_assert_int_eq(strata_toolfmt_of("{{ messages }}"), STRATA_TOOLS_TAGGED);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("toolcalls");
	TCase *tc = tcase_create("parse");
	SRunner *sr;
	int failed;

	g_tools = cJSON_Parse("[{\"type\":\"function\",\"function\":{\"name\":\"search\","
			      "\"parameters\":{\"type\":\"object\",\"properties\":{\"query\":{\"type\":"
			      "\"string\"},\"max_results\":{\"type\":\"integer\"}}}}}]");
	tcase_add_test(tc, hermes_json);
	tcase_add_test(tc, qwen_xml_and_glm);
	tcase_add_test(tc, mistral_and_llama);
	tcase_add_test(tc, thinking);
	tcase_add_test(tc, bad_calls);
	tcase_add_test(tc, first_call_only);
	tcase_add_test(tc, call_chunks);
	tcase_add_test(tc, formats_of_templates);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	cJSON_Delete(g_tools);
	return failed ? 1 : 0;
}
