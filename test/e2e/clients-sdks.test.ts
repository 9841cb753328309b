// Issue 31: the newest official `openai` and `@anthropic-ai/sdk` clients
// (and, as npm aliases, the oldest majors Tollgate supports: openai 6,
// @anthropic-ai/sdk 1.12), unchanged, on every surface they speak, against a
// real gateway over real HTTP with the simulator as the suppliers: the
// responses stream helper (item 2), structured output with .parse() (item
// 9) and, on messages, with a forced tool, members clients send (items 3–6),
// tools round trips on chat, responses and messages, models list and
// retrieve (item 7), request-id (item 8), embeddings as base64, images,
// error classes.
import Anthropic from '@anthropic-ai/sdk';
import AnthropicOld from 'anthropic-sdk-1-12';
import OpenAI from 'openai';
import OpenAIOld from 'openai-6';
import t from 'tap';
import { provision } from '../helpers/provision.js';
import { clientsGateway } from './clients-gateway.js';

const recipe = {
  type: 'object',
  additionalProperties: false,
  required: ['title', 'minutes', 'steps'],
  properties: { title: { type: 'string' }, minutes: { type: 'integer', minimum: 1 }, steps: { type: 'array', items: { type: 'string' } } },
};
const weather = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };

const gw = await clientsGateway(t);
if (gw !== null) {
  const { key } = gw;

  for (const [version, OpenAIClass] of [['openai 7', OpenAI], ['openai 6 (alias)', OpenAIOld]] as const) {
    const client = new (OpenAIClass as typeof OpenAI)({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });

    t.test(`${version}: responses.stream() helper, text deltas and the final response (item 2)`, async (t) => {
      const stream = client.responses.stream({ model: 'swift', input: 'Count [sim:words=5]', temperature: 0, top_p: 1 });
      let text = '';
      stream.on('response.output_text.delta', (e) => (text += e.delta));
      const final = await stream.finalResponse();
      t.equal(text, 'the quick brown fox over');
      t.equal(final.output_text, text);
      t.same((final.output[0] as any).content[0].annotations, []);
    });

    t.test(`${version}: responses members clients send, function-call round trip (item 3)`, async (t) => {
      const tools: OpenAI.Responses.Tool[] = [{ type: 'function', name: 'get_weather', parameters: weather, strict: true }];
      const first = await client.responses.create({
        model: 'swift', input: 'Weather? [sim:tool=get_weather]', tools, temperature: 0.2, metadata: { a: 'b' }, user: 'u1',
        truncation: 'auto', service_tier: 'auto', safety_identifier: 's', max_tool_calls: 2, top_logprobs: 0, parallel_tool_calls: false, background: false,
      });
      const call = first.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      t.equal(call.name, 'get_weather');
      const second = await client.responses.create({
        model: 'swift', tools,
        input: [{ role: 'user', content: 'Weather? [sim:words=3]' }, call, { type: 'function_call_output', call_id: call.call_id, output: '{"t":20}' }],
      });
      t.equal(second.output_text, 'the quick brown');
    });

    t.test(`${version}: structured output with .parse() on chat and responses, unary and stream (item 9)`, async (t) => {
      const chat = await client.chat.completions.parse({
        model: 'swift', messages: [{ role: 'user', content: 'A recipe' }],
        response_format: { type: 'json_schema', json_schema: { name: 'recipe', schema: recipe, strict: true } },
      });
      const parsed = chat.choices[0]!.message.parsed as any;
      t.equal(typeof parsed.title, 'string');
      t.ok(Number.isInteger(parsed.minutes) && parsed.minutes >= 1);
      const resp = await client.responses.parse({ model: 'swift', input: 'A recipe', text: { format: { type: 'json_schema', name: 'recipe', schema: recipe, strict: true } } });
      t.same(resp.output_parsed, parsed, 'the same answer on both surfaces');
      const stream = client.responses.stream({ model: 'swift', input: 'A recipe', text: { format: { type: 'json_schema', name: 'recipe', schema: recipe, strict: true } } });
      const streamed = await stream.finalResponse();
      t.same(JSON.parse(streamed.output_text), parsed, 'streamed too');
      // openai 6's stream helpers parse only the formats its zod helpers made.
      if (OpenAIClass === OpenAI) t.same(streamed.output_parsed, parsed);
      const chatStream = client.chat.completions.stream({
        model: 'swift', messages: [{ role: 'user', content: 'A recipe' }],
        response_format: { type: 'json_schema', json_schema: { name: 'recipe', schema: recipe, strict: true } },
      });
      const message = (await chatStream.finalChatCompletion()).choices[0]!.message;
      t.same(JSON.parse(message.content!), parsed);
      if (OpenAIClass === OpenAI) t.same(message.parsed, parsed);
    });

    t.test(`${version}: chat members clients send, tools with parallel_tool_calls (item 4)`, async (t) => {
      const r = await client.chat.completions.create({
        model: 'swift', messages: [{ role: 'user', content: 'Weather? [sim:tool=get_weather]' }],
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: weather } }], parallel_tool_calls: false,
        seed: 1, presence_penalty: 0.1, frequency_penalty: 0.1, logprobs: false, logit_bias: { '50256': -100 }, metadata: { a: 'b' },
        store: false, service_tier: 'auto', prompt_cache_key: 'k', safety_identifier: 's', modalities: ['text'],
      });
      t.equal(r.choices[0]!.message.tool_calls![0]!.type, 'function');
      const refused = await client.chat.completions.create({ model: 'swift', messages: [{ role: 'user', content: 'x' }], audio: { voice: 'alloy', format: 'mp3' }, modalities: ['text', 'audio'] }).catch((e) => e);
      t.ok(refused instanceof OpenAIClass.BadRequestError, 'audio refused');
      t.equal(refused.param, 'modalities');
    });

    t.test(`${version}: a chat tools round trip: tool call → tool message → final answer, unary and stream`, async (t) => {
      const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: weather } }];
      const ask: OpenAI.Chat.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Oslo? [sim:tool=get_weather]' };
      const first = await client.chat.completions.create({ model: 'swift', tools, tool_choice: 'auto', messages: [ask] });
      t.equal(first.choices[0]!.finish_reason, 'tool_calls');
      const assistant = first.choices[0]!.message;
      const call = assistant.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
      t.same([call.function.name, JSON.parse(call.function.arguments)], ['get_weather', { sim: true }]);
      // The simulator reads its directives from the last user turn (a real model answers once the tool's result is in): the
      // replayed turns are the ones the client got back, the question asks for three words this time.
      const answer = (question: string): OpenAI.Chat.ChatCompletionMessageParam[] => [
        { role: 'user', content: question }, assistant, { role: 'tool', tool_call_id: call.id, content: '{"celsius":3}' },
      ];
      const second = await client.chat.completions.create({ model: 'swift', tools, messages: answer('Weather in Oslo? [sim:words=3]') });
      t.same([second.choices[0]!.finish_reason, second.choices[0]!.message.content], ['stop', 'the quick brown']);
      // Streamed: the helper assembles the call from its argument deltas, and the answer after the tool message.
      const streamedCall = (await client.chat.completions.stream({ model: 'swift', tools, messages: [ask] }).finalChatCompletion()).choices[0]!.message;
      const streamedFunction = (streamedCall.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function;
      t.same([streamedFunction.name, streamedFunction.arguments], ['get_weather', call.function.arguments]);
      const streamedAnswer = await client.chat.completions.stream({ model: 'swift', tools, messages: answer('Weather in Oslo? [sim:words=4]') }).finalContent();
      t.equal(streamedAnswer, 'the quick brown fox');
    });

    t.test(`${version}: embeddings (the SDK asks base64) with dimensions, images with response_format (items 5, 6)`, async (t) => {
      const e = await client.embeddings.create({ model: 'embed', input: ['hello', 'world'], dimensions: 64, user: 'u' });
      t.same([e.data.length, e.data[0]!.embedding.length], [2, 64]);
      const img = await client.images.generate({ model: 'canvas', prompt: 'a kite', response_format: 'b64_json', quality: 'hd', style: 'vivid', user: 'u' });
      t.ok(img.data![0]!.b64_json!.length > 0);
    });

    t.test(`${version}: models list and retrieve (item 7), error classes`, async (t) => {
      const ids: string[] = [];
      for await (const m of client.models.list()) ids.push(m.id);
      t.ok(ids.includes('nw-swift-1'));
      const m = await client.models.retrieve('swift');
      t.same([m.id, m.object, m.owned_by, typeof m.created], ['nw-swift-1', 'model', 'northwind', 'number']);
      t.ok((await client.models.retrieve('nope').catch((e) => e)) instanceof OpenAIClass.NotFoundError);
      const bad = new (OpenAIClass as typeof OpenAI)({ apiKey: 'tg_nope', baseURL: `${gw.url}/v1`, maxRetries: 0 });
      t.ok((await bad.chat.completions.create({ model: 'swift', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e)) instanceof OpenAIClass.AuthenticationError);
    });
  }

  t.test('issue 30 item 2: a 256 KB json_schema from a 0.002 balance is refused with 402 (chat and responses), not admitted on its messages alone', async (t) => {
    const { key: poor } = await provision(gw.url, { balance: '0.002' });
    const client = new OpenAI({ apiKey: poor, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const words = ['river', 'stone', 'light', 'green', 'silver', 'water', 'cloud', 'branch'];
    const properties: Record<string, object> = {};
    for (let i = 0; JSON.stringify(properties).length < 256 * 1024; i++) {
      properties[`field_${i}`] = { type: 'string', description: Array.from({ length: 40 }, (_, j) => words[(i * 7 + j) % words.length]).join(' ') };
    }
    const schema = { type: 'object', properties };
    const messages = [{ role: 'user' as const, content: 'hi [sim:words=1]' }];
    const ok = await client.chat.completions.create({ model: 'swift', max_tokens: 1, messages });
    t.equal(ok.choices.length, 1, 'the balance covers the call without the schema');
    const chat = await client.chat.completions.create({ model: 'swift', max_tokens: 1, messages, response_format: { type: 'json_schema', json_schema: { name: 'big', schema } } }).catch((e) => e);
    t.equal(chat.status, 402, 'chat: the schema is counted');
    const responses = await client.responses.create({ model: 'swift', max_output_tokens: 16, input: 'hi', text: { format: { type: 'json_schema', name: 'big', schema } } }).catch((e) => e);
    t.equal(responses.status, 402, 'responses: the schema is counted');
  });

  for (const [version, AnthropicClass] of [['anthropic 1.14', Anthropic], ['anthropic 1.12 (alias)', AnthropicOld]] as const) {
    const client = new (AnthropicClass as typeof Anthropic)({ apiKey: key, baseURL: gw.url, maxRetries: 0 });

    t.test(`${version}: messages with service_tier; _request_id from request-id (item 8)`, async (t) => {
      const msg = await client.messages.create({ model: 'quill', max_tokens: 16, service_tier: 'auto', messages: [{ role: 'user', content: 'Hi [sim:words=2]' }] });
      t.same(msg.content, [{ type: 'text', text: 'the quick' }]);
      t.match(msg._request_id, /^req_[0-9a-f]{32}$/);
      const stream = client.messages.stream({ model: 'quill', max_tokens: 16, messages: [{ role: 'user', content: 'Hi [sim:words=3]' }] });
      t.equal((await stream.finalText()), 'the quick brown');
    });

    t.test(`${version}: a tools round trip: tool_use → tool_result → final text, unary and stream`, async (t) => {
      const tools: Anthropic.Tool[] = [{ name: 'get_weather', description: 'Weather', input_schema: weather as Anthropic.Tool.InputSchema }];
      const ask: Anthropic.MessageParam = { role: 'user', content: 'Weather in Oslo? [sim:tool=get_weather]' };
      const first = await client.messages.create({ model: 'quill', max_tokens: 64, tools, messages: [ask] });
      t.equal(first.stop_reason, 'tool_use');
      const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
      t.same([use.name, use.input], ['get_weather', { sim: true }]);
      // The result goes back in a user turn, as Anthropic's API has it; with no directive there the simulator answers its default eight words.
      const turns: Anthropic.MessageParam[] = [ask, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"celsius":3}' }] }];
      const second = await client.messages.create({ model: 'quill', max_tokens: 64, tools, messages: turns });
      t.same([second.stop_reason, second.content], ['end_turn', [{ type: 'text', text: 'the quick brown fox over lazy dog river' }]]);
      // Streamed: the helper assembles the input from input_json_delta fragments, then the text after the result.
      const streamedUse = (await client.messages.stream({ model: 'quill', max_tokens: 64, tools, messages: [ask] }).finalMessage()).content[0] as Anthropic.ToolUseBlock;
      t.same([streamedUse.type, streamedUse.name, streamedUse.input], ['tool_use', 'get_weather', { sim: true }]);
      t.equal(await client.messages.stream({ model: 'quill', max_tokens: 64, tools, messages: turns }).finalText(), 'the quick brown fox over lazy dog river');
    });

    t.test(`${version}: structured output on messages: a forced tool is carried, output_config is not (spec)`, async (t) => {
      const ask = {
        model: 'quill', max_tokens: 256, messages: [{ role: 'user' as const, content: 'A recipe' }],
        tools: [{ name: 'recipe', description: 'The recipe', input_schema: recipe as Anthropic.Tool.InputSchema }], tool_choice: { type: 'tool' as const, name: 'recipe' },
      };
      const unary = await client.messages.create(ask);
      const use = unary.content[0] as Anthropic.ToolUseBlock;
      t.same([unary.stop_reason, use.type, use.name], ['tool_use', 'tool_use', 'recipe']);
      const value = use.input as any;
      t.same(Object.keys(value).sort(), ['minutes', 'steps', 'title']);
      t.ok(typeof value.title === 'string' && Number.isInteger(value.minutes) && value.minutes >= 1 && Array.isArray(value.steps), JSON.stringify(value));
      const streamed = await client.messages.stream(ask).finalMessage();
      t.same((streamed.content[0] as Anthropic.ToolUseBlock).input, value, 'streamed as input_json_delta pieces, assembled the same');
      t.equal(streamed.usage.output_tokens, unary.usage.output_tokens, 'the same usage');
      // output_config.format (messages.parse()) is accepted and not sent (docs/api/messages.md): the answer is text.
      const plain = await client.messages.create({
        model: 'quill', max_tokens: 16, messages: [{ role: 'user', content: 'A recipe [sim:words=2]' }], output_config: { format: { type: 'json_schema', schema: recipe } },
      } as Anthropic.MessageCreateParamsNonStreaming);
      t.same(plain.content, [{ type: 'text', text: 'the quick' }]);
    });

    t.test(`${version}: models list (paged) and retrieve (item 7), error classes`, async (t) => {
      const ids: string[] = [];
      for await (const m of client.models.list({ limit: 2 })) ids.push(m.id);
      t.same(ids, ['nw-swift-1', 'au-atlas-2', 'ks-quill-1', 'au-canvas-1', 'nw-embed-1'], 'every page, in order');
      const m = await client.models.retrieve('quill');
      t.same([m.id, m.type, typeof m.display_name, typeof m.created_at], ['ks-quill-1', 'model', 'string', 'string']);
      t.ok((await client.models.retrieve('nope').catch((e) => e)) instanceof AnthropicClass.NotFoundError);
      const bad = new (AnthropicClass as typeof Anthropic)({ apiKey: 'tg_nope', baseURL: gw.url, maxRetries: 0 });
      t.ok((await bad.messages.create({ model: 'quill', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((e) => e)) instanceof AnthropicClass.AuthenticationError);
    });
  }
}
