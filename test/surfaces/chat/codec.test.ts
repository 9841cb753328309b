import t from 'tap';
import type { Route } from '../../../src/catalog/types.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { chatCodec, DEFAULT_CEILING } from '../../../src/surfaces/chat/codec.js';
import { FILE_PART_TOKENS, IMAGE_HIGH_MAX_TOKENS, imageTokens } from '../../../src/surfaces/chat/media.js';

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

t.test('bound request: nothing stated → the default ceiling; n is the choices; input from body size', async (t) => {
  const d = chatCodec.prepare({ model: 'm', messages: msgs }, 321).decoded;
  t.same(d.bound, {
    inputTokens: 321, mediaTokens: 0, turns: 1, statedCeiling: null, ceilingParam: 'max_completion_tokens', defaultCeiling: DEFAULT_CEILING, choices: 1, imageUnits: 0,
  });
  t.equal(DEFAULT_CEILING, 32768);
  const stated = chatCodec.prepare({ model: 'm', messages: msgs, max_tokens: 100, n: 3 }, 1).decoded.bound;
  t.same([stated.statedCeiling, stated.ceilingParam, stated.choices], [100, 'max_tokens', 3]);
  const current = chatCodec.prepare({ model: 'm', messages: msgs, max_completion_tokens: 50, n: null }, 1).decoded.bound;
  t.same([current.statedCeiling, current.ceilingParam, current.choices], [50, 'max_completion_tokens', 1]);
});

t.test('issue 12 item 2: integer members beyond 2^53 − 1 and n beyond 128 are refused by name', async (t) => {
  t.equal(refusedParam({ model: 'm', messages: msgs, max_tokens: 1e308, n: 2 }), 'max_tokens');
  t.equal(refusedParam({ model: 'm', messages: msgs, max_tokens: 1e200 }), 'max_tokens');
  t.equal(refusedParam({ model: 'm', messages: msgs, max_completion_tokens: Number.MAX_SAFE_INTEGER + 1 }), 'max_completion_tokens');
  t.equal(refusedParam({ model: 'm', messages: msgs, max_completion_tokens: Number.MAX_SAFE_INTEGER }), null, 'the largest safe integer is an integer');
  t.equal(refusedParam({ model: 'm', messages: msgs, n: 129 }), 'n');
  t.equal(refusedParam({ model: 'm', messages: msgs, n: 128 }), null);
  t.equal(refusedParam({ model: 'm', messages: msgs, n: 1e300 }), 'n');
  t.equal(refusedParam({ model: 'm', messages: msgs, max_tokens: 0 }), 'max_tokens');
  t.equal(refusedParam({ model: 'm', messages: msgs, max_tokens: 1.5 }), 'max_tokens');
});

