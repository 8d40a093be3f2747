#define _GNU_SOURCE /* strcasestr */
/*
 * check_serve_constrained.c - structured output and forced tool calls over
 * HTTP, the whole path: stories260K (which never writes JSON or calls a tool
 * by itself) under response_format json_schema writes JSON that parses and
 * matches; under tool_choice required or a named function it calls the
 * tool, in the chat's tool_calls (whole and streamed as a delta), in
 * Anthropic's tool_use blocks (and their stream), and in a Responses
 * function_call; schemas the grammar cannot take are a 400.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "serve/serve.h"
#include "strata.h"
#include "serveutil.h"
#include "testutil.h"

static const char *g_model;
static struct test_server g_ts;

static void start_server(void)
{
	static const char *const extra[] = { "--chat-template", "chatml" };

	test_server_start(&g_ts, g_model, extra, 2);
}

static void stop_server(void)
{
	test_server_stop(&g_ts);
}

static cJSON *post(const char *path, const char *body, int want)
{
	struct resp r;
	cJSON *j;

	http_call(g_ts.port, "POST", path, NULL, body, &r);
	ck_assert_msg(r.status == want, "%s: %d, want %d: %s", body, r.status, want, r.body.p);
	j = json_of(&r);
	resp_free(&r);
	return j;
}

#define PERSON "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8}," \
	"\"age\":{\"type\":\"integer\"},\"pet\":{\"enum\":[\"cat\",\"dog\"]}},\"required\":" \
	"[\"name\",\"age\",\"pet\"],\"additionalProperties\":false}"
#define TOOLS "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":" \
	"{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":12}}," \
	"\"required\":[\"city\"]}}},{\"type\":\"function\",\"function\":{\"name\":\"get_time\"," \
	"\"parameters\":{\"type\":\"object\",\"properties\":{\"zone\":{\"type\":\"string\"," \
	"\"maxLength\":6}},\"required\":[\"zone\"]}}}]"
#define ASK "\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}]"

static void check_person(const char *text)
{
	cJSON *j = cJSON_Parse(text);
	const cJSON *pet = cJSON_GetObjectItem(j, "pet"), *age = cJSON_GetObjectItem(j, "age");

	ck_assert_msg(cJSON_IsObject(j) && cJSON_IsString(cJSON_GetObjectItem(j, "name")) &&
		      cJSON_IsNumber(age) && age->valuedouble == floor(age->valuedouble) &&
		      cJSON_IsString(pet) && (!strcmp(pet->valuestring, "cat") ||
					      !strcmp(pet->valuestring, "dog")) &&
		      cJSON_GetArraySize(j) == 3, "%s", text);
	cJSON_Delete(j);
}

START_TEST(json_schema)
{
	cJSON *j;

	start_server();
	for (int seed = 1; seed <= (tu_tsan() ? 1 : 4); seed++) {
		char b[1024];

		snprintf(b, sizeof(b), "{" ASK ",\"max_tokens\":300,\"seed\":%d,\"response_format\":"
			 "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"person\",\"strict\":true,"
			 "\"schema\":" PERSON "}}}", seed);
		j = post("/v1/chat/completions", b, 200);
		ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "finish_reason"), "finish"), "stop");
		check_person(str_at(j, AT(j, "choices", "0", "message", "content"), "content"));
		cJSON_Delete(j);
	}
	/* the Responses API's text.format is the same constraint */
	j = post("/v1/responses", "{\"input\":\"Weather?\",\"max_output_tokens\":300,\"text\":{"
		 "\"format\":{\"type\":\"json_schema\",\"name\":\"p\",\"schema\":" PERSON "}}}", 200);
	check_person(str_at(j, AT(j, "output", "0", "content", "0", "text"), "text"));
	cJSON_Delete(j);
	j = post("/v1/chat/completions", "{" ASK ",\"response_format\":{\"type\":\"json_schema\","
		 "\"json_schema\":{\"schema\":{\"type\":\"string\",\"pattern\":\"^a\"}}}}", 400);
	ck_assert_ptr_nonnull(strstr(str_at(j, AT(j, "error", "message"), "m"), "pattern"));
	cJSON_Delete(j);
	cJSON_Delete(post("/v1/chat/completions", "{" ASK ",\"response_format\":{\"type\":\"xml\"}}",
			  400));
	stop_server();
}
END_TEST

