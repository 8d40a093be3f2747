#define _GNU_SOURCE /* memmem */
/*
 * fuzz_json.c - the server's request parser (strata_api_parse), and what it
 * feeds: the stop-string filter and the response builders.
 *
 * Input: byte 0 picks the endpoint (bit 0: chat; bits 5 and 6, with chat:
 * the body is an Anthropic Messages or a Responses request, converted
 * first) and the built-in chat template ((byte >> 1) % 4: chatml, glm4,
 * llama3, plain); the rest is the request body.  A body is either accepted, with a NUL-terminated prompt of
 * prompt_len bytes, or refused with status 400 (a built-in template never
 * fails on checked messages), a message and an error JSON that parses.  An accepted
 * prompt is then "generated" in pieces through strata_textout with the
 * request's stop strings: the released text must be valid UTF-8, equal to
 * the prompt up to the stop string that completes first (stop_point) when
 * that part is valid UTF-8, and come back unchanged through the completion
 * and chunk JSON.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "serve/anthropic.h"
#include "serve/api.h"
#include "serve/chat.h"
#include "serve/responses.h"
#include "serve/textout.h"

static struct strata_chat *g_chats[4];

int fuzz_target_init(void)
{
	static const char *const names[] = { "chatml", "glm4", "llama3", "plain" };

	fuzz_quiet();
	for (int i = 0; i < 4; i++) {
		struct strata_chat_opts o = { .setting = names[i], .bos = "<s>", .eos = "</s>" };

		if (strata_chat_create(&o, &g_chats[i]))
			return 1;
	}
	return 0;
}

/* The string at root.choices[0].<a>[.<b>] of a response. */
static const char *choice_text(const cJSON *root, const char *a, const char *b)
{
	const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "choices"), 0);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, a);

	if (b)
		v = cJSON_GetObjectItemCaseSensitive(v, b);
	return cJSON_GetStringValue(v);
}

/* The released text survives both response builders unchanged. */
static void check_responses(int chat, const char *text, size_t len)
{
	struct strata_api_head h = { .chat = chat, .id = "cmpl-fuzz", .created = 1, .model = "m" };
	struct strata_api_msg m = { .content = text, .content_len = len };
	char *whole = strata_api_completion_json(&h, &m, "stop", 1, 2);
	char *chunk = strata_api_chunk_json(&h, &m, 0, NULL, 0, 0);
	cJSON *w = cJSON_Parse(whole), *c = cJSON_Parse(chunk);
	const char *wt = choice_text(w, chat ? "message" : "text", chat ? "content" : NULL);
	const char *ct = choice_text(c, chat ? "delta" : "text", chat ? "content" : NULL);

	FUZZ_CHECK(whole && chunk && w && c);
	FUZZ_CHECK(wt && strlen(wt) == len && memcmp(wt, text, len) == 0);
	FUZZ_CHECK(ct && strlen(ct) == len && memcmp(ct, text, len) == 0);
	cJSON_Delete(w);
	cJSON_Delete(c);
	free(whole);
	free(chunk);
}

/* The piece length at pos: 1..5 bytes, from the text itself. */
static size_t piece_len(const char *p, size_t n, size_t pos)
{
	size_t k = 1 + (unsigned char)p[pos] % 5;

	return k < n - pos ? k : n - pos;
}

/*
 * Where the released text must end: generation stops with the piece in which
 * the first stop string is complete (the one that ends first, not the one
 * that starts first: a later token never comes), and the text ends before
 * the earliest stop string found in everything generated up to that piece.
 * n when no stop string occurs.
 */
static size_t stop_point(const struct strata_api_req *r)
{
	const char *p = r->prompt;
	size_t n = r->prompt_len, end = SIZE_MAX, upto = 0, at = n;

	for (size_t i = 0; i < r->n_stop; i++) {
		size_t sl = strlen(r->stop[i]);
		const char *m = memmem(p, n, r->stop[i], sl);

		if (m && (size_t)(m - p) + sl < end)
			end = (size_t)(m - p) + sl;
	}
	if (end == SIZE_MAX)
		return n;
	while (upto < end)
		upto += piece_len(p, n, upto);
	for (size_t i = 0; i < r->n_stop; i++) {
		const char *m = memmem(p, upto, r->stop[i], strlen(r->stop[i]));

		if (m && (size_t)(m - p) < at)
			at = (size_t)(m - p);
	}
	return at;
}

