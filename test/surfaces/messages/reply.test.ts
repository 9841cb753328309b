// The messages reply, unary and streamed, as pure functions of plain data:
// the gateway's id and the caller's model, the four usage members as
// settled (input_tokens without cache reads and writes), the stream's
// events, and its failure after the first event.
import t from 'tap';
import type { Metered } from '../../../src/billing/types.js';
import { decodeReply, renderReply } from '../../../src/surfaces/messages/reply.js';
import { MessagesStream } from '../../../src/surfaces/messages/stream.js';
import { messagesCodec } from '../../../src/surfaces/messages/codec.js';
import { unary } from '../unary.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';

const call = { requestId: 'req_abc', model: 'quill', created: 1, orgId: 'org' };
const upstreamUsage = { input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 20, output_tokens: 7 };

function sse(type: string, body: object): { event: string; data: string } {
  return { event: type, data: JSON.stringify({ type, ...body }) };
}

/** Parses SSE text into [event name, data] pairs. */
function events(text: string): Array<[string, any]> {
  return text
    .split('\n\n')
    .filter((f) => f !== '')
    .map((f) => {
      const [ev, data] = f.split('\n');
      return [ev.slice('event: '.length), JSON.parse(data.slice('data: '.length))];
    });
}

t.test('unary: id, model as named, role, type, text and tool_use blocks, stop_reason, the four usage members as settled', async (t) => {
  const upstream = {
    id: 'msg_upstream', type: 'message', role: 'assistant', model: 'quill-1-upstream',
    content: [
      { type: 'thinking', thinking: 'hidden', signature: 's' },
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } },
    ],
    stop_reason: 'tool_use', stop_sequence: null, usage: upstreamUsage,
  };
  const result = unary(messagesCodec, upstream, call);
  t.same(result.metered, { inputTokens: 35, cachedInputTokens: 20, cacheWriteTokens: 5, outputTokens: 7, imageUnits: 0, source: 'supplier' }, 'metered: all input, cache reads and writes apart');
  t.equal(result.outcome, 'completed');
  const reply = JSON.parse(result.render(result.metered!));
  t.same(reply, {
    id: 'req_abc', type: 'message', role: 'assistant', model: 'quill',
    content: [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }],
    stop_reason: 'tool_use', stop_sequence: null,
    usage: { input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 20, output_tokens: 7 },
  });
});

t.test('unary: a local count renders with no cache; max_tokens is incomplete; unknown stop reasons end the turn; not a message is upstream_error', async (t) => {
  const decoded = decodeReply({ content: [{ type: 'text', text: 'cut' }], stop_reason: 'max_tokens' });
  t.equal(decoded.usage, null);
  const local: Metered = { inputTokens: 12, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 3, imageUnits: 0, source: 'local' };
  t.same(JSON.parse(renderReply(decoded, call, local)).usage, { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 3 });
  t.equal(unary(messagesCodec, { content: [], stop_reason: 'max_tokens' }, call).outcome, 'incomplete');
  t.equal(decodeReply({ content: [], stop_reason: 'pause_turn' }).stopReason, 'end_turn');
  t.equal(decodeReply({ content: [], stop_reason: 'stop_sequence', stop_sequence: 'END' }).stopSequence, 'END');
  t.same(decodeReply({ content: [{ type: 'tool_use', id: 'a', name: 'b', input: 'not an object' }] }).content[0], { type: 'tool_use', id: 'a', name: 'b', input: {} });
  t.throws(() => decodeReply({ choices: [] }), GatewayError);
  t.throws(() => decodeReply(null), GatewayError);
});

