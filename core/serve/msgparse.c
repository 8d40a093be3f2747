/*
 * msgparse.c - sorting a generation's text into content, reasoning and
 * tool calls as it comes (the states below), holding back only what may
 * still turn into a marker.
 */
#define _GNU_SOURCE /* memmem */
#include "serve/msgparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { S_CONTENT, S_THINK, S_BLOCK, S_TAIL, S_DONE };

#define THINK_OPEN "<think>"
#define THINK_CLOSE "</think>"
#define CALL_OPEN "<tool_call>"
#define CALL_CLOSE "</tool_call>"
#define MISTRAL_OPEN "[TOOL_CALLS]"
#define PYTHON_TAG "<|python_tag|>"

enum strata_toolfmt strata_toolfmt_of(const char *src)
{
	if (!src)
		return STRATA_TOOLS_TAGGED;
	if (strstr(src, MISTRAL_OPEN))
		return STRATA_TOOLS_MISTRAL;
	if (strstr(src, CALL_OPEN))
		return STRATA_TOOLS_TAGGED;
	if (strstr(src, "<|start_header_id|>") || strstr(src, PYTHON_TAG))
		return STRATA_TOOLS_LLAMA3;
	/* Anything else: the most common convention, which the built-in chatml writes. */
	return STRATA_TOOLS_TAGGED;
}

const char *strata_toolfmt_name(enum strata_toolfmt f)
{
	switch (f) {
	case STRATA_TOOLS_TAGGED: return "<tool_call> blocks";
	case STRATA_TOOLS_MISTRAL: return "[TOOL_CALLS]";
	case STRATA_TOOLS_LLAMA3: return "Llama 3 JSON";
	default: return "none";
	}
}

const char *const *strata_toolfmt_markers(enum strata_toolfmt f)
{
	static const char *const tagged[] = { CALL_OPEN, CALL_CLOSE, THINK_OPEN, THINK_CLOSE, NULL };
	static const char *const mistral[] = { MISTRAL_OPEN, "[ARGS]", THINK_OPEN, THINK_CLOSE,
					       NULL };
	static const char *const llama[] = { PYTHON_TAG, THINK_OPEN, THINK_CLOSE, NULL };

	return f == STRATA_TOOLS_MISTRAL ? mistral : f == STRATA_TOOLS_LLAMA3 ? llama : tagged;
}

/* The marker that opens a tool call in this format, or NULL. */
static const char *call_open(const struct strata_msgparse *mp)
{
	if (mp->max_calls && mp->n_calls >= mp->max_calls)
		return NULL;
	switch (mp->fmt) {
	case STRATA_TOOLS_TAGGED: return CALL_OPEN;
	case STRATA_TOOLS_MISTRAL: return MISTRAL_OPEN;
	case STRATA_TOOLS_LLAMA3: return PYTHON_TAG;
	default: return NULL;
	}
}

/* Longest k < len(m) with s ending in m's first k bytes. */
static size_t open_tail(const char *s, size_t n, const char *m)
{
	size_t ml = strlen(m);

	for (size_t k = ml - 1 < n ? ml - 1 : n; k > 0; k--)
		if (memcmp(s + n - k, m, k) == 0)
			return k;
	return 0;
}

static void to_content(struct strata_msgparse *mp, const char *s, size_t n)
{
	/* The white space a model writes after </think> is not the answer. */
	if (mp->skip_ws)
		while (n && strchr(" \t\r\n", *s) && *s)
			s++, n--;
	if (n) {
		mp->released = 1;
		mp->skip_ws = 0;
	}
	strata_buf_add(&mp->content, s, n);
}

static void consume(struct strata_msgparse *mp, size_t n)
{
	strata_buf_consume(&mp->pending, n);
}

