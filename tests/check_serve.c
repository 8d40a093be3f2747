#define _GNU_SOURCE /* memmem, setenv */
/*
 * check_serve.c - the HTTP server end to end, over a plain socket client.
 *
 * A server runs in the test process on stories260K (port 0: the system picks
 * one).  Greedy answers are compared with what the `strata` command generates
 * for the same rendered prompt, streamed answers with whole ones, and every
 * error path with its status and JSON error body, the server answering
 * /health after each.  The stop-string filter is also checked on its own (the
 * chat templates are in check_serve_chat.c).
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "httpc.h"
#include "util/strbuf.h"
#include "serve/chat.h"
#include "serve/serve.h"
#include "serve/textout.h"
#include "strata.h"
#include "serveutil.h"
#include "testutil.h"

static const char *g_model;
static struct test_server g_ts;

/* ---- the server under test ------------------------------------------------------ */

/* Start a server on stories260K with strata.ini's settings plus extra flags. */
static void start_server(const char *const *extra, int n_extra)
{
	test_server_start(&g_ts, g_model, extra, n_extra);
}

static void stop_server(void)
{
	test_server_stop(&g_ts);
}

static void http(const char *method, const char *path, const char *hdrs, const char *body,
		 struct resp *r)
{
	http_call(g_ts.port, method, path, hdrs, body, r);
}