t.test('issue 12 item 7: image and file parts are estimated by their documented cost, not their bytes', async (t) => {
  const at = (parts: object[]) => chatCodec.prepare({ model: 'm', messages: [{ role: 'user', content: parts }] }, 1_000_000).decoded.bound;
  const url = 'https://example.com/a.png';
  const high = at([{ type: 'image_url', image_url: { url } }]);
  t.same([high.inputTokens, high.mediaTokens], [1_000_000 - url.length + IMAGE_HIGH_MAX_TOKENS, IMAGE_HIGH_MAX_TOKENS], 'size unknown: the largest high detail allows');
  t.equal(IMAGE_HIGH_MAX_TOKENS, 85 + 170 * 8);
  t.equal(at([{ type: 'image_url', image_url: { url, detail: 'low' } }]).mediaTokens, 85);
  // A real PNG header: 100 × 100 px is one tile at high detail; 3000 × 1500 fits in 2048 × 1024, then 1536 × 768: 3 × 2 tiles.
  const png = (w: number, h: number) => {
    const head = Buffer.alloc(33);
    head.writeUInt32BE(0x89504e47, 0);
    head.writeUInt32BE(0x0d0a1a0a, 4);
    head.writeUInt32BE(13, 8);
    head.write('IHDR', 12, 'latin1');
    head.writeUInt32BE(w, 16);
    head.writeUInt32BE(h, 20);
    return `data:image/png;base64,${head.toString('base64')}${'A'.repeat(1000)}`;
  };
  t.equal(at([{ type: 'image_url', image_url: { url: png(100, 100), detail: 'high' } }]).mediaTokens, 85 + 170);
  t.equal(at([{ type: 'image_url', image_url: { url: png(3000, 1500) } }]).mediaTokens, 85 + 170 * 6);
  t.equal(imageTokens('auto', 3000, 1000), 85 + 170 * 8, 'a short side already below 768 is not scaled up: 2048 × 683, 4 × 2 tiles');
  t.equal(imageTokens('high', 2048, 4096), 85 + 170 * 6, "OpenAI's worked example: 2048 × 4096 → 768 × 1536, 6 tiles");
  const data = 'JVBERi0'.repeat(10_000);
  const file = at([{ type: 'file', file: { file_data: data, filename: 'a.pdf' } }, { type: 'text', text: 'sum up' }]);
  t.same([file.inputTokens, file.mediaTokens], [1_000_000 - data.length + FILE_PART_TOKENS, FILE_PART_TOKENS], 'a file part: a stated figure');
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
  t.equal(refusedParam({ model: 'm', messages: msgs, web_search_options: {} }), 'web_search_options', 'members outside the table are refused by name');
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
  t.equal(JSON.parse(chatCodec.upstreamBody(chatCodec.prepare(bare, 10), route, null)).max_completion_tokens, DEFAULT_CEILING, 'no model max: the default');
  t.same(upStream.stream_options, { include_usage: true }, 'usage always asked for, for settlement');

  const asked = { model: 'swift', messages: msgs, stream: true, stream_options: { include_usage: true } };
  t.equal(chatCodec.prepare(asked, 10).meta.includeUsage, true, "the caller's include_usage is remembered for the reply");
  t.equal(chatCodec.prepare(bare, 10).meta.includeUsage, false);
  const once = JSON.parse(chatCodec.upstreamBody(chatCodec.prepare(asked, 10), route, null));
  t.same(Object.keys(once).filter((k) => k === 'stream_options'), ['stream_options'], 'stream_options appears once');
});