/* A <tool_call> block is complete: its calls (1), or its text as content with a warning. */
static int close_block(struct strata_msgparse *mp, const char *open, const char *close)
{
	const char *text = mp->block.p ? mp->block.p : "";
	int ok = strata_mp_parse_calls(mp, mp->fmt, text, mp->block.len) > 0;

	if (!ok) {
		strata_buf_add(&mp->content, mp->gap.p, mp->gap.len);
		snprintf(mp->warning, sizeof(mp->warning), "a tool call did not parse and is left "
			 "in the content as the model wrote it: %.*s%.120s%s", open ? (int)strlen(open) : 0,
			 open ? open : "", text, mp->block.len > 120 ? "..." : "");
		mp->released = 1;
		if (open)
			strata_buf_puts(&mp->content, open);
		strata_buf_add(&mp->content, text, mp->block.len);
		if (close)
			strata_buf_puts(&mp->content, close);
	}
	strata_buf_free(&mp->block);
	strata_buf_free(&mp->gap);
	return ok;
}

/* Llama 3: a reply that begins with '{' is a call until the end shows otherwise. */
static int llama_json_start(struct strata_msgparse *mp)
{
	size_t i = 0;

	if (mp->fmt != STRATA_TOOLS_LLAMA3 || mp->released || !call_open(mp))
		return 0;
	while (i < mp->pending.len && strchr(" \t\r\n", mp->pending.p[i]) && mp->pending.p[i])
		i++;
	if (i == mp->pending.len)
		return -1; /* only white space so far: wait */
	if (mp->pending.p[i] != '{')
		return 0;
	strata_buf_add(&mp->block, mp->pending.p + i, mp->pending.len - i);
	strata_buf_free(&mp->pending);
	mp->state = S_TAIL;
	mp->tail_open = NULL;
	return 1;
}

/* One step of the content state; 0 when it needs more text. */
static int step_content(struct strata_msgparse *mp)
{
	const char *p = mp->pending.p, *open = call_open(mp), *t = NULL, *c = NULL;
	size_t n = mp->pending.len, hold = 0;
	int l = llama_json_start(mp);

	if (l)
		return l > 0;
	if (mp->think)
		t = memmem(p, n, THINK_OPEN, strlen(THINK_OPEN));
	if (open)
		c = memmem(p, n, open, strlen(open));
	if (t && (!c || t < c)) {
		to_content(mp, p, (size_t)(t - p));
		consume(mp, (size_t)(t - p) + strlen(THINK_OPEN));
		mp->state = S_THINK;
		return 1;
	}
	if (c) {
		size_t before = (size_t)(c - p), text = before;

		/* the white space before a call is kept aside: content only if the call fails */
		while (text && strchr(" \t\r\n", p[text - 1]))
			text--;
		to_content(mp, p, text);
		strata_buf_add(&mp->gap, p + text, before - text);
		consume(mp, before + strlen(open));
		mp->state = mp->fmt == STRATA_TOOLS_TAGGED ? S_BLOCK : S_TAIL;
		mp->tail_open = open;
		return 1;
	}
	if (mp->think)
		hold = open_tail(p, n, THINK_OPEN);
	if (open && open_tail(p, n, open) > hold)
		hold = open_tail(p, n, open);
	/* White space before a call is not content: hold it until text follows. */
	while (open && hold < n && strchr(" \t\r\n", p[n - hold - 1]))
		hold++;
	to_content(mp, p, n - hold);
	consume(mp, n - hold);
	return 0;
}

/* Text up to close goes to dst; past it the state becomes next.  0 when it needs more. */
static int step_until(struct strata_msgparse *mp, const char *close, struct strata_buf *dst,
		      int next)
{
	const char *p = mp->pending.p, *hit = memmem(p, mp->pending.len, close, strlen(close));
	size_t keep;

	if (hit) {
		strata_buf_add(dst, p, (size_t)(hit - p));
		consume(mp, (size_t)(hit - p) + strlen(close));
		if (next == S_CONTENT && dst == &mp->block)
			mp->skip_ws = close_block(mp, CALL_OPEN, CALL_CLOSE);
		if (dst == &mp->reasoning)
			mp->skip_ws = 1;
		mp->state = next;
		return 1;
	}
	keep = open_tail(p, mp->pending.len, close);
	strata_buf_add(dst, p, mp->pending.len - keep);
	consume(mp, mp->pending.len - keep);
	return 0;
}