static void assert_healthy(void)
{
	struct resp r;
	cJSON *j;

	http("GET", "/health", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	ck_assert_str_eq(str_at(j, AT(j, "status"), "status"), "ok");
	cJSON_Delete(j);
	resp_free(&r);
}

/* An OpenAI error body with this status; param (when not NULL) is the field named. */
static void assert_error(const struct resp *r, int status, const char *param, const char *what)
{
	cJSON *j;

	ck_assert_msg(r->status == status, "%s: status %d, want %d: %s", what, r->status, status,
		      r->body.p ? r->body.p : "");
	j = json_of(r);
	ck_assert_int_eq(int_at(j, AT(j, "error", "code"), "error.code"), status);
	ck_assert_msg(*str_at(j, AT(j, "error", "message"), "error.message"), "%s: no message", what);
	str_at(j, AT(j, "error", "type"), "error.type");
	if (param) {
		ck_assert_str_eq(str_at(j, AT(j, "error", "param"), "error.param"), param);
		ck_assert_msg(strstr(AT(j, "error", "message")->valuestring, param),
			      "%s: the message does not name '%s'", what, param);
	}
	cJSON_Delete(j);
	assert_healthy();
}

static void post_expect(const char *path, const char *body, int status, const char *param)
{
	struct resp r;

	http("POST", path, NULL, body, &r);
	assert_error(&r, status, param, body);
	resp_free(&r);
}

/* ---- the strata command, for reference ------------------------------------------- */

static char g_out[1 << 16];

/*
 * What `strata` generates from the prompt text with --temp 0: the generated
 * text (after the echoed prompt) and the token counts of its timing line.
 */
static void cli_generate(const char *prompt, int n, char *text, size_t cap, int *n_prompt,
			 int *n_gen)
{
	const char *dir = tu_tmpdir(), *tail;
	char file[512], cmd[2048];
	size_t plen = strlen(prompt);

	snprintf(file, sizeof(file), "%s/prompt.txt", dir);
	ck_assert_int_eq(tu_write_file(file, prompt, plen), 0);
	snprintf(cmd, sizeof(cmd), "%s -c strata.ini -m %s -f %s --temp 0 -n %d -t 1", STRATA_BIN,
		 g_model, file, n);
	ck_assert_int_eq(tu_run(cmd, g_out, sizeof(g_out)), 0);
	tu_rmtree(dir);
	ck_assert_msg(strncmp(g_out, prompt, plen) == 0, "no prompt echo:\n%s", g_out);
	tail = strstr(g_out + plen, "\nprompt ");
	ck_assert_msg(tail, "no timing line:\n%s", g_out);
	snprintf(text, cap, "%.*s", (int)(tail - g_out - plen), g_out + plen);
	ck_assert_int_eq(sscanf(tail, "\nprompt %d tokens in %*s ms (%*s tok/s); generated %d",
				n_prompt, n_gen), 2);
}

/* ---- units: the stop-string filter --------------------------------------------------- */

/* The plain transcript of n messages, as the server renders them for stories260K. */
static void render_plain(const struct strata_chat_msg *m, size_t n, char **out, size_t *len)
{
	struct strata_chat_opts o = { .setting = "plain", .bos = "<s>", .eos = "</s>",
				      .tokenizer_adds_bos = 1 };
	struct strata_tmpl_err err;
	struct strata_chat *c;

	ck_assert_int_eq(strata_chat_create(&o, &c), 0);
	ck_assert_int_eq(strata_chat_render_msgs(c, m, n, out, len, &err), 0);
	strata_chat_free(c);
}

/* Feed pieces; the released text (NUL-terminated) and whether a stop matched. */
static int feed_all(char *const *stop, size_t n_stop, const char *const *pieces, size_t n,
		    struct strata_buf *out)
{
	struct strata_textout t = { .stop = stop, .n_stop = n_stop };
	int hit = 0;

	for (size_t i = 0; i < n && !hit; i++)
		hit = strata_textout_feed(&t, pieces[i], strlen(pieces[i]), out);
	if (!hit)
		strata_textout_flush(&t, out);
	strata_textout_free(&t);
	strata_buf_add(out, "", 0);
	return hit;
}

START_TEST(textout_filter)
{
	char *stops[] = { "lo Wor", "XYZ" };
	const char *a[] = { "Hel", "lo W", "orld" }, *b[] = { "abcX", "Y", "Q" };
	const char *c[] = { "caf\xC3", "\xA9!" }, *d[] = { "a\xFFz", "XY" };
	struct strata_textout t = { .stop = stops, .n_stop = 2 };
	struct strata_buf out = { 0 };

	/* A stop string across pieces: nothing of it is released. */
	ck_assert_int_eq(feed_all(stops, 2, a, 3, &out), 1);
	ck_assert_str_eq(out.p, "Hel");
	strata_buf_free(&out);
	/* A prefix is held while it may still become a stop string... */
	ck_assert_int_eq(strata_textout_feed(&t, "abcX", 4, &out), 0);
	strata_buf_add(&out, "", 0);
	ck_assert_str_eq(out.p, "abc");
	ck_assert_int_eq(strata_textout_feed(&t, "Y", 1, &out), 0);
	ck_assert_str_eq(out.p, "abc");
	strata_textout_free(&t);
	strata_buf_free(&out);
	/* ...and released once it cannot. */
	ck_assert_int_eq(feed_all(stops, 2, b, 3, &out), 0);
	ck_assert_str_eq(out.p, "abcXYQ");
	strata_buf_free(&out);
	/* A character split over two pieces comes out whole; a bad byte as U+FFFD. */
	ck_assert_int_eq(feed_all(NULL, 0, c, 2, &out), 0);
	ck_assert_str_eq(out.p, "caf\xC3\xA9!");
	strata_buf_free(&out);
	ck_assert_int_eq(feed_all(stops, 2, d, 2, &out), 0);
	ck_assert_str_eq(out.p, "a\xEF\xBF\xBDzXY"); /* the partial "XY" at the end is text */
	strata_buf_free(&out);
}
END_TEST

/* The engine API alone: a cancel lands at the next forward pass. */
static int g_seen;

static int count_token(void *user, int32_t id, const char *piece, size_t len)
{
	(void)user, (void)id, (void)piece, (void)len;
	g_seen++;
	return 0;
}

static int cancel_after_3(void *user)
{
	(void)user;
	return g_seen >= 3;
}

START_TEST(engine_cancel)
{
	const char *argv[] = { "strata", "-c", "strata.ini", "-m", g_model, "--plugin-dir",
			       STRATA_PLUGIN_DIR, "-t", "1" };
	struct strata_gen_params p;
	struct strata_stats st;
	int32_t *ids;
	int n;

	ck_assert_int_eq(strata_engine_create_args(9, (char **)argv, &g_ts.eng), 0);
	n = strata_engine_tokenize(g_ts.eng, "Once upon a time", 16, STRATA_TOKENIZE_ADD_BOS, &ids);
	ck_assert_int_gt(n, 1);
	strata_engine_gen_defaults(g_ts.eng, &p);
	p.n_predict = 50;
	p.temp = 0;
	ck_assert_int_eq(strata_generate_ex(g_ts.eng, ids, (uint32_t)n, &p, count_token, NULL, &st), 50);
	ck_assert_uint_eq(st.finish, STRATA_FINISH_LENGTH);
	ck_assert_uint_eq(st.n_reused, 0);
	g_seen = 0;
	p.cancel = cancel_after_3;
	ck_assert_int_eq(strata_generate_ex(g_ts.eng, ids, (uint32_t)n, &p, count_token, NULL, &st),
			 -ECANCELED);
	ck_assert_int_eq(g_seen, 3);
	free(ids);
	strata_engine_free(g_ts.eng);
}
END_TEST

/* ---- answers ------------------------------------------------------------------------ */

/* Concatenate the text deltas of an SSE body; the usage-carrying last chunk is returned. */
static cJSON *sse_text(const struct resp *r, int chat, struct strata_buf *text)
{
	const char *p = r->body.p;
	cJSON *last = NULL;
	int events = 0, done = 0;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(strcasestr(r->head, "Content-Type: text/event-stream"));
	while ((p = strstr(p, "data: "))) {
		const char *end = strstr(p, "\n\n");
		cJSON *j;

		ck_assert_ptr_nonnull(end);
		p += 6;
		ck_assert_msg(!done, "an event after [DONE]");
		if (strncmp(p, "[DONE]", 6) == 0) {
			done = 1;
			p = end;
			continue;
		}
		j = cJSON_ParseWithLength(p, (size_t)(end - p));
		ck_assert_ptr_nonnull(j);
		ck_assert_str_eq(str_at(j, AT(j, "object"), "object"),
				 chat ? "chat.completion.chunk" : "text_completion");
		if (chat && events == 0)
			ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "delta", "role"), "role"),
					 "assistant");
		{
			const cJSON *t = chat ? AT(j, "choices", "0", "delta", "content")
					      : AT(j, "choices", "0", "text");

			if (cJSON_IsString(t))
				strata_buf_puts(text, t->valuestring);
		}
		cJSON_Delete(last);
		last = j;
		events++;
		p = end;
	}
	ck_assert_msg(done, "no data: [DONE]");
	strata_buf_add(text, "", 0);
	ck_assert_ptr_nonnull(last);
	return last;
}