START_TEST(forced_call)
{
	cJSON *j, *args;
	struct resp r;
	const char *p;

	start_server();
	j = post("/v1/chat/completions", "{" ASK ",\"max_tokens\":200,\"tools\":" TOOLS
		 ",\"tool_choice\":\"required\",\"parallel_tool_calls\":false}", 200);
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "finish_reason"), "f"), "tool_calls");
	ck_assert(cJSON_IsNull(AT(j, "choices", "0", "message", "content")));
	args = cJSON_Parse(str_at(j, AT(j, "choices", "0", "message", "tool_calls", "0",
					 "function", "arguments"), "arguments"));
	ck_assert(cJSON_IsObject(args));
	cJSON_Delete(args);
	cJSON_Delete(j);
	/* named: that function, and one call with parallel_tool_calls false */
	j = post("/v1/chat/completions", "{" ASK ",\"max_tokens\":200,\"tools\":" TOOLS
		 ",\"parallel_tool_calls\":false,\"tool_choice\":{\"type\":\"function\",\"function\":"
		 "{\"name\":\"get_time\"}}}", 200);
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "message", "tool_calls", "0", "function",
				      "name"), "name"), "get_time");
	ck_assert_int_eq(cJSON_GetArraySize(AT(j, "choices", "0", "message", "tool_calls")), 1);
	cJSON_Delete(j);
	/* streamed: the call is one delta with its index, id, name and arguments */
	http_call(g_ts.port, "POST", "/v1/chat/completions", NULL, "{" ASK ",\"max_tokens\":200,"
		  "\"stream\":true,\"tools\":" TOOLS ",\"tool_choice\":{\"type\":\"function\","
		  "\"function\":{\"name\":\"get_weather\"}},\"parallel_tool_calls\":false}", &r);
	ck_assert_int_eq(r.status, 200);
	p = strstr(r.body.p, "\"tool_calls\":[{\"index\":0,\"id\":\"call_");
	ck_assert_msg(p && strstr(p, "\"name\":\"get_weather\",\"arguments\":\"{"), "%s", r.body.p);
	ck_assert_ptr_nonnull(strstr(r.body.p, "\"finish_reason\":\"tool_calls\""));
	resp_free(&r);
	stop_server();
}
END_TEST

/* Anthropic: tool_choice any gives a tool_use block, whole and streamed. */
START_TEST(anthropic_tool_use)
{
	static const char *const body = "{\"model\":\"m\",\"max_tokens\":200,%s\"tools\":[{\"name\":"
		"\"get_weather\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"city\":{"
		"\"type\":\"string\",\"maxLength\":10}},\"required\":[\"city\"]}}],\"tool_choice\":{"
		"\"type\":\"any\",\"disable_parallel_tool_use\":true},\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}]}";
	char b[1024];
	cJSON *j;
	struct resp r;

	start_server();
	snprintf(b, sizeof(b), body, "");
	j = post("/v1/messages", b, 200);
	ck_assert_str_eq(str_at(j, AT(j, "stop_reason"), "stop_reason"), "tool_use");
	ck_assert_str_eq(str_at(j, AT(j, "content", "0", "type"), "type"), "tool_use");
	ck_assert_str_eq(str_at(j, AT(j, "content", "0", "name"), "name"), "get_weather");
	ck_assert_int_eq(strncmp(str_at(j, AT(j, "content", "0", "id"), "id"), "toolu_", 6), 0);
	ck_assert(cJSON_IsString(AT(j, "content", "0", "input", "city")));
	cJSON_Delete(j);
	snprintf(b, sizeof(b), body, "\"stream\":true,");
	http_call(g_ts.port, "POST", "/v1/messages", NULL, b, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body.p, "\"content_block\":{\"type\":\"tool_use\",\"id\":"
				     "\"toolu_"));
	ck_assert_ptr_nonnull(strstr(r.body.p, "\"type\":\"input_json_delta\",\"partial_json\":"
				     "\"{\\\"city\\\":"));
	ck_assert_ptr_nonnull(strstr(r.body.p, "\"stop_reason\":\"tool_use\""));
	resp_free(&r);
	/* Responses: a function_call item */
	j = post("/v1/responses", "{\"input\":\"Weather?\",\"max_output_tokens\":200,\"tools\":[{"
		 "\"type\":\"function\",\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
		 "\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":10}},\"required\":"
		 "[\"city\"]}}],\"tool_choice\":\"required\",\"parallel_tool_calls\":false}", 200);
	ck_assert_str_eq(str_at(j, AT(j, "output", "0", "type"), "type"), "function_call");
	ck_assert_str_eq(str_at(j, AT(j, "output", "0", "name"), "name"), "get_weather");
	cJSON_Delete(j);
	stop_server();
}
END_TEST

int main(void)
{
	Suite *su = suite_create("serve_constrained");
	TCase *tc = tcase_create("constrained");

	if (!(g_model = test_server_model()))
		return STRATA_TEST_SKIP;
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, json_schema);
	tcase_add_test(tc, forced_call);
	tcase_add_test(tc, anthropic_tool_use);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
