#define _GNU_SOURCE /* strcasestr */
/*
 * check_serve_fields.c - the request fields beyond sampling: logprobs and
 * top_logprobs (chat and completions, whole and streamed), presence and
 * frequency penalties (range-checked, and they change what is sampled).
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
	test_server_start(&g_ts, g_model, NULL, 0);
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

/* The chat's logprobs: one entry per token, their texts make the content, greedy is top 1. */
START_TEST(chat_logprobs)
{
	cJSON *j;
	const cJSON *content, *e;
	struct strata_buf text = { 0 };
	int n = 0;

	start_server();
	j = post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
		 "\"max_tokens\":12,\"temperature\":0,\"logprobs\":true,\"top_logprobs\":3}", 200);
	content = AT(j, "choices", "0", "logprobs", "content");
	ck_assert(cJSON_IsArray(content));
	cJSON_ArrayForEach(e, content) {
		const cJSON *top = cJSON_GetObjectItem(e, "top_logprobs");
		double lp = cJSON_GetObjectItem(e, "logprob")->valuedouble, sum = 0;
		const cJSON *a;

		ck_assert_int_eq(cJSON_GetArraySize(top), 3);
		ck_assert(lp <= 0);
		/* greedy: the token sampled is the best alternative */
		ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(top, 0), "token")->valuestring,
				 cJSON_GetObjectItem(e, "token")->valuestring);
		cJSON_ArrayForEach(a, top)
			sum += exp(cJSON_GetObjectItem(a, "logprob")->valuedouble);
		ck_assert(sum <= 1.0001);
		strata_buf_puts(&text, cJSON_GetObjectItem(e, "token")->valuestring);
		n++;
	}
	ck_assert_int_eq(n, int_at(j, AT(j, "usage", "completion_tokens"), "usage"));
	ck_assert_str_eq(text.p, str_at(j, AT(j, "choices", "0", "message", "content"), "content"));
	strata_buf_free(&text);
	cJSON_Delete(j);
	j = post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
		 "\"max_tokens\":2}", 200);
	ck_assert(cJSON_IsNull(AT(j, "choices", "0", "logprobs")));
	cJSON_Delete(j);
	cJSON_Delete(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":"
			  "\"Hi\"}],\"top_logprobs\":2}", 400));
	cJSON_Delete(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":"
			  "\"Hi\"}],\"logprobs\":true,\"top_logprobs\":21}", 400));
	stop_server();
}
END_TEST

/* Completions: tokens, token_logprobs, top_logprobs, text_offset; a stream says the same. */
START_TEST(completion_logprobs)
{
	static const char body[] = "{\"prompt\":\"Once upon a time\",\"max_tokens\":10,"
				   "\"temperature\":0,\"logprobs\":2%s}";
	char b[256];
	cJSON *j;
	const cJSON *lp, *t;
	struct resp r;
	struct strata_buf text = { 0 }, streamed = { 0 };
	int i = 0;
	const char *p;

	start_server();
	snprintf(b, sizeof(b), body, "");
	j = post("/v1/completions", b, 200);
	lp = AT(j, "choices", "0", "logprobs");
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(lp, "tokens")) {
		ck_assert_int_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(lp, "text_offset"), i)->valueint,
				 (int)text.len);
		ck_assert_int_le(cJSON_GetArraySize(cJSON_GetArrayItem(
			cJSON_GetObjectItem(lp, "top_logprobs"), i)), 2);
		strata_buf_puts(&text, t->valuestring);
		i++;
	}
	ck_assert_int_eq(i, 10);
	ck_assert_str_eq(text.p, str_at(j, AT(j, "choices", "0", "text"), "text"));
	/* streamed: the same tokens, in logprobs chunks */
	snprintf(b, sizeof(b), body, ",\"stream\":true");
	http_call(g_ts.port, "POST", "/v1/completions", NULL, b, &r);
	ck_assert_int_eq(r.status, 200);
	for (p = r.body.p; (p = strstr(p, "data: {")); p++) {
		cJSON *c = cJSON_ParseWithOpts(p + 6, NULL, 0), *tk;

		cJSON_ArrayForEach(tk, AT(c, "choices", "0", "logprobs", "tokens"))
			strata_buf_puts(&streamed, tk->valuestring);
		cJSON_Delete(c);
	}
	ck_assert_str_eq(streamed.p, text.p);
	resp_free(&r);
	strata_buf_free(&text);
	strata_buf_free(&streamed);
	cJSON_Delete(j);
	stop_server();
}
END_TEST

