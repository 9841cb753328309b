// POST /v1/messages request rules, one by one (spec: the member table of
// POST /v1/messages), against the surface's pure prepare().
import t from 'tap';
import type { Route } from '../../../src/catalog/types.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { IMAGE_TOKENS } from '../../../src/surfaces/messages/content.js';
import { messagesCodec } from '../../../src/surfaces/messages/codec.js';
import { modelCallNamed } from '../../../src/surfaces/index.js';

const msgs = [{ role: 'user', content: 'hi' }];
const base = { model: 'm', max_tokens: 100, messages: msgs };
const route = { upstreamModel: 'up-model', priority: 1, supplier: {} } as unknown as Route;
const tool = { name: 'get_weather', input_schema: { type: 'object' } };

/** null when accepted; the refusal's param (or '(body)' when it names none) when refused. */
function refusedParam(body: unknown): string | null {
  try {
    messagesCodec.prepare(body, 100);
    return null;
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'invalid_request') throw err;
    return err.param ?? '(body)';
  }
}

t.test('the pool runs the same preparer (the registry, surfaces/index.ts)', async (t) => {
  t.equal(modelCallNamed('messages').prepare, messagesCodec.prepare);
});

t.test('max_tokens: required with no default, an integer ≥ 1, bounded (beyond 2^53 − 1 refused by name)', async (t) => {
  t.equal(refusedParam({ model: 'm', messages: msgs }), 'max_tokens', 'absent: refused, no default');
  t.equal(refusedParam({ ...base, max_tokens: 0 }), 'max_tokens');
  t.equal(refusedParam({ ...base, max_tokens: 1.5 }), 'max_tokens');
  t.equal(refusedParam({ ...base, max_tokens: null }), 'max_tokens');
  t.equal(refusedParam({ ...base, max_tokens: '10' }), 'max_tokens');
  t.equal(refusedParam({ ...base, max_tokens: 1e308 }), 'max_tokens');
  t.equal(refusedParam({ ...base, max_tokens: Number.MAX_SAFE_INTEGER + 1 }), 'max_tokens');
  t.equal(refusedParam({ ...base, max_tokens: Number.MAX_SAFE_INTEGER }), null, 'the largest safe integer is accepted here (the model ceiling refuses it later)');
  const bound = messagesCodec.prepare(base, 321).decoded.bound;
  t.same([bound.statedCeiling, bound.ceilingParam, bound.choices, bound.inputTokens, bound.turns], [100, 'max_tokens', 1, 321, 1]);
});

t.test('messages: required, not empty, roles user/assistant/system, content string or blocks, required', async (t) => {
  t.equal(refusedParam({ model: 'm', max_tokens: 5 }), 'messages');
  t.equal(refusedParam({ ...base, messages: [] }), 'messages');
  t.equal(refusedParam({ ...base, messages: [{ role: 'tool', content: 'x' }] }), 'messages[0].role');
  t.equal(refusedParam({ ...base, messages: [{ role: 'user' }] }), 'messages[0].content');
  t.equal(refusedParam({ ...base, messages: [{ role: 'user', content: 5 }] }), 'messages[0].content');
  t.equal(refusedParam({ ...base, messages: [{ role: 'user', content: [{ text: 'no type' }] }] }), 'messages[0].content[0].type');
  t.equal(refusedParam({ ...base, messages: [{ role: 'user', content: [{ type: 'text' }] }] }), 'messages[0].content[0].text');
  t.equal(refusedParam({ ...base, messages: [{ role: 'system', content: 'be brief' }, ...msgs] }), null, 'role system is accepted');
  t.equal(refusedParam({ ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] }] }), null);
});