function upstreamStream(): Array<{ event: string; data: string }> {
  return [
    sse('message_start', { message: { id: 'msg_up', type: 'message', role: 'assistant', model: 'up', content: [], usage: { ...upstreamUsage, output_tokens: 1 } } }),
    sse('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } }),
    sse('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'hidden' } }),
    sse('content_block_stop', { index: 0 }),
    sse('ping', {}),
    sse('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
    sse('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Hello' } }),
    sse('content_block_stop', { index: 1 }),
    sse('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'toolu_9', name: 'get', input: {} } }),
    sse('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{"a":' } }),
    sse('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '1}' } }),
    sse('content_block_stop', { index: 2 }),
    sse('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 7 } }),
    sse('message_stop', {}),
  ];
}

t.test('stream: message_start with the gateway id and the input half, blocks renumbered, message_delta held for the settled usage', async (t) => {
  const s = new MessagesStream(call);
  let text = '';
  for (const ev of upstreamStream()) text += s.event(ev);
  t.equal(s.complete, true);
  t.equal(s.outcome(), 'completed');
  t.same(s.metered(), { inputTokens: 35, cachedInputTokens: 20, cacheWriteTokens: 5, outputTokens: 7, imageUnits: 0, source: 'supplier' });
  t.equal(s.producedText(), 'Hello{"a":1}');
  const before = events(text);
  t.notOk(before.some(([e]) => e === 'message_delta' || e === 'message_stop'), 'held back until settlement');
  text += s.finish(s.metered()!);
  const evs = events(text);
  t.same(evs.map(([e]) => e), [
    'message_start', 'ping', 'content_block_start', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
  ]);
  for (const [name, data] of evs) t.equal(data.type, name, `the event name is its type (${name})`);
  const start = evs[0][1].message;
  t.same(start, {
    id: 'req_abc', type: 'message', role: 'assistant', model: 'quill', content: [], stop_reason: null, stop_sequence: null,
    usage: { input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 20, output_tokens: 0 },
  });
  t.same(evs[2][1], { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'the thinking block left out: text is index 0');
  t.same(evs[3][1].delta, { type: 'text_delta', text: 'Hello' });
  t.same(evs[5][1], { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_9', name: 'get', input: {} } });
  t.same(evs[6][1], { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":' } });
  t.same(evs[9][1], {
    type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 20, output_tokens: 7 },
  });
});

t.test('stream: the same settled usage as the unary reply of the same answer', async (t) => {
  const s = new MessagesStream(call);
  for (const ev of upstreamStream()) s.event(ev);
  const streamed = events(s.finish(s.metered()!))[0][1].usage;
  const answered = unary(messagesCodec, { content: [], stop_reason: 'tool_use', usage: upstreamUsage }, call);
  t.same(streamed, JSON.parse(answered.render(answered.metered!)).usage);
});

t.test('stream: usage restated on message_delta overwrites; no output usage means a local count', async (t) => {
  const s = new MessagesStream(call);
  s.event(sse('message_start', { message: { usage: { input_tokens: 4 } } }));
  t.equal(s.metered(), null, 'output not known yet');
  s.event(sse('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 6, output_tokens: 2 } }));
  t.same(s.metered(), { inputTokens: 6, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 2, imageUnits: 0, source: 'supplier' });
  const bare = new MessagesStream(call);
  bare.event(sse('message_start', { message: {} }));
  bare.event(sse('message_delta', { delta: { stop_reason: 'end_turn' } }));
  t.equal(bare.metered(), null, 'a supplier that reports nothing: the pipeline counts locally');
});

t.test('stream: a failure after the first event is an error event in the messages envelope, no message_stop', async (t) => {
  const s = new MessagesStream(call);
  const upstream = upstreamStream().slice(0, 7);
  for (const ev of upstream) s.event(ev);
  t.equal(s.complete, false);
  t.equal(s.outcome(), 'incomplete');
  const [[name, data]] = events(s.failure());
  t.equal(name, 'error');
  t.same(data, { type: 'error', error: { type: 'api_error', message: 'The model supplier failed to answer.', code: 'upstream_error' } });
  const overloaded = new MessagesStream(call);
  overloaded.event(upstream[0]);
  overloaded.event(sse('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }));
  overloaded.event(sse('message_stop', {}));
  t.equal(overloaded.complete, false, 'an upstream error event never completes the stream');
  t.equal(events(overloaded.failure())[0][1].error.type, 'overloaded_error');
});
