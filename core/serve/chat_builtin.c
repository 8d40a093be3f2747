/*
 * chat_builtin.c - the chat templates strata brings, as Jinja: for a
 * model without tokenizer.chat_template (plain; qwen for qwen4exp) and for
 * choosing a common format by name ([serve] chat_template =
 * chatml|glm4|llama3|plain|qwen).  They
 * write no BOS: the tokenizer adds it where the vocabulary asks.
 */
#include <string.h>

#include "serve/chat.h"

/* "System: ...\nUser: ...\nAssistant:" for models with no chat format. */
static const char g_plain[] =
	"{%- if tools -%}"
	"{{- 'Tools: ' + (tools | map(attribute='function') | map('tojson') | join(', ')) + '\\n' -}}"
	"{%- endif -%}"
	"{%- for m in messages -%}"
	"{%- if m.role == 'system' -%}{{- 'System: ' -}}"
	"{%- elif m.role == 'user' -%}{{- 'User: ' -}}"
	"{%- elif m.role == 'tool' -%}{{- 'Tool: ' -}}"
	"{%- else -%}{{- 'Assistant: ' -}}{%- endif -%}"
	"{{- m.content -}}"
	"{%- for tc in m.tool_calls or [] -%}"
	"{{- '<tool_call>' + ({'name': tc.function.name, 'arguments': tc.function.arguments} "
	"| tojson) + '</tool_call>' -}}"
	"{%- endfor -%}"
	"{{- '\\n' -}}"
	"{%- endfor -%}"
	"{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}";

/* ChatML's tools preamble, as Hermes/Qwen write it (the first system message inside). */
#define CHATML_TOOLS \
	"{%- if tools -%}" \
	"{{- '<|im_start|>system\\n' -}}" \
	"{%- if messages and messages[0].role == 'system' -%}" \
	"{{- messages[0].content + '\\n\\n' -}}" \
	"{%- endif -%}" \
	"{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n" \
	"You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' -}}" \
	"{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}" \
	"{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name " \
	"and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": " \
	"<function-name>, \"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' -}}" \
	"{%- endif -%}"

/* An assistant turn's tool calls, then its end; a tool result as a user turn. */
#define CHATML_CALLS_AND_RESULTS \
	"{%- for tc in m.tool_calls or [] -%}" \
	"{{- '\\n<tool_call>\\n{\"name\": \"' + tc.function.name + '\", \"arguments\": ' + " \
	"(tc.function.arguments if tc.function.arguments is string else " \
	"tc.function.arguments | tojson) + '}\\n</tool_call>' -}}" \
	"{%- endfor -%}" \
	"{{- '<|im_end|>\\n' -}}" \
	"{%- elif m.role == 'tool' -%}" \
	"{{- '<|im_start|>user\\n<tool_response>\\n' + m.content + " \
	"'\\n</tool_response><|im_end|>\\n' -}}"

/* ChatML, with tools and tool calls as Hermes/Qwen write them. */
static const char g_chatml[] =
	CHATML_TOOLS
	"{%- for m in messages -%}"
	"{%- if m.role == 'system' and loop.first and tools -%}"
	"{%- elif m.role == 'assistant' and m.tool_calls -%}"
	"{{- '<|im_start|>assistant\\n' + m.content -}}"
	CHATML_CALLS_AND_RESULTS
	"{%- else -%}"
	"{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' -}}"
	"{%- endif -%}"
	"{%- endfor -%}"
	"{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

/*
 * Qwen's ChatML with the thinking block (qwen4exp's format): an assistant
 * turn's reasoning_content inside <think>...</think> before its answer; with
 * enable_thinking false the reply starts after an empty block.
 */
static const char g_qwen[] =
	CHATML_TOOLS
	"{%- for m in messages -%}"
	"{%- if m.role == 'system' and loop.first and tools -%}"
	"{%- elif m.role == 'assistant' -%}"
	"{{- '<|im_start|>assistant\\n' -}}"
	"{%- if m.reasoning_content -%}"
	"{{- '<think>\\n' + (m.reasoning_content | trim) + '\\n</think>\\n\\n' -}}"
	"{%- endif -%}"
	"{{- m.content -}}"
	CHATML_CALLS_AND_RESULTS
	"{%- else -%}"
	"{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' -}}"
	"{%- endif -%}"
	"{%- endfor -%}"
	"{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}"
	"{%- if enable_thinking is defined and not enable_thinking -%}"
	"{{- '<think>\\n\\n</think>\\n\\n' -}}"
	"{%- endif -%}"
	"{%- endif -%}";

/* Llama 3: each message trimmed, as Meta's template does. */
static const char g_llama3[] =
	"{%- for m in messages -%}"
	"{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' + (m.content | trim) + "
	"'<|eot_id|>' -}}"
	"{%- endfor -%}"
	"{%- if add_generation_prompt -%}"
	"{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}"
	"{%- endif -%}";

/* GLM-4 and GLM-4.5's turn markers. */
static const char g_glm4[] =
	"{{- '[gMASK]<sop>' -}}"
	"{%- for m in messages -%}{{- '<|' + m.role + '|>\\n' + m.content -}}{%- endfor -%}"
	"{%- if add_generation_prompt -%}{{- '<|assistant|>' -}}{%- endif -%}";

const char *strata_chat_builtin(const char *name)
{
	static const struct {
		const char *name, *src;
	} all[] = {
		{ "chatml", g_chatml }, { "glm4", g_glm4 }, { "llama3", g_llama3 },
		{ "plain", g_plain },   { "qwen", g_qwen },
	};

	for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(all[i].name, name))
			return all[i].src;
	return NULL;
}