START_TEST(greedy_matches_cli)
{
	static const struct strata_chat_msg m = { "user", "Tell me a story about a cat.", 28 };
	char *prompt, cli[8192], body[512];
	int n_prompt, n_gen;
	struct resp r;
	size_t plen;
	cJSON *j;

	start_server(NULL, 0);
	/* Chat: the same rendered prompt through the strata command. */
	render_plain(&m, 1, &prompt, &plen);
	cli_generate(prompt, 40, cli, sizeof(cli), &n_prompt, &n_gen);
	http("POST", "/v1/chat/completions", NULL, "{\"model\":\"x\",\"messages\":[{\"role\":"
	     "\"user\",\"content\":\"Tell me a story about a cat.\"}],\"max_tokens\":40,"
	     "\"temperature\":0}", &r);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	ck_assert_str_eq(str_at(j, AT(j, "object"), "object"), "chat.completion");
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "message", "content"), "content"), cli);
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "message", "role"), "role"), "assistant");
	ck_assert_int_eq(int_at(j, AT(j, "usage", "prompt_tokens"), "usage"), n_prompt);
	ck_assert_int_eq(int_at(j, AT(j, "usage", "completion_tokens"), "usage"), n_gen);
	ck_assert_int_eq(n_gen, 40);
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "finish_reason"), "finish"), "length");
	cJSON_Delete(j);
	resp_free(&r);
	free(prompt);

	/* Completion: the raw prompt. */
	cli_generate("Once upon a time", 25, cli, sizeof(cli), &n_prompt, &n_gen);
	snprintf(body, sizeof(body), "{\"prompt\":\"Once upon a time\",\"max_tokens\":25,"
		 "\"temperature\":0,\"seed\":5}");
	http("POST", "/v1/completions", NULL, body, &r);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	ck_assert_str_eq(str_at(j, AT(j, "object"), "object"), "text_completion");
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "text"), "text"), cli);
	ck_assert_int_eq(int_at(j, AT(j, "usage", "prompt_tokens"), "usage"), n_prompt);
	ck_assert_int_eq(int_at(j, AT(j, "usage", "total_tokens"), "usage"), n_prompt + n_gen);
	cJSON_Delete(j);
	resp_free(&r);

	/* /v1/models names the model; /metrics counted both. */
	http("GET", "/v1/models", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	ck_assert_str_eq(str_at(j, AT(j, "data", "0", "id"), "id"), "stories260K");
	cJSON_Delete(j);
	resp_free(&r);
	http("GET", "/metrics", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(strstr(r.body.p, "strata_requests_total{status=\"200\"} 3\n") &&
		      strstr(r.body.p, "strata_generated_tokens_total 65\n") &&
		      strstr(r.body.p, "strata_first_token_seconds_count 2\n") &&
		      /* The completion resumed the chat prompt's first token (BOS). */
		      strstr(r.body.p, "strata_checkpoint_hits_total 1\n") &&
		      strstr(r.body.p, "strata_prompt_tokens_reused_total 1\n") &&
		      strstr(r.body.p, "# TYPE strata_first_token_seconds histogram\n") &&
		      strstr(r.body.p, "strata_decode_tokens_per_second "), "metrics:\n%s",
		      r.body.p);
	resp_free(&r);
	stop_server();
}
END_TEST

static double metric(const char *name); /* below, with the queue tests */

/*
 * A follow-up turn resumes from the first one's checkpoint: the answer is
 * what the strata command gives for the whole rendered conversation, and
 * /metrics counts the hit and the tokens not read again.  The server decodes
 * in lookup-drafted windows, the command one token at a time: the same
 * answer, and /metrics counts the drafts.
 */
START_TEST(checkpoint_turns)
{
	struct strata_chat_msg m[3] = {
		{ "user", "Tell me a story about a dog.", 28 },
		{ "assistant", NULL, 0 },
		{ "user", "What did the dog do next?", 25 },
	};
	char *prompt, cli[8192], *body, answer1[4096];
	int n1, n2, n_prompt, n_gen;
	long long reused;
	struct resp r;
	size_t plen;
	cJSON *j, *req, *msgs;
	/* decoded in lookup-drafted windows: still the one-token CLI's answer */
	const char *const spec[] = { "--spec-drafter", "lookup", "--spec-window", "4",
				     "--no-spec-adapt" };
	double drafted, kept;

	start_server(spec, 5);
	http("POST", "/v1/chat/completions", NULL, "{\"messages\":[{\"role\":\"user\",\"content\":"
	     "\"Tell me a story about a dog.\"}],\"max_tokens\":30,\"temperature\":0}", &r);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	snprintf(answer1, sizeof(answer1), "%s",
		 str_at(j, AT(j, "choices", "0", "message", "content"), "content"));
	n1 = int_at(j, AT(j, "usage", "prompt_tokens"), "usage");
	cJSON_Delete(j);
	resp_free(&r);

	m[1].content = answer1;
	m[1].len = strlen(answer1);
	req = cJSON_CreateObject();
	msgs = cJSON_AddArrayToObject(req, "messages");
	for (int i = 0; i < 3; i++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "role", m[i].role);
		cJSON_AddStringToObject(o, "content", m[i].content);
		cJSON_AddItemToArray(msgs, o);
	}
	cJSON_AddNumberToObject(req, "max_tokens", 30);
	cJSON_AddNumberToObject(req, "temperature", 0);
	body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	http("POST", "/v1/chat/completions", NULL, body, &r);
	free(body);
	ck_assert_int_eq(r.status, 200);
	j = json_of(&r);
	n2 = int_at(j, AT(j, "usage", "prompt_tokens"), "usage");
	ck_assert_int_gt(n2, n1);
	render_plain(m, 3, &prompt, &plen);
	cli_generate(prompt, 30, cli, sizeof(cli), &n_prompt, &n_gen);
	ck_assert_int_eq(n_prompt, n2);
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "message", "content"), "content"), cli);
	cJSON_Delete(j);
	resp_free(&r);
	free(prompt);

	ck_assert_int_eq((long long)metric("strata_checkpoint_hits_total"), 1);
	reused = (long long)metric("strata_prompt_tokens_reused_total");
	/* At least turn 1's prompt (its last token may merge with the answer's text). */
	ck_assert_msg(reused >= n1 - 1 && reused < n2, "reused %lld of %d (turn 1: %d)", reused,
		      n2, n1);
	ck_assert_int_eq((long long)metric("strata_prompt_tokens_total"), n1 + n2 - reused);
	drafted = metric("strata_spec_drafted_tokens_total");
	kept = metric("strata_spec_accepted_tokens_total");
	ck_assert_msg(drafted > 0 && kept <= drafted &&
		      metric("strata_spec_windows_total") <= drafted,
		      "spec metrics: %g drafted, %g kept", drafted, kept);
	printf("checkpoint_turns: turn 2 of %d tokens resumed %lld; %g of %g drafts kept\n", n2,
	       reused, kept, drafted);
	stop_server();
}
END_TEST