t.test('tool exchange: a replayed tool_use carries an input object; a tool_result names its call', async (t) => {
  const use = { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } };
  const result = { type: 'tool_result', tool_use_id: 'toolu_1', content: '3°C' };
  const convo = [msgs[0], { role: 'assistant', content: [use] }, { role: 'user', content: [result] }];
  t.equal(refusedParam({ ...base, tools: [tool], messages: convo }), null);
  t.equal(refusedParam({ ...base, messages: [msgs[0], { role: 'assistant', content: [{ ...use, input: '{"city":"Oslo"}' }] }] }), 'messages[1].content[0].input');
  t.equal(refusedParam({ ...base, messages: [msgs[0], { role: 'assistant', content: [{ type: 'tool_use', id: 'x', name: 'n' }] }] }), 'messages[1].content[0].input');
  t.equal(refusedParam({ ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }] }), 'messages[0].content[0].tool_use_id');
});

t.test('model: required, a non-empty string', async (t) => {
  t.equal(refusedParam({ max_tokens: 5, messages: msgs }), 'model');
  t.equal(refusedParam({ ...base, model: '' }), 'model');
  t.equal(refusedParam({ ...base, model: 7 }), 'model');
});

t.test('system: a string or text blocks (type, text, cache_control), not a turn', async (t) => {
  t.equal(refusedParam({ ...base, system: 'be brief' }), null);
  t.equal(refusedParam({ ...base, system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }] }), null);
  t.equal(refusedParam({ ...base, system: [{ type: 'image', text: 'x' }] }), 'system[0].type');
  t.equal(refusedParam({ ...base, system: [{ type: 'text' }] }), 'system[0].text');
  t.equal(refusedParam({ ...base, system: 5 }), 'system');
  const body = JSON.parse(messagesCodec.prepare({ ...base, system: 'be brief' }, 1).rest);
  t.equal(body.system, 'be brief', 'carried as its own member');
  t.same(body.messages, msgs, 'not made a turn');
});

t.test('stop_sequences: an array of strings, carried to the supplier unchanged', async (t) => {
  t.equal(refusedParam({ ...base, stop_sequences: 'END' }), 'stop_sequences');
  t.equal(refusedParam({ ...base, stop_sequences: [1] }), 'stop_sequences[0]');
  const stops = ['END', '\n\nHuman:', '  spaced  ', 'ünïcode'];
  const upstream = JSON.parse(messagesCodec.upstreamBody(messagesCodec.prepare({ ...base, stop_sequences: stops }, 1), route, null));
  t.same(upstream.stop_sequences, stops);
});

t.test('stream: a boolean', async (t) => {
  t.equal(refusedParam({ ...base, stream: 'yes' }), 'stream');
  t.equal(messagesCodec.prepare({ ...base, stream: true }, 1).decoded.stream, true);
  t.equal(messagesCodec.prepare(base, 1).decoded.stream, false);
});

t.test('temperature and top_p: 0 to 1; top_k: a non-negative integer, bounded', async (t) => {
  for (const v of [0, 0.5, 1]) t.equal(refusedParam({ ...base, temperature: v, top_p: v }), null, `${v} accepted`);
  t.equal(refusedParam({ ...base, temperature: 1.01 }), 'temperature', 'temperature above 1 (chat allows 2) refused');
  t.equal(refusedParam({ ...base, temperature: -0.1 }), 'temperature');
  t.equal(refusedParam({ ...base, top_p: 1.5 }), 'top_p');
  t.equal(refusedParam({ ...base, top_p: -1 }), 'top_p');
  t.equal(refusedParam({ ...base, top_k: 40 }), null);
  t.equal(refusedParam({ ...base, top_k: 0.5 }), 'top_k');
  t.equal(refusedParam({ ...base, top_k: -1 }), 'top_k');
  t.equal(refusedParam({ ...base, top_k: 1e300 }), 'top_k');
});

