/*
 * chat.c - recognising a model's chat format and rendering messages in it.
 *
 * The formats are those the models strata runs were trained with (see the
 * models' tokenizer_config.json chat templates and llama.cpp's
 * llama-chat.cpp, which renders the same ones natively).
 */
#include "serve/chat.h"

#include <errno.h>
#include <string.h>

#include "util/strbuf.h"

enum strata_chat_fmt strata_chat_detect(const char *jinja)
{
	if (!jinja)
		return STRATA_CHAT_PLAIN;
	/* Most specific marker first: a Llama-3 template never writes im_start. */
	if (strstr(jinja, "<|im_start|>"))
		return STRATA_CHAT_CHATML;
	if (strstr(jinja, "<|start_header_id|>") && strstr(jinja, "<|end_header_id|>"))
		return STRATA_CHAT_LLAMA3;
	if (strstr(jinja, "[gMASK]<sop>"))
		return STRATA_CHAT_GLM4;
	return STRATA_CHAT_PLAIN;
}

const char *strata_chat_fmt_name(enum strata_chat_fmt fmt)
{
	switch (fmt) {
	case STRATA_CHAT_AUTO:
		return "auto";
	case STRATA_CHAT_CHATML:
		return "chatml";
	case STRATA_CHAT_GLM4:
		return "glm4";
	case STRATA_CHAT_LLAMA3:
		return "llama3";
	case STRATA_CHAT_PLAIN:
		break;
	}
	return "plain";
}

static int known_role(const char *role)
{
	return strcmp(role, "system") == 0 || strcmp(role, "user") == 0 ||
	       strcmp(role, "assistant") == 0;
}

/* Llama-3's template strips each message, as its Jinja does with | trim. */
static void add_trimmed(struct strata_buf *b, const char *s, size_t n)
{
	while (n && strchr(" \t\r\n", s[0]))
		s++, n--;
	while (n && strchr(" \t\r\n", s[n - 1]))
		n--;
	strata_buf_add(b, s, n);
}

static void render_one(struct strata_buf *b, enum strata_chat_fmt fmt,
		       const struct strata_chat_msg *m)
{
	switch (fmt) {
	case STRATA_CHAT_CHATML:
		strata_buf_puts(b, "<|im_start|>");
		strata_buf_puts(b, m->role);
		strata_buf_puts(b, "\n");
		strata_buf_add(b, m->content, m->len);
		strata_buf_puts(b, "<|im_end|>\n");
		break;
	case STRATA_CHAT_GLM4:
		strata_buf_puts(b, "<|");
		strata_buf_puts(b, m->role);
		strata_buf_puts(b, "|>\n");
		strata_buf_add(b, m->content, m->len);
		break;
	case STRATA_CHAT_LLAMA3:
		strata_buf_puts(b, "<|start_header_id|>");
		strata_buf_puts(b, m->role);
		strata_buf_puts(b, "<|end_header_id|>\n\n");
		add_trimmed(b, m->content, m->len);
		strata_buf_puts(b, "<|eot_id|>");
		break;
	case STRATA_CHAT_AUTO:
	case STRATA_CHAT_PLAIN:
		strata_buf_puts(b, strcmp(m->role, "system") == 0 ? "System: " :
				   strcmp(m->role, "user") == 0 ? "User: " : "Assistant: ");
		strata_buf_add(b, m->content, m->len);
		strata_buf_puts(b, "\n");
		break;
	}
}

int strata_chat_render(enum strata_chat_fmt fmt, const struct strata_chat_msg *msgs, size_t n,
		       char **out, size_t *len)
{
	static const char *const opener[] = {
		[STRATA_CHAT_AUTO] = "Assistant:",
		[STRATA_CHAT_CHATML] = "<|im_start|>assistant\n",
		[STRATA_CHAT_GLM4] = "<|assistant|>",
		[STRATA_CHAT_LLAMA3] = "<|start_header_id|>assistant<|end_header_id|>\n\n",
		[STRATA_CHAT_PLAIN] = "Assistant:",
	};
	struct strata_buf b = { 0 };

	*out = NULL;
	*len = 0;
	for (size_t i = 0; i < n; i++)
		if (!known_role(msgs[i].role))
			return -EINVAL;
	if (fmt == STRATA_CHAT_GLM4)
		strata_buf_puts(&b, "[gMASK]<sop>");
	for (size_t i = 0; i < n; i++)
		render_one(&b, fmt, &msgs[i]);
	strata_buf_puts(&b, opener[fmt]);
	if (b.oom) {
		strata_buf_free(&b);
		return -ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