/* A request whole and streamed: the stream's deltas add up to the whole text. */
static void compare_stream(const char *path, const char *fields, int chat)
{
	char body[1024];
	struct strata_buf text = { 0 };
	struct resp whole, st;
	cJSON *w, *last;
	const cJSON *wt;

	snprintf(body, sizeof(body), "{%s}", fields);
	http("POST", path, NULL, body, &whole);
	ck_assert_int_eq(whole.status, 200);
	snprintf(body, sizeof(body), "{%s,\"stream\":true}", fields);
	http("POST", path, NULL, body, &st);
	ck_assert_int_eq(st.status, 200);
	w = json_of(&whole);
	last = sse_text(&st, chat, &text);
	wt = chat ? AT(w, "choices", "0", "message", "content") : AT(w, "choices", "0", "text");
	ck_assert_str_eq(text.p, str_at(w, wt, "text"));
	ck_assert_str_eq(str_at(last, AT(last, "choices", "0", "finish_reason"), "finish"),
			 str_at(w, AT(w, "choices", "0", "finish_reason"), "finish"));
	ck_assert_int_eq(int_at(last, AT(last, "usage", "completion_tokens"), "usage"),
			 int_at(w, AT(w, "usage", "completion_tokens"), "usage"));
	ck_assert_int_eq(int_at(last, AT(last, "usage", "prompt_tokens"), "usage"),
			 int_at(w, AT(w, "usage", "prompt_tokens"), "usage"));
	cJSON_Delete(w);
	cJSON_Delete(last);
	strata_buf_free(&text);
	resp_free(&whole);
	resp_free(&st);
}

