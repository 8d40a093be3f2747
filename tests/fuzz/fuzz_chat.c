#define _GNU_SOURCE /* memmem */
/*
 * fuzz_chat.c - the Jinja template engine (core/tmpl) and the chat
 * templates the server renders with it.
 *
 * Input with byte 0 odd: the whole input is a template.  It compiles or is
 * refused with a message; compiled, it renders a fixed conversation (with
 * tools, under small step, output and memory limits) or fails with a
 * message; never a crash, a hang or a leak.
 *
 * Byte 0 even: (byte 0 >> 1) % 5 picks a built-in template (chatml, glm4,
 * llama3, plain, qwen) and the rest is messages separated by NUL bytes, each a
 * role byte (system, user, assistant, tool) and its content.  A built-in
 * renders every such conversation: a NUL-terminated text of *len bytes
 * holding each content (trimmed for llama3) in order and ending with the
 * assistant's opener.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "serve/chat.h"
#include "tmpl/tmpl.h"

#define FUZZ_MAX_MSGS 64

static const char *const g_names[] = { "chatml", "glm4", "llama3", "plain", "qwen" };
/* What each built-in ends with: the generation prompt (qwen's without enable_thinking). */
static const char *const g_openers[] = {
	"<|im_start|>assistant\n", "<|assistant|>",
	"<|start_header_id|>assistant<|end_header_id|>\n\n", "Assistant:",
	"<|im_start|>assistant\n",
};
#define N_BUILTIN (sizeof(g_names) / sizeof(g_names[0]))
_Static_assert(sizeof(g_openers) / sizeof(g_openers[0]) == N_BUILTIN, "an opener per built-in");
static struct strata_chat *g_chats[N_BUILTIN];
static cJSON *g_vars;

int fuzz_target_init(void)
{
	fuzz_quiet();
	for (size_t i = 0; i < N_BUILTIN; i++) {
		struct strata_chat_opts o = { .setting = g_names[i], .bos = "<s>", .eos = "</s>" };

		if (strata_chat_create(&o, &g_chats[i]))
			return 1;
	}
	g_vars = cJSON_Parse(
		"{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
		"{\"role\":\"user\",\"content\":\"Hi \\u00e9\"},{\"role\":\"assistant\",\"content\":"
		"\"\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
		"\"f\",\"arguments\":{\"x\":1}}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\","
		"\"content\":\"42\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\","
		"\"parameters\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}}}}}],"
		"\"add_generation_prompt\":true,\"bos_token\":\"<s>\",\"eos_token\":\"</s>\","
		"\"enable_thinking\":false}");
	return g_vars ? 0 : 1;
}

static void fuzz_template(const uint8_t *data, size_t size)
{
	struct strata_tmpl_opts o = { .now = 1, .max_steps = 200000, .max_out = 1 << 20,
				      .max_mem = 64u << 20 };
	struct strata_tmpl_err err;
	struct strata_tmpl *t;
	char *out;
	size_t len;
	int rc = strata_tmpl_compile((const char *)data, size, &t, &err);

	FUZZ_CHECK(memchr(err.msg, 0, sizeof(err.msg)));
	if (rc) {
		FUZZ_CHECK((rc == -EINVAL && err.msg[0]) || rc == -ENOMEM);
		return;
	}
	rc = strata_tmpl_render(t, g_vars, &o, &out, &len, &err);
	if (rc == 0) {
		FUZZ_CHECK(out && out[len] == 0 && len <= (1u << 20));
		free(out);
	} else {
		FUZZ_CHECK((rc == -EINVAL && err.msg[0] && out == NULL) || rc == -ENOMEM);
	}
	strata_tmpl_free(t);
}

/* content without the white space | trim drops, as (start, len). */
static void trimmed(const char *s, size_t n, const char **ts, size_t *tn)
{
	while (n && strchr(" \t\r\n\v\f\x1c\x1d\x1e\x1f", s[0]) && s[0])
		s++, n--;
	while (n && strchr(" \t\r\n\v\f\x1c\x1d\x1e\x1f", s[n - 1]) && s[n - 1])
		n--;
	*ts = s;
	*tn = n;
}

static void fuzz_builtin(int fmt, const uint8_t *data, size_t size)
{
	static const char *const roles[] = { "system", "user", "assistant", "tool" };
	struct strata_chat_msg m[FUZZ_MAX_MSGS];
	struct strata_tmpl_err err;
	size_t n = 0, pos = 0, len = 0, ol = strlen(g_openers[fmt]);
	char *out = NULL;
	const char *at;
	int rc;

	while (pos < size && n < FUZZ_MAX_MSGS) {
		const uint8_t *end = memchr(data + pos, 0, size - pos);
		size_t mlen = end ? (size_t)(end - data) - pos : size - pos;

		if (mlen > 0) {
			m[n].role = roles[data[pos] % 4];
			m[n].content = (const char *)data + pos + 1;
			m[n].len = mlen - 1;
			n++;
		}
		pos += mlen + 1;
	}
	rc = strata_chat_render_msgs(g_chats[fmt], m, n, &out, &len, &err);
	if (rc == -ENOMEM)
		return;
	FUZZ_CHECK(rc == 0 && out && strlen(out) == len);
	FUZZ_CHECK(len >= ol && memcmp(out + len - ol, g_openers[fmt], ol) == 0);
	at = out;
	for (size_t i = 0; i < n; i++) {
		const char *c = m[i].content, *hit;
		size_t cl = m[i].len;

		if (fmt == 2) /* llama3 trims; U+0085 and friends are left alone by this check */
			trimmed(c, cl, &c, &cl);
		if (fmt == 2 && cl && ((unsigned char)c[0] >= 0x80 || (unsigned char)c[cl - 1] >= 0x80))
			continue;
		hit = cl ? memmem(at, (size_t)(out + len - at), c, cl) : at;
		FUZZ_CHECK(hit != NULL);
		at = hit + cl;
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fuzz_template(data, size);
	else
		fuzz_builtin((int)((data[0] >> 1) % N_BUILTIN), data + 1, size - 1);
	return 0;
}
