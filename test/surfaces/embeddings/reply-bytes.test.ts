// The byte decoder of embeddings replies (src/surfaces/embeddings/reply-bytes.ts)
// against the reference, JSON.parse and decodeReply: for every reply it takes
// it must give the same bytes and usage, and a reply the reference refuses it
// must not take. Random replies (key order, extra members, escapes, spacing,
// numbers in every JSON form, numbers on and beside float32 rounding
// boundaries), then broken ones.
import t from 'tap';
import { decodeReply, type DecodedEmbeddings } from '../../../src/surfaces/embeddings/reply.js';
import { SPARE_MAX_BYTES } from '../../../src/surfaces/answer-bytes.js';
import { decodeReplyBytes, keptFloatBytes } from '../../../src/surfaces/embeddings/reply-bytes.js';
import { decodeReplyData } from '../../../workers/decode-reply.js';
import { prng } from '../../helpers/prng.js';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** The float32 after `x` (a float32, finite, positive). */
function nextFloat32(x: number): number {
  f32[0] = x;
  u32[0]! += 1;
  return f32[0]!;
}

/** A JSON number text for the float position of a vector: the forms suppliers write, and the hard cases. */
function numberText(r: () => number): string {
  const kind = Math.floor(r() * 12);
  const sign = r() < 0.5 ? '-' : '';
  const x = Math.fround((r() * 2 - 1) * 10 ** Math.floor(r() * 10 - 6));
  switch (kind) {
    case 0:
      return String(x); // a float32 as JavaScript prints it (up to 17 digits)
    case 1:
      return x.toExponential(Math.floor(r() * 20));
    case 2:
      return x.toFixed(Math.floor(r() * 25));
    case 3:
      return `${sign}${Math.floor(r() * 1e6)}`; // integers
    case 4: {
      // the midpoint between two float32s (exact in a double), written in full and nearly
      const a = Math.abs(x) || 1e-3;
      const mid = (a + nextFloat32(a)) / 2;
      return `${sign}${mid.toPrecision(Math.floor(16 + r() * 6))}`;
    }
    case 5: {
      // a few units of a double beside that midpoint
      const a = Math.abs(x) || 1e-3;
      const mid = (a + nextFloat32(a)) / 2;
      return `${sign}${mid * (1 + (Math.floor(r() * 9) - 4) * 2 ** -52)}`;
    }
    case 6:
      return `${sign}0.${'0'.repeat(Math.floor(r() * 30))}${Math.floor(r() * 1e9)}`; // leading zeros, tiny values
    case 7:
      return `${sign}${Math.floor(r() * 1e9)}${Math.floor(r() * 1e9)}${Math.floor(r() * 1e9)}.${Math.floor(r() * 1e9)}`; // 25+ digits
    case 8:
      return `${sign}${Math.floor(r() * 10)}.${Math.floor(r() * 1e6)}E${r() < 0.5 ? '+' : '-'}${Math.floor(r() * 60)}`; // exponents past ±22
    case 9:
      return ['0', '-0', '0.0', '-0.0e5', '0e0', '1e38', '3.4028235e38', '3.5e38', '1e-45', '1.4e-45', '7e-46', '1e400', '-1e-400'][Math.floor(r() * 13)]!;
    case 10:
      return `${sign}${(r() * 1e-38).toPrecision(9)}`; // float32 subnormals
    default:
      return String(r() * 2 - 1); // a double, not a float32
  }
}

function spaces(r: () => number): string {
  return r() < 0.8 ? '' : [' ', '\n', '\t', '\r\n  '][Math.floor(r() * 4)]!;
}

/** A string literal, now and then with escapes or characters beyond ASCII. */
function stringText(r: () => number): string {
  const pick = Math.floor(r() * 6);
  if (pick === 0) return '"a\\"b\\\\c\\u00e9\\n"';
  if (pick === 1) return '"é€😀"';
  return JSON.stringify('x'.repeat(Math.floor(r() * 8)));
}

function extraValue(r: () => number, depth: number): string {
  const pick = Math.floor(r() * (depth > 2 ? 4 : 6));
  if (pick === 0) return numberText(r);
  if (pick === 1) return stringText(r);
  if (pick === 2) return ['true', 'false', 'null'][Math.floor(r() * 3)]!;
  if (pick === 3) return '[]';
  if (pick === 4) return `[${extraValue(r, depth + 1)},${spaces(r)}${extraValue(r, depth + 1)}]`;
  return `{${stringText(r)}:${extraValue(r, depth + 1)}}`;
}

function members(r: () => number, wanted: string[]): string {
  const parts = [...wanted];
  const extras = Math.floor(r() * 3);
  for (let k = 0; k < extras; k++) parts.splice(Math.floor(r() * (parts.length + 1)), 0, `"x${k}":${spaces(r)}${extraValue(r, 0)}`);
  return `{${spaces(r)}${parts.join(`,${spaces(r)}`)}${spaces(r)}}`;
}