START_TEST(stream_matches_whole)
{
	start_server(NULL, 0);
	compare_stream("/v1/chat/completions", "\"messages\":[{\"role\":\"system\",\"content\":"
		       "\"You tell stories.\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
		       "\"text\":\"A dog.\"}]}],\"max_tokens\":60,\"temperature\":0", 1);
	compare_stream("/v1/completions", "\"prompt\":\"Lily and Ben\",\"max_tokens\":60,"
		       "\"temperature\":0", 0);
	/* Sampled with a seed: the same seed gives the same text both ways. */
	compare_stream("/v1/completions", "\"prompt\":\"Lily and Ben\",\"max_tokens\":60,"
		       "\"temperature\":0.9,\"top_k\":20,\"top_p\":0.9,\"min_p\":0.01,\"seed\":7", 0);
	stop_server();
}
END_TEST

START_TEST(stop_strings)
{
	struct resp r;
	cJSON *j;
	char full[4096], stop[16], body[512], *cut;

	start_server(NULL, 0);
	http("POST", "/v1/completions", NULL, "{\"prompt\":\"Once upon a time\",\"max_tokens\":60,"
	     "\"temperature\":0}", &r);
	j = json_of(&r);
	snprintf(full, sizeof(full), "%s", str_at(j, AT(j, "choices", "0", "text"), "text"));
	cJSON_Delete(j);
	resp_free(&r);
	ck_assert_uint_gt(strlen(full), 30);
	/* A stop string from the middle of the greedy text: everything before it, nothing after. */
	snprintf(stop, sizeof(stop), "%.5s", full + 20);
	cut = strstr(full, stop);
	*cut = 0;
	snprintf(body, sizeof(body), "\"prompt\":\"Once upon a time\",\"max_tokens\":60,"
		 "\"temperature\":0,\"stop\":[\"never there\",\"%s\"]", stop);
	compare_stream("/v1/completions", body, 0);
	snprintf(body, sizeof(body), "{\"prompt\":\"Once upon a time\",\"max_tokens\":60,"
		 "\"temperature\":0,\"stop\":\"%s\"}", stop);
	http("POST", "/v1/completions", NULL, body, &r);
	j = json_of(&r);
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "text"), "text"), full);
	ck_assert_str_eq(str_at(j, AT(j, "choices", "0", "finish_reason"), "finish"), "stop");
	cJSON_Delete(j);
	resp_free(&r);
	stop_server();
}
END_TEST

/* ---- errors ----------------------------------------------------------------------------- */

static const char *const CHAT = "/v1/chat/completions";
static const char *const CMPL = "/v1/completions";

START_TEST(bad_requests)
{
	struct resp r;

	start_server(NULL, 0);
	post_expect(CHAT, "{\"messages\": [", 400, NULL);
	post_expect(CHAT, "{\"messages\":[]} trailing", 400, NULL);
	post_expect(CHAT, "[1, 2]", 400, NULL);
	post_expect(CHAT, "{\"max_tokens\":5}", 400, "messages");
	post_expect(CHAT, "{\"messages\":\"hi\"}", 400, "messages");
	post_expect(CHAT, "{\"messages\":[{\"role\":5,\"content\":\"x\"}]}", 400, "messages[0].role");
	post_expect(CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"robot\","
		    "\"content\":\"x\"}]}", 400, "messages[1].role");
	post_expect(CHAT, "{\"messages\":[{\"role\":\"user\"}]}", 400, "messages[0].content");
	post_expect(CMPL, "{}", 400, "prompt");
	post_expect(CMPL, "{\"prompt\":42}", 400, "prompt");
	post_expect(CMPL, "{\"prompt\":\"x\",\"temperature\":\"hot\"}", 400, "temperature");
	post_expect(CMPL, "{\"prompt\":\"x\",\"top_p\":0}", 400, "top_p");
	post_expect(CMPL, "{\"prompt\":\"x\",\"top_k\":1.5}", 400, "top_k");
	post_expect(CMPL, "{\"prompt\":\"x\",\"max_tokens\":0}", 400, "max_tokens");
	post_expect(CMPL, "{\"prompt\":\"x\",\"max_tokens\":\"9\"}", 400, "max_tokens");
	post_expect(CMPL, "{\"prompt\":\"x\",\"stream\":1}", 400, "stream");
	post_expect(CMPL, "{\"prompt\":\"x\",\"stop\":7}", 400, "stop");
	post_expect(CMPL, "{\"prompt\":\"x\",\"stop\":[\"a\",\"\"]}", 400, "stop[1]");
	post_expect(CMPL, "{\"prompt\":\"x\",\"seed\":-5}", 400, "seed");
	/* The prompt plus max_tokens must fit the 2048-token context. */
	post_expect(CMPL, "{\"prompt\":\"Once upon a time\",\"max_tokens\":2044}", 400, "max_tokens");
	post_expect(CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":"
		    "100000}", 400, "max_tokens");
	/* Routes and methods. */
	http("GET", "/v1/nothing", NULL, NULL, &r);
	assert_error(&r, 404, NULL, "unknown route");
	resp_free(&r);
	http("GET", CHAT, NULL, NULL, &r);
	assert_error(&r, 405, NULL, "GET on a POST route");
	ck_assert_ptr_nonnull(strcasestr(r.head, "\r\nAllow: POST"));
	resp_free(&r);
	http("POST", "/health", NULL, "{}", &r);
	assert_error(&r, 405, NULL, "POST on a GET route");
	resp_free(&r);
	stop_server();
}
END_TEST

