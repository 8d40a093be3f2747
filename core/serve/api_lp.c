/*
 * api_lp.c - log-probabilities in the two shapes of the OpenAI API: the
 * chat's logprobs.content [{token, logprob, bytes, top_logprobs}] and the
 * legacy completions' {tokens, token_logprobs, top_logprobs, text_offset}.
 * A token is the text it adds to the reply (a control token: its name);
 * bytes are exact, token is that text with invalid UTF-8 as U+FFFD.
 */
#include "serve/api.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve/api_int.h"
#include "serve/textout.h"

/* The text of token id into b (reset first); its raw bytes in raw (n of them). */
static int token_text(const struct strata_engine *e, int32_t id, struct strata_buf *b,
		      char *raw, size_t cap, size_t *n)
{
	int len = strata_engine_token_piece(e, id, raw, cap);

	if (len == 0 && strata_engine_token_text(e, id)) { /* a control token: its name */
		len = (int)strlen(strata_engine_token_text(e, id));
		memcpy(raw, strata_engine_token_text(e, id), (size_t)len < cap ? (size_t)len : cap);
	}
	if (len < 0)
		len = 0;
	*n = (size_t)len < cap ? (size_t)len : cap;
	b->len = 0;
	strata_utf8_sanitize(b, raw, *n);
	strata_buf_add(b, "", 0);
	return b->oom ? -1 : 0;
}

/* A logprob as JSON: -inf (a masked token) has no JSON form, so -9999 as OpenAI writes. */
static double lp_value(float lp)
{
	return isfinite(lp) ? (double)lp : -9999.0;
}

static cJSON *entry(const struct strata_engine *e, int32_t id, float lp, struct strata_buf *b)
{
	cJSON *o = cJSON_CreateObject(), *bytes;
	char raw[256];
	size_t n;

	if (!o || token_text(e, id, b, raw, sizeof(raw), &n) ||
	    !cJSON_AddStringToObject(o, "token", b->p) ||
	    !cJSON_AddNumberToObject(o, "logprob", lp_value(lp)) ||
	    !(bytes = cJSON_AddArrayToObject(o, "bytes"))) {
		cJSON_Delete(o);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)raw[i]))) {
			cJSON_Delete(o);
			return NULL;
		}
	return o;
}

static int chat_logprobs(cJSON *choice, const struct strata_api_msg *m, struct strata_buf *b)
{
	cJSON *lp = cJSON_AddObjectToObject(choice, "logprobs"), *content;

	if (!lp || !(content = cJSON_AddArrayToObject(lp, "content")) ||
	    !cJSON_AddNullToObject(lp, "refusal"))
		return 0;
	for (size_t i = 0; i < m->n_lp; i++) {
		const struct strata_lp *t = &m->lp[i];
		cJSON *o = entry(m->e, t->id, t->logprob, b), *top;

		if (!o || !cJSON_AddItemToArray(content, o) ||
		    !(top = cJSON_AddArrayToObject(o, "top_logprobs")))
			return (cJSON_Delete(o), 0);
		for (int k = 0; k < t->n_top; k++) {
			cJSON *alt = entry(m->e, t->top_id[k], t->top_lp[k], b);

			if (!alt || !cJSON_AddItemToArray(top, alt))
				return (cJSON_Delete(alt), 0);
		}
	}
	return 1;
}

static int completion_logprobs(cJSON *choice, const struct strata_api_msg *m,
			       struct strata_buf *b)
{
	cJSON *lp = cJSON_AddObjectToObject(choice, "logprobs"), *tokens, *lps, *tops, *offs;
	size_t offset = m->text_offset;
	char raw[256];
	size_t n;

	if (!lp || !(tokens = cJSON_AddArrayToObject(lp, "tokens")) ||
	    !(lps = cJSON_AddArrayToObject(lp, "token_logprobs")) ||
	    !(tops = cJSON_AddArrayToObject(lp, "top_logprobs")) ||
	    !(offs = cJSON_AddArrayToObject(lp, "text_offset")))
		return 0;
	for (size_t i = 0; i < m->n_lp; i++) {
		const struct strata_lp *t = &m->lp[i];
		cJSON *top = cJSON_CreateObject();

		if (!top || !cJSON_AddItemToArray(tops, top) ||
		    token_text(m->e, t->id, b, raw, sizeof(raw), &n) ||
		    !cJSON_AddItemToArray(tokens, cJSON_CreateString(b->p)) ||
		    !cJSON_AddItemToArray(lps, cJSON_CreateNumber(lp_value(t->logprob))) ||
		    !cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset)))
			return 0;
		offset += t->nbytes;
		for (int k = 0; k < t->n_top; k++) {
			if (token_text(m->e, t->top_id[k], b, raw, sizeof(raw), &n) ||
			    (!cJSON_GetObjectItemCaseSensitive(top, b->p) &&
			     !cJSON_AddNumberToObject(top, b->p, lp_value(t->top_lp[k]))))
				return 0;
		}
	}
	return 1;
}

int api_add_logprobs(cJSON *choice, int chat, const struct strata_api_msg *m)
{
	struct strata_buf b = { 0 };
	int ok;

	if (!m->e)
		return cJSON_AddNullToObject(choice, "logprobs") != NULL;
	ok = chat ? chat_logprobs(choice, m, &b) : completion_logprobs(choice, m, &b);
	strata_buf_free(&b);
	return ok;
}