/* The log-probability of token k of a greedy completion of "Once upon" with penalties. */
static double logprob_at(int k, const char *penalties)
{
	char b[256];
	cJSON *j;
	double v;

	snprintf(b, sizeof(b), "{\"prompt\":\"Once upon\",\"max_tokens\":8,\"temperature\":0,"
		 "\"logprobs\":0%s}", penalties);
	j = post("/v1/completions", b, 200);
	v = cJSON_GetArrayItem(AT(j, "choices", "0", "logprobs", "token_logprobs"), k)->valuedouble;
	cJSON_Delete(j);
	return v;
}

START_TEST(penalties)
{
	static const char *const bad[] = {
		"\"presence_penalty\":2.5", "\"frequency_penalty\":-2.01", "\"presence_penalty\":\"x\"",
		"\"frequency_penalty\":null,\"presence_penalty\":[1]",
	};
	double plain, pen;

	start_server();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char b[256];
		cJSON *j;

		snprintf(b, sizeof(b), "{\"prompt\":\"x\",%s}", bad[i]);
		j = post("/v1/completions", b, 400);
		ck_assert_ptr_nonnull(strstr(str_at(j, AT(j, "error", "param"), "param"), "penalty"));
		cJSON_Delete(j);
	}
	/* " a time, there was a": the second " a" (token 5) is a repeat */
	plain = logprob_at(5, "");
	pen = logprob_at(5, ",\"presence_penalty\":2,\"frequency_penalty\":2");
	ck_assert_msg(pen < plain - 0.01, "penalised %f, plain %f", pen, plain);
	/* the first " a" is no repeat: the same either way */
	ck_assert_double_eq_tol(logprob_at(0, ""), logprob_at(0, ",\"presence_penalty\":2"), 1e-6);
	stop_server();
}
END_TEST

/* Fields strata cannot honour are refused by name; the harmless ones pass. */
START_TEST(unknown_fields)
{
	static const struct {
		const char *path, *body, *param;
	} bad[] = {
		{ "/v1/chat/completions", "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		  "\"frobnicate\":1", "frobnicate" },
		{ "/v1/chat/completions", "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		  "\"n\":2", "n" },
		{ "/v1/chat/completions", "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		  "\"store\":true", "store" },
		{ "/v1/chat/completions", "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
		  "\"modalities\":[\"audio\"]", "modalities" },
		{ "/v1/completions", "\"prompt\":\"x\",\"suffix\":\"y\"", "suffix" },
		{ "/v1/completions", "\"prompt\":\"x\",\"best_of\":3", "best_of" },
		{ "/v1/completions", "\"prompt\":\"x\",\"messages\":[]", "messages" },
		{ "/v1/completions", "\"prompt\":[\"a\",\"b\"]", "prompt" },
		{ "/v1/completions", "\"prompt\":[1,2,999999]", "prompt[2]" },
		{ "/v1/completions", "\"prompt\":\"x\",\"logit_bias\":{\"999999\":1}", "logit_bias" },
		{ "/v1/completions", "\"prompt\":\"x\",\"logit_bias\":{\"5\":101}", "logit_bias" },
		{ "/v1/completions", "\"prompt\":\"x\",\"echo\":true,\"logprobs\":1", "echo" },
	};
	char b[512];

	start_server();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *j;

		snprintf(b, sizeof(b), "{%s}", bad[i].body);
		j = post(bad[i].path, b, 400);
		ck_assert_str_eq(str_at(j, AT(j, "error", "param"), "param"), bad[i].param);
		cJSON_Delete(j);
	}
	cJSON_Delete(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":"
			  "\"x\"}],\"max_tokens\":1,\"n\":1,\"user\":\"u\",\"store\":false,"
			  "\"metadata\":{},\"stream_options\":{\"include_usage\":true}}", 200));
	/* \u0000 would cut the prompt there; "\\u0000" is a backslash and text, fine */
	cJSON_Delete(post("/v1/completions", "{\"prompt\":\"a\\u0000b\",\"max_tokens\":1}", 400));
	cJSON_Delete(post("/v1/completions", "{\"prompt\":\"a\\\\u0000b\",\"max_tokens\":1}", 200));
	stop_server();
}
END_TEST

