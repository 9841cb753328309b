// POST /v1/images/generations request rules and replies, against the
// surface's pure prepare() and reply decoding.
import t from 'tap';
import type { Route } from '../../../src/catalog/types.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import { imagesCodec } from '../../../src/surfaces/images/codec.js';
import { IMAGES_MAX_N } from '../../../src/surfaces/images/schema.js';
import { modelCallNamed } from '../../../src/surfaces/index.js';
import { unary } from '../unary.js';
import decodeInPool from '../../../workers/decode-reply.js';

const base = { model: 'canvas', prompt: 'a red kite' };
const route = { upstreamModel: 'canvas-1', priority: 1, supplier: {} } as unknown as Route;
const call = { requestId: 'req_x', model: 'canvas', created: 1700000000, orgId: 'org' };

function refusedParam(body: unknown): string | null {
  try {
    imagesCodec.prepare(body, 100);
    return null;
  } catch (err) {
    if (!(err instanceof GatewayError) || err.code !== 'invalid_request') throw err;
    return err.param ?? '(body)';
  }
}

t.test('the pool runs the same preparer (the registry, surfaces/index.ts)', async (t) => {
  t.equal(modelCallNamed('images').prepare, imagesCodec.prepare);
});

t.test('model and prompt required', async (t) => {
  t.equal(refusedParam({ prompt: 'x' }), 'model');
  t.equal(refusedParam({ model: 'canvas' }), 'prompt');
  t.equal(refusedParam({ ...base, prompt: '' }), 'prompt');
  t.equal(refusedParam({ ...base, prompt: 5 }), 'prompt');
  t.equal(refusedParam(base), null);
});

t.test(`n: an integer from 1 to ${IMAGES_MAX_N}`, async (t) => {
  for (const n of [0, -1, 1.5, '2', null, IMAGES_MAX_N + 1, 1e308]) t.equal(refusedParam({ ...base, n }), 'n', JSON.stringify(n));
  t.equal(refusedParam({ ...base, n: IMAGES_MAX_N }), null);
});

t.test('size: WIDTHxHEIGHT, each side 1–4096', async (t) => {
  for (const size of ['1024x1024', '256x512', '1x1', '4096x4096']) t.equal(refusedParam({ ...base, size }), null, size);
  for (const size of ['1024', 'x', '1024x', 'x1024', '0x10', '010x10', '1024X1024', ' 1024x1024', '1024x1024 ', '4097x10', '10x4097', '99999x1', '1e3x1', '-1x1', 'auto', 1024]) {
    t.equal(refusedParam({ ...base, size }), 'size', JSON.stringify(size));
  }
});

t.test('members outside the table refused (stream, …)', async (t) => {
  t.equal(refusedParam({ ...base, stream: true }), 'stream');
  t.equal(refusedParam({ ...base, response_format: 'png' }), 'response_format');
  t.equal(refusedParam({ ...base, output_compression: 101 }), 'output_compression');
});

t.test('issue 31 item 5: response_format, quality, style, background, output_format, user accepted; quality not carried', async (t) => {
  const sent = { ...base, response_format: 'b64_json', quality: 'hd', style: 'vivid', background: 'opaque', output_format: 'png', user: 'u', moderation: null };
  t.equal(refusedParam(sent), null);
  const up = JSON.parse(imagesCodec.upstreamBody(imagesCodec.prepare(sent, 50), { upstreamModel: 'up' } as any, null));
  t.same(up, { model: 'up', prompt: base.prompt, response_format: 'b64_json', style: 'vivid', background: 'opaque', output_format: 'png', user: 'u' });
  t.equal(refusedParam({ ...base, response_format: 'url' }), null, 'a url answer passes through as the supplier gives it');
});

t.test('bound: n image units, no tokens', async (t) => {
  t.same(imagesCodec.prepare({ ...base, n: 3 }, 50).decoded.bound, { inputTokens: 0, mediaTokens: 0, turns: 0, statedCeiling: null, ceilingParam: 'n', defaultCeiling: 0, choices: 0, imageUnits: 3 });
  t.equal(imagesCodec.prepare(base, 50).decoded.bound.imageUnits, 1, 'n defaults to 1');
});

t.test('upstream body: the upstream model, everything else as sent', async (t) => {
  const p = imagesCodec.prepare({ ...base, n: 2, size: '256x256' }, 50);
  t.same(JSON.parse(imagesCodec.upstreamBody(p, route, null)), { model: 'canvas-1', prompt: 'a red kite', n: 2, size: '256x256' });
});

t.test('reply: created, entries in supplier order (b64_json or url), units = entries returned', async (t) => {
  const upstream = { created: 5, data: [{ url: 'https://x/1.png', revised_prompt: 'r' }, { b64_json: 'AAAA' }], usage: { input_tokens: 9 } };
  const r = unary(imagesCodec, upstream, call, imagesCodec.prepare({ ...base, n: 2 }, 50).meta);
  t.same(r.metered, { inputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 2, source: 'supplier' });
  t.equal(r.warning, null);
  t.same(JSON.parse(r.render(r.metered!)), { created: 1700000000, data: [{ url: 'https://x/1.png' }, { b64_json: 'AAAA' }] });
  const fewer = unary(imagesCodec, upstream, call, imagesCodec.prepare({ ...base, n: 3 }, 50).meta);
  t.equal(fewer.metered!.imageUnits, 2, 'fewer than asked: the units returned');
});

t.test('more images than n: the first n answered, n units settled, a warning without the prompt', async (t) => {
  const upstream = { data: [{ b64_json: 'AAAA' }, { url: 'https://x/2.png' }, { b64_json: 'CCCC' }] };
  const meta = imagesCodec.prepare({ ...base, n: 2 }, 50).meta;
  const r = unary(imagesCodec, upstream, call, meta);
  t.equal(r.metered!.imageUnits, 2);
  t.equal(r.imageUnits, 2, 'a local count would settle n too');
  t.same(JSON.parse(r.render(r.metered!)).data, [{ b64_json: 'AAAA' }, { url: 'https://x/2.png' }]);
  t.match(r.warning, /1 image\(s\) more than n/);
  t.notMatch(r.warning, /red kite/);
  const pooled = decodeInPool({ surface: 'images', body: new Uint8Array(Buffer.from(JSON.stringify(upstream))), meta });
  t.same(pooled, { ok: true, decoded: imagesCodec.decodeReply(upstream, meta) }, 'the pool task decodes the same, n included');
});

t.test('broken replies are upstream_error', async (t) => {
  for (const b of [null, {}, { data: {} }, { data: [{}] }, { data: [{ b64_json: 5 }] }]) {
    t.throws(() => unary(imagesCodec, b, call), new GatewayError('upstream_error'), JSON.stringify(b));
  }
});
