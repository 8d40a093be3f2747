#define _GNU_SOURCE /* strcasestr, setenv */
/*
 * check_serve_dialects.c - Anthropic's /v1/messages and OpenAI's
 * /v1/responses against the chat route: the same conversation gives the same
 * greedy text and token counts in each; their streams carry their events in
 * order and add up to the whole answer; tool_use/tool_result blocks and
 * function_call items reach the template as the chat's tool calls do;
 * x-api-key, stop sequences and each dialect's error shape.
 */
#include <check.h>
#include <cjson/cJSON.h>
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

static void start_server(const char *tmpl)
{
	const char *const extra[] = { "--chat-template", tmpl };

	test_server_start(&g_ts, g_model, extra, tmpl ? 2 : 0);
}

static void stop_server(void)
{
	test_server_stop(&g_ts);
}

static cJSON *post(const char *path, const char *hdrs, const char *body, int want)
{
	struct resp r;
	cJSON *j;

	http_call(g_ts.port, "POST", path, hdrs, body, &r);
	ck_assert_msg(r.status == want, "%s %s: %d, want %d: %s", path, body, r.status, want,
		      r.body.p);
	j = json_of(&r);
	resp_free(&r);
	return j;
}

/* The events of an SSE body: names in order (joined by ' '), and text of deltas. */
static void sse(const char *body, struct strata_buf *names, struct strata_buf *text,
		const char *delta_key, const char *delta_sub)
{
	for (const char *p = body; (p = strstr(p, "event: ")); p++) {
		const char *nl = strchr(p, '\n'), *data = strstr(p, "data: ");
		cJSON *j;
		const cJSON *d;

		ck_assert_ptr_nonnull(nl);
		strata_buf_add(names, p + 7, (size_t)(nl - p - 7));
		strata_buf_puts(names, " ");
		j = cJSON_ParseWithOpts(data + 6, NULL, 0);
		ck_assert_ptr_nonnull(j);
		d = cJSON_GetObjectItem(j, delta_key);
		if (delta_sub)
			d = cJSON_GetObjectItem(d, delta_sub);
		if (cJSON_IsString(d) && (!delta_sub || !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(
			j, delta_key), "type")->valuestring, "text_delta")))
			strata_buf_puts(text, d->valuestring);
		cJSON_Delete(j);
	}
	strata_buf_add(names, "", 0);
	strata_buf_add(text, "", 0);
}

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

#define SYS_USER "\"system\":\"You tell stories.\",\"messages\":[{\"role\":\"user\",\"content\":" \
	"\"Once upon a time\"}]"
#define OAI_MSGS "\"messages\":[{\"role\":\"system\",\"content\":\"You tell stories.\"}," \
	"{\"role\":\"user\",\"content\":\"Once upon a time\"}]"

START_TEST(anthropic_messages)
{
	cJSON *a, *o;
	struct resp r;
	struct strata_buf names = { 0 }, text = { 0 };

	start_server(NULL);
	o = post("/v1/chat/completions", NULL, "{" OAI_MSGS ",\"max_tokens\":12,\"temperature\":0}",
		 200);
	a = post("/v1/messages", "anthropic-version: 2023-06-01\r\n", "{\"model\":\"m\","
		 "\"max_tokens\":12,\"temperature\":0," SYS_USER "}", 200);
	ck_assert_str_eq(str_at(a, AT(a, "type"), "type"), "message");
	ck_assert_str_eq(str_at(a, AT(a, "content", "0", "type"), "block"), "text");
	ck_assert_str_eq(str_at(a, AT(a, "content", "0", "text"), "text"),
			 str_at(o, AT(o, "choices", "0", "message", "content"), "content"));
	ck_assert_str_eq(str_at(a, AT(a, "stop_reason"), "stop_reason"), "max_tokens");
	ck_assert_int_eq(int_at(a, AT(a, "usage", "input_tokens"), "in"),
			 int_at(o, AT(o, "usage", "prompt_tokens"), "prompt"));
	ck_assert_int_eq(strncmp(str_at(a, AT(a, "id"), "id"), "msg_", 4), 0);
	/* streamed: its events, in order, adding up to the same text */
	http_call(g_ts.port, "POST", "/v1/messages", NULL, "{\"model\":\"m\",\"max_tokens\":12,"
		  "\"temperature\":0,\"stream\":true," SYS_USER "}", &r);
	ck_assert_int_eq(r.status, 200);
	sse(r.body.p, &names, &text, "delta", "text");
	ck_assert_msg(starts(names.p, "message_start ping content_block_start content_block_delta "),
		      "%s", names.p);
	ck_assert_msg(strstr(names.p, "content_block_delta content_block_stop message_delta "
			     "message_stop "), "%s", names.p);
	ck_assert_str_eq(text.p, str_at(a, AT(a, "content", "0", "text"), "text"));
	strata_buf_free(&names);
	strata_buf_free(&text);
	resp_free(&r);
	cJSON_Delete(o);
	cJSON_Delete(a);
	/* a stop sequence from the text ends it there and is named */
	a = post("/v1/messages", NULL, "{\"model\":\"m\",\"max_tokens\":40,\"temperature\":0,"
		 "\"stop_sequences\":[\"there\"],\"messages\":[{\"role\":\"user\",\"content\":"
		 "\"Once upon a time\"}]}", 200);
	if (!strcmp(str_at(a, AT(a, "stop_reason"), "stop"), "stop_sequence"))
		ck_assert_str_eq(str_at(a, AT(a, "stop_sequence"), "seq"), "there");
	cJSON_Delete(a);
	stop_server();
}
END_TEST

