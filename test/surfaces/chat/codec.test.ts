import t from 'tap';
import type { Route } from '../../../src/catalog/types.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { chatCodec, DEFAULT_CEILING } from '../../../src/surfaces/chat/codec.js';

const msgs = [{ role: 'user', content: 'hi' }];
const route = { upstreamModel: 'up-model', priority: 1, supplier: {} } as unknown as Route;

/** null when accepted; the refusal's param (or '(body)' when it names none) when refused. */
function refusedParam(body: unknown): string | null {
  try {
    chatCodec.prepare(body, 100);
    return null;
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'invalid_request') throw err;
    return err.param ?? '(body)';
  }
}

t.test('bound: the default ceiling of 32768 when neither is stated; n multiplies; input from body size', async (t) => {
  const d = chatCodec.prepare({ model: 'm', messages: msgs }, 321).decoded;
  t.same(d.bound, { inputTokens: 321, outputTokens: DEFAULT_CEILING, imageUnits: 0 });
  t.equal(DEFAULT_CEILING, 32768);
  t.equal(chatCodec.prepare({ model: 'm', messages: msgs, max_tokens: 100, n: 3 }, 1).decoded.bound.outputTokens, 300);
  t.equal(chatCodec.prepare({ model: 'm', messages: msgs, max_completion_tokens: 50 }, 1).decoded.bound.outputTokens, 50);
});

t.test('both ceilings: equal is accepted, different is refused', async (t) => {
  t.equal(refusedParam({ model: 'm', messages: msgs, max_tokens: 10, max_completion_tokens: 10 }), null);
  t.equal(refusedParam({ model: 'm', messages: msgs, max_tokens: 10, max_completion_tokens: 11 }), 'max_completion_tokens');
});

t.test('member rules of the spec table', async (t) => {
  t.equal(refusedParam({ model: 'm', messages: msgs, stop: 'END' }), 'stop', 'a bare string stop is refused');
  t.equal(refusedParam({ model: 'm', messages: msgs, stop: ['a', 'b', 'c', 'd', 'e'] }), 'stop', 'at most four');
  t.equal(refusedParam({ model: 'm', messages: msgs, stop: ['a', 'b', 'c', 'd'] }), null);
  t.equal(refusedParam({ model: 'm', messages: msgs, temperature: 2.01 }), 'temperature');
  t.equal(refusedParam({ model: 'm', messages: msgs, temperature: 2 }), null);
  t.equal(refusedParam({ model: 'm', messages: msgs, top_p: 1.5 }), 'top_p');
  t.equal(refusedParam({ model: 'm', messages: msgs, frequency_penalty: 1 }), 'frequency_penalty', 'members outside the table are refused by name');
  t.equal(refusedParam({ messages: msgs }), 'model');
  t.equal(refusedParam({ model: 'm', messages: [] }), 'messages');
  t.equal(refusedParam({ model: 'm', messages: [{ role: 'robot', content: 'x' }] }), 'messages[0].role');
  t.equal(refusedParam({ model: 'm', messages: msgs, tool_choice: 'sometimes' }), 'tool_choice');
  t.equal(refusedParam({ model: 'm', messages: msgs, tool_choice: { type: 'function', function: { name: 'nope' } } }), 'tool_choice', 'must name a declared tool');
  t.equal(
    refusedParam({ model: 'm', messages: msgs, tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'f' } } }),
    null,
  );
  t.equal(refusedParam({ model: 'm', messages: msgs, reasoning_effort: 'high', user: 'u-1', n: 1 }), null);
  t.equal(refusedParam('not an object'), '(body)', 'a non-object body is refused');
});

t.test('upstream body: only what must change', async (t) => {
  const raw = {
    model: 'swift',
    messages: [{ role: 'system', content: 's', cache_control: { type: 'ephemeral' } }, { role: 'user', content: 'u' }],
    reasoning_effort: 'high',
    temperature: 0.5,
    max_tokens: 10,
  };
  const up = JSON.parse(chatCodec.upstreamBody(chatCodec.prepare(raw, 10), route, 16384));
  t.equal(up.model, 'up-model', 'upstream model name');
  t.notOk('reasoning_effort' in up, 'reasoning_effort accepted and not carried');
  t.notOk('cache_control' in up.messages[0], 'cache_control accepted and not carried');
  t.equal(up.temperature, 0.5);
  t.equal(up.max_tokens, 10);
  t.notOk('max_completion_tokens' in up, 'a stated ceiling is not restated');
  t.equal(raw.messages[0].cache_control?.type, 'ephemeral', "the caller's object is not mutated");

  const bare = { model: 'swift', messages: msgs, stream: true };
  const upStream = JSON.parse(chatCodec.upstreamBody(chatCodec.prepare(bare, 10), route, 16384));
  t.equal(upStream.max_completion_tokens, 16384, 'the reserved ceiling holds upstream, within the model max');
  t.same(upStream.stream_options, { include_usage: true }, 'usage always asked for, for settlement');

  const asked = { model: 'swift', messages: msgs, stream: true, stream_options: { include_usage: true } };
  t.equal(chatCodec.prepare(asked, 10).meta.includeUsage, true, "the caller's include_usage is remembered for the reply");
  t.equal(chatCodec.prepare(bare, 10).meta.includeUsage, false);
  const once = JSON.parse(chatCodec.upstreamBody(chatCodec.prepare(asked, 10), route, null));
  t.same(Object.keys(once).filter((k) => k === 'stream_options'), ['stream_options'], 'stream_options appears once');
});

t.test('the pool preparer gives the same result as inline preparation', async (t) => {
  const { default: prepareRequest } = await import('../../../workers/prepare-request.js');
  const raw = { model: 'swift', messages: [{ role: 'user', content: 'x'.repeat(50_000) }], temperature: 1 };
  const bytes = Buffer.from(JSON.stringify(raw));
  const pooled = prepareRequest({ protocol: 'chat_completions', maxDepth: 64, body: new Uint8Array(bytes) });
  t.same(pooled, { ok: true, prepared: chatCodec.prepare(raw, bytes.length) });
  t.same(prepareRequest({ protocol: 'chat_completions', maxDepth: 64, body: new Uint8Array(Buffer.from('{"model":')) }), { ok: false, code: 'invalid_json', param: null });
  t.same(prepareRequest({ protocol: 'chat_completions', maxDepth: 64, body: new Uint8Array(Buffer.from('{"model":"m","messages":[],"stop":"x"}')) }), {
    ok: false,
    code: 'invalid_request',
    param: 'messages',
  });
});