t.test('issue 31 item 4: members OpenAI accepts are accepted, bounded, carried or not as docs/api says', async (t) => {
  const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
  const sent = {
    model: 'm', messages: msgs, tools, parallel_tool_calls: false, seed: 7, presence_penalty: 0.5, frequency_penalty: -0.5,
    logprobs: true, top_logprobs: 3, logit_bias: { '50256': -100 }, metadata: { a: 'b' }, store: false, service_tier: 'priority',
    prompt_cache_key: 'k', safety_identifier: 's', verbosity: 'low', modalities: ['text'], prediction: { type: 'content', content: 'x' },
    user: 'u', stream_options: null,
  };
  t.equal(refusedParam(sent), null, 'all accepted together');
  const up = JSON.parse(chatCodec.upstreamBody(chatCodec.prepare(sent, 10), route, 100));
  for (const m of ['parallel_tool_calls', 'seed', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'safety_identifier', 'user']) t.same(up[m], (sent as any)[m], `${m} carried`);
  for (const m of ['logprobs', 'top_logprobs', 'metadata', 'store', 'service_tier', 'prompt_cache_key', 'verbosity', 'modalities', 'prediction']) t.notOk(m in up, `${m} not carried`);
  const noTools = JSON.parse(chatCodec.upstreamBody(chatCodec.prepare({ model: 'm', messages: msgs, parallel_tool_calls: true, seed: null }, 10), route, 100));
  t.notOk('parallel_tool_calls' in noTools, 'parallel_tool_calls only beside tools');
  t.notOk('seed' in noTools, 'a null is left out');
  // Refused by name: what would break a promise, what no model here does, and values out of range.
  t.equal(refusedParam({ model: 'm', messages: msgs, store: true }), 'store');
  t.equal(refusedParam({ model: 'm', messages: msgs, audio: { voice: 'alloy', format: 'mp3' } }), 'audio');
  t.equal(refusedParam({ model: 'm', messages: msgs, modalities: ['text', 'audio'] }), 'modalities');
  // Members of OpenAI's current API refused by name, each with its reason (docs/api/chat-completions.md).
  t.equal(refusedParam({ model: 'm', messages: msgs, web_search_options: { search_context_size: 'low' } }), 'web_search_options');
  t.equal(refusedParam({ model: 'm', messages: msgs, functions: [{ name: 'f', parameters: { type: 'object' } }] }), 'functions');
  t.equal(refusedParam({ model: 'm', messages: msgs, function_call: { name: 'f' } }), 'function_call');
  t.equal(refusedParam({ model: 'm', messages: msgs, function_call: null }), 'function_call', 'even null: never a member here');
  t.equal(refusedParam({ model: 'm', messages: msgs, top_logprobs: 21 }), 'top_logprobs');
  t.equal(refusedParam({ model: 'm', messages: msgs, presence_penalty: 2.5 }), 'presence_penalty');
  t.equal(refusedParam({ model: 'm', messages: msgs, seed: 2 ** 60 }), 'seed');
  t.equal(refusedParam({ model: 'm', messages: msgs, logit_bias: { x: 1 } }), 'logit_bias');
  t.equal(refusedParam({ model: 'm', messages: msgs, metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }), 'metadata');
  t.equal(refusedParam({ model: 'm', messages: msgs, safety_identifier: 'x'.repeat(513) }), 'safety_identifier');
});

t.test('issue 31: a refusal\'s message names the member and the rule (the AI SDK shows only the message)', async (t) => {
  const message = (body: object): string => {
    try {
      chatCodec.prepare(body, 10);
    } catch (err) {
      return (err as GatewayError).message;
    }
    return '(accepted)';
  };
  t.equal(message({ model: 'm', messages: msgs, store: true }), '`store` must be false: Tollgate keeps nothing, runs nothing after the call, and asks its suppliers to keep nothing.');
  t.equal(message({ model: 'm', messages: msgs, audio: {} }), '`audio` is not accepted: no model served here answers audio.');
  t.equal(message({ model: 'm', messages: msgs, web_search_options: {} }), '`web_search_options` is not accepted: the supplier bills each web search beside the tokens, and Tollgate prices and charges tokens only.');
  t.equal(message({ model: 'm', messages: msgs, functions: [{ name: 'f' }] }), '`functions` is not accepted: it is the deprecated form of `tools`: declare each function as {"type": "function", "function": {…}} in `tools`.');
  t.equal(message({ model: 'm', messages: msgs, function_call: 'auto' }), '`function_call` is not accepted: it is the deprecated form of `tool_choice`: use `tool_choice` with functions declared in `tools`.');
  t.equal(message({ model: 'm', messages: msgs, web_search: {} }), '`web_search` is not a member this surface accepts (docs/api lists them).', 'a member of no version of the protocol');
  t.equal(message({ model: 'm', messages: msgs, temperature: 3 }), '`temperature` must be <= 2.');
  t.equal(message({ model: 'm', messages: msgs, stop: 'x' }), '`stop` must be an array of at most four strings (a bare string is refused).');
  t.equal(message({ messages: msgs }), '`model` is required.');
  const { default: prepareRequest } = await import('../../../workers/prepare-request.js');
  const pooled = prepareRequest({ surface: 'chat', body: Buffer.from(JSON.stringify({ model: 'm', messages: msgs, store: true })), maxDepth: 64 });
  t.match(pooled, { ok: false, param: 'store', message: /^`store` must be false/ }, 'the pool carries the message too');
});