/* Feed the prompt as pieces of 1..5 bytes, as a generation would arrive. */
static void check_stops(const struct strata_api_req *r)
{
	struct strata_textout t = { .stop = r->stop, .n_stop = r->n_stop };
	struct strata_buf out = { 0 };
	const char *p = r->prompt;
	size_t n = r->prompt_len, pos = 0, want = stop_point(r);
	int stopped = 0;

	while (pos < n && !stopped) {
		size_t k = piece_len(p, n, pos);

		stopped = strata_textout_feed(&t, p + pos, k, &out);
		pos += k;
	}
	if (!stopped)
		strata_textout_flush(&t, &out);
	strata_textout_free(&t);
	FUZZ_CHECK(!out.oom);
	FUZZ_CHECK(fuzz_utf8_valid((const unsigned char *)out.p, out.len));
	FUZZ_CHECK(stopped == (want < n)); /* a stop string occurs: it starts before n */
	/* Valid text before the stop string comes out as it went in. */
	if (fuzz_utf8_valid((const unsigned char *)p, want))
		FUZZ_CHECK(out.len == want && (want == 0 || memcmp(out.p, p, want) == 0));
	check_responses(r->chat, out.p ? out.p : "", out.len);
	strata_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct strata_gen_params defaults = {
		.n_predict = -1, .temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
		.repeat_penalty = 1, .repeat_last_n = 64, .seed = 42,
	};
	struct strata_api_ctx ctx;
	struct strata_api_req r;
	struct strata_api_err err;
	int chat, rc;

	if (size < 1)
		return 0;
	chat = data[0] & 1;
	ctx = (struct strata_api_ctx){ g_chats[(data[0] >> 1) % 4], &defaults, 512,
				       STRATA_TOOLS_TAGGED, 0 };
	if (chat && (data[0] & 0x60)) {
		cJSON *root, *conv = NULL;

		memset(&r, 0, sizeof(r));
		rc = strata_api_body((const char *)data + 1, size - 1, &root, &err);
		if (!rc) {
			rc = data[0] & 0x20 ? strata_anthropic_request(root, data[0] & 0x40, &conv, &err)
					    : strata_responses_request(root, &conv, &err);
			cJSON_Delete(root);
		}
		if (!rc) {
			rc = strata_api_parse_obj(conv, 1, &ctx, &r, &err);
			cJSON_Delete(conv);
		}
	} else {
		rc = strata_api_parse((const char *)data + 1, size - 1, chat, &ctx, &r, &err);
	}
	if (rc == -ENOMEM)
		return 0;
	if (rc) {
		char *e = strata_api_error_json(err.status, err.message, err.param);
		cJSON *j = cJSON_Parse(e);
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(j, "error"), "message");

		FUZZ_CHECK(rc == -EINVAL && err.status == 400 && err.message[0]);
		FUZZ_CHECK(memchr(err.message, 0, sizeof(err.message)) &&
			   memchr(err.param, 0, sizeof(err.param)));
		FUZZ_CHECK(e && j && cJSON_IsString(m) && strcmp(m->valuestring, err.message) == 0);
		cJSON_Delete(j);
		free(e);
		return 0;
	}
	FUZZ_CHECK((r.prompt && strlen(r.prompt) == r.prompt_len) ||
		   (!chat && r.prompt_ids && r.n_prompt_ids > 0));
	if (!r.prompt) {
		for (uint32_t i = 0; i < r.n_prompt_ids; i++)
			FUZZ_CHECK(r.prompt_ids[i] >= 0 && r.prompt_ids[i] < 512);
		strata_api_req_free(&r);
		return 0;
	}
	FUZZ_CHECK(r.chat == chat && (r.max_tokens == -1 || r.max_tokens >= 1));
	FUZZ_CHECK(r.gp.temp >= 0 && r.gp.temp <= 2 && r.gp.top_p > 0 && r.gp.top_p <= 1);
	for (size_t i = 0; i < r.n_stop; i++)
		FUZZ_CHECK(r.stop[i] && r.stop[i][0]);
	check_stops(&r);
	strata_api_req_free(&r);
	return 0;
}