/** A reply, mostly well formed; the order of items and of members random. */
function replyText(r: () => number): string {
  const count = 1 + Math.floor(r() * 5);
  const order = Array.from({ length: count }, (_, i) => i).sort(() => r() - 0.5);
  const items = order.map((index, position) => {
    const dims = Math.floor(r() * 12);
    const embedding =
      r() < 0.2 ? (r() < 0.5 ? JSON.stringify(Buffer.from(`v${index}`).toString('base64')) : stringText(r)) : `[${Array.from({ length: dims }, () => `${spaces(r)}${numberText(r)}`).join(',')}]`;
    const own: string[] = [`"embedding":${spaces(r)}${embedding}`, `"object":"embedding"`];
    if (r() < 0.9 || index !== position) own.push(`"index":${r() < 0.1 ? `${index}.0` : r() < 0.05 ? `${index}e0` : index}`);
    return members(r, own);
  });
  const top: string[] = [`"data":${spaces(r)}[${items.join(`,${spaces(r)}`)}]`, `"object":"list"`, `"model":"m"`];
  const u = r();
  if (u < 0.6) top.push(`"usage":{"prompt_tokens":${Math.floor(r() * 1000)},"total_tokens":1}`);
  else if (u < 0.7) top.push(`"usage":{"prompt_tokens":${['-1', '1.5', '"7"', 'null', '1e3', '9007199254740993'][Math.floor(r() * 6)]}}`);
  else if (u < 0.8) top.push(`"usage":${['null', '[]', '"x"', '{}'][Math.floor(r() * 4)]}`);
  return `${spaces(r)}${members(r, top)}${spaces(r)}`;
}

function reference(text: string): DecodedEmbeddings | null {
  try {
    return decodeReply(JSON.parse(text));
  } catch {
    return null;
  }
}

function same(a: DecodedEmbeddings, b: DecodedEmbeddings): boolean {
  return Buffer.from(a.data).equals(Buffer.from(b.data)) && Object.is(a.promptTokens, b.promptTokens);
}

t.test('random replies: whatever it takes, it decodes as JSON.parse and decodeReply do', async (t) => {
  const r = prng(20261127);
  let taken = 0;
  let valid = 0;
  let mismatches = 0;
  for (let n = 0; n < 4000; n++) {
    const text = replyText(r);
    const want = reference(text);
    const got = decodeReplyBytes(Buffer.from(text, 'utf8'));
    if (want !== null) valid++;
    if (got === null) continue;
    taken++;
    if (want === null || !same(got, want)) {
      if (mismatches++ < 3) t.fail(`differs from the reference: ${text.slice(0, 400)}`);
    }
  }
  t.equal(mismatches, 0, 'no reply decoded differently');
  t.ok(taken >= valid * 0.5, `takes most well-formed replies (${taken} of ${valid})`);
});

t.test('float32 rounding boundaries: numbers on and beside a midpoint round as Float32Array does', async (t) => {
  const r = prng(7);
  let differs = 0;
  for (let n = 0; n < 20000; n++) {
    const a = Math.fround(10 ** (r() * 20 - 10));
    const mid = (a + nextFloat32(a)) / 2;
    const x = mid * (1 + (Math.floor(r() * 17) - 8) * 2 ** -53);
    const text = r() < 0.5 ? String(x) : x.toPrecision(1 + Math.floor(r() * 25));
    const got = decodeReplyBytes(Buffer.from(`{"data":[{"embedding":[${text}]}]}`));
    const want = Buffer.from(new Float32Array([Number(text)]).buffer).toString('base64');
    if (got === null || !Buffer.from(got.data).toString().includes(`"${want}"`)) differs++;
  }
  t.equal(differs, 0, 'every one the float32 of the double JSON.parse reads');
});

