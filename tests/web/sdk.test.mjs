// The official npm clients against strata --serve (stories260K with the
// built-in chatml template): openai's chat completions (whole, streamed,
// tools with a tool-result turn, structured output, logprobs), a legacy
// completion and responses, and @anthropic-ai/sdk's messages (whole,
// streamed, tool_use, count_tokens).  stories260K calls no tool and writes
// no JSON by itself: the forced calls and schemas go through constrained
// sampling.
import { assert, needPackages, run, startServer } from './serve.mjs';

needPackages('openai', '@anthropic-ai/sdk');
const { default: OpenAI } = await import('openai');
const { default: Anthropic } = await import('@anthropic-ai/sdk');

const server = await startServer(['--chat-template', 'chatml']);
const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'Weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } },
      required: ['city'] },
  },
}];
const ask = [{ role: 'user', content: 'Once upon a time' }];

await run(server, [
  ['chat completion, whole and streamed alike', async () => {
    const whole = await openai.chat.completions.create({ model: 'm', messages: ask, max_tokens: 20,
      temperature: 0 });
    const text = whole.choices[0].message.content;
    assert(typeof text === 'string' && text.length > 0, 'content');
    assert(whole.usage.completion_tokens === 20, 'usage');
    let streamed = '';
    const stream = await openai.chat.completions.create({ model: 'm', messages: ask, max_tokens: 20,
      temperature: 0, stream: true });
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
    assert(streamed === text, `stream "${streamed}" vs "${text}"`);
  }],
  ['tools with a tool-result turn, a forced call back', async () => {
    const r = await openai.chat.completions.create({
      model: 'm', max_tokens: 200, tools, tool_choice: 'required', parallel_tool_calls: false,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '21 C and sunny' },
        { role: 'user', content: 'And in Rome?' },
      ],
    });
    const call = r.choices[0].message.tool_calls?.[0];
    assert(r.choices[0].finish_reason === 'tool_calls', 'finish_reason');
    assert(call?.function.name === 'get_weather', 'the call');
    assert(typeof JSON.parse(call.function.arguments).city === 'string', 'its arguments');
  }],
  ['a streamed tool call comes whole in one delta', async () => {
    const stream = await openai.chat.completions.create({ model: 'm', max_tokens: 200, tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false, messages: ask, stream: true });
    let call = null;
    let finish = null;
    for await (const chunk of stream) {
      call = chunk.choices[0]?.delta?.tool_calls?.[0] ?? call;
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert(call && call.index === 0 && call.id.startsWith('call_'), 'delta');
    assert(JSON.parse(call.function.arguments).city !== undefined, 'arguments');
    assert(finish === 'tool_calls', 'finish');
  }],
  ['structured output parses and matches', async () => {
    const r = await openai.chat.completions.create({ model: 'm', max_tokens: 300, messages: ask,
      response_format: { type: 'json_schema', json_schema: { name: 'pet', strict: true, schema: {
        type: 'object', properties: { name: { type: 'string', maxLength: 10 },
          kind: { enum: ['cat', 'dog'] } }, required: ['name', 'kind'],
        additionalProperties: false } } } });
    const v = JSON.parse(r.choices[0].message.content);
    assert(typeof v.name === 'string' && ['cat', 'dog'].includes(v.kind), JSON.stringify(v));
  }],
  ['logprobs', async () => {
    const r = await openai.chat.completions.create({ model: 'm', messages: ask, max_tokens: 6,
      temperature: 0, logprobs: true, top_logprobs: 3 });
    const lp = r.choices[0].logprobs.content;
    assert(lp.length === r.usage.completion_tokens, 'one entry per token');
    assert(lp.every((e) => e.logprob <= 0 && e.top_logprobs.length === 3), 'entries');
    assert(lp.map((e) => e.token).join('') === r.choices[0].message.content, 'tokens make the text');
  }],
  ['a legacy completion with logprobs', async () => {
    const r = await openai.completions.create({ model: 'm', prompt: 'Once upon a time',
      max_tokens: 5, temperature: 0, logprobs: 2 });
    const c = r.choices[0];
    assert(c.text.length > 0 && r.usage.completion_tokens === 5, 'text');
    assert(c.logprobs.tokens.join('') === c.text && c.logprobs.top_logprobs.length === 5, 'logprobs');
  }],
  ['responses, whole and streamed', async () => {
    const r = await openai.responses.create({ model: 'm', input: 'Once upon a time',
      max_output_tokens: 12, temperature: 0 });
    assert(r.output_text.length > 0 && r.status === 'incomplete', 'output_text');
    const stream = await openai.responses.create({ model: 'm', input: 'Once upon a time',
      max_output_tokens: 12, temperature: 0, stream: true });
    let text = '';
    for await (const ev of stream) if (ev.type === 'response.output_text.delta') text += ev.delta;
    assert(text === r.output_text, `"${text}" vs "${r.output_text}"`);
  }],
  ['anthropic messages, whole and streamed', async () => {
    const m = await anthropic.messages.create({ model: 'm', max_tokens: 16, temperature: 0,
      system: 'You tell stories.', messages: ask });
    assert(m.content[0].type === 'text' && m.stop_reason === 'max_tokens', 'message');
    const stream = anthropic.messages.stream({ model: 'm', max_tokens: 16, temperature: 0,
      system: 'You tell stories.', messages: ask });
    let text = '';
    stream.on('text', (t) => { text += t; });
    const final = await stream.finalMessage();
    assert(text === m.content[0].text && final.content[0].text === text, 'streamed text');
    const n = await anthropic.messages.countTokens({ model: 'm', system: 'You tell stories.',
      messages: ask });
    assert(n.input_tokens === m.usage.input_tokens, `count_tokens ${n.input_tokens} vs ${m.usage.input_tokens}`);
  }],
  ['anthropic tool_use, streamed', async () => {
    const stream = anthropic.messages.stream({ model: 'm', max_tokens: 200, messages: ask,
      tools: [{ name: 'get_weather', input_schema: tools[0].function.parameters }],
      tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true } });
    const final = await stream.finalMessage();
    const use = final.content.find((b) => b.type === 'tool_use');
    assert(final.stop_reason === 'tool_use', 'stop_reason');
    assert(use && use.name === 'get_weather' && typeof use.input.city === 'string', 'tool_use');
    const next = await anthropic.messages.create({ model: 'm', max_tokens: 8, messages: [
      ...ask, { role: 'assistant', content: final.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '21 C' }] },
    ] });
    assert(next.content[0].type === 'text', 'answer after the tool result');
  }],
]);
