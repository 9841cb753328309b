// Embeddings replies: base64 passes through as the supplier sent it, float
// arrays become base64 of little-endian float32 (exactly Math.fround of each
// number), in input order; the pool path gives the same bytes as the inline one.
import t from 'tap';
import type { Metered } from '../../../src/billing/types.js';
import { embeddingsCodec } from '../../../src/surfaces/embeddings/codec.js';
import { decodeReply, embeddingBase64 } from '../../../src/surfaces/embeddings/reply.js';
import { modelCallNamed } from '../../../src/surfaces/index.js';
import { REPLY_POOL_BYTES } from '../../../src/surfaces/reply-pool.js';
import { bodyText, unary } from '../unary.js';
import { GatewayError } from '../../../src/errors/gateway-error.js';
import decodeInPool, { decodeReplyData } from '../../../workers/decode-reply.js';
import { Piscina } from 'piscina';

const call = { requestId: 'req_x', model: 'embed', created: 1, orgId: 'org' };
const settled: Metered = { inputTokens: 7, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 0, imageUnits: 0, source: 'supplier' };

function floatsOf(b64: string): number[] {
  const buf = Buffer.from(b64, 'base64');
  const out: number[] = [];
  for (let i = 0; i < buf.length; i += 4) out.push(buf.readFloatLE(i));
  return out;
}

t.test('the pool runs the same decoder (the registry, surfaces/index.ts)', async (t) => {
  t.equal(modelCallNamed('embeddings').decodeReply, decodeReply);
  t.equal(embeddingsCodec.replyPoolBytes, REPLY_POOL_BYTES, 'large replies are decoded in the pool');
});

t.test('floats → base64 of little-endian float32, each value the float32 of the supplier number', async (t) => {
  const values = [0.1, -0.2, 1 / 3, 1e-40, 3.4028235677973366e38, 0, -0, 12345.678];
  const got = floatsOf(embeddingBase64(values));
  t.same(got, values.map(Math.fround));
  t.ok(Object.is(got[6], -0), 'the sign of zero survives');
});

t.test('base64 passes through undecoded', async (t) => {
  const b64 = Buffer.from(new Float32Array([1, 2, 3]).buffer).toString('base64');
  t.equal(embeddingBase64(b64), b64);
});

t.test('reply: data in input order, the model as named, prompt_tokens = total_tokens as settled', async (t) => {
  const upstream = {
    object: 'list',
    model: 'embed-1-upstream',
    data: [
      { object: 'embedding', index: 1, embedding: [0.5, 0.25] },
      { object: 'embedding', index: 0, embedding: Buffer.from(new Float32Array([1, 2]).buffer).toString('base64') },
    ],
    usage: { prompt_tokens: 7, total_tokens: 7 },
  };
  const r = unary(embeddingsCodec, upstream, call);
  t.same(r.metered, settled);
  t.equal(r.producedText, '');
  const body = JSON.parse(r.render(settled));
  t.same(Object.keys(body), ['object', 'data', 'model', 'usage']);
  t.same([body.object, body.model], ['list', 'embed']);
  t.same(body.usage, { prompt_tokens: 7, total_tokens: 7 });
  t.same(body.data.map((d: any) => [d.object, d.index]), [['embedding', 0], ['embedding', 1]]);
  t.same(floatsOf(body.data[0].embedding), [1, 2]);
  t.same(floatsOf(body.data[1].embedding), [0.5, 0.25]);
});

t.test('meter: input tokens only, whatever else the supplier reports (pricing has no surface names)', async (t) => {
  const r = unary(embeddingsCodec, { data: [{ index: 0, embedding: [1] }], usage: { prompt_tokens: 7, completion_tokens: 99, total_tokens: 106 } }, call);
  t.same(r.metered, settled);
  t.same([r.imageUnits, r.producedText], [0, '']);
});

t.test('no supplier usage: metered null (the pipeline counts the input locally)', async (t) => {
  const r = unary(embeddingsCodec, { data: [{ index: 0, embedding: [1] }] }, call);
  t.equal(r.metered, null);
});