/* tool_use and tool_result blocks are the chat's tool calls and tool messages. */
START_TEST(anthropic_tools)
{
	cJSON *a, *o, *t;
	char *prompt;
	int32_t *ids = NULL;
	int n;

	start_server("chatml");
	o = post("/apply-template", NULL, "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"},"
		 "{\"role\":\"assistant\",\"content\":\"Checking.\",\"tool_calls\":[{\"id\":\"toolu_1\","
		 "\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":"
		 "{\"city\":\"Paris\"}}}]},{\"role\":\"tool\",\"tool_call_id\":\"toolu_1\","
		 "\"content\":\"21 C\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
		 "\"get_weather\",\"parameters\":{\"type\":\"object\"}}}]}", 200);
	prompt = strdup(str_at(o, AT(o, "prompt"), "prompt"));
	cJSON_Delete(o);
	ck_assert_ptr_nonnull(strstr(prompt, "<tool_call>\n{\"name\": \"get_weather\", "
				     "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
	ck_assert_ptr_nonnull(strstr(prompt, "<tool_response>\n21 C\n</tool_response>"));
	n = strata_engine_tokenize(g_ts.eng, prompt, strlen(prompt),
				   STRATA_TOKENIZE_ADD_BOS | STRATA_TOKENIZE_PARSE_SPECIAL, &ids);
	free(ids);
	free(prompt);
	a = post("/v1/messages/count_tokens", NULL, "{\"model\":\"m\",\"tools\":[{\"name\":"
		 "\"get_weather\",\"input_schema\":{\"type\":\"object\"}}],\"messages\":[{\"role\":"
		 "\"user\",\"content\":\"Weather?\"},{\"role\":\"assistant\",\"content\":[{\"type\":"
		 "\"text\",\"text\":\"Checking.\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":"
		 "\"get_weather\",\"input\":{\"city\":\"Paris\"}}]},{\"role\":\"user\",\"content\":[{"
		 "\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":\"21 C\"}]}]}", 200);
	ck_assert_int_eq(int_at(a, AT(a, "input_tokens"), "input_tokens"), n);
	cJSON_Delete(a);
	/* their errors, in their shape */
	t = post("/v1/messages", NULL, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		 "\"content\":\"x\"}]}", 400);
	ck_assert_str_eq(str_at(t, AT(t, "type"), "type"), "error");
	ck_assert_str_eq(str_at(t, AT(t, "error", "type"), "type"), "invalid_request_error");
	cJSON_Delete(t);
	cJSON_Delete(post("/v1/messages", NULL, "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{"
			  "\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{}}]}]}", 400));
	cJSON_Delete(post("/v1/messages", NULL, "{\"model\":\"m\",\"max_tokens\":5,\"top_q\":1,"
			  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", 400));
	cJSON_Delete(post("/v1/messages", NULL, "{\"model\":\"m\",\"max_tokens\":5,\"tools\":[{"
			  "\"type\":\"web_search_20250305\",\"name\":\"w\"}],\"messages\":[{\"role\":"
			  "\"user\",\"content\":\"x\"}]}", 400));
	stop_server();
}
END_TEST

/* x-api-key is the API key too, and a 401 comes in Anthropic's shape there. */
START_TEST(anthropic_key)
{
	cJSON *j;

	setenv("STRATA_API_KEY", "sk-test-1", 1);
	start_server(NULL);
	unsetenv("STRATA_API_KEY");
	cJSON_Delete(post("/v1/messages", "x-api-key: sk-test-1\r\n", "{\"model\":\"m\","
			  "\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
			  200));
	j = post("/v1/messages", "x-api-key: wrong\r\n", "{}", 401);
	cJSON_Delete(j);
	stop_server();
}
END_TEST

START_TEST(responses)
{
	cJSON *o, *r, *t;
	struct resp s;
	struct strata_buf names = { 0 }, text = { 0 };

	start_server(NULL);
	o = post("/v1/chat/completions", NULL, "{" OAI_MSGS ",\"max_tokens\":10,\"temperature\":0}",
		 200);
	r = post("/v1/responses", NULL, "{\"model\":\"m\",\"instructions\":\"You tell stories.\","
		 "\"input\":\"Once upon a time\",\"max_output_tokens\":10,\"temperature\":0}", 200);
	ck_assert_str_eq(str_at(r, AT(r, "object"), "object"), "response");
	ck_assert_str_eq(str_at(r, AT(r, "status"), "status"), "incomplete");
	ck_assert_str_eq(str_at(r, AT(r, "output", "0", "content", "0", "text"), "text"),
			 str_at(o, AT(o, "choices", "0", "message", "content"), "content"));
	ck_assert_int_eq(int_at(r, AT(r, "usage", "input_tokens"), "in"),
			 int_at(o, AT(o, "usage", "prompt_tokens"), "prompt"));
	http_call(g_ts.port, "POST", "/v1/responses", NULL, "{\"model\":\"m\",\"instructions\":"
		  "\"You tell stories.\",\"input\":\"Once upon a time\",\"max_output_tokens\":10,"
		  "\"temperature\":0,\"stream\":true}", &s);
	ck_assert_int_eq(s.status, 200);
	sse(s.body.p, &names, &text, "delta", NULL);
	ck_assert_msg(starts(names.p, "response.created response.in_progress "
			     "response.output_item.added response.content_part.added "
			     "response.output_text.delta "), "%s", names.p);
	ck_assert_msg(strstr(names.p, "response.output_text.done response.content_part.done "
			     "response.output_item.done response.incomplete "), "%s", names.p);
	ck_assert_str_eq(text.p, str_at(o, AT(o, "choices", "0", "message", "content"), "c"));
	strata_buf_free(&names);
	strata_buf_free(&text);
	resp_free(&s);
	cJSON_Delete(o);
	cJSON_Delete(r);
	/* function_call and function_call_output items are accepted */
	cJSON_Delete(post("/v1/responses", NULL, "{\"model\":\"m\",\"max_output_tokens\":2,\"input\":["
			  "{\"role\":\"user\",\"content\":\"Weather?\"},{\"type\":\"function_call\","
			  "\"call_id\":\"call_1\",\"name\":\"get_weather\",\"arguments\":"
			  "\"{\\\"city\\\":\\\"Paris\\\"}\"},{\"type\":\"function_call_output\","
			  "\"call_id\":\"call_1\",\"output\":\"21 C\"}],\"tools\":[{\"type\":"
			  "\"function\",\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}]}",
			  200));
	t = post("/v1/responses", NULL, "{\"model\":\"m\",\"input\":\"x\",\"previous_response_id\":"
		 "\"resp_1\"}", 400);
	ck_assert_str_eq(str_at(t, AT(t, "error", "param"), "param"), "previous_response_id");
	cJSON_Delete(t);
	cJSON_Delete(post("/v1/responses", NULL, "{\"model\":\"m\",\"input\":\"x\",\"tools\":[{"
			  "\"type\":\"web_search\"}]}", 400));
	stop_server();
}
END_TEST

int main(void)
{
	Suite *su = suite_create("serve_dialects");
	TCase *tc = tcase_create("dialects");

	if (!(g_model = test_server_model()))
		return STRATA_TEST_SKIP;
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, anthropic_messages);
	tcase_add_test(tc, anthropic_tools);
	tcase_add_test(tc, anthropic_key);
	tcase_add_test(tc, responses);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