t.test('tool_choice: auto / any / tool / none, name only with tool (a declared one), disable_parallel_tool_use', async (t) => {
  for (const type of ['auto', 'any']) {
    t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type } }), null, type);
    t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type, disable_parallel_tool_use: true } }), null, `${type} + disable_parallel_tool_use`);
  }
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type: 'none' } }), null);
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: false } }), null);
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type: 'tool', name: 'other' } }), 'tool_choice.name', 'a tool that is not declared');
  t.equal(refusedParam({ ...base, tool_choice: { type: 'tool', name: 'get_weather' } }), 'tool_choice.name', 'no tools at all');
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type: 'tool' } }), 'tool_choice.name', 'type tool without a name');
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type: 'auto', name: 'get_weather' } }), 'tool_choice.name', 'a name with another type');
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type: 'none', disable_parallel_tool_use: true } }), 'tool_choice.disable_parallel_tool_use');
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type: 'required' } }), 'tool_choice.type');
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: 'auto' }), 'tool_choice', 'a bare word is the chat shape');
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type: 'auto', extra: 1 } }), 'tool_choice.extra');
  t.equal(refusedParam({ ...base, tools: [tool], tool_choice: { type: 'any', disable_parallel_tool_use: 'yes' } }), 'tool_choice.disable_parallel_tool_use');
});

t.test('tools: name required; every listed optional member accepted; others refused by name; names unique', async (t) => {
  const full = {
    name: 'search', description: 'find things', type: 'custom', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' },
    allowed_callers: ['direct'], defer_loading: false, eager_input_streaming: true, input_examples: [{ q: 'x' }], max_uses: 3, strict: true,
  };
  t.equal(refusedParam({ ...base, tools: [full] }), null, 'all eleven members');
  const upstream = JSON.parse(messagesCodec.upstreamBody(messagesCodec.prepare({ ...base, tools: [full] }, 1), route, null));
  t.same(upstream.tools, [full], 'carried unchanged');
  t.equal(refusedParam({ ...base, tools: [{ description: 'x' }] }), 'tools[0].name');
  t.equal(refusedParam({ ...base, tools: [{ name: '' }] }), 'tools[0].name');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a', function: {} }] }), 'tools[0].function', 'the chat shape is refused by name');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a', input_schema: 'x' }] }), 'tools[0].input_schema');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a', max_uses: 0 }] }), 'tools[0].max_uses');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a', max_uses: 1e300 }] }), 'tools[0].max_uses');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a', allowed_callers: [1] }] }), 'tools[0].allowed_callers[0]');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a', input_examples: ['x'] }] }), 'tools[0].input_examples[0]');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a', strict: 1 }] }), 'tools[0].strict');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a', defer_loading: 'no' }] }), 'tools[0].defer_loading');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a', eager_input_streaming: 'no' }] }), 'tools[0].eager_input_streaming');
  t.equal(refusedParam({ ...base, tools: [{ name: 'a' }, { name: 'a' }] }), 'tools[1].name', 'a repeated name');
  // Issue 34 item 2: the message names the member and the rule, not the generic sentence.
  const message = (body: unknown): string => {
    try {
      messagesCodec.prepare(body, 100);
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };
  t.equal(message({ ...base, tools: [{ name: 'a' }, { name: 'a' }] }), "tools[1].name: another tool is declared under this name; each tool's name must be unique.");
  t.equal(message({ ...base, tools: [{ name: 'a' }], tool_choice: { type: 'tool', name: 'b' } }), 'tool_choice.name: must name a tool declared in tools.');
});

t.test('metadata, thinking, output_config, context_management: accepted, no effect, not forwarded', async (t) => {
  const body = {
    ...base,
    metadata: { user_id: 'u-1' },
    thinking: { type: 'enabled', budget_tokens: 1024 },
    output_config: { effort: 'low' },
    context_management: { edits: [] },
  };
  t.equal(refusedParam(body), null);
  const upstream = JSON.parse(messagesCodec.upstreamBody(messagesCodec.prepare(body, 1), route, null));
  for (const member of ['metadata', 'thinking', 'output_config', 'context_management']) t.notOk(member in upstream, `${member} not forwarded`);
  t.equal(refusedParam({ ...base, metadata: { user_id: 5 } }), 'metadata.user_id');
  t.equal(refusedParam({ ...base, metadata: { other: 'x' } }), 'metadata.other');
  t.equal(refusedParam({ ...base, thinking: 'on' }), 'thinking');
});