static void run(struct strata_msgparse *mp)
{
	int more = 1;

	while (more && mp->pending.len) {
		switch (mp->state) {
		case S_CONTENT:
			more = step_content(mp);
			break;
		case S_THINK:
			more = step_until(mp, THINK_CLOSE, &mp->reasoning, S_CONTENT);
			break;
		case S_BLOCK:
			more = step_until(mp, CALL_CLOSE, &mp->block, S_CONTENT);
			if (strata_mp_calls_full(mp))
				mp->state = S_DONE;
			break;
		case S_TAIL:
			strata_buf_add(&mp->block, mp->pending.p, mp->pending.len);
			strata_buf_free(&mp->pending);
			more = 0;
			break;
		default: /* S_DONE: the calls asked for are complete; the rest is dropped */
			strata_buf_free(&mp->pending);
			more = 0;
		}
	}
}

void strata_mp_feed(struct strata_msgparse *mp, const char *text, size_t len)
{
	if (!mp->started) {
		mp->started = 1;
		if (mp->start_in_think)
			mp->state = S_THINK;
	}
	if (mp->fmt == STRATA_TOOLS_NONE && !mp->think) {
		/* Nothing to look for: every byte is content at once. */
		mp->released = 1;
		strata_buf_add(&mp->content, text, len);
		return;
	}
	strata_buf_add(&mp->pending, text, len);
	run(mp);
}

void strata_mp_finish(struct strata_msgparse *mp)
{
	const char *p = mp->pending.p ? mp->pending.p : "";

	if (!mp->started) {
		mp->started = 1;
		if (mp->start_in_think)
			mp->state = S_THINK;
	}
	switch (mp->state) {
	case S_CONTENT:
		if (llama_json_start(mp) > 0) {
			close_block(mp, NULL, NULL);
			break;
		}
		if (mp->n_calls) /* only white space can be held: after calls it is nothing */
			mp->skip_ws = 1;
		to_content(mp, p, mp->pending.len);
		break;
	case S_THINK: /* ended while thinking: what there is, is reasoning */
		strata_buf_add(&mp->reasoning, p, mp->pending.len);
		break;
	case S_BLOCK:
		strata_buf_add(&mp->block, p, mp->pending.len);
		close_block(mp, CALL_OPEN, NULL);
		break;
	case S_TAIL:
		strata_buf_add(&mp->block, p, mp->pending.len);
		close_block(mp, mp->tail_open, NULL);
		break;
	default:
		break;
	}
	strata_buf_free(&mp->pending);
	mp->state = S_DONE;
}

int strata_mp_in_think(const struct strata_msgparse *mp)
{
	return mp->state == S_THINK || (!mp->started && mp->start_in_think);
}

int strata_mp_calls_full(const struct strata_msgparse *mp)
{
	return mp->max_calls && mp->n_calls >= mp->max_calls;
}

int strata_mp_oom(const struct strata_msgparse *mp)
{
	return mp->content.oom || mp->reasoning.oom || mp->pending.oom || mp->block.oom ||
	       mp->gap.oom;
}

void strata_mp_free(struct strata_msgparse *mp)
{
	for (size_t i = 0; i < mp->n_calls; i++) {
		free(mp->calls[i].name);
		free(mp->calls[i].args);
	}
	free(mp->calls);
	strata_buf_free(&mp->content);
	strata_buf_free(&mp->reasoning);
	strata_buf_free(&mp->pending);
	strata_buf_free(&mp->block);
	strata_buf_free(&mp->gap);
	mp->calls = NULL;
	mp->n_calls = 0;
}