START_TEST(body_too_large)
{
	const char *head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close"
			   "\r\nContent-Type: application/json\r\nContent-Length: 52428800\r\n\r\n";
	struct strata_buf raw = { 0 }, chunk = { 0 };
	struct resp r;
	char line[32];
	int fd;

	start_server(NULL, 0);
	/* 50 MB declared: refused from the headers, before any of the body is read or sent. */
	fd = connect_port(g_ts.port);
	ck_assert_int_eq(send_all(fd, head, strlen(head)), 0);
	ck_assert_int_eq(send_all(fd, "{\"prompt\":\"", 11), 0);
	read_to_eof(fd, &raw);
	close(fd);
	ck_assert_int_eq(parse_resp(&raw, &r), 0);
	assert_error(&r, 413, NULL, "50 MB Content-Length");
	resp_free(&r);
	strata_buf_free(&raw);
	/* No length given (chunked): 2 MiB is read and dropped past the 1 MiB limit. */
	fd = connect_port(g_ts.port);
	head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
	       "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
	ck_assert_int_eq(send_all(fd, head, strlen(head)), 0);
	for (int i = 0; i < 65536; i++)
		strata_buf_add(&chunk, "x", 1);
	snprintf(line, sizeof(line), "%zx\r\n", chunk.len);
	for (int i = 0; i < 32; i++) {
		ck_assert_int_eq(send_all(fd, line, strlen(line)), 0);
		ck_assert_int_eq(send_all(fd, chunk.p, chunk.len), 0);
		ck_assert_int_eq(send_all(fd, "\r\n", 2), 0);
	}
	ck_assert_int_eq(send_all(fd, "0\r\n\r\n", 5), 0);
	read_to_eof(fd, &raw);
	close(fd);
	ck_assert_int_eq(parse_resp(&raw, &r), 0);
	assert_error(&r, 413, NULL, "2 MiB chunked");
	resp_free(&r);
	strata_buf_free(&raw);
	strata_buf_free(&chunk);
	stop_server();
}
END_TEST

