#define _GNU_SOURCE /* memmem */
/*
 * fuzz_chat.c - the chat-template renderer and the template detector.
 *
 * Input: byte 0 picks the format (chatml, glm4, llama3, plain); the
 * rest is messages separated by NUL bytes, each a role byte (system, user,
 * assistant, developer, tool, "") and its content.  A message list with a
 * role other than system, user or assistant is refused with -EINVAL; any
 * other renders to a NUL-terminated text of *len bytes that opens the
 * assistant's turn, holding every content (trimmed for llama3) in order.
 * The whole input is also given to strata_chat_detect() as a template.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "serve/chat.h"

#define FUZZ_MAX_MSGS 64

int fuzz_target_init(void)
{
	fuzz_quiet();
	return 0;
}

static const char *const roles[] = { "system", "user", "assistant", "developer", "tool", "" };
#define N_ROLES (sizeof(roles) / sizeof(roles[0]))

static const char *const openers[] = {
	"Assistant:", "<|im_start|>assistant\n", "<|assistant|>",
	"<|start_header_id|>assistant<|end_header_id|>\n\n", "Assistant:",
};

/* content without the white space llama3 trims, as (start, len). */
static void trimmed(const char *s, size_t n, const char **ts, size_t *tn)
{
	while (n && strchr(" \t\r\n", s[0]))
		s++, n--;
	while (n && strchr(" \t\r\n", s[n - 1]))
		n--;
	*ts = s;
	*tn = n;
}

static void check_rendered(enum strata_chat_fmt fmt, const struct strata_chat_msg *m,
			   size_t n, const char *out, size_t len)
{
	size_t ol = strlen(openers[fmt]);
	const char *at = out;

	FUZZ_CHECK(out && strlen(out) == len);
	FUZZ_CHECK(len >= ol && memcmp(out + len - ol, openers[fmt], ol) == 0);
	if (fmt == STRATA_CHAT_GLM4)
		FUZZ_CHECK(strncmp(out, "[gMASK]<sop>", 12) == 0);
	for (size_t i = 0; i < n; i++) {
		const char *c = m[i].content, *hit;
		size_t cl = m[i].len;

		if (fmt == STRATA_CHAT_LLAMA3)
			trimmed(c, cl, &c, &cl);
		hit = cl ? memmem(at, (size_t)(out + len - at), c, cl) : at;
		FUZZ_CHECK(hit != NULL);
		at = hit + cl;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strata_chat_msg m[FUZZ_MAX_MSGS];
	enum strata_chat_fmt fmt;
	size_t n = 0, pos = 1, len = 0;
	int bad = 0, rc;
	char *out = NULL, *tmpl;

	if (size < 1)
		return 0;
	fmt = (enum strata_chat_fmt)(1 + data[0] % 4); /* not AUTO: chat.h */
	FUZZ_CHECK(strata_chat_fmt_name(fmt) != NULL);
	while (pos < size && n < FUZZ_MAX_MSGS) {
		const uint8_t *end = memchr(data + pos, 0, size - pos);
		size_t mlen = end ? (size_t)(end - data) - pos : size - pos;

		if (mlen > 0) {
			const char *role = roles[data[pos] % N_ROLES];

			bad |= strcmp(role, "system") && strcmp(role, "user") &&
			       strcmp(role, "assistant");
			m[n].role = role;
			m[n].content = (const char *)data + pos + 1;
			m[n].len = mlen - 1;
			n++;
		}
		pos += mlen + 1;
	}
	rc = strata_chat_render(fmt, m, n, &out, &len);
	if (bad) {
		FUZZ_CHECK(rc == -EINVAL && out == NULL && len == 0);
	} else if (rc != -ENOMEM) {
		FUZZ_CHECK(rc == 0);
		check_rendered(fmt, m, n, out, len);
	}
	free(out);

	/* The same bytes as a tokenizer.chat_template. */
	tmpl = malloc(size + 1);
	FUZZ_CHECK(tmpl != NULL);
	memcpy(tmpl, data, size);
	tmpl[size] = 0;
	fmt = strata_chat_detect(tmpl);
	FUZZ_CHECK(fmt >= STRATA_CHAT_CHATML && fmt <= STRATA_CHAT_PLAIN);
	free(tmpl);
	return 0;
}