t.test('broken replies are upstream_error', async (t) => {
  const bad = [
    null,
    {},
    { data: [] },
    { data: [{ index: 0, embedding: [1, 'x'] }] },
    { data: [{ index: 0, embedding: 5 }] },
    { data: [{ index: 1, embedding: [1] }] },
    { data: [{ index: 0, embedding: [1] }, { index: 0, embedding: [2] }] },
    { data: [{ index: 0.5, embedding: [1] }] },
  ];
  for (const b of bad) {
    t.throws(() => decodeReply(b), new GatewayError('upstream_error'), JSON.stringify(b));
  }
});

t.test('the pool task gives what the inline decoder gives; broken JSON is not ok', async (t) => {
  const upstream = { data: Array.from({ length: 3 }, (_, i) => ({ index: i, embedding: Array.from({ length: 64 }, (_, j) => Math.sin(i * 64 + j)) })), usage: { prompt_tokens: 3 } };
  const pooled = decodeReplyData({ surface: 'embeddings', body: Buffer.from(JSON.stringify(upstream)), meta: {} });
  t.ok(pooled.ok);
  const inline = decodeReply(upstream);
  t.same(pooled.ok && pooled.decoded, inline);
  t.same(bodyText(embeddingsCodec.render(inline, call, settled)), unary(embeddingsCodec, upstream, call).render(settled));
  t.same(decodeInPool({ surface: 'embeddings', body: Buffer.from('{"data":'), meta: {} }), { ok: false });
  t.same(decodeInPool({ surface: 'embeddings', body: Buffer.from('{"data":[]}'), meta: {} }), { ok: false });
});

t.test('the pool task reads a reply in blocks, a character split between two, as one text', async (t) => {
  // A supplier's string passes through as it is: the characters reach the decoded data.
  const upstream = { data: [{ index: 0, embedding: 'é€😀' }] };
  const bytes = Buffer.from(JSON.stringify(upstream));
  const split = bytes.indexOf(Buffer.from('😀')) + 2;
  const blocks = [bytes.subarray(0, 5), bytes.subarray(5, split), bytes.subarray(split)];
  t.same(decodeReplyData({ surface: 'embeddings', body: blocks, meta: {} }), { ok: true, decoded: decodeReply(upstream) });
  // Every cut of a text of 1- to 4-byte characters, into two blocks and into three.
  const text = JSON.stringify({ data: [{ index: 0, embedding: 'aé€😀b😀' }] });
  const all = Buffer.from(text);
  const want = { ok: true, decoded: decodeReply(JSON.parse(text)) };
  let same = true;
  for (let i = 0; i <= all.length; i++) {
    for (let j = i; j <= all.length; j += 3) {
      const got = decodeReplyData({ surface: 'embeddings', body: [all.subarray(0, i), all.subarray(i, j), all.subarray(j)], meta: {} });
      if (JSON.stringify(got) !== JSON.stringify(want)) same = false;
    }
  }
  t.ok(same, 'the same decoded reply whatever the cuts');
  t.match(Buffer.from(want.decoded.data).toString('utf8'), /aé€😀b😀/);
});

t.test('a large decoded data is moved back from the pool (its own buffer), a small one cloned', async (t) => {
  const large = { data: Array.from({ length: 4 }, (_, i) => ({ index: i, embedding: Array.from({ length: 3072 }, (_, j) => Math.cos(i + j)) })) };
  const moved = decodeInPool({ surface: 'embeddings', body: Buffer.from(JSON.stringify(large)), meta: {} }) as unknown as Record<symbol, unknown>;
  const value = moved[Piscina.valueSymbol] as { ok: true; decoded: { data: Uint8Array } };
  t.ok(value.ok, 'wrapped for piscina: the result is its value');
  t.same(moved[Piscina.transferableSymbol], [value.decoded.data.buffer], 'the data bytes are the transfer list');
  t.same(value, decodeReplyData({ surface: 'embeddings', body: Buffer.from(JSON.stringify(large)), meta: {} }));
  const small = { data: [{ index: 0, embedding: [1, 2] }] };
  t.same(decodeInPool({ surface: 'embeddings', body: Buffer.from(JSON.stringify(small)), meta: {} }), { ok: true, decoded: decodeReply(small) }, 'a slab slice is not moved');
});