START_TEST(api_key)
{
	const char *right = "Authorization: Bearer s3cret-key\r\n";
	struct resp r;

	/* STRATA_API_KEY counts when STRATA_SERVE_API_KEY is not set. */
	unsetenv("STRATA_SERVE_API_KEY");
	setenv("STRATA_API_KEY", "s3cret-key", 1);
	start_server(NULL, 0);
	/* Liveness and the model list answer without the key, as llama-server's do;
	 * the same paths with another method, and every other route, do not. */
	http("GET", "/health", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	http("GET", "/v1/models", "Authorization: Bearer wrong\r\n", NULL, &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	http("POST", "/health", NULL, "{}", &r);
	ck_assert_int_eq(r.status, 401);
	resp_free(&r);
	http("GET", "/metrics", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 401);
	resp_free(&r);
	http("POST", CMPL, "Authorization: Bearer wrong\r\n", "{\"prompt\":\"x\"}", &r);
	ck_assert_int_eq(r.status, 401);
	ck_assert_ptr_nonnull(strcasestr(r.head, "WWW-Authenticate: Bearer"));
	resp_free(&r);
	http("GET", "/v1/nothing", "Authorization: Bearer s3cret-keyX\r\n", NULL, &r);
	ck_assert_int_eq(r.status, 401);
	resp_free(&r);
	http("GET", "/metrics", right, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	http("POST", CMPL, right, "{\"prompt\":\"Once\",\"max_tokens\":3}", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	/* Each refusal is an OpenAI error body. */
	http("POST", CHAT, "Authorization: Basic czNjcmV0\r\n", "{}", &r);
	ck_assert_int_eq(r.status, 401);
	{
		cJSON *j = json_of(&r);

		ck_assert_int_eq(int_at(j, AT(j, "error", "code"), "code"), 401);
		ck_assert_str_eq(str_at(j, AT(j, "error", "type"), "type"), "authentication_error");
		cJSON_Delete(j);
	}
	resp_free(&r);
	stop_server();
	/* The section's own variable wins over the alias. */
	setenv("STRATA_SERVE_API_KEY", "other", 1);
	start_server(NULL, 0);
	http("GET", "/metrics", right, NULL, &r);
	ck_assert_int_eq(r.status, 401);
	resp_free(&r);
	http("GET", "/metrics", "Authorization: Bearer other\r\n", NULL, &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	stop_server();
	unsetenv("STRATA_SERVE_API_KEY");
	unsetenv("STRATA_API_KEY");
}
END_TEST

/* ---- disconnects and the queue --------------------------------------------------------- */

/*
 * A device's expert cache (gpu-sim, 6 slots on a MoE model): /metrics carries its
 * counters, strata_engine_gpu_cache_stats the same totals.
 */
START_TEST(gpu_cache_metrics)
{
	static const char body[] = "{\"prompt\":\"Once upon a time, there was\",\"max_tokens\":8,"
				   "\"temperature\":0}";
	const char *extra[] = { "--plugin-dir", STRATA_PLUGIN_DIR "/test", "--gpu", "gpu-sim",
				"--expert-slots", "6" };
	struct strata_gpu_cache_stats gs;
	struct test_server ts;
	struct resp r;

	/* gpu-sim's directory first, then the shipped plugins' (the prompt paths) */
	ck_assert_int_eq(setenv("STRATA_PLUGIN_PATH", STRATA_PLUGIN_DIR, 1), 0);
	test_server_start(&ts, tu_shared_or_skip("models/syn-qwen3moe-f32.gguf"), extra, 6);
	unsetenv("STRATA_PLUGIN_PATH");
	http_call(ts.port, "POST", "/v1/completions", "Content-Type: application/json\r\n", body,
		  &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	http_call(ts.port, "GET", "/metrics", NULL, NULL, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(strstr(r.body.p, "\nstrata_gpu_expert_cache_slots 6\n") &&
		      strstr(r.body.p, "\n# TYPE strata_gpu_expert_hits_total counter\n") &&
		      strstr(r.body.p, "\nstrata_gpu_expert_fills_total 6\n") &&
		      !strstr(r.body.p, "\nstrata_gpu_expert_misses_total 0\n"),
		      "metrics:\n%s", r.body.p);
	resp_free(&r);
	ck_assert_int_eq(strata_engine_gpu_cache_stats(ts.eng, &gs), 0);
	ck_assert_uint_eq(gs.slots, 6);
	ck_assert_uint_eq(gs.fills, 6);
	ck_assert_uint_gt(gs.bytes_in, 0);
	test_server_stop(&ts);
}
END_TEST

/* A value from the /metrics text. */
static double metric(const char *name)
{
	struct resp r;
	char key[128];
	const char *p;
	double v;

	http("GET", "/metrics", NULL, NULL, &r);
	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(r.body.p, key);
	ck_assert_msg(p, "no %s in\n%s", name, r.body.p);
	v = strtod(p + strlen(key), NULL);
	resp_free(&r);
	return v;
}

/*
 * A streamed greedy completion that would run to the end of a 16384-token
 * context (stories260K never ends this prompt on its own within it), open
 * until the caller closes it; returns once its first token arrived.
 */
static int open_long_stream(void)
{
	struct strata_buf raw = { 0 };
	double t0 = now_ms();
	int fd = connect_port(g_ts.port);

	send_req(fd, "POST", CMPL, NULL, "{\"prompt\":\"Once upon a time\",\"temperature\":0,"
		 "\"stream\":true}");
	while (!raw.p || !strstr(raw.p, "\"text\":")) {
		ck_assert_msg(!read_some(fd, &raw, 1000), "the stream ended: %s", raw.p);
		ck_assert(now_ms() - t0 < DEADLINE_MS);
	}
	ck_assert_ptr_nonnull(strstr(raw.p, "HTTP/1.1 200"));
	strata_buf_free(&raw);
	return fd;
}

/* Wait until the engine is idle (the cancelled generation has stopped). */
static void wait_idle(void)
{
	double t0 = now_ms();

	while (metric("strata_busy") != 0 || metric("strata_queue_waiting") != 0) {
		ck_assert_msg(now_ms() - t0 < DEADLINE_MS, "the engine stays busy");
		usleep(20000);
	}
}

START_TEST(disconnect_mid_stream)
{
	const char *extra[] = { "--ctx-size", "16384" };
	double t0 = now_ms();
	struct resp r;
	int fd;

	start_server(extra, 2);
	fd = open_long_stream();
	close(fd);
	wait_idle();
	ck_assert_int_eq((int)metric("strata_requests_cancelled_total"), 1);
	ck_assert_msg(metric("strata_generated_tokens_total") < 16000,
		      "the generation ran on after the client left");
	assert_healthy();
	http("POST", CMPL, NULL, "{\"prompt\":\"Once\",\"max_tokens\":5}", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	/* A client that leaves a non-streamed request also stops it. */
	fd = connect_port(g_ts.port);
	send_req(fd, "POST", CMPL, NULL, "{\"prompt\":\"Once upon a time\",\"temperature\":0}");
	while (metric("strata_busy") == 0) {
		ck_assert_msg(now_ms() - t0 < DEADLINE_MS, "the request never started");
		usleep(5000);
	}
	close(fd);
	wait_idle();
	ck_assert_int_eq((int)metric("strata_requests_cancelled_total"), 2);
	assert_healthy();
	stop_server();
}
END_TEST

START_TEST(fifty_clients)
{
	const char *extra[] = { "--ctx-size", "16384", "--queue", "4" };
	enum { N = 50, QUEUE = 4 };
	struct strata_buf raw[N];
	int fd[N], over[N], n200 = 0, n503 = 0, n_over = 0, hold;
	double t0;

	start_server(extra, 4);
	hold = open_long_stream(); /* the engine is busy until this one goes */
	memset(raw, 0, sizeof(raw));
	memset(over, 0, sizeof(over));
	for (int i = 0; i < N; i++) {
		fd[i] = connect_port(g_ts.port);
		send_req(fd[i], "POST", i % 2 ? CMPL : CHAT, NULL, i % 2 ?
			 "{\"prompt\":\"Once\",\"max_tokens\":4}" :
			 "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":4}");
	}
	/* All but QUEUE are refused while the engine is held; then release it. */
	t0 = now_ms();
	while (n_over < N) {
		for (int i = 0; i < N; i++)
			if (!over[i] && read_some(fd[i], &raw[i], 0))
				over[i] = 1, n_over++;
		if (hold >= 0 && n_over == N - QUEUE) {
			close(hold);
			hold = -1;
		}
		ck_assert_msg(now_ms() - t0 < DEADLINE_MS, "%d of %d clients still wait", N - n_over, N);
		usleep(2000);
	}
	ck_assert_int_eq(hold, -1);
	for (int i = 0; i < N; i++) {
		struct resp r;

		close(fd[i]);
		ck_assert_int_eq(parse_resp(&raw[i], &r), 0);
		if (r.status == 503) {
			cJSON *j = json_of(&r);

			ck_assert_int_eq(int_at(j, AT(j, "error", "code"), "code"), 503);
			cJSON_Delete(j);
			n503++;
		} else {
			ck_assert_int_eq(r.status, 200);
			n200++;
		}
		resp_free(&r);
		strata_buf_free(&raw[i]);
	}
	ck_assert_int_eq(n503, N - QUEUE);
	ck_assert_int_eq(n200, QUEUE);
	assert_healthy();
	stop_server();
}
END_TEST

/* ---- the command ------------------------------------------------------------------------ */

START_TEST(cli_serve)
{
	int pipefd[2], status, port = 0;
	struct strata_buf err = { 0 };
	double t0 = now_ms();
	struct resp r;
	pid_t pid;

	ck_assert_int_eq(pipe(pipefd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		execl(STRATA_BIN, STRATA_BIN, "-c", "strata.ini", "-m", g_model, "--serve", "--port",
		      "0", "-t", "1", (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	while (!port) {
		const char *p;

		ck_assert_msg(!read_some(pipefd[0], &err, 1000), "strata exited: %s", err.p);
		ck_assert(now_ms() - t0 < DEADLINE_MS);
		if (err.p && (p = strstr(err.p, "http://127.0.0.1:")) && strchr(p, '\n'))
			port = atoi(p + 17);
	}
	g_ts.port = port;
	assert_healthy();
	http("POST", CMPL, NULL, "{\"prompt\":\"Once\",\"max_tokens\":3}", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit status %d", status);
	close(pipefd[0]);
	strata_buf_free(&err);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("serve");
	TCase *unit = tcase_create("unit"), *tc = tcase_create("server");
	int rc;

	g_model = test_server_model(); /* a copy; NULL after a SKIP line */
	tcase_add_test(unit, textout_filter);
	suite_add_tcase(su, unit);
	if (g_model) {
		tcase_set_timeout(tc, 600);
		tcase_add_test(tc, engine_cancel);
		tcase_add_test(tc, greedy_matches_cli);
		tcase_add_test(tc, checkpoint_turns);
		tcase_add_test(tc, stream_matches_whole);
		tcase_add_test(tc, stop_strings);
		tcase_add_test(tc, bad_requests);
		tcase_add_test(tc, body_too_large);
		tcase_add_test(tc, api_key);
		tcase_add_test(tc, gpu_cache_metrics);
		tcase_add_test(tc, disconnect_mid_stream);
		tcase_add_test(tc, fifty_clients);
		tcase_add_test(tc, cli_serve);
		suite_add_tcase(su, tc);
	}
	rc = tu_srunner_run(srunner_create(su));
	if (rc)
		return rc;
	return g_model ? 0 : STRATA_TEST_SKIP;
}
