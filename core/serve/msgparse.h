/*
 * msgparse.h - a generation's text split into what an OpenAI message has:
 * content, reasoning (a <think> block) and tool calls, as the text comes.
 *
 * The tool-call formats are those of the chat templates strata renders:
 *   <tool_call> blocks holding JSON {"name", "arguments"} (Hermes, Qwen 2.5/3),
 *     <function=NAME><parameter=P>v</parameter></function> (Qwen3-Coder,
 *     Qwen3.5) or NAME<arg_key>k</arg_key><arg_value>v</arg_value> (GLM-4.5+)
 *   [TOOL_CALLS] then a JSON array of calls, or NAME[ARGS]{...} (Mistral)
 *   a reply that is one JSON object {"name", "parameters"} (Llama 3.x), also
 *     after <|python_tag|>
 * Text that may still become a marker ("<tool_" at the end) is held back
 * until it cannot; a call is complete when its block closes (or at the end
 * of the generation).  A block that does not parse goes to the content as
 * it was written, with a warning.
 */
#ifndef STRATA_SERVE_MSGPARSE_H
#define STRATA_SERVE_MSGPARSE_H

#include <stddef.h>

#include "util/strbuf.h"

struct cJSON;

enum strata_toolfmt {
	STRATA_TOOLS_NONE = 0,  /* no tool calls are looked for */
	STRATA_TOOLS_TAGGED,    /* <tool_call>...</tool_call>: JSON, Qwen XML or GLM keys */
	STRATA_TOOLS_MISTRAL,   /* [TOOL_CALLS]... */
	STRATA_TOOLS_LLAMA3,    /* a JSON object as the whole reply, or after <|python_tag|> */
};

/* The format of a template's tool calls, from the markers its text writes. */
enum strata_toolfmt strata_toolfmt_of(const char *template_source);
const char *strata_toolfmt_name(enum strata_toolfmt f);
/*
 * The marker texts of f (NULL-terminated) and of thinking: a control token
 * with one of these texts reaches the parser as its text, not as nothing.
 */
const char *const *strata_toolfmt_markers(enum strata_toolfmt f);

struct strata_mp_call {
	char id[32];              /* call_<24 letters and digits> */
	char *name;
	char *args;               /* the arguments object as JSON text */
};

struct strata_msgparse {
	/* Set before the first feed, then read-only. */
	enum strata_toolfmt fmt;
	int think;                /* <think>...</think> is reasoning */
	int start_in_think;       /* the prompt opened <think>: the reply starts inside it */
	const struct cJSON *tools;/* the request's tools (parameter types), borrowed; or NULL */
	unsigned max_calls;       /* stop looking after this many calls (0: no limit) */

	/* What the client sees, growing. */
	struct strata_buf content, reasoning;
	struct strata_mp_call *calls;
	size_t n_calls;
	char warning[256];        /* the last block that did not parse, or "" */

	/* Parser state. */
	int state;
	int started;              /* the first text came */
	int released;             /* any content released yet */
	int skip_ws;              /* drop white space before the next content (after </think>) */
	const char *tail_open;    /* the marker that opened the tail (S_TAIL), or NULL */
	struct strata_buf pending, block;
	struct strata_buf gap;    /* white space before the open block: content if it fails */
	unsigned long long seq;   /* for call ids when the OS has no random bytes */
};

/* Feed generated text (already past the stop strings); sorts it into the fields above. */
void strata_mp_feed(struct strata_msgparse *mp, const char *text, size_t len);
/* End of generation: what was held back is released, an open block parsed. */
void strata_mp_finish(struct strata_msgparse *mp);
/* 1 while the reply is inside a thinking block (or will start inside one). */
int strata_mp_in_think(const struct strata_msgparse *mp);
/* 1 once max_calls calls are complete: the generation may stop. */
int strata_mp_calls_full(const struct strata_msgparse *mp);
/* Any allocation failed (the fields are incomplete). */
int strata_mp_oom(const struct strata_msgparse *mp);
void strata_mp_free(struct strata_msgparse *mp);

/*
 * Parse one complete tool-call text of format f (a <tool_call> block's
 * inside, a Mistral [TOOL_CALLS] tail, a Llama JSON object) into calls
 * appended to mp.  Returns the number added, 0 when it is not a call.
 */
int strata_mp_parse_calls(struct strata_msgparse *mp, enum strata_toolfmt f, const char *text,
			  size_t len);

#endif
