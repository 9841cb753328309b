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
  t.equal(JSON.parse(chatCodec.upstreamBody(chatCodec.prepare(bare, 10), route, null)).max_completion_tokens, DEFAULT_CEILING, 'no model max: the default');
  t.same(upStream.stream_options, { include_usage: true }, 'usage always asked for, for settlement');

  const asked = { model: 'swift', messages: msgs, stream: true, stream_options: { include_usage: true } };
  t.equal(chatCodec.prepare(asked, 10).meta.includeUsage, true, "the caller's include_usage is remembered for the reply");
  t.equal(chatCodec.prepare(bare, 10).meta.includeUsage, false);
  const once = JSON.parse(chatCodec.upstreamBody(chatCodec.prepare(asked, 10), route, null));
  t.same(Object.keys(once).filter((k) => k === 'stream_options'), ['stream_options'], 'stream_options appears once');
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
  });
});