/* Token ids as the prompt: the same text as the string they tokenize from; echo; logit_bias. */
START_TEST(token_prompts)
{
	cJSON *j, *ids;
	char b[1024], *list, text[512];

	start_server();
	j = post("/tokenize", "{\"content\":\"Once upon a time\",\"add_special\":true}", 200);
	ids = cJSON_GetObjectItem(j, "tokens");
	list = cJSON_PrintUnformatted(ids);
	cJSON_Delete(j);
	j = post("/detokenize", "{\"tokens\":[400,300]}", 200);
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(j, "content")));
	cJSON_Delete(j);
	j = post("/v1/completions", "{\"prompt\":\"Once upon a time\",\"max_tokens\":8,"
		 "\"temperature\":0}", 200);
	snprintf(text, sizeof(text), "%s", str_at(j, AT(j, "choices", "0", "text"), "text"));
	cJSON_Delete(j);
	snprintf(b, sizeof(b), "{\"prompt\":%s,\"max_tokens\":8,\"temperature\":0}", list);
	j = post("/v1/completions", b, 200);
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "text"), "text"), text);
	cJSON_Delete(j);
	snprintf(b, sizeof(b), "{\"prompt\":[%s],\"max_tokens\":8,\"temperature\":0,\"echo\":true}",
		 list);
	j = post("/v1/completions", b, 200);
	/* the ids decode with the space SentencePiece puts before "Once" */
	ck_assert_msg(strstr(str_at(j, AT(j, "choices", "0", "text"), "text"), "Once upon a time") &&
		      strstr(str_at(j, AT(j, "choices", "0", "text"), "text"), text),
		      "%s", str_at(j, AT(j, "choices", "0", "text"), "text"));
	cJSON_Delete(j);
	free(list);
	/* the greedy first token banned: another one comes */
	j = post("/tokenize", "{\"content\":\"Once upon\"}", 200);
	cJSON_Delete(j);
	j = post("/v1/completions", "{\"prompt\":\"Once upon\",\"max_tokens\":1,\"temperature\":0,"
		 "\"logprobs\":0}", 200);
	snprintf(text, sizeof(text), "%s", str_at(j, AT(j, "choices", "0", "text"), "text"));
	cJSON_Delete(j);
	j = post("/tokenize", "{\"content\":\"Once upon a\"}", 200);
	snprintf(b, sizeof(b), "{\"prompt\":\"Once upon\",\"max_tokens\":1,\"temperature\":0,"
		 "\"logit_bias\":{\"%d\":-100}}",
		 cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tokens"),
				    cJSON_GetArraySize(cJSON_GetObjectItem(j, "tokens")) - 1)->valueint);
	cJSON_Delete(j);
	j = post("/v1/completions", b, 200);
	ck_assert_str_ne(str_at(j, AT(j, "choices", "0", "text"), "text"), text);
	cJSON_Delete(j);
	stop_server();
}
END_TEST

START_TEST(info_routes)
{
	struct resp r;
	cJSON *j;

	start_server();
	http_call(g_ts.port, "GET", "/props", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	ck_assert_int_eq(int_at(j, AT(j, "default_generation_settings", "n_ctx"), "n_ctx"),
			 (int)strata_engine_n_ctx(g_ts.eng));
	ck_assert_str_eq(str_at(j, AT(j, "chat_template_origin"), "origin"), "built-in plain");
	cJSON_Delete(j);
	resp_free(&r);
	http_call(g_ts.port, "GET", "/v1/health", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	stop_server();
}
END_TEST

int main(void)
{
	Suite *su = suite_create("serve_fields");
	TCase *tc = tcase_create("fields");

	if (!(g_model = test_server_model()))
		return STRATA_TEST_SKIP;
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, chat_logprobs);
	tcase_add_test(tc, completion_logprobs);
	tcase_add_test(tc, penalties);
	tcase_add_test(tc, unknown_fields);
	tcase_add_test(tc, token_prompts);
	tcase_add_test(tc, info_routes);
	suite_add_tcase(su, tc);
	return tu_srunner_run(srunner_create(su));
}