t.test('issue 31 item 8: service_tier accepted and not forwarded', async (t) => {
  t.equal(refusedParam({ ...base, service_tier: 'auto' }), null);
  t.notOk('service_tier' in JSON.parse(messagesCodec.upstreamBody(messagesCodec.prepare({ ...base, service_tier: 'standard_only' }, 1), route, null)));
  t.equal(refusedParam({ ...base, service_tier: 'priority' }), 'service_tier');
});

t.test('issue 30 item 2: the local input count covers system, tools and stop_sequences', async (t) => {
  const text = messagesCodec.inputText(messagesCodec.prepare({ ...base, system: 'needle_in_system', stop_sequences: ['needle_in_stop'], tools: [{ name: 'needle_in_tool', input_schema: { type: 'object' } }] }, 1));
  for (const needle of ['needle_in_system', 'needle_in_stop', 'needle_in_tool']) t.match(text, needle, `${needle} counted`);
});

t.test('unknown top-level members are refused by name (chat members included)', async (t) => {
  t.equal(refusedParam({ ...base, n: 2 }), 'n');
  t.equal(refusedParam({ ...base, max_completion_tokens: 5 }), 'max_completion_tokens');
  t.equal(refusedParam({ ...base, stop: ['x'] }), 'stop');
  t.equal(refusedParam({ ...base, whatever: true }), 'whatever');
  t.equal(refusedParam([base]), '(body)', 'not an object');
});

t.test('upstream body: the upstream model and exactly one bound, the reserved one; the rest as sent', async (t) => {
  const prepared = messagesCodec.prepare({ ...base, max_tokens: 50000, temperature: 0.2, stream: true }, 1);
  const text = messagesCodec.upstreamBody(prepared, route, 16384);
  t.equal(text.split('"max_tokens"').length, 2, 'one max_tokens member');
  const upstream = JSON.parse(text);
  t.equal(upstream.model, 'up-model');
  t.equal(upstream.max_tokens, 16384, 'the model ceiling applies (a stated one above it is refused at reservation)');
  t.same([upstream.temperature, upstream.stream], [0.2, true]);
  t.same(JSON.parse(messagesCodec.upstreamBody(messagesCodec.prepare(base, 1), route, null)).max_tokens, 100);
});

t.test('input bound: body bytes outside image payloads, plus a stated figure per image', async (t) => {
  const data = 'A'.repeat(100_000);
  const body = { ...base, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }, { type: 'text', text: 'what is it' }] }] };
  const bound = messagesCodec.prepare(body, 100_500).decoded.bound;
  t.equal(bound.mediaTokens, IMAGE_TOKENS);
  t.equal(bound.inputTokens, 100_500 - data.length + IMAGE_TOKENS);
  t.equal(messagesCodec.prepare({ ...base, system: 's' }, 1).decoded.bound.turns, 2, 'the system prompt is framed like a turn');
});

t.test('inputText: system, every turn (tool calls and results) and the tools, not the image payloads', async (t) => {
  const body = {
    ...base,
    system: [{ type: 'text', text: 'SYSTEM' }],
    tools: [tool],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'ASK' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'PAYLOAD' } }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'get_weather', input: { city: 'OSLO' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'RESULT' }] }] },
    ],
  };
  const text = messagesCodec.inputText(messagesCodec.prepare(body, 1));
  for (const s of ['SYSTEM', 'ASK', 'OSLO', 'RESULT', 'get_weather']) t.ok(text.includes(s), s);
  t.notOk(text.includes('PAYLOAD'));
});