t.test('issue 30 item 2: the local input count covers every member forwarded (response_format schema, tools, stop)', async (t) => {
  const schema = { type: 'object', properties: { needle_in_schema: { type: 'string' } } };
  const prepared = chatCodec.prepare({
    model: 'm', messages: msgs, tools: [{ type: 'function', function: { name: 'needle_in_tool' } }], stop: ['needle_in_stop'],
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
  }, 10);
  const text = chatCodec.inputText(prepared);
  for (const needle of ['needle_in_schema', 'needle_in_tool', 'needle_in_stop', 'hi']) t.match(text, needle, `${needle} counted`);
});

t.test('issue 12 item 3: the upstream body carries exactly one bound, the reserved one, never a null', async (t) => {
  const bounds = (text: string) => [...text.matchAll(/"(max_tokens|max_completion_tokens)":([^,}]*)/g)].map((m) => `${m[1]}=${m[2]}`);
  const up = (extra: object, max: number | null = 32768) => bounds(chatCodec.upstreamBody(chatCodec.prepare({ model: 'm', messages: msgs, ...extra }, 10), route, max));
  t.same(up({ max_completion_tokens: null }), ['max_completion_tokens=32768']);
  t.same(up({ max_completion_tokens: null }, 16384), ['max_completion_tokens=16384'], 'the default, within the model max');
  t.same(up({ max_tokens: null, max_completion_tokens: null }), ['max_completion_tokens=32768']);
  t.same(up({ max_tokens: 7, max_completion_tokens: null }), ['max_tokens=7'], "the caller's spelling");
  t.same(up({ max_tokens: null, max_completion_tokens: 9 }), ['max_completion_tokens=9']);
  t.same(up({ max_tokens: 5, max_completion_tokens: 5 }), ['max_completion_tokens=5'], 'both equal: one of them');
});

t.test('the pool preparer gives the same result as inline preparation', async (t) => {
  const { default: prepareRequest } = await import('../../../workers/prepare-request.js');
  const raw = { model: 'swift', messages: [{ role: 'user', content: 'x'.repeat(50_000) }], temperature: 1 };
  const bytes = Buffer.from(JSON.stringify(raw));
  const pooled = prepareRequest({ surface: 'chat', maxDepth: 64, body: new Uint8Array(bytes) });
  t.same(pooled, { ok: true, prepared: chatCodec.prepare(raw, bytes.length) });
  t.same(prepareRequest({ surface: 'chat', maxDepth: 64, body: new Uint8Array(Buffer.from('{"model":')) }), { ok: false, code: 'invalid_json', param: null });
  t.same(prepareRequest({ surface: 'chat', maxDepth: 64, body: new Uint8Array(Buffer.from('{"model":"m","messages":[],"stop":"x"}')) }), {
    ok: false,
    code: 'invalid_request',
    param: 'messages',
    message: '`messages` must NOT have fewer than 1 items.',
  });
});

t.test('reply: a choice or message that is not an object is upstream_error (502), inline and in the pool', async (t) => {
  const { default: decodeInPool } = await import('../../../workers/decode-reply.js');
  const broken = [null, {}, { choices: {} }, { choices: [null] }, { choices: [5] }, { choices: [{ message: 'x' }] }, { choices: [{ message: { content: 'x', tool_calls: 5 } }] }];
  for (const b of broken) {
    t.throws(() => chatCodec.decodeReply(b, {}), new GatewayError('upstream_error'), JSON.stringify(b));
    t.same(decodeInPool({ surface: 'chat', body: new Uint8Array(Buffer.from(JSON.stringify(b))), meta: {} }), { ok: false }, `pool: ${JSON.stringify(b)}`);
  }
  const ok = chatCodec.decodeReply({ choices: [{ message: { role: 'assistant', content: 'hi' }, finish_reason: 'length' }] }, {});
  t.same(chatCodec.meter(ok), { usage: null, imageUnits: 0, producedText: 'hi', outcome: 'incomplete', warning: null });
});