t.test('broken and refused replies are not taken', async (t) => {
  const r = prng(99);
  const refused = [
    '',
    '{}',
    '{"data":[]}',
    '{"data":{}}',
    '{"data":[{"index":0}]}',
    '{"data":[{"index":0,"embedding":[1,"2"]}]}',
    '{"data":[{"index":1,"embedding":[1]}]}',
    '{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}',
    '{"data":[{"index":-1,"embedding":[1]}]}',
    '{"data":[{"index":0.5,"embedding":[1]}]}',
    '{"data":[{"index":0,"embedding":[01]}]}',
    '{"data":[{"index":0,"embedding":[1.]}]}',
    '{"data":[{"index":0,"embedding":[.5]}]}',
    '{"data":[{"index":0,"embedding":[+1]}]}',
    '{"data":[{"index":0,"embedding":[1e]}]}',
    '{"data":[{"index":0,"embedding":[NaN]}]}',
    '{"data":[{"index":0,"embedding":[1]}]} x',
    '{"data":[{"index":0,"embedding":[1],}]}',
    '{"data":[{"index":0,"embedding":"a\u0001b"}]}',
    '\ufeff{"data":[{"index":0,"embedding":[1]}]}',
  ];
  for (const text of refused) t.equal(decodeReplyBytes(Buffer.from(text, 'utf8')), null, `not taken: ${JSON.stringify(text)}`);
  // Cut short or with a byte changed anywhere: taken only when the reference decodes it the same.
  let wrong = 0;
  for (let n = 0; n < 1500; n++) {
    const text = replyText(r);
    const bytes = Buffer.from(text, 'utf8');
    const broken = r() < 0.5 ? bytes.subarray(0, Math.floor(r() * bytes.length)) : Buffer.from(bytes);
    if (broken.length > 0 && broken !== bytes.subarray(0, broken.length)) broken[Math.floor(r() * broken.length)] = ' ",:[]{}0-.e\\x'.charCodeAt(Math.floor(r() * 14));
    const got = decodeReplyBytes(broken);
    if (got === null) continue;
    const want = reference(broken.toString('utf8'));
    if (want === null || !same(got, want)) wrong++;
  }
  t.equal(wrong, 0, 'no broken reply decoded differently from the reference');
});

t.test('base64 vectors (what the gateway asks suppliers for) are taken and pass through as their bytes', async (t) => {
  const data = Array.from({ length: 4 }, (_, i) => ({ object: 'embedding', index: 3 - i, embedding: Buffer.from(new Float32Array([i, -i / 3, 1e-3]).buffer).toString('base64') }));
  const text = JSON.stringify({ object: 'list', data, model: 'm', usage: { prompt_tokens: 9, total_tokens: 9 } });
  const got = decodeReplyBytes(Buffer.from(text));
  t.not(got, null, 'taken');
  t.ok(got !== null && same(got, decodeReply(JSON.parse(text))), 'the same bytes and usage as the reference, in input order');
  t.equal(decodeReplyBytes(Buffer.from(text.replace('"index":3', '"index":3,"note":"é"'))) === null, false, 'a member beyond ASCII elsewhere is skipped, not refused');
  t.equal(decodeReplyBytes(Buffer.from(JSON.stringify({ data: [{ index: 0, embedding: 'AAé=' }] }))), null, 'a vector string beyond ASCII is left to the reference');
});

t.test('a reply of millions of floats is answered, and the thread keeps at most SPARE_MAX_BYTES of floats after it', async (t) => {
  const count = 5_000_000; // 20 MB of float32: the kept array grows to 32 MB to hold them
  const got = decodeReplyBytes(Buffer.from(`{"data":[{"embedding":[${'0.5,'.repeat(count - 1)}-2]}]}`));
  t.not(got, null, 'taken');
  const text = got === null ? '' : Buffer.from(got.data as Uint8Array).toString('latin1');
  const b64 = text.slice(text.indexOf('"embedding":"') + 13, text.lastIndexOf('"'));
  const floats = new Float32Array(Buffer.from(b64, 'base64').buffer.slice(0));
  t.equal(floats.length, count, 'every float in the answer');
  t.ok(floats[0] === 0.5 && floats[count - 2] === 0.5 && floats[count - 1] === -2, 'first and last as sent');
  t.ok(keptFloatBytes() <= SPARE_MAX_BYTES, `kept ${keptFloatBytes()} bytes of floats after it (ceiling ${SPARE_MAX_BYTES})`);
  const small = JSON.stringify({ data: [{ index: 0, embedding: [0.25, -1, 3] }], usage: { prompt_tokens: 2 } });
  const after = decodeReplyBytes(Buffer.from(small));
  t.ok(after !== null && same(after, decodeReply(JSON.parse(small))), 'the next reply decodes as the reference');
});

t.test('the pool task: a reply in blocks decodes as the whole, through the byte decoder', async (t) => {
  const values = Array.from({ length: 3000 }, (_, i) => Math.fround(Math.sin(i) / 7));
  const text = JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: values }], usage: { prompt_tokens: 5 } });
  const bytes = Buffer.from(text);
  t.not(decodeReplyBytes(bytes), null, 'taken by the byte decoder');
  const want = decodeReply(JSON.parse(text));
  for (const cuts of [[1], [7, 9000], [bytes.length >> 1, (bytes.length >> 1) + 1, bytes.length - 2]]) {
    const blocks = [0, ...cuts].map((from, k, all) => bytes.subarray(from, all[k + 1] ?? bytes.length));
    const got = decodeReplyData({ surface: 'embeddings', body: blocks, meta: {} });
    t.ok(got.ok && same(got.decoded as DecodedEmbeddings, want), `cut at ${cuts.join(', ')}`);
  }
});
